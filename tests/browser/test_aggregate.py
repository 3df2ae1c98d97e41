"""The Aggregation tab in a real browser: pick a problem, aggregate, read the verdict and the downloads."""

import json
import re

import pytest
from playwright.sync_api import expect

from tests.browser.navigation import show_tab

pytestmark = pytest.mark.browser


def choose_problem(page, name: str):
    box = page.locator("#agg-problem input")
    box.click()
    page.get_by_role("option", name=name, exact=True).click()
    expect(box).to_have_value(name)


def remove(models, name: str):
    """Take one model out of the multiselect (the × on its chip)."""
    models.locator(".token", has_text=name).locator(".token-remove").click()
    expect(models.locator(".token", has_text=name)).to_have_count(0)


def set_iterations(page, n: int):
    box = page.locator("#agg-iter input[type=number]")
    box.fill(str(n))
    box.press("Enter")


def test_pick_a_problem_and_aggregate(page):
    show_tab(page, "aggregate")
    choose_problem(page, "burgers")
    models = page.locator("#agg-models")
    expect(models).to_contain_text("Lax–Wendroff 64", timeout=30_000)  # the problem's own models
    remove(models, "kernel operator")
    set_iterations(page, 50)
    page.locator("#agg-run").click()
    status = page.locator("#agg-status")
    expect(status).to_contain_text(re.compile(r"test MSE: MEVA [\d.e+-]+, MEEA"), timeout=120_000)
    expect(page.locator("#agg-weights img")).to_be_visible()
    href = page.locator('#agg-files a[download="run.json"]').first.get_attribute("href")
    card = json.loads(page.request.get(href).body())
    assert card["request"]["problem"] == "burgers" and card["request"]["max_iter"] == 50
    assert card["result"]["models"] == ["upwind FV 64", "Lax–Wendroff 64", "spectral 32"]
    assert set(card["result"]["test_mse"]) >= {"meva", "meea", "stacking", "average", "best_single"}


def test_one_model_is_a_clear_error_and_the_page_keeps_working(page):
    show_tab(page, "aggregate")
    models = page.locator("#agg-models")
    expect(models).to_contain_text("bad +3")
    for name in ("bad −3", "bad +3"):
        remove(models, name)
    page.locator("#agg-run").click()
    expect(page.get_by_text("Choose at least two models").first).to_be_visible(timeout=30_000)
    expect(models).to_contain_text("good (noisy)")  # the choice is kept
    choose_problem(page, "laplace")  # and the page still answers
    expect(models).to_contain_text("GP collocation", timeout=30_000)
