"""The Text in Image capability's actions (``backends.common.action``): what the tab's buttons, the API,
the CLI and a Ray worker run, and what a run card replays. Torch-free to import: each action imports
its service where it runs.

Every action loads its model through ``service.load_pipeline`` (once per process), writes its files
through ``outputs.write`` and says in its card what ``outputs.summary`` says of the result.
"""

from __future__ import annotations

from backends.common.action import Action

from .requests import (
    AdapterRequest,
    EditRequest,
    FinetuneRequest,
    GenerateRequest,
    LocalizeRequest,
    ProtectRequest,
)


def _load(request):
    from . import service

    return service.load_pipeline(request.model)


def _write(result, folder):
    from .outputs import write

    return write(result, folder)


def _summary(result) -> dict:
    from .outputs import summary

    return summary(result)


def _generate(request, loaded, cancel):
    from .service import generate

    return generate(request, cancel, loaded)


def _localize(request, loaded, cancel):
    from .localize import localize

    return localize(request, cancel, loaded=loaded)


def _edit(request, loaded, cancel):
    from .edit import edit

    return edit(request, cancel, loaded)


def _protect(request, loaded, cancel):
    from .protect import protect

    return protect(request, cancel, loaded)


def _finetune(request, loaded, cancel):
    from .lora import finetune

    return finetune(request, cancel, loaded)


def _adapter(request, loaded, cancel):
    from .lora import generate_adapted

    return generate_adapted(request, cancel, loaded)


def _action(verb: str, request_type: type, work, description: str) -> Action:
    return Action(name=f"textedit_{verb}", capability="textedit", request_type=request_type, work=work, load=_load,
                  write=_write, summary=_summary, description=description)


GENERATE = _action("generate", GenerateRequest, _generate,
                   'An image of <template> "<text>", with x̂0 previews, read by OCR.')
LOCALIZE = _action("localize", LocalizeRequest, _localize,
                   "Which cross-attention layers (and heads) write the text: each takes text B's K/V alone.")
EDIT = _action("edit", EditRequest, _edit,
               "The image of text A with only the chosen layers taking text B's K/V: the words change, the rest stays.")
PROTECT = _action("protect", ProtectRequest, _protect,
                  "A blocked word's K/V swapped for a benign word's in the text layers; clean prompts unchanged.")
FINETUNE = _action("finetune", FinetuneRequest, _finetune,
                   "LoRA on the localized (or all, or random) layers; held-out words read before and after.")
ADAPTER_GENERATE = _action("adapter_generate", AdapterRequest, _adapter,
                           "An image generated with a fine-tuned LoRA adapter (.safetensors) applied.")

ACTIONS = (GENERATE, LOCALIZE, EDIT, PROTECT, FINETUNE, ADAPTER_GENERATE)
BY_VERB = {a.name.removeprefix("textedit_"): a for a in ACTIONS}
