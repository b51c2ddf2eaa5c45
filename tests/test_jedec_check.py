"""Tests of the independent JEDEC command-trace checker (engine/jedec_check.py).

1. DRAMsim3's own command traces (tests/data/reference/dramsim3/cmdtrace) must check clean, with
   a stand-in configuration built from DRAMsim3's printed parameters (derived_params.txt) and
   with the real ``engine.config.load_ini`` when it is available.
2. Hand-made traces: each timing rule is met exactly (clean) and then broken by one cycle
   (the checker names that rule, with required == actual + 1).
3. State rules, parsing, channels, HBM dual issue, refresh rate, strict mode.
"""
from __future__ import annotations

import dataclasses
import gzip
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.errors import TraceError
from engine.jedec_check import (CheckParams, Violation, check_command_trace,
                                parse_command_trace)

from refdata import DATA_DIR, MISSING_DATA  # tests/data/ (provenance: tests/data/README.md)
SHARED = DATA_DIR
REF_DIR = SHARED / "reference" / "dramsim3"
CMD_DIR = REF_DIR / "cmdtrace"
INI_DIR = SHARED / "dramsim3-configs"
CONFIGS = ("DDR4_8Gb_x8_3200", "LPDDR4_8Gb_x16_2400", "GDDR6_8Gb_x16", "HBM2_8Gb_x128")
WORKLOADS = ("diffusion", "mixed", "random", "stream", "strided")


# ------------------------------------------------------------------------------------------
# Stand-in configuration (same attribute names as engine.config.MemoryConfig)
# ------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class FakeConfig:
    """DDR4-3200-like values (DRAMsim3's DDR4_8Gb_x8_3200: 2 ranks, 4 x 4 banks)."""

    protocol: str = "DDR4"
    ranks: int = 2
    bankgroups_eff: int = 4
    banks_per_group_eff: int = 4
    burst_cycle: int = 4
    tCK: float = 0.63
    AL: int = 0
    CL: int = 22
    CWL: int = 16
    tCCD_L: int = 8
    tCCD_S: int = 4
    tRTRS: int = 1
    tRTP: int = 12
    tWTR_L: int = 12
    tWTR_S: int = 4
    tWR: int = 24
    tRP: int = 22
    tRRD_L: int = 8
    tRRD_S: int = 4
    tRAS: int = 52
    tRCD: int = 22
    tRC: int = 74
    tRFC: int = 560
    tRFCb: int = 20
    tREFI: int = 12480
    tREFIb: int = 1950
    tFAW: int = 34
    t32AW: int = 330
    tPPD: int = 0
    tRCDRD: int = 24
    tRCDWR: int = 20
    tXS: int = 576
    tCKESR: int = 9
    hbm_dual_cmd: bool = False

    @property
    def RL(self) -> int:
        return self.AL + self.CL

    @property
    def WL(self) -> int:
        return self.AL + self.CWL

    @property
    def is_gddr(self) -> bool:
        return self.protocol.startswith("GDDR")

    @property
    def is_hbm(self) -> bool:
        return self.protocol.startswith("HBM")


DDR4 = FakeConfig()


def _from_derived_params(name: str) -> FakeConfig:
    """A stand-in for one reference config from DRAMsim3's printed parameters."""
    text = (REF_DIR / "derived_params.txt").read_text()
    block = text.split(f"=== {name}\n", 1)[1].split("\n=== ", 1)[0]
    values: dict[str, str] = {}
    for line in block.splitlines():
        if line.startswith(("ranks=", "tCK=", "system:")):
            values.update(re.findall(r"(\w+)=(\S+)", line))
    fields = {f.name: f for f in dataclasses.fields(FakeConfig)}
    kw: dict[str, object] = {}
    for key, val in values.items():
        if key in fields and key not in ("protocol", "hbm_dual_cmd"):
            kw[key] = float(val) if key == "tCK" else int(val)
    proto = name.split("_")[0]
    return FakeConfig(protocol="HBM" if proto.startswith("HBM") else proto,
                      bankgroups_eff=int(values["bankgroups"]),
                      banks_per_group_eff=int(values["banks_per_group"]),
                      hbm_dual_cmd=values["hbm_dual_cmd"] == "1", **kw)


