"""Power of the exact sign-flip test: the minimum detectable effect and the seeds needed.

Model: the n paired differences are normal with mean mu and sd sigma. The
sign-flip test is scale-invariant, so its power depends only on mu / sigma,
n and the level. It rejects at level lambda exactly when its (1 - lambda)
interval excludes 0, and that interval shifts with the data, so with z the
standardized noise and L(z) the interval's lower end,

    power(e) = P(L(z) > -e) + P(L(z) > e)        (e = mu / sigma; -z has the law of z)

which one simulation of L per (n, lambda) gives for every effect at once
(:func:`armlab.analysis.stats.resampling.sign_flip`, common random numbers). Beyond
:data:`SIMULATED_MAX_SEEDS` the discreteness of the test has faded and the
paired t-test's power is used: the randomization test has the t-test's
asymptotic power (Lehmann & Romano 2005, Testing Statistical Hypotheses,
sec. 15.2); measured, the two differ by at most 0.01 from 14 seeds on.

The level is the first step of the comparison's Holm family, alpha / k: the
level the most significant comparison must reach. The uncertainty of the
spread itself (2 degrees of freedom at 3 seeds) is given as a range: the MDE
and the seeds needed at both ends of the chi-square confidence interval for
sigma.

Independent runs (``analysis.pairing: unpaired``) are the same with the
exact two-sample permutation test (:func:`armlab.analysis.stats.resampling.permutation`):
sigma is the sd of runs within an arm, e = mu / sigma, the interval's lower
end is simulated for n1 + n2 <= :data:`SIMULATED_MAX_RUNS` runs and the
two-sample t-test's power is used beyond; "seeds needed" are runs per arm.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypedDict

import numpy as np
from scipy import stats

from armlab.analysis.stats.resampling import extreme_subset_means, min_pvalue, permutation, sign_flip_rank
from armlab.spec import DEFAULT_ANALYSIS as ANALYSIS  # every default a keyword below takes

SIMULATED_MAX_SEEDS = 14  # 2^14 subset means per replicate; beyond, t power (gap <= 0.01 measured)
SIMULATED_MAX_RUNS = 16  # unpaired: n1 + n2 runs, C(16, 8) = 12,870 splits per replicate; beyond, t power


@functools.lru_cache(maxsize=512)
def _lower_ends(n: int, level: float, replicates: int, seed: int, n_reference: int = 0) -> np.ndarray:
    """Sorted draws of the lower end L of the sign-flip (1 - level) interval for standard normal samples.

    With ``n_reference`` > 0, of the permutation interval of n against
    n_reference independent standard normal runs instead. Each sample gives
    two: L, and minus the upper end, which has the law of L (-z has the law of
    z) and is negatively correlated with it.
    """
    if n_reference:
        z = np.random.default_rng([seed, n, n_reference, replicates]).normal(size=(replicates, n + n_reference))
        ci = permutation(z[:, :n], z[:, n:], confidence=1 - level, max_exact=SIMULATED_MAX_RUNS)["ci"]
        return np.sort(np.concatenate([ci[:, 0], -ci[:, 1]]))
    confidence = 1 - level
    rank = int(sign_flip_rank(n, (1 - confidence) / 2))  # as sign_flip computes it, rounding included
    if rank < 1:  # the test cannot reject: every interval is the whole line
        return np.full(2 * replicates, -np.inf)
    smallest, largest, scale = _extreme_means(n, replicates, seed, max(rank, _rank_kept(n)))
    # sign_flip's interval, its snapping of ends within rounding of 0 included
    ends = np.stack([smallest[:, rank - 1], largest[:, rank - 1]])
    ends = np.where(np.abs(ends) <= 1e-10 * scale, 0.0, ends)
    return np.sort(np.concatenate([ends[0], -ends[1]]))


def _rank_kept(n: int) -> int:
    """How many extreme subset means of each replicate to keep: those of every level up to 0.05 (the Holm levels
    of the families of an analysis at the usual alpha), so that one enumeration per seed count serves them all."""
    return max(1, int(sign_flip_rank(n, 0.025)))


@functools.lru_cache(maxsize=16)
def _extreme_means(n: int, replicates: int, seed: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The k smallest and k largest subset means of each of ``replicates`` standard normal samples of n, and their
    max |z| (:func:`armlab.analysis.stats.resampling.extreme_subset_means`); 26 MB at 14 seeds."""
    z = np.random.default_rng([seed, n, replicates]).normal(size=(replicates, n))
    return extreme_subset_means(z, k)


