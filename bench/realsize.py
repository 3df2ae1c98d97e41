"""What a real model costs: each published model once at its published resolution, random weights, this CPU.

The architecture and the code path cost the time, not the weights' values, so every model is built from
its published config (``assets/published-formats/configs/<repo>``, or the capability's ``published.py``)
on the meta device and materialised with small random normal values (not ``torch.empty``: denormals or
NaN would distort the timing; denormals are flushed too). Each model runs in a process of its own, so its
peak resident memory (``ru_maxrss`` of that process: building, materialising and the timed call) is its
own. Through the project's own code where it has one: the 3D Layout pipeline's ``predict_noise`` (UNet +
ControlNet, CFG batch 2, Build-A-Scene's attention processors), the Text in Image text-layer processors
on the SDXL / SD3 / IF denoisers, the Counterfactual ``I2SBNetwork`` and ``ImageNetNormalized`` ResNet-50,
the Video Depth RoPE UNet, and a whole LIFe-GoM reconstruction through the Avatar service
(``backends.avatar.published.full_size_run``). SMPL-X is a body model, not a network: not timed. Text
encoders and VAEs are not timed (each unit says what was). Every cheap model is warmed up once before the
timed call; the large ones are timed on their first call.

Besides, each capability's ``published.py`` says what its loader takes at full size; it is compared
with the fixture read from the authors' code (``assets/published-formats``) and the models that match
are listed. No measurement here is a user action: random weights at full size are no model a user runs
(LIFe-GoM's run is ``backends.avatar.published.full_size_run``, the service's reconstruction on a
checkpoint it writes). Writes ``bench/results/realsize.json`` (``--quick``: ``realsize-quick.json``, the models
of up to ~4 GB of fp32 weights: ``resnet50-imagenet``, ``i2sb-imagenet-freeform``, ``sd15``).

    python -m bench.realsize [--quick] [--only ID ...] [--merge] [--downscale D] [--out PATH]
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.report import RESULTS, markdown_table

ROOT = Path(__file__).resolve().parents[1]
MAX_GB = 18.0  # no model's weights may need more (fp32, or bf16 where the unit says so)
KEYS = ("published_formats_checked", "published_formats_total", "full_size_cpu", "avatar_published_checkpoint_loads")


# --- published formats ------------------------------------------------------------------------------

def real_model_ids() -> list[str]:
    """Registry models that are real published ones: on the hub or a local file, not trained or shipped here."""
    from backends.common.registry import default_registry

    return [s.id for s in default_registry() if s.source in ("hf", "local")]


def check_formats(only: set[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """Model ids whose loader's full-size names/shapes match the authors' fixture (of ``only`` when given);
    a status line for each."""
    from backends.common.published_formats import compare_format, fixture_path, matches, read_fixture

    checked, status = [], {}
    from backends import CAPABILITIES

    for cap in CAPABILITIES:  # those with a published.py (PUBLISHED_MODELS); the others are skipped
        name = f"backends.{cap}.published"
        try:
            module = importlib.import_module(name)
            models = tuple(module.PUBLISHED_MODELS)
        except ModuleNotFoundError as e:
            if e.name != name:
                print(f"{name}: cannot import ({e})")
            continue
        except Exception as e:  # a module being written: say why, check the rest
            print(f"{name}: cannot import ({e.__class__.__name__}: {e})")
            continue
        for model_id in models:
            if only is not None and model_id not in only:
                continue
            if not fixture_path(model_id).is_file():
                status[model_id] = "no fixture from the authors' code"
                continue
            try:
                published, expected = read_fixture(model_id), module.expected_format(model_id)
            except Exception as e:
                status[model_id] = f"check failed: {e.__class__.__name__}: {e}"
                continue
            if matches(published, expected):
                checked.append(model_id)
                status[model_id] = f"matches ({published.count()} tensors)"
            else:
                bad = {c: m.summary(2) for c, m in compare_format(published, expected).items() if m}
                status[model_id] = "differs: " + "; ".join(f"{c}: {s}" for c, s in bad.items())
    return sorted(checked), status


def avatar_checkpoint_loads() -> bool:
    try:
        from backends.avatar.published import published_checkpoint_loads
    except Exception as e:
        print(f"avatar_published_checkpoint_loads: false (backends.avatar.published: {e.__class__.__name__}: {e})")
        return False
    try:
        ok = bool(published_checkpoint_loads())
    except Exception as e:
        print(f"avatar_published_checkpoint_loads: false (it raised {e.__class__.__name__}: {e})")
        return False
    print(f"avatar_published_checkpoint_loads: {str(ok).lower()}")
    return ok


# --- random full-size models ------------------------------------------------------------------------

def published_folder(model_id: str, subfolder: str = "") -> Path:
    """Where a published repo's ``config.json`` is committed (``assets/published-formats/configs/<repo>/``)."""
    from backends.common.published_formats import ASSETS
    from backends.common.registry import default_registry

    folder = ASSETS / "configs" / default_registry().get(model_id).location / subfolder
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"no published config {(folder / 'config.json').relative_to(ROOT)}")
    return folder


