"""Fixture of LIFe-GoM's published checkpoint: its state-dict names and shapes, from the authors' own code.

    python -m training.published_formats.lifegom --authors-code DIR   # DIR: a checkout of wenj/LIFe-GoM

Also writes ``lifegom.forward.safetensors``: their modules' outputs on small seeded inputs with seeded
weights (subdivision, Steiner frames, the ResNet-18 encoder, the two view-fusion layers, the Point
Transformer encoder on 4,096 points), which the project's network must reproduce.

Builds THEIR ``models.model.Model`` with THEIR config (``configs/default.yaml`` merged with
``exps/exp_thuman2.0_view3.yaml`` by their ``configs.make_cfg``) on the meta device and writes
``assets/published-formats/lifegom.json.gz`` (component ``network``: ``torch.load(iter_N.pt)["network"]``,
which ``train.py`` saves as ``{"iter", "network": model.state_dict(), "optimizer"}``).

Their code imports CUDA-only or absent packages; the shims below exist only inside this generator and add no
parameters: einops (its one ``repeat`` call), pytorch3d, nvdiffrast,
diff_gaussian_rasterization (a parameter-free rasteriser module),
``pointops_cuda`` (their ``models/nets/pointops.py`` is replaced by a CPU version with the same functions),
and torchvision's ``resnet18`` (torchvision does not import beside this project's CPU torch build; the shim
is torchvision's ResNet-18 layout: conv1/bn1/layer1..4 of BasicBlocks with downsample.0/1). ``.cuda()`` is a
no-op while their model is built, and
``torch.tensor(..., device='cuda')`` (a constant in their ``utils/geom_util.py``) lands on the CPU. The canonical mesh they take (``canonical_joints.pkl`` of THuman2.0, an
SMPL-X body) enters the state dict only through its vertex count (``vertex_embed``: 10475 × 1152); the faces
passed here are a stand-in, as no face array shapes any parameter.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import types
from pathlib import Path

import numpy as np
import torch
from torch import nn

from training.published_formats import commit_of

SMPLX_VERTICES = 10475  # SMPL-X v1.1 (the template of their THuman2.0 canonical_joints.pkl)
SMPLX_JOINTS = 55
CONFIG = "exps/exp_thuman2.0_view3.yaml"


# --- shims for packages their code imports ----------------------------------------------------------------

def _resnet18(weights=None, progress=False):
    """torchvision's ResNet-18 module layout (names and shapes), random weights."""
    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            idt = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + idt)

    m = nn.Module()
    m.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
    m.bn1 = nn.BatchNorm2d(64)
    m.relu = nn.ReLU(inplace=True)
    m.maxpool = nn.MaxPool2d(3, 2, 1)
    widths, cin = (64, 128, 256, 512), 64
    for i, w in enumerate(widths):
        stride = 1 if i == 0 else 2
        setattr(m, f"layer{i + 1}", nn.Sequential(BasicBlock(cin, w, stride), BasicBlock(w, w, 1)))
        cin = w
    return m


