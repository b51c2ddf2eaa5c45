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


def _random_trace(path: Path, n: int, seed: int = 3) -> list[str]:
    import numpy as np
    rng = np.random.default_rng(seed)
    addr = rng.integers(0, 1 << 26, n) * 64          # 4 GiB: within every preset
    cycles = np.cumsum(rng.integers(0, 6, n))
    kind = np.where(rng.random(n) < 0.3, "WRITE", "READ")
    lines = [f"0x{a:x} {k} {c}\n" for a, k, c in zip(addr, kind, cycles)]
    path.write_text("".join(lines))
    return lines


def _same_run(a: dict, b: dict) -> None:
    skip = {"wall_seconds", "stopped_early", "trace_cut_after_cycle", "traces"}
    assert {k: v for k, v in a.items() if k not in skip} == \
        {k: v for k, v in b.items() if k not in skip}


def test_a_stop_cuts_the_trace_and_keeps_its_statistics(tmp_path: Path) -> None:
    """simulate's first Ctrl-C lost the whole run. It now stops reading the trace (`stop`,
    read before each chunk) and completes what was read: the statistics equal those of the
    trace cut at that point, written and marked, in one thread and in two."""
    from engine.simulate_job import run_simulation
    from engine.simulator import SimOptions
    chunk = SimOptions().chunk_size
    full = tmp_path / "full.trace"
    lines = _random_trace(full, 3 * chunk + 100)
    cut = tmp_path / "cut.trace"
    cut.write_text("".join(lines[:2 * chunk]))
    for config, threads in (("DDR4-3200", 1), ("HBM2", 2)):
        calls = [0]

        def stop() -> bool:
            calls[0] += 1
            return calls[0] > 2                  # two chunks read, then stop
        out = tmp_path / f"stopped_{threads}.json"
        stopped = run_simulation(config, [full], out, stop=stop, threads=threads)
        whole = run_simulation(config, [cut], None, threads=threads)
        s = json.loads(out.read_text())
        assert s["stopped_early"] is True
        assert s["trace_cut_after_cycle"] == int(lines[2 * chunk - 1].split()[2])
        _same_run(stopped.to_dict(), whole.to_dict())
        assert s["num_reads_done"] + s["num_writes_done"] == 2 * chunk
    untouched = run_simulation("DDR4-3200", [cut], None, stop=lambda: False).summary
    assert "stopped_early" not in untouched and "trace_cut_after_cycle" not in untouched
    # a stop once the last chunk is read leaves the run whole (it was marked cut)
    calls = [0]

    def after_two() -> bool:
        calls[0] += 1
        return calls[0] > 2
    whole = run_simulation("DDR4-3200", [cut], None, stop=after_two).summary
    assert "stopped_early" not in whole and whole["num_reads_done"] + \
        whole["num_writes_done"] == 2 * chunk


def test_ctrl_c_writes_the_statistics_of_the_trace_read_so_far(tmp_path: Path) -> None:
    """A first Ctrl-C (SIGINT) of `simulate` cuts the trace, completes the requests read and
    writes their statistics (exit 0, marked in the JSON and the last line)."""
    import signal
    import time
    trace = tmp_path / "big.trace"
    _random_trace(trace, 2_000_000)
    out = tmp_path / "s.json"
    proc = subprocess.Popen([sys.executable, str(REPO / "main.py"), "-v", "simulate",
                             "--config", "DDR4-3200", "--trace", str(trace), "--out", str(out)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err = []
    for line in proc.stderr:                 # the handler is set before this debug line
        err.append(line)
        if "simulating" in line:
            break
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    stdout, rest = proc.communicate(timeout=600)
    assert proc.returncode == 0, "".join(err) + rest
    assert "stopping: the trace is cut here" in rest
    s = json.loads(out.read_text())
    assert s["stopped_early"] is True
    assert 0 < s["num_reads_done"] + s["num_writes_done"] < 2_000_000
    assert "stopped early by Ctrl-C" in stdout


def test_the_statistics_say_what_the_run_was(tmp_path: Path) -> None:
    """Two runs of one trace with and without --scheduler fcfs --page-policy close both said
    only "config": "DDR4-3200" (0 % against 57 % row hits): the statistics now record the
    controller's settings, the intake and the traces."""
    trace = tmp_path / "t.trace"
    _random_trace(trace, 2000)
    res, plain = _simulate(tmp_path, trace)
    res2, changed = _simulate(tmp_path, trace, "--scheduler", "fcfs", "--page-policy", "close",
                              "--intake", "per-channel", "--epoch", "5000")
    assert res.returncode == res2.returncode == 0, res.stderr + res2.stderr
    assert plain["config"] == changed["config"] == "DDR4-3200"
    assert plain["traces"] == changed["traces"] == [str(trace)]
    from engine.config import load_config
    cfg = load_config("DDR4-3200")
    assert plain["controller"] == {
        "scheduler": cfg.scheduler, "page_policy": cfg.page_policy,
        "row_buf_policy": cfg.row_buf_policy, "queue_structure": cfg.queue_structure,
        "refresh_policy": cfg.refresh_policy, "address_mapping": cfg.address_mapping,
        "intake": "dramsim3"}
    assert changed["controller"] == {**plain["controller"], "scheduler": "fcfs",
                                     "page_policy": "close", "row_buf_policy": "CLOSE_PAGE",
                                     "intake": "per-channel"}
