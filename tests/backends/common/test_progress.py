import threading

import pytest

from backends.common.errors import Cancelled
from backends.common.progress import CancelToken, ProgressEvent, run_to_result, track
from backends.common.speedtest import SpeedTestRequest, run_speed_test


def work(n, cancel=None):
    for _, event in track(range(n), n, cancel, "step"):
        yield event
    yield {"done": n}


def test_run_to_result_reports_every_step_and_returns_result():
    seen = []
    result = run_to_result(work(4), lambda f, m: seen.append((f, m)))
    assert result == {"done": 4}
    assert [round(f, 2) for f, _ in seen] == [0.25, 0.5, 0.75, 1.0]
    assert seen[-1][1] == "step 4/4"


def test_cancel_stops_between_steps_with_reason():
    token = CancelToken()
    steps = []
    gen = work(100, token)
    with pytest.raises(Cancelled, match="stopped by the user"):
        for item in gen:
            steps.append(item)
            if len(steps) == 3:
                token.cancel()
    assert len(steps) == 3


def test_cancel_from_another_thread_stops_speed_test_at_its_next_step():
    token = CancelToken()
    events = []
    with pytest.raises(Cancelled):
        for item in run_speed_test(SpeedTestRequest(size=256, repeats=200), token):
            events.append(item)
            if len(events) == 1:  # another thread presses Stop once the work has begun
                stopper = threading.Thread(target=token.cancel)
                stopper.start()
                stopper.join()
    assert len(events) == 1  # no step after the Stop


def test_progress_fraction_is_clamped():
    assert ProgressEvent(1.7).fraction == 1.0 and ProgressEvent(-1).fraction == 0.0


def test_speed_test_measures_positive_throughput():
    result = run_to_result(run_speed_test(SpeedTestRequest(size=64, repeats=3)))
    assert result.gflops > 0 and result.seconds > 0 and result.device == "cpu"


@pytest.mark.parametrize("size,repeats", [(8, 1), (64, 0), (64.5, 2)])
def test_speed_test_rejects_bad_requests(size, repeats):
    from backends.common.errors import InputError

    with pytest.raises(InputError):
        list(run_speed_test(SpeedTestRequest(size=size, repeats=repeats)))


def test_stream_reports_yields_the_events_then_the_result():
    from backends.common.progress import stream_reports

    def work(report):
        for i in range(3):
            report(ProgressEvent((i + 1) / 3, f"step {i + 1}"))
        return "done"

    items = list(stream_reports(work))
    assert [e.message for e in items[:-1]] == ["step 1", "step 2", "step 3"] and items[-1] == "done"


def test_stream_reports_stops_the_work_at_its_next_report_and_re_raises_its_errors():
    from backends.common.progress import stream_reports

    token, steps, workers = CancelToken(), [], []

    def work(report):
        workers.append(threading.current_thread())
        for i in range(100):
            steps.append(i)
            if i == 3:
                token.cancel()  # Stop pressed while step 3 runs
            report(ProgressEvent(i / 100))
        return "never"

    with pytest.raises(Cancelled):
        list(stream_reports(work, token))
    assert steps == [0, 1, 2, 3] and not workers[0].is_alive()  # stopped at the end of that step

    steps.clear()
    gen = stream_reports(work)
    next(gen)
    gen.close()  # the consumer went away: the work stops too (it runs at most a few events ahead)
    assert len(steps) <= 5 and not workers[1].is_alive()

    def broken(report):
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        list(stream_reports(broken))


def test_a_consumer_that_goes_away_stops_the_work_deep_inside_and_waits_for_it():
    """A job whose consumer is closed (a client gone) stops its worker where it checks its token, not at its
    next report, and the consumer returns only once the worker has ended."""
    import time

    from backends.common.progress import stream_reports

    ended = threading.Event()
    checks_after_close = []

    def work(report):
        report(ProgressEvent(0.1, "started"))
        try:
            while True:  # a long inner loop that reports nothing and only checks
                if report.cancel.cancelled:
                    checks_after_close.append(1)
                report.cancel.raise_if_cancelled()
                time.sleep(0.01)
        finally:
            ended.set()

    gen = stream_reports(work)
    assert next(gen).message == "started"
    gen.close()  # returns once the worker has ended: no wait of ours
    assert ended.is_set() and checks_after_close == [1]  # it ended at its first check after the close
    assert not [t for t in threading.enumerate() if t.name == "stream-reports"]


def test_a_child_token_is_cancelled_with_its_parent_and_reports_the_parents_reason():
    parent = CancelToken()
    child = CancelToken(parent=parent)
    assert not child.cancelled and not child.wait(0.01)
    parent.cancel("stopped: the session ended")
    assert child.cancelled and child.wait(5)
    with pytest.raises(Cancelled, match="the session ended"):
        child.raise_if_cancelled()


def test_step_callback_reports_each_step_stops_within_one_and_previews_every_few():
    from backends.common.errors import Cancelled
    from backends.common.progress import CancelToken, step_callback

    events, token = [], CancelToken()
    cb = step_callback(events.append, token, steps=4, start=0.5, end=1.0, preview_every=3,
                       message=lambda pipe, step, n, t: f"step {step}/{n}",
                       preview=lambda pipe, step, n, t: t["x0"] * step)
    for i in range(4):
        assert cb(None, i, 999 - i, {"x0": 10}) == {}
    assert [e.message for e in events] == ["step 1/4", "step 2/4", "step 3/4", "step 4/4"]
    assert [e.fraction for e in events] == [0.625, 0.75, 0.875, 1.0]
    assert [e.preview for e in events] == [None, None, 30, 40]  # every third step and the last
    token.cancel()
    with pytest.raises(Cancelled):
        cb(None, 0, 1, {"x0": 1})


def test_relay_passes_events_on_and_returns_the_result():
    from backends.common.progress import ProgressEvent, relay

    def outer():
        result = yield from relay(iter([ProgressEvent(0.5, "half"), "done"]))
        yield f"got {result}"

    items = list(outer())
    assert [getattr(i, "message", i) for i in items] == ["half", "got done"]
