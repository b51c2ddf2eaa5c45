"""Mappings and schedules in one tool-neutral notation (the one of the Timeloop reference).

A layer's mapping fixes, for each of the 7 loop dimensions (N K C P Q R S), its temporal
factor at each memory level (DRAM, Scratchpad, Accumulator, Registers), the loop order within
each level, and the two spatial factors of the systolic array: K across PE columns (below the
scratchpad) and C across PE rows (below each accumulator slice).  The full loop nest is

    DRAM temporal -> Scratchpad temporal -> spatial K (columns) -> Accumulator temporal
                  -> spatial C (rows) -> Registers temporal -> MAC

A schedule is a network's mappings plus the set of fused producer->consumer edges.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optimizer.errors import MappingError, read_json
from optimizer.method_names import FUSED_HALO_RULES
from optimizer.workload import DIMS, Layer

LEVELS = ("DRAM", "Scratchpad", "Accumulator", "Registers")
DEFAULT_ORDER = DIMS


def _whole(v: Any, what: str) -> int:
    """A loop factor as JSON gives it: an integer (int("2") took a string and int(2.7) made
    it 2 without a word)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise MappingError(f"{what} = {v!r}: expected a whole number")
    return v


@dataclass
class LayerMapping:
    """Factors ``temporal[level][dim]`` (levels outer to inner), loop orders
    ``orders[level]`` (all 7 dims, outermost first) and the spatial unrolling."""

    temporal: list[dict[str, int]]
    orders: list[tuple[str, ...]]
    spatial_k: int = 1
    spatial_c: int = 1

    def factor(self, level: int, dim: str) -> int:
        return self.temporal[level][dim]

    def check(self, layer: Layer) -> None:
        """Raise MappingError unless the factors multiply to the layer's dimensions."""
        for d in DIMS:
            total = math.prod(self.temporal[lv][d] for lv in range(4))
            total *= self.spatial_k if d == "K" else 1
            total *= self.spatial_c if d == "C" else 1
            if total != layer.dims[d]:
                raise MappingError(f"layer '{layer.name}': factors of {d} multiply to {total}, "
                                   f"expected {layer.dims[d]}")
        for lv, order in enumerate(self.orders):
            if sorted(order) != sorted(DIMS):
                raise MappingError(f"layer '{layer.name}': loop order at {LEVELS[lv]} must "
                                   f"list each of {''.join(DIMS)} once, got {order}")

    # ---- the reference notation -----------------------------------------------------------
    def to_notation(self) -> dict[str, Any]:
        return {"temporal": {LEVELS[lv]: {"factors": dict(self.temporal[lv]),
                                          "order_outer_to_inner": list(self.orders[lv])}
                             for lv in range(4)},
                "spatial": {"Scratchpad": {"factors": {"K": self.spatial_k}},
                            "Accumulator": {"factors": {"C": self.spatial_c}}}}

    @classmethod
    def from_notation(cls, data: Any, where: str = "mapping") -> "LayerMapping":
        """Parse the tool-neutral notation of reference.json (``temporal``/``spatial``)."""
        try:
            temporal, orders = [], []
            for lv in LEVELS:
                entry = data["temporal"][lv]
                factors = {d: _whole(entry["factors"].get(d, 1), f"{where}: {lv} factor {d}")
                           for d in DIMS}
                if any(v < 1 for v in factors.values()):
                    raise MappingError(f"{where}: factors at {lv} must be positive")
                order = tuple(entry.get("order_outer_to_inner", DEFAULT_ORDER))
                temporal.append(factors)
                orders.append(order)
            spatial = data.get("spatial", {})
            sk = spatial.get("Scratchpad", {}).get("factors", {})
            sc = spatial.get("Accumulator", {}).get("factors", {})
            if set(sk) - {"K"} and any(v != 1 for d, v in sk.items() if d != "K"):
                raise MappingError(f"{where}: only K may be unrolled across PE columns "
                                   f"(spatial.Scratchpad), got {sk}")
            if set(sc) - {"C"} and any(v != 1 for d, v in sc.items() if d != "C"):
                raise MappingError(f"{where}: only C may be unrolled across PE rows "
                                   f"(spatial.Accumulator), got {sc}")
            return cls(temporal, orders, _whole(sk.get("K", 1), f"{where}: spatial K"),
                       _whole(sc.get("C", 1), f"{where}: spatial C"))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise MappingError(f"{where}: malformed mapping ({exc!r}); expected temporal."
                               "<DRAM|Scratchpad|Accumulator|Registers>.factors and spatial "
                               "as in reference.json") from None

    def describe(self) -> str:
        """One line per level, e.g. ``DRAM: K8 | SP: - | cols K16 | ACC: C8 R3 S3 P28 Q28``."""
        parts = []
        for lv, name in enumerate(("DRAM", "SP", "ACC", "REG")):
            loops = " ".join(f"{d}{self.temporal[lv][d]}" for d in self.orders[lv]
                             if self.temporal[lv][d] > 1) or "-"
            parts.append(f"{name}: {loops}")
            if lv == 1:
                parts.append(f"cols K{self.spatial_k}")
            if lv == 2:
                parts.append(f"rows C{self.spatial_c}")
        return " | ".join(parts)