def sign_flip_power(
    effect_sd: np.ndarray | float,
    n: int,
    level: float,
    *,
    replicates: int = ANALYSIS.power_replicates,
    seed: int = ANALYSIS.bootstrap_seed,
    n_reference: int = 0,
) -> np.ndarray:
    """Power of the two-sided exact sign-flip test on n normal differences at ``level`` (n <= 14).

    ``effect_sd`` (any shape) is the true mean difference in units of the
    differences' standard deviation. With ``n_reference`` > 0: of the
    permutation test of n against n_reference independent normal runs
    (n + n_reference <= 16), the effect in units of the runs' sd. Monte-Carlo
    error at most about sqrt(p (1 - p) / replicates).
    """
    lower = _lower_ends(int(n), float(level), int(replicates), int(seed), int(n_reference))
    e = np.asarray(effect_sd, dtype=float)

    def above(x: np.ndarray) -> np.ndarray:  # P(L > x)
        return 1 - np.searchsorted(lower, x, side="right") / len(lower)

    return above(-e) + above(e)


def t_power(
    effect_sd: np.ndarray | float,
    n: np.ndarray | float,
    level: np.ndarray | float,
    n_reference: np.ndarray | float = 0,
) -> np.ndarray:
    """Power of the two-sided one-sample t-test on n differences at ``level``.

    ``effect_sd`` is the true mean difference in units of its standard
    deviation; the test statistic is noncentral t with n - 1 degrees of
    freedom and noncentrality effect_sd * sqrt(n) (Cohen 1988, ch. 2). With
    ``n_reference`` > 0, of the two-sample t-test of n against n_reference
    runs: n + n_reference - 2 degrees of freedom, noncentrality
    effect_sd / sqrt(1/n + 1/n_reference) (Cohen 1988, ch. 2).
    """
    n, n_ref = np.asarray(n, dtype=float), np.asarray(n_reference, dtype=float)
    two = n_ref > 0
    df = np.where(two, n + n_ref - 2, n - 1)
    crit = stats.t.isf(np.asarray(level) / 2, df)
    with np.errstate(divide="ignore"):
        nc = np.asarray(effect_sd) * np.where(two, 1 / np.sqrt(1 / n + 1 / np.where(two, n_ref, 1)), np.sqrt(n))
    # P(T < -crit) written as sf at -nc: scipy's nct.cdf returns NaN deep in the lower tail
    return stats.nct.sf(crit, df, nc) + stats.nct.sf(crit, df, -nc)


@functools.lru_cache(maxsize=4096)
def detectable_effect_sd(
    n: int,
    level: float,
    power: float,
    replicates: int = ANALYSIS.power_replicates,
    seed: int = ANALYSIS.bootstrap_seed,
    max_exact: int = ANALYSIS.exact_max_seeds,
    resamples: int = ANALYSIS.sign_flip_resamples,
    n_reference: int = 0,
) -> float:
    """Smallest mu / sigma the sign-flip test at ``level`` detects with probability ``power`` with n seeds.

    With ``n_reference`` > 0, the permutation test of n against n_reference
    independent runs. Infinite when the test cannot reject at ``level``
    whatever the data.
    """
    if min_pvalue(n, n_reference, max_exact=max_exact, resamples=resamples) > level:
        return np.inf
    if not _simulated(n, n_reference):
        return float(_t_detectable_effect_sd(np.asarray(n), np.asarray(level), power, np.asarray(n_reference)))
    return float(
        _increasing_root(
            lambda e: sign_flip_power(e, n, level, replicates=replicates, seed=seed, n_reference=n_reference) - power,
            (),
        )
    )


def _simulated(n: int, n_reference: int) -> bool:
    """Whether the power at n seeds (against n_reference runs) is simulated rather than the t-test's."""
    return (n + n_reference <= SIMULATED_MAX_RUNS) if n_reference else (n <= SIMULATED_MAX_SEEDS)


