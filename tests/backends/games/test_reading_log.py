"""reading_log: the one sentence a game's saved log gets when it is not one (GOPS and Avalon matches)."""

import json

import pytest

from backends.common.errors import InputError
from backends.games.logs import reading_log


def test_a_missing_entry_or_a_bad_value_is_a_sentence():
    with pytest.raises(InputError, match=r"^Not a toy log: it has no 'moves' entry\.$"):
        with reading_log("a toy log"):
            json.loads("{}")["moves"]
    with pytest.raises(InputError, match=r"^Not a toy log: Expecting value: line 1 column 1 \(char 0\)\.$"):
        with reading_log("a toy log"):
            json.loads("")
    with pytest.raises(InputError, match=r"^Not a toy log: unsupported operand"):
        with reading_log("a toy log"):
            1 + None  # noqa: B018


def test_an_input_error_and_other_errors_pass_as_they_are():
    with pytest.raises(InputError, match=r"^Seat 9 is out of range\.$"):
        with reading_log("a toy log"):
            raise InputError("Seat 9 is out of range.")
    with pytest.raises(RuntimeError, match="boom"):
        with reading_log("a toy log"):
            raise RuntimeError("boom")
