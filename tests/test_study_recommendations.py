"""The recommendations study: its interval and verdict logic on synthetic results, and one
small end-to-end run (points, simulation, analysis, HTML and PDF report)."""
from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from engine.studies import run_study, render_report
from engine.studies.recommendations import (BASELINE, RECOMMENDATIONS, Change, Recommendations,
                                            paired_change, platform_config, run_key,
                                            verdict)
from engine.studies.spec import StudyError, StudySetup, TraceInput
from engine.studies.synthetic import _ATTN_BASE, training_step


def test_verdicts_in_plain_words():
    assert verdict(Change(-1.0, -2.0, 0.5, 5)) == "no measurable effect"     # spans zero
    assert verdict(Change(1.0, -0.1, 2.1, 5)) == "no measurable effect"
    assert verdict(Change(-5.0, -6.0, -4.0, 5)) == "helps"
    assert verdict(Change(3.0, 2.0, 4.0, 5)) == "hurts"
    # entirely within +-0.5 %: measurable in principle, too small to matter
    assert verdict(Change(0.2, 0.1, 0.3, 5)) == "no measurable effect"
    assert verdict(Change(0.2, 0.1, 0.3, 5), min_effect_pct=0.0) == "hurts"
    assert verdict(Change(-2.0, float("nan"), float("nan"), 1)).startswith("no interval")


def test_paired_change_is_the_ratio_of_sums_with_a_t_interval():
    base = np.array([100.0, 110.0, 90.0, 105.0, 95.0])
    c = paired_change(0.9 * base, base)
    assert c.pct == pytest.approx(-10.0)
    assert c.lo == pytest.approx(-10.0) and c.hi == pytest.approx(-10.0)   # no scatter
    noise = np.array([1.0, -1.0, 0.5, -0.5, 0.0])
    c = paired_change(base + noise, base)
    assert c.pct == pytest.approx(0.0, abs=1e-12)
    assert c.lo < 0.0 < c.hi and verdict(c, 0.0) == "no measurable effect"
    # by hand: residuals d_i (R = 0), se = sqrt(n/(n-1) sum d^2) / sum b, t(4) = 2.776445
    se = np.sqrt(5 / 4 * np.sum(noise ** 2)) / base.sum()
    assert c.hi == pytest.approx(100 * 2.776445 * se)
    with pytest.raises(StudyError):
        paired_change([1.0], [1.0, 2.0])


def _metrics(t: float, e: float) -> dict:
    return {"step_time_ns": t, "energy_total_pJ": e, "avg_read_latency_ns": 100.0,
            "reads": 1000, "writes": 500, "row_hit_rate": 0.9, "row_conflicts": 10, "act": 100,
            "ref": 5, "energy_io_pJ": 0.2 * e, "energy_by_cause_pJ": {"background": 0.4 * e,
                                                                      "refresh": 0.1 * e}}


def test_analysis_on_synthetic_results_gives_one_verdict_per_recommendation():
    """Three blocks: 'write priority' scatters around zero (no measurable effect), 'bank
    interleaving' is 10 % faster in every block (helps), 'early precharge' 5 % slower
    (hurts)."""
    base_t = [1000.0, 1200.0, 900.0]
    changes = {"write priority -15 %": [1.01, 0.99, 1.002],
               "bank-interleaved layout": [0.9, 0.9, 0.9],
               "early precharge": [1.05, 1.05, 1.05]}
    points, records = [], []
    trace = {"label": "ddpm", "kind": "diffusion", "batch": 8, "scale": 10.0,
             "path": "x", "digest": "d", "group": "trace"}
    for s, bt in enumerate(base_t):
        for order, (name, f) in enumerate([(BASELINE, [1, 1, 1])] + list(changes.items())):
            pid = f"p{s}{order}"
            points.append({"point_id": pid, "trace": trace, "tags": {
                "platform": "DDR4-3200@8ch", "segment": s, "variant": name, "order": order,
                "setup": run_key({}, {})}})
            records.append({"point_id": pid, "status": "ok",
                            "metrics": _metrics(bt * f[s], 5e6 * f[s])})
    doc = {"study": "recommendations", "points": points, "setup": {"params": {}}}
    a = Recommendations().analyse(doc, records)
    table = a.tables[0]
    got = {row[1]: (row[9], row[10]) for row in table.rows}
    assert got["write priority -15 %"] == ("no measurable effect", "no measurable effect")
    assert got["bank-interleaved layout"] == ("helps", "helps")
    assert got["early precharge"] == ("hurts", "hurts")
    # the document's claim is quoted beside each
    claims = {k: zh for k, zh, _en, _t in RECOMMENDATIONS}
    assert all(claims[row[1]] in row[2] for row in table.rows)
    # a verdict carries its unit; one on a workload the claim is not about says so (these
    # claims are about diffusion / image generation: 'ddpm' is one, a CNN is not)
    said = {f.key.split("/")[1]: f.text for f in a.findings if f.key}
    assert "ddpm: time helps (-10.00 [-10.00, -10.00] %)" in said["bank-interleaved layout"]
    assert not any("not about" in t for t in said.values())
    cnn = {**trace, "label": "resnet", "kind": "cnn"}
    doc_cnn = dict(doc, points=[dict(pt, trace=cnn) for pt in points])
    said = {f.key.split("/")[1]: f.text
            for f in Recommendations().analyse(doc_cnn, records).findings if f.key}
    assert said["bank-interleaved layout"].endswith(
        "[no image-generation workload among the traces: measured on resnet, which the claim "
        "is not about]")
    assert said["write priority -15 %"].endswith(
        "[no diffusion workload among the traces: measured on resnet, which the claim is not "
        "about]")


