"""The fused-group cost model against Stream (KU Leuven's layer-fused scheduler on ZigZag).

    .venv/bin/python benchmarks/stream_fusion.py --stream-python /work/tools/stream-venv/bin/python \
        [--hw large] [--groups NAME ...] [--json OUT.json]

For each fused producer->consumer pair (ResNet18 basic blocks, MobileNetV1 depthwise->pointwise
pairs, GPT-3 FFN fc1->fc2 with token tiling) and each tile count, both tools get **the same
tiling**: the group runs in ``tiles`` lockstep tiles along the output rows (P; tokens for the
FFN) and nothing else is tiled at the DRAM level (the producer computes all its output
channels per tile, the consumer reduces over all of them: the alignment our fusion requires).

* **ours**: ``optimizer.costmodel.evaluate_schedule`` on the two-layer network with the edge
  fused and that DRAM tiling (weights stationary at the DRAM level); DRAM bytes = the group's
  reads + writes; fits = no capacity problem (each layer's buffers and the group's joint
  scratchpad).  Under both fused-input rules (``FusionGraph.halo``): "refetch" (the default:
  the group's first layer fetches each tile's input window, halo included) and "slide"
  (Timeloop's sliding window, every input row once).
* **Stream** (stream-dse 0.0.8 / zigzag-dse 2.5.4, run by ``--stream-python`` in its own
  environment outside the repository): one core with the Gemmini array (K over columns, C over
  rows) whose top memory is the scratchpad (weights, inputs and the fused intermediate:
  Gemmini's accumulator drains into it), the accumulator below it for outputs, the off-chip
  DRAM as Stream's off-chip core; ``hint_loops = [("OY", tiles)]`` splits both layers into
  ``tiles`` computation nodes; Stream schedules them layer-fused (a consumer node runs as soon
  as its inputs exist) and moves tensors between DRAM and the core.  DRAM bytes = the sizes of
  every tensor on the core<->DRAM links (transfers in, evictions and final outputs out);
  fits = nothing was evicted to DRAM and no operand was too large for the core's memory
  (Stream then streams it from DRAM during the computation).

The script runs Stream's side in a subprocess (``--stream-side IN.json OUT.json``, standard
library and Stream only), so no Stream code or data enters the repository.  Without Stream
installed, ``--stream-results benchmarks/results/issue13_stream_large.json`` compares the
model as it is now against Stream's stored figures of an earlier run.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: (group name, network, producer, consumer, tile counts along P)
GROUPS: list[tuple[str, str, str, str, list[int]]] = [
    ("resnet18 layer1.0", "resnet18", "layer1.0.conv1", "layer1.0.conv2", [1, 4, 14]),
    ("resnet18 layer2.0", "resnet18", "layer2.0.conv1", "layer2.0.conv2", [4]),
    ("resnet18 layer2.1", "resnet18", "layer2.1.conv1", "layer2.1.conv2", [2, 7]),
    ("resnet18 layer3.1", "resnet18", "layer3.1.conv1", "layer3.1.conv2", [2]),
    ("resnet18 layer4.1", "resnet18", "layer4.1.conv1", "layer4.1.conv2", [1]),
    ("mobilenet dw1->pw1", "mobilenet_v1", "dw1", "pw1", [8, 28]),
    ("mobilenet dw2->pw2", "mobilenet_v1", "dw2", "pw2", [4]),
    ("mobilenet dw3->pw3", "mobilenet_v1", "dw3", "pw3", [4]),
    ("mobilenet dw4->pw4", "mobilenet_v1", "dw4", "pw4", [4]),
    ("mobilenet dw5->pw5", "mobilenet_v1", "dw5", "pw5", [2]),
    ("mobilenet dw6->pw6", "mobilenet_v1", "dw6", "pw6", [2]),
    ("mobilenet dw7->pw7", "mobilenet_v1", "dw7", "pw7", [2, 7]),
    ("mobilenet dw11->pw11", "mobilenet_v1", "dw11", "pw11", [1]),
    ("mobilenet dw12->pw12", "mobilenet_v1", "dw12", "pw12", [1]),
    ("mobilenet dw13->pw13", "mobilenet_v1", "dw13", "pw13", [1]),
    ("gpt3 ffn fc1->fc2", "gpt3_6.7b_ffn", "fc1", "fc2", [16]),
    ("vgg16 conv1_1->conv1_2", "vgg16", "conv1_1", "conv1_2", [8, 28]),
    ("vgg16 conv2_1->conv2_2", "vgg16", "conv2_1", "conv2_2", [8, 28]),
]


# ---- our side -------------------------------------------------------------------------------
def _divisor_at_most(n: int, cap: int) -> int:
    return max(d for d in range(1, min(n, cap) + 1) if n % d == 0)


def our_mapping(layer: Any, tiles: int, hw: Any, producer: bool) -> Any:
    """The group's DRAM tiling (``tiles`` along P, weights stationary: P the only DRAM loop)
    and a valid inner mapping: K over columns, C over rows, output rows/columns in the
    registers (one weight per PE), the rest of K, C, R, S in the scratchpad; Q moves up to the
    scratchpad while the accumulator tile would not fit."""
    from optimizer.mapping import LayerMapping
    from optimizer.workload import DIMS

    d = dict(layer.dims)
    chan_k = d["K"]
    ks = _divisor_at_most(chan_k, hw.cols)
    cs = _divisor_at_most(d["C"], hw.rows)
    p_tile = d["P"] // tiles
    q_reg = d["Q"]
    per_slice = hw.acc_capacity // hw.cols
    while p_tile * q_reg > per_slice and q_reg > 1:
        q_reg = max(x for x in range(1, q_reg) if d["Q"] % x == 0)
    n_reg = d["N"] if layer.kind != "matmul" else 1
    dram = {x: 1 for x in DIMS}
    dram["P"] = tiles
    reg = {x: 1 for x in DIMS}
    reg.update(P=p_tile, Q=q_reg, N=n_reg)
    acc = {x: 1 for x in DIMS}
    sp = {x: 1 for x in DIMS}
    sp.update(K=chan_k // ks, C=d["C"] // cs, R=d["R"], S=d["S"], Q=d["Q"] // q_reg,
              N=d["N"] // n_reg)
    order = ("N", "K", "C", "P", "Q", "R", "S")
    # the reduction (C, R, S) innermost in the scratchpad: each output tile completes in the
    # accumulator before the next (no partial sums to DRAM)
    sp_order = ("N", "K", "P", "Q", "C", "R", "S")
    return LayerMapping([dram, sp, acc, reg], [order, sp_order, order, order], ks, cs)


def ours(group: tuple[str, str, str, str, list[int]], tiles: int, hw: Any) -> dict[str, Any]:
    from optimizer.costmodel import evaluate_schedule
    from optimizer.mapping import Schedule
    from optimizer.workload import Layer, Network, load_network

    name, net_name, p_name, c_name, _ = group
    net = load_network(net_name)
    lp, lc = net.layers[net.index[p_name]], net.layers[net.index[c_name]]
    lp = Layer(lp.name, lp.kind, dict(lp.dims), lp.stride, ("input",))
    lc = Layer(lc.name, lc.kind, dict(lc.dims), lc.stride, (lp.name,))
    two = Network(f"{net_name}:{p_name}->{c_name}", [lp, lc])
    maps = {lp.name: our_mapping(lp, tiles, hw, True), lc.name: our_mapping(lc, tiles, hw,
                                                                            False)}
    fused = evaluate_schedule(two, Schedule(two.name, maps, [(lp.name, lc.name)]), hw,
                              halo="refetch")
    slide = evaluate_schedule(two, Schedule(two.name, maps, [(lp.name, lc.name)]), hw,
                              halo="slide")
    unfused = evaluate_schedule(two, Schedule(two.name, maps, []), hw)
    sp_words = None
    for pr in fused.problems:
        if "scratchpad tiles" in pr:
            sp_words = pr
    return {"dram_bytes": fused.dram_bytes, "dram_bytes_slide": slide.dram_bytes,
            "dram_bytes_unfused": unfused.dram_bytes,
            "fits": fused.valid, "problems": fused.problems,
            "per_layer": [{"name": r.name, "reads": r.dram_reads, "writes": r.dram_writes}
                          for r in fused.layers],
            "layers": [{"name": x.name, "kind": x.kind, "dims": dict(x.dims),
                        "stride": x.stride, "pad": (x.dims["R"] - 1) // 2}
                       for x in (lp, lc)]}


# ---- Stream's side (runs in Stream's environment) -------------------------------------------
CORE_PY = '''
from zigzag.classes.hardware.architecture.memory_hierarchy import MemoryHierarchy
from zigzag.classes.hardware.architecture.operational_unit import Multiplier
from zigzag.classes.hardware.architecture.operational_array import MultiplierArray
from zigzag.classes.hardware.architecture.memory_instance import MemoryInstance
from zigzag.classes.hardware.architecture.core import Core

ROWS, COLS, SP_BYTES, ACC_BYTES = {rows}, {cols}, {sp}, {acc}

def get_core(id):
    array = MultiplierArray(Multiplier([8, 8], 0.5, 0), {{"D1": COLS, "D2": ROWS}})
    mh = MemoryHierarchy(operational_array=array)
    reg_w = MemoryInstance(name="reg_w", size=8, r_bw=8, w_bw=8, r_cost=0.01, w_cost=0.01,
                           area=0, r_port=1, w_port=1, rw_port=0, latency=1)
    reg_i = MemoryInstance(name="reg_i", size=8, r_bw=8, w_bw=8, r_cost=0.01, w_cost=0.01,
                           area=0, r_port=1, w_port=1, rw_port=0, latency=1)
    reg_o = MemoryInstance(name="reg_o", size=32, r_bw=32, w_bw=32, r_cost=0.02, w_cost=0.02,
                           area=0, r_port=2, w_port=2, rw_port=0, latency=1)
    acc = MemoryInstance(name="accumulator", size=ACC_BYTES * 8, r_bw=COLS * 32 * 2,
                         w_bw=COLS * 32 * 2, r_cost=4.84, w_cost=6.38, area=0, r_port=1,
                         w_port=1, rw_port=0, latency=1)
    sp = MemoryInstance(name="scratchpad", size=SP_BYTES * 8, r_bw=ROWS * 8 * 2,
                        w_bw=ROWS * 8 * 2, r_cost=3.36, w_cost=3.72, area=0, r_port=1,
                        w_port=1, rw_port=0, latency=1)
    mh.add_memory(memory_instance=reg_w, operands=("I2",),
                  port_alloc=({{"fh": "w_port_1", "tl": "r_port_1", "fl": None, "th": None}},),
                  served_dimensions=set())
    mh.add_memory(memory_instance=reg_i, operands=("I1",),
                  port_alloc=({{"fh": "w_port_1", "tl": "r_port_1", "fl": None, "th": None}},),
                  served_dimensions=set())
    mh.add_memory(memory_instance=reg_o, operands=("O",),
                  port_alloc=({{"fh": "w_port_1", "tl": "r_port_1", "fl": "w_port_2",
                                "th": "r_port_2"}},), served_dimensions={{(0, 1)}})
    mh.add_memory(memory_instance=acc, operands=("O",),
                  port_alloc=({{"fh": "w_port_1", "tl": "r_port_1", "fl": "w_port_1",
                                "th": "r_port_1"}},), served_dimensions="all")
    mh.add_memory(memory_instance=sp, operands=("I1", "I2", "O"),
                  port_alloc=({{"fh": "w_port_1", "tl": "r_port_1", "fl": None, "th": None}},
                              {{"fh": "w_port_1", "tl": "r_port_1", "fl": None, "th": None}},
                              {{"fh": "w_port_1", "tl": "r_port_1", "fl": "w_port_1",
                                "th": "r_port_1"}}),
                  served_dimensions="all")
    return Core(id, array, mh, [{{"D1": ("K", COLS), "D2": ("C", ROWS)}}])
'''

ACCEL_PY = '''
from stream_gemmini_core import get_core
from stream.inputs.examples.hardware.cores.offchip import get_offchip_core
from stream.inputs.examples.hardware.nocs.mesh_2d import get_2d_mesh
from stream.classes.hardware.architecture.accelerator import Accelerator
cores = [get_core(0)]
offchip_core = get_offchip_core(id=1)
cores_graph = get_2d_mesh(cores, nb_rows=1, nb_cols=1, bandwidth=64, unit_energy_cost=0,
                          offchip_core=offchip_core)
accelerator = Accelerator("gemmini-like", cores_graph, offchip_core_id=1)
'''

MAPPING_PY = 'mapping = {"default": {"core_allocation": [0]}}\n'


def _stream_layer(layer: dict[str, Any], source: list[int]) -> dict[str, Any]:
    d, s, pad = layer["dims"], layer["stride"], layer["pad"]
    dw = layer["kind"] == "depthwise"
    eq = ("O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][k][iy][ix]" if dw
          else "O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]")
    entry: dict[str, Any] = {
        "operator_type": "Conv",
        "equation": eq,
        "dimension_relations": [f"ix={s}*ox+1*fx", f"iy={s}*oy+1*fy"],
        "loop_dim_size": {"B": d["N"], "K": d["K"], "C": d["C"], "OY": d["P"], "OX": d["Q"],
                          "FY": d["R"], "FX": d["S"]},
        "operand_precision": {"O": 32, "O_final": 8, "W": 8, "I": 8},
        "operand_source": {"W": [], "I": source},
        "constant_operands": ["W"] if source else ["W", "I"],
        "memory_operand_links": {"O": "O", "W": "I2", "I": "I1"},
        "padding": {"IY": (pad, pad), "IX": (pad, pad)},
    }
    if source:
        entry["operand_source_dimension_mapping"] = {"I": {"IX": "OX", "IY": "OY",
                                                           "C": "K"}}
        if dw:
            entry["operand_source_dimension_mapping"]["I"] = {"IX": "OX", "IY": "OY",
                                                              "K": "K"}
    return entry


def stream_side(inp: Path, out: Path) -> None:
    """Run Stream on every case of ``inp`` (JSON) and write the results to ``out``."""
    import importlib
    import logging
    import os

    cases = json.loads(inp.read_text())
    work = Path(tempfile.mkdtemp(prefix="stream_fusion_"))
    sys.path.insert(0, str(work))
    hw = cases["hw"]
    (work / "stream_gemmini_core.py").write_text(CORE_PY.format(**hw))
    (work / "stream_gemmini_accel.py").write_text(ACCEL_PY)
    (work / "stream_gemmini_mapping.py").write_text(MAPPING_PY)
    os.chdir(work)
    logging.basicConfig(level=logging.WARNING)
    from zigzag.classes.stages import MainStage as Main
    from stream.classes.stages import (GenerateCNWorkloadHybridStage, InterCoreMappingStage,
                                       IntraCoreMappingStage, UserDefinedModelParserStage)
    from zigzag.classes.stages import AcceleratorParserStage

    results = []
    for n, case in enumerate(cases["cases"]):
        lp, lc = case["layers"]
        wl = {0: _stream_layer(lp, []), 1: _stream_layer(lc, [0])}
        mod = f"stream_wl_{n}"
        (work / f"{mod}.py").write_text("workload = " + repr(wl) + "\n")
        importlib.invalidate_caches()
        t0, c0 = time.perf_counter(), time.process_time()
        rec: dict[str, Any] = {"name": case["name"], "tiles": case["tiles"]}
        too_large: list[str] = []

        class _Catch(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                msg = record.getMessage()
                if "Adding offchip memory" in msg:
                    too_large.append(msg)
        catch = _Catch()
        logging.getLogger().addHandler(catch)
        try:
            main = Main([AcceleratorParserStage, UserDefinedModelParserStage,
                         GenerateCNWorkloadHybridStage, IntraCoreMappingStage,
                         InterCoreMappingStage],
                        accelerator="stream_gemmini_accel", workload_path=mod,
                        mapping_path="stream_gemmini_mapping", loma_lpf_limit=6,
                        nb_ga_individuals=4, nb_ga_generations=1,
                        node_hw_performances_path=f"{work}/hw_{n}.pickle",
                        plot_hof=False, plot_file_name=False, plot_full_schedule=False,
                        plot_data_transfer=False, cn_define_mode=1,
                        hint_loops=[("OY", case["tiles"])],
                        scheduler_candidate_selection="memory",
                        operands_to_prefetch=[])
            scme = main.run()[0][0]
            acc = scme.accelerator
            off = acc.offchip_core_id
            moved = {"in": 0.0, "out": 0.0}
            by_op: dict[str, float] = {}
            blocked = 0
            def _id(x: Any) -> Any:
                return getattr(x, "id", x)
            links = {}
            for s_core, r_core, data in acc.cores.edges(data=True):
                links[id(data["cl"])] = (data["cl"], _id(s_core), _id(r_core))
            for link, s_id, r_id in links.values():
                if off not in (s_id, r_id):
                    continue
                key = "in" if s_id == off else "out"
                for ev in link.events:
                    if ev.type != "transfer":
                        blocked += 1
                        continue
                    for t in ev.tensors:
                        moved[key] += t.size / 8
                        op = f"{key}:{t.layer_operand}"
                        by_op[op] = by_op.get(op, 0.0) + t.size / 8
            rec.update({"ok": True, "latency": scme.latency, "energy": scme.energy,
                        "moved": moved, "by_operand": by_op, "blocking_events": blocked,
                        "eviction_energy": scme.total_eviction_to_offchip_link_energy
                        + scme.total_eviction_to_offchip_memory_energy,
                        "sink_energy": scme.total_sink_layer_output_offchip_memory_energy,
                        "cn_offchip_memory_energy": scme.total_cn_offchip_memory_energy})
        except Exception as exc:            # report what Stream said, per case
            import traceback
            rec.update({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:600],
                        "trace": traceback.format_exc()[-1500:]})
        logging.getLogger().removeHandler(catch)
        rec["too_large"] = too_large
        rec["fits"] = bool(rec.get("ok")) and not too_large and not rec.get(
            "eviction_energy") and not rec.get("blocking_events")
        rec["cpu_s"] = time.process_time() - c0
        rec["wall_s"] = time.perf_counter() - t0
        results.append(rec)
        out.write_text(json.dumps(results, indent=1, default=str))
        print(f"stream {case['name']} tiles {case['tiles']}: "
              f"{rec.get('moved', rec.get('error'))}", flush=True)


# ---- the comparison -------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stream-python", default="/work/tools/stream-venv/bin/python")
    ap.add_argument("--hw", default="large")
    ap.add_argument("--groups", nargs="+", default=None, help="names (substring match)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--stream-results", default=None, metavar="JSON",
                    help="reuse Stream's side of an earlier run (its --json output) instead "
                         "of running Stream again")
    ap.add_argument("--stream-side", nargs=2, metavar=("IN", "OUT"), default=None,
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.stream_side:
        stream_side(Path(args.stream_side[0]), Path(args.stream_side[1]))
        return 0
    sys.path.insert(0, str(ROOT))
    from optimizer.hardware import load_hardware

    hw = load_hardware(args.hw)
    groups = [g for g in GROUPS if not args.groups or any(s in g[0] for s in args.groups)]
    cases = []
    for g in groups:
        for t in g[4]:
            o = ours(g, t, hw)
            cases.append({"name": g[0], "tiles": t, "layers": o["layers"], "ours": o})
    if args.stream_results:
        prev = json.loads(Path(args.stream_results).read_text())
        st = [r["stream"] for r in prev["rows"]] if isinstance(prev, dict) else prev
        return _compare(args, hw, cases, st)
    tmp = Path(tempfile.mkdtemp(prefix="stream_cmp_"))
    (tmp / "in.json").write_text(json.dumps({"hw": {"rows": hw.rows, "cols": hw.cols,
                                                    "sp": hw.sp_capacity,
                                                    "acc": hw.acc_capacity * 4},
                                             "cases": cases}))
    subprocess.run([args.stream_python, str(Path(__file__).resolve()), "--stream-side",
                    str(tmp / "in.json"), str(tmp / "out.json")], check=False)
    st = json.loads((tmp / "out.json").read_text()) if (tmp / "out.json").exists() else []
    return _compare(args, hw, cases, st)


def _compare(args: argparse.Namespace, hw: Any, cases: list[dict[str, Any]],
             st: list[dict[str, Any]]) -> int:
    by_key = {(s["name"], s["tiles"]): s for s in st}
    st = [by_key.get((c["name"], c["tiles"]), {"ok": False, "error": "not run"})
          for c in cases]
    rows = []
    for case, s in zip(cases, st):
        o = case["ours"]
        lp = case["layers"][0]
        d, stride, t = lp["dims"], lp["stride"], case["tiles"]
        cin = d["K"] if lp["kind"] == "depthwise" else d["C"]
        cols = (d["Q"] - 1) * stride + d["S"]
        once = d["N"] * cin * cols * ((d["P"] - 1) * stride + d["R"])
        # each of the t tiles fetching its own input rows, halo included
        per_tile = d["N"] * cin * cols * t * ((d["P"] // t - 1) * stride + d["R"])
        ok = bool(s.get("ok"))
        sb = sum(s["by_operand"].values()) if ok else math.nan
        s_in = s["by_operand"].get("in:I", 0.0) if ok else math.nan
        rows.append({"group": case["name"], "tiles": t,
                     "ours_bytes": o["dram_bytes"], "ours_slide_bytes": o["dram_bytes_slide"],
                     "ours_unfused_bytes": o["dram_bytes_unfused"],
                     "ours_fits": o["fits"], "ours_problems": o["problems"],
                     "stream_bytes": sb, "stream_input_bytes": s_in,
                     "input_once": once, "input_per_tile_halo": per_tile,
                     "stream_fits": s.get("fits"), "stream_too_large": s.get("too_large", []),
                     "stream_evictions": bool(s.get("eviction_energy")),
                     "stream": s, "ratio": o["dram_bytes"] / sb if sb else math.nan,
                     "ratio_slide": o["dram_bytes_slide"] / sb if sb else math.nan,
                     # the hand count: the sliding model plus each tile's halo rows
                     "hand_refetch_bytes": o["dram_bytes_slide"] + per_tile - once})
    print("| group | tiles | ours, refetch (B) | ours, slide (B) | Stream (B) | "
          "refetch / Stream | slide / Stream | Stream's input (B) | "
          "input once / per-tile halo (B) | fits: ours | fits: Stream |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        print(f"| {r['group']} | {r['tiles']} | {r['ours_bytes']:.6g} | "
              f"{r['ours_slide_bytes']:.6g} | {r['stream_bytes']:.6g} | {r['ratio']:.3f} | "
              f"{r['ratio_slide']:.3f} | {r['stream_input_bytes']:.6g} | "
              f"{r['input_once']:.6g} / {r['input_per_tile_halo']:.6g} | "
              f"{'yes' if r['ours_fits'] else 'no'} | {'yes' if r['stream_fits'] else 'no'} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"hw": hw.name, "rows": rows,
                                               "date": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                     time.gmtime())},
                                              indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
