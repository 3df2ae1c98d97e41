"""The Strategy Games capability's typed requests: every field a person sets is declared once, with its range,
choices, default and one-line help (``backends.common.params``); the tab's controls, the CLI's options, the API's
named parameters and the checks every action runs come from here. Torch-free and light: the tab and the action
catalog import them.

- :class:`ImproveRequest`: STRATEGIST iterations on a run (the ``games_improve`` action).
- :class:`GopsMatchRequest`: a new GOPS game against an agent; :class:`GopsPlayRequest`: the person's bid, then
  the agent's search (the ``games_gops_play`` action).
- :class:`AvalonMatchRequest`: a new Avalon table (the ``games_avalon_new`` action: the agents act until it is the
  person's turn); :class:`AvalonPlayRequest`: the person's action, then the agents' turns (``games_avalon_play``).
- :class:`SelfPlayRequest`: ``iclr25-studio games selfplay / tournament`` (batch GOPS self-play).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backends.common.errors import InputError
from backends.common.params import param, seed_param
from backends.common.seeding import MAX_SEED
from backends.games import domains
from backends.games.avalon.game import ROLES, TEAM_SIZES, default_roles

METHODS = ("strategist", "beam")
# what an Improve run can improve: domains.run_kinds() (a test holds the two equal; the registry imports the
# games' engines, which a request must not)
KINDS = ("gops", "avalon-heuristic", "avalon-guide")
SIDES = ("good", "evil")
GOPS_OPPONENTS = ("random", "greedy", "mcts", "mcts-learning", "strategist")
TIE_RULES = ("discard", "carry")
PRIZE_ORDERS = ("random", "descending", "ascending")
AVALON_AGENTS = ("search", "rule", "search+llm", "strategist", "strategist+llm")
# the roles the Avalon setups deal (the engine knows Percival, Morgana, Mordred and Oberon too; no setup has them)
PLAYABLE_ROLES = tuple(r for r in ROLES if any(r in default_roles(n) for n in TEAM_SIZES))
AVALON_ACTIONS = ("speak", "propose", "vote", "quest", "assassinate")
MAX_CARDS = 13
RANDOM_SEED_HELP = "-1: a new one each game (told once the game is over)."


def random_seed_param(what: str):
    """A game's seed: a whole number, or -1 (or None) for a fresh random deal."""
    return param(-1, minimum=-1, maximum=MAX_SEED, label="Seed (-1 = random)",
                 help=f"Same seed → the same {what}; {RANDOM_SEED_HELP}")


def fresh_seed(seed: int | None) -> int | None:
    """The seed a game is dealt with: None (a fresh random one) for -1 or None."""
    return None if seed is None or seed < 0 else seed


@dataclass
class ImproveRequest:
    """Run ``iterations`` more STRATEGIST iterations on the run in ``run_dir`` (a new run when it is empty).

    ``run_dir`` is where the run lives and its files are written: an output of the action (a replay of
    its run card points it at ``--out``)."""

    kind: str = param(domains.DEFAULT_GAME, choices=KINDS, label="Improve",
                      help="What the run improves: the GOPS value heuristic, or Avalon's value heuristic or dialogue "
                           "guide; a new run starts when you change this.")
    iterations: int = param(2, minimum=1, maximum=20, label="Iterations",
                            help="Rounds of improvement: each proposes ideas, writes new strategies and scores them.")
    method: str = param("strategist", choices=METHODS, label="Method",
                        help="strategist, or beam: the paper's ablation without the idea library.")
    games: int | None = param(None, minimum=2, maximum=40, step=2, label="Games (GOPS: per pair; Avalon: per strategy)",
                              cli=("--games-per-pair",),
                              help="Self-play games that score each strategy: more is steadier and slower "
                                   "(by default the game's own: GOPS 4, Avalon 8).")
    budget: int | None = param(None, minimum=2, maximum=200, step=2, label="Search budget",
                               cli=("--simulations", "--worlds"),
                               help="GOPS: MCTS simulations per move; Avalon: sampled worlds per decision "
                                    "(by default the game's own: GOPS 16, Avalon 8).")
    num_cards: int = param(6, minimum=3, maximum=MAX_CARDS, label="GOPS cards", cli=("--cards",),
                           help="Cards per suit of the GOPS games the strategies are scored on.")
    num_players: int = param(5, minimum=5, maximum=10, label="Avalon players", cli=("--players",),
                             help="Players at the Avalon tables the strategies are scored on.")
    guide_side: str = param("good", choices=SIDES, label="Guide of the side",
                            help="Avalon dialogue guide runs: the side whose guide is improved.")
    seed: int = seed_param("Same seed and settings → the same run.")
    workers: int = param(1, minimum=1, maximum=256, label="Workers",
                         help="Local processes for the self-play games.")
    ray_address: str | None = param(None, label="Ray address", cli=("--ray",),
                                    help="Run the self-play games as Ray tasks on this cluster ('local' starts Ray "
                                         "here; the [dist] extra).")
    run_dir: Path | None = None  # the run folder (see above): where the action writes, not a setting

    @property
    def options(self) -> dict:
        """The game's own settings, as the games' domains read them (``make_settings``, ``same_run``)."""
        return {"num_cards": self.num_cards, "num_players": self.num_players, "guide_side": self.guide_side}

    def validate(self) -> tuple[str, str]:
        """(game, part) of the run's kind."""
        return domains.parse_kind(self.kind)


