"""The DRAM bytes of a fused producer->consumer group, checked by hand and against Stream's
accounting (benchmarks/stream_fusion.py, RESULTS.md issue 13): with the group in lockstep
tiles along P and nothing else tiled at the DRAM level, the fused group reads each weight
once, the producer's input window per tile, halo included (``FusionGraph.halo="refetch"``,
the default: (P/t - 1) x stride + R rows per tile; ``"slide"``: every input row once, the
window sliding across the tiles) and writes the consumer's output once; the intermediate
never touches DRAM.  Unfused, the intermediate is written and read back (with the consumer's
halo), and every layer slides (Timeloop's rule)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from optimizer.costmodel import (DTYPE, FusionGraph, LayerBatch, MappingTensors,
                                 evaluate_schedule, network_costs)
from optimizer.dma_trace import Placement, schedule_requests
from optimizer.hardware import load_hardware
from optimizer.mapping import LayerMapping, Schedule
from optimizer.workload import DIMS, Layer, Network
import benchmark_script  # noqa: E402  (tests/ is on sys.path)

ROOT = Path(__file__).resolve().parents[1]
A = {"N": 1, "K": 16, "C": 8, "P": 16, "Q": 16, "R": 3, "S": 3}
B = {**A, "C": 16}


def _mapping(dims: dict[str, int], tiles: int) -> LayerMapping:
    one = {d: 1 for d in DIMS}
    dram = {**one, "P": tiles}
    sp = {**one, "C": dims["C"] // 8, "R": dims["R"], "S": dims["S"]}
    acc = dict(one)
    reg = {**one, "P": dims["P"] // tiles, "Q": dims["Q"]}
    order = ("N", "K", "C", "P", "Q", "R", "S")
    sp_order = ("N", "K", "P", "Q", "C", "R", "S")      # each output tile completes
    return LayerMapping([dram, sp, acc, reg], [order, sp_order, order, order], 16, 8)


def _pair(tiles: int):
    a = Layer("a", "conv", dict(A), 1, ("input",))
    b = Layer("b", "conv", dict(B), 1, ("a",))
    net = Network("pair", [a, b])
    maps = {"a": _mapping(A, tiles), "b": _mapping(B, tiles)}
    return a, b, net, maps


def _halo_rows(tiles: int) -> int:
    """Hand count: the extra input rows of t lockstep tiles, each fetching
    (P/t - 1) x stride + R rows, over the (P - 1) x stride + R rows of the sliding window."""
    stride, p, r = 1, A["P"], A["R"]
    return tiles * ((p // tiles - 1) * stride + r) - ((p - 1) * stride + r)


@pytest.mark.parametrize("tiles", [1, 4])
@pytest.mark.parametrize("halo", ["slide", "refetch"])
def test_fused_group_dram_bytes_by_hand(tiles: int, halo: str) -> None:
    a, b, net, maps = _pair(tiles)
    hw = load_hardware("large")
    fused = evaluate_schedule(net, Schedule("pair", maps, [("a", "b")]), hw, halo=halo)
    unfused = evaluate_schedule(net, Schedule("pair", maps, []), hw, halo=halo)
    assert fused.valid and unfused.valid, fused.problems + unfused.problems
    w = a.size("W") + b.size("W")                     # 1152 + 2304
    i_once = a.size("I")                              # 8 x 18 x 18 (padded window)
    out = b.size("O")                                 # 16 x 16 x 16
    cols = (A["Q"] - 1) * 1 + A["S"]                  # 18 input columns
    halo_words = A["C"] * cols * _halo_rows(tiles) if halo == "refetch" else 0
    assert _halo_rows(1) == 0 and _halo_rows(4) == 6  # 4 tiles of 6 rows = 24 vs 18
    assert fused.dram_bytes == w + i_once + halo_words + out
    assert fused.layers[0].dram_reads == a.size("W") + i_once + halo_words
    # unfused: a's output written, b's input (its padded window) read back; both slide
    assert unfused.dram_bytes == w + i_once + out + a.size("O") + b.size("I")


def test_halo_term_follows_sigma_and_has_a_gradient() -> None:
    """The halo words scale with sigma (the search's relaxation) and sigma's gradient sees
    them: the producer's DRAM reads are unfused + sigma x halo."""
    _, _, net, maps = _pair(4)
    hw = load_hardware("large")
    lb = LayerBatch.from_network(net)
    mt = MappingTensors.from_mappings([maps["a"], maps["b"]])
    fg = FusionGraph.from_network(net, "refetch")
    halo_words = A["C"] * 18 * _halo_rows(4)
    unfused = network_costs(lb, mt, hw, fg, torch.zeros(1, dtype=DTYPE)).dram_reads[0]
    assert float(unfused) == A["K"] * A["C"] * 9 + 8 * 18 * 18
    for s in (0.25, 0.5, 1.0):
        sigma = torch.tensor([s], dtype=DTYPE, requires_grad=True)
        reads = network_costs(lb, mt, hw, fg, sigma).dram_reads[0]
        assert float(reads.detach()) == pytest.approx(float(unfused) + s * halo_words)
        (grad,) = torch.autograd.grad(reads, sigma)
        assert float(grad[0]) == pytest.approx(halo_words)
    slide = FusionGraph.from_network(net, "slide")
    sigma = torch.tensor([1.0], dtype=DTYPE)
    assert float(network_costs(lb, mt, hw, slide, sigma).dram_reads[0]) == float(unfused)
    with pytest.raises(ValueError):
        FusionGraph.from_network(net, "rolling")


@pytest.mark.parametrize("halo", ["slide", "refetch"])
def test_dma_trace_moves_the_fused_bytes_the_model_counts(halo: str) -> None:
    _, _, net, maps = _pair(4)
    hw = load_hardware("large")
    sched = Schedule("pair", maps, [("a", "b")])
    res = evaluate_schedule(net, sched, hw, halo=halo)
    for lt, lr in zip(schedule_requests(net, sched, res, Placement(net, "nhwc"), halo=halo),
                      res.layers):
        assert lt.useful_bytes == lr.dram_reads + lr.dram_writes, (halo, lt.name)


def test_refinement_scores_the_fused_producer_exactly() -> None:
    """The refinement scores a layer's alternatives on that layer alone: with the halo
    term (which depends on the layer's own mapping) its figures are the network's."""
    from optimizer.polish import _layer_terms, _score_layer
    from optimizer.space import SearchSpace

    _, _, net, _ = _pair(4)
    hw = load_hardware("large")
    space = SearchSpace.build(net, hw)
    choices = space.minimal_choices()
    # nothing at the DRAM level (every dim's first split with DRAM factor 1), then every split
    # of layer a's P: those with DRAM P > 1 tile the fused group and re-fetch the halo
    for i, lsp in enumerate(space.layers):
        for d, split in enumerate(lsp.splits):
            choices[i, d] = int(np.flatnonzero(np.asarray(split.table)[:, 0] == 1)[0])
    p_gene = DIMS.index("P")
    sizes = space.layers[0].sizes()
    fused = [0]
    nc, c_all = _layer_terms(space, choices, fused)
    cand = np.repeat(choices[0][None, :], sizes[p_gene], 0)
    cand[:, p_gene] = np.arange(sizes[p_gene])
    cyc, energy, _ = _score_layer(space, 0, cand, fused, nc, c_all, choices)
    saw_halo = False
    for j in range(len(cand)):
        trial = choices.copy()
        trial[0] = cand[j]
        nc_j, c_j = _layer_terms(space, trial, fused)
        saw_halo |= float(c_j.dram_i_halo[0]) > 0
        assert float(cyc[j]) == pytest.approx(float(nc_j.cycles[0]), rel=1e-12)
        assert float(energy[j]) == pytest.approx(float(nc_j.energy[0]), rel=1e-12)
    assert saw_halo


def _stream_fusion():
    return benchmark_script.load("stream_fusion")


def test_model_gives_the_stored_stream_figures() -> None:
    """Stream's stored per-case figures (benchmarks/results/issue13_stream_large.json, the
    RESULTS table): on every case both tools fit, the model's fused-group bytes are Stream's
    exactly; on every case, the sliding rule gives the stored model bytes and the refetch rule
    those plus the per-tile halo counted by hand."""
    sf = _stream_fusion()
    stored = json.loads((ROOT / "benchmarks/results/issue13_stream_large.json").read_text())
    assert stored["hw"] == "gemmini-large"
    hw = load_hardware("large")
    groups = {g[0]: g for g in sf.GROUPS}
    both = 0
    for row in stored["rows"]:
        o = sf.ours(groups[row["group"]], row["tiles"], hw)
        assert o["dram_bytes_slide"] == row["ours_bytes"], row["group"]
        assert o["dram_bytes"] == row["ours_bytes"] + row["input_per_tile_halo"] \
            - row["input_once"], row["group"]
        if row["ours_fits"] and row["stream_fits"] and not math.isnan(row["stream_bytes"]):
            both += 1
            assert o["dram_bytes"] == row["stream_bytes"], (row["group"], row["tiles"])
    assert both == 14