def _real_config(name: str):
    config = pytest.importorskip("engine.config", reason="engine.config not written yet")
    return config.load_ini(INI_DIR / f"{name}.ini")


def _traces(name: str, workload: str) -> list[Path]:
    if not CMD_DIR.is_dir():
        pytest.skip(f"{MISSING_DATA}: {CMD_DIR}")
    files = sorted(CMD_DIR.glob(f"{name}__{workload}.*.cmd.trace.gz"))
    assert files, f"no command trace for {name} / {workload}"
    return files


# ------------------------------------------------------------------------------------------
# 1. DRAMsim3's own traces are clean
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("name", CONFIGS)
def test_dramsim3_traces_clean_standin(name: str, workload: str) -> None:
    files = _traces(name, workload)
    cfg = _from_derived_params(name)
    found = [v for f in files for v in check_command_trace(f, cfg)]
    assert found == [], "\n".join(v.message for v in found[:10])


@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("name", CONFIGS)
def test_dramsim3_traces_clean_real_config(name: str, workload: str) -> None:
    files = _traces(name, workload)
    cfg = _real_config(name)
    assert CheckParams.from_config(cfg) == CheckParams.from_config(_from_derived_params(name))
    found = [v for f in files for v in check_command_trace(f, cfg)]
    assert found == [], "\n".join(v.message for v in found[:10])


def test_dramsim3_strict_mode_finds_jedec_differences() -> None:
    """strict=True adds JEDEC's DDR4 2-cycle RD->WR gap, which DRAMsim3 (tRTRS = 1) undercuts."""
    files = _traces("DDR4_8Gb_x8_3200", "mixed")
    found = check_command_trace(files[0], _from_derived_params("DDR4_8Gb_x8_3200"), strict=True)
    assert found and {v.rule for v in found} <= {"RD->WR turnaround", "rank switch turnaround"}
    assert all(v.required - v.actual == 1 for v in found)


# ------------------------------------------------------------------------------------------
# Hand-made traces
# ------------------------------------------------------------------------------------------
Row = tuple  # (cycle, cmd, rank, bankgroup, bank, row) or (cycle, cmd, rank)
_RANK_LEVEL = {"refresh", "self_refresh_enter", "self_refresh_exit"}


def lines(cmds: list[Row], channel: int = 0) -> list[str]:
    """Trace lines in DRAMsim3's format from compact tuples."""
    out = []
    for c in cmds:
        cycle, kind, rank = c[0], c[1], c[2]
        if kind in _RANK_LEVEL:
            out.append(f"{cycle} {kind} -1 {rank} -1 -1 -0x1 -0x1")
        else:
            bg, bank, row = c[3], c[4], c[5]
            out.append(f"{cycle} {kind} {channel} {rank} {bg} {bank} {row:#x} 0x0")
    return out


def check(cmds: list[Row], cfg=DDR4, **kw) -> list[Violation]:
    return check_command_trace(lines(cmds), cfg, **kw)


