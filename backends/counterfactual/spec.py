"""The Counterfactual capability (RCSB): its name, tab, group and paper (``backends.common.capability``)."""

from backends.common.capability import Capability, Domain

SPEC = Capability(
    name="counterfactual",
    title="Counterfactual",
    group="Images & 3D",
    paper="RCSB",
    summary="draw a region, pick a class, get counterfactuals that change only that region until the classifier flips",
    domain=Domain("32×32 renders of one primitive shape in a room", ("i2sb-imagenet-freeform", "resnet50-imagenet"),
                  "RCSB's ImageNet bridge with the ResNet-50 classifier"),
)
