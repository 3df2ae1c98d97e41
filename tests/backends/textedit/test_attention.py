"""Text K/V patching processors on tiny random configs of SDXL's, DeepFloyd IF's and SD3's denoiser classes.

For each class: the text layers are found in execution order; patching a layer with its own prompt
changes nothing (bit-identical); patching a named layer changes that layer's output and nothing that
runs before it; patching every layer is generating with prompt B (where the text enters only there).
"""

import pytest
import torch

from backends.common.errors import InputError
from backends.textedit.attention import (
    PatchController,
    TextPatchProcessor,
    check_heads,
    find_layers,
    install,
    text_layers,
    uninstall,
)

from .conftest import (
    dummy_components,
    if_inputs,
    if_unet,
    sd3_inputs,
    sd3_transformer,
    sdxl_inputs,
    sdxl_unet,
)


def _embedded_unet():
    return dummy_components()["unet"].eval()


def _embedded_inputs(seed=0, text_seed=1):
    g, t = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(text_seed)
    return dict(sample=torch.randn(2, 4, 4, 16, generator=g), timestep=torch.tensor(500),
                encoder_hidden_states=torch.randn(2, 5, 8, generator=t))


MODELS = {
    "embedded": (_embedded_unet, _embedded_inputs, "cross", 7),
    "sdxl": (sdxl_unet, sdxl_inputs, "cross", 12),
    "if": (if_unet, if_inputs, "added_kv", 4),
    "sd3": (sd3_transformer, sd3_inputs, "joint", 3),
}


class Rig:
    """A denoiser with the processors installed and forward hooks that log every text layer's output."""

    def __init__(self, key):
        build, self.inputs, self.kind, self.count = MODELS[key]
        self.model = build()
        self.c = PatchController()
        self.layers = install(self.model, self.c)
        self.outputs: dict[str, torch.Tensor] = {}
        self.order: list[str] = []
        modules = dict(self.model.named_modules())
        for layer in self.layers:
            modules[layer.name].register_forward_hook(self._log(layer.name))

    def _log(self, name):
        def hook(module, args, out):
            self.order.append(name)
            self.outputs[name] = (out[0] if isinstance(out, tuple) else out).detach().clone()
        return hook

    @torch.no_grad()
    def run(self, text_seed=1, mode="plain", layers=(), heads=None, step=0, start=0):
        self.outputs, self.order = {}, []
        self.c.mode, self.c.layers, self.c.heads = mode, frozenset(layers), heads or {}
        self.c.step, self.c.start_step = step, start
        out = self.model(**self.inputs(text_seed=text_seed))
        return out.sample

    def patched(self, layers, text_a=1, text_b=2, heads=None, start=0):
        self.c.cache.clear()
        self.run(text_b, "record", layers)
        return self.run(text_a, "patch", layers, heads=heads, start=start)


@pytest.mark.parametrize("key", list(MODELS))
def test_text_layers_are_listed_in_execution_order(key):
    rig = Rig(key)
    assert len(rig.layers) == rig.count and {layer.kind for layer in rig.layers} == {rig.kind}
    rig.run()
    assert rig.order == [layer.name for layer in rig.layers]
    assert [layer.index for layer in rig.layers] == list(range(rig.count))


def test_sdxl_layout_counts_down_mid_up_like_the_reference():
    """SDXL's numbering: down attn2s first, then mid, then up — the reference's 55/56 are up_blocks.0.attentions.2."""
    names = [layer.name for layer in text_layers(sdxl_unet())]
    assert names[4].startswith("mid_block.") and names[6].startswith("up_blocks.0.attentions.0.")
    assert names[-1] == "up_blocks.0.attentions.2.transformer_blocks.1.attn2"


