"""A person against a GOPS agent: the typed request, the match state, and one call per move.

The agent bids on the state *before* it is told the person's card, so it never sees a sealed bid.
The match lives on the server (:data:`MATCHES`); while it runs, the person gets only their view
(:func:`player_view`: the prizes revealed so far, never the order of the rest, nor the seed that
dealt it). The full log — the whole prize order, the seed — is offered once the game is over and
replays it exactly.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from backends.common.errors import InputError
from backends.common.params import check_request
from backends.common.progress import CancelToken, ProgressEvent, stream_reports
from backends.games.gops.agents import Agent, GreedyAgent, MCTSAgent, RandomAgent
from backends.games.gops.game import GopsState
from backends.games.gops.selfplay import strategy_agent
from backends.games.logs import reading_log
from backends.games.match_store import RESUME_KEY, MatchStore, guarded
from backends.games.requests import GOPS_OPPONENTS, GopsMatchRequest, GopsPlayRequest, fresh_seed
from backends.games.strategist.sandbox import SandboxError

OPPONENTS = GOPS_OPPONENTS


@dataclass
class GopsMatch:
    request: GopsMatchRequest
    state: GopsState
    resigned: bool = False
    search: list[dict] = field(default_factory=list)  # the agent's statistics, one per move

    @property
    def over(self) -> bool:
        return self.resigned or self.state.is_terminal

    @property
    def result(self) -> str | None:
        if self.resigned:
            return "You resigned: the agent wins."
        if not self.state.is_terminal:
            return None
        you, agent = self.state.scores
        if you == agent:
            return f"Draw, {you:g} : {agent:g}."
        return f"{'You win' if you > agent else 'The agent wins'}, {you:g} : {agent:g}."

    def to_json(self) -> str:
        return json.dumps({"request": self.request.__dict__, "game": json.loads(self.state.to_log()),
                           "resigned": self.resigned, "search": self.search})

    @classmethod
    def from_json(cls, text: str) -> GopsMatch:
        with reading_log("a GOPS game log"):
            data = json.loads(text)
            if not isinstance(data, dict) or not isinstance(data.get("request"), dict):
                raise ValueError("a GOPS log is a JSON object with 'request' and 'game'")
            request = GopsMatchRequest(**data["request"])
            check_request(request)
            request.validate()
            state = GopsState.from_log(json.dumps(data["game"]))
            return cls(request, state, bool(data.get("resigned", False)), list(data.get("search", [])))


def make_agent(request: GopsMatchRequest) -> Agent:
    """The agent (an LLM-written strategy runs in a shared, long-lived sandbox: nothing to close)."""
    if request.opponent == "random":
        return RandomAgent()
    if request.opponent == "greedy":
        return GreedyAgent()
    if request.opponent == "mcts":
        return MCTSAgent(simulations=request.simulations)
    if request.opponent == "mcts-learning":  # learns from the bids you revealed earlier in this game
        return MCTSAgent(simulations=request.simulations, opponent="learned")
    return strategy_agent(request.strategy_source, reuse=True, simulations=request.simulations)[0]


def new_match(request: GopsMatchRequest) -> GopsMatch:
    if request.opponent == "strategist" and not request.strategy_source:
        from backends.games.improve import strategy_for_play

        chosen = strategy_for_play("gops", request.strategy_run)
        request = replace(request, strategy_source=chosen.source, strategy_name=chosen.name)
    request = replace(request, strategy_run=None)
    check_request(request)
    config = request.validate()
    seed = fresh_seed(request.seed)
    request = replace(request, seed=secrets.randbelow(2**31) if seed is None else seed)
    return GopsMatch(request, GopsState.new(config, seed=request.seed))


Progress = Callable[[int, int], None]  # (simulations done, budget) of the agent's search


def play_card(match: GopsMatch, card: int, on_search: Progress | None = None,
              cancel: CancelToken | None = None) -> GopsMatch:
    """The person (player 0) bids ``card``; the agent (player 1) bids on the same state, unaware of it.
    ``on_search`` hears the agent's search between its batches; ``cancel`` (the job's Stop) ends it there."""
    if match.over:
        raise InputError("The game is over: start a new one.")
    if card not in match.state.hand(0):
        raise InputError(f"You do not hold card {card}; your hand is {list(match.state.hand(0))}.")
    agent = make_agent(match.request)
    agent.cancel = cancel
    if isinstance(agent, MCTSAgent):
        agent.on_progress = on_search
    rng = np.random.default_rng([match.request.seed, match.state.round])
    try:
        bid = agent.act(match.state, 1, rng)
    except SandboxError as e:
        raise InputError(f"The strategy failed in its sandbox: {e}") from None
    stats = agent.describe_last_move() or {"chosen": bid}
    return GopsMatch(match.request, match.state.apply({0: int(card), 1: int(bid)}), False,
                     match.search + [{"round": match.state.round + 1, "prize": match.state.prize, **stats}])


def resign(match: GopsMatch) -> GopsMatch:
    if match.over:
        raise InputError("The game is already over.")
    return GopsMatch(match.request, match.state, True, match.search)


# --- the person's view, the logs, and the matches held on the server ---------------------------------

MATCHES: MatchStore[GopsMatch] = MatchStore("GOPS")


def player_view(match: GopsMatch) -> dict:
    """What the person (player 0) may know: the rules, the prizes revealed so far, both players' bids,
    the scores, their hand and the agent's search statistics for its revealed bids."""
    s, r = match.state, match.request
    return {"game": "gops", "num_cards": s.config.num_cards, "tie_rule": s.config.tie_rule,
            "prize_order": s.config.prize_order, "opponent": r.opponent, "simulations": r.simulations,
            "strategy": r.strategy_name, "round": s.round, "prizes_revealed": list(s.prizes_seen),
            "bids": [list(b) for b in s.bids], "scores": list(s.scores), "pot": s.pot,
            "your_hand": list(s.hand(0)), "agent_search": match.search, "resigned": match.resigned}


