"""The Counterfactual capability's entry points, shared by the tab, the API, the CLI and the tests.

``classify`` → what the classifier sees; ``suggest_region`` → an automatic editable region;
``generate`` → RCSB counterfactuals as long work (progress events with x̂0 previews, then the result).
Every entry point takes a typed request, validates it, and raises InputError on bad input.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from backends.common.device import select_device
from backends.common.errors import InputError
from backends.common.imageio import to_rgb_array, to_uint8
from backends.common.modelbuild import cached_model
from backends.common.ood import DomainCheck, check_inputs
from backends.common.params import check_request
from backends.common.pipecopy import for_request
from backends.common.progress import CancelToken, ProgressEvent, relay, step_callback, stream_reports
from backends.common.registry import default_registry
from backends.common.seeding import check_seed, torch_generator

from .loading import load_bridge, load_classifier
from .masks import resize_mask
from .models import DEFAULT_BRIDGE as BRIDGE_ID
from .models import DEFAULT_CLASSIFIER as CLASSIFIER_ID
from .models import REAL_BRIDGE, REAL_CLASSIFIER, default_models  # noqa: F401 (re-exported)
from .pipeline import RCSBPipeline
from .regions import auto_region
from .requests import CounterfactualRequest, RegionRequest  # noqa: F401 (re-exported: the requests)


@dataclass
class Models:
    pipeline: RCSBPipeline
    bridge_id: str
    classifier_id: str
    device: torch.device
    size: int
    classes: tuple[str, ...]
    embedded: bool = True  # the bridge or the classifier is one of this project's (knows only the primitive world)


@cached_model(maxsize=2)
def _load(bridge_id: str, classifier_id: str, device: str) -> Models:
    registry = default_registry()
    bridge_spec, clf_spec = registry.get(bridge_id), registry.get(classifier_id)
    if bridge_spec.capability != "counterfactual" or clf_spec.capability != "counterfactual":
        raise InputError("Choose a bridge and a classifier of the Counterfactual capability.")
    bridge, size = load_bridge(bridge_spec, registry.resolve(bridge_id).path)
    clf_folder = registry.resolve(classifier_id).path
    classifier, classes = load_classifier(clf_spec, clf_folder)
    pipeline = RCSBPipeline(bridge.to(device), classifier.to(device))
    pipeline.set_progress_bar_config(disable=True)  # progress goes through callback_on_step_end
    embedded = "embedded" in (bridge_spec.source, clf_spec.source)
    return Models(pipeline, bridge_id, classifier_id, torch.device(device), size, tuple(classes), embedded)


def domain_check(models: Models, image: np.ndarray) -> DomainCheck | None:
    """How far the model-size image is from the embedded models' world (None: only real models run, no check)."""
    return check_inputs("counterfactual", [image]) if models.embedded else None


def load_models(bridge_id: str = BRIDGE_ID, classifier_id: str = CLASSIFIER_ID, device: str | None = None) -> Models:
    """The bridge and classifier, resolved through the registry (a clear error when missing), built once
    (``backends.common.modelbuild``: one build at a time, a failed one not kept)."""
    return _load(bridge_id, classifier_id, str(select_device(device)))


# --- helpers -------------------------------------------------------------------------------------

