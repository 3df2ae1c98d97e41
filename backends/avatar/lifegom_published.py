"""LIFe-GoM's published network (``wenj/LIFe-GoM``, the THuman2.0 3-view model) with its state-dict names, on a CPU.

The authors' checkpoint is ``log/exp_thuman2.0_view3/checkpoints/iter_<N>.pt`` =
``{"iter", "network": Model.state_dict(), "optimizer"}``; :func:`load_published` takes it with strict key
matching. The modules below keep their names (``img_encoder.encoder.<i>``, ``reconstructor.multiview_embed``,
``reconstructor.gom_encoder`` = Point Transformer encoder, ``*_update_layer``), so their weights load as they
are. What runs differently from their CUDA code, and why:

- Point Transformer's ``pointops`` (CUDA kNN, farthest point sampling, 3-NN interpolation) are torch ops here;
- nvdiffrast's visibility raster is open3d ray casting through every pixel centre (the triangle each pixel
  sees, as their rasteriser gives), at the image size rounded up to a multiple of 8 as theirs;
- their 3DGS rasteriser (diff-gaussian-rasterization) is the suite's renderer (``render``);
- the per-face heads run in chunks of faces (a 1024² SMPL-X avatar has 334,528 faces × 3,552 inputs).

The body comes from the user's SMPL-X file (registry id ``smplx``): its rest vertices are the canonical mesh,
its LBS weights skin it. The network sees canonical positions in SMPL-X's own frame (y up), as in training;
the suite's frame (z up) is used everywhere else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .gom import FaceParams, Gaussians, GoMAvatar, Subdivision, gaussians_on_faces, steiner_frame  # noqa: F401
from .smplx import Y_UP_TO_Z_UP

IMG_FEAT_DIM = 1152  # 64 + 64 + 128 + 256 + 512 (ResNet-18 stages) + 128 (rgb embed)
POINT_DIM = 32
FACE_CHUNK = 32768
HEADS = ("appearance", "so3", "scale", "offset")
PUBLISHED_ID = "lifegom"
CHECKPOINT_GLOB = "iter_*.pt"
# the final save of their exps/exp_thuman2.0_view3.yaml run (total_iters 200000, save_freq 10000), under the
# registry folder as in their log/ tree; any iter_<N>.pt below the folder is taken (the highest N)
CHECKPOINT_FILE = "exp_thuman2.0_view3/checkpoints/iter_200000.pt"


# --- the image encoder: torchvision's ResNet-18 layout under their Sequential -----------------------------

class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        return F.relu(self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))) + idt)


def _layer(cin, cout, stride):
    return nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1))


class Resnet18Encoder(nn.Module):
    """Their ``Resnet18Encoder``: ImageNet-normalised image → conv1, layer1..4 and a 1×1 rgb embed (1152 ch)."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                     nn.MaxPool2d(3, 2, 1), _layer(64, 64, 1), _layer(64, 128, 2),
                                     _layer(128, 256, 2), _layer(256, 512, 2))
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]))
        self.rgb_embed = nn.Conv2d(3, 128, 1)

    def forward(self, imgs: torch.Tensor) -> list[torch.Tensor]:
        """imgs M×H×W×3 in [0, 1] → six M×C×h×w maps."""
        x = (imgs.permute(0, 3, 1, 2) - self.mean[None, :, None, None]) / self.std[None, :, None, None]
        e = self.encoder
        x0 = e[2](e[1](e[0](x)))
        x1 = e[4](e[3](x0))
        x2 = e[5](x1)
        x3 = e[6](x2)
        x4 = e[7](x3)
        return [x0, x1, x2, x3, x4, self.rgb_embed(x)]


# --- multi-view fusion: their transformer layers ------------------------------------------------------------

class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        self.W_q, self.W_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.W_v, self.W_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def _split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v):
        q, k, v = self._split(self.W_q(q)), self._split(self.W_k(k)), self._split(self.W_v(v))
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d_k), -1) @ v
        b, _, s, _ = att.shape
        return self.W_o(att.transpose(1, 2).reshape(b, s, -1))


class PositionWiseFeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, d_out: int):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_out)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, d_out: int):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = PositionWiseFeedForward(d_model, d_ff, d_out)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_out)

    def forward(self, q, k, v):  # dropout is inactive at inference
        x = self.norm1(q + self.self_attn(q, k, v))
        return self.norm2(x + self.feed_forward(x))


# --- Point Transformer encoder (their models/nets/point_transformer.py), pointops in torch ----------------

def knn(k: int, xyz: torch.Tensor, new_xyz: torch.Tensor, chunk: int = 4096):
    """(idx m×k, dist m×k): the k nearest of ``xyz`` to each of ``new_xyz`` (pointops.knnquery). With fewer
    than k points the spare slots hold point 0 at distance 1e5, as the CUDA kernel leaves them (its slots
    start at the batch's first point and 1e10 squared distance)."""
    idx, dist = [], []
    kk = min(k, len(xyz))
    for s in range(0, len(new_xyz), chunk):
        d, i = torch.cdist(new_xyz[s:s + chunk], xyz).topk(kk, dim=1, largest=False)
        if kk < k:
            i = torch.cat([i, i.new_zeros(len(i), k - kk)], 1)
            d = torch.cat([d, d.new_full((len(d), k - kk), 1e5)], 1)
        idx.append(i)
        dist.append(d)
    return torch.cat(idx), torch.cat(dist)


def furthest_sampling(xyz: torch.Tensor, m: int) -> torch.Tensor:
    """Farthest point sampling from point 0 (pointops.furthestsampling)."""
    idx = torch.zeros(m, dtype=torch.long)
    dist = torch.full((len(xyz),), 1e10, dtype=xyz.dtype)
    last = 0
    for i in range(1, m):
        dist = torch.minimum(dist, ((xyz - xyz[last]) ** 2).sum(1))
        last = int(dist.argmax())
        idx[i] = last
    return idx


def query_and_group(nsample, xyz, new_xyz, feat, use_xyz=True):
    idx, _ = knn(nsample, xyz, new_xyz)
    grouped = feat[idx]
    if not use_xyz:
        return grouped
    return torch.cat((xyz[idx] - new_xyz[:, None], grouped), -1)


def interpolate(xyz, new_xyz, feat, k=3):
    idx, dist = knn(k, xyz, new_xyz)
    w = 1.0 / (dist + 1e-8)
    w = w / w.sum(1, keepdim=True)
    return (feat[idx] * w[..., None]).sum(1)


