"""Paired t interval and TOST against scipy and statsmodels; the crossed variance-components interval by hand."""

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.weightstats import DescrStatsW, ttost_paired

from armlab.analysis.stats import normal_theory


def test_t_interval_equals_statsmodels():
    rng = np.random.default_rng(0)
    for n in (3, 5, 12):
        d = rng.normal(0.1, 1, (3, n))
        ours = normal_theory.t_interval(d, 0.95)
        for row, ci in zip(d, ours):
            assert ci == pytest.approx(DescrStatsW(row).tconfint_mean(alpha=0.05), rel=1e-12)


def test_t_tost_equals_statsmodels_ttost_paired():
    rng = np.random.default_rng(1)
    margin = 0.3
    for n in (3, 5, 8):
        x, y = rng.normal(0.5, 0.2, (4, n)), rng.normal(0.45, 0.2, (4, n))
        p, eq = normal_theory.t_tost(x - y, margin, 0.05)
        for i in range(4):
            ref = ttost_paired(x[i], y[i], -margin, margin)[0]
            assert p[i] == pytest.approx(ref, rel=1e-10)
            assert ((eq[i, 0] > -margin) & (eq[i, 1] < margin)) == (p[i] <= 0.05)
    # no spread: inside the margin is equivalent, outside is not
    p, _ = normal_theory.t_tost(np.array([[0.1, 0.1, 0.1], [0.5, 0.5, 0.5]]), margin, 0.05)
    assert p.tolist() == [0.0, 1.0]


def test_spread_is_exactly_zero_for_equal_differences_up_to_rounding():
    # 0.1 + 0.2 - 0.3 style rounding gives sd ~ 1e-17, which made e2d0814's MDE 2.6e-17
    d = np.array([[0.7 - 0.6, 0.1, 0.3 - 0.2, 0.1], [0.1, 0.2, 0.1, 0.2]])
    assert d[0].std(ddof=1) > 0
    assert normal_theory.spread(d).tolist() == [0.0, pytest.approx(np.std([0.1, 0.2, 0.1, 0.2], ddof=1))]


def _anova_by_hand(x):
    """Two-way ANOVA mean squares of one (n seeds x m items) table, by loops."""
    n, m = len(x), len(x[0])
    grand = sum(map(sum, x)) / (n * m)
    seed = [sum(row) / m for row in x]
    item = [sum(x[s][i] for s in range(n)) / n for i in range(m)]
    ms_seed = m * sum((v - grand) ** 2 for v in seed) / (n - 1)
    ms_item = n * sum((v - grand) ** 2 for v in item) / (m - 1)
    ms_res = sum((x[s][i] - seed[s] - item[i] + grand) ** 2 for s in range(n) for i in range(m)) / ((n - 1) * (m - 1))
    return grand, ms_seed, ms_item, ms_res


def test_one_benchmark_gives_the_two_way_random_effects_variance_and_satterthwaite_df():
    rng = np.random.default_rng(2)
    n, m = 4, 6
    x = rng.normal(size=(n, 1)) * 0.5 + rng.normal(size=(1, m)) * 0.8 + rng.normal(size=(n, m)) * 0.3
    grand, ms_seed, ms_item, ms_res = _anova_by_hand(x.tolist())
    assert ms_item > ms_res  # the item component is kept
    mean, se, df = normal_theory.crossed_components([x[None]], np.ones((1, 1)))
    # Var(mean) = (MS_seed + MS_item - MS_res) / (n m): sigma2_seed / n + sigma2_item / m + sigma2_cell / (n m)
    variance = (ms_seed + ms_item - ms_res) / (n * m)
    terms = [(ms_seed / (n * m), n - 1), (ms_item / (n * m), m - 1), (ms_res / (n * m), (n - 1) * (m - 1))]
    satterthwaite = variance**2 / sum(c**2 / f for c, f in terms)
    assert mean[0, 0] == pytest.approx(grand) and se[0, 0] ** 2 == pytest.approx(variance)
    assert df[0, 0] == pytest.approx(max(satterthwaite, n - 1))
    ci = normal_theory.crossed_interval([x[None]], np.ones((1, 1)), 0.95)[0]
    assert ci == pytest.approx(grand + np.array([-1, 1]) * stats.t.ppf(0.975, df[0, 0]) * np.sqrt(variance))