@dataclass
class GopsMatchRequest:
    """A new GOPS game: the person (player 0) against an agent (player 1)."""

    num_cards: int = param(6, minimum=3, maximum=MAX_CARDS, label="Cards per suit (13 = standard)",
                           help="Cards per suit: fewer makes a shorter game and a quicker search.")
    tie_rule: str = param("discard", choices=TIE_RULES, label="Ties",
                          help="discard: nobody scores (OpenSpiel); carry: points go to the next round's winner.")
    prize_order: str = param("random", choices=PRIZE_ORDERS, label="Prize order",
                             help="The order the prize cards are turned up: random (the game), or fixed for practice.")
    opponent: str = param("mcts", choices=GOPS_OPPONENTS, label="Opponent",
                          help="mcts = MCTS with the hand-written value heuristic at the leaves; mcts-learning = the "
                               "same, modelling how you bid from your revealed bids this game; strategist = MCTS with "
                               "the best strategy of your Improve run (else the shipped run's).")
    simulations: int = param(20_000, minimum=10, maximum=200_000, step=10, label="MCTS simulations per move",
                             help="≈1 M/s with the compiled heuristic; ≈50 k/s with an LLM-written one (sandboxed).")
    seed: int | None = random_seed_param("prize order and opponent")
    strategy_source: str | None = None  # opponent "strategist": the value heuristic at its MCTS leaves
    strategy_name: str = ""  # where that strategy came from (id, hand-written or which LLM)
    # opponent "strategist" without a source: the Improve run (a server folder) whose best strategy plays,
    # else the shipped run's; resolved when the match starts and never kept in the match or its logs
    strategy_run: str | None = None

    def validate(self):
        """The game's configuration (a GopsConfig); the strategist opponent's strategy checked by the sandbox."""
        from backends.games.gops.game import GopsConfig
        from backends.games.strategist.sandbox import SandboxError, check_source

        if self.opponent == "strategist":
            if not self.strategy_source:
                raise InputError("The strategist opponent needs a strategy: run Improve or load a strategy library.")
            try:
                check_source(self.strategy_source)
            except SandboxError as e:
                raise InputError(f"The strategy was refused: {e}") from None
        return GopsConfig(int(self.num_cards), self.tie_rule, self.prize_order)


@dataclass
class GopsPlayRequest:
    """The person's bid in a GOPS game held on the server; the agent bids on the same state, unaware of it."""

    match_id: str | None  # the game on the server (the session holds it; an API client's session too)
    card: int = param(minimum=1, maximum=MAX_CARDS, label="Card",
                      help="The card you bid: one from your hand (the agent bids at the same time, unaware of it).")


