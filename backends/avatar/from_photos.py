"""Photos of one person → the reconstructor's upload (images, masks, cameras, pose and shape).

Each photo is checked and measured by MediaPipe (``photos.detect``), cropped to a square around the
person (so every view has one size and the person fills it, as in the views the model learnt from),
then anny's pose and shape and a camera per photo are fitted (``fit.fit_photos``). The camera of a
photo is taken as ``fov_deg`` vertically over the whole photo; the crop shifts and scales it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from backends.common.errors import InputError

from .fit import DEFAULT_FOV, PhotoFit, fit_photos, intrinsics
from .photos import MAX_PHOTOS, PhotoDetection, detect, draw
from .uploads import UploadedViews

CROP_SIZE = 256
MARGIN = 1.2  # the square crop's side over the person's larger extent


@dataclass
class PhotoSet:
    """Checked, cropped photos and the fit: what the tab shows before reconstructing."""

    detections: list[PhotoDetection]  # cropped to CROP_SIZE²
    Ks: list[np.ndarray]  # each crop's intrinsics
    fit: PhotoFit

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.detections]

    def previews(self) -> list[np.ndarray]:
        """Each photo with its mask, MediaPipe's skeleton (green) and the fitted joints (red)."""
        return [draw(d, j) for d, j in zip(self.detections, self.fit.joints_2d, strict=True)]

    def upload(self) -> UploadedViews:
        imgs = np.stack([d.image for d in self.detections]).astype(np.float32) / 255.0
        masks = np.stack([d.mask for d in self.detections]).astype(np.float32)
        return UploadedViews(imgs, masks, self.fit.viewmats, self.fit.Ks, self.fit.pose, self.fit.phenotype,
                             self.names)

    def describe(self) -> str:
        """The fit in a line (Markdown): its time, how far the fitted joints are from MediaPipe's, the body."""
        f = self.fit
        return (f"Fitted one body to {len(self.names)} photo(s) in **{f.seconds:.1f} s**: mean distance of the "
                f"fitted joints to MediaPipe's {float(np.nanmean(f.reprojection_px)):.1f} px ({CROP_SIZE}² crops) · body "
                + ", ".join(f"{k} {v:.2f}" for k, v in f.phenotype.as_dict().items()))

    def card(self) -> dict:
        f = self.fit
        return {"photos": self.names, "pose": f.pose.as_dict(), "body": f.phenotype.as_dict(),
                "reprojection_px": [round(float(x), 2) for x in f.reprojection_px],
                "fit_seconds": round(f.seconds, 2)}


def crop_to_person(det: PhotoDetection, k: np.ndarray, size: int = CROP_SIZE) -> tuple[PhotoDetection, np.ndarray]:
    """A square crop around the person's mask and landmarks, resized to ``size``²; its intrinsics."""
    from PIL import Image

    h, w = det.mask.shape
    ys, xs = np.nonzero(det.mask > 0.5)
    pts = np.concatenate([np.stack([xs + 0.5, ys + 0.5], 1), det.landmarks[det.visibility > 0.5]])
    lo, hi = pts.min(0), pts.max(0)
    side = float(MARGIN * max(hi - lo))
    x0, y0 = (lo + hi) / 2 - side / 2
    pad = int(np.ceil(side)) + 2
    border = np.concatenate([det.image[0], det.image[-1], det.image[:, 0], det.image[:, -1]])
    img = np.stack([np.pad(det.image[..., c], pad, constant_values=int(np.median(border[:, c]))) for c in range(3)], -1)
    msk = np.pad(det.mask, ((pad, pad), (pad, pad)))
    box = (x0 + pad, y0 + pad, x0 + pad + side, y0 + pad + side)
    s = size / side
    image = np.asarray(Image.fromarray(img).resize((size, size), Image.BILINEAR, box=box))
    mask = np.asarray(Image.fromarray((msk * 255).astype(np.uint8)).resize((size, size), Image.BILINEAR, box=box))
    k2 = k.copy()
    k2[0, 2], k2[1, 2] = (k[0, 2] - x0) * s, (k[1, 2] - y0) * s
    k2[0, 0], k2[1, 1] = k[0, 0] * s, k[1, 1] * s
    out = PhotoDetection(image, (det.landmarks - [x0, y0]) * s, det.visibility, (mask > 127).astype(np.float32),
                         det.name)
    return out, k2


def prepare(photos: list, names: list[str] | None = None, fov_deg: float = DEFAULT_FOV,
            steps: int = 150) -> PhotoSet:
    """Check every photo (InputError naming the first one that fails), crop, and fit one body to all."""
    if not 1 <= len(photos) <= MAX_PHOTOS:
        raise InputError(f"Upload 1 to {MAX_PHOTOS} photos of one person, not {len(photos)}.")
    if not 10.0 <= fov_deg <= 120.0:
        raise InputError(f"The photos' field of view must be 10 to 120 degrees, not {fov_deg:g}.")
    names = names or [f"photo {i + 1}" for i in range(len(photos))]
    dets, ks = [], []
    for img, name in zip(photos, names, strict=True):
        det = detect(img, name)
        h, w = det.mask.shape
        d, k = crop_to_person(det, intrinsics(w, h, fov_deg))
        dets.append(d)
        ks.append(k)
    return PhotoSet(dets, ks, fit_photos(dets, Ks=ks, steps=steps))


def keep_only(photos: PhotoSet, keep: list[str], steps: int = 150) -> PhotoSet:
    """The set without the photos the person dropped, fitted again on the rest (same crops)."""
    chosen = [i for i, n in enumerate(photos.names) if n in set(keep)]
    if not chosen:
        raise InputError("Keep at least one photo to reconstruct from.")
    if len(chosen) == len(photos.names):
        return photos
    dets = [photos.detections[i] for i in chosen]
    ks = [photos.Ks[i] for i in chosen]
    return PhotoSet(dets, ks, fit_photos(dets, Ks=ks, steps=steps))
