"""Closed loop: a Gemmini schedule's DRAM traffic through the engine, and back into FADiff.

1. The schedule's request stream (:mod:`optimizer.dma_trace`) is simulated layer by layer on a
   memory configuration of the engine, twice: paced (requests arrive when the schedule issues
   them: does the memory keep up?) and back to back (all of a layer's requests at once: how
   long does this memory need to serve that traffic?).
2. Per layer, the analytical model's DRAM time (bytes / bus bandwidth) and energy (bytes x
   pJ per byte) are set against the engine's service time and DRAM energy (core + IO), with
   the engine's explanation of the gap: row-buffer hit rate, row conflicts, refreshes, the
   read/write mix, energy by cause.
3. The engine's effective bandwidth and energy per byte over the network become a
   "DRAM-aware" hardware file; FADiff re-optimises under it; repeat until the schedule stops
   changing.  Every schedule is measured with the engine: latency per layer = max(model
   cycles, the paced engine's completion), energy = on-chip energy + engine DRAM energy.

Layers are simulated separately (each starts on an idle memory); the accelerator clock is a
parameter (1 GHz by default) that converts accelerator cycles to memory clock cycles.
"""
from __future__ import annotations

import logging
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable

import numpy as np

from optimizer.costmodel import ScheduleResult, evaluate_schedule
from optimizer.dma_trace import Placement, schedule_requests
from optimizer.errors import OptimizerError
from optimizer.hardware import GemminiHardware
from optimizer.mapping import Schedule
from optimizer.workload import Network

log = logging.getLogger(__name__)


def load_memory(spec: str):
    """A memory config from a preset name with an optional channel suffix, e.g.
    ``DDR4-3200-8ch`` (the DDR4-3200 preset with 8 channels), or a .toml/.ini path."""
    from engine.config import load_config
    m = re.fullmatch(r"(.+?)-(\d+)ch", spec)
    if m and not spec.endswith((".toml", ".ini")):
        cfg = load_config(m.group(1))
        channels = int(m.group(2))
        if channels < 1 or channels & (channels - 1):
            raise OptimizerError(f"memory '{spec}': the channel count must be a power of two")
        return cfg.replace(channels=channels, name=spec)
    return load_config(spec)


@dataclass
class LayerCosim:
    name: str
    requests: int
    bytes: int                  # useful bytes (the cost model's DRAM words)
    line_bytes: int             # bytes moved in 64-byte requests
    model_cycles: float         # the cost model's latency of the layer
    model_dram_cycles: float    # bytes / bus bandwidth
    model_dram_pj: float
    engine_service_cycles: float    # back to back, accelerator cycles
    engine_paced_end: float         # paced: completion of the last request after layer start
    stall_cycles: float             # paced completion beyond the layer's model latency
    engine_dram_pj: float           # core + IO
    row_hit_rate: float
    row_conflicts: int
    refreshes: int
    write_fraction: float
    energy_by_cause_pj: dict[str, float] = field(default_factory=dict)
    latency_engine: float = 0.0
    energy_engine_pj: float = 0.0

    @property
    def time_error(self) -> float:
        """(model - engine) / engine DRAM time."""
        return ((self.model_dram_cycles - self.engine_service_cycles)
                / self.engine_service_cycles if self.engine_service_cycles else 0.0)

    @property
    def energy_error(self) -> float:
        return ((self.model_dram_pj - self.engine_dram_pj) / self.engine_dram_pj
                if self.engine_dram_pj else 0.0)


@dataclass
class CosimResult:
    network: str
    hardware: str
    memory: str
    layout: str
    layers: list[LayerCosim]
    model_edp: float
    engine_edp: float
    engine_latency: float
    engine_energy_pj: float
    effective_bw: float         # bytes per accelerator cycle, back to back
    energy_per_byte: float      # engine DRAM pJ per useful byte

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for lay, obj in zip(out["layers"], self.layers):
            lay["time_error"] = obj.time_error
            lay["energy_error"] = obj.energy_error
        return out


