"""Generated hostile and careless inputs for the reliability campaign (issue 15) and the
property-based tests: mutated configs, traces, projects, optimiser files and online-API calls.

Each generator takes a ``random.Random`` and a scratch folder and returns a :class:`Case`:
a name and a thunk that exercises the public API on the input.  :func:`run_case` runs it and
classifies the outcome:

* ``success``      -- accepted, no warning;
* ``warning``      -- accepted with warnings (configs: ``cfg.warnings``);
* ``clean_error``  -- refused with one of our errors (``engine.errors.DiffMemError``);
* ``traceback``    -- any other exception (a defect);
* ``impossible``   -- a config that describes no device was accepted (a defect).

Crashes and hangs are seen by the campaign driver (benchmarks/reliability.py), which runs the
cases in a child process.
"""
from __future__ import annotations

import json
import os
import random
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CONFIG_DIR = SHARED / "dramsim3-configs"


@dataclass
class Case:
    kind: str
    name: str
    run: Callable[[], Any]          # returns a list of warnings (possibly empty) on success


def run_case(case: Case) -> tuple[str, str]:
    """(outcome, detail) of one case."""
    from engine.errors import DiffMemError
    try:
        warnings = case.run()
    except DiffMemError as exc:
        return "clean_error", str(exc)[:300]
    except Exception as exc:  # noqa: BLE001 - that is what we count
        import traceback
        return "traceback", "".join(traceback.format_exception_only(type(exc), exc))[:300] \
            + traceback.format_exc()[-600:]
    if isinstance(warnings, str) and warnings.startswith("IMPOSSIBLE"):
        return "impossible", warnings
    return ("warning", "; ".join(warnings)[:300]) if warnings else ("success", "")


# --------------------------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------------------------

def _nasty_value(rng: random.Random) -> str:
    return rng.choice([
        "0", "-1", "1", "2", "3", "7", str(2**31), str(2**53 + 1), str(2**63), str(2**64),
        "1" + "0" * 18, "1" + "0" * 40, "1e-9", "1e300", "-1e300", "nan", "inf", "0x10",
        "0.5", "", "true", "abc", "1 2", "\x00", "\u00e9", "99999999", "65536", "1e6",
        str(rng.randint(0, 100)), str(rng.randint(0, 10**6)), str(rng.random()),
    ])


def _rand_text(rng: random.Random, n: int) -> str:
    alphabet = string.printable + "\u00e9\u4e2d\x00\x7f"
    return "".join(rng.choice(alphabet) for _ in range(n))


# --------------------------------------------------------------------------------------------
# configs
# --------------------------------------------------------------------------------------------

def _config_files() -> list[Path]:
    return sorted(CONFIG_DIR.glob("*.ini"))


def config_case(rng: random.Random, scratch: Path, i: int) -> Case:
    from engine.config import load_ini, load_preset
    try:
        from engine.config_physics import impossible
    except ImportError:                     # a build before issue 15 (the "before" run)
        def impossible(cfg: Any) -> list:
            return []
    files = _config_files()
    mode = rng.choice(["mutate", "mutate", "mutate", "multi", "bytes", "empty", "toml",
                       "truncate"])
    if mode in ("mutate", "multi", "truncate"):
        lines = rng.choice(files).read_text().splitlines()
        kv = [k for k, ln in enumerate(lines) if "=" in ln and not ln.strip().startswith(";")]
        for _ in range(1 if mode == "mutate" else rng.randint(2, 6)):
            if kv and mode != "truncate":
                k = rng.choice(kv)
                key = lines[k].split("=")[0]
                lines[k] = f"{key}= {_nasty_value(rng)}"
        if mode == "truncate":
            lines = lines[:rng.randint(0, len(lines))]
        text = "\n".join(lines) + "\n"
        path = scratch / f"c{i}.ini"
    elif mode == "bytes":
        text = _rand_text(rng, rng.randint(0, 400))
        path = scratch / f"c{i}.ini"
    elif mode == "empty":
        text = rng.choice(["", "\n", "; comment\n", "# only\n[timing]\n", "[x]\n"])
        path = scratch / f"c{i}.ini"
    else:
        base = (REPO / "resources" / "presets" / "dram" / "DDR4-3200.toml").read_text()
        lines = base.splitlines()
        kv = [k for k, ln in enumerate(lines) if "=" in ln and not ln.startswith("#")]
        k = rng.choice(kv)
        key = lines[k].split("=")[0]
        value = rng.choice(['0', '-5', str(2**64), '1e-9', '"x"', '[1]', '{a=1}', 'true',
                            '1e300', '10000000000'])
        lines[k] = f"{key}= {value}"
        text = "\n".join(lines) + "\n"
        path = scratch / f"c{i}.toml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))

    def run() -> Any:
        cfg = load_preset(path) if path.suffix == ".toml" else load_ini(path)
        bad = impossible(cfg)
        if bad:
            return "IMPOSSIBLE " + bad[0][1]
        summary = _simulate_small(cfg)      # every accepted config is simulated
        # an independent physical check of what was simulated: a DRAM channel moves well
        # under 10 TB/s, and a read takes at least a nanosecond-scale time
        bw = float(summary["average_bandwidth"])
        if not (0 <= bw < 1e4 * cfg.channels) or not summary["average_read_latency_ns"] >= 0:
            return (f"IMPOSSIBLE simulated {bw:.3g} GB/s, read latency "
                    f"{summary['average_read_latency_ns']} ns")
        return cfg.warnings
    return Case("config", f"{mode}:{path.name}", run)


