"""Synthetic people for the avatar reconstructor: anny bodies in random shapes, poses and procedural
clothes, ray-cast by open3d (backends.avatar.data) — an independent renderer, so the Gaussian splatter
is never graded against itself.

Each subject is one ``.npz`` file: ``N_INPUT`` input views on a jittered ring in pose A (what the
reconstructor sees), ``N_TARGET`` novel views of pose A from random directions and heights, and
``N_NOVEL_POSE`` views of the same person in a second random pose B (for reposing). Images are uint8;
cameras are OpenCV world → camera matrices and intrinsics; ``transforms`` are each pose's skinning
transforms for this subject's skeleton and ``template`` its rest-pose coarse mesh (the fitted body
LIFe-GoM takes as input). Train and test subjects come from disjoint seed ranges.

    python -m training.avatar_data --out DIR --train 320 --test 40 --size 64
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from backends.avatar import body, data
from backends.avatar.pose import Pose, pose_transforms

N_INPUT, N_TARGET, N_NOVEL_POSE = 3, 3, 3
TEST_SEED0 = 1_000_000  # test subjects' seeds start here (disjoint from the training seeds)


def random_cameras(rng: np.random.Generator, n: int, size: int):
    """``n`` cameras at independent random angles and heights around the body (novel views)."""
    cams = []
    for _ in range(n):
        cams += data.camera_ring(1, size, height=float(rng.uniform(-0.3, 0.6)), start_deg=float(rng.uniform(0, 360)))
    return cams


@torch.no_grad()
def make_subject(seed: int, size: int) -> dict[str, np.ndarray]:
    """All views and metadata of one synthetic subject (see the module docstring)."""
    rng = np.random.default_rng(seed)
    subject = data.Subject.random(rng)
    pose_a, pose_b = Pose.random(rng, spread=0.7), Pose.random(rng, spread=0.9)
    rest = body.rest_body(subject.phenotype)
    inputs = data.camera_ring(N_INPUT, size, start_deg=float(rng.uniform(0, 360)), jitter_deg=8.0, rng=rng)
    views_a = data.render_views(subject, pose_a, inputs + random_cameras(rng, N_TARGET, size), rest)
    views_b = data.render_views(subject, pose_b, random_cameras(rng, N_NOVEL_POSE, size), rest)
    views = views_a + views_b
    coarse = body.coarse_template()
    return {
        "rgb": np.stack([np.round(v.rgb * 255) for v in views]).astype(np.uint8),
        "mask": np.stack([v.mask > 0.5 for v in views]).astype(np.uint8),
        "viewmats": np.stack([v.camera.extrinsics for v in views]).astype(np.float32),
        "Ks": np.stack([v.camera.intrinsics for v in views]).astype(np.float32),
        "pose_index": np.array([0] * len(views_a) + [1] * len(views_b), dtype=np.int64),
        "transforms": torch.stack([pose_transforms(rest, pose_a), pose_transforms(rest, pose_b)]).float().numpy(),
        "template": coarse.vertices(rest.vertices).float().numpy(),
        "meta": np.array(json.dumps({"seed": seed, "phenotype": subject.phenotype.as_dict(),
                                     "outfit": asdict(subject.outfit), "poses": [pose_a.as_dict(), pose_b.as_dict()]})),
    }


def generate(out: Path, seeds: list[int], size: int, log_every: int = 20) -> None:
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for i, seed in enumerate(seeds):
        path = out / f"{seed:07d}.npz"
        if path.is_file():
            continue
        tmp = out / f"{seed:07d}.tmp.npz"
        np.savez_compressed(tmp, **make_subject(seed, size))
        tmp.rename(path)
        if (i + 1) % log_every == 0:
            print(f"{out.name}: {i + 1}/{len(seeds)} subjects, {time.perf_counter() - start:.0f} s", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--train", type=int, default=320)
    p.add_argument("--test", type=int, default=40)
    p.add_argument("--size", type=int, default=64)
    args = p.parse_args()
    torch.set_num_threads(1)
    generate(args.out / "test", [TEST_SEED0 + i for i in range(args.test)], args.size)
    generate(args.out / "train", list(range(args.train)), args.size)


if __name__ == "__main__":
    main()
