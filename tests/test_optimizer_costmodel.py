"""The Gemmini cost model, the search space and FADiff: hand-computed cases, agreement with
timeloop-model, gradients, fusion accounting, decoding validity, and input errors."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from optimizer import fadiff
from optimizer.costmodel import (LayerBatch, MappingTensors, evaluate_schedule, level_counts,
                                 network_costs)
from optimizer.errors import HardwareError, MappingError, WorkloadError
from optimizer.hardware import load_hardware
from optimizer.mapping import LayerMapping, Schedule
from optimizer.search import Budget, score
from optimizer.space import SearchSpace, repair
from optimizer.workload import DIMS, NETWORKS, Layer, Network, load_network, network_from_json

ORDER = ("N", "K", "C", "P", "Q", "R", "S")


def mapping(levels: list[dict[str, int]], ks: int = 1, cs: int = 1,
            orders: list[tuple[str, ...]] | None = None) -> LayerMapping:
    temporal = [{d: lv.get(d, 1) for d in DIMS} for lv in levels]
    return LayerMapping(temporal, orders or [ORDER] * 4, ks, cs)


def small_hw():
    return replace(load_hardware("small"), dram_bw=8.0, sp_bw=8.0, acc_bw=2.0)


def costs_of(layers: list[Layer], maps: list[LayerMapping], hw=None, fused=()):
    net = Network("t", layers)
    sched = Schedule("t", {l.name: m for l, m in zip(layers, maps)}, list(fused))
    return net, evaluate_schedule(net, sched, hw or small_hw())


# ---- hand-computed -----------------------------------------------------------------------
def test_counts_of_a_small_conv_computed_by_hand():
    # conv N1 K4 C2 P4 Q1 R3 S1, stride 1 (input row of 6): K over 4 columns, C over 2 rows,
    # the accumulator loops R3 then P2 (P innermost), P2 more at DRAM
    layer = Layer("c", "conv", {"N": 1, "K": 4, "C": 2, "P": 4, "Q": 1, "R": 3, "S": 1})
    m = mapping([{"P": 2}, {}, {"R": 3, "P": 2}, {}], ks=4, cs=2,
                orders=[ORDER, ORDER, ("N", "K", "C", "R", "S", "Q", "P"), ORDER])
    lb = LayerBatch.from_network(Network("t", [layer]))
    nc = network_costs(lb, MappingTensors.from_mappings([m]), small_hw())
    got = level_counts(nc.layer, 0)
    macs = 4 * 2 * 4 * 3
    # register weights: the innermost P loop reuses the weight, R3 changes it, DRAM P2 repeats
    # it: 3 x 2 fills per PE, 8 PEs
    assert got["Registers"]["Weights"]["fills_total"] == 48
    assert got["Registers"]["Weights"]["reads_total"] == macs
    assert got["Scratchpad"]["Weights"]["reads_total"] == 48
    # scratchpad weights: the whole 4x2x3 tensor once (DRAM P is irrelevant to weights)
    assert got["Scratchpad"]["Weights"]["fills_total"] == 24
    assert got["DRAM"]["Weights"]["reads_total"] == 24
    # inputs: tile = 2 channels x (2-1+3) columns = 8; the DRAM P step of 2 slides the window
    # by 2 of its 4 columns: 8 + 4 = 12 = the whole 2 x 6 input, read once
    assert got["Scratchpad"]["Inputs"]["fills_total"] == 12
    assert got["Scratchpad"]["Inputs"]["reads_total"] == macs / 4      # multicast over K
    # outputs: drained once each (16), accumulator updated MACs / 2 rows, read updates - |O|
    assert got["DRAM"]["Outputs"]["updates_total"] == 16
    assert got["DRAM"]["Outputs"]["reads_total"] == 0
    assert got["Accumulator"]["Outputs"]["updates_total"] == macs / 2
    assert got["Accumulator"]["Outputs"]["reads_total"] == macs / 2 - 16
    # cycles: compute 96/8 = 12, DRAM (24+12+16)/8 = 6.5, accumulator (32+48)/4 slices/2 = 10,
    # scratchpad (48+24 reads, 24+12 fills)/8 = 13.5: the scratchpad port limits this layer
    assert float(nc.compute_cycles[0]) == 12.0
    assert float(nc.acc_cycles[0]) == 10.0
    assert float(nc.cycles[0]) == 13.5
    hw = small_hw()
    energy = (24 + 12 + 16) * 64.0 + 48 * hw.e_sp_read + (24 + 12) * hw.e_sp_write \
        + 24 * hw.e_sp_read + 32 * hw.e_acc_read + 48 * hw.e_acc_write \
        + macs * (hw.e_reg_read + hw.e_mac)
    assert float(nc.total_energy) == pytest.approx(energy, rel=1e-12)


def test_window_does_not_slide_past_a_reused_loop():
    # same layer; now K is looped at DRAM *inside* the P loop: each P step refetches the tile
    layer = Layer("c", "conv", {"N": 1, "K": 4, "C": 2, "P": 4, "Q": 1, "R": 3, "S": 1})
    m = mapping([{"P": 2, "K": 2}, {}, {"R": 3, "P": 2}, {}], ks=2, cs=2,
                orders=[("N", "P", "K", "C", "Q", "R", "S"), ORDER,
                        ("N", "K", "C", "R", "S", "Q", "P"), ORDER])
    _, res = costs_of([layer], [m])
    lb = LayerBatch.from_network(Network("t", [layer]))
    nc = network_costs(lb, MappingTensors.from_mappings([m]), small_hw())
    assert level_counts(nc.layer, 0)["DRAM"]["Inputs"]["reads_total"] == 16   # 8 x 2
    assert res.valid


def test_counts_equal_timeloop_on_the_reference_mappings(timeloop_explicit):
    for entry, layer, m, hw in timeloop_explicit:
        lb = LayerBatch.from_network(Network("n", [layer]))
        nc = network_costs(lb, MappingTensors.from_mappings([m]), hw)
        ours = level_counts(nc.layer, 0)
        for level, data in entry["results"]["per_level"].items():
            for tensor, counts in data["tensors"].items():
                for key in ("reads_total", "fills_total", "updates_total"):
                    assert ours[level][tensor][key] == counts[key], (entry["id"], level,
                                                                     tensor, key)
        assert float(nc.total_cycles) == pytest.approx(entry["results"]["cycles"], abs=2)
        assert float(nc.total_energy) == pytest.approx(entry["results"]["energy_pJ"],
                                                       rel=1e-6)
    assert len(timeloop_explicit) == 36


# ---- fusion --------------------------------------------------------------------------------
def _two_layer_net() -> Network:
    a = Layer("a", "conv", {"N": 1, "K": 8, "C": 4, "P": 4, "Q": 4, "R": 1, "S": 1})
    b = Layer("b", "conv", {"N": 1, "K": 8, "C": 8, "P": 4, "Q": 4, "R": 1, "S": 1},
              producers=("a",))
    return Network("two", [a, b])


def test_fusion_removes_exactly_the_fused_tensor_from_dram():
    net = _two_layer_net()
    # both layers keep everything on chip: the producer writes its output once, the consumer
    # reads its input once; the DRAM tiles are aligned (one tile)
    ma = mapping([{}, {"P": 4, "Q": 4}, {"K": 1}, {}], ks=8, cs=4)
    mb = mapping([{}, {"P": 4, "Q": 4}, {}, {}], ks=8, cs=8)
    hw = small_hw()
    plain = evaluate_schedule(net, Schedule("two", {"a": ma, "b": mb}), hw)
    fused = evaluate_schedule(net, Schedule("two", {"a": ma, "b": mb}, [("a", "b")]), hw)
    assert plain.valid and fused.valid, (plain.problems, fused.problems)
    tensor = 8 * 4 * 4           # a's output = b's input, 8-bit words
    assert plain.dram_bytes - fused.dram_bytes == 2 * tensor
    assert fused.layers[0].dram_writes == plain.layers[0].dram_writes - tensor
    assert fused.layers[1].dram_reads == plain.layers[1].dram_reads - tensor
    assert fused.energy_pj < plain.energy_pj
    assert fused.groups == [["a", "b"]]


def test_misaligned_fusion_is_reported_invalid():
    net = _two_layer_net()
    ma = mapping([{"P": 2}, {"P": 2, "Q": 4}, {}, {}], ks=8, cs=4)
    mb = mapping([{}, {"P": 4, "Q": 4}, {}, {}], ks=8, cs=8)
    res = evaluate_schedule(net, Schedule("two", {"a": ma, "b": mb}, [("a", "b")]),
                            small_hw())
    assert not res.valid
    assert any("not aligned" in p for p in res.problems)


def test_residual_read_is_charged_unless_the_block_is_fused():
    net = load_network("resnet18")
    space = SearchSpace.build(net, load_hardware("large"))
    ch = space.minimal_choices()
    with torch.no_grad():
        plain = network_costs(space.batch, space.tensors(ch), space.hw, space.graph)
        bare = network_costs(space.batch, space.tensors(ch), space.hw)
    extra = float((plain.dram_reads - bare.dram_reads).sum())
    shortcut = sum(net.layers[s].size("O") for s, _ in net.residuals)
    assert extra == shortcut


# ---- the search space and FADiff -----------------------------------------------------------
def test_every_split_is_a_perfect_factorisation():
    net = load_network("mobilenet_v1")
    hw = load_hardware("small")
    space = SearchSpace.build(net, hw)
    for layer, ls in zip(net.layers, space.layers):
        for d, s in zip(DIMS, ls.splits):
            assert np.all(s.table.prod(1) == layer.dims[d])
            if d not in ("N", "P", "Q"):
                assert np.all(s.table[:, 3] == 1)         # registers hold one weight
            assert np.all(s.table[:, 4] <= (hw.cols if d == "K" else hw.rows))


def test_repair_makes_random_choices_valid():
    space = SearchSpace.build(load_network("resnet18"), load_hardware("small"))
    rng = np.random.default_rng(3)
    ch = repair(space, space.random_choices(rng))
    res = evaluate_schedule(space.net, space.schedule(ch, []), space.hw)
    assert res.valid, res.problems
    assert score(space, ch)[1] == 0


def test_gradients_reach_every_variable():
    space = SearchSpace.build(load_network("resnet18"), load_hardware("large"))
    gen = torch.Generator().manual_seed(0)
    model = fadiff._Model(space, 2, fadiff.FADiffSettings(), gen)
    with torch.no_grad():
        model.beta.fill_(1.0)       # sigma ~ 0.73: fusion terms active
    nc, c, logd, sigma, _, _ = model.forward(0.5, gen)
    cap, fuse_cap, align = model.penalties(c, logd, sigma)
    (torch.log(nc.edp) + cap + fuse_cap + align).sum().backward()
    # every shape group's decision (shared by its identical layers) gets a gradient
    per_group = model.logits.grad.abs().sum((0, 2, 3))
    assert len(per_group) == len(space.shape_groups()) and torch.all(per_group > 0)
    assert torch.all(model.order_logits.grad.abs().sum((0, 2)) > 0)
    fusable = space.graph.fusable
    assert torch.all(model.beta.grad[:, fusable].abs().sum(0) > 0)
    assert torch.all(model.beta.grad[:, ~fusable] == 0)


@pytest.mark.parametrize("network,hw,seed", [("two", "small", 0), ("gpt3_6.7b_ffn", "large", 1),
                                             ("mobilenet_v1", "small", 2)])
def test_fadiff_decodes_to_a_valid_schedule(network, hw, seed):
    net = _two_layer_net() if network == "two" else load_network(network)
    space = SearchSpace.build(net, load_hardware(hw))
    steps = []
    L = len(space.layers)
    budget = Budget(evaluations=12 * 12 * L)      # ~12 steps of one chain (9L each + decoding)
    result = fadiff.run(space, budget, seed=seed, progress=steps.append)
    assert result.result.valid, result.result.problems
    assert result.schedule.meta["steps"] == len(steps) >= 10
    assert steps[-1].tau < steps[0].tau          # the temperature anneals on the clock
    # the schedule survives a JSON round trip and re-scores identically
    again = Schedule.from_json(json.loads(json.dumps(result.schedule.to_json())))
    assert evaluate_schedule(net, again, space.hw).edp == result.result.edp


def test_fadiff_is_deterministic_for_a_seed():
    space = SearchSpace.build(_two_layer_net(), load_hardware("small"))
    budget = Budget(evaluations=8 * 9 * 2 * 2)
    a = fadiff.run(space, budget, seed=5)
    b = fadiff.run(space, budget, seed=5)
    assert a.result.edp == b.result.edp
    assert a.schedule.to_json()["layers"] == b.schedule.to_json()["layers"]


def test_fadiff_honours_cancel():
    from optimizer.errors import OptimizationCancelled
    space = SearchSpace.build(_two_layer_net(), load_hardware("small"))
    calls = []
    with pytest.raises(OptimizationCancelled):
        fadiff.run(space, budget=Budget(evaluations=10_000), cancel=lambda: len(calls) > 2,
                   progress=calls.append)
    assert len(calls) == 3


# ---- workloads and hardware files ----------------------------------------------------------
def test_builtin_networks_match_the_shared_layer_shapes(shared_dir):
    path = shared_dir / "workloads.json"
    if not path.exists():
        pytest.skip(f"reference data missing: {path}")
    ref = json.loads(path.read_text())
    for name in NETWORKS:
        net = load_network(name)
        assert [l.name for l in net.layers] == [x["name"] for x in ref[name]]
        for layer, x in zip(net.layers, ref[name]):
            assert layer.dims == x["dims"] and layer.stride == x["stride"]
            assert list(layer.producers) == x["producer"]
            assert list(layer.residual_from) == x.get("residual_from", [])
            assert layer.macs == x["macs"]


def test_network_json_errors_name_the_field(tmp_path):
    bad = tmp_path / "net.json"
    bad.write_text(json.dumps([{"name": "a", "type": "conv", "dims": {"K": 0}}]))
    with pytest.raises(WorkloadError, match=r"net\.json.*layers\[0\].*dims\.K"):
        load_network(bad)
    bad.write_text(json.dumps([{"name": "a", "dims": {}, "producer": ["zz"]}]))
    with pytest.raises(WorkloadError, match="producer 'zz'"):
        load_network(bad)
    bad.write_text("{not json")
    with pytest.raises(WorkloadError, match="not valid JSON"):
        load_network(bad)
    with pytest.raises(WorkloadError, match="unknown network 'lenet'"):
        load_network("lenet")
    net = network_from_json({"name": "x", "layers": [{"name": "a", "dims": {"K": 4}}]}, "x")
    assert net.layers[0].dims["K"] == 4 and net.layers[0].dims["C"] == 1


def test_hardware_file_errors_name_the_field(tmp_path):
    hw = load_hardware("large")
    assert (hw.rows, hw.cols, hw.sp_capacity, hw.acc_capacity) == (32, 32, 524288, 16384)
    assert load_hardware("small").acc_slice_capacity == 8192 // 4 // 16
    path = tmp_path / "hw.toml"
    path.write_text(hw.to_toml())
    assert load_hardware(path) == replace(hw, description=hw.description)
    path.write_text(hw.to_toml().replace("rows = 32", "rows = -3"))
    with pytest.raises(HardwareError, match=r"hw\.toml.*array\.rows.*positive"):
        load_hardware(path)
    path.write_text(hw.to_toml().replace("[mac]\nenergy_pj = 0.408125", ""))
    with pytest.raises(HardwareError, match=r"missing section \[mac\]"):
        load_hardware(path)
    with pytest.raises(HardwareError, match="unknown hardware 'huge'"):
        load_hardware("huge")


def test_malformed_mapping_is_rejected():
    with pytest.raises(MappingError, match="malformed mapping"):
        LayerMapping.from_notation({"temporal": {}})
    layer = Layer("c", "conv", {"N": 1, "K": 4, "C": 2, "P": 4, "Q": 1, "R": 3, "S": 1})
    with pytest.raises(MappingError, match="factors of P multiply to 2, expected 4"):
        mapping([{"P": 2}, {}, {"R": 3}, {}], ks=4, cs=2).check(layer)
