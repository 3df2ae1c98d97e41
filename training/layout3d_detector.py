"""Train the 3D Layout evaluation detector: what stands in a box (40 shape × colour classes or nothing).

    python -m training.layout3d_detector [--scenes 8000] [--epochs 6] [--out assets/layout3d-detector]

Crops come from the layout3d training renders (``backends.layout3d.data``): each object's box
bounding box (jittered by up to 2 px, blurred a little as the VAE's decoder blurs), and the same
crops of empty scenes as ``nothing``. Scenes of the validation split give the test accuracy.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from backends.common.seeding import seed_everything
from backends.layout3d.data import SPLITS, cached_split, random_object, sample_scene
from backends.synth import Scene, render
from backends.synth.detector import CLASSES, bbox, build_detector, crop

ROOT = Path(__file__).resolve().parents[1]


def scene_of(seed: int) -> Scene:
    """The scene ``data.make_sample(seed)`` rendered (same random stream)."""
    return sample_scene(seed)[0]


@torch.no_grad()
def vae_roundtrip(images: np.ndarray, vae_dir: Path, batch: int = 64) -> np.ndarray:
    """The images as the generator's decoder renders them (encode → decode with the embedded VAE)."""
    from diffusers import AutoencoderKL

    vae = AutoencoderKL.from_pretrained(vae_dir).eval()
    out = []
    for i in range(0, len(images), batch):
        x = torch.from_numpy(images[i:i + batch]).permute(0, 3, 1, 2).float() / 127.5 - 1
        r = vae.decode(vae.encode(x).latent_dist.mean).sample.clamp(-1, 1)
        out.append(((r + 1) * 127.5 + 0.5).clamp(0, 255).byte().permute(0, 2, 3, 1).numpy())
    return np.concatenate(out)


def crops_of(split: str, n_scenes: int, data_dir: Path, seed: int, vae_dir: Path | None = None,
             ) -> tuple[torch.Tensor, torch.Tensor]:
    data = dict(cached_split(split, data_dir))
    if vae_dir is not None:  # half the scenes as the decoder renders them
        k = min(n_scenes, len(data["images"]))
        rec = vae_roundtrip(data["images"][:k:2], vae_dir)
        data["images"] = data["images"].copy()
        data["images"][:k:2] = rec
    seeds = SPLITS[split]
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for i in range(min(n_scenes, len(seeds))):
        scene = scene_of(seeds[i])
        image = data["images"][i]
        objects = scene.objects
        if not objects:  # an empty room: a random box's crop is "nothing"
            objects = (random_object(rng),)
            labels = [len(CLASSES) - 1]
            scene = Scene(scene.room, objects, scene.camera)
        else:
            labels = [CLASSES.index(f"{o.color} {o.shape}") for o in objects]
        for j, label in enumerate(labels):
            m = render(scene, as_boxes=True, shadows=False, room=False, only=(j,)).mask(j)
            b = bbox(m)
            if b is None:
                continue
            jit = rng.integers(-2, 3, 4)
            b = (b[0] + jit[0], b[1] + jit[1], max(b[0] + jit[0] + 2, b[2] + jit[2]), max(b[1] + jit[1] + 2, b[3] + jit[3]))
            xs.append(crop(image, tuple(int(v) for v in np.clip(b, 0, 64))))
            ys.append(label)
    return torch.stack(xs), torch.tensor(ys)


def blur(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    sigma = float(torch.rand(1, generator=gen)) * 0.9
    if sigma < 0.2:
        return x
    r = torch.arange(-2, 3, dtype=torch.float32)
    k = torch.exp(-r ** 2 / (2 * sigma ** 2))
    k = (k / k.sum())
    k2 = (k[:, None] * k[None, :]).expand(3, 1, 5, 5)
    return F.conv2d(F.pad(x, (2, 2, 2, 2), mode="replicate"), k2, groups=3)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenes", type=int, default=8000)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--data-dir", type=Path, default=ROOT / "training" / "data")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "layout3d-detector")
    p.add_argument("--vae", type=Path, default=None,
                   help="embedded VAE folder: also train on (and validate with) its reconstructions")
    args = p.parse_args(argv)
    seed_everything(args.seed)
    torch.set_num_threads(args.threads)
    t0 = time.time()
    x, y = crops_of("train", args.scenes, args.data_dir, args.seed, args.vae)
    xv, yv = crops_of("val", 1000, args.data_dir, args.seed + 1)
    xr, yr = crops_of("val", 1000, args.data_dir, args.seed + 1, args.vae) if args.vae else (None, None)
    print(f"{len(x)} train crops, {len(xv)} val crops in {time.time() - t0:.0f} s", flush=True)
    net = build_detector()
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(args.seed)
    steps = args.epochs * (len(x) // args.batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps)
    for step in range(steps):
        idx = torch.randint(0, len(x), (args.batch,), generator=gen)
        xb = blur(x[idx], gen)
        xb = (xb + 0.02 * torch.randn(xb.shape, generator=gen)).clamp(0, 1)
        xb = torch.where(torch.rand(args.batch, 1, 1, 1, generator=gen) < 0.5, xb.flip(-1), xb)
        loss = F.cross_entropy(net(xb), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 100 == 0:
            print(f"step {step}/{steps} loss {loss.item():.3f}", flush=True)
    net.eval()
    with torch.no_grad():
        acc = float((net(xv).argmax(-1) == yv).float().mean())
        acc_blur = float((net(blur(xv, torch.Generator().manual_seed(1))).argmax(-1) == yv).float().mean())
        acc_vae = float((net(xr).argmax(-1) == yr).float().mean()) if xr is not None else None
    net.save(args.out)
    metrics = {"val_accuracy": round(acc, 4), "val_accuracy_blurred": round(acc_blur, 4), "train_crops": len(x),
               "val_crops": len(xv), "val_accuracy_half_vae_decoded": acc_vae and round(acc_vae, 4), "classes": len(CLASSES), "steps": steps, "minutes": round((time.time() - t0) / 60, 1)}
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=1))
    print(json.dumps(metrics))


if __name__ == "__main__":
    main()
