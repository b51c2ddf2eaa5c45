"""Tests of the command line (main.py), run as a user would: a subprocess per command."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAIN = REPO / "main.py"
SUBCOMMANDS = ("simulate", "demo", "check-commands", "convert-trace", "presets")


def run_main(*args: str | Path, cwd: Path | None = None,
             timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """Run `python main.py ARGS` with this interpreter (the venv's); capture the output."""
    return subprocess.run([sys.executable, str(MAIN), *map(str, args)], cwd=cwd or REPO,
                          capture_output=True, text=True, timeout=timeout)


def write_text_trace(path: Path, n: int) -> Path:
    """n requests in the engine's canonical DRAMsim3 text form (so a round trip is exact)."""
    lines = []
    for k in range(n):
        addr = (k * 64 * 37) % (1 << 24)              # a stride that spreads over banks
        op = "WRITE" if k % 4 == 3 else "READ"
        lines.append(f"{addr:#x} {op} {k * 4}\n")
    path.write_text("".join(lines), encoding="ascii")
    return path


def test_help_lists_the_subcommands() -> None:
    res = run_main("--help")
    assert res.returncode == 0, res.stderr
    for name in SUBCOMMANDS:
        assert name in res.stdout


def test_presets_lists_ddr4() -> None:
    """One line a preset with what a choice of memory rests on (the list gave names only)."""
    res = run_main("presets")
    assert res.returncode == 0, res.stderr
    assert "DDR4-3200" in res.stdout.split()
    lines = {x.split()[0]: x.split() for x in res.stdout.splitlines()}
    assert lines["GDDR6"][1:] == ["GDDR6", "1", "8", "GiB", "1515", "MHz", "(0.66", "ns)",
                                  "128", "bit", "256", "B"]
    assert lines["HBM2"][1:3] == ["HBM", "8"]


def test_simulate_bad_config_name_exits_2(tmp_path: Path) -> None:
    trace = write_text_trace(tmp_path / "t.trace", 10)
    res = run_main("simulate", "--config", "NO-SUCH-PRESET", "--trace", trace,
                   "--out", tmp_path / "s.json")
    assert res.returncode == 2
    assert "NO-SUCH-PRESET" in res.stderr
    assert res.stderr.lstrip().startswith("error:")
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "s.json").exists()


def test_simulate_writes_stats_json(tmp_path: Path) -> None:
    trace = write_text_trace(tmp_path / "tiny.trace", 200)
    out = tmp_path / "stats.json"
    res = run_main("simulate", "--config", "DDR4-3200", "--trace", trace, "--out", out)
    assert res.returncode == 0, res.stderr
    stats = json.loads(out.read_text())
    for key in ("num_cycles", "num_reads_done", "average_read_latency", "total_energy"):
        assert key in stats
    assert "row-hit rate" in res.stdout


def test_simulate_names_the_command_trace_files_it_wrote(tmp_path: Path) -> None:
    """One channel: FILE itself; several: one file per channel, and the message names them
    (it named FILE, which a multi-channel run never writes)."""
    trace = write_text_trace(tmp_path / "tiny.trace", 200)
    res = run_main("simulate", "--config", "HBM2", "--trace", trace, "--out",
                   tmp_path / "h.json", "--cmd-trace", tmp_path / "h.cmd")
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "h.cmd").exists()
    assert sorted(p.name for p in tmp_path.glob("h.ch*.cmd")) == [f"h.ch{c}.cmd"
                                                                  for c in range(8)]
    assert f"command traces written to {tmp_path / 'h.ch0.cmd'} ... h.ch7.cmd (8 channels)" \
        in res.stdout
    res = run_main("simulate", "--config", "DDR4-3200", "--trace", trace, "--out",
                   tmp_path / "d.json", "--cmd-trace", tmp_path / "d.cmd")
    assert res.returncode == 0, res.stderr
    assert f"command trace written to {tmp_path / 'd.cmd'}" in res.stdout
    assert (tmp_path / "d.cmd").stat().st_size > 0