def _cpu_pointops() -> types.ModuleType:
    """Their ``models/nets/pointops.py`` API on the CPU (B = 1 batch per call, as their reconstructor uses it)."""
    mod = types.ModuleType("models.nets.pointops")

    def knnquery(nsample, xyz, new_xyz, offset, new_offset):
        new_xyz = xyz if new_xyz is None else new_xyz
        kk = min(nsample, len(xyz))  # spare slots: point 0 at 1e5, as the CUDA kernel initialises them
        dist, idx = torch.cdist(new_xyz, xyz).topk(kk, dim=1, largest=False)
        idx = torch.cat([idx, idx.new_zeros(len(idx), nsample - kk)], 1)
        dist = torch.cat([dist, dist.new_full((len(dist), nsample - kk), 1e5)], 1)
        return idx.int(), dist

    def furthestsampling(xyz, offset, new_offset, stride):
        n = xyz.shape[0]
        m = n // stride
        idx = torch.zeros(m, dtype=torch.long)
        dist = torch.full((n,), 1e10, dtype=xyz.dtype)
        last = 0
        for i in range(1, m):
            dist = torch.minimum(dist, ((xyz - xyz[last]) ** 2).sum(1))
            last = int(dist.argmax())
            idx[i] = last
        return idx.int()

    def queryandgroup(nsample, xyz, new_xyz, feat, idx, offset, new_offset, use_xyz=True):
        new_xyz = xyz if new_xyz is None else new_xyz
        if idx is None:
            idx, _ = knnquery(nsample, xyz, new_xyz, offset, new_offset)
        m, c = new_xyz.shape[0], feat.shape[1]
        grouped_xyz = xyz[idx.view(-1).long(), :].view(m, nsample, 3) - new_xyz.unsqueeze(1)
        grouped_feat = feat[idx.view(-1).long(), :].view(m, nsample, c)
        return torch.cat((grouped_xyz, grouped_feat), -1) if use_xyz else grouped_feat

    def interpolation(xyz, new_xyz, feat, offset, new_offset, k=3):
        idx, dist = knnquery(k, xyz, new_xyz, offset, new_offset)
        w = 1.0 / (dist + 1e-8)
        w = w / w.sum(1, keepdim=True)
        return sum(feat[idx[:, i].long(), :] * w[:, i:i + 1] for i in range(k))

    mod.knnquery, mod.furthestsampling = knnquery, furthestsampling
    mod.queryandgroup, mod.interpolation = queryandgroup, interpolation
    return mod


def _einops_repeat(x, pattern, **sizes):
    """The one einops call their code makes: ``repeat(idx, "N K -> N K D", D=D)``."""
    if pattern.replace(" ", "") != "NK->NKD":
        raise RuntimeError(f"einops shim: unsupported pattern {pattern!r}")
    return x[..., None].expand(*x.shape, sizes["D"])


