"""Stratified systematic sampling of a training step's request stream, and its estimator.

The issued stream (every operator's requests before the cache, in issue order) is split into
*strata*: the requests of one phase (forward, attention, backward, optimizer) and one
operator class (GEMM-like ``tiled``, ``stream`` elementwise/reduction, ``optimizer``).  Each
stratum ``s`` of ``X_s`` issued lines is cut into ``N_s`` windows of equal length (to one
line: window ``j`` is ``[floor(j X_s / N_s), floor((j+1) X_s / N_s))``) and ``n_s`` of them
are kept by systematic sampling -- every ``N_s / n_s``-th window from a uniform random start
drawn from the seed.  ``n_s`` is the stratum's share of the kept windows, but at least
``MIN_KEPT`` (10), so a phase small in bytes (the optimizer) is still measured by enough
windows to give an error.

Estimator.  With a uniform random start every window's inclusion probability is exactly
``n_s / N_s`` (the kept points are ``N_s / n_s >= 1`` windows apart), so the expansion
(Horvitz-Thompson) estimate ``(N_s / n_s) sum_kept y_j`` of the stratum's DRAM requests is
unbiased.  The estimate used is the ratio form ``X_s * sum_kept y_j / sum_kept x_j`` (``x_j``
the window's issued lines): the same when windows are of equal length (they differ by at most
one line), and exact when DRAM traffic is proportional to issued traffic (no cache).  Its
variance is estimated as for a simple random sample of windows,
``N_s^2 (1 - n_s/N_s) / n_s * var(y_j - R x_j)`` (systematic sampling is usually more
precise than that, so the interval is conservative unless the stream has a period aligned
with the window spacing -- but with ten windows per stratum DRAM reads' intervals were
measured to cover 79-88 %, issue 12s in benchmarks/RESULTS.md); a phase's estimate and variance are sums over its strata, and the
95 % interval is +- Student's t quantile (:func:`t975`, at the strata's pooled
Welch-Satterthwaite degrees of freedom, :func:`satterthwaite`) standard errors.  In
the generator (``generate._stratified``) DRAM reads take the window's issued reads as
``x`` and DRAM writes (L2 write-backs, caused by any access) all its issued lines.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from engine import quantiles
from engine.quantiles import Z95

MIN_KEPT = 10


def t975(df: float) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (real: pooled strata
    give fractional ones; engine.quantiles); the normal's for an infinite or non-positive
    ``df`` (no variance to speak of)."""
    if not np.isfinite(df) or df <= 0:
        return Z95
    return quantiles.t975(float(df))


def satterthwaite(var: np.ndarray, df: np.ndarray) -> float:
    """Effective degrees of freedom of a sum of independent variance estimates ``var`` with
    ``df`` degrees of freedom each (Welch-Satterthwaite); infinite when the sum is 0."""
    var, df = np.asarray(var, np.float64), np.asarray(df, np.float64)
    ok = (var > 0) & (df > 0)
    if not ok.any():
        return float("inf")
    return float(var[ok].sum() ** 2 / np.sum(var[ok] ** 2 / df[ok]))


def systematic(n_windows: int, pick: int, u: float) -> np.ndarray:
    """``pick`` of ``n_windows`` windows, evenly spaced from the start ``u`` in [0, 1)."""
    pick = min(n_windows, max(1, pick))
    return np.floor((np.arange(pick) + u) * n_windows / pick).astype(np.int64)


@dataclass
class Windows:
    """Kept windows of the stream as disjoint intervals [lo, hi) (sorted by lo); a window
    that spans operators is several intervals with the same ``window`` id."""

    lo: np.ndarray
    hi: np.ndarray
    window: np.ndarray            # window id of each interval
    stratum: np.ndarray           # stratum of each window id
    n_windows: np.ndarray         # N_s per stratum
    n_kept: np.ndarray            # n_s per stratum

    def interval_of(self, g: np.ndarray) -> np.ndarray:
        """Index of the interval holding each stream position (-1 if none)."""
        if not self.lo.shape[0]:
            return np.full(g.shape[0], -1, np.int64)
        k = np.searchsorted(self.lo, g, side="right") - 1
        ok = (k >= 0) & (g < self.hi[np.maximum(k, 0)])
        return np.where(ok, k, -1)


