"""Hardened trace readers and online simulator API (issue 15)."""
from __future__ import annotations

import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from engine.api_checks import SimulatorInputError
from engine.config import load_config
from engine.errors import DiffMemError, TraceError
from engine.simulator import SimOptions, Simulator, simulate_trace
from engine.trace import TraceChunk, read_trace, trace_summary, write_binary, write_hdf5


def _h5(path, **datasets):
    with h5py.File(path, "w") as h5:
        g = h5.create_group("trace")
        g.attrs["format"] = "diffmem-trace"
        for k, v in datasets.items():
            if k == "version":
                g.attrs["version"] = v
            else:
                g.create_dataset(k, data=v)
    return path


GOOD = dict(addr=np.arange(4, dtype=np.uint64) * 64, cycle=np.arange(4, dtype=np.uint64),
            is_write=np.zeros(4, np.uint8))


@pytest.mark.parametrize("change,expect", [
    ({"addr": np.array([b"0x40", b"0x80", b"x", b"y"])}, "dataset addr has dtype"),
    ({"addr": np.zeros((2, 2), np.uint64)}, "expected a 1-D dataset"),
    ({"addr": np.uint64(5)}, "expected a 1-D dataset"),
    ({"addr": np.zeros(4, dtype=[("a", "<u8"), ("b", "<u4")])}, "dataset addr has dtype"),
    ({"version": "one"}, "version is not an integer"),
    ({"is_write": np.array([0, 1, 2, 0], np.uint8)}, "is_write is 2"),
    ({"cycle": np.array([0, 1, 2, 2**62 + 5], np.uint64)}, "beyond 2^62"),
    ({"addr": np.array([0, -64, 128, 192], np.int64)}, "is negative"),
    ({"cycle": np.array([0.5, 1, 2, 3])}, "dataset cycle has dtype"),
    ({"stream": np.array([0, 1, 70000, 0], np.int64)}, "stream 70000 is out of range"),
])
def test_hdf5_trace_with_bad_datasets_is_a_clean_error(tmp_path, change, expect):
    path = _h5(tmp_path / "t.h5", **{**GOOD, **change})
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert expect in str(err.value) and str(path) in str(err.value)
    with pytest.raises(TraceError):
        trace_summary(path)


