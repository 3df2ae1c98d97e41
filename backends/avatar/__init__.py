"""LIFe-GoM avatars (Wen, Schwing, Wang, ICLR 2025): the foundations built so far.

- ``body``: the anny body model (cached once per machine), its coarse reconstruction mesh, LBS;
- ``pose``: named pose sliders and presets → bone transforms;
- ``gom``: coupled multi-resolution Gaussians-on-Mesh (subdivision, Steiner frames, per-face params);
- ``visibility``: which vertices each camera sees (open3d ray casting);
- ``network``: the reconstructor (small CNN, view attention, vertex attention, feedback iterations), untrained;
- ``render``: Gaussian splatting (pure torch, differentiable; gsplat on CUDA when installed);
- ``export``: Gaussians as 3DGS ``.ply`` (read back too) and ``.splat``, the files the vendored Spark viewer opens;
- ``data``: ground-truth views of synthetic people (open3d ray casting, procedural clothes);
- ``smplx``: SMPL-X read from the user's own model file, posed with the same sliders;
- ``models``: the registered body templates (anny; SMPL-X when the user supplies it).
"""
