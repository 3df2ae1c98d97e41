"""Video Depth through gradio_client: a stopped run resumes by its id from another session (as after a
restart of the server, when the session that started it is gone); ids that name no run are clear errors."""

import re
import time

import numpy as np
import pytest
from gradio_client import Client, handle_file

from .test_videodepth_api import example, is_image, settings


def test_a_stopped_run_resumes_by_its_id_from_a_new_session(client, live_app):
    clip = example(client, "room A · 48 frames")
    job = client.submit(handle_file(clip), *settings(stride=4, baseline=0), api_name="/videodepth_run")
    deadline = time.time() + 120
    while time.time() < deadline and not any(is_image(o[0]) for o in job.outputs()):
        time.sleep(0.05)  # the first depth preview: a window is done
    assert client.predict(api_name="/videodepth_stop") == "Stopping…"
    status = job.result(timeout=120)[1]
    assert status.startswith("Stopped by the user after"), status
    run_id = re.search(r"run id `([0-9a-f]{12})`", status).group(1)

    other = Client(live_app[1], verbose=False)  # no session state: only the id is known
    try:
        with pytest.raises(Exception, match="no stopped run to resume in this session"):
            other.predict(api_name="/videodepth_resume")
        _, status, video, files, _, summary = other.predict(run_id, api_name="/videodepth_resume_run")
        assert status.startswith("**Done:** 48 frame(s)") and f"run `{run_id}`" in status
        assert summary["run_id"] == run_id and summary["resumed_at_frame"] > 0
        assert np.load(next(f for f in files if f.endswith(".npz")))["disparity"].shape == (48, 64, 64)
        with pytest.raises(Exception, match="has finished"):
            other.predict(run_id, api_name="/videodepth_resume_run")
        with pytest.raises(Exception, match="is not a run id"):
            other.predict("../../etc/passwd", api_name="/videodepth_resume_run")
        with pytest.raises(Exception, match="There is no run 0123456789ab"):
            other.predict("0123456789ab", api_name="/videodepth_resume_run")
    finally:
        other.close()
