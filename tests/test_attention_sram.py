"""The attention-SRAM what-if removes exactly the tagged requests that fit, and nothing else."""
from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from engine.trace import read_trace
from engine.workloads.attention_sram import (LINE, SramError, SramSpec, apply_attention_sram,
                                             energy_per_line_pj)

PHASES = ["forward", "attention", "backward", "optimizer"]


def _tagged_trace(path, addr, is_write, phase, cycle=None):
    n = len(addr)
    cycle = np.arange(n) if cycle is None else cycle
    with h5py.File(path, "w") as f:
        g = f.create_group("trace")
        g.create_dataset("addr", data=np.asarray(addr, np.uint64))
        g.create_dataset("cycle", data=np.asarray(cycle, np.uint64))
        g.create_dataset("is_write", data=np.asarray(is_write, np.uint8))
        g.create_dataset("stream", data=np.zeros(n, np.uint16))
        g.create_dataset("phase", data=np.asarray(phase, np.uint8))
        g.create_dataset("op", data=np.zeros(n, np.uint32))
        g.create_dataset("role", data=np.zeros(n, np.uint8))
        g.attrs["phase_names"] = json.dumps(PHASES)
        g.attrs["format"] = "diffmem-trace"
        g.attrs["version"] = 1
    return path


def _mixed(n_att_lines: int, reps: int, seed: int = 0):
    """Attention lines 0..n-1 (x LINE, at 1 GiB), each written once then read reps times,
    interleaved at random with 4 * n other requests (forward / backward, other addresses)."""
    rng = np.random.default_rng(seed)
    att = [(a, i > 0) for a in range(n_att_lines) for i in range(reps + 1)]
    att_addr = np.array([(1 << 30) + a * LINE for a, _ in att], np.uint64)
    att_w = np.array([not r for _, r in att])
    m = 4 * n_att_lines
    oth_addr = rng.integers(0, 1 << 24, m).astype(np.uint64) * LINE
    oth_w = rng.random(m) < 0.3
    oth_ph = rng.choice([0, 2], m)
    slot = np.zeros(len(att) + m, bool)
    slot[rng.choice(slot.size, len(att), replace=False)] = True
    addr = np.empty(slot.size, np.uint64)
    w = np.empty(slot.size, bool)
    ph = np.empty(slot.size, np.uint8)
    addr[slot], w[slot], ph[slot] = att_addr, att_w, 1
    addr[~slot], w[~slot], ph[~slot] = oth_addr, oth_w, oth_ph
    return addr, w, ph, slot


@pytest.mark.parametrize("policy", ["pinned", "lru"])
def test_a_working_set_that_fits_is_removed_entirely(tmp_path, policy):
    lines = 256
    addr, w, ph, att = _mixed(lines, reps=3)
    src = _tagged_trace(tmp_path / "t.h5", addr, w, ph)
    spec = SramSpec(size_bytes=lines * LINE, policy=policy, ways=lines,
                    writeback_at_end=False)
    res = apply_attention_sram(src, tmp_path / "o.h5", spec)
    out = read_trace(tmp_path / "o.h5")
    # every attention request is served on chip (first touch is a write: no fill needed)
    assert res.tagged == att.sum() == lines * 4
    assert res.removed == res.tagged and res.fills == 0 and res.writebacks == 0
    # what is left is exactly the other requests, in order, at their cycles
    np.testing.assert_array_equal(out.addr, addr[~att])
    np.testing.assert_array_equal(out.is_write, w[~att])
    np.testing.assert_array_equal(out.cycle, np.flatnonzero(~att))
    assert res.dram_bytes_removed == lines * 4 * LINE


