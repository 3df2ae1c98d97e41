"""The tabs' own output folders are bounded like Gradio's cache: old ones are deleted on a schedule (and
those an earlier server process left), a process keeps at most KEEP, and a running job's folder stays."""

import os
import time

from app.components import downloads
from backends.common import files
from backends.common import settings as settings_mod


def age(folder, seconds):
    then = time.time() - seconds
    for p in [*folder.rglob("*"), folder]:
        os.utime(p, (then, then))


def test_old_output_folders_go_away_on_a_schedule(tmp_path, monkeypatch):
    monkeypatch.setattr(downloads, "_root", tmp_path / "outputs")
    monkeypatch.setenv("ICLR25_RUNS_DIR", str(tmp_path / "runs"))
    settings_mod.reset_settings()
    old, new, running = (downloads.new_output_dir(p) for p in ("layout3d", "textedit", "strategist"))
    for d in (old, new, running):
        (d / "image.png").write_bytes(b"png")
    age(old, 120)
    lock = files.FolderLock(running)
    assert lock.acquire()
    age(running, 120)
    earlier = tmp_path / "outputs" / "avatar-from-an-earlier-server"  # not made by this process
    earlier.mkdir()
    age(earlier, 120)
    cleanup = downloads.Cleanup(every_s=0.2, max_age_s=60, root=tmp_path / "outputs").start()
    try:
        assert not old.exists() and not earlier.exists()  # the pass at start-up
        (new / "more.png").write_bytes(b"png")
        age(new, 120)
        deadline = time.time() + 30
        while (new.exists() or cleanup.passes < 2) and time.time() < deadline:
            time.sleep(0.05)
        assert not new.exists() and cleanup.passes >= 2  # a later, scheduled pass
        assert running.exists() and (running / "image.png").exists()
    finally:
        cleanup.stop()
        lock.release()
    assert not cleanup.thread.is_alive()


def test_a_process_keeps_at_most_keep_output_folders(tmp_path, monkeypatch):
    monkeypatch.setattr(downloads, "_root", tmp_path / "outputs")
    monkeypatch.setattr(downloads, "KEEP", 3)
    monkeypatch.setattr(downloads, "_dirs", type(downloads._dirs)())
    made = [downloads.new_output_dir("counterfactual") for _ in range(5)]
    assert [d.exists() for d in made] == [False, False, True, True, True]
    assert all(d.parent == tmp_path / "outputs" for d in made)
