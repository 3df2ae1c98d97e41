"""The Avatar actions, one typed request → one typed result, shared by the tab, the API, the CLI and tests.

- ``reconstruct``: a synthetic subject (ray-cast on the fly, a held-out seed) or the user's uploaded
  views → an animatable Gaussians-on-Mesh avatar (LIFe-GoM's feed-forward pass with feedback
  iterations); a generator of progress events, stoppable between iterations;
- ``render_novel``: the avatar in any pose from any orbit camera at a chosen resolution (the compiled
  CPU tile renderer; gsplat on CUDA), with the ground truth beside it for synthetic subjects; stoppable
  between its steps;
- ``turntable`` / ``animation``: H.264 videos (the camera circles; the pose moves through the presets).

An avatar carries its own skeleton (bone heads and parents), so it re-poses without the body model.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import torch

from backends.common.errors import InputError
from backends.common.modelbuild import cached_model
from backends.common.params import check_request
from backends.common.progress import CancelToken, ProgressEvent, relay, stream_reports

from .body import Phenotype, forward_kinematics
from .gom import GoMAvatar
from .models import EMBEDDED_MODEL, PUBLISHED_MODEL, model_ready  # noqa: F401 (torch-free; re-exported)
from .pose import PRESETS, Pose, pose_rotations, yaw_transform
from .render import EPS2D as EPS2D_PX  # 3DGS's screen-space dilation, px²
from .requests import (  # noqa: F401 (torch-free; re-exported)
    MAX_RENDER_SIZE,
    MAX_VIDEO_FRAMES,
    MAX_VIDEO_SIZE,
    RENDER_LEVELS,
    VIEW_DISTANCE,
    ReconstructRequest,
    RenderRequest,
    UploadedViews,
    VideoRequest,
)

SUBJECT_SEED0 = 2_000_000  # the tab's subjects: outside the training (0…) and evaluation (1,000,000…) seeds
FILTER_SHARE = 0.25  # how much of the training dilation is kept in world units (AvatarResult.gaussians)


# --- the avatar's skeleton: posing without the body model ------------------------------------------

@dataclass
class Skeleton:
    """Rest bone heads, parents and names: what pose sliders need to make skinning transforms."""

    heads: np.ndarray  # J×3
    parents: list[int]
    labels: list[str]

    def transforms(self, pose: Pose) -> torch.Tensor:
        """J×4×4 rest → posed transforms (float32), exactly as ``pose.pose_transforms`` makes them."""
        index = {label: j for j, label in enumerate(self.labels)}
        deltas = {k: torch.from_numpy(v) for k, v in pose_rotations(lambda b: self.heads[index[b]], pose).items()}
        return forward_kinematics(torch.tensor(self.heads), self.parents, self.labels, deltas,
                                  yaw_transform(pose.yaw, self.heads[0])).float()

    @staticmethod
    def of_smplx(body) -> Skeleton:
        """SMPL-X's joints at its rest pose, the slider bones named as anny names them (``smplx.SLIDER_JOINTS``)."""
        from .smplx import SLIDER_JOINTS, smplx_rest

        anny_name = {v: k for k, v in SLIDER_JOINTS.items()}
        joints = smplx_rest(body).joints.numpy()
        return Skeleton(joints.astype(np.float64), list(body.parents),
                        [anny_name.get(n, n) for n in body.joint_names])

    @staticmethod
    def of_body(rest) -> Skeleton:
        from .body import body_model

        model = body_model()
        return Skeleton(rest.bone_heads.numpy().astype(np.float64), [int(p) for p in model.bone_parents],
                        list(model.bone_labels))


# --- requests and results ------------------------------------------------------------------------

