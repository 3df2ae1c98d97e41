"""The tab's actions on a tiny random model: typed requests validated at the boundary, results with run cards,
progress and cancel; edit keeps the original outside the region; protection leaves clean prompts
bit-identical; LoRA trains only the targeted layers and its adapter file loads back (a corrupt one does not)."""

import numpy as np
import pytest

from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken, ProgressEvent, run_to_result
from backends.textedit.edit import EditRequest, edit
from backends.textedit.localize import LayerScore, LocalizeRequest, choose, localize
from backends.textedit.lora import FinetuneRequest, finetune, load_adapter
from backends.textedit.models import PRESETS
from backends.textedit.protect import ProtectRequest, blocked_words, check_block_list, protect
from backends.textedit.service import GenerateRequest, generate

FAST = dict(num_inference_steps=2, seed=3)




def events_and_result(work):
    items = list(work)
    return [i for i in items if isinstance(i, ProgressEvent)], items[-1]


def test_generate_streams_previews_and_reads_the_image(tiny_model, tmp_path):
    import json

    from backends import action_named
    from backends.common.action import replay
    from backends.textedit.actions import GENERATE

    request = GenerateRequest(text="Cat", **FAST)
    events, result = events_and_result(GENERATE.run(request))
    assert result.image.shape == (8, 32, 3) and result.image.dtype == np.uint8
    assert result.prompt == 'a sign that says "Cat"'
    assert [r.engine for r in result.readings] == ["rapidocr", "tesseract"]
    fr = [e.fraction for e in events]
    assert fr == sorted(fr) and len(events) >= 3
    paths = GENERATE.write_run(request, result, tmp_path / "a")
    card = json.loads(paths["run"].read_text())
    assert card["action"] == "textedit_generate" and card["request"]["text"] == "Cat"
    assert card["request"]["model"] == "textedit-embedded" and card["request"]["num_inference_steps"] == 2
    assert card["result"]["readings"][0]["engine"] == "rapidocr" and card["files"]["image"] == "image.png"
    *_, (again, _) = replay(paths["run"], tmp_path / "b", action_named)
    assert np.array_equal(again.image, result.image)  # the run card reproduces the result


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(text=""), "empty"),
    (dict(text="   "), "empty"),
    (dict(text="abcdefghijk"), "at most 8"),
    (dict(text="ab"), "at least 3"),
    (dict(text="héllo"), "cannot write: 'é'"),
    (dict(text="c4t"), "cannot write: '4'"),
    (dict(text='a"b'), "double quotes"),
    (dict(text="cat", template="a spaceship that says"), "does not know the words 'spaceship'"),
    (dict(text="cat", template=""), "template is empty"),
    (dict(text="cat", num_inference_steps=0), "Steps must be a whole number from 1 to 100, got 0"),
    (dict(text="cat", num_inference_steps=2.5), "Steps must be a whole number"),
    (dict(text="cat", guidance_scale=0.5), "Guidance scale must be a number from 1 to 30"),
    (dict(text="cat", seed=-1), "Seed"),
    (dict(text="cat", model="nope"), "Model must be one of 'textedit-embedded'"),
])
def test_bad_input_is_a_clear_message(kwargs, message):
    with pytest.raises(InputError, match=message):
        list(generate(GenerateRequest(**kwargs)))


def test_unknown_layer_names_are_clear_and_the_session_survives(tiny_model):
    with pytest.raises(InputError, match="Unknown layer 'up_blocks.7.attn2'"):
        list(edit(EditRequest(text="cat", new_text="dog", layers=["up_blocks.7.attn2"], **FAST)))
    # without layers, the embedded model's measured preset is used
    assert run_to_result(edit(EditRequest(text="cat", new_text="dog", **FAST))).layers == list(
        PRESETS["textedit-embedded"].edit_layers)
    assert run_to_result(generate(GenerateRequest(text="cat", **FAST))).image.shape == (8, 32, 3)


def test_layer_sets_are_offered_with_their_share_and_edit_says_which_it_used(tiny_model):
    """Localize offers its layers beside the preset; Edit without layers goes through the preset and says so."""
    from backends.textedit.localize import layer_set

    preset = layer_set("textedit-embedded")
    total = sum(p.numel() for p in tiny_model.unet.parameters())
    by_name = {layer.name: layer for layer in tiny_model.layers}
    assert preset.source == "preset" and preset.layers == list(PRESETS["textedit-embedded"].edit_layers)
    assert preset.share == pytest.approx(sum(by_name[n].text_kv_params for n in preset.layers) / total)
    assert f"the model's preset layers ({len(preset.layers)}: " in preset.label() and f"{100 * preset.share:.2f}%" in preset.label()
    one = layer_set("textedit-embedded", [tiny_model.layers[0].name], source="localized")
    assert one.layers == [tiny_model.layers[0].name] and one.share < preset.share
    assert "the last Localize scan's layers (1: " in one.label()
    with pytest.raises(InputError, match="Unknown layer"):
        layer_set("textedit-embedded", ["up_blocks.7.attn2"])

    steps = dict(FAST, num_inference_steps=6)  # past the preset's start step 4: something is patched
    through_preset = run_to_result(edit(EditRequest(text="cat", new_text="dog", **steps)))
    assert through_preset.note.startswith("The model's preset layers ")
    chosen = run_to_result(edit(EditRequest(text="cat", new_text="dog", layers=one.layers, **steps)))
    assert chosen.note.startswith("The chosen layers ") and chosen.layers == one.layers


