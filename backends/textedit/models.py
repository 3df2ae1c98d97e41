"""Models of the Text in Image capability (the paper's real diffusion models, loaded when present).

``PRESETS`` holds, per model, the sampling settings of the reference scripts and the layers the paper
localized (``py-xis/t2i: src/edit_*.py``): layer names, or execution indices where the module name
is not confirmed (IF: attention 17 of the 22 added-K/V attentions of stage I).
"""

from dataclasses import dataclass

from backends.common.registry import ModelSpec, fp16_variant


def _clip_tokenizer(folder: str) -> tuple[str, ...]:
    """The files of a CLIP BPE tokenizer folder in diffusers' repos (what CLIPTokenizer reads)."""
    return tuple(f"{folder}/{name}" for name in ("merges.txt", "special_tokens_map.json", "tokenizer_config.json",
                                                  "vocab.json"))


# The published pipelines list every file their DiffusionPipeline.from_pretrained reads (weights included, as
# safetensors), so a download fetches them all and a folder of bare configs does not count as present.
_SDXL_FILES = ("model_index.json", "scheduler/scheduler_config.json",
               "unet/config.json", "unet/diffusion_pytorch_model.safetensors",
               "vae/config.json", "vae/diffusion_pytorch_model.safetensors",
               "text_encoder/config.json", "text_encoder/model.safetensors",
               "text_encoder_2/config.json", "text_encoder_2/model.safetensors",
               *_clip_tokenizer("tokenizer"), *_clip_tokenizer("tokenizer_2"))
_IF_FILES = ("model_index.json", "scheduler/scheduler_config.json",
             "unet/config.json", "unet/diffusion_pytorch_model.safetensors",
             "text_encoder/config.json", "text_encoder/model.safetensors.index.json",
             "text_encoder/model-00001-of-00002.safetensors", "text_encoder/model-00002-of-00002.safetensors",
             "tokenizer/special_tokens_map.json", "tokenizer/spiece.model", "tokenizer/tokenizer_config.json",
             "feature_extractor/preprocessor_config.json")

SPECS = [
    ModelSpec(
        id="textedit-embedded", capability="textedit", kind="textedit-embedded", source="embedded",
        location="textedit-embedded",
        files=(
            "model_index.json",
            "scheduler/scheduler_config.json",
            "text_encoder/config.json",
            "text_encoder/model.safetensors",
            "tokenizer/tokenizer.json",
            "tokenizer/tokenizer_config.json",
            "unet/config.json",
            "unet/diffusion_pytorch_model.safetensors",
            "vae/config.json",
            "vae/diffusion_pytorch_model.safetensors",
        ),
        sha256={
            "model_index.json": "9d98949946ce674720faefcc57624455a2f01fd8c4294b232eb9155d75cd2bee",
            "scheduler/scheduler_config.json": "28d1a009dfa466938be057413130d37105fb555c44c7c403af4cbdb4c3194f5c",
            "text_encoder/config.json": "97be49ef1e01fa961a7b7ab586677ab7c59a9e65c7de83348c1ba144cebda456",
            "text_encoder/model.safetensors": "595e8ef177dcf959275dff1d6eb1345d5bd18333bd42b14154e55a1fa67afde4",
            "tokenizer/tokenizer.json": "215885a1e594c41c4fdc0dab1680e7c013913cb7a6176deb168f45564dc6e1df",
            "tokenizer/tokenizer_config.json": "ae28a7637befd687dac2c4bd5e6891bc6190de7cd5d6b442b437ce96194d4fe4",
            "unet/config.json": "55d615852a13b687b41f16d68a6debeab3c8199ecbffce645a6818d3b9553c6e",
            "unet/diffusion_pytorch_model.safetensors": "3ee5265f2c969f355f0ab79341e85657daef4e692f1a26acab3c0963da6fbd0b",
            "vae/config.json": "3888fc72e9b2baec9454db63c895a2e638d1ab6da62fd8cca9f5e7e10552cbc6",
            "vae/diffusion_pytorch_model.safetensors": "e75576108c07346ac34e08fec55f98c14521d102380e222de4c0c38f48d636a5",
        },
        license="Apache-2.0 (trained by this project)",
        description=("32×128 text-to-image latent diffusion model that writes one word of 3–8 letters on a sign, "
                     "shirt, wall, label, poster or board: AutoencoderKL + UNet2DConditionModel (7 attn2 layers) "
                     "+ CLIPTextModel with a character-level tokenizer (training/textedit_model.py); reads 62 of 64 "
                     "held-out words right (RapidOCR)."),
    ),
    ModelSpec(
        id="sdxl-base", capability="textedit", kind="diffusers-pipeline", source="hf",
        location="stabilityai/stable-diffusion-xl-base-1.0",
        files=_SDXL_FILES, fp16_files=fp16_variant(_SDXL_FILES),
        license="CreativeML OpenRAIL++-M",
        description="SDXL base 1.0; its text layers are up_blocks.0.attentions.2.transformer_blocks.{1,2,3}.attn2.",
    ),
    ModelSpec(
        id="sd3-medium", capability="textedit", kind="diffusers-pipeline", source="hf",
        location="stabilityai/stable-diffusion-3-medium-diffusers",
        files=("model_index.json", "scheduler/scheduler_config.json",
               "transformer/config.json", "transformer/diffusion_pytorch_model.safetensors",
               "vae/config.json", "vae/diffusion_pytorch_model.safetensors",
               "text_encoder/config.json", "text_encoder/model.safetensors",
               "text_encoder_2/config.json", "text_encoder_2/model.safetensors",
               "text_encoder_3/config.json", "text_encoder_3/model.safetensors.index.json",
               "text_encoder_3/model-00001-of-00002.safetensors", "text_encoder_3/model-00002-of-00002.safetensors",
               *_clip_tokenizer("tokenizer"), *_clip_tokenizer("tokenizer_2"),
               "tokenizer_3/special_tokens_map.json", "tokenizer_3/spiece.model", "tokenizer_3/tokenizer.json",
               "tokenizer_3/tokenizer_config.json"),
        license="Stability AI Community License (gated)",
        description="Stable Diffusion 3 medium (28 steps, CFG 7.0), joint-attention text layers.",
    ),
    ModelSpec(
        id="if-stage1", capability="textedit", kind="diffusers-pipeline", source="hf",
        location="DeepFloyd/IF-I-XL-v1.0",
        files=_IF_FILES, fp16_files=fp16_variant(_IF_FILES),
        license="DeepFloyd IF License (gated)",
        description="DeepFloyd IF stage I (64×64 pixels, 50 steps, CFG 7.0); its text layer is added-K/V attention 17.",
    ),
]

