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
with the window spacing); a phase's estimate and variance are sums over its strata, and the
95 % interval is +-1.96 standard errors.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_KEPT = 10
Z95 = 1.959964


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


def kept_windows(lines_per_op: np.ndarray, stratum_of: np.ndarray, windows: int,
                 sample: float, seed: int, min_kept: int = MIN_KEPT) -> Windows:
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
        pick = max(min_kept, int(round(sample * windows * x / max(total, 1))))
        n_win = min(x, max(pick, int(round(pick / sample))))
        pick = min(pick, n_win)
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
