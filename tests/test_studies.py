"""Studies: point ids, the runner (local pool, Dask, resume), fits, every study's report, CLI."""
from __future__ import annotations

import json
import math
import html
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from engine.errors import SimulationCancelled
from engine.studies import (STUDIES, StudyError, StudySetup, TraceInput, get_study,
                            load_project_study, load_results, render_report, run_study)
from engine.studies import fits
from engine.studies.sinks import ResultsFolder
from engine.studies.synthetic import write_training_step

TINY = dict(weight_kb=4, layers=2)


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, TraceInput]:
    d = tmp_path_factory.mktemp("traces")
    return {
        "ddpm": write_training_step(d / "ddpm.h5", "ddpm", "diffusion", 2, **TINY),
        "ddpm-b4": write_training_step(d / "ddpm4.h5", "ddpm-b4", "diffusion", 4, **TINY),
        "resnet": write_training_step(d / "resnet.trace", "resnet", "cnn", 2, **TINY),
    }


def timing_setup(traces: dict[str, TraceInput], values=(10, 14)) -> StudySetup:
    return StudySetup([traces["ddpm"], traces["resnet"]], config="DDR4-3200",
                      params={"tRCD": list(values)})


def metrics(records: list[dict]) -> dict[str, dict]:
    return {r["point_id"]: r["metrics"] for r in records}


# ---- fits ------------------------------------------------------------------------------------
def test_fit_line_matches_matrix_least_squares():
    rng = np.random.default_rng(3)
    x = np.arange(10, 20, dtype=float)
    y = 5.0 + 0.75 * x + rng.normal(0, 0.3, x.size)
    f = fits.fit_line(x, y)
    X = np.column_stack([np.ones_like(x), x])
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    cov = resid @ resid / (x.size - 2) * np.linalg.inv(X.T @ X)
    assert f.slope == pytest.approx(beta[1], rel=1e-12)
    assert f.intercept == pytest.approx(beta[0], rel=1e-12)
    assert f.slope_se == pytest.approx(math.sqrt(cov[1, 1]), rel=1e-9)
    assert f.intercept_se == pytest.approx(math.sqrt(cov[0, 0]), rel=1e-9)
    lo, hi = f.slope_ci95
    assert lo < 0.75 < hi
    exact = fits.fit_line([1, 2, 3], [2, 4, 6])
    assert (exact.slope, exact.slope_se, exact.r2) == (2.0, 0.0, 1.0)
    flat = fits.fit_line([1.0, 2.0, 3.0], [5.0, 5.0, 5.0])     # no variance: R² undefined
    assert (flat.slope, flat.slope_se) == (0.0, 0.0) and math.isnan(flat.r2)
    assert fits.fmt_r2(flat.r2) == "n/a" and fits.fmt_r2(0.98765) == "0.988"
    assert math.isnan(fits.fit_line([1, 2], [1, 3]).slope_se)
    with pytest.raises(StudyError, match="two distinct x"):
        fits.fit_line([1, 1, 1], [1, 2, 3])


def test_ratio_error_propagation():
    r = fits.ratio(2.0, 0.2, 1.0, 0.1)
    assert r.value == 2.0
    assert r.se == pytest.approx(2.0 * math.sqrt(0.1 ** 2 + 0.1 ** 2))
    with pytest.raises(StudyError, match="denominator"):
        fits.ratio(1.0, 0.1, 0.0, 0.1)
    from engine.studies.catalog import _mean_se
    # pooled workloads: fit errors and the spread between workloads both count
    assert _mean_se([1.0, 3.0], [0.0, 0.0]) == (2.0, 1.0)
    assert _mean_se([2.0], [0.4]) == (2.0, 0.4)
    assert _mean_se([1.0, 3.0], [0.6, 0.8])[1] == pytest.approx(math.sqrt(1.0 + 0.25))


# ---- point ids ---------------------------------------------------------------------------------
def test_point_ids_follow_content_not_path(traces, tmp_path):
    study = get_study("timing")
    ids = [p.point_id for p in study.points(timing_setup(traces))]
    assert len(set(ids)) == 4
    assert ids == [p.point_id for p in study.points(timing_setup(traces))]
    moved = tmp_path / "elsewhere.h5"
    shutil.copy(traces["ddpm"].path, moved)
    setup = timing_setup(traces)
    setup.traces[0] = TraceInput("ddpm", str(moved), kind="diffusion")
    assert sorted(p.point_id for p in study.points(setup)) == sorted(ids)
    other = write_training_step(tmp_path / "other.h5", "ddpm", "diffusion", 3, **TINY)
    setup.traces[0] = other
    assert len(set(p.point_id for p in study.points(setup)) & set(ids)) == 2  # resnet only


