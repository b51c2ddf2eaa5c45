"""The 95 % quantiles the confidence intervals use: the normal's and Student t's.

One home for them: the studies' findings (a line fit's slope, a mean over workloads) and the
sampled traces' estimates (strata pooled by Welch-Satterthwaite, so fractional degrees of
freedom) both screen with :func:`t975`. It is exact (to ~1e-10), computed from Student t's
distribution function, without scipy: P(|T| > t) = I_x(df/2, 1/2) with x = df / (df + t^2),
the regularised incomplete beta function, evaluated by its continued fraction and inverted by
bisection.
"""
from __future__ import annotations

import math

#: The two-sided 95 % quantile of the normal distribution (Phi^-1(0.975)).
Z95 = 1.959963984540054


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (modified Lentz's method), for x < (a+1)/(a+b+2)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                    -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), a, b > 0, 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| > t) for Student's T with ``df`` > 0 degrees of freedom (t >= 0)."""
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def t975(df: float) -> float:
    """The 97.5 % quantile of Student's t with ``df`` > 0 degrees of freedom (any real
    ``df``; infinite: the normal's), so that +- it bounds a two-sided 95 % interval.
    Raises ValueError for ``df`` <= 0 or nan: such an estimate has no interval (callers
    decide what that means for them)."""
    if math.isnan(df) or df <= 0:
        raise ValueError(f"t975: degrees of freedom must be positive, got {df}")
    if math.isinf(df):
        return Z95
    if df == 1.0:
        return math.tan(math.pi * 0.475)            # Cauchy: exact
    if df == 2.0:
        return math.sqrt(2.0 / (0.05 * 1.95) - 2.0)  # closed form for 2 df
    lo, hi = Z95, Z95
    while t_two_sided_p(hi, df) > 0.05:             # the quantile lies above the normal's
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_two_sided_p(mid, df) > 0.05:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * hi:
            break
    return 0.5 * (lo + hi)
