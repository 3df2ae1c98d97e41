"""A person in an Avalon game with agents in the other seats: one call per human action, after which
the agents play until it is the person's turn again (or the game ends).

The match lives on the server (:data:`MATCHES`): while it runs, the person gets only their
information set (:func:`player_view`: ``AvalonGame.events_for(seat)`` — their role and whom they see,
the public record, their own quest cards), never another seat's role, who played which quest card,
the agents' private reasoning or the seed. The full log (roles, reasoning, seed) is offered once the
game is over and replays it exactly, re-checking every action by the rules.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from backends.common.errors import InputError
from backends.common.params import check_request
from backends.common.progress import CancelToken, ProgressEvent, raise_if_cancelled, stream_reports
from backends.games.avalon.agents import RuleAgent
from backends.games.avalon.dialogue import valid_guides
from backends.games.avalon.game import AvalonGame
from backends.games.avalon.search import SearchAgent
from backends.games.avalon.selfplay import heuristic_for
from backends.games.logs import reading_log
from backends.games.match_store import RESUME_KEY, MatchStore, guarded
from backends.games.requests import AVALON_AGENTS, AvalonMatchRequest, AvalonPlayRequest, fresh_seed
from backends.games.strategist.llm import LLMError
from backends.games.strategist.sandbox import SandboxError, check_source

log = logging.getLogger(__name__)

AGENT_KINDS = AVALON_AGENTS

ROLE_NAMES = {"Servant": "Loyal Servant of Arthur"}


@dataclass
class AvalonMatch:
    game: AvalonGame
    human: int
    seed: int
    agents: str = "search"
    reasoning: list[dict] = field(default_factory=list)  # agents' private reasons, shown after the game
    strategy: dict | None = None
    replaced_speeches: int = 0  # LLM utterances withheld because they leaked (avalon.dialogue.leaks)

    def agent(self, seat: int) -> RuleAgent:
        # seeded by seat and game progress: replaying a log makes the same choices
        seed = hash((self.seed, seat, len(self.game.actions))) % 2**32
        if self.agents == "rule":
            return RuleAgent(seed=seed)
        heuristic, guides = None, None
        if self.agents.startswith("strategist"):
            heuristic, _ = heuristic_for(self.strategy["source"], reuse=True)
            guides = self.strategy.get("guide")
        speaker = _speaker(guides) if self.agents.endswith("+llm") else None
        return SearchAgent(seed=seed, worlds=8, speaker=speaker, heuristic=heuristic)

    @property
    def over(self) -> bool:
        return self.game.phase == "end"

    def to_json(self) -> str:
        return json.dumps({"human": self.human, "seed": self.seed, "agents": self.agents, "log": self.game.to_log(),
                           "reasoning": self.reasoning, "strategy": self.strategy,
                           "replaced_speeches": self.replaced_speeches})

    @classmethod
    def from_json(cls, text: str) -> AvalonMatch:
        with reading_log("an Avalon match log"):
            data = json.loads(text)
            if not isinstance(data, dict):
                raise ValueError("an Avalon log is a JSON object with 'log', 'human' and 'seed'")
            game = AvalonGame.from_log(data["log"])
            human = int(data["human"])
            if not 0 <= human < game.n:
                raise ValueError("seat out of range")
            agents = str(data.get("agents", "rule"))
            if agents not in AGENT_KINDS:
                raise ValueError(f"unknown agents {agents!r}")
            strategy = data.get("strategy")
            check_strategy(agents, strategy)
            return cls(game, human, int(data["seed"]), agents, list(data.get("reasoning", [])), strategy,
                       int(data.get("replaced_speeches", 0)))


def check_strategy(agents: str, strategy: dict | None) -> None:
    """Strategist agents need a strategy whose code passes the sandbox's check (logs can be uploaded)."""
    if not agents.startswith("strategist"):
        return
    if not isinstance(strategy, dict) or not isinstance(strategy.get("source"), str):
        raise InputError("Strategist agents need a strategy (run Improve on Avalon, or use the shipped one).")
    if not valid_guides(strategy.get("guide")):
        raise InputError("A strategy's dialogue guides must be text.")
    try:
        check_source(strategy["source"])
    except SandboxError as e:
        raise InputError(f"The strategy's code was refused: {e}") from None


def _speaker(guides: dict[str, str] | None = None):
    """The configured LLM (endpoint or embedded) with the given (else default) dialogue guides; replies are
    cached per request, so replaying a game's log makes the same speeches without new LLM calls."""
    from backends.common.settings import get_settings
    from backends.games.avalon.dialogue import LLMSpeaker
    from backends.games.strategist.llm import CachedLLM, get_llm

    settings = get_settings()
    return LLMSpeaker(CachedLLM(get_llm(settings), settings.models_dir.parent / "llm-cache" / "avalon.jsonl"), guides)


