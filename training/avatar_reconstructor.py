"""Train LIFe-GoM's reconstructor (backends.avatar.network) on synthetic people (training.avatar_data).

Each step takes one subject: its input views (usually the 3 ring views; sometimes 1, 2, 4 or 5 of its
pose-A views, so one model serves 1–5 images) and targets it has not seen — novel views of the same
pose and views of the same person in another pose (the avatar is reposed by LBS). As in the paper,
the loss is applied to the renders of every feedback iteration: L1 colour + L1 mask + (1 − SSIM),
plus a Laplacian smoothness term on the coarse vertices' displacement. The ground truth is open3d's
ray cast of the textured anny mesh; the prediction is the torch Gaussian rasterizer's render.

    python -m training.avatar_reconstructor --data DIR --run DIR [--minutes 90] [--levels 1]
    python -m training.avatar_reconstructor --data DIR --export RUN/last --to assets/avatar-embedded \
        [--ablation MULTI_RES_SNAPSHOT SINGLE_RES_RUN/last]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from backends.avatar import body
from backends.avatar.network import (
    Reconstructor,
    ReconstructorConfig,
    Views,
    build_reconstructor,
    save_reconstructor,
)
from backends.avatar.render import render
from backends.common.imagemetrics import psnr, ssim

from .avatar_data import N_INPUT, N_TARGET

MASK_W, SSIM_W, LAPLACE_W = 1.0, 0.2, 100.0


# --- data -----------------------------------------------------------------------------------------

@dataclass
class Subject:
    """One subject file as float tensors."""

    rgb: torch.Tensor  # K×H×W×3
    mask: torch.Tensor  # K×H×W
    viewmats: torch.Tensor  # K×4×4
    Ks: torch.Tensor  # K×3×3
    pose_index: torch.Tensor  # K
    transforms: torch.Tensor  # P×J×4×4
    template: torch.Tensor  # V×3

    @staticmethod
    def load(path: Path) -> Subject:
        with np.load(path) as f:
            return Subject.from_arrays(f)

    @staticmethod
    def from_arrays(f) -> Subject:
        """From training.avatar_data.make_subject's arrays (or the npz it was saved to)."""
        return Subject(torch.from_numpy(f["rgb"]).float() / 255, torch.from_numpy(f["mask"]).float(),
                       torch.from_numpy(f["viewmats"]), torch.from_numpy(f["Ks"]),
                       torch.from_numpy(f["pose_index"]), torch.from_numpy(f["transforms"]),
                       torch.from_numpy(f["template"]))

    def views(self, ids: list[int]) -> Views:
        """These views as a batch of one (each with its pose's transforms)."""
        ids = torch.as_tensor(ids)
        return Views(self.rgb[ids][None], self.mask[ids][None], self.viewmats[ids][None], self.Ks[ids][None],
                     self.transforms[self.pose_index[ids]][None], self.template[None])


INPUTS = list(range(N_INPUT))  # the ring views of pose A
NOVEL_VIEWS = list(range(N_INPUT, N_INPUT + N_TARGET))  # random views of pose A


def split_views(subject: Subject, rng: random.Random, vary_inputs: float = 0.3) -> tuple[list[int], list[int]]:
    """(input ids, target ids): the ring, or a random 1–5 of pose A's views; targets are the rest (a few)."""
    pose_a = INPUTS + NOVEL_VIEWS
    if rng.random() < vary_inputs:
        inputs = sorted(rng.sample(pose_a, rng.choice([1, 2, 4, 5])))
    else:
        inputs = list(INPUTS)
    others = [i for i in pose_a if i not in inputs]
    pose_b = [i for i in range(len(subject.pose_index)) if subject.pose_index[i] == 1]
    targets = rng.sample(others, min(2, len(others))) + rng.sample(pose_b, 1)
    return inputs, targets


# --- model ----------------------------------------------------------------------------------------

def new_model(config: ReconstructorConfig) -> Reconstructor:
    """A fresh reconstructor on the shipped coarse template (the average body as the default start)."""
    coarse = body.coarse_template()
    rest = body.rest_body()
    return build_reconstructor(config, coarse.vertices(rest.vertices).float(), coarse.faces,
                               coarse.lbs_weights().float(), coarse=coarse)


