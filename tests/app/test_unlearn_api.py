"""The Unlearning tab through gradio_client, as an API user would call it: the shipped generators sampled beside
the teacher with the classifier's readings, the metrics, and refused inputs that keep the session."""

import json
from pathlib import Path

import pytest
from gradio_client.exceptions import AppError

from backends.unlearn.evaluate import ships


def shipped_methods(forget: str, safe: str) -> set[str]:
    """The teacher, negative guidance and every trained method with a shipped network for this choice (SalUn's are
    optional: without one the comparison skips it and says so)."""
    return {"teacher", "negative_guidance"} | {m for m in ("sfd", "esd", "salun") if ships(m, forget, safe)}


def test_shipped_generators_give_a_panel_per_class_with_readings(client):
    status, gallery, table, summary, files = client.predict(
        "cone", "cylinder", 2, 2, 1.0, 0, api_name="/unlearn_sample_shipped")
    assert summary["forget"] == "cone" and set(summary["methods"]) == shipped_methods("cone", "cylinder")
    assert {"sfd", "esd"} <= set(summary["methods"])
    assert ("salun" in summary["methods"]) != ("salun" in summary["skipped"])
    assert len(gallery) == 5 and "forgotten" in gallery[3]["caption"]
    names = {Path(f).name for f in files}
    assert {"panel_cone.png", "grid_sfd.png", "samples.npz", "metrics.json", "run.json"} <= names
    card = json.loads(Path(next(f for f in files if f.endswith("run.json"))).read_text())
    assert card["action"] == "unlearn_sample" and card["request"]["sfd_generator"] == "shipped"


def test_evaluate_reports_every_method(client):
    *_, table, summary, files = client.predict(
        forget="cube", safe="sphere", per_class=2, teacher_steps=2, api_name="/unlearn_evaluate")
    metrics = summary["metrics"]
    assert set(metrics) == shipped_methods("cube", "sphere")
    assert all(0 <= m["forget_rate"]["value"] <= 1 and m["forget_rate"]["n"] == 2 for m in metrics.values())
    assert set(summary["seconds_per_image"]) == set(metrics) and all(v > 0 for v in summary["seconds_per_image"].values())
    assert len(table["data"]) == len(metrics)


def test_forgetting_a_class_onto_itself_is_refused(client):
    with pytest.raises(AppError, match="onto itself"):
        client.predict("cube", "cube", 2, 2, 1.0, 0, api_name="/unlearn_sample_shipped")


def test_a_pair_without_shipped_generators_says_so(client):
    with pytest.raises(AppError, match="No SFD network ships"):
        client.predict("torus", "cube", 2, 2, 1.0, 0, api_name="/unlearn_sample_shipped")


def test_a_distil_run_is_named_by_its_id_and_compared_by_it_and_a_server_path_is_refused(client):
    """The page names a Distil run by its id, never by a folder of the server; the id brings the network back."""
    status, _, _, run_id, sfd, _, _, summary, files = client.predict(
        forget="cube", safe="sphere", method="sfd", iterations=2, batch=2, preview_every=1, checkpoint_every=1,
        run_dir="", api_name="/unlearn_distil")
    assert len(run_id) == 12 and int(run_id, 16) >= 0 and sfd == run_id, (run_id, sfd)
    assert "/" not in status and "/" not in run_id
    *_, summary, _ = client.predict(forget="cube", safe="sphere", sfd_generator=run_id, esd_model="none",
                                    per_class=2, teacher_steps=2, api_name="/unlearn_evaluate")
    assert "sfd" in summary["metrics"]
    with pytest.raises(AppError, match="the id of a Distil run"):
        client.predict(forget="cube", safe="sphere", sfd_generator=str(Path.home()), esd_model="none",
                       per_class=2, teacher_steps=2, api_name="/unlearn_evaluate")


