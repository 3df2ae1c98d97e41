"""The Optimal Transport capability's typed requests (torch-free: the tab and the action catalog import them)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from backends.common.errors import InputError
from backends.common.params import param, seed_param

DENSITY_CLASSES = ("white_noise", "grf_rough", "grf_moderate", "grf_smooth", "log_grf", "cauchy", "shapes")
COSTS = ("sqeuclidean", "l1")
CLOUD_KINDS = ("blobs", "moons", "ring", "square", "gaussian", "uniform")
MAX_CLOUD_POINTS = 4096  # per cloud: the plan and exact EMD beside it stay seconds-to-minutes on a CPU
EPSILON_HELP = ("Entropic regularisation ε = 1/γ, relative to the cost scaled to [0, 1]: smaller is closer to exact "
                "OT and harder (a relative cost gap of about log(n)·ε or better).")


def _epsilon(default: float):
    # no declared range: a range would refuse ε = 0 with a generic "less than the minimum"; check_epsilon says why
    return param(default, label="ε (= 1/γ)", cli=("--eps",), help=EPSILON_HELP + " Must be > 0 and at most 1.")


def check_epsilon(epsilon: float) -> None:
    """ε in (0, 1], or a message a user can act on."""
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0):
        raise InputError(f"ε must be > 0 (got {epsilon!r}): ε = 0 is exact OT, which an entropic solver cannot reach; "
                         "use a small ε such as 0.001, or the exact EMD in the convergence section.")
    if epsilon > 1:
        raise InputError(f"ε must be at most 1 (got {epsilon!r}): the cost is scaled to [0, 1], so a larger ε only "
                         "blurs the plan towards the independent coupling.")


@dataclass
class ColourTransferRequest:
    """OT between the colour distributions of two photos (k-means palettes), the source re-coloured."""

    source: object = param(help="The photo to re-colour (a path, a PIL image or an H×W×3 array).")
    reference: object = param(help="The photo whose colours it takes on.")
    colours: int = param(256, minimum=8, maximum=1024, label="Colours per photo (k-means)",
                         help="Each photo's pixels are compressed to this many weighted colours; the plan is "
                              "colours × colours.")
    epsilon: float = _epsilon(2.0**-10)
    max_side: int = param(512, minimum=32, maximum=2048, label="Longest side of the result (px)",
                          help="Larger photos are shrunk to this size first.")
    seed: int = seed_param("Same seed and photos → the same palettes, plan and picture (k-means' sampling).")

    def validate(self) -> None:
        check_epsilon(self.epsilon)


@dataclass
class DensityRequest:
    """Two grey images as densities on an m×m grid, the plan between them and its displacement interpolation."""

    source: object | None = param(None, help="The first density: a grey image or a non-negative 2-D array (empty: "
                                      "generate class_a).")
    target: object | None = param(None, help="The second density (empty: generate class_b).")
    class_a: str = param("grf_smooth", choices=DENSITY_CLASSES, label="Generated first density",
                         help="DOTmark-style class used when no first image is given.")
    class_b: str = param("shapes", choices=DENSITY_CLASSES, label="Generated second density",
                         help="DOTmark-style class used when no second image is given.")
    side: int = param(32, minimum=8, maximum=64, label="Grid side m (n = m² points)",
                      help="Both images are resized to m×m; the plan is n × n with n = m².")
    cost: str = param("sqeuclidean", choices=COSTS, help="Ground cost between pixels (the paper's two), scaled to "
                                                         "[0, 1].")
    epsilon: float = _epsilon(2.0**-10)
    mass_where: str = param("bright", choices=("bright", "dark"), label="Mass where the image is",
                            help="bright: white pixels carry mass (DOTmark's convention); dark: a drawing on white.")
    frames: int = param(9, minimum=2, maximum=33, label="Interpolation frames",
                        help="Frames of the displacement interpolation from t = 0 to 1.")
    seed: int = seed_param("Same seed → the same generated densities.")

    def validate(self) -> None:
        check_epsilon(self.epsilon)


@dataclass
class ConvergenceRequest:
    """One problem solved by every method of ``backends.ot.methods``, each traced against its own wall time."""

    class_a: str = param("grf_smooth", choices=DENSITY_CLASSES, label="First density",
                         help="DOTmark-style class of the first density.")
    class_b: str = param("grf_smooth", choices=DENSITY_CLASSES, label="Second density",
                         help="DOTmark-style class of the second density (another seed).")
    side: int = param(24, minimum=8, maximum=48, label="Grid side m (n = m² points)",
                      help="The problem is two m×m densities: n = m² points each.")
    cost: str = param("sqeuclidean", choices=COSTS, help="Ground cost between pixels, scaled to [0, 1].")
    epsilon: float = _epsilon(2.0**-11)
    budget: float = param(10.0, minimum=0.5, maximum=120.0, step=0.5, label="Budget per method (s)",
                          help="Each method stops after this many seconds (said so in its end point).")
    seed: int = seed_param("Same seed → the same pair of densities.")

    def validate(self) -> None:
        check_epsilon(self.epsilon)


@dataclass
class PointCloudRequest:
    """Two weighted point sets (uploads or generated ones), the MDOT-TNT plan between them and exact EMD beside it."""

    source: object | None = param(None, help="The first point set: an (n, d) array of points, d = 2 or 3, or (n, d + 1) "
                                             "with a weights column when weights_column is set (empty: generate "
                                             "kind_a).")
    target: object | None = param(None, help="The second point set, the same dimension d (empty: generate kind_b).")
    weights_column: bool = param(False, label="Last column is a weight",
                                 help="Uploaded arrays' last column gives each point's mass (non-negative, normalised "
                                      "to 1); otherwise every point weighs the same.")
    kind_a: str = param("blobs", choices=CLOUD_KINDS, label="Generated first cloud",
                        help="Used when no first point set is given (2-D, in [0, 1]²).")
    kind_b: str = param("moons", choices=CLOUD_KINDS, label="Generated second cloud",
                        help="Used when no second point set is given.")
    n: int = param(300, minimum=8, maximum=MAX_CLOUD_POINTS, label="Points per generated cloud",
                   help="The plan is n × n for two generated clouds; uploads keep their own size (at most "
                        f"{MAX_CLOUD_POINTS} points each).")
    cost: str = param("sqeuclidean", choices=COSTS, help="Ground cost between points (the paper's two), scaled to "
                                                         "[0, 1].")
    epsilon: float = _epsilon(2.0**-10)
    links: int = param(300, minimum=0, maximum=5000, label="Couplings drawn",
                       help="The plot draws this many of the plan's strongest entries as segments (darker: more mass).")
    seed: int = seed_param("Same seed → the same generated clouds.")

    def validate(self) -> None:
        check_epsilon(self.epsilon)
