"""Evaluation sampling: pass@k, a cell's sampling variance, and where a comparison's uncertainty comes from.

Each cell of the tidy scores table (run, benchmark, item) is the mean
correctness ``score = n_correct / n_samples`` of ``n_samples`` answers sampled
from the run's model. Besides the training seeds and the finite item set of
:func:`armlab.analysis.stats.normal_theory.crossed_components`, the k sampled answers per
cell are a third source of noise: the same checkpoint evaluated again gives
another score. This module

- estimates pass@k per cell without bias (:func:`pass_at_k`, Chen et al. 2021);
- estimates a cell's sampling variance from its counts (:func:`cell_sampling_variance`);
- splits the variance of a paired comparison's mean difference into training
  seeds, items and evaluation sampling by the method of moments
  (:func:`variance_components`), on top of the crossed seeds x items
  components;
- says whether one more training seed or twice the samples per cell buys more
  standard error per job-minute (:func:`allocation`).

Model, per comparison and benchmark b: the observed difference of the arm's
and the reference's scores at seed s and item i is

    d[s, i] = mu + a_i + t_s + g_si + e_si,

t_s the seed effect (shared across a run's benchmarks), g_si the seed x item
interaction, a_i the item effect and e_si the evaluation-sampling error of the
two cells, independent with variance v_si (the sum of the two cells'
``p (1 - p) / k``). A new training seed redraws t_s, g_si and e_si; the
variance over seeds of each seed's measure therefore holds training and
sampling, and the sampling part is known from the counts. Doubling k halves
v_si and nothing else; one more seed divides training and sampling by
(n + 1) / n and leaves the item term.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from armlab.analysis.stats.normal_theory import item_mean_squares
from armlab.lazy import lazy_module

stats = lazy_module("scipy.stats")
special = lazy_module("scipy.special")

OPTIONS = ("seed", "samples")  # the two purchases :func:`allocation` compares, in its row order


def _integer_valued(x: np.ndarray) -> bool:
    return bool(np.all(np.isfinite(x)) and np.all(x == np.round(x)))


def pass_at_k(n: np.ndarray | int, c: np.ndarray | int, k: np.ndarray | int) -> np.ndarray:
    """Chen et al. 2021 (Evaluating Large Language Models Trained on Code): unbiased pass@k of n samples, c correct.

    pass@k = 1 - C(n - c, k) / C(n, k), the probability that k of the n
    samples drawn without replacement hold at least one correct one; unbiased
    for 1 - (1 - p)^k. Computed in the product form of the paper,

        1 - prod_{i = n - c + 1}^{n} (1 - k / i)        (1 when n - c < k),

    as ``-expm1`` of a sum of ``log1p`` terms accumulated from i = n down, so
    that no binomial coefficient is formed (no overflow at n = 10^4) and a
    small pass@k keeps its relative precision. ``n``, ``c`` and ``k``
    broadcast; returns a float array of the broadcast shape (0-d for scalars).
    Raises ValueError unless k is an integer >= 1 and <= n, and c an integer
    in [0, n], for every element.
    """
    n, c, k = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (n, c, k)))
    if not _integer_valued(k) or np.any(k < 1):
        raise ValueError(f"pass_at_k: expected k an integer >= 1, got {np.unique(k)[:5].tolist()}")
    if not _integer_valued(n) or np.any(k > n):
        raise ValueError("pass_at_k: expected n an integer >= k (k <= n samples) for every element")
    if not _integer_valued(c) or np.any(c < 0) or np.any(c > n):
        raise ValueError("pass_at_k: expected c an integer count of correct samples in [0, n] for every element")
    out = np.ones(n.shape)
    pairs = np.stack([n.ravel(), k.ravel()], axis=1)
    for n_, k_ in np.unique(pairs, axis=0):
        where = (n == n_) & (k == k_)
        count = c[where].astype(np.int64)
        # factors i = n, n-1, ..., k+1 are in (0, 1); a factor i <= k is 0 (pass@k = 1)
        factors = int(min(count.max(), n_ - k_))
        i = np.arange(n_, n_ - factors, -1.0)
        log_prod = np.concatenate([[0.0], np.cumsum(np.log1p(-k_ / i))])
        fits = count <= n_ - k_
        values = np.ones(count.shape)
        values[fits] = 0.0 - np.expm1(log_prod[count[fits]])  # 0.0 -: no -0.0 at c = 0
        out[where] = values
    return out[()]


def cell_sampling_variance(n: np.ndarray | int, c: np.ndarray | float) -> np.ndarray:
    """Unbiased sampling variance of a cell's mean correctness c / n over n Bernoulli samples: s^2 / n.

    s^2 = c (n - c) / (n (n - 1)) is the sample variance (ddof 1) of n 0/1
    answers, unbiased for p (1 - p), so s^2 / n is unbiased for
    Var(c / n) = p (1 - p) / n. NaN where n < 2 (one sample says nothing about
    its own noise). ``n`` and ``c`` broadcast; raises ValueError when some c is
    outside [0, n].
    """
    n, c = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(c, dtype=float))
    if np.any(c < 0) or np.any(c > n):
        raise ValueError("cell_sampling_variance: expected c (correct samples) in [0, n] for every element")
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = c * (n - c) / (n * n * (n - 1))
    return np.where(n >= 2, variance, np.nan)[()]


def pass_at_k_variance(n: np.ndarray | int, c: np.ndarray | int, k: int) -> np.ndarray:
    """Hoeffding 1948 (U-statistics), Efron & Stein 1981 (the jackknife estimate of variance): an estimate of the
    sampling variance of one item's :func:`pass_at_k` from its counts that is never below it in expectation.

    pass@k = 1 - U with U = C(n - c, k) / C(n, k), the U-statistic of degree k for (1 - p)^k. With f = n - c:

    - n >= 2k: U^2 - C(f, 2k) / C(n, 2k), unbiased (the second term is the U-statistic for (1 - p)^2k);
    - k < n < 2k: the delete-one jackknife over the n answers, (n - 1) c f C(f - 1, k - 1)^2 / (n C(n - 1, k))^2,
      conservative: its mean is at least Var(U on n - 1 answers) (n - 1)/n (Efron-Stein) >= Var(U) (n Var(U) does
      not grow with n, Hoeffding);
    - k = n: pass@n is 1{c >= 1}, of variance q^n (1 - q^n) <= n p q^(n - 1) = P(c = 1), so 1{c = 1}
      (q = 1 - p; 1 - q^n = p (1 + q + ... + q^(n-1)) <= n p).

    No unbiased estimate exists for n < 2k: the variance is a polynomial of degree 2k in p, the counts
    identify only those of degree <= n. Every branch is 0 at c = 0 and (n >= 2) at c = n. ``n`` and ``c`` broadcast
    (the checks of :func:`pass_at_k`); k is one integer.
    """
    pass_at_k(n, c, k)  # the same checks on n, c and k
    n, c = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(c, dtype=float))
    f = n - c
    out = np.zeros(n.shape)
    unbiased, jackknife, whole = n >= 2 * k, (n > k) & (n < 2 * k), n == k
    u = 1.0 - pass_at_k(n[unbiased], c[unbiased], k)
    out[unbiased] = u * u - (1.0 - pass_at_k(n[unbiased], c[unbiased], 2 * k))
    nj, cj, fj = n[jackknife], c[jackknife], f[jackknife]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.exp(_log_comb(fj - 1, k - 1) - _log_comb(nj - 1, k))  # C(f-1, k-1) / C(n-1, k); 0 when f < k
    out[jackknife] = np.where(fj >= k, (nj - 1) * cj * fj * ratio**2 / nj**2, 0.0)
    out[whole] = (c[whole] == 1).astype(float)
    return np.maximum(out, 0.0)[()]  # U^2 >= the 2k-term exactly; max() only clears rounding below 0


def pass_at_k_variance_method(n: int, k: int) -> str:
    """Which estimate :func:`pass_at_k_variance` gives for n answers at pass@k, in words."""
    if n >= 2 * k:
        return "unbiased"
    return "jackknife (conservative)" if n > k else "one-correct bound (conservative)"


def _log_comb(a: np.ndarray, b: int) -> np.ndarray:
    return special.gammaln(a + 1) - special.gammaln(b + 1) - special.gammaln(a - b + 1)


def difference_from_estimate(
    values: np.ndarray,
    estimate: np.ndarray | float,
    estimate_variance: np.ndarray | float,
    confidence: float,
    estimate_df: np.ndarray | float = np.inf,
) -> dict[str, np.ndarray]:
    """Welch 1947, Satterthwaite 1946: the mean of ``values`` (last axis: seeds) minus an estimate made once, whose
    variance is estimated separately (``estimate_variance``, with ``estimate_df`` degrees of freedom: the base
    policy's sampling variance), as a t interval.

    se^2 = s^2 / n + v; degrees of freedom (s^2 / n + v)^2 / ((s^2 / n)^2 / (n - 1) + v^2 / estimate_df). With
    v = 0 it is the one-sample t interval of the seeds. One seed: an unbounded interval and no p. Returns
    ``mean``, ``se``, ``df``, ``low``, ``high``, ``p_value`` (two-sided), arrays over the leading axes.
    """
    values = np.asarray(values, dtype=float)
    n = values.shape[-1]
    mean = values.mean(axis=-1) - estimate
    seed_part = values.var(axis=-1, ddof=1) / n if n > 1 else np.full(mean.shape, np.nan)
    total = seed_part + estimate_variance
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = seed_part**2 / max(n - 1, 1) + np.asarray(estimate_variance) ** 2 / estimate_df
        df = np.where(spread > 0, total**2 / spread, np.inf)
        se = np.sqrt(total)
        half = np.where(se > 0, stats.t.ppf(0.5 + confidence / 2, df) * se, 0.0)
        t = np.where(se > 0, np.abs(mean) / se, np.where(mean == 0, 0.0, np.inf))
    p_value = np.where(n > 1, 2 * stats.t.sf(t, df), np.nan)
    half = np.where(n > 1, half, np.inf)
    return {"mean": mean, "se": se, "df": df, "low": mean - half, "high": mean + half, "p_value": p_value}


@dataclass(frozen=True)
class SamplingComponents:
    """Variance of each (comparison, measure)'s mean paired difference by source; arrays ``(P, M)``.

    ``training``, ``items`` and ``sampling`` are unbiased method-of-moments
    estimates, not truncated, so one can be negative by chance;
    ``training_negative`` and ``items_negative`` flag where. ``total`` is the
    variance of the mean difference, the sum of the three with a negative
    estimate counted as 0 (sampling as 0 where NaN); ``seed_term`` is the
    variance over seeds of each seed's measure divided by n (training plus
    sampling; training alone where sampling is NaN). ``n_seeds`` and
    ``item_counts`` (items per benchmark) are what :func:`allocation` needs.
    """

    mean: np.ndarray
    training: np.ndarray
    items: np.ndarray
    sampling: np.ndarray
    total: np.ndarray
    seed_term: np.ndarray
    training_negative: np.ndarray
    items_negative: np.ndarray
    n_seeds: int
    item_counts: tuple[int, ...]

    @property
    def se(self) -> np.ndarray:
        """Standard error of the mean difference, ``sqrt(total)``."""
        return np.sqrt(self.total)


def variance_components(
    item_diffs: Sequence[np.ndarray], item_variances: Sequence[np.ndarray], weights: np.ndarray
) -> SamplingComponents:
    """Training seeds, items and evaluation sampling in the variance of the mean difference, per comparison and measure.

    ``item_diffs`` is a list over benchmarks of ``(P, n, m_b)`` arrays (P
    comparisons, n matched seeds, m_b items) of score differences, as in
    :func:`armlab.analysis.stats.normal_theory.crossed_components`; ``item_variances`` has
    the same shapes and holds each cell's estimated sampling variance of its
    difference (the sum of the arm's and the reference's
    :func:`cell_sampling_variance`; NaN where it cannot be estimated);
    ``weights`` is ``(M, B)``, each measure a weighted mean of benchmark
    means. Method of moments on the model of the module docstring (Searle,
    Casella & McCulloch 1992, Variance Components, ch. 4), every estimate
    unbiased because none is truncated:

    - the seed term Var_s(per-seed measure) / n of ``crossed_components``
      holds training and sampling, and its expected sampling part is

          sampling = sum_b w_b^2 (1 / m_b^2) sum_i mean_s(v_sbi) / n,

      exactly for independent sampling errors of any variances;
    - training = seed term - sampling: the seed main effect and the seed x
      item interaction, all that a new seed redraws besides evaluation
      sampling (negative by chance where sampling noise dominates:
      ``training_negative``);
    - items = sum_b w_b^2 (MS_item_b - MS_residual_b) / (n m_b) from each
      benchmark's ANOVA mean squares (the sampling errors are in both and
      cancel in expectation), summed before any truncation: truncating each
      benchmark's term at 0, as the crossed interval does to stay
      conservative, biases the sum upward (about x2 at 4 seeds and 20-40
      items, benchmarks/components_bias.py). Negative by chance where the
      item effects are small: ``items_negative``.

    Where a benchmark of non-zero weight has a NaN variance (e.g. one sample
    per cell), the sampling part is not estimable: ``sampling`` is NaN and
    ``training`` holds the whole seed term (training plus sampling).
    """
    weights = np.asarray(weights, dtype=float)
    if len(item_variances) != len(item_diffs) or weights.ndim != 2 or weights.shape[1] != len(item_diffs):
        raise ValueError(
            f"variance_components: expected {len(item_diffs)} benchmarks' variances and weights (M, {len(item_diffs)}),"
            f" got {len(item_variances)} and {weights.shape}"
        )
    for b, (x, v) in enumerate(zip(item_diffs, item_variances)):
        if np.shape(v) != np.shape(x) or np.ndim(x) != 3:
            raise ValueError(
                f"variance_components: expected benchmark {b}'s variances of the shape of its (P, n, m) differences"
                f" {np.shape(x)}, got {np.shape(v)}"
            )
    per_seed = np.stack([x.mean(axis=2) for x in item_diffs], axis=2) @ weights.T  # (P, n, M)
    n = per_seed.shape[1]
    mean = per_seed.mean(axis=1)
    seed_term = per_seed.var(axis=1, ddof=1) / n
    items = np.zeros_like(seed_term)
    for b, (ms_item, ms_residual) in enumerate(item_mean_squares(item_diffs)):
        m = item_diffs[b].shape[2]
        if m >= 2:  # one item: no item variance to estimate
            items += (ms_item - ms_residual)[:, None] * weights[:, b] ** 2 / (n * m)
    sampling = np.zeros_like(seed_term)
    for b, v in enumerate(item_variances):
        v = np.asarray(v, dtype=float)
        part = v.mean(axis=1).sum(axis=1) / (v.shape[2] ** 2 * n)  # (P,)
        w2 = weights[:, b] ** 2  # (M,)
        sampling += np.where(w2 > 0, w2 * part[:, None], 0.0)  # a weight of 0 ignores a NaN variance
    estimable = np.isfinite(sampling)
    training = np.where(estimable, seed_term - sampling, seed_term)
    return SamplingComponents(
        mean=mean,
        training=training,
        items=items,
        sampling=sampling,
        total=np.maximum(training, 0.0) + np.maximum(items, 0.0) + np.where(estimable, sampling, 0.0),
        seed_term=seed_term,
        training_negative=training < 0,
        items_negative=items < 0,
        n_seeds=n,
        item_counts=tuple(int(np.shape(x)[2]) for x in item_diffs),
    )


def _per_comparison(minutes: np.ndarray | float, shape: tuple[int, int], name: str) -> np.ndarray:
    minutes = np.asarray(minutes, dtype=float)
    if minutes.ndim == 1:
        minutes = minutes[:, None]
    try:
        minutes = np.broadcast_to(minutes, shape)
    except ValueError:
        raise ValueError(f"allocation: expected {name} a number or one per comparison ({shape[0]})") from None
    if not np.all(np.isfinite(minutes) & (minutes > 0)):
        raise ValueError(f"allocation: expected {name} positive finite job-minutes")
    return minutes


def allocation(
    components: SamplingComponents,
    seed_minutes: np.ndarray | float,
    samples_minutes: np.ndarray | float,
    *,
    comparisons: Sequence | None = None,
    measures: Sequence | None = None,
) -> pd.DataFrame:
    """What one more training seed and what doubling the samples per cell each buy in standard error per job-minute.

    Under the model of :func:`variance_components` (n seeds, k samples):

    - one more seed:  Var' = (training + sampling) n / (n + 1) + items;
    - doubling k:     Var' = training + sampling / 2 + items.

    ``seed_minutes`` is the job-minutes of one more seed for a comparison
    (e.g. training and evaluating both arms), ``samples_minutes`` those of
    doubling k (re-evaluating both arms at every seed with k more samples);
    each a number or one per comparison (P,). ``comparisons`` and ``measures``
    label the rows (default: their indices).

    Returns one row per (comparison, measure, option), options in the order
    of :data:`OPTIONS`, with columns

    - ``comparison``, ``measure``: the labels;
    - ``option``: ``"seed"`` (one more training seed) or ``"samples"`` (k doubled);
    - ``minutes``: the job-minutes the option costs;
    - ``se``: the current standard error, ``sqrt(total)``;
    - ``se_after``: the standard error after the purchase (NaN for
      ``"samples"`` where the sampling part is not estimable);
    - ``reduction``: ``se - se_after``;
    - ``reduction_per_minute``: ``reduction / minutes``;
    - ``recommended``: True on the option with the larger reduction per
      minute (``"seed"`` on ties, e.g. no variance at all, and wherever
      ``"samples"`` cannot be evaluated);
    - ``advice``: the recommended option, repeated on both rows.
    """
    c = components
    shape = c.total.shape
    seed_cost = _per_comparison(seed_minutes, shape, "seed_minutes")
    samples_cost = _per_comparison(samples_minutes, shape, "samples_minutes")
    n = c.n_seeds
    estimable = np.isfinite(c.sampling)
    sampling = np.where(estimable, c.sampling, 0.0)
    se = np.sqrt(c.total)
    # a negative estimate (by chance) counts as 0, as in the total
    items, training = np.maximum(c.items, 0.0), np.maximum(c.training, 0.0)
    se_seed = np.sqrt((training + sampling) * n / (n + 1) + items)
    se_samples = np.where(estimable, np.sqrt(training + sampling / 2 + items), np.nan)
    gain_seed, gain_samples = (se - se_seed) / seed_cost, (se - se_samples) / samples_cost
    samples_better = estimable & (gain_samples > gain_seed)  # NaN compares False
    advice = np.where(samples_better, "samples", "seed")
    p_labels = list(range(shape[0])) if comparisons is None else list(comparisons)
    m_labels = list(range(shape[1])) if measures is None else list(measures)
    if len(p_labels) != shape[0] or len(m_labels) != shape[1]:
        raise ValueError(f"allocation: expected {shape[0]} comparison and {shape[1]} measure labels")
    rows = []
    for p in range(shape[0]):
        for m in range(shape[1]):
            for option, cost, after in (("seed", seed_cost, se_seed), ("samples", samples_cost, se_samples)):
                reduction = se[p, m] - after[p, m]
                rows.append(
                    {
                        "comparison": p_labels[p],
                        "measure": m_labels[m],
                        "option": option,
                        "minutes": cost[p, m],
                        "se": se[p, m],
                        "se_after": after[p, m],
                        "reduction": reduction,
                        "reduction_per_minute": reduction / cost[p, m],
                        "recommended": advice[p, m] == option,
                        "advice": str(advice[p, m]),
                    }
                )
    return pd.DataFrame(rows)


def numerics_mean_square(diffs: np.ndarray, sampling: np.ndarray | float) -> np.ndarray:
    """What numerics alone do to a run, from numerics controls: the mean square E[Δ²] of the per-seed difference of
    the true (sampling-free) measure between a run and the same run under other numerics, per control.

    ``diffs`` ``(C, n)``: each control's per-seed measure minus its reference's at the same seeds (the same random
    streams: the two runs differ in numerics only); ``sampling`` ``(C,)``: the sampling component of each control's
    mean difference (:func:`variance_components`, mean_s v_s / n with v_s the estimated sampling variance of seed s's
    difference). A seed's observed difference is the true one plus the evaluation's sampling error, whose mean is 0
    given the two models, so E[d_s²] = E[Δ_s²] + v_s and

        mean_s d_s² - n · sampling

    is unbiased for mean_s E[Δ_s²] (method of moments, as :func:`variance_components`; not truncated, so negative by
    chance where the models barely differ). Δ holds any systematic shift of the numerics too (E[Δ²] = Var Δ + (E Δ)²):
    a shift moves a verdict as noise does. Where ``sampling`` is NaN (one sample per cell) nothing is subtracted, an
    upper bound in expectation. For two independent numerics draws, E[Δ²] = 2 σ²_numerics, so a comparison of two
    arms at n seeds has numerics variance E[Δ²] / n in its mean difference.
    """
    diffs = np.asarray(diffs, dtype=float)
    if diffs.ndim != 2:
        raise ValueError(f"numerics_mean_square: expected (controls, seeds) differences, got shape {diffs.shape}")
    sampling = np.broadcast_to(np.asarray(sampling, dtype=float), diffs.shape[:1])
    return (diffs**2).mean(axis=1) - diffs.shape[1] * np.nan_to_num(sampling, nan=0.0)
