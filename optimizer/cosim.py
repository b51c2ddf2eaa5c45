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
import math
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


ENGINE_PART_CAUSES = {"background": ("background",), "refresh": ("refresh",),
                      "data": ("data", "io"), "act": ("row_conflict", "row_miss")}


@dataclass
class LayerCosim:
    name: str
    requests: int
    bytes: int                  # useful bytes (the cost model's DRAM words)
    line_bytes: int             # bytes moved in 64-byte requests
    model_cycles: float         # the cost model's latency of the layer
    model_dram_cycles: float    # the DRAM term's service time (without one: bytes / bus)
    model_dram_pj: float
    engine_service_cycles: float    # back to back, accelerator cycles
    engine_paced_end: float         # paced: completion of the last request after layer start
    stall_cycles: float             # paced completion beyond the layer's model latency
    engine_dram_pj: float           # core + IO, over the layer's whole duration
    row_hit_rate: float
    row_conflicts: int
    refreshes: int
    write_fraction: float
    energy_by_cause_pj: dict[str, float] = field(default_factory=dict)
    latency_engine: float = 0.0
    energy_engine_pj: float = 0.0
    model_lines: float = 0.0                                       # the DRAM term's lines
    model_parts: dict[str, float] = field(default_factory=dict)    # before the refit scales
    engine_parts: dict[str, float] = field(default_factory=dict)   # same parts, the engine

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
    model_edp: float            # the cost model's EDP (with the DRAM term when given one)
    engine_edp: float
    engine_latency: float
    engine_energy_pj: float
    effective_bw: float         # bytes per accelerator cycle, back to back
    energy_per_byte: float      # engine DRAM pJ per useful byte
    placement: str = "packed"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for lay, obj in zip(out["layers"], self.layers):
            lay["time_error"] = obj.time_error
            lay["energy_error"] = obj.energy_error
        return out

    @property
    def model_dram_cycles(self) -> float:
        return sum(x.model_dram_cycles for x in self.layers)

    @property
    def engine_dram_cycles(self) -> float:
        return sum(x.engine_service_cycles for x in self.layers)

    @property
    def model_dram_pj(self) -> float:
        return sum(x.model_dram_pj for x in self.layers)

    @property
    def engine_dram_pj(self) -> float:
        return sum(x.engine_dram_pj for x in self.layers)

    @property
    def requests(self) -> int:
        return sum(x.requests for x in self.layers)

    def observations(self) -> list[Any]:
        """The layers as refit observations (model parts before scaling, engine parts)."""
        from optimizer.dram_model import Observation
        return [Observation(x.model_parts, x.engine_parts) for x in self.layers
                if x.model_parts]


def _simulate(cfg: Any, addr: np.ndarray, is_write: np.ndarray, cycles: np.ndarray,
              until: int = 0):
    """Engine statistics of one request stream; ``until``: keep the memory powered (idle) at
    least up to that memory cycle."""
    from engine.simulator import SimOptions, Simulator
    sim = Simulator(cfg, SimOptions())
    try:
        step = 1 << 16
        for i in range(0, len(addr), step):
            sim.feed(addr[i:i + step].astype(np.uint64), is_write[i:i + step],
                     cycles[i:i + step])
        if until > 0:
            sim.advance(until)
        return sim.finish()
    finally:
        sim.close()


def _engine_parts(by_cause: dict[str, float], service: float) -> dict[str, float]:
    out = {p: sum(by_cause.get(c, 0.0) for c in causes)
           for p, causes in ENGINE_PART_CAUSES.items()}
    out["time"] = service
    return out