def test_localize_scores_every_layer_and_head(tiny_model):
    events, r = events_and_result(localize(LocalizeRequest(text="cat", new_text="dog", per_head=True, **FAST)))
    names = [layer.name for layer in tiny_model.layers]
    assert [s.name for s in r.layers] == names and set(r.patched) == set(names)
    assert len(r.head_f1) == 7 and all(len(row) == 2 and None not in row for row in r.head_f1)
    assert r.chosen and set(r.chosen) <= set(names)
    by_name = {layer.name: layer for layer in tiny_model.layers}
    total = sum(p.numel() for p in tiny_model.unet.parameters())
    assert r.denoiser_params == total
    assert r.chosen_share == pytest.approx(sum(by_name[n].text_kv_params for n in r.chosen) / total)
    assert r.chosen_module_share == pytest.approx(sum(by_name[n].params for n in r.chosen) / total)
    assert r.chosen_share < r.chosen_module_share
    assert all(0 <= s.f1_b <= 1 and 0 <= s.f1_a <= 1 and s.psnr > 0 for s in r.layers)
    assert r.table()[0]["chosen"] == (names[0] in r.chosen) and r.pairs == [("cat", "dog")]
    assert [e.fraction for e in events] == sorted(e.fraction for e in events)
    assert any(e.preview is not None for e in events)


def test_choose_keeps_the_layers_that_make_the_image_read_b():
    def s(i, f1_b, f1_a):
        return LayerScore(i, f"l{i}", "cross", 2, 10, 0.1, f1_b, f1_a, 0, 0, 0, 0, 0, 0, "", 0.2)

    scores = [s(0, 0.1, 0.9), s(1, 0.9, 0.2), s(2, 0.8, 0.3), s(3, 0.5, 0.5), s(4, 0.7, 0.8)]
    assert choose(scores, None) == ["l1", "l2"]  # ≥ 0.75 × best and reading B more than A
    assert choose(scores, 3) == ["l1", "l2", "l4"]
    assert choose([s(0, 0.0, 0.9)], None) == ["l0"]  # nothing reads B: the best one is still named


def test_localize_stops_when_cancelled(tiny_model):
    token = CancelToken()
    work = localize(LocalizeRequest(text="cat", new_text="dog", per_head=False, **FAST), token)
    next(work)
    token.cancel()
    with pytest.raises(Cancelled):
        list(work)
    assert tiny_model.controller.mode == "plain"


def test_edit_with_a_region_keeps_the_original_outside_it(tiny_model):
    layers = [tiny_model.layers[3].name, tiny_model.layers[4].name]
    full = run_to_result(edit(EditRequest(text="cat", new_text="dog", layers=layers, start_step=0, **FAST)))
    assert full.layers == layers and not full.blended_outside_region and full.psnr_outside_region is None
    assert np.abs(full.edited.astype(int) - full.original).max() > 0
    swap = run_to_result(generate(GenerateRequest(text="dog", **FAST))).image
    assert np.array_equal(full.prompt_swap, swap)  # the baseline is plain prompt B from the same noise
    r = run_to_result(edit(EditRequest(text="cat", new_text="dog", layers=layers, start_step=0, region=(4, 2, 20, 6),
                                       **FAST)))
    inside = np.zeros((8, 32), bool)
    inside[2:6, 4:20] = True
    assert np.array_equal(r.edited[~inside], r.original[~inside])
    assert np.array_equal(r.edited[inside], full.edited[inside])
    assert r.blended_outside_region and "original" in r.note and r.psnr_outside_region == 100.0
    assert r.difference.shape == (8, 32, 3) and r.layers == layers and r.start_step == 0
    with pytest.raises(InputError, match="region"):
        list(edit(EditRequest(text="cat", new_text="dog", layers=layers, region=(5, 5, 2, 9), **FAST)))


def test_protection_leaves_clean_prompts_bit_identical_and_swaps_blocked_words(tiny_model):
    layers = [tiny_model.layers[3].name]
    clean = run_to_result(protect(ProtectRequest(text="cat", layers=layers, **FAST)))
    assert not clean.blocked and clean.identical and np.array_equal(clean.protected, clean.unprotected)
    plain = run_to_result(generate(GenerateRequest(text="cat", **FAST))).image
    assert np.array_equal(clean.protected, plain)
    hit = run_to_result(protect(ProtectRequest(text="Idiots", layers=layers, start_step=0, **FAST)))
    assert hit.blocked and hit.matched == ["idiot"] and hit.benign_text and not hit.identical
    assert f"K/V of “{hit.benign_text}”" in hit.note
    custom = run_to_result(protect(ProtectRequest(text="cat", block_list=["cat"], benign_text="sun", layers=layers,
                                                  start_step=0, **FAST)))
    assert custom.blocked and custom.benign_text == "sun"