class PointTransformerLayer(nn.Module):
    def __init__(self, in_planes, out_planes, share_planes=8, nsample=16):
        super().__init__()
        mid = out_planes
        self.mid_planes, self.out_planes, self.share_planes, self.nsample = mid, out_planes, share_planes, nsample
        self.linear_q, self.linear_k = nn.Linear(in_planes, mid), nn.Linear(in_planes, mid)
        self.linear_v = nn.Linear(in_planes, out_planes)
        self.linear_p = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3), nn.ReLU(inplace=True), nn.Linear(3, out_planes))
        self.linear_w = nn.Sequential(nn.BatchNorm1d(mid), nn.ReLU(inplace=True), nn.Linear(mid, mid // share_planes),
                                      nn.BatchNorm1d(mid // share_planes), nn.ReLU(inplace=True),
                                      nn.Linear(out_planes // share_planes, out_planes // share_planes))

    def forward(self, pxo):
        p, x, _ = pxo
        x_q, x_k, x_v = self.linear_q(x), self.linear_k(x), self.linear_v(x)
        x_k = query_and_group(self.nsample, p, p, x_k, use_xyz=True)
        x_v = query_and_group(self.nsample, p, p, x_v, use_xyz=False)
        p_r, x_k = x_k[:, :, 0:3], x_k[:, :, 3:]
        for i, layer in enumerate(self.linear_p):
            p_r = layer(p_r.transpose(1, 2).contiguous()).transpose(1, 2).contiguous() if i == 1 else layer(p_r)
        w = x_k - x_q.unsqueeze(1) + p_r.view(p_r.shape[0], p_r.shape[1], self.out_planes // self.mid_planes,
                                              self.mid_planes).sum(2)
        for i, layer in enumerate(self.linear_w):
            w = layer(w.transpose(1, 2).contiguous()).transpose(1, 2).contiguous() if i % 3 == 0 else layer(w)
        w = torch.softmax(w, 1)
        n, ns, c = x_v.shape
        s = self.share_planes
        return ((x_v + p_r).view(n, ns, s, c // s) * w.unsqueeze(2)).sum(1).view(n, c)


class TransitionDown(nn.Module):
    def __init__(self, in_planes, out_planes, stride=1, nsample=16):
        super().__init__()
        self.stride, self.nsample = stride, nsample
        self.linear = nn.Linear(3 + in_planes if stride != 1 else in_planes, out_planes, bias=False)
        if stride != 1:
            self.pool = nn.MaxPool1d(nsample)
        self.bn = nn.BatchNorm1d(out_planes)

    def forward(self, pxo):
        p, x, o = pxo
        if self.stride == 1:
            return [p, F.relu(self.bn(self.linear(x))), o]
        n_p = p[furthest_sampling(p, len(p) // self.stride)]
        x = query_and_group(self.nsample, p, n_p, x, use_xyz=True)
        x = F.relu(self.bn(self.linear(x).transpose(1, 2).contiguous()))
        return [n_p, self.pool(x).squeeze(-1), o]


class TransitionUp(nn.Module):
    def __init__(self, in_planes, out_planes=None):
        super().__init__()
        if out_planes is None:
            self.linear1 = nn.Sequential(nn.Linear(2 * in_planes, in_planes), nn.BatchNorm1d(in_planes), nn.ReLU(True))
            self.linear2 = nn.Sequential(nn.Linear(in_planes, in_planes), nn.ReLU(True))
        else:
            self.linear1 = nn.Sequential(nn.Linear(out_planes, out_planes), nn.BatchNorm1d(out_planes), nn.ReLU(True))
            self.linear2 = nn.Sequential(nn.Linear(in_planes, out_planes), nn.BatchNorm1d(out_planes), nn.ReLU(True))

    def forward(self, pxo1, pxo2=None):
        if pxo2 is None:  # one batch element
            _, x, _ = pxo1
            return self.linear1(torch.cat([x, self.linear2(x.mean(0, True)).expand(len(x), -1)], -1))
        p1, x1, _ = pxo1
        p2, x2, _ = pxo2
        return self.linear1(x1) + interpolate(p2, p1, self.linear2(x2))


class PointTransformerBlock(nn.Module):
    def __init__(self, in_planes, planes, share_planes=8, nsample=16):
        super().__init__()
        self.linear1 = nn.Linear(in_planes, planes, bias=False)
        self.bn1 = nn.BatchNorm1d(planes)
        self.transformer2 = PointTransformerLayer(planes, planes, share_planes, nsample)
        self.bn2 = nn.BatchNorm1d(planes)
        self.linear3 = nn.Linear(planes, planes, bias=False)
        self.bn3 = nn.BatchNorm1d(planes)

    def forward(self, pxo):
        p, x, o = pxo
        y = F.relu(self.bn1(self.linear1(x)))
        y = F.relu(self.bn2(self.transformer2([p, y, o])))
        return [p, F.relu(self.bn3(self.linear3(y)) + x), o]


class PointTransformerEnc(nn.Module):
    """``pointtransformer_enc_repro(c)``: blocks [2, 3, 4, 6, 3], planes 32..512, → 32-d per point."""

    def __init__(self, c: int, blocks=(2, 3, 4, 6, 3)):
        super().__init__()
        self.in_planes, planes = c, [32, 64, 128, 256, 512]
        stride, nsample = [1, 4, 4, 4, 4], [8, 16, 16, 16, 16]
        for i in range(5):
            setattr(self, f"enc{i + 1}", self._make_enc(planes[i], blocks[i], stride[i], nsample[i]))
        for i in (4, 3, 2, 1, 0):
            setattr(self, f"dec{i + 1}", self._make_dec(planes[i], nsample[i], is_head=i == 4))

    def _make_enc(self, planes, blocks, stride, nsample):
        layers = [TransitionDown(self.in_planes, planes, stride, nsample)]
        self.in_planes = planes
        layers += [PointTransformerBlock(planes, planes, 8, nsample) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def _make_dec(self, planes, nsample, is_head=False):
        layers = [TransitionUp(self.in_planes, None if is_head else planes)]
        self.in_planes = planes
        layers.append(PointTransformerBlock(planes, planes, 8, nsample))
        return nn.Sequential(*layers)

    def forward(self, p0: torch.Tensor, x0: torch.Tensor) -> torch.Tensor:
        o = torch.tensor([len(p0)], dtype=torch.int32)
        pxo = [[p0, torch.cat((p0, x0), 1), o]]
        for i in range(1, 6):
            pxo.append(getattr(self, f"enc{i}")(pxo[-1]))
        (p1, x1, _), (p2, x2, _), (p3, x3, _), (p4, x4, _), (p5, x5, o5) = pxo[1:]
        x5 = self.dec5[1:]([p5, self.dec5[0]([p5, x5, o5]), o5])[1]
        x4 = self.dec4[1:]([p4, self.dec4[0]([p4, x4, o], [p5, x5, o]), o])[1]
        x3 = self.dec3[1:]([p3, self.dec3[0]([p3, x3, o], [p4, x4, o]), o])[1]
        x2 = self.dec2[1:]([p2, self.dec2[0]([p2, x2, o], [p3, x3, o]), o])[1]
        return self.dec1[1:]([p1, self.dec1[0]([p1, x1, o], [p2, x2, o]), o])[1]


def _head(in_dim: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(in_dim, 32), nn.ReLU(), nn.Linear(32, 3))


# --- their multi-resolution mesh: midpoint subdivision in their vertex and face order ---------------------

def subdivide_like_theirs(faces: np.ndarray, levels: int, n_vertices: int) -> Subdivision:
    """``reconstructor.subdivide``: new vertices numbered per unique edge (trimesh's ``unique_rows`` order),
    each a blend of ≤ 3 coarse vertices (the two ends' blends halved, merged in order), faces split into
    [v0 m01 m20, m01 v1 m12, m20 m12 v2, m01 m12 m20]. Vectorised; the same arrays as their loop."""
    from trimesh.remesh import faces_to_edges, grouping

    faces = np.asarray(faces, dtype=np.int64)
    coarse, n = faces, n_vertices
    pts = np.full((n, 3), -1, dtype=np.int64)
    pts[:, 0] = np.arange(n)
    ws = np.zeros((n, 3), dtype=np.float32)
    ws[:, 0] = 1.0
    edges = np.sort(faces_to_edges(faces), axis=1)
    unique, inverse = grouping.unique_rows(edges)
    edges = edges[unique]
    for _ in range(levels):
        cand_p = np.concatenate([pts[edges[:, 0]], pts[edges[:, 1]]], 1)  # E×6
        cand_w = np.concatenate([ws[edges[:, 0]], ws[edges[:, 1]]], 1) / 2
        new_p = np.full((len(edges), 3), -1, dtype=np.int64)
        new_w = np.zeros((len(edges), 3), dtype=np.float32)
        count = np.zeros(len(edges), dtype=np.int64)
        rows = np.arange(len(edges))
        for j in range(6):
            p, w = cand_p[:, j], cand_w[:, j]
            match = (new_p == p[:, None]) & (p[:, None] != -1)
            has = match.any(1)
            slot = match.argmax(1)
            new_w[rows[has], slot[has]] += w[has]
            add = (p != -1) & ~has
            new_p[rows[add], count[add]] = p[add]
            new_w[rows[add], count[add]] = w[add]
            count += add
        pts, ws = np.concatenate([pts, new_p]), np.concatenate([ws, new_w])
        mid = inverse.reshape(-1, 3) + n
        faces = np.column_stack([faces[:, 0], mid[:, 0], mid[:, 2], mid[:, 0], faces[:, 1], mid[:, 1],
                                 mid[:, 2], mid[:, 1], faces[:, 2], mid[:, 0], mid[:, 1], mid[:, 2]]).reshape(-1, 3)
        n += len(edges)
        edges = np.sort(faces_to_edges(faces), axis=1)
        unique, inverse = grouping.unique_rows(edges)
        edges = edges[unique]
    parent = np.repeat(np.arange(len(coarse)), 4 ** levels)
    return Subdivision(coarse, faces, np.where(pts < 0, 0, pts), ws, parent, levels)


# --- the reconstructor and the whole network ----------------------------------------------------------------

@dataclass(frozen=True)
class PublishedConfig:
    n_vertices: int = 10475  # the canonical mesh (SMPL-X)
    n_input_frames: int = 3  # the face heads take this many views' pixel features
    n_subdivide: int = 2
    n_iters: int = 3
    image_size: int = 1024  # their img_size (THuman2.0 renders)

    @staticmethod
    def of_state(state: dict) -> PublishedConfig:
        """The sizes a checkpoint was trained with, read from its tensors."""
        n_vertices = state["reconstructor.vertex_embed"].shape[0]
        frames = (state["reconstructor.so3_update_layer.0.weight"].shape[1] - 3 * POINT_DIM) // IMG_FEAT_DIM
        return PublishedConfig(int(n_vertices), int(frames))


class PublishedReconstructor(nn.Module):
    def __init__(self, config: PublishedConfig):
        super().__init__()
        c, d = config, IMG_FEAT_DIM
        self.visibility_embed = nn.Parameter(torch.zeros(d))
        self.vertex_embed = nn.Parameter(torch.randn(c.n_vertices, d))
        self.multiview_embed = nn.Sequential(EncoderLayer(d, 6, d, d), EncoderLayer(d, 6, d, d))
        self.gom_encoder = PointTransformerEnc(2 * d + 3)
        self.xyz_update_layer = _head(POINT_DIM)
        self.embed_update_layer = nn.Linear(POINT_DIM, d)
        face_in = d * c.n_input_frames + 3 * POINT_DIM
        self.so3_update_layer, self.scale_update_layer = _head(face_in), _head(face_in)
        self.appearance_update_layer, self.offset_update_layer = _head(face_in), _head(face_in)


class LifeGomPublished(nn.Module):
    """Their ``Model`` (img_encoder, reconstructor; the renderer has no weights) on a body from SMPL-X."""

    def __init__(self, config: PublishedConfig, faces: np.ndarray, lbs_weights: torch.Tensor,
                 template_xyz: torch.Tensor, levels: int | None = None):
        super().__init__()
        self.config = config
        self.img_encoder = Resnet18Encoder()
        self.reconstructor = PublishedReconstructor(config)
        self.coarse_faces = np.asarray(faces, dtype=np.int64)
        self.subdivision = subdivide_like_theirs(self.coarse_faces, config.n_subdivide if levels is None else levels,
                                                 len(template_xyz))
        self.lbs_weights = torch.as_tensor(lbs_weights, dtype=torch.float32)  # not in their state dict
        self.template_xyz = torch.as_tensor(template_xyz, dtype=torch.float32)
        self.coarse = None  # the embedded model's anny template; this one takes SMPL-X bodies

    def avatar(self, xyz: torch.Tensor, params: FaceParams) -> GoMAvatar:
        return GoMAvatar(xyz, self.lbs_weights, self.subdivision, params)

    @torch.no_grad()
    def forward(self, views, n_iters: int | None = None, progress=None, background=(0.0, 0.0, 0.0), cancel=None):
        """Views (B = 1; suite frame, OpenCV cameras) → avatars[iteration][0], as the embedded model's.
        ``progress(i)`` is called as feedback iteration i (1, 2, …) starts; ``cancel`` (a Stop) ends it before one."""
        from backends.common.progress import raise_if_cancelled

        b, n, h, w, _ = views.images.shape
        if b != 1:
            raise ValueError("the published network reconstructs one subject at a time")
        if n != self.config.n_input_frames:
            raise ValueError(f"this checkpoint takes exactly {self.config.n_input_frames} views (its face heads "
                             f"concatenate them), not {n}")
        imgs = views.images[0].float()
        input_maps = self.img_encoder(imgs)
        xyz = (self.template_xyz if views.template is None else views.template[0]).float()
        embed = self.reconstructor.vertex_embed
        n_faces = len(self.subdivision.faces)
        params = FaceParams(torch.zeros(n_faces, 3), torch.zeros(n_faces, 3), torch.ones(n_faces, 3),
                            torch.zeros(n_faces, 3))
        bg = torch.tensor(background, dtype=torch.float32)
        history = []
        for it in range(n_iters or self.config.n_iters):
            raise_if_cancelled(cancel)
            if progress is not None:
                progress(it + 1)
            rendered, rmasks = self._render(self.avatar(xyz, params), views, w, h, bg)
            render_maps = self.img_encoder(rendered)
            xyz, embed, params = self._update(xyz, embed, views, imgs, input_maps, rendered, rmasks, render_maps)
            history.append([self.avatar(xyz, params)])
        return history

    def _render(self, avatar: GoMAvatar, views, w: int, h: int, bg: torch.Tensor):
        from .render import render

        rgbs, masks = [], []
        for i in range(views.images.shape[1]):
            g = avatar.gaussians(views.transforms[0, i])
            out = render(g, views.viewmats[0, i], views.Ks[0, i], w, h, background=torch.zeros(3), backend="fast")
            rgbs.append(out.rgb * out.alpha[..., None] + bg * (1 - out.alpha[..., None]))
            masks.append(out.alpha)
        return torch.stack(rgbs).float(), torch.stack(masks).float()

    def _project(self, points: torch.Tensor, views) -> torch.Tensor:
        """N×P×3 world points → N×P×2 grid_sample coordinates (their xy / W·2 − 1)."""
        e, k = views.viewmats[0].to(points), views.Ks[0].to(points)
        cam = torch.einsum("nij,npj->npi", e[:, :3, :3], points) + e[:, None, :3, 3]
        pix = torch.einsum("nij,npj->npi", k, cam)
        uv = pix[..., :2] / pix[..., 2:3]
        h, w = views.images.shape[2:4]
        return torch.stack([uv[..., 0] / w * 2 - 1, uv[..., 1] / h * 2 - 1], -1)

    @staticmethod
    def _sample(maps: list[torch.Tensor], grid: torch.Tensor) -> torch.Tensor:
        """N×P×2 → N×P×C pixel-aligned features (grid_sample, align_corners False, as theirs)."""
        return torch.cat([F.grid_sample(m, grid[:, None], align_corners=False)[:, :, 0] for m in maps], 1
                         ).permute(0, 2, 1)

    def _fuse(self, feats: torch.Tensor, seen: torch.Tensor, embed: torch.Tensor) -> torch.Tensor:
        """N×P×C per-view features, N×P visibility → P×C (self-attention over views, then the embed queries)."""
        r = self.reconstructor
        x = feats * seen[..., None] + r.visibility_embed * (1 - seen[..., None])
        x = x.permute(1, 0, 2)  # P×N×C
        x = r.multiview_embed[0](x, x, x)
        return r.multiview_embed[1](embed[:, None], x, x)[:, 0]

    def _update(self, xyz, embed, views, imgs, input_maps, rendered, rmasks, render_maps):
        r, sub = self.reconstructor, self.subdivision
        n, h, w = imgs.shape[:3]
        posed = torch.stack([_skin(xyz, self.lbs_weights, views.transforms[0, i]) for i in range(n)])  # N×P×3
        posed_fine = sub.fine_vertices(posed)
        seen_fine = raster_visibility(posed_fine, sub.faces, views.viewmats[0], views.Ks[0], w, h).float()
        n_coarse = len(xyz)
        grid = self._project(posed, views)
        feats = self._fuse(self._sample(input_maps, grid), seen_fine[:, :n_coarse], embed)
        rseen = F.grid_sample(rmasks[:, None], grid[:, None], align_corners=False)[:, 0, 0]  # N×P
        rfeats = self._fuse(self._sample(render_maps, grid), rseen, embed)
        native = xyz @ torch.as_tensor(Y_UP_TO_Z_UP, dtype=xyz.dtype)  # suite → SMPL-X frame
        delta = r.gom_encoder(native.contiguous(), torch.cat([feats, rfeats], -1))  # P×32
        new_xyz = xyz + r.xyz_update_layer(delta) @ torch.as_tensor(Y_UP_TO_Z_UP, dtype=xyz.dtype).T
        new_embed = r.embed_update_layer(delta)
        # the fine faces: corners' interpolated point features + the views' pixel features at the centroid
        delta_fine = sub.fine_vertices(delta)
        faces = torch.from_numpy(sub.faces)
        grid_fine = self._project(posed_fine, views)
        heads = [getattr(r, f"{k}_update_layer") for k in HEADS]
        w1 = torch.cat([h[0].weight for h in heads])  # 128×(96 + N·1152): the four heads' first layers at once
        b1 = torch.cat([h[0].bias for h in heads])
        out = {k: [] for k in HEADS}
        for s in range(0, len(faces), FACE_CHUNK):
            f = faces[s:s + FACE_CHUNK]
            corner = delta_fine[f].reshape(len(f), -1)  # F×96
            centre = grid_fine[:, f].mean(2)  # N×F×2
            seen = seen_fine[:, f].min(2).values  # N×F
            hidden = self._face_hidden(corner, input_maps, centre, seen, w1, b1)
            for i, (k, h) in enumerate(zip(HEADS, heads, strict=True)):
                out[k].append(h[2](hidden[:, 32 * i:32 * (i + 1)]))
        cat = {k: torch.cat(v) for k, v in out.items()}
        params = FaceParams(cat["appearance"], cat["so3"], 1.0 + cat["scale"], cat["offset"])
        return new_xyz, new_embed, params


    @staticmethod
    def _face_hidden(corner, maps, centre, seen, w1, b1):
        """ReLU of the heads' first layer on [corner features, view 0's pixel features · seen, view 1's, …]
        without building that F×(96 + N·1152) input: each view's and each map's block of the weights is
        applied to its sampled features directly (the same sums, a quarter of the memory traffic)."""
        h = corner @ w1[:, :corner.shape[1]].T + b1
        col = corner.shape[1]
        for v in range(centre.shape[0]):
            acc = 0
            for m in maps:
                c = m.shape[1]
                sampled = F.grid_sample(m[v:v + 1], centre[v][None, None], align_corners=False)[0, :, 0]  # c×F
                acc = acc + sampled.T @ w1[:, col:col + c].T
                col += c
            h = h + acc * seen[v][:, None]
        return F.relu(h)


def _skin(xyz, weights, transforms):
    from .body import skin

    return skin(xyz, weights, transforms.to(xyz.dtype))


def raster_visibility(vertices: torch.Tensor, faces: np.ndarray, viewmats: torch.Tensor, Ks: torch.Tensor,
                      width: int, height: int) -> torch.Tensor:
    """N×V bool: a vertex is visible when a face it belongs to is the first hit of some pixel's ray (their
    nvdiffrast visibility), at the size rounded up to a multiple of 8."""
    import open3d as o3d
    import open3d.core as o3c

    w8, h8 = -(-width // 8) * 8, -(-height // 8) * 8
    faces = np.asarray(faces, dtype=np.int64)
    ys, xs = np.mgrid[0:h8, 0:w8]
    pix = np.stack([xs.ravel() + 0.5, ys.ravel() + 0.5, np.ones(xs.size)], 1)
    out = np.zeros((len(viewmats), vertices.shape[1]), dtype=bool)
    for i in range(len(viewmats)):
        e, k = viewmats[i].double().numpy(), Ks[i].double().numpy()
        d_cam = pix @ np.linalg.inv(k).T
        d = d_cam @ e[:3, :3]  # camera → world directions (rotation transpose)
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        centre = -e[:3, :3].T @ e[:3, 3]
        rays = np.concatenate([np.broadcast_to(centre, d.shape), d], 1).astype(np.float32)
        scene = o3d.t.geometry.RaycastingScene()
        scene.add_triangles(o3c.Tensor(vertices[i].detach().cpu().numpy().astype(np.float32)),
                            o3c.Tensor(faces.astype(np.uint32)))
        ids = scene.cast_rays(o3c.Tensor(rays))["primitive_ids"].numpy().astype(np.int64)
        hit = np.unique(ids[ids < len(faces)])
        out[i, np.unique(faces[hit])] = True
    return torch.from_numpy(out)


# --- checkpoints -----------------------------------------------------------------------------------------

def find_checkpoint(folder: Path) -> Path:
    """The highest ``iter_<N>.pt`` under ``folder`` (their inference.py takes the highest N)."""
    found = sorted(Path(folder).rglob(CHECKPOINT_GLOB), key=lambda p: int(p.stem.split("_")[-1]))
    if not found:
        raise FileNotFoundError(f"no {CHECKPOINT_GLOB} under {folder}")
    return found[-1]


def read_checkpoint(path: Path) -> dict[str, torch.Tensor]:
    """Their ``{"iter", "network", "optimizer"}`` file → the network's state dict (tensors only, no code run)."""
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(ckpt, dict) or "network" not in ckpt:
        raise ValueError(f"{Path(path).name} is not a LIFe-GoM checkpoint (no 'network' state dict)")
    return ckpt["network"]


def build_published(config: PublishedConfig, body, levels: int | None = None) -> LifeGomPublished:
    """The network on an SMPL-X body (``smplx.SmplxModel``: rest vertices, faces, LBS weights)."""
    if len(body.v_template) != config.n_vertices:
        raise ValueError(f"the checkpoint's canonical mesh has {config.n_vertices} vertices, the SMPL-X file "
                         f"{len(body.v_template)}")
    model = LifeGomPublished(config, body.faces, torch.as_tensor(body.weights, dtype=torch.float32),
                             torch.as_tensor(body.v_template, dtype=torch.float32), levels)
    model.smplx = body  # the service poses avatars with its skeleton
    return model


def load_published(checkpoint: Path, body, levels: int | None = None) -> LifeGomPublished:
    """Their checkpoint on the user's SMPL-X body; every key taken, none left over (strict)."""
    state = read_checkpoint(checkpoint)
    model = build_published(PublishedConfig.of_state(state), body, levels)
    model.load_state_dict(state, strict=True)
    return model.eval()


def save_in_their_format(model: LifeGomPublished, path: Path, iteration: int = 0) -> Path:
    """``torch.save({"iter", "network", "optimizer"})`` as their train.py does (optimizer state left empty)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"iter": iteration, "network": model.state_dict(), "optimizer": {"state": {}, "param_groups": []}},
               path)
    return path
