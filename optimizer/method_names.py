"""The search methods' names and the cost model's fused-input rules, declared once,
importable without torch.

The command line's ``--method`` and ``--fused-halo`` choices (``main.py``, whose ``--help``
must stay fast), the GUI's optimiser job and the method registry and cost model
(:mod:`optimizer.methods`, :mod:`optimizer.costmodel`, which import torch) read these.
"""
from __future__ import annotations

#: What the CLI offers and the registry must provide, in the order help and tables show them.
ALL_METHODS: tuple[str, ...] = ("fadiff", "ga", "bo", "random", "dosa")
#: Reference rows of a comparison (``compare``), not search methods: "refine-only" is the
#: shared refinement stage alone, from the trivial schedule, with the whole budget.
REFERENCE_METHODS: tuple[str, ...] = ("refine-only",)
#: The rules for a fused group's first layer's Inputs (optimizer.costmodel's docstring, "Halo
#: re-fetch"): "refetch" each DRAM tile fetches its input window with its halo (Stream,
#: Gemmini's tiled convolutions); "slide" the window slides across the tiles (Timeloop's rule).
FUSED_HALO_RULES: tuple[str, ...] = ("refetch", "slide")
#: The default rule.
DEFAULT_FUSED_HALO = "refetch"
