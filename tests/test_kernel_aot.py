"""The ahead-of-time compiled kernel (engine/kernel_aot.py): built once for this module into a
temporary folder, it must give exactly what numba's kernel gives (statistics, per-bank arrays,
command traces, completions), run in a process that never imports numba, and be ignored when
it is stale (edited kernel sources) or missing, with numba's kernel used instead."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine import kernel as K
from engine import kernel_aot
from engine.config import load_config, load_ini
from engine.errors import SimulationError
from engine.simulator import SimOptions, Simulator, cmd_trace_paths, simulate_trace

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    kernel_aot.find_compiler() is None or not sys.platform.startswith("linux"),
    reason="no C compiler on Linux here: the ahead-of-time kernel cannot be built "
           "(the engine uses numba's kernel; main.py build-kernel says so)")


@pytest.fixture(scope="module")
def aot_dir(tmp_path_factory) -> Path:
    """A folder holding the library for the current sources (built once)."""
    folder = tmp_path_factory.mktemp("kernel")
    mp = pytest.MonkeyPatch()
    mp.setenv(kernel_aot.DIR_ENV, str(folder))
    kernel_aot._loaded.clear()
    try:
        kernel_aot.build()
    finally:
        mp.undo()
        kernel_aot._loaded.clear()
    return folder


def _use(monkeypatch, folder: Path, mode: str) -> None:
    monkeypatch.setenv(kernel_aot.DIR_ENV, str(folder))
    monkeypatch.setenv(kernel_aot.MODE_ENV, mode)
    kernel_aot._loaded.clear()


@pytest.fixture(autouse=True)
def _forget_loaded(monkeypatch):
    monkeypatch.setattr(kernel_aot, "_aot_cpu", [0.0])
    yield
    kernel_aot._loaded.clear()


def _head(src: Path, dst: Path, n: int) -> Path:
    with open(src) as f:
        dst.write_text("".join(next(f) for _ in range(n)))
    return dst


def _run_both(monkeypatch, aot_dir: Path, tmp_path: Path, cfg, trace: Path,
              **opts) -> list[tuple[str, list[str]]]:
    out = []
    for mode in ("jit", "aot"):
        _use(monkeypatch, aot_dir, mode)
        cmd = tmp_path / f"{mode}.cmd" if opts.get("threads", 1) == 1 else None
        st = simulate_trace(cfg, trace, SimOptions(cmd_trace=cmd, **opts))
        cmds = [p.read_text() for p in cmd_trace_paths(cmd, cfg.channels)] if cmd else []
        out.append((kernel_aot.comparable(st), cmds))
    return out


@pytest.mark.parametrize("cfg_name,pattern,intake,threads", [
    ("DDR4_8Gb_x8_3200", "mixed", "dramsim3", 1),
    ("HBM2_8Gb_x128", "random", "dramsim3", 1),
    ("GDDR6_8Gb_x16", "stream", "dramsim3", 1),
    ("HBM2_8Gb_x128", "diffusion", "per-channel", 2),
])
def test_aot_equals_jit_on_dramsim3_reference_runs(monkeypatch, aot_dir, shared_dir, ref_traces,
                                                   tmp_path, cfg_name, pattern, intake,
                                                   threads):
    """Statistics (per-bank arrays, epochs, energy) and every command line are the same as
    numba's kernel gives on DRAMsim3's reference configs and traces (whose agreement with
    DRAMsim3 tests/test_engine_dramsim3.py checks)."""
    cfg = load_ini(shared_dir / "dramsim3-configs" / f"{cfg_name}.ini")
    trace = _head(ref_traces / f"{pattern}.trace", tmp_path / "head.trace", 3000)
    (st_jit, cmd_jit), (st_aot, cmd_aot) = _run_both(
        monkeypatch, aot_dir, tmp_path, cfg, trace, phantom_eof_read=intake == "dramsim3",
        epoch=1000, intake=intake, threads=threads)
    assert '"per_bank"' in st_jit and (threads > 1 or sum(len(c) for c in cmd_jit) > 0)
    assert st_aot == st_jit
    assert cmd_aot == cmd_jit


def test_aot_equals_jit_through_the_online_api(monkeypatch, aot_dir):
    """Chunks fed one by one, access() with completions, advance(): same state arrays."""
    cfg = load_config("DDR4-3200")
    rng = np.random.default_rng(3)
    n = 4000
    addr = (rng.integers(0, 1 << 26, n) * 64).astype(np.uint64)
    isw = rng.random(n) < 0.4
    cyc = np.cumsum(rng.integers(0, 9, n)).astype(np.int64)
    states = []
    for mode in ("jit", "aot"):
        _use(monkeypatch, aot_dir, mode)
        sim = Simulator(cfg, SimOptions(track_completions=True, epoch=700))
        for lo in range(0, n, 1000):
            sim.feed(addr[lo:lo + 1000], isw[lo:lo + 1000], cyc[lo:lo + 1000])
        sim.advance(int(cyc[-1]) + 5000)
        sim.finish()
        states.append(({k: np.array(v) for k, v in sim.s.items()}, sim.completions(),
                       kernel_aot.comparable(sim.stats())))
    (s_jit, c_jit, st_jit), (s_aot, c_aot, st_aot) = states
    for k in s_jit:
        assert np.array_equal(s_jit[k], s_aot[k]), k
    assert all(np.array_equal(a, b) for a, b in zip(c_jit, c_aot))
    assert st_aot == st_jit


def test_text_parser_errors_are_the_same(monkeypatch, aot_dir, tmp_path):
    """The compiled parser reports a bad line as numba's does (file, line, message)."""
    from engine.errors import TraceError
    from engine.trace import iter_trace
    bad = tmp_path / "bad.trace"
    bad.write_text("0x40 READ 1\n# note\n0x80 WRITE 2\n0x40 JUMP 3\n")
    messages = []
    for mode in ("jit", "aot"):
        _use(monkeypatch, aot_dir, mode)
        with pytest.raises(TraceError) as exc:
            list(iter_trace(bad))
        messages.append(str(exc.value))
    assert messages[0] == messages[1] and ":4" in messages[0]


