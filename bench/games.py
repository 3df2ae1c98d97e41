"""Strategy games: our GOPS engine and agents against OpenSpiel, side by side in one run.

- Engine speed: random GOPS playouts per second, our batched numpy engine vs OpenSpiel's goofspiel
  driven from Python (ratio).
- Search speed: MCTS simulations per second, ours (Python, heuristic leaves) vs OpenSpiel's C++
  ``MCTSBot`` with random-rollout evaluation on turn-based goofspiel (ratio).
- Play: win rate of our agents against OpenSpiel's ``MCTSBot`` at the same wall-clock time per move,
  with 95% confidence intervals. OpenSpiel's ``ISMCTSBot`` cannot resample goofspiel's information
  states, so the peer plays the turn-based game and moves first each round: neither side ever sees
  a sealed bid (the peer's tree, being perfect-information, assumes we would see its bid).

    python -m bench.games [--quick]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from backends.games.gops import GopsConfig, GopsState
from backends.games.gops_agents import GreedyAgent, MCTSAgent, RandomAgent
from backends.games.gops_batch import random_playouts
from bench.report import markdown_table, write_results


def _pyspiel():
    import pyspiel

    return pyspiel


def our_playouts_per_s(n_cards: int, seconds: float) -> float:
    rng = np.random.default_rng(0)
    state = GopsState.new(GopsConfig(n_cards), seed=0)
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


def our_sims_per_s(n_cards: int, sims: int) -> float:
    agent = MCTSAgent(simulations=sims)
    state = GopsState.new(GopsConfig(n_cards), seed=0)
    t0 = time.perf_counter()
    agent.act(state, 0, np.random.default_rng(0))
    return sims / (time.perf_counter() - t0)


def openspiel_sims_per_s(n_cards: int, sims: int) -> float:
    game = _turn_based(n_cards)
    state = game.new_initial_state()
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    bot = _peer(game, sims, 0)
    t0 = time.perf_counter()
    bot.step(state)
    return sims / (time.perf_counter() - t0)


def _our_view(config: GopsConfig, prizes: list[int], bids: list[tuple[int, int]]) -> GopsState:
    """Our engine's state from what has been revealed: unseen prizes are filled in any order
    (our agent re-deals them in every simulation) and the peer's pending bid is not included."""
    unseen = sorted(set(range(1, config.num_cards + 1)) - set(prizes))
    state = GopsState.new(config, prizes=tuple(prizes) + tuple(unseen))
    for b0, b1 in bids:
        state = state.apply(b0, b1)
    return state


def play_vs_openspiel(agent, n_cards: int, games: int, peer_sims: int, seed: int) -> list[float]:
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
                pending = bot.step(s) + 1  # the peer bids first; we never look at it
                s.apply_action(pending - 1)
            else:
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
                    ours = ours.apply(b0, b1)
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


