"""Turn the backends' deliberate errors into messages a person reads in the browser.

:class:`InputError`, a missing or corrupt model, and a cancel become ``gr.Error`` (or a notice), so
the session's state is untouched and the server keeps serving; anything else is a bug and is shown
as one.
"""

from __future__ import annotations

import functools
import inspect
import logging

import gradio as gr

from backends.common.errors import (
    Cancelled,
    DiskFullError,
    DownloadError,
    InputError,
    ModelCorruptError,
    ModelMissingError,
    WorkerLost,
)
from backends.common.redact import redact_paths

from .warmup import wait_for_imports

log = logging.getLogger(__name__)


def as_gr_error(exc: BaseException) -> gr.Error:
    """The message a person sees; server paths in it are written relative to known folders."""
    text = redact_paths(str(exc))
    if isinstance(exc, InputError):
        return gr.Error(text, title="Please check the input")
    if isinstance(exc, ModelMissingError | ModelCorruptError):
        return gr.Error(text.replace("\n", "<br>"), title="Model not available")
    if isinstance(exc, Cancelled):
        return gr.Error(f"Stopped: {text}", title="Stopped")
    if isinstance(exc, DownloadError):
        return gr.Error(text, title="Download failed")
    if isinstance(exc, DiskFullError):
        return gr.Error(text, title="Not enough disk space")
    if isinstance(exc, WorkerLost):
        return gr.Error(text, title="The worker stopped")
    log.exception("unexpected error in a handler", exc_info=exc)
    return gr.Error(f"Internal error ({exc.__class__.__name__}): {text}", title="Something went wrong")


def user_errors(fn):
    """Decorate a handler (plain or generator) so deliberate errors reach the user as gr.Error."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            wait_for_imports()  # a first import beside another thread's could get a half-initialised module
            try:
                yield from fn(*args, **kwargs)
            except gr.Error:
                raise
            except Exception as e:
                raise as_gr_error(e) from e

        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        wait_for_imports()
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except Exception as e:
            raise as_gr_error(e) from e

    return wrapper