def _t_detectable_effect_sd(n: np.ndarray, level: np.ndarray, power: float, n_reference: np.ndarray) -> np.ndarray:
    """Smallest mu / sigma the t-test at ``level`` detects with probability ``power``, elementwise (see t_power)."""
    return _increasing_root(lambda e: t_power(e, n, level, n_reference) - power, np.shape(n))


def _increasing_root(f: Callable[[np.ndarray], np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    """Where an increasing f with f(0) < 0 crosses 0, elementwise: the bracket doubles from 1, then bisection."""
    high = np.ones(shape)
    while np.any(short := f(high) < 0):
        high = np.where(short, 2 * high, high)
    return _bisect(f, np.zeros(shape), high)


class Options(TypedDict):
    """The options of :func:`minimum_detectable_effect` and :func:`seeds_needed` (a configured analysis's:
    :meth:`armlab.analysis.settings.Settings.power_options`)."""

    power: float
    replicates: int
    seed: int
    max_exact: int
    resamples: int


def minimum_detectable_effect(
    sd: np.ndarray | float,
    n: np.ndarray | int,
    *,
    level: np.ndarray | float,
    power: float = ANALYSIS.power,
    replicates: int = ANALYSIS.power_replicates,
    seed: int = ANALYSIS.bootstrap_seed,
    max_exact: int = ANALYSIS.exact_max_seeds,
    resamples: int = ANALYSIS.sign_flip_resamples,
    n_reference: np.ndarray | int = 0,
) -> np.ndarray:
    """Smallest true mean difference detected with probability ``power`` at ``level`` (score units).

    ``sd`` is the standard deviation of the paired differences (observed, or
    an end of :func:`sd_interval`); with ``n_reference`` > 0 (unpaired), of
    the runs within an arm. Arrays broadcast. Infinite when the test cannot
    reach ``level`` with n seeds; NaN when ``sd`` is zero (no spread to scale by).
    """
    sd, n, level, n_ref = np.broadcast_arrays(
        np.asarray(sd, dtype=float), np.asarray(n), np.asarray(level, dtype=float), np.asarray(n_reference)
    )
    cells = list(zip(n.ravel().tolist(), level.ravel().tolist(), n_ref.ravel().tolist()))
    unit_of: dict[tuple[int, float, int], float] = {}
    # the cells in the t-test's range in one vectorized search: scipy's per-call cost, not the arithmetic, was the time
    t_cells = [
        (m, lv, r)
        for m, lv, r in dict.fromkeys(cells)
        if not _simulated(m, r) and min_pvalue(m, r, max_exact=max_exact, resamples=resamples) <= lv
    ]
    if t_cells:
        m, lv, r = (np.array(column) for column in zip(*t_cells))
        unit_of.update(zip(t_cells, _t_detectable_effect_sd(m, lv, power, r).tolist()))
    for m, lv, r in set(cells) - unit_of.keys():  # simulated, or the test cannot reach the level
        unit_of[m, lv, r] = detectable_effect_sd(
            int(m), float(lv), float(power), replicates, seed, max_exact, resamples, int(r)
        )
    unit = np.array([unit_of[cell] for cell in cells]).reshape(sd.shape)
    with np.errstate(invalid="ignore"):  # inf * 0 when the test cannot reject and there is no spread
        return np.where(sd > 0, unit * sd, np.nan)


def seeds_needed(
    effect: float,
    sd: np.ndarray | float,
    *,
    level: np.ndarray | float,
    power: float = ANALYSIS.power,
    replicates: int = ANALYSIS.power_replicates,
    seed: int = ANALYSIS.bootstrap_seed,
    max_exact: int = ANALYSIS.exact_max_seeds,
    resamples: int = ANALYSIS.sign_flip_resamples,
    max_seeds: int = 100_000,
    unpaired: bool = False,
) -> np.ndarray:
    """Fewest matched seeds with which the sign-flip test at ``level`` detects ``effect`` with probability ``power``.

    NaN when ``sd`` is zero, and ``max_seeds`` when even that is not enough.
    Up to :data:`SIMULATED_MAX_SEEDS` every seed count is tried (the exact
    test's power is not monotone in n); beyond, the t-test's power is. Rows
    for which even the t-test needs more seeds skip the simulated range: for
    normal differences the t-test is the most powerful unbiased test
    (Lehmann & Romano 2005, sec. 5.3), so the sign-flip test needs as many.
    With ``unpaired``: runs per arm for the permutation test of independent
    runs (``sd`` within an arm), the two-sample t-test beyond
    :data:`SIMULATED_MAX_RUNS` / 2 per arm.
    """
    shape = np.broadcast_shapes(np.shape(sd), np.shape(level))  # a scalar sd gives a 0-d answer
    sd, level = (np.broadcast_to(np.asarray(x, dtype=float), shape).ravel() for x in (sd, level))
    with np.errstate(divide="ignore", invalid="ignore"):
        effect_sd = np.where(sd > 0, effect / sd, np.nan)
    needed = np.full(sd.shape, np.nan)
    simulated = SIMULATED_MAX_RUNS // 2 if unpaired else SIMULATED_MAX_SEEDS
    rows = sd > 0
    # one bisection for the rows of every level at once (t_power works elementwise): scipy's per-call cost,
    # not the arithmetic, was the time
    beyond = np.full(sd.shape, np.inf)
    beyond[rows] = _t_seeds_needed(effect_sd[rows], level[rows], power, max_seeds, low=1, unpaired=unpaired)
    for lv in np.unique(level[rows]):
        searching = rows & (level == lv) & (beyond <= simulated)
        for n in range(2, simulated + 1):
            if not searching.any():
                break
            other = n if unpaired else 0
            if min_pvalue(n, other, max_exact=max_exact, resamples=resamples) > lv:
                continue
            chance = sign_flip_power(effect_sd[searching], n, lv, replicates=replicates, seed=seed, n_reference=other)
            found = np.flatnonzero(searching)[chance >= power]
            needed[found], searching[found] = n, False
    # beyond the simulated range the t-test's count stands (t power grows with n, so a search started there
    # ends where the one from 1 did); rows the simulated range could not settle search from its end
    settled = rows & np.isnan(needed) & (beyond > simulated)
    needed[settled] = beyond[settled]
    open_ = rows & np.isnan(needed)
    needed[open_] = _t_seeds_needed(effect_sd[open_], level[open_], power, max_seeds, low=simulated, unpaired=unpaired)
    return needed.reshape(shape)


def _t_seeds_needed(
    effect_sd: np.ndarray, level: np.ndarray | float, power: float, max_seeds: int, low: int, unpaired: bool = False
) -> np.ndarray:
    """Fewest n in (low, max_seeds] with t power >= ``power``: integer bisection, rows that converge stay put."""
    bottom = np.full(effect_sd.shape, float(low))
    high = np.full(effect_sd.shape, float(max_seeds))
    while np.any(open_ := high - bottom > 1):
        mid = (bottom + high) // 2
        ok = t_power(effect_sd, mid, level, mid if unpaired else 0) >= power
        high, bottom = np.where(ok & open_, mid, high), np.where(~ok & open_, mid, bottom)
    return high


def sd_interval(sd: np.ndarray | float, n: np.ndarray | int, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Chi-square confidence interval ``(low, high)`` for the sd of normal differences from the observed sd."""
    df = np.asarray(n, dtype=float) - 1
    sd = np.asarray(sd, dtype=float)
    return (
        sd * np.sqrt(df / stats.chi2.isf((1 - confidence) / 2, df)),
        sd * np.sqrt(df / stats.chi2.ppf((1 - confidence) / 2, df)),
    )


def _bisect(
    f: Callable[[np.ndarray], np.ndarray], low: np.ndarray, high: np.ndarray, iterations: int = 50
) -> np.ndarray:
    """Vectorized bisection for an increasing f with f(low) < 0 <= f(high)."""
    for _ in range(iterations):
        mid = (low + high) / 2
        above = f(mid) >= 0
        high, low = np.where(above, mid, high), np.where(above, low, mid)
    return high