def test_block_list_checks():
    assert check_block_list("Hate, kill;  hate") == ["hate", "kill"]
    assert blocked_words("KILLER", ["kill", "cat"]) == ["kill"]
    with pytest.raises(InputError, match="single words"):
        check_block_list(["two words"])
    with pytest.raises(InputError, match="itself on the block list"):
        ProtectRequest(text="cat", benign_text="hat", block_list=["hat"]).validate()


def test_lora_trains_only_the_target_and_its_adapter_loads_back(tiny_model):
    layers = [tiny_model.layers[3].name, tiny_model.layers[4].name]
    before_base = run_to_result(generate(GenerateRequest(text="cat", **FAST))).image
    kw = dict(layers=layers, train_steps=2, batch_size=2, eval_words=1, learning_rate=1e-2, **FAST)
    loc = run_to_result(finetune(FinetuneRequest(target="localized", **kw)))
    assert loc.layers == layers and len(loc.losses) == 2
    # rank 4 on q, k, v, out of each layer: 4 × (in + out) per projection
    mods = dict(tiny_model.unet.named_modules())
    expected = sum(4 * (getattr(mods[n], p).in_features + getattr(mods[n], p).out_features)
                   for n in layers for p in ("to_q", "to_k", "to_v"))
    expected += sum(4 * (mods[n].to_out[0].in_features + mods[n].to_out[0].out_features) for n in layers)
    assert loc.trainable_params == expected
    full = run_to_result(finetune(FinetuneRequest(target="all", **kw)))
    rnd = run_to_result(finetune(FinetuneRequest(target="random", **kw)))
    assert full.trainable_params > 2 * loc.trainable_params and len(rnd.layers) == 2 and not set(rnd.layers) & set(layers)
    assert np.array_equal(run_to_result(generate(GenerateRequest(text="cat", **FAST))).image, before_base)

    loaded, meta = load_adapter(loc.adapter)
    assert meta["target"] == "localized" and meta["rank"] == "4"
    a = loc.pipeline('a sign that says "cat"', **GenerateRequest(text="cat", **FAST).pipe_kwargs()).images
    b = loaded('a sign that says "cat"', **GenerateRequest(text="cat", **FAST).pipe_kwargs()).images
    assert np.abs(a - b).max() < 1e-6 and np.abs(a - before_base / 255).max() > 1e-3

    with pytest.raises(InputError, match="could not be read as safetensors"):
        load_adapter(b"not a safetensors file at all")
    with pytest.raises(InputError, match="could not be read as safetensors"):
        load_adapter(loc.adapter[: len(loc.adapter) // 2])
    import torch
    from safetensors.torch import save

    with pytest.raises(InputError, match="not a Text in Image LoRA adapter"):
        load_adapter(save({"x": torch.zeros(2)}))


def test_finetune_requests_are_checked():
    with pytest.raises(InputError, match="LoRA on must be one of 'localized', 'all', 'random'"):
        FinetuneRequest(target="half").validate()
    with pytest.raises(InputError, match="embedded model"):
        FinetuneRequest(model="sdxl-base").validate()
    with pytest.raises(InputError, match="Training steps must be a whole number from 1 to 500"):
        FinetuneRequest(train_steps=0, layers=["0"]).validate()
    with pytest.raises(InputError, match="Learning rate must be a number from 1e-06 to 0.01"):
        FinetuneRequest(learning_rate=0.0, layers=["0"]).validate()
    with pytest.raises(InputError, match="Held-out words .* from 1 to 64"):  # every held-out word once at most
        FinetuneRequest(eval_words=66, layers=["0"]).validate()
    request = FinetuneRequest(layers="3, up_blocks.1.attentions.0.transformer_blocks.0.attn2", train_steps=7.0)
    request.validate()  # typed layers become their list; a whole float becomes the int it is
    assert request.layers == ["3", "up_blocks.1.attentions.0.transformer_blocks.0.attn2"]
    assert request.train_steps == 7 and isinstance(request.train_steps, int)


def test_a_layer_sets_label_names_each_layer_once():
    """Two layers of one block (the preset's two up_blocks.1 layers) must not read alike in the picker."""
    from backends.textedit.localize import short_name

    names = PRESETS["textedit-embedded"].edit_layers + PRESETS["sdxl-base"].toxic_layers
    assert len({short_name(n) for n in names}) == len(set(names))
    assert short_name("up_blocks.1.attentions.1.transformer_blocks.0.attn2") == "up_blocks.1.attentions.1…attn2"