#: a window is at least this many issued lines (128 KiB): a sampled trace is simulated as it
#: is, and each window's edge cuts the stream's row locality (100,000 windows of 5 lines on a
#: tiny step gave 58 % row hits on HBM2 against the full step's 72.5 %).  A stratum too
#: short for ``min_kept`` kept windows of this length keeps the sample's fraction of its
#: windows, at least two.
MIN_WINDOW_LINES = 2048


def allocation(x: int, total: int, windows: int, sample: float, min_kept: int = MIN_KEPT,
               min_lines: int = MIN_WINDOW_LINES) -> tuple[int, int]:
    """(N_s, n_s) of a stratum of ``x`` issued lines in a stream of ``total``: its share of
    the ``sample x windows`` kept windows (at least ``min_kept``), cut so that they are a
    fraction ``sample`` of its windows, and no window shorter than ``min_lines`` (a stratum
    too short for that keeps the fraction ``sample`` of its windows, at least two)."""
    pick = max(min_kept, int(round(sample * windows * x / max(total, 1))))
    n_win = min(x, max(pick, int(round(pick / sample))))
    longest = max(1, x // max(1, min_lines))
    if n_win > longest:
        # windows of min_lines: the sample's fraction of them, at least two (a spread)
        n_win = longest
        pick = max(2, int(round(sample * n_win)))
    return n_win, min(pick, n_win)


def kept_windows(lines_per_op: np.ndarray, stratum_of: np.ndarray, windows: int,
                 sample: float, seed: int, min_kept: int = MIN_KEPT,
                 min_lines: int = MIN_WINDOW_LINES) -> Windows:
    """The kept windows of the stream (see the module docstring)."""
    starts = np.concatenate([[0], np.cumsum(lines_per_op)])
    total = int(starts[-1])
    strata = np.unique(stratum_of)
    lo_p, hi_p, win_p = [], [], []
    w_stratum, n_w, n_k = [], [], []
    wid = 0
    for k, s in enumerate(strata):
        ops = np.flatnonzero((stratum_of == s) & (lines_per_op > 0))
        if not ops.shape[0]:
            n_w.append(0)
            n_k.append(0)
            continue
        sub = np.concatenate([[0], np.cumsum(lines_per_op[ops])])   # stratum coordinates
        x = int(sub[-1])
        n_win, pick = allocation(x, total, windows, sample, min_kept, min_lines)
        u = float(np.random.default_rng([seed, 7919 * k + 1]).random())
        kept = systematic(n_win, pick, u)
        n_w.append(n_win)
        n_k.append(int(kept.shape[0]))
        bounds = (np.arange(n_win + 1, dtype=np.int64) * x) // n_win
        for j in kept:
            a, b = int(bounds[j]), int(bounds[j + 1])
            i0 = int(np.searchsorted(sub, a, side="right")) - 1
            i1 = int(np.searchsorted(sub, b, side="left"))
            for i in range(i0, i1):
                lo = max(a, int(sub[i]))
                hi = min(b, int(sub[i + 1]))
                if hi > lo:
                    g = int(starts[ops[i]]) - int(sub[i])
                    lo_p.append(lo + g)
                    hi_p.append(hi + g)
                    win_p.append(wid)
            w_stratum.append(k)
            wid += 1
    order = np.argsort(lo_p, kind="stable")
    return Windows(np.array(lo_p, np.int64)[order], np.array(hi_p, np.int64)[order],
                   np.array(win_p, np.int64)[order], np.array(w_stratum, np.int64),
                   np.array(n_w, np.int64), np.array(n_k, np.int64))


def stratum_estimate(y: np.ndarray, x: np.ndarray, x_total: float, n_windows: int
                     ) -> tuple[float, float]:
    """(estimate, variance) of a stratum's total from its kept windows' ``y`` (DRAM
    requests) and ``x`` (issued lines), ``x_total`` issued lines in the stratum, ``n_windows``
    windows in all (see the module docstring)."""
    n = y.shape[0]
    if n == 0:
        return 0.0, 0.0
    sx = float(x.sum())
    if sx <= 0 or x_total <= 0:       # no auxiliary traffic: the expansion estimate
        est = n_windows / n * float(y.sum())
        var = (n_windows ** 2 * (1.0 - n / n_windows) / n * float(y.var(ddof=1))
               if 1 < n < n_windows else 0.0)
        return est, var
    r = float(y.sum()) / sx
    est = r * x_total
    if n < 2 or n >= n_windows:
        return est, 0.0
    e = y - r * x
    var = n_windows ** 2 * (1.0 - n / n_windows) / n * float(e.var(ddof=1))
    return est, var


def stratum_window_sums(lines_per_op: np.ndarray, stratum_of: np.ndarray, windows: int,
                        sample: float, cums: list[np.ndarray], min_kept: int = MIN_KEPT,
                        min_lines: int = MIN_WINDOW_LINES) -> list[dict]:
    """Every window of every stratum (the design of :func:`kept_windows`, kept or not):
    for each stratum label (sorted) its ``label``, ``n_windows``, ``n_kept`` and ``sums``,
    one array per cumulative count in ``cums`` (each of length stream + 1: ``c[g]`` the
    count over positions ``< g``) holding that count's total in each window.  With the
    full run's per-position DRAM requests this gives the exact distribution of the
    estimator over the random start (:func:`design_distribution`)."""
    starts = np.concatenate([[0], np.cumsum(lines_per_op)]).astype(np.int64)
    total = int(starts[-1])
    out = []
    for s in np.unique(stratum_of):
        ops = np.flatnonzero((stratum_of == s) & (lines_per_op > 0))
        if not ops.shape[0]:
            out.append({"label": int(s), "n_windows": 0, "n_kept": 0,
                        "sums": [np.zeros(0) for _ in cums]})
            continue
        sub = np.concatenate([[0], np.cumsum(lines_per_op[ops])]).astype(np.int64)
        x = int(sub[-1])
        n_win, pick = allocation(x, total, windows, sample, min_kept, min_lines)
        bounds = (np.arange(n_win + 1, dtype=np.int64) * x) // n_win
        i = np.clip(np.searchsorted(sub, bounds, side="right") - 1, 0, ops.shape[0] - 1)
        g = starts[ops[i]] + (bounds - sub[i])
        sums = []
        for c in cums:
            per_op = c[starts[ops + 1]] - c[starts[ops]]
            before = np.concatenate([[0], np.cumsum(per_op)])
            at = before[i] + c[g] - c[starts[ops[i]]]
            sums.append(np.diff(at).astype(np.float64))
        out.append({"label": int(s), "n_windows": n_win, "n_kept": pick, "sums": sums})
    return out


def design_distribution(y: np.ndarray, x: np.ndarray, x_total: float, n_windows: int,
                        n_kept: int, grid: int = 2000, estimator: Callable | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """The ratio estimate and its variance estimate (:func:`stratum_estimate`) for each of
    ``grid`` evenly spaced random starts u (midpoints), given every window's ``y`` and ``x``:
    their mean over the grid is the estimator's expectation to within the grid's step."""
    est = np.empty(grid)
    var = np.empty(grid)
    for k in range(grid):
        kept = systematic(n_windows, n_kept, (k + 0.5) / grid)
        est[k], var[k] = (estimator or stratum_estimate)(y[kept], x[kept], x_total,
                                                         n_windows)
    return est, var

