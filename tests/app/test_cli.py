"""The command line, run as a person would run it."""

import subprocess
import sys


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, timeout=120, env=env)


def test_models_list_prints_registry_with_presence():
    out = run_cli("models", "list")
    assert out.returncode == 0, out.stderr
    assert "sd15" in out.stdout and "missing" in out.stdout
    assert "models present" in out.stdout


def test_models_check_passes_on_a_fresh_install():
    out = run_cli("models", "check")
    assert out.returncode == 0, out.stderr


def test_models_check_names_missing_model_and_places(tmp_path):
    out = run_cli("--models-dir", str(tmp_path), "models", "check", "controlnet-sd15-depth")
    assert out.returncode == 1
    assert "controlnet-sd15-depth" in out.stderr
    assert str(tmp_path / "lllyasviel/control_v11f1p_sd15_depth") in out.stderr
    assert "Hugging Face cache" in out.stderr and "how to get it" in out.stderr


def test_models_check_finds_a_model_placed_in_models_dir(tmp_path):
    target = tmp_path / "lllyasviel--control_v11f1p_sd15_depth"
    target.mkdir()
    (target / "config.json").write_text("{}")
    out = run_cli("--models-dir", str(tmp_path), "models", "check", "controlnet-sd15-depth")
    assert out.returncode == 1 and "missing" in out.stderr  # a bare config is not a model
    (target / "diffusion_pytorch_model.safetensors").write_bytes(b"weights")
    out = run_cli("--models-dir", str(tmp_path), "models", "check", "controlnet-sd15-depth")
    assert out.returncode == 0, out.stderr
    assert "ok" in out.stdout and "no published checksums recorded" in out.stdout


def test_models_download_help():
    out = run_cli("models", "download", "--help")
    assert out.returncode == 0 and "--tab" in out.stdout and "--all" in out.stdout and "resume" in out.stdout
    assert "--fp16" in out.stdout


def test_models_download_fetches_with_progress_and_check_verifies_the_published_sha256(tmp_path):
    import os

    from backends.common.registry import default_registry
    from tests.hubserver import HubServer, published

    hub = HubServer()
    try:
        spec = default_registry().get("controlnet-sd15-depth")
        repo = hub.repos[spec.location] = published(spec, weight_bytes=3_000_000)
        env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HUB_OFFLINE": "0", "HF_TOKEN": ""}
        out = run_cli("--models-dir", str(tmp_path), "models", "download", spec.id, env=env)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("Licence of controlnet-sd15-depth: OpenRAIL")
        assert "ok       controlnet-sd15-depth: 2 files" in out.stdout
        assert "of 2.9 MB at" in out.stderr and "Traceback" not in out.stderr
        weights = tmp_path / spec.location / "diffusion_pytorch_model.safetensors"
        assert weights.read_bytes() == repo.files["diffusion_pytorch_model.safetensors"]

        out = run_cli("--models-dir", str(tmp_path), "models", "check", spec.id, env=env)
        assert out.returncode == 0 and "ok" in out.stdout, out.stderr
        data = bytearray(weights.read_bytes())
        data[-1] ^= 1
        weights.write_bytes(bytes(data))
        out = run_cli("--models-dir", str(tmp_path), "models", "check", spec.id, env=env)
        assert out.returncode == 1 and "the hub published" in out.stderr and "models download" in out.stderr

        repo.gated = True
        out = run_cli("--models-dir", str(tmp_path / "other"), "models", "download", spec.id, env=env)
        assert out.returncode == 1 and "hf auth login" in out.stderr and "Traceback" not in out.stderr
    finally:
        hub.close()


def test_unknown_model_and_bad_device_are_clear_errors():
    out = run_cli("models", "check", "no-such-model")
    assert out.returncode == 2 and "Unknown model 'no-such-model'" in out.stderr
    out = run_cli("--device", "tpu", "models", "list")
    assert out.returncode == 2 and "unknown device" in out.stderr
    out = run_cli("serve", "--port", "-5")
    assert out.returncode == 2 and "port must be 1 to 65535" in out.stderr and "Traceback" not in out.stderr


def test_counterfactual_batch_writes_files_for_each_image(tmp_path):
    import json
    import os
    import shutil
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "app" / "static" / "examples" / "counterfactual"
    images = tmp_path / "images"
    images.mkdir()
    for name in ("cube.png", "torus.png"):
        shutil.copy(examples / name, images / name)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "ICLR25_MODELS_DIR"}
    res = run_cli("counterfactual", "--image", str(images), "--mask", "auto", "--target", "cone", "--out", str(out),
                  "--samples", "1", "--steps", "6", env=env)
    assert res.returncode == 0, res.stderr
    lines = [json.loads(line) for line in res.stdout.strip().splitlines()]
    assert [line["image"] for line in lines] == ["cube.png", "torus.png"]
    for stem in ("cube", "torus"):
        run = json.loads((out / stem / "run.json").read_text())["result"]  # the one run-card format
        assert run["target"] == "cone" and abs(run["region_area"] - 0.3) < 0.02
        assert run["samples"][0]["max_change_outside"] == 0
        assert (out / stem / "counterfactual_1.png").is_file()