def _simulate(cfg: Any, addr: np.ndarray, is_write: np.ndarray, cycles: np.ndarray):
    from engine.simulator import SimOptions, Simulator
    sim = Simulator(cfg, SimOptions())
    try:
        step = 1 << 16
        for i in range(0, len(addr), step):
            sim.feed(addr[i:i + step].astype(np.uint64), is_write[i:i + step],
                     cycles[i:i + step])
        return sim.finish()
    finally:
        sim.close()


def cosimulate(net: Network, sched: Schedule, hw: GemminiHardware, memory: Any, *,
               layout: str = "nhwc", placement: str = "packed", acc_ghz: float = 1.0,
               result: ScheduleResult | None = None,
               progress: Callable[[str], None] | None = None) -> CosimResult:
    """Simulate the schedule's DRAM traffic on ``memory`` (a MemoryConfig) layer by layer."""
    result = result or evaluate_schedule(net, sched, hw)
    if not result.valid:
        raise OptimizerError("cannot co-simulate an invalid schedule: "
                             + "; ".join(result.problems[:3]))
    place = Placement(net, layout, placement, block=hw.cols)
    cap = memory.capacity_bytes
    if place.total_bytes > cap:
        raise OptimizerError(f"{net.name}'s tensors need {place.total_bytes} bytes, more than "
                             f"the {cap} bytes of {memory.name}")
    mem_per_acc = 1.0 / (acc_ghz * memory.tCK)       # memory cycles per accelerator cycle
    layers = []
    for lt, lr in zip(schedule_requests(net, sched, result, place), result.layers):
        if progress is not None:
            progress(lt.name)
        n = len(lt.addr)
        model_bytes = lr.dram_reads + lr.dram_writes
        onchip_pj = lr.energy_pj - lr.energy_parts["DRAM"]
        if n == 0:
            layers.append(LayerCosim(lt.name, 0, 0, 0, lr.cycles, 0.0, 0.0, 0.0, 0.0, 0.0,
                                     0.0, 1.0, 0, 0, 0.0, {}, lr.cycles, onchip_pj))
            continue
        paced = np.floor((lt.time - lt.start) * mem_per_acc).astype(np.int64)
        st_paced = _simulate(memory, lt.addr, lt.is_write, paced)
        st_burst = _simulate(memory, lt.addr, lt.is_write, np.zeros(n, np.int64))
        s = st_burst.summary
        service = s["num_cycles"] / mem_per_acc
        paced_end = st_paced.summary["num_cycles"] / mem_per_acc
        # energy from the paced run: the memory is powered (background, refresh) for as long
        # as the layer runs, not only while it is busy
        engine_pj = float(st_paced.summary["total_energy_with_io"])
        lat = max(lr.cycles, paced_end)
        layers.append(LayerCosim(
            name=lt.name, requests=n, bytes=lt.useful_bytes, line_bytes=64 * n,
            model_cycles=lr.cycles, model_dram_cycles=model_bytes / hw.dram_bw,
            model_dram_pj=lr.energy_parts["DRAM"], engine_service_cycles=service,
            engine_paced_end=paced_end, stall_cycles=max(0.0, paced_end - lr.cycles),
            engine_dram_pj=engine_pj, row_hit_rate=float(s["row_hit_rate"]),
            row_conflicts=int(s["num_row_conflicts"]), refreshes=int(s["num_ref_cmds"]),
            write_fraction=float(np.mean(lt.is_write)),
            energy_by_cause_pj=dict(st_paced.energy.by_cause_pJ),
            latency_engine=lat, energy_engine_pj=onchip_pj + engine_pj))
    lat = sum(x.latency_engine for x in layers)
    energy = sum(x.energy_engine_pj for x in layers)
    total_bytes = sum(x.bytes for x in layers)
    service = sum(x.engine_service_cycles for x in layers)
    return CosimResult(
        network=net.name, hardware=hw.name, memory=memory.name, layout=layout, layers=layers,
        model_edp=result.edp, engine_edp=lat * energy, engine_latency=lat,
        engine_energy_pj=energy,
        effective_bw=total_bytes / service if service else hw.dram_bw,
        energy_per_byte=(sum(x.engine_dram_pj for x in layers) / total_bytes
                         if total_bytes else hw.e_dram_read))


