"""The recommendations study's command-trace counters (bank-group pairs, read/write
turnarounds) and the mechanism they give each verdict."""
from __future__ import annotations

import sys
from pathlib import Path

from engine.config import load_config
from engine.studies.catalog import Row
from engine.studies.command_counts import count_command_trace
from engine.studies.recommendations import command_mechanism
from engine.studies.spec import Point, TraceInput, file_digest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_engine_bank_grouping import _burst_trace  # noqa: E402


def test_counts_of_a_hand_written_command_trace(tmp_path: Path) -> None:
    a, b = tmp_path / "c.ch0", tmp_path / "c.ch1"
    #        cycle command channel rank bankgroup bank row col
    a.write_text("0 activate 0 0 0 0 0x5 -0x1\n"
                 "10 read 0 0 0 0 0x5 0x1\n"        # first column command
                 "18 read 0 0 0 1 0x5 0x2\n"        # same rank and bank group: tCCD_L
                 "22 read 0 0 1 0 0x5 0x3\n"        # other bank group
                 "40 write 0 0 1 0 0x5 0x4\n"       # same group (1) again, and read -> write
                 "12000 read 0 0 2 0 0x5 0x5\n")    # other group, W->R, next window
    b.write_text("5 write_p 1 0 3 0 0x9 0x1\n")
    c = count_command_trace([a, b])
    assert c["column"] == 6
    assert c["same_bg_pairs"] == 2 and c["other_bg_pairs"] == 2
    assert c["rw_turnarounds"] == 2
    assert c["active_channels"] == (2 + 1) / 2          # window 0: both; window 1: ch 0


def _run(cfg, trace: Path) -> dict:
    from engine.studies.jobs import run_point
    t = TraceInput("burst", str(trace), digest=file_digest(trace)).to_dict()
    p = Point("recommendations", cfg.to_dict(), t, {"command_counts": True, "variant": "x"},
              None, "trace")
    rec = run_point(p.to_dict())
    assert rec["status"] == "ok", rec
    return rec["metrics"]


def test_bank_grouping_mechanism_names_the_tccd_l_pairs_it_removes(tmp_path: Path) -> None:
    """The hand-made burst of test_engine_bank_grouping (FCFS, 4k reads g0 g0 g1 g1 ...):
    in order half the gaps stay in a bank group; with the policy none does."""
    base = load_config("DDR4-3200").replace(scheduler="fcfs", queue_structure="PER_RANK")
    trace = _burst_trace(tmp_path / "burst.trace", base, 8)
    m0 = _run(base, trace)
    m1 = _run(base.replace(dynamic_bank_grouping=True, bank_group_window=8), trace)
    for m in (m0, m1):
        assert m["commands"]["column"] == m["reads"] + m["writes"] == 34
        assert m["commands"]["same_bg_pairs"] + m["commands"]["other_bg_pairs"] == 33
        assert m["commands"]["rw_turnarounds"] == 0
    assert m0["commands"]["same_bg_pairs"] == 16           # 2 * pairs gaps inside a group
    assert m1["commands"]["same_bg_pairs"] == 0
    words = command_mechanism([Row("v", {}, {}, m1)], [Row("b", {}, {}, m0)])
    assert words == [f"same-bank-group column pairs (tCCD_L) {100 * 16 / 33:.1f} -> 0.0 %"]
    # without the counts on both sides the study says nothing about them
    assert command_mechanism([Row("v", {}, {}, {k: v for k, v in m1.items()
                                                if k != "commands"})],
                             [Row("b", {}, {}, m0)]) == []


def test_front_end_bound_note_on_one_cycle_per_request() -> None:
    from engine.studies.recommendations import front_end_bound
    bound = [Row(str(i), {}, {}, {"cycles": 1010, "reads": 600, "writes": 400})
             for i in range(3)]
    dram = [Row("d", {}, {}, {"cycles": 3000, "reads": 600, "writes": 400})]
    note = front_end_bound(bound + dram)
    assert note is not None and "3 of 4 points" in note and "median" in note
    assert front_end_bound(dram + dram + bound[:1]) is None
    assert front_end_bound([]) is None
