"""The same tasks give the same results serially, in local processes and as Ray tasks."""

import pytest

from backends.common.errors import InputError
from backends.common.parallel import run_tasks
from backends.games.gops.selfplay import match_tasks, play_task, score_of


def _tasks():
    return match_tasks("mcts", None, "random", None, games=4, cards=4, tie_rule="discard", simulations=20, seed=3)


def test_processes_and_ray_match_serial():
    serial = run_tasks(play_task, _tasks())
    assert [t["p0"] for t in serial] == ["mcts", "random", "mcts", "random"]  # seats alternate
    assert run_tasks(play_task, _tasks(), workers=2) == serial
    import ray  # the [test] extra installs it, as [dist] does
    try:
        assert run_tasks(play_task, _tasks(), ray_address="local") == serial
    finally:
        ray.shutdown()
    assert 0.0 <= score_of("mcts", serial) <= 1.0


def test_strategy_sources_travel_with_the_task():
    src = "def evaluate_state(state):\n    return (state['p0_score'], state['p1_score']), {}\n"
    tasks = match_tasks("mine", src, "greedy", None, games=2, cards=4, tie_rule="discard", simulations=10, seed=0)
    res = run_tasks(play_task, tasks)
    assert {r["p0"] for r in res} == {"mine", "greedy"}
    with pytest.raises(InputError, match="Unknown agent"):
        play_task(match_tasks("nobody", None, "greedy", None, 1, 4, "discard", 10, 0)[0])


def test_tasks_in_this_process_are_handed_the_callers_token_and_stop_with_it():
    """One Stop for the caller and its tasks: each task run here gets the caller's own token (and stops inside
    with it); once it is cancelled, no further task starts."""
    from backends.common.errors import Cancelled
    from backends.common.progress import CancelToken, raise_if_cancelled

    token, seen = CancelToken(), []

    def task(t, cancel=None):
        seen.append(cancel)
        if t == 1:
            cancel.cancel()
        raise_if_cancelled(cancel)
        return t

    assert run_tasks(task, [0]) == [0] and seen == [None]  # no token given: none handed
    seen.clear()
    with pytest.raises(Cancelled):
        run_tasks(task, [0, 1, 2, 3], cancel=token)
    assert len(seen) == 2 and all(s is token for s in seen)  # tasks 2 and 3 never started
