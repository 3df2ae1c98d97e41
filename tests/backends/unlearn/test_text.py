"""The text-conditioned teacher (3D Layout's model, forgetting a word): the word checks, a few steps of every loss
on a tiny diffusers UNet (SFD's fake score, SiD and forgetting losses of ``losses.py`` unchanged; ESD's text form),
networks that load back and are refused by the other teacher, and the comparison read by the detector."""

import json
import math

import numpy as np
import pytest
import torch

from backends.common.errors import InputError
from backends.unlearn.distil import NETWORK, distil
from backends.unlearn.requests import DistilRequest, EvaluateRequest
from backends.unlearn.text import words


def test_unknown_words_are_flagged_by_name_as_typed():
    with pytest.raises(InputError, match="'crimson'"):
        words.check_word_pair("crimson", "blue")
    with pytest.raises(InputError, match="'dodecahedron'"):
        words.check_word_pair("cube", "dodecahedron")
    assert words.unknown_words("a crimson cube in a kitchen") == ["crimson", "kitchen"]
    with pytest.raises(InputError, match="'kitchen'"):
        words.parse_prompts("a red cube; a blue sphere in a kitchen")


def test_a_colour_maps_onto_a_colour_a_shape_onto_a_shape_never_onto_itself():
    assert words.check_word_pair(" Red", "blue") == ("red", "blue")
    assert words.check_word_pair("cone", "cylinder") == ("cone", "cylinder")
    with pytest.raises(InputError, match="colour onto a colour"):
        words.check_word_pair("red", "cube")
    with pytest.raises(InputError, match="onto itself"):
        words.check_word_pair("red", "red")
    with pytest.raises(InputError, match="not a colour or a shape"):
        words.check_word_pair("lawn", "blue")  # a word the model knows (a room's), but not one to forget
    with pytest.raises(InputError, match="Forget|forget"):
        DistilRequest(out_dir="x", teacher="text", forget="red", safe="red").validate()
    DistilRequest(out_dir="x", teacher="text", forget="red", safe="blue").validate()
    with pytest.raises(InputError, match="does not know"):  # the shapes teacher knows no colours
        DistilRequest(out_dir="x", teacher="shapes", forget="red", safe="blue").validate()


def test_prompts_name_a_colour_and_a_shape_and_the_safe_word_replaces_the_forgotten_one():
    assert len(words.parse_prompts("")) == 40
    assert words.parse_prompts("a red cube;\n a blue sphere ") == ["a red cube", "a blue sphere"]
    with pytest.raises(InputError, match="colour and a shape"):
        words.parse_prompts("a red cube; a green lawn under a pale blue sky")
    assert words.replace_word("a red cube in a room with a red carpet", "red", "blue") == \
        "a blue cube in a room with a blue carpet"
    assert words.replace_word("a cone", "one", "two") == "a cone"  # whole words only
    assert words.replace_word("an orange cube", "orange", "red") == "a red cube"  # the article follows the new word
    assert "an orange cone" in words.domain_prompts()  # spelled as the model's data spells it
    for forget in ("red", "cone"):
        prompts = words.parse_prompts(words.default_prompts(forget))
        assert sum(words.names(p, forget) for p in prompts) == 2 and len(prompts) == 4


def _run(request, models, cancel=None):
    *events, result = distil(request, models, cancel)
    return result, events


@pytest.mark.parametrize("method,keys", [("sfd", {"psi_remain", "psi_forget", "g_remain", "g_forget"}), ("esd", {"esd"})])
def test_every_text_loss_runs_and_moves_the_unet(tiny_text_teacher, tmp_path, method, keys):
    teacher, _ = tiny_text_teacher
    before = {k: v.clone() for k, v in teacher.eps.unet.state_dict().items()}
    req = DistilRequest(out_dir=tmp_path, teacher="text", method=method, forget="red", safe="blue", iterations=2,
                        batch=2, t_init=625, alpha=1.0, forget_coef=1.0, lr=1e-3, preview_every=2)
    result, events = _run(req, (teacher, teacher.fingerprint))
    assert set(result.losses) == keys
    assert all(len(v) == 2 and all(math.isfinite(x) for x in v) for v in result.losses.values())
    previews = [e.preview["grid"] for e in events if getattr(e, "preview", None)]
    assert len(previews) == 2 and previews[-1].shape == (4 * 64, 4 * 64, 3)  # 4 prompts × 4 samples, 64×64
    assert not np.array_equal(previews[0], previews[-1])  # the network moved between previews
    from safetensors.torch import load_file

    trained = load_file(tmp_path / NETWORK / "diffusion_pytorch_model.safetensors")
    assert any(not torch.equal(trained[k], v) for k, v in before.items())
    assert all(torch.equal(teacher.eps.unet.state_dict()[k], v) for k, v in before.items())  # the teacher is frozen
    cfg = json.loads((tmp_path / NETWORK / "config.json").read_text())
    assert (cfg["method"], cfg["teacher_kind"], cfg["teacher"], cfg["forget"]) == (method, "text", teacher.fingerprint, "red")
    assert "_name_or_path" not in cfg  # no folder of this machine in a network that may ship


