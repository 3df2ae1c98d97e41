"""The error note of app.components.failures: what a status line says after an action failed."""

from app.components import failures
from app.components.failures import NOTE, with_note


def test_the_note_goes_beside_what_the_line_said():
    assert with_note("**Done:** 8 frames", "broken.mp4 is not a video") == f"**Done:** 8 frames\n\n{NOTE}broken.mp4 is not a video"


def test_a_new_note_replaces_the_last_one_and_keeps_the_line():
    once = with_note("Stage 1: insert box 1", "Nothing changed")
    twice = with_note(once, "Generate a scene first")
    assert twice == f"Stage 1: insert box 1\n\n{NOTE}Generate a scene first"
    assert with_note(f"{NOTE}old", "new") == f"{NOTE}new"


def test_a_line_that_said_work_was_under_way_does_not_stay():
    assert with_note("Running…", "broken.mp4 is not a video") == f"{NOTE}broken.mp4 is not a video"
    assert with_note("Generated “cat” in 4.1 s.", "too long").startswith("Generated “cat”")


def test_a_line_about_the_refused_input_is_replaced_when_asked():
    assert with_note("**Before you run:** 48 frames", "not a video", keep=False) == f"{NOTE}not a video"
    assert with_note(None, "a\nb") == f"{NOTE}a b"  # one line


def test_messages_are_kept_per_session_and_event_and_taken_once():
    import gradio as gr

    failures.remember("s1", 7, gr.Error("Paint the region first"))
    failures.remember("s2", 7, ValueError("/srv/secret/x.png broke"))
    failures.remember(None, 7, gr.Error("an API caller's: never collected"))
    assert failures.take("s1", 8) is None
    assert failures.take("s1", 7) == "Paint the region first"
    assert failures.take("s1", 7) is None
    assert failures.take("s2", 7).startswith("ValueError: ")


def test_the_kept_messages_are_bounded():
    for i in range(failures._MAX_KEPT + 50):
        failures.remember("flood", i, ValueError("x"))
    assert len(failures._failures) <= failures._MAX_KEPT
    assert failures.take("flood", 0) is None and failures.take("flood", failures._MAX_KEPT + 49) == "ValueError: x"
