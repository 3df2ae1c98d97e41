"""Strategy games: our GOPS engine and agents against OpenSpiel, side by side in one run.

- Engine speed: random GOPS playouts per second, our batched numpy engine vs OpenSpiel's goofspiel
  driven from Python (ratio).
- Search speed: MCTS simulations per second, ours (numba-compiled decoupled UCT) vs OpenSpiel's C++
  ``MCTSBot`` with random-rollout evaluation on turn-based goofspiel (ratio, same leaf evaluator);
  also ours with the compiled baseline heuristic and with a sandboxed Python heuristic.
- STRATEGIST vs beam (the paper's ablation) at the same number of LLM calls, with the configured LLM;
  each method's best strategy plays the same fixed opponents. Every strategy's origin (hand-written,
  or which LLM) is reported. Runs are kept in ``bench/results/strategist/``. Each run is the user action
  ``games_improve`` (the Improve tab's *Run / continue*, through ``bench.actions.run_action``), one
  iteration a call; the only part of this bench that is a user action. The rest is model-level: engine and
  search speed, agents playing OpenSpiel's bots, CFR and Avalon call the game code directly (the tab's
  moves are quick calls, not actions).
- Play: win rate of the best STRATEGIST strategy and other agents against OpenSpiel's ``MCTSBot`` at
  the same wall-clock time per move, with 95% confidence intervals. OpenSpiel's ``ISMCTSBot`` cannot
  resample goofspiel's information states, so the peer plays the turn-based game and moves first each
  round: neither side ever sees a sealed bid (the peer's tree, being perfect-information, assumes we
  would see its bid).
- GOPS-5 against OpenSpiel's CFR.
- Avalon: search agents (full playouts) and the shipped STRATEGIST strategy's search agents (its value
  heuristic at the quest horizon) against rule agents, either side; with discussion, the strategy's
  agents speak through the configured LLM by its dialogue guides.

    python -m bench.games [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from backends.games.gops.agents import GreedyAgent, MCTSAgent, RandomAgent
from backends.games.gops.batch import random_playouts
from backends.games.gops.game import GopsConfig, GopsState
from backends.games.gops.heuristics import BASELINE_SOURCE
from backends.games.gops.selfplay import strategy_agent
from bench.report import RESULTS, markdown_table, write_results


def _pyspiel():
    import pyspiel

    return pyspiel


def our_playouts_per_s(n_cards: int, seconds: float) -> float:
    rng = np.random.default_rng(0)
    state = GopsState.new(GopsConfig(n_cards), seed=0)
    random_playouts(state, 100, rng)  # compile (numba) before timing
    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        random_playouts(state, 10_000, rng)
        done += 10_000
    return done / (time.perf_counter() - t0)


def openspiel_playouts_per_s(n_cards: int, seconds: float) -> float:
    ps = _pyspiel()
    game = ps.load_game("goofspiel", {"num_cards": n_cards, "points_order": "random"})
    rng = np.random.default_rng(0)
    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        s = game.new_initial_state()
        while not s.is_terminal():
            if s.is_chance_node():
                outs = s.chance_outcomes()
                s.apply_action(outs[int(rng.integers(len(outs)))][0])
            else:
                s.apply_actions([int(rng.choice(s.legal_actions(p))) for p in (0, 1)])
        done += 1
    return done / (time.perf_counter() - t0)


def _turn_based(n_cards: int):
    ps = _pyspiel()
    return ps.load_game(f"turn_based_simultaneous_game(game=goofspiel(num_cards={n_cards},points_order=random,"
                        "returns_type=win_loss))")


def _peer(game, sims: int, seed: int):
    ps = _pyspiel()
    return ps.MCTSBot(game, ps.RandomRolloutEvaluator(1, seed), 2.0, max(1, sims), 1000, False, seed, False)


def our_sims_per_s(n_cards: int, leaf: str = "rollout", seconds: float = 1.0) -> float:
    """Simulations per second of our search on the first move: ``rollout`` (the peer's leaf evaluator),
    ``baseline`` (the compiled heuristic) or ``sandboxed`` (the baseline's source run in the sandbox, as
    any LLM-written strategy is)."""
    from backends.games.strategist.sandbox import SandboxedFunction

    state = GopsState.new(GopsConfig(n_cards), seed=0)

    def timed(evaluate):
        MCTSAgent(evaluate, simulations=200).act(state, 0, np.random.default_rng(1))  # compile / start before timing
        agent = MCTSAgent(evaluate, simulations=10**9, seconds=seconds)
        agent.act(state, 0, np.random.default_rng(0))
        return agent

    if leaf == "sandboxed":
        with SandboxedFunction(BASELINE_SOURCE) as fn:
            agent = timed(fn.evaluate)
    else:
        agent = timed(leaf)
    last = agent.describe_last_move()
    return last["simulations"] / last["seconds"]


def openspiel_sims_per_s(n_cards: int, sims: int, repeats: int = 3) -> float:
    """The peer's simulation rate on the first move: the best of ``repeats`` runs (the least disturbed by
    other work on the machine)."""
    game = _turn_based(n_cards)
    state = game.new_initial_state()
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    rates = []
    for r in range(repeats):
        bot = _peer(game, sims, r)
        t0 = time.perf_counter()
        bot.step(state)
        rates.append(sims / (time.perf_counter() - t0))
    return max(rates)


def _our_view(config: GopsConfig, prizes: list[int], bids: list[tuple[int, int]]) -> GopsState:
    """Our engine's state from what has been revealed: unseen prizes are filled in any order
    (our agent re-deals them in every simulation) and the peer's pending bid is not included."""
    unseen = sorted(set(range(1, config.num_cards + 1)) - set(prizes))
    state = GopsState.new(config, prizes=tuple(prizes) + tuple(unseen))
    for b0, b1 in bids:
        state = state.apply({0: b0, 1: b1})
    return state


