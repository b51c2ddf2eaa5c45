"""Ramulator 2 run files and LoadStoreTrace inputs, against Ramulator 2.0's own results
(../shared/reference/ramulator2-ddr5/results), per run and per statistic.

One command (from the repository root)::

    .venv/bin/python benchmarks/compare_ramulator2.py [--mode compat|engine]
        [--configs ddr4_8Gb_x8_3200AA_1r ...] [--traces stream random ...] [--n 100000]

``--mode compat`` (default) runs the Ramulator-compatible mode (engine.ramulator.compat: its
front end, Generic controller, FRFCFS, AllBank refresh and device timing reproduced);
``--mode engine`` runs our own engine on the imported configuration (our controller).

It regenerates the reference traces (``../shared/tools/gen_traces.py --n 100000 --seed 7
--interval 2``; md5 checked against ``traces.md5``), writes them as LoadStoreTrace files
(``LD|ST 0xADDR``, the raw conversion the reference used), loads each Ramulator YAML with
``engine.config.load_config`` (engine.ramulator), feeds the LoadStoreTrace with one offer every
``MemorySystem.clock_ratio`` memory cycles, and compares, under Ramulator's definitions:

* ``cycles``: memory cycle of the last accepted request;
* ``reads``: reads accepted; ``lat``: summed read latency / accepted reads (cycles);
* ``hits``: row hits (ours: column commands that are not the first since their ACT);
* ``ACT``: activations.

In engine mode the engine runs its own controller (FR-FCFS over per-rank queues), not a copy
of Ramulator's Generic controller: the differences are that controller's (see the YAML import
notes printed with each config). Ramulator's DDR4 2-rank runs used traces remapped by
``../shared/reference/ramulator2/tools/convert_trace.py --remap ddr4_2r``; that tool (outside
the repository) is run here for them.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import kernel as K  # noqa: E402
from engine.ramulator import load_yaml, read_loadstore  # noqa: E402
from engine.simulator import SimOptions, Simulator  # noqa: E402

REF = ROOT.parent / "shared" / "reference" / "ramulator2-ddr5"
CONFIGS = ("ddr4_8Gb_x8_3200AA_1r", "ddr4_8Gb_x8_3200AA_2r", "ddr5_16Gb_x8_3200AN_1r",
           "hbm3_8Gb_2Gbps_8ch", "lpddr5_8Gb_x16_6400_1r_PATCHrowcheck", "lpddr5_8Gb_x16_6400_1r")
TRACES = ("stream", "random", "mixed", "strided", "diffusion")
STATS = ("cycles", "reads", "lat", "hits", "ACT")


def make_traces(n: int, out: Path) -> dict[str, Path]:
    subprocess.run([sys.executable, str(ROOT.parent / "shared" / "tools" / "gen_traces.py"),
                    "--n", str(n), "--seed", "7", "--interval", "2", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    md5 = {}
    for line in (REF / "traces.md5").read_text().splitlines():
        if line and not line.startswith("#"):
            h, name = line.split()
            md5[name] = h
    lst = {}
    for name in TRACES:
        src = out / f"{name}.trace"
        if n == 100000 and md5.get(src.name) not in (None, hashlib.md5(src.read_bytes()).hexdigest()):
            raise SystemExit(f"{src}: md5 differs from {REF / 'traces.md5'}")
        dst = out / f"{name}.lst"
        with src.open() as fi, dst.open("w") as fo:
            for line in fi:
                addr, kind, _ = line.split()
                fo.write(f"{'ST' if kind == 'WRITE' else 'LD'} {addr}\n")
        lst[name] = dst
        remapped = out / f"{name}.ddr4_2r.lst"
        subprocess.run([sys.executable, str(ROOT.parent / "shared" / "reference" / "ramulator2"
                                            / "tools" / "convert_trace.py"), str(src),
                        str(remapped), "--remap", "ddr4_2r"], check=True,
                       stdout=subprocess.DEVNULL)
        lst[name + ".ddr4_2r"] = remapped
    return lst


def compat(yaml_path: Path, lst: Path) -> dict[str, float]:
    """The compatible mode; LPDDR5 ``*_PATCHrowcheck`` run files as the patched build, the
    others as stock 2.0. A run Ramulator aborts gives ``{"error": message}``."""
    from engine.ramulator.compat import run
    t0 = time.process_time()
    try:
        st = run(yaml_path, lst, lpddr5_rowcheck_fix="PATCHrowcheck" in yaml_path.stem)
    except RuntimeError as exc:
        return {"error": str(exc), "cpu_s": time.process_time() - t0}
    return {"cycles": st.num_cycles, "reads": st.num_reads_accepted,
            "lat": st.average_read_latency, "hits": st.row_hits,
            "ACT": st.to_dict()["num_act_cmds"], "commands": dict(st.commands),
            "cpu_s": time.process_time() - t0}


def ours(yaml_path: Path, lst: Path) -> dict[str, float]:
    ram = load_yaml(yaml_path)
    cfg = ram.memory
    tr = read_loadstore(lst, interval=ram.offer_interval, capacity_bytes=cfg.capacity_bytes)
    sim = Simulator(cfg, SimOptions(epoch=0))
    t0 = time.process_time()
    try:
        sim.feed(tr.addr, tr.is_write, tr.cycle, None)
        st = sim.finish()
        last_accept = int(sim.s["G"][K.G_LAST_ACCEPT])
    finally:
        sim.close()
    cpu = time.process_time() - t0
    d = st.to_dict()
    s = d.get("summary", d)
    reads = s["num_reads_accepted"]
    return {"cycles": last_accept, "reads": reads,
            "lat": s["average_read_latency"] * s["num_reads_done"] / max(reads, 1),
            "hits": s["num_read_row_hits"] + s["num_write_row_hits"], "ACT": s["num_act_cmds"],
            "cpu_s": cpu, "exact": ram.exact}


def theirs(config: str, trace: str) -> dict[str, float] | None:
    p = REF / "results" / f"{config}__{trace}.json"
    if not p.is_file():
        return None
    r = json.loads(p.read_text())
    if r.get("status") != "ok":
        tail = (r.get("stderr_tail", "") + r.get("stdout_tail", "")).strip().splitlines()
        why = [ln for ln in tail if "what()" in ln or "[error]" in ln]
        return {"error": (why[-1] if why else r["status"]).split("what():")[-1]
                .split("[error]")[-1].strip(), "status": r["status"]}
    act = None
    summary = (REF / "SUMMARY.md").read_text()
    for line in summary.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 10 and cells[0] == config and cells[1] == trace:
            act = int(cells[10].replace(",", ""))
    return {"cycles": r["memory_cycles"], "reads": r["reads_accepted"],
            "lat": r["avg_read_latency_cycles"], "hits": r["row_hits"], "ACT": act,
            "commands": r.get("command_counts")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS))
    ap.add_argument("--traces", nargs="+", default=list(TRACES))
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--mode", choices=("compat", "engine"), default="compat")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    print("| config | trace | " + " | ".join(f"{s} R2 | {s} ours | diff" for s in STATS)
          + " | all command counts | our CPU-s |")
    print("|---|---|" + "---:|---:|---:|" * len(STATS) + "---|---:|")
    worst: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        lst = make_traces(args.n, Path(tmp))
        for config in args.configs:
            yaml_path = REF / "configs" / f"{config}.yaml"
            for note in load_yaml(yaml_path).differences:
                print(f"<!-- {config}: {note} -->", file=sys.stderr)
            for trace in args.traces:
                ref = theirs(config, trace)
                if ref is None:
                    print(f"| {config} | {trace} | Ramulator run missing |")
                    continue
                if "error" in ref and args.mode != "compat":
                    print(f"| {config} | {trace} | Ramulator aborts ({ref['status']}: "
                          f"{ref['error']}) |")
                    continue
                src = lst[trace + ".ddr4_2r"] if config.endswith("_2r") else lst[trace]
                if args.mode == "compat":
                    from engine.ramulator.compat import SPECS
                    if load_yaml(yaml_path).standard not in SPECS:
                        print(f"| {config} | {trace} | not reproduced by the compatible mode |")
                        continue
                    got = compat(yaml_path, src)
                    if "error" in ref or "error" in got:
                        same = ref.get("error") == got.get("error")
                        print(f"| {config} | {trace} | R2 aborts: {ref.get('error', 'no')} | "
                              f"ours aborts: {got.get('error', 'no')} | "
                              f"{'same' if same else 'DIFFERENT'} | - | {got['cpu_s']:.2f} |",
                              flush=True)
                        continue
                else:
                    got = ours(yaml_path, src)
                cells = []
                for s in STATS:
                    a, b = ref[s], got[s]
                    if a is None:
                        cells.append(f"- | {b:,.0f} | -")
                        continue
                    diff = (b - a) / a * 100 if a else (0.0 if b == 0 else float("inf"))
                    worst[s] = max(worst.get(s, 0.0), abs(diff))
                    fmt = ",.1f" if s == "lat" else ",.0f"
                    cells.append(f"{a:{fmt}} | {b:{fmt}} | {diff:+.1f} %")
                # every command kind against the recorder run's counts (compat mode only)
                rc, gc = ref.get("commands"), got.get("commands")
                cmds = "-" if rc is None or gc is None else (
                    "identical" if rc == gc else "differ: " + ", ".join(
                        f"{k} {rc.get(k, 0)}/{gc.get(k, 0)}" for k in sorted(set(rc) | set(gc))
                        if rc.get(k, 0) != gc.get(k, 0)))
                print(f"| {config} | {trace} | " + " | ".join(cells)
                      + f" | {cmds} | {got['cpu_s']:.2f} |", flush=True)
    print("\nlargest |difference| per statistic: "
          + ", ".join(f"{s} {v:.1f} %" for s, v in worst.items()))


if __name__ == "__main__":
    main()