def test_binary_cycle_beyond_2_62(tmp_path):
    path = tmp_path / "t.dmt"
    write_binary(path, TraceChunk.from_arrays([0, 64], [False, True], [0, 10]))
    raw = bytearray(path.read_bytes())
    # second record's cycle field: header 32 bytes, record = addr u8, cycle i8, ...
    rec = (len(raw) - 32) // 2
    raw[32 + rec + 8: 32 + rec + 16] = (2**63 - 1).to_bytes(8, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(TraceError, match="record 2: cycle 9223372036854775807 is beyond 2\\^62"):
        read_trace(path)


# ---- online API --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cfg():
    return load_config("DDR4-3200")


@pytest.mark.parametrize("args,expect", [
    (([0, 64], [False], [0, 1]), "differ in length"),
    (([0, 64], ["no", "yes"], [0, 1]), "is_write: expected booleans"),
    (([0, 64], [0, 2], [0, 1]), "is_write is 2"),
    (([0, 64], [0, 0], [-5, 1]), "cycle -5 is negative"),
    (([0, 64], [0, 0], [10, 3]), "cycle 3 is before"),
    (([0, 64], [0, 0], [0.5, 1]), "whole numbers"),
    (([0, 64], [0, 0], [0, 2**62 + 1]), "beyond 2^62"),
    ((np.zeros((2, 2)), [0, 0], [0, 1]), "1-D"),
    ((["a", "b"], [0, 0], [0, 1]), "addr: expected integers"),
])
def test_feed_rejects_bad_input(cfg, args, expect):
    sim = Simulator(cfg)
    with pytest.raises(SimulatorInputError, match=expect.replace("^", "\\^")):
        sim.feed(*args)
    sim.close()


def test_feed_cycles_must_not_go_back_across_calls(cfg):
    sim = Simulator(cfg)
    sim.feed(np.array([0], np.uint64), np.array([False]), np.array([100]))
    with pytest.raises(SimulatorInputError, match="before the previous request's cycle 100"):
        sim.feed(np.array([64], np.uint64), np.array([False]), np.array([99]))


def test_use_after_close_is_refused(cfg):
    sim = Simulator(cfg)
    sim.close()
    for call in (lambda: sim.feed([0], [False], [0]), lambda: sim.advance(10),
                 lambda: sim.access([0], [64], [False], [0])):
        with pytest.raises(DiffMemError, match="closed"):
            call()


def test_huge_advance_and_gaps_are_bounded(cfg, tmp_path):
    sim = Simulator(cfg)
    t0 = time.process_time()
    # refused for its epochs (idle refresh itself is skipped in closed form: issue 17)
    with pytest.raises(SimulatorInputError, match="statistics epochs"):
        sim.advance(2**62 - 1)
    with pytest.raises(SimulatorInputError, match="outside"):
        sim.advance(2**63 - 1)
    with pytest.raises(SimulatorInputError, match="integer"):
        sim.advance("12")
    for gap in (10**12, 9 * 10**17, 2**62 - 1):
        path = tmp_path / f"g{gap}.trace"
        path.write_text(f"0x0 READ 0\n0x40 READ {gap}\n")
        with pytest.raises(DiffMemError, match="idle gap|more than 18 digits"):
            simulate_trace(cfg, path)
    assert time.process_time() - t0 < 30        # refused up front, not simulated
    # the error names the trace, and why refresh is not skipped when it is not
    path = tmp_path / "g1.trace"
    path.write_text("0x0 READ 0\n0x40 READ 1000000000000\n")
    with pytest.raises(SimulatorInputError, match=r"g1.trace: request 1 \(counting from 0\) "
                                                  r"at cycle 1000000000000: .*statistics epochs"):
        simulate_trace(cfg, path)
    with pytest.raises(SimulatorInputError, match=r"g1.trace: .*refresh intervals; .* when a "
                                                  r"command trace is written"):
        simulate_trace(cfg, path, SimOptions(epoch=10**11, cmd_trace=tmp_path / "c.cmd"))
    # a long but bounded gap is simulated (idle time skipped)
    path = tmp_path / "ok.trace"
    path.write_text("0x0 READ 0\n0x40 READ 50000000\n")
    stats = simulate_trace(cfg, path, SimOptions(epoch=10**7))
    assert stats.summary["num_reads_done"] == 2


def test_access_validates_sizes(cfg):
    sim = Simulator(cfg)
    with pytest.raises(SimulatorInputError, match="sizes"):
        sim.access([0, 64], [0, 64], [False, False], [0, 1])
    with pytest.raises(SimulatorInputError, match="sizes"):
        sim.access([0, 64], [64], [False, False], [0, 1])
    ids = sim.access([0], [256], [False], [0])
    assert len(ids) == 256 // cfg.request_size_bytes


def test_an_empty_trace_runs_as_an_idle_memory_with_a_warning(tmp_path, caplog):
    """No requests at all: the run is valid (with cycles=N it is DRAMsim3's idle memory:
    refresh and background energy), but the user is told, naming the file."""
    import logging

    from engine.simulate_job import run_simulation
    empty = tmp_path / "empty.trace"
    empty.write_text("")
    with caplog.at_level(logging.WARNING, logger="engine.simulate_job"):
        s = run_simulation("DDR4-3200", [empty], None, cycles=20000).summary
    assert s["num_cycles"] == 20000 and s["num_ref_cmds"] > 0
    assert s["num_reads_done"] + s["num_writes_done"] == 0
    assert any("empty.trace: no requests in the trace" in r.getMessage()
               for r in caplog.records)
    # a trace with requests: no such warning
    caplog.clear()
    one = tmp_path / "one.trace"
    one.write_text("0x40 READ 0\n")
    with caplog.at_level(logging.WARNING, logger="engine.simulate_job"):
        run_simulation("DDR4-3200", [one], None)
    assert not any("no requests" in r.getMessage() for r in caplog.records)
    # an empty trace under --max-cycles is still an empty trace (not "no request before N")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="engine.simulate_job"):
        run_simulation("DDR4-3200", [empty], None, max_cycles=1000)
    assert any("empty.trace: no requests in the trace" in r.getMessage()
               for r in caplog.records)


def test_a_folder_given_as_an_output_file_is_refused_before_the_run(tmp_path):
    """`--out` or `--cmd-trace` naming a folder: a clear error before any simulation (not
    after it, naming a temporary file), and the atomic writer says the same."""
    from engine.fileio import atomic_write_text
    from engine.simulate_job import run_simulation
    trace = tmp_path / "t.trace"
    trace.write_text("0x40 READ 0\n")
    folder = tmp_path / "results"
    folder.mkdir()
    with pytest.raises(DiffMemError, match=r"statistics output .*results is a folder"):
        run_simulation("DDR4-3200", [trace], folder)
    with pytest.raises(DiffMemError, match=r"command trace .*results is a folder"):
        run_simulation("DDR4-3200", [trace], tmp_path / "s.json", cmd_trace=folder)
    assert not (tmp_path / "s.json").exists()
    with pytest.raises(IsADirectoryError, match="a folder, expected a file's path") as err:
        atomic_write_text(folder, "x")
    assert err.value.filename == str(folder) and list(folder.iterdir()) == []


def test_an_unwritable_output_path_fails_before_the_run_and_missing_folders_are_made(
        tmp_path, monkeypatch, caplog, capsys):
    """An output whose folder is a file, or a folder this process may not write in, is an
    error naming it before any work (the run's results would be lost at the end); missing
    folders are made before the run and said. The same for every long command."""
    import logging

    import engine.fileio as fileio
    import main as cli
    import optimizer.methods
    from engine.errors import OutputPathError
    from engine.simulate_job import run_simulation
    trace = tmp_path / "t.trace"
    trace.write_text("0x40 READ 0\n")
    afile = tmp_path / "notes.txt"
    afile.write_text("x")
    with pytest.raises(OutputPathError, match=r"statistics output .*notes.txt/s.json: "
                                              r".*notes.txt is a file, not a folder"):
        run_simulation("DDR4-3200", [trace], afile / "s.json")
    with pytest.raises(OutputPathError, match=r"command trace .*notes.txt/a/c.cmd: "
                                              r".*notes.txt is a file, not a folder"):
        run_simulation("DDR4-3200", [trace], tmp_path / "s.json", cmd_trace=afile / "a/c.cmd")
    assert not (tmp_path / "s.json").exists()
    # missing folders: made before the run, warned (a mistyped path makes folders)
    with caplog.at_level(logging.WARNING, logger="engine.fileio"):
        run_simulation("DDR4-3200", [trace], tmp_path / "new/deeper/s.json",
                       cmd_trace=tmp_path / "cmds/c.cmd")
    assert (tmp_path / "new/deeper/s.json").is_file() and (tmp_path / "cmds/c.cmd").is_file()
    said = [r.getMessage() for r in caplog.records if r.name == "engine.fileio"
            and r.levelno == logging.WARNING]
    assert said == [f"created the folder {tmp_path / 'new/deeper'} for the statistics output",
                    f"created the folder {tmp_path / 'cmds'} for the command trace"]
    # a folder without write permission (root may write anywhere: the check is os.access)
    locked = tmp_path / "locked"
    locked.mkdir()
    real = fileio.os.access
    monkeypatch.setattr(fileio.os, "access", lambda p, m: False if str(p) == str(locked)
                        else real(p, m))
    with pytest.raises(OutputPathError, match=r"no permission to write in the folder "
                                              r".*locked$"):
        run_simulation("DDR4-3200", [trace], locked / "sub" / "s.json")
    assert not (locked / "sub").exists()
    monkeypatch.undo()

    # the command line: `optimize` checks --out before its search, which never starts
    def no_search(*a, **k):
        raise AssertionError("the search ran before the output path was checked")

    monkeypatch.setattr(optimizer.methods, "optimize", no_search)
    rc = cli.main(["optimize", "--network", "resnet50", "--hw", "small", "--out",
                   str(afile / "s.json")])
    err = capsys.readouterr().err
    assert rc == 2 and f"error: schedule output {afile / 's.json'}: {afile} is a file" in err
    # ... and `trace` checks --out, --text and --summary before it captures the step
    import engine.workloads.generate as generate
    monkeypatch.setattr(generate, "generate_trace", no_search)
    rc = cli.main(["trace", "--workload", "ddpm", "--batch", "1", "--out",
                   str(tmp_path / "ok.h5"), "--summary", str(afile / "s.json")])
    err = capsys.readouterr().err
    assert rc == 2 and f"error: summary output {afile / 's.json'}: {afile} is a file" in err


def test_a_device_fifo_or_link_given_as_output_is_not_replaced_by_a_file(tmp_path,
                                                                         monkeypatch):
    """Outputs are written to a temporary file moved onto the path: onto a device (as root,
    /dev/full became a plain file), a FIFO or a symbolic link that put a plain file in its
    place. Now a device or FIFO is refused before the run, naming what it is; a link's target
    is written and the link stays; a folder that takes no new files (as /proc) and an empty
    path are refused before the run too."""
    import os

    from engine import fileio
    from engine.errors import OutputPathError
    from engine.simulate_job import run_simulation
    trace = tmp_path / "t.trace"
    trace.write_text("0x40 READ 0\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, kind in ((Path("/dev/null"), "a device"), (fifo, "a FIFO")):
        with pytest.raises(OutputPathError, match=f"statistics output {path} is {kind}"):
            run_simulation("DDR4-3200", [trace], path)
        with pytest.raises(OutputPathError, match=f"{path} is {kind}"):
            fileio.atomic_write_text(path, "x")
    assert fifo.is_fifo() and Path("/dev/null").is_char_device()
    link = tmp_path / "latest.json"
    (tmp_path / "runs").mkdir()
    link.symlink_to(tmp_path / "runs" / "r1.json")
    run_simulation("DDR4-3200", [trace], link)
    assert link.is_symlink() and "num_cycles" in (tmp_path / "runs" / "r1.json").read_text()
    with pytest.raises(OutputPathError, match="an empty path"):
        run_simulation("DDR4-3200", [trace], "")

    def no_new_files(*a, **k):
        raise FileNotFoundError(2, "No such file or directory")
    monkeypatch.setattr(fileio.tempfile, "mkstemp", no_new_files)
    with pytest.raises(OutputPathError, match=r"cannot create a file in the folder .* \(No "
                                              r"such file or directory\)"):
        run_simulation("DDR4-3200", [trace], tmp_path / "s.json")
    assert not (tmp_path / "s.json").exists()


def test_an_output_that_is_an_input_or_another_output_is_refused_first(tmp_path, capsys):
    """simulate --out onto its trace replaced the trace with statistics; --cmd-trace onto
    --out lost the commands; trace --summary onto --out replaced the trace; convert-trace
    onto its source dropped its tags: each is refused before any work, naming both, and the
    files are left as they were (links followed)."""
    import main as cli
    trace = tmp_path / "t.trace"
    trace.write_text("0x40 READ 0\n0x80 WRITE 3\n")
    link = tmp_path / "link.trace"
    link.symlink_to(trace)
    before = trace.read_text()
    per_channel = tmp_path / "x.ch1.cmd"
    per_channel.write_text(before)
    loadstore = tmp_path / "r2.ch0"
    loadstore.write_text("LD 0x40\n")
    ddr4_yaml = next((Path(__file__).parent / "data" / "reference" / "ramulator2-ddr5" / "configs")
                     .glob("ddr4_*_1r.yaml"))
    for argv, said in (
            (["simulate", "--config", "DDR4-3200", "--trace", str(trace), "--out", str(link)],
             "statistics output .*link.trace is also the trace input"),
            (["simulate", "--config", "DDR4-3200", "--trace", str(trace), "--out",
              str(tmp_path / "s.json"), "--cmd-trace", str(tmp_path / "s.json")],
             "command trace .*s.json is also the statistics output"),
            (["convert-trace", str(trace), str(trace)],
             "converted trace .*t.trace is also the source trace"),
            (["trace", "--workload", "ddpm", "--size", "tiny", "--batch", "1", "--out",
              str(tmp_path / "x.h5"), "--summary", str(tmp_path / "x.h5")],
             "summary output .*x.h5 is also the trace output"),
            # a channel's command trace (PATH.chN: HBM2 has 8) onto the trace
            (["simulate", "--config", "HBM2", "--trace", str(per_channel), "--out",
              str(tmp_path / "s.json"), "--cmd-trace", str(tmp_path / "x.cmd")],
             "command trace .*x.ch1.cmd is also the trace input"),
            # Ramulator's recorder writes PATH.ch0 ...
            (["ramulator", "--config", str(ddr4_yaml), "--trace", str(loadstore),
              "--cmd-trace", str(tmp_path / "r2")],
             "command trace .*r2.ch0 is also the trace input")):
        assert cli.main(argv) == 2
        import re
        assert re.search(said, capsys.readouterr().err), argv
    assert trace.read_text() == before and not (tmp_path / "s.json").exists()
    assert not (tmp_path / "x.h5").exists()
    assert per_channel.read_text() == before and loadstore.read_text() == "LD 0x40\n"