def dram_aware_hardware(hw: GemminiHardware, cs: CosimResult) -> GemminiHardware:
    """``hw`` with the DRAM bandwidth and energy the engine measured: the bus bandwidth capped
    by the memory's effective back-to-back bandwidth, and its energy per byte (core + IO,
    background and refresh spread over the bytes moved)."""
    return replace(hw, name=f"{hw.name}+{cs.memory}", dram_bw=min(hw.dram_bw, cs.effective_bw),
                   e_dram_read=cs.energy_per_byte, e_dram_write=cs.energy_per_byte,
                   description=f"{hw.description}; DRAM measured on {cs.memory} by the engine")


@dataclass
class LoopIteration:
    iteration: int
    hardware: dict[str, float]
    schedule: dict[str, Any]
    fused: list[tuple[str, str]]
    model_edp: float
    cosim: CosimResult


def closed_loop(net: Network, hw: GemminiHardware, memory: Any, *, optimize: Callable,
                iterations: int = 3, layout: str = "nhwc", placement: str = "packed",
                acc_ghz: float = 1.0, progress: Callable[[str], None] | None = None
                ) -> list[LoopIteration]:
    """Optimise under ``hw``, co-simulate, derive the DRAM-aware hardware, re-optimise; stop
    after ``iterations`` re-optimisations or when the schedule no longer changes.
    ``optimize(net, hw) -> (Schedule, ScheduleResult)``."""
    out: list[LoopIteration] = []
    current = hw
    for it in range(iterations + 1):
        sched, res = optimize(net, current)
        # every schedule is measured on the real memory, scored on the original on-chip model
        res_orig = evaluate_schedule(net, sched, hw)
        cs = cosimulate(net, sched, hw, memory, layout=layout, placement=placement,
                        acc_ghz=acc_ghz, result=res_orig, progress=progress)
        out.append(LoopIteration(it, {"dram_bw": current.dram_bw,
                                      "e_dram_pj_per_byte": current.e_dram_read},
                                 sched.to_json(), list(sched.fused), res_orig.edp, cs))
        log.info("cosim iteration %d: model EDP %.4e, engine EDP %.4e", it, res_orig.edp,
                 cs.engine_edp)
        if it > 0 and out[-1].schedule["layers"] == out[-2].schedule["layers"] \
                and out[-1].fused == out[-2].fused:
            break
        current = dram_aware_hardware(hw, cs)
    return out


def summary(iters: list[LoopIteration]) -> dict[str, Any]:
    """What the loop changed: EDP before/after measured with the engine, fusion decisions,
    and whether the model and the engine rank the first and last schedules the same way."""
    first, last = iters[0], iters[-1]
    model_says = np.sign(last.model_edp - first.model_edp)
    engine_says = np.sign(last.cosim.engine_edp - first.cosim.engine_edp)
    return {
        "iterations": len(iters),
        "engine_edp_before": first.cosim.engine_edp,
        "engine_edp_after": last.cosim.engine_edp,
        "engine_edp_change": last.cosim.engine_edp / first.cosim.engine_edp - 1,
        "model_edp_before": first.model_edp, "model_edp_after": last.model_edp,
        "fused_before": [list(e) for e in first.fused],
        "fused_after": [list(e) for e in last.fused],
        "fusion_changed": sorted(first.fused) != sorted(last.fused),
        "ranking_agrees": bool(model_says == engine_says),
        "schedule_changed": first.schedule["layers"] != last.schedule["layers"],
    }
