"""LIFe-GoM avatars on held-out synthetic people: ours vs its ablations vs per-subject optimisation.

Held-out subjects (seeds disjoint from training, made on the fly by training.avatar_data), each seen
in 3 ring views at 64²; scored on 3 novel views of the same pose and 3 views of a novel pose (PSNR and
SSIM on the person crop, ground truth from the open3d ray caster). Side by side in one run:
  - ours: the embedded reconstructor, 3 feedback iterations;
  - 1 iteration: the same model stopped after its first iteration;
  - single resolution: a model trained with Gaussians on the coarse faces themselves (no subdivision),
    compared with ours at the same number of training steps (both checkpoints ship in the asset's
    ``ablation/`` folder; the final model trained longer, so only the equal-steps pair is a fair
    multi- vs single-resolution comparison);
  - per-subject optimisation: the same Gaussians-on-Mesh (the subject's template, initial face
    parameters) fitted by Adam to the 3 input views for the same wall time as our reconstruction.
Speed: reconstruction seconds (3 iterations, CPU), render FPS of the avatar at 512² and 1024² on CPU
(the fastest CPU renderer available; CUDA too when present).

    python -m bench.avatar [--quick]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from backends.avatar import render as render_mod
from backends.avatar.gom import FaceParams, GoMAvatar
from backends.avatar.network import EMBEDDED_ID, Reconstructor, load_reconstructor
from backends.common.registry import default_registry
from bench.report import markdown_table, write_results
from training.avatar_data import TEST_SEED0, make_subject
from training.avatar_reconstructor import INPUTS, Subject, render_target, score_avatar, summarize

SIZE = 64


def optimise_subject(model: Reconstructor, s: Subject, seconds: float) -> tuple[GoMAvatar, int]:
    """Fit the subject's Gaussians-on-Mesh to its input views by Adam for ``seconds`` (at least one step)."""
    xyz = s.template.clone().requires_grad_(True)
    p = FaceParams.initial(len(model.subdivision.faces))
    leaves = [t.requires_grad_(True) for t in (p.rgb, p.so3, p.scale, p.offset)]
    opt = torch.optim.Adam([{"params": [xyz], "lr": 2e-3}, {"params": leaves, "lr": 5e-2}])
    start, steps = time.perf_counter(), 0
    while steps == 0 or time.perf_counter() - start < seconds:
        avatar = GoMAvatar(xyz, model.lbs_weights, model.subdivision, p)
        loss = 0.0
        for j in INPUTS:
            out = render_target(avatar, s, j)
            loss = loss + (out.rgb - s.rgb[j]).abs().mean() + (out.alpha - s.mask[j]).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
    return GoMAvatar(xyz.detach(), model.lbs_weights, model.subdivision,
                     FaceParams(*(t.detach() for t in (p.rgb, p.so3, p.scale, p.offset)))), steps


def cpu_renderer():
    """(name, render function) of the fastest CPU renderer this checkout offers."""
    try:
        from backends.avatar.render_fast import render_fast
        return "render_fast (numba tiles)", render_fast
    except ImportError:
        return "render_torch", render_mod.render_torch


