"""Energy of a run as a tree for the flame-graph view (no Qt).

Two hierarchies, both built from what ``Stats`` (or a stored run) holds:

* :func:`by_location`: total → channel → rank → bank, from ``per_bank["energy_pJ"]`` (core
  energy; see ``engine.power.compute_energy`` for how rank-level energy is shared among banks),
  plus an ``IO`` node (interface energy, not attributable to a bank).
* :func:`by_cause`: total → cause → bank, from ``summary["energy_by_cause"]``.  ``data`` is
  split over banks exactly (read and write energy per command are constant: the read energy in
  proportion to each bank's reads, the write energy to its writes); ``row_conflict`` and
  ``row_miss`` (ACT energy) in proportion to each bank's row conflicts and row misses, an
  attribution; ``refresh``, ``background`` and ``io`` are rank or interface energy and get no
  bank children.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

MODES = ("location", "cause")
CAUSES = ("row_conflict", "row_miss", "data", "refresh", "background", "io")


@dataclass
class EnergyNode:
    """One box of the flame graph: ``value`` pJ, children that sum to at most ``value``."""

    name: str
    value: float
    children: list[EnergyNode] = field(default_factory=list)
    note: str = ""

    def walk(self, depth: int = 0, path: tuple[str, ...] = ()) -> Iterator[
            tuple[int, tuple[str, ...], EnergyNode]]:
        """(depth, path of names, node) for this node and every descendant, depth first."""
        here = path + (self.name,)
        yield depth, here, self
        for c in self.children:
            yield from c.walk(depth + 1, here)

    def depth(self) -> int:
        return 1 + max((c.depth() for c in self.children), default=0)


def _banks(per_bank: dict[str, Any], key: str) -> np.ndarray | None:
    arr = per_bank.get(key)
    if arr is None:
        return None
    a = np.asarray(arr, dtype=np.float64)
    return a.reshape(1, 1, -1) if a.ndim == 1 else a.reshape(a.shape[0], -1, a.shape[-1])


def _bank_name(ch: int, rk: int, bk: int) -> str:
    return f"ch{ch}/r{rk}/b{bk}"


def _io_energy(summary: dict[str, Any]) -> float:
    cause = summary.get("energy_by_cause") or {}
    for v in (cause.get("io"), summary.get("io_energy")):
        if v is not None:
            return float(v)
    return 0.0


def by_location(summary: dict[str, Any], per_bank: dict[str, Any]) -> EnergyNode:
    """total → channel → rank → bank (+ IO); empty root when there is no per-bank energy."""
    e = _banks(per_bank, "energy_pJ")
    io = _io_energy(summary)
    root = EnergyNode("total", 0.0)
    if e is not None:
        for ch in range(e.shape[0]):
            cn = EnergyNode(f"ch{ch}", float(e[ch].sum()))
            for rk in range(e.shape[1]):
                rn = EnergyNode(f"ch{ch}/r{rk}", float(e[ch, rk].sum()))
                rn.children = [EnergyNode(_bank_name(ch, rk, b), float(e[ch, rk, b]))
                               for b in range(e.shape[2])]
                cn.children.append(rn)
            root.children.append(cn)
    if io > 0:
        root.children.append(EnergyNode("IO", io, note="interface energy, not per bank"))
    root.value = sum(c.value for c in root.children)
    return root


def _split(name: str, total: float, weights: np.ndarray | None, note: str) -> EnergyNode:
    node = EnergyNode(name, total, note=note)
    if weights is None or total <= 0:
        return node
    w = np.clip(weights, 0.0, None)
    s = float(w.sum())
    if s <= 0:
        return node
    for ch in range(w.shape[0]):
        for rk in range(w.shape[1]):
            for b in range(w.shape[2]):
                if w[ch, rk, b] > 0:
                    node.children.append(EnergyNode(_bank_name(ch, rk, b),
                                                    total * float(w[ch, rk, b]) / s))
    return node


def by_cause(summary: dict[str, Any], per_bank: dict[str, Any]) -> EnergyNode:
    """total → cause → bank (see the module docstring for the bank split of each cause)."""
    causes = summary.get("energy_by_cause") or {}
    root = EnergyNode("total", 0.0)
    reads, writes = _banks(per_bank, "reads"), _banks(per_bank, "writes")
    for cause in CAUSES:
        value = float(causes.get(cause, 0.0) or 0.0)
        if value <= 0:
            continue
        if cause == "data" and reads is not None and writes is not None:
            rd = float(summary.get("read_energy", 0.0) or 0.0)
            wr = float(summary.get("write_energy", 0.0) or 0.0)
            if rd + wr <= 0:                     # no component split: by command counts
                rd, wr = float(reads.sum()), float(writes.sum())
            per = np.zeros_like(reads)
            if reads.sum() > 0:
                per += rd * reads / reads.sum()
            if writes.sum() > 0:
                per += wr * writes / writes.sum()
            node = _split("data", value, per, "core read + write energy; split over banks "
                          "by their reads and writes")
        elif cause == "row_conflict":
            node = _split(cause, value, _banks(per_bank, "row_conflicts"),
                          "ACT energy of row conflicts; split over banks by their conflicts")
        elif cause == "row_miss":
            node = _split(cause, value, _banks(per_bank, "row_misses"),
                          "ACT energy of row misses; split over banks by their misses")
        else:
            node = EnergyNode(cause, value, note={
                "refresh": "rank-level refresh energy, not per bank",
                "background": "standby energy, not per bank",
                "io": "interface energy, not per bank"}.get(cause, ""))
        root.children.append(node)
    root.value = sum(c.value for c in root.children)
    return root


def build(mode: str, summary: dict[str, Any], per_bank: dict[str, Any]) -> EnergyNode:
    """The tree for ``mode`` ("location" or "cause")."""
    if mode == "location":
        return by_location(summary, per_bank)
    if mode == "cause":
        return by_cause(summary, per_bank)
    raise ValueError(f"unknown energy view mode {mode!r}; expected one of {', '.join(MODES)}")


@dataclass(frozen=True)
class Box:
    """A laid-out node: x from ``x0`` to ``x0 + width`` (pJ), row ``depth``."""

    x0: float
    width: float
    depth: int
    path: tuple[str, ...]
    node: EnergyNode


def layout(root: EnergyNode) -> list[Box]:
    """Flame-graph boxes: each child starts where its previous sibling ended."""
    boxes: list[Box] = []

    def place(node: EnergyNode, x0: float, depth: int, path: tuple[str, ...]) -> None:
        here = path + (node.name,)
        boxes.append(Box(x0, node.value, depth, here, node))
        x = x0
        for c in node.children:
            place(c, x, depth + 1, here)
            x += c.value

    place(root, 0.0, 0, ())
    return boxes
