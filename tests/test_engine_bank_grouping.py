"""Dynamic bank grouping (a controller policy): the cycles it saves on a hand-made trace,
that it changes nothing with a window of 1 (DRAMsim3's order emulated exactly), and that its
command traces obey the JEDEC rules (checked by the independent engine.jedec_check)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from engine.config import load_config
from engine.jedec_check import check_command_trace
from engine.simulator import SimOptions, cmd_trace_paths, simulate_trace
from engine.trace import TraceChunk, write_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_engine_policies import _mixed_trace  # noqa: E402


def _address(cfg, *, bg: int, ba: int = 0, row: int = 5, col: int = 0) -> int:
    """The byte address of (channel 0, rank 0, bg, ba, row, col) under cfg's mapping."""
    fields = {"ch": 0, "ra": 0, "bg": bg, "ba": ba, "ro": row, "co": col}
    pos = cfg.field_positions
    a = 0
    for name, v in fields.items():
        a |= v << pos[name]
    return a << cfg.shift_bits


def _decoded(cfg, addr: int) -> tuple[int, ...]:
    from engine import kernel as K
    from engine.simulator import Simulator
    sim = Simulator(cfg, SimOptions(epoch=0))
    try:
        return K._decode(sim.P, np.int64(addr))
    finally:
        sim.close()