def play_vs_openspiel(agent, n_cards: int, games: int, peer_sims: int, seed: int) -> list[float]:
    """Our agent's win rate (draws ½) as player 1 against ``MCTSBot`` with ``peer_sims`` simulations as
    player 0. A time-budgeted agent gets, each move, the wall time the peer's search has just taken."""
    game = _turn_based(n_cards)
    config = GopsConfig(n_cards)
    rng = np.random.default_rng(seed)
    results = []
    for g in range(games):
        bot = _peer(game, peer_sims, seed + g)
        s = game.new_initial_state()
        prizes, bids, pending = [], [], None
        while not s.is_terminal():
            if s.is_chance_node():
                outs = s.chance_outcomes()
                a = outs[int(rng.integers(len(outs)))][0]
                prizes.append(a + 1)
                s.apply_action(a)
            elif s.current_player() == 0:
                t0 = time.perf_counter()
                pending = bot.step(s) + 1  # the peer bids first; we never look at it
                peer_s = time.perf_counter() - t0
                s.apply_action(pending - 1)
            else:
                if getattr(agent, "seconds", None) is not None:  # the time the peer just took: equal wall time
                    agent.seconds = peer_s  # move by move, whatever the machine's load does meanwhile
                ours = _our_view(config, prizes, bids)
                card = agent.act(ours, 1, rng)
                s.apply_action(card - 1)
                bids.append((pending, card))
        results.append((s.returns()[1] + 1) / 2)
    return results


def ci95(xs: list[float]) -> tuple[float, float]:
    p = float(np.mean(xs))
    half = 1.96 * math.sqrt(max(p * (1 - p), 1e-9) / len(xs))
    return p, half


_KEEP_ALIVE: list = []


def cfr_policy(n_cards: int, iterations: int):
    """OpenSpiel's CFR on turn-based GOPS (descending prizes, win/loss payoff); its average policy and
    exploitability (the random prize order is too large a tree for CFR at 5 cards here)."""
    ps = _pyspiel()
    game = ps.convert_to_turn_based(ps.load_game("goofspiel", {"num_cards": n_cards, "imp_info": True,
                                                              "points_order": "descending", "returns_type": "win_loss"}))
    solver = ps.CFRSolver(game)
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    policy = solver.average_policy()
    _KEEP_ALIVE.append(solver)  # the C++ policy refers into the solver: keep the solver alive
    return game, policy, float(ps.exploitability(game, policy))


