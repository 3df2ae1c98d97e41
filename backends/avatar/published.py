"""Published formats of the Avatar capability (issue 24 §2/§3): what the project's loaders take at full size.

- ``lifegom``: the authors' checkpoint (``torch.load(iter_N.pt)["network"]``) as
  :func:`lifegom_published.load_published` takes it, built on the meta device at the released THuman2.0
  3-view size (10,475 SMPL-X vertices);
- ``smplx``: the arrays of ``SMPLX_NEUTRAL.npz`` that :func:`smplx.read_smplx` reads (six it uses) or checks
  (nine more the official loader reads); the component is ``npz``.

:func:`published_checkpoint_loads` proves the whole path once with random weights (no real file needed).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch

PUBLISHED_MODELS: tuple[str, ...] = ("lifegom", "smplx")


def expected_format(model_id: str) -> dict[str, dict[str, tuple[int, ...]]]:
    if model_id == "lifegom":
        from .lifegom_published import LifeGomPublished, PublishedConfig

        cfg = PublishedConfig()
        with torch.device("meta"):
            model = LifeGomPublished(cfg, np.array([[0, 1, 2]]), torch.zeros(cfg.n_vertices, 55),
                                     torch.zeros(cfg.n_vertices, 3), levels=0)
        return {"network": {k: tuple(v.shape) for k, v in model.state_dict().items()}}
    if model_id == "smplx":
        from .smplx import expected_layout

        # every array read_smplx reads or checks, for SMPL-X v1.1's sizes
        return {"npz": expected_layout(10475, 20908, 55, 400)}
    raise KeyError(f"no published format for {model_id!r}: {PUBLISHED_MODELS}")


def synthetic_smplx(path: Path, n_vertices: int = 10475, n_faces: int = 20908, n_joints: int = 55,
                    n_shape: int = 400, seed: int = 0) -> Path:
    """A random, clearly synthetic npz in SMPL-X's layout (the real file may not be shipped): a UV sphere
    of ``n_vertices`` around a standing body's size, joints along its axis, smooth LBS weights."""
    rng = np.random.default_rng(seed)
    rings = max(3, int(np.sqrt(n_vertices / 2)))
    per = -(-(n_vertices - 2) // rings)
    t = np.linspace(0, np.pi, rings + 2)[1:-1]
    p = np.linspace(0, 2 * np.pi, per, endpoint=False)
    tt, pp = np.meshgrid(t, p, indexing="ij")
    v = np.stack([0.25 * np.sin(tt) * np.cos(pp), 0.9 * np.cos(tt), 0.15 * np.sin(tt) * np.sin(pp)], -1).reshape(-1, 3)
    v = np.concatenate([[[0, 0.9, 0]], v, [[0, -0.9, 0]]])[:n_vertices] + [0.0, 0.9, 0.0]  # standing on y = 0
    faces = []
    for r in range(rings - 1):
        for k in range(per):
            a, b = 1 + r * per + k, 1 + r * per + (k + 1) % per
            c, d = a + per, b + per
            faces += [[a, c, b], [b, c, d]]
    faces = [f for f in faces if max(f) < n_vertices]
    faces += [[0, 1 + k, 1 + (k + 1) % per] for k in range(per)]
    faces = np.array(faces, dtype=np.uint32)
    faces = np.resize(faces, (n_faces, 3)) if n_faces else faces
    joints_y = np.linspace(0.0, 0.8, n_joints)
    w = np.exp(-((v[:, 1:2] - joints_y[None]) ** 2) / 0.02)
    w /= w.sum(1, keepdims=True)
    kintree = np.stack([np.r_[2**32 - 1, np.arange(n_joints - 1)], np.arange(n_joints)]).astype(np.uint32)
    jreg = np.zeros((n_joints, n_vertices))
    jreg[np.arange(n_joints), rng.integers(0, n_vertices, n_joints)] = 1.0
    arrays = {"v_template": v, "f": faces, "weights": w, "kintree_table": kintree, "J_regressor": jreg,
              "shapedirs": rng.normal(0, 1e-3, (n_vertices, 3, n_shape)),
              "posedirs": np.zeros((n_vertices, 3, 9 * (n_joints - 1)), np.float32)}
    np.savez(path, **arrays)
    return Path(path)


def full_size_run(size: int = 1024, iterations: int = 3, render_size: int = 512) -> dict:
    """One avatar from the published network at full size with random weights (SMPL-X's 10,475 vertices, two
    subdivisions = 334,528 Gaussians, 3 views of ``size``², their 3 iterations) through the service, and one
    render: what a user waits on. Raises on failure (the caller records it)."""
    import time

    from . import service
    from .lifegom_published import CHECKPOINT_FILE, PublishedConfig, build_published, save_in_their_format
    from .smplx import read_smplx

    with tempfile.TemporaryDirectory() as tmp:
        models = Path(tmp)
        (models / "smplx").mkdir()
        synthetic_smplx(models / "smplx" / "SMPLX_NEUTRAL.npz")
        body = read_smplx(models / "smplx" / "SMPLX_NEUTRAL.npz")
        torch.manual_seed(0)
        save_in_their_format(build_published(PublishedConfig(), body, levels=0), models / "lifegom" / CHECKPOINT_FILE)
        start = time.perf_counter()
        model = service.load_model(service.PUBLISHED_MODEL, service.RENDER_LEVELS, str(models))
        load_s = time.perf_counter() - start
        req = service.ReconstructRequest(subject=0, n_views=3, iterations=iterations, model=service.PUBLISHED_MODEL,
                                         size=size, models_dir=str(models))
        result = [x for x in service.reconstruct(req) if isinstance(x, service.AvatarResult)][0]
        out = service.render_novel(result, service.RenderRequest(size=render_size, ground_truth=False))
        return {"resolution": size, "iterations": iterations, "gaussians": result.n_gaussians,
                "load_s": load_s, "seconds": result.seconds, "unit": "avatar", "render_ms": out.render_ms,
                "render_size": render_size, "parameters": sum(p.numel() for p in model.parameters())}


def published_checkpoint_loads(size: int = 64, n_vertices: int = 642) -> bool:
    """True when a random-weight checkpoint in the authors' format loads through the registry's folders and
    the avatar service reconstructs and renders one view from it; False (never raises) when any step fails."""
    try:
        from . import service
        from .lifegom_published import CHECKPOINT_FILE, PublishedConfig, build_published, save_in_their_format
        from .smplx import read_smplx

        with tempfile.TemporaryDirectory() as tmp:
            models = Path(tmp)
            (models / "smplx").mkdir()
            synthetic_smplx(models / "smplx" / "SMPLX_NEUTRAL.npz", n_vertices=n_vertices, n_faces=0)
            body = read_smplx(models / "smplx" / "SMPLX_NEUTRAL.npz")
            torch.manual_seed(0)
            net = build_published(PublishedConfig(n_vertices=n_vertices), body, levels=0)
            save_in_their_format(net, models / "lifegom" / CHECKPOINT_FILE)
            req = service.ReconstructRequest(subject=0, n_views=3, iterations=1, model=service.PUBLISHED_MODEL,
                                             levels=0, size=size, models_dir=str(models))
            result = [x for x in service.reconstruct(req) if isinstance(x, service.AvatarResult)][0]
            image = service.render_novel(result, service.RenderRequest(size=size, ground_truth=False)).image
            return bool(image.shape == (size, size, 3) and np.isfinite(image).all())
    except Exception:  # noqa: BLE001 — the bench records False, not a traceback
        return False