def _simulate_small(cfg: Any) -> dict[str, Any]:
    import numpy as np

    from engine.simulator import SimOptions, Simulator
    sim = Simulator(cfg, SimOptions(epoch=10_000))
    n = 64
    cap = int(cfg.capacity_bytes)
    addr = (np.arange(n, dtype=np.uint64) * np.uint64(4096)) % np.uint64(max(cap, 64))
    sim.feed(addr, np.arange(n) % 3 == 0, np.arange(n) * 7)
    return sim.finish().summary


# --------------------------------------------------------------------------------------------
# traces
# --------------------------------------------------------------------------------------------

def trace_case(rng: random.Random, scratch: Path, i: int) -> Case:
    import numpy as np

    from engine.trace import TraceChunk, read_trace, write_binary
    mode = rng.choice(["text", "text", "binary", "hdf5", "hdf5", "gap", "bytes"])
    if mode == "text":
        n = rng.randint(0, 30)
        rows, c = [], 0
        for _ in range(n):
            c += rng.choice([0, 1, 5, 100])
            rows.append(f"0x{rng.randint(0, 2**34):x} {rng.choice(['READ', 'WRITE'])} {c}")
        if rows and rng.random() < 0.8:
            k = rng.randrange(len(rows))
            rows[k] = rng.choice([
                rows[k].replace("READ", rng.choice(["RAED", "", "READ READ"])),
                f"0x{'f' * rng.randint(15, 20)} READ 1", f"0x10 READ {'9' * rng.randint(17, 22)}",
                f"0x10 READ -{rng.randint(1, 9)}", "0x10 READ 0", _rand_text(rng, 30),
                f"0x{rng.randint(0, 99)} WRITE {rng.randint(0, 10**12)}"])
        path = scratch / f"t{i}.trace"
        path.write_text("\n".join(rows) + "\n")
    elif mode == "gap":
        gap = rng.choice([10**6, 10**9, 10**12, 9 * 10**17, 2**62 - 1])
        path = scratch / f"t{i}.dmt"
        write_binary(path, TraceChunk.from_arrays([0, 64], [False, False], [0, 0]))
        raw = bytearray(path.read_bytes())
        rec = (len(raw) - 32) // 2
        raw[32 + rec + 8:32 + rec + 16] = gap.to_bytes(8, "little")
        path.write_bytes(bytes(raw))
    elif mode == "binary":
        path = scratch / f"t{i}.dmt"
        n = rng.randint(1, 20)
        write_binary(path, TraceChunk.from_arrays(np.arange(n, dtype=np.uint64) * 64,
                                                  np.zeros(n, bool), np.arange(n)))
        raw = bytearray(path.read_bytes())
        for _ in range(rng.randint(1, 4)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        if rng.random() < 0.3:
            raw = raw[:rng.randrange(len(raw))]
        path.write_bytes(bytes(raw))
    elif mode == "hdf5":
        import h5py
        path = scratch / f"t{i}.h5"
        n = rng.randint(0, 10)
        good = {"addr": np.arange(n, dtype=np.uint64) * 64, "cycle": np.arange(n),
                "is_write": np.zeros(n, np.uint8)}
        bad = rng.choice(["addr", "cycle", "is_write", "stream", "version", "format"])
        with h5py.File(path, "w") as h5:
            g = h5.create_group("trace")
            g.attrs["format"] = "diffmem-trace"
            for k, v in good.items():
                if k != bad:
                    g.create_dataset(k, data=v)
            weird = rng.choice([np.array([b"x"] * n), np.zeros((n, 2)), np.uint64(3),
                                np.zeros(n, dtype=[("a", "<u8")]), np.full(n, 2**63, np.uint64),
                                np.full(n, -1, np.int64), np.full(n, 7, np.uint8),
                                np.linspace(0, 1, n), np.zeros(n + 1, np.uint8)])
            if bad == "version":
                g.attrs["version"] = rng.choice(["one", 99, 1.5, [1, 2]])
                for k, v in good.items():
                    if k not in g:
                        g.create_dataset(k, data=v)
            elif bad == "format":
                g.attrs["format"] = rng.choice(["csv", 5, b"\xff"])
            else:
                g.create_dataset(bad, data=weird)
    else:
        path = scratch / f"t{i}.{rng.choice(['trace', 'dmt', 'h5', 'txt'])}"
        path.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randint(0, 300))))

    def run() -> Any:
        from engine.config import load_config
        from engine.simulator import SimOptions, simulate_trace
        read_trace(path)
        simulate_trace(load_config("DDR4-3200"), path, SimOptions(epoch=10**6))
        return []
    return Case("trace", f"{mode}:{path.name}", run)