def test_a_process_running_the_library_never_imports_numba(aot_dir, tmp_path):
    """`main.py simulate` on a text trace and the Simulator API, in a fresh interpreter with
    DIFFMEM_KERNEL=aot: numba is not in sys.modules at the end; the JSON equals numba's."""
    import json
    import os
    trace = tmp_path / "t.trace"
    trace.write_text("".join(f"{(i * 7919 % (1 << 24)) * 64:#x} "
                             f"{'WRITE' if i % 3 == 0 else 'READ'} {i * 4}\n" for i in range(1000)))
    code = ("import sys, runpy\n"
            "sys.argv = ['main.py', 'simulate', '--config', 'DDR4-3200', '--trace', sys.argv[1],"
            " '--out', sys.argv[2]]\n"
            "try:\n"
            "    runpy.run_path('main.py', run_name='__main__')\n"
            "except SystemExit as e:\n"
            "    assert not e.code, e.code\n"
            "print('numba' in sys.modules, 'llvmlite' in sys.modules)\n")
    outs = {}
    for mode in ("aot", "jit"):
        env = {**os.environ, kernel_aot.DIR_ENV: str(aot_dir), kernel_aot.MODE_ENV: mode}
        out = tmp_path / f"{mode}.json"
        res = subprocess.run([sys.executable, "-c", code, str(trace), str(out)], cwd=ROOT,
                             env=env, capture_output=True, text=True, check=True)
        outs[mode] = (res.stdout.split()[-2:], json.loads(out.read_text()))
        outs[mode][1].pop("wall_seconds")
    assert outs["aot"][0] == ["False", "False"]
    assert outs["jit"][0] == ["True", "True"]
    assert outs["aot"][1] == outs["jit"][1]


def test_an_edited_kernel_is_never_run_stale(monkeypatch, aot_dir, tmp_path, caplog):
    """The key hashes the kernel's sources: after an edit the library is not found, and a
    library copied under the new key's name is refused (it carries its own key)."""
    import logging
    _use(monkeypatch, aot_dir, "auto")
    assert kernel_aot.load() is not None
    old_key = kernel_aot.kernel_key()
    edited = tmp_path / "engine"
    for rel in kernel_aot.SOURCES:
        (edited / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(kernel_aot.ENGINE / rel, edited / rel)
    with open(edited / "kernel.py", "a") as f:
        f.write("\n# an edit\n")
    monkeypatch.setattr(kernel_aot, "ENGINE", edited)
    new_key = kernel_aot.kernel_key()
    assert new_key != old_key
    kernel_aot._loaded.clear()
    with caplog.at_level(logging.DEBUG, logger="engine.kernel_aot"):
        assert kernel_aot.load() is None
    assert "no compiled kernel" in caplog.text and "build-kernel" in caplog.text
    shutil.copyfile(kernel_aot.library_path(old_key), kernel_aot.library_path(new_key))
    kernel_aot._loaded.clear()
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="engine.kernel_aot"):
        assert kernel_aot.load() is None
    assert f"built for key b'{old_key}'" in caplog.text
    kernel_aot.library_path(new_key).unlink()
    # the simulator then runs numba's kernel, with the same results
    cfg = load_config("HBM2")
    sim = Simulator(cfg)
    assert not hasattr(sim._runner, "keep")
    sim.close()


