"""Controller policies: every command trace obeys the JEDEC rules (checked by the independent
engine.jedec_check), and each policy does what it claims on traffic that shows it."""
from __future__ import annotations

import numpy as np
import pytest

from engine import address
from engine.config import load_config, load_ini
from engine.jedec_check import check_command_trace
from engine.simulator import SimOptions, Simulator, cmd_trace_paths, simulate_trace
from engine.trace import TraceChunk, write_text


def _mixed_trace(path, n=6000, seed=3, gap=3, streams=1):
    """Interleaved sequential streams (row hits), random lines (conflicts), 1/3 writes,
    re-reads of recently written lines (write-buffer forwarding, R->W dependencies)."""
    rng = np.random.default_rng(seed)
    kind = rng.random(n)
    seq = (np.arange(n) * 64) % (1 << 22) + (rng.integers(0, 4, n) << 28)
    rand = rng.integers(0, (1 << 31) // 64, n) * 64
    addr = np.where(kind < 0.6, seq, rand).astype(np.uint64)
    back = np.arange(n) > 50
    reuse = (rng.random(n) < 0.05) & back
    addr[reuse] = addr[np.maximum(np.arange(n) - 40, 0)][reuse]
    is_write = rng.random(n) < 1 / 3
    cyc = np.arange(n, dtype=np.int64) * gap
    stream = (np.arange(n) % streams).astype(np.uint16)
    write_text(path, TraceChunk(addr, is_write, cyc, stream))
    return path


def _check_clean(cfg, cmd_path):
    violations = []
    for ch, p in enumerate(cmd_trace_paths(cmd_path, cfg.channels)):
        violations += check_command_trace(p, cfg, channel=ch)
    assert violations == [], "\n".join(v.message for v in violations[:10])


POLICIES = [
    {},
    {"scheduler": "fcfs"},
    {"scheduler": "frfcfs"},
    {"scheduler": "parbs", "parbs_marking_cap": 3},
    {"page_policy": "close", "row_buf_policy": "CLOSE_PAGE"},
    {"page_policy": "open_adaptive"},
    {"page_policy": "early_precharge", "early_precharge_conflicts": 2},
    {"write_high_watermark": 24, "write_low_watermark": 4},
    {"write_priority_pct": 50.0},
    {"write_priority_pct": -50.0},
    {"xor_bank_interleave": True},
    {"refresh_policy": "RANK_LEVEL_SIMULTANEOUS"},
    {"refresh_policy": "BANK_LEVEL_STAGGERED"},
    {"queue_structure": "PER_RANK"},
    {"unified_queue": True},
    {"row_hit_cap": 1},
]


@pytest.mark.parametrize("changes", POLICIES, ids=lambda c: ",".join(f"{k}={v}" for k, v in
                                                                     c.items()) or "dramsim3")
def test_policy_command_trace_obeys_jedec(tmp_path, changes):
    cfg = load_config("DDR4-3200").replace(**changes)
    trace = _mixed_trace(tmp_path / "mixed.trace", streams=4)
    cmd = tmp_path / "cmd.trace"
    st = simulate_trace(cfg, trace, SimOptions(cmd_trace=cmd, epoch=0)).summary
    assert st["num_reads_done"] + st["num_writes_done"] == 6000
    assert st["num_ref_cmds"] + st["num_refb_cmds"] > 0
    _check_clean(cfg, cmd)


@pytest.mark.parametrize("preset", ["LPDDR4-3200", "GDDR6", "HBM2"])
def test_other_standards_obey_jedec(tmp_path, preset):
    cfg = load_config(preset)
    trace = _mixed_trace(tmp_path / "mixed.trace", gap=1)
    cmd = tmp_path / "cmd.trace"
    st = simulate_trace(cfg, trace, SimOptions(cmd_trace=cmd, epoch=0)).summary
    assert st["num_reads_done"] + st["num_writes_done"] == 6000
    _check_clean(cfg, cmd)
    if preset == "HBM2":
        assert st["hbm_dual_cmds"] > 0      # row + column command pairs in one cycle


def _run(cfg, trace):
    return simulate_trace(cfg, trace, SimOptions(epoch=0)).summary


def test_close_page_never_hits_and_frfcfs_beats_fcfs_on_hits(tmp_path):
    trace = _mixed_trace(tmp_path / "m.trace", gap=1)
    base = load_config("DDR4-3200")
    close = _run(base.replace(page_policy="close", row_buf_policy="CLOSE_PAGE"), trace)
    assert close["num_read_row_hits"] + close["num_write_row_hits"] == 0
    assert close["num_pre_cmds"] == 0 or close["num_pre_cmds"] <= close["num_ref_cmds"] * 16
    fcfs = _run(base.replace(scheduler="fcfs"), trace)
    fr = _run(base.replace(scheduler="frfcfs"), trace)
    assert fr["row_hit_rate"] > fcfs["row_hit_rate"]
    assert fr["average_read_latency"] < fcfs["average_read_latency"]


def test_fcfs_closes_a_row_that_a_younger_request_would_hit(tmp_path):
    """FCFS serves a bank's requests in arrival order: with row 16 open, a read to row 32
    precharges it although a younger read hits row 16 (that read waits its turn), instead of
    waiting for the hit, which FCFS never issues first: the queue then stalled until a
    refresh closed the row (~7,000 cycles here)."""
    cfg = load_config("DDR4-3200").replace(scheduler="fcfs")
    m = address.mapping(cfg)
    rows = [16, 32, 16]
    addrs = [((row << m.pos["ro"]) | (col << m.pos["co"])) << m.shift
             for col, row in enumerate(rows)]
    f = address.decode(cfg, addrs)
    assert len(set(zip(f.ch, f.ra, f.bg, f.ba))) == 1 and list(f.ro) == rows
    trace = tmp_path / "rows.trace"
    trace.write_text("".join(f"{a:#x} READ {i}\n" for i, a in enumerate(addrs)))
    cmd = tmp_path / "cmd.trace"
    s = simulate_trace(cfg, trace, SimOptions(epoch=0, cmd_trace=cmd)).summary
    lines = [ln.split() for ln in cmd.read_text().splitlines()]
    assert [ln[1] for ln in lines] == ["activate", "read", "precharge"] * 2 + ["activate", "read"]
    assert [int(ln[6], 16) for ln in lines][::3] == rows
    assert s["num_reads_done"] == 3 and s["num_ondemand_pres"] == 2
    assert s["num_ref_cmds"] == 0 and s["num_cycles"] < cfg.tREFI


def test_xor_interleave_spreads_a_strided_stream(tmp_path):
    """A 256 KiB stride changes only the row bits, so the plain mapping sends every request to
    one bank; XOR-ing bank and bank-group bits with low row bits spreads them over all 16
    banks of a rank, and the same work needs fewer cycles."""
    n = 4000
    addr = (np.arange(n, dtype=np.uint64) * np.uint64(1 << 18))
    write_text(tmp_path / "s.trace", TraceChunk(addr, np.zeros(n, bool),
                                                 np.arange(n, dtype=np.int64), np.zeros(n, np.uint16)))
    base = load_config("DDR4-3200")
    plain = simulate_trace(base, tmp_path / "s.trace", SimOptions(epoch=0))
    xor = simulate_trace(base.replace(xor_bank_interleave=True), tmp_path / "s.trace",
                         SimOptions(epoch=0))
    assert np.count_nonzero(plain.per_bank["reads"]) == 1
    assert np.count_nonzero(xor.per_bank["reads"]) == 16
    assert xor.summary["num_cycles"] < plain.summary["num_cycles"] / 4


def test_early_precharge_closes_rows_after_conflicts(tmp_path):
    trace = _mixed_trace(tmp_path / "m.trace", gap=8)
    base = load_config("DDR4-3200")
    plain = _run(base, trace)
    early = _run(base.replace(page_policy="early_precharge", early_precharge_conflicts=1), trace)
    # closing after conflicts turns later conflicts into misses
    assert early["num_row_conflicts"] < plain["num_row_conflicts"]
    assert early["num_row_misses"] > plain["num_row_misses"]


def test_lower_write_priority_serves_reads_sooner(tmp_path):
    trace = _mixed_trace(tmp_path / "m.trace", gap=1)
    base = load_config("DDR4-3200")
    normal = _run(base, trace)
    low = _run(base.replace(write_priority_pct=75.0), trace)
    high = _run(base.replace(write_priority_pct=-75.0), trace)
    assert low["average_read_latency"] < normal["average_read_latency"]
    assert high["average_write_latency"] < normal["average_write_latency"]


def test_parbs_groups_requests_of_a_thread(tmp_path):
    """Two sources: one row-local (4 lines a row), one random. PAR-BS batches and ranks the
    light thread first, so its requests are served sooner than under FR-FCFS."""
    n = 3000
    rng = np.random.default_rng(5)
    local = (np.arange(n // 2) // 4 * 8192 + (np.arange(n // 2) % 4) * 64).astype(np.uint64)
    rnd = (rng.integers(0, 1 << 25, n // 2) * 64).astype(np.uint64)
    addr = np.empty(n, np.uint64)
    addr[0::2], addr[1::2] = local, rnd
    src = np.tile(np.array([0, 1], np.uint16), n // 2)
    chunk = TraceChunk(addr, np.zeros(n, bool), np.arange(n, dtype=np.int64), src)
    base = load_config("DDR4-3200")
    out = {}
    for sched in ("frfcfs", "parbs"):
        sim = Simulator(base.replace(scheduler=sched), SimOptions(epoch=0, track_completions=True))
        ids = sim.feed(chunk.addr, chunk.is_write, chunk.cycle, chunk.stream, final=True)
        done_id, done_t = sim.completions()
        order = np.argsort(done_id)
        done_t = done_t[order]
        lat = done_t - chunk.cycle[ids]
        out[sched] = lat[src == 0].mean()
    assert out["parbs"] < out["frfcfs"]


def test_dramsim3_ini_configs_run_clean(shared_dir, tmp_path):
    """A few of DRAMsim3's own configs beyond the four references, DDR3 and STT-MRAM's
    per-rank queues included."""
    trace = _mixed_trace(tmp_path / "m.trace", n=3000, gap=2)
    for name in ("DDR3_8Gb_x8_1600", "DDR4_4Gb_x16_2400", "LPDDR3_8Gb_x32_1600",
                 "GDDR5_8Gb_x32", "ST-1.5x"):
        cfg = load_ini(shared_dir / "dramsim3-configs" / f"{name}.ini")
        cmd = tmp_path / f"{name}.cmd"
        st = simulate_trace(cfg, trace, SimOptions(cmd_trace=cmd, epoch=0)).summary
        assert st["num_reads_done"] + st["num_writes_done"] == 3000, name
        _check_clean(cfg, cmd)


@pytest.mark.parametrize("current", ["dramsim3", "fcfs", "frfcfs", "parbs"])
def test_policy_study_offers_the_registrys_schedulers(current: str) -> None:
    """The controller-policy study's scheduler what-ifs come from engine.policies: every
    scheduler but the config's own and DRAMsim3's round robin (the baseline default)."""
    from engine.config import load_config
    from engine.policies import SCHEDULERS
    from engine.studies.catalog import ControllerPolicy
    cfg = load_config("DDR4-3200").replace(scheduler=current)
    got = [o["scheduler"] for _n, o in ControllerPolicy().default_variants(cfg)
           if "scheduler" in o]
    assert current not in got and "dramsim3" not in got and len(got) == len(set(got))
    assert set(got) | {current, "dramsim3"} == set(SCHEDULERS)