@dataclass
class AvalonMatchRequest:
    """A new Avalon table: the person in one seat, agents in the others."""

    num_players: int = param(5, minimum=5, maximum=10, label="Players",
                             help="Seats at the table, you included (more seats deal more evil roles).")
    human_role: str = param("Servant", choices=("random", *PLAYABLE_ROLES), label="Your role",
                            help="The role you are dealt; random deals one as the game would.")
    discussion: bool = param(True, label="Discussion before each proposal",
                             help="Everyone speaks once before each team proposal (the chat).")
    seed: int | None = random_seed_param("deal and agents' choices")
    agents: str = param("search", choices=AVALON_AGENTS, label="Agents",
                        help="search over beliefs; rule-based (AvalonBench); search with LLM speech; a STRATEGIST "
                             "strategy's value heuristic (+llm: speaking by its dialogue guides). LLM speech uses "
                             "the configured endpoint (ICLR25_LLM_BASE_URL), else the embedded SmolLM2-135M.")
    strategy: dict | None = None  # {"name", "source", "guide"} for the strategist agents
    # strategist agents without a strategy: the Improve run (a server folder) whose best strategy they play,
    # else the shipped run's; resolved when the match starts and never kept in the match or its logs
    strategy_run: str | None = None

    def validate(self):
        """The table's configuration (an AvalonConfig); the role asked for must be dealt at this table."""
        from backends.games.avalon.game import AvalonConfig
        from backends.games.avalon.match import check_strategy

        check_strategy(self.agents, self.strategy)
        config = AvalonConfig(int(self.num_players), discussion=bool(self.discussion))
        if self.human_role != "random" and self.human_role not in config.role_list:
            raise InputError(f"Role {self.human_role!r} is not in a {self.num_players}-player game "
                             f"({', '.join(sorted(set(config.role_list)))}).")
        return config


@dataclass
class AvalonPlayRequest:
    """The person's action in an Avalon game held on the server; then the agents act until it is the person's
    turn again (or the game ends). The field of the action is the one that counts."""

    match_id: str | None  # the game on the server (the session holds it; an API client's session too)
    action: str = param(choices=AVALON_ACTIONS, label="Action",
                        help="What you do: speak, propose a team, vote, play a quest card, or (as the Assassin) "
                             "name Merlin.")
    text: str | None = param(None, label="Your statement", help="speak: what you tell the table ('pass' to say nothing).")
    team: list[int] | None = param(None, label="Team",
                                   help="propose: the seats on the team, as many as this quest needs.")
    approve: bool | None = param(None, label="Approve", help="vote: true approves the proposed team, false rejects it.")
    success: bool | None = param(None, label="Success",
                                 help="quest: true plays Success, false plays Fail (only evil players may fail).")
    target: int | None = param(None, minimum=0, maximum=9, label="Who is Merlin?",
                               help="assassinate: the seat you name as Merlin; naming Merlin wins it for evil.")

    def validate(self) -> None:
        if self.action == "speak" and not (self.text or "").strip():
            raise InputError("Type something to say (or 'pass').")
        if self.action == "propose":
            if not isinstance(self.team, list | tuple) or not self.team:
                raise InputError("Tick the players of your team.")
            try:
                self.team = [int(s) for s in self.team]
            except (TypeError, ValueError):
                raise InputError("A team is a list of seat numbers.") from None
        if self.action == "vote" and self.approve is None:
            raise InputError("Approve or reject the team.")
        if self.action == "quest" and self.success is None:
            raise InputError("Play Success or Fail.")
        if self.action == "assassinate" and self.target is None:
            raise InputError("Choose whom to name as Merlin.")

    @property
    def value(self):
        """The action's value, as the game takes it."""
        return {"speak": self.text, "propose": self.team, "vote": self.approve, "quest": self.success,
                "assassinate": self.target}[self.action]


@dataclass
class SelfPlayRequest:
    """Batch GOPS self-play (``iclr25-studio games selfplay / tournament``): games between agents, seats
    alternating, each game a JSON line."""

    games: int = param(20, minimum=1, maximum=100_000, help="Games per pairing (seats alternate).")
    num_cards: int = param(6, minimum=3, maximum=MAX_CARDS, cli=("--cards",), help="Cards per suit.")
    tie_rule: str = param("discard", choices=TIE_RULES,
                          help="discard: nobody scores (OpenSpiel); carry: points go to the next round's winner.")
    simulations: int = param(300, minimum=1, maximum=200_000, help="MCTS simulations per move of the search agents.")
    seed: int = seed_param("Same seed and settings → the same games.")
    workers: int = param(1, minimum=1, maximum=256, help="Local worker processes.")
    ray_address: str | None = param(None, cli=("--ray",),
                                    help="Run the games as Ray tasks on this cluster ('local' starts Ray here; "
                                         "the [dist] extra).")
