"""A few steps of every loss (SFD's fake score, SiD, forgetting; ESD; SalUn's remap and retain), SalUn's saliency
mask, checkpoints that resume exactly, Stop."""

import math

import pytest
import torch

from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken, ProgressEvent
from backends.unlearn.distil import NETWORK, distil
from backends.unlearn.requests import DistilRequest


def run(request, teacher, cancel=None):
    """(the result, the progress events before it)."""
    *events, result = distil(request, teacher, cancel)
    return result, events


def weights(folder):
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


@pytest.mark.parametrize("method,keys", [("sfd", {"psi_remain", "psi_forget", "g_remain", "g_forget"}), ("esd", {"esd"})])
def test_every_loss_runs_and_moves_the_network(tiny_teacher, tmp_path, method, keys):
    net, _, fp = tiny_teacher
    req = DistilRequest(out_dir=tmp_path, method=method, iterations=2, batch=4, preview_every=1, checkpoint_every=1)
    result, events = run(req, (net, fp))
    assert set(result.losses) == keys
    assert all(len(v) == 2 and all(math.isfinite(x) for x in v) for v in result.losses.values())
    previews = [e for e in events if isinstance(e, ProgressEvent) and e.preview is not None]
    assert len(previews) == 3 and previews[-1].preview["grid"].shape == (5 * 32, 4 * 32, 3)
    trained = weights(tmp_path / NETWORK)
    assert any(not torch.equal(trained[k], v) for k, v in net.state_dict().items())
    assert not any(p.requires_grad for p in net.parameters())  # the teacher stays frozen and unchanged


def test_salun_losses_run_and_move_only_the_salient_share_of_weights(tiny_teacher, tmp_path):
    """Two steps of SalUn's remap and retain losses; its mask keeps the asked-for share of weights (the largest |∇|
    of the forget class's loss): the others stay the teacher's exactly, while the masked ones move."""
    import json

    net, _, fp = tiny_teacher
    req = DistilRequest(out_dir=tmp_path, method="salun", iterations=2, batch=2, saliency_fraction=0.3, lr=1e-2,
                        replay_steps=2, preview_every=5)
    result, _ = run(req, (net, fp))
    assert set(result.losses) == {"salun_forget", "salun_retain"}
    assert all(len(v) == 2 and all(math.isfinite(x) for x in v) for v in result.losses.values())
    state = torch.load(tmp_path / "state.pt", weights_only=False)["trainer"]
    mask = state["mask"]
    share = sum(int(m.sum()) for m in mask.values()) / sum(m.numel() for m in mask.values())
    assert share == pytest.approx(0.3, abs=1e-4)
    assert json.loads((tmp_path / NETWORK / "config.json").read_text())["mask_share"] == pytest.approx(0.3, abs=1e-3)
    assert mask["label.weight"][0].sum() > 0  # the forgotten class's (cube's) embedding is salient
    trained, teacher = weights(tmp_path / NETWORK), net.state_dict()
    frozen = torch.cat([(trained[k] - teacher[k])[~mask[k]].flatten() for k in mask])
    moved = torch.cat([(trained[k] - teacher[k])[mask[k]].flatten() for k in mask])
    assert frozen.abs().max() == 0 and (moved != 0).float().mean() > 0.5
    assert set(state["pool_labels"].tolist()) == {0, 1, 2, 3, 4} and state["pool"].shape[1:] == (3, 32, 32)


@pytest.mark.parametrize("method", ["sfd", "salun"])
def test_a_stopped_run_resumes_to_what_an_uninterrupted_run_gives(tiny_teacher, tmp_path, method):
    net, _, fp = tiny_teacher
    n = 3 if method == "sfd" else 2  # SalUn: its pool and mask, made at step 1, must come back with the checkpoint
    base = dict(method=method, iterations=n, batch=4 if method == "sfd" else 2, preview_every=1, checkpoint_every=10,
                **({} if method == "sfd" else {"replay_steps": 2}))
    whole, _ = run(DistilRequest(out_dir=tmp_path / "whole", **base), (net, fp))
    cancel = CancelToken()
    gen = distil(DistilRequest(out_dir=tmp_path / "cut", **base), (net, fp), cancel)
    next(gen), next(gen)  # the first preview, then one step's
    cancel.cancel()
    with pytest.raises(Cancelled):
        next(gen)
    resumed, _ = run(DistilRequest(out_dir=tmp_path / "cut", resume=True, **base), (net, fp))
    assert resumed.resumed_from == 1 and resumed.steps == n
    a, b = weights(tmp_path / "whole" / NETWORK), weights(tmp_path / "cut" / NETWORK)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_resume_refuses_other_settings_and_an_empty_folder(tiny_teacher, tmp_path):
    net, _, fp = tiny_teacher
    run(DistilRequest(out_dir=tmp_path, iterations=1, batch=4), (net, fp))
    with pytest.raises(InputError, match="other settings"):
        run(DistilRequest(out_dir=tmp_path, iterations=2, batch=4, alpha=1.0, resume=True), (net, fp))
    with pytest.raises(InputError, match="no stopped run"):
        run(DistilRequest(out_dir=tmp_path / "empty", iterations=2, batch=4, resume=True), (net, fp))
