"""The Simulator API a framework or the GUI drives: online access, completions, progress and
epochs, cancellation, streaming in chunks, cycle limits and bad input."""
from __future__ import annotations

import numpy as np
import pytest

from engine.config import load_config
from engine.errors import DiffMemError, SimulationCancelled, TraceError
from engine.kernel_aot import MODE_ENV
from engine.simulator import SimOptions, Simulator, simulate_trace
from engine.trace import TraceChunk, write_text


@pytest.fixture(scope="module")
def ddr4():
    return load_config("DDR4-3200")


def _random_chunk(n, seed=0, gap=2, writes=1 / 3):
    rng = np.random.default_rng(seed)
    addr = (rng.integers(0, (1 << 30) // 64, n) * 64).astype(np.uint64)
    return TraceChunk(addr, rng.random(n) < writes, np.arange(n, dtype=np.int64) * gap,
                      np.zeros(n, np.uint16))


def test_idle_read_latency_is_trcd_cl_burst(ddr4):
    """One read to a closed bank: accepted at cycle 1, command queue at 2, ACT at 2, READ at
    2 + tRCD, data done read_delay later (DRAMsim3's 1 + tRCD + CL + BL/2 after acceptance)."""
    sim = Simulator(ddr4, SimOptions(track_completions=True, epoch=0))
    ids = sim.access([0x1000], [64], [False], [0])
    st = sim.finish()
    done_id, done_t = sim.completions()
    assert done_id.tolist() == ids.tolist()
    assert st.summary["average_read_latency"] == 1 + ddr4.tRCD + ddr4.CL + ddr4.burst_cycle
    assert done_t[0] == 1 + st.summary["average_read_latency"]


def test_access_splits_into_request_lines(ddr4):
    sim = Simulator(ddr4, SimOptions(track_completions=True, epoch=0))
    ids = sim.access([0x100, 0x10000], [256, 64], [False, True], [0, 10])
    assert len(ids) == 4 + 1
    st = sim.finish()
    assert st.summary["num_reads_done"] == 4 and st.summary["num_writes_done"] == 1
    done_id, _ = sim.completions()
    assert sorted(done_id.tolist()) == sorted(ids.tolist())


def test_online_advance_then_more_requests(ddr4):
    sim = Simulator(ddr4, SimOptions(track_completions=True, epoch=0))
    sim.access([0x0], [64], [False], [0])
    sim.advance(500)
    assert sim.clock == 500
    ids, t = sim.completions()
    assert len(ids) == 1 and t[0] < 500
    sim.access([0x40], [64], [False], [600])
    sim.finish()
    ids2, t2 = sim.completions()
    assert len(ids2) == 1 and t2[0] > 600
    with pytest.raises(DiffMemError):
        sim.access([0x80], [64], [False], [10_000])


def test_chunked_feed_equals_one_shot(ddr4):
    """Streaming in small chunks changes nothing: same cycles, latencies, energy."""
    ch = _random_chunk(20_000, seed=4)
    one = Simulator(ddr4, SimOptions(epoch=0))
    one.feed(ch.addr, ch.is_write, ch.cycle, final=True)
    many = Simulator(ddr4, SimOptions(epoch=0))
    for s in range(0, len(ch), 777):
        sl = slice(s, s + 777)
        many.feed(ch.addr[sl], ch.is_write[sl], ch.cycle[sl])
    a, b = one.stats().summary, many.finish().summary
    for key in ("num_cycles", "num_reads_done", "num_writes_done", "average_read_latency",
                "num_act_cmds", "num_read_row_hits", "total_energy", "read_latency_p99"):
        assert a[key] == b[key], key


def test_state_memory_is_constant_in_trace_length(ddr4, tmp_path):
    """The kernel state is allocated once, from the configuration alone."""
    sizes = []
    for n in (2_000, 40_000):
        sim = Simulator(ddr4, SimOptions(epoch=0, chunk_size=4096))
        ch = _random_chunk(n, seed=n)
        for s in range(0, n, 4096):
            sim.feed(ch.addr[s:s + 4096], ch.is_write[s:s + 4096], ch.cycle[s:s + 4096])
        sim.finish()
        sizes.append(sum(a.nbytes for a in sim.s.values()))
    assert sizes[0] == sizes[1]


def test_epochs_add_up_and_progress_is_reported(ddr4):
    ch = _random_chunk(10_000, seed=2)
    seen = []
    sim = Simulator(ddr4, SimOptions(epoch=5_000))
    sim.feed(ch.addr, ch.is_write, ch.cycle, final=True,
             progress=lambda s, rec: seen.append(rec.end))
    st = sim.stats()
    assert seen == sorted(seen) and len(seen) >= 5
    assert sum(e["reads_done"] for e in st.epochs) == st.summary["num_reads_done"]
    assert sum(e["writes_done"] for e in st.epochs) == st.summary["num_writes_done"]
    assert st.epochs[-1]["end"] == st.summary["num_cycles"]
    util = np.array(st.epochs[0]["bank_utilisation"])
    assert util.shape == (1, ddr4.ranks * ddr4.banks)
    assert ((0 <= util) & (util <= 1)).all()


def test_cancel_stops_between_kernel_calls(ddr4):
    ch = _random_chunk(50_000, seed=3)
    sim = Simulator(ddr4, SimOptions(epoch=2_000))
    calls = []

    def cancel():
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(SimulationCancelled):
        sim.feed(ch.addr, ch.is_write, ch.cycle, final=True, cancel=cancel)
    assert not sim.finished


def test_cycle_limit_stops_like_dramsim3_c(ddr4):
    ch = _random_chunk(5_000, seed=5)
    sim = Simulator(ddr4, SimOptions(cycles=3_000, epoch=0))
    sim.feed(ch.addr, ch.is_write, ch.cycle, final=True)
    st = sim.stats().summary
    assert st["num_cycles"] == 3_000
    assert st["num_reads_done"] + st["num_writes_done"] < 5_000


@pytest.mark.parametrize("bins", [
    {}, {0: 3}, {5: 1}, {7: 2, 40: 1}, {32_767: 4}, {1: 1, 2: 1, 32_766: 9, 32_767: 1}])
def test_latency_percentiles_and_max_as_the_whole_histogram_defines_them(bins):
    """The latency percentiles come from the histogram cut at its highest non-empty bin: equal
    to the first bin whose cumulative count over all 32,768 bins reaches p % of the total,
    except in the last bin, which holds every latency of 32,767 cycles or more: a percentile or
    maximum there is not known (None; the overflow count is reported)."""
    from engine.stats import PERCENTILES, _latency_block
    hist = np.zeros(1 << 15, np.int64)
    for b, n in bins.items():
        hist[b] = n
    rng = np.random.default_rng(len(bins))
    if bins:                                   # and a dense stretch below the highest bin
        top = max(bins)
        hist[:top] += rng.integers(0, 3, top) * (rng.random(top) < 0.3)
    d = _latency_block(hist, 0, 0, 1.0, "read")
    total = int(hist.sum())
    cum = np.cumsum(hist)
    for p in PERCENTILES:
        want = None if total == 0 else int(np.argmax(cum >= np.ceil(total * p / 100.0)))
        if want == 32_767:
            want = None
        assert d[f"read_latency_p{p}"] == want
        assert d[f"read_latency_p{p}_ns"] == want
    nz = np.flatnonzero(hist)
    assert d["read_latency_max"] == (int(nz[-1]) if nz.size and nz[-1] < 32_767 else None)
    assert d.get("read_latency_overflow", 0) == hist[-1]
    if hist[-1]:
        assert d["read_latency_max"] is None


def test_stats_units_and_consistency(ddr4):
    ch = _random_chunk(5_000, seed=6)
    sim = Simulator(ddr4, SimOptions(epoch=0))
    sim.feed(ch.addr, ch.is_write, ch.cycle, final=True)
    s = sim.stats().summary
    assert s["average_read_latency_ns"] == pytest.approx(s["average_read_latency"] * ddr4.tCK)
    assert s["read_latency_p50"] <= s["read_latency_p99"] <= s["read_latency_max"]
    col = s["num_read_cmds"] + s["num_write_cmds"]
    assert (s["num_read_row_hits"] + s["num_write_row_hits"] + s["num_row_misses"]
            + s["num_row_conflicts"]) == col
    causes = s["energy_by_cause"]
    assert sum(causes.values()) == pytest.approx(s["total_energy_with_io"], rel=1e-9)
    bw = (s["num_reads_done"] + s["num_writes_done"]) * 64 / (s["num_cycles"] * ddr4.tCK)
    assert s["average_bandwidth"] == pytest.approx(bw)


def test_bad_inputs_name_what_is_wrong(ddr4, tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_text("0x40 READ 0\n0x80 READX 1\n")
    with pytest.raises(TraceError, match=r"bad.trace:2"):
        simulate_trace(ddr4, bad)
    far = tmp_path / "far.trace"
    far.write_text(f"{ddr4.capacity_bytes:#x} READ 0\n")
    with pytest.raises(TraceError, match=r"far.trace:1.*capacity"):
        simulate_trace(ddr4, far)
    sim = Simulator(ddr4)
    with pytest.raises(DiffMemError, match="beyond the memory capacity"):
        sim.access([ddr4.capacity_bytes + 64], [64], [False], [0])


def test_multi_file_traces_merge_by_time(ddr4, tmp_path):
    a = TraceChunk(np.array([0, 64, 128], np.uint64), np.zeros(3, bool),
                   np.array([0, 10, 20]), np.zeros(3, np.uint16))
    b = TraceChunk(np.array([1 << 20, (1 << 20) + 64], np.uint64), np.ones(2, bool),
                   np.array([5, 15]), np.zeros(2, np.uint16))
    write_text(tmp_path / "a.trace", a)
    write_text(tmp_path / "b.trace", b)
    st = simulate_trace(ddr4, [tmp_path / "a.trace", tmp_path / "b.trace"]).summary
    assert st["num_reads_done"] == 3 and st["num_writes_done"] == 2


def test_one_kernel_specialisation_for_every_memory_and_mode(ddr4, tmp_path, monkeypatch):
    """The kernel takes its state as one bundle (kernel.State) whose field names are the
    simulator's state names; DDR4, HBM2 (dual command, 8 channels), a command trace,
    completions and the threads mode's per-channel states all fit one compiled
    specialisation of each kernel variant (array ranks and layouts never vary), so nothing
    recompiles; the variant follows the scheduler and page policy only."""
    monkeypatch.setenv(MODE_ENV, "jit")          # numba's kernel, not the compiled library
    from engine import kernel as K
    sim = Simulator(ddr4, SimOptions(track_completions=True))
    assert tuple(sim.s) == K.State._fields
    assert all(a is b for a, b in zip(sim.s.values(), sim.state))
    with pytest.raises(TypeError):
        sim.s["G"] = np.zeros(K.NG, np.int64)       # replace through _set_state only
    sim.close()
    trace = tmp_path / "t.trace"
    write_text(trace, _random_chunk(3000, seed=4))
    hbm2 = load_config("HBM2")
    simulate_trace(ddr4, trace, SimOptions(cmd_trace=tmp_path / "c.cmd", epoch=500))
    simulate_trace(hbm2, trace, SimOptions(track_completions=True))
    simulate_trace(hbm2, trace, SimOptions(intake="per-channel", threads=2))
    # DRAMsim3's scheduler with open rows, DRAMsim3's two configs: its variant, once (for
    # HBM2's 8 channels), and its one-channel variant, once (for DDR4 and the per-channel
    # threads' one-channel parts)
    dramsim3_open = K.KERNELS[K.VARIANTS.index("dramsim3")]
    one_channel = K.KERNELS[K.VARIANTS.index("dramsim3_1ch")]
    assert len(dramsim3_open.signatures) == 1
    assert len(one_channel.signatures) == 1
    simulate_trace(ddr4.replace(scheduler="frfcfs"), trace, SimOptions(epoch=500))
    simulate_trace(hbm2.replace(scheduler="parbs", page_policy="open_adaptive"), trace,
                   SimOptions(intake="per-channel", threads=2))
    assert len(K.run_kernel.signatures) == 1       # the general variant, once for both
    assert len(dramsim3_open.signatures) == 1


def test_the_kernel_unpacks_its_bundles_in_their_declared_order():
    """run_kernel receives the bundles as plain tuples (numba's fast dispatch path) and
    unpacks them positionally: its unpacking must name the NamedTuples' fields in order."""
    import ast
    import inspect
    import textwrap
    from engine import kernel as K
    tree = ast.parse(textwrap.dedent(inspect.getsource(K.run_kernel.py_func)))
    unpacked = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) \
                and isinstance(node.targets[0], ast.Tuple):
            unpacked[node.value.id] = tuple(e.id for e in node.targets[0].elts)
    assert unpacked["k"] == K.Consts._fields
    assert unpacked["s"] == K.State._fields
    assert tuple("in_" + f for f in K.Chunk._fields) == unpacked["inp"]


def test_a_second_process_loads_the_kernel_from_the_cache(ddr4, tmp_path, monkeypatch):
    """cache=True works with the bundled signature: once this process has the kernel (it
    compiles and stores it, or loads it), a fresh interpreter loads it without compiling;
    the kernel's variants (closures of one function, kernel.KERNELS) are cached apart."""
    import subprocess
    import sys
    from pathlib import Path
    from engine import kernel as K
    monkeypatch.setenv(MODE_ENV, "jit")          # numba's kernel (and the child's)
    trace = tmp_path / "t.trace"
    write_text(trace, _random_chunk(500, seed=5))
    simulate_trace(ddr4, trace, SimOptions())
    simulate_trace(ddr4.replace(scheduler="frfcfs"), trace, SimOptions())
    root = Path(__file__).resolve().parents[1]
    code = ("import sys; sys.path.insert(0, sys.argv[1])\n"
            "from engine import kernel as K\n"
            "from engine.config import load_config\n"
            "from engine.simulator import simulate_trace\n"
            "cfg = load_config('DDR4-3200')\n"
            "simulate_trace(cfg, sys.argv[2])\n"
            "simulate_trace(cfg.replace(scheduler='frfcfs'), sys.argv[2])\n"
            "for k in (K.KERNELS[K.VARIANTS.index('dramsim3_1ch')],"
            " K.run_kernel):\n"
            "    print(sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values()))\n")
    out = subprocess.run([sys.executable, "-c", code, str(root), str(trace)], cwd=root,
                         capture_output=True, text=True, check=True).stdout.split()
    assert K.run_kernel.signatures
    assert out == ["1", "0", "1", "0"]
