"""`main.py simulate --cycles / --max-cycles / --wrap-addresses` (issue 17), end to end."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _simulate(tmp: Path, trace: Path, *flags: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp / "s.json"
    out.unlink(missing_ok=True)
    res = subprocess.run([sys.executable, str(REPO / "main.py"), "simulate", "--config",
                          "DDR4-3200", "--trace", str(trace), "--out", str(out), *flags],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    return res, (json.loads(out.read_text()) if out.exists() else {})


def test_cycles_max_cycles_and_wrap_from_the_command_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.trace"
    trace.write_text("0x0 READ 0\n0x40 WRITE 3\n0x10000000040 READ 9\n")
    res, _ = _simulate(tmp_path, trace)
    assert res.returncode == 2
    assert "beyond the memory capacity" in res.stderr and "--wrap-addresses" in res.stderr
    res, s = _simulate(tmp_path, trace, "--wrap-addresses", "--cycles", "100000")
    assert res.returncode == 0, res.stderr
    assert s["run_mode"] == "cycles" and s["num_cycles"] == 100000
    assert s["num_addresses_wrapped"] == 1 and s["num_ref_cmds"] > 0
    assert "wrapped addresses" in res.stdout
    res, s2 = _simulate(tmp_path, trace, "--wrap-addresses", "--max-cycles", "100000")
    assert res.returncode == 0, res.stderr
    assert s2["run_mode"] == "max_cycles" and s2["num_cycles"] < 1000
    res, s3 = _simulate(tmp_path, trace, "--wrap-addresses", "--cycles", "12")
    assert s3["num_cycles"] == 12 and s3["num_requests_pending"] + s3["num_requests_waiting"] > 0
    assert "pending" in res.stdout
    res, _ = _simulate(tmp_path, trace, "--cycles", "10", "--max-cycles", "5")
    assert res.returncode == 2 and "not allowed with" in res.stderr
