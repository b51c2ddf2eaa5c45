"""The cost model's DRAM term: a hand-computed case, gradients, the engine calibration and its
cache, the refit, the loop that keeps the best engine EDP, and the validation's statistics."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from optimizer import cosim
from optimizer.costmodel import (DTYPE, FusionGraph, LayerBatch, MappingTensors,
                                 evaluate_schedule, network_costs)
from optimizer.dram_model import (DENSITIES, READBACK_DENSITIES, READBACK_SPANS, RUN_LINES,
                                  Calibration, DramAwareHardware,
                                  DramTerm, Observation, calibrate, config_hash, model_parts,
                                  pattern_addresses, refit)
from optimizer.hardware import load_hardware
from optimizer.mapping import LayerMapping, Schedule
from optimizer.polish import polish
from optimizer.space import SearchSpace
from optimizer.validation import candidates, kendall_tau
from optimizer.workload import DIMS, Layer, Network


def _linear_table(a: float, b: float, c: float) -> list[list[float]]:
    """Values a + b*log2(run) + c*log2(density): bilinear interpolation is exact on it."""
    return [[a + b * math.log2(r) + c * math.log2(d) for d in DENSITIES] for r in RUN_LINES]


def _fake_calibration() -> Calibration:
    return Calibration("fake", "0", list(RUN_LINES), list(DENSITIES),
                       read_cycles_per_line=_linear_table(4.0, 0.0, -1.0),
                       write_cycles_per_line=_linear_table(6.0, 0.0, 0.0),
                       read_acts_per_line=_linear_table(0.5, -0.0625, 0.0),
                       write_acts_per_line=_linear_table(0.25, 0.0, 0.0),
                       readback_spans=list(READBACK_SPANS),
                       readback_hit_burst=[1.0 if s <= 16 else 0.0 for s in READBACK_SPANS],
                       readback_hit_paced=[1.0 if s <= 8 else 0.0 for s in READBACK_SPANS],
                       readback_cycles_per_line=[2.0 + s / 64 for s in READBACK_SPANS])


def _one_layer():
    """conv K=8, C=128, P=Q=4, 1x1; DRAM loop P=2; the scratchpad loops over C, the
    accumulator holds 8 channels x 2 rows x 4 pixels of output."""
    layer = Layer("L", "conv", {"N": 1, "K": 8, "C": 128, "P": 4, "Q": 4, "R": 1, "S": 1})
    one = {d: 1 for d in DIMS}
    temporal = [dict(one, P=2), dict(one, C=128), dict(one, K=8, P=2, Q=4), dict(one)]
    order = list(DIMS)
    return Network("one", [layer]), LayerMapping(temporal, [order] * 4, 1, 1)


def test_dram_term_on_a_hand_computed_two_tensor_case():
    import engine.config
    cfg = engine.config.load_config("DDR4-3200")
    term = DramTerm.build(cfg, _fake_calibration(), layout="nhwc", acc_ghz=1.0)
    hw = DramAwareHardware.of(load_hardware("large"), term)
    net, m = _one_layer()
    sched = Schedule("one", {"L": m})
    parts = model_parts(net, sched, hw)[0]
    # weights [k][r][s][c]: the whole 8x128 tile is one aligned 1024-byte run, read once
    #   -> 16 lines, run 16 lines, density 1
    # inputs [h][w][c]: a tile of 2 rows x 4 pixels x 128 channels = 1024 contiguous bytes,
    #   one every 2048 bytes (pitch 32 lines) -> 16 lines per tile, 2 tiles -> 32 lines,
    #   run 16 lines, density 1/2
    # outputs [h][w][k]: 2 tiles of 2 x 4 x 8 = 64 aligned bytes -> 2 lines written
    assert parts["lines"] == pytest.approx(16 + 32 + 2)
    # ... which is what the DMA trace requests
    from optimizer.dma_trace import Placement, layer_requests
    lt = layer_requests(net.layers[0], m, Placement(net, "nhwc"), start=0.0, duration=100.0,
                        read_inputs={"I": True, "W": True}, write_output=True)
    assert len(lt.addr) == 16 + 32 + 2
    mpa = 1.0 / cfg.tCK                     # memory cycles per accelerator cycle (1 GHz)
    read_cpl_w, read_cpl_i = 4.0 / mpa, (4.0 + 1.0) / mpa    # density 1, density 1/2
    service = 16 * read_cpl_w + 32 * read_cpl_i + 2 * 6.0 / mpa
    assert parts["time"] == pytest.approx(service)
    acts = (16 + 32) * (0.5 - 0.0625 * 4) + 2 * 0.25          # rows opened per line
    inc = cfg.energy_increments
    assert parts["act"] == pytest.approx(acts * inc["act"] * cfg.tCK)
    from engine.power import io_energy_per_bit
    io = io_energy_per_bit("DDR4").read_pJ_per_bit
    data = (48 * (inc["read"] * cfg.tCK + 64 * 8 * io)
            + 2 * (inc["write"] * cfg.tCK + 64 * 8 * io))
    assert parts["data"] == pytest.approx(data)
    # background and refresh over the layer's duration: 2 ranks at IDD3N, one REF per rank
    # per tREFI
    cycles = parts["cycles"]
    assert parts["background"] == pytest.approx(cycles * mpa * 2 * inc["act_stb"] * cfg.tCK)
    assert parts["refresh"] == pytest.approx(cycles * mpa * 2 * inc["ref"] * cfg.tCK
                                             / cfg.tREFI)
    # the cost model's DRAM energy is exactly these parts; the per-byte energy is unused
    res = evaluate_schedule(net, sched, hw)
    assert res.layers[0].energy_parts["DRAM"] == pytest.approx(
        parts["data"] + parts["act"] + parts["background"] + parts["refresh"])
    # the bus stays a separate ceiling: DRAM time = max(bytes / bus, service)
    bus = (1024 + 2048 + 128) / hw.dram_bw
    assert res.layers[0].dram_cycles == pytest.approx(max(bus, service))


def test_layouts_change_the_lines_of_the_same_tiles():
    import engine.config
    cfg = engine.config.load_config("DDR4-3200")
    from optimizer.dma_trace import Placement, layer_requests
    net, m = _one_layer()
    lines = {}
    for layout in ("nhwc", "nchw", "tiled"):
        hw = DramAwareHardware.of(load_hardware("large"),
                                  DramTerm.build(cfg, _fake_calibration(), layout=layout))
        lines[layout] = model_parts(net, Schedule("one", {"L": m}), hw)[0]["lines"]
        lt = layer_requests(net.layers[0], m, Placement(net, layout), start=0.0,
                            duration=100.0, read_inputs={"I": True, "W": True},
                            write_output=True)
        assert lines[layout] == pytest.approx(len(lt.addr)), layout
    # nchw: an input tile is 128 runs of 2 rows x 4 pixels (8 bytes, 16 bytes apart): each
    # line holds 4 of them, and the two row tiles read the same lines again
    assert lines["nchw"] == pytest.approx(16 + 2 * 32 + 2 * 2)
    assert lines["tiled"] == pytest.approx(lines["nhwc"])


def test_dram_term_is_differentiable_in_the_tile_factors():
    import engine.config
    cfg = engine.config.load_config("HBM2")
    hw = DramAwareHardware.of(load_hardware("large"), DramTerm.build(cfg, _fake_calibration()))
    net, m = _one_layer()
    mt = MappingTensors.from_mappings([m])
    mt.temporal.requires_grad_(True)
    nc = network_costs(LayerBatch.from_network(net), mt, hw, FusionGraph.from_network(net),
                       torch.zeros(0, dtype=DTYPE))
    nc.energy_parts["DRAM"].sum().backward()
    g = mt.temporal.grad
    assert torch.isfinite(g).all() and float(g.abs().sum()) > 0


def test_calibration_is_cached_and_invalidated_by_a_config_change(tmp_path):
    import engine.config
    cfg = engine.config.load_config("DDR4-3200")
    first = calibrate(cfg, tmp_path)
    assert not first.from_cache and first.engine_runs == (2 * len(RUN_LINES) * len(DENSITIES)
                                                    + 2 * len(READBACK_SPANS)
                                                    * len(READBACK_DENSITIES))
    files = list((tmp_path / "dram_calibration").glob("*.json"))
    assert [f.stem for f in files] == [config_hash(cfg)]
    again = calibrate(cfg, tmp_path)
    assert again.from_cache and again.read_cycles_per_line == first.read_cycles_per_line
    # a new name is the same memory; a timing change is not
    assert calibrate(cfg.replace(name="renamed"), tmp_path).from_cache
    slower = cfg.replace(tCCD_L=cfg.tCCD_L + 4)
    assert config_hash(slower) != config_hash(cfg)
    other = calibrate(slower, tmp_path)
    assert not other.from_cache
    assert len(list((tmp_path / "dram_calibration").glob("*.json"))) == 2
    # the engine's figures: a dense stream costs at least one burst per line, and a
    # same-bank-group stream more with the longer tCCD_L
    burst = cfg.burst_cycle
    assert min(min(r) for r in first.read_cycles_per_line) >= burst * 0.99
    assert other.read_cycles_per_line[0][0] > first.read_cycles_per_line[0][0]


def test_synthetic_patterns():
    a = pattern_addresses(4, 0.5, lines=16)
    assert list(a // 64) == [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27]


def test_refit_scales_each_part_to_the_engine():
    import engine.config
    term = DramTerm.build(engine.config.load_config("DDR4-3200"), _fake_calibration())
    obs = [Observation({"time": 100.0, "background": 10.0, "refresh": 1.0, "data": 5.0,
                        "act": 1.0}, {"time": 50.0, "background": 12.0, "refresh": 0.0,
                                      "data": 5.0, "act": 2.0}),
           Observation({"time": 300.0, "background": 30.0, "refresh": 1.0, "data": 15.0,
                        "act": 1.0}, {"time": 150.0, "background": 36.0, "refresh": 0.0,
                                      "data": 10.0, "act": 2.0})]
    k = refit(term, obs).scales()
    assert k == pytest.approx({"k_time": 0.5, "k_background": 1.2, "k_refresh": 1.0,
                               "k_data": 0.75, "k_act": 2.0})


def _small_net() -> Network:
    a = Layer("a", "conv", {"N": 1, "K": 16, "C": 8, "P": 8, "Q": 8, "R": 3, "S": 3})
    b = Layer("b", "conv", {"N": 1, "K": 16, "C": 16, "P": 8, "Q": 8, "R": 3, "S": 3},
              producers=("a",))
    return Network("small2", [a, b])


def _worse(space: SearchSpace, good: Schedule) -> Schedule:
    """A random valid schedule with twice the model EDP of ``good`` but no more than 3x its
    DRAM traffic (so the engine run stays short)."""
    from optimizer.space import repair
    rng = np.random.default_rng(3)
    ref = evaluate_schedule(space.net, good, space.hw)
    for _ in range(200):
        s = space.schedule(repair(space, space.random_choices(rng)), [])
        res = evaluate_schedule(space.net, s, space.hw)
        if res.valid and res.edp > 2 * ref.edp and res.dram_bytes < 3 * ref.dram_bytes:
            return s
    raise AssertionError("no worse schedule found")


def test_loop_keeps_the_best_engine_edp_and_stops_when_it_stops_improving(tmp_path):
    net, hw = _small_net(), load_hardware("small")
    memory = cosim.load_memory("DDR4-3200")
    space = SearchSpace.build(net, hw)
    good_ch, good_fused = polish(space, space.minimal_choices(), [], rounds=2, samples=64)
    good = space.schedule(good_ch, good_fused)
    bad = _worse(space, good)
    plan = [good, bad, good]
    calls = []

    def optimize(n, h):
        sched = plan[len(calls)]
        calls.append(h)
        return sched, evaluate_schedule(n, sched, h)

    iters = cosim.closed_loop(net, hw, memory, optimize=optimize, iterations=2,
                              cache_dir=tmp_path)
    # iteration 1 was worse on the engine: the loop stopped there and kept iteration 0
    assert len(iters) == 2 and len(calls) == 2
    assert iters[1].cosim.engine_edp > iters[0].cosim.engine_edp
    assert [it.kept for it in iters] == [True, False]
    s = cosim.summary(iters)
    assert s["engine_edp_last"] == s["engine_edp_first"] == iters[0].cosim.engine_edp
    # the best-so-far engine EDP never increases
    best = [min(s["engine_edp_per_iteration"][:i + 1])
            for i in range(len(s["engine_edp_per_iteration"]))]
    assert all(b2 <= b1 for b1, b2 in zip(best, best[1:]))
    assert best[-1] == s["engine_edp_last"]
    # every iteration after the first optimised under the refit DRAM term
    assert calls[0] is hw and calls[1].dram is not None
    # ... whose own objective scores the worse schedule worse than the best so far: the
    # re-optimisation fell short as a search (the term did not mislead it)
    assert len(s["objective_vs_best"]) == 1 and s["objective_vs_best"][0] > 1.0
    assert iters[1].objective_edp == pytest.approx(evaluate_schedule(net, bad, calls[1]).edp)
    json.dumps(s)


def test_loop_stops_on_a_schedule_it_already_measured(tmp_path):
    net, hw = _small_net(), load_hardware("small")
    memory = cosim.load_memory("HBM2")
    space = SearchSpace.build(net, hw)
    ch, fused = polish(space, space.minimal_choices(), [], rounds=1, samples=32)
    sched = space.schedule(ch, fused)
    iters = cosim.closed_loop(net, hw, memory, optimize=lambda n, h: (sched, None),
                              iterations=3, cache_dir=tmp_path)
    assert len(iters) == 1 and iters[0].kept


def test_kendall_tau():
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # 5 concordant, 1 discordant pair
    assert kendall_tau([1, 2, 3, 4], [1, 2, 4, 3]) == pytest.approx(4 / 6)


def test_validation_candidates_are_distinct_valid_and_bounded():
    net, hw = _small_net(), load_hardware("small")
    space = SearchSpace.build(net, hw)
    ch, fused = polish(space, space.minimal_choices(), [], rounds=2, samples=64)
    best = space.schedule(ch, fused)
    picks = candidates(space, [best], 5, seed=1, max_traffic=4.0)
    assert picks[0] == ("loop-0", best)
    keys = [json.dumps(s.to_json()["layers"], sort_keys=True) + str(sorted(s.fused))
            for _, s in picks]
    assert len(set(keys)) == len(keys)
    limit = 4.0 * evaluate_schedule(net, best, hw).dram_bytes
    for _, s in picks:
        res = evaluate_schedule(net, s, hw)
        assert res.valid and res.dram_bytes <= limit


def test_validation_reuses_the_loop_measurements_and_reports_ratios(tmp_path):
    from optimizer.validation import validate
    net, hw = _small_net(), load_hardware("small")
    memory = cosim.load_memory("DDR4-3200")
    space = SearchSpace.build(net, hw)
    ch, fused = polish(space, space.minimal_choices(), [], rounds=2, samples=64)
    best = space.schedule(ch, fused)
    dhw = cosim.dram_hardware(hw, memory, cache_dir=tmp_path)
    cs = cosim.cosimulate(net, best, hw, memory, dram_hw=dhw)
    dhw = DramAwareHardware.of(hw, refit(dhw.dram, cs.observations()))
    picks = candidates(space, [best], 3, seed=2)
    v = validate(net, hw, memory, dhw, picks, measured=[(best, cs)])
    assert v["schedules"] == len(picks) and -1.0 <= v["kendall_tau_edp"] <= 1.0
    p0 = v["points"][0]
    assert p0["engine_edp"] == cs.engine_edp          # reused, not simulated again
    # refit on this very schedule: its totals match the engine's by construction
    assert p0["model_dram_cycles"] == pytest.approx(p0["engine_dram_cycles"], rel=1e-9)
    assert v["dram_cycles_ratio_median"] > 0 and v["dram_energy_ratio_median"] > 0
    assert set(v["calibrated"]) >= {"kendall_tau_edp", "dram_cycles_ratio_median"}
    json.dumps(v)


def _readback_layer():
    """conv K=8, C=128, P=16, Q=4, 1x1; DRAM loops C=2 (outer) x P=8: the 8 output tiles
    (8 channels x 2 rows x 4 pixels = one aligned 64-byte line each) are written in the first
    pass over C and read back and rewritten in the second, 8 lines after their write."""
    layer = Layer("L", "conv", {"N": 1, "K": 8, "C": 128, "P": 16, "Q": 4, "R": 1, "S": 1})
    one = {d: 1 for d in DIMS}
    temporal = [dict(one, C=2, P=8), dict(one, C=64), dict(one, K=8, P=2, Q=4), dict(one)]
    order = ("C", "P", "N", "K", "Q", "R", "S")
    return Network("rb", [layer]), LayerMapping(temporal, [order] * 4, 1, 1)


def test_partial_sum_read_backs_use_the_calibrated_write_buffer_hits():
    """Hand-computed: 8 read-backs at a span of 8 lines.  Paced hits (energy) remove that
    share of the read-backs and of their rewrites, back-to-back hits that share of their
    service time (a read and a write stream of the output's pattern); the buffer's size
    plays no part."""
    import dataclasses

    import engine.config
    from optimizer.dma_trace import Placement, layer_requests
    cfg = engine.config.load_config("DDR4-3200")
    net, m = _readback_layer()
    sched = Schedule("rb", {"L": m})
    lt = layer_requests(net.layers[0], m, Placement(net, "nhwc"), start=0.0, duration=100.0,
                        read_inputs={"I": True, "W": True}, write_output=True)
    assert lt.bytes_by_tensor["O_read"] == 8 * 64 and lt.bytes_by_tensor["O_write"] == 16 * 64
    base = _fake_calibration()
    none = dataclasses.replace(base, readback_hit_burst=[0.0] * len(READBACK_SPANS),
                               readback_hit_paced=[0.0] * len(READBACK_SPANS),
                               readback_cycles_per_line=[3.0] * len(READBACK_SPANS))
    # paced: half the read-backs hit at span 8; back to back 7/8
    some = dataclasses.replace(
        none, readback_hit_paced=[max(0.0, 1 - s / 16) for s in READBACK_SPANS],
        readback_hit_burst=[max(0.0, 1 - s / 64) for s in READBACK_SPANS],
        readback_cycles_per_line=[2.0 + s / 16 for s in READBACK_SPANS])
    hw = load_hardware("large")
    p0, p1 = (model_parts(net, sched, DramAwareHardware.of(hw, DramTerm.build(cfg, c)))[0]
              for c in (none, some))
    # without hits the model moves every request of the trace
    assert p0["lines"] == pytest.approx(len(lt.addr))
    # 8 read-backs x 0.5 paced hits, each with its rewrite
    assert p0["lines"] - p1["lines"] == pytest.approx(2 * 8 * 0.5)
    mpa = 1.0 / cfg.tCK
    # output tiles: one line each, 512 bytes apart (run 1 line, density 1/8): the fake
    # tables give 4 + 3 cycles a read, 6 a write; back to back 7/8 of the 8 read-backs hit
    assert p0["time"] - p1["time"] == pytest.approx(8 * 0.875 * (7.0 + 6.0) / mpa)
    inc = cfg.energy_increments
    from engine.power import io_energy_per_bit
    io = io_energy_per_bit("DDR4")
    per_pair = (inc["read"] * cfg.tCK + 64 * 8 * io.read_pJ_per_bit
                + inc["write"] * cfg.tCK + 64 * 8 * io.write_pJ_per_bit)
    assert p0["data"] - p1["data"] == pytest.approx(8 * 0.5 * per_pair)
    # the controller's queue size is not an input any more: a bigger buffer changes nothing
    # until the calibration (which measures it) changes
    big = cfg.replace(trans_queue_size=4 * cfg.trans_queue_size)
    p2 = model_parts(net, sched, DramAwareHardware.of(hw, DramTerm.build(big, some)))[0]
    assert p2["lines"] == pytest.approx(p1["lines"]) and p2["time"] == pytest.approx(p1["time"])
    assert config_hash(big) != config_hash(cfg)


def test_readback_pattern_and_its_calibration_on_the_engine():
    from optimizer.dram_model import PACED_GAP, _readback_run, readback_pattern
    addr, isw = readback_pattern(16, lines=64)
    lines = addr // 64
    # 2 tiles of 8 lines written, then each visit: read the tile back, write it again
    assert list(lines[:16]) == list(range(16)) and isw[:16].all()
    assert list(lines[16:24]) == list(range(8)) and not isw[16:24].any()
    assert list(lines[24:32]) == list(range(8)) and isw[24:32].all()
    import engine.config
    cfg = engine.config.load_config("DDR4-3200")
    # a read-back right after its write is always served by the write buffer; one 256 lines
    # later never is (the buffer holds 32 writes), back to back or paced
    assert _readback_run(cfg, 2, 0)[0] == pytest.approx(1.0, abs=0.01)
    assert _readback_run(cfg, 256, 0)[0] == 0.0
    assert _readback_run(cfg, 256, PACED_GAP)[0] == 0.0
    # paced, the buffer drains above its low watermark (8) whenever the queues are empty:
    # at a span of 32 lines, fewer read-backs hit than back to back
    assert _readback_run(cfg, 32, PACED_GAP)[0] < _readback_run(cfg, 32, 0)[0]


def test_output_tiles_sharing_a_line_hit_the_write_buffer_like_the_engine(tmp_path):
    """4-channel output tiles (4 bytes) of a 64-channel NHWC output: the 16 tiles of a pixel
    share its 64-byte line, written 7 tiles apart (the Q loop of 7 inside the K loop of 16),
    so their writes merge and the partial-sum read-backs hit the buffer although each tile
    itself is revisited only 7168 tiles later.  The model's service time follows the
    engine's; without the neighbour rule it is several times too long."""
    import dataclasses

    from optimizer.costmodel import schedule_network_costs
    from optimizer.dma_trace import Placement, layer_requests
    from optimizer.dram_model import dram_traffic
    layer = Layer("L", "conv", {"N": 1, "K": 64, "C": 32, "P": 8, "Q": 56, "R": 1, "S": 1})
    one = {d: 1 for d in DIMS}
    temporal = [dict(one, C=2, P=8, Q=8), dict(one, K=16, Q=7), dict(one, C=16), dict(one)]
    orders = [("N", "C", "P", "Q", "R", "S", "K"), ("N", "K", "P", "Q", "C", "R", "S")] * 2
    m = LayerMapping(temporal, orders, 4, 1)
    net = Network("share", [layer])
    sched = Schedule("share", {"L": m})
    memory = cosim.load_memory("DDR4-3200")
    hw = cosim.dram_hardware(load_hardware("large"), memory, cache_dir=tmp_path)
    nc, _ = schedule_network_costs(net, [m], [], hw)
    c = nc.layer
    assert float(c.o_revisit_tiles[0]) == 16 * 7 * 8 * 8
    assert float(c.o_k_factor[0]) == 16 and float(c.o_k_inner[0]) == 7
    lt = layer_requests(layer, m, Placement(net, "nhwc", block=16), start=0.0, duration=1.0,
                        read_inputs={"I": True, "W": True}, write_output=True)
    st = cosim._simulate(memory, lt.addr, lt.is_write, np.zeros(len(lt.addr), np.int64))
    assert st.summary["num_write_buf_hits"] > 0.5 * lt.bytes_by_tensor["O_read"] / 4
    mpa = 1.0 / memory.tCK
    engine = st.summary["num_cycles"] / mpa
    model = model_parts(net, sched, hw)[0]["time"]
    assert 0.75 < model / engine < 1.33, (model, engine)
    with torch.no_grad():
        alone = dataclasses.replace(c, o_k_factor=torch.ones_like(c.o_k_factor))
        without = float(dram_traffic(hw.dram, alone, nc.dram_reads, nc.dram_writes)
                        .service_cycles[0])
    assert without / engine > 2.0, (without, engine)


def test_residual_reads_are_their_own_stream():
    """A layer that adds a shortcut to its output reads the shortcut once, as whole lines; the
    model's lines equal the DMA trace's requests layer by layer (the shortcut's bytes were
    once spread over W, I and O in proportion, inflating the partial sums)."""
    import engine.config
    from optimizer.dma_trace import Placement, schedule_requests
    a = Layer("a", "conv", {"N": 1, "K": 16, "C": 16, "P": 8, "Q": 8, "R": 1, "S": 1})
    b = Layer("b", "conv", {"N": 1, "K": 16, "C": 16, "P": 8, "Q": 8, "R": 1, "S": 1},
              producers=("a",), residual_from=("a",))
    net = Network("res", [a, b])
    one = {d: 1 for d in DIMS}
    # C split at DRAM level: partial sums are spilled and read back once
    m = LayerMapping([dict(one, C=2), dict(one, C=8), dict(one, K=16, P=8, Q=8), dict(one)],
                     [tuple(DIMS)] * 4, 1, 1)
    sched = Schedule("res", {"a": m, "b": m})
    cfg = engine.config.load_config("DDR4-3200")
    none = dict(readback_hit_burst=[0.0] * len(READBACK_SPANS),
                readback_hit_paced=[0.0] * len(READBACK_SPANS))
    import dataclasses
    term = DramTerm.build(cfg, dataclasses.replace(_fake_calibration(), **none))
    hw = DramAwareHardware.of(load_hardware("large"), term)
    parts = model_parts(net, sched, hw)
    res = evaluate_schedule(net, sched, hw)
    traces = list(schedule_requests(net, sched, res, Placement(net, "nhwc", block=16)))
    assert traces[1].bytes_by_tensor["residual"] == 16 * 8 * 8
    for p, lt in zip(parts, traces):
        assert p["lines"] == pytest.approx(len(lt.addr)), lt.name


def test_readback_hits_depend_on_the_output_lines_density():
    """The read-back tables are [span x density]: the output tiles of ``_readback_layer`` are
    one line each, 512 bytes apart (density 1/8), so only the density-1/8 column applies."""
    import dataclasses

    import engine.config
    cfg = engine.config.load_config("DDR4-3200")
    net, m = _readback_layer()
    sched = Schedule("rb", {"L": m})
    dens = list(READBACK_DENSITIES)
    assert 0.125 in dens

    def table(hit_at):
        return [[hit_at(d) for d in dens] for _ in READBACK_SPANS]
    base = dataclasses.replace(_fake_calibration(), readback_densities=dens,
                               readback_hit_burst=table(lambda d: 0.0),
                               readback_hit_paced=table(lambda d: 0.0))
    sparse = dataclasses.replace(base, readback_hit_paced=table(lambda d: 0.5 if d <= 0.125
                                                                else 0.0))
    dense = dataclasses.replace(base, readback_hit_paced=table(lambda d: 0.5 if d >= 0.5
                                                               else 0.0))
    hw = load_hardware("large")
    p0, ps, pd = (model_parts(net, sched, DramAwareHardware.of(hw, DramTerm.build(cfg, c)))[0]
                  for c in (base, sparse, dense))
    # 8 read-backs x 0.5 hits, each with its rewrite, at the layer's density only
    assert p0["lines"] - ps["lines"] == pytest.approx(2 * 8 * 0.5)
    assert pd["lines"] == pytest.approx(p0["lines"])
    bad = dataclasses.replace(base, readback_hit_paced=[[0.0]] * len(READBACK_SPANS))
    with pytest.raises(ValueError, match="densities"):
        DramTerm.build(cfg, bad)


def test_readback_pattern_density_and_span_on_the_engine():
    """Spread lines drain slower from the write buffer than consecutive ones: on DDR4-3200 at
    a span of about 60 lines, none of the read-backs hit with consecutive lines, a quarter
    with lines 8 apart (measured 0.249; 0.564 before the kernel counted a write drain that
    stops without moving a transaction as an event: the idle jump then skipped the cycles in
    which DRAMsim3's controller schedules the waiting read, 2026-12-03)."""
    from optimizer.dram_model import _readback_run, readback_pattern, readback_span
    addr, isw = readback_pattern(16, lines=64, density=0.125)
    lines = addr // 64
    assert list(lines[:16]) == [8 * i for i in range(16)] and isw[:16].all()
    # mean lines written from a line's write (itself included) to its read-back
    assert readback_span(1) == 1.0 and readback_span(16) == 16 - 3.5
    assert readback_span(64) == 64 - 3.5
    import engine.config
    cfg = engine.config.load_config("DDR4-3200")
    assert _readback_run(cfg, 64, 0, 1.0)[0] == 0.0
    assert 0.2 < _readback_run(cfg, 64, 0, 0.125)[0] < 0.3
