"""Equivalence and power for paired differences over seeds.

Power uses the paired t-test as the model of the sign-flip test: for normal
differences the randomization test has the t-test's asymptotic power (Lehmann
& Romano 2005, sec. 15.2). Two things make the t model too optimistic at few
seeds, and both are handled: the sign-flip test cannot reject at all while its
smallest p exceeds the level (then the MDE is infinite and more seeds are
needed whatever the effect), and the level is the family's first Holm step,
alpha / k, the level the most significant comparison must reach.
"""

import numpy as np
from scipy import stats

from analysis.resampling import min_sign_flip_pvalue


def equivalent(interval, margin):
    """Equivalence within +-margin: the (1 - 2 alpha) interval lies inside (-margin, margin).

    The interval form of two one-sided tests at level alpha (Schuirmann 1987,
    J. Pharmacokinet. Biopharm. 15); ``interval`` is ``(K, 2)``.
    """
    interval = np.atleast_2d(interval)
    return (interval[:, 0] > -margin) & (interval[:, 1] < margin)


def t_power(effect_sd, n, level):
    """Power of the two-sided one-sample t-test on n differences at ``level``.

    ``effect_sd`` is the true mean difference in units of its standard
    deviation; the test statistic is noncentral t with n - 1 degrees of
    freedom and noncentrality effect_sd * sqrt(n) (Cohen 1988, ch. 2).
    """
    n = np.asarray(n, dtype=float)
    df = n - 1
    crit = stats.t.isf(np.asarray(level) / 2, df)
    nc = np.asarray(effect_sd) * np.sqrt(n)
    # P(T < -crit) written as sf at -nc: scipy's nct.cdf returns NaN deep in the lower tail
    return stats.nct.sf(crit, df, nc) + stats.nct.sf(crit, df, -nc)


def _can_reject(n, level, max_exact, resamples):
    return min_sign_flip_pvalue(n, max_exact=max_exact, resamples=resamples) <= level


def minimum_detectable_effect(sd, n, *, level, power=0.8, max_exact=20, resamples=100_000):
    """Smallest true mean difference detected with probability ``power`` at ``level`` (score units).

    ``sd`` is the observed standard deviation of the paired differences.
    Infinite when the sign-flip test cannot reach ``level`` with n seeds;
    NaN when ``sd`` is zero or n < 2 (no spread to scale by).
    """
    sd, n = np.broadcast_arrays(np.asarray(sd, dtype=float), np.asarray(n))
    # 64 SD brackets every case the sign-flip test can reject at all (n >= 6 at level 0.05)
    effect = _bisect(lambda e: t_power(e, n, level) - power, np.zeros(sd.shape), np.full(sd.shape, 64.0))
    mde = effect * sd
    mde = np.where(_can_reject(n, level, max_exact, resamples), mde, np.inf)
    return np.where((sd > 0) & (n >= 2), mde, np.nan)


def seeds_needed(effect, sd, *, level, power=0.8, max_exact=20, resamples=100_000, max_seeds=100_000):
    """Fewest matched seeds that detect a true mean difference ``effect`` with probability ``power``.

    Needs both t-power >= ``power`` at ``level`` and a sign-flip test able to
    reach ``level``; NaN when ``sd`` is zero, and ``max_seeds`` when even that
    is not enough.
    """
    sd, level = np.broadcast_arrays(np.asarray(sd, dtype=float), np.asarray(level, dtype=float))
    # fewest seeds whose smallest sign-flip p reaches the level: 2^(1-n) <= level, else Monte Carlo
    floor = np.maximum(2, np.ceil(1 - np.log2(level)))
    floor = np.where(floor <= max_exact, floor, np.where(1 / (resamples + 1) <= level, max_exact + 1, max_seeds))
    with np.errstate(divide="ignore"):
        effect_sd = np.where(sd > 0, effect / sd, np.nan)

    def enough(n):
        return t_power(effect_sd, n, level) >= power

    # integer bisection; below the floor the sign-flip test cannot reject, so floor - 1 is never enough
    low, high = floor - 1, np.full(sd.shape, float(max_seeds))
    while np.any(open_ := high - low > 1):
        mid = (low + high) // 2
        ok = enough(mid)
        # rows that have converged stay put while others are still searching
        high, low = np.where(ok & open_, mid, high), np.where(~ok & open_, mid, low)
    return np.where(sd > 0, high, np.nan)


def _bisect(f, low, high, iterations=40):
    """Vectorized bisection for an increasing f with f(low) < 0 <= f(high)."""
    for _ in range(iterations):
        mid = (low + high) / 2
        above = f(mid) >= 0
        high, low = np.where(above, mid, high), np.where(above, low, mid)
    return high