@dataclass
class AvatarResult:
    avatar: GoMAvatar
    skeleton: Skeleton
    phenotype: Phenotype
    input_pose: Pose
    inputs: list[np.ndarray]  # the input views as uint8 images (what the model saw)
    seconds: float  # the reconstruction (feed-forward) time, without data preparation
    iterations: int
    model: str
    device: str
    source: str  # "synthetic subject N" or "upload (k views)"
    subject_seed: int | None = None  # synthetic subjects: their seed (to ray-cast the ground truth)
    input_cameras: list = field(default_factory=list)  # (viewmat, K) per input view
    pixel_size: float = 0.0  # metres one input pixel spans at the body (the scale the model was fit at)
    domain: object | None = None  # uploads into the embedded model: common.ood.DomainCheck (None: not checked)
    pose: Pose | None = None  # the pose its files are written in and a viewer starts in (None: input_pose)

    @property
    def notice(self) -> str:
        """Beyond the embedded model's world: what it knows and the real model that would serve."""
        return self.domain.notice if self.domain is not None else ""

    def gaussians(self, pose: Pose, pixel_size: float | None = None):
        """The Gaussians in ``pose``, with the low-pass the model was trained under kept in world units.

        The model learns with 3DGS's 0.3 px² screen-space dilation at its input resolution, and learns to
        lean on it: its Gaussians are often smaller than an input pixel, so drawn at a finer resolution
        the body shows gaps. Adding the training dilation's share that a finer pixel no longer supplies as
        an isotropic 3D variance (the idea of Mip-Splatting's 3D filter) makes renders at any resolution agree.
        A quarter of it is kept: on held-out subjects at 512² it scored within 0.1 dB of a half (15.2 vs
        11.5 dB without) at a fifth less render time. ``pixel_size``: metres per pixel
        of the target view at the body (None: a fine view, as in the browser or an exported file).
        """
        with torch.no_grad():
            g = self.avatar.gaussians(self.skeleton.transforms(pose))
        target = 0.0 if pixel_size is None else pixel_size
        var = max(0.0, FILTER_SHARE * EPS2D_PX * self.pixel_size ** 2 - EPS2D_PX * target ** 2)
        if var > 0:
            g = type(g)(g.means, g.covars + var * torch.eye(3, dtype=g.covars.dtype), g.colors, g.opacities)
        return g

    @property
    def n_gaussians(self) -> int:
        return len(self.avatar.subdivision.faces)

    def card(self) -> dict:
        """What reproduces this avatar (no pixels, no server paths)."""
        return {"model": self.model, "device": self.device, "source": self.source, "subject_seed": self.subject_seed,
                "views": len(self.inputs), "iterations": self.iterations, "levels": self.avatar.subdivision.levels,
                "gaussians": self.n_gaussians, "reconstruction_s": round(self.seconds, 3),
                "pixel_size_m": round(self.pixel_size, 6),
                "domain": self.domain.to_json() if self.domain is not None else None,
                "input_pose": self.input_pose.as_dict(), "body": self.phenotype.as_dict()}

    def describe(self) -> str:
        """The reconstruction in a line (Markdown): where the views came from, how big and fast, which model."""
        text = (f"**{self.source}** → {self.n_gaussians:,} Gaussians in **{self.seconds:.2f} s** "
                f"({self.iterations} feedback iteration(s), {len(self.inputs)} view(s)) · model `{self.model}` "
                f"on `{self.device}`")
        return text + (f"\n\n⚠️ {self.notice}" if self.notice else "")


@dataclass
class RenderResult:
    image: np.ndarray  # H×W×3 uint8
    alpha: np.ndarray  # H×W float32
    ground_truth: np.ndarray | None  # H×W×3 uint8 (synthetic subjects), the independent ray-cast render
    psnr: float | None  # against the ground truth, inside the person's box
    render_ms: float
    renderer: str
    request: RenderRequest
    gaussians: int = 0  # how many the avatar has

    def describe(self) -> str:
        """The render in a line (Markdown): its time (the rasterizer alone), renderer, PSNR when there is a truth."""
        size = self.request.size
        text = (f"{size}² in **{self.render_ms:.0f} ms** ({1000 / max(self.render_ms, 1e-3):.1f} FPS, rasterizer "
                f"alone) · {self.renderer} · {self.gaussians:,} Gaussians")
        if self.psnr is not None:
            text += f" · PSNR vs the ray-cast ground truth (person's box): **{self.psnr:.2f} dB**"
        return text


@dataclass
class VideoResult:
    path: Path
    frames: int
    seconds: float
    mean_render_ms: float
    request: VideoRequest

    def card(self) -> dict:
        return {"video": self.path.name, "kind": self.request.kind, "frames": self.frames,
                "seconds": round(self.seconds, 2), "mean_render_ms": round(self.mean_render_ms, 1)}

    def describe(self) -> str:
        return (f"{self.request.kind.capitalize()}: {self.frames} frames at {self.request.size}² in "
                f"**{self.seconds:.1f} s** ({self.mean_render_ms:.0f} ms per frame, rasterizer alone)")