# ---- runner --------------------------------------------------------------------------------------
def test_local_pool_and_dask_give_identical_results(traces, tmp_path):
    from distributed import LocalCluster

    setup = timing_setup(traces)
    local = run_study("timing", setup, folder=tmp_path / "local", workers=2)
    assert local.ran == 4 and local.reused == 0
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                      host="127.0.0.1", dashboard_address=None) as cluster:
        address = cluster.scheduler_address                 # what --cluster takes
        assert address.startswith("tcp://")
        seen = []
        dask = run_study("timing", setup, folder=tmp_path / "dask", cluster=address,
                         progress=lambda done, total, rec: seen.append((done, total)))
    assert seen[-1] == (4, 4)
    inline = run_study("timing", setup, workers=0)
    assert [r["point_id"] for r in local.records] == sorted(r["point_id"]
                                                            for r in local.records)
    assert metrics(local.records) == metrics(dask.records) == metrics(inline.records)
    assert all(r["status"] == "ok" for r in local.records)
    # a longer tRCD never makes the same trace faster
    by = {(r["label"], r["tags"]["value"]): r["metrics"] for r in local.records}
    for label in ("ddpm", "resnet"):
        assert by[label, 14]["step_time_ns"] >= by[label, 10]["step_time_ns"]


def test_resume_after_interruption_recomputes_nothing_finished(traces, tmp_path):
    setup = timing_setup(traces, values=(10, 12, 14))     # 6 points
    out = tmp_path / "study"
    done: list[str] = []
    with pytest.raises(SimulationCancelled):
        run_study("timing", setup, folder=out, workers=0,
                  progress=lambda d, t, rec: done.append(rec["point_id"]),
                  cancel=lambda: len(done) >= 2)
    assert len(done) == 2
    first = metrics(ResultsFolder(out).records())
    assert set(first) == set(done)
    ran: list[str] = []
    again = run_study("timing", setup, folder=out, workers=0,
                      progress=lambda d, t, rec: ran.append(rec["point_id"]))
    assert (again.ran, again.reused) == (4, 2)
    assert not set(ran) & set(done)
    assert len(again.records) == 6
    assert {k: metrics(again.records)[k] for k in first} == first
    # a torn last line (crash mid-write) is skipped and only that point runs again
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    assert len(lines) == 6
    (out / "results.jsonl").write_text("".join(lines[:-1]) + lines[-1][:40])
    third = run_study("timing", setup, folder=out, workers=0)
    assert (third.ran, third.reused) == (1, 5)
    assert metrics(third.records) == metrics(again.records)


def test_study_in_project_resumes_and_reports(traces, tmp_path):
    from projects.store import Project

    setup = timing_setup(traces)
    path = tmp_path / "p.dmproj"
    with Project.create(path) as p:
        n = []
        with pytest.raises(SimulationCancelled):
            run_study("timing", setup, project=p, study_name="trcd", workers=0,
                      progress=lambda d, t, rec: n.append(1), cancel=lambda: len(n) >= 1)
    with Project.open(path) as p:           # the finished point was saved before the cancel
        assert p.studies() == ["trcd"] and len(p.study_results("trcd")) == 1
        out = run_study("timing", setup, project=p, study_name="trcd", workers=0)
        assert (out.ran, out.reused) == (3, 1)
        p.save()
        with pytest.raises(Exception, match="not a 'batch' one"):
            p.put_study("trcd", {"study": "batch", "setup": {}, "points": []})
    with Project.open(path, readonly=True) as p:
        document, records = load_project_study(p, "trcd")
    assert metrics(records) == metrics(out.records)
    files = render_report(document, records, tmp_path / "report")
    assert files.html.is_file() and files.pdf.is_file()


# ---- every study and its report ------------------------------------------------------------
def _setup_for(name: str, traces: dict[str, TraceInput]) -> StudySetup:
    two = [traces["ddpm"], traces["resnet"]]
    return {
        "timing": timing_setup(traces),
        "architecture": StudySetup(two, params={"variants": {
            "row-major": {"address_mapping": "chrabgbaroco"}}}),
        "policy": StudySetup(two, params={"variants": {"fcfs": {"scheduler": "fcfs"}}}),
        "technology": StudySetup(two, params={"configs": ["DDR4-3200", "HBM2"]}),
        "hotspots": StudySetup([traces["ddpm"]], params={"variants": {
            "row-major": {"address_mapping": "chrabgbaroco"},
            "close page": {"page_policy": "close"}}}),
        "batch": StudySetup([traces["ddpm"], traces["ddpm-b4"]]),
        "memshare": StudySetup(two, config="HBM2", compute={"utilisation": 0.4}),
        "recommendations": StudySetup(two, params={"configs": ["DDR4-3200"],
                                                   "segments": ["2"]}),
    }[name]


