"""Which front-end intake a study's points run with (issues 18/12): per-channel by default for
the studies that measure the DRAM's service time (saturated arrival, memshare,
recommendations), DRAMsim3's otherwise; the setup may name one; a point's id is unchanged for
the DRAMsim3 intake (stored results keep their ids), and the front-end-bound note knows the
per-channel intake's wider limit."""
from __future__ import annotations

import numpy as np
import pytest

from engine.studies.catalog import Row, get_study
from engine.studies.jobs import run_point
from engine.studies.recommendations import front_end_bound
from engine.studies.spec import Point, StudyError, StudySetup, TraceInput
from engine.trace import TraceChunk, write_text


def test_default_intake_per_study():
    assert get_study("recommendations").default_intake("trace") == "per-channel"
    assert get_study("memshare").default_intake("saturate") == "per-channel"
    assert get_study("policy").default_intake("saturate") == "per-channel"
    assert get_study("policy").default_intake("trace") == "dramsim3"
    assert get_study("timing").default_intake("trace") == "dramsim3"


def test_point_id_unchanged_for_the_dramsim3_intake():
    kw = dict(study="s", config={"name": "x"}, trace={"label": "t", "digest": "d",
                                                        "group": "trace"}, tags={})
    old = Point(**kw)
    assert Point(**kw, intake="dramsim3").point_id == old.point_id
    assert Point(**kw, intake="per-channel").point_id != old.point_id
    back = Point.from_dict(Point(**kw, intake="per-channel").to_dict())
    assert back.intake == "per-channel"
    assert Point.from_dict({k: v for k, v in old.to_dict().items()
                            if k != "intake"}).intake == "dramsim3"


def test_bad_setup_intake_is_a_clear_error():
    with pytest.raises(StudyError, match="intake = 'gpu'.*dramsim3, per-channel"):
        StudySetup(traces=[], intake="gpu")
    assert StudySetup.from_dict(StudySetup(traces=[], intake="dramsim3").to_dict()
                                ).intake == "dramsim3"


def test_saturated_policy_study_runs_its_points_per_channel(tmp_path):
    n = 400
    rng = np.random.default_rng(1)
    path = tmp_path / "r.trace"
    write_text(path, TraceChunk((rng.integers(0, 1 << 24, n) * 64).astype(np.uint64),
                                rng.random(n) < 0.3, np.arange(n, dtype=np.int64),
                                np.zeros(n, np.uint16)))
    study = get_study("policy")
    base = dict(traces=[TraceInput.parse(f"r={path}")], config="DDR4-3200",
                overrides={"channels": 2}, arrival="saturate")
    pts = study.points(StudySetup(**base))
    assert pts and {p.intake for p in pts} == {"per-channel"}
    forced = study.points(StudySetup(**base, intake="dramsim3"))
    assert {p.intake for p in forced} == {"dramsim3"}
    a = run_point(pts[0].to_dict())
    b = run_point(forced[0].to_dict())
    assert a["status"] == b["status"] == "ok"
    assert a["metrics"]["intake"] == "per-channel" and a["metrics"]["channels"] == 2
    assert "intake" not in b["metrics"]
    # two channels taking requests in parallel finish the same saturated traffic sooner
    assert a["metrics"]["cycles"] < b["metrics"]["cycles"]


def test_front_end_bound_note_uses_the_intake_width():
    per_ch = [Row(str(i), {}, {}, {"cycles": 510, "reads": 600, "writes": 400,
                                   "intake": "per-channel", "channels": 2}) for i in range(3)]
    note = front_end_bound(per_ch)
    assert note is not None and "per channel" in note and "3 of 3" in note
    # the same cycle counts on 8 channels are far from the per-channel limit
    wide = [Row(r.point_id, {}, {}, {**r.m, "channels": 8}) for r in per_ch]
    assert front_end_bound(wide) is None
