"""The texts: a held-out evaluation text and a separate calibration text, all offline.

* evaluation (default) — *The Devil's Dictionary* (Ambrose Bierce, 1911; public domain), as Debian's
  ``dict-devil`` package carries it, shipped gzipped in ``assets/compress-texts`` (≈ 100 k SmolLM2 tokens
  of English prose and verse); the scored windows start at its PREFACE;
* evaluation (the earlier default, still selectable) — the Python Language Reference and built-in types
  chapters as ``pydoc`` carries them (``pydoc_data.topics``, ≈ 113 k tokens; PSF licence, not public domain);
* calibration — the docstrings of a fixed list of standard-library modules (ships with Python; never an
  evaluation text), joined in a fixed order.

WikiText-2 / C4 load by ``datasets`` id when the user has them cached (``wikitext2``, ``c4``).
"""

from __future__ import annotations

import functools
import importlib
import inspect

from backends.common.errors import InputError

CALIBRATION_MODULES = ("argparse", "logging", "subprocess", "email.message", "http.client", "json", "decimal",
                       "fractions", "statistics", "textwrap", "difflib", "calendar", "tarfile", "zipfile",
                       "configparser", "shutil", "pathlib", "csv", "unittest.case", "asyncio.tasks", "heapq",
                       "bisect", "datetime", "ftplib", "smtplib", "imaplib", "urllib.request", "xml.dom.minidom",
                       "sched", "queue", "threading", "socketserver", "codecs", "locale", "gettext", "optparse")

TEXTS = ("devils-dictionary", "python-reference", "stdlib-docstrings", "wikitext2", "c4")
TEXT_LABELS = {
    "devils-dictionary": "The Devil's Dictionary (Bierce 1911, public domain; shipped in assets)",
    "python-reference": "Python Language Reference (pydoc_data, ships with Python)",
    "stdlib-docstrings": "standard-library docstrings (ships with Python)",
    "wikitext2": "WikiText-2 test (datasets, when cached)",
    "c4": "C4 validation (datasets, when cached)",
}


def devils_dictionary() -> str:
    """Bierce's book from its PREFACE on (the edition's title page and public-domain notice come before it)."""
    import gzip

    from backends.common.settings import get_settings

    path = get_settings().assets_dir / "compress-texts" / "devils-dictionary.txt.gz"
    if not path.is_file():
        raise InputError("The Devil's Dictionary is missing from the suite's assets (compress-texts).")
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    start = text.find("PREFACE")
    return text[start:] if start >= 0 else text


def python_reference() -> str:
    """The reference chapters pydoc shows (``help('FOR')`` …), in their stored order."""
    import pydoc_data.topics as topics

    return "\n\n".join(topics.topics.values())


def stdlib_docstrings() -> str:
    """Module, class and function docstrings of :data:`CALIBRATION_MODULES`, in a fixed order."""
    parts = []
    for name in CALIBRATION_MODULES:
        mod = importlib.import_module(name)
        if mod.__doc__:
            parts.append(inspect.cleandoc(mod.__doc__))
        for attr in sorted(getattr(mod, "__all__", None) or dir(mod)):
            obj = getattr(mod, attr, None)
            if attr.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                continue
            doc = inspect.getdoc(obj)
            if doc:
                parts.append(doc)
    return "\n\n".join(parts)


@functools.lru_cache(maxsize=4)
def load_text(name: str) -> str:
    """One of :data:`TEXTS` as a string; InputError when a ``datasets`` one is not available offline."""
    if name == "devils-dictionary":
        return devils_dictionary()
    if name == "python-reference":
        return python_reference()
    if name == "stdlib-docstrings":
        return stdlib_docstrings()
    if name in ("wikitext2", "c4"):
        try:
            import datasets
        except ImportError as exc:
            raise InputError(f"{name} needs the `datasets` package and a cached copy of it.") from exc
        try:
            if name == "wikitext2":
                ds = datasets.load_dataset("wikitext", "wikitext-2-raw-v1", split="test")
                return "\n\n".join(ds["text"])
            ds = datasets.load_dataset("allenai/c4", data_files="en/c4-validation.00000-of-00008.json.gz",
                                       split="train")
            return "\n\n".join(ds["text"][:2000])
        except Exception as exc:  # noqa: BLE001 - offline, missing cache: say so
            raise InputError(f"{name} is not available offline here ({exc.__class__.__name__}); "
                             "download it with `datasets` first.") from exc
    raise InputError(f"Unknown text {name!r}; one of {', '.join(TEXTS)}.")


def token_ids(tokenizer, text: str):
    """The text's token ids as one 1-D tensor (no special tokens)."""
    import torch

    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt", verbose=False).input_ids[0]
    return ids.to(torch.long)


def token_prefix(tokenizer, text: str, needed: int):
    """The first ``needed`` tokens of ``text`` (or all it has), tokenising only a prefix when that suffices."""
    chars = needed * 8 + 1000
    if chars < len(text):
        ids = token_ids(tokenizer, text[:chars])
        if ids.numel() > needed:  # the cut may split the last token: it is dropped
            return ids[:needed]
    return token_ids(tokenizer, text)[:needed]


def need_tokens(ids, needed: int, what: str) -> None:
    if ids.numel() < needed:
        raise InputError(f"The {what} text has {ids.numel()} tokens; {needed} are needed "
                         "(blocks × block length). Give a longer text or fewer/shorter blocks.")
