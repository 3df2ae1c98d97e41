"""Models are built once per process, one at a time, and a broken one is never kept.

Why: diffusers and transformers build models under accelerate's empty-weights patch, which
replaces ``nn.Module.register_parameter`` for the whole process, so a module that another thread
constructs meanwhile gets its weights on the 'meta' device ("Cannot copy out of meta tensor"). And
the lazy packages (diffusers, transformers) are not safe to import for the first time from two
threads ("cannot import name 'DiffusionPipeline' from 'diffusers'"). So:

* :data:`BUILD_LOCK` (re-entrant: a build may load another model) is held around every model build
  and anything else that constructs modules while others may load (a LoRA injection);
* :func:`preload` imports the heavy packages, resolves the lazy names the suite uses and imports the
  backends, once, under that lock: the app starts it before serving and every handler waits for it;
* :func:`cached_model` turns a build function into a loader that builds under the lock, checks the
  result for meta tensors and keeps it only when it raised nothing and holds none: the next call after
  a failure builds again from scratch.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import logging
import pkgutil
import sys
import threading
import time
import types
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping

from .errors import ModelBuildError

log = logging.getLogger(__name__)

BUILD_LOCK = threading.RLock()

HEAVY_PACKAGES = ("torch", "accelerate", "transformers", "diffusers", "peft")
# names the backends import inside functions: resolved here once, so no thread resolves them first at run time
LAZY_NAMES = {
    "diffusers": ("DiffusionPipeline", "ModelMixin", "ConfigMixin", "AutoencoderKL", "AutoencoderKLTemporalDecoder",
                  "UNet2DModel", "UNet2DConditionModel", "ControlNetModel", "DDIMScheduler", "DDPMScheduler",
                  "FlowMatchEulerDiscreteScheduler"),
    "transformers": ("PreTrainedTokenizerFast", "AutoTokenizer", "CLIPTextConfig", "CLIPTextModel",
                     "AutoModelForCausalLM"),
    "peft": ("LoraConfig",),
}
LAZY_MODULES = ("diffusers.models.attention_processor", "diffusers.utils.torch_utils", "peft.utils",
                "safetensors.torch")

_preloaded: set[str] = set()


def preload(packages: Iterable[str] = ("backends",)) -> float:
    """Import the heavy packages, their lazy names and every module of ``packages`` (once; a no-op after).

    Returns the seconds it took (0 when already done). Held under :data:`BUILD_LOCK`, so a caller
    arriving while another thread preloads waits for it to finish instead of importing alongside.
    """
    wanted = ("<heavy>", *packages)
    if all(p in _preloaded for p in wanted):
        return 0.0
    t0 = time.perf_counter()
    with BUILD_LOCK:
        if "<heavy>" not in _preloaded:
            for name in HEAVY_PACKAGES:
                importlib.import_module(name)
            for package, names in LAZY_NAMES.items():
                module = importlib.import_module(package)
                for name in names:
                    getattr(module, name)
            for name in LAZY_MODULES:
                importlib.import_module(name)
            _preloaded.add("<heavy>")
        for package in packages:
            if package in _preloaded:
                continue
            root = importlib.import_module(package)
            for info in pkgutil.walk_packages(getattr(root, "__path__", []), f"{package}."):
                try:
                    importlib.import_module(info.name)
                except Exception:  # noqa: BLE001 — its own caller meets the error, with its context
                    log.exception("preloading %s failed", info.name)
            _preloaded.add(package)
    seconds = time.perf_counter() - t0
    log.info("heavy packages imported in %.1f s", seconds)
    return seconds


def start_preload(packages: Iterable[str] = ("backends",)) -> threading.Thread:
    """:func:`preload` on a daemon thread (a failure is logged; the next caller of preload retries)."""
    packages = tuple(packages)

    def run():
        try:
            preload(packages)
        except Exception:  # noqa: BLE001
            log.exception("preloading the heavy packages failed")

    thread = threading.Thread(target=run, name="preload-heavy-packages", daemon=True)
    thread.start()
    return thread


_NOT_MODELS = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.ModuleType, functools.partial)


def meta_tensors(obj, depth: int = 5) -> list[str]:
    """Names of the parameters and buffers on the 'meta' device of every ``torch.nn.Module`` reachable
    from ``obj``: itself, a pipeline's components, the fields of a dataclass or an object, the items of a
    tuple, list or dict (``depth`` levels down)."""
    torch = sys.modules.get("torch")
    if torch is None:  # no torch, no module
        return []
    found: list[str] = []
    seen: set[int] = set()

    def visit(x, path: str, level: int) -> None:
        if id(x) in seen or level > depth or x is None or isinstance(x, str | bytes | int | float | bool | type):
            return
        seen.add(id(x))
        if isinstance(x, torch.nn.Module):
            for name, t in [*x.named_parameters(), *x.named_buffers()]:
                if t.is_meta:
                    found.append(f"{path}.{name}" if path else name)
            return
        if torch.is_tensor(x):
            if x.is_meta:
                found.append(path or "tensor")
            return
        if isinstance(x, Mapping):
            items = x.items()
        elif isinstance(x, list | tuple | set | frozenset):
            items = enumerate(x)
        elif dataclasses.is_dataclass(x):
            items = ((f.name, getattr(x, f.name, None)) for f in dataclasses.fields(x))
        elif hasattr(x, "__dict__") and not isinstance(x, _NOT_MODELS):  # a pipeline, a wrapper, a model holder
            items = vars(x).items()
        else:
            return
        for key, value in list(items):
            visit(value, f"{path}.{key}" if path else str(key), level + 1)

    visit(obj, "", 0)
    return found


def check_built(obj, what: str):
    """``obj`` when it holds no meta tensor; ``ModelBuildError`` naming ``what`` and the tensors otherwise."""
    bad = meta_tensors(obj)
    if bad:
        shown = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        raise ModelBuildError(f"Loading {what} left {len(bad)} weight(s) unloaded (on the 'meta' device: {shown}); "
                              "the model was not kept, so the next try loads it again from its files.")
    return obj


def cached_model(maxsize: int | None = None) -> Callable[[Callable], Callable]:
    """Decorate a build function ``fn(*args)`` (hashable arguments): the returned loader builds each
    model once per process under :data:`BUILD_LOCK`, keeps it only when the build raised nothing and left
    no meta tensor (else raises, keeping nothing), and keeps the ``maxsize`` most recently used ones.
    ``loader.cache_clear()`` forgets them all."""

    def decorate(build: Callable) -> Callable:
        cache: OrderedDict = OrderedDict()
        signature = inspect.signature(build)

        @functools.wraps(build)
        def load(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()  # f("m") and f("m", "cpu") with the default "cpu" are one model
            key = tuple(bound.arguments.items())
            try:
                return cache[key]  # a model already built: no lock, light actions never wait behind a build
            except KeyError:
                pass
            with BUILD_LOCK:
                if key in cache:
                    cache.move_to_end(key)
                    return cache[key]
                first = next(iter(bound.arguments.values()), None)
                what = f"the model {first!r}" if isinstance(first, str) else f"{build.__qualname__}()"
                model = check_built(build(*bound.args, **bound.kwargs), what)
                cache[key] = model
                while maxsize is not None and len(cache) > maxsize:
                    cache.popitem(last=False)
                return model

        load.cache_clear = cache.clear
        load.cached = lambda: list(cache.values())
        return load

    return decorate