# --------------------------------------------------------------------------------------------
# projects
# --------------------------------------------------------------------------------------------

_SEED_PROJECT: dict[str, Path] = {}


def _seed_project(scratch: Path) -> Path:
    if "p" not in _SEED_PROJECT:
        import numpy as np

        from engine.config import load_config
        from engine.trace import TraceChunk, write_text
        from projects.store import Project
        d = scratch / "seed"
        d.mkdir(exist_ok=True)
        t = d / "t.trace"
        write_text(t, TraceChunk.from_arrays(np.arange(50, dtype=np.uint64) * 64,
                                             np.zeros(50, bool), np.arange(50)))
        p = d / "seed.dmproj"
        with Project.create(p) as proj:
            proj.add_config("c", load_config("DDR4-3200"))
            proj.add_trace("emb", t)
            proj.add_trace("ext", t, embed=False)
            proj.save()
        _SEED_PROJECT["p"] = p
    return _SEED_PROJECT["p"]


def project_case(rng: random.Random, scratch: Path, i: int) -> Case:
    import shutil

    import h5py
    import numpy as np
    seed = _seed_project(scratch)
    d = scratch / f"p{i}"
    d.mkdir()
    path = d / "p.dmproj"
    mode = rng.choice(["structure", "structure", "attrs", "bytes", "lock", "evil", "flip"])
    if mode == "bytes":
        path.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randint(0, 2000))))
    else:
        shutil.copyfile(seed, path)
        (d / "t.trace").write_text("0x0 READ 0\n")
    if mode == "structure":
        with h5py.File(path, "a") as h5:
            victim = rng.choice(["runs", "configs", "traces", "studies", "optimizer_runs",
                                 "traces/emb", "traces/emb/addr", "configs/c"])
            if victim in h5:
                del h5[victim]
                if rng.random() < 0.5:
                    h5.create_dataset(victim, data=np.arange(3))
    elif mode == "attrs":
        with h5py.File(path, "a") as h5:
            target = h5[rng.choice(["/", "configs/c", "traces/emb", "traces/ext"])]
            key = rng.choice(["schema_version", "config", "storage", "path", "fmt", "summary",
                              "format", "version"])
            target.attrs[key] = rng.choice(["[1, 2]", "{", "", "teleported", 5, -1, 10**18,
                                            "../../../../etc/shadow", "/etc/passwd", "one",
                                            b"\xff\xfe"])
    elif mode == "evil":
        with h5py.File(path, "a") as h5:
            h5["traces/ext"].attrs["path"] = rng.choice([
                "../../../../../../etc/shadow", "/etc/passwd", "link", "../" * 40 + "etc",
                "sub/../../t.trace", "~/.ssh/id_rsa"])
        if rng.random() < 0.5:
            os.symlink("/etc/passwd", d / "link")
    elif mode == "lock":
        (d / "p.dmproj.lock").write_bytes(rng.choice([b"", b"{", b"[]", b"\xff",
                                                      json.dumps({"pid": 1, "host": "h"})
                                                      .encode()]))
    elif mode == "flip":
        raw = bytearray(path.read_bytes())
        for _ in range(rng.randint(1, 8)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        path.write_bytes(bytes(raw))

    def run() -> Any:
        from projects.store import Project
        with Project.open(path) as p:
            for name in p.configs():
                p.get_config(name)
            for name in p.traces():
                src = p.trace_source(name)
                for _ in src.iter_chunks():
                    pass
            for r in p.runs():
                p.load_run(r)
            p.save()
        return []
    return Case("project", f"{mode}:{path.parent.name}", run)


# --------------------------------------------------------------------------------------------
# optimiser files
# --------------------------------------------------------------------------------------------

def optimizer_case(rng: random.Random, scratch: Path, i: int) -> Case:
    from optimizer.hardware import HARDWARE_DIR, load_hardware
    from optimizer.mapping import load_schedule
    from optimizer.workload import load_network
    mode = rng.choice(["hw", "hw", "net", "net", "sched", "bytes"])
    if mode == "hw":
        lines = (HARDWARE_DIR / "small.toml").read_text().splitlines()
        kv = [k for k, ln in enumerate(lines) if "=" in ln and not ln.startswith("#")]
        k = rng.choice(kv)
        key = lines[k].split("=")[0]
        value = rng.choice(['1e18', '1e-300', '0', '-1', 'nan', 'inf', '"x"', '[1]', '1e300',
                            '3'])
        lines[k] = f"{key}= {value}"
        if rng.random() < 0.3:
            lines.append(rng.choice(["[l4cache]\nread_pj = 1", "[mac]\nspeed = 1"]))
        path = scratch / f"h{i}.toml"
        path.write_text("\n".join(lines) + "\n")
        return Case("optimizer", f"hw:{path.name}", lambda: (load_hardware(path), [])[1])
    if mode == "net":
        layer = {"name": "l", "type": "conv",
                 "dims": {"N": 1, "K": 64, "C": 64, "P": 7, "Q": 7, "R": 3, "S": 3}}
        d = rng.choice(["K", "C", "P", "N"])
        layer["dims"][d] = rng.choice([10**18, 10**400, 1e300, -1, 0, "x", None, True, 2**20,
                                       2**20 + 1, 7])
        doc: Any = rng.choice([[layer], {"name": "n", "layers": [layer]}, {"layers": 5},
                               [layer, layer], "x"])
        text = json.dumps(doc)
        if rng.random() < 0.2:
            text = "[" * rng.choice([100, 10000, 100000]) + "]" * 100000
        path = scratch / f"n{i}.json"
        path.write_text(text)
        return Case("optimizer", f"net:{path.name}", lambda: (load_network(path), [])[1])
    if mode == "sched":
        doc = {"network": "x", "layers": {},
               "fused_edges": rng.choice([5, [1, 2], [["a"]], [["a", "b"]], None, "x",
                                          [[1, 2]]]),
               "meta": rng.choice([{}, 5, [1]])}
        path = scratch / f"s{i}.json"
        path.write_text(json.dumps(doc))
        return Case("optimizer", f"sched:{path.name}", lambda: (load_schedule(path), [])[1])
    path = scratch / f"b{i}.{rng.choice(['json', 'toml'])}"
    path.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randint(0, 200))))
    load = load_network if path.suffix == ".json" else load_hardware
    return Case("optimizer", f"bytes:{path.name}", lambda: (load(path), [])[1])