# --- the model, loaded once per process -----------------------------------------------------------

def _settings(models_dir: str | None):
    from backends.common.settings import Settings, get_settings

    return get_settings() if models_dir is None else Settings(models_dir=Path(models_dir))


@cached_model()
def load_model(name: str = EMBEDDED_MODEL, levels: int = RENDER_LEVELS, models_dir: str | None = None):
    """The reconstructor (the embedded checkpoint through the registry, the authors' ``lifegom`` checkpoint on
    the user's SMPL-X through the registry, or a checkpoint folder), built once per process
    (``backends.common.modelbuild``: one build at a time, a failed one not kept)."""
    from .render_fast import warm_up

    if name == PUBLISHED_MODEL:
        from backends.common.registry import default_registry

        from .lifegom_published import find_checkpoint, load_published
        from .smplx import load_smplx

        settings = _settings(models_dir)
        folder = default_registry().resolve(PUBLISHED_MODEL, settings).path
        model = load_published(find_checkpoint(folder), load_smplx(settings), levels=levels)
    else:
        from .network import load_reconstructor

        model = load_reconstructor(None if name == EMBEDDED_MODEL else name, levels=levels)
    warm_up()  # the tile renderer's kernels load (or compile, once per machine) with the model
    import open3d  # noqa: F401 — the ray-caster (visibility, synthetic views) loads with it too (seconds), not in a Stop-able step
    return model


# --- reconstruction -------------------------------------------------------------------------------

