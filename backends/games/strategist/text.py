"""Reading an LLM's replies for STRATEGIST: numbered idea lists, a Python function, a text guide."""

from __future__ import annotations

import re

from backends.games.strategist.sandbox import SandboxError

MAX_GUIDE_CHARS = 1200


def parse_ideas(text: str, limit: int = 5) -> list[str]:
    ideas = [m.group(1).strip() for m in re.finditer(r"^\s*\d+\s*[.)]+\s*(.+)$", text, re.MULTILINE)]
    return [i for i in ideas if len(i) > 5][:limit]


def extract_code(text: str) -> str:
    blocks = re.findall(r"```(?:python)?\s*\n(.*?)```", text, re.DOTALL)
    for block in blocks:
        if "def evaluate_state" in block:
            return block.strip() + "\n"
    i = text.find("def evaluate_state")
    if i < 0:
        raise SandboxError("the answer contains no function evaluate_state")
    return text[i:].strip() + "\n"


def extract_guide(text: str) -> str:
    """A dialogue guide: the text inside a ``` block if there is one, else the whole answer; plain prose
    of a sensible length (it becomes part of a system prompt, so markup and code are refused)."""
    blocks = re.findall(r"```(?:\w+)?\s*\n(.*?)```", text or "", re.DOTALL)
    guide = (blocks[0] if blocks else text or "").strip().strip('"')
    guide = re.sub(r"[ \t]+", " ", guide)
    if len(guide) < 40:
        raise SandboxError("the guide is empty or shorter than a sentence")
    if "def " in guide or "import " in guide:
        raise SandboxError("a dialogue guide is advice in plain words, not code")
    return guide[:MAX_GUIDE_CHARS]
