"""LoRA on the localized layers only, against LoRA on all attention layers and on as many random layers.

As the paper's ``train_text_to_image_lora_sdxl_2L.py`` (``py-xis/t2i``): peft ``LoraConfig`` of rank
4 (alpha = rank, Gaussian init) on ``to_q``/``to_k``/``to_v``/``to_out.0`` of the targeted
attention modules, trained with the denoising loss on images of words (here the synthetic word
renders of ``data.py``, training words only) at equal steps for every target. Before and after,
held-out words are generated and read by OCR. The base model is never changed: training runs on a
copy of the UNet. Adapters are saved as safetensors with their targets in the metadata and load back
onto the same model; a file that is not such an adapter is an ``InputError``.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from backends.common.errors import InputError
from backends.common.imageio import to_uint8
from backends.common.modelbuild import BUILD_LOCK, check_built
from backends.common.pipecopy import for_request
from backends.common.progress import CancelToken, ProgressEvent

from . import service
from .metrics import OcrScores, ocr_scores
from .models import DEFAULT_MODEL
from .ocr import read
from .pipeline import TextEditPipeline
from .requests import (  # noqa: F401 (re-exported)
    MAX_TRAIN_STEPS,
    TARGETS,
    AdapterRequest,
    FinetuneRequest,
    Sampling,
)
from .service import prompt_for

PROJECTIONS = ("to_q", "to_k", "to_v", "to_out.0")
FORMAT = "iclr25-textedit-lora"
DATA_SEED_OFFSET = 50_000_000  # fresh renders of training words, apart from the training set's seeds


@dataclass
class FinetuneResult:
    target: str
    layers: list[str]  # attention modules that got LoRA ("all": every attention module)
    trainable_params: int
    trainable_share: float  # of the denoiser's parameters
    before: OcrScores
    after: OcrScores
    losses: list[float]
    adapter: bytes  # safetensors
    seconds: float
    model: str
    pipeline: TextEditPipeline | None = None  # the tuned copy (server side only)
    eval_words: list[str] | None = None  # the held-out words read before and after


def target_layers(pipe: TextEditPipeline, target: str, localized: list[str], seed: int) -> list[str]:
    """Attention module names to adapt: the localized text layers, every attention module, or random text layers."""
    if target == "localized":
        return [layer.name for layer in pipe.resolve_layers(localized)]
    if target == "all":
        from diffusers.models.attention_processor import Attention

        return [n for n, m in pipe.unet.named_modules() if isinstance(m, Attention)]
    k = len(pipe.resolve_layers(localized))
    others = [layer.name for layer in pipe.layers if layer.name not in set(localized)] or [layer.name for layer in
                                                                                           pipe.layers]
    rng = np.random.default_rng(seed)
    return sorted(rng.choice(others, size=min(k, len(others)), replace=False).tolist())


def lora_config(modules: list[str], rank: int):
    from peft import LoraConfig

    return LoraConfig(r=rank, lora_alpha=rank, init_lora_weights="gaussian",
                      target_modules=[f"{m}.{p}" for m in modules for p in PROJECTIONS])


def copy_pipeline(pipe: TextEditPipeline) -> TextEditPipeline:
    """The same model with its own UNet (and processors): the base pipeline stays untouched."""
    with service.PIPELINE_LOCK:  # no call is patching the shared UNet's processors while it is copied
        unet, scheduler = copy.deepcopy(pipe.unet), copy.deepcopy(pipe.scheduler)
    out = TextEditPipeline(pipe.vae, pipe.text_encoder, pipe.tokenizer, unet, scheduler)
    out.name = pipe.name
    out.set_progress_bar_config(disable=True)
    return out


def evaluate(pipe: TextEditPipeline, request: Sampling, n_words: int, template: str,
             cancel: CancelToken | None = None) -> tuple[OcrScores, list[str]]:
    """Generate ``n_words`` held-out words and read them (rapidocr); ``cancel`` is checked at every
    denoising step (up to 66 words of many steps: a Stop must not wait for them)."""
    from .data import HELD_OUT_WORDS

    def check(pipe_, i, t, tensors):
        if cancel is not None:
            cancel.raise_if_cancelled()
        return {}

    words = list(np.random.default_rng(request.seed).permutation(HELD_OUT_WORDS)[:n_words])
    reads = []
    for w in words:
        img = to_uint8(pipe(prompt_for(template, w), callback_on_step_end=check, **request.pipe_kwargs()).images)[0]
        reads.append(read(img, "rapidocr").text)
    return ocr_scores(reads, words), words


def _batch(pipe: TextEditPipeline, step: int, batch_size: int, seed: int):
    from .data import make_sample
    from .networks import encode_prompts

    samples = [make_sample(DATA_SEED_OFFSET + seed * 100_003 + step * batch_size + i) for i in range(batch_size)]
    x = torch.from_numpy(np.stack([s.image for s in samples])).permute(0, 3, 1, 2).float() / 127.5 - 1
    with torch.no_grad():
        z = pipe.vae.encode(x.to(pipe.vae.device, pipe.vae.dtype)).latent_dist.mean * pipe.vae.config.scaling_factor
        emb = encode_prompts(pipe.tokenizer, pipe.text_encoder, [s.prompt for s in samples])
    return z, emb


def finetune(request: FinetuneRequest, cancel: CancelToken | None = None,
             loaded=None) -> Iterator[ProgressEvent | FinetuneResult]:
    """Train LoRA on the target for ``train_steps``; OCR of held-out words before and after."""
    from peft.utils import get_peft_model_state_dict

    from .networks import build_scheduler, unet_input

    request.validate()
    t0 = time.perf_counter()
    yield ProgressEvent(0.0, f"loading {request.model}")
    base, preset, _ = loaded or service.load_pipeline(request.model)
    localized = request.layers or list(preset.edit_layers)
    modules = target_layers(base, request.target, localized, request.seed)
    pipe = copy_pipeline(base)
    yield ProgressEvent(0.02, f"generating {request.eval_words} held-out words before training")
    before, _ = evaluate(pipe, request, request.eval_words, request.template, cancel)
    torch.manual_seed(request.seed)
    with BUILD_LOCK:  # new modules: never while another thread builds a model under empty weights
        pipe.unet.add_adapter(lora_config(modules, request.rank))
        check_built(pipe.unet, "the LoRA adapter")
    params = [p for p in pipe.unet.parameters() if p.requires_grad]
    trainable = sum(p.numel() for p in params)
    total = sum(p.numel() for n, p in pipe.unet.named_parameters() if "lora_" not in n)
    opt = torch.optim.AdamW(params, lr=request.learning_rate)
    sched = build_scheduler("ddpm")
    gen = torch.Generator().manual_seed(request.seed)
    losses = []
    for step in range(int(request.train_steps)):
        if cancel is not None:
            cancel.raise_if_cancelled()
        z, emb = _batch(pipe, step, int(request.batch_size), request.seed)
        noise = torch.randn(z.shape, generator=gen)
        t = torch.randint(0, sched.config.num_train_timesteps, (z.shape[0],), generator=gen)
        with torch.enable_grad():
            pred = pipe.unet(unet_input(pipe.unet, sched.add_noise(z, noise, t)), t, encoder_hidden_states=emb).sample
            loss = torch.nn.functional.mse_loss(pred.float(), noise.float())
            opt.zero_grad()
            loss.backward()
            opt.step()
        losses.append(float(loss.detach()))
        yield ProgressEvent(0.1 + 0.7 * (step + 1) / request.train_steps,
                            f"LoRA ({request.target}) step {step + 1}/{request.train_steps}, loss {losses[-1]:.4f}")
    yield ProgressEvent(0.82, "generating held-out words after training")
    after, words = evaluate(pipe, request, request.eval_words, request.template, cancel)
    adapter = save_adapter_bytes(get_peft_model_state_dict(pipe.unet), modules, request)
    yield FinetuneResult(request.target, modules, trainable, trainable / total, before, after, losses, adapter,
                         time.perf_counter() - t0, request.model, pipe, words)


def save_adapter_bytes(state: dict[str, torch.Tensor], modules: list[str], request: FinetuneRequest) -> bytes:
    from safetensors.torch import save

    meta = {"format": FORMAT, "model": request.model, "target": request.target, "rank": str(request.rank),
            "modules": json.dumps(modules)}
    return save({k: v.detach().contiguous().cpu() for k, v in state.items()}, metadata=meta)


def load_adapter(data: bytes, model: str = DEFAULT_MODEL) -> tuple[TextEditPipeline, dict]:
    """A copy of ``model``'s pipeline with the adapter in ``data`` (safetensors bytes) applied; and its metadata."""
    from peft.utils import set_peft_model_state_dict
    from safetensors.torch import load

    try:
        state = load(bytes(data))
        size = int.from_bytes(data[:8], "little")  # safetensors: u64 header length, then the JSON header
        meta = json.loads(data[8:8 + size]).get("__metadata__") or {}
    except Exception as e:  # safetensors raises several types for a damaged file
        raise InputError(f"The adapter file could not be read as safetensors ({type(e).__name__}); "
                         "upload a .safetensors adapter saved by the Fine-tune tab.") from None
    if meta.get("format") != FORMAT:
        raise InputError("This safetensors file is not a Text in Image LoRA adapter (its metadata lacks the "
                         f"'{FORMAT}' format tag).")
    if meta.get("model") != model:
        raise InputError(f"This adapter was trained for {meta.get('model')!r}, not {model!r}.")
    try:
        modules, rank = json.loads(meta["modules"]), int(meta["rank"])
    except (KeyError, ValueError, TypeError):
        raise InputError("The adapter's metadata is damaged (modules or rank unreadable).") from None
    base, _, _ = service.load_pipeline(model)
    names = dict(base.unet.named_modules())
    missing = [m for m in modules if m not in names]
    if missing:
        raise InputError(f"The adapter targets layers this model does not have: {', '.join(missing[:3])}.")
    pipe = copy_pipeline(base)
    with BUILD_LOCK:  # new modules: never while another thread builds a model under empty weights
        pipe.unet.add_adapter(lora_config(modules, rank))
        result = set_peft_model_state_dict(pipe.unet, state)
        check_built(pipe.unet, "the LoRA adapter")
    expected = set(get_lora_keys(pipe.unet))
    if result.unexpected_keys or set(state) != expected:
        raise InputError("The adapter's weights do not match its declared layers (damaged or edited file).")
    pipe.unet.requires_grad_(False)
    return pipe, meta