def from_published(cls, model_id: str, subfolder: str = ""):
    """A diffusers model from its published config, read as ``from_pretrained`` reads it (never downloaded)."""
    config, unused = cls.load_config(published_folder(model_id, subfolder), return_unused_kwargs=True)
    return cls.from_config(config, **unused)


def random_model(build: Callable, dtype=None, std: float = 0.02, seed: int = 0):
    """``build()`` with its parameters on the meta device, then materialised as N(0, std²) values.

    Buffers are built for real (position ids, noise levels…); tied parameters stay tied.
    """
    import torch
    from accelerate import init_empty_weights

    with init_empty_weights(include_buffers=False):
        model = build()
    dtype = dtype or torch.float32
    gb = sum(p.numel() for p in model.parameters()) * torch.finfo(dtype).bits / 8 / 1e9
    if gb > MAX_GB:
        raise MemoryError(f"{gb:.1f} GB of weights in {dtype}: over the {MAX_GB:.0f} GB this bench allows")
    gen = torch.Generator().manual_seed(seed)
    done: dict[int, torch.nn.Parameter] = {}
    for module in model.modules():
        for name, p in list(module._parameters.items()):
            if p is None or not p.is_meta:
                continue
            if id(p) not in done:
                value = torch.empty(p.shape, dtype=dtype).normal_(0.0, std, generator=gen)
                done[id(p)] = torch.nn.Parameter(value, requires_grad=p.requires_grad)
            module._parameters[name] = done[id(p)]
        for name, b in list(module._buffers.items()):
            if b is not None and b.is_floating_point():
                module._buffers[name] = b.to(dtype)
    return model.eval()


def timed(step: Callable, warmup: bool) -> float:
    """Seconds of one call of ``step`` (after one untimed call when ``warmup``)."""
    if warmup:
        step()
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


# --- one function per model: (side divisor d) -> (seconds, what was timed) --------------------------
# d = 1 is the published size; ``--downscale`` divides every side (development, tests).

