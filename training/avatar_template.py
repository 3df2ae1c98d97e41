"""Write the coarse body template (``template.safetensors``) an avatar model is trained on.

The template is part of the model: its faces, and for each coarse vertex the anny triangle and
barycentric weights that place it on any person's body. It is made once and shipped with the model,
because open3d's quadric decimation does not give the same mesh in every process.

    python -m training.avatar_template --new --faces 1500 --to RUN_FOLDER      # a new topology
    python -m training.avatar_template --recover-from assets/avatar-embedded   # a checkpoint's own mesh

``--recover-from`` rebuilds the blends of a checkpoint that stores only its average-body vertices
(``template_xyz``), faces and LBS weights — how ``assets/avatar-embedded/template.safetensors`` was
made: every stored vertex is projected on anny's average body (it lies on it, to float32 rounding),
and the result is checked against the checkpoint (positions and skinning weights) before it is written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from backends.avatar import body


def recover(folder: Path) -> body.CoarseTemplate:
    """The template of the checkpoint in ``folder``, from its stored vertices, faces and LBS weights."""
    from safetensors.torch import load_file

    state = load_file(str(Path(folder) / "model.safetensors"))
    rest = body.rest_body()
    indices, weights = body.blends_of(state["template_xyz"].numpy(), rest.vertices.numpy(), body.faces())
    template = body.CoarseTemplate(state["template_faces"].numpy().astype(np.int64), indices, weights)
    check(template, state)
    return template


def check(template: body.CoarseTemplate, state: dict[str, torch.Tensor], atol: float = 1e-5) -> None:
    """Raise unless ``template`` reproduces the checkpoint's vertices, faces and skinning weights."""
    if not np.array_equal(template.faces, state["template_faces"].numpy()):
        raise ValueError("the template's faces differ from the checkpoint's")
    xyz = template.vertices(body.rest_body().vertices).float()
    if not torch.allclose(xyz, state["template_xyz"], atol=atol):
        raise ValueError(f"vertices differ by up to {(xyz - state['template_xyz']).abs().max():.2e}")
    lbs = template.lbs_weights().float()
    if not torch.allclose(lbs, state["lbs_weights"], atol=atol):
        raise ValueError(f"skinning weights differ by up to {(lbs - state['lbs_weights']).abs().max():.2e}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--recover-from", type=Path, help="a checkpoint folder with model.safetensors")
    mode.add_argument("--new", action="store_true", help="decimate anny's average body to a new mesh")
    ap.add_argument("--faces", type=int, default=body.COARSE_FACES)
    ap.add_argument("--to", type=Path, help="folder to write template.safetensors in (default: --recover-from)")
    args = ap.parse_args(argv)
    if args.new and args.to is None:
        ap.error("--new needs --to")
    template = recover(args.recover_from) if args.recover_from else body.build_coarse_template(args.faces)
    out = args.to or args.recover_from
    out.mkdir(parents=True, exist_ok=True)
    body.save_template(template, out)
    print(f"wrote {out / body.TEMPLATE_FILE}: {template.n_vertices} vertices, {len(template.faces)} faces")


if __name__ == "__main__":
    main()
