"""Distil the Unlearning tab's shipped networks from the shipped teacher: for each default forget choice, SFD's
one-step generator, the ESD-style and the SalUn fine-tuned models, on the same wall-clock budget (same machine, run side by
side), through the tab's own Distil code (``backends/unlearn/distil.py``).

    python -m training.unlearn_generators --method sfd --forget cube --safe sphere [--minutes 20]
    python -m training.unlearn_generators --text --method sfd --forget red --safe blue --minutes 18 --lr 1e-5 \
        --batch 4 --alpha 1 --t-init 625 --forget-coef 1          # the 3D Layout text teacher (SD-side settings)

The run folder keeps the checkpoint (``--resume`` continues it); the network is copied to
``assets/unlearn-<method>-<forget>-to-<safe>/`` (text teacher: ``assets/unlearn-text-<method>-…``) with its loss curves.
"""

from __future__ import annotations

import argparse
import json
import shutil
import threading
from pathlib import Path

import torch

from backends.common.errors import Cancelled
from backends.common.progress import CancelToken, ProgressEvent
from backends.unlearn.distil import NETWORK, distil
from backends.unlearn.loading import load_teacher
from backends.unlearn.requests import TRAINED, DistilRequest

ROOT = Path(__file__).resolve().parents[1]


def asset_name(method: str, forget: str, safe: str) -> str:
    return f"unlearn-{method}-{forget}-to-{safe}"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--method", choices=TRAINED, required=True)
    p.add_argument("--forget", default="cube")
    p.add_argument("--safe", default="sphere")
    p.add_argument("--minutes", type=float, default=20.0)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--teacher", type=Path, default=ROOT / "assets" / "unlearn-teacher")
    p.add_argument("--run-dir", type=Path, default=None)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--text", action="store_true", help="the 3D Layout text teacher (assets/layout3d-embedded)")
    p.add_argument("--alpha", type=float, default=None, help="SiD's α (default: the request's)")
    p.add_argument("--t-init", type=int, default=None, help="the generator's t_init (default: the request's)")
    p.add_argument("--forget-coef", type=float, default=None, help="the forgetting losses' weight (default: the request's)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    name = asset_name(args.method, args.forget, args.safe)
    name = name.replace("unlearn-", "unlearn-text-", 1) if args.text else name
    run_dir = args.run_dir or ROOT / "training" / "runs" / name
    out = args.out or ROOT / "assets" / name
    if args.text:
        from backends.unlearn.text.teacher import TextTeacher

        teacher = TextTeacher.load(ROOT / "assets" / "layout3d-embedded")
        fp = teacher.fingerprint
    else:
        teacher, fp = load_teacher(args.teacher)
    given = {k: v for k, v in (("alpha", args.alpha), ("t_init", args.t_init), ("forget_coef", args.forget_coef))
             if v is not None}
    request = DistilRequest(out_dir=run_dir, method=args.method, forget=args.forget, safe=args.safe,
                            teacher="text" if args.text else "shapes", iterations=50_000, batch=args.batch, lr=args.lr,
                            preview_every=25, checkpoint_every=25, resume=args.resume and (run_dir / "state.pt").exists(),
                            **given)
    cancel = CancelToken()
    timer = threading.Timer(args.minutes * 60, cancel.cancel, kwargs={"reason": "budget reached"})
    timer.start()
    try:
        for ev in distil(request, (teacher, fp), cancel):
            if isinstance(ev, ProgressEvent):
                print(ev.message, flush=True)
    except Cancelled:
        print("budget reached: checkpoint saved", flush=True)
    finally:
        timer.cancel()
    state = torch.load(run_dir / "state.pt", weights_only=False)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(run_dir / NETWORK, out)
    (out / "losses.json").write_text(json.dumps(state["losses"]))
    print(json.dumps(dict(asset=name, steps=state["trainer"]["step"], seconds=round(state["seconds"], 1)), indent=2))


if __name__ == "__main__":
    main()