def render_target(avatar, subject: Subject, j: int):
    size_h, size_w = subject.rgb.shape[1:3]
    return render(avatar.gaussians(subject.transforms[subject.pose_index[j]]), subject.viewmats[j], subject.Ks[j],
                  size_w, size_h, backend="torch")


def ssim_torch(a: torch.Tensor, b: torch.Tensor, sigma: float = 1.5) -> torch.Tensor:
    """Mean SSIM of two H×W×C images (Gaussian window, per channel), differentiable."""
    r = int(3.5 * sigma + 0.5)
    x = torch.arange(-r, r + 1, dtype=a.dtype)
    g = torch.exp(-x * x / (2 * sigma * sigma))
    g = g / g.sum()
    c = a.shape[-1]
    kx, ky = g.view(1, 1, 1, -1).repeat(c, 1, 1, 1), g.view(1, 1, -1, 1).repeat(c, 1, 1, 1)

    def blur(t):
        return F.conv2d(F.conv2d(t, kx, padding=(0, r), groups=c), ky, padding=(r, 0), groups=c)

    a, b = a.permute(2, 0, 1)[None], b.permute(2, 0, 1)[None]
    mu_a, mu_b = blur(a), blur(b)
    va, vb, cov = blur(a * a) - mu_a ** 2, blur(b * b) - mu_b ** 2, blur(a * b) - mu_a * mu_b
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    return (((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a ** 2 + mu_b ** 2 + c1) * (va + vb + c2))).mean()


def uniform_laplacian(faces: np.ndarray, n: int) -> torch.Tensor:
    """Sparse V×V uniform Laplacian L = I − D⁻¹A of a triangle mesh."""
    e = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    e = np.unique(np.sort(np.concatenate([e, e[:, ::-1]]), 1), axis=0)
    e = np.concatenate([e, e[:, ::-1]])
    deg = np.bincount(e[:, 0], minlength=n).astype(np.float32)
    idx = torch.from_numpy(np.concatenate([e.T, np.stack([np.arange(n)] * 2)], 1))
    val = torch.from_numpy(np.concatenate([-1.0 / deg[e[:, 0]], np.ones(n, np.float32)]))
    return torch.sparse_coo_tensor(idx, val, (n, n), check_invariants=True).coalesce()


def step_loss(model: Reconstructor, subject: Subject, inputs: list[int], targets: list[int], lap: torch.Tensor,
              iter_weights: list[float] | None = None):
    """The loss over every iteration's renders (the last iteration on all targets, earlier ones on the
    first target, to save CPU), a weighted mean over iterations (``iter_weights``, default equal: the
    paper's plain sum; weighting the last one more asks the feedback to improve on the first); also the
    last iteration's mean full-image PSNR."""
    history = model(subject.views(inputs))
    weights = iter_weights or [1.0] * len(history)
    if len(weights) != len(history):
        raise ValueError(f"{len(weights)} iteration weights for {len(history)} iterations")
    loss, last_mse = 0.0, []
    for k, avatars in enumerate(history):
        avatar, last = avatars[0], k == len(history) - 1
        views = targets if last else targets[:1]
        it = 0.0
        for j in views:
            out = render_target(avatar, subject, j)
            gt, m = subject.rgb[j], subject.mask[j]
            image = (out.rgb - gt).abs().mean() + MASK_W * (out.alpha - m).abs().mean() \
                + SSIM_W * (1 - ssim_torch(out.rgb, gt))
            it = it + image / len(views)
            if last:
                last_mse.append(((out.rgb.detach().clamp(0, 1) - gt) ** 2).mean().item())
        disp = avatar.coarse_xyz - subject.template
        it = it + LAPLACE_W * torch.sparse.mm(lap, disp).pow(2).sum(-1).mean()
        loss = loss + weights[k] * it
    return loss / sum(weights), float(np.mean([-10 * math.log10(max(m, 1e-10)) for m in last_mse]))


# --- evaluation -----------------------------------------------------------------------------------

def person_crop(mask: np.ndarray, pad: int = 3) -> tuple[slice, slice]:
    """The box around the person (as LIFe-GoM's GHG protocol crops around it), padded."""
    ys, xs = np.nonzero(mask > 0.5)
    h, w = mask.shape
    return slice(max(0, ys.min() - pad), min(h, ys.max() + pad + 1)), slice(max(0, xs.min() - pad), min(w, xs.max() + pad + 1))


