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
    byte address under ``memory``'s address mapping."""
    a = np.asarray(addr, dtype=np.uint64) >> np.uint64(memory.shift_bits)
    pos, mask = memory.field_positions, memory.field_masks

    def field(name: str) -> np.ndarray:
        return ((a >> np.uint64(pos[name])) & np.uint64(mask[name])).astype(np.int64)

    ch, ra, bg, ba = field("ch"), field("ra"), field("bg"), field("ba")
    banks = int(memory.banks)
    bpg = int(memory.banks_per_group_eff)
    return (ch * int(memory.ranks) + ra) * banks + bg * bpg + ba


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


def cosim_in_child(net: Any, sched: Any, hw: Any, memory_spec: str, layout: str,
                   placement: str, bins: int, conn: Any) -> None:
    """Entry point of the child process."""
    try:
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
