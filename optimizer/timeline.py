"""The timeline of an evaluated schedule, for the GUI's Gantt view.

Layers run one after another (the cost model has no overlap between layers); a fused group of
consecutive layers runs as one unit.  Each unit lasts its layers' summed roofline cycles and
occupies two rows from its start: the compute row for the systolic array's busy time
(MACs / PEs used) and the DMA row for its DRAM traffic (DRAM words / DRAM bandwidth).  The
longer of the two (or an on-chip level) sets the unit's length.  A fused group whose layers
are not consecutive (another layer runs in between) appears as several units with the same
group id.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from optimizer.costmodel import ScheduleResult
from optimizer.hardware import GemminiHardware


@dataclass
class TimelineUnit:
    """One layer or fused run of layers: its span and its compute and DMA intervals
    (cycles from the start of the network)."""

    name: str
    layers: list[str]
    group: int
    start: float
    end: float
    compute_start: float
    compute_end: float
    dma_start: float
    dma_end: float
    bound: str                  # what sets the length: compute, dram or on-chip

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["compute"] = {"start": self.compute_start, "end": self.compute_end}
        out["dma"] = {"start": self.dma_start, "end": self.dma_end}
        for key in ("compute_start", "compute_end", "dma_start", "dma_end"):
            del out[key]
        return out


def build_timeline(result: ScheduleResult, hw: GemminiHardware) -> list[TimelineUnit]:
    """Units in execution order (see the module docstring)."""
    runs: list[list[int]] = []
    for i, layer in enumerate(result.layers):
        if runs and result.layers[runs[-1][-1]].group == layer.group:
            runs[-1].append(i)
        else:
            runs.append([i])
    units, t = [], 0.0
    for run in runs:
        layers = [result.layers[i] for i in run]
        span = sum(x.cycles for x in layers)
        compute = sum(x.compute_cycles for x in layers)
        dma = sum((x.dram_reads + x.dram_writes) / hw.dram_bw for x in layers)
        bound = "compute" if compute >= span * (1 - 1e-9) else \
            "dram" if dma >= span * (1 - 1e-9) else "on-chip"
        name = layers[0].name if len(layers) == 1 else f"{layers[0].name}..{layers[-1].name}"
        units.append(TimelineUnit(name, [x.name for x in layers], layers[0].group, t, t + span,
                                  t, t + compute, t, t + dma, bound))
        t += span
    return units
