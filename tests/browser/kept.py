"""Checks that an error left the person's results alone: the message as a note on the status line, no
"Error" badge over an output, no spinner or progress left running, no "Running…" left standing."""

from __future__ import annotations

from playwright.sync_api import expect

NOTE = "❌"  # app.components.failures.NOTE, the start of an error note
BADGE = "span.error"  # Gradio's "Error" badge of a component's status tracker
BUSY = ".wrap.full:not(.hide), .wrap.minimal:not(.hide)"  # a status tracker still showing progress or an error


def expect_kept(page, status: str, message: str, outputs: tuple[str, ...] = (), before: str | None = None):
    """``status`` (a selector) holds ``message`` as its note (after ``before``, the text it had, when given),
    and neither it nor any of ``outputs`` carries a badge or a running tracker."""
    line = page.locator(status)
    expect(line).to_contain_text(f"{NOTE} ", timeout=60_000)
    expect(line).to_contain_text(message)
    if before is not None:
        expect(line).to_contain_text(before)
    assert not line.inner_text().strip().split(NOTE)[0].rstrip().endswith("…"), line.inner_text()
    for selector in (status, *outputs):
        expect(page.locator(f"{selector} {BADGE}")).to_have_count(0)
        expect(page.locator(f"{selector} :is({BUSY})")).to_have_count(0)
