"""LIFe-GoM's reconstructor, sized for a CPU: a few posed views → a Gaussians-on-Mesh avatar, refined by
iterative feedback.

Per iteration (as in ``wenj/LIFe-GoM: models/modules/reconstructor.py``):
1. render the current avatar into the input views (no gradient) and encode the renders;
2. skin the coarse vertices into each view, test their visibility (ray casting), and sample
   pixel-aligned features of the inputs and of the renders there (invisible → a learned embedding);
3. fuse each vertex's views: self-attention over views, then cross-attention with the vertex's own
   embedding as the query;
4. a vertex network (an MLP and self-attention over vertices, standing in for the Point Transformer)
   turns [input feature, render feature (detached), xyz] into a 32-d feature;
5. the coarse xyz moves by an MLP of it, and the embedding is replaced by a linear map of it;
6. the features are interpolated to the fine mesh; each fine face takes its corners' features and
   the pixel features at its centroid pooled over the views that see it (mean and max; the paper
   concatenates a fixed number of views — pooling lets one model take 1–8 views) and, with
   ``face_feedback``, the mean of input-minus-render features there (the current render's error where
   the face lands, so a later iteration can correct a colour it sees is wrong); four MLPs give its
   rgb, rotation, scale and offset as residuals from the initial values (last layers start at U(±1e-5)).
Only xyz and the embedding carry over between iterations. The encoder is a small CNN (not ResNet18).
The start is the subject's own rest-pose coarse body (``Views.template``, the fitted body LIFe-GoM
takes as input) or, without one, the average anny body the model was trained from.

Public API (used by the service, the CLI and the bench)::

    model = load_reconstructor(folder=None, levels=None)  # the embedded checkpoint by default
    avatar = reconstruct(model, images, masks, viewmats, Ks, transforms, template=None, iterations=3)
    # images N×H×W×3 in [0, 1], masks N×H×W, viewmats N×4×4 (world → camera, OpenCV), Ks N×3×3,
    # transforms J×4×4 (one pose for all views) or N×J×4×4, template V×3 → GoMAvatar
    transforms, template = body_inputs(phenotype, pose)  # a person's pose and rest body, from anny
    # (repose it with avatar.gaussians(pose_transforms(rest, pose)) and render with render.render)
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from backends.common.progress import CancelToken, raise_if_cancelled

from .body import CoarseTemplate, Phenotype, coarse_template, load_template, rest_body, save_template, skin
from .gom import FaceParams, GoMAvatar, Subdivision, subdivide
from .pose import Pose, pose_transforms
from .render import render
from .visibility import vertex_visibility

MAX_VIEWS = 8
EMBEDDED_ID = "avatar-embedded"


@dataclass(frozen=True)
class ReconstructorConfig:
    n_views: int = 3  # the number of input views it is trained for (any 1..MAX_VIEWS work)
    image_size: int = 64  # the training resolution
    levels: int = 1  # subdivision levels of the rendering mesh it is trained with
    feat_dim: int = 32  # pixel-aligned feature per view
    vertex_dim: int = 64  # fused vertex feature / embedding
    point_dim: int = 32  # the vertex network's output (as in the paper)
    heads: int = 4
    vertex_layers: int = 2
    n_iters: int = 3
    encoder_width: int = 16
    face_feedback: bool = False  # face heads also see the input-minus-render pixel feature at their centroid


class ImageEncoder(nn.Module):
    """A small CNN on the masked image (rgb, mask); features at 1/2, 1/4 and 1/8 resolution plus the raw pixels."""

    def __init__(self, width: int, out_dim: int):
        super().__init__()
        w = width

        def stage(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=2, padding=1), nn.GroupNorm(4, cout), nn.ReLU(),
                                 nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(4, cout), nn.ReLU())

        self.stages = nn.ModuleList([stage(4, w), stage(w, 2 * w), stage(2 * w, 4 * w)])
        self.project = nn.Linear(4 + w + 2 * w + 4 * w, out_dim)

    def forward(self, images: torch.Tensor, masks: torch.Tensor) -> list[torch.Tensor]:
        """images [M, H, W, 3] in [0, 1], masks [M, H, W] → feature maps (the input itself first)."""
        x = torch.cat([images * masks[..., None], masks[..., None]], -1).permute(0, 3, 1, 2)
        maps = [x]
        for stage in self.stages:
            maps.append(stage(maps[-1]))
        return maps

    def sample(self, maps: list[torch.Tensor], uv: torch.Tensor, width: int, height: int) -> torch.Tensor:
        """Bilinear features at pixel positions uv [M, P, 2] → [M, P, out_dim]."""
        grid = torch.stack([uv[..., 0] / width * 2 - 1, uv[..., 1] / height * 2 - 1], -1)[:, None]
        feats = [F.grid_sample(m, grid.to(m.dtype), align_corners=False)[:, :, 0].transpose(1, 2) for m in maps]
        return self.project(torch.cat(feats, -1))


class ViewFusion(nn.Module):
    """Self-attention over a vertex's views, then cross-attention with the vertex embedding as the query."""

    def __init__(self, feat_dim: int, dim: int, heads: int):
        super().__init__()
        self.lift = nn.Linear(feat_dim, dim)
        self.views = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=0.0, batch_first=True)
        self.cross = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm = nn.LayerNorm(dim)

    def forward(self, feats: torch.Tensor, embed: torch.Tensor) -> torch.Tensor:
        """feats [B, V, N, C], embed [B, V, D] → [B, V, D]."""
        b, v, n, _ = feats.shape
        tokens = self.views(self.lift(feats).reshape(b * v, n, -1))
        q = embed.reshape(b * v, 1, -1)
        fused, _ = self.cross(q, tokens, tokens, need_weights=False)
        return self.norm(q + fused).reshape(b, v, -1)


