"""What the Avatar tab keeps per browser session lives in the one SessionStore (the last few sessions' avatars
and fits; a dropped one is said to have expired), and the files a person hands over are read with their names
in the errors (backends/avatar/sessions.py, uploads.py). Torch-free."""

import numpy as np
import pytest

from backends.avatar import sessions
from backends.avatar.uploads import checked_rgb, read_photos, shown_avatar_id
from backends.common.errors import InputError
from backends.common.imageio import save_png
from backends.common.session_store import SessionStore


def test_the_last_sessions_avatars_are_kept_and_a_dropped_one_has_expired(tmp_path, monkeypatch):
    monkeypatch.setattr(sessions, "AVATARS", SessionStore(capacity=2, expired=lambda key: InputError(sessions.NO_AVATAR)))
    for i in range(3):
        (tmp_path / f"run{i}").mkdir()
        avatar = tmp_path / f"run{i}" / "avatar.safetensors"
        avatar.write_bytes(b"x")
        sessions.keep_avatar(f"s{i}", f"result {i}", {"avatar": avatar, "run": tmp_path / f"run{i}" / "run.json"})
    entry = sessions.current_avatar("s2")
    assert entry.result == "result 2" and entry.file.name == "avatar.safetensors" and len(entry.files) == 2
    with pytest.raises(InputError, match=r"Reconstruct an avatar first \(or it expired"):
        sessions.current_avatar("s0")  # the oldest of three, beyond the store's two
    with pytest.raises(InputError, match="Reconstruct an avatar first"):
        sessions.current_avatar("a session that never reconstructed")
    assert sessions.shown_avatar("s0") is None and sessions.shown_avatar("s1").result == "result 1"
    assert sessions.avatar_file("s1", lambda: tmp_path / "unused") == tmp_path / "run1" / "avatar.safetensors"
    with pytest.raises(InputError, match="fit the body' first"):
        sessions.fitted_photos("a session that never fitted photos")


def test_photos_and_images_are_read_with_their_names_in_the_errors(tmp_path):
    good = save_png(np.full((80, 70, 3), 200, np.uint8), tmp_path / "person.png")
    (tmp_path / "notes.png").write_text("not an image")
    req = read_photos([str(good)], fov_deg=50)
    assert req.names == ["person.png"] and req.photos[0].shape == (80, 70, 3) and req.fov_deg == 50
    req.validate()
    with pytest.raises(InputError, match="Photo 'notes.png'.*not an image this suite can read"):
        read_photos([str(good), str(tmp_path / "notes.png")])
    with pytest.raises(InputError, match="Photo 'gone.png' was not found"):
        read_photos([str(tmp_path / "gone.png")])
    with pytest.raises(InputError, match="Upload 1 to 5 photos"):
        read_photos([])
    assert checked_rgb(np.zeros((40, 40), np.uint8), "Mask").shape == (40, 40, 3)
    with pytest.raises(InputError, match="Photo is 70×80; photos must be 100 to 200 pixels on each side"):
        checked_rgb(np.zeros((80, 70, 3)), "Photo", (100, 200), "photos")
    assert shown_avatar_id("") == "" and shown_avatar_id('{"id": "ab12"}') == "ab12"
    with pytest.raises(InputError, match="pose data is not the JSON this tab writes"):
        shown_avatar_id("[1]")
