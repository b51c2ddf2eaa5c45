"""``python main.py cosim`` end to end on a two-layer network: the command only parses and
prints; optimizer.cosim_job builds the document it writes (summary, validation, iterations)."""
from __future__ import annotations

import json

import main

TINY = {"name": "tiny2", "layers": [
    {"name": "a", "type": "conv", "dims": {"N": 1, "K": 16, "C": 8, "P": 8, "Q": 8, "R": 3,
                                           "S": 3}},
    {"name": "b", "type": "conv", "dims": {"N": 1, "K": 16, "C": 16, "P": 8, "Q": 8, "R": 3,
                                           "S": 3}, "producer": ["a"]}]}


def test_cosim_command_writes_loop_and_validation(tmp_path, capsys, dram_calibration_dir):
    net = tmp_path / "tiny2.json"
    net.write_text(json.dumps(TINY))
    out = tmp_path / "cosim.json"
    # DOSA (unfused): random search now fuses a and b (its fusion bits align the tiles), and
    # the fused schedule it returns at 60 evaluations is the same under the refit DRAM term,
    # which ends the loop after iteration 0 (schedule already measured)
    rc = main.main(["cosim", "--network", str(net), "--hw", "small", "--memory", "DDR4-3200",
                    "--iterate", "1", "--method", "dosa", "--evaluations", "60",
                    "--validate", "2", "--cache-dir", str(dram_calibration_dir),
                    "--out", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["network"] == "tiny2" and data["memory"] == "DDR4-3200"
    assert [it["iteration"] for it in data["iterations"]] == [0, 1]
    assert sum(it["kept"] for it in data["iterations"]) == 1
    s = data["summary"]
    kept = next(it for it in data["iterations"] if it["kept"])
    # the loop keeps the best engine-measured EDP, never worse than the first schedule
    assert s["engine_edp_last"] <= s["engine_edp_first"]
    assert kept["cosim"]["engine_edp"] == min(it["cosim"]["engine_edp"]
                                             for it in data["iterations"])
    v = s["validation"]
    assert v["schedules"] >= 2 and -1.0 <= v["kendall_tau_edp"] <= 1.0
    assert v["dram_cycles_ratio_median"] > 0 and v["dram_energy_ratio_median"] > 0
    printed = capsys.readouterr().out
    assert f"validation on {v['schedules']} schedules" in printed
    assert f"results written to {out}" in printed