def with_strategy(request: AvalonMatchRequest) -> AvalonMatchRequest:
    """``request`` with the strategy its strategist agents play (the best of its ``strategy_run``, else of the
    shipped run) and no server folder left in it (a run card of it names none)."""
    if request.agents.startswith("strategist") and request.strategy is None:
        from backends.games.improve import strategy_for_play

        chosen = strategy_for_play("avalon", request.strategy_run)
        request = replace(request, strategy={"name": chosen.name, "source": chosen.source, "guide": chosen.guide})
    return replace(request, strategy_run=None)


def new_match(request: AvalonMatchRequest, on_step: Step | None = None,
              cancel: CancelToken | None = None) -> AvalonMatch:
    """A new table: the deal, then the agents' turns until the person owes an action (``on_step``, ``cancel``:
    see :func:`run_agents`)."""
    request = with_strategy(request)
    check_request(request)
    config = request.validate()
    seed = fresh_seed(request.seed)
    seed = secrets.randbelow(2**31) if seed is None else seed
    game = AvalonGame.new(config, seed=seed)
    if request.human_role == "random":
        human = int(np.random.default_rng(seed + 1).integers(config.num_players))
    else:
        human = game.roles.index(request.human_role)
    match = AvalonMatch(game, human, seed, request.agents, strategy=request.strategy)
    run_agents(match, on_step, cancel)
    return match


# (agents' actions done this turn, the public words for the one under way, searched worlds, worlds) — the words
# never name a seat whose action would tell its role (a quest card, the assassination)
Step = Callable[[int, str, int, int], None]
DOING = {"speak": "speaks", "propose": "proposes a team", "vote": "votes"}


def run_agents(match: AvalonMatch, on_step: Step | None = None, cancel: CancelToken | None = None) -> None:
    """Let the agents act until the person owes an action or the game is over. ``on_step`` hears each agent's
    action and each world its search weighs; ``cancel`` (the job's Stop, handed to each agent) ends the turn
    there, within an LLM speech or a sandboxed heuristic's call too (Cancelled)."""
    game = match.game
    done = 0
    while game.phase != "end":
        action, seats = game.pending()
        agent_seats = [s for s in seats if s != match.human]
        if not agent_seats:
            return
        seat = agent_seats[0]
        raise_if_cancelled(cancel)
        agent = match.agent(seat)
        agent.cancel = cancel
        if on_step is not None:
            words = f"Player {seat} {DOING[action]}" if action in DOING else (
                "A quest card is played" if action == "quest" else "The Assassin names Merlin")
            on_step(done, words, 0, 0)
            if isinstance(agent, SearchAgent):
                agent.on_world = lambda i, n, done=done, words=words: on_step(done, words, i, n)
        try:
            choice = agent.act(game.view(seat))
        except SandboxError as e:  # its message may quote a state the agent imagined: keep it off the page
            log.warning("an Avalon strategy failed in its sandbox: %s", e)
            raise InputError("The agents' strategy failed in its sandbox, so this game cannot go on; start a new "
                             "game, or choose other agents. (The details are in the server's log.)") from None
        except LLMError as e:  # an endpoint's error text may quote the agent's private prompt
            log.warning("the LLM failed while an Avalon agent spoke: %s", e)
            raise InputError("The language model failed while an agent was speaking (the details are in the "
                             "server's log); check the LLM endpoint, or choose agents without LLM speech.") from None
        speaker = getattr(agent, "speaker", None)
        match.replaced_speeches += getattr(speaker, "replaced", 0)
        stats = getattr(agent, "last_stats", None)
        if stats and action != "speak":
            match.reasoning.append({"player": seat, "action": action, "quest": game.quest, "choice": str(choice),
                                    "stats": stats})
        game.play(action, seat, choice)
        done += 1


def human_turn(match: AvalonMatch) -> str | None:
    """The action the person owes now, if any."""
    if match.over:
        return None
    action, seats = match.game.pending()
    return action if match.human in seats else None


def act(match: AvalonMatch, action: str, value, on_step: Step | None = None,
        cancel: CancelToken | None = None) -> AvalonMatch:
    """The person's action: speak(text), propose(list of seats), vote(bool), quest(bool), assassinate(seat); then
    the agents' turns (``on_step``, ``cancel``: see :func:`run_agents`)."""
    want = human_turn(match)
    if want is None:
        raise InputError("It is not your turn." if not match.over else "The game is over.")
    if action != want:
        raise InputError(f"Now you should {want}, not {action}.")
    match.game.play(action, match.human, value)
    run_agents(match, on_step, cancel)
    return match


