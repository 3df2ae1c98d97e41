"""Unlearning tab (Score Forgetting Distillation): make a teacher forget — the label-conditional teacher a shape, or
3D Layout's text-to-image model a word (a colour or a shape) — distil SFD's one-step generator or fine-tune the ESD or
SalUn baseline, or load the shipped ones, and compare them side by side with the teacher and sampling-time negative
guidance, each image read by the shape classifier (text teacher: by 3D Layout's detector, on the box's crop)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from app.components.action_button import bind_action
from app.components.params import control
from app.tabs import TabSpec
from backends.common.errors import InputError
from backends.unlearn.actions import DISTIL, EVALUATE, SAMPLE
from backends.unlearn.requests import NAMES, SHIPPED, DistilRequest, EvaluateRequest, check_choice, is_run_id
from backends.unlearn.text import words

INTRO = ("**Score Forgetting Distillation** (SFD, ICLR 2025): a diffusion model is made to *forget* a class by "
         "aligning the forget class's score with a safe class's, inside a data-free score-identity distillation "
         "into a **one-step generator**. Here the teacher is a small label-conditional diffusion model of the "
         "suite's 32×32 shape renders (one label per shape, shown enlarged); the suite's shape classifier reads "
         "every image. Compare SFD with the ESD and SalUn fine-tuning baselines and with negative guidance at "
         "sampling time.\n\n"
         "The shipped teacher (17k steps on one CPU thread) draws the five shapes; the classifier reads 0.92 of its "
         "samples right. The shipped SFD, ESD and SalUn networks had one 20-minute CPU budget each (SFD: ~370 "
         "iterations, the paper 50,000), so SFD forgets only partly here; see docs/unlearn.md for the measurements.\n\n"
         "**Teacher: text** makes 3D Layout's embedded text-to-image model forget a *word* — a colour (red → blue) "
         "or a shape (cone → cylinder) — one box's depth staying the condition; the prompts you give show what comes "
         "out instead, and 3D Layout's detector reads each image's box. One SFD generator ships for it (red → blue, "
         "386 iterations in 18 CPU-minutes); for other words Distil one and give its run id.")
MODELS_LINE = ("Teachers: `unlearn-teacher` (label-conditional DDPM, ε-prediction, sampled with DDIM) · `layout3d-embedded` "
               "(text-to-image, SD's schedule, guided DDIM) · readers: `counterfactual-classifier` (shapes), "
               "`layout3d-detector` (text) · device: CPU")
TEXT_DEFAULT = words.DEFAULT_TEXT_CHOICES[0]


def build(demo: gr.Blocks) -> None:
    ui = SimpleNamespace()
    gr.Markdown(INTRO)
    gr.Markdown(MODELS_LINE, elem_id="ul-models")
    with gr.Row():
        ui.teacher = control(EvaluateRequest, "teacher", widget="radio", elem_id="ul-teacher")
        ui.forget = control(DistilRequest, "forget", elem_id="ul-forget")
        ui.safe = control(DistilRequest, "safe", elem_id="ul-safe")
    ui.word_check = gr.Markdown(elem_id="ul-word-check")
    with gr.Tab("Compare"):
        with gr.Row():
            ui.prompts = control(EvaluateRequest, "prompts", elem_id="ul-prompts", lines=2)
            ui.cfg = control(EvaluateRequest, "guidance_scale", elem_id="ul-cfg")
        with gr.Row():
            ui.sfd_gen = control(EvaluateRequest, "sfd_generator", elem_id="ul-sfd-gen")
            ui.esd_model = control(EvaluateRequest, "esd_model", elem_id="ul-esd-model")
            ui.salun_model = control(EvaluateRequest, "salun_model", elem_id="ul-salun-model")
        with gr.Row():
            ui.per_class = control(EvaluateRequest, "per_class", elem_id="ul-per-class")
            ui.steps = control(EvaluateRequest, "teacher_steps")
            ui.eta = control(EvaluateRequest, "eta")
            ui.seed = control(EvaluateRequest, "seed", widget="number")
        with gr.Row():
            ui.load = gr.Button("Load shipped generators & sample", variant="primary", elem_id="ul-load")
            ui.evaluate = gr.Button("Evaluate (metrics)", elem_id="ul-evaluate")
            ui.stop_eval = gr.Button("Stop", variant="stop", elem_id="ul-stop-eval")
    with gr.Tab("Distil"):
        with gr.Row():
            ui.method = control(DistilRequest, "method", widget="radio", elem_id="ul-method")
            ui.iterations = control(DistilRequest, "iterations", elem_id="ul-iterations")
            ui.batch = control(DistilRequest, "batch")
            ui.lr = control(DistilRequest, "lr")
        with gr.Accordion("SFD / ESD / SalUn settings", open=False):
            with gr.Row():
                ui.alpha = control(DistilRequest, "alpha")
                ui.t_init = control(DistilRequest, "t_init")
                ui.coef = control(DistilRequest, "forget_coef")
                ui.d_eta = control(DistilRequest, "eta")
            with gr.Row():
                ui.saliency = control(DistilRequest, "saliency_fraction", elem_id="ul-saliency")
                ui.retain = control(DistilRequest, "retain_coef")
                ui.replay = control(DistilRequest, "replay_steps")
            with gr.Row():
                ui.preview_every = control(DistilRequest, "preview_every")
                ui.checkpoint_every = control(DistilRequest, "checkpoint_every")
                ui.d_seed = control(DistilRequest, "seed", widget="number")
        ui.run_dir = gr.Textbox(label="Run id", elem_id="ul-run-dir",
                                info="Shown when Distil starts; Resume continues that run from its last checkpoint, "
                                     "also after a restart. Give it as SFD generator / ESD / SalUn model to compare it.")
        with gr.Row():
            ui.distil = gr.Button("Distil", variant="primary", elem_id="ul-distil")
            ui.resume = gr.Button("Resume", elem_id="ul-resume")
            ui.stop = gr.Button("Stop", variant="stop", elem_id="ul-stop")
        with gr.Row():
            ui.preview = gr.Image(label="Preview: one row per class (text teacher: per prompt), the same noise every time", type="numpy",
                                  height=260, interactive=False, elem_id="ul-preview")
            ui.curves = gr.Plot(label="Loss curves", elem_id="ul-curves")
    ui.status = gr.Markdown(elem_id="ul-status")
    ui.gallery = gr.Gallery(label="Per class (text teacher: per prompt): Teacher (DDIM) · SFD (one step) · ESD · SalUn · "
                                  "negative guidance — the classifier's (detector's) reading and confidence under each "
                                  "image (red: forgotten class or word still made, or another misread)",
                            columns=3, height=520, format="png", object_fit="contain", elem_id="ul-gallery")
    ui.table = gr.Dataframe(headers=["method", "forget rate", "other classes' accuracy", "Fréchet distance",
                                     "seconds / image"], label="Measured on these samples", interactive=False,
                            elem_id="ul-metrics")
    with gr.Row():
        ui.summary = gr.JSON(label="Run (JSON)", elem_id="ul-json")
        ui.files = gr.File(label="Downloads (PNG grids, samples.npz, metrics.json; Distil: safetensors + config)",
                           file_count="multiple", elem_id="ul-files")
    _wire(ui)


def _seed(value) -> int:
    return 0 if value is None else int(value)


def word_check(teacher, forget, safe, prompts) -> str:
    """What is wrong with the forget choice and the prompts, said while they are typed (empty: nothing): a word the
    text teacher does not know is named, as are a colour mapped onto a shape and a word mapped onto itself."""
    try:
        check_choice(teacher, (forget or "").strip().lower(), (safe or "").strip().lower())
        if teacher == "text":
            words.parse_prompts(prompts)
    except InputError as e:
        return f"⚠️ {e}"
    return ""


def teacher_changed(teacher):
    """The teacher's default forget choice (and, for text, prompts that name the word and some that do not)."""
    forget, safe = TEXT_DEFAULT if teacher == "text" else ("cube", "sphere")
    return forget, safe, words.default_prompts(forget) if teacher == "text" else ""