def test_salun_distils_through_the_api_and_is_compared_by_its_run_id(client):
    """The SalUn baseline: one Distil step through the API fills the SalUn box with the run's id; Evaluate then
    samples that network beside the teacher (the SFD and ESD boxes set to none)."""
    status, _, _, run_id, sfd, esd, salun, summary, _ = client.predict(
        forget="cone", safe="cylinder", method="salun", iterations=1, batch=2, replay_steps=2, preview_every=1,
        checkpoint_every=1, run_dir="", api_name="/unlearn_distil")
    assert salun == run_id and sfd != run_id and esd != run_id and status.startswith("SalUn finished 1 steps")
    assert set(summary["last_losses"]) == {"salun_forget", "salun_retain"}
    *_, table, summary, _ = client.predict(forget="cone", safe="cylinder", sfd_generator="none", esd_model="none",
                                          salun_model=run_id, per_class=2, teacher_steps=2, api_name="/unlearn_evaluate")
    assert set(summary["metrics"]) == {"teacher", "salun", "negative_guidance"} and not summary["skipped"]
    assert any(row[0].startswith("SalUn") for row in table["data"])
    with pytest.raises(AppError, match="holds a SalUn network, not SFD"):
        client.predict(forget="cone", safe="cylinder", sfd_generator=run_id, esd_model="none", salun_model="none",
                       per_class=2, teacher_steps=2, api_name="/unlearn_evaluate")


def test_text_teacher_forgets_a_word_distils_and_compares_by_run_id(client):
    """The 3D Layout text teacher: a word the model does not know is refused by name; the shipped SFD generator of
    'red → blue' is sampled beside the teacher and negative guidance (no ESD ships: said so); one Distil step of SFD
    is compared by its run id, one panel per prompt with the detector's readings; a label-teacher run is refused."""
    with pytest.raises(AppError, match="'crimson'"):
        client.predict(forget="crimson", safe="blue", teacher="text", per_class=2, teacher_steps=2,
                       api_name="/unlearn_sample_shipped")
    with pytest.raises(AppError, match="colour onto a colour"):
        client.predict(forget="red", safe="cube", teacher="text", per_class=2, teacher_steps=2,
                       api_name="/unlearn_sample_shipped")
    status, gallery, _, summary, _ = client.predict(
        forget="red", safe="blue", teacher="text", prompts="a red cube; a blue sphere", per_class=2, teacher_steps=2,
        api_name="/unlearn_sample_shipped")
    assert summary["teacher"] == "text" and summary["methods"] == ["teacher", "sfd", "negative_guidance"]
    assert "esd" in summary["skipped"] and "Not shown: esd" in status
    assert len(gallery) == 2 and "forgotten word" in gallery[0]["caption"]
    status, _, _, run_id, sfd, _, _, summary, files = client.predict(
        forget="red", safe="blue", teacher="text", method="sfd", iterations=1, batch=2, preview_every=1,
        checkpoint_every=1, run_dir="", api_name="/unlearn_distil")
    assert sfd == run_id and status.startswith("SFD finished 1 steps")
    assert any(f.endswith("diffusion_pytorch_model.safetensors") for f in files)
    *_, table, summary, files = client.predict(
        forget="red", safe="blue", teacher="text", prompts="a red cube; a blue sphere", sfd_generator=run_id,
        esd_model="none", salun_model="none", per_class=2, teacher_steps=2, api_name="/unlearn_evaluate")
    assert set(summary["metrics"]) == {"teacher", "sfd", "negative_guidance"}
    assert summary["metrics"]["sfd"]["forget_rate"]["n"] == 2 and summary["metrics"]["sfd"]["retained_accuracy"]["n"] == 2
    assert all(summary["seconds_per_image"][m] > 0 for m in ("teacher", "sfd", "negative_guidance"))  # timed, not raced
    label_run = client.predict(forget="cube", safe="sphere", method="sfd", iterations=1, batch=2, preview_every=1,
                               checkpoint_every=1, run_dir="", api_name="/unlearn_distil")[3]
    with pytest.raises(AppError, match="label-conditional"):
        client.predict(forget="red", safe="blue", teacher="text", prompts="a red cube", sfd_generator=label_run,
                       esd_model="none", per_class=2, teacher_steps=2, api_name="/unlearn_evaluate")
    with pytest.raises(AppError, match="3D Layout"):
        client.predict(forget="cube", safe="sphere", sfd_generator=run_id, esd_model="none", per_class=2,
                       teacher_steps=2, api_name="/unlearn_evaluate")
