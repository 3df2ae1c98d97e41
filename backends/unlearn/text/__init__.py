"""The text-conditioned teacher of the Unlearning tab: 3D Layout's embedded text-to-image model (``layout3d-embedded``,
reached through the model registry and the shared pieces in ``backends.common`` / ``backends.synth``), made to forget a
word — a colour or a shape — mapped to another word of the same kind, the box depth staying the condition."""
