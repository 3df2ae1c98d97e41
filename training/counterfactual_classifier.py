"""Train the Counterfactual tab's classifier: a small CNN that names the shape in a 32×32 primitive-world image.

    python -m training.counterfactual_classifier [--epochs 8] [--out assets/counterfactual-classifier]

Writes model.safetensors, config.json, metrics.json and a model card (README.md).
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
from backends.counterfactual.data import CLASSES, IMAGE_SIZE, cached_split
from backends.counterfactual.networks import ShapeClassifier

ROOT = Path(__file__).resolve().parents[1]


def to_tensor(images: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255.0


def augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Flips, and min-max rescaling half the time (the sampler rescales x̂0 that way) plus mild noise."""
    flip = torch.rand(x.shape[0], generator=gen) < 0.5
    x = torch.where(flip.view(-1, 1, 1, 1), x.flip(-1), x)
    mm = torch.rand(x.shape[0], generator=gen) < 0.5
    lo = x.amin((1, 2, 3), keepdim=True)
    hi = x.amax((1, 2, 3), keepdim=True)
    x = torch.where(mm.view(-1, 1, 1, 1), (x - lo) / (hi - lo).clamp_min(1e-3), x)
    return (x + 0.02 * torch.randn(x.shape, generator=gen)).clamp(0, 1)


@torch.no_grad()
def accuracy(model, images: np.ndarray, labels: np.ndarray) -> float:
    model.eval()
    preds = torch.cat([model(to_tensor(images[i:i + 500])).argmax(1) for i in range(0, len(images), 500)])
    return float((preds.numpy() == labels).mean())


def train(epochs: int, out: Path, data_dir: Path, limit: int | None = None, batch: int = 128, seed: int = 0) -> dict:
    seed_everything(seed)
    train_set = cached_split("train", data_dir, limit)
    val, test = cached_split("val", data_dir), cached_split("test", data_dir)
    model = ShapeClassifier(len(CLASSES), width=32, image_size=IMAGE_SIZE)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    steps = epochs * (len(train_set["labels"]) // batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=max(1, steps))
    gen = torch.Generator().manual_seed(seed)
    x_all, y_all = to_tensor(train_set["images"]), torch.from_numpy(train_set["labels"])
    start = time.time()
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(y_all), generator=gen)
        for i in range(0, len(perm) - batch + 1, batch):
            idx = perm[i:i + batch]
            loss = F.cross_entropy(model(augment(x_all[idx], gen)), y_all[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        print(f"epoch {epoch + 1}/{epochs} loss {loss.item():.4f} val acc {accuracy(model, val['images'], val['labels']):.4f}", flush=True)
    metrics = {
        "val_accuracy": accuracy(model, val["images"], val["labels"]),
        "test_accuracy": accuracy(model, test["images"], test["labels"]),
        "train_images": int(len(y_all)), "epochs": epochs, "batch": batch,
        "train_seconds": round(time.time() - start, 1),
        "params": sum(p.numel() for p in model.parameters()),
    }
    model.save(out)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    (out / "README.md").write_text(MODEL_CARD.format(**metrics, classes=", ".join(CLASSES)))
    return metrics


MODEL_CARD = """# counterfactual-classifier

A small CNN (3 conv blocks, {params:,} parameters) that names the shape of the one object in a 32×32
image of the project's primitive world ({classes}). It is the classifier the Counterfactual tab
explains and flips, and its penultimate features serve the bench's FID-style distance.

- **Data:** {train_images:,} images rendered by `backends/counterfactual/data.py` (open3d ray casting:
  one primitive of random colour, size, position and yaw in one of six rooms), seeds disjoint from
  the 2,000 validation and 2,000 test images.
- **Training:** `python -m training.counterfactual_classifier`, {epochs} epochs, batch {batch}, AdamW +
  one-cycle, flips, min-max rescaling and mild noise as augmentation; {train_seconds} s on the CPU.
- **Measured:** validation accuracy {val_accuracy:.4f}, test accuracy {test_accuracy:.4f}.
- **Input:** RGB in [0, 1], 32×32. **Output:** logits over the five shapes.
- **Cannot:** recognise anything outside this rendered domain (real photos, other shapes, several
  objects); it has not been calibrated, so its probabilities are only indicative.
"""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--limit", type=int, default=None, help="use only the first N training images")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "counterfactual-classifier")
    p.add_argument("--data-dir", type=Path, default=ROOT / "training" / "data")
    args = p.parse_args(argv)
    print(json.dumps(train(args.epochs, args.out, args.data_dir, args.limit), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
