"""An upload into the embedded reconstructor is checked against its synthetic world on every run: the tab's own
example upload passes, the same cameras with photographs of a person get the notice (naming the published
LIFe-GoM) in the result's card — and the avatar is still made."""

from pathlib import Path

import numpy as np
import skimage
from PIL import Image

from backends.avatar.cli import _read_upload
from backends.avatar.outputs import write_example
from backends.avatar.service import ReconstructRequest, reconstruct
from backends.common.progress import run_to_result

PHOTO = Path(skimage.__file__).parent / "data" / "astronaut.png"


def test_example_upload_passes_and_photos_get_the_notice(tmp_path):
    paths = write_example(0, 2, 64, tmp_path)
    result = run_to_result(reconstruct(ReconstructRequest(subject=None, upload=_read_upload(paths["cameras"]),
                                                          iterations=1)))
    assert result.card()["domain"]["in_domain"] is True and result.notice == ""
    photo = Image.open(PHOTO).convert("RGB").resize((64, 64))
    for name in ("view0", "view1"):  # the same cameras and masks, photographs instead of renders
        photo.save(paths[name])
    result = run_to_result(reconstruct(ReconstructRequest(subject=None, upload=_read_upload(paths["cameras"]),
                                                          iterations=1)))
    card = result.card()
    assert result.n_gaussians > 0  # the run went ahead
    assert card["domain"]["in_domain"] is False and "`lifegom`" in card["domain"]["notice"]
    assert card["domain"]["inputs"] == 2 and np.isfinite(card["domain"]["distance"])
