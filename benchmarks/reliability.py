"""Reliability campaign (issue 15): generated hostile inputs across configs, traces,
projects, optimiser files and online-API calls, plus the kill -9 and disk-full trials and the
security cases.  Prints the counts for benchmarks/RESULTS.md ("Reliability").

    python benchmarks/reliability.py                    # 1,100 inputs, 100 kill trials
    python benchmarks/reliability.py --cases 200 --kills 10 --no-diskfull   # quicker

Cases run in a child process that reports each outcome as it goes; a child that dies
(a crash: segfault, abort) or stops reporting for --hang-s seconds (a hang) is counted and
replaced, and the campaign goes on with the next case.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

MIX = {"config": 0.30, "trace": 0.24, "project": 0.16, "optimizer": 0.14, "api": 0.16}


def _plan(n: int, seed: int) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    kinds = list(MIX)
    plan = []
    for i in range(n):
        plan.append((rng.choices(kinds, weights=[MIX[k] for k in kinds])[0], i))
    return plan


def _child(plan_file: str, start: int, seed: int, scratch: str) -> None:
    """Run cases from index ``start``; one JSON line per case on stdout."""
    import logging
    logging.disable(logging.CRITICAL)
    from reliability_cases import GENERATORS, run_case
    plan = json.loads(Path(plan_file).read_text())
    for kind, i in plan[start:]:
        rng = random.Random(seed * 1_000_003 + i)
        print(json.dumps({"i": i, "kind": kind, "state": "start"}), flush=True)
        try:
            case = GENERATORS[kind](rng, Path(scratch), i)
            outcome, detail = run_case(case)
            name = case.name
        except Exception as exc:  # noqa: BLE001 - a generator bug is counted, not fatal
            outcome, detail, name = "generator_error", f"generator: {exc!r}", "?"
        print(json.dumps({"i": i, "kind": kind, "name": name, "outcome": outcome,
                          "detail": detail}), flush=True)


def campaign(n: int, seed: int, hang_s: float) -> dict:
    plan = _plan(n, seed)
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    examples: dict[str, list[str]] = collections.defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="diffmem-reliability-") as tmp:
        plan_file = Path(tmp) / "plan.json"
        plan_file.write_text(json.dumps(plan))
        scratch = Path(tmp) / "s"
        scratch.mkdir()
        pos = 0
        while pos < len(plan):
            child = subprocess.Popen(
                [sys.executable, __file__, "--child", str(plan_file), str(pos), str(seed),
                 str(scratch)], stdout=subprocess.PIPE, text=True, bufsize=1)
            assert child.stdout is not None
            current = None
            import selectors
            sel = selectors.DefaultSelector()
            sel.register(child.stdout, selectors.EVENT_READ)
            last = time.monotonic()
            while True:
                if not sel.select(timeout=1.0):
                    if time.monotonic() - last > hang_s:
                        child.kill()
                        child.wait()
                        kind, i = plan[pos]
                        counts[kind]["hang"] += 1
                        examples["hang"].append(f"{kind} #{i}")
                        pos += 1
                        break
                    continue
                line = child.stdout.readline()
                if not line:
                    rc = child.wait()
                    if current is None and rc != 0:
                        raise RuntimeError(f"the campaign's child process failed before "
                                           f"any case (exit {rc})")
                    if pos < len(plan) and current is not None:
                        kind, i = plan[pos]
                        counts[kind]["crash"] += 1
                        examples["crash"].append(f"{kind} #{i} rc={rc}")
                        pos += 1
                    break
                last = time.monotonic()
                rec = json.loads(line)
                if rec.get("state") == "start":
                    current = rec
                    continue
                counts[rec["kind"]][rec["outcome"]] += 1
                if rec["outcome"] in ("traceback", "impossible", "generator_error") and \
                        len(examples[rec["outcome"]]) < 20:
                    examples[rec["outcome"]].append(f"{rec['name']}: {rec['detail']}")
                elif len(examples[f"{rec['kind']}:{rec['outcome']}"]) < 3:
                    examples[f"{rec['kind']}:{rec['outcome']}"].append(
                        f"{rec['name']}: {rec['detail'][:200]}")
                current = None
                pos = rec["i"] + 1
            sel.close()
    total = collections.Counter()
    for c in counts.values():
        total.update(c)
    return {"cases": n, "seed": seed, "by_kind": {k: dict(v) for k, v in counts.items()},
            "total": dict(total), "examples": dict(examples)}


def security_cases() -> list[tuple[str, str]]:
    """The issue's security cases: what each gives now."""
    import h5py

    from engine.errors import DiffMemError
    from projects import safefs
    from projects.store import Project
    out = []
    with tempfile.TemporaryDirectory(prefix="diffmem-sec-") as tmp:
        root = Path(tmp)
        secret = root / "outside" / "shadow"
        secret.parent.mkdir()
        secret.write_text("root:*:20228:0:99999:7:::\n")
        proj = root / "proj"
        proj.mkdir()
        path = proj / "p.dmproj"
        Project.create(path).close()
        os.symlink(secret, proj / "link")
        for label, raw in (("dotdot", "../../../../../../.." + str(secret)),
                           ("absolute", str(secret)), ("symlink-out", "link")):
            with h5py.File(path, "a") as h5:
                g = h5["traces"].require_group(label)
                g.attrs["storage"] = "external"
                g.attrs["path"] = raw
                g.attrs["fmt"] = "text"
        with Project.open(path) as p:
            for label in ("dotdot", "absolute", "symlink-out"):
                try:
                    p.trace_source(label)
                    out.append((f"external trace, {label}", "ACCEPTED"))
                except DiffMemError as exc:
                    out.append((f"external trace, {label}", str(exc).replace(tmp, "<tmp>")))
        with Project.open(path, allow_external=True) as p:
            try:
                list(p.trace_source("absolute").iter_chunks())
            except DiffMemError as exc:
                out.append(("same, allowed (--allow-external): contents not echoed",
                            str(exc).replace(tmp, "<tmp>")))
        before = secret.read_bytes()
        os.symlink(secret, proj / f".p.dmproj.work-{os.getpid()}")
        with Project.open(path) as p:
            p.save()
        out.append(("symlink planted at the old work-copy name",
                    "not followed (target unchanged)" if secret.read_bytes() == before
                    else "FOLLOWED"))
        os.chmod(path, 0o600)
        with Project.open(path) as p:
            wmode = oct(os.stat(p._work).st_mode & 0o777)
            lmode = oct(os.stat(path.with_name(path.name + ".lock")).st_mode & 0o777)
            p.save()
        out.append(("work copy / lock of a 0600 project", f"work copy {wmode}, lock {lmode}, "
                    f"saved file {oct(os.stat(path).st_mode & 0o777)}"))
        link = root / "l2"
        os.symlink(secret, link)
        try:
            safefs.create_exclusive(link, 0o600)
            out.append(("O_EXCL|O_NOFOLLOW create on a symlink", "FOLLOWED"))
        except OSError as exc:
            out.append(("O_EXCL|O_NOFOLLOW create on a symlink", f"refused: {exc.strerror}"))
        from engine.studies.runner import check_cluster_address
        for addr in ("notaurl", "tcp://h:99999"):
            try:
                check_cluster_address(addr)
                out.append((f"--cluster {addr}", "ACCEPTED"))
            except DiffMemError as exc:
                out.append((f"--cluster {addr}", str(exc)))
    return out


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--child":
        _child(argv[1], int(argv[2]), int(argv[3]), argv[4])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=1100)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--hang-s", type=float, default=60.0)
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--no-diskfull", action="store_true")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    t0 = time.process_time()
    report: dict = {"load": os.getloadavg()}
    report["campaign"] = campaign(args.cases, args.seed, args.hang_s)
    print(json.dumps(report["campaign"]["by_kind"], indent=1))
    print("total:", report["campaign"]["total"])
    report["security"] = security_cases()
    for what, msg in report["security"]:
        print(f"security: {what}: {msg}")
    import fault_trials as ft
    if args.kills:
        k = ft.kill_trials(args.kills, seed=args.seed)
        report["kill"] = k.__dict__
        print("kill -9:", {x: y for x, y in k.__dict__.items() if x != "details"})
    if not args.no_diskfull:
        why = ft.tmpfs_unavailable()
        if why:
            report["diskfull"] = f"skipped: {why}"
        else:
            trials = ft.disk_full_trials([0, 16, 64, 256, 512, 1024, 1536, 2048, 3072, 4096,
                                          8192])
            report["diskfull"] = [dict(free_kib=t.free_kib, steps=t.steps, rc=t.rc,
                                       intact=t.intact, leftovers=t.leftovers,
                                       outcome=t.outcome) for t in trials]
            crashed = sum(t.crashed for t in trials)
            print(f"disk full: {len(trials)} trials, {crashed} crashed, "
                  f"{sum(not t.intact for t in trials)} damaged, "
                  f"{sum(bool(t.leftovers) for t in trials)} with files left")
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    report["cpu_s"] = time.process_time() - t0 + children.ru_utime + children.ru_stime
    report["load_after"] = os.getloadavg()
    print(f"CPU {report['cpu_s']:.0f} s; load {report['load']} -> {report['load_after']}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    bad = report["campaign"]["total"]
    return 1 if any(bad.get(k) for k in ("traceback", "crash", "hang", "impossible")) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
