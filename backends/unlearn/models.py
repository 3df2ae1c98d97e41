"""Models of the Unlearning capability: the embedded label-conditional teacher and the networks distilled from it
for the default forget choices (``training/unlearn_teacher.py``, ``training/unlearn_generators.py``), and one SFD
generator distilled from the text teacher (3D Layout's ``layout3d-embedded``, registered by that capability)."""

from backends.common.registry import ModelSpec

FILES = ("config.json", "model.safetensors")
KINDS = {"sfd": "sfd-generator", "esd": "esd-model", "salun": "salun-model"}
WHAT = {
    "sfd": "SFD one-step generator distilled from the teacher, forgetting {forget} (mapped to {safe}).",
    "esd": "ESD-style fine-tune of the teacher that forgets {forget} (the baseline beside SFD → {safe}).",
    "salun": "SalUn (saliency-masked) fine-tune of the teacher that forgets {forget} (remapped to {safe}).",
}


def _network(method: str, forget: str, safe: str, config_sha: str, weights_sha: str) -> ModelSpec:
    """A shipped network of one method for one forget choice (``assets/unlearn-<method>-<forget>-to-<safe>/``)."""
    name = f"unlearn-{method}-{forget}-to-{safe}"
    return ModelSpec(
        id=name, capability="unlearn", kind=KINDS[method], source="embedded", location=name, files=FILES,
        sha256={"config.json": config_sha, "model.safetensors": weights_sha},
        license="Apache-2.0 (trained by this project)", size_mb=4.15,
        description=WHAT[method].format(forget=forget, safe=safe),
    )


SPECS = [
    ModelSpec(
        id="unlearn-teacher", capability="unlearn", kind="label-diffusion", source="embedded", location="unlearn-teacher",
        files=FILES,
        sha256={
            "config.json": "0d90158b95378b1b1252da0a4a7f30e95c438b998f73d7fef35351bde2554f64",
            "model.safetensors": "1a081ed71e5275d8d8c7d684dbe9cd8569ee86d0acc0cffd23964cf830413064",
        },
        license="Apache-2.0 (trained by this project)", size_mb=4.15,
        description="Label-conditional ε-prediction DDPM of 32×32 shape images (5 shapes + null label), the teacher.",
    ),
    _network("sfd", "cone", "cylinder",
             "2c71cec21e04a8b0c5468b3b24e04520c8a22468ba21b034111d27b344a0ac61",
             "4c5f97e56720ef3083c9a6bf5a5ed895d286f7e25b53535af267c5c4614b6e43"),
    _network("sfd", "cube", "sphere",
             "d21386a849c4843889b874e6692f2fef4c2e0bdb648dc488a7e87629b523c604",
             "3bc1a17cceed5f2af689a7b35af08323e1f55e33ad69c7dc7b1021565ca24ef8"),
    _network("esd", "cone", "cylinder",
             "447f1fbfabc1fbc915c410e546d6c7736c0e800cb9cda700447efe965076c946",
             "7f4406e3b333538b3a6488541ffb1773c3f03f73f6612e4e51a00e39538ec84e"),
    _network("esd", "cube", "sphere",
             "8d74c4c5f02f7ea4b31afeca2434eda5eaa698bc2a01c95035947ee764f19f45",
             "cef80f2f419afffd79e24c08e0fa815a674c6ffb3165788b34ce0ecaf7927bf8"),
    _network("salun", "cone", "cylinder",
             "ef4209a69895d947178c31b2e0c23255710e14c4edbdf6498d0511f260f72514",
             "a345d2638c26c3595c44165f7645e9e06f34a1d6894eb5ac6dcf6eccd9445246"),
    _network("salun", "cube", "sphere",
             "8b68a4fe7172fe553dc7e169f03c613c94e51cc65ab0972ea9915d77ecb0531f",
             "c271d8d424612c30fc9eafe88ad697f8036f4a43a80ce0e9748acfb0d2b9f29b"),
    ModelSpec(
        id="unlearn-text-sfd-red-to-blue", capability="unlearn", kind="sfd-generator", source="embedded",
        location="unlearn-text-sfd-red-to-blue", files=("config.json", "diffusion_pytorch_model.safetensors"),
        sha256={
            "config.json": "0191b5d0d65154681c439ee99e61e59ce8b123bda6f59cbaba7181aea233be9a",
            "diffusion_pytorch_model.safetensors": "53ca5ae02c7788c0ecd711eba5465a898ce368e06849f21610a98a5defcf0f7e",
        },
        license="Apache-2.0 (trained by this project)", size_mb=11.73,
        description="SFD one-step generator distilled from the 3D Layout text-to-image model (layout3d-embedded), "
                    "forgetting the word red (mapped to blue).",
    ),
]