def reconstruct(req: ReconstructRequest, cancel: CancelToken | None = None,
                model=None) -> Iterator[ProgressEvent | AvatarResult]:
    """Views → avatar. Yields progress, then the AvatarResult; ``cancel`` stops it between iterations.
    ``model``: the request's reconstructor when the caller has loaded it (``load_model``; the action does)."""
    from . import body
    from .network import Views

    check_request(req)
    req.validate()
    cancel = cancel or CancelToken()
    if model is None:
        yield ProgressEvent(0.02, "loading the reconstructor")
        model = load_model(req.model, req.levels, req.models_dir)
    published = req.model == PUBLISHED_MODEL
    if published and req.n_views != model.config.n_input_frames:
        raise InputError(f"LIFe-GoM's published checkpoint takes exactly {model.config.n_input_frames} views, "
                         f"not {req.n_views}.")
    size = int(req.size or model.config.image_size)
    cancel.raise_if_cancelled()
    if req.subject is not None:
        from .data import sample_subject

        yield ProgressEvent(0.1, f"ray-casting {req.n_views} views of synthetic subject {req.subject}")
        seed = SUBJECT_SEED0 + req.subject
        sample = sample_subject(seed, req.n_views, size, cancel=cancel)  # Stop ends the ray-casting between views
        phenotype, pose = sample.subject.phenotype, sample.views[0].pose
        images = np.stack([v.rgb for v in sample.views]).astype(np.float32)
        masks = np.stack([v.mask for v in sample.views]).astype(np.float32)
        viewmats = np.stack([v.camera.extrinsics for v in sample.views])
        ks = np.stack([v.camera.intrinsics for v in sample.views])
        source = f"synthetic subject {req.subject}"
    else:
        from .uploads import resize_views

        seed = None
        up = resize_views(req.upload, size)
        phenotype, pose = up.phenotype, up.pose
        images, masks, viewmats, ks = up.images * up.masks[..., None], up.masks, up.viewmats, up.Ks
        source = f"upload ({len(images)} view{'s' if len(images) != 1 else ''})"
    domain = None
    if req.upload is not None and req.model == EMBEDDED_MODEL:  # checked on every run; the run goes ahead
        from backends.common.ood import check_inputs

        # the views as uploaded (background included): a render's is black, a photo's is a photo's
        domain = check_inputs("avatar", list(np.round(up.images * 255).astype(np.uint8)))
    cancel.raise_if_cancelled()
    yield ProgressEvent(0.25, "building the body template")
    if published:  # the user's SMPL-X body (mean shape) in the subject's pose: the published model's template
        skeleton = Skeleton.of_smplx(model.smplx)
        template = model.template_xyz
    else:
        rest = body.rest_body(phenotype)
        skeleton = Skeleton.of_body(rest)
        template = model.coarse.vertices(rest.vertices).float()  # the mesh the model was trained on, shipped with it
    transforms = skeleton.transforms(pose)
    n = len(images)
    f = lambda x: torch.as_tensor(np.asarray(x), dtype=torch.float32)[None]  # noqa: E731
    views = Views(f(images), f(masks), f(viewmats), f(ks), f(transforms)[:, None].expand(1, n, -1, -1, -1),
                  template[None])
    yield ProgressEvent(0.3, f"reconstructing from {n} view(s), {req.iterations} feedback iteration(s)")

    def work(report):
        done = [0]

        def visibility(*args, **kwargs):  # called once per feedback iteration: where to report (and stop)
            from .visibility import vertex_visibility

            done[0] += 1
            report(ProgressEvent(0.3 + 0.65 * (done[0] - 1) / req.iterations,
                                 f"feedback iteration {done[0]}/{req.iterations}"))
            return vertex_visibility(*args, **kwargs)

        def progress(i):  # the published network reports each feedback iteration itself
            report(ProgressEvent(0.3 + 0.65 * (i - 1) / req.iterations, f"feedback iteration {i}/{req.iterations}"))

        start = time.perf_counter()
        with torch.no_grad():
            hook = {"progress": progress} if published else {"visibility": visibility}
            out = model(views, n_iters=req.iterations, cancel=report.cancel, **hook)[-1][0]
        return out, time.perf_counter() - start

    avatar, seconds = yield from relay(stream_reports(work, cancel))
    avatar = GoMAvatar(avatar.coarse_xyz.detach(), avatar.lbs_weights.detach(), avatar.subdivision,
                       type(avatar.params)(*(t.detach() for t in (avatar.params.rgb, avatar.params.so3,
                                                                   avatar.params.scale, avatar.params.offset))))
    centre = template.mean(0).numpy().astype(np.float64)
    pixel = float(np.mean([np.linalg.norm(-e[:3, :3].T @ e[:3, 3] - centre) / k[0, 0] for e, k in zip(viewmats, ks, strict=True)]))
    yield ProgressEvent(1.0, f"done in {seconds:.2f} s")
    yield AvatarResult(avatar, skeleton, phenotype, pose, [np.round(im * 255).astype(np.uint8) for im in images],
                       seconds, req.iterations,
                       req.model if req.model in (EMBEDDED_MODEL, PUBLISHED_MODEL) else Path(req.model).name,
                       "cpu", source, seed, [(e, k) for e, k in zip(viewmats, ks, strict=True)], pixel, domain,
                       req.pose)


# --- rendering ------------------------------------------------------------------------------------

def orbit_camera(azimuth_deg: float, height: float, distance: float, size: int):
    from .data import camera_ring

    return camera_ring(1, size, radius=distance, height=height, start_deg=azimuth_deg)[0]


def pixel_size_at(camera) -> float:
    """Metres per pixel of ``camera`` at the body (its distance to the origin over its focal length)."""
    return float(np.linalg.norm(np.asarray(camera.position)) / camera.focal)


def gsplat_on_cuda() -> bool:
    from .render import gsplat_available

    return gsplat_available("cuda")


def render_frame(result: AvatarResult, pose: Pose, camera, size: int, background, backend: str, gaussians=None):
    """(uint8 image, alpha, milliseconds of the rasterizer alone, renderer used) of the posed avatar
    (``gaussians``: the avatar already posed for this camera's pixel size, to skip posing again)."""
    from .render import render

    if backend == "auto":
        backend = "gsplat" if gsplat_on_cuda() else "fast"
    with torch.no_grad():
        g = gaussians if gaussians is not None else result.gaussians(pose, pixel_size_at(camera))
        if backend == "gsplat":
            from .gom import Gaussians

            g = Gaussians(*(t.cuda() for t in (g.means, g.covars, g.colors, g.opacities)))
        start = time.perf_counter()
        out = render(g, torch.from_numpy(camera.extrinsics).float(), torch.from_numpy(camera.intrinsics).float(),
                     size, size, background=torch.tensor(background, dtype=torch.float32), backend=backend)
        ms = 1000 * (time.perf_counter() - start)
    image = np.round(out.rgb.detach().cpu().clamp(0, 1).numpy() * 255).astype(np.uint8)
    return image, out.alpha.detach().cpu().numpy(), ms, backend


