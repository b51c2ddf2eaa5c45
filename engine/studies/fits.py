"""Small statistics for study findings: least-squares lines with standard errors, and ratios
with confidence intervals by first-order error propagation.

The engine is deterministic, so the errors here are not sampling noise: they measure how far
the swept responses depart from a straight line over the swept range (the residual scatter of
the fit), which is what limits a single "per cycle" number.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from engine import quantiles
from engine.quantiles import Z95
from engine.studies.spec import StudyError


def t975(df: int | None) -> float:
    """The two-sided 95 % quantile for an estimate with ``df`` degrees of freedom: Student t
    (engine.quantiles; a 3-point line fit has 1: 12.7, not 1.96), the normal one for df None
    (a large-sample estimate); nan for df <= 0 (no interval)."""
    if df is None:
        return Z95
    if df <= 0:
        return float("nan")
    return quantiles.t975(df)


@dataclass(frozen=True)
class LineFit:
    """y = intercept + slope * x, by ordinary least squares."""

    slope: float
    intercept: float
    slope_se: float          # standard error of the slope (nan with fewer than 3 points)
    intercept_se: float
    r2: float
    n: int

    def predict(self, x: float) -> float:
        return self.intercept + self.slope * x

    @property
    def dof(self) -> int:
        """Degrees of freedom of the slope's error (points - 2)."""
        return self.n - 2

    @property
    def slope_ci95(self) -> tuple[float, float]:
        h = t975(self.dof) * self.slope_se
        return (self.slope - h, self.slope + h)


def fit_line(x: Sequence[float], y: Sequence[float]) -> LineFit:
    """Least-squares line through (x, y) with the standard errors of slope and intercept.

    Needs at least two distinct x values; with exactly two points the errors are nan (no
    residual degrees of freedom)."""
    xa = np.asarray(x, np.float64)
    ya = np.asarray(y, np.float64)
    if xa.shape != ya.shape or xa.ndim != 1:
        raise StudyError(f"fit_line: x and y must be 1-D of equal length, got {xa.shape} "
                         f"and {ya.shape}")
    n = xa.size
    if n < 2 or np.ptp(xa) == 0:
        raise StudyError(f"fit_line: need at least two distinct x values, got {xa.tolist()}")
    xm, ym = xa.mean(), ya.mean()
    sxx = float(np.sum((xa - xm) ** 2))
    slope = float(np.sum((xa - xm) * (ya - ym)) / sxx)
    intercept = float(ym - slope * xm)
    resid = ya - (intercept + slope * xa)
    ssr = float(np.sum(resid ** 2))
    sst = float(np.sum((ya - ym) ** 2))
    if n > 2:
        s2 = ssr / (n - 2)
        slope_se = math.sqrt(s2 / sxx)
        intercept_se = math.sqrt(s2 * (1.0 / n + xm * xm / sxx))
    else:
        slope_se = intercept_se = float("nan")
    # (every y equal: no variance to explain, R² undefined -- it read 1.000 beside a slope of
    # 0 ± 0)
    r2 = 1.0 - ssr / sst if sst > 0 else float("nan")
    return LineFit(slope, intercept, slope_se, intercept_se, r2, int(n))


def fmt_r2(r2: float, digits: int = 3) -> str:
    """R² for a table; "n/a" when undefined (a flat line: every value equal)."""
    return f"{r2:.{digits}f}" if math.isfinite(r2) else "n/a"


@dataclass(frozen=True)
class Ratio:
    """a / b with its standard error (its interval: t975 of the degrees of freedom of the
    fits it divides, which the caller knows)."""

    value: float
    se: float


def ratio(a: float, a_se: float, b: float, b_se: float) -> Ratio:
    """a / b, with se from first-order propagation of independent errors:
    (se_r / r)^2 = (se_a / a)^2 + (se_b / b)^2."""
    if b == 0:
        raise StudyError("ratio: the denominator is zero (no sensitivity in the baseline)")
    r = a / b
    if a == 0:
        return Ratio(0.0, abs(a_se / b))
    return Ratio(r, abs(r) * math.hypot(a_se / a, b_se / b))


def pct_change(new: float, base: float) -> float:
    """100 * (new - base) / base."""
    return 100.0 * (new - base) / base if base else float("nan")


def fmt_pm(value: float, err: float, unit: str = "", digits: int = 3) -> str:
    """'1.23 ± 0.04 unit' (the error omitted when it is nan)."""
    u = f" {unit}" if unit else ""
    if err is None or not math.isfinite(err):
        return f"{value:.{digits}g}{u}"
    return f"{value:.{digits}g} ± {err:.2g}{u}"
