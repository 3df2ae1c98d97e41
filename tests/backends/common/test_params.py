"""A request's declared fields are the one source of its checks and of its CLI options."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from backends.common.errors import InputError
from backends.common.params import (
    add_request_arguments,
    check_request,
    fields_of,
    json_schema,
    param,
    seed_param,
    values_from_args,
)


@dataclass
class Req:
    image: object = param(help="The picture.")
    steps: int = param(20, minimum=1, maximum=50, label="Steps", cli=("--n",), help="Denoising steps.")
    scale: float | None = param(None, minimum=0.0, maximum=30.0, help="Guidance; empty: the model's.")
    method: str = param("bas", choices=("bas", "blend"), help="Which method.")
    previews: bool = param(True, help="Show previews.")
    seed: int = seed_param()
    note: str = "not a param"


def test_fields_are_read_from_the_declarations():
    found = fields_of(Req)
    assert list(found) == ["image", "steps", "scale", "method", "previews", "seed"]
    assert found["steps"].kind is int and found["scale"].optional and found["image"].required
    assert found["steps"].describe() == "Denoising steps. A whole number from 1 to 50. Default 20."


def test_check_request_coerces_whole_floats_and_refuses_what_is_out_of_range():
    r = Req(image=1, steps=7.0)
    check_request(r)
    assert r.steps == 7 and isinstance(r.steps, int)
    for bad, words in [(dict(steps=51), "Steps must be a whole number from 1 to 50, got 51"),
                       (dict(steps=2.5), "whole number"), (dict(steps=True), "whole number"),
                       (dict(scale=float("nan")), "number from 0 to 30"), (dict(method="x"), "one of 'bas', 'blend'"),
                       (dict(seed=-1), "Seed must be"), (dict(previews="yes"), "true or false")]:
        with pytest.raises(InputError, match=words):
            check_request(Req(image=1, **bad))
    check_request(Req(image=1, scale=None))  # optional: None is the model's default


def test_cli_options_carry_the_range_default_choices_and_help():
    parser = argparse.ArgumentParser()
    add_request_arguments(parser, Req)
    args = parser.parse_args(["--n", "9", "--method", "blend", "--no-previews", "--scale", "none"])
    assert values_from_args(Req, args) == {"steps": 9, "scale": None, "method": "blend", "previews": False, "seed": 0}
    assert parser.parse_args([]).steps == 20
    with pytest.raises(SystemExit):
        parser.parse_args(["--steps", "99"])
    helps = {a.dest: a.help for a in parser._actions}
    assert "from 1 to 50" in helps["steps"] and "image" not in helps  # object fields are not options


def test_json_schema_of_a_field():
    schema = json_schema(fields_of(Req)["scale"])
    assert schema["type"] == ["number", "null"] and schema["minimum"] == 0.0 and schema["maximum"] == 30.0
    assert json_schema(fields_of(Req)["method"])["enum"] == ["bas", "blend"]