def cosimulate(net: Network, sched: Schedule, hw: GemminiHardware, memory: Any, *,
               layout: str = "nhwc", placement: str = "packed", acc_ghz: float = 1.0,
               result: ScheduleResult | None = None, dram_hw: Any = None,
               progress: Callable[[str], None] | None = None) -> CosimResult:
    """Simulate the schedule's DRAM traffic on ``memory`` (a MemoryConfig) layer by layer.

    ``hw`` is the on-chip model (its latencies pace the requests; engine EDP = latency
    max(model, paced engine) x (on-chip + engine DRAM energy)); ``dram_hw``, a
    :class:`~optimizer.dram_model.DramAwareHardware`, gives the model side's DRAM figures."""
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
    parts: list[dict[str, float]] = [{} for _ in net.layers]
    model_edp = result.edp
    if dram_hw is not None:
        from optimizer.dram_model import model_parts
        parts = model_parts(net, sched, dram_hw)
        model_edp = evaluate_schedule(net, sched, dram_hw).edp
    layers = []
    for lt, lr, mp in zip(schedule_requests(net, sched, result, place), result.layers, parts):
        if progress is not None:
            progress(lt.name)
        n = len(lt.addr)
        model_bytes = lr.dram_reads + lr.dram_writes
        onchip_pj = lr.energy_pj - lr.energy_parts["DRAM"]
        until = int(math.ceil(lr.cycles * mem_per_acc))
        if mp:
            from optimizer.dram_model import scaled
            sc = scaled(mp, dram_hw.dram)
            m_cyc, m_pj = sc["time"], sc["background"] + sc["refresh"] + sc["data"] + sc["act"]
        else:
            m_cyc, m_pj = model_bytes / hw.dram_bw, lr.energy_parts["DRAM"]
        if n == 0:
            # a fully fused layer: no traffic, but the memory stays powered meanwhile
            st_idle = _simulate(memory, np.zeros(0, np.uint64), np.zeros(0, bool),
                                np.zeros(0, np.int64), until)
            e_pj = float(st_idle.summary["total_energy_with_io"])
            by_cause = dict(st_idle.energy.by_cause_pJ)
            layers.append(LayerCosim(
                lt.name, 0, 0, 0, lr.cycles, m_cyc, m_pj, 0.0, 0.0, 0.0, e_pj, 1.0, 0,
                int(st_idle.summary["num_ref_cmds"]), 0.0, by_cause, lr.cycles,
                onchip_pj + e_pj, mp.get("lines", 0.0), mp, _engine_parts(by_cause, 0.0)))
            continue
        paced = np.floor((lt.time - lt.start) * mem_per_acc).astype(np.int64)
        st_paced = _simulate(memory, lt.addr, lt.is_write, paced, until)
        st_burst = _simulate(memory, lt.addr, lt.is_write, np.zeros(n, np.int64))
        s = st_burst.summary
        service = s["num_cycles"] / mem_per_acc
        paced_end = st_paced.summary["num_cycles"] / mem_per_acc
        # energy from the paced run: the memory is powered (background, refresh) for as long
        # as the layer runs, not only while it is busy
        engine_pj = float(st_paced.summary["total_energy_with_io"])
        by_cause = dict(st_paced.energy.by_cause_pJ)
        lat = max(lr.cycles, paced_end)
        layers.append(LayerCosim(
            name=lt.name, requests=n, bytes=lt.useful_bytes, line_bytes=64 * n,
            model_cycles=lr.cycles, model_dram_cycles=m_cyc,
            model_dram_pj=m_pj, engine_service_cycles=service,
            engine_paced_end=paced_end, stall_cycles=max(0.0, paced_end - lr.cycles),
            engine_dram_pj=engine_pj, row_hit_rate=float(s["row_hit_rate"]),
            row_conflicts=int(s["num_row_conflicts"]), refreshes=int(s["num_ref_cmds"]),
            write_fraction=float(np.mean(lt.is_write)),
            energy_by_cause_pj=by_cause,
            latency_engine=lat, energy_engine_pj=onchip_pj + engine_pj,
            model_lines=mp.get("lines", 0.0), model_parts=mp,
            engine_parts=_engine_parts(by_cause, service)))
    lat = sum(x.latency_engine for x in layers)
    energy = sum(x.energy_engine_pj for x in layers)
    total_bytes = sum(x.bytes for x in layers)
    service = sum(x.engine_service_cycles for x in layers)
    return CosimResult(
        network=net.name, hardware=hw.name, memory=memory.name, layout=layout, layers=layers,
        model_edp=model_edp, engine_edp=lat * energy, engine_latency=lat,
        engine_energy_pj=energy,
        effective_bw=total_bytes / service if service else hw.dram_bw,
        energy_per_byte=(sum(x.engine_dram_pj for x in layers) / total_bytes
                         if total_bytes else hw.e_dram_read), placement=placement)


def dram_hardware(hw: GemminiHardware, memory: Any, *, layout: str = "nhwc",
                  acc_ghz: float = 1.0, cache_dir: Any = None,
                  progress: Callable[[str], None] | None = None) -> Any:
    """``hw`` with the calibrated DRAM term of ``memory`` (no refit yet)."""
    from optimizer.dram_model import DramAwareHardware, DramTerm, calibrate
    cal = calibrate(memory, cache_dir, progress)
    term = DramTerm.build(memory, cal, layout=layout, block=hw.cols, acc_ghz=acc_ghz)
    return DramAwareHardware.of(hw, term)


@dataclass
class LoopIteration:
    iteration: int
    hardware: dict[str, Any]        # the DRAM model the schedule was optimised under
    schedule: dict[str, Any]
    fused: list[tuple[str, str]]
    model_edp: float                # on the original hardware file (per-byte DRAM)
    cosim: CosimResult
    kept: bool = False              # the best engine-measured EDP so far
    sched: Any = None               # the Schedule object (not serialised)
    refit_hw: Any = None            # the DRAM term refit on every measurement up to this one
    # the search's own objective: this schedule's and the best-so-far schedule's model EDP
    # under the hardware it was optimised with (a re-optimisation that returns a schedule
    # its own objective scores worse than the best so far fell short as a search)
    objective_edp: float = 0.0
    objective_edp_of_best: float = 0.0