def render_novel(result: AvatarResult, req: RenderRequest, cancel: CancelToken | None = None) -> RenderResult:
    """The avatar in ``req.pose`` from an orbit camera; the true person beside it for synthetic subjects.
    ``cancel`` stops it between posing, rasterizing and ray-casting the truth."""
    check_request(req)
    req.validate()
    cancel = cancel or CancelToken()
    camera = orbit_camera(req.azimuth_deg, req.height, req.distance, req.size)
    cancel.raise_if_cancelled()
    image, alpha, ms, backend = render_frame(result, req.pose, camera, req.size, req.background, req.backend)
    truth, score = None, None
    if req.ground_truth and result.subject_seed is not None:
        from backends.common.imagemetrics import psnr

        from .body import rest_body
        from .data import Subject, render_view

        cancel.raise_if_cancelled()
        rng = np.random.default_rng(result.subject_seed)
        subject = Subject.random(rng)  # the same draw as data.sample_subject's
        view = render_view(subject, req.pose, camera, rest_body(subject.phenotype), cancel)
        bg = np.asarray(req.background, np.float32)
        truth_f = view.rgb * view.mask[..., None] + bg * (1 - view.mask[..., None])
        truth = np.round(truth_f * 255).astype(np.uint8)
        ys, xs = np.nonzero((view.mask > 0.5) | (alpha > 0.5))
        if len(ys):
            box = (slice(ys.min(), ys.max() + 1), slice(xs.min(), xs.max() + 1))
            score = float(psnr(image[box].astype(np.float32) / 255, truth[box].astype(np.float32) / 255))
    return RenderResult(image, alpha, truth, score, ms, "numba tile renderer (CPU)" if backend == "fast" else backend,
                        req, result.n_gaussians)


def animation_poses(frames: int) -> list[Pose]:
    """``frames`` poses moving through the presets and back to the first, linearly in the sliders."""
    keys = list(PRESETS.values()) + [next(iter(PRESETS.values()))]
    out = []
    for i in range(frames):
        t = i / max(1, frames - 1) * (len(keys) - 1)
        k = min(int(t), len(keys) - 2)
        a, b, w = keys[k], keys[k + 1], t - k
        out.append(Pose(**{f.name: (1 - w) * getattr(a, f.name) + w * getattr(b, f.name) for f in fields(Pose)}))
    return out


def video(result: AvatarResult, req: VideoRequest, out_dir: Path,
          cancel: CancelToken | None = None) -> Iterator[ProgressEvent | VideoResult]:
    """A turntable or an animation as H.264 .mp4; yields progress (stoppable between frames), then the result."""
    from backends.common.video import write_mp4

    check_request(req)
    req.validate()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{req.kind}.mp4"
    times: list[float] = []
    poses = animation_poses(req.frames) if req.kind == "animation" else [req.pose] * req.frames

    def work(report):
        def frames():
            # a turntable keeps its pose (and the camera its distance): pose the avatar once
            fixed = result.gaussians(req.pose, pixel_size_at(orbit_camera(0.0, 0.1, VIEW_DISTANCE, req.size))) \
                if req.kind == "turntable" else None
            for i, pose in enumerate(poses):
                az = req.azimuth_deg + (360.0 * i / req.frames if req.kind == "turntable" else 0.0)
                cam = orbit_camera(az, 0.1, VIEW_DISTANCE, req.size)
                image, _, ms, _ = render_frame(result, pose, cam, req.size, req.background, "auto", fixed)
                times.append(ms)
                report(ProgressEvent((i + 1) / req.frames, f"{req.kind}: frame {i + 1}/{req.frames}"))
                yield image

        start = time.perf_counter()
        write_mp4(frames(), path, fps=req.fps)
        return VideoResult(path, req.frames, time.perf_counter() - start, float(np.mean(times)), req)

    yield from stream_reports(work, cancel)