def payoff_vs_policy(agent, game, policy, n_cards: int, games: int, seed: int) -> list[float]:
    """Our agent's win/loss payoff (+1 / 0 / −1) against a fixed OpenSpiel policy, seats alternating.
    In the turn-based game the second mover does not see the first bid (imperfect information)."""
    config = GopsConfig(n_cards, prize_order="descending")
    rng = np.random.default_rng(seed)
    out = []
    for g in range(games):
        me = g % 2
        s = game.new_initial_state()
        bids, pending = [], None
        while not s.is_terminal():
            player = s.current_player()
            if player == me:
                ours = GopsState.new(config)
                for b0, b1 in bids:
                    ours = ours.apply({0: b0, 1: b1})
                a = agent.act(ours, me, rng) - 1
            else:
                probs = policy.action_probabilities(s)
                acts, p = zip(*probs.items(), strict=True)
                a = int(rng.choice(acts, p=np.asarray(p) / sum(p)))
            s.apply_action(a)
            if player == 0:
                pending = a + 1
            else:
                bids.append((pending, a + 1))
        out.append(float(s.returns()[me]))
    return out


def avalon_strategy():
    """The best Avalon strategy shipped with the suite (STRATEGIST run), and its batch heuristic."""
    from backends.games.avalon.selfplay import heuristic_for
    from backends.games.strategist.loop import best_strategy, describe_origin

    best = best_strategy("avalon")
    heuristic, box = heuristic_for(best.source)
    return best, describe_origin(best), heuristic, box


def avalon_win_rates(games: int, worlds: int, heuristic, seed: int = 0) -> dict:
    """Good-side win rate for each (good agents, evil agents) pairing over the same seeded deals (5 players):
    rule agents; search with full playouts; search with a STRATEGIST value heuristic at its leaves."""
    from backends.games.avalon.agents import RuleAgent, play_avalon
    from backends.games.avalon.game import AvalonConfig, AvalonGame
    from backends.games.avalon.search import SearchAgent

    kinds = {"rule": lambda i: RuleAgent(seed + i), "search": lambda i: SearchAgent(seed + i, worlds=worlds),
             "strategist": lambda i: SearchAgent(seed + i, worlds=worlds, heuristic=heuristic)}
    out = {}
    for good, evil in (("rule", "rule"), ("search", "rule"), ("rule", "search"), ("strategist", "rule"),
                       ("rule", "strategist")):
        wins = []
        for g_seed in range(seed, seed + games):
            game = AvalonGame.new(AvalonConfig(5, discussion=False), seed=g_seed)
            play_avalon(game, {i: kinds[good if game.side(i) == "good" else evil](i) for i in range(5)})
            wins.append(float(game.winner == "good"))
        out[f"{good}-good vs {evil}-evil"] = ci95(wins)
    return out


def avalon_llm_win_rates(games: int, worlds: int, strategy, heuristic, seed: int = 0) -> dict:
    """With discussion: the STRATEGIST strategy's search agents (its heuristic) speaking through the
    configured LLM by its dialogue guides, against the rule agents, on either side, over the same deals as
    :func:`avalon_win_rates`."""
    from backends.games.avalon.agents import RuleAgent, play_avalon
    from backends.games.avalon.dialogue import LLMSpeaker
    from backends.games.avalon.game import AvalonConfig, AvalonGame
    from backends.games.avalon.search import SearchAgent
    from backends.games.strategist.llm import CachedLLM, get_llm

    llm = get_llm()
    speaker = LLMSpeaker(CachedLLM(llm, RESULTS / "strategist" / "avalon-llm-cache.jsonl"), strategy.guide)
    kinds = {"rule": lambda i: RuleAgent(seed + i),
             "strategist+LLM": lambda i: SearchAgent(seed + i, worlds=worlds, speaker=speaker, heuristic=heuristic)}
    out = {}
    for good, evil in (("strategist+LLM", "rule"), ("rule", "strategist+LLM"), ("rule", "rule")):
        wins, t0 = [], time.perf_counter()
        for g_seed in range(seed, seed + games):
            game = AvalonGame.new(AvalonConfig(5, discussion=True), seed=g_seed)
            play_avalon(game, {i: kinds[good if game.side(i) == "good" else evil](i) for i in range(5)})
            wins.append(float(game.winner == "good"))
        out[f"{good}-good vs {evil}-evil"] = (*ci95(wins), (time.perf_counter() - t0) / games)
    return {"llm": llm.name, "rates": out, "speeches": speaker.said, "replaced_speeches": speaker.replaced}


