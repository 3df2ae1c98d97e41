"""People's JSON: nesting too deep for the parser is a decoding error like any other."""

import json

import pytest

from backends.common import jsontext


def test_loads_reads_ordinary_json():
    assert jsontext.loads('{"a": [1, 2]}') == {"a": [1, 2]}


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, b"{" + b'"a":{' * 50_000 + b"}" * 50_001])
def test_deep_nesting_is_a_json_decode_error_not_recursion(text):
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        jsontext.loads(text)