def test_pinned_keeps_only_the_lines_that_fit(tmp_path):
    """Twice the capacity: the first-touched half is pinned and removed; the other half's
    requests all stay, exactly."""
    lines = 128
    addr, w, ph, att = _mixed(2 * lines, reps=2, seed=1)
    src = _tagged_trace(tmp_path / "t.h5", addr, w, ph)
    res = apply_attention_sram(src, tmp_path / "o.h5",
                               SramSpec(size_bytes=lines * LINE, policy="pinned",
                                        writeback_at_end=True))
    line_of = (addr // LINE).astype(np.int64)
    first_touch = []
    for ln in line_of[att]:
        if ln not in first_touch:
            first_touch.append(ln)
    pinned = set(first_touch[:lines])
    removed = att & np.isin(line_of, list(pinned))
    out = read_trace(tmp_path / "o.h5")
    assert res.removed == removed.sum() == lines * 3
    # kept requests unchanged, then one write-back per dirty pinned line at the end
    np.testing.assert_array_equal(out.addr[:-lines], addr[~removed])
    assert res.writebacks == lines
    assert set((out.addr[-lines:] // LINE).tolist()) == pinned
    assert out.is_write[-lines:].all()
    assert res.requests_out == len(addr) - lines * 3 + lines


def test_lru_reads_fill_then_hit_and_dirty_evictions_are_written_back(tmp_path):
    A, B, C = (np.uint64((1 << 30) + k * LINE) for k in range(3))
    addr = [A, A, B, A, C, B]          # read A (fill), read A (hit), write B, read A (hit),
    w = [0, 0, 1, 0, 0, 0]             # read C (evicts B, dirty: write-back), read B (fill)
    src = _tagged_trace(tmp_path / "t.h5", addr, w, [1] * 6)
    res = apply_attention_sram(src, tmp_path / "o.h5",
                               SramSpec(size_bytes=2 * LINE, policy="lru", ways=2,
                                        writeback_at_end=False))
    out = read_trace(tmp_path / "o.h5")
    assert (res.removed_reads, res.removed_writes, res.fills, res.writebacks) == (2, 1, 3, 1)
    assert out.addr.tolist() == [A, B, C, B]
    # SRAM accesses: the 6 requests, 3 fills written in, 1 write-back read out
    assert res.sram_accesses == 10
    assert res.sram_energy_pJ == pytest.approx(10 * energy_per_line_pj(2 * LINE))
    assert out.is_write.tolist() == [False, True, False, False]


def test_energy_source_points_and_errors(tmp_path):
    assert energy_per_line_pj(8 << 10) == pytest.approx(80.0)
    assert energy_per_line_pj(1 << 20) == pytest.approx(800.0)
    assert 160.0 < energy_per_line_pj(64 << 10) < 800.0
    with pytest.raises(SramError, match="policy"):
        SramSpec(policy="fifo")
    with pytest.raises(SramError, match="multiple of 64"):
        SramSpec(size_bytes=100)
    from engine.trace import TraceChunk, write_hdf5
    write_hdf5(tmp_path / "plain.h5", TraceChunk.from_arrays([0], [False], [0]))
    with pytest.raises(SramError, match="phase"):
        apply_attention_sram(tmp_path / "plain.h5", tmp_path / "o.h5")


def test_what_if_reports_dram_traffic_and_time_removed(tmp_path):
    """A read-reuse attention working set that fits: the what-if simulates both traces and
    says how much DRAM traffic, time and energy the SRAM removes, and what it costs."""
    from engine.config import load_config
    from engine.workloads.attention_sram import what_if
    lines = 512
    att = np.repeat(np.arange(lines), 4)                      # each line read 4 times
    rng = np.random.default_rng(2)
    rng.shuffle(att)
    other = rng.integers(0, 1 << 20, 2 * lines)
    addr = np.concatenate([(1 << 30) + att * LINE, other * LINE]).astype(np.uint64)
    ph = np.concatenate([np.ones(att.size, np.uint8), np.zeros(other.size, np.uint8)])
    order = rng.permutation(addr.size)
    src = _tagged_trace(tmp_path / "t.h5", addr[order], np.zeros(addr.size, bool), ph[order])
    out = what_if(load_config("DDR4-3200"), src, tmp_path, SramSpec(size_bytes=lines * LINE,
                                                                     ways=16))
    s = out["sram"]
    assert s["tagged"] == att.size and s["fills"] >= lines
    assert s["removed"] == att.size - s["fills"] and s["writebacks"] == 0
    assert out["dram_bytes"][0] - out["dram_bytes"][1] == s["removed"] * LINE
    assert out["dram_time_removed_ns"] > 0
    assert out["energy_with_sram_pJ"] == pytest.approx(out["dram_energy_pJ"][1]
                                                      + s["sram_energy_pJ"])
