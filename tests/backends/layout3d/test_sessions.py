"""Scenes kept between stages within a memory budget; a dropped scene is reported as expired; run cards."""

import pytest

from backends.common.errors import InputError
from backends.layout3d.layout import Layout, box_on_floor
from backends.layout3d.sessions import SceneExpired, SceneStore, scene_bytes
from backends.layout3d.stages import SceneSession, StageSettings

from .conftest import tiny_pipeline

SCENE = "a green lawn under a pale blue sky"
A = box_on_floor("a red cube", -0.5, 1.0, (0.6, 0.6, 0.6))


@pytest.fixture(scope="module")
def scenes():
    pipe = tiny_pipeline()
    out = []
    for seed in range(3):
        s = SceneSession(pipe, StageSettings(num_inference_steps=2, guidance_scale=2.0, seed=seed), 32)
        s.edit(Layout(SCENE, (A,)))
        out.append(s)
    return out


def test_scene_bytes_counts_every_kept_tensor_once(scenes):
    s = scenes[0]
    latents = sum(x.nbytes for x in s.stages[0].cache.latents)
    kv = sum(k.nbytes + v.nbytes for k, v in s.stages[1].cache.kv.values())
    total = scene_bytes(s)
    assert kv > 0 and total > latents + kv
    # the insert's source trajectory is the empty scene's own list: it is counted once, not twice
    assert s.stages[1].source_latents is s.stages[0].cache.latents
    images = sum(st.image.nbytes + st.depth.nbytes for st in s.stages)
    unique = s.noise.nbytes + sum(
        sum(x.nbytes for x in st.cache.latents) + sum(k.nbytes + v.nbytes for k, v in st.cache.kv.values())
        + sum(m.nbytes for m in st.cache.cross_maps.values()) + st.cache.depth.nbytes for st in s.stages)
    assert total == unique + images


def test_store_drops_the_least_recently_used_scene_past_the_budget_and_says_so(scenes):
    one = scene_bytes(scenes[0]) / 2**20
    store = SceneStore(budget_mb=2.5 * one)
    assert store.put("alice", scenes[0]) == [] and store.put("bob", scenes[1]) == []
    assert store.get("alice") is scenes[0]  # alice is now the most recently used
    assert store.put("carol", scenes[2]) == ["bob"]
    assert store.get("alice") is scenes[0] and store.get("carol") is scenes[2] and len(store) == 2
    with pytest.raises(SceneExpired, match="expired.*stages.json"):
        store.get("bob")
    assert store.used_bytes == scene_bytes(scenes[0]) + scene_bytes(scenes[2])  # what is held, counted once
    assert store.get("dave") is None  # never had a scene: not "expired"
    store.put("bob", scenes[1])  # a rebuilt scene is kept again
    assert store.get("bob") is scenes[1]
    store.drop("alice")
    assert store.get("alice") is None and store.used_bytes <= 2.5 * one * 2**20


def test_a_single_scene_over_the_budget_is_still_kept(scenes):
    store = SceneStore(budget_mb=0.01)
    store.put("alice", scenes[0])
    assert store.put("bob", scenes[1]) == ["alice"] and store.get("bob") is scenes[1]


def test_run_cards_are_read_back_or_rejected_clearly(scenes):
    from backends.layout3d.outputs import scene_card
    from backends.layout3d.service import read_card

    s = scenes[0]
    s.model_id = "layout3d-embedded"
    model, settings, layouts = read_card(scene_card(s))
    assert model == "layout3d-embedded" and settings == s.settings
    assert [len(lay.boxes) for lay in layouts] == [0, 1] and layouts[1].boxes[0] == A
    with pytest.raises(InputError, match="not a 3D Layout run card"):
        read_card({"stages": []})
    with pytest.raises(InputError, match="names the model"):
        read_card({**scene_card(s), "model": "sdxl"})
