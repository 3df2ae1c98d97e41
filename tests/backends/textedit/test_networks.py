"""The embedded model's UNet sees fixed column planes next to its latents; other UNets are called as they are."""

import torch

from backends.textedit import networks as N


def test_column_planes_tell_every_column_apart():
    planes = N.column_planes(2, 32, torch.zeros(()))
    assert planes.shape == (1, N.POSITION_PLANES, 2, 32)
    assert torch.equal(planes[:, :, 0], planes[:, :, 1])  # the same on every row
    columns = planes[0, :, 0].T  # 32 × 8
    assert torch.cdist(columns, columns).add(torch.eye(32) * 10).min() > 0.1


def test_unet_input_adds_the_planes_only_where_conv_in_expects_them():
    tiny = dict(block_out_channels=(8, 16, 16), norm_num_groups=4, attention_head_dim=2)
    with_planes, plain = N.build_unet(in_channels=4 + N.POSITION_PLANES, **tiny), N.build_unet(**tiny)
    z = torch.randn(2, 4, *N.LATENT_SIZE)
    assert N.unet_input(with_planes, z).shape == (2, 4 + N.POSITION_PLANES, *N.LATENT_SIZE)
    assert N.unet_input(plain, z) is z
    assert N.latent_channels(with_planes) == N.latent_channels(plain) == 4


def test_the_planes_reach_the_output():
    torch.manual_seed(0)
    unet = N.build_unet(block_out_channels=(8, 16, 16), norm_num_groups=4, attention_head_dim=2,
                        in_channels=4 + N.POSITION_PLANES).eval()
    z, text = torch.randn(1, 4, *N.LATENT_SIZE), torch.randn(1, 8, N.UNET_CONFIG["cross_attention_dim"])
    x = N.unet_input(unet, z)
    shifted = x.clone()
    shifted[:, 4:] = shifted[:, 4:].roll(5, dims=-1)
    with torch.no_grad():
        assert not torch.allclose(unet(x, 5, encoder_hidden_states=text).sample,
                                  unet(shifted, 5, encoder_hidden_states=text).sample)