def compare_request(forget, safe, sfd_generator, esd_model, salun_model, per_class, teacher_steps, eta, seed,
                    teacher="shapes", prompts="", guidance_scale=5.0):
    """Args:
        sfd_generator: 'shipped', 'none' or the id of an SFD Distil run.
        esd_model: 'shipped', 'none' or the id of an ESD Distil run.
        salun_model: 'shipped' (skipped where none ships), 'none' or the id of a SalUn Distil run.
    """
    for given in (sfd_generator, esd_model, salun_model):  # the page names runs by id; a path on the server is not its to give
        if (given or "").strip().lower() not in ("", SHIPPED, "none") and not is_run_id(given):
            raise InputError(f"{given[:60]!r}: give 'shipped', 'none' or the id of a Distil run.")
    return EvaluateRequest(forget=(forget or "").strip().lower(), safe=(safe or "").strip().lower(),
                           sfd_generator=sfd_generator or SHIPPED, esd_model=esd_model or SHIPPED,
                           salun_model=salun_model or SHIPPED, per_class=per_class, teacher_steps=teacher_steps, eta=eta,
                           seed=_seed(seed), teacher=teacher or "shapes", prompts=prompts or "",
                           guidance_scale=5.0 if guidance_scale is None else guidance_scale)


def shipped_request(forget, safe, per_class, teacher_steps, eta, seed, teacher="shapes", prompts="", guidance_scale=5.0):
    """The shipped SFD generator, ESD and SalUn models for the chosen pair, sampled beside the teacher (where none ships
    for the text teacher, the comparison says so and shows the teacher and negative guidance)."""
    return compare_request(forget, safe, SHIPPED, SHIPPED, SHIPPED, per_class, teacher_steps, eta, seed, teacher, prompts,
                           guidance_scale)