# Each case: (rule, config, builder). builder(d) returns a trace whose LAST command is
# exactly at its earliest legal cycle when d == 0, one cycle early when d == -1.
Builder = Callable[[int], list[Row]]
LP = dataclasses.replace(DDR4, burst_cycle=8)          # long bursts: overlap before tCCD_S
TRC = dataclasses.replace(DDR4, tRC=76)                # JEDEC tRC > tRAS + tRP isolates tRC
TIMING_CASES: list[tuple[str, FakeConfig, Builder]] = [
    ("tRCD", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (22 + d, "read", 0, 0, 0, 1)]),
    ("tRAS", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (52 + d, "precharge", 0, 0, 0, 1)]),
    ("tRP", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (60, "precharge", 0, 0, 0, 1),
                             (82 + d, "activate", 0, 0, 0, 2)]),
    ("tRC", TRC, lambda d: [(0, "activate", 0, 0, 0, 1), (52, "precharge", 0, 0, 0, 1),
                            (76 + d, "activate", 0, 0, 0, 2)]),
    ("tRRD_L", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (8 + d, "activate", 0, 0, 1, 1)]),
    ("tRRD_S", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (4 + d, "activate", 0, 1, 0, 1)]),
    ("tFAW", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (4, "activate", 0, 1, 0, 1),
                              (8, "activate", 0, 2, 0, 1), (12, "activate", 0, 3, 0, 1),
                              (34 + d, "activate", 0, 0, 1, 1)]),
    ("tCCD_L", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (8, "activate", 0, 0, 1, 1),
                                (40, "read", 0, 0, 0, 1), (48 + d, "read", 0, 0, 1, 1)]),
    ("tCCD_S", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (4, "activate", 0, 1, 0, 1),
                                (40, "read", 0, 0, 0, 1), (44 + d, "read", 0, 1, 0, 1)]),
    # WR->RD: CWL 16 + burst 4 + tWTR
    ("tWTR_L", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (8, "activate", 0, 0, 1, 1),
                                (40, "write", 0, 0, 0, 1), (72 + d, "read", 0, 0, 1, 1)]),
    ("tWTR_S", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (4, "activate", 0, 1, 0, 1),
                                (40, "write", 0, 0, 0, 1), (64 + d, "read", 0, 1, 0, 1)]),
    ("tRTP", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (50, "read", 0, 0, 0, 1),
                              (62 + d, "precharge", 0, 0, 0, 1)]),
    # WR->PRE: WL 16 + burst 4 + tWR 24
    ("tWR", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (22, "write", 0, 0, 0, 1),
                             (66 + d, "precharge", 0, 0, 0, 1)]),
    ("tRFC", DDR4, lambda d: [(100, "refresh", 0), (660 + d, "activate", 0, 0, 0, 1)]),
    ("tRFC", DDR4, lambda d: [(100, "refresh", 0), (660 + d, "refresh", 0)]),
    # PRE -> REF needs every bank precharged for tRP
    ("tRP", DDR4, lambda d: [(0, "activate", 0, 2, 3, 1), (60, "precharge", 0, 2, 3, 1),
                             (82 + d, "refresh", 0)]),
    # READ_P: auto-precharge at AL + tRTP, then tRP -> 50 + 12 + 22
    ("tRTP+tRP", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (50, "read_p", 0, 0, 0, 1),
                                  (84 + d, "activate", 0, 0, 0, 2)]),
    # WRITE_P: WL + burst + tWR + tRP = 16 + 4 + 24 + 22
    ("tDAL", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (22, "write_p", 0, 0, 0, 1),
                              (88 + d, "activate", 0, 0, 0, 2)]),
    # bursts of 8 in two bank groups: tCCD_S (4) is met, the bus is not
    ("data bus overlap", LP, lambda d: [(0, "activate", 0, 0, 0, 1), (4, "activate", 0, 1, 0, 1),
                                        (40, "read", 0, 0, 0, 1), (48 + d, "read", 0, 1, 0, 1)]),
    # RD->WR same rank: RL + burst - WL + tRTRS = 22 + 4 - 16 + 1
    ("RD->WR turnaround", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (40, "read", 0, 0, 0, 1),
                                           (51 + d, "write", 0, 0, 0, 1)]),
    # WR (rank 1) -> RD (rank 0), RL = WL = 16: the read burst starts tRTRS after the write's
    ("WR->RD turnaround", dataclasses.replace(DDR4, CL=16),
     lambda d: [(0, "activate", 0, 0, 0, 1), (4, "activate", 1, 0, 0, 1),
                (30, "write", 1, 0, 0, 1), (35 + d, "read", 0, 0, 0, 1)]),
    # RD rank 0 -> RD rank 1: burst + tRTRS
    ("rank switch turnaround", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1),
                                                (4, "activate", 1, 0, 0, 1),
                                                (40, "read", 0, 0, 0, 1),
                                                (45 + d, "read", 1, 0, 0, 1)]),
    ("command bus", DDR4, lambda d: [(0, "activate", 0, 0, 0, 1), (22, "read", 0, 0, 0, 1),
                                     (23 + d, "activate", 0, 1, 0, 1)]),
    ("tPPD", dataclasses.replace(DDR4, protocol="LPDDR4", tPPD=2),
     lambda d: [(0, "activate", 0, 0, 0, 1), (4, "activate", 0, 1, 0, 1),
                (60, "precharge", 0, 0, 0, 1), (62 + d, "precharge", 0, 1, 0, 1)]),
    ("tRCDRD", dataclasses.replace(DDR4, protocol="GDDR6", bankgroups_eff=1,
                                   banks_per_group_eff=16, ranks=1),
     lambda d: [(0, "activate", 0, 0, 0, 1), (24 + d, "read", 0, 0, 0, 1)]),
    ("tRCDWR", dataclasses.replace(DDR4, protocol="GDDR6", bankgroups_eff=1,
                                   banks_per_group_eff=16, ranks=1),
     lambda d: [(0, "activate", 0, 0, 0, 1), (20 + d, "write", 0, 0, 0, 1)]),
    ("tXS", DDR4, lambda d: [(100, "self_refresh_enter", 0), (200, "self_refresh_exit", 0),
                             (776 + d, "activate", 0, 0, 0, 1)]),
    ("tCKESR", DDR4, lambda d: [(100, "self_refresh_enter", 0), (109 + d, "self_refresh_exit", 0)]),
]


