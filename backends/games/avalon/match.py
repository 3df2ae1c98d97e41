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
from dataclasses import dataclass, field, replace

import numpy as np

from backends.common.errors import InputError
from backends.common.seeding import check_seed
from backends.games.avalon.agents import RuleAgent
from backends.games.avalon.dialogue import valid_guides
from backends.games.avalon.game import AvalonConfig, AvalonGame
from backends.games.avalon.search import SearchAgent
from backends.games.avalon.selfplay import heuristic_for
from backends.games.logs import reading_log
from backends.games.match_store import RESUME_KEY, MatchStore
from backends.games.strategist.llm import LLMError
from backends.games.strategist.sandbox import SandboxError, check_source

log = logging.getLogger(__name__)

AGENT_KINDS = ("search", "rule", "search+llm", "strategist", "strategist+llm")

ROLE_NAMES = {"Servant": "Loyal Servant of Arthur"}


@dataclass
class AvalonMatchRequest:
    num_players: int = 5
    human_role: str = "Servant"  # or "random"
    discussion: bool = True
    seed: int | None = None  # None: a fresh random deal (the seed is told once the game is over)
    agents: str = "search"  # search over the belief; the AvalonBench-style rule agents; search + LLM speech;
    # strategist: search with a STRATEGIST strategy's value heuristic (+llm: speaking by its dialogue guides)
    strategy: dict | None = None  # {"name", "source", "guide"} for the strategist agents
    # strategist agents without a strategy: the Improve run (a server folder) whose best strategy they play,
    # else the shipped run's; resolved when the match starts and never kept in the match or its logs
    strategy_run: str | None = None

    def validate(self) -> AvalonConfig:
        if self.seed is not None:
            check_seed(self.seed)
        if self.agents not in AGENT_KINDS:
            raise InputError(f"Agents must be one of {', '.join(AGENT_KINDS)}.")
        _check_strategy(self.agents, self.strategy)
        config = AvalonConfig(int(self.num_players), discussion=bool(self.discussion))
        if self.human_role != "random" and self.human_role not in config.role_list:
            raise InputError(f"Role {self.human_role!r} is not in a {self.num_players}-player game "
                             f"({', '.join(sorted(set(config.role_list)))}).")
        return config


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
            _check_strategy(agents, strategy)
            return cls(game, human, int(data["seed"]), agents, list(data.get("reasoning", [])), strategy,
                       int(data.get("replaced_speeches", 0)))


def _check_strategy(agents: str, strategy: dict | None) -> None:
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


def new_match(request: AvalonMatchRequest) -> AvalonMatch:
    if request.agents.startswith("strategist") and request.strategy is None:
        from backends.games.improve import strategy_for_play

        chosen = strategy_for_play("avalon", request.strategy_run)
        request = replace(request, strategy={"name": chosen.name, "source": chosen.source, "guide": chosen.guide})
    config = request.validate()
    seed = request.seed if request.seed is not None else secrets.randbelow(2**31)
    game = AvalonGame.new(config, seed=seed)
    if request.human_role == "random":
        human = int(np.random.default_rng(seed + 1).integers(config.num_players))
    else:
        human = game.roles.index(request.human_role)
    match = AvalonMatch(game, human, seed, request.agents, strategy=request.strategy)
    run_agents(match)
    return match


def run_agents(match: AvalonMatch) -> None:
    """Let the agents act until the person owes an action or the game is over."""
    game = match.game
    while game.phase != "end":
        action, seats = game.pending()
        agent_seats = [s for s in seats if s != match.human]
        if not agent_seats:
            return
        seat = agent_seats[0]
        agent = match.agent(seat)
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


def human_turn(match: AvalonMatch) -> str | None:
    """The action the person owes now, if any."""
    if match.over:
        return None
    action, seats = match.game.pending()
    return action if match.human in seats else None


def act(match: AvalonMatch, action: str, value) -> AvalonMatch:
    """The person's action: speak(text), propose(list of seats), vote(bool), quest(bool), assassinate(seat)."""
    want = human_turn(match)
    if want is None:
        raise InputError("It is not your turn." if not match.over else "The game is over.")
    if action != want:
        raise InputError(f"Now you should {want}, not {action}.")
    match.game.play(action, match.human, value)
    run_agents(match)
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


def start(request: AvalonMatchRequest) -> tuple[str, AvalonMatch]:
    """A new match, held on the server, after the agents' first moves: (its id, the match)."""
    match = new_match(request)
    return MATCHES.add(match), match


def play(match_id: str | None, action: str, value) -> AvalonMatch:
    """The person's action in the held match (see :func:`act`); a refused action leaves it as it was."""
    return MATCHES.play(match_id, lambda m: act(m, action, value))


def reload(text: str) -> tuple[str, AvalonMatch]:
    """A downloaded log back in play (see :meth:`MatchStore.reload`)."""
    return MATCHES.reload(text, AvalonMatch.from_json)