def _distil_request(resume: bool):
    def to_request(forget, safe, method, iterations, batch, lr, alpha, t_init, forget_coef, eta, saliency_fraction,
                   retain_coef, replay_steps, preview_every, checkpoint_every, seed, run_dir, teacher="shapes"):
        """Args:
            run_dir: The run id (empty: a new run; Resume: the stopped run's id).
        """
        from backends.common.runs import new_run
        from backends.unlearn.evaluate import run_folder

        if resume:
            if not (run_dir or "").strip():
                raise InputError("Resume needs the id of a stopped run (Distil first).")
            folder = run_folder(run_dir)
        else:
            folder = new_run("unlearn")[1]
        return DistilRequest(out_dir=folder, method=method, forget=(forget or "").strip().lower(),
                             safe=(safe or "").strip().lower(), teacher=teacher or "shapes", iterations=iterations,
                             batch=batch, lr=lr, alpha=alpha, t_init=t_init, forget_coef=forget_coef, eta=eta,
                             saliency_fraction=saliency_fraction, retain_coef=retain_coef, replay_steps=replay_steps,
                             preview_every=preview_every, checkpoint_every=checkpoint_every, resume=resume,
                             seed=_seed(seed))

    return to_request


def show_comparison(request, result, paths):
    from backends.unlearn.outputs import metrics_rows, panels

    rows = metrics_rows(result)
    n = len(result.prompts) if request.teacher == "text" else len(result.labels)
    where = " on the 3D Layout text teacher (the detector reads each box)" if request.teacher == "text" else ""
    text = (f"Forgetting **{result.forget}** (mapped to {result.safe}){where}: {n} images per method, "
            f"{', '.join(result.methods)}." + "".join(f" Not shown: {m} ({why})." for m, why in result.skipped.items()))
    return text, panels(result), rows, result.to_json(), [str(p) for p in paths.values()]


