"""Sampled generation counts what its cache simulation measured: positions whose cache state
is the full run's (warm-ups and kept windows) are taken as they are, only the rest is
extrapolated from the kept windows."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("h5py")

from engine.workloads.capture import PHASES  # noqa: E402
from engine.workloads.generate import (TraceSpec, census_warmups,  # noqa: E402
                                       converged_intervals,
                                       generate_trace)


def test_converged_intervals_drop_each_cold_start() -> None:
    # kept windows [100,110) [130,140) [900,910); warm-ups of up to 50 lines before each
    keep_lo, keep_hi = np.array([100, 130, 900]), np.array([110, 140, 910])
    warm_lo, warm_hi = np.array([50, 110, 850]), np.array([100, 130, 900])
    lo, hi = converged_intervals(keep_lo, keep_hi, warm_lo, warm_hi, 50)
    # stretch [50,140) converges after 50 lines; [850,910) likewise
    assert lo.tolist() == [100, 900] and hi.tolist() == [140, 910]
    # a stretch from the stream's start is the full run's state from the first line
    lo, hi = converged_intervals(np.array([20]), np.array([30]), np.array([0]),
                                 np.array([20]), 50)
    assert lo.tolist() == [0] and hi.tolist() == [30]
    # no cache: every simulated position counts
    lo, hi = converged_intervals(keep_lo, keep_hi, np.zeros(0, np.int64),
                                 np.zeros(0, np.int64), 0)
    assert lo.tolist() == [100, 130, 900] and hi.tolist() == [110, 140, 910]


def test_sampled_step_whose_warm_ups_cover_it_gives_the_full_totals(tmp_path: Path) -> None:
    # (a cold L2: the default 40 MiB holds the tiny step whole in the steady state)
    kw = dict(workload="ddpm", batch=2, size="tiny", l2_start="cold")
    full = generate_trace(TraceSpec(**kw), tmp_path / "full.h5")
    s = generate_trace(TraceSpec(**kw, sample=0.1, seed=0), tmp_path / "s.h5")
    e = s["extrapolated"]
    assert s["stream_lines_kept"] < 0.2 * s["stream_lines"]  # it is a sample
    seen_window_error = 0.0
    for p in PHASES:
        share = e["converged_share_by_phase"][p]
        for d in ("read", "write"):
            f = full["dram_bytes"]["by_phase"][p][d]
            if not f:
                continue
            assert share > 0.999
            # what is left to extrapolate is < 0.1 % of the phase: the estimate is the
            # full run's to that
            assert e["dram_bytes"]["by_phase"][p][d] == pytest.approx(f, rel=1e-3)
            seen_window_error = max(seen_window_error,
                                    abs(e["windows_only_by_phase"][p][d] / f - 1))
    # while the kept windows alone extrapolate with an error
    assert seen_window_error > 0.005
    # the roles share each phase's estimate: they sum to it (the per-phase scaling of issued
    # lines they took before summed to 1.3 % less on a batch-1 step), and the large roles
    # are the full run's to 1 % (the weights' reads were off by 4-7 % that way)
    for d in ("read", "write"):
        assert sum(v[d] for v in e["dram_bytes"]["by_role"].values()) == pytest.approx(
            e["dram_bytes"][d], rel=1e-9)
    for role, v in full["dram_bytes"]["by_role"].items():
        for d in ("read", "write"):
            if v[d] > 0.1 * full["dram_bytes"][d]:
                assert e["dram_bytes"]["by_role"][role][d] == pytest.approx(v[d], rel=0.01), \
                    (role, d)


def test_census_warmups_cover_each_census_span_and_a_warm_up_before_it() -> None:
    # warm-ups before kept windows at 100 and 900; census phase spans [500, 800) [800, 1000)
    lo, hi = census_warmups(np.array([50, 850]), np.array([100, 900]),
                            np.array([500, 800]), np.array([800, 1000]), 50)
    assert lo.tolist() == [50, 450] and hi.tolist() == [100, 1000]
    # the census then converges from its first line on
    c_lo, c_hi = converged_intervals(np.array([100, 900]), np.array([110, 910]), lo, hi, 50)
    assert c_lo[-1] <= 500 and c_hi[-1] == 1000


def test_optimizer_census_is_measured_where_its_windows_alone_would_extrapolate(
        tmp_path: Path) -> None:
    # a 64 KiB cache and 200 windows: the gaps between kept windows are longer than the
    # warm-up, as on a paper-size step, so without the census the optimizer phase is
    # extrapolated from its kept windows
    kw = dict(batch=2, size="tiny", cache_bytes=64 * 1024)
    full = generate_trace(TraceSpec("ddpm", **kw), tmp_path / "full.h5")
    f = full["dram_bytes"]["by_phase"]["optimizer"]
    got = {}
    for census in ((), ("optimizer",)):
        s = generate_trace(TraceSpec("ddpm", **kw, sample=0.05, windows=200, seed=1,
                                     census_phases=census), tmp_path / f"s{len(census)}.h5")
        e = s["extrapolated"]
        assert s["stream_lines_kept"] < 0.2 * s["stream_lines"]   # still a sample
        got[census] = (e["converged_share_by_phase"]["optimizer"],
                       e["dram_bytes"]["by_phase"]["optimizer"])
    share, est = got[()]
    assert share < 0.5
    share, est = got[("optimizer",)]
    assert share == pytest.approx(1.0)
    for d in ("read", "write"):
        assert est[d] == pytest.approx(f[d], rel=1e-6)
