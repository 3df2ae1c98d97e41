"""Avalon discussion through a language model, steered by a text dialogue guide (STRATEGIST's
Avalon strategy = value heuristic + dialogue guide).

``LLMSpeaker(llm, guides)`` is the ``speaker`` of a :class:`~backends.games.avalon.search.SearchAgent`:
it writes the agent's turn from its own view only — its role, whom it sees, the public record and
its belief (who it suspects) — and the guide for its side. ``accusations`` reads speeches back
(who accuses whom), which the search agents' belief weighs as weak evidence.

Every utterance is vetted before it is said (:func:`leaks`): a small model readily recites its prompt
("You are player 1 of 5, role Minion (evil). You see: player 2 (evil).") or names what it was told in
private. Such a line is replaced by a neutral one and counted (``LLMSpeaker.replaced``).
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
INSTRUCTION = "Say your turn to the table in one or two sentences, in the first person, without naming your role."
NEUTRAL_LINE = "Let us weigh the votes and the quest results before we choose the next team."
ECHO_WORDS = 6  # this many consecutive words of the private prompt in an utterance count as reciting it
_ACCUSE = (re.compile(r"(?:suspect|distrust|doubt|not\s+trust|against)\D{0,20}player\s+(\d+)", re.IGNORECASE),
           re.compile(r"trust\s+player\s+(\d+)\s+the\s+least", re.IGNORECASE))


def valid_guides(guides) -> bool:
    """Dialogue guides as loaded from a file or a log: None, or a dict of side -> text."""
    return guides is None or (isinstance(guides, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                                for k, v in guides.items()))


def self_description(view: dict) -> str:
    """The agent's private information as one sentence of its prompt."""
    sees = ", ".join(f"player {k} ({v})" for k, v in view["sees"].items()) or "nobody"
    return (f"You are player {view['seat']} of {view['num_players']}, role {view['role']} ({view['side']}). "
            f"You see: {sees}.")


def estimate_line(suspicion: dict[int, float]) -> str:
    """The agent's private belief (who it thinks is evil) as a sentence of its prompt; empty without one."""
    if not suspicion:
        return ""
    top = sorted(suspicion.items(), key=lambda kv: -kv[1])[:2]
    return "Your private estimate of who is evil: " + ", ".join(f"player {k}: {p:.0%}" for k, p in top) + "."


def describe_view(view: dict, suspicion: dict[int, float]) -> str:
    """What the agent knows, as plain sentences for the prompt."""
    lines = [self_description(view)]
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
        lines.append(estimate_line(suspicion))
    lines.append(f"Quest {view['quest'] + 1} is next; player {view['leader']} leads.")
    return "\n".join(lines)


class LLMSpeaker:
    """Writes an agent's discussion turn with ``llm`` following the guide of its side."""

    def __init__(self, llm, guides: dict[str, str] | None = None, max_tokens: int = 60, temperature: float = 0.7):
        self.llm = llm
        self.guides = {**DEFAULT_GUIDES, **(guides or {})}
        self.max_tokens, self.temperature = max_tokens, temperature
        self.last_prompt: list[dict] = []
        self.said = 0  # utterances written
        self.replaced = 0  # of those, replaced by the neutral line because they leaked (see ``leaks``)

    def __call__(self, view: dict, suspicion: dict[int, float], cancel=None) -> str:
        """The agent's words; ``cancel`` (the job's Stop, a ``CancelToken``) ends the LLM's answer (Cancelled)."""
        system = "You are playing The Resistance: Avalon. " + self.guides[view["side"]]
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": describe_view(view, suspicion) + "\n" + INSTRUCTION},
        ]
        self.last_prompt = messages
        seed = hash((view["seat"], len(view["events"]))) % 2**31
        reply = self.llm.complete(messages, max_tokens=self.max_tokens, temperature=self.temperature, seed=seed,
                                  cancel=cancel)
        text = clean_speech(reply.text)
        self.said += 1
        if text and leaks(text, view, [system, self_description(view), estimate_line(suspicion), INSTRUCTION]):
            self.replaced += 1
            return NEUTRAL_LINE
        return text or "I have nothing to add this round."


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


_HIDDEN_WORDS = r"(?:evil|minions?|assassin|morgana|mordred|oberon|merlin|percival|spy|spies|traitors?)"
_EVIL_SELF = (re.compile(r"\b(?:i am|i'm|im|we are|we're|being)\s+(?:an?\s+|the\s+|both\s+|all\s+)?"
                         r"(?:evil|minions?|spies|spy|on the side of evil|on evil's side)\b", re.IGNORECASE),
              re.compile(r"\b(?:as|we|us)\s+(?:an?\s+|the\s+)?(?:evil|minions?|spies|spy)\b", re.IGNORECASE),
              re.compile(r"\bmy (?:fellow |evil )?(?:partners?|ally|allies|accomplices?|teammates?)\b", re.IGNORECASE))
_PROMPT_FORMAT = re.compile(r"\(\s*(?:good|evil|merlin or morgana)\s*\)|\brole\s+\w+\s*\(|\byou see\s*:", re.IGNORECASE)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _recites(text: str, private: list[str], n: int = ECHO_WORDS) -> bool:
    said = _words(text)
    grams = {tuple(said[i:i + n]) for i in range(len(said) - n + 1)}
    for source in private:
        words = _words(source)
        if any(tuple(words[i:i + n]) in grams for i in range(len(words) - n + 1)):
            return True
    return False


def leaks(text: str, view: dict, private: list[str]) -> bool:
    """Does ``text`` give away what the speaker was told in private?

    True when it recites ``ECHO_WORDS`` words in a row of its private prompt (``private``: the guide,
    its self-description, its estimate, the instruction), copies the prompt's format ("(evil)", "You
    see:"), claims its own role when that role is not the Loyal Servant everyone claims to be ("as the
    Assassin"), owns up to being evil ("we evil", "my partner"), or names the role or side of a seat it
    sees ("player 2 is evil" from Merlin or a partner; a Servant, who sees nobody, may accuse freely).
    """
    if _recites(text, [p for p in private if p]) or _PROMPT_FORMAT.search(text):
        return True
    role = view["role"]
    if role != "Servant" and re.search(rf"\b(?:i am|i'm|im|as|my role|role)\b[^.!?]{{0,24}}?\b{re.escape(role)}\b",
                                       text, re.IGNORECASE):
        return True
    if view["side"] == "evil" and any(p.search(text) for p in _EVIL_SELF):
        return True
    for seat in view["sees"]:
        told = rf"\bplayers?\s*{int(seat)}\b\s*(?:\(|,|is\b|was\b|must be\b|'s\b)[^.!?]{{0,16}}?\b{_HIDDEN_WORDS}\b"
        if re.search(told, text, re.IGNORECASE):
            return True
    return False