def transcript(match: AvalonMatch) -> list[dict]:
    """What the person has seen, as chat lines: {speaker, text, kind} (kind: info | speech | result | end)."""
    g, me = match.game, match.human
    name = lambda s: f"Player {s}" + (" (you)" if s == me else "")  # noqa: E731
    lines = []
    for e in g.events_for(me):
        t = e["type"]
        if t == "role":
            sees = ", ".join(f"player {k} ({v})" for k, v in e["sees"].items()) or "nobody"
            lines.append({"speaker": "Game", "kind": "info",
                          "text": f"You are Player {me}: {ROLE_NAMES.get(e['role'], e['role'])} ({e['side']}). You see: {sees}."})
        elif t == "setup":
            lines.append({"speaker": "Game", "kind": "info",
                          "text": f"{e['num_players']} players; team sizes {e['team_sizes']}; roles in play: "
                                  f"{', '.join(e['roles_in_game'])}. Player {e['leader']} leads first."})
        elif t == "speech":
            lines.append({"speaker": name(e["player"]), "kind": "speech", "text": e["text"]})
        elif t == "proposal":
            lines.append({"speaker": "Game", "kind": "result",
                          "text": f"{name(e['leader'])} proposes players {e['team']} for quest {e['quest'] + 1} "
                                  f"(attempt {e['attempt']})."})
        elif t == "vote_result":
            votes = ", ".join(f"{k}: {'✓' if v else '✗'}" for k, v in e["votes"].items())
            lines.append({"speaker": "Game", "kind": "result",
                          "text": f"Vote {'approved' if e['approved'] else 'rejected'} the team ({votes})."})
        elif t == "quest_card":
            lines.append({"speaker": "Game", "kind": "info", "text": f"You played {'Success' if e['success'] else 'Fail'}."})
        elif t == "quest_result":
            lines.append({"speaker": "Game", "kind": "result",
                          "text": f"Quest {e['quest'] + 1} {'succeeded' if e['success'] else 'FAILED'} "
                                  f"with {e['fails']} fail card(s)."})
        elif t == "new_leader":
            lines.append({"speaker": "Game", "kind": "info", "text": f"{name(e['leader'])} now leads."})
        elif t == "assassination_phase":
            lines.append({"speaker": "Game", "kind": "result", "text": "Three quests succeeded: the Assassin may name Merlin."})
        elif t == "assassination":
            lines.append({"speaker": "Game", "kind": "result",
                          "text": f"The Assassin (player {e['assassin']}) names player {e['target']}: "
                                  f"{'Merlin is dead' if e['merlin_killed'] else 'that was not Merlin'}."})
        elif t == "game_end":
            roles = ", ".join(f"{k}: {r}" for k, r in e["roles"].items())
            lines.append({"speaker": "Game", "kind": "end",
                          "text": f"{e['winner'].upper()} wins — {e['reason']}. Roles: {roles}."})
    if match.over:  # the agents' private reasoning, only once the game is over
        for seat in sorted({r["player"] for r in match.reasoning}):
            mine = [r for r in match.reasoning if r["player"] == seat]
            text = "\n".join(f"- quest {r['quest'] + 1}, {r['action']} → {r['choice']}: {_stats_text(r['stats'])}"
                              for r in mine)
            lines.append({"speaker": f"Player {seat} ({g.roles[seat]}) — private reasoning", "kind": "reasoning",
                          "text": text})
    return lines


def _stats_text(stats: dict) -> str:
    if "values" in stats:
        top = sorted(stats["values"].items(), key=lambda kv: -kv[1])[:3]
        return (f"searched {stats['worlds']} sampled worlds of {stats['belief_support']} consistent role assignments; "
                f"best values " + ", ".join(f"{k}: {v:.2f}" for k, v in top))
    if "p_merlin" in stats:
        return "P(Merlin) " + ", ".join(f"player {k}: {v:.2f}" for k, v in stats["p_merlin"].items())
    return str(stats)



# --- the person's view, the logs, and the matches held on the server ---------------------------------

MATCHES: MatchStore[AvalonMatch] = MatchStore("Avalon")


def player_view(match: AvalonMatch) -> dict:
    """The person's information set: the game's settings, their seat and what ``events_for`` lets them see."""
    g = match.game
    return {"game": "avalon", "num_players": g.n, "discussion": g.config.discussion, "agents": match.agents,
            "strategy": (match.strategy or {}).get("name"), "seat": match.human,
            "events": g.events_for(match.human)}


def offered_log(match: AvalonMatch, match_id: str) -> tuple[str, str]:
    """(file name, text) of the log the person may download now: their view while the game runs (with the
    id that resumes it here), the full log once it is over."""
    if match.over:
        return "avalon_game.json", match.to_json()
    return "avalon_your_view.json", json.dumps({**player_view(match), RESUME_KEY: match_id}, indent=2)


