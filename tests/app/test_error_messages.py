"""Deliberate failures reach a person as messages with a title, never as 'Internal error'."""

import pytest

from app.components.errors import as_gr_error
from backends.common.errors import Cancelled, InputError, WorkerLost


@pytest.mark.parametrize("exc, title", [
    (InputError("Upload an image first."), "Please check the input"),
    (WorkerLost("The worker running this job died; run it again."), "The worker stopped"),
    (Cancelled("stopped by the user"), "Stopped"),
])
def test_deliberate_errors_have_their_own_title(exc, title):
    shown = as_gr_error(exc)
    assert shown.title == title and "Internal error" not in str(shown.message)


def test_a_bug_is_called_one():
    assert str(as_gr_error(KeyError("x")).message).startswith("Internal error (KeyError)")
