"""``iclr25-studio compress`` as a person runs it: compress (and heal), chat with the saved model, replay the card."""

import json

from app.cli import main


def test_compress_chat_and_replay_give_the_same_numbers(tiny_lm_folder, tmp_path, capsys):
    sizes = ["--calibration-blocks", "2", "--block-tokens", "32", "--eval-windows", "1"]
    out = tmp_path / "run"
    assert main(["compress", "--model", str(tiny_lm_folder), "--ratio", "30", "--no-baselines", *sizes,
                 "--heal-steps", "2", "--heal-rank", "2", "--out", str(out)]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [r["method"] for r in line["results"]] == ["original", "basis_sharing"]
    assert line["heal"]["steps"] == 2 and "ppl_healed" in line["results"][1]
    assert (out / "model.safetensors").is_file() and (out / "run.json").is_file()

    assert main(["compress", "--load", str(out), "--prompt", "x = [1, 2", "--max-new-tokens", "3"]) == 0
    chat = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert chat["ratio"] == 30 and isinstance(chat["answer"], str)

    again = tmp_path / "again"
    assert main(["compress", "--run", str(out / "run.json"), "--out", str(again)]) == 0
    first = json.loads((out / "results.json").read_text())["results"]
    second = json.loads((again / "results.json").read_text())["results"]
    assert [r["ppl"] for r in first] == [r["ppl"] for r in second]
    assert first[1]["ppl_healed"] == second[1]["ppl_healed"]  # the heal replays too (LoRA's start is seeded)


def test_a_text_shorter_than_the_calibration_needs_is_refused(tiny_lm_folder, tmp_path, capsys):
    code = main(["compress", "--model", str(tiny_lm_folder), "--calibration-blocks", "256", "--block-tokens", "2048",
                 "--out", str(tmp_path)])
    assert code == 2 and "524288 are needed" in capsys.readouterr().err