def test_explicit_aot_mode_says_why_it_cannot(monkeypatch, tmp_path):
    _use(monkeypatch, tmp_path / "empty", "aot")
    with pytest.raises(SimulationError, match="build-kernel"):
        Simulator(load_config("DDR4-3200"))
    monkeypatch.setenv(kernel_aot.MODE_ENV, "fast")
    with pytest.raises(SimulationError, match="auto, jit, aot"):
        kernel_aot.mode()


def test_no_compiler_is_a_clear_error_and_numba_still_runs(monkeypatch, tmp_path, capsys):
    import main
    _use(monkeypatch, tmp_path / "lib", "auto")
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    assert kernel_aot.find_compiler() is None
    assert main.main(["build-kernel", "--force"]) == 2
    err = capsys.readouterr().err
    assert "error: no C compiler found" in err and "numba's kernel" in err
    assert not (tmp_path / "lib").exists() or not any((tmp_path / "lib").iterdir())
    st = simulate_trace(load_config("DDR4-3200"), ROOT / "resources/traces/demo.trace",
                        SimOptions(cycles=5000))
    assert st.summary["num_cycles"] == 5000


def test_a_kernel_folder_that_is_a_file_is_a_clear_error(monkeypatch, tmp_path, capsys):
    """DIFFMEM_KERNEL_DIR naming a file gave a bare "[Errno 17] File exists" after the
    compile; the folder is now made first and the error names it and the variable."""
    import main
    blocker = tmp_path / "kfile"
    blocker.write_text("")
    _use(monkeypatch, blocker, "auto")
    assert main.main(["build-kernel", "--force"]) == 2
    err = capsys.readouterr().err
    assert f"cannot use {blocker} (DIFFMEM_KERNEL_DIR = {blocker})" in err
    assert "(a file is in the way)" in err


def test_an_error_inside_the_compiled_kernel_is_reported(monkeypatch, aot_dir):
    """numba raises ZeroDivisionError on a refresh interval of 0; the library's error path
    (its stubs of numba's raise helpers) turns into a SimulationError, not a wrong result."""
    for mode, exc in (("jit", ZeroDivisionError), ("aot", SimulationError)):
        _use(monkeypatch, aot_dir, mode)
        sim = Simulator(load_config("DDR4-3200"))
        sim.P[K.P_REF_INTERVAL] = 0
        with pytest.raises(exc):
            sim.feed(np.array([64], np.uint64), np.array([False]), np.array([3]), final=True)
        sim.close()


def test_auto_moves_to_numba_mid_run_with_identical_results(monkeypatch, aot_dir, shared_dir,
                                                            ref_traces, tmp_path):
    """``auto`` runs the library, then numba's kernel once the process has spent
    JIT_AFTER_CPU_S in it (here: after the first call); the two share the state arrays, so
    the run equals a numba-only run, commands included."""
    cfg = load_ini(shared_dir / "dramsim3-configs" / "DDR4_8Gb_x8_3200.ini")
    trace = _head(ref_traces / "mixed.trace", tmp_path / "head.trace", 3000)
    (st_jit, cmd_jit), _ = _run_both(monkeypatch, aot_dir, tmp_path, cfg, trace, epoch=300)
    calls = {"aot": 0, "jit": 0}
    real_jit, real_bind = kernel_aot._jit_runner, kernel_aot.AotKernel.bind

    def counting(kind, make):
        def wrap(*a):
            fn = make(*a)

            def run(*args):
                calls[kind] += 1
                return fn(*args)
            run.keep = getattr(fn, "keep", None)
            return run
        return wrap
    monkeypatch.setattr(kernel_aot, "_jit_runner", counting("jit", real_jit))
    monkeypatch.setattr(kernel_aot.AotKernel, "bind", counting("aot", real_bind))
    monkeypatch.setattr(kernel_aot, "JIT_AFTER_CPU_S", 1e-12)
    _use(monkeypatch, aot_dir, "auto")
    cmd = tmp_path / "auto.cmd"
    st = simulate_trace(cfg, trace, SimOptions(cmd_trace=cmd, epoch=300))
    assert calls["aot"] == 1 and calls["jit"] > 5
    assert kernel_aot.comparable(st) == st_jit
    assert [p.read_text() for p in cmd_trace_paths(cmd, cfg.channels)] == cmd_jit
