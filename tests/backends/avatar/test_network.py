import numpy as np
import pytest
import torch

from backends.avatar import body, data
from backends.avatar.gom import subdivide
from backends.avatar.network import (
    MAX_VIEWS,
    Reconstructor,
    ReconstructorConfig,
    Views,
    load_reconstructor,
    reconstruct,
    save_reconstructor,
)
from backends.avatar.pose import pose_transforms
from backends.avatar.render import render
from backends.avatar.visibility import vertex_visibility
from backends.synth import Camera

TINY = ReconstructorConfig(n_views=2, image_size=32, feat_dim=8, vertex_dim=16, point_dim=8, heads=2,
                           vertex_layers=1, n_iters=2, encoder_width=8)


def test_ray_cast_visibility_of_a_cube():
    v = torch.tensor([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)], dtype=torch.float64)
    f = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                  [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    cam = Camera(32, 32, 60.0, (0.0, -3.0, 0.0), (0.0, 0.0, 0.0))
    e, k = torch.from_numpy(cam.extrinsics), torch.from_numpy(cam.intrinsics)
    seen = vertex_visibility(v, f, e[None], k[None], 32, 32)[0]
    assert seen.tolist() == (v[:, 1] < 0).tolist()  # the four corners facing the camera (at -y)
    narrow = Camera(32, 32, 10.0, (0.0, -3.0, 0.0), (0.0, 0.0, 0.0))  # corners fall outside the image
    assert not vertex_visibility(v, f, torch.from_numpy(narrow.extrinsics)[None],
                                 torch.from_numpy(narrow.intrinsics)[None], 32, 32).any()


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    rest = body.rest_body()
    coarse = body.coarse_template()
    sub = subdivide(coarse.faces, coarse.n_vertices, 1)
    net = Reconstructor(TINY, coarse.vertices(rest.vertices), coarse.faces, coarse.lbs_weights(), sub)
    net.coarse = coarse
    sample = data.sample_subject(5, TINY.n_views, TINY.image_size)
    t = pose_transforms(data.rest_body(sample.subject.phenotype), sample.views[0].pose).float()
    stack = lambda xs: torch.from_numpy(np.stack(xs)).float()[None]  # noqa: E731
    views = Views(stack([v.rgb for v in sample.views]), stack([v.mask for v in sample.views]),
                  stack([v.camera.extrinsics for v in sample.views]), stack([v.camera.intrinsics for v in sample.views]),
                  t[None, None].expand(1, TINY.n_views, -1, -1, -1))
    return net, views


def test_reconstructor_starts_at_the_template_and_refines_per_iteration(setup):
    net, views = setup
    history = net(views)
    assert len(history) == TINY.n_iters and len(history[-1]) == 1
    avatar = history[-1][0]
    assert avatar.coarse_xyz.shape == net.template_xyz.shape
    assert (avatar.coarse_xyz - net.template_xyz).abs().max() < 1e-3  # last layers start at U(±1e-5)
    assert (avatar.params.rgb - 0.5).abs().max() < 1e-3 and (avatar.params.scale - 1).abs().max() < 1e-3
    assert len(avatar.params.rgb) == len(net.subdivision.faces)
    one = net(Views(*(x[:, :1] for x in (views.images, views.masks, views.viewmats, views.Ks, views.transforms))),
              n_iters=1)  # the face features pool over views: any number 1..MAX_VIEWS works
    assert len(one[-1][0].params.rgb) == len(net.subdivision.faces)
    too_many = [x.expand(-1, MAX_VIEWS + 1, *x.shape[2:]) for x in
                (views.images[:, :1], views.masks[:, :1], views.viewmats[:, :1], views.Ks[:, :1], views.transforms[:, :1])]
    with pytest.raises(ValueError, match="views"):
        net(Views(*too_many))


def test_the_subjects_own_template_is_the_start(setup):
    net, views = setup
    shifted = net.template_xyz + torch.tensor([0.0, 0.0, 0.05])
    avatar = net(Views(views.images, views.masks, views.viewmats, views.Ks, views.transforms, shifted[None]),
                 n_iters=1)[-1][0]
    assert torch.allclose(avatar.coarse_xyz, shifted, atol=0.02)  # starts there, moves by small residuals


def test_save_load_round_trip_and_one_call_reconstruction(setup, tmp_path):
    net, views = setup
    net.eval()
    save_reconstructor(net, tmp_path)
    loaded = load_reconstructor(tmp_path)
    assert np.array_equal(loaded.coarse.indices, net.coarse.indices)  # the topology travels with the model
    assert np.array_equal(loaded.coarse.weights, net.coarse.weights)
    assert loaded.config == net.config and len(loaded.subdivision.faces) == len(net.subdivision.faces)
    for k, v in net.state_dict().items():
        assert torch.equal(v, loaded.state_dict()[k]), k
    args = (views.images[0], views.masks[0], views.viewmats[0], views.Ks[0], views.transforms[0, 0])
    a = reconstruct(net, *args, iterations=2)
    b = reconstruct(loaded, *args, iterations=2)
    assert torch.allclose(a.params.rgb, b.params.rgb) and torch.allclose(a.coarse_xyz, b.coarse_xyz)
    finer = load_reconstructor(tmp_path, levels=2)  # a finer rendering mesh than in training
    assert len(finer.subdivision.faces) == 4 * len(net.subdivision.faces)
    assert len(reconstruct(finer, *args, iterations=1).params.rgb) == len(finer.subdivision.faces)


def test_a_few_training_steps_lower_the_photometric_loss(setup):
    net, views = setup
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    size = TINY.image_size

    def loss_fn():
        avatar = net(views, n_iters=1)[-1][0]
        loss = 0
        for j in range(TINY.n_views):
            out = render(avatar.gaussians(views.transforms[0, j]), views.viewmats[0, j], views.Ks[0, j], size, size)
            loss = loss + (out.rgb - views.images[0, j]).abs().mean() + (out.alpha - views.masks[0, j]).abs().mean()
        return loss

    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        losses.append(loss.item())
        opt.step()
    assert all(p.grad is not None for p in net.encoder.parameters())
    assert losses[-1] < losses[0]
