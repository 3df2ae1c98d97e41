"""The Action layer: one run-card format, written by every action and replayed to the same outputs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from backends.common.action import Action, replay
from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken, ProgressEvent, run_to_result
from backends.common.runcard import decode_request, encode_request, read_card


@dataclass
class Inner:
    scale: float = 1.0
    offsets: tuple[int, ...] = (1, 2)


@dataclass
class ToyRequest:
    image: np.ndarray
    mask: np.ndarray | None
    weights: np.ndarray
    clip: Path
    out_dir: Path
    inner: Inner = field(default_factory=Inner)
    seed: int = 0
    words: list[str] = field(default_factory=list)

    def validate(self):
        if self.seed < 0:
            raise InputError("seed must be ≥ 0")


@dataclass
class ToyResult:
    picture: np.ndarray
    total: float


def toy_work(request: ToyRequest, model, cancel: CancelToken | None):
    rng = np.random.default_rng(request.seed)
    for step in range(3):
        if cancel is not None:
            cancel.raise_if_cancelled()
        yield ProgressEvent((step + 1) / 3, f"step {step + 1}/3", preview=step)
    noise = rng.integers(0, 9, request.image.shape, dtype=np.uint8)
    picture = np.where(request.mask[..., None], request.image // 2 + noise, request.image) if request.mask is not None \
        else request.image
    total = float(request.weights.sum() * request.inner.scale + sum(request.inner.offsets) + model
                  + len(request.clip.read_bytes()))
    yield ToyResult(picture.astype(np.uint8), total)


def toy_write(result: ToyResult, folder: Path) -> dict[str, Path]:
    from backends.common.imageio import save_png

    return {"picture": save_png(result.picture, folder / "picture.png")}


TOY = Action(name="toy_run", capability="toy", request_type=ToyRequest, work=toy_work, load=lambda r: 7,
             write=toy_write, summary=lambda r: {"total": r.total}, output_fields=("out_dir",))


def toy_request(tmp_path: Path, seed: int = 3) -> ToyRequest:
    rng = np.random.default_rng(0)
    clip = tmp_path / "upload" / "clip.bin"
    clip.parent.mkdir(parents=True, exist_ok=True)
    clip.write_bytes(b"12345")
    return ToyRequest(image=rng.integers(0, 255, (8, 8, 3), dtype=np.uint8), mask=rng.random((8, 8)) > 0.5,
                      weights=rng.normal(size=(2, 3)).astype(np.float32), clip=clip, out_dir=tmp_path / "o",
                      inner=Inner(scale=0.5, offsets=(4, 5)), seed=seed, words=["a", "b"])


def test_a_request_round_trips_through_its_card(tmp_path):
    request = toy_request(tmp_path)
    folder = tmp_path / "run"
    encoded, inputs = encode_request(request, folder, ("out_dir",))
    card_text = json.dumps(encoded)  # plain JSON
    assert encoded["out_dir"] == {"$output": True} and encoded["seed"] == 3 and encoded["inner"]["scale"] == 0.5
    assert all(p.parent == folder and p.name.startswith("input_") for p in inputs.values()), inputs
    back = decode_request(ToyRequest, json.loads(card_text), folder, {"out_dir": tmp_path / "new"})
    assert np.array_equal(back.image, request.image) and back.image.dtype == np.uint8
    assert np.array_equal(back.mask, request.mask) and back.mask.dtype == bool
    assert np.array_equal(back.weights, request.weights) and back.weights.dtype == np.float32
    assert back.clip.read_bytes() == b"12345" and back.clip.parent == folder.resolve()
    assert back.inner == Inner(scale=0.5, offsets=(4, 5)) and isinstance(back.inner.offsets, tuple)
    assert back.words == ["a", "b"] and back.out_dir == tmp_path / "new"


def test_write_run_then_replay_gives_the_same_outputs(tmp_path):
    request = toy_request(tmp_path)
    result = run_to_result(TOY.run(request))
    paths = TOY.write_run(request, result, tmp_path / "first")
    card = read_card(paths["run"])
    assert card["action"] == "toy_run" and card["capability"] == "toy" and card["result"] == {"total": result.total}
    assert card["files"]["picture"] == "picture.png" and "replay" in card["reproduce"]
    # a person downloads every offered file into one flat folder
    flat = tmp_path / "downloads"
    flat.mkdir()
    for p in paths.values():
        (flat / p.name).write_bytes(p.read_bytes())
    *events, (again, again_paths) = replay(flat / "run.json", tmp_path / "again", {"toy_run": TOY}.__getitem__)
    assert [e.message for e in events] == ["step 1/3", "step 2/3", "step 3/3"]
    assert again.total == result.total and np.array_equal(again.picture, result.picture)
    assert (tmp_path / "again" / "picture.png").read_bytes() == paths["picture"].read_bytes()
    assert read_card(again_paths["run"])["request"] == card["request"]


def test_the_request_is_validated_and_stop_stops(tmp_path):
    with pytest.raises(InputError, match="seed"):
        run_to_result(TOY.run(toy_request(tmp_path, seed=-1)))
    token = CancelToken()
    work = TOY.run(toy_request(tmp_path), token)
    next(work)
    token.cancel()
    with pytest.raises(Cancelled):
        list(work)


@pytest.mark.parametrize("text, message", [
    ("[1, 2]", "not a run card"),
    ('{"format": "iclr25-studio run card", "version": 9, "action": "toy_run", "request": {}}', "version 9"),
    ('{"format": "iclr25-studio run card", "version": 1, "action": "toy_run", "request": {"image": {"$image": '
     '"../secret.png"}}}', "outside its folder"),
    ('{"format": "iclr25-studio run card", "version": 1, "action": "toy_run", "request": {"colour": 1}}',
     "does not know: colour"),
    ('{"format": "iclr25-studio run card", "version": 1, "action": "toy_run", "request": {"image": {"$image": '
     '"input_gone.png"}}}', "not beside"),
])
def test_bad_cards_are_clear_errors(tmp_path, text, message):
    (tmp_path / "secret.png").write_bytes(b"x")
    (tmp_path / "cards").mkdir()
    card = tmp_path / "cards" / "run.json"
    card.write_text(text)
    with pytest.raises(InputError, match=message):
        list(replay(card, tmp_path / "out", {"toy_run": TOY}.__getitem__))


def test_every_registered_action_names_its_capability_and_a_dataclass_request():
    import dataclasses

    from backends import CAPABILITIES, action_named, actions

    found = actions()
    assert found, "no capability registers an action"
    for action in found:
        assert action.capability in CAPABILITIES and action.name.startswith(action.capability + "_")
        assert dataclasses.is_dataclass(action.request_type)
        assert action_named(action.name) is action
    assert len({a.name for a in found}) == len(found)
    with pytest.raises(InputError):
        action_named("counterfactual_nothing")