def get_lora_keys(unet) -> list[str]:
    from peft.utils import get_peft_model_state_dict

    return list(get_peft_model_state_dict(unet))



_adapted: dict[str, TextEditPipeline] = {}


def generate_adapted(request: AdapterRequest, cancel: CancelToken | None = None, loaded=None):
    """``service.generate`` of ``request`` on the model with its adapter file (``request.adapter``) applied.

    The adapted copy is kept per adapter (by its sha256, the last four), so repeated calls load it once.
    """
    import hashlib

    from .service import GenerateResult, read_out

    request.validate()
    adapter = request.adapter.read_bytes()
    t0 = time.perf_counter()
    key = hashlib.sha256(adapter).hexdigest()
    if key not in _adapted:
        yield ProgressEvent(0.05, "applying the adapter")
        _adapted[key] = load_adapter(adapter, request.model)[0]
        while len(_adapted) > 4:
            _adapted.pop(next(iter(_adapted)))
    pipe = for_request(_adapted[key])  # its own scheduler: the kept copy may serve another request meanwhile
    _, _, rules = loaded or service.load_pipeline(request.model)
    image = to_uint8(pipe(request.prompt, **request.pipe_kwargs()).images)[0]
    if cancel is not None:
        cancel.raise_if_cancelled()
    yield GenerateResult(image, request.prompt, read_out(image, request.text, rules.ocr_detect), request.model,
                         str(pipe.device), time.perf_counter() - t0)
