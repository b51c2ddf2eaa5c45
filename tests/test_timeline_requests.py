"""Request lifetimes of the command timeline (gui.timeline_requests, Qt-free): every RD / WR is
matched to the request it served, and the matched lifetimes add up to the engine's own read
latency statistics exactly."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engine.config import load_config
from engine.jedec_check import parse_command_trace
from engine.simulator import SimOptions, cmd_trace_paths, simulate_trace
from engine.trace import TraceChunk, write_text
from gui.timeline_requests import decode, match, read_requests


@pytest.mark.parametrize("xor", [False, True])
def test_lifetimes_agree_with_the_engines_read_latency(tmp_path, xor):
    # xor: the command trace prints the bank after the XOR interleave; the timeline decodes
    # the requests with the engine's decoder, so every column command still finds its request
    cfg = load_config("DDR4-3200").replace(xor_bank_interleave=xor)
    rng = np.random.default_rng(1)
    n = 400
    addr = (rng.integers(0, 1 << 28, n) & ~63).astype(np.uint64)
    addr[::5] = addr[0]                          # one location asked again and again
    cyc = np.cumsum(rng.integers(1, 60, n))      # sparse: the queues never fill
    w = rng.random(n) < 0.3
    trace = tmp_path / "t.trace"
    write_text(trace, TraceChunk.from_arrays(addr, w, cyc))
    end = int(cyc[-1]) + 2000
    path = tmp_path / "c.txt"
    stats = simulate_trace(cfg, trace, SimOptions(cycles=end, cmd_trace=str(path), epoch=end))
    cmds = []
    for i, q in enumerate(cmd_trace_paths(path, int(cfg.channels))):
        if q.exists():
            cmds += [c if c.channel >= 0 else dataclasses.replace(c, channel=i)
                     for c in parse_command_trace(q)]
    cmds.sort(key=lambda c: c.cycle)
    m = match(cmds, cfg, *read_requests(trace, end))
    s = stats.summary
    reads = [x for g in m.by_line.values() for x in g if not x.is_write]
    # every RD served its reads (merged ones too), the rest came from the write queue
    assert len(reads) == s["num_read_cmds"] + s["num_read_merges"]
    assert m.forwarded == s["num_reads_done"] - len(reads) > 0
    writes = [x for g in m.by_line.values() for x in g if x.is_write]
    assert len(writes) == s["num_write_cmds"] + s["num_write_merges"]
    # writes the controller still buffers at the end (it drains them in batches)
    assert m.pending == int(w.sum()) - len(writes)
    assert m.column_commands == sum(c.kind.startswith(("read", "write")) for c in cmds)
    # the engine counts latency from acceptance (the cycle after the request's) and a
    # forwarded read as 1 cycle: the sums are equal
    total = sum(x.latency - 1 for x in reads) + m.forwarded
    assert total == round(s["average_read_latency"] * s["num_reads_done"])
    for x in reads:
        assert x.done == x.issued + cfg.read_delay and x.arrival <= x.issued


def test_decode_is_the_address_mapping():
    cfg = load_config("DDR4-3200")
    pos, shift = cfg.field_positions, cfg.shift_bits
    a = np.asarray([(5 << (pos["ro"] + shift)) | (3 << (pos["co"] + shift))
                    | (2 << (pos["bg"] + shift))], dtype=np.uint64)
    f = decode(cfg, a)
    assert (int(f["ro"][0]), int(f["co"][0]), int(f["bg"][0]), int(f["ba"][0])) == (5, 3, 2, 0)