def image_scores(pred: np.ndarray, gt: np.ndarray, mask: np.ndarray) -> dict[str, float]:
    ys, xs = person_crop(mask)
    return {"psnr": psnr(pred[ys, xs], gt[ys, xs]), "ssim": ssim(pred[ys, xs], gt[ys, xs]),
            "psnr_full": psnr(pred, gt)}


@torch.no_grad()
def score_avatar(avatar, s: Subject, scores: dict[str, list[dict]]) -> None:
    """Append the avatar's scores on the subject's held-out views: novel views of the input pose and
    views of the second pose."""
    for j in range(N_INPUT, len(s.pose_index)):
        out = render_target(avatar, s, j)
        key = "novel_view" if s.pose_index[j] == 0 else "novel_pose"
        scores[key].append(image_scores(out.rgb.clamp(0, 1).numpy(), s.rgb[j].numpy(), s.mask[j].numpy()))


@torch.no_grad()
def evaluate_scores(model: Reconstructor, subjects: list[Subject], iterations: int = 3):
    """(per-image scores, seconds per reconstruction) of the avatar from the 3 ring views on held-out
    subjects' novel views (same pose) and novel poses, in subject order."""
    model.eval()
    scores = {"novel_view": [], "novel_pose": []}
    seconds = []
    for s in subjects:
        t0 = time.perf_counter()
        avatar = model(s.views(INPUTS), n_iters=iterations)[-1][0]
        seconds.append(time.perf_counter() - t0)
        score_avatar(avatar, s, scores)
    return scores, seconds


def evaluate(model: Reconstructor, subjects: list[Subject], iterations: int = 3) -> dict:
    """PSNR/SSIM (person crop) of the avatar from the 3 ring views, on held-out subjects' novel views
    (same pose) and novel poses; also the seconds per reconstruction."""
    scores, seconds = evaluate_scores(model, subjects, iterations)
    return summarize(scores, seconds, len(subjects))


