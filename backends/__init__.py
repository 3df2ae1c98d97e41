"""All of the science of the suite. Nothing below this package imports gradio.

Each capability is a sub-package named after it and listed once in ``CAPABILITIES`` (tab order); its
``spec.py`` says what it is (title, group, paper), ``requests.py`` / ``actions.py`` / ``cli.py`` what it does.
``common`` holds the services they share; ``tests/test_conformance.py`` checks that every capability has its parts.
"""

CAPABILITIES: tuple[str, ...] = (
    "layout3d", "counterfactual", "textedit", "avatar", "videodepth", "games", "unlearn",
    "compress", "ot", "citest", "aggregate",
)


def spec(capability: str):
    """The :class:`~backends.common.capability.Capability` of ``capability`` (``backends/<name>/spec.py``)."""
    import importlib

    if capability not in CAPABILITIES:
        raise KeyError(f"No capability is called {capability!r}; the suite has {', '.join(CAPABILITIES)}.")
    return importlib.import_module(f"backends.{capability}.spec").SPEC


def specs() -> list:
    """Every capability's spec, in tab order."""
    return [spec(name) for name in CAPABILITIES]


def actions(capability: str | None = None) -> list:
    """Every :class:`~backends.common.action.Action` of the suite (or of one capability), in tab order.

    Each capability lists its actions in ``backends/<capability>/actions.py`` as ``ACTIONS``; this
    registry (the package's own ``__init__``) is the one place that knows them all: the CLI's ``replay``,
    the Ray workers and the tests find an action here by the name on its run card."""
    import importlib

    found = []
    for name in CAPABILITIES if capability is None else (capability,):
        try:
            module = importlib.import_module(f"backends.{name}.actions")
        except ModuleNotFoundError as e:
            if e.name != f"backends.{name}.actions":
                raise
            continue
        found.extend(module.ACTIONS)
    return found


def action_named(name: str):
    """The action whose API name (and run card's ``action``) is ``name``."""
    from backends.common.errors import InputError

    capability = next((c for c in CAPABILITIES if name.startswith(c + "_")), None)
    for action in actions(capability) if capability else []:
        if action.name == name:
            return action
    raise InputError(f"No action is called '{name}' (a run card of another version of this suite?).")