def offered_log(match: GopsMatch, match_id: str) -> tuple[str, str]:
    """(file name, text) of the log the person may download now: their view while the game runs (with
    the id that resumes it here), the full log once it is over."""
    if match.over:
        return "gops_game.json", json.dumps(json.loads(match.to_json()), indent=2)
    return "gops_your_view.json", json.dumps({**player_view(match), RESUME_KEY: match_id}, indent=2)


def start(request: GopsMatchRequest) -> tuple[str, GopsMatch]:
    """A new match, held on the server: (its id, the match)."""
    match = new_match(request)
    return MATCHES.add(match), match


def play(match_id: str | None, card: int | str, on_search: Progress | None = None,
         cancel: CancelToken | None = None) -> GopsMatch:
    """The person's bid in the held match; ``card`` as the page (a button's label) or an API client sends it.
    A bid that fails or is stopped (``cancel``) leaves the game as it was."""
    card = parse_card(card)
    return MATCHES.play(match_id, lambda m: play_card(m, card, on_search, cancel))


def parse_card(value: int | str) -> int:
    """A card is a whole number; anything else is the sender's mistake, and the game goes on as it was."""
    if isinstance(value, int | float) and not isinstance(value, bool) and float(value).is_integer():
        return int(value)  # from a number field (the API's card)
    try:
        return int(str(value).strip())
    except ValueError:
        raise InputError(f"A card is a whole number from your hand, not {str(value)[:20]!r}.") from None


def resign_match(match_id: str | None) -> GopsMatch:
    return MATCHES.play(match_id, resign)


def reload(text: str) -> tuple[str, GopsMatch]:
    """A downloaded log back in play (see :meth:`MatchStore.reload`)."""
    return MATCHES.reload(text, GopsMatch.from_json)


# --- a move as the person sees it: the typed result of the moves and of the games_gops_play action ------------

@dataclass
class GopsTurn:
    """The game after a move, as the person (player 0) may know it: nothing of the prizes still face down, nor the
    seed, until the game is over. What the tab shows, the API returns and a run card summarises."""

    match_id: str  # the game on the server (this person's)
    num_cards: int
    tie_rule: str
    opponent: str
    strategy: str  # the strategist opponent's strategy, as the person chose it ("" for the others)
    round: int  # rounds finished
    prize: int | None  # the prize up now (None: the game is over)
    scores: tuple[float, float]  # (you, the agent)
    pot: float  # carried over from ties (tie rule "carry")
    hand: list[int]  # the cards you still hold
    rounds: list[dict]  # each finished round: round, prize, your bid, the agent's, who won it
    agent_search: list[dict]  # the agent's search statistics for each of its revealed bids
    over: bool
    outcome: str | None  # once over: who won (or that you resigned)
    seed: int | None  # once over: the seed that dealt it (enter it to deal it again)
    log_name: str  # the log offered now: your view while the game runs, the full log once it is over
    log_text: str


def turn(match_id: str, match: GopsMatch) -> GopsTurn:
    """The person's view of ``match`` after a move (see :class:`GopsTurn`)."""
    s, r = match.state, match.request
    rounds = [{"round": i + 1, "prize": s.prizes[i], "you": b0, "agent": b1,
               "won_by": "you" if b0 > b1 else "agent" if b1 > b0 else "tie"} for i, (b0, b1) in enumerate(s.bids)]
    name, text = offered_log(match, match_id)
    return GopsTurn(match_id, s.config.num_cards, s.config.tie_rule, r.opponent, r.strategy_name, s.round,
                    None if match.over else s.prize, tuple(s.scores), s.pot, [] if match.over else list(s.hand(0)),
                    rounds, list(match.search), match.over, match.result, r.seed if match.over else None, name, text)


def play_turn(request: GopsPlayRequest, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | GopsTurn]:
    """The ``games_gops_play`` action: the person's bid, then the agent's search, reported between its batches
    (simulations done of its budget); a Stop there ends the search and leaves the game as it was (Cancelled).
    Ends with the :class:`GopsTurn`."""

    def work(report) -> GopsTurn:
        def on_search(done: int, budget: int) -> None:
            report(ProgressEvent(done / budget, f"The agent searches: {done:,} of {budget:,} simulations"))

        with guarded():
            match = play(request.match_id, request.card, on_search, report.cancel)
            return turn(request.match_id, match)

    yield ProgressEvent(0.0, "The agent chooses its bid")
    yield from stream_reports(work, cancel)