@pytest.mark.parametrize("threads,intake", [(1, "dramsim3"), (2, "per-channel")])
def test_command_traces_of_an_earlier_run_are_named_not_taken_for_this_ones(
        tmp_path: Path, caplog, threads: int, intake: str) -> None:
    """A run with 2 channels writes h.ch0.cmd and h.ch1.cmd; files of the same name that it
    does not write (an earlier run's: one channel's h.cmd, an 8-channel run's h.ch5.cmd, the
    Ramulator mode's h.cmd.ch0) are left as they are and named in one warning; files of other
    names are not."""
    import logging
    from engine.config import load_config
    from engine.simulator import SimOptions, simulate_trace
    trace = write_text_trace(tmp_path / "tiny.trace", 300)
    earlier = ["h.cmd", "h.ch5.cmd", "h.cmd.ch0"]
    for name in (*earlier, "h.chx.cmd", "g.ch0.cmd", "h.ch1.cmd"):
        (tmp_path / name).write_text("old\n")
    cfg = load_config("DDR4-3200").replace(channels=2)
    with caplog.at_level(logging.WARNING, logger="engine.simulator"):
        simulate_trace(cfg, trace, SimOptions(cmd_trace=tmp_path / "h.cmd", threads=threads,
                                              intake=intake))
    said = [r.getMessage() for r in caplog.records if "not written by this run" in r.getMessage()]
    assert len(said) == 1 and "3 file(s)" in said[0] and "(2 file(s))" in said[0]
    assert all(n in said[0] for n in earlier) and "chx" not in said[0] and "g.ch0" not in said[0]
    for name in (*earlier, "h.chx.cmd", "g.ch0.cmd"):
        assert (tmp_path / name).read_text() == "old\n"            # left alone
    assert (tmp_path / "h.ch1.cmd").read_text() != "old\n"          # this run's: written
    caplog.clear()
    for name in earlier:
        (tmp_path / name).unlink()
    with caplog.at_level(logging.WARNING, logger="engine.simulator"):
        simulate_trace(cfg, trace, SimOptions(cmd_trace=tmp_path / "h.cmd", threads=threads,
                                              intake=intake))
    assert not [r for r in caplog.records if "not written by this run" in r.getMessage()]


def test_simulate_adds_no_phantom_read_by_default(tmp_path: Path) -> None:
    # DRAMsim3's extra READ at the end of a trace only with --phantom-eof-read
    trace = write_text_trace(tmp_path / "tiny.trace", 200)    # 150 reads, 50 writes
    for flag, extra in (((), 0), (("--phantom-eof-read",), 1)):
        out = tmp_path / f"stats{extra}.json"
        res = run_main("simulate", "--config", "DDR4-3200", "--trace", trace, "--out", out,
                       *flag)
        assert res.returncode == 0, res.stderr
        stats = json.loads(out.read_text())
        assert (stats["num_reads_done"], stats["num_writes_done"]) == (150 + extra, 50), flag


def test_check_commands_reports_a_violation(tmp_path: Path) -> None:
    # READ 2 cycles after ACTIVATE on the same bank: DDR4-3200's tRCD is far longer
    cmds = tmp_path / "bad.cmdtrace"
    cmds.write_text("100 activate 0 0 0 0 0x10 -0x1\n102 read 0 0 0 0 0x10 0x0\n")
    res = run_main("check-commands", "--config", "DDR4-3200", cmds)
    assert res.returncode == 1, res.stderr
    assert "1 JEDEC timing violation" in res.stdout
    assert "tRCD" in res.stdout


def test_convert_trace_round_trip(tmp_path: Path) -> None:
    src = write_text_trace(tmp_path / "a.trace", 500)
    binary = tmp_path / "a.dmt"
    back = tmp_path / "b.trace"
    for a, b in ((src, binary), (binary, back)):
        res = run_main("convert-trace", a, b)
        assert res.returncode == 0, res.stderr
    assert back.read_bytes() == src.read_bytes()


def test_presets_import_ini(tmp_path: Path, shared_dir: Path) -> None:
    ini = shared_dir / "dramsim3-configs" / "DDR4_8Gb_x8_3200.ini"
    if not ini.is_file():
        pytest.skip(f"reference data missing: {ini}")
    res = run_main("presets", "--import-ini", ini, "--out", tmp_path / "mine")
    assert res.returncode == 0, res.stderr
    from engine.config import load_config
    cfg = load_config(tmp_path / "mine.toml")
    assert cfg.protocol == "DDR4"


