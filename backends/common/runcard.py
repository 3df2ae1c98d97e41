"""The run card: one ``run.json`` format for every capability's run, which the CLI replays.

A card names the action, holds its request (every field: numbers and words as JSON, arrays and input
files as files beside the card, named ``input_<field>…``: a download of every file into one folder
replays), what the result said, and the files the run wrote::

    {"format": "iclr25-studio run card", "version": 1, "action": "counterfactual_generate",
     "capability": "counterfactual", "request": {...}, "result": {...}, "files": {...},
     "reproduce": "iclr25-studio replay run.json --out <folder>"}

A value that is not plain JSON is a tagged object: ``{"$image": "input_image.png"}`` (uint8 pixels,
lossless), ``{"$mask": ...}`` (a boolean mask as a PNG), ``{"$array": "input_x.npy"}`` (any other
array, exact), ``{"$file": "input_clip.mp4"}`` (an input file, copied beside the card unless it is
already in the run folder) and ``{"$output": true}`` (where outputs go: a replay's ``--out``).
Nested dataclasses are objects of their fields, rebuilt from the request class's type hints.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import types
import typing
from pathlib import Path
from typing import Any

import numpy as np

from . import jsontext
from .errors import InputError

CARD_NAME = "run.json"
FORMAT = "iclr25-studio run card"
VERSION = 1
PREFIX = "input_"  # an input written beside the card


def make_card(action: str, capability: str, request: dict, result: dict, files: dict[str, str]) -> dict:
    return {"format": FORMAT, "version": VERSION, "action": action, "capability": capability,
            "request": request, "result": result, "files": files,
            "reproduce": f"iclr25-studio replay {CARD_NAME} --out <folder>"}


def read_card(path: Path) -> dict:
    """A run card from disk, checked to be one (a clear InputError otherwise)."""
    path = Path(path)
    try:
        card = jsontext.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"Cannot read the run card {path.name}: {e}.") from None
    if not isinstance(card, dict) or card.get("format") != FORMAT or not isinstance(card.get("action"), str):
        raise InputError(f"{path.name} is not a run card of this suite (a run.json written by a run).")
    if card.get("version") != VERSION:
        raise InputError(f"{path.name} is a run card of version {card.get('version')}; this suite reads {VERSION}.")
    if not isinstance(card.get("request"), dict):
        raise InputError(f"{path.name} holds no request to replay.")
    return card


def carry_card(card: Path, out_dir: Path) -> dict[str, Path]:
    """A run card and the input files its request reads, linked (copied across file systems) into ``out_dir``:
    files written there without a run of their own (an avatar exported in another pose) come with the run
    that made them, and ``iclr25-studio replay run.json`` from that folder runs it again. Name → path (``run``
    is the card)."""
    import os
    import shutil

    source, out = Path(card), Path(out_dir)
    inputs: dict[str, Path] = {}
    _collect(read_card(source)["request"], source.parent, inputs)
    carried: dict[str, Path] = {}
    for name, path in [*inputs.items(), ("run", source)]:
        rel = path.relative_to(source.parent).as_posix()
        src, target = _inside(source.parent, rel), out / rel
        if src.is_dir():
            shutil.copytree(src, target, dirs_exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            try:
                os.link(src, target)
            except OSError:
                shutil.copy2(src, target)
        carried[name] = target
    return carried


# --- encoding ------------------------------------------------------------------------------------

def encode_request(request, folder: Path, output_fields: tuple[str, ...] = ()) -> tuple[dict, dict[str, Path]]:
    """The request's fields as JSON, and the input files written beside it (name → path)."""
    if not dataclasses.is_dataclass(request):
        raise TypeError(f"a request is a dataclass, not {type(request).__name__}")
    out = {}
    for f in dataclasses.fields(request):
        value = getattr(request, f.name)
        out[f.name] = {"$output": True} if f.name in output_fields else _encode(value, Path(folder), f.name)
    written = {}
    _collect(out, Path(folder), written)
    return out, written


def _collect(value, folder: Path, written: dict[str, Path]) -> None:
    if isinstance(value, dict):
        if len(value) == 1 and next(iter(value)) in ("$image", "$mask", "$array", "$file"):
            rel = next(iter(value.values()))
            written[Path(rel).stem] = folder / rel
            return
        for v in value.values():
            _collect(v, folder, written)
    elif isinstance(value, list):
        for v in value:
            _collect(v, folder, written)


