"""Re-score a cosim result's validation schedules with the DRAM term before issue 14's second
pass (the reasoned write-buffer rule and proportional residual reads, commit 91644d0, read
with `git show`) and the current one, calibration only (no refit); the engine's figures come
from the result file, so both models face the same schedules and the same measurements.

    .venv/bin/python benchmarks/rescore_dram_term.py R.json [R2.json ...] [--cache-dir DIR]
"""
import sys, json, types, dataclasses, subprocess
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OLD = "91644d0"


def _git_show(path: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), "show", f"{OLD}:{path}"], check=True,
                          capture_output=True, text=True).stdout

import numpy as np, torch
from optimizer import cosim, validation
from optimizer.hardware import load_hardware
from optimizer.mapping import Schedule
from optimizer.space import SearchSpace
from optimizer.workload import load_network
from optimizer.costmodel import schedule_network_costs
import optimizer.dram_model as new
old = types.ModuleType('old_dram_model'); old.__file__ = f'{OLD}:optimizer/dram_model.py'
sys.modules['old_dram_model'] = old
exec(compile(_git_show('optimizer/dram_model.py'), old.__file__, 'exec'), old.__dict__)
src = _git_show('optimizer/costmodel.py')
import optimizer.costmodel as cm
g = dict(cm.__dict__)
exec(compile(src[src.index('def _revisit_tiles('):src.index('# ---- a network: fusion')], 'oldcm', 'exec'), g)
old_revisit = g['_revisit_tiles']

def score(path, cache=None):
    d = json.load(open(path))
    net = load_network(d['network']); hw = load_hardware('large'); mem = cosim.load_memory(d['memory'])
    its = d['iterations']
    loop = ([Schedule.from_json(it['schedule']) for it in its if it.get('kept')]
            + [Schedule.from_json(it['schedule']) for it in its if not it.get('kept')])
    v = d['summary']['validation']
    picks = validation.candidates(SearchSpace.build(net, hw), loop, v['schedules'], seed=d['seed'])
    nhw = cosim.dram_hardware(hw, mem, cache_dir=cache)
    cal = new.calibrate(mem, cache)
    ocal = old.Calibration(**{f.name: getattr(cal, f.name) for f in dataclasses.fields(old.Calibration)})
    oterm = old.DramTerm.build(mem, ocal, layout=d['layout'], block=hw.cols)
    rows = []
    for (source, s), p in zip(picks, v['points']):
        maps = [s.mappings[l.name] for l in net.layers]
        nc, _ = schedule_network_costs(net, maps, s.fused, nhw)
        with torch.no_grad():
            dn = new.dram_traffic(new.unscaled(nhw.dram), nc.layer, nc.dram_reads, nc.dram_writes)
            # old LayerCosts extras: o_step_dim / o_step_factor from the old analysis
            mt = cm.MappingTensors.from_mappings(maps)
            _, sd, sf = old_revisit(mt, cm.LayerBatch.from_network(net))
            c = types.SimpleNamespace(**{f.name: getattr(nc.layer, f.name) for f in dataclasses.fields(nc.layer)})
            c.o_step_dim, c.o_step_factor = sd, sf
            do = old.dram_traffic(oterm, c, nc.dram_reads, nc.dram_writes)
            bg, ref = new.time_energy_pj(new.unscaled(nhw.dram), nc.cycles)
        en = float((dn.data_pj + dn.act_pj + bg + ref).sum()); eo = float((do.data_pj + do.act_pj + bg + ref).sum())
        rows.append((source, p['requests'], float(do.service_cycles.sum()) / p['engine_dram_cycles'],
                     float(dn.service_cycles.sum()) / p['engine_dram_cycles'],
                     eo / p['engine_dram_pj'], en / p['engine_dram_pj']))
    return d, rows

args = sys.argv[1:]
cache = None
if "--cache-dir" in args:
    i = args.index("--cache-dir")
    cache = args[i + 1]
    del args[i:i + 2]
for path in args:
    d, rows = score(path, cache)
    print(f"{d['network']} {d['memory']}: time old/new, energy old/new (calibrated, no refit; model/engine)")
    for r in rows:
        print(f"  {r[0]:10s} {r[1]:9d}  time {r[2]:.3f} -> {r[3]:.3f}   energy {r[4]:.3f} -> {r[5]:.3f}")
    t_o = [r[2] for r in rows]; t_n = [r[3] for r in rows]
    w = lambda xs: xs[int(np.argmax(np.abs(np.log(xs))))]
    print(f"  worst time old {w(t_o):.3f} new {w(t_n):.3f}; median old {np.median(t_o):.3f} new {np.median(t_n):.3f}")
