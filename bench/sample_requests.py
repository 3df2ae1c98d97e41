"""Small, valid inputs for every tab's actions through ``gradio_client``: one copy for the benches
that drive a live server (soak) and the tests that do (first actions, light beside heavy). The server runs
each as its action (``backends.common.action``); the benches that run actions in-process use ``bench.actions``."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CF_EXAMPLES = ROOT / "app" / "static" / "examples" / "counterfactual"
CF_MODELS = ("counterfactual-bridge", "counterfactual-classifier")
NEUTRAL_POSE = [0, 45, 45, 0, 0, 5, 5, 0, 0, 5, 5, 0, 0, 0, 0]  # the Avatar sliders in the tab's order (A-pose)
LAYOUT = {"scene_prompt": "a green lawn under a pale blue sky", "boxes": [
    {"prompt": "a red cube", "center": [-0.2, 1.0, 0.35], "size": [0.7, 0.7, 0.7], "yaw_deg": 0}]}


def counterfactual_editor(folder: Path) -> dict:
    """The Counterfactual image editor's value: the cube example enlarged 8× with a drawn region over the
    cube, written as PNGs in ``folder`` and referenced as uploads."""
    import numpy as np
    from gradio_client import handle_file
    from PIL import Image

    small = np.asarray(Image.open(CF_EXAMPLES / "cube.png").convert("RGB"))
    Image.fromarray(np.repeat(np.repeat(small, 8, 0), 8, 1)).save(folder / "bg.png")
    layer = np.zeros((small.shape[0] * 8, small.shape[1] * 8, 4), np.uint8)
    layer[64:224, 48:208] = (255, 0, 80, 255)
    Image.fromarray(layer, "RGBA").save(folder / "layer.png")
    return {"background": handle_file(str(folder / "bg.png")), "layers": [handle_file(str(folder / "layer.png"))],
            "composite": None}


def videodepth_settings(steps: int = 1, stride: int = 12, max_frames: int = 16, baseline: int = 0) -> list:
    """The Video Depth run / estimate settings after the file, at 64 pixels."""
    return ["videodepth-embedded", 64, steps, stride, max_frames, "Spectral", baseline, 0, "zero", "auto"]