@pytest.mark.parametrize("name", list(STUDIES))
def test_every_study_runs_and_its_report_holds_every_plot(name, traces, tmp_path,
                                                          monkeypatch):
    monkeypatch.setenv("DIFFMEM_DERIVED_DIR", str(tmp_path / "derived"))
    out = tmp_path / name
    outcome = run_study(name, _setup_for(name, traces), folder=out, workers=0)
    assert outcome.records and all(r["status"] == "ok" for r in outcome.records)
    document, records = load_results(out)
    analysis = get_study(name).analyse(document, records)
    assert analysis.findings and analysis.figures
    files = render_report(document, records, out)
    page = files.html.read_text(encoding="utf-8")
    imgs = re.findall(r"<img alt='([^']*)' src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert [alt for alt, _ in imgs] == [f.title for f in analysis.figures]
    assert all(len(b64) > 1000 for _, b64 in imgs)
    for f in analysis.findings:
        assert html.escape(f.text) in page
    pdf = files.pdf.read_bytes()
    assert pdf.startswith(b"%PDF")
    pages = len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf))
    assert pages == files.pdf_pages > len(analysis.figures)
    if name == "hotspots":
        assert any(f.title.startswith("Energy flame graph") for f in analysis.figures)
        by = records[0]["metrics"]
        for cause, per_bank in by["energy_by_bank_cause_pJ"].items():
            assert sum(per_bank) == pytest.approx(by["energy_by_cause_pJ"][cause], rel=1e-9)


def test_report_is_rebuilt_from_stored_results_alone(traces, tmp_path):
    out = tmp_path / "t"
    run_study("timing", timing_setup(traces), folder=out, workers=0)
    moved = tmp_path / "copy"
    shutil.copytree(out, moved)
    a = get_study("timing").analyse(*load_results(out))
    b = get_study("timing").analyse(*load_results(moved))
    assert [f.text for f in a.findings] == [f.text for f in b.findings]
    assert any(f.key == "ratio/tRCD" for f in a.findings)


# ---- errors and CLI ----------------------------------------------------------------------
def test_clear_errors(traces):
    with pytest.raises(StudyError, match="did you mean 'timing'"):
        get_study("timming")
    study = get_study("timing")
    with pytest.raises(StudyError, match="not a timing parameter.*tRCD"):
        study.points(StudySetup([traces["ddpm"]], params={"tRCX": [1, 2]}))
    with pytest.raises(StudyError, match="'channels' is not a timing parameter"):
        study.points(StudySetup([traces["ddpm"]], params={"channels": [1, 2]}))
    with pytest.raises(StudyError, match="at least two values"):
        study.points(StudySetup([traces["ddpm"]], params={"tRCD": [12]}))
    with pytest.raises(StudyError, match="has no parameter"):
        get_study("policy").points(StudySetup([traces["ddpm"]], params={"tRCD": [1, 2]}))
    with pytest.raises(StudyError, match="no batch size"):
        get_study("batch").points(StudySetup([TraceInput("x", traces["ddpm"].path)]))
    with pytest.raises(StudyError, match="no such file"):
        study.points(StudySetup([TraceInput("x", "/nonexistent/t.h5")]))
    with pytest.raises(StudyError, match="expected LABEL=PATH"):
        TraceInput.parse("just-a-path.h5")
    with pytest.raises(StudyError, match="unknown option 'bach'"):
        TraceInput.parse("a=t.h5,bach=4")
    assert TraceInput.parse("r=t.h5,batch=64,flops=1e12,kind=cnn") == TraceInput(
        "r", "t.h5", "cnn", 64, 1e12)


