"""Schedule -> DRAM requests -> engine: byte-exact agreement with the cost model, causal
timestamps, layouts, and the closed loop on a small network."""
from __future__ import annotations

import json

import numpy as np
import pytest

from optimizer import cosim
from optimizer.costmodel import evaluate_schedule
from optimizer.dma_trace import LAYOUTS, Placement, layer_requests, schedule_requests
from optimizer.errors import OptimizerError
from optimizer.hardware import load_hardware
from optimizer.mapping import LayerMapping, Schedule
from optimizer.polish import polish
from optimizer.space import SearchSpace
from optimizer.workload import DIMS, Layer, Network

MAX_BYTES = 3_000_000        # keep the test fast: skip the huge GEMM mappings


def test_one_layer_trace_moves_exactly_the_bytes_the_model_counts(timeloop_explicit):
    checked = 0
    for entry, layer, m, hw in timeloop_explicit:
        net = Network("one", [layer])
        res = evaluate_schedule(net, Schedule("one", {"L": m}), hw)
        lr = res.layers[0]
        if lr.dram_reads + lr.dram_writes > MAX_BYTES:
            continue
        tl = entry["results"]["per_level"]["DRAM"]["tensors"]
        lt = layer_requests(layer, m, Placement(net, "nhwc"), start=0.0, duration=lr.cycles,
                            read_inputs={"I": True, "W": True}, write_output=True)
        assert lt.bytes_by_tensor["W"] == tl["Weights"]["reads_total"], entry["id"]
        assert lt.bytes_by_tensor["I"] == tl["Inputs"]["reads_total"], entry["id"]
        assert lt.bytes_by_tensor["O_write"] == tl["Outputs"]["updates_total"], entry["id"]
        assert lt.bytes_by_tensor["O_read"] == tl["Outputs"]["reads_total"], entry["id"]
        assert lt.useful_bytes == lr.dram_reads + lr.dram_writes
        assert np.all(lt.useful <= 64) and np.all(lt.addr % 64 == 0)
        checked += 1
    assert checked >= 12


def _small_net() -> Network:
    a = Layer("a", "conv", {"N": 1, "K": 16, "C": 8, "P": 8, "Q": 8, "R": 3, "S": 3})
    b = Layer("b", "conv", {"N": 1, "K": 16, "C": 16, "P": 8, "Q": 8, "R": 3, "S": 3},
              producers=("a",))
    c = Layer("c", "conv", {"N": 1, "K": 16, "C": 16, "P": 8, "Q": 8, "R": 1, "S": 1},
              producers=("b",), residual_from=("a",))
    return Network("small", [a, b, c])


def _polished(net: Network, hw):
    space = SearchSpace.build(net, hw)
    ch, fused = polish(space, space.minimal_choices(), [], rounds=2, samples=64)
    sched = space.schedule(ch, fused)
    return sched, evaluate_schedule(net, sched, hw)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_network_trace_agrees_with_the_model_per_layer(layout):
    net, hw = _small_net(), load_hardware("small")
    sched, res = _polished(net, hw)
    assert res.valid
    for lt, lr in zip(schedule_requests(net, sched, res, Placement(net, layout, block=16)),
                      res.layers):
        assert lt.useful_bytes == lr.dram_reads + lr.dram_writes, (layout, lt.name)


def test_timestamps_follow_the_compute_that_produces_the_data():
    net, hw = _small_net(), load_hardware("small")
    sched, res = _polished(net, hw)
    traces = list(schedule_requests(net, sched, res, Placement(net)))
    for lt in traces:
        assert np.all(np.diff(lt.time) >= 0)
        assert lt.time.min() >= lt.start and lt.time.max() <= lt.end
        writes = lt.time[lt.is_write]
        # a write-back leaves only after at least one step of compute
        assert writes.size == 0 or writes.min() > lt.start
    for prev, nxt in zip(traces, traces[1:]):
        assert nxt.start >= prev.end
        # the consumer's reads of the producer's output come after the producer finished
        assert nxt.time[~nxt.is_write].min() >= prev.end