def show_distil(request, result, paths):
    from backends.unlearn.outputs import loss_plot

    folder = Path(request.out_dir).name  # the run's id: the page never shows a server path
    sfd, esd, salun = (folder if result.method == m else gr.update() for m in ("sfd", "esd", "salun"))
    text = (f"{NAMES[result.method]} finished {result.steps} steps in {result.seconds:.0f} s"
            + (f" (resumed at step {result.resumed_from})" if result.resumed_from else "")
            + f". The network is kept with run {folder}; the Compare tab now uses it.")
    return (text, _enlarge(result.preview), loss_plot(result.losses), folder, sfd, esd, salun, result.to_json(),
            [str(p) for p in paths.values()])


def _enlarge(img):
    from backends.common.imageio import upscale

    return upscale(img, 3 if img.shape[0] <= 160 else 2)  # the shapes' 32×32 rows ×3, the text teacher's 64×64 ×2


def distil_preview(item):
    from backends.unlearn.outputs import loss_plot

    return _enlarge(item["grid"]), loss_plot(item["losses"])


def distil_stopped(request):
    folder = Path(request.out_dir).name  # the run's id
    return (f"Stopped by the user: run {folder}'s checkpoint is saved; press Resume to continue it.",
            gr.update(), gr.update(), folder, gr.update(), gr.update(), gr.update(), gr.update(), gr.update())


def _wire(ui: SimpleNamespace) -> None:
    checked = [ui.teacher, ui.forget, ui.safe, ui.prompts]
    for box in checked:
        box.change(word_check, inputs=checked, outputs=ui.word_check, api_name=False, show_progress="hidden",
                   queue=False)
    ui.teacher.change(teacher_changed, inputs=ui.teacher, outputs=[ui.forget, ui.safe, ui.prompts], api_name=False,
                      queue=False)
    compare_out = [ui.status, ui.gallery, ui.table, ui.summary, ui.files]
    common = [ui.per_class, ui.steps, ui.eta, ui.seed]
    text_in = [ui.teacher, ui.prompts, ui.cfg]
    bind_action(SAMPLE, trigger=ui.load.click, stop=ui.stop_eval, stop_api_name="unlearn_stop_compare",
                status=ui.status, inputs=[ui.forget, ui.safe, *common, *text_in], outputs=compare_out,
                to_request=shipped_request, show=show_comparison, running="Sampling with every method…",
                api_name="unlearn_sample_shipped")
    bind_action(EVALUATE, trigger=ui.evaluate.click, status=ui.status,
                inputs=[ui.forget, ui.safe, ui.sfd_gen, ui.esd_model, ui.salun_model, *common, *text_in],
                outputs=compare_out, to_request=compare_request, show=show_comparison,
                running="Sampling and measuring every method…")
    distil_in = [ui.forget, ui.safe, ui.method, ui.iterations, ui.batch, ui.lr, ui.alpha, ui.t_init, ui.coef,
                 ui.d_eta, ui.saliency, ui.retain, ui.replay, ui.preview_every, ui.checkpoint_every, ui.d_seed, ui.run_dir,
                 ui.teacher]
    distil_out = [ui.status, ui.preview, ui.curves, ui.run_dir, ui.sfd_gen, ui.esd_model, ui.salun_model, ui.summary,
                  ui.files]
    bind_action(DISTIL, trigger=ui.distil.click, stop=ui.stop, status=ui.status, preview=[ui.preview, ui.curves],
                to_preview=distil_preview, inputs=distil_in, outputs=distil_out, to_request=_distil_request(False),
                show=show_distil, stopped=distil_stopped, running="Distilling…")
    bind_action(DISTIL, trigger=ui.resume.click, status=ui.status, preview=[ui.preview, ui.curves],
                to_preview=distil_preview, inputs=distil_in, outputs=distil_out, to_request=_distil_request(True),
                show=show_distil, stopped=distil_stopped, running="Resuming…", api_name="unlearn_resume")


TAB = TabSpec(name="unlearn", title="Unlearning", build=build)
