"""STRATEGIST's Avalon domain: an Avalon strategy is a value heuristic (Python source, sandboxed) plus a
dialogue guide per side (text). As in the paper the two parts improve in separate runs:

- ``part="heuristic"``: the search agents (``avalon.search.SearchAgent``) of one side use the strategy's
  heuristic at their leaves against AvalonBench-style rule agents on the other (a fixed opponent, so
  scores compare across iterations; sides alternate, the same deals for every strategy of a batch).
  Feedback: the decisions where the heuristic's P(win) and playouts from the true position differ most.
- ``part="guide"``: the side's search agents speak in discussion through the run's LLM following the
  strategy's guide; listeners weigh accusations as evidence, so what a guide makes them say moves the
  game. Feedback: the speeches, whom they accused, whether that player really was evil, the outcome.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from backends.common.errors import InputError
from backends.common.progress import CancelToken, raise_if_cancelled
from backends.games.avalon.agents import RuleAgent, play_avalon
from backends.games.avalon.dialogue import DEFAULT_GUIDES, LLMSpeaker, accusations, valid_guides
from backends.games.avalon.game import AvalonConfig, AvalonGame
from backends.games.avalon.heuristics import BASELINE_SOURCE, STATE_DOC, state_dict
from backends.games.avalon.search import SearchAgent, copy_game
from backends.games.avalon.selfplay import AvalonTask, heuristic_for, play_side
from backends.games.strategist.sandbox import SandboxError, check_source
from backends.games.strategist.text import extract_code, extract_guide

PARTS = ("heuristic", "guide")


@dataclass
class AvalonEvalSettings:
    part: str = "heuristic"  # what the run improves: the value heuristic or the dialogue guide
    num_players: int = 5
    games: int = 8  # per strategy and evaluation; sides alternate (heuristic) or the guide's side plays all
    worlds: int = 8  # sampled worlds per decision of the search agents
    guide_side: str = "good"  # whose dialogue guide a guide run improves
    workers: int = 1
    ray_address: str | None = None


HEURISTIC_SYSTEM = (
    "You improve value heuristics for The Resistance: Avalon (5 players: Merlin and two Servants are good; the "
    "Assassin and a Minion are evil and know each other; Merlin knows the evil players). Good wins by "
    "completing three quests and then surviving the Assassin's guess of Merlin; evil wins by failing three "
    "quests, five rejected teams in a round, or naming Merlin. A heuristic is a Python function "
    "evaluate_state(state) that search agents call at the leaves of their search.\n" + STATE_DOC +
    "\nRules for code: no imports (math is available), no attributes except list/dict methods, no names "
    "starting with '_', no simulations of whole games.")

GUIDE_SYSTEM = (
    "You improve dialogue guides for The Resistance: Avalon (5 players: Merlin and two Servants are good; the "
    "Assassin and a Minion are evil). Before each team proposal every player says one or two sentences. A guide "
    "is short advice, given as the system prompt to a language model that speaks for a player of one side. "
    "Listeners treat accusations such as 'I suspect player 3' as evidence about who is evil.")


def probe(source: str) -> None:
    """Run the heuristic once on an opening position (SandboxError if it fails): broken code never
    reaches the games."""
    heuristic, box = heuristic_for(source)
    try:
        heuristic([state_dict(AvalonGame.new(AvalonConfig(5, discussion=False), seed=0))])
    finally:
        if box is not None:
            box.close()


def evaluate(strategies: list, settings: AvalonEvalSettings, seed: int = 0, llm=None,
             on_game: Callable[[int, int], None] | None = None, cancel: CancelToken | None = None) -> tuple[dict, dict]:
    """Each strategy's win rate for its side against rule agents, over the same deals; strategies that
    fail in the sandbox get no score. Heuristic games run as tasks (serially, in processes or on Ray);
    guide games speak through ``llm`` in this process. ``on_game(done, total)`` hears of each finished
    game (progress); ``cancel`` (the job's Stop) ends the evaluation within the game under way (Cancelled)."""
    from backends.common.parallel import run_tasks

    rng = np.random.default_rng(seed)
    deals = [int(rng.integers(2**31)) for _ in range(settings.games)]
    sides = [settings.guide_side] * settings.games if settings.part == "guide" else \
        ["good" if g % 2 == 0 else "evil" for g in range(settings.games)]
    scores, errors = {}, {}
    total, finished = settings.games * len(strategies), 0

    def one_done(k: int = 0, n: int = 0) -> None:
        nonlocal finished
        finished += 1
        if on_game is not None:
            on_game(finished, total)

    for s in strategies:
        raise_if_cancelled(cancel)
        try:
            probe(s.source)
        except SandboxError as e:
            errors[s.id] = str(e)
            total -= settings.games
            continue
        tasks = [AvalonTask(side, deal, settings.num_players, settings.worlds, s.source, s.id)
                 for side, deal in zip(sides, deals, strict=True)]
        if settings.part == "guide":
            if llm is None:
                raise ValueError("guide evaluation needs the run's LLM")
            speaker = LLMSpeaker(llm, guides=s.guide)
            results = []
            for t in tasks:
                results.append(play_side(t, speaker, cancel))
                one_done()
        else:
            results = run_tasks(play_side, tasks, ray_address=settings.ray_address, workers=settings.workers,
                                on_done=one_done, cancel=cancel)
        failed = [r["error"] for r in results if "error" in r]
        if failed:
            errors[s.id] = failed[0]
            continue
        scores[s.id] = float(np.mean([r["won"] for r in results]))
    return scores, errors


def heuristic_feedback(strategy, settings: AvalonEvalSettings, seed: int = 0, games: int = 2, worst: int = 5,
                       playouts: int = 8, cancel: CancelToken | None = None) -> str:
    """Games with the strategy's heuristic on the good side, as text: the decisions where its P(win) and
    rule-agent playouts from the true position disagree most, and how each game ended. ``cancel`` (the job's
    Stop) ends it between two decisions or sampled worlds (Cancelled)."""
    rng = np.random.default_rng(seed)
    rows, outcomes = [], []
    heuristic, box = heuristic_for(strategy.source)
    try:
        for g in range(games):
            game = AvalonGame.new(AvalonConfig(settings.num_players, discussion=False), seed=int(rng.integers(2**31)))
            agents = {i: SearchAgent(int(rng.integers(2**31)), settings.worlds, None, heuristic)
                      if game.side(i) == "good" else RuleAgent(i) for i in range(game.n)}
            for agent in agents.values():
                agent.cancel = cancel
            while game.phase != "end":
                action, seats = game.pending()
                seat = seats[0]
                if game.side(seat) == "good" and action in ("propose", "vote"):
                    raise_if_cancelled(cancel)
                    st = state_dict(game)
                    (good, _), extra = heuristic([st], cancel)[0]
                    est = np.mean([play_avalon(copy_game(game), {i: RuleAgent(int(rng.integers(2**31)) + i)
                                                             for i in range(game.n)}).winner == "good"
                                   for _ in range(playouts)])
                    rows.append((abs(good - est), g, seat, game.roles[seat], action, st, good, extra, float(est)))
                choice = agents[seat].act(game.view(seat))
                game.play(action, seat, choice)
            outcomes.append(f"Game {g + 1}: {game.winner} won ({game.end_reason}); roles {list(game.roles)}.")
    finally:
        if box is not None:
            box.close()
    rows.sort(key=lambda r: -r[0])
    lines = [*outcomes]
    for _, g, seat, role, action, st, good, extra, est in rows[:worst]:
        brief = {k: st[k] for k in ("quest", "successes", "fails", "rejections", "leader", "evil", "merlin")}
        lines.append(f"- game {g + 1}, player {seat} ({role}) about to {action}, state {json.dumps(brief)}, "
                     f"{len(st['votes'])} votes so far: your heuristic said P(good wins) = {good:.2f} "
                     f"(intermediate {json.dumps(extra)}); {playouts} playouts from there: {est:.2f}.")
    return "\n".join(lines)


def guide_feedback(strategy, settings: AvalonEvalSettings, llm, seed: int = 0, games: int = 1,
                   cancel: CancelToken | None = None) -> str:
    """A game with the guide's side speaking through the LLM, as text: each of its speeches, whom it
    accused and whether they were evil, and the outcome. ``cancel``: the job's Stop (Cancelled)."""
    rng = np.random.default_rng(seed)
    lines = []
    speaker = LLMSpeaker(llm, guides=strategy.guide)
    side = settings.guide_side
    for g in range(games):
        r = play_side(AvalonTask(side, int(rng.integers(2**31)), settings.num_players, settings.worlds,
                                 strategy.source, strategy.id), speaker, cancel)
        if "error" in r:
            raise SandboxError(r["error"])
        game = AvalonGame.from_log(r["log"])
        lines.append(f"Game {g + 1}: {game.winner} won ({game.end_reason}); you spoke for the {side} side; "
                     f"roles {list(game.roles)}.")
        hits = total = 0
        for e in game.events:
            if e["type"] != "speech" or game.side(e["player"]) != side:
                continue
            accused = [k for k in accusations(e["text"], game.n) if k != e["player"]]
            evil = [k for k in accused if game.side(k) == "evil"]
            hits, total = hits + len(evil), total + len(accused)
            note = (f"accused {accused}, of whom evil: {evil}" if accused else "accused nobody")
            lines.append(f"- quest {e['quest'] + 1}, player {e['player']} ({game.roles[e['player']]}): "
                         f"\"{e['text']}\" — {note}.")
        lines.append(f"Accusations that named a truly evil player: {hits} of {total}.")
    return "\n".join(lines)


class AvalonDomain:
    """Avalon strategies: heuristic + guides; ``settings.part`` says which of the two a run improves."""

    game = "avalon"
    parts = PARTS
    settings_type = AvalonEvalSettings
    shipped_run = "avalon-strategist"  # the run shipped in assets/games-strategist

    @staticmethod
    def check(strategy) -> None:
        """Vet a loaded strategy before it is kept: sandboxed code, dialogue guides that are text."""
        check_source(strategy.source)
        if not valid_guides(strategy.guide):
            raise SandboxError("its dialogue guides must be text")

    labels = {"heuristic": "Avalon value heuristic", "guide": "Avalon dialogue guide"}
    budgets = {"heuristic": (8, 8), "guide": (8, 8)}  # default (games per strategy, sampled worlds per decision)

    @classmethod
    def make_settings(cls, part: str, games: int, budget: int, options: dict, workers: int = 1,
                      ray_address: str | None = None) -> AvalonEvalSettings:
        """Evaluation settings from an improvement request (``options``: ``num_players`` 5..10, default 5;
        ``guide_side`` good or evil, default good)."""
        players, side = int(options.get("num_players", 5)), str(options.get("guide_side", "good"))
        if not 5 <= players <= 10:
            raise InputError(f"Avalon is played by 5 to 10 players, got {players}.")
        if side not in ("good", "evil"):
            raise InputError(f"The guide's side is good or evil, got {side!r}.")
        return AvalonEvalSettings(part, players, games, budget, side, workers=workers, ray_address=ray_address)

    @classmethod
    def controls(cls, saved: dict) -> tuple[int | None, int | None, dict]:
        """A saved run's settings as (games, search budget, options): what the controls show on loading it."""
        return saved.get("games"), saved.get("worlds"), {"num_players": saved.get("num_players", 5),
                                                         "guide_side": saved.get("guide_side", "good")}

    @classmethod
    def same_run(cls, part: str, saved: dict, options: dict) -> bool:
        """A guide run improves one side's guide: it goes on only for that side."""
        return part != "guide" or saved.get("guide_side", "good") == options.get("guide_side", "good")

    def __init__(self, settings: AvalonEvalSettings | None = None, llm=None):
        self.settings = settings or AvalonEvalSettings()
        if self.settings.part not in PARTS:
            raise ValueError(f"part must be one of {PARTS}")
        if self.settings.guide_side not in ("good", "evil"):
            raise ValueError("guide_side must be good or evil")
        self.llm = llm
        self.part = self.settings.part
        if self.part == "heuristic":
            self.system, self.noun, self.keep = HEURISTIC_SYSTEM, "heuristic", "the signature"
            self.answer = "Answer with the whole function in one ```python``` block."
            self.repair = "That code was rejected: {error}. Fix it and answer with the whole function."
            self.temperature, self.max_tokens = 0.3, 700
        else:
            self.system, self.noun, self.keep = GUIDE_SYSTEM, "dialogue guide", "its purpose"
            self.answer = "Answer with the whole new guide in one ``` block, in at most 120 words."
            self.repair = "That guide was rejected: {error}. Answer with the whole guide again, in plain words."
            self.temperature, self.max_tokens = 0.7, 220

    def baseline(self) -> dict:
        return {"source": BASELINE_SOURCE.strip() + "\n", "guide": dict(DEFAULT_GUIDES)}

    def seed_prompt(self) -> str:
        if self.part == "heuristic":
            return ("Write a good evaluate_state(state) for Avalon. This simple baseline shows the required form:\n"
                    f"```python\n{BASELINE_SOURCE.strip()}\n```\nWrite a different, better one. Answer with one "
                    "```python``` block.")
        side = self.settings.guide_side
        return (f"Write a dialogue guide for a player of the {side} side. This one shows the form:\n```\n"
                f"{DEFAULT_GUIDES[side]}\n```\nWrite a different, better one. {self.answer}")

    def show(self, strategy) -> str:
        if self.part == "heuristic":
            return f"Heuristic:\n```python\n{strategy.source}```"
        side = self.settings.guide_side
        return f"Dialogue guide for the {side} side:\n```\n{(strategy.guide or DEFAULT_GUIDES)[side]}\n```"

    def parse(self, text: str) -> str:
        if self.part == "guide":
            return extract_guide(text)
        code = extract_code(text)
        check_source(code)
        probe(code)
        return code

    def apply(self, parent, content: str) -> dict:
        guide = dict(parent.guide or DEFAULT_GUIDES)
        if self.part == "heuristic":
            return {"source": content, "guide": guide}
        return {"source": parent.source, "guide": {**guide, self.settings.guide_side: content}}

    def evaluate(self, strategies: list, seed: int, on_game=None,
                 cancel: CancelToken | None = None) -> tuple[dict[str, float], dict[str, str]]:
        return evaluate(strategies, self.settings, seed, llm=self.llm, on_game=on_game, cancel=cancel)

    def feedback(self, strategy, seed: int, cancel: CancelToken | None = None) -> str:
        if self.part == "heuristic":
            return heuristic_feedback(strategy, self.settings, seed=seed, cancel=cancel)
        return guide_feedback(strategy, self.settings, self.llm, seed=seed, cancel=cancel)
