"""A scene built stage by stage: empty scene → insert → change / move / remove, earlier objects kept.

``SceneSession`` holds the stages; ``edit`` turns a new layout into the stages that reach it (one
change per stage, as the paper does). Every stage keeps its trajectory (the latents of every
step), so later stages replay it instead of regenerating it:

* **insert** box j: source = the last stage (its recorded keys/values serve DSA), box mask = all of box
  j, as the reference (or only its part no earlier box stands in front of: ``insert_visible``), conditioned on the
  layout less the earlier boxes in front of box j, so the object is drawn whole (``insert_amodal``); the decoded
  image then gets the earlier objects pasted back wherever the new object does not cover them
  (``paste_back``, ``occlusion``: latent cells are too coarse for the border between two objects; every
  later stage pastes back the same way, outside the edited object's old place);
* **change** box j's prompt, **remove** box j, **move/resize/rotate** box j: the source is the scene
  *without* object j — the current trajectory outside j's old box, and inside it the trajectory
  the object was inserted into — so nothing of the old object leaks through DSA; a move also
  cuts the object out, warps it by its 3D box correspondence, DDIM-inverts the composite with the
  new depth and copies those latents inside the warped object for the blended steps.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch
import torch.nn.functional as F

from backends.common.errors import InputError
from backends.common.progress import CancelToken, Report, step_callback

from .attention import DSAConfig, cross_attention_map
from .layout import Box, Layout
from .move import match_boxes, segment_object, warp_object
from .occlusion import dilate, occluders, paste_back, visible_mask, without
from .pipeline import BuildASceneOutput, BuildAScenePipeline, StageCache, to_uint8
from .requests import METHODS

# Decoding x̂0 costs about 40% of a denoising step of the embedded model; a preview every 5th step
# (and the last) keeps the picture moving at a tenth of that cost. Progress is still reported every step.
PREVIEW_EVERY = 5


@dataclass
class StageSettings:
    num_inference_steps: int = 20
    guidance_scale: float = 7.5
    seed: int = 0
    blend_fraction: float = 0.9
    dsa: DSAConfig = field(default_factory=DSAConfig)
    method: str = "bas"  # Build-A-Scene | MasaCtrl mutual self-attention (no blending) | blending alone
    source_kv: str = "cache"
    inversion_guidance: float | None = None  # None: the generation's guidance (the reference)
    hole_dilation: int = 1  # latent pixels added around an old box when its object is taken out
    move_blend_sattn: bool = True  # the reference's consistency setting: blend low-res self-attention on moves
    paste_back: bool = True  # after a stage, earlier objects pasted back where the edited one does not cover them
    # (``occlusion``; Build-A-Scene and blending only: MasaCtrl redraws the picture. Crowded selection: 0.70 vs 0.66)
    insert_visible: bool = False  # insert only into the part of the new box no earlier box stands in front of. Off,
    # as the reference: the whole object is drawn and the paste-back puts the one in front back, so an object behind
    # shows its true edge (crowded selection episodes: 0.72 vs 0.70; boxes < 50% visible behind others 2/13 vs 0/13).
    # Without the paste-back it is what keeps the object in front (0.69 vs 0.65)
    insert_amodal: bool = True  # an object inserted behind earlier ones is drawn whole: the stage's box depth leaves
    # out the boxes in front of it, and the paste-back puts their objects back in front (``occlusion``; with the
    # paste-back and whole-box inserts only). Crowded selection episodes: 0.75 vs 0.72 of boxes right (216 vs 206 of 288;
    # 12 boxes right that were wrong, 2 wrong that were right), all from the boxes partly behind an earlier object
    insert_grow: int = 1  # with insert_visible: pixels the visible part grows into what stands in front (within the
    # new box), so a thin sliver still frees a latent pixel

    def validate(self) -> None:
        if not 1 <= int(self.num_inference_steps) <= 200:
            raise InputError("Steps must be between 1 and 200.")
        if not 0.0 <= float(self.guidance_scale) <= 30.0:
            raise InputError("Guidance scale must be between 0 and 30.")
        if not 0.0 <= float(self.blend_fraction) <= 1.0:
            raise InputError("The blended fraction of steps must be between 0 and 1.")
        if self.method not in METHODS:
            raise InputError(f"Method must be one of {', '.join(METHODS)}.")


@dataclass
class Stage:
    index: int
    action: str  # human-readable: "empty scene", "insert box 1: a red cube", ...
    kind: str  # empty | insert | change | move | remove
    layout: Layout
    image: np.ndarray
    depth: np.ndarray
    cache: StageCache
    box_index: int | None
    box_mask: np.ndarray | None  # the edited box (its new place)
    object_mask: np.ndarray | None  # the edited object's pixels
    source_latents: list[torch.Tensor] | None  # the trajectory this stage was blended into
    source_image: np.ndarray | None
    created: dict[int, int]  # box index → the stage that last (re)created its object
    seconds: float

    def summary(self) -> dict:
        return {"stage": self.index, "action": self.action, "kind": self.kind, "box": self.box_index,
                "seconds": round(self.seconds, 3), "layout": self.layout.to_dict()}


class SceneSession:
    """The stages of one scene with one model, seed and settings."""

    def __init__(self, pipe: BuildAScenePipeline, settings: StageSettings, size: int):
        settings.validate()
        self.pipe, self.settings, self.size = pipe, settings, size
        self.noise = pipe.prepare_latents(1, size, size, torch.Generator().manual_seed(int(settings.seed)))
        self.stages: list[Stage] = []
        self.model_id = pipe.name  # the registered id, set by the service
        self.request = None  # the SceneRequest whose model and settings these are (set by the service)
        self.preview_every = PREVIEW_EVERY  # decode x̂0 for a preview every this many steps (and the last)
        self._on_step: Callable | None = None  # the running stage's callback_on_step_end
        self._redraw_step: Callable | None = None  # the same, for its passes that draw uncovered objects again
        self.device = str(pipe.device)  # said by results and cards, also of a copy without the model

    @property
    def last(self) -> Stage:
        return self.stages[-1]

    def fork(self) -> SceneSession:
        """A scene with the same stages that goes on by itself (the stages' tensors are shared, never changed):
        a stage run on it, stopped or failed, leaves this one as it was."""
        other = copy.copy(self)
        other.stages = list(self.stages)
        other._on_step = other._redraw_step = None
        return other

    def go_back(self, index: int) -> Stage:
        if not 0 <= index < len(self.stages):
            raise InputError(f"There is no stage {index}; the scene has {len(self.stages)}.")
        del self.stages[index + 1:]
        return self.last

    # --- planning ----------------------------------------------------------------------------
    def plan(self, layout: Layout) -> list[tuple[str, int | None, Layout]]:
        """The single-change stages from the current layout to ``layout``: (kind, box, layout after)."""
        layout = layout.with_size(self.size)
        if not self.stages:
            steps = [("empty", None, Layout(layout.scene_prompt, (), layout.camera))]
            for j in range(len(layout.boxes)):
                steps.append(("insert", j, Layout(layout.scene_prompt, layout.boxes[:j + 1], layout.camera)))
            return steps
        cur = self.last.layout
        if layout.scene_prompt != cur.scene_prompt:
            raise InputError("The scene prompt changed: start a new scene (Generate) to change the empty scene.")
        deleted, kept = align_boxes(cur.boxes, layout.boxes)
        steps, boxes = [], list(cur.boxes)
        for i in sorted(deleted, reverse=True):  # first what goes (from the end: the other indices stay valid)
            del boxes[i]
            steps.append(("remove", i, Layout(cur.scene_prompt, tuple(boxes), layout.camera)))
        for j in range(kept):  # then what stays and changes: what is left are the new layout's first boxes
            old, new = boxes[j], layout.boxes[j]
            if old == new:
                continue
            kind = "change" if _geometry(old) == _geometry(new) else "move"
            if kind == "move" and old.prompt != new.prompt:
                boxes[j] = replace(old, prompt=new.prompt)
                steps.append(("change", j, Layout(cur.scene_prompt, tuple(boxes), layout.camera)))
            boxes[j] = new
            steps.append((kind, j, Layout(cur.scene_prompt, tuple(boxes), layout.camera)))
        for j in range(kept, len(layout.boxes)):  # then the new boxes, at the end
            boxes.append(layout.boxes[j])
            steps.append(("insert", j, Layout(cur.scene_prompt, tuple(boxes), layout.camera)))
        return steps

    def edit(self, layout: Layout, report: Report | None = None, cancel: CancelToken | None = None) -> list[Stage]:
        """Run the stages that reach ``layout`` and return them.

        Every denoising step calls the pipeline's ``callback_on_step_end``, which checks ``cancel``
        (so Stop ends the work within a step; the stages finished before are kept) and passes
        ``report`` a ``ProgressEvent`` with the decoded x̂0 preview.
        """
        plan = self.plan(layout)
        if not plan:
            raise InputError("Nothing changed: add, move, resize or re-prompt a box first.")
        new: list[Stage] = []
        try:
            for k, (kind, j, target) in enumerate(plan):
                if cancel is not None:
                    cancel.raise_if_cancelled()
                self._on_step = self._callback(_action(kind, j, target), k / len(plan), (k + 1) / len(plan),
                                               report, cancel)
                self._redraw_step = self._callback(f"{_action(kind, j, target)}, drawing the objects it uncovers",
                                                   (k + 1) / len(plan), (k + 1) / len(plan), report, cancel)
                stage = getattr(self, f"_{kind}")(target, j)
                self.stages.append(stage)
                new.append(stage)
        finally:
            self._on_step = self._redraw_step = None
        return new

    def _callback(self, label: str, lo: float, hi: float, report: Report | None, cancel: CancelToken | None):
        """The ``callback_on_step_end`` of one stage: cancel check, then a progress event with a preview."""
        def message(pipe, step, n, tensors):
            what = "step" if tensors.get("pred_original_sample") is not None else "inverting, step"
            return f"stage {len(self.stages)}: {label} — {what} {step}/{n}"

        def picture(pipe, step, n, tensors):
            x0 = tensors.get("pred_original_sample")
            return pipe.decode(x0) if x0 is not None else None

        return step_callback(report, cancel, steps=self.settings.num_inference_steps, start=lo, end=hi,
                             message=message, preview=picture, preview_every=self.preview_every)

    # --- the stage kinds ---------------------------------------------------------------------
    def _run(self, prompt, layout, dsa: DSAConfig | None = None, depth: torch.Tensor | None = None,
             **kw) -> BuildASceneOutput:
        s = self.settings
        depth = _tensor(layout.depth()) if depth is None else depth
        return self.pipe(prompt, depth, num_inference_steps=s.num_inference_steps, guidance_scale=s.guidance_scale,
                         latents=self.noise, dsa=dsa or s.dsa, blend_fraction=s.blend_fraction, source_kv=s.source_kv,
                         callback_on_step_end=self._on_step, callback_on_step_end_tensor_inputs=["pred_original_sample"],
                         **kw)

    def _empty(self, layout: Layout, j):
        t0 = time.perf_counter()
        out = self._run(layout.scene_prompt, layout)
        return Stage(0, "empty scene", "empty", layout, _image(out), _depth_of(out), out.cache, None, None, None, None, None,
                     {}, time.perf_counter() - t0)

    def _insert(self, layout: Layout, j: int):
        t0 = time.perf_counter()
        prev = self.last
        mask = visible_mask(layout, j, self.settings.insert_grow) if self.settings.insert_visible else layout.box_mask(j)
        s = self.settings
        mode = {"bas": "dsa", "masactrl": "mutual", "blend": "blend"}[s.method]
        amodal = s.insert_amodal and s.paste_back and mode != "mutual" and not s.insert_visible
        in_front = occluders(layout, j) if amodal else ()
        depth = _tensor(without(layout, in_front).depth()) if in_front else None  # drawn whole, as if they were not there
        out = self._run(layout.boxes[j].prompt, layout, depth=depth, source=prev.cache, box_mask=_tensor(mask),
                        mode=mode)
        created = {**prev.created, j: len(self.stages)}
        image = self._paste_back(layout, j, _image(out), prev.image) if mode != "mutual" else _image(out)
        obj = self._segment(out.cache, layout.boxes[j].prompt, mask, image, prev.image)
        depth_shown = _scene_depth(out, layout, bool(in_front))
        return Stage(len(self.stages), _action("insert", j, layout), "insert", layout, image, depth_shown, out.cache,
                     j, mask, obj, prev.cache.latents, prev.image, created, time.perf_counter() - t0)

    def _without(self, j: int, dilation: int | None = None) -> tuple[list[torch.Tensor], np.ndarray, Layout]:
        """The current trajectory with object j taken out, its image, and the layout without box j."""
        cur = self.last
        born = self.stages[cur.created[j]]
        hole = _tensor(dilate(cur.layout.box_mask(j), 2))
        lat_hole = F.interpolate(hole, size=self.noise.shape[-2:], mode="bilinear", align_corners=False)
        d = self.settings.hole_dilation if dilation is None else dilation
        if d > 0:
            lat_hole = F.max_pool2d(lat_hole, 2 * d + 1, stride=1, padding=d)
        lat_hole = lat_hole.to(self.pipe.device, self.pipe.unet.dtype)
        traj = [(1 - lat_hole) * a + lat_hole * b for a, b in zip(cur.cache.latents, born.source_latents, strict=True)]
        rest = tuple(b for i, b in enumerate(cur.layout.boxes) if i != j)
        return traj, self.pipe.decode(traj[-1]), Layout(cur.layout.scene_prompt, rest, cur.layout.camera)

    def _source_without(self, j: int) -> tuple[StageCache, np.ndarray]:
        traj, image, rest = self._without(j)
        cache = StageCache(rest.boxes[-1].prompt if rest.boxes else rest.scene_prompt, _tensor(rest.depth()).to(self.pipe.device),
                           traj, {}, self.settings.guidance_scale)
        return cache, image

    def _change(self, layout: Layout, j: int, kind: str = "change"):
        t0 = time.perf_counter()
        cur = self.last
        source, bg = self._source_without(j)
        mask = layout.box_mask(j)
        drawn = self._run(layout.boxes[j].prompt, layout, source=source, box_mask=_tensor(mask),
                          mode="dsa", record=True)
        out = self._redraw_uncovered(layout, drawn, self._old_place(j), cur.created, cur.created[j], skip=j)
        image = self._paste_back(layout, j, _image(out), cur.image, self._old_place(j))
        obj = self._segment(drawn.cache, layout.boxes[j].prompt, mask, image, bg)  # box j's own cross-attention
        return Stage(len(self.stages), _action(kind, j, layout), kind, layout, image, _depth_of(out), out.cache, j, mask,
                     obj, source.latents, bg, {**cur.created, j: len(self.stages)}, time.perf_counter() - t0)

    def _remove(self, layout: Layout, j: int):
        """Take object j out: the scene without it, harmonised by the free last steps."""
        t0 = time.perf_counter()
        cur = self.last
        old_mask = cur.layout.box_mask(j)
        source, bg = self._source_without(j)
        out = self._run(layout.scene_prompt, layout, source=source,
                        box_mask=_tensor(np.zeros_like(old_mask)), mode="blend")
        created = {(i if i < j else i - 1): s for i, s in cur.created.items() if i != j}
        out = self._redraw_uncovered(layout, out, self._old_place(j), created, cur.created[j])
        image = self._paste_back(layout, None, _image(out), cur.image, self._old_place(j))
        return Stage(len(self.stages), _action("remove", j, cur.layout), "remove", layout, image, _depth_of(out),
                     out.cache, None, old_mask, None, source.latents, bg, created, time.perf_counter() - t0)

    def _move(self, layout: Layout, j: int):
        t0 = time.perf_counter()
        cur = self.last
        old_box, new_box = cur.layout.boxes[j], layout.boxes[j]
        old_mask, old_pts = cur.layout.box_render(j)
        new_mask, new_pts = layout.box_render(j)
        born = self.stages[cur.created[j]]
        obj = born.object_mask if born.object_mask is not None else old_mask
        source, bg = self._source_without(j)
        try:
            corr = match_boxes(old_box, old_mask, old_pts, new_box, new_mask, new_pts, keep=obj)
            composite, warped = warp_object(cur.image, obj, bg, corr)
        except ValueError as e:
            raise InputError(f"Cannot move box {j + 1}: {e}.") from None
        s = self.settings
        inv_g = s.guidance_scale if s.inversion_guidance is None else s.inversion_guidance
        depth = _tensor(layout.depth())
        inverted = self.pipe.invert(composite, new_box.prompt, depth, num_inference_steps=s.num_inference_steps,
                                    guidance_scale=inv_g, callback_on_step_end=self._on_step)
        dsa = replace(s.dsa, blend_sattn=s.dsa.blend_sattn or s.move_blend_sattn)
        out = self._run(new_box.prompt, layout, dsa=dsa, depth=depth, source=source, box_mask=_tensor(new_mask),
                        mode="dsa", copy_latents=inverted, copy_mask=_tensor(warped))
        out = self._redraw_uncovered(layout, out, self._old_place(j), cur.created, cur.created[j], skip=j)
        image = self._paste_back(layout, j, _image(out), cur.image, self._old_place(j))
        return Stage(len(self.stages), _action("move", j, layout), "move", layout, image, _depth_of(out), out.cache, j,
                     new_mask, warped, source.latents, bg, {**cur.created, j: len(self.stages)},
                     time.perf_counter() - t0)

    def _redraw_uncovered(self, layout: Layout, out: BuildASceneOutput, freed: np.ndarray, created: dict[int, int],
                          since: int, skip: int | None = None) -> BuildASceneOutput:
        """Objects added after stage ``since`` (so never in the trajectory that refills a freed place) that the
        freed place now shows: each is drawn again there, in its box's part of that place, one DSA pass each
        on the stage so far. Without it a removed front object leaves a hole in the object behind it."""
        for k in sorted(created, key=created.get):
            if k == skip or created[k] <= since:
                continue
            region = visible_mask(layout, k) & freed
            if region.sum() < 4:
                continue
            stage_step, self._on_step = self._on_step, self._redraw_step  # progress stays at the stage's end
            try:
                out = self._run(layout.boxes[k].prompt, layout, source=out.cache, box_mask=_tensor(region), mode="dsa")
            finally:
                self._on_step = stage_step
        return out

    def _old_place(self, j: int) -> np.ndarray:
        """The pixels ``_without(j)`` frees: box j's old mask grown by the pixels of its latent hole."""
        scale = self.size // self.noise.shape[-1]
        return dilate(self.last.layout.box_mask(j), 2 + scale * max(0, self.settings.hole_dilation))

    def _paste_back(self, layout: Layout, j: int | None, image: np.ndarray, before: np.ndarray,
                    freed: np.ndarray | None = None) -> np.ndarray:
        """``image`` with the objects of ``before`` pasted back where this stage leaves them (``occlusion``)."""
        if not self.settings.paste_back:
            return image
        return paste_back(layout, j, image, before, self.stages[0].image, freed)

    def _segment(self, cache: StageCache, prompt: str, box_mask, image, before) -> np.ndarray:
        try:
            attn = cross_attention_map(cache.cross_maps, self.pipe.token_index(prompt), box_mask.shape).cpu().numpy()
        except ValueError:
            attn = box_mask.astype(np.float32)
        return segment_object(attn, box_mask, image, before)


def _image(out: BuildASceneOutput) -> np.ndarray:
    return to_uint8(out.images[0])


def _depth_of(out: BuildASceneOutput) -> np.ndarray:
    """The box depth the stage was conditioned on (rendered once, kept in its cache)."""
    return out.cache.depth[0, 0].float().cpu().numpy()


def _scene_depth(out: BuildASceneOutput, layout: Layout, amodal: bool) -> np.ndarray:
    """The stage's box depth, as the scene shows it: an amodal insert was conditioned on the layout less the boxes in
    front of the new one, but its stage (its downloads) shows the whole layout's."""
    return layout.depth().astype(np.float32) if amodal else _depth_of(out)


def _tensor(mask_or_depth: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.asarray(mask_or_depth, dtype=np.float32))[None, None]


def _action(kind: str, j: int | None, layout: Layout) -> str:
    if kind == "empty":
        return f"empty scene: {layout.scene_prompt}"
    verb = {"insert": "insert", "change": "change", "move": "move", "remove": "remove"}[kind]
    prompt = layout.boxes[j].prompt if j is not None and j < len(layout.boxes) else ""
    return f"{verb} box {j + 1}" + (f": {prompt}" if prompt and kind != "remove" else "")


def _geometry(box: Box) -> tuple:
    return box.center, box.size, box.yaw_deg


def _edit_stages(old: Box, new: Box) -> int:
    """Stages that turn ``old`` into ``new``: a change (prompt), a move (geometry), both, or none."""
    return int(old.prompt != new.prompt) + int(_geometry(old) != _geometry(new))


def align_boxes(cur: Sequence[Box], new: Sequence[Box]) -> tuple[list[int], int]:
    """Which current box each box of the new layout continues, as the fewest stages reach it.

    Boxes have no names: the editor's Delete takes a box out of the list, so the boxes after it move up one
    place. Matching by place would turn "delete box 1 of 3" into re-prompting and moving boxes 2 and 3 into
    the places before them. Here the current boxes are matched in order to a prefix of the new ones
    (deleting any of them costs one stage; a match costs its change and move stages; the new boxes after the
    prefix are inserted, one stage each), with the fewest stages and, among those, the fewest boxes that
    change place in the list (so a same-length edit matches box by box, as before).

    Returns (the deleted current indices, from the last; how many leading new boxes the current boxes left
    after the deletions become, in order — the new boxes after them are inserted).
    """
    n, m = len(cur), len(new)
    inf = (1 << 30, 1 << 30)
    best = [[inf] * (m + 1) for _ in range(n + 1)]  # best[i][k]: (stages, shifts) aligning cur[:i] with new[:k]
    step = [[None] * (m + 1) for _ in range(n + 1)]
    best[0][0] = (0, 0)
    for i in range(1, n + 1):
        for k in range(0, min(i, m) + 1):
            options = []
            if k and best[i - 1][k - 1] != inf:
                s, d = best[i - 1][k - 1]
                options.append(((s + _edit_stages(cur[i - 1], new[k - 1]), d + abs(i - k)), "match"))
            if best[i - 1][k] != inf:
                s, d = best[i - 1][k]
                options.append(((s + 1, d), "delete"))
            if options:
                best[i][k], step[i][k] = min(options, key=lambda o: o[0])
    kept = min(range(min(n, m) + 1), key=lambda k: (best[n][k][0] + m - k, best[n][k][1], -k))
    deleted, i, k = [], n, kept
    while i:
        if step[i][k] == "match":
            k -= 1
        else:
            deleted.append(i - 1)
        i -= 1
    return deleted, kept
