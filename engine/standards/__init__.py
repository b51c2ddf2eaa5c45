"""DRAM standards as data: one module per standard, and the registry that finds them.

``engine.config`` (protocol names, burst and column derivations), ``engine.timing`` (the
kernel's timing tables), ``engine.jedec_check`` (the rules it checks) and ``engine.power``
(the IDD mapping) read a :class:`~engine.standards.base.Standard` from :func:`get`.
Adding a standard means adding its module here, its presets and its tests.
"""
from __future__ import annotations

from . import (ddr3, ddr4, ddr5, gddr5, gddr5x, gddr6, hbm, hbm2, hbm3, hmc, lpddr, lpddr3,
               lpddr4, lpddr5)
from .base import Standard

_MODULES = (ddr3, ddr4, ddr5, gddr5, gddr5x, gddr6, lpddr, lpddr3, lpddr4, lpddr5, hbm, hbm2,
            hbm3, hmc)
STANDARDS: dict[str, Standard] = {m.STANDARD.name: m.STANDARD for m in _MODULES}
#: Every protocol name a configuration may give.
PROTOCOLS: tuple[str, ...] = tuple(STANDARDS)


def get(protocol: str) -> Standard:
    """The standard named ``protocol`` (case-insensitive); KeyError naming the choices."""
    std = STANDARDS.get(str(protocol).upper())
    if std is None:
        raise KeyError(f"unknown DRAM standard {protocol!r}; expected one of "
                       f"{', '.join(PROTOCOLS)}")
    return std


def find(protocol: str) -> Standard | None:
    """The standard named ``protocol``, or None."""
    return STANDARDS.get(str(protocol).upper())


__all__ = ["PROTOCOLS", "STANDARDS", "Standard", "find", "get"]