# The Protect tab's default block list (kept here, with the other defaults the UI reads, so it loads without torch).
DEFAULT_BLOCK_LIST = ("hate", "kill", "idiot", "stupid", "loser", "damn", "dumb", "ugly", "jerk", "moron")

DEFAULT_MODEL = "textedit-embedded"


@dataclass(frozen=True)
class Preset:
    """Sampling settings and the localized layers of one model."""

    num_inference_steps: int
    guidance_scale: float
    edit_layers: tuple[str, ...]  # names or execution indices; () = not measured: run Localize first
    edit_start_step: int
    toxic_layers: tuple[str, ...]
    toxic_start_step: int
    source: str  # where the layers come from


# The embedded model's text layers (assets/textedit-embedded/README.md: the 4×16 down, 2×8 mid and first 4×16
# up cross-attentions; 3.3% of its UNet's parameters).
_EMBEDDED_TEXT_LAYERS = ("down_blocks.1.attentions.0.transformer_blocks.0.attn2",
                         "mid_block.attentions.0.transformer_blocks.0.attn2",
                         "up_blocks.1.attentions.0.transformer_blocks.0.attn2")
_EMBEDDED_EDIT_LAYERS = (*_EMBEDDED_TEXT_LAYERS, "up_blocks.1.attentions.1.transformer_blocks.0.attn2")

PRESETS = {
    "sdxl-base": Preset(50, 5.0, ("up_blocks.0.attentions.2.transformer_blocks.1.attn2",
                                  "up_blocks.0.attentions.2.transformer_blocks.2.attn2"), 4,
                        ("up_blocks.0.attentions.2.transformer_blocks.1.attn2",
                         "up_blocks.0.attentions.2.transformer_blocks.2.attn2",
                         "up_blocks.0.attentions.2.transformer_blocks.3.attn2"), 4,
                        "the paper (SDXL layers 55, 56; 57 added for toxic text)"),
    "sd3-medium": Preset(28, 7.0, ("transformer_blocks.10.attn",), 2, ("transformer_blocks.10.attn",), 0,
                         "the paper (SD3 joint block 10, text K/V only)"),
    "if-stage1": Preset(50, 7.0, ("17",), 2, ("17",), 2, "the paper (IF stage I attention 17 of 22)"),
    # Edits start at step 4 of 20 (the paper: SDXL 4 of 50, SD3 2 of 28), chosen on pairs of TRAINING words
    # (16 pairs, start 0/2/4/6): the new word was read as often from 4 as from 0 (13/16), from 6 less (11/16),
    # and the text-free border kept 0.9 dB more of the original. Edits add the second 4×16 up layer to the
    # three: on 30 more pairs of training words (``python -m training.textedit_edit_settings``) the three read
    # the new word in 26/30 from any start step, the three plus that layer 30/30 (plus any other layer 26/30,
    # all seven 30/30), outside the text 15.8 dB vs the prompt swap's 14.6. Toxic prevention patches the three
    # from step 0 (nothing blocked was readable).
    DEFAULT_MODEL: Preset(20, 5.0, _EMBEDDED_EDIT_LAYERS, 4, _EMBEDDED_TEXT_LAYERS, 0,
                          "measured on this model (its card): the three layers whose patching moves the word "
                          "away from A, plus for edits the layer that made them spell every training pair"),
}

MODEL_CHOICES = (DEFAULT_MODEL, "sdxl-base", "sd3-medium", "if-stage1")