@pytest.mark.slow
def test_demo_writes_both_results(tmp_path: Path) -> None:
    res = run_main("demo", "--headless", "--out", tmp_path)
    assert res.returncode == 0, res.stderr
    for preset in ("DDR4-3200", "HBM2"):
        stats = json.loads((tmp_path / f"demo_{preset}.json").read_text())
        done = stats["num_reads_done"] + stats["num_writes_done"]
        assert done - stats.get("phantom_eof_read_added", 0) == 20000
        assert preset in res.stdout


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
@pytest.mark.parametrize("user_setting, expected", [(None, "1"), ("2", "2")])
def test_main_keeps_numpys_blas_to_one_thread_unless_the_user_says(user_setting, expected):
    """numpy's OpenBLAS would start a spinning thread per core at import (CPU-seconds the
    engine never uses); main.py sets OPENBLAS_NUM_THREADS=1 before numpy loads, a user's own
    value wins. By default the process then holds one thread after `import numpy`."""
    import os
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if user_setting is not None:
        env["OPENBLAS_NUM_THREADS"] = user_setting
    code = ("import sys, os; sys.path.insert(0, sys.argv[1]); import main, numpy; "
            "print(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')))")
    out = subprocess.run([sys.executable, "-c", code, str(REPO)], env=env, capture_output=True,
                         text=True, timeout=300, check=True).stdout.split()
    assert out[0] == expected
    if user_setting is None:
        assert out[1] == "1"            # no BLAS thread besides the main one


def test_quiet_logs_warnings_only(tmp_path: Path) -> None:
    """-q leaves the INFO lines out (HBM2's IO-energy note) and keeps warnings (a trace
    with an address beyond the capacity, wrapped); -q with -v is refused."""
    trace = write_text_trace(tmp_path / "tiny.trace", 200)
    loud = run_main("simulate", "--config", "HBM2", "--trace", trace, "--out", tmp_path / "a.json")
    quiet = run_main("-q", "simulate", "--config", "HBM2", "--trace", trace, "--out",
                     tmp_path / "b.json")
    assert loud.returncode == quiet.returncode == 0, (loud.stderr, quiet.stderr)
    assert "INFO engine.power" in loud.stderr and "INFO" not in quiet.stderr
    assert quiet.stdout.split("speed")[0] == loud.stdout.split("speed")[0]   # the same figures
    far = tmp_path / "far.trace"
    far.write_text("0x40 READ 0\n0x7fffffffffc0 READ 5\n")
    res = run_main("-q", "simulate", "--config", "HBM2", "--trace", far, "--out",
                   tmp_path / "c.json", "--wrap-addresses")
    assert res.returncode == 0 and "WARNING" in res.stderr and "beyond the capacity" in res.stderr
    res = run_main("-q", "-v", "simulate", "--config", "HBM2", "--trace", trace)
    assert res.returncode == 2 and "not allowed with argument" in res.stderr


def test_output_piped_into_a_reader_that_stops_is_not_an_error(tmp_path: Path) -> None:
    """`main.py ... | head`: the reader closes the pipe; the command ends quietly with 141
    (128 + SIGPIPE, as a shell reports it), not 'error: [Errno 32] Broken pipe'."""
    code = ("import sys, main\n"
            "def chatty(args):\n"
            "    for i in range(200000):\n"
            "        print('line', i)\n"
            "    return 0\n"
            "main.cmd_presets = chatty\n"
            "sys.exit(main.main(['presets']))\n")
    res = subprocess.run(f"{sys.executable} -c \"{code}\" | head -1", shell=True, cwd=REPO,
                         capture_output=True, text=True, timeout=120,
                         executable="/bin/bash")
    assert res.stdout == "line 0\n"
    assert "Broken pipe" not in res.stderr and "error" not in res.stderr, res.stderr
    rc = subprocess.run(f"set -o pipefail; {sys.executable} -c \"{code}\" | head -1",
                        shell=True, cwd=REPO, capture_output=True, text=True, timeout=120,
                        executable="/bin/bash").returncode
    assert rc == 141