@pytest.mark.parametrize("key", list(MODELS))
def test_patching_a_layer_with_its_own_prompt_changes_nothing(key):
    rig = Rig(key)
    plain = rig.run()
    for layer in {rig.layers[0], rig.layers[len(rig.layers) // 2], rig.layers[-1]}:
        assert torch.equal(rig.patched([layer.name], text_a=1, text_b=1), plain), layer.name
    assert torch.equal(rig.patched([layer.name for layer in rig.layers], text_a=1, text_b=1), plain)


@pytest.mark.parametrize("key", list(MODELS))
def test_patching_a_named_layer_changes_it_and_nothing_before_it(key):
    rig = Rig(key)
    rig.run()
    plain = dict(rig.outputs)
    target = rig.layers[len(rig.layers) // 2]
    out = rig.patched([target.name])
    assert rig.c.patched == {(target.name, 0)}
    for layer in rig.layers:
        same = torch.equal(rig.outputs[layer.name], plain[layer.name])
        if layer.index < target.index:
            assert same, f"{layer.name} runs before the patched layer and changed"
        elif layer.index == target.index:
            assert not same, "the patched layer's output did not change"
    assert not torch.equal(out, rig.run())


@pytest.mark.parametrize("key", ["embedded", "sdxl", "sd3"])
def test_patching_every_layer_is_generating_with_prompt_b(key):
    """The text reaches these denoisers only through the patched K/V (IF also adds it to the time embedding)."""
    rig = Rig(key)
    with_b = rig.run(text_seed=2)
    with_a = rig.run(text_seed=1)
    patched = rig.patched([layer.name for layer in rig.layers])
    assert not torch.allclose(with_a, with_b, atol=1e-4)
    assert torch.allclose(patched, with_b, atol=1e-6, rtol=0)
    if key != "sd3":  # the UNets: bit-identical
        assert torch.equal(patched, with_b)


@pytest.mark.parametrize("key", ["sdxl", "sd3", "if"])
def test_head_subsets_patch_only_those_heads(key):
    rig = Rig(key)
    target = rig.layers[-1]
    every = rig.patched([target.name])
    all_heads = rig.patched([target.name], heads={target.name: tuple(range(target.heads))})
    one = rig.patched([target.name], heads={target.name: (0,)})
    assert torch.equal(every, all_heads)
    assert not torch.equal(one, every) and not torch.equal(one, rig.run())


def test_patching_waits_for_the_start_step():
    rig = Rig("embedded")
    plain = rig.run()
    rig.c.cache.clear()
    rig.run(2, "record", [rig.layers[3].name], step=0)
    rig.c.cache[(rig.layers[3].name, 1)] = rig.c.cache[(rig.layers[3].name, 0)]
    assert torch.equal(rig.run(1, "patch", [rig.layers[3].name], step=0, start=1), plain)
    assert not torch.equal(rig.run(1, "patch", [rig.layers[3].name], step=1, start=1), plain)


def test_patching_without_a_recording_is_a_clear_error():
    rig = Rig("embedded")
    with pytest.raises(RuntimeError, match="no recorded text keys/values"):
        rig.run(1, "patch", [rig.layers[0].name])


def test_find_layers_by_name_index_and_label_and_rejects_unknown_ones():
    layers = text_layers(sdxl_unet())
    got = find_layers(layers, [layers[3].name, 5, "7", layers[9].label])
    assert [layer.index for layer in got] == [3, 5, 7, 9]
    with pytest.raises(InputError, match="Unknown layer 'up_blocks.9.attn2'.*12 text layers"):
        find_layers(layers, ["up_blocks.9.attn2"])
    with pytest.raises(InputError, match="Unknown layer '12'"):
        find_layers(layers, [12])
    with pytest.raises(InputError, match="heads 0–3"):
        check_heads(layers[:1], {layers[0].name: [4]})


def test_install_twice_wraps_once_and_uninstall_restores_the_processors():
    unet = sdxl_unet()
    before = {n: type(p) for n, p in unet.attn_processors.items()}
    c = PatchController()
    install(unet, c)
    install(unet, c)
    procs = [p for p in unet.attn_processors.values() if isinstance(p, TextPatchProcessor)]
    assert len(procs) == 12 and not any(isinstance(p.original, TextPatchProcessor) for p in procs)
    uninstall(unet)
    assert {n: type(p) for n, p in unet.attn_processors.items()} == before


def test_parameter_counts_are_those_of_the_modules():
    unet = sdxl_unet()
    layers = text_layers(unet)
    modules = dict(unet.named_modules())
    a = modules[layers[0].name]
    assert layers[0].params == sum(p.numel() for p in a.parameters())
    assert layers[0].text_kv_params == a.to_k.weight.numel() + a.to_v.weight.numel()