def _encode(value, folder: Path, name: str):
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name), folder, f"{name}.{f.name}") for f in dataclasses.fields(value)}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return {"$file": _keep_file(value, folder)}
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if hasattr(value, "mode") and hasattr(value, "size") and not isinstance(value, np.ndarray):  # a PIL image
        value = np.asarray(value.convert("RGB"))
    if isinstance(value, np.ndarray):
        return _encode_array(value, folder, name)
    if isinstance(value, list | tuple):
        return [_encode(v, folder, f"{name}.{i}") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {str(k): _encode(v, folder, f"{name}.{k}") for k, v in value.items()}
    raise InputError(f"The request's '{name}' ({type(value).__name__}) cannot be written to a run card.")


def _encode_array(arr: np.ndarray, folder: Path, name: str) -> dict:
    from .imageio import save_png

    folder.mkdir(parents=True, exist_ok=True)
    if arr.dtype == bool and arr.ndim == 2:
        rel = f"{PREFIX}{name}.png"
        save_png(np.where(arr, 255, 0).astype(np.uint8), folder / rel)
        return {"$mask": rel}
    if arr.dtype == np.uint8 and arr.ndim == 3 and arr.shape[2] in (3, 4):
        rel = f"{PREFIX}{name}.png"
        save_png(arr, folder / rel)
        return {"$image": rel}
    rel = f"{PREFIX}{name}.npy"
    from .files import atomic_path

    with atomic_path(folder / rel) as tmp, open(tmp, "wb") as fh:
        np.save(fh, arr, allow_pickle=False)
    return {"$array": rel}


def _keep_file(path: Path, folder: Path) -> str:
    """The card's name for an input file: its place in the run folder, copying it there if it is elsewhere."""
    path, folder = Path(path), Path(folder)
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:
        pass
    if not path.exists():
        raise InputError(f"The request's file {path.name} does not exist; a run card cannot keep it.")
    rel = path.name if path.name.startswith(PREFIX) else f"{PREFIX}{path.name}"  # a replay's input keeps its name
    folder.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        shutil.copytree(path, folder / rel, dirs_exist_ok=True)
        return rel
    try:  # a hard link where the file system allows (a 50 MB video is not copied beside every card)
        (folder / rel).unlink(missing_ok=True)
        os.link(path, folder / rel)
    except OSError:
        shutil.copy2(path, folder / rel)
    return rel


# --- decoding ------------------------------------------------------------------------------------

def decode_request(cls: type, data, folder: Path, outputs: dict[str, Path] | None = None):
    """A ``cls`` from a card's request: its files read from ``folder``; ``outputs`` sets output fields."""
    if not isinstance(data, dict):
        raise InputError("The run card's request is not an object of fields.")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise InputError(f"The run card's request has fields this version does not know: {', '.join(sorted(unknown))}.")
    values = {}
    for name, value in data.items():
        if isinstance(value, dict) and value.get("$output"):
            if not outputs or name not in outputs:
                raise InputError(f"The run card's '{name}' is where outputs go: give --out.")
            values[name] = Path(outputs[name])
        else:
            values[name] = _decode(value, hints.get(name, Any), Path(folder))
    try:
        return cls(**values)
    except TypeError as e:
        raise InputError(f"The run card's request does not fit {cls.__name__}: {e}.") from None


def _decode(value, hint, folder: Path):
    if isinstance(value, dict) and len(value) == 1:
        (tag, rel), = value.items()
        if tag in ("$image", "$mask", "$array", "$file"):
            path = _inside(folder, rel)
            if tag == "$file":
                return path
            if tag == "$array":
                return np.load(path, allow_pickle=False)
            from .imageio import open_image

            arr = np.asarray(open_image(path))
            if tag == "$mask":
                return (arr[..., 0] if arr.ndim == 3 else arr) > 127
            return arr
    target = _dataclass_in(hint)
    if target is not None and isinstance(value, dict):
        return decode_request(target, value, folder)
    if isinstance(value, list):
        inner = _item_hint(hint)
        items = [_decode(v, inner, folder) for v in value]
        return tuple(items) if _is_tuple(hint) else items
    if isinstance(value, dict):
        return {k: _decode(v, Any, folder) for k, v in value.items()}
    return value


def _inside(folder: Path, rel) -> Path:
    if not isinstance(rel, str):
        raise InputError("A run card's file reference is not a name.")
    path = (folder / rel).resolve()
    if not path.is_relative_to(folder.resolve()):
        raise InputError(f"The run card names a file outside its folder: {rel}.")
    if not path.exists():
        raise InputError(f"The run's file {rel} is not beside its run.json.")
    return path


def _options(hint) -> tuple:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(hint)
    return (hint,)


def _dataclass_in(hint):
    for option in _options(hint):
        if isinstance(option, type) and dataclasses.is_dataclass(option):
            return option
    return None


def _is_tuple(hint) -> bool:
    return any(option is tuple or typing.get_origin(option) is tuple for option in _options(hint))


def _item_hint(hint):
    for option in _options(hint):
        args = typing.get_args(option)
        if typing.get_origin(option) in (list, tuple) and args:
            return args[0]
    return Any
