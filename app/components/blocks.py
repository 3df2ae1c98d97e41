"""``gr.Blocks`` whose request-reading errors never show a server path.

Gradio reads a request's inputs before any handler runs (files moved into its cache, values checked
and preprocessed), and with ``show_error`` its own errors reach the person verbatim: a file path that
was never uploaded is answered with the server's working directory ("Cannot move /srv/app/x.png …"),
an image that does not decode with its path in Gradio's cache. Here a path that was not uploaded is
said so without naming one, and any other reading error goes through :func:`redact_paths`, with
Gradio's upload folder written as ``uploads``. Every failed event's message is also kept for the
error note its status line shows (:mod:`app.components.failures`).
"""

from __future__ import annotations

import gradio as gr
from gradio.exceptions import InvalidPathError
from gradio.utils import get_upload_folder

from backends.common.redact import redact_paths

from . import failures

NOT_UPLOADED = ("A file in the request was not uploaded to this app: upload it first (in the browser, or with "
                "gradio_client's handle_file).")


class StudioBlocks(gr.Blocks):
    def get_api_info(self, *args, **kwargs):
        """Gradio's API description, each parameter with its one-line help (the handler's ``Args:`` line, which
        ``bind_action`` writes from the request's fields) as ``description``: ``view_api()`` documents them."""
        info = super().get_api_info(*args, **kwargs)
        by_name = {f"/{fn.api_name}": fn for fn in self.fns.values() if fn.api_name}
        for name, endpoint in (info or {}).get("named_endpoints", {}).items():
            fn = by_name.get(name)
            if fn is None or fn.fn is None:
                continue
            described = gr.utils.get_function_description(fn.fn)[1]
            for parameter in endpoint.get("parameters", []):
                parameter.setdefault("description", described.get(parameter.get("parameter_name"), ""))
        return info

    async def process_api(self, block_fn, *args, **kwargs):
        """Every failed event's message is kept for its error note (see ``failures.listen``)."""
        try:
            return await super().process_api(block_fn, *args, **kwargs)
        except Exception as e:
            fn_id = block_fn if isinstance(block_fn, int) else block_fn._id
            failures.remember(kwargs.get("session_hash"), fn_id, e)
            raise

    async def preprocess_data(self, *args, **kwargs):
        try:
            return await super().preprocess_data(*args, **kwargs)
        except gr.Error:
            raise  # Gradio's own messages for a person (a value out of range, not among the choices)
        except InvalidPathError:
            raise gr.Error(NOT_UPLOADED, title="Please check the input") from None
        except Exception as e:  # noqa: BLE001 — a value the component could not read: say so, without paths
            raise gr.Error(redact_paths(str(e).replace(get_upload_folder(), "uploads")),
                           title="Please check the input") from None
