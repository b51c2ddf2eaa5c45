"""Score the explicit mappings of a Timeloop/Accelergy reference file with our cost model.

The input is a file in the format of ``../shared/reference/costmodel/reference.json``: an
``architectures`` table (PE array, levels, per-word energies) and ``entries``, each with an
``arch``, the layer (``layer_dims`` or ``dims``, ``stride``; its kind in ``layer_kind`` or, as
in ``mapper_peers.json``, ``kind``: dense, depthwise or matmul) and a ``mapping`` in the
tool-neutral notation.  The output mirrors the reference's ``results``: cycles, energy,
EDP, energy per level and per-level, per-tensor ``reads_total``/``fills_total``/
``updates_total`` — our figures, computed with the file's own architecture and energies.
This is how the cost model is validated (``benchmarks/validate_costmodel.py``) and how users
bring Timeloop mappings in.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import torch

from optimizer.costmodel import (LayerBatch, MappingTensors, evaluate_schedule, layer_costs,
                                 level_counts)
from optimizer.errors import MappingError, OptimizerError, read_json
from optimizer.hardware import GemminiHardware, from_reference_arch
from optimizer.mapping import LayerMapping, Schedule
from optimizer.workload import DIMS, Layer, Network

KIND_MAP = {"dense": "conv", "conv": "conv", "gemm": "gemm", "fc": "gemm",
            "depthwise": "depthwise", "matmul": "matmul"}
ENTRY_KINDS = ("explicit_mapping",)     # reference.json's entry kinds that hold a mapping


class ReferenceError(OptimizerError):
    """A reference file or one of its entries is malformed."""


def load_reference(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    data = read_json(path, ReferenceError)
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise ReferenceError(f"{path}: expected an object with an 'entries' list (the format "
                             "of reference.json)")
    return data


def architectures(data: dict[str, Any], path: Path | None = None,
                  fallback: str | Path | None = None) -> dict[str, GemminiHardware]:
    """The file's architectures as hardware; when the file only names them (mapper_peers.json
    says "exactly as reference.json"), they are read from ``fallback`` or, by default, from a
    ``reference.json`` beside the file."""
    arch = data.get("architectures")
    source = str(path) if path else "reference"
    if not isinstance(arch, dict):
        other = Path(fallback) if fallback else (path.parent / "reference.json" if path
                                                 else None)
        if other is None or not other.exists():
            raise ReferenceError(f"{source}: 'architectures' is not a table of architectures "
                                 "and no reference.json with them was found (give one)")
        arch = load_reference(other).get("architectures")
        source = str(other)
        if not isinstance(arch, dict):
            raise ReferenceError(f"{source}: 'architectures' is not a table")
    return {name: from_reference_arch(name, a, source=source) for name, a in arch.items()}


def entry_layer(entry: dict[str, Any], data: dict[str, Any], where: str) -> Layer:
    """The single layer of an entry (dims, stride, kind)."""
    dims_in = entry.get("layer_dims") or entry.get("dims")
    if dims_in is None and isinstance(data.get("layers"), dict):
        dims_in = data["layers"].get(entry.get("layer"))
    if not isinstance(dims_in, dict):
        raise ReferenceError(f"{where}: no layer dimensions (layer_dims or dims)")
    kind_text = entry.get("layer_kind") or entry.get("kind")
    kind = KIND_MAP.get(str(kind_text), "conv")
    try:
        dims = {d: int(dims_in.get(d, 1)) for d in DIMS}
        stride = int(dims_in.get("stride", entry.get("stride", 1)))
    except (TypeError, ValueError):
        raise ReferenceError(f"{where}: layer dimensions must be integers") from None
    if any(v < 1 for v in dims.values()) or stride < 1:
        raise ReferenceError(f"{where}: layer dimensions and stride must be positive")
    return Layer(str(entry.get("layer") or entry.get("shape_id") or "layer"), kind, dims,
                 stride)


def score_entry(entry: dict[str, Any], data: dict[str, Any],
                hardware: dict[str, GemminiHardware], where: str) -> dict[str, Any]:
    """Our ``results`` for one entry with a mapping."""
    arch = entry.get("arch")
    if arch not in hardware:
        raise ReferenceError(f"{where}: unknown arch {arch!r} (architectures: "
                             f"{', '.join(hardware)})")
    hw = hardware[arch]
    layer = entry_layer(entry, data, where)
    mapping = LayerMapping.from_notation(entry.get("mapping"), f"{where}: mapping")
    net = Network(layer.name, [layer])
    res = evaluate_schedule(net, Schedule(net.name, {layer.name: mapping}), hw)
    with torch.no_grad():
        c = layer_costs(LayerBatch.from_network(net), MappingTensors.from_mappings([mapping]))
    counts = level_counts(c, 0)
    lr = res.layers[0]
    return {
        "valid": res.valid, "problems": res.problems, "macs": lr.macs,
        "cycles": lr.cycles, "utilization": lr.utilization, "energy_pJ": lr.energy_pj,
        "edp_pJ_x_cycles": lr.cycles * lr.energy_pj,
        "energy_breakdown_pJ": dict(lr.energy_parts),
        "per_level": {level: {"tensors": tensors} for level, tensors in counts.items()},
    }


def mapping_entries(data: dict[str, Any], *, kinds: Iterable[str] | None = ENTRY_KINDS
                    ) -> list[dict[str, Any]]:
    """Entries with a mapping (``kinds``: entry kinds to keep; None keeps every entry with a
    mapping, as in mapper_peers.json whose ``kind`` is the layer kind)."""
    out = []
    for e in data.get("entries", []):
        if not isinstance(e, dict) or not isinstance(e.get("mapping"), dict):
            continue
        if kinds is not None and e.get("kind") not in kinds and e.get("kind") not in KIND_MAP:
            continue
        out.append(e)
    return out


def score_reference(path: str | Path, *, arch_file: str | Path | None = None
                    ) -> dict[str, dict[str, Any]]:
    """``{entry id: {"results": ...}}`` for every explicit-mapping entry of the file (and,
    in a mapper-peers file, every entry with a mapping)."""
    path = Path(path)
    data = load_reference(path)
    hardware = architectures(data, path, arch_file)
    out: dict[str, dict[str, Any]] = {}
    for k, entry in enumerate(mapping_entries(data)):
        eid = str(entry.get("id", f"entries[{k}]"))
        try:
            out[eid] = {"results": score_entry(entry, data, hardware, f"{path}: {eid}")}
        except MappingError as exc:
            raise ReferenceError(str(exc)) from None
    if not out:
        raise ReferenceError(f"{path}: no entry with an explicit mapping")
    return out
