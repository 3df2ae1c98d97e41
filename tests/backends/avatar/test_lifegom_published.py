"""Issue 24 §3 for Avatar: LIFe-GoM's published network behind the service and the CLI, on a random-weight
checkpoint saved in the authors' exact format ({iter, network, optimizer}) and a clearly synthetic SMPL-X-shaped
npz (the real SMPL-X file cannot be shipped)."""

import numpy as np
import pytest
import torch

from backends.avatar import published, service
from backends.avatar.lifegom_published import (
    CHECKPOINT_FILE,
    PublishedConfig,
    build_published,
    load_published,
    read_checkpoint,
    save_in_their_format,
)
from backends.avatar.smplx import read_smplx
from backends.common.published_formats import read_fixture


def _checkpoint(tmp_path, n_vertices=642):
    models = tmp_path / "models"
    (models / "smplx").mkdir(parents=True)
    published.synthetic_smplx(models / "smplx" / "SMPLX_NEUTRAL.npz", n_vertices=n_vertices, n_faces=0)
    body = read_smplx(models / "smplx" / "SMPLX_NEUTRAL.npz")
    torch.manual_seed(0)
    net = build_published(PublishedConfig(n_vertices=n_vertices), body, levels=0)
    path = save_in_their_format(net, models / "lifegom" / CHECKPOINT_FILE)
    return models, body, path


def test_their_checkpoint_format_loads_with_no_key_missing_or_left_over(tmp_path):
    models, body, path = _checkpoint(tmp_path)
    ckpt = torch.load(path, weights_only=True)
    assert set(ckpt) == {"iter", "network", "optimizer"}
    fixture = read_fixture("lifegom").components["network"]
    state = read_checkpoint(path)
    assert set(state) == set(fixture)  # the same names as the authors' Model.state_dict()
    assert [k for k in fixture if k != "reconstructor.vertex_embed" and tuple(state[k].shape) != fixture[k]] == []
    model = load_published(path, body, levels=0)  # strict: raises on any missing / unexpected key
    assert torch.equal(model.reconstructor.vertex_embed, state["reconstructor.vertex_embed"])
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert missing == [] and unexpected == []
    state.pop("reconstructor.visibility_embed")
    with pytest.raises(RuntimeError, match="visibility_embed"):
        model.load_state_dict(state, strict=True)


def test_published_checkpoint_reconstructs_and_renders_through_the_service(tmp_path):
    models, body, _ = _checkpoint(tmp_path)
    assert service.model_ready(service.PUBLISHED_MODEL, str(models))
    assert not service.model_ready(service.PUBLISHED_MODEL, str(tmp_path / "empty"))
    req = service.ReconstructRequest(subject=0, n_views=3, iterations=2, model=service.PUBLISHED_MODEL, levels=1,
                                     size=48, models_dir=str(models))
    events = list(service.reconstruct(req))
    result = events[-1]
    assert isinstance(result, service.AvatarResult) and result.model == "lifegom"
    assert [e.message for e in events[:-1] if e.message.startswith("feedback iteration")] == \
        ["feedback iteration 1/2", "feedback iteration 2/2"]
    assert result.n_gaussians == 4 * len(body.faces)
    assert torch.isfinite(result.avatar.params.rgb).all() and torch.isfinite(result.avatar.coarse_xyz).all()
    out = service.render_novel(result, service.RenderRequest(size=48, ground_truth=False))
    assert out.image.shape == (48, 48, 3) and out.alpha.max() > 0.1  # the body is drawn
    with pytest.raises(Exception, match="exactly 3 views"):
        list(service.reconstruct(service.ReconstructRequest(subject=0, n_views=2, model="lifegom", size=48,
                                                            models_dir=str(models))))


def test_cli_reconstructs_with_the_published_checkpoint_and_its_saved_avatar_keeps_their_face_order(tmp_path, capsys):
    """The CLI takes ``--model lifegom`` from the registry's models folder; the saved avatar keeps the published
    network's face order (its subdivision is not the suite's), so a reload puts each Gaussian on its face."""
    import argparse
    import json

    from backends.avatar import cli, outputs
    from backends.common.settings import get_settings

    models = get_settings().models_dir  # this test's own (empty) models folder
    (models / "smplx").mkdir(parents=True)
    published.synthetic_smplx(models / "smplx" / "SMPLX_NEUTRAL.npz", n_vertices=642, n_faces=0)
    body = read_smplx(models / "smplx" / "SMPLX_NEUTRAL.npz")
    torch.manual_seed(1)
    save_in_their_format(build_published(PublishedConfig(n_vertices=642), body, levels=0),
                         models / "lifegom" / CHECKPOINT_FILE)
    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    args = p.parse_args(["reconstruct", "--subject", "1", "--model", "lifegom", "--iterations", "1",
                         "--input-size", "48", "--out", str(tmp_path / "av")])
    assert cli.run(args) == 0
    card = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert card["model"] == "lifegom" and card["views"] == 3 and card["levels"] == 2
    again = outputs.load_avatar(tmp_path / "av" / "avatar.safetensors")
    assert again.skeleton.labels[16] == "upperarm01.L"  # SMPL-X's left shoulder, posed by the sliders
    req = service.RenderRequest(size=40, ground_truth=False, pose=service.PRESETS["walking"])
    first = service.render_novel(again, req).image
    assert first.std() > 0
    from backends.avatar.gom import subdivide
    from backends.avatar.lifegom_published import subdivide_like_theirs

    sub = again.avatar.subdivision
    assert np.array_equal(sub.faces, subdivide_like_theirs(body.faces, 2, 642).faces)  # their order, kept
    assert not np.array_equal(sub.faces, subdivide(body.faces, 642, 2).faces)  # (which the suite's is not)


def test_published_checkpoint_loads_is_true_only_when_the_whole_path_works(monkeypatch):
    """What bench.realsize records: True through the registry folders and the service; False (not a
    traceback) when the checkpoint written in their format lacks a key."""
    from backends.avatar import lifegom_published

    assert published.published_checkpoint_loads() is True
    real_save = lifegom_published.save_in_their_format

    def save_without_a_key(model, path, iteration=0):
        path = real_save(model, path, iteration)
        ckpt = torch.load(path, weights_only=True)
        del ckpt["network"]["reconstructor.embed_update_layer.bias"]
        torch.save(ckpt, path)
        return path

    monkeypatch.setattr(lifegom_published, "save_in_their_format", save_without_a_key)
    assert published.published_checkpoint_loads() is False
