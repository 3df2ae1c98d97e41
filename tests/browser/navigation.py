"""Opening a tab the way a shared link does: ``?tab=<name>`` selects the tab and its group."""

from __future__ import annotations


def open_tab(page, name: str) -> None:
    """Go to the app with ``?tab=<name>`` and wait until that tab's content is shown."""
    base = page.url.split("?", 1)[0]
    page.goto(f"{base}?tab={name}")
    page.locator(f"#tab-{name}").first.wait_for(state="visible")


def show_tab(page, name: str) -> None:
    """Click through to a tab as a person does, without reloading the page: its group first, then the tab."""
    from backends import spec

    if name == "system":
        page.locator("#groups").get_by_role("tab", name="System", exact=True).click()
    else:
        capability = spec(name)
        page.locator("#groups").get_by_role("tab", name=capability.group, exact=True).click()
        page.get_by_role("tab", name=capability.title, exact=True).click()
    page.locator(f"#tab-{name}").first.wait_for(state="visible")
