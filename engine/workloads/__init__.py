"""Workloads: DRAM request traces of deep-learning training steps, captured from real
PyTorch models (DDPM, latent-diffusion SR, trajectory DiT, ResNet-50).

PyTorch is imported by the modules of this package only, never by ``engine`` itself, so
the engine and the GUI start without it.  Entry point: :func:`engine.workloads.generate.
generate_trace`; command line: ``python main.py trace``.

Modules: ``models/`` (the networks), ``registry`` (workloads and their training steps),
``capture`` (dispatch-level recording of one step), ``allocator`` (addresses),
``expand`` (operators to 64-byte requests; their size in ``lines``), ``cache`` (on-chip cache filter), ``timing``
(accelerator compute model), ``generate`` (the pipeline and the HDF5 writer), ``report``
(text summary).
"""
