"""The engine side of the optimiser view's "Co-simulate on DRAM": runs in a child process (no
Qt), for the reason given in :mod:`gui.sim_process` (the numba kernel holds the GIL).

Messages to the parent (tuples, first item the kind)::

    ("layer", name)                 the layer now being simulated
    ("finished", payload)           see :func:`cosim_payload`
    ("failed", message, traceback)

The per-bank heatmap counts the schedule's DRAM requests per bank in time bins, by decoding
each request's address with the memory's address mapping (the same fields and flattening
as the engine: channel, rank, bank group, bank).  Its time axis is the schedule's issue time
in accelerator cycles, the unit of the Gantt chart, so the two line up on one axis.
Everything crosses the pipe pickled, between two processes of this program only.
"""
from __future__ import annotations

import traceback
from typing import Any

import numpy as np


def bank_index(memory: Any, addr: np.ndarray) -> np.ndarray:
    """Flat bank index (channel, rank, bank group, bank; the engine's per-bank order) of each
    byte address under ``memory``'s address mapping, XOR bank interleave included (the
    engine's one decoder, engine.address)."""
    from engine.address import bank_index as _bank_index
    return _bank_index(memory, addr)


def bank_activity(layer_traces: Any, memory: Any, total_cycles: float,
                  bins: int = 200) -> dict[str, Any]:
    """Requests per bank per time bin: ``counts[bank, bin]`` (reads + writes), ``reads``,
    ``writes`` the same split, ``edges`` the bins' edges in accelerator cycles."""
    n_banks = int(memory.channels) * int(memory.ranks) * int(memory.banks)
    total = max(float(total_cycles), 1.0)
    edges = np.linspace(0.0, total, bins + 1)
    reads = np.zeros((n_banks, bins), dtype=np.int64)
    writes = np.zeros((n_banks, bins), dtype=np.int64)
    for lt in layer_traces:
        if len(lt.addr) == 0:
            continue
        b = bank_index(memory, lt.addr)
        t = np.clip((np.asarray(lt.time, dtype=np.float64) / total * bins).astype(np.int64),
                    0, bins - 1)
        w = np.asarray(lt.is_write, dtype=bool)
        np.add.at(reads, (b[~w], t[~w]), 1)
        np.add.at(writes, (b[w], t[w]), 1)
    return {"counts": reads + writes, "reads": reads, "writes": writes, "edges": edges}


def cosim_payload(net: Any, sched: Any, hw: Any, memory_spec: str, layout: str = "nhwc",
                  placement: str = "packed", bins: int = 200,
                  progress: Any = None) -> dict[str, Any]:
    """Co-simulate and measure bank activity: ``{"memory", "cosim" (CosimResult.to_json()),
    "banks" (bank_activity), "n_banks", "total_cycles"}``."""
    from optimizer.costmodel import evaluate_schedule
    from optimizer.cosim import cosimulate, load_memory
    from optimizer.dma_trace import Placement, schedule_requests

    memory = load_memory(memory_spec)
    result = evaluate_schedule(net, sched, hw)
    cs = cosimulate(net, sched, hw, memory, layout=layout, placement=placement,
                    result=result, progress=progress)
    place = Placement(net, layout, placement, block=hw.cols)
    total = float(sum(lr.cycles for lr in result.layers))
    banks = bank_activity(schedule_requests(net, sched, result, place), memory, total, bins)
    return {"memory": memory.name, "cosim": cs.to_json(), "banks": banks,
            "n_banks": int(banks["counts"].shape[0]), "total_cycles": total,
            "banks_per_channel": int(memory.ranks) * int(memory.banks)}


#: A stored co-simulation keeps at most this many per-bank cells (reads + writes): time bins
#: are merged to fit, so the record stays a small project attribute.
MAX_STORED_CELLS = 6000


def storable_payload(payload: dict[str, Any], max_cells: int = MAX_STORED_CELLS
                     ) -> dict[str, Any]:
    """A co-simulation payload as plain JSON data for the project (with the optimiser run):
    the per-layer records as they are, the per-bank histograms with neighbouring time bins
    summed until reads + writes fit in ``max_cells`` numbers."""
    banks = payload["banks"]
    reads = np.asarray(banks["reads"], dtype=np.int64)
    writes = np.asarray(banks["writes"], dtype=np.int64)
    edges = np.asarray(banks["edges"], dtype=np.float64)
    n, bins = reads.shape if reads.ndim == 2 else (0, 0)
    merge = 1
    while n and 2 * n * -(-bins // merge) > max_cells and merge < bins:
        merge *= 2
    if merge > 1:
        pad = (-bins) % merge
        reads = np.pad(reads, ((0, 0), (0, pad))).reshape(n, -1, merge).sum(axis=2)
        writes = np.pad(writes, ((0, 0), (0, pad))).reshape(n, -1, merge).sum(axis=2)
        edges = np.append(edges[:-1:merge], edges[-1])
    out = {k: v for k, v in payload.items() if k != "banks"}
    out["banks"] = {"edges": edges.tolist(), "reads": reads.tolist(),
                    "writes": writes.tolist()}
    return out


def payload_from_stored(data: dict[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`storable_payload`: numpy arrays again, ``counts`` rebuilt."""
    out = dict(data)
    b = data.get("banks", {})
    reads = np.asarray(b.get("reads", []), dtype=np.int64)
    writes = np.asarray(b.get("writes", []), dtype=np.int64)
    if reads.ndim != 2:
        reads = writes = np.zeros((0, 0), dtype=np.int64)
    out["banks"] = {"edges": np.asarray(b.get("edges", []), dtype=np.float64),
                    "reads": reads, "writes": writes, "counts": reads + writes}
    return out


def cosim_in_child(net: Any, sched: Any, hw: Any, memory_spec: str, layout: str,
                   placement: str, bins: int, conn: Any, fused_halo: str | None = None) -> None:
    """Entry point of the child process; ``fused_halo``: the cost model's fused-input rule
    the schedule was searched under, applied for this process (None: the default rule)."""
    try:
        if fused_halo is not None:
            from optimizer import costmodel
            if fused_halo not in costmodel.FUSED_HALO_RULES:
                raise ValueError(f"unknown fused-halo rule '{fused_halo}'")
            costmodel.FUSED_HALO = fused_halo
        payload = cosim_payload(net, sched, hw, memory_spec, layout, placement, bins,
                                progress=lambda name: conn.send(("layer", name)))
        conn.send(("finished", payload))
    except BaseException as exc:  # noqa: BLE001 - reported to the GUI, never lost
        try:
            conn.send(("failed", str(exc) or type(exc).__name__, traceback.format_exc()))
        except Exception:  # noqa: BLE001 - the parent is gone
            pass
    finally:
        conn.close()