def prepare_image(image, size: int) -> np.ndarray:
    """Any image → size×size×3 uint8 (centre-cropped to a square, then resized)."""
    from PIL import Image

    arr = to_rgb_array(image)
    h, w = arr.shape[:2]
    s = min(h, w)
    arr = arr[(h - s) // 2:(h - s) // 2 + s, (w - s) // 2:(w - s) // 2 + s]
    if s != size:
        # an exact multiple (e.g. the tab's 8× nearest-neighbour view) comes back bit-exact with BOX
        resample = Image.BOX if s % size == 0 else Image.LANCZOS
        arr = np.asarray(Image.fromarray(arr).resize((size, size), resample))
    return arr



def prepare_mask(mask, image_shape: tuple[int, int], size: int) -> np.ndarray:
    """A drawn mask at the upload's size → the model's size (same centre crop as the image)."""
    m = np.asarray(mask)
    if m.ndim == 3:
        m = m.max(-1)
    if m.shape[:2] != tuple(image_shape):
        m = resize_mask(m, image_shape)
    h, w = m.shape
    s = min(h, w)
    m = m[(h - s) // 2:(h - s) // 2 + s, (w - s) // 2:(w - s) // 2 + s]
    return resize_mask(m, (size, size))


def to_tensor(image: np.ndarray, device) -> torch.Tensor:
    """uint8 H×W×3 → 1×3×H×W in [-1, 1]."""
    return torch.tensor(image).permute(2, 0, 1)[None].float().to(device) / 127.5 - 1.0


def class_index(target: str | int, classes: tuple[str, ...]) -> int:
    if isinstance(target, int | np.integer) and not isinstance(target, bool):
        if 0 <= target < len(classes):
            return int(target)
    elif isinstance(target, str):
        lowered = [c.lower() for c in classes]
        if target.strip().lower() in lowered:
            return lowered.index(target.strip().lower())
    raise InputError(f"Unknown target class {target!r}; choose one of: {', '.join(classes)}.")


@torch.no_grad()
def probabilities(models: Models, images_uint8: np.ndarray) -> np.ndarray:
    x = torch.tensor(images_uint8).permute(0, 3, 1, 2).float().to(models.device) / 255.0
    return torch.softmax(models.pipeline.classifier(x), 1).cpu().numpy()


# --- classify --------------------------------------------------------------------------------------

@dataclass
class Prediction:
    label: str
    probabilities: dict[str, float]
    image: np.ndarray  # what the classifier saw (model size)
    classifier_id: str
    domain: DomainCheck | None = None  # None: real models only, nothing to check

    @property
    def warning(self) -> str:
        return self.domain.notice if self.domain is not None else ""


def classify(image, models: Models | None = None) -> Prediction:
    models = models or load_models()
    img = prepare_image(image, models.size)
    p = probabilities(models, img[None])[0]
    return Prediction(models.classes[int(p.argmax())], dict(zip(models.classes, map(float, p), strict=True)), img,
                      models.classifier_id, domain_check(models, img))


# --- automatic region --------------------------------------------------------------------------------

@dataclass
class RegionResult:
    mask: np.ndarray  # model-size bool
    heatmap: np.ndarray  # model-size float [0, 1]
    attributed_class: str
    area: float


def suggest_region(request: RegionRequest, models: Models | None = None) -> RegionResult:
    models = models or load_models()
    check_request(request)
    if models.size % request.cell:
        raise InputError(f"Cell size must divide the model size {models.size} (1, 2, 4, 8 or 16), got {request.cell}.")
    img = prepare_image(request.image, models.size)
    x = torch.tensor(img).permute(2, 0, 1)[None].float().to(models.device) / 255.0
    target = (class_index(request.target, models.classes) if request.target is not None
              else int(probabilities(models, img[None])[0].argmax()))
    region = auto_region(models.pipeline.classifier, x, target, cell=request.cell, area=request.area,
                         seed=check_seed(request.seed))
    return RegionResult(region.mask, region.heatmap, models.classes[target], float(region.mask.mean()))


# --- generate ----------------------------------------------------------------------------------------

@dataclass
class Sample:
    image: np.ndarray  # model-size uint8
    predicted: str
    probabilities: dict[str, float]
    target_probability: float
    flipped: bool
    l1_inside: float  # mean |Δ| inside the region, in [0, 1] units
    l2_inside: float  # RMS Δ inside the region
    max_change_outside: int  # in 0..255 — 0 means bit-identical outside the region


@dataclass
class CounterfactualResult:
    original: np.ndarray
    mask: np.ndarray
    original_prediction: str
    original_probabilities: dict[str, float]
    target: str
    samples: list[Sample]
    settings: dict = field(default_factory=dict)
    models: dict = field(default_factory=dict)
    seconds: float = 0.0
    domain: DomainCheck | None = None  # how far the input is from the embedded models' world (None: not checked)

    @property
    def notice(self) -> str:
        """Beyond the embedded models' domain: what they know and the real models that would serve."""
        return self.domain.notice if self.domain is not None else ""

    @property
    def flip_rate(self) -> float:
        return sum(s.flipped for s in self.samples) / max(1, len(self.samples))

    def to_json(self) -> dict:
        """Everything but the pixel arrays (those are saved as PNGs)."""
        samples = [{k: v for k, v in asdict(s).items() if k != "image"} for s in self.samples]
        return {"original_prediction": self.original_prediction, "original_probabilities": self.original_probabilities,
                "target": self.target, "flip_rate": self.flip_rate, "samples": samples, "settings": self.settings,
                "models": self.models, "seconds": round(self.seconds, 3), "region_area": float(self.mask.mean()),
                "domain": self.domain.to_json() if self.domain is not None else None}


def generate(request: CounterfactualRequest, cancel: CancelToken | None = None,
             models: Models | None = None) -> Iterator[ProgressEvent | CounterfactualResult]:
    request.validate()
    models = models or load_models(request.bridge, request.classifier)
    start = time.perf_counter()
    target = class_index(request.target, models.classes)
    raw = to_rgb_array(request.image)
    image = prepare_image(raw, models.size)
    mask = prepare_mask(request.mask, raw.shape[:2], models.size)
    if not mask.any():
        raise InputError("The region is empty: draw over the part of the image that may change.")
    orig_p = probabilities(models, image[None])[0]
    domain = domain_check(models, image)  # checked on every run, not only at upload; the run goes ahead
    x = to_tensor(image, models.device)
    m = torch.from_numpy(mask)[None, None].float().to(models.device)
    yield ProgressEvent(0.0, "starting the bridge")
    pipeline = for_request(models.pipeline)  # its own bridge schedule: other requests step the shared one

    def work(report):
        on_step_end = step_callback(  # cancel within a step; x̂0 previews (as every pipeline of the suite)
            report, cancel, steps=lambda pipe: len(pipe.scheduler.timesteps) - 1, end=0.97,
            message=lambda pipe, step, n, _: f"bridge step {step}/{n}", preview_every=request.preview_every,
            preview=lambda pipe, step, n, tensors: to_uint8(tensors["pred_original_sample"]))
        return pipeline(
            x, m, target, num_inference_steps=request.num_inference_steps, start_fraction=float(request.start_fraction),
            guidance_scale=float(request.guidance_scale), num_images_per_prompt=request.num_samples,
            guidance=request.guidance, stabilize=request.stabilize, generator=torch_generator(request.seed, "cpu"),
            callback_on_step_end=on_step_end, callback_on_step_end_tensor_inputs=["pred_original_sample"])

    output = yield from relay(stream_reports(work, cancel))
    images = to_uint8(output.images)
    images = np.where(mask[None, ..., None], images, image[None])  # outside the region: the input, bit for bit
    probs = probabilities(models, images)
    samples = []
    diff = np.abs(images.astype(np.float64) - image[None].astype(np.float64)) / 255.0
    for k in range(len(images)):
        inside = diff[k][mask]
        samples.append(Sample(
            image=images[k], predicted=models.classes[int(probs[k].argmax())],
            probabilities=dict(zip(models.classes, map(float, probs[k]), strict=True)),
            target_probability=float(probs[k, target]), flipped=int(probs[k].argmax()) == target,
            l1_inside=float(inside.mean()), l2_inside=float(np.sqrt((inside**2).mean())),
            max_change_outside=int(np.abs(images[k].astype(int) - image.astype(int))[~mask].max(initial=0)),
        ))
    settings = {k: v for k, v in asdict(request).items() if k not in ("image", "mask")}
    yield CounterfactualResult(
        original=image, mask=mask, original_prediction=models.classes[int(orig_p.argmax())],
        original_probabilities=dict(zip(models.classes, map(float, orig_p), strict=True)), target=models.classes[target],
        samples=samples, settings=settings, models={"bridge": models.bridge_id, "classifier": models.classifier_id,
                                                    "device": str(models.device)},
        seconds=time.perf_counter() - start, domain=domain,
    )
