"""Which DRAM energy the optimiser's objective prices, for ``optimize``, ``compare`` and
``evaluate``: the hardware file's flat per-byte energy (``e_dram_read`` / ``e_dram_write``,
Timeloop/DOSA style; no background or refresh), or with ``--memory`` the DRAM term of one
memory config (:class:`~optimizer.dram_model.DramAwareHardware`: background and refresh over
the schedule's cycles, data and ACT energy per line, calibrated on the engine, as ``cosim``
prices it before any refit).

:func:`objective_json` records the choice in output files; :func:`objective_mismatch` tells
``evaluate`` whether a saved schedule's EDP was priced the same way."""
from __future__ import annotations

import logging
from typing import Any, Callable

from optimizer.hardware import GemminiHardware

log = logging.getLogger(__name__)

DEFAULT_LAYOUT = "nhwc"          # the DRAM term's tensor layout (as cosim's default)
DEFAULT_ACC_GHZ = 1.0            # accelerator clock that converts to memory cycles


def objective_hardware(hw: GemminiHardware, memory: str | None, *,
                       layout: str = DEFAULT_LAYOUT, acc_ghz: float = DEFAULT_ACC_GHZ,
                       cache_dir: Any = None,
                       progress: Callable[[str], None] | None = None) -> GemminiHardware:
    """``hw`` unchanged without ``memory``; otherwise ``hw`` with the calibrated DRAM term of
    ``memory`` (a preset name, ``NAME-<n>ch`` or a config file, as ``cosim --memory``): the
    first use of a memory config calibrates it on the engine (~5 CPU-s) and caches it."""
    if memory is None:
        return hw
    from optimizer.cosim import dram_hardware, load_memory
    cfg = load_memory(memory)
    return dram_hardware(hw, cfg, layout=layout, acc_ghz=acc_ghz, cache_dir=cache_dir,
                         progress=progress)


def base_hardware(hw: GemminiHardware) -> GemminiHardware:
    """The hardware file behind ``hw`` (a DramAwareHardware's fields but its DRAM term, and
    its own name)."""
    term = getattr(hw, "dram", None)
    if term is None:
        return hw
    base = {f: getattr(hw, f) for f in GemminiHardware.__dataclass_fields__}
    suffix = f"+{term.memory}"
    if base["name"].endswith(suffix):
        base["name"] = base["name"][:-len(suffix)]
    return GemminiHardware(**base)


def objective_json(hw: GemminiHardware) -> dict[str, Any]:
    """What the objective's DRAM energy is, for output files: ``{"model": "per-byte",
    "read_pj_per_byte", "write_pj_per_byte"}`` or ``{"model": "term", "memory",
    "config_hash", "layout", "mem_cycles_per_acc_cycle", "scales"}``."""
    term = getattr(hw, "dram", None)
    if term is None:
        return {"model": "per-byte", "read_pj_per_byte": hw.e_dram_read,
                "write_pj_per_byte": hw.e_dram_write}
    return {"model": "term", "memory": term.memory, "config_hash": term.config_hash,
            "layout": term.layout, "mem_cycles_per_acc_cycle": term.mem_per_acc,
            "scales": term.scales()}


def _key(obj: dict[str, Any] | None) -> tuple:
    """What makes two objectives price DRAM alike (a memory's name aside: the config hash
    names its numbers)."""
    if obj is None:
        obj = {"model": "per-byte"}     # files from before the option: all per byte
    if obj.get("model") != "term":
        return ("per-byte", obj.get("read_pj_per_byte"), obj.get("write_pj_per_byte"))
    return ("term", obj.get("config_hash"), obj.get("layout"),
            obj.get("mem_cycles_per_acc_cycle"),
            tuple(sorted((obj.get("scales") or {}).items())))


def describe(obj: dict[str, Any] | None) -> str:
    """A short name of an objective: 'per-byte DRAM' or 'DRAM term of LPDDR4-3200'."""
    if obj is None or obj.get("model") != "term":
        return "per-byte DRAM"
    return f"DRAM term of {obj.get('memory')}"


def objective_mismatch(saved: dict[str, Any] | None, now: dict[str, Any]) -> str | None:
    """None when a schedule saved under ``saved`` (None: a file from before ``--memory``,
    priced per byte) is scored the same way as ``now``; otherwise what differs."""
    a, b = _key(saved), _key(now)
    if a[0] == "per-byte" and b[0] == "per-byte":
        # per-byte figures are part of the hardware file, compared with it
        return None
    if a == b:
        return None
    return f"DRAM objective {describe(saved)}"


def per_byte_note(hw: GemminiHardware) -> str:
    """The one line that says how the objective prices DRAM without ``--memory``."""
    rd, wr = hw.e_dram_read, hw.e_dram_write
    rate = f"{rd:g} pJ/B" if rd == wr else f"{rd:g} pJ/B read, {wr:g} pJ/B write"
    return (f"note: DRAM energy is per byte ({rate}, the hardware file's; no background or "
            f"refresh); --memory PRESET prices it as the engine does")


def term_line(hw: GemminiHardware) -> str:
    """The header line of a run under a memory's DRAM term."""
    term = hw.dram
    return (f"DRAM energy: the DRAM term of {term.memory} ({term.layout}; background and "
            f"refresh over the schedule's cycles, data and ACT energy per line, calibrated "
            f"on the engine)")


__all__ = ["base_hardware", "describe", "objective_hardware", "objective_json",
           "objective_mismatch", "per_byte_note", "term_line"]
