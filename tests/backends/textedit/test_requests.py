"""The Text in Image requests are the one source of their fields: the CLI's options take their defaults, choices
and ranges from them (the old flag spellings too), and a run card is overridden only by the options given."""

import argparse

import pytest

from app.cli import build_parser
from backends.common.params import MISSING, fields_of
from backends.textedit.cli import COMMANDS, GIVEN, _options


def _subcommand(verb: str) -> argparse.ArgumentParser:
    top = build_parser()
    textedit = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices["textedit"]
    return next(a for a in textedit._actions if isinstance(a, argparse._SubParsersAction)).choices[verb]


@pytest.mark.parametrize("verb", list(COMMANDS))
def test_every_field_has_an_option_with_the_requests_default_and_choices(verb):
    request_type, _ = COMMANDS[verb]
    options = {a.dest: a for a in _subcommand(verb)._actions if a.option_strings}
    for name, spec in fields_of(request_type).items():
        assert name in options, f"{verb}: no option for {name}"
        option = options[name]
        assert option.help and spec.param.help.split(".")[0].split(":")[0] in option.help, (verb, name)
        if spec.default is not MISSING and spec.kind is not object:
            assert option.default == spec.default, (verb, name)
        if spec.param.choices is not None:
            assert list(option.choices) == list(spec.param.choices), (verb, name)


def _parse(*argv):
    return build_parser().parse_args(["textedit", *argv])


def test_the_old_flag_spellings_still_set_the_fields():
    args = _parse("localize", "--out", "o", "--text", "cat", "--new-text", "dog", "--steps", "6", "--guidance", "4.5",
                  "--no-heads", "--extra-pairs", "2", "--top-k", "3", "--start-step", "1")
    assert (args.num_inference_steps, args.guidance_scale, args.per_head, args.extra_pairs, args.top_k,
            args.start_step) == (6, 4.5, False, 2, 3, 1)
    args = _parse("finetune", "--out", "o", "--lr", "0.001", "--train-steps", "5", "--batch-size", "2",
                  "--eval-words", "3", "--layers", "3, 4")
    assert _options(args, COMMANDS["finetune"][0]) == {"learning_rate": 0.001, "train_steps": 5, "batch_size": 2,
                                                         "eval_words": 3, "layers": ["3", "4"]}
    args = _parse("protect", "--out", "o", "--text", "idiot", "--benign", "sun", "--block-list", "idiot,jerk")
    assert (args.benign_text, args.block_list) == ("sun", "idiot,jerk")
    args = _parse("edit", "--out", "o", "--region", "2,1,30,7")
    assert _options(args, COMMANDS["edit"][0]) == {"region": (2, 1, 30, 7)}


def test_only_the_options_given_are_taken_from_the_command_line():
    """The defaults are the request's, so a run card (--card) keeps every value that no option names."""
    args = _parse("generate", "--out", "o", "--seed", "0")
    assert getattr(args, GIVEN) == {"out", "seed"}  # 0 is the default, but it was given: it overrides a card
    assert _options(args, COMMANDS["generate"][0]) == {"seed": 0}
    assert _options(_parse("generate", "--out", "o"), COMMANDS["generate"][0]) == {}


@pytest.mark.parametrize(("argv", "message"), [
    (("finetune", "--train-steps", "600"), "Training steps must be a whole number from 1 to 500, got 600"),
    (("generate", "--steps", "0"), "Steps must be a whole number from 1 to 100, got 0"),
    (("generate", "--model", "nope"), "Model must be one of"),
    (("localize", "--extra-pairs", "17"), "from 0 to 16"),
])
def test_an_option_out_of_its_range_is_refused_with_the_requests_words(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        _parse(*argv[:1], "--out", "o", *argv[1:])
    assert exit_.value.code == 2 and message in capsys.readouterr().err
