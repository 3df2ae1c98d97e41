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
    with pytest.raises(SceneExpired, match="expired.*run.json"):
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


def test_an_older_stages_json_is_read_as_a_request_or_rejected_clearly(scenes):
    from backends.layout3d.outputs import scene_card
    from backends.layout3d.uploads import request_from_stages_json

    s = scenes[0]
    s.model_id = "layout3d-embedded"
    request = request_from_stages_json(scene_card(s))
    assert request.model == "layout3d-embedded" and request.settings_key()[1:5] == (0, 2, 2.0, "bas")
    assert [len(lay.boxes) for lay in request.layouts()] == [0, 1] and request.target().boxes[0] == A
    with pytest.raises(InputError, match="not a 3D Layout run card"):
        request_from_stages_json({"stages": []})
    with pytest.raises(InputError, match="Model must be one of .*got .sdxl"):
        request_from_stages_json({**scene_card(s), "model": "sdxl"})


def test_a_stage_goes_on_from_the_live_scene_only_when_it_is_that_scene(scenes, monkeypatch):
    """The kept tensors spare recomputing the earlier stages only for the same settings and stages; the
    stage then runs on a fork, so a stopped or failed stage leaves the kept scene as it was."""
    from dataclasses import replace

    from backends.layout3d import sessions
    from backends.layout3d.requests import SceneRequest

    s = scenes[1]
    s.request = SceneRequest(Layout(SCENE, (A,)), seed=1, num_inference_steps=2, guidance_scale=2.0)
    store = SceneStore()
    monkeypatch.setattr(sessions, "_STORE", store)
    store.put("k", s)
    history = [st.layout.to_dict() for st in s.stages]
    moved = Layout(SCENE, (box_on_floor("a red cube", 0.3, 1.0, (0.6, 0.6, 0.6)),))
    request = replace(s.request, layout=moved.to_dict(), history=history, scene_key="k")
    fork = sessions.continued(request)
    assert fork is not None and fork is not s and fork.stages == s.stages and fork.stages is not s.stages
    fork.go_back(0)
    assert len(s.stages) == 2  # the kept scene is untouched
    assert sessions.continued(replace(request, seed=2)) is None  # other settings
    assert sessions.continued(replace(request, history=history[:1])) is None  # other stages
    assert sessions.continued(replace(request, scene_key="")) is None  # no live scene named
    store.budget_bytes = 1
    store.put("other", scenes[2])  # "k" is dropped: its stage is recomputed, not refused
    assert sessions.continued(request) is None