def _sd15_pipeline(controlnet: bool):
    """The 3D Layout pipeline with SD 1.5's UNet and VAE (and the depth ControlNet), random weights."""
    from diffusers import AutoencoderKL, ControlNetModel, DDIMScheduler, UNet2DConditionModel

    from backends.layout3d.pipeline import BuildAScenePipeline

    unet = random_model(lambda: from_published(UNet2DConditionModel, "sd15", "unet"))
    vae = random_model(lambda: from_published(AutoencoderKL, "sd15", "vae"))
    cn = random_model(lambda: from_published(ControlNetModel, "controlnet-sd15-depth")) if controlnet else None
    sched = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
                          set_alpha_to_one=False)  # as layout3d.loading builds it
    pipe = BuildAScenePipeline(vae, None, None, unet, sched, controlnet=cn)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def _layout_step(pipe, size: int, steps: int = 20) -> Callable:
    """One denoising step as ``BuildAScenePipeline.__call__`` runs it in a first stage (plain attention,
    self-attention K/V and cross-attention maps recorded for the next stage), CFG batch 2."""
    import torch

    from backends.layout3d.attention import DSAConfig

    pipe.scheduler.set_timesteps(steps)
    t = pipe.scheduler.timesteps[-1]
    latents = torch.randn(1, 4, size // 8, size // 8)
    depth = torch.rand(1, 1, size, size)
    embeds = torch.randn(2, 77, pipe.unet.config.cross_attention_dim)
    c = pipe.controller

    def step():
        c.reset(mode="plain", config=DSAConfig(), num_steps=steps, latent_hw=(size // 8, size // 8))
        c.record_kv, c.record_maps, c.map_tokens, c.step = {}, {}, 256, steps - 1
        if pipe.controlnet is not None:
            return pipe.predict_noise(latents, t, embeds, depth, 7.5)
        with torch.no_grad():
            x = pipe.scheduler.scale_model_input(torch.cat([latents, latents]), t)
            return pipe.unet(x, t, encoder_hidden_states=embeds).sample
    return step


def measure_sd15(d: int):
    return timed(_layout_step(_sd15_pipeline(False), 512 // d), warmup=True), \
        "s/step (UNet, CFG batch 2, 3D Layout's attention processors; text encoder and VAE not timed)"


def measure_controlnet(d: int):
    return timed(_layout_step(_sd15_pipeline(True), 512 // d), warmup=True), \
        "s/step (ControlNet + SD 1.5 UNet: 3D Layout's predict_noise, CFG batch 2)"


def measure_loose_control(d: int):
    """The LooseControl LoRA merged into the depth ControlNet by the project's loader (the reference's
    attention-processor LoRA with the fixture's names and shapes), then the same step."""
    from backends.layout3d.loading import merge_attn_procs_lora

    pipe = _sd15_pipeline(True)
    merged = merge_attn_procs_lora(pipe.controlnet, random_lora(pipe.controlnet))
    seconds = timed(_layout_step(pipe, 512 // d), warmup=True)
    return seconds, (f"s/step (LoRA merged into {merged} ControlNet projections by layout3d.loading, "
                     "so the same network as controlnet-sd15-depth; CFG batch 2)")


def random_lora(model) -> dict:
    """An attention-processor LoRA state dict for ``model``: the fixture's names/shapes when there is one."""
    import torch

    from backends.common.published_formats import fixture_path, read_fixture

    gen = torch.Generator().manual_seed(1)
    if fixture_path("loose-control-3dbox").is_file():
        comps = read_fixture("loose-control-3dbox").components
        shapes = {k: s for names in comps.values() for k, s in names.items()}
    else:  # rank 4 on every attention projection
        shapes, rank = {}, 4
        for name, m in model.named_modules():
            if name.endswith(("attn1", "attn2")):
                for proj, lin in (("to_q", m.to_q), ("to_k", m.to_k), ("to_v", m.to_v), ("to_out", m.to_out[0])):
                    shapes[f"{name}.processor.{proj}_lora.down.weight"] = (rank, lin.in_features)
                    shapes[f"{name}.processor.{proj}_lora.up.weight"] = (lin.out_features, rank)
    return {k: torch.randn(tuple(s), generator=gen) * 0.02 for k, s in shapes.items()}


def _textedit_denoiser(cls_name: str, model_id: str, subfolder: str, dtype=None):
    """A published denoiser with the Text in Image text-layer processors installed (plain mode)."""
    import diffusers

    from backends.textedit.attention import PatchController, install

    net = random_model(lambda: from_published(getattr(diffusers, cls_name), model_id, subfolder), dtype)
    install(net, PatchController())
    return net


def measure_sdxl(d: int):
    import torch

    unet = _textedit_denoiser("UNet2DConditionModel", "sdxl-base", "unet")
    x, emb = torch.randn(2, 4, 128 // d, 128 // d), torch.randn(2, 77, 2048)
    cond = {"text_embeds": torch.randn(2, 1280), "time_ids": torch.tensor([[1024.0, 1024, 0, 0, 1024, 1024]] * 2)}
    with torch.no_grad():
        seconds = timed(lambda: unet(x, 999, encoder_hidden_states=emb, added_cond_kwargs=cond).sample, warmup=False)
    return seconds, "s/step (UNet, CFG batch 2, first call; CLIP text encoders and VAE not timed)"


def measure_sd3(d: int):
    import torch

    net = _textedit_denoiser("SD3Transformer2DModel", "sd3-medium", "transformer")
    x, emb, pooled = torch.randn(2, 16, 128 // d, 128 // d), torch.randn(2, 333, 4096), torch.randn(2, 2048)
    t = torch.tensor([999.0, 999.0])
    with torch.no_grad():
        seconds = timed(lambda: net(hidden_states=x, timestep=t, encoder_hidden_states=emb,
                                    pooled_projections=pooled).sample, warmup=False)
    return seconds, ("s/step (MMDiT transformer, CFG batch 2, 333 text tokens, first call; CLIP-L/G and "
                     "T5-XXL text encoders not timed: T5-XXL alone is ~19 GB in fp32; VAE not timed)")


def measure_if(d: int):
    """IF-I-XL's UNet has 4.3 B parameters: 17 GB in fp32, which with activations would not stay under 18 GB."""
    import torch

    bf16 = torch.bfloat16
    unet = _textedit_denoiser("UNet2DConditionModel", "if-stage1", "unet", bf16)
    x, emb = torch.randn(2, 3, 64 // d, 64 // d, dtype=bf16), torch.randn(2, 77, 4096, dtype=bf16)
    with torch.no_grad():
        seconds = timed(lambda: unet(x, 999, encoder_hidden_states=emb).sample, warmup=False)
    return seconds, ("s/step (stage I UNet in bf16: fp32 would need ~17 GB for the weights alone; CFG batch 2, "
                     "first call; T5-XXL text encoder (~19 GB in fp32) not timed)")


def measure_i2sb(d: int):
    """One network function evaluation as RCSB's sampler makes it: the bridge forward with gradients, then
    the backward of the Tweedie guidance through it (the classifier's part is ``resnet50-imagenet``)."""
    import torch

    from backends.counterfactual.adm import ADMUNet
    from backends.counterfactual.i2sb_checkpoint import I2SBNetwork

    net = random_model(lambda: I2SBNetwork(ADMUNet()))  # ADMUNet's defaults: I2SB's ImageNet 256² network
    x = torch.randn(1, 3, 256 // d, 256 // d)

    def nfe():
        xt = x.clone().requires_grad_(True)
        eps = net(xt, 500)
        return torch.autograd.grad(eps.square().sum(), xt)[0]
    return timed(nfe, warmup=True), "s/NFE (bridge forward + backward, as RCSB's guided step; batch 1)"


def measure_resnet50(d: int):
    """The classifier guidance's part of an RCSB step: forward and backward to the input image."""
    import torch

    from backends.counterfactual.loading import ImageNetNormalized

    try:
        from backends.counterfactual.resnet import resnet50  # the project's own, torchvision's names
    except ImportError:
        try:
            from torchvision.models import resnet50
        except ImportError:
            raise RuntimeError("no ResNet-50: backends.counterfactual.resnet is missing and torchvision is "
                               "not installed") from None
    model = random_model(lambda: ImageNetNormalized(resnet50()))
    x = torch.rand(1, 3, 256 // d, 256 // d)

    def step():
        xt = x.clone().requires_grad_(True)
        logp = torch.log_softmax(model(xt), 1)
        return torch.autograd.grad(logp[:, 1].sum(), xt)[0]
    return timed(step, warmup=True), "s/forward+backward (RCSB's classifier guidance, batch 1)"


DAV_SIZE = (1024, 576)  # run_infer.py: --max_resolution 1024, then a crop to multiples of 64 (16:9: 1024×576)
DAV_FRAMES = 2  # a short window of the 32 key frames the reference infers jointly


def measure_depth_any_video(d: int):
    import torch

    from backends.videodepth.networks import UNetSpatioTemporalRopeConditionModel
    from backends.videodepth.published import PUBLISHED_CONFIGS

    unet = random_model(lambda: UNetSpatioTemporalRopeConditionModel(**PUBLISHED_CONFIGS["unet"]))
    w, h = (s // d for s in DAV_SIZE)
    x = torch.randn(1, DAV_FRAMES, unet.config.in_channels, h // 8, w // 8)
    pos = torch.arange(DAV_FRAMES).reshape(1, -1)
    with torch.no_grad():
        seconds = timed(lambda: unet(x, 500.0, position_ids=pos).sample, warmup=False) / DAV_FRAMES
    return seconds, (f"s/frame per step (RoPE UNet on a window of {DAV_FRAMES} frames, divided; the reference "
                     "infers 32 key frames jointly, 3 steps by default; first call; VAE not timed)")


def measure_lifegom(d: int, iterations: int = 3):
    """One avatar through the Avatar service with the published network (``backends.avatar.published.
    full_size_run``): 3 views at 1024², 2 subdivisions (334,528 Gaussians), random weights saved in the
    authors' checkpoint format and read back through the registry. SMPL-X's licence forbids shipping it, so
    the body is a synthetic mesh of SMPL-X's sizes (10,475 vertices). The paper runs 3 feedback iterations."""
    try:
        from backends.avatar.published import full_size_run
    except ImportError as e:
        raise RuntimeError(f"backends.avatar.published offers no way to run the published network ({e})") from None
    run = full_size_run(size=1024 // d, iterations=iterations)
    return run["seconds"], (f"s/avatar (the service's reconstruction, {iterations} feedback iteration(s), "
                            f"{run['gaussians']:,} Gaussians; loading {run['load_s']:.1f} s and a {run['render_size']}² "
                            f"render {run['render_ms'] / 1000:.1f} s not included; first call)")


@dataclass(frozen=True)
class Measure:
    model_id: str
    size: tuple[int, int]  # published width, height
    measure: Callable[[int], tuple[float, str]]
    quick: bool = False  # in --quick: at most ~4 GB of fp32 weights

    def resolution(self, d: int = 1) -> str:
        return f"{self.size[0] // d}×{self.size[1] // d}"


MEASURES = {m.model_id: m for m in (
    Measure("resnet50-imagenet", (256, 256), measure_resnet50, quick=True),
    Measure("i2sb-imagenet-freeform", (256, 256), measure_i2sb, quick=True),
    Measure("sd15", (512, 512), measure_sd15, quick=True),
    Measure("controlnet-sd15-depth", (512, 512), measure_controlnet),
    Measure("loose-control-3dbox", (512, 512), measure_loose_control),
    Measure("if-stage1", (64, 64), measure_if),
    Measure("sdxl-base", (1024, 1024), measure_sdxl),
    Measure("depth-any-video", DAV_SIZE, measure_depth_any_video),
    Measure("sd3-medium", (1024, 1024), measure_sd3),
    Measure("lifegom", (1024, 1024), measure_lifegom),
)}
NOT_TIMED = {"smplx": "not timed: a body model (posing a mesh), not a network"}


def measure_here(model_id: str, d: int = 1, lifegom_iterations: int = 3) -> dict:
    """In this process: build the model, time it, report the process's peak RSS."""
    import torch

    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    m = MEASURES[model_id]
    seconds, unit = m.measure(d, lifegom_iterations) if model_id == "lifegom" else m.measure(d)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"resolution": m.resolution(d), "seconds": round(seconds, 3), "unit": unit, "peak_rss_mb": round(peak, 1)}


def measure_in_child(model_id: str, d: int, timeout: float, lifegom_iterations: int = 3) -> dict:
    """One model in a fresh process: its peak RSS is its own."""
    cmd = [sys.executable, "-m", "bench.realsize", "--measure", model_id, "--downscale", str(d),
           "--lifegom-iterations", str(lifegom_iterations)]
    started = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    if res.returncode != 0:
        tail = (res.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"exit {res.returncode}: {tail}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"{model_id}: {out['seconds']} {out['unit']} at {out['resolution']}, peak {out['peak_rss_mb']:.0f} MB "
          f"({time.perf_counter() - started:.0f} s in all)", flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="only the models of up to ~4 GB of fp32 weights")
    p.add_argument("--only", nargs="+", metavar="ID", help="time only these models")
    p.add_argument("--out", type=Path, help="results file (default bench/results/realsize[-quick].json)")
    p.add_argument("--downscale", type=int, default=1, metavar="D",
                   help="divide every side by D (a quick look, tests; the JSON's resolution says what ran)")
    p.add_argument("--timeout", type=float, default=900, help="seconds one model may take (default 900)")
    p.add_argument("--lifegom-iterations", type=int, default=3, help="LIFe-GoM feedback iterations (paper: 3)")
    p.add_argument("--merge", action="store_true",
                   help="keep the other models' entries of an existing results file (re-run some models)")
    p.add_argument("--measure", help=argparse.SUPPRESS)  # internal: one model in a fresh process
    args = p.parse_args(argv)
    if args.measure:
        print(json.dumps(measure_here(args.measure, args.downscale, args.lifegom_iterations)))
        return 0
    real = real_model_ids()
    only = set(args.only) if args.only else None
    unknown = sorted((only or set()) - set(real) - set(MEASURES))
    if unknown:
        p.error(f"not a published model of the registry: {unknown}; choose from {sorted(real)}")
    chosen = [i for i in MEASURES if (only is None or i in only) and (not args.quick or MEASURES[i].quick)]

    checked, status = check_formats(only)
    if only is None or "lifegom" in only:
        avatar = avatar_checkpoint_loads()
    else:
        avatar = False
        print("avatar_published_checkpoint_loads: false (not checked: lifegom is not among --only)")
    timings, why = {}, {}
    for model_id in chosen:
        try:
            timings[model_id] = measure_in_child(model_id, args.downscale, args.timeout, args.lifegom_iterations)
        except Exception as e:
            why[model_id] = f"not timed: {e}"
            print(f"{model_id}: {why[model_id]}", flush=True)
    for model_id in real:
        if model_id not in timings and model_id not in why:
            why[model_id] = NOT_TIMED.get(model_id, "not run (--quick or --only)" if model_id in MEASURES
                                          else "not timed: no way to run it here yet")
    rows = []
    for model_id in [i for i in real + sorted(set(status) - set(real)) if only is None or i in only]:
        t = timings.get(model_id)
        rows.append([model_id, status.get(model_id, "no published.py entry"),
                     f"{t['seconds']} {t['unit']} at {t['resolution']}" if t else why.get(model_id, "not run"),
                     round(t["peak_rss_mb"]) if t else ""])
    print(markdown_table(["model", "published format (authors' code)", "CPU time", "peak RSS (MB)"], rows))
    out = args.out or RESULTS / ("realsize-quick.json" if args.quick else "realsize.json")
    if args.merge and out.is_file():  # the models not re-run keep what the file says of them
        old = json.loads(out.read_text())
        ran = only if only is not None else set(real)
        checked = sorted(set(checked) | {i for i in old["published_formats_checked"] if i not in ran})
        timings = {**{i: v for i, v in old["full_size_cpu"].items() if i not in timings}, **timings}
        if only is not None and "lifegom" not in only:
            avatar = old["avatar_published_checkpoint_loads"]
    timings = {i: timings[i] for i in MEASURES if i in timings}
    payload = {"published_formats_checked": checked, "published_formats_total": len(real),
               "full_size_cpu": timings, "avatar_published_checkpoint_loads": avatar}
    assert tuple(payload) == KEYS
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"realsize: {len(checked)}/{len(real)} published formats match the authors'; {len(timings)} models timed "
          f"on {torch_threads()} CPU threads; wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


if __name__ == "__main__":
    raise SystemExit(main())
