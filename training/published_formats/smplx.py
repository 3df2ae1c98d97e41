"""Fixture of the SMPL-X model file (``SMPLX_NEUTRAL.npz``, v1.1): the arrays the official loader reads.

    python -m training.published_formats.smplx --authors-code DIR   # DIR: a checkout of vchoutas/smplx

The names are the ``data_struct.<name>`` reads in the ``__init__`` of ``SMPL``, ``SMPLH`` and ``SMPLX`` in
their ``smplx/body_models.py`` (``SMPLX(model_path, ext='npz')`` does ``Struct(**np.load(path))``), found
with Python's ``ast``. The shapes come from their class constants where the code has them (joints
``SMPLX.NUM_JOINTS + 1``, ``SHAPE_SPACE_DIM + EXPRESSION_SPACE_DIM`` shape/expression components, pose
blend shapes ``9 × (joints − 1)``, ``3 × NUM_HAND_JOINTS`` hand PCA) and, for the sizes no code states,
from the SMPL-X v1.1 model's topology (10,475 vertices, 20,908 faces, 51 static and 79 × 17 dynamic face
landmarks). The file itself cannot be shipped or fetched (MPI licence, registration), so the test that the
project's reader takes this layout builds a random npz from the fixture.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

from training.published_formats import commit_of

N_VERTICES = 10475  # SMPL-X topology (v1.1)
N_FACES = 20908
N_LANDMARKS = 51  # lmk_faces_idx / lmk_bary_coords
DYNAMIC_LANDMARKS = (79, 17)  # contour bins × contour landmarks


def names_read(source: str, classes=("SMPL", "SMPLH", "SMPLX")) -> list[str]:
    """``data_struct.<name>`` attributes read in the constructors of ``classes``."""
    found = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name in classes:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) \
                        and sub.value.id == "data_struct":
                    found.add(sub.attr)
    return sorted(found)


def shapes(smplx_cls, names: list[str]) -> dict[str, tuple[int, ...]]:
    j = smplx_cls.NUM_JOINTS + 1  # + the root
    hand = 3 * smplx_cls.NUM_HAND_JOINTS
    table = {
        "v_template": (N_VERTICES, 3), "f": (N_FACES, 3), "weights": (N_VERTICES, j), "kintree_table": (2, j),
        "J_regressor": (j, N_VERTICES),
        "shapedirs": (N_VERTICES, 3, smplx_cls.SHAPE_SPACE_DIM + smplx_cls.EXPRESSION_SPACE_DIM),
        "posedirs": (N_VERTICES, 3, 9 * (j - 1)),
        "hands_componentsl": (hand, hand), "hands_componentsr": (hand, hand),
        "hands_meanl": (hand,), "hands_meanr": (hand,),
        "lmk_faces_idx": (N_LANDMARKS,), "lmk_bary_coords": (N_LANDMARKS, 3),
        "dynamic_lmk_faces_idx": DYNAMIC_LANDMARKS, "dynamic_lmk_bary_coords": (*DYNAMIC_LANDMARKS, 3),
    }
    unknown = [n for n in names if n not in table]
    if unknown:
        raise SystemExit(f"their loader reads arrays this generator has no shape for: {unknown}")
    return {n: table[n] for n in names}


def main(argv=None) -> None:
    from backends.common.published_formats import ASSETS, PublishedFormat, write_fixture

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--authors-code", required=True, type=Path, help="a checkout of github.com/vchoutas/smplx")
    ap.add_argument("--commit", default=None)
    ap.add_argument("--out", type=Path, default=ASSETS)
    args = ap.parse_args(argv)
    code = args.authors_code.resolve()
    source_text = (code / "smplx" / "body_models.py").read_text()
    sys.path.insert(0, str(code))
    try:
        from smplx.body_models import SMPLX  # theirs (needs only torch and numpy)
    finally:
        sys.path.pop(0)
    # SMPLX runs the constructors of SMPL, SMPLH and itself; hands_components/hands_mean belong to class MANO
    names = names_read(source_text)
    commit = args.commit or commit_of(code)
    fmt = PublishedFormat(
        "smplx",
        f"vchoutas/smplx@{commit}: smplx/body_models.py SMPL/SMPLH/SMPLX.__init__ (data_struct reads; constants "
        f"NUM_JOINTS {SMPLX.NUM_JOINTS}, NUM_HAND_JOINTS {SMPLX.NUM_HAND_JOINTS}, SHAPE_SPACE_DIM "
        f"{SMPLX.SHAPE_SPACE_DIM}, EXPRESSION_SPACE_DIM {SMPLX.EXPRESSION_SPACE_DIM}); file SMPLX_NEUTRAL.npz v1.1",
        {"npz": shapes(SMPLX, names)},
        "Vertex, face and landmark counts are SMPL-X v1.1's topology, not read from a file (it cannot be "
        "shipped). The npz also holds arrays no loader reads (e.g. vt, ft, joint2num, part2num). "
        "LIFe-GoM itself reads SMPL-X through its preprocessed canonical_joints.pkl (vertex, weights, faces, "
        "joints) and its 55-joint SMPLX_PARENT table (utils/body_util.py).",
    )
    path = write_fixture(fmt, args.out)
    print(f"wrote {path}: {fmt.count()} arrays: {', '.join(names)}")


if __name__ == "__main__":
    main()
