"""The embedded text model's training script runs end to end on a tiny config (a few steps per phase)."""

import json

import pytest

TINY_VAE = json.dumps({"block_out_channels": [4, 8, 8], "norm_num_groups": 2})
# The easier recipe of the model card: column planes next to the latents, words in the mono style.
TINY_UNET = json.dumps({"block_out_channels": [8, 16, 16], "norm_num_groups": 4, "attention_head_dim": 2,
                        "in_channels": 12})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from training.textedit_model import main

    root = tmp_path_factory.mktemp("textedit_run")
    common = ["--run-dir", str(root / "run"), "--data-dir", str(root / "data"), "--n-train", "24",
              "--hours", "1", "--threads", "1"]
    main(["--phase", "vae", "--max-steps", "2", "--batch-vae", "2", "--vae-overrides", TINY_VAE, *common])
    main(["--phase", "unet", "--max-steps", "2", "--batch", "4", "--unet-overrides", TINY_UNET, "--data-style", "mono",
          "--text-weight", "4", *common])
    return root, common


def test_phases_write_checkpoints_and_logs(run):
    root, _ = run
    vae_info = json.loads((root / "run" / "vae" / "info.json").read_text())
    unet_info = json.loads((root / "run" / "unet" / "info.json").read_text())
    assert vae_info["steps"] == 2 and vae_info["latent_std"] > 0
    assert unet_info["steps"] == 2 and unet_info["final_loss"] > 0
    for sub in ("unet", "text_encoder", "tokenizer"):
        assert (root / "run" / "unet" / "model" / sub).is_dir()
    assert (root / "data" / "textedit_train_0_24.npz").exists()  # the VAE: six fonts
    assert (root / "data" / "textedit_mono_train_0_24.npz").exists()  # the UNet: the mono style


def test_resume_continues_the_step_count(run):
    from training.textedit_model import main

    root, common = run
    main(["--phase", "unet", "--max-steps", "3", "--batch", "4", "--unet-overrides", TINY_UNET, "--data-style", "mono",
          "--resume", *common])
    assert json.loads((root / "run" / "unet" / "info.json").read_text())["steps"] == 3
    assert "resumed at step 2" in (root / "run" / "unet" / "log.txt").read_text()


def test_export_loads_back_as_the_text_pipeline(run, tmp_path):
    import numpy as np

    from backends.textedit.loading import load_embedded
    from training.textedit_model import main

    root, common = run
    main(["--phase", "export", "--out", str(tmp_path / "asset"), *common])
    assert (tmp_path / "asset" / "model_index.json").exists()
    assert not any(p.suffix == ".bin" for p in (tmp_path / "asset").rglob("*"))
    pipe = load_embedded(tmp_path / "asset")
    assert list(pipe.unet.config.block_out_channels) == [8, 16, 16] and pipe.unet.config.in_channels == 12
    out = pipe('a sign that says "cat"', num_inference_steps=2, output_type="np")
    assert out.images.shape == (1, 32, 128, 3) and np.isfinite(out.images).all()


def test_eval_generates_held_out_words_and_scores_both_engines(run):
    from training.textedit_model import main

    root, common = run
    main(["--phase", "eval", "--eval-words", "2", "--eval-steps", "2", *common])
    metrics = json.loads((root / "run" / "eval" / "metrics.json").read_text())
    assert metrics["held_out_words"] == 2 and metrics["unet_steps"] >= 2
    for engine in ("rapidocr", "tesseract"):
        scores = metrics["ocr"][engine]
        assert 0.0 <= scores["char_f1"] <= 1.0 and len(scores["reads"]) == 2
    assert (root / "run" / "eval" / "samples.png").exists()


def test_warm_start_into_character_positions(run):
    """``--init-from`` copies the UNet and the text encoder; character position i starts as the plain
    position letter i had in the source run's prompts."""
    import torch
    from diffusers import UNet2DConditionModel
    from transformers import CLIPTextModel

    from backends.textedit import networks as N
    from training.textedit_model import main

    root, common = run
    (root / "warm").mkdir()
    (root / "warm" / "vae").symlink_to(root / "run" / "vae")
    args = [a if a != str(root / "run") else str(root / "warm") for a in common]
    main(["--phase", "unet", "--max-steps", "0", "--batch", "4", "--unet-overrides", TINY_UNET, "--data-style", "mono",
          "--text-overrides", json.dumps({"max_position_embeddings": 2 * N.MAX_TOKENS}),
          "--init-from", str(root / "run"), *args])
    src, dst = root / "run" / "unet" / "model", root / "warm" / "unet" / "model"
    a, b = (UNet2DConditionModel.from_pretrained(d / "unet").state_dict() for d in (src, dst))
    assert all(torch.equal(a[k], b[k]) for k in a)
    old, new = (CLIPTextModel.from_pretrained(d / "text_encoder") for d in (src, dst))
    assert N.uses_character_positions(new) and not N.uses_character_positions(old)
    table = {m: next(p for n, p in m.named_parameters() if n.endswith("position_embedding.weight")) for m in (old, new)}
    assert torch.equal(table[new][: N.MAX_TOKENS], table[old])
    # [BOS] a <one or two template words> that says " → the first letter sits at plain position 6 or 7
    assert any(torch.equal(table[new][N.MAX_TOKENS], table[old][k]) for k in (6, 7))


def test_text_region_weights_cover_the_words_latent_cells():
    import torch

    from training.textedit_model import text_region_weights

    w = text_region_weights(torch.tensor([[6, 7, 50, 25], [0, 0, 128, 32]]), (8, 32), 4.0)
    assert w.shape == (2, 1, 8, 32) and torch.allclose(w.mean(dim=(1, 2, 3)), torch.ones(2))
    inside = torch.zeros(8, 32, dtype=torch.bool)
    inside[1:7, 1:13] = True  # pixels 6..49 × 7..24 → latent columns 1..12, rows 1..6 (4 px per cell)
    assert torch.allclose(w[0, 0][inside], w[0, 0, 1, 1]) and torch.allclose(w[0, 0][~inside], w[0, 0, 0, 0])
    assert torch.isclose(w[0, 0, 1, 1] / w[0, 0, 0, 0], torch.tensor(5.0))
    assert torch.equal(w[1], torch.ones(1, 8, 32))  # a box over everything: plain MSE


def test_raw_weights_are_the_optimizers_not_the_ema(run):
    import torch

    from training.textedit_eval import load_run_model

    root, _ = run
    ema, raw = load_run_model(root / "run"), load_run_model(root / "run", "raw")
    state = torch.load(root / "run" / "unet" / "state.pt", weights_only=False)
    assert all(torch.equal(v, state["unet"][k]) for k, v in raw[1].state_dict().items())
    assert all(torch.equal(v, state["ema_unet"][k]) for k, v in ema[1].state_dict().items())
    assert any(not torch.equal(v, ema[1].state_dict()[k]) for k, v in raw[1].state_dict().items())
