import numpy as np
import pytest

from backends.common.imagemetrics import psnr, ssim


def test_psnr_known_value_and_mask():
    a = np.zeros((8, 8, 3), np.uint8)
    b = a.copy()
    b[:4] = 255
    assert psnr(a, b) == pytest.approx(10 * np.log10(1 / 0.5))
    mask = np.zeros((8, 8), bool)
    mask[4:] = True
    assert psnr(a, b, mask) == 100.0


def test_ssim_identity_and_degradation():
    rng = np.random.default_rng(0)
    a = (rng.random((32, 32, 3)) * 255).astype(np.uint8)
    assert ssim(a, a) == pytest.approx(1.0)
    noisy = np.clip(a + rng.normal(0, 40, a.shape), 0, 255).astype(np.uint8)
    assert 0 < ssim(a, noisy) < 0.9
