"""Models of the Avatar capability: the embedded reconstructor and the body templates it is built on.

anny ships inside its pip package (Apache-2.0 code, CC0 MakeHuman assets); its model data is built from
the package once per machine. The coarse mesh the reconstructor is trained on ships with it. SMPL-X (the paper's template) is used only when the
user supplies its files: its licence forbids shipping them.
"""

from pathlib import Path

from backends.common.registry import ModelSpec

EMBEDDED_MODEL = "avatar-embedded"
PUBLISHED_MODEL = "lifegom"  # the authors' checkpoint (registry id), on the user's SMPL-X (registry id smplx)

SPECS = [
    ModelSpec(
        id="avatar-embedded", capability="avatar", kind="avatar-reconstructor", source="embedded",
        location="avatar-embedded",
        files=("config.json", "model.safetensors", "ablation/multi-res/config.json",
               "ablation/multi-res/model.safetensors", "ablation/single-res/config.json",
               "ablation/single-res/model.safetensors", "template.safetensors",
               "ablation/multi-res/template.safetensors", "ablation/single-res/template.safetensors"),
        sha256={
            "ablation/multi-res/config.json": "2976d1b757d605f8f5f0c16e0b5a3d77203bc3d974c3382f3003d64bf1ab011c",
            "ablation/multi-res/model.safetensors": "2034426e991b4874d1884c4730c09013976b2377b4ee53e31aa0aa6b7dc9eea7",
            "ablation/multi-res/template.safetensors": "1ef482845bb3892f674b74e7bcf97320c583bdb06196643e6832627db52fea5b",
            "ablation/single-res/config.json": "6e26b6a111d929757c1b27c2b659cfc3f1df4ba78976c72493e39e80b22a68a1",
            "ablation/single-res/model.safetensors": "d8779754b607395e942448c11194f7eb31b01d38ea9e8bf675f369a16e8baab6",
            "ablation/single-res/template.safetensors": "1ef482845bb3892f674b74e7bcf97320c583bdb06196643e6832627db52fea5b",
            "config.json": "5b8a5453ecd3ce0c1e26c6351ecb81aa59d8ff75c05d07ff0e230de027e72e29",
            "model.safetensors": "db1ded364615ab087a4a4c1966530c85bcd028bbc5471659d6806b722f1eec7a",
            "template.safetensors": "1ef482845bb3892f674b74e7bcf97320c583bdb06196643e6832627db52fea5b",
        },
        license="Apache-2.0 (trained by this project on CC0 anny bodies)",
        description=("LIFe-GoM reconstructor sized for a CPU (small CNN encoder, attention over views, MLP + "
                     "self-attention over 752 coarse vertices, 3 feedback iterations), trained at 64² on "
                     "synthetic anny people (training/avatar_reconstructor.py); template.safetensors is "
                     "the coarse body mesh it was trained on (training/avatar_template.py); ablation/ holds "
                     "the equal-steps multi- vs single-resolution pair the bench compares."),
    ),
    ModelSpec(
        id="anny-body", capability="avatar", kind="body-model", source="package", location="anny",
        files=("data/mpfb2/3dobjs/base.obj", "data/mpfb2/rigs/standard/rig.default.json",
               "data/mpfb2/rigs/standard/weights.default.json"),  # the mesh and rig its build reads (anny 0.6.2)
        sha256={
            "data/mpfb2/3dobjs/base.obj": "8e761e6624b8f54536409135d1636da63b32486a90d4897f84e121d144f6fb4c",
            "data/mpfb2/rigs/standard/rig.default.json": "8b949de35c2dd70dbb5094e57a8586c3b9a9f650775a293212581a8f67be6797",
            "data/mpfb2/rigs/standard/weights.default.json":
                "c3df45e2f2165663b483b7fa3dfed6f1bd5e2dd48d8825308de1a8453a88b111",
        },
        license="Apache-2.0 (code), CC0 (MakeHuman/MPFB2 assets)",
        description="anny body model (NAVER, pip package `anny`): posing and body shape. Its model data is "
                    "built from the package on first use (about a minute, offline, deterministic) into the "
                    "models folder's cache/anny; the avatar's coarse mesh ships with the model instead.",
        how_to_get="nothing to download: it is installed with the suite (pip `anny`).",
    ),
    ModelSpec(
        id="lifegom", capability="avatar", kind="avatar-reconstructor", source="local", location="lifegom",
        files=("exp_thuman2.0_view3/checkpoints/iter_200000.pt",),  # lifegom_published.CHECKPOINT_FILE
        license="MIT (wenj/LIFe-GoM code and checkpoints); needs SMPL-X (its own licence, below)",
        description="LIFe-GoM's published THuman2.0 3-view checkpoint (ResNet-18 encoder, multi-view transformer, "
                    "Point Transformer, 3 feedback iterations, 1024² inputs) run on a CPU by "
                    "backends/avatar/lifegom_published.py; it takes exactly 3 views and the user's SMPL-X body.",
        how_to_get="download the checkpoints from the authors' Box folder "
                   "https://uofi.box.com/s/gi8sv875hard3eopjrmly8yxx2r1w7k8 (README 'Inference' of "
                   "github.com/wenj/LIFe-GoM) and put the exp_thuman2.0_view3 folder (its checkpoints/iter_<N>.pt; "
                   "the final one is iter_200000.pt) in the `lifegom` folder of the models folder; also add "
                   "SMPL-X (model `smplx`).",
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


def model_ready(name: str = EMBEDDED_MODEL, models_dir: str | None = None) -> bool:
    """True when the model's files are present (nothing is loaded; torch-free, so the tab can ask at build time);
    the published model also needs SMPL-X. Another name is a folder holding a ``model.safetensors``."""
    if name not in (EMBEDDED_MODEL, PUBLISHED_MODEL):
        return Path(name, "model.safetensors").is_file()
    from backends.common.registry import default_registry, model_status
    from backends.common.settings import Settings, get_settings

    settings = get_settings() if models_dir is None else Settings(models_dir=Path(models_dir))
    try:
        needed = [name] + (["smplx"] if name == PUBLISHED_MODEL else [])
        return all(model_status(default_registry().get(m), settings).present for m in needed)
    except KeyError:
        return False


def default_model(models_dir: str | None = None) -> str:
    """The reconstructor a new session starts with: the authors' checkpoint when it and SMPL-X are present here,
    else the embedded one (torch-free, for the tab's build)."""
    return PUBLISHED_MODEL if model_ready(PUBLISHED_MODEL, models_dir) else EMBEDDED_MODEL


def offered_models(models_dir: str | None = None) -> list[str]:
    """The reconstructors a person may choose here: the embedded one, and the authors' checkpoint only when it
    and SMPL-X are present (torch-free)."""
    return [EMBEDDED_MODEL] + ([PUBLISHED_MODEL] if model_ready(PUBLISHED_MODEL, models_dir) else [])
