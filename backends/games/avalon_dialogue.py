"""Avalon discussion through a language model, steered by a text dialogue guide (STRATEGIST's
Avalon strategy = value heuristic + dialogue guide).

``LLMSpeaker(llm, guides)`` is the ``speaker`` of a :class:`~backends.games.avalon_search.SearchAgent`:
it writes the agent's turn from its own view only — its role, whom it sees, the public record and
its belief (who it suspects) — and the guide for its side. ``accusations`` reads speeches back
(who accuses whom), which the search agents' belief weighs as weak evidence.
"""

from __future__ import annotations

import re

DEFAULT_GUIDES = {
    "good": (
        "You are on the side of good. Be brief and concrete. Name the player you trust least and why, "
        "citing quest results and votes. Support teams without that player. Never claim to know roles "
        "you cannot know. If you are Merlin, hint carefully so the Assassin cannot identify you."
    ),
    "evil": (
        "You are on the side of evil but must sound loyal. Be brief and calm. Cast doubt on a good player "
        "using the public record, never on your evil partners, and argue for teams that include one of you. "
        "Never reveal your role or whom you see."
    ),
}

MAX_CHARS = 320
_ACCUSE = (re.compile(r"(?:suspect|distrust|doubt|not\s+trust|against)\D{0,20}player\s+(\d+)", re.IGNORECASE),
           re.compile(r"trust\s+player\s+(\d+)\s+the\s+least", re.IGNORECASE))


def valid_guides(guides) -> bool:
    """Dialogue guides as loaded from a file or a log: None, or a dict of side -> text."""
    return guides is None or (isinstance(guides, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                                for k, v in guides.items()))


def describe_view(view: dict, suspicion: dict[int, float]) -> str:
    """What the agent knows, as plain sentences for the prompt."""
    sees = ", ".join(f"player {k} ({v})" for k, v in view["sees"].items()) or "nobody"
    lines = [f"You are player {view['seat']} of {view['num_players']}, role {view['role']} ({view['side']}). "
             f"You see: {sees}."]
    for e in view["events"]:
        if e["type"] == "quest_result":
            lines.append(f"Quest {e['quest'] + 1} with team {e['team']} {'succeeded' if e['success'] else 'failed'} "
                         f"({e['fails']} fail cards).")
        elif e["type"] == "vote_result":
            yes = [int(k) for k, v in e["votes"].items() if v]
            lines.append(f"Team {e['team']} was {'approved' if e['approved'] else 'rejected'}; approvals from {yes}.")
        elif e["type"] == "speech" and e["player"] != view["seat"]:
            lines.append(f"Player {e['player']} said: {e['text'][:200]}")
    if suspicion:
        top = sorted(suspicion.items(), key=lambda kv: -kv[1])[:2]
        lines.append("Your private estimate of who is evil: " + ", ".join(f"player {k}: {p:.0%}" for k, p in top) + ".")
    lines.append(f"Quest {view['quest'] + 1} is next; player {view['leader']} leads.")
    return "\n".join(lines)


class LLMSpeaker:
    """Writes an agent's discussion turn with ``llm`` following the guide of its side."""

    def __init__(self, llm, guides: dict[str, str] | None = None, max_tokens: int = 60, temperature: float = 0.7):
        self.llm = llm
        self.guides = {**DEFAULT_GUIDES, **(guides or {})}
        self.max_tokens, self.temperature = max_tokens, temperature
        self.last_prompt: list[dict] = []

    def __call__(self, view: dict, suspicion: dict[int, float]) -> str:
        messages = [
            {"role": "system", "content": "You are playing The Resistance: Avalon. " + self.guides[view["side"]]},
            {"role": "user", "content": describe_view(view, suspicion) + "\nSay your turn to the table in one or "
                                        "two sentences, in the first person, without naming your role."},
        ]
        self.last_prompt = messages
        seed = hash((view["seat"], len(view["events"]))) % 2**31
        reply = self.llm.complete(messages, max_tokens=self.max_tokens, temperature=self.temperature, seed=seed)
        return clean_speech(reply.text) or "I have nothing to add this round."


def clean_speech(text: str) -> str:
    """First two sentences, no role-play markup, capped in length."""
    text = re.sub(r"\s+", " ", re.sub(r"[*#_`>]", "", text or "")).strip().strip('"')
    parts = re.split(r"(?<=[.!?])\s", text)
    out = " ".join(parts[:2]).strip()
    return out[:MAX_CHARS]


def accusations(text: str, n_players: int) -> list[int]:
    """Seats a speech speaks against ("I suspect player 3", "I trust player 1 the least")."""
    found = {int(m) for pattern in _ACCUSE for m in pattern.findall(text or "")}
    return sorted(k for k in found if 0 <= k < n_players)
