"""The DRAM bytes of a fused producer->consumer group, checked against Stream's accounting
(benchmarks/stream_fusion.py, RESULTS.md issue 13): with the group in lockstep tiles along P
and nothing else tiled at the DRAM level, the fused group reads each weight once, the
producer's input once (the window slides across the tiles) and writes the consumer's output
once; the intermediate never touches DRAM.  Unfused, the intermediate is written and read
back (with the consumer's halo)."""
from __future__ import annotations

import pytest

from optimizer.costmodel import evaluate_schedule
from optimizer.hardware import load_hardware
from optimizer.mapping import LayerMapping, Schedule
from optimizer.workload import DIMS, Layer, Network

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


@pytest.mark.parametrize("tiles", [1, 4])
def test_fused_group_reads_weights_and_input_once(tiles: int) -> None:
    a = Layer("a", "conv", dict(A), 1, ("input",))
    b = Layer("b", "conv", dict(B), 1, ("a",))
    net = Network("pair", [a, b])
    hw = load_hardware("large")
    maps = {"a": _mapping(A, tiles), "b": _mapping(B, tiles)}
    fused = evaluate_schedule(net, Schedule("pair", maps, [("a", "b")]), hw)
    unfused = evaluate_schedule(net, Schedule("pair", maps, []), hw)
    assert fused.valid and unfused.valid, fused.problems + unfused.problems
    w = a.size("W") + b.size("W")                     # 1152 + 2304
    i_once = a.size("I")                              # 8 x 18 x 18 (padded window)
    out = b.size("O")                                 # 16 x 16 x 16
    assert fused.dram_bytes == w + i_once + out
    # unfused: a's output written, b's input (its padded window) read back
    assert unfused.dram_bytes == w + i_once + out + a.size("O") + b.size("I")