def _same(a: Schedule, b: Schedule) -> bool:
    return (a.to_json()["layers"] == b.to_json()["layers"]
            and sorted(a.fused) == sorted(b.fused))


def closed_loop(net: Network, hw: GemminiHardware, memory: Any, *, optimize: Callable,
                iterations: int = 3, layout: str = "nhwc", placement: str = "packed",
                acc_ghz: float = 1.0, cache_dir: Any = None,
                progress: Callable[[str], None] | None = None,
                on_iteration: Callable[[list[LoopIteration]], None] | None = None
                ) -> list[LoopIteration]:
    """Iteration 0 optimises under ``hw`` (the hardware file's per-byte DRAM); each later
    iteration re-fits the DRAM term on the engine's measurements of every schedule so far,
    optimises under it and measures the result.  The best engine-measured EDP is kept
    (``kept``); the loop stops after ``iterations`` re-optimisations, when a re-optimisation
    does not improve the engine EDP, or when it returns a schedule already measured.
    ``optimize(net, hw) -> (Schedule, ScheduleResult)``; ``on_iteration(iterations so far)``
    after each measured iteration (``kept`` marks the best so far)."""
    from optimizer.dram_model import refit
    dhw = dram_hardware(hw, memory, layout=layout, acc_ghz=acc_ghz, cache_dir=cache_dir)
    out: list[LoopIteration] = []
    observations: list[Any] = []
    best: LoopIteration | None = None
    current: GemminiHardware = hw
    for it in range(iterations + 1):
        sched, _ = optimize(net, current)
        if any(_same(sched, x.sched) for x in out):
            log.info("cosim iteration %d: schedule already measured; stopping", it)
            break
        res_orig = evaluate_schedule(net, sched, hw)
        cs = cosimulate(net, sched, hw, memory, layout=layout, placement=placement,
                        acc_ghz=acc_ghz, result=res_orig, dram_hw=dhw, progress=progress)
        info = ({"dram_model": "per-byte", "dram_bw": hw.dram_bw,
                 "e_dram_pj_per_byte": hw.e_dram_read} if it == 0 else
                {"dram_model": "term", "dram_bw": hw.dram_bw, **current.dram.scales()})
        rec = LoopIteration(it, info, sched.to_json(), list(sched.fused), res_orig.edp, cs,
                            sched=sched)
        if best is not None:
            rec.objective_edp = evaluate_schedule(net, sched, current).edp
            rec.objective_edp_of_best = evaluate_schedule(net, best.sched, current).edp
        out.append(rec)
        log.info("cosim iteration %d: model EDP %.4e, engine EDP %.4e", it, res_orig.edp,
                 cs.engine_edp)
        improved = best is None or cs.engine_edp < best.cosim.engine_edp
        if improved:
            best = rec
        observations += cs.observations()
        dhw = replace(dhw, dram=refit(dhw.dram, observations))
        rec.refit_hw = current = dhw
        for r in out:                           # (the best so far: final after the loop)
            r.kept = r is best
        if on_iteration is not None:
            on_iteration(out)
        if it > 0 and not improved:
            break
    return out


def kept(iters: list[LoopIteration]) -> LoopIteration:
    return next(x for x in iters if x.kept)


def summary(iters: list[LoopIteration]) -> dict[str, Any]:
    """What the loop changed: EDP of the first schedule and of the one kept, measured with
    the engine; fusion decisions; whether the model and the engine rank them alike."""
    first, last = iters[0], kept(iters)
    model_says = np.sign(last.cosim.model_edp - first.cosim.model_edp)
    engine_says = np.sign(last.cosim.engine_edp - first.cosim.engine_edp)
    return {
        "iterations": len(iters),
        "kept_iteration": last.iteration,
        "engine_edp_first": first.cosim.engine_edp,
        "engine_edp_last": last.cosim.engine_edp,
        "engine_edp_per_iteration": [x.cosim.engine_edp for x in iters],
        "engine_edp_change": last.cosim.engine_edp / first.cosim.engine_edp - 1,
        "model_edp_first": first.model_edp, "model_edp_last": last.model_edp,
        "fused_first": [list(e) for e in first.fused],
        "fused_last": [list(e) for e in last.fused],
        "fusion_changed": sorted(first.fused) != sorted(last.fused),
        "ranking_agrees": bool(model_says == engine_says),
        "schedule_changed": first.schedule["layers"] != last.schedule["layers"],
        # per re-optimisation: its schedule's EDP over the best-so-far's, both under the DRAM
        # term it was optimised with (> 1: the search fell short of a schedule it already had)
        "objective_vs_best": [x.objective_edp / x.objective_edp_of_best
                              if x.objective_edp_of_best else None for x in iters[1:]],
    }