def render_fps(avatar: GoMAvatar, s: Subject, size: int, fn, repeats: int) -> float:
    """Frames per second of rendering the (posed) avatar's Gaussians at size², camera scaled from view 3."""
    g = avatar.gaussians(s.transforms[0])
    k = s.Ks[3].clone()
    k[:2] *= size / SIZE
    fn(g, s.viewmats[3], k, size, size)  # warm-up (compiles numba kernels once)
    start = time.perf_counter()
    for _ in range(repeats):
        fn(g, s.viewmats[3], k, size, size)
    return repeats / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="3 subjects instead of 20")
    p.add_argument("--subjects", type=int)
    p.add_argument("--model", help="an exported model folder (default: the embedded avatar-embedded asset)")
    args = p.parse_args()
    torch.set_num_threads(1)
    n = args.subjects or (3 if args.quick else 20)
    folder = args.model or default_registry().resolve(EMBEDDED_ID).path
    ours = load_reconstructor(folder)
    ablation = Path(folder) / "ablation"
    single = load_reconstructor(ablation / "single-res")
    multi_eq = load_reconstructor(ablation / "multi-res")
    methods = ["ours (3 iterations)", "1 iteration", "multi-res, equal steps", "single resolution",
               "per-subject optimisation"]
    scores = {m: {"novel_view": [], "novel_pose": []} for m in methods}
    seconds = {m: [] for m in methods}
    opt_steps = []
    subjects = [Subject.from_arrays(make_subject(TEST_SEED0 + i, SIZE)) for i in range(n)]
    with torch.no_grad():
        for s in subjects:
            for name, model, iters in (("ours (3 iterations)", ours, 3), ("1 iteration", ours, 1),
                                       ("multi-res, equal steps", multi_eq, 3), ("single resolution", single, 3)):
                t0 = time.perf_counter()
                avatar = model(s.views(INPUTS), n_iters=iters)[-1][0]
                seconds[name].append(time.perf_counter() - t0)
                score_avatar(avatar, s, scores[name])
            budget = seconds["ours (3 iterations)"][-1]
            with torch.enable_grad():
                t0 = time.perf_counter()
                fitted, steps = optimise_subject(ours, s, budget)
                seconds["per-subject optimisation"].append(time.perf_counter() - t0)
            opt_steps.append(steps)
            score_avatar(fitted, s, scores["per-subject optimisation"])
    summary = {m: summarize(scores[m], seconds[m], n) for m in methods}

    renderer, fn = cpu_renderer()
    reps = 3 if args.quick else 10
    s = subjects[0]
    avatar = ours(s.views(INPUTS))[-1][0]
    fine = load_reconstructor(folder, levels=2)(s.views(INPUTS))[-1][0]
    fps = {"renderer": renderer, "gaussians": len(avatar.params.rgb), "gaussians_fine": len(fine.params.rgb)}
    for size in (512, 1024):
        fps[f"fps_{size}_cpu"] = render_fps(avatar, s, size, fn, reps)
        fps[f"fps_{size}_cpu_fine"] = render_fps(fine, s, size, fn, reps)
    if torch.cuda.is_available():
        cuda = GoMAvatar(*(x.cuda() if torch.is_tensor(x) else x for x in (
            avatar.coarse_xyz, avatar.lbs_weights, avatar.subdivision)),
            FaceParams(*(t.cuda() for t in (avatar.params.rgb, avatar.params.so3, avatar.params.scale,
                                            avatar.params.offset))))
        sc = Subject(*(t.cuda() for t in (s.rgb, s.mask, s.viewmats, s.Ks, s.pose_index, s.transforms, s.template)))
        for size in (512, 1024):
            fps[f"fps_{size}_cuda"] = render_fps(cuda, sc, size, render_mod.render, reps)

    def ci(m):
        return summary[m]["novel_view_psnr_ci95"]

    result = {
        "quick": args.quick,
        "subjects": n,
        "images_per_method": summary["ours (3 iterations)"]["novel_view_images"]
        + summary["ours (3 iterations)"]["novel_pose_images"],
        "model": EMBEDDED_ID if args.model is None else Path(args.model).name,
        "resolution": SIZE,
        "psnr": summary["ours (3 iterations)"]["psnr"],
        "baseline_1iter_psnr": summary["1 iteration"]["psnr"],
        "baseline_single_res_psnr": summary["single resolution"]["psnr"],
        "multi_res_equal_steps_psnr": summary["multi-res, equal steps"]["psnr"],
        "per_subject_optimisation_psnr": summary["per-subject optimisation"]["psnr"],
        "per_subject_optimisation_steps": float(np.mean(opt_steps)),
        "recon_s": summary["ours (3 iterations)"]["recon_s"],
        "fps_512_cpu": fps["fps_512_cpu"],
        "fps_1024_cpu": fps["fps_1024_cpu"],
        "render": fps,
        "methods": summary,
    }
    path = write_results("avatar", result)
    rows = [[m, summary[m]["psnr"], summary[m]["ssim"], summary[m]["novel_view_psnr"], ci(m),
             summary[m]["novel_pose_psnr"], summary[m]["recon_s"]] for m in methods]
    print(markdown_table(["method", "PSNR", "SSIM", "novel-view PSNR", "±95%", "novel-pose PSNR", "seconds"], rows))
    print(f"render ({renderer}): " + ", ".join(f"{k} {v:.1f}" for k, v in fps.items() if k.startswith("fps")))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