def start(request: AvalonMatchRequest, on_step: Step | None = None,
          cancel: CancelToken | None = None) -> tuple[str, AvalonMatch]:
    """A new match, held on the server, after the agents' first moves: (its id, the match)."""
    match = new_match(request, on_step, cancel)
    return MATCHES.add(match), match


def play(match_id: str | None, action: str, value, on_step: Step | None = None,
         cancel: CancelToken | None = None) -> AvalonMatch:
    """The person's action in the held match (see :func:`act`); a refused or stopped action (``cancel``) leaves
    the game as it was."""
    return MATCHES.play(match_id, lambda m: act(m, action, value, on_step, cancel))


def reload(text: str) -> tuple[str, AvalonMatch]:
    """A downloaded log back in play (see :meth:`MatchStore.reload`)."""
    return MATCHES.reload(text, AvalonMatch.from_json)


# --- a turn as the person sees it: the typed result of the games_avalon_new / games_avalon_play actions --------

@dataclass
class AvalonTurn:
    """The table after the agents' turns, as the person may know it: their information set (their role and whom
    they see, the public record, their own quest cards), never another seat's role, a quest card of another seat,
    the agents' private reasoning or the seed — those only once the game is over. What the tab shows, the API
    returns and a run card summarises."""

    match_id: str  # the game on the server (this person's)
    seat: int  # the person's seat
    num_players: int
    role: str  # the person's role
    side: str  # good or evil
    turn: str | None  # the action the person owes now (speak, propose, vote, quest, assassinate), if any
    team_size: int  # of the quest under way
    team: list[int] | None  # the team proposed, if any
    leader: int
    rejections: int  # rejected proposals this round
    quest_results: list[bool]
    agents: str
    strategy: str | None  # the name of the strategy the strategist agents play
    chat: list[dict]  # the table as the person saw it: {speaker, kind, text} (``transcript``)
    over: bool
    outcome: str | None  # once over: who won and why
    seed: int | None  # once over: the seed that dealt it (enter it to deal it again)
    replaced_speeches: int  # agent speeches withheld because they gave away what the agent was told in private
    log_name: str  # the log offered now: your view while the game runs, the full log once it is over
    log_text: str


def turn(match_id: str, match: AvalonMatch) -> AvalonTurn:
    """The person's view of ``match`` after a turn (see :class:`AvalonTurn`)."""
    view = match.game.view(match.human)
    name, text = offered_log(match, match_id)
    outcome = f"{match.game.winner.upper()} wins — {match.game.end_reason}" if match.over else None
    return AvalonTurn(match_id, match.human, match.game.n, view["role"], view["side"], human_turn(match),
                      int(view["team_size"]), list(view["team"]) if view.get("team") is not None else None,
                      int(view["leader"]), int(view["rejections"]), list(match.game.quest_results), match.agents,
                      (match.strategy or {}).get("name"), transcript(match), match.over, outcome,
                      match.seed if match.over else None, match.replaced_speeches, name, text)


def _reporter(report, opening: str):
    """``run_agents``' ``on_step`` as the action's progress events."""

    def on_step(done: int, words: str, world: int, worlds: int) -> None:
        searching = f" — weighing world {world + 1} of {worlds}" if worlds else ""
        report(ProgressEvent(world / worlds if worlds else 0.0, f"{opening}: {words}{searching}"))

    return on_step


def new_turn(request: AvalonMatchRequest, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | AvalonTurn]:
    """The ``games_avalon_new`` action: deal a table and let the agents act until the person owes an action,
    reporting each agent's action and each world its search weighs; a Stop there deals no game (Cancelled)."""

    def work(report) -> AvalonTurn:
        with guarded():
            match_id, match = start(request, _reporter(report, "The table is dealt"), report.cancel)
            return turn(match_id, match)

    yield ProgressEvent(0.0, "Dealing the table")
    yield from stream_reports(work, cancel)


def play_turn(request: AvalonPlayRequest, cancel: CancelToken | None = None) -> Iterator[ProgressEvent | AvalonTurn]:
    """The ``games_avalon_play`` action: the person's action, then the agents' turns until the person owes one
    again, reported as :func:`new_turn` does; a Stop there leaves the game as it was before the person's action
    (Cancelled), so the person acts again (the agents' choices are seeded: they choose the same)."""

    def work(report) -> AvalonTurn:
        with guarded():
            match = play(request.match_id, request.action, request.value, _reporter(report, "The others play"),
                         report.cancel)
            return turn(request.match_id, match)

    yield ProgressEvent(0.0, "The others play")
    yield from stream_reports(work, cancel)