def test_text_sfd_resumes_to_what_an_uninterrupted_run_gives(tiny_text_teacher, tmp_path):
    from safetensors.torch import load_file

    teacher, _ = tiny_text_teacher
    kw = dict(teacher="text", method="sfd", forget="cone", safe="cylinder", batch=2, lr=1e-3, preview_every=50)
    _run(DistilRequest(out_dir=tmp_path / "a", iterations=2, **kw), (teacher, teacher.fingerprint))
    _run(DistilRequest(out_dir=tmp_path / "b", iterations=1, **kw), (teacher, teacher.fingerprint))
    result, _ = _run(DistilRequest(out_dir=tmp_path / "b", iterations=2, resume=True, **kw), (teacher, teacher.fingerprint))
    assert result.resumed_from == 1
    a = load_file(tmp_path / "a" / NETWORK / "diffusion_pytorch_model.safetensors")
    b = load_file(tmp_path / "b" / NETWORK / "diffusion_pytorch_model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_network_of_one_teacher_is_refused_by_the_other(tiny_text_teacher, tiny_teacher, tmp_path):
    from backends.unlearn.loading import load_generator
    from backends.unlearn.text.loading import load_text_network

    teacher, _ = tiny_text_teacher
    label_net, _, label_fp = tiny_teacher
    label_net.save(tmp_path / "label", dict(method="sfd", teacher=label_fp, forget="cube", safe="sphere"))
    teacher.eps.save(tmp_path / "text", dict(method="sfd", teacher=teacher.fingerprint, teacher_kind="text",
                                             forget="red", safe="blue"))
    with pytest.raises(InputError, match="label-conditional"):
        load_text_network(tmp_path / "label", teacher.fingerprint)
    with pytest.raises(InputError, match="3D Layout"):
        load_generator(tmp_path / "text", label_fp)
    with pytest.raises(InputError, match="another teacher"):
        load_text_network(tmp_path / "text", "0" * 16)
    net, cfg = load_text_network(tmp_path / "text", teacher.fingerprint)
    assert cfg["forget"] == "red"
    x, t = torch.randn(2, 4, 16, 16), torch.tensor([10, 500])
    from backends.unlearn.text.teacher import Cond

    y = Cond(teacher.encode(["a red cube", "a blue cone"]), torch.zeros(2, 16, 16, 16))
    assert torch.allclose(net(x, t, y), teacher.eps(x, t, y), atol=1e-6)  # the saved UNet loads back as it was


def test_comparison_reads_every_method_and_measures_it(tiny_text_teacher, tmp_path):
    from backends.unlearn.outputs import metrics_rows, panels, write_evaluation
    from backends.unlearn.text.evaluate import evaluate_text

    teacher, detector = tiny_text_teacher
    _run(DistilRequest(out_dir=tmp_path / "sfd", teacher="text", method="sfd", forget="red", safe="blue", iterations=1,
                       batch=2, preview_every=5), (teacher, teacher.fingerprint))
    req = EvaluateRequest(teacher="text", forget="red", safe="blue", prompts="a red cube; a blue sphere; a green cone",
                          per_class=2, teacher_steps=2, sfd_generator=str(tmp_path / "sfd"), esd_model="none")
    *events, result = evaluate_text(req, (teacher, teacher.fingerprint, detector))
    assert result.methods == ("teacher", "sfd", "negative_guidance")
    assert result.images["sfd"].shape == (6, 64, 64, 3) and len(result.predictions["teacher"]) == 6
    m = result.metrics["sfd"]
    assert m["forget_rate"]["n"] == 2 and m["retained_accuracy"]["n"] == 4 and math.isfinite(m["retained_fd"])
    assert all(result.seconds[m] > 0 for m in result.methods)  # each method timed (speed belongs in bench/)
    assert "salun" in result.skipped
    shown = panels(result)
    assert [c.split(" —")[0] for _, c in shown] == ["prompt: a red cube", "prompt: a blue sphere", "prompt: a green cone"]
    assert "forgotten word" in shown[0][1] and len(metrics_rows(result)) == 3
    files = write_evaluation(result, tmp_path / "out")
    assert (tmp_path / "out" / "panel_1_a-red-cube.png").exists() and files["grid_sfd"].exists()
    assert json.loads(files["metrics"].read_text())["prompts"] == ["a red cube", "a blue sphere", "a green cone"]


def test_negative_guidance_changes_only_the_prompts_that_name_the_word(tiny_text_teacher):
    from backends.unlearn.text.sampling import TextSamplers, draw_latents, latent_noise
    from backends.unlearn.text.teacher import Cond

    teacher, _ = tiny_text_teacher
    prompts = ["a red cube", "a blue cube"]
    cond = Cond(teacher.encode(prompts), torch.zeros(2, 16, 16, 16))
    z = latent_noise(teacher, 2, 0)
    s = TextSamplers(teacher, "red", teacher_steps=3, forget_mask=torch.tensor([True, False]))
    plain, neg = draw_latents(s, "teacher", cond, z), draw_latents(s, "negative_guidance", cond, z)
    assert not torch.allclose(plain[0], neg[0]) and torch.equal(plain[1], neg[1])