def test_a_negative_item_component_is_truncated_to_the_seed_term():
    # items identical across seeds' noise: MS_item < MS_res, so only the seed means' variance remains
    rng = np.random.default_rng(3)
    x = rng.normal(size=(5, 1)) + rng.normal(size=(5, 8)) * 0.5
    x -= x.mean(axis=0, keepdims=True) - x.mean()  # no item effect at all
    _, ms_seed, ms_item, ms_res = _anova_by_hand(x.tolist())
    assert ms_item < ms_res
    _, se, df = normal_theory.crossed_components([x[None]], np.ones((1, 1)))
    assert se[0, 0] ** 2 == pytest.approx(ms_seed / (5 * 8)) and df[0, 0] == pytest.approx(4)


def test_a_weighted_summary_combines_seed_means_across_benchmarks_and_item_terms_per_benchmark():
    rng = np.random.default_rng(4)
    n = 6
    a = rng.normal(size=(n, 1)) * 0.3 + rng.normal(size=(1, 5)) + rng.normal(size=(n, 5)) * 0.2
    b = rng.normal(size=(n, 1)) * 0.3 + rng.normal(size=(1, 9)) * 0.5 + rng.normal(size=(n, 9)) * 0.2
    w = np.array([[0.25, 0.75]])
    mean, se, _ = normal_theory.crossed_components([a[None], b[None]], w)
    per_seed = 0.25 * a.mean(axis=1) + 0.75 * b.mean(axis=1)
    item_terms = 0
    for weight, x in ((0.25, a), (0.75, b)):
        _, _, ms_item, ms_res = _anova_by_hand(x.tolist())
        item_terms += weight**2 * max(ms_item - ms_res, 0) / (n * x.shape[1])
    assert mean[0, 0] == pytest.approx(per_seed.mean())
    assert se[0, 0] ** 2 == pytest.approx(per_seed.var(ddof=1) / n + item_terms)


def test_a_benchmark_with_one_item_adds_no_item_term_and_its_seed_means_still_count():
    """With one item a benchmark's item variance cannot be estimated (NaN mean squares): its seed means enter the
    measure's seed term and nothing enters the item term, by hand."""
    rng = np.random.default_rng(5)
    n = 5
    a = rng.normal(size=(n, 1)) * 0.3 + rng.normal(size=(1, 7)) + rng.normal(size=(n, 7)) * 0.2
    b = rng.normal(size=(n, 1))  # one item
    assert np.isnan(normal_theory.item_mean_squares([b[None]])[0]).all()
    w = np.array([[0.5, 0.5]])
    mean, se, df = normal_theory.crossed_components([a[None], b[None]], w)
    per_seed = 0.5 * a.mean(axis=1) + 0.5 * b[:, 0]
    _, _, ms_item, ms_res = _anova_by_hand(a.tolist())
    assert mean[0, 0] == pytest.approx(per_seed.mean())
    assert se[0, 0] ** 2 == pytest.approx(per_seed.var(ddof=1) / n + 0.25 * max(ms_item - ms_res, 0) / (n * 7))
    assert np.isfinite(df[0, 0]) and df[0, 0] >= n - 1


@pytest.mark.parametrize("n", [3, 8])
def test_crossed_interval_covers_the_population_mean_over_new_seeds_and_items(n):
    # known truth: population mean 0; item effects dominate, so a seeds-only interval would not cover
    rng = np.random.default_rng(n)
    reps, items = 1500, 60
    d = (
        0.01 * rng.normal(size=(reps, n, 1))
        + 0.15 * rng.normal(size=(reps, 1, items))
        + 0.3 * rng.normal(size=(reps, n, items))
    )
    ci = normal_theory.crossed_interval([d], np.ones((1, 1)), 0.95)
    covered = np.mean((ci[:, 0] <= 0) & (0 <= ci[:, 1]))
    assert abs(covered - 0.95) < 0.025  # 4.5 Monte-Carlo sd; e2d0814's pigeonhole bootstrap: 0.98 to 1.00