@pytest.mark.parametrize("rule,cfg,build", TIMING_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(TIMING_CASES)])
def test_rule_violated_by_one_cycle(rule: str, cfg: FakeConfig, build: Builder) -> None:
    ok = check(build(0), cfg)
    assert ok == [], "\n".join(v.message for v in ok)
    trace = build(-1)
    bad = check(trace, cfg)
    named = [v for v in bad if v.rule == rule]
    assert named, f"expected {rule}, got {[v.message for v in bad]}"
    v = named[0]
    assert v.line == len(trace) and v.command == trace[-1][1]
    assert v.required == v.actual + 1 and v.actual == trace[-1][0]
    assert v.ref_line is not None and 1 <= v.ref_line < v.line
    assert rule in v.message


def test_single_bank_group_uses_short_values() -> None:
    """With one bank group, tCCD_L / tRRD_L / tWTR_L fall back to the _S values."""
    cfg = dataclasses.replace(DDR4, bankgroups_eff=1, banks_per_group_eff=16, tCCD_S=5)
    trace = [(0, "activate", 0, 0, 0, 1), (4, "activate", 0, 0, 1, 1),
             (40, "read", 0, 0, 0, 1), (45, "read", 0, 0, 1, 1)]
    assert check(trace, cfg) == []
    assert {v.rule for v in check(trace[:-1] + [(44, "read", 0, 0, 1, 1)], cfg)} == {"tCCD_S"}


