"""Issue 24 §2 for Avatar: LIFe-GoM's published checkpoint and the SMPL-X file, checked against the authors'
code (fixtures written by training/published_formats/{lifegom,smplx}.py); the service/CLI path is in
test_lifegom_published.py."""

import numpy as np
import pytest
import torch

from backends.avatar import published
from backends.avatar.smplx import read_smplx
from backends.common.errors import InputError
from backends.common.published_formats import compare, compare_format, matches, read_fixture


def test_every_published_model_has_a_fixture_from_the_authors_code():
    assert published.PUBLISHED_MODELS == ("lifegom", "smplx")
    assert read_fixture("lifegom").source.startswith("wenj/LIFe-GoM@60db1aa")
    assert read_fixture("smplx").source.startswith("vchoutas/smplx@")


def test_lifegom_loader_takes_every_published_key_at_full_size():
    fixture = read_fixture("lifegom")
    expected = published.expected_format("lifegom")
    result = compare_format(fixture, expected)
    assert matches(fixture, expected), {k: v.summary() for k, v in result.items()}
    net = fixture.components["network"]
    assert net["reconstructor.vertex_embed"] == (10475, 1152)  # SMPL-X's vertices
    assert net["reconstructor.so3_update_layer.0.weight"] == (32, 3 * 1152 + 96)  # 3 views
    assert sum(int(np.prod(s)) for s in net.values()) == 47_574_291


def test_smplx_fixture_lists_what_the_official_loader_reads_and_read_smplx_takes_that_layout(tmp_path):
    layout = read_fixture("smplx").components["npz"]
    assert layout["v_template"] == (10475, 3) and layout["f"] == (20908, 3)
    assert layout["weights"] == (10475, 55) and layout["shapedirs"] == (10475, 3, 400)
    assert matches(read_fixture("smplx"), published.expected_format("smplx"))  # what read_smplx reads or checks
    rng = np.random.default_rng(0)
    arrays = {}
    for name, shape in layout.items():  # random values in exactly the published names and shapes
        if name == "f":
            arrays[name] = rng.integers(0, 10475, shape).astype(np.uint32)
        elif name == "kintree_table":
            arrays[name] = np.stack([np.r_[2**32 - 1, rng.integers(0, np.arange(1, 55))], np.arange(55)]
                                    ).astype(np.uint32)
        elif "idx" in name:
            arrays[name] = rng.integers(0, 20908, shape).astype(np.int64)
        else:
            arrays[name] = rng.normal(0, 0.01, shape).astype(np.float32)
    np.savez(tmp_path / "SMPLX_NEUTRAL.npz", **arrays)
    body = read_smplx(tmp_path / "SMPLX_NEUTRAL.npz")
    got = {"v_template": body.v_template.shape, "f": body.faces.shape, "weights": body.weights.shape,
           "J_regressor": body.j_regressor.shape, "shapedirs": body.shapedirs.shape,
           "kintree_table": (2, len(body.parents))}
    assert not compare({k: layout[k] for k in got}, got)
    assert body.parents[0] == -1
    arrays["posedirs"] = arrays["posedirs"][:, :, :-9]  # a file of another layout is refused, not half-read
    np.savez(tmp_path / "other.npz", **arrays)
    with pytest.raises(InputError, match="posedirs"):
        read_smplx(tmp_path / "other.npz")


def test_published_network_reproduces_the_authors_modules_on_small_inputs():
    """Outputs of their code (lifegom.forward.safetensors, written by the generator from wenj/LIFe-GoM with the
    same seeded weights): subdivision order, Steiner frames, encoder, view fusion, Point Transformer."""
    from safetensors.torch import load_file
    from torch import nn

    from backends.avatar.gom import steiner_frame
    from backends.avatar.lifegom_published import (
        EncoderLayer,
        PointTransformerEnc,
        Resnet18Encoder,
        subdivide_like_theirs,
    )
    from backends.common.published_formats import ASSETS
    from training.published_formats.lifegom import reference_inputs, seeded_

    ref = load_file(str(ASSETS / "lifegom.forward.safetensors"))
    inp = reference_inputs()
    sub = subdivide_like_theirs(inp["mesh_faces"].numpy(), 2, 42)
    assert np.array_equal(sub.faces, ref["subdivide.faces"].numpy())
    theirs_idx = ref["subdivide.interp_points"].numpy()
    assert np.array_equal(sub.indices, np.where(theirs_idx < 0, 0, theirs_idx))
    assert np.allclose(sub.weights, ref["subdivide.interp_weights"].numpy())
    torch.testing.assert_close(steiner_frame(inp["triangles"]), ref["steiner"], atol=1e-5, rtol=1e-4)
    with torch.no_grad():
        enc = seeded_(Resnet18Encoder(), 2)
        for i, f in enumerate(enc(inp["images"][0])):
            torch.testing.assert_close(f, ref[f"encoder.{i}"], atol=1e-4, rtol=1e-4)
        fuse = seeded_(nn.Sequential(EncoderLayer(1152, 6, 1152, 1152), EncoderLayer(1152, 6, 1152, 1152)), 3)
        x = fuse[0](inp["view_feats"], inp["view_feats"], inp["view_feats"])
        torch.testing.assert_close(fuse[1](inp["vertex_embed"][:, None], x, x)[:, 0], ref["multiview_embed"],
                                   atol=1e-4, rtol=1e-4)
        pt = seeded_(PointTransformerEnc(2307), 4)
        got = pt(inp["points"], inp["point_feats"])
        assert ref["gom_encoder"].abs().mean() > 0.05  # a signal, not zeros
        torch.testing.assert_close(got, ref["gom_encoder"], atol=1e-4, rtol=1e-4)


def test_face_heads_equal_their_concatenated_input_form():
    """The published network applies the heads' first layers per view and map block (no F×3552 input built);
    that equals their Linear on cat([corner features, view-major pixel features × visibility])."""
    import torch.nn.functional as F

    from backends.avatar.lifegom_published import (
        HEADS,
        LifeGomPublished,
        PublishedConfig,
        PublishedReconstructor,
    )
    from training.published_formats.lifegom import seeded_

    torch.manual_seed(0)
    r = seeded_(PublishedReconstructor(PublishedConfig(n_vertices=4)), 5)
    maps = [torch.randn(3, c, 6, 5) for c in (64, 64, 128, 256, 512, 128)]
    corner, centre = torch.randn(50, 96), torch.rand(3, 50, 2) * 2 - 1
    seen = (torch.rand(3, 50) > 0.3).float()
    heads = [getattr(r, f"{k}_update_layer") for k in HEADS]
    w1, b1 = torch.cat([h[0].weight for h in heads]), torch.cat([h[0].bias for h in heads])
    with torch.no_grad():
        hidden = LifeGomPublished._face_hidden(corner, maps, centre, seen, w1, b1)
        pix = torch.cat([F.grid_sample(m, centre[:, None], align_corners=False)[:, :, 0] for m in maps], 1)
        pix = pix.permute(0, 2, 1) * seen[..., None]  # N×F×C, as their reconstructor masks by visibility
        x = torch.cat([corner, pix.permute(1, 0, 2).reshape(50, -1)], -1)
        for i, h in enumerate(heads):
            torch.testing.assert_close(h[2](hidden[:, 32 * i:32 * (i + 1)]), h(x), atol=1e-4, rtol=1e-4)
