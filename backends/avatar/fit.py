"""Fit anny's pose and shape and one camera per photo to MediaPipe's landmarks and person masks.

Why: photos of a real person come without the cameras, masks and body parameters the reconstructor
needs. Per photo, ``photos.detect`` gives 33 BlazePose landmarks and a mask; this fits, by Adam in
torch, the suite's pose sliders (``pose.Pose``, shared by all photos: they show one pose), anny's six
phenotype parameters and a world→camera rotation and translation per photo, minimising

- the 2D reprojection error of anny's joints mapped to BlazePose's (shoulders, elbows, wrists, hips,
  knees, ankles), weighted by MediaPipe's visibility;
- a silhouette term: the coarse body mesh's projected vertices must fall inside the mask (distance
  transform), and the mask must be covered by them (chamfer from mask pixels);
- priors: the sliders near the neutral pose (the spreads ``Pose.random`` draws from), the phenotype
  near average.

The body's yaw stays 0: the cameras carry its turn. Focal length is not fitted (it trades off with
distance for a person a few metres away): each photo is taken as a ``fov_deg`` vertical field of view.
anny's rest joints and coarse vertices are linear in the phenotype (checked to about a millimetre),
so the fit uses that linearisation; the result is built with anny's exact body.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, fields
from functools import cache

import numpy as np
import torch

from backends.common.errors import InputError

from .body import PHENOTYPES, Phenotype, rest_body
from .photos import PhotoDetection
from .pose import SLIDER_RANGES, Pose
from .requests import DEFAULT_FOV  # the photos' field of view when none is given (degrees)

# BlazePose landmark → anny bone whose head is that joint
JOINTS: dict[int, str] = {11: "upperarm01.L", 12: "upperarm01.R", 13: "lowerarm01.L", 14: "lowerarm01.R",
                          15: "wrist.L", 16: "wrist.R", 23: "upperleg01.L", 24: "upperleg01.R",
                          25: "lowerleg01.L", 26: "lowerleg01.R", 27: "foot.L", 28: "foot.R"}
SLIDERS = [f.name for f in fields(Pose) if f.name != "yaw"]
# prior spreads (degrees) around the neutral pose: those Pose.random draws with
PRIOR_SD = {"arm_raise_l": 30, "arm_raise_r": 30, "arm_forward_l": 25, "arm_forward_r": 25, "elbow_l": 35,
            "elbow_r": 35, "hip_l": 25, "hip_r": 25, "hip_out_l": 8, "hip_out_r": 8, "knee_l": 30, "knee_r": 30,
            "spine": 10, "head_turn": 25}
PRIOR = 1e-4  # a one-spread change of every slider costs as much as a 2.5-pixel error at 256² (squared, per height)
UP = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
FORWARD = torch.tensor([0.0, -1.0, 0.0], dtype=torch.float64)


@dataclass
class PhotoFit:
    """The fitted body and cameras for a set of photos (the reconstructor's upload)."""

    pose: Pose
    phenotype: Phenotype
    viewmats: np.ndarray  # N×4×4 world → camera
    Ks: np.ndarray  # N×3×3
    joints_2d: np.ndarray  # N×12×2 the fitted joints in each photo (pixels), in JOINTS' order
    joints_3d: np.ndarray  # 12×3 the fitted joints (world, metres)
    reprojection_px: np.ndarray  # N: mean distance of the seen landmarks to the fitted joints, pixels
    seconds: float


# --- differentiable slider rotations (the same as pose.pose_rotations, in torch) -----------------

def _rodrigues(axis: torch.Tensor, degrees: torch.Tensor) -> torch.Tensor:
    axis = axis / axis.norm().clamp_min(1e-12)
    a = torch.deg2rad(degrees)
    z = torch.zeros((), dtype=axis.dtype)
    k = torch.stack([torch.stack([z, -axis[2], axis[1]]), torch.stack([axis[2], z, -axis[0]]),
                     torch.stack([-axis[1], axis[0], z])])
    return torch.eye(3, dtype=axis.dtype) + torch.sin(a) * k + (1 - torch.cos(a)) * (k @ k)


def _towards(direction, target, degrees):
    axis = torch.linalg.cross(direction, target)
    if axis.norm() < 1e-9:
        return torch.eye(3, dtype=direction.dtype)
    return _rodrigues(axis, degrees)


def _angle(a, b):
    cos = (a @ b) / (a.norm() * b.norm())
    return torch.rad2deg(torch.acos(cos.clamp(-1 + 1e-7, 1 - 1e-7)))


def slider_rotations(head, s: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``pose.pose_rotations`` with the sliders ``s`` (degrees, tensors) and heads ``head(label)`` in torch."""
    out = {}
    for side, c in (("l", "L"), ("r", "R")):
        outward = torch.tensor([1.0 if side == "l" else -1.0, 0.0, 0.0], dtype=torch.float64)
        arm = head(f"lowerarm01.{c}") - head(f"upperarm01.{c}")
        r_arm = _towards(arm, UP, s[f"arm_raise_{side}"] - _angle(arm, -UP))
        raised = r_arm @ arm
        if torch.linalg.cross(raised, FORWARD).norm() > 1e-6:
            r_arm = _towards(raised, FORWARD, s[f"arm_forward_{side}"]) @ r_arm
        out[f"upperarm01.{c}"] = r_arm
        forearm = head(f"wrist.{c}") - head(f"lowerarm01.{c}")
        target = torch.linalg.cross(torch.linalg.cross(arm, forearm), arm)
        out[f"lowerarm01.{c}"] = _towards(forearm, target, s[f"elbow_{side}"] - _angle(forearm, arm)) \
            if target.norm() > 1e-9 else torch.eye(3, dtype=torch.float64)
        thigh = head(f"lowerleg01.{c}") - head(f"upperleg01.{c}")
        r_hip = _towards(thigh, FORWARD, s[f"hip_{side}"])
        rest_out = torch.rad2deg(torch.atan2(thigh[0] * outward[0], -thigh[2]))
        out[f"upperleg01.{c}"] = _towards(r_hip @ thigh, outward, s[f"hip_out_{side}"] - rest_out) @ r_hip
        shin = head(f"foot.{c}") - head(f"lowerleg01.{c}")
        out[f"lowerleg01.{c}"] = _towards(shin, -FORWARD, s[f"knee_{side}"])
    out["spine03"] = _towards(head("neck01") - head("spine03"), FORWARD, s["spine"])
    out["neck01"] = _rodrigues(UP, s["head_turn"])
    return out


# --- the body, linear in the phenotype -------------------------------------------------------------

@dataclass
class _LinearBody:
    heads0: torch.Tensor  # J×3 at the average phenotype
    dheads: torch.Tensor  # P×J×3 per unit of each phenotype parameter
    verts0: torch.Tensor  # V×3 coarse vertices
    dverts: torch.Tensor  # P×V×3
    weights: torch.Tensor  # V×J coarse LBS weights
    parents: list[int]
    labels: list[str]


@cache
def _linear_body() -> _LinearBody:
    from .body import body_model, coarse_template

    coarse = coarse_template()
    base = rest_body(Phenotype())
    heads, verts = [], []
    for name in PHENOTYPES:  # central differences over ±0.25
        hi, lo = (rest_body(Phenotype(**{name: 0.5 + d})) for d in (0.25, -0.25))
        heads.append((hi.bone_heads - lo.bone_heads) / 0.5)
        verts.append((coarse.vertices(hi.vertices) - coarse.vertices(lo.vertices)) / 0.5)
    model = body_model()
    return _LinearBody(base.bone_heads.clone(), torch.stack(heads), coarse.vertices(base.vertices),
                       torch.stack(verts), coarse.lbs_weights(), [int(p) for p in model.bone_parents],
                       list(model.bone_labels))


def _rotvec(v: torch.Tensor) -> torch.Tensor:
    theta = v.norm()
    if theta < 1e-12:
        return torch.eye(3, dtype=v.dtype) + torch.stack([
            torch.stack([torch.zeros_like(theta), -v[2], v[1]]), torch.stack([v[2], torch.zeros_like(theta), -v[0]]),
            torch.stack([-v[1], v[0], torch.zeros_like(theta)])])
    return _rodrigues(v, torch.rad2deg(theta))


def _rotvecs(v: torch.Tensor) -> torch.Tensor:
    """B×3 rotation vectors → B×3×3 (Rodrigues, safe at zero)."""
    theta = v.norm(dim=1, keepdim=True).clamp_min(1e-9)
    a = v / theta
    z = torch.zeros_like(a[:, 0])
    k = torch.stack([torch.stack([z, -a[:, 2], a[:, 1]], 1), torch.stack([a[:, 2], z, -a[:, 0]], 1),
                     torch.stack([-a[:, 1], a[:, 0], z], 1)], 1)
    s, c = torch.sin(theta)[..., None], torch.cos(theta)[..., None]
    return torch.eye(3, dtype=v.dtype) + s * k + (1 - c) * (k @ k)


def _look_at(azimuth_deg: float, distance: float, centre: np.ndarray) -> np.ndarray:
    """World→camera rotation and translation of a camera ``distance`` in front of ``centre`` at an azimuth."""
    a = math.radians(azimuth_deg)
    pos = centre + distance * np.array([math.sin(a), -math.cos(a), 0.0])
    fwd = (centre - pos) / np.linalg.norm(centre - pos)
    right = np.cross(fwd, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    r = np.stack([right, np.cross(fwd, right), fwd])
    e = np.eye(4)
    e[:3, :3], e[:3, 3] = r, -r @ pos
    return e


def intrinsics(width: int, height: int, fov_deg: float = DEFAULT_FOV) -> np.ndarray:
    f = 0.5 * height / math.tan(math.radians(fov_deg) / 2)
    return np.array([[f, 0, width / 2], [0, f, height / 2], [0, 0, 1]], dtype=np.float64)


def _project(points: torch.Tensor, rot: torch.Tensor, t: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    cam = points @ rot.T + t
    z = cam[:, 2:].clamp_min(0.1)
    return (cam[:, :2] / z) * torch.stack([k[0, 0], k[1, 1]]) + torch.stack([k[0, 2], k[1, 2]])


def _distance_maps(mask: np.ndarray, scale: int = 128):
    """(distance outside the mask, mask pixel coordinates) at a working size, in units of the photo's height."""
    from scipy import ndimage

    h, w = mask.shape
    step = max(1, round(max(h, w) / scale))
    small = mask[::step, ::step] > 0.5
    outside = ndimage.distance_transform_edt(~small) * step / h
    ys, xs = np.nonzero(small)
    pix = np.stack([xs, ys], 1).astype(np.float64) * step + 0.5 * step
    return torch.from_numpy(outside).float(), torch.from_numpy(pix)


def _sample(grid: torch.Tensor, xy: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Bilinear lookup of ``grid`` (h×w, covering an H×W photo) at pixel coordinates ``xy``; 1 outside."""
    h, w = size
    norm = torch.stack([xy[:, 0] / w * 2 - 1, xy[:, 1] / h * 2 - 1], 1).float()
    out = torch.nn.functional.grid_sample(grid[None, None], norm[None, None], align_corners=False,
                                          padding_mode="border")[0, 0, 0]
    return out.double()


def fit_photos(dets: list[PhotoDetection], fov_deg: float = DEFAULT_FOV, steps: int = 150,
               silhouette: float = 1.0, fit_shape: bool = True, Ks: list[np.ndarray] | None = None) -> PhotoFit:
    """Pose, phenotype and cameras for ``dets`` (one person, one pose, 1–5 photos); ``Ks``: each photo's
    intrinsics (default: ``fov_deg`` vertically, centred)."""
    if not 1 <= len(dets) <= 5:
        raise InputError(f"The avatar is fitted to 1 to 5 photos, not {len(dets)}.")
    start = time.perf_counter()
    body = _linear_body()
    idx = {label: j for j, label in enumerate(body.labels)}
    joint_ids = [idx[b] for b in JOINTS.values()]
    lm_ids = list(JOINTS)
    neutral = Pose()
    s0 = torch.tensor([getattr(neutral, n) for n in SLIDERS], dtype=torch.float64)
    sd = torch.tensor([PRIOR_SD[n] for n in SLIDERS], dtype=torch.float64)
    lo = torch.tensor([SLIDER_RANGES[n][0] for n in SLIDERS], dtype=torch.float64)
    hi = torch.tensor([SLIDER_RANGES[n][1] for n in SLIDERS], dtype=torch.float64)
    ks = [torch.from_numpy(np.asarray(k, np.float64)) for k in Ks] if Ks is not None else \
        [torch.from_numpy(intrinsics(d.mask.shape[1], d.mask.shape[0], fov_deg)) for d in dets]
    targets = [torch.from_numpy(d.landmarks[lm_ids]) for d in dets]
    conf = [torch.from_numpy(np.where([d.seen(i) for i in lm_ids], d.visibility[lm_ids], 0.0)) for d in dets]
    sil = [_distance_maps(d.mask) for d in dets]
    heights = [float(d.mask.shape[0]) for d in dets]

    def joints_and_verts(z_pose, z_shape):
        sliders = s0 + sd * z_pose
        shape = 0.5 + 0.25 * z_shape
        heads = body.heads0 + torch.einsum("p,pjc->jc", shape - 0.5, body.dheads)
        deltas = slider_rotations(lambda b: heads[idx[b]], dict(zip(SLIDERS, sliders, strict=True)))
        tf = _sparse_kinematics(heads, body, deltas)
        posed_heads = (tf[:, :3, :3] @ heads[..., None])[..., 0] + tf[:, :3, 3]
        verts = body.verts0 + torch.einsum("p,pvc->vc", shape - 0.5, body.dverts)
        blended = torch.einsum("vj,jab->vab", body.weights, tf[:, :3])
        posed_verts = torch.einsum("vab,vb->va", blended[..., :3], verts) + blended[..., 3]
        return posed_heads[joint_ids], posed_verts

    # initial cameras: per photo, the best of 8 azimuths in the neutral pose (camera-only Adam, batched)
    with torch.no_grad():
        j0, _ = joints_and_verts(torch.zeros(len(SLIDERS), dtype=torch.float64), torch.zeros(6, dtype=torch.float64))
    centre = j0.mean(0).numpy()
    cams = []
    for d, k, tgt, c in zip(dets, ks, targets, conf, strict=True):
        seen = d.landmarks[lm_ids][c.numpy() > 0]
        dist = float(k[1, 1]) * float(np.ptp(j0[:, 2].numpy())) / max(float(np.ptp(seen[:, 1])), 1.0)
        e = torch.from_numpy(np.stack([_look_at(az, dist, centre) for az in range(0, 360, 45)]))
        w = torch.zeros(len(e), 3, dtype=torch.float64, requires_grad=True)
        t = e[:, :3, 3].clone().requires_grad_(True)
        opt = torch.optim.Adam([w, t], lr=0.05)
        for _ in range(40):
            opt.zero_grad()
            rot = _rotvecs(w) @ e[:, :3, :3]
            cam = torch.einsum("bij,nj->bni", rot, j0) + t[:, None]
            proj = cam[..., :2] / cam[..., 2:].clamp_min(0.1) * torch.stack([k[0, 0], k[1, 1]]) \
                + torch.stack([k[0, 2], k[1, 2]])
            losses = (c * ((proj - tgt) / heights[0]).pow(2).sum(-1)).sum(1) / c.sum().clamp_min(1e-6)
            losses.sum().backward()
            opt.step()
        b = int(losses.argmin())
        cams.append((_rotvecs(w.detach())[b] @ e[b, :3, :3], t.detach()[b]))

    z_pose = torch.zeros(len(SLIDERS), dtype=torch.float64, requires_grad=True)
    z_shape = torch.zeros(6, dtype=torch.float64, requires_grad=True)
    ws = [torch.zeros(3, dtype=torch.float64, requires_grad=True) for _ in dets]
    ts = [t.clone().requires_grad_(True) for _, t in cams]
    groups = [{"params": [z_pose], "lr": 0.05}, {"params": ws + ts, "lr": 0.02}]
    if fit_shape:
        groups.append({"params": [z_shape], "lr": 0.03})
    opt = torch.optim.Adam(groups)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    for step in range(steps):
        opt.zero_grad()
        joints, verts = joints_and_verts(z_pose, z_shape)
        loss = PRIOR * ((z_pose ** 2).mean() + (z_shape ** 2).mean())
        for i, (k, tgt, c) in enumerate(zip(ks, targets, conf, strict=True)):
            rot = _rotvec(ws[i]) @ cams[i][0]
            loss = loss + _joint_loss(_project(joints, rot, ts[i], k), tgt, c, heights[i]) / len(dets)
            if silhouette > 0 and step >= steps // 3:  # once the joints have placed the body
                outside, pix = sil[i]
                pv = _project(verts, rot, ts[i], k)
                inside = _sample(outside, pv, dets[i].mask.shape).pow(2).mean()
                sub = pix[:: max(1, len(pix) // 400)]
                cover = torch.cdist(sub, pv).min(1).values.div(heights[i]).pow(2).mean()
                loss = loss + silhouette * (inside + cover) / len(dets)
        loss.backward()
        opt.step()
        sched.step()
        with torch.no_grad():  # the sliders' own ranges; anny's phenotype in [0, 1]
            z_pose.copy_(((s0 + sd * z_pose).clamp(lo, hi) - s0) / sd)
            z_shape.clamp_(-2.0, 2.0)

    with torch.no_grad():
        joints, _ = joints_and_verts(z_pose, z_shape)
        sliders = (s0 + sd * z_pose).clamp(lo, hi).numpy()
        pose = Pose(yaw=0.0, **{n: float(v) for n, v in zip(SLIDERS, sliders, strict=True)})
        shape = (0.5 + 0.25 * z_shape).clamp(0, 1).numpy()
        phenotype = Phenotype(**{n: float(v) for n, v in zip(PHENOTYPES, shape, strict=True)})
        viewmats, j2d, err = [], [], []
        for i, (k, tgt, c) in enumerate(zip(ks, targets, conf, strict=True)):
            rot = _rotvec(ws[i]) @ cams[i][0]
            e = np.eye(4)
            e[:3, :3], e[:3, 3] = rot.numpy(), ts[i].numpy()
            viewmats.append(e)
            p = _project(joints, rot, ts[i], k)
            j2d.append(p.numpy())
            seen = c > 0
            err.append(float((p - tgt)[seen].norm(dim=1).mean()) if seen.any() else float("nan"))
    return PhotoFit(pose, phenotype, np.stack(viewmats), np.stack([k.numpy() for k in ks]), np.stack(j2d),
                    joints.numpy(), np.array(err), time.perf_counter() - start)


def _sparse_kinematics(heads: torch.Tensor, body: _LinearBody, deltas: dict[str, torch.Tensor]) -> torch.Tensor:
    """``body.forward_kinematics`` when only the bones in ``deltas`` rotate: every other bone moves with its
    nearest rotating ancestor, so 14 transforms are chained instead of 104 (the fit's inner loop)."""
    idx = {label: j for j, label in enumerate(body.labels)}
    moving = {idx[b] for b in deltas}
    owner = []  # each bone's nearest rotating ancestor (itself included), -1: none
    for j in range(len(body.labels)):
        a = j
        while a >= 0 and a not in moving:
            a = body.parents[a]
        owner.append(a)
    chain: dict[int, torch.Tensor] = {}
    for j in sorted(moving, key=lambda j: _depth(j, body.parents)):
        local = torch.eye(4, dtype=torch.float64)
        g = deltas[body.labels[j]]
        local = torch.cat([torch.cat([g, (heads[j] - g @ heads[j])[:, None]], 1), local[3:]], 0)
        up = owner[body.parents[j]] if body.parents[j] >= 0 else -1
        chain[j] = chain[up] @ local if up >= 0 else local
    eye = torch.eye(4, dtype=torch.float64)
    return torch.stack([chain[o] if o >= 0 else eye for o in owner])


def _depth(j: int, parents: list[int]) -> int:
    d = 0
    while parents[j] >= 0:
        j, d = parents[j], d + 1
    return d


def _joint_loss(proj, target, conf, height) -> torch.Tensor:
    r = ((proj - target) / height).pow(2).sum(1)
    return (conf * r).sum() / conf.sum().clamp_min(1e-6)


def true_joints(pose: Pose, phenotype: Phenotype) -> np.ndarray:
    """12×3 anny joints (JOINTS' order) of ``phenotype`` in ``pose`` with its yaw set to 0 (for MPJPE)."""
    from dataclasses import replace

    from .pose import pose_transforms

    rest = rest_body(phenotype)
    tf = pose_transforms(rest, replace(pose, yaw=0.0))
    heads = rest.bone_heads
    posed = (tf[:, :3, :3] @ heads[..., None])[..., 0] + tf[:, :3, 3]
    labels = _linear_body().labels
    return posed[[labels.index(b) for b in JOINTS.values()]].numpy()


def mpjpe_mm(a: np.ndarray, b: np.ndarray) -> float:
    """Mean joint distance in mm after aligning the hips' midpoints (the root)."""
    hips = [list(JOINTS).index(23), list(JOINTS).index(24)]
    a = a - a[hips].mean(0)
    b = b - b[hips].mean(0)
    return float(1000 * np.linalg.norm(a - b, axis=1).mean())
