"""Loading the published stack's classes (tiny random configs) and the LooseControl LoRA merge."""

import pytest
import torch

from backends.layout3d.loading import load_sd_controlnet, merge_attn_procs_lora

from .conftest import tiny_pipeline


def test_attn_procs_lora_merge_changes_only_the_targeted_projections():
    pipe = tiny_pipeline(controlnet=True)
    cn = pipe.controlnet
    name = next(n for n in cn.attn_processors if n.endswith("attn1.processor"))
    prefix = name
    lin = dict(cn.named_modules())[name.removesuffix(".processor") + ".to_q"]
    before = lin.weight.clone()
    other = dict(cn.named_modules())[name.removesuffix(".processor") + ".to_k"].weight.clone()
    r, d = 2, lin.weight.shape[1]
    down, up = torch.randn(r, d), torch.randn(lin.weight.shape[0], r)
    n = merge_attn_procs_lora(cn, {f"{prefix}.to_q_lora.down.weight": down, f"{prefix}.to_q_lora.up.weight": up})
    assert n == 1
    assert torch.allclose(lin.weight, before + up @ down, atol=1e-5)
    assert torch.equal(dict(cn.named_modules())[name.removesuffix(".processor") + ".to_k"].weight, other)
    with pytest.raises(ValueError):
        merge_attn_procs_lora(cn, {"nonsense.weight": down})


def test_sd_controlnet_folder_layout_loads(tmp_path):
    """The same folder layout as SD 1.5 + a depth ControlNet, at tiny sizes."""
    pipe = tiny_pipeline(controlnet=True)
    for part in ("vae", "unet", "text_encoder", "tokenizer"):
        getattr(pipe, part).save_pretrained(tmp_path / "sd" / part)
    pipe.controlnet.save_pretrained(tmp_path / "cn")
    loaded = load_sd_controlnet(tmp_path / "sd", tmp_path / "cn")
    assert loaded.controlnet is not None and loaded.config.prompt_prefix.startswith("4k")
    depth = torch.rand(1, 1, 32, 32)
    kw = dict(num_inference_steps=2, guidance_scale=7.5)
    out = loaded("a red cube", depth, generator=torch.Generator().manual_seed(0), **kw).images
    # the published sampler, prefix and negative prompt are the only difference from the saved parts
    pipe.register_to_config(prompt_prefix=loaded.config.prompt_prefix, negative_prompt=loaded.config.negative_prompt)
    pipe.scheduler = loaded.scheduler
    assert out.shape == (1, 32, 32, 3) and abs(
        out - pipe("a red cube", depth, generator=torch.Generator().manual_seed(0), **kw).images).max() < 1e-5


def test_the_fp16_variant_files_of_the_published_repos_load(tmp_path):
    """Folders holding only the repos' fp16 weight files (``*.fp16.safetensors``, what `models download --fp16`
    fetches) load with the variant the registry found, and give what the saved parts give."""
    from backends.common.registry import ResolvedModel, default_registry, fp16_variant

    pipe = tiny_pipeline(controlnet=True)
    for part in ("vae", "unet", "text_encoder"):
        getattr(pipe, part).save_pretrained(tmp_path / "sd" / part, variant="fp16")
    pipe.tokenizer.save_pretrained(tmp_path / "sd" / "tokenizer")
    pipe.controlnet.save_pretrained(tmp_path / "cn", variant="fp16")
    written = {str(p.relative_to(tmp_path / "sd")) for p in (tmp_path / "sd").rglob("*.safetensors")}
    assert written == {f for f in fp16_variant(default_registry().get("sd15").files) if f.endswith(".safetensors")}
    assert [p.name for p in (tmp_path / "cn").glob("*.safetensors")] == ["diffusion_pytorch_model.fp16.safetensors"]

    found = ResolvedModel(default_registry().get("sd15"), tmp_path / "sd", "models folder", "fp16")
    loaded = load_sd_controlnet(tmp_path / "sd", tmp_path / "cn", sd_variant=found.variant, controlnet_variant="fp16")
    for part in ("unet", "controlnet", "text_encoder"):
        ours, theirs = getattr(loaded, part).state_dict(), getattr(pipe, part).state_dict()
        assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)
