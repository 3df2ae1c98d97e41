"""LIFe-GoM avatars (Wen, Schwing, Wang, ICLR 2025): the Avatar tab's, CLI's and bench's backend.

- ``actions``: the actions the tab, the API, the CLI and run cards share (reconstruct, fit photos, video);
  ``requests``: their typed requests (torch-free); ``params``: pose sliders and body shape as plain numbers;
- ``service``: the work (reconstruct, novel views, turntable and animation videos), typed request → result;
- ``sessions``: what the server keeps per browser session (the last avatar, the last fitted photos);
- ``body``: the anny body model (cached once per machine), its coarse reconstruction mesh, LBS;
- ``pose``: named pose sliders and presets → bone transforms;
- ``gom``: coupled multi-resolution Gaussians-on-Mesh (subdivision, Steiner frames, per-face params);
- ``visibility``: which vertices each camera sees (open3d ray casting);
- ``network``: the reconstructor (small CNN, view attention, vertex attention, feedback iterations), sized
  for a CPU; its embedded checkpoint is trained by ``training/avatar_reconstructor.py`` (``assets/avatar-embedded``);
- ``lifegom_published``: the authors' published network, taking their checkpoint's state-dict names;
- ``render``: Gaussian splatting (pure torch, differentiable; gsplat on CUDA when installed); ``render_fast``:
  the compiled CPU tile renderer for display; ``render_common``: what both share;
- ``export``: Gaussians as 3DGS ``.ply`` (read back too) and ``.splat``, the files the vendored Spark viewer opens;
- ``outputs``, ``uploads``, ``viewer``: the files a run writes, the user's own views, the browser viewer's payload;
- ``data``: ground-truth views of synthetic people (open3d ray casting, procedural clothes);
- ``smplx``: SMPL-X read from the user's own model file, posed with the same sliders;
- ``models``: the registered models (the embedded reconstructor, anny; SMPL-X when the user supplies it).
"""
