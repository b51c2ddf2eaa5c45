"""benchmarks/bench_load_cpu.py: one measurement beside a co-runner records the work's CPU
time, the scheduler's counts and the co-runner's CPU, and leaves no co-runner behind; the
report's ratios are against the unpinned baseline."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_load_cpu  # noqa: E402


def _busy() -> int:
    end = time.process_time() + 0.3
    n = 0
    while time.process_time() < end:
        n += 1
    return n


def test_measure_beside_a_corunner_and_stop_it(monkeypatch) -> None:
    started = []
    real = bench_load_cpu.start_hogs

    def spy(kind, n, cpus=None):
        hogs = real(kind, n, cpus)
        started.extend(hogs)
        return hogs

    monkeypatch.setattr(bench_load_cpu, "start_hogs", spy)
    rec = bench_load_cpu.measure("busy", _busy, "yes", 1, 0)
    assert rec["kind"] == "yes" and rec["corunners"] == 1 and rec["units"] > 0
    assert rec["cpu_s"] >= 0.3 and rec["thread_cpu_s"] <= rec["cpu_s"] + 1e-3
    assert rec["timeslices"] >= 1 and rec["sched_run_s"] > 0.25
    assert rec["corunner_cpu_s"] > 0                     # the co-runner ran beside the work
    assert set(rec["stat_jiffies"]) >= {"user", "idle", "steal"}
    assert len(started) == 1 and started[0].poll() is not None     # and was stopped
    assert not Path(f"/proc/{started[0].pid}").exists() or \
        "Z" in Path(f"/proc/{started[0].pid}/stat").read_text().split(")")[1][:3]


def test_report_ratios_against_the_baseline(tmp_path) -> None:
    def rec(kind, n, cpu, pin=""):
        return {"work": "exact", "kind": kind, "corunners": n, "rep": 0, "pin": pin,
                "units": 1000, "cpu_s": cpu, "thread_cpu_s": cpu, "wall_s": 2 * cpu,
                "sched_run_s": cpu, "sched_wait_s": cpu, "timeslices": 100, "nvcsw": 0,
                "nivcsw": 0, "stat_jiffies": {"user": 90, "steal": 10}, "procs_running": [2],
                "load": 1.0, "threads": [], "corunner_cpu_s": cpu * n}
    rows = [rec("none", 0, 0.2), rec("none", 0, 0.2), rec("yes", 2, 0.3),
            rec("none", 0, 0.1, pin="same")]
    path = tmp_path / "load.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = bench_load_cpu.report(argparse.Namespace(out=str(path)))
    lines = {ln.split("|")[1].strip(): ln for ln in text.splitlines() if ln.startswith("| ")}
    assert "0.200 +- 0.000 (1.00x)" in lines["none x0"]
    assert "0.300 +- 0.000 (1.50x)" in lines["yes x2"]
    assert "| 10.00 |" in lines["yes x2"]                # steal: 10 of 100 jiffies