def avalon_win_rates(games: int, worlds: int, seed: int = 0) -> dict:
    """Good-side win rate for each (good agents, evil agents) pairing over the same seeded deals (5 players)."""
    from backends.games.avalon import AvalonConfig, AvalonGame
    from backends.games.avalon_agents import RuleAgent, play_avalon
    from backends.games.avalon_search import SearchAgent

    kinds = {"rule": lambda i: RuleAgent(seed + i), "search": lambda i: SearchAgent(seed + i, worlds=worlds)}
    out = {}
    for good, evil in (("rule", "rule"), ("search", "rule"), ("rule", "search")):
        wins = []
        for g_seed in range(seed, seed + games):
            game = AvalonGame.new(AvalonConfig(5, discussion=False), seed=g_seed)
            play_avalon(game, {i: kinds[good if game.side(i) == "good" else evil](i) for i in range(5)})
            wins.append(float(game.winner == "good"))
        out[f"{good}-good vs {evil}-evil"] = ci95(wins)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="GOPS-6, few games")
    p.add_argument("--avalon-games", type=int, help="Avalon games per pairing (default 200; quick 20)")
    args = p.parse_args(argv)
    n_cards, games, speed_s = (6, 20, 1.0) if args.quick else (13, 200, 5.0)
    ours_sims = 300

    ours_po, peer_po = our_playouts_per_s(n_cards, speed_s), openspiel_playouts_per_s(n_cards, speed_s)
    ours_sp, peer_sp = our_sims_per_s(n_cards, ours_sims), openspiel_sims_per_s(n_cards, 2000)
    seconds_per_move = ours_sims / ours_sp
    peer_sims = max(1, int(peer_sp * seconds_per_move))  # the same wall-clock time per move

    play = {}
    for name, agent in (("MCTS + baseline heuristic (ours)", MCTSAgent(simulations=ours_sims)),
                        ("random", RandomAgent())):
        play[name] = ci95(play_vs_openspiel(agent, n_cards, games, peer_sims, seed=1))

    print(markdown_table(["measure", "this project", "OpenSpiel", "ratio"], [
        [f"random GOPS-{n_cards} playouts / s", ours_po, peer_po, ours_po / peer_po],
        [f"MCTS simulations / s (GOPS-{n_cards}, first move)", ours_sp, peer_sp, ours_sp / peer_sp],
    ]))
    print()
    print(markdown_table(["agent vs OpenSpiel MCTSBot", f"win rate (GOPS-{n_cards}, {games} games)", "95% CI ±",
                          "time / move (s)", "peer simulations / move"],
                         [[k, v[0], v[1], seconds_per_move, peer_sims] for k, v in play.items()]))
    cfr_iters = 200 if args.quick else 1000
    cfr_game, cfr_pol, expl = cfr_policy(5, cfr_iters)
    cfr_games = 40 if args.quick else 400
    cfr = {name: payoff_vs_policy(agent, cfr_game, cfr_pol, 5, cfr_games, seed=3)
           for name, agent in (("MCTS + baseline heuristic (ours)", MCTSAgent(simulations=200)),
                               ("greedy (bid the prize)", GreedyAgent()), ("random", RandomAgent()))}
    print()
    print(markdown_table([f"GOPS-5 (descending prizes) vs CFR near-Nash ({cfr_iters} iterations, exploitability "
                          f"{expl:.3f})", f"mean payoff (+1 win / −1 loss, {cfr_games} games)", "95% CI ±"],
                         [[k, float(np.mean(v)), 1.96 * float(np.std(v)) / math.sqrt(len(v))] for k, v in cfr.items()]))
    avalon = avalon_win_rates(args.avalon_games or (20 if args.quick else 200), worlds=8 if args.quick else 16)
    print()
    print(markdown_table(["Avalon, 5 players, no discussion", "good-side win rate", "95% CI ±"],
                         [[k, v[0], v[1]] for k, v in avalon.items()]))
    good_vs_rule = avalon["search-good vs rule-evil"][0]
    evil_vs_rule = 1.0 - avalon["rule-good vs search-evil"][0]
    best = play["MCTS + baseline heuristic (ours)"]
    path = write_results("games", {
        "quick": args.quick, "num_cards": n_cards, "games": games,
        "playouts_per_s": {"ours": ours_po, "openspiel_python": peer_po}, "playouts_per_s_ratio": ours_po / peer_po,
        "sims_per_s": {"ours": ours_sp, "openspiel_cpp_mcts": peer_sp}, "sims_per_s_ratio": ours_sp / peer_sp,
        "seconds_per_move": seconds_per_move, "peer_simulations_per_move": peer_sims,
        "gops_win_rate_vs_openspiel_mcts": best[0], "gops_win_rate_ci95": best[1],
        "random_win_rate_vs_openspiel_mcts": play["random"][0],
        "strategy": "hand-written baseline heuristic (no LLM-improved strategy in this run)",
        "gops5_cfr": {"iterations": cfr_iters, "exploitability": expl, "games": cfr_games,
                      "payoff_vs_cfr": {k: float(np.mean(v)) for k, v in cfr.items()},
                      "note": "descending prize order (CFR on the random-order tree does not fit this machine)"},
        "avalon_good_win_rate_vs_rule": good_vs_rule, "avalon_evil_win_rate_vs_rule": evil_vs_rule,
        "avalon_rule_vs_rule_good_win_rate": avalon["rule-good vs rule-evil"][0],
        "avalon": {k: {"good_win_rate": v[0], "ci95": v[1]} for k, v in avalon.items()},
        "avalon_agents": "search = determinized Monte-Carlo search over the belief (backends/games/avalon_search.py); "
                         "no LLM discussion in this run",
        "not_measured": ["STRATEGIST vs beam (needs an LLM endpoint)",
                         "Avalon with LLM discussion (needs an LLM endpoint)"],
    })
    print(f"games: playouts/s ratio {ours_po / peer_po:.1f}×, sims/s ratio {ours_sp / peer_sp:.2f}×, "
          f"MCTS+baseline wins {best[0]:.0%} ± {best[1]:.0%} vs OpenSpiel MCTS at equal time; Avalon search agents "
          f"win {good_vs_rule:.0%} as good / {evil_vs_rule:.0%} as evil vs rule agents; wrote {path.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