def strategist_vs_beam(llm_calls: int, games: int, seed: int = 0) -> dict:
    """Both improvement methods from the same library (the hand-written baseline + one LLM seed): STRATEGIST
    until it has made ``llm_calls`` LLM calls, then beam until it has made at least as many (iterations
    end on whole steps); then each method's best strategy plays the same fixed opponents (MCTS with
    random rollouts, STRATEGIST's benchmark, and MCTS + the baseline heuristic).

    Each method's run is the ``games_improve`` action (the Improve tab's *Run / continue*), one iteration a
    call on the run's folder (the first call seeds it) until the run's log counts the LLM calls; its
    evaluation settings are the action's GOPS defaults (6 cards, 4 games per pair, 16 simulations). The
    action replays the LLM from the run folder's cache: the bench's shared cache (``llm-cache.jsonl``, both
    methods) is put there first and takes the run's answers back after, so a rerun replays them."""
    import shutil

    from backends.common.parallel import run_tasks
    from backends.games.gops.selfplay import BENCHMARK, match_tasks, play_task, score_of
    from backends.games.requests import ImproveRequest
    from backends.games.strategist.llm import get_llm
    from backends.games.strategist.loop import StrategyLibrary, read_log
    from bench.actions import run_action

    llm = get_llm()  # the configured LLM (LLMNotConfigured here when none), for its name
    root = RESULTS / "strategist"
    shared_cache = root / "llm-cache.jsonl"
    out: dict = {"llm": llm.name, "llm_calls_budget": llm_calls, "methods": {}}
    for method in ("strategist", "beam"):
        folder = root / method
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        cache = folder / "llm_cache.jsonl"  # where the action's LLM replays from (improve.llm_for)
        if shared_cache.is_file():
            shutil.copyfile(shared_cache, cache)
        request = ImproveRequest("gops", iterations=1, method=method, games=4, budget=16, num_cards=6,
                                 seed=seed, run_dir=folder)
        t0 = time.perf_counter()
        try:
            while True:
                run_action("games_improve", request)
                log = read_log(folder / "log.jsonl")
                calls = sum(r.get("llm_calls", 0) for r in log)
                if calls >= llm_calls:
                    break
        finally:
            if cache.is_file():
                shutil.move(cache, shared_cache)  # the shared cache and every answer this run added
        llm_calls = max(llm_calls, calls)  # the next method gets at least as many
        library = StrategyLibrary.from_json(json.loads((folder / "library.json").read_text()))
        best = library.top(1)[0]
        scores = {}
        for opponent in (BENCHMARK, "mcts"):
            tasks = match_tasks(best.id, best.source, opponent, None, games, 6, "discard", 16, seed + 7)
            scores[opponent] = ci95([score_of(best.id, [r]) for r in run_tasks(play_task, tasks, workers=1)])
        out["methods"][method] = {
            "llm_calls": calls, "iterations": max((r["iteration"] for r in log), default=0),
            "minutes": (time.perf_counter() - t0) / 60,
            "best": best.id, "best_origin": best.origin, "best_self_play_score": best.score,
            "score_vs_benchmark": scores[BENCHMARK], "score_vs_mcts_baseline": scores["mcts"],
            "library": [{"id": s.id, "origin": s.origin, "score": s.score} for s in library.items.values()],
            "best_source": best.source,
        }
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="GOPS-6, few games, no LLM parts")
    p.add_argument("--avalon-games", type=int, help="Avalon games per pairing (default 200; quick 20)")
    p.add_argument("--llm-calls", type=int, help="LLM calls per improvement method (default 12; quick 0 = skip)")
    p.add_argument("--avalon-llm-games", type=int, help="Avalon games per pairing with LLM discussion (default 10; "
                   "quick 0 = skip)")
    args = p.parse_args(argv)
    n_cards, games, speed_s, move_s = (6, 20, 1.0, 0.02) if args.quick else (13, 400, 5.0, 0.05)
    llm_calls = args.llm_calls if args.llm_calls is not None else (0 if args.quick else 12)
    avalon_llm_games = args.avalon_llm_games if args.avalon_llm_games is not None else (0 if args.quick else 10)
    not_measured = []

    ours_po, peer_po = our_playouts_per_s(n_cards, speed_s), openspiel_playouts_per_s(n_cards, speed_s)
    sims = {leaf: our_sims_per_s(n_cards, leaf) for leaf in ("rollout", "baseline", "sandboxed")}
    peer_sp = openspiel_sims_per_s(n_cards, 3000)
    print(markdown_table(["measure", "this project", "OpenSpiel", "ratio"], [
        [f"random GOPS-{n_cards} playouts / s", ours_po, peer_po, ours_po / peer_po],
        [f"MCTS simulations / s, random-rollout leaves (GOPS-{n_cards}, first move)", sims["rollout"], peer_sp,
         sims["rollout"] / peer_sp],
        ["… ours with the compiled baseline heuristic", sims["baseline"], peer_sp, sims["baseline"] / peer_sp],
        ["… ours with a sandboxed Python heuristic (any LLM strategy)", sims["sandboxed"], peer_sp,
         sims["sandboxed"] / peer_sp],
    ]))

    improve = _with_llm("STRATEGIST vs beam", "--llm-calls", llm_calls, not_measured,
                        lambda: strategist_vs_beam(llm_calls, games=20))
    if improve:
        print()
        print(markdown_table([f"improvement method ({improve['llm']})", "LLM calls", "iterations", "best strategy",
                              "written by", "score vs benchmark MCTS", "score vs MCTS + baseline"],
                             [[m, r["llm_calls"], r["iterations"], r["best"], _origin(r["best_origin"]),
                               _pm(r["score_vs_benchmark"]), _pm(r["score_vs_mcts_baseline"])]
                              for m, r in improve["methods"].items()]))
    best_info = improve["methods"]["strategist"] if improve else None
    best_label = (f"best STRATEGIST strategy {best_info['best']} ({_origin(best_info['best_origin'])})" if best_info
                  else "MCTS + hand-written baseline heuristic (no STRATEGIST run)")

    peer_sims = max(1, int(peer_sp * move_s))  # the same wall-clock time per move
    best_source = best_info["best_source"] if best_info else BASELINE_SOURCE
    play = {}
    for opponent, label in (("learned", f"{best_label}, opponent model learned from its revealed bids"),
                            ("searcher", f"{best_label}, no opponent model")):
        agent, sandbox = strategy_agent(best_source, simulations=10**9, seconds=move_s, opponent=opponent)
        try:  # one agent object for the whole match: the learned model keeps what earlier games revealed
            play[label] = ci95(play_vs_openspiel(agent, n_cards, games, peer_sims, seed=1))
        finally:
            if sandbox is not None:
                sandbox.close()
    best_label = next(iter(play))
    if best_source.strip() != BASELINE_SOURCE.strip():
        play["MCTS + baseline heuristic"] = ci95(play_vs_openspiel(MCTSAgent(simulations=10**9, seconds=move_s),
                                                                   n_cards, games, peer_sims, seed=1))
    for name, agent in (("greedy (bid the prize)", GreedyAgent()), ("random", RandomAgent())):
        play[name] = ci95(play_vs_openspiel(agent, n_cards, games, peer_sims, seed=1))
    print()
    print(markdown_table(["agent vs OpenSpiel MCTSBot (peer bids first, unseen)", f"win rate (GOPS-{n_cards}, "
                          f"{games} games)", "95% CI ±", "time / move (s)", "peer simulations / move"],
                         [[k, v[0], v[1], move_s, peer_sims] for k, v in play.items()]))

    cfr_iters = 200 if args.quick else 1000
    cfr_game, cfr_pol, expl = cfr_policy(5, cfr_iters)
    cfr_games = 40 if args.quick else 400
    cfr = {name: payoff_vs_policy(agent, cfr_game, cfr_pol, 5, cfr_games, seed=3)
           for name, agent in (("MCTS + baseline heuristic (ours)", MCTSAgent(simulations=2000)),
                               ("greedy (bid the prize)", GreedyAgent()), ("random", RandomAgent()))}
    print()
    print(markdown_table([f"GOPS-5 (descending prizes) vs CFR near-Nash ({cfr_iters} iterations, exploitability "
                          f"{expl:.3f})", f"mean payoff (+1 win / −1 loss, {cfr_games} games)", "95% CI ±"],
                         [[k, float(np.mean(v)), 1.96 * float(np.std(v)) / math.sqrt(len(v))] for k, v in cfr.items()]))

    av_strategy, av_name, av_heuristic, av_box = avalon_strategy()
    try:
        avalon = avalon_win_rates(args.avalon_games or (20 if args.quick else 200), worlds=8 if args.quick else 16,
                                  heuristic=av_heuristic)
        print()
        print(markdown_table([f"Avalon, 5 players, no discussion (strategist = search + {av_name})",
                              "good-side win rate", "95% CI ±"], [[k, v[0], v[1]] for k, v in avalon.items()]))
        avalon_llm = _with_llm("Avalon with LLM discussion", "--avalon-llm-games", avalon_llm_games, not_measured,
                               lambda: avalon_llm_win_rates(avalon_llm_games, 8 if args.quick else 16, av_strategy,
                                                            av_heuristic))
    finally:
        if av_box is not None:
            av_box.close()
    if avalon_llm:
        print()
        print(markdown_table([f"Avalon, 5 players, with discussion ({avalon_llm['llm']})", "good-side win rate",
                              "95% CI ±", "s / game"], [[k, *v] for k, v in avalon_llm["rates"].items()]))
        print(f"LLM speeches: {avalon_llm['speeches']}, replaced because they leaked hidden information: "
              f"{avalon_llm['replaced_speeches']}")

    good_vs_rule = avalon["strategist-good vs rule-evil"][0]
    evil_vs_rule = 1.0 - avalon["rule-good vs strategist-evil"][0]
    best = play[best_label]
    path = write_results("games", {
        "quick": args.quick, "num_cards": n_cards, "games": games,
        "playouts_per_s": {"ours": ours_po, "openspiel_python": peer_po}, "playouts_per_s_ratio": ours_po / peer_po,
        "sims_per_s": {"ours_rollout_leaves": sims["rollout"], "ours_baseline_heuristic": sims["baseline"],
                       "ours_sandboxed_heuristic": sims["sandboxed"], "openspiel_cpp_mcts": peer_sp},
        "sims_per_s_ratio": sims["rollout"] / peer_sp,
        "sims_per_s_ratio_note": "same leaf evaluator as the peer (one random rollout); numba-compiled search",
        "seconds_per_move": move_s, "peer_simulations_per_move": peer_sims,
        "gops_win_rate_vs_openspiel_mcts": best[0], "gops_win_rate_ci95": best[1], "strategy": best_label,
        "win_rates_vs_openspiel_mcts": {k: {"win_rate": v[0], "ci95": v[1]} for k, v in play.items()},
        "random_win_rate_vs_openspiel_mcts": play["random"][0],
        "strategist_vs_beam": improve,
        "gops5_cfr": {"iterations": cfr_iters, "exploitability": expl, "games": cfr_games,
                      "payoff_vs_cfr": {k: float(np.mean(v)) for k, v in cfr.items()},
                      "note": "descending prize order (CFR on the random-order tree does not fit this machine)"},
        "avalon_good_win_rate_vs_rule": good_vs_rule, "avalon_evil_win_rate_vs_rule": evil_vs_rule,
        "avalon_rule_vs_rule_good_win_rate": avalon["rule-good vs rule-evil"][0],
        "avalon": {k: {"good_win_rate": v[0], "ci95": v[1]} for k, v in avalon.items()},
        "avalon_with_llm_discussion": avalon_llm and {
            "llm": avalon_llm["llm"], "speeches": avalon_llm["speeches"],
            "replaced_speeches": avalon_llm["replaced_speeches"],
            **{k: {"good_win_rate": v[0], "ci95": v[1], "seconds_per_game": v[2]} for k, v in avalon_llm["rates"].items()}},
        "avalon_agents": ("search = determinized Monte-Carlo search over the belief with full rule-agent playouts "
                          "(backends/games/avalon/search.py); strategist = the same search scoring positions at the "
                          "end of the current quest with the best shipped Avalon STRATEGIST strategy's heuristic"),
        "avalon_strategy": av_name,
        "not_measured": not_measured,
    })
    print(f"games: playouts/s ratio {ours_po / peer_po:.1f}×, sims/s ratio {sims['rollout'] / peer_sp:.2f}×, "
          f"{best_label} wins {best[0]:.0%} ± {best[1]:.0%} vs OpenSpiel MCTS at equal time; Avalon strategist agents "
          f"win {good_vs_rule:.0%} as good / {evil_vs_rule:.0%} as evil vs rule agents; wrote {path.name}")
    return 0


def _with_llm(part: str, flag: str, amount: int, not_measured: list[str], run):
    """``run()`` when ``amount`` asks for it and an LLM is configured; otherwise None, saying why."""
    from backends.games.strategist.llm import LLMNotConfigured

    if not amount:
        not_measured.append(f"{part} (skipped: {flag} 0)")
        return None
    try:
        return run()
    except LLMNotConfigured as e:
        not_measured.append(f"{part}: {e}")
        return None


def _origin(origin: dict) -> str:
    kind = origin.get("kind", "?")
    return f"{kind}, {origin['llm']}" if origin.get("llm") else kind


def _pm(v: tuple[float, float]) -> str:
    return f"{v[0]:.2f} ± {v[1]:.2f}"


if __name__ == "__main__":
    raise SystemExit(main())