def _burst_trace(path: Path, cfg, pairs: int) -> Path:
    """Two warm-up reads open row 5 of bank 0 in bank groups 0 and 1; 200 cycles later a
    burst of 4 * pairs row hits arrives, ordered g0 g0 g1 g1 g0 g0 g1 g1 ..."""
    g = [_address(cfg, bg=0), _address(cfg, bg=1)]
    addr = [g[0], g[1]]
    cyc = [0, 1]
    col = 1
    for i in range(4 * pairs):
        grp = (i // 2) % 2
        addr.append(_address(cfg, bg=grp, col=col))
        col += 1
        cyc.append(200)
    n = len(addr)
    write_text(path, TraceChunk(np.array(addr, np.uint64), np.zeros(n, bool),
                                np.array(cyc, np.int64), np.zeros(n, np.uint16)))
    return path


def test_addresses_land_in_the_intended_bank_groups():
    cfg = load_config("DDR4-3200")
    for bg in (0, 1):
        ch, ra, g, ba, ro, co = _decoded(cfg, _address(cfg, bg=bg, col=3))
        assert (ch, ra, g, ba, ro) == (0, 0, bg, 0, 5)


@pytest.mark.parametrize("pairs", [4, 8])
def test_alternating_bank_groups_saves_tccd_l_minus_tccd_s_per_same_group_pair(tmp_path,
                                                                               pairs):
    """FCFS with one command queue per rank issues the burst strictly in order: of its
    4 * pairs - 1 gaps, 2 * pairs join two reads of one bank group (tCCD_L) and the others
    change group (tCCD_S). With dynamic bank grouping (window 8) every gap changes group, so
    the run ends exactly 2 * pairs * (tCCD_L - tCCD_S) cycles sooner (DDR4-3200: 8 and 4)."""
    base = load_config("DDR4-3200").replace(scheduler="fcfs", queue_structure="PER_RANK")
    trace = _burst_trace(tmp_path / "burst.trace", base, pairs)
    cmd_a, cmd_b = tmp_path / "a.cmd", tmp_path / "b.cmd"
    plain = simulate_trace(base, trace, SimOptions(epoch=0, cmd_trace=cmd_a)).summary
    dbg_cfg = base.replace(dynamic_bank_grouping=True, bank_group_window=8)
    dbg = simulate_trace(dbg_cfg, trace, SimOptions(epoch=0, cmd_trace=cmd_b)).summary
    n = 4 * pairs + 2
    assert plain["num_reads_done"] == dbg["num_reads_done"] == n
    assert plain["num_act_cmds"] == dbg["num_act_cmds"] == 2        # all burst reads hit
    saved = 2 * pairs * (base.tCCD_L - base.tCCD_S)
    assert saved == 8 * pairs
    assert plain["num_cycles"] - dbg["num_cycles"] == saved
    # the column commands of the burst: in order they alternate gaps tCCD_L, tCCD_S; with
    # the policy every gap is tCCD_S
    for path, cfg, gaps in ((cmd_a, base, None), (cmd_b, dbg_cfg, {base.tCCD_S})):
        cycles = [int(line.split()[0]) for line in Path(path).read_text().splitlines()
                  if line.split()[1] == "read"][2:]
        got = set(np.diff(cycles).tolist())
        assert got == (gaps or {base.tCCD_L, base.tCCD_S})
        assert check_command_trace(path, cfg, channel=0) == []


@pytest.mark.parametrize("preset,extra", [("DDR4-3200", {}),
                                          ("DDR4-3200", {"queue_structure": "PER_RANK"}),
                                          ("HBM2", {})])
def test_window_of_one_reproduces_the_plain_scheduler_exactly(tmp_path, preset, extra):
    """With a window of 1 no command may overtake the pick: the policy's code path (DRAMsim3's
    order, emulated by the priority picker) must give the plain DRAMsim3 scheduler's
    statistics exactly."""
    trace = _mixed_trace(tmp_path / "m.trace", n=3000, streams=4, gap=1)
    cfg = load_config(preset).replace(**extra)
    a = simulate_trace(cfg, trace, SimOptions(epoch=0)).summary
    b = simulate_trace(cfg.replace(dynamic_bank_grouping=True, bank_group_window=1), trace,
                       SimOptions(epoch=0)).summary
    diff = {k: (a[k], b[k]) for k in a if k != "wall_seconds" and a[k] != b[k]}
    assert diff == {}


@pytest.mark.parametrize("sched", ["dramsim3", "fcfs", "frfcfs", "parbs"])
def test_bank_grouping_command_traces_obey_jedec(tmp_path, sched):
    cfg = load_config("DDR4-3200").replace(scheduler=sched, dynamic_bank_grouping=True,
                                           bank_group_window=8)
    trace = _mixed_trace(tmp_path / "mixed.trace", streams=4)
    cmd = tmp_path / "cmd.trace"
    st = simulate_trace(cfg, trace, SimOptions(cmd_trace=cmd, epoch=0)).summary
    assert st["num_reads_done"] + st["num_writes_done"] == 6000
    violations = []
    for ch, p in enumerate(cmd_trace_paths(cmd, cfg.channels)):
        violations += check_command_trace(p, cfg, channel=ch)
    assert violations == [], "\n".join(v.message for v in violations[:10])


def test_bank_grouping_is_a_declared_controller_parameter():
    from engine.config import PARAM_BY_NAME
    for name in ("dynamic_bank_grouping", "bank_group_window"):
        spec = PARAM_BY_NAME[name]
        assert spec.section == "controller" and not spec.dramsim3
    with pytest.raises(Exception, match="bank_group_window"):
        load_config("DDR4-3200").replace(bank_group_window=0)


def test_write_drains_alternate_bank_groups(tmp_path):
    """Writes only, arriving g0 g0 g1 g1 ..., with command queues of one entry (the picker has
    no choice: the order is the order the drain moves writes in). In order, the write
    commands alternate gaps of tCCD_L and tCCD_S; with dynamic bank grouping the drain takes
    the next write of the other bank group: same-group pairs become rare (15 -> 1 here) and
    each one removed saves tCCD_L - tCCD_S cycles."""
    base = load_config("DDR4-3200").replace(scheduler="fcfs", queue_structure="PER_RANK",
                                            cmd_queue_size=1)
    g = [_address(base, bg=0), _address(base, bg=1)]
    addr, cyc, isw = [g[0], g[1]], [0, 1], [False, False]
    for i in range(64):
        addr.append(_address(base, bg=(i // 2) % 2, col=1 + i))
        cyc.append(200)
        isw.append(True)
    n = len(addr)
    trace = tmp_path / "w.trace"
    write_text(trace, TraceChunk(np.array(addr, np.uint64), np.array(isw),
                                 np.array(cyc, np.int64), np.zeros(n, np.uint16)))

    def same_group_pairs(cfg):
        cmd = tmp_path / "w.cmd"
        st = simulate_trace(cfg, trace, SimOptions(epoch=0, cmd_trace=cmd)).summary
        assert st["num_writes_done"] == 64
        assert check_command_trace(cmd, cfg, channel=0) == []
        groups = [int(line.split()[4]) for line in Path(cmd).read_text().splitlines()
                  if line.split()[1] == "write"]
        return sum(a == b for a, b in zip(groups, groups[1:])), st["num_cycles"]

    plain_pairs, plain_cycles = same_group_pairs(base)
    dbg_pairs, dbg_cycles = same_group_pairs(base.replace(dynamic_bank_grouping=True))
    assert plain_pairs >= 12
    assert dbg_pairs <= plain_pairs // 4
    # every same-group pair the drain removes saves tCCD_L - tCCD_S cycles, exactly
    assert plain_cycles - dbg_cycles == (plain_pairs - dbg_pairs) * (base.tCCD_L - base.tCCD_S)