class VertexNet(nn.Module):
    """MLP + self-attention over the coarse vertices (the paper's Point Transformer, made small)."""

    def __init__(self, in_dim: int, dim: int, out_dim: int, heads: int, layers: int):
        super().__init__()
        self.inp = nn.Sequential(nn.Linear(in_dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.blocks = nn.ModuleList([
            nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=0.0, batch_first=True)
            for _ in range(layers)])
        self.out = nn.Linear(dim, out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for block in self.blocks:
            h = block(h)
        return self.out(h)


def _head(in_dim: int, out_dim: int = 3) -> nn.Sequential:
    head = nn.Sequential(nn.Linear(in_dim, 32), nn.ReLU(), nn.Linear(32, out_dim))
    nn.init.uniform_(head[-1].weight, -1e-5, 1e-5)  # start at the initial values (stabilises training)
    nn.init.zeros_(head[-1].bias)
    return head


@dataclass
class Views:
    """The reconstructor's inputs: B subjects × N views with cameras and each view's bone transforms."""

    images: torch.Tensor  # B×N×H×W×3 in [0, 1]
    masks: torch.Tensor  # B×N×H×W in [0, 1]
    viewmats: torch.Tensor  # B×N×4×4 world → camera (OpenCV)
    Ks: torch.Tensor  # B×N×3×3
    transforms: torch.Tensor  # B×N×J×4×4 rest → the pose of each view
    template: torch.Tensor | None = None  # B×V×3 each subject's rest-pose coarse body (None: the average)


class Reconstructor(nn.Module):
    """Views → one GoMAvatar per feedback iteration (the last is the result)."""

    def __init__(self, config: ReconstructorConfig, coarse_xyz: torch.Tensor, coarse_faces: np.ndarray,
                 lbs_weights: torch.Tensor, subdivision: Subdivision):
        super().__init__()
        self.config = config
        c = config
        self.subdivision = subdivision
        self.coarse_faces = np.asarray(coarse_faces)
        self.register_buffer("template_xyz", torch.as_tensor(coarse_xyz, dtype=torch.float32))
        self.register_buffer("lbs_weights", torch.as_tensor(lbs_weights, dtype=torch.float32))
        self.register_buffer("template_faces", torch.as_tensor(np.asarray(coarse_faces, dtype=np.int64)))
        self.coarse: CoarseTemplate | None = None  # the mesh's blends of anny's vertices (set by build/load)
        n_vertices = len(coarse_xyz)
        self.encoder = ImageEncoder(c.encoder_width, c.feat_dim)
        self.unseen = nn.Parameter(torch.zeros(c.feat_dim))
        self.vertex_embed = nn.Parameter(torch.randn(n_vertices, c.vertex_dim) * 0.1)
        self.fusion = ViewFusion(c.feat_dim, c.vertex_dim, c.heads)
        self.vertex_net = VertexNet(2 * c.vertex_dim + 3, c.vertex_dim, c.point_dim, c.heads, c.vertex_layers)
        self.xyz_head = _head(c.point_dim)
        self.embed_head = nn.Linear(c.point_dim, c.vertex_dim)
        face_in = 3 * c.point_dim + (3 if c.face_feedback else 2) * c.feat_dim
        self.rgb_head, self.so3_head = _head(face_in), _head(face_in)
        self.scale_head, self.offset_head = _head(face_in), _head(face_in)

    def config_dict(self) -> dict:
        return asdict(self.config)

    def avatar(self, xyz: torch.Tensor, params: FaceParams) -> GoMAvatar:
        return GoMAvatar(xyz, self.lbs_weights, self.subdivision, params)

    def forward(self, views: Views, n_iters: int | None = None, visibility=vertex_visibility,
                cancel: CancelToken | None = None) -> list[list[GoMAvatar]]:
        """→ avatars[iteration][subject]; ``cancel`` (a Stop) ends it between the parts of an iteration."""
        c = self.config
        b, n, h, w, _ = views.images.shape
        if not 1 <= n <= MAX_VIEWS:
            raise ValueError(f"this reconstructor takes 1 to {MAX_VIEWS} views, not {n}")
        flat = views.images.reshape(b * n, h, w, 3), views.masks.reshape(b * n, h, w)
        input_maps = self.encoder(*flat)
        start = self.template_xyz if views.template is None else views.template.to(self.template_xyz)
        xyz = start.expand(b, -1, -1)
        embed = self.vertex_embed.expand(b, -1, -1)
        params = [FaceParams.initial(len(self.subdivision.faces), device=xyz.device) for _ in range(b)]
        history = []
        for _ in range(n_iters or c.n_iters):
            with torch.no_grad():
                rendered = self._render_into_views([self.avatar(xyz[i], params[i]) for i in range(b)], views, cancel)
                raise_if_cancelled(cancel)
                render_maps = self.encoder(*rendered)
            raise_if_cancelled(cancel)
            xyz, embed, params = self._update(xyz, embed, views, input_maps, render_maps, visibility)
            history.append([self.avatar(xyz[i], params[i]) for i in range(b)])
        return history

    def _render_into_views(self, avatars: list[GoMAvatar], views: Views, cancel: CancelToken | None = None):
        b, n, h, w, _ = views.images.shape
        rgbs, alphas = [], []
        for i, avatar in enumerate(avatars):
            for j in range(n):
                raise_if_cancelled(cancel)
                out = render(avatar.gaussians(views.transforms[i, j]), views.viewmats[i, j], views.Ks[i, j], w, h,
                             backend="torch")
                rgbs.append(out.rgb.clamp(0, 1))
                alphas.append(out.alpha)
        return torch.stack(rgbs).float(), torch.stack(alphas).float()

    def _update(self, xyz, embed, views: Views, input_maps, render_maps, visibility):
        c = self.config
        b, n, h, w, _ = views.images.shape
        sub = self.subdivision
        posed = skin(xyz[:, None].expand(b, n, -1, -1), self.lbs_weights, views.transforms.to(xyz.dtype))  # B×N×V×3
        fine_posed = sub.fine_vertices(posed)  # B×N×Vf×3
        seen_fine = visibility(fine_posed, sub.faces, views.viewmats, views.Ks, w, h).to(xyz.device)  # B×N×Vf
        seen = seen_fine[..., :xyz.shape[1]]  # fine vertices start with the coarse ones
        uv = self._project(posed, views)  # B×N×V×2

        def vertex_features(maps, seen_mask):
            f = self.encoder.sample(maps, uv.reshape(b * n, -1, 2), w, h).reshape(b, n, -1, c.feat_dim)
            f = torch.where(seen_mask[..., None], f, self.unseen)
            return f.permute(0, 2, 1, 3)  # B×V×N×C

        fused_in = self.fusion(vertex_features(input_maps, seen), embed)
        fused_render = self.fusion(vertex_features(render_maps, seen), embed).detach()
        point = self.vertex_net(torch.cat([fused_in, fused_render, xyz], -1))  # B×V×P
        new_xyz = xyz + self.xyz_head(point)
        new_embed = self.embed_head(point)
        # fine faces: their corners' features and the pixel features at their centroids in each view
        faces = torch.from_numpy(sub.faces).to(xyz.device)
        corner = sub.fine_vertices(point)[:, faces].reshape(b, len(faces), -1)  # B×F×3P
        centroids = fine_posed[:, :, faces].mean(-2)  # B×N×F×3
        face_seen = seen_fine[:, :, faces].all(-1)  # B×N×F
        cuv = self._project(centroids, views)
        pix = self.encoder.sample(input_maps, cuv.reshape(b * n, -1, 2), w, h).reshape(b, n, len(faces), -1)
        seen_f = face_seen[..., None].to(pix.dtype)
        mean = (pix * seen_f).sum(1) / seen_f.sum(1).clamp(min=1)  # B×F×C over the views that see the face
        peak = torch.where(face_seen[..., None], pix, torch.full_like(pix, -1e4)).amax(1)
        peak = torch.where(face_seen.any(1)[..., None], peak, torch.zeros_like(peak))
        face_feat = [corner, mean, peak]
        if c.face_feedback:  # the residual error of the current render where the face lands, in feature space
            pix_r = self.encoder.sample(render_maps, cuv.reshape(b * n, -1, 2), w, h).reshape(b, n, len(faces), -1)
            face_feat.append(((pix - pix_r) * seen_f).sum(1) / seen_f.sum(1).clamp(min=1))
        face_feat = torch.cat(face_feat, -1)
        params = [FaceParams.initial(len(faces), dtype=xyz.dtype, device=xyz.device).residual(
            rgb=self.rgb_head(face_feat[i]), so3=self.so3_head(face_feat[i]),
            scale=self.scale_head(face_feat[i]), offset=self.offset_head(face_feat[i])) for i in range(b)]
        return new_xyz, new_embed, params

    @staticmethod
    def _project(points: torch.Tensor, views: Views) -> torch.Tensor:
        """B×N×P×3 world points → B×N×P×2 pixel positions in each view."""
        e, k = views.viewmats.to(points.dtype), views.Ks.to(points.dtype)
        cam = torch.einsum("bnij,bnpj->bnpi", e[..., :3, :3], points) + e[..., None, :3, 3]
        z = cam[..., 2].clamp(min=1e-6)
        fx, fy = k[..., 0, 0, None], k[..., 1, 1, None]
        cx, cy = k[..., 0, 2, None], k[..., 1, 2, None]
        return torch.stack([fx * cam[..., 0] / z + cx, fy * cam[..., 1] / z + cy], -1)


# --- checkpoints and the one-call reconstruction -------------------------------------------------

def save_reconstructor(model: Reconstructor, folder: Path) -> None:
    """``model.safetensors`` (weights, the average coarse body, its faces and LBS weights), ``config.json``
    and ``template.safetensors`` (the coarse mesh's blends of anny's vertices: the model's topology)."""
    from safetensors.torch import save_file

    if model.coarse is None:
        raise ValueError("a reconstructor is saved with its coarse template (build it with coarse=...)")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(model.config_dict(), indent=2) + "\n")
    save_template(model.coarse, folder)


def build_reconstructor(config: ReconstructorConfig, template_xyz: torch.Tensor, coarse_faces: np.ndarray,
                        lbs_weights: torch.Tensor, levels: int | None = None,
                        coarse: CoarseTemplate | None = None) -> Reconstructor:
    """A reconstructor on this coarse template, its rendering mesh subdivided ``levels`` times. ``coarse``
    (the template's blends of anny's vertices) places the template on any person's body."""
    if coarse is not None and not np.array_equal(np.asarray(coarse.faces), np.asarray(coarse_faces)):
        raise ValueError("the coarse template's faces differ from the model's")
    sub = subdivide(coarse_faces, len(template_xyz), config.levels if levels is None else levels)
    model = Reconstructor(config, template_xyz, coarse_faces, lbs_weights, sub)
    model.coarse = coarse
    return model


def load_reconstructor(folder: Path | str | None = None, levels: int | None = None) -> Reconstructor:
    """The reconstructor saved in ``folder`` (default: the embedded ``avatar-embedded`` asset, resolved and
    checksum-verified by the registry). ``levels`` overrides the rendering mesh's subdivision (the face
    heads work per face, so a finer mesh than in training is allowed); it needs no anny build. The
    coarse mesh comes from the folder (``template.safetensors``), never from a rebuild."""
    from safetensors.torch import load_file

    if folder is None:
        from backends.common.registry import default_registry

        folder = default_registry().resolve(EMBEDDED_ID).path
    folder = Path(folder)
    config = ReconstructorConfig(**json.loads((folder / "config.json").read_text()))
    state = load_file(str(folder / "model.safetensors"))
    model = build_reconstructor(config, state["template_xyz"], state["template_faces"].numpy(), state["lbs_weights"],
                                levels, coarse=load_template(folder))
    model.load_state_dict(state)
    return model.eval()


@torch.no_grad()
def reconstruct(model: Reconstructor, images: torch.Tensor, masks: torch.Tensor, viewmats: torch.Tensor,
                Ks: torch.Tensor, transforms: torch.Tensor, template: torch.Tensor | None = None,
                iterations: int = 3) -> GoMAvatar:
    """One subject's avatar from N posed views (shapes in the module docstring), ``iterations`` feedback
    iterations (3 by default, as in the paper)."""
    n = images.shape[0]
    if transforms.dim() == 3:
        transforms = transforms[None].expand(n, -1, -1, -1)
    f = lambda x: torch.as_tensor(x, dtype=torch.float32)[None]  # noqa: E731
    views = Views(f(images), f(masks), f(viewmats), f(Ks), f(transforms), None if template is None else f(template))
    return model(views, n_iters=iterations)[-1][0]


def body_inputs(phenotype: Phenotype | None, pose: Pose,
                coarse: CoarseTemplate | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(J×4×4 skinning transforms of ``pose``, V×3 rest-pose coarse body) of an anny person with this
    shape — the body inputs of :func:`reconstruct` (and the transforms to repose the avatar with).
    ``coarse``: the model's template (default: the shipped one)."""
    rest = rest_body(phenotype)
    return pose_transforms(rest, pose).float(), (coarse or coarse_template()).vertices(rest.vertices).float()