@dataclass
class Schedule:
    """A network's schedule: one mapping per layer and the fused edges (producer, consumer
    layer names)."""

    network: str
    mappings: dict[str, LayerMapping]
    fused: list[tuple[str, str]] = field(default_factory=list)
    method: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"network": self.network, "method": self.method,
                "fused_edges": [list(e) for e in self.fused],
                "layers": {name: m.to_notation() for name, m in self.mappings.items()},
                "meta": self.meta}

    @classmethod
    def from_json(cls, data: Any, path: Path | None = None) -> "Schedule":
        where = str(path) if path is not None else "schedule"
        if not isinstance(data, dict):
            raise MappingError(f"{where}: expected a JSON object")
        sched = data.get("schedule", data)
        if not isinstance(sched, dict):
            raise MappingError(f"{where}: 'schedule' must be a JSON object")
        layers = sched.get("layers")
        if isinstance(layers, list):      # our output format: list of per-layer records
            try:
                layers = {entry["name"]: entry["mapping"] for entry in layers}
            except (KeyError, TypeError):
                raise MappingError(f"{where}: each entry of 'layers' needs 'name' and "
                                   "'mapping'") from None
        if not isinstance(layers, dict):
            raise MappingError(f"{where}: expected 'layers' (layer name -> mapping)")
        mappings = {name: LayerMapping.from_notation(m, f"{where}: layer '{name}'")
                    for name, m in layers.items()}
        raw_fused = sched.get("fused_edges", [])
        if not isinstance(raw_fused, list) or not all(
                isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e)
                for e in raw_fused):
            raise MappingError(f"{where}: 'fused_edges' must be a list of [producer, "
                               f"consumer] layer-name pairs")
        fused = [(a, b) for a, b in raw_fused]
        unknown = sorted({x for e in fused for x in e} - set(mappings))
        if unknown:
            raise MappingError(f"{where}: 'fused_edges' names layer(s) with no mapping: "
                               f"{', '.join(repr(u) for u in unknown[:5])}")
        meta = sched.get("meta", {})
        if not isinstance(meta, dict):
            raise MappingError(f"{where}: 'meta' must be a JSON object")
        return cls(str(sched.get("network", data.get("network", ""))), mappings,
                   fused, str(sched.get("method", "")), dict(meta))


def load_schedule(path: str | Path) -> Schedule:
    path = Path(path)
    return Schedule.from_json(read_json(path, MappingError), path)


@dataclass
class SavedRun:
    """What a schedule file written by ``optimize`` says of the run that found it, beside the
    schedule: the settings its score depends on (batch, fused-input rule, the network's file
    when it was not a built-in one) and the score itself (EDP in pJ x cycles, on the
    hardware ``hardware_config``, its DRAM energy priced as ``dram_objective`` says: see
    :func:`optimizer.dram_objective.objective_json`). Older files and hand-written ones lack
    some: None, batch 1 (no ``dram_objective``: per byte, the only objective before it)."""

    batch: int = 1
    fused_halo: str | None = None
    network_file: str | None = None
    edp: float | None = None
    hardware_config: dict[str, Any] | None = None
    dram_objective: dict[str, Any] | None = None


def load_saved_schedule(path: str | Path) -> tuple[Schedule, SavedRun]:
    """A schedule file and what it says of its run (:class:`SavedRun`); a present key of
    the wrong type is a MappingError naming it."""
    path = Path(path)
    data = read_json(path, MappingError)
    sched = Schedule.from_json(data, path)
    top = data if isinstance(data, dict) else {}

    def get(key: str, kinds: tuple[type, ...], what: str) -> Any:
        v = top.get(key)
        if v is not None and (not isinstance(v, kinds) or isinstance(v, bool)):
            raise MappingError(f"{path}: '{key}' = {v!r}: expected {what}")
        return v
    batch = get("batch", (int,), "a positive integer")
    if batch is not None and batch < 1:
        raise MappingError(f"{path}: 'batch' = {batch}: expected a positive integer")
    halo = get("fused_halo", (str,), f"one of {', '.join(FUSED_HALO_RULES)}")
    if halo is not None and halo not in FUSED_HALO_RULES:
        raise MappingError(f"{path}: 'fused_halo' = {halo!r}: expected one of "
                           f"{', '.join(FUSED_HALO_RULES)}")
    edp = get("edp", (int, float), "a number (pJ x cycles)")
    return sched, SavedRun(batch or 1, halo, get("network_file", (str,), "a file's path"),
                           None if edp is None else float(edp),
                           get("hardware_config", (dict,), "a JSON object"),
                           get("dram_objective", (dict,), "a JSON object"))
