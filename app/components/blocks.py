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
import gradio.blocks
import gradio.routes
from gradio.exceptions import InvalidPathError
from gradio.utils import get_upload_folder

from backends.common.redact import redact_paths

from . import failures

NOT_UPLOADED = ("A file in the request was not uploaded to this app: upload it first (in the browser, or with "
                "gradio_client's handle_file).")


class _DeferringApp(gradio.routes.App):
    """Gradio builds a FastAPI app for a Blocks three times: when the ``with`` block exits, in ``queue()``, and
    in ``launch()``; only the last serves. With every tab of the suite, each build costs about half a second
    (the page config, ~90 routes, the MCP check), most of the app's start. A :class:`StudioBlocks` skips the
    first two, and the page config ``__exit__`` computes (``launch`` computes it again); its ``app`` and
    ``config`` are built when first read (``launch`` sets both, ``gr.mount_gradio_app`` builds its own app).
    Any other Blocks is built as Gradio does."""

    @staticmethod
    def create_app(blocks, *args, **kwargs):
        if getattr(blocks, "_defer_app_build", False):
            return None
        return gradio.routes.App.create_app(blocks, *args, **kwargs)


gradio.blocks.App = _DeferringApp


class StudioBlocks(gr.Blocks):
    _built_app = None
    _built_config = None
    _defer_app_build = False

    @property
    def config(self):
        if self._built_config is None and not self._defer_app_build:
            self._built_config = super().get_config_file()
        return self._built_config

    @config.setter
    def config(self, value):
        self._built_config = value

    _launch_config: tuple | None = None

    def get_config_file(self):
        """None while the app build is deferred. During ``launch`` Gradio computes the page config, then again
        while it sets up its MCP check (which may turn the MCP server on): the second is reused unless the MCP
        setting changed in between."""
        if self._defer_app_build:
            return None
        memo = self._launch_config
        if memo is not None and memo[0] == getattr(self, "mcp_server", None):
            return memo[1]
        config = super().get_config_file()
        if memo is not None:  # inside launch: remember this one
            self._launch_config = (getattr(self, "mcp_server", None), config)
        return config

    def launch(self, *args, **kwargs):
        self._launch_config = (object(), None)  # nothing cached yet; the first call fills it
        try:
            return super().launch(*args, **kwargs)
        finally:
            self._launch_config = None

    @property
    def app(self):
        if self._built_app is None:
            self._built_app = gradio.routes.App.create_app(self, mcp_server=False)
        return self._built_app

    @app.setter
    def app(self, value):
        self._built_app = value

    def __exit__(self, *args):
        self._defer_app_build = True
        try:
            super().__exit__(*args)
        finally:
            self._defer_app_build = False

    def queue(self, *args, **kwargs):
        self._defer_app_build = True
        try:
            return super().queue(*args, **kwargs)
        finally:
            self._defer_app_build = False

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