def _stub(name: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    return mod


def _unavailable(*_a, **_k):
    raise RuntimeError("a shimmed CUDA-only function was called")


class _Rasterizer(nn.Module):  # diff_gaussian_rasterization.GaussianRasterizer: no parameters
    def __init__(self, raster_settings=None):
        super().__init__()
        self.raster_settings = raster_settings


def shims() -> dict[str, types.ModuleType]:
    tv_models = _stub("torchvision.models", resnet18=_resnet18,
                      ResNet18_Weights=types.SimpleNamespace(DEFAULT=None))
    p3d = {n: _stub(n) for n in ("pytorch3d", "pytorch3d.transforms", "pytorch3d.transforms.so3",
                                  "pytorch3d.renderer", "pytorch3d.structures", "pytorch3d.io", "pytorch3d.loss")}
    p3d["pytorch3d.transforms.so3"].__dict__.update(so3_exp_map=_unavailable, so3_log_map=_unavailable)
    p3d["pytorch3d.renderer"].__dict__.update({k: _unavailable for k in (
        "FoVOrthographicCameras", "RasterizationSettings", "MeshRasterizer", "MeshRenderer")})
    p3d["pytorch3d.structures"].Meshes = _unavailable
    p3d["pytorch3d.io"].save_obj = _unavailable
    p3d["pytorch3d.loss"].mesh_laplacian_smoothing = _unavailable
    einops = _stub("einops", repeat=_einops_repeat)
    nvdr_torch = _stub("nvdiffrast.torch", RasterizeCudaContext=lambda device=None: None, rasterize=_unavailable)
    return {
        "torchvision": _stub("torchvision", models=tv_models, transforms=_stub("torchvision.transforms")),
        "torchvision.models": tv_models, "torchvision.transforms": _stub("torchvision.transforms"),
        **p3d, "nvdiffrast": _stub("nvdiffrast", torch=nvdr_torch), "nvdiffrast.torch": nvdr_torch,
        "diff_gaussian_rasterization": _stub("diff_gaussian_rasterization", GaussianRasterizer=_Rasterizer,
                                             GaussianRasterizationSettings=_unavailable),
        "einops": einops, "pointops_cuda": _stub("pointops_cuda"), "models.nets.pointops": _cpu_pointops(),
    }


@contextlib.contextmanager
def authors_code(code: Path):
    """Their repository importable (``models``, ``configs``, ``utils``), with the shims, then removed again."""
    code = Path(code).resolve()
    saved_path, saved_cuda, saved_tensor = list(sys.path), torch.Tensor.cuda, torch.tensor
    before = set(sys.modules)
    sys.modules.update(shims())
    sys.path.insert(0, str(code))
    torch.Tensor.cuda = lambda self, *a, **k: self  # their constructors call .cuda() on index tensors

    def tensor(*a, **k):  # utils/geom_util.py makes a constant on device='cuda' at import
        if k.get("device") == "cuda":
            k["device"] = "cpu"
        return saved_tensor(*a, **k)
    torch.tensor = tensor
    try:
        yield code
    finally:
        sys.path[:] = saved_path
        torch.Tensor.cuda, torch.tensor = saved_cuda, saved_tensor
        for name in set(sys.modules) - before:
            del sys.modules[name]


def their_config(code: Path, config: str = CONFIG):
    import os

    from configs import make_cfg  # theirs

    cwd = os.getcwd()
    os.chdir(code)  # make_cfg reads configs/default.yaml relative to their root
    try:
        return make_cfg(config)
    finally:
        os.chdir(cwd)


def build_their_model(code: Path, config: str = CONFIG, n_vertices: int = SMPLX_VERTICES,
                      device: str = "meta"):
    """(their Model, their cfg); call inside :func:`authors_code`."""
    from models.model import Model  # theirs
    from models.nets.point_transformer import PointTransformerEnc  # theirs

    cfg = their_config(code, config)
    faces = np.array([[0, 1, 2], [0, 2, 3]], dtype=np.int64)  # stand-in: faces shape no parameter
    canonical_info = {"faces": faces, "canonical_lbs_weights": np.zeros((n_vertices, SMPLX_JOINTS), np.float32)}
    PointTransformerEnc.load_pretrained_weight = lambda self, path: None  # the checkpoint holds these weights
    with torch.device(device):
        model = Model(cfg.model, canonical_info)
    return model, cfg


def seeded_(module: nn.Module, seed: int = 0) -> nn.Module:
    """Deterministic random weights by sorted state-dict name (the same names give the same values on both
    sides): matrices ~ N(0, 1/fan_in), norm scales ~ 1 ± 0.1, running variances in [0.5, 1.5), the rest ~ N(0, 0.05²)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in sorted(module.state_dict().items()):
            if not t.is_floating_point():
                continue
            if name.endswith("running_var"):
                t.copy_(0.5 + torch.rand(t.shape, generator=g))
            elif t.dim() >= 2:
                t.copy_(torch.randn(t.shape, generator=g) / float(np.prod(t.shape[1:])) ** 0.5)
            elif name.endswith("weight"):
                t.copy_(1 + 0.1 * torch.randn(t.shape, generator=g))
            elif name in ("mean", "std"):  # the encoder's ImageNet constants stay
                continue
            else:
                t.copy_(0.05 * torch.randn(t.shape, generator=g))
    module.eval()  # (their Resnet18Encoder.train returns None)
    return module


def reference_inputs() -> dict[str, torch.Tensor]:
    """The small inputs the reference outputs are computed on (seeded; the test makes the same)."""
    import trimesh

    g = torch.Generator().manual_seed(1)
    sphere = trimesh.creation.icosphere(subdivisions=1)
    return {
        "mesh_faces": torch.from_numpy(np.asarray(sphere.faces, dtype=np.int64)),
        "triangles": torch.randn(64, 3, 3, generator=g),
        "images": torch.rand(1, 2, 32, 24, 3, generator=g),
        "view_feats": torch.randn(20, 3, 1152, generator=g),
        "vertex_embed": torch.randn(20, 1152, generator=g),
        "points": torch.rand(4096, 3, generator=g),
        "point_feats": torch.randn(4096, 2304, generator=g) * 0.5,
    }


def reference_outputs(code: Path) -> dict[str, torch.Tensor]:
    """Their modules' outputs on :func:`reference_inputs` with :func:`seeded_` weights; inside authors_code."""
    from models.model import get_transformation_from_triangle_steiner
    from models.modules.img_encoder import Resnet18Encoder
    from models.modules.reconstructor import EncoderLayer, subdivide
    from models.nets.point_transformer import pointtransformer_enc_repro

    inp = reference_inputs()
    out = {}
    faces, interp_points, interp_weights, _ = subdivide(inp["mesh_faces"].numpy(), 2, 42)
    out["subdivide.faces"] = torch.from_numpy(np.asarray(faces, dtype=np.int64))
    out["subdivide.interp_points"] = torch.from_numpy(interp_points)
    out["subdivide.interp_weights"] = torch.from_numpy(interp_weights)
    out["steiner"] = get_transformation_from_triangle_steiner(inp["triangles"])
    with torch.no_grad():
        enc = seeded_(Resnet18Encoder(types.SimpleNamespace(rgb_embed=True)), 2)
        for i, f in enumerate(enc(inp["images"], None)):
            out[f"encoder.{i}"] = f[0]
        fuse = seeded_(nn.Sequential(EncoderLayer(1152, 6, 1152, 1152), EncoderLayer(1152, 6, 1152, 1152)), 3)
        x = fuse[0](inp["view_feats"], inp["view_feats"], inp["view_feats"])
        out["multiview_embed"] = fuse[1](inp["vertex_embed"][:, None], x, x)[:, 0]
        pt = seeded_(pointtransformer_enc_repro(c=2307), 4)
        o = torch.tensor([len(inp["points"])], dtype=torch.int32)
        out["gom_encoder"] = pt((inp["points"], inp["point_feats"], o))
    return {k: v.contiguous().float() if v.is_floating_point() else v.contiguous() for k, v in out.items()}



def main(argv=None) -> None:
    from backends.common.published_formats import ASSETS, PublishedFormat, shapes_of, write_fixture

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--authors-code", required=True, type=Path, help="a checkout of github.com/wenj/LIFe-GoM")
    ap.add_argument("--commit", default=None, help="their commit, when DIR is not a git checkout")
    ap.add_argument("--out", type=Path, default=ASSETS)
    args = ap.parse_args(argv)
    with authors_code(args.authors_code) as code:
        model, cfg = build_their_model(code)
        state = shapes_of(model.state_dict())
        rec = cfg.model.reconstructor
        source = (f"wenj/LIFe-GoM@{args.commit or commit_of(code)}: models/model.py Model (img_encoder "
                  f"models/modules/img_encoder.py Resnet18Encoder, reconstructor models/modules/reconstructor.py "
                  f"Reconstructor, renderer models/modules/renderer.py Renderer), config {CONFIG} over "
                  f"configs/default.yaml (img_size {list(cfg.img_size)}, use_smplx {cfg.use_smplx}, "
                  f"n_input_frames {cfg.n_input_frames}, img_feat_dim {rec.img_feat_dim}, n_subdivide "
                  f"{rec.n_subdivide}, n_iters {rec.n_iters}, rgb_embed {cfg.model.img_encoder.rgb_embed})")
    notes = ("Checkpoint: log/exp_thuman2.0_view3/checkpoints/iter_<N>.pt (inference.py loads the highest N), "
             "torch.save({'iter', 'network': Model.state_dict(), 'optimizer'}) by train.py; published at "
             "https://uofi.box.com/s/gi8sv875hard3eopjrmly8yxx2r1w7k8 (README 'Inference'). "
             f"vertex_embed's first dim is the canonical mesh's vertex count (SMPL-X: {SMPLX_VERTICES}); "
             "the face heads' input is img_feat_dim x n_input_frames + 96 (3 views: 3552; the view5 config: 5856). "
             "Shims in the generator: see training/published_formats/lifegom.py.")
    path = write_fixture(PublishedFormat("lifegom", source, {"network": state}, notes), args.out)
    print(f"wrote {path}: {len(state)} tensors, {sum(int(np.prod(s)) for s in state.values()):,} values")
    from safetensors.torch import save_file

    with authors_code(args.authors_code) as code:
        ref = reference_outputs(code)
    ref_path = args.out / "lifegom.forward.safetensors"
    save_file(ref, str(ref_path), metadata={"source": source.split(":")[0] + ": subdivide, "
                                            "get_transformation_from_triangle_steiner, Resnet18Encoder, "
                                            "EncoderLayer x2, pointtransformer_enc_repro(c=2307); seeded_ weights"})
    print(f"wrote {ref_path}: {', '.join(f'{k} {tuple(v.shape)}' for k, v in ref.items())}")


if __name__ == "__main__":
    main()
