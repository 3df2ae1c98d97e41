"""The embedded model's UNet sees fixed column planes next to its latents; other UNets are called as they are."""

import torch

from backends.textedit import networks as N


def test_column_planes_tell_every_column_apart():
    planes = N.column_planes(2, 32, torch.zeros(()))
    assert planes.shape == (1, N.POSITION_PLANES, 2, 32)
    assert torch.equal(planes[:, :, 0], planes[:, :, 1])  # the same on every row
    columns = planes[0, :, 0].T  # 32 × 8
    assert torch.cdist(columns, columns).add(torch.eye(32) * 10).min() > 0.1


def test_unet_input_adds_the_planes_only_where_conv_in_expects_them():
    tiny = dict(block_out_channels=(8, 16, 16), norm_num_groups=4, attention_head_dim=2)
    with_planes, plain = N.build_unet(in_channels=4 + N.POSITION_PLANES, **tiny), N.build_unet(**tiny)
    z = torch.randn(2, 4, *N.LATENT_SIZE)
    assert N.unet_input(with_planes, z).shape == (2, 4 + N.POSITION_PLANES, *N.LATENT_SIZE)
    assert N.unet_input(plain, z) is z
    assert N.latent_channels(with_planes) == N.latent_channels(plain) == 4


def test_the_planes_reach_the_output():
    torch.manual_seed(0)
    unet = N.build_unet(block_out_channels=(8, 16, 16), norm_num_groups=4, attention_head_dim=2,
                        in_channels=4 + N.POSITION_PLANES).eval()
    z, text = torch.randn(1, 4, *N.LATENT_SIZE), torch.randn(1, 8, N.UNET_CONFIG["cross_attention_dim"])
    x = N.unet_input(unet, z)
    shifted = x.clone()
    shifted[:, 4:] = shifted[:, 4:].roll(5, dims=-1)
    with torch.no_grad():
        assert not torch.allclose(unet(x, 5, encoder_hidden_states=text).sample,
                                  unet(shifted, 5, encoder_hidden_states=text).sample)


def _ids(prompts):
    tok = N.build_tokenizer()
    return tok, tok(prompts, padding="max_length", max_length=N.MAX_TOKENS, return_tensors="pt").input_ids


def test_character_positions_do_not_depend_on_the_template():
    tok, ids = _ids(['a sign that says "dog"', 'a brick wall that says "dog"', ""])
    pos = N.position_ids(ids, tok.convert_tokens_to_ids('"'))
    chars = [pos[row][ids[row] == tok.convert_tokens_to_ids(c)].tolist() for row in (0, 1) for c in "dog"]
    assert chars == [[N.MAX_TOKENS], [N.MAX_TOKENS + 1], [N.MAX_TOKENS + 2]] * 2
    closing = [pos[row][ids[row] == tok.convert_tokens_to_ids('"')].tolist()[1] for row in (0, 1)]
    assert closing == [N.MAX_TOKENS + 3] * 2  # the word's length
    assert pos[2].tolist() == list(range(N.MAX_TOKENS))  # no quotes: plain positions
    assert pos[0, :6].tolist() == list(range(6))  # the template keeps its own


def test_encode_prompts_uses_character_positions_only_when_the_encoder_has_room():
    torch.manual_seed(0)
    tok, _ = _ids([""])
    plain, wide = N.build_text_encoder(len(tok)), N.build_text_encoder(len(tok), max_position_embeddings=2 * N.MAX_TOKENS)
    assert not N.uses_character_positions(plain) and N.uses_character_positions(wide)
    prompts = ['a sign that says "cat"', 'a brick wall that says "cat"']
    with torch.no_grad():
        for enc in (plain, wide):
            assert N.encode_prompts(tok, enc, prompts).shape == (2, N.MAX_TOKENS, N.TEXT_CONFIG["hidden_size"])
        table = next(p for name, p in wide.named_parameters() if name.endswith("position_embedding.weight"))
        before = [N.encode_prompts(tok, wide, [p]) for p in ("", prompts[0])]
        table[N.MAX_TOKENS:] += 1.0  # changes the character positions only
        after = [N.encode_prompts(tok, wide, [p]) for p in ("", prompts[0])]
        assert torch.allclose(before[0], after[0]) and not torch.allclose(before[1], after[1])
