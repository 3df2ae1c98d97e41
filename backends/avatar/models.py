"""Models of the Avatar capability: the body templates the avatar is built on.

anny ships inside its pip package (Apache-2.0 code, CC0 MakeHuman assets); what is registered here is
its one-time build, cached in the models folder. SMPL-X (the paper's template) is used only when the
user supplies its files: its licence forbids shipping them.
"""

from backends.common.registry import ModelSpec

SPECS = [
    ModelSpec(
        id="anny-body", capability="avatar", kind="body-model", source="local", location="cache/anny",
        files=("coarse-v1-1500.npz",),
        license="Apache-2.0 (code), CC0 (MakeHuman/MPFB2 assets)",
        description="anny body model (NAVER, pip package `anny`): its built model data and the coarse "
                    "1,500-face reconstruction mesh, cached on first use.",
        how_to_get="nothing to download: it is installed with the suite (pip `anny`) and builds offline on "
                   "first use (a few minutes, once per machine) into this folder.",
    ),
    ModelSpec(
        id="smplx", capability="avatar", kind="body-model", source="local", location="smplx",
        files=("SMPLX_NEUTRAL.npz",),
        license="SMPL-X Model License (MPI; non-commercial, registration required; may not be redistributed)",
        description="SMPL-X, the body template of the published LIFe-GoM; optional.",
        how_to_get="register at https://smpl-x.is.tue.mpg.de, download the SMPL-X v1.1 npz models and put "
                   "SMPLX_NEUTRAL.npz in the `smplx` folder of the models folder. The suite cannot ship it.",
    ),
]
