"""Pearson's and Spearman's correlations with their two-sided p-values, as SciPy computes them
(``scipy.stats.pearsonr``, ``spearmanr``), in NumPy and the standard library.

    >>> r = pearsonr([1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 5.0])
    >>> statistic, pvalue = r
    >>> round(float(statistic), 6), round(float(pvalue), 6), bool(r[0] == r.correlation)
    (0.831522, 0.168478, True)
    >>> round(float(spearmanr([1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 5.0]).statistic), 6)
    0.8
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

_TINY: Final = 1e-300
_STEPS: Final = 10_000
_TOLERANCE: Final = 1e-15


class PearsonRResult(NamedTuple):
    """SciPy's ``PearsonRResult``: unpacks as ``(statistic, pvalue)``, indexes as a tuple."""

    statistic: np.float64
    pvalue: np.float64
    n: int = 0

    @property
    def correlation(self) -> np.float64:
        """The coefficient (SciPy's older name of ``statistic``)."""
        return self.statistic

    def __repr__(self) -> str:
        return f"PearsonRResult(statistic={self.statistic!r}, pvalue={self.pvalue!r})"

    def __len__(self) -> int:
        return 2

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter((self.statistic, self.pvalue))

    def confidence_interval(self, confidence_level: float = 0.95) -> tuple[float, float]:
        """The interval of the coefficient by Fisher's transformation (SciPy's default)."""
        if self.n < 4 or abs(self.statistic) >= 1:
            return float(self.statistic), float(self.statistic)
        z = NormalDist().inv_cdf((1 + confidence_level) / 2) / math.sqrt(self.n - 3)
        center = math.atanh(float(self.statistic))
        return math.tanh(center - z), math.tanh(center + z)


class SignificanceResult(NamedTuple):
    """SciPy's ``SignificanceResult`` of ``spearmanr``: ``(statistic, pvalue)``."""

    statistic: np.float64
    pvalue: np.float64

    @property
    def correlation(self) -> np.float64:
        """The coefficient (SciPy's older name of ``statistic``)."""
        return self.statistic


def pearsonr(x: Sequence[float], y: Sequence[float]) -> PearsonRResult:
    """Pearson's r of two samples of two or more values, and its two-sided p-value (NaN for a
    constant sample, as SciPy's)."""
    first, second = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    r = _correlation(first, second)
    half = first.shape[0] / 2 - 1
    pvalue = 2 * _betainc(half, half, (1 - abs(r)) / 2) if r == r else math.nan
    return PearsonRResult(np.float64(r), np.float64(min(pvalue, 1.0)), first.shape[0])


def spearmanr(x: Sequence[float], y: Sequence[float]) -> SignificanceResult:
    """Spearman's rho (Pearson's r of the ranks, ties given their mean rank) and its two-sided
    p-value from Student's t with ``n - 2`` degrees of freedom (SciPy's)."""
    first, second = rankdata(np.asarray(x, np.float64)), rankdata(np.asarray(y, np.float64))
    rho = _correlation(first, second)
    freedom = first.shape[0] - 2
    if rho != rho:
        pvalue = math.nan
    elif abs(rho) >= 1:
        pvalue = 0.0
    else:
        t_squared = rho * rho * freedom / ((rho + 1.0) * (1.0 - rho))
        pvalue = _betainc(freedom / 2, 0.5, freedom / (freedom + t_squared))
    return SignificanceResult(np.float64(rho), np.float64(pvalue))


def rankdata(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Ranks from 1, ties given the mean of their ranks (SciPy's ``method="average"``)."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    last = np.concatenate((first[1:], [values.shape[0]])) - 1
    mean_rank = (first + last) / 2.0 + 1.0
    ranks = np.empty(values.shape[0], dtype=np.float64)
    ranks[order] = mean_rank[group]
    return ranks


def _correlation(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    centered_x, centered_y = x - x.mean(), y - y.mean()
    norm_x, norm_y = np.linalg.norm(centered_x), np.linalg.norm(centered_y)
    if norm_x == 0 or norm_y == 0:
        return math.nan
    r = float(np.dot(centered_x / norm_x, centered_y / norm_y))
    return max(-1.0, min(1.0, r))


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _fraction(b, a, 1.0 - x) / b


def _fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function, by Lentz's method."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    result = d
    for m in range(1, _STEPS):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            result *= d * c
        if abs(d * c - 1.0) < _TOLERANCE:
            break
    return result
