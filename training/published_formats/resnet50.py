"""Record torchvision's ResNet-50 checkpoint format from torchvision's code, a forward fixture, and the
ImageNet class names.

    python -m training.published_formats.resnet50 --authors-code DIR

DIR holds torchvision's Python package (``DIR/torchvision``): a pytorch/vision checkout or an unpacked
torchvision wheel. Only ``torchvision/models/resnet.py`` and what it imports run: the package's
``__init__`` (which loads the compiled ops, built for CUDA torch) is skipped, in this script only.

Writes ``assets/published-formats/resnet50-imagenet.json.gz`` (``model``: ``resnet50().state_dict()``,
what ``torch.save(model.state_dict())`` stores), ``resnet50-imagenet.forward.safetensors`` (a small input
and torchvision's output with ``seeded_weights``) and ``backends/counterfactual/imagenet_categories.txt``
(the class names of torchvision's ImageNet weights, in order).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import types
from pathlib import Path

import torch
from safetensors.torch import save_file

from backends.common.published_formats import ASSETS, PublishedFormat, shapes_of, write_fixture
from backends.counterfactual.published import seeded_weights
from backends.counterfactual.resnet import CATEGORIES_FILE

MODEL_ID = "resnet50-imagenet"
FORWARD_FIXTURE = ASSETS / f"{MODEL_ID}.forward.safetensors"


def import_resnet(root: Path):
    """torchvision.models.resnet from ``root/torchvision`` without running the package ``__init__``s."""
    package = root / "torchvision"
    for name, folder in (("torchvision", package), ("torchvision.models", package / "models")):
        module = types.ModuleType(name)
        module.__path__ = [str(folder)]
        sys.modules[name] = module
    import torchvision.models.resnet as resnet

    return resnet


def version_of(root: Path) -> str:
    text = (root / "torchvision" / "version.py").read_text() if (root / "torchvision" / "version.py").exists() else ""
    version = re.search(r"__version__ = '([^']+)'", text)
    commit = re.search(r"git_version = '([0-9a-f]+)'", text)
    return f"{version[1] if version else 'unknown'} (pytorch/vision@{commit[1] if commit else 'unknown'})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--authors-code", type=Path, required=True, help="folder holding torchvision/")
    args = parser.parse_args(argv)
    root = args.authors_code.resolve()
    resnet = import_resnet(root)
    source = f"torchvision {version_of(root)}: torchvision/models/resnet.py resnet50(weights=None)"
    with torch.device("meta"):
        shapes = shapes_of(resnet.resnet50().state_dict())
    notes = ("torchvision's ImageNet weights (ResNet50_Weights.IMAGENET1K_V1/V2) are this state dict; "
             "the project saves it with torch.save(model.state_dict()) as resnet50.pth.")
    path = write_fixture(PublishedFormat(MODEL_ID, source, {"model": shapes}, notes))
    print(f"wrote {path.name}: {len(shapes)} entries")

    model = resnet.resnet50().eval()
    model.load_state_dict(seeded_weights(shapes, seed=0), strict=True)
    x = torch.rand(2, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        out = model(x)
    save_file({"x": x, "logits": out.contiguous()}, str(FORWARD_FIXTURE),
              metadata={"source": source, "shapes": json.dumps({k: list(v) for k, v in sorted(shapes.items())})})
    print(f"wrote {FORWARD_FIXTURE.name}: {FORWARD_FIXTURE.stat().st_size} bytes")

    categories = resnet.ResNet50_Weights.IMAGENET1K_V2.meta["categories"]
    assert categories == resnet.ResNet50_Weights.IMAGENET1K_V1.meta["categories"] and len(categories) == 1000
    CATEGORIES_FILE.write_text("\n".join(categories) + "\n")
    print(f"wrote {CATEGORIES_FILE.name}: {len(categories)} names")


if __name__ == "__main__":
    main()
