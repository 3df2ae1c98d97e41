"""Output files appear whole or not at all: a disk that fills mid-write is a clear message, leaves no
partial file, and keeps the previous outputs; folder locks, crash leftovers and age-based sweeps."""

import errno
import os
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from backends.common import files
from backends.common.errors import DiskFullError
from backends.common.imageio import save_depth_npy, save_png
from backends.common.video import probe_video, write_mp4


def leftovers(folder):
    return sorted(p.name for p in folder.rglob(f"*{files.PART}*"))


class FillingFile:
    """A real file whose ``write`` stores half of what it is given, then fails as a full disk does."""

    def __init__(self, f):
        self.f = f

    def write(self, data):
        self.f.write(bytes(data)[: len(data) // 2])
        self.f.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def test_write_bytes_on_a_full_disk_keeps_the_previous_file_and_no_partial(tmp_path, monkeypatch):
    target = files.write_text(tmp_path / "card.json", '{"old": true}')
    real_open = open
    monkeypatch.setattr(files, "open", lambda p, mode="r", **kw: FillingFile(real_open(p, mode, **kw)), raising=False)
    with pytest.raises(DiskFullError, match=r"Not enough disk space to write card\.json: free \d+ MB"):
        files.write_text(target, '{"new": true, "padding": "' + "x" * 1000 + '"}')
    assert target.read_text() == '{"old": true}'  # the previous output, whole
    assert leftovers(tmp_path) == []  # the half-written temporary file is gone


def test_other_write_errors_are_not_called_a_full_disk(tmp_path, monkeypatch):
    real_open = open

    def broken(p, mode="r", **kw):
        real_open(p, mode, **kw).close()
        raise PermissionError(errno.EACCES, "denied")

    monkeypatch.setattr(files, "open", broken, raising=False)
    with pytest.raises(PermissionError):
        files.write_bytes(tmp_path / "a.bin", b"123")
    assert list(tmp_path.iterdir()) == []


def test_png_and_npy_writers_are_atomic_on_a_full_disk(tmp_path, monkeypatch):
    old = np.full((16, 16, 3), 7, np.uint8)
    png = save_png(old, tmp_path / "image.png")
    npy = save_depth_npy(np.ones((4, 4)), tmp_path / "depth.npy")
    before = png.read_bytes(), npy.read_bytes()
    real_save = Image.Image.save

    def filling_save(self, fp, *args, **kwargs):  # PIL encodes to its file, then the disk is full
        real_save(self, fp, *args, **kwargs)
        with open(fp, "r+b") as f:
            f.truncate(os.path.getsize(fp) // 2)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Image.Image, "save", filling_save)
    with pytest.raises(DiskFullError, match="to write image.png"):
        save_png(np.zeros((16, 16, 3), np.uint8), png)
    def filling_np_save(f, arr):
        f.write(b"\x93NUMPY")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(np, "save", filling_np_save)
    with pytest.raises(DiskFullError, match="to write depth.npy"):
        save_depth_npy(np.zeros((4, 4)), npy)
    assert (png.read_bytes(), npy.read_bytes()) == before
    assert leftovers(tmp_path) == []


def test_a_video_cut_short_by_a_full_disk_leaves_no_mp4(tmp_path, monkeypatch):
    import imageio_ffmpeg

    frames = [np.full((16, 16, 3), i * 20, np.uint8) for i in range(6)]
    old = write_mp4(frames, tmp_path / "clip.mp4", fps=5)
    old_bytes = old.read_bytes()
    real = imageio_ffmpeg.write_frames

    class Filling:  # ffmpeg takes a few frames, then its pipe breaks (what ffmpeg's own ENOSPC looks like)
        def __init__(self, *args, **kwargs):
            self.real, self.frames = real(*args, **kwargs), 0

        def send(self, value):
            if value is not None and self.frames == 3:
                raise BrokenPipeError(errno.EPIPE, "Broken pipe")
            self.frames += value is not None
            self.real.send(value)

        def close(self):
            self.real.close()

    monkeypatch.setattr(imageio_ffmpeg, "write_frames", Filling)
    monkeypatch.setattr("backends.common.video.free_mb", lambda folder: 3.0)  # what a full disk reports
    with pytest.raises(DiskFullError, match=r"to write clip\.mp4: free 3 MB"):
        write_mp4(frames, tmp_path / "clip.mp4", fps=5)
    assert old.read_bytes() == old_bytes and probe_video(old).source_frames == 6
    assert leftovers(tmp_path) == []
    monkeypatch.setattr("backends.common.video.free_mb", lambda folder: 5000.0)  # plenty free: a real failure
    with pytest.raises(BrokenPipeError):
        write_mp4(frames, tmp_path / "clip.mp4", fps=5)
    assert leftovers(tmp_path) == []


def test_a_video_depth_run_on_a_full_disk_says_so_and_keeps_the_last_outputs(tmp_path, monkeypatch):
    from backends.videodepth.service import VideoDepthRequest, VideoDepthResult, estimate_depth
    from tests.backends.videodepth.conftest import tiny_pipeline

    pipe = tiny_pipeline()
    src = write_mp4([np.roll(np.arange(16 * 24 * 3, dtype=np.uint8).reshape(16, 24, 3), i, 1) for i in range(6)],
                    tmp_path / "in.mp4", fps=10)
    out = tmp_path / "out"
    req = VideoDepthRequest(src, out, max_side=24, num_inference_steps=1, window=8, stride=6, baseline_frames=0)
    first = list(estimate_depth(req, pipe))[-1]
    assert isinstance(first, VideoDepthResult)
    old_zip = first.png_zip.read_bytes()
    real_write = zipfile.ZipFile.write

    def filling(self, filename, arcname=None, *a, **kw):
        if arcname == "depth_00003.png":  # the disk fills while the PNG zip is written
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(self, filename, arcname, *a, **kw)

    monkeypatch.setattr(zipfile.ZipFile, "write", filling)
    with pytest.raises(DiskFullError, match=r"Not enough disk space to write depth_png16\.zip: free \d+ MB"):
        list(estimate_depth(req, pipe))
    assert first.png_zip.read_bytes() == old_zip  # the last run's download is still whole
    with zipfile.ZipFile(first.png_zip) as z:
        assert z.testzip() is None and len(z.namelist()) == 6
    assert leftovers(out) == [] and not files.is_locked(out)


def test_folder_lock_is_exclusive_and_a_dead_holders_lock_is_stale(tmp_path):
    folder = tmp_path / "run"
    lock = files.FolderLock(folder)
    assert lock.acquire() and files.is_locked(folder)
    assert not files.FolderLock(folder).acquire()  # a second job (even in this process) is refused
    (folder / f".out{files.PART}1234.mp4").write_bytes(b"half")
    assert files.remove_partials(folder) == []  # never under a live job
    lock.release()
    # the lock file stays (deleting it on release would let two jobs hold the folder): nobody holds it now
    assert (folder / files.LOCK_NAME).exists() and not files.is_locked(folder)
    again = files.FolderLock(folder)
    assert again.acquire() and not files.FolderLock(folder).acquire()  # one holder at a time, also after a release
    again.release()
    removed = sorted(p.name for p in files.remove_partials(folder))
    assert removed == [files.LOCK_NAME, f".out{files.PART}1234.mp4"] and list(folder.iterdir()) == []


def test_a_folder_held_by_another_process_is_locked_until_that_process_dies(tmp_path):
    import subprocess
    import sys

    folder = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from backends.common.files import FolderLock; "
                               f"lock = FolderLock({str(folder)!r}); assert lock.acquire(); print('held', flush=True); "
                               "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[3])
    try:
        assert holder.stdout.readline().strip() == "held"
        assert files.is_locked(folder) and not files.FolderLock(folder).acquire()
        assert files.remove_partials(folder) == []
    finally:
        holder.kill()
        holder.wait()
    assert not files.is_locked(folder)  # the OS dropped the dead process's lock; its file is stale
    assert [p.name for p in files.remove_partials(folder)] == [files.LOCK_NAME]


def test_sweep_deletes_old_outputs_and_keeps_new_and_running_ones(tmp_path):
    root = tmp_path / "outputs"
    now = time.time()
    for name, age in (("old", 120), ("older", 500), ("new", 1), ("running", 900)):
        d = root / name
        d.mkdir(parents=True)
        (d / "out.png").write_bytes(b"x")
        for p in (d / "out.png", d):
            os.utime(p, (now - age, now - age))
    (root / "stray.tmp").write_bytes(b"y")
    os.utime(root / "stray.tmp", (now - 300, now - 300))
    lock = files.FolderLock(root / "running")
    assert lock.acquire()
    try:
        os.utime(root / "running" / files.LOCK_NAME, (now - 900, now - 900))
        deleted = sorted(p.name for p in files.sweep(root, max_age_s=60, now=now))
    finally:
        lock.release()
    assert deleted == ["old", "older", "stray.tmp"]
    assert sorted(p.name for p in root.iterdir()) == ["new", "running"]
    for i in range(3):
        (root / f"n{i}").mkdir()
    assert len(files.sweep(root, max_age_s=3600, keep=2)) == 3 and len(list(root.iterdir())) == 2