def test_tfaw_counts_only_four() -> None:
    acts = [(4 * i, "activate", 0, i % 4, i // 4, 1) for i in range(4)]
    assert check(acts) == []
    rank1 = acts + [(16, "activate", 1, 0, 0, 1)]      # other rank: own window
    assert check(rank1) == []


def test_t32aw_gddr() -> None:
    cfg = dataclasses.replace(DDR4, protocol="GDDR6", bankgroups_eff=1, banks_per_group_eff=16,
                              ranks=1, tRRD_S=1, tFAW=4, t32AW=100, tRC=1, tRAS=1, tRP=1)
    acts: list[Row] = []
    t = 0
    for i in range(33):                                   # ACT, PRE pairs on 16 banks
        acts.append((t, "activate", 0, 0, i % 16, i))
        acts.append((t + 1, "precharge", 0, 0, i % 16, i))
        t += 2
    found = check(acts, cfg)
    assert {v.rule for v in found} == {"t32AW"}
    assert found[0].required == 0 + 100


# ------------------------------------------------------------------------------------------
# State rules
# ------------------------------------------------------------------------------------------
def test_column_to_closed_bank() -> None:
    (v,) = check([(22, "read", 0, 0, 0, 1)])
    assert (v.rule, v.line, v.required) == ("column to closed bank", 1, -1)


def test_column_after_auto_precharge_is_to_closed_bank() -> None:
    found = check([(0, "activate", 0, 0, 0, 1), (22, "read_p", 0, 0, 0, 1),
                   (30, "read", 0, 0, 0, 1)])
    assert [(v.rule, v.ref_line) for v in found] == [("column to closed bank", 2)]


def test_wrong_row() -> None:
    (v,) = check([(0, "activate", 0, 0, 0, 1), (22, "write", 0, 0, 0, 2)])
    assert (v.rule, v.line, v.ref_line) == ("wrong row", 2, 1)


def test_act_to_open_bank_and_pre_to_closed_bank() -> None:
    found = check([(0, "activate", 0, 0, 0, 1), (100, "activate", 0, 0, 0, 2),
                   (200, "precharge", 0, 1, 0, 0)])
    assert [v.rule for v in found] == ["ACT to open bank", "PRE to closed bank"]


def test_refresh_needs_all_banks_closed() -> None:
    (v,) = check([(0, "activate", 1, 3, 2, 1), (1000, "refresh", 1)])
    assert (v.rule, v.ref_line) == ("REF with open bank", 1)
    assert check([(0, "activate", 1, 3, 2, 1), (1000, "refresh", 0)]) == []


def test_refresh_precharges_with_channel_minus_one() -> None:
    """DRAMsim3 prints refresh precharges with channel -1 and row -1."""
    text = ["6 activate 3 0 1 2 0x10 0x0",
            "100 precharge -1 0 1 2 -0x1 -0x1",
            "122 refresh -1 0 -1 -1 -0x1 -0x1"]
    assert check_command_trace(text, DDR4) == []
    assert check_command_trace(text, DDR4, channel=3) == []


def test_self_refresh_blocks_commands() -> None:
    found = check([(100, "self_refresh_enter", 0), (300, "activate", 0, 0, 0, 1),
                   (400, "self_refresh_exit", 0)])
    assert [v.rule for v in found] == ["command during self refresh"]


def test_refresh_postponement() -> None:
    limit = 9 * DDR4.tREFI
    assert check([(limit, "refresh", 0), (limit + 1000, "refresh", 1)])[0].required == limit
    (v,) = check([(limit, "refresh", 0), (limit + 1, "refresh", 1)])
    assert (v.rule, v.line, v.ref_line, v.required, v.actual) == (
        "tREFI postponement", 2, None, limit, limit + 1)
    assert "rank 1" in v.message
    found = check([(1000, "refresh", 0), (1000 + limit + 1, "refresh", 0)])
    assert [(v.rule, v.line) for v in found] == [("tREFI postponement", 2),
                                                  ("tREFI postponement", 2)]
    assert {v.ref_line for v in found} == {1, None}   # rank 0 after its REF; rank 1 since 0


# ------------------------------------------------------------------------------------------
# Command bus: HBM dual issue
# ------------------------------------------------------------------------------------------
HBM = dataclasses.replace(DDR4, protocol="HBM", ranks=1, burst_cycle=2, CL=14, CWL=4,
                          tRCDRD=14, tRCDWR=14, hbm_dual_cmd=True)


def test_hbm_row_and_column_share_a_cycle() -> None:
    trace = [(0, "activate", 0, 0, 0, 1), (14, "read", 0, 0, 0, 1), (14, "activate", 0, 1, 0, 1)]
    assert check(trace, HBM) == []
    found = check(trace, dataclasses.replace(HBM, hbm_dual_cmd=False))
    assert [v.rule for v in found] == ["command bus"]
    two_rows = [(0, "activate", 0, 0, 0, 1), (60, "activate", 0, 1, 0, 1),
                (60, "precharge", 0, 0, 0, 1)]
    assert [v.rule for v in check(two_rows, HBM)] == ["command bus"]


def test_command_order() -> None:
    found = check([(10, "activate", 0, 0, 0, 1), (5, "activate", 0, 1, 0, 1)])
    assert "command order" in {v.rule for v in found}


# ------------------------------------------------------------------------------------------
# Parsing and channels
# ------------------------------------------------------------------------------------------
def test_parse_gzip_and_plain(tmp_path: Path) -> None:
    text = "\n".join(["# comment", "6   activate  0 0 0 0 0x2800 0x0", "",
                      "6300 refresh -1 0 -1 -1 -0x1 -0x1"]) + "\n"
    plain = tmp_path / "t.cmd.trace"
    plain.write_text(text)
    gz = tmp_path / "t.cmd.trace.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    for src in (plain, gz, str(gz), text.splitlines()):
        cmds = parse_command_trace(src)
        assert [(c.line, c.cycle, c.kind, c.row) for c in cmds] == [
            (2, 6, "activate", 0x2800), (4, 6300, "refresh", -1)]
        assert cmds[1].channel == -1 and cmds[1].bank == -1


@pytest.mark.parametrize("bad", ["6 activate 0 0 0 0 0x10", "6 fly 0 0 0 0 0x10 0x0",
                                 "x activate 0 0 0 0 0x10 0x0", "6 read 0 0 -1 -1 0x1 0x0"])
def test_parse_errors(bad: str) -> None:
    with pytest.raises(TraceError, match="line 1"):
        parse_command_trace([bad])


def test_mixed_channels() -> None:
    """Two channels in one file are checked independently (no cross-channel bus conflict)."""
    text = lines([(0, "activate", 0, 0, 0, 1)], channel=0) + \
        lines([(0, "activate", 0, 0, 0, 1)], channel=1) + \
        lines([(10, "read", 0, 0, 0, 1)], channel=1)
    (v,) = check_command_trace(text, DDR4)
    assert (v.rule, v.line) == ("tRCD", 3)
    with pytest.raises(TraceError, match=r"line 4: .*mixes channels \[0, 1\] .*check each "
                                         r"channel's file on its own"):
        check_command_trace(text + ["6300 refresh -1 0 -1 -1 -0x1 -0x1"], DDR4)
    assert check_command_trace(text + ["6300 refresh -1 1 -1 -1 -0x1 -0x1"], DDR4,
                               channel=0)[0].rule == "tRCD"


def test_address_range() -> None:
    found = check([(0, "activate", 2, 0, 0, 1)])
    assert [v.rule for v in found] == ["address range"]


def test_strict_lpddr4_adds_a_cycle_to_write_recovery() -> None:
    cfg = dataclasses.replace(DDR4, protocol="LPDDR4")
    trace = [(0, "activate", 0, 0, 0, 1), (22, "write", 0, 0, 0, 1),
             (66, "precharge", 0, 0, 0, 1)]
    assert check(trace, cfg) == []
    (v,) = check(trace, cfg, strict=True)
    assert (v.rule, v.required) == ("tWR", 67)


def test_channels_outside_the_config_and_ramulator_traces_are_errors(tmp_path) -> None:
    """--channel 7 on a 2-channel DDR5 checked the file as channel 7 and reported 2,177 bogus
    violations; a command naming a channel the memory lacks, and Ramulator 2's recorder
    format ("1, ACT, 0, ..."), read as "unknown command 'ACT,'": each is now an error that
    says what is wrong."""
    from engine.config import load_config
    ddr5 = load_config("DDR5-4800B")
    text = ["6 activate 0 0 0 0 0x10 0x0", "100 read 0 0 0 0 0x10 0x0"]
    assert check_command_trace(text, ddr5) == []
    with pytest.raises(TraceError, match=r"channel 7: the memory has 2 channel\(s\) "
                                         r"\(expected 0 to 1\)"):
        check_command_trace(text, ddr5, channel=7)
    with pytest.raises(TraceError, match=r"line 2: .*channel 5: the memory has 2"):
        check_command_trace([text[0], "100 read 5 0 0 0 0x10 0x0"], ddr5)
    ram = tmp_path / "r.ch0"
    ram.write_text("1, ACT, 0, 0, 3, 3, 14367, 29\n")
    with pytest.raises(TraceError, match=r"r.ch0:1: .*Ramulator 2's command recorder"):
        check_command_trace(ram, ddr5)
