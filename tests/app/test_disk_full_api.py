"""The disk fills while a tab writes its outputs: the action fails with "Not enough disk space to write
<file>: free N MB" (not an internal error), no half-written file is left to offer, and the next run works."""

import errno
import os
from pathlib import Path

import pytest
from PIL import Image

from app.components import downloads
from backends.common import files

from .test_counterfactual_api import BRIDGE, CLASSIFIER, EXAMPLES, editor_payload


def test_counterfactual_run_on_a_full_disk(client, tmp_path, monkeypatch):
    payload, _ = editor_payload(tmp_path, EXAMPLES / "cube.png", (slice(64, 224), slice(48, 208)))
    args = (payload, "sphere", 1, 4, 1.5, 0.6, 0, BRIDGE, CLASSIFIER)
    real_save = Image.Image.save
    written = []

    def filling(self, fp, *a, **kw):  # the run's own writes (to .part- files) hit a full disk after the first
        if files.PART in str(fp):
            if written:
                real_save(self, fp, *a, **kw)
                Path(fp).write_bytes(Path(fp).read_bytes()[:100])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            written.append(fp)
        return real_save(self, fp, *a, **kw)

    monkeypatch.setattr(Image.Image, "save", filling)
    with pytest.raises(Exception, match=r"Not enough disk space to write mask\.png: free \d+ MB") as info:
        client.predict(*args, api_name="/counterfactual_generate")
    assert "Internal error" not in str(info.value)
    assert not list(downloads.output_root().rglob(f"*{files.PART}*"))  # nothing half-written anywhere
    monkeypatch.setattr(Image.Image, "save", real_save)
    *_, files_out = client.predict(*args, api_name="/counterfactual_generate")  # space again: it works
    assert {"original.png", "mask.png", "run.json"} <= {Path(f).name for f in files_out}
