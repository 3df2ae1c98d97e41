"""Models of the Unlearning capability: the embedded label-conditional teacher and the networks distilled from it
for the default forget choices (``training/unlearn_teacher.py``, ``training/unlearn_generators.py``)."""

from backends.common.registry import ModelSpec

SPECS = [
    ModelSpec(
        id="unlearn-teacher", capability="unlearn", kind="label-diffusion", source="embedded", location="unlearn-teacher",
        files=("config.json", "model.safetensors"),
        sha256={
            "config.json": "4540b9e5ab9292acb283dd47220e8de661f19480bfacb57ebfbb456ade888d1c",
            "model.safetensors": "a637a86c1cc9221a2bbe055fe33dd36e34c8c4d21331eb78f4c912240a10a2d5",
        },
        license="Apache-2.0 (trained by this project)", size_mb=4.15,
        description="Label-conditional ε-prediction DDPM of 32×32 shape images (5 shapes + null label), the teacher.",
    ),
    ModelSpec(
        id="unlearn-sfd-cone-to-cylinder", capability="unlearn", kind="sfd-generator", source="embedded", location="unlearn-sfd-cone-to-cylinder",
        files=("config.json", "model.safetensors"),
        sha256={
            "config.json": "66ba744b810e3951e550871a22c37f19d24c2707fc1688f7083a3fbe25d210c9",
            "model.safetensors": "78223d9e3aeb434eae660e8ff00a5aca3d7250b18a120eb031d0c74960ff55d8",
        },
        license="Apache-2.0 (trained by this project)", size_mb=4.15,
        description="SFD one-step generator distilled from the teacher, forgetting cone (mapped to cylinder).",
    ),
    ModelSpec(
        id="unlearn-sfd-cube-to-sphere", capability="unlearn", kind="sfd-generator", source="embedded", location="unlearn-sfd-cube-to-sphere",
        files=("config.json", "model.safetensors"),
        sha256={
            "config.json": "3e772a392e7e7b69987f0863b392e0538c030640bf1df15d86bfebad5c164174",
            "model.safetensors": "60ae9a960478a0cf0979c56640a02fc6d6b51d29cd657154e5a7f15f6683b58a",
        },
        license="Apache-2.0 (trained by this project)", size_mb=4.15,
        description="SFD one-step generator distilled from the teacher, forgetting cube (mapped to sphere).",
    ),
    ModelSpec(
        id="unlearn-esd-cone-to-cylinder", capability="unlearn", kind="esd-model", source="embedded", location="unlearn-esd-cone-to-cylinder",
        files=("config.json", "model.safetensors"),
        sha256={
            "config.json": "b50b74489c877c2c240f532cb97dac40cb6469d4ce5f57c8aba81611760f32ba",
            "model.safetensors": "fe8bc11d4865b7e37e43723d2e1297d9abbfbd8b4f26ef414e55f4f1414f4fe0",
        },
        license="Apache-2.0 (trained by this project)", size_mb=4.15,
        description="ESD-style fine-tune of the teacher that forgets cone (the baseline beside SFD → cylinder).",
    ),
    ModelSpec(
        id="unlearn-esd-cube-to-sphere", capability="unlearn", kind="esd-model", source="embedded", location="unlearn-esd-cube-to-sphere",
        files=("config.json", "model.safetensors"),
        sha256={
            "config.json": "d2550a0f1bf22978f2cc451718c823a53a21b4b58860b7c20b7e11e20772ef11",
            "model.safetensors": "e887252b309de49579196454df4b756c92c6c781a8ffbf26e1b1c51bfa219aa7",
        },
        license="Apache-2.0 (trained by this project)", size_mb=4.15,
        description="ESD-style fine-tune of the teacher that forgets cube (the baseline beside SFD → sphere).",
    ),
]