def test_cli_runs_lists_and_rebuilds(traces, tmp_path, capsys):
    from main import main

    assert main(["study", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in STUDIES)
    out = tmp_path / "cli"
    args = ["study", "timing", "--trace", f"ddpm={traces['ddpm'].path},kind=diffusion",
            "--trace", f"resnet={traces['resnet'].path}", "--param", "tRCD=10,12,14,16,18",
            "--workers", "0", "--out", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert text.startswith("study timing: 10 points, run in this process\n")
    assert "10 points: 10 simulated, 0 reused" in text and "as sensitive as the CNN" in text
    assert main(args) == 0
    assert "0 simulated, 10 reused" in capsys.readouterr().out
    doc = json.loads((out / "study.json").read_text())
    assert doc["study"] == "timing" and len(doc["points"]) == 10
    (out / "report.html").unlink()
    assert main(["study", "--report", "--out", str(out)]) == 0
    assert (out / "report.html").is_file()
    assert main(["study", "nope", "--trace", f"a={traces['ddpm'].path}", "--out",
                 str(out)]) == 2
    assert "no study named 'nope'" in capsys.readouterr().err
    assert main(["study", "timing", "--trace", f"a={traces['ddpm'].path}", "--param",
                 "tRCD=10,x", "--out", str(tmp_path / "x")]) == 2
    assert "tRCD = 'x': expected an int" in capsys.readouterr().err


def test_workload_summary_fills_batch_and_flops_and_saturate_arrival(tmp_path):
    import h5py

    from engine.trace import TraceChunk, write_trace

    path = tmp_path / "w.h5"
    n = 2000
    addr = (np.arange(n, dtype=np.uint64) * 64) % (1 << 22)
    write_trace(path, TraceChunk.from_arrays(addr, np.arange(n) % 3 == 0,
                                             np.arange(n, dtype=np.int64) * 50))
    summary = {"workload": "resnet50", "batch": 32, "flops": {"forward": 1e9, "backward": 2e9},
               "sample": 0.5, "requests": n, "extrapolated": {"requests": 4 * n}}
    with h5py.File(path, "r+") as f:
        f["trace"].attrs["summary"] = json.dumps(summary)
    t = TraceInput("base", str(path)).resolved()
    assert (t.kind, t.batch) == ("cnn", 32)
    assert t.flops == pytest.approx(3e9 / 4)         # the trace holds a quarter of the step
    assert t.scale == pytest.approx(4.0)
    assert TraceInput("base", str(path), batch=8, kind="other").resolved().batch == 8
    timed = run_study("technology", StudySetup([t], params={"configs": ["DDR4-3200", "HBM2"]}),
                      workers=0)
    sat = run_study("technology", StudySetup([t], params={"configs": ["DDR4-3200", "HBM2"]},
                                             arrival="saturate"), workers=0)
    for a, b in zip(timed.records, sat.records):
        # 50 cycles between requests is far slower than either memory serves them
        assert b["metrics"]["cycles"] < a["metrics"]["cycles"] / 5
        assert b["metrics"]["reads"] == a["metrics"]["reads"]
    assert {p["arrival"] for p in sat.document["points"]} == {"saturate"}
    share = get_study("memshare").points(StudySetup([t]))
    assert {p.arrival for p in share} == {"saturate"}
    with pytest.raises(StudyError, match="arrival"):
        StudySetup([t], arrival="fast")


def test_a_rerun_with_other_inputs_replaces_the_earlier_points_in_its_place(traces, tmp_path):
    """A results folder keeps the points of earlier runs (a study extended with more values
    runs only the new ones), but a point whose workload and tags this run's points take again
    with other inputs (here the trace regenerated, same label) is replaced: the analysis
    would otherwise pool the stale result with the new one."""
    out = tmp_path / "study"
    first = run_study("timing", timing_setup(traces, values=(10, 14)), folder=out, workers=0)
    assert first.ran == 4
    # extended: two more values; the four earlier points stay, only the new ones run
    more = run_study("timing", timing_setup(traces, values=(10, 14, 18)), folder=out,
                     workers=0)
    assert (more.ran, more.reused) == (2, 4)
    assert len(load_results(out)[0]["points"]) == 6
    # the ddpm trace regenerated (another batch, same label): its three points replaced
    new = write_training_step(tmp_path / "ddpm-new.h5", "ddpm", "diffusion", 4, **TINY).resolved()
    setup = StudySetup([new, traces["resnet"]], config="DDR4-3200",
                       params={"tRCD": [10, 14, 18]})
    again = run_study("timing", setup, folder=out, workers=0)
    assert (again.ran, again.reused) == (3, 3)
    document, records = load_results(out)
    assert len(document["points"]) == 6
    ddpm = {p["point_id"] for p in document["points"] if p["trace"]["label"] == "ddpm"}
    assert len(ddpm) == 3 and all(p["trace"]["digest"] == new.digest
                                  for p in document["points"] if p["point_id"] in ddpm)
    # the analysis sees one point per (workload, value): the new trace's
    rows = [r for r in get_study("timing").analyse(document, records).tables[0].rows
            if r[0] == "ddpm"]
    assert len(rows) == 1


def test_a_rerun_on_another_memory_leaves_the_earlier_points_out(traces, tmp_path, caplog):
    """Rerun into the same folder with another memory (or overrides, run length, arrival):
    the earlier points are not pooled with the new ones in one fit; an extension (more
    values) keeps them, and says so."""
    import logging
    out = tmp_path / "study"
    run_study("timing", timing_setup(traces, values=(10, 14)), folder=out, workers=0)
    with caplog.at_level(logging.WARNING, logger="engine.studies.sinks"):
        run_study("timing", timing_setup(traces, values=(18, 22)), folder=out, workers=0)
    assert any("4 point(s) of earlier runs in this folder are analysed with this run's"
               in r.getMessage() for r in caplog.records)
    assert len(load_results(out)[0]["points"]) == 8
    caplog.clear()
    other = StudySetup([traces["ddpm"], traces["resnet"]], config="DDR5-4800B",
                       params={"tRCD": [30, 34]})
    with caplog.at_level(logging.WARNING, logger="engine.studies.sinks"):
        again = run_study("timing", other, folder=out, workers=0)
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "config was 'DDR4-3200', now 'DDR5-4800B'" in said and "8 point(s)" in said
    document, records = load_results(out)
    assert len(document["points"]) == 4 and again.ran == 4
    assert {p["config"]["name"] for p in document["points"]} == {"DDR5-4800B"}
    # the earlier results are still in the journal (nothing a user ran is deleted)
    assert len(ResultsFolder(out).records()) == 12


def test_run_study_refuses_a_file_as_results_folder_before_any_work(traces, tmp_path,
                                                                     monkeypatch):
    """The API checks its results folder first, as the command line does: a file (or a file
    on the way) is an OutputPathError naming it, raised before the traces are read."""
    from engine.errors import OutputPathError
    from engine.studies import run as run_mod

    def not_reached(points):
        raise AssertionError("the traces were read before the folder was checked")
    monkeypatch.setattr(run_mod, "check_trace_heads", not_reached)
    setup = StudySetup([traces["ddpm"]], config="DDR4-3200", params={"tRCD": [22, 30]})
    afile = tmp_path / "notes.txt"
    afile.write_text("x")
    for bad in (afile, afile / "sub"):
        with pytest.raises(OutputPathError, match=f"{afile} is a file, not a folder"):
            run_study("timing", setup, folder=bad, workers=0)
    assert afile.read_text() == "x"


def test_cli_study_stores_the_traces_resolved(traces, tmp_path, monkeypatch, capsys):
    """A trace given by a relative path from the command line: study.json keeps its
    absolute path, kind and digest (it kept the path as typed, kind and digest empty), so the
    study reruns from another folder and its report names what was replayed."""
    from main import main
    from engine.studies.spec import file_digest
    src = Path(traces["resnet"].path)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(src, work / "r.trace")
    monkeypatch.chdir(work)
    assert main(["study", "timing", "--trace", "resnet=r.trace", "--param", "tRCD=10,14",
                 "--out", "st", "--workers", "0"]) == 0
    capsys.readouterr()
    document = json.loads((work / "st" / "study.json").read_text())
    (t,) = document["setup"]["traces"]
    digest = file_digest(work / "r.trace")
    assert (t["path"], t["kind"], t["digest"]) == (str(work / "r.trace"), "cnn", digest)
    page = (work / "st" / "report.html").read_text()
    assert f"{work / 'r.trace'} (kind=cnn; sha256 {digest[:12]})" in html.unescape(page)
    # the study reruns from elsewhere: every point found done
    monkeypatch.chdir(tmp_path)
    assert main(["study", "timing", "--trace", f"resnet={work / 'r.trace'}", "--param",
                 "tRCD=10,14", "--out", str(work / "st"), "--workers", "0"]) == 0
    assert len(ResultsFolder(work / "st").records()) == 2


def test_cli_study_input_errors_name_what_is_wrong(traces, tmp_path, capsys):
    """The review's bad inputs: each a clear error before any work, naming the option."""
    from main import main
    t = traces["ddpm"].path

    outs = []

    def err(*argv):
        assert main(["study", *argv]) == 2
        got = capsys.readouterr()
        outs.append(got.out)
        return got.err

    afile = tmp_path / "notes.txt"
    afile.write_text("x")
    assert ("--out " + str(afile) + " is a file: expected a folder"
            in err("timing", "--trace", f"a={t}", "--out", str(afile)))
    assert "flops must be a positive number" in err(
        "memshare", "--trace", f"a={t},flops=-3", "--out", str(tmp_path / "m"))
    assert "flops must be a positive number" in err(
        "memshare", "--trace", f"a={t},flops=nan", "--out", str(tmp_path / "m"))
    assert "a variant named 'big' was given before" in err(
        "architecture", "--trace", f"a={t}", "--variant", "big:channels=2", "--variant",
        "big:channels=4", "--out", str(tmp_path / "v"))
    assert f"trace 'a': {tmp_path}: a folder, expected a trace file" in err(
        "timing", "--trace", f"a={tmp_path}", "--out", str(tmp_path / "f"))
    assert "no preset named 'ddr4-3200' (did you mean 'DDR4-3200'?)" in err(
        "timing", "--trace", f"a={t}", "--config", "ddr4-3200", "--out", str(tmp_path / "c"))
    assert "a folder, expected a preset name or a .toml/.ini file" in err(
        "timing", "--trace", f"a={t}", "--config", str(tmp_path), "--out", str(tmp_path / "c"))
    bad = tmp_path / "bad.trace"
    bad.write_text("0x40 READ 0\n0x80 READ 1\n0xc0 RAED 2\n")
    said = err("timing", "--trace", f"a={bad}", "--param", "tRCD=10,12,14", "--out",
               str(tmp_path / "b"))
    # once, before any point ran (it was the same error from every point, twice each)
    assert said.count("RAED") == 1 and f"trace 'a': {bad}:3: unknown request type" in said
    assert not (tmp_path / "b").exists()
    assert outs[-1] == ""                      # (no "study timing: ... run on" banner first)
    # a value given on the command line is not blamed on the preset file
    assert "key 'tRP': tRP = -1: expected a non-negative value" in err(
        "timing", "--trace", f"a={t}", "--set", "tRP=-1", "--out", str(tmp_path / "s"))
    with pytest.raises(SystemExit):
        main(["study", "timing", "--trace", f"a={t}", "--workers", "-1", "--out",
              str(tmp_path / "w")])
    assert "expected 0 or a positive integer" in capsys.readouterr().err
    assert not (tmp_path / "w").exists() and not (tmp_path / "m").exists()
    # --report names the study the folder holds, and prints its findings
    out = tmp_path / "cli"
    assert main(["study", "timing", "--trace", f"ddpm={t},kind=diffusion", "--trace",
                 f"resnet={traces['resnet'].path}", "--param", "tRCD=10,14", "--workers", "0",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    assert f"--report: {out} holds study 'timing', not 'technology'" in err(
        "technology", "--report", "--out", str(out))
    assert main(["study", "--report", "--out", str(out)]) == 0
    assert "  - ddpm: step time per cycle of tRCD: not tested" in capsys.readouterr().out


def test_timing_study_of_an_empty_or_write_only_trace_says_so(tmp_path, capsys):
    """An empty trace used to crash the analysis (a division by its zero step time); a
    write-only one by its zero read latency."""
    from main import main
    empty = tmp_path / "empty.trace"
    empty.write_text("")
    writes = tmp_path / "writes.trace"
    writes.write_text("".join(f"{64 * i:#x} WRITE {4 * i}\n" for i in range(2000)))
    for trace, note in ((empty, "a: no request was served at tRCD"), (writes, None)):
        out = tmp_path / trace.stem
        assert main(["study", "timing", "--trace", f"a={trace}", "--param", "tRCD=12,16",
                     "--workers", "0", "--out", str(out)]) == 0
        document, records = load_results(out)
        a = get_study("timing").analyse(document, records)
        if note:
            assert any(n.startswith(note) for n in a.notes), a.notes
        else:
            assert [r[0] for r in a.tables[0].rows] == ["a"]
        capsys.readouterr()


def test_points_capped_or_paced_by_their_trace_are_noted(tmp_path, capsys):
    """A step time that is the cycle cap, or the trace's own length (the memory kept up with
    its arrival times), does not measure the memory: the analysis says so (the review saw
    exact 'no effect' findings with nothing beside them)."""
    from main import main
    sparse = tmp_path / "sparse.trace"
    sparse.write_text("".join(f"{4096 * i:#x} READ {1000 * i}\n" for i in range(300)))
    for name, extra, note in (
            ("capped", ["--cycles", "20000"], "3 of 3 points stopped at the cycle cap "
                                              "(20000 cycles) before their trace was done"),
            ("paced", [], "every point kept up with its trace's arrival times")):
        out = tmp_path / name
        assert main(["study", "timing", "--trace", f"a={sparse}", "--param", "tRCD=12,16,20",
                     "--workers", "0", "--out", str(out), *extra]) == 0
        assert f"  note: {note}" in capsys.readouterr().out
    # saturated arrival: neither note
    assert main(["study", "timing", "--trace", f"a={sparse}", "--param", "tRCD=12,16,20",
                 "--arrival", "saturate", "--workers", "0", "--out", str(tmp_path / "sat")]) == 0
    assert "note:" not in capsys.readouterr().out


def test_batch_study_says_why_traces_were_not_paired(traces, tmp_path, capsys):
    from main import main
    assert main(["study", "batch", "--trace", f"d1={traces['ddpm'].path},batch=2", "--trace",
                 f"d4={traces['ddpm-b4'].path},batch=4", "--workers", "0", "--out",
                 str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "  note: no batch comparison for d1, d4: a model's traces are paired by label" in out
    assert main(["study", "batch", "--trace", f"ddpm={traces['ddpm'].path},batch=2",
                 "--trace", f"ddpm-b4={traces['ddpm-b4'].path},batch=4", "--workers", "0",
                 "--out", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert "ddpm: batch 2 → 4: energy efficiency" in out and "no batch comparison" not in out


def test_technology_study_says_when_a_platform_moves_more_data(traces, tmp_path):
    """GDDR6's request is 256 B, DDR4's 64 B: these synthetic traces (no placement record:
    one line, one request) move 4x the data there, which the headline time and energy
    include; the analysis says so, with the ratio as simulated and per-byte changes."""
    setup = StudySetup([traces["ddpm"], traces["resnet"]], arrival="saturate",
                       params={"configs": ["DDR4-3200", "GDDR6"]})
    out = run_study("technology", setup, folder=tmp_path / "t", workers=0)
    a = get_study("technology").analyse(out.document, out.records)
    said = [n for n in a.notes if n.startswith("GDDR6 moves")]
    assert len(said) == 1 and said[0].startswith(
        "GDDR6 moves 4x the data of DDR4-3200 for the same trace (256 vs 64 bytes per request")
    assert "per byte moved: time " in said[0] and "(mean over 2 workload(s))" in said[0]


def test_technology_study_notes_text_trace_cycles_in_each_clock(traces, tmp_path):
    """A text trace's cycles are each memory's own: under trace arrival DDR4-3200 (0.63 ns)
    and HBM2 (1 ns) receive it over different times; saturated arrival does not."""
    said = {}
    for arrival in ("trace", "saturate"):
        setup = StudySetup([traces["resnet"]], arrival=arrival,
                           params={"configs": ["DDR4-3200", "HBM2"]})
        out = run_study("technology", setup, folder=tmp_path / arrival, workers=0)
        notes = get_study("technology").analyse(out.document, out.records).notes
        said[arrival] = [n for n in notes if n.startswith("the text traces' arrival cycles")]
    assert len(said["trace"]) == 1 and "(tCK 0.63, 1 ns here)" in said["trace"][0]
    assert said["saturate"] == []


def test_a_torn_result_line_does_not_swallow_the_next(tmp_path: Path) -> None:
    """A record cut short by a kill during its append has no line end; the next record was
    appended onto it, and the two made one unreadable line (the point just simulated was
    lost). The next record now starts a line of its own."""
    folder = ResultsFolder(tmp_path / "st")
    folder.add({"point_id": "a", "status": "ok"})
    with folder.results_path.open("a", encoding="utf-8") as f:
        f.write('{"point_id":"b","status":"o')           # torn
    folder.add({"point_id": "c", "status": "ok"})
    assert sorted(folder.done()) == ["a", "c"]


@pytest.mark.parametrize("text, found", [("[]", "a JSON list"),
                                          ('{"study": "timing", "points": 5}',
                                           "'points' as a int"),
                                          ('{"study": "timing"}', "no 'points'"),
                                          ("{}", "no 'study' name"),
                                          ('{"study": "timing", "points": [1]}',
                                           r"points\[0\] = 1")])
def test_a_study_file_of_another_shape_is_an_error(tmp_path: Path, text: str,
                                                   found: str) -> None:
    """A study.json holding valid JSON of another shape gave an AttributeError traceback."""
    from engine.studies.spec import StudyError
    folder = ResultsFolder(tmp_path)
    folder.study_path.write_text(text)
    with pytest.raises(StudyError, match=f"not a study definition .*found {found}"):
        folder.load_document()


def test_cli_project_study_reports_beside_the_project_and_never_over_an_input(
        traces, tmp_path, monkeypatch, capsys):
    """`study --project p.dmproj` without --out wrote report.html / report.pdf into the
    current folder, replacing a user's report.html; a trace named report.pdf in --out was
    replaced by the report; `--report --project` asked for a --name option that does not
    exist; a new project file was "no such project file". The report now goes beside the
    project as p-STUDY-report.*, an output that is an input is refused before any work, the
    message gives the form that works, and a new project is made."""
    import main as cli
    from projects.store import Project
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    (work / "report.html").write_text("my notes")
    trace = f"r={traces['resnet'].path}"
    argv = ["study", "timing", "--trace", trace, "--param", "tRCD=10,14", "--workers", "0"]
    # (a project that does not exist yet is made: no command made an empty one; not when the
    # study's inputs are wrong)
    assert cli.main(["study", "--project", str(tmp_path / "p.dmproj")]) == 2
    assert cli.main(argv[:2] + ["--trace", "r=missing.h5", "--project",
                                str(tmp_path / "p.dmproj")]) == 2
    assert not (tmp_path / "p.dmproj").exists()
    assert cli.main(argv + ["--project", str(tmp_path / "p.dmproj")]) == 0
    assert f"created the project {tmp_path / 'p.dmproj'}" in capsys.readouterr().out
    with Project.open(tmp_path / "p.dmproj", readonly=True) as p:
        assert p.studies() == ["timing"]
    assert (work / "report.html").read_text() == "my notes"
    assert (tmp_path / "p-timing-report.html").is_file()
    assert (tmp_path / "p-timing-report.pdf").is_file()
    capsys.readouterr()
    assert cli.main(["study", "--report", "--project", str(tmp_path / "p.dmproj")]) == 2
    err = capsys.readouterr().err
    assert "study NAME --report --project" in err and "(stored: timing)" in err
    assert cli.main(["study", "timing", "--report", "--project",
                     str(tmp_path / "p.dmproj")]) == 0
    clash = tmp_path / "clash"
    clash.mkdir()
    fake = clash / "report.pdf"
    fake.write_bytes(Path(traces["resnet"].path).read_bytes())
    assert cli.main(["study", "timing", "--trace", f"r={fake}", "--param", "tRCD=10,14",
                     "--workers", "0", "--out", str(clash)]) == 2
    assert "report.pdf is also the trace input" in capsys.readouterr().err
    assert fake.read_bytes() == Path(traces["resnet"].path).read_bytes()
    assert sorted(p.name for p in clash.iterdir()) == ["report.pdf"]


def test_step_time_and_energy_findings_are_tested_each_on_its_own(traces, tmp_path):
    """A technology finding stated the step-time change on the energy change's test alone
    (GDDR6 -24.5 % with a 95 % interval of -75 to +27 %), and dropped it when energy failed;
    a timing finding dropped a clear energy slope when the time slope was not significant.
    Each metric is now its own finding, screened on its own interval."""
    from engine.studies.catalog import Analysis, Finding, screen_findings
    setup = StudySetup([traces["ddpm"], traces["resnet"]], arrival="saturate",
                       params={"configs": ["DDR4-3200", "HBM2"]})
    out = run_study("technology", setup, folder=tmp_path / "t", workers=0)
    a = get_study("technology").analyse(out.document, out.records)
    hbm2 = [f.text for f in a.findings if f.text.startswith("HBM2: ")]
    assert len(hbm2) == 2
    assert hbm2[0].startswith("HBM2: step time") and hbm2[1].startswith("HBM2: energy")
    # a time change whose interval holds 0 beside an energy change whose interval does not
    both = screen_findings(Analysis("t", findings=[
        Finding("HBM2: step time -24.5 % vs DDR4 (...)", "delta_time/HBM2", -24.5, 11.9, "%",
                2),
        Finding("HBM2: energy (core + IO) -45.3 % vs DDR4 (...)", "delta_energy/HBM2", -45.3,
                3.7, "%", 2)])).findings
    assert both[0].text.startswith("HBM2: step time vs the baseline: no effect detected")
    assert both[1].text == "HBM2: energy (core + IO) -45.3 % vs DDR4 (...)"
    timing = run_study("timing", timing_setup(traces, (10, 14, 18)),
                       folder=tmp_path / "tm", workers=0)
    keys = [f.key.split("/")[0] for f in get_study("timing").analyse(
        timing.document, timing.records).findings if f.key]
    assert keys.count("rel_time_slope") == keys.count("rel_energy_slope") == 2


def test_batch_traces_made_with_other_settings_are_not_compared(tmp_path):
    """A batch-2 trace made with a 40 MiB L2 against a batch-4 one made without: the study
    stated "energy efficiency -53.4 %" (the cache's effect, not the batch's). Traces whose
    generation settings differ are now not compared, and the finding says which differ."""
    from engine.workloads.generate import TraceSpec, generate_trace
    a, b, c = tmp_path / "b1.h5", tmp_path / "b2.h5", tmp_path / "b2c.h5"
    generate_trace(TraceSpec("resnet50", batch=1, size="tiny", cache_bytes=0), a)
    generate_trace(TraceSpec("resnet50", batch=2, size="tiny", cache_bytes=0), b)
    # (a 64 KiB L2: a tiny step stays whole in a larger one in the steady state)
    generate_trace(TraceSpec("resnet50", batch=2, size="tiny", cache_bytes=64 << 10), c)
    for other, compared in ((b, True), (c, False)):
        setup = StudySetup([TraceInput("resnet-b1", str(a)), TraceInput("resnet-b2", str(other))],
                           config="DDR4-3200")
        out = run_study("batch", setup, folder=tmp_path / other.stem, workers=0)
        (f,) = get_study("batch").analyse(out.document, out.records).findings
        assert ("energy efficiency" in f.text) == compared, f.text
        if not compared:
            assert f.text == ("resnet: batch 1 → 2: not compared (the traces were made with "
                              "other settings: cache_bytes 0 vs 65536; l2_start None vs "
                              "'steady'; generate them alike)")


def test_trace_settings_as_they_act():
    """A trace made before ``l2_start`` existed had a cold L2; without an L2 its start
    changes nothing: neither is a difference that stops a comparison, the first is."""
    from engine.studies.spec import differing_settings
    old = {"workload": "resnet50", "cache_bytes": 1 << 20}
    assert differing_settings(old, {**old, "l2_start": "steady"}) == [
        "l2_start 'cold' vs 'steady'"]
    assert differing_settings(old, {**old, "l2_start": "cold"}) == []
    none = {"workload": "resnet50", "cache_bytes": 0}
    assert differing_settings({**none, "l2_start": "steady"}, {**none, "l2_start": None}) == []


def test_a_generated_trace_without_requests_is_refused(tmp_path):
    """A tiny step in the default 40 MiB L2's steady state moves nothing: a study of it
    divided by zero (technology) or read "+100 %" (batch); it is refused, with the way out."""
    from engine.studies.spec import StudyError
    from engine.workloads.generate import TraceSpec, generate_trace
    t = tmp_path / "empty.h5"
    s = generate_trace(TraceSpec("resnet50", batch=1, size="tiny"), t)
    assert s["requests"] == 0
    with pytest.raises(StudyError, match="holds no DRAM requests.*--l2-start cold"):
        TraceInput("resnet-b1", str(t)).resolved()
