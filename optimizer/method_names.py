"""The search methods' names, declared once, importable without torch.

The command line's ``--method`` choices (``main.py``, whose ``--help`` must stay fast) and the
method registry (:mod:`optimizer.methods`, which imports the cost model and so torch) both read
this tuple.
"""
from __future__ import annotations

#: What the CLI offers and the registry must provide, in the order help and tables show them.
ALL_METHODS: tuple[str, ...] = ("fadiff", "ga", "bo", "random", "dosa")