# --------------------------------------------------------------------------------------------
# online API
# --------------------------------------------------------------------------------------------

_CFG: dict[str, Any] = {}


def api_case(rng: random.Random, scratch: Path, i: int) -> Case:
    import numpy as np

    from engine.simulator import Simulator
    if "c" not in _CFG:
        from engine.config import load_config
        _CFG["c"] = load_config("DDR4-3200")
    cfg = _CFG["c"]
    n = rng.randint(0, 6)
    args = [np.arange(n, dtype=np.uint64) * 64, np.zeros(n, bool), np.arange(n) * 10]
    mode = rng.choice(["length", "dtype", "cycles", "closed", "advance", "ok", "access"])
    if mode == "length" and n:
        args[rng.randrange(3)] = args[rng.randrange(3)][:rng.randrange(n)]
    elif mode == "dtype":
        args[rng.randrange(3)] = rng.choice([["no"] * n, np.full(n, 0.5), np.full(n, 2),
                                             np.zeros((n, 2)), [None] * n])
    elif mode == "cycles" and n:
        args[2] = np.array(args[2])
        args[2][rng.randrange(n)] = rng.choice([-1, -10**18, 2**62 + 1, 2**63 - 1, 0])

    def run() -> Any:
        sim = Simulator(cfg)
        try:
            if mode == "closed":
                sim.close()
            if mode == "advance":
                sim.advance(rng.choice([2**62, 2**62 - 1, 10**12, 10**7, -5, "x", 1.5]))
            elif mode == "access":
                sim.access(args[0], rng.choice([[64] * n, [0] * n, [-1] * n, [2**50] * n]),
                           args[1], args[2])
            else:
                sim.feed(*args)
            sim.finish()
        finally:
            sim.close()
        return []
    return Case("api", f"{mode}:{i}", run)


GENERATORS = {"config": config_case, "trace": trace_case, "project": project_case,
              "optimizer": optimizer_case, "api": api_case}