def paired(a: dict[str, list[dict]], b: dict[str, list[dict]], n_subjects: int) -> dict:
    """PSNR of ``a`` minus ``b`` on the same images (the right test for "a beats b": the per-image spread
    between subjects cancels). Mean and 95 % t-interval over images, and — stricter, as a subject's six
    images are not independent — over the per-subject mean differences; the share of images ``a`` wins."""
    from scipy.stats import t

    diffs = {k: np.array([x["psnr"] - y["psnr"] for x, y in zip(a[k], b[k], strict=True)]) for k in a}
    d = np.concatenate(list(diffs.values()))
    per_subject = np.concatenate([v.reshape(n_subjects, -1) for v in diffs.values()], 1).mean(1)

    def ci(v):
        return float(t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float("nan")

    out = {"images": len(d), "psnr_diff": float(d.mean()), "psnr_diff_ci95": ci(d),
           "psnr_diff_ci95_subjects": ci(per_subject), "subjects": n_subjects,
           "images_better": float((d > 0).mean())}
    for k, v in diffs.items():
        out[f"{k}_psnr_diff"], out[f"{k}_psnr_diff_ci95"] = float(v.mean()), ci(v)
    return out


def summarize(scores: dict[str, list[dict]], seconds: list[float], n_subjects: int) -> dict:
    out = {"subjects": n_subjects, "recon_s": float(np.mean(seconds)) if seconds else None}
    for key, rows in scores.items():
        for metric in ("psnr", "ssim", "psnr_full"):
            vals = np.array([r[metric] for r in rows])
            out[f"{key}_{metric}"] = float(vals.mean())
            out[f"{key}_{metric}_ci95"] = float(1.96 * vals.std(ddof=1) / math.sqrt(len(vals))) if len(vals) > 1 else 0.0
        out[f"{key}_images"] = len(rows)
    out["psnr"] = float(np.mean([r["psnr"] for rows in scores.values() for r in rows]))
    out["ssim"] = float(np.mean([r["ssim"] for rows in scores.values() for r in rows]))
    return out


# --- training loop --------------------------------------------------------------------------------

def init_from(model: Reconstructor, folder: Path) -> None:
    """Start from another checkpoint's weights. A face head whose first layer is wider here (the checkpoint
    had no face feedback) gets zero weights on the new inputs, so the model starts as the checkpoint."""
    from safetensors.torch import load_file

    state, own = load_file(str(Path(folder) / "model.safetensors")), model.state_dict()
    for k, v in state.items():
        if own[k].shape != v.shape:
            if own[k].dim() != 2 or own[k].shape[0] != v.shape[0] or own[k].shape[1] < v.shape[1]:
                raise ValueError(f"{k}: {tuple(v.shape)} in the checkpoint cannot start {tuple(own[k].shape)}")
            wide = torch.zeros_like(own[k])
            wide[:, :v.shape[1]] = v
            state[k] = wide
    model.load_state_dict(state)


def recipe(args) -> dict:
    """The settings that define a training run (recorded in each checkpoint and the exported training.json)."""
    keys = ("minutes", "max_steps", "size", "levels", "lr", "warmup", "seed", "face_feedback", "iter_weights")
    out = {k: getattr(args, k) for k in keys}
    if args.init_from:
        src = Path(args.init_from)
        out["init_from_step"] = json.loads((src / "step.json").read_text())["step"]
    return out


def train(args) -> None:
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    run = Path(args.run)
    run.mkdir(parents=True, exist_ok=True)
    files = sorted((Path(args.data) / "train").glob("*[0-9].npz"))
    val = [Subject.load(f) for f in sorted((Path(args.data) / "test").glob("*[0-9].npz"))[:args.val_subjects]]
    config = ReconstructorConfig(image_size=args.size, levels=args.levels, face_feedback=args.face_feedback)
    model = new_model(config)
    lap = uniform_laplacian(model.coarse_faces, len(model.template_xyz))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    step, start_time = 0, time.perf_counter()
    resume = run / "last"
    if resume.is_dir() and (resume / "optimizer.pt").is_file():
        state = torch.load(resume / "optimizer.pt")
        from safetensors.torch import load_file
        model.load_state_dict(load_file(str(resume / "model.safetensors")))
        opt.load_state_dict(state["opt"])
        step = state["step"]
        print(f"resumed at step {step}", flush=True)
    elif args.init_from:
        init_from(model, Path(args.init_from))
        print(f"initialised from {args.init_from} (step {recipe(args)['init_from_step']})", flush=True)
    (run / "recipe.json").write_text(json.dumps(recipe(args), indent=2) + "\n")
    budget = args.minutes * 60
    log = open(run / "log.jsonl", "a")
    last_ckpt = time.perf_counter()
    losses, psnrs = [], []
    while step < args.max_steps and time.perf_counter() - start_time < budget:
        frac = step / args.max_steps if args.max_steps < 10 ** 9 else (time.perf_counter() - start_time) / budget
        frac = min(1.0, frac)
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        model.train()
        if step % 100 == 0:  # pick up subjects the data generator is still writing
            files = sorted((Path(args.data) / "train").glob("*[0-9].npz"))
        subject = Subject.load(rng.choice(files))
        inputs, targets = split_views(subject, rng)
        loss, train_psnr = step_loss(model, subject, inputs, targets, lap, args.iter_weights)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        losses.append(loss.item())
        psnrs.append(train_psnr)
        if step % args.log_every == 0:
            row = {"step": step, "loss": float(np.mean(losses)), "train_psnr_full": float(np.mean(psnrs)), "lr": lr,
                   "minutes": (time.perf_counter() - start_time) / 60}
            losses, psnrs = [], []
            print(json.dumps(row), flush=True)
            log.write(json.dumps(row) + "\n")
            log.flush()
        if step in args.snapshots:
            save(model, opt, step, run / f"step{step}", recipe(args))
        if time.perf_counter() - last_ckpt > args.ckpt_minutes * 60:
            save(model, opt, step, resume, recipe(args))
            last_ckpt = time.perf_counter()
            if val:
                scores = evaluate(model, val)
                row = {"step": step, "val_psnr": scores["psnr"], "val_ssim": scores["ssim"],
                       "val_psnr_1iter": evaluate(model, val, 1)["psnr"]}
                print(json.dumps(row), flush=True)
                log.write(json.dumps(row) + "\n")
                log.flush()
    save(model, opt, step, resume, recipe(args))
    print(f"done: {step} steps in {(time.perf_counter() - start_time) / 60:.1f} min", flush=True)


def save(model: Reconstructor, opt, step: int, folder: Path, settings: dict | None = None) -> None:
    save_reconstructor(model, folder)
    torch.save({"opt": opt.state_dict(), "step": step}, folder / "optimizer.pt")
    (folder / "step.json").write_text(json.dumps({"step": step, **({"recipe": settings} if settings else {})}) + "\n")


def export(args) -> None:
    """Copy a checkpoint (and the equal-steps ablation pair) into the asset folder and measure it on the
    held-out test subjects: metrics.json and training.json (updated: an earlier export's ablation stays)."""
    from backends.avatar.network import load_reconstructor

    torch.set_num_threads(1)
    dest = Path(args.to)
    folders = {} if args.only_ablation else {dest: Path(args.export)}
    if args.ablation:
        folders[dest / "ablation" / "multi-res"] = Path(args.ablation[0])
        folders[dest / "ablation" / "single-res"] = Path(args.ablation[1])
    for to, src in folders.items():
        save_reconstructor(load_reconstructor(src), to)
    test = [Subject.load(f) for f in sorted((Path(args.data) / "test").glob("*[0-9].npz"))[:args.eval_subjects]]
    old = json.loads((dest / "metrics.json").read_text()) if (dest / "metrics.json").is_file() else {}
    metrics = {**old, "test_subjects": len(test), "resolution": int(test[0].rgb.shape[1]), "input_views": N_INPUT,
               "protocol": "3 ring input views per held-out subject; PSNR/SSIM on the person crop (padded "
                           "bounding box of the ground-truth mask) of 3 novel views of the input pose and 3 "
                           "views of a novel pose; psnr_full = whole image; ±ci95 over images"}
    if not args.only_ablation:
        model = load_reconstructor(dest)
        runs = {k: evaluate_scores(model, test, k) for k in (3, 1)}
        metrics["ours_3_iterations"] = summarize(*runs[3], len(test))
        metrics["ours_1_iteration"] = summarize(*runs[1], len(test))
        metrics["paired_3_vs_1_iterations"] = paired(runs[3][0], runs[1][0], len(test))
    if args.ablation:
        metrics["equal_steps_multi_res"] = evaluate(load_reconstructor(dest / "ablation" / "multi-res"), test, 3)
        metrics["equal_steps_single_res"] = evaluate(load_reconstructor(dest / "ablation" / "single-res"), test, 3)
    (dest / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    old = json.loads((dest / "training.json").read_text()) if (dest / "training.json").is_file() else {}
    def total_steps(src: Path) -> int:  # a fine-tuning run counts from its start checkpoint
        info = json.loads((src / "step.json").read_text())
        return info["step"] + info.get("recipe", {}).get("init_from_step", 0)

    steps = {**old.get("steps", {}), **{str(to.relative_to(dest)): total_steps(src) for to, src in folders.items()}}
    recipes = {**old.get("recipes", {}), **{str(to.relative_to(dest)): r for to, src in folders.items()
                                            if (r := json.loads((src / "step.json").read_text()).get("recipe"))}}
    (dest / "training.json").write_text(json.dumps({**old, "steps": steps, "train_subjects": len(list(
        (Path(args.data) / "train").glob("*[0-9].npz"))), **({"recipes": recipes} if recipes else {})},
        indent=2) + "\n")
    print(json.dumps(metrics, indent=2))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--run")
    p.add_argument("--export", help="a checkpoint folder to export (instead of training)")
    p.add_argument("--to", help="the asset folder to export into")
    p.add_argument("--ablation", nargs=2, help="equal-steps multi-res and single-res checkpoint folders")
    p.add_argument("--only-ablation", action="store_true", help="export and measure only the ablation pair")
    p.add_argument("--eval-subjects", type=int, default=30)
    p.add_argument("--minutes", type=float, default=90.0)
    p.add_argument("--max-steps", type=int, default=10 ** 9)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--levels", type=int, default=1)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--warmup", type=int, default=100, help="steps of linear lr warm-up")
    p.add_argument("--init-from", help="a checkpoint folder to start from (a fine-tuning run)")
    p.add_argument("--face-feedback", action="store_true",
                   help="face heads also get the input-minus-render feature at each face (ReconstructorConfig)")
    p.add_argument("--iter-weights", type=float, nargs="+",
                   help="loss weight of each feedback iteration (default equal), e.g. 0.25 0.5 1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--ckpt-minutes", type=float, default=5.0)
    p.add_argument("--val-subjects", type=int, default=6)
    p.add_argument("--snapshots", type=int, nargs="*", default=[])
    args = p.parse_args()
    if args.export or args.only_ablation:
        export(args)
    else:
        train(args)


if __name__ == "__main__":
    main()