def test_platform_syntax():
    cfg = platform_config("DDR4-3200@8ch", {})
    assert cfg.channels == 8 and cfg.protocol == "DDR4"
    with pytest.raises(StudyError, match="PRESET@Nch"):
        platform_config("DDR4-3200@eight", {})


def _tagged_step(path, kind, batch):
    chunk, flops = training_step(kind, batch, layers=3, weight_kb=32)
    n = len(chunk)
    phase = np.where(chunk.addr >= _ATTN_BASE, 1, 0).astype(np.uint8)
    with h5py.File(path, "w") as f:
        g = f.create_group("trace")
        g.create_dataset("addr", data=chunk.addr)
        g.create_dataset("cycle", data=chunk.cycle.astype(np.uint64))
        g.create_dataset("is_write", data=chunk.is_write.astype(np.uint8))
        g.create_dataset("stream", data=np.zeros(n, np.uint16))
        g.create_dataset("phase", data=phase)
        g.create_dataset("op", data=np.zeros(n, np.uint32))
        g.create_dataset("role", data=np.zeros(n, np.uint8))
        g.attrs["phase_names"] = json.dumps(["forward", "attention", "backward", "optimizer"])
        g.attrs["format"] = "diffmem-trace"
        g.attrs["version"] = 1
    return TraceInput(label=f"{kind}-dit" if kind == "diffusion" else "resnet", path=str(path),
                      kind=kind, batch=batch, flops=flops)


def test_recommendations_study_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFMEM_DERIVED_DIR", str(tmp_path / "derived"))
    traces = [_tagged_step(tmp_path / "d.h5", "diffusion", 2),
              _tagged_step(tmp_path / "c.h5", "cnn", 2)]
    setup = StudySetup(traces=traces, params={"configs": ["DDR4-3200@2ch", "HBM2"],
                                              "segments": ["3"], "sram_kib": ["64"]},
                       arrival="saturate")
    out = run_study("recommendations", setup, folder=tmp_path / "out", workers=0)
    assert all(r["status"] == "ok" for r in out.records)
    # DDR4: baseline + 7; HBM2: baseline + 6 (already 3D-stacked; page already 2 KB? see
    # the variants) -- per trace and block
    per = {}
    for p in out.document["points"]:
        per.setdefault(p["tags"]["platform"], set()).add(p["tags"]["variant"])
    assert per["DDR4-3200@2ch"] == {BASELINE} | {k for k, *_ in RECOMMENDATIONS}
    assert "3D-stacked DRAM" not in per["HBM2"]
    files = render_report(out.document, out.records, tmp_path / "out")
    html = files.html.read_text()
    assert "将write queue优先级降低15%" in html and "verdict (time)" in html
    a = Recommendations().analyse(out.document, out.records)
    sram_rows = [r for r in a.tables[0].rows if r[1] == "attention SRAM"]
    assert sram_rows and all("net" in r[11] and "read hits" in r[11] for r in sram_rows)
    assert any("not applicable" in f.text for f in a.findings)
    # every recommendation has a line on every platform: a result or why there is none
    for i, (rec, *_) in enumerate(RECOMMENDATIONS, start=1):
        for plat in ("DDR4-3200@2ch", "HBM2"):
            assert any(f.text.startswith(f"{i}. {rec} ") and f" on {plat}: " in f.text
                       for f in a.findings), (rec, plat)
    assert any(f.text.startswith("6. 2 KB row buffer on HBM2: not applicable (the "
                                 "platform's page is 2 KB or more already") for f in a.findings)
    # a second run with other parameters into the same folder: the report uses its own points
    setup2 = StudySetup(traces=traces, params={"configs": ["DDR4-3200@2ch"], "segments": ["2"],
                                               "sram_kib": ["64"]}, arrival="saturate")
    out2 = run_study("recommendations", setup2, folder=tmp_path / "out", workers=0)
    from engine.studies import load_results
    doc, recs = load_results(tmp_path / "out")
    a2 = Recommendations().analyse(doc, recs)
    assert {r[3] for r in a2.tables[0].rows} == {"DDR4-3200@2ch"}
    assert any("earlier runs" in n for n in a2.notes)
    assert len(out2.document["points"]) == 2 * 2 * 8
