"""A tiny randomly initialised Llama with a byte-level tokenizer, saved as a model folder the suite loads by path.

Why: the real SmolLM2 takes tens of seconds to load; the compression code only needs the Llama layout
(GQA included: 4 query heads, 2 key/value heads)."""

from __future__ import annotations

from pathlib import Path


def tokenizer():
    from tokenizers import Tokenizer, decoders, models
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(sorted(ByteLevel.alphabet()))}
    vocab["<|endoftext|>"] = len(vocab)
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tk.pre_tokenizer = ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|endoftext|>")


def model(layers: int = 4, seed: int = 0):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=257, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=True, eos_token_id=256, bos_token_id=256, pad_token_id=256)
    return LlamaForCausalLM(config).eval()


def make_tiny_lm(folder: Path, layers: int = 4) -> Path:
    folder = Path(folder)
    if not (folder / "config.json").exists():
        folder.mkdir(parents=True, exist_ok=True)
        model(layers).save_pretrained(folder)
        tokenizer().save_pretrained(folder)
    return folder


def one_thread():
    """Run a tiny model on one thread (restored after): on a busy machine, thread hand-offs cost more than the
    arithmetic of a 32-wide model."""
    import contextlib

    import torch

    @contextlib.contextmanager
    def scope():
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    return scope()


HUB_ID = "tiny-tests/llama-gqa"


def cache_as_hub(folder: Path, cache: Path, repo_id: str = HUB_ID) -> str:
    """Lay ``folder``'s files out as the Hugging Face cache holds a downloaded repo (refs/main → a snapshot), so
    the tab can name the tiny model by a Hub id (it refuses folders of the server); returns the id."""
    import shutil

    commit = "0" * 40
    repo = Path(cache) / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    if not snapshot.is_dir():
        snapshot.mkdir(parents=True)
        for f in Path(folder).iterdir():
            shutil.copy(f, snapshot / f.name)
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(commit)
    return repo_id