def test_counterfactual_cli_rejects_unknown_target(tmp_path):
    from pathlib import Path

    img = Path(__file__).resolve().parents[2] / "app" / "static" / "examples" / "counterfactual" / "cube.png"
    res = run_cli("counterfactual", "--image", str(img), "--target", "dodecahedron", "--out", str(tmp_path), "--steps", "4")
    assert res.returncode == 2
    assert "Unknown target class 'dodecahedron'" in res.stderr


def test_games_selfplay_tournament_and_improve_without_llm(tmp_path):
    import json

    out = tmp_path / "games.jsonl"
    res = run_cli("games", "selfplay", "--a", "greedy", "--b", "random", "--games", "6", "--cards", "5", "--out", str(out))
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["games"] == 6 and 0 <= summary["a_score"] <= 1
    assert len(out.read_text().splitlines()) == 6
    res = run_cli("games", "tournament", "--agents", "random", "greedy", "--games", "4", "--cards", "4",
                  "--simulations", "10")
    assert res.returncode == 0 and "standings" in res.stdout
    strategy = tmp_path / "mine.py"
    strategy.write_text("def evaluate_state(state):\n    return (state['p0_score'], state['p1_score']), {}\n")
    res = run_cli("games", "selfplay", "--a", str(strategy), "--b", "random", "--games", "2", "--cards", "4",
                  "--simulations", "10")
    assert res.returncode == 0, res.stderr
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("ICLR25_LLM")}
    env["ICLR25_LLM_LOCAL"] = "none"  # neither an endpoint nor the embedded model
    res = run_cli("games", "improve", "--run-dir", str(tmp_path / "run"), "--iterations", "1", env=env)
    assert res.returncode == 2 and "ICLR25_LLM_BASE_URL" in res.stderr


def test_layout3d_cli_writes_every_stage(tmp_path):
    import json

    layout = {"scene_prompt": "a green lawn under a pale blue sky",
              "boxes": [{"prompt": "a red cube", "center": [-0.5, 1.0, 0.35], "size": [0.7, 0.7, 0.7]}]}
    moved = {**layout, "boxes": [{**layout["boxes"][0], "center": [0.3, 1.0, 0.35]}]}
    (tmp_path / "a.json").write_text(json.dumps(layout))
    (tmp_path / "b.json").write_text(json.dumps(moved))
    res = run_cli("layout3d", "--layout", str(tmp_path / "a.json"), "--stages", str(tmp_path / "b.json"),
                  "--out", str(tmp_path / "out"), "--steps", "4")
    assert res.returncode == 0, res.stderr
    kinds = [json.loads(line)["kind"] for line in res.stdout.splitlines() if line.startswith("{\"stage\"")]
    assert kinds == ["empty", "insert", "move"]
    assert (tmp_path / "out" / "stage02.png").exists() and (tmp_path / "out" / "run.json").exists()
    bad = run_cli("layout3d", "--layout", str(tmp_path / "missing.json"), "--out", str(tmp_path / "o2"))
    assert bad.returncode == 2 and "Cannot read layout" in bad.stderr


def test_games_improve_avalon_heuristics_against_an_endpoint(tmp_path, scripted_endpoint):
    import json
    import os

    from tests.app.scripted_llm import scripted_strategist

    env = {k: v for k, v in os.environ.items() if not k.startswith("ICLR25_LLM")}
    env |= {"ICLR25_LLM_BASE_URL": scripted_endpoint(scripted_strategist), "ICLR25_LLM_MODEL": "scripted-double"}
    res = run_cli("games", "improve", "--game", "avalon", "--part", "heuristic", "--run-dir", str(tmp_path / "run"),
                  "--iterations", "1", "--games", "2", "--worlds", "2", env=env)
    assert res.returncode == 0, res.stderr
    records = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    assert records[0]["event"] == "seeded" and records[-1]["iteration"] == 1 and records[-1]["game"] == "avalon"
    library = json.loads((tmp_path / "run" / "library.json").read_text())
    assert {s["origin"]["kind"] for s in library} >= {"hand-written", "llm-seed", "llm-idea"}



def test_layout3d_cli_json_nested_too_deep_is_an_error_not_a_traceback(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    for flag in ("--layout", "--run"):
        out = run_cli("layout3d", flag, str(deep), "--out", str(tmp_path / "out"))
        assert out.returncode == 2 and "not JSON" in out.stderr.replace("not valid JSON", "not JSON")
        assert "Traceback" not in out.stderr


def test_run_cards_that_are_not_json_objects_are_errors_not_tracebacks(tmp_path):
    import shutil
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "app" / "static" / "examples" / "counterfactual"
    shutil.copy(examples / "cube.png", tmp_path / "original.png")
    shutil.copy(examples / "cube.png", tmp_path / "mask.png")
    for text in ("[1, 2]", "[" * 100_000 + "]" * 100_000):
        (tmp_path / "run.json").write_text(text)
        for args in (("counterfactual", "--run", str(tmp_path / "run.json")),
                     ("textedit", "generate", "--card", str(tmp_path / "run.json"))):
            out = run_cli(*args, "--out", str(tmp_path / "out"))
            assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-500:]
            assert "run card" in out.stderr
