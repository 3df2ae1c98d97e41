"""``iclr25-studio textedit ...`` on a tiny random model: files out, run cards reproduce, bad input exits 2."""

import json

import numpy as np
import pytest
from PIL import Image

from app.cli import main

pytestmark = pytest.mark.usefixtures("tiny_model")


def test_edit_writes_files_and_its_card_reproduces_it(tmp_path, capsys):
    out = tmp_path / "a"
    assert main(["textedit", "edit", "--text", "cat", "--new-text", "dog", "--layers", "3,4", "--steps", "2",
                 "--region", "2,1,30,7", "--out", str(out)]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["layers"][0].endswith("attn2") and line["blended_outside_region"] is True
    for name in ("original.png", "edited.png", "prompt_swap.png", "difference.png", "result.json", "run.json"):
        assert (out / name).is_file(), name
    card = json.loads((out / "run.json").read_text())
    assert card["action"] == "textedit_edit" and card["request"]["region"] == [2, 1, 30, 7]
    again = tmp_path / "b"
    assert main(["textedit", "edit", "--card", str(out / "run.json"), "--out", str(again)]) == 0
    assert np.array_equal(np.asarray(Image.open(out / "edited.png")), np.asarray(Image.open(again / "edited.png")))
    # an option given with --card overrides the card's value
    assert main(["textedit", "edit", "--card", str(out / "run.json"), "--new-text", "sun", "--out",
                 str(tmp_path / "c")]) == 0
    assert json.loads((tmp_path / "c" / "run.json").read_text())["request"]["new_text"] == "sun"


def test_localize_writes_the_layer_table(tmp_path, capsys):
    assert main(["textedit", "localize", "--text", "cat", "--new-text", "dog", "--steps", "1", "--no-heads",
                 "--out", str(tmp_path)]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["chosen"] and 0 < line["chosen_share"] < line["chosen_module_share"] < 1
    rows = (tmp_path / "layers.csv").read_text().splitlines()
    assert rows[0].startswith("index,name,kind") and len(rows) == 8 and (tmp_path / "layer_06.png").is_file()


def test_bad_input_exits_2_with_a_sentence(tmp_path, capsys):
    assert main(["textedit", "generate", "--text", "h3llo", "--out", str(tmp_path)]) == 2
    assert "cannot write: '3'" in capsys.readouterr().err
    assert main(["textedit", "edit", "--text", "cat", "--new-text", "dog", "--layers", "99", "--steps", "1",
                 "--out", str(tmp_path)]) == 2
    assert "Unknown layer '99'" in capsys.readouterr().err
    assert main(["textedit", "generate", "--text", "cat", "--steps", "1", "--out", str(tmp_path / "g")]) == 0
    capsys.readouterr()
    assert main(["textedit", "edit", "--card", str(tmp_path / "g" / "run.json"), "--out", str(tmp_path)]) == 2
    assert "not 'edit'" in capsys.readouterr().err
    (tmp_path / "old.json").write_text(json.dumps({"action": "generate", "request": {"text": "cat"}}))
    assert main(["textedit", "generate", "--card", str(tmp_path / "old.json"), "--out", str(tmp_path)]) == 2
    assert "not a run card" in capsys.readouterr().err
