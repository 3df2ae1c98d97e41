"""All of the science of the suite. Nothing below this package imports gradio.

Each capability is a sub-package named after it (``layout3d``, ``counterfactual``, ``textedit``,
``avatar``, ``videodepth``, ``games``); ``common`` holds the services they share.
"""

CAPABILITIES: tuple[str, ...] = ("layout3d", "counterfactual", "textedit", "avatar", "videodepth", "games")
