"""What the splat renderers share: 3DGS's compositing constants and the rendered result.

``render`` (torch, gsplat) and ``render_fast`` (numba tiles) both import this module, so neither imports
the other's module-level names: ``render.render(backend="fast")`` is the one way between them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

EPS2D = 0.3  # px², the low-pass filter added to every projected covariance
ALPHA_MIN = 1.0 / 255.0
ALPHA_MAX = 0.999
T_MIN = 1e-4


@dataclass
class Render:
    rgb: torch.Tensor  # H×W×C, composited over the background
    alpha: torch.Tensor  # H×W accumulated opacity
    depth: torch.Tensor  # H×W expected z-depth of the visible Gaussians (0 where alpha is 0)