def test_nhwc_and_nchw_move_the_same_bytes_in_different_lines():
    layer = Layer("x", "conv", {"N": 1, "K": 32, "C": 32, "P": 14, "Q": 14, "R": 3, "S": 3})
    net = Network("x", [layer])
    m = LayerMapping([{d: 1 for d in DIMS} | {"P": 14},
                      {d: 1 for d in DIMS} | {"C": 2, "K": 2},
                      {d: 1 for d in DIMS} | {"Q": 14, "R": 3, "S": 3},
                      {d: 1 for d in DIMS}], [DIMS] * 4, 16, 16)
    out = {}
    for layout in ("nhwc", "nchw"):
        out[layout] = layer_requests(layer, m, Placement(net, layout), start=0.0,
                                     duration=1000.0, read_inputs={"I": True, "W": True},
                                     write_output=True)
    assert out["nhwc"].useful_bytes == out["nchw"].useful_bytes
    # one output row of a tile is 14 pixels: contiguous per channel in NCHW, strided by the
    # 32 channels in NHWC; the line counts differ
    assert len(out["nhwc"].addr) != len(out["nchw"].addr)


def test_memory_names_and_errors():
    cfg = cosim.load_memory("DDR4-3200-2ch")
    assert cfg.channels == 2 and cfg.name == "DDR4-3200-2ch"
    with pytest.raises(OptimizerError, match="power of two"):
        cosim.load_memory("DDR4-3200-3ch")


def test_closed_loop_measures_and_reoptimises_on_the_engine(dram_calibration_dir):
    net, hw = _small_net(), load_hardware("small")
    memory = cosim.load_memory("DDR4-3200")
    seen_hw = []

    def optimize(n, h):
        seen_hw.append(h)
        space = SearchSpace.build(n, h)
        ch, fused = polish(space, space.minimal_choices(), [], rounds=1, samples=32)
        sched = space.schedule(ch, fused)
        return sched, evaluate_schedule(n, sched, h)

    iters = cosim.closed_loop(net, hw, memory, optimize=optimize, iterations=1,
                              cache_dir=dram_calibration_dir)
    assert 1 <= len(iters) <= 2
    cs = iters[0].cosim
    for lay in cs.layers:
        assert lay.requests > 0 and lay.engine_service_cycles > 0
        assert lay.engine_dram_pj > 0 and 0 <= lay.row_hit_rate <= 1
        assert lay.latency_engine >= lay.model_cycles
    assert cs.engine_edp == pytest.approx(sum(x.latency_engine for x in cs.layers)
                                          * sum(x.energy_engine_pj for x in cs.layers))
    # the second optimisation saw the DRAM term refit on the engine's measurements; the
    # bus stays the hardware file's (a separate ceiling)
    if len(seen_hw) > 1:
        assert seen_hw[1].dram is not None and seen_hw[1].dram_bw == hw.dram_bw
        assert seen_hw[1].dram.k_time == pytest.approx(
            sum(x.engine_parts["time"] for x in cs.layers)
            / sum(x.model_parts["time"] for x in cs.layers))
    s = cosim.summary(iters)
    assert set(s) >= {"engine_edp_first", "engine_edp_last", "fusion_changed",
                      "ranking_agrees"}
    assert s["engine_edp_last"] <= s["engine_edp_first"]
    json.dumps(iters[0].cosim.to_json())


def test_cosim_keeps_the_iterations_measured_before_a_ctrl_c(dram_calibration_dir,
                                                              monkeypatch):
    """run_cosim_job hands the document so far to on_partial after each measured iteration
    ('complete': false; `cosim --out` writes it), so a Ctrl-C in the next re-optimisation
    keeps them (nothing was written)."""
    from types import SimpleNamespace

    import optimizer.methods as methods
    from optimizer.cosim_job import run_cosim_job
    from optimizer.search import Budget
    net, hw = _small_net(), load_hardware("small")
    calls = []

    def optimize(n, h, method, budget, seed):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        space = SearchSpace.build(n, h)
        ch, fused = polish(space, space.minimal_choices(), [], rounds=1, samples=32)
        sched = space.schedule(ch, fused)
        return SimpleNamespace(schedule=sched, result=evaluate_schedule(n, sched, h),
                               evaluations=1), space
    monkeypatch.setattr(methods, "optimize", optimize)
    docs = []
    with pytest.raises(KeyboardInterrupt):
        run_cosim_job(net, hw, cosim.load_memory("DDR4-3200"), method="ga", seed=0,
                      budget=Budget(evaluations=10), iterations=2, layout="nhwc",
                      placement="packed", acc_ghz=1.0, cache_dir=dram_calibration_dir,
                      on_partial=docs.append)
    assert len(docs) == 1 and docs[0]["complete"] is False
    (it,) = docs[0]["iterations"]
    assert it["kept"] and it["cosim"]["engine_edp"] > 0
    assert docs[0]["summary"]["engine_edp_first"] == it["cosim"]["engine_edp"]
    json.dumps(docs[0])
