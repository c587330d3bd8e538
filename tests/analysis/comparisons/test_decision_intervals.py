"""The interval shown beside a verdict excludes 0 exactly when the verdict's test rejects (issue 26, item 2).

Before, the headline printed a paired t interval in the sign-flip column where the sign-flip set is
unbounded ("−6.43 to −5.19 · inconclusive" on a 2-seed table), and the 95% interval beside a Holm
verdict could exclude 0 for an arm Holm did not reject. The decision interval is checked against
statsmodels' Holm and against enumeration of the exact test, on random families with effects.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from armlab.analysis import tables
from armlab.analysis.comparisons import paired
from armlab.analysis.config import parse_config
from armlab.analysis.stats import resampling


def _config(arms, **analysis):
    return parse_config(
        {
            "experiment": "x",
            "comparisons": [{"family": "f", "reference": "ref", "arms": arms}],
            # power (the MDE and seeds needed) is not what these tests check: its simulation at 100 samples
            "analysis": {"resamples": 200, "power_replicates": 100, **analysis},
        }
    )


def _values(diffs: dict[str, np.ndarray], measures=("primary", "other")) -> pd.DataFrame:
    """Runs (arm, seed) x measures; the reference at 0.5, each arm at 0.5 + its differences."""
    n = len(next(iter(diffs.values())))
    frames = {"ref": np.full((n, len(measures)), 0.5), **{a: 0.5 + d for a, d in diffs.items()}}
    index = pd.MultiIndex.from_tuples([(a, s) for a in frames for s in range(n)], names=["arm", "seed"])
    return pd.DataFrame(np.concatenate(list(frames.values())), index=index, columns=list(measures))


def _compare(diffs, **analysis):
    cfg = _config(list(diffs), **analysis)
    levels = {"primary": "summary", "other": "summary"}
    table, _ = paired.compare(_values(diffs), cfg.comparisons, cfg.settings, levels=levels)
    return table


@pytest.mark.parametrize("p, expected", [([0.001, 0.2, 0.04], 1 - 0.05 / 2), ([0.001, 0.01], 0.95), ([0.3], 0.95)])
def test_the_decision_level_is_alpha_over_the_arms_holm_did_not_reject(p, expected):
    reject = multipletests(p, alpha=0.05, method="holm")[0]
    assert paired.decision_confidence(np.array(p), reject, 0.05) == pytest.approx(expected)
    # and at that level an unadjusted test agrees with Holm on every arm
    assert ((np.array(p) <= 1 - expected) == reject).all()


def test_random_families_intervals_exclude_zero_exactly_when_holm_rejects(heap_frozen):
    rng = np.random.default_rng(26)
    checked = {"rejected": 0, "kept": 0, "gate closed": 0}
    for trial in range(25):  # 25 random families: 100+ rows, each case at least 30 times (60 took 30 s)
        n, k = int(rng.integers(6, 11)), int(rng.integers(1, 5))
        effects = rng.choice([0.0, 0.01, 0.03], size=k)
        diffs = {f"a{i}": effects[i] + 0.01 * rng.standard_normal((n, 2)) for i in range(k)}
        first = _compare(diffs)  # sign_flip rows only: the default shows no other interval
        tested = first["decision_level"].notna()
        excludes = (first["decision_low"] > 0) | (first["decision_high"] < 0)
        assert (excludes[tested] == first.loc[tested, "reject"].astype(bool)).all(), trial
        primary = first[first["stage"] == "primary"]
        assert (primary["reject"].to_numpy() == multipletests(primary["p_value"], method="holm")[0]).all()
        gate_open = primary["reject"].all()
        secondary = first[first["stage"] == "secondary"]
        assert secondary["decision_level"].notna().all() == gate_open
        checked["rejected"] += int(first.loc[tested, "reject"].sum())
        checked["kept"] += int((~first.loc[tested, "reject"].astype(bool)).sum())
        checked["gate closed"] += int((~tested).sum())
    assert min(checked.values()) > 20, checked  # every case was exercised


def test_the_decision_interval_is_the_enumerated_sign_flip_interval_at_that_level():
    rng = np.random.default_rng(7)
    diffs = {"big": 0.03 + 0.01 * rng.standard_normal((8, 2)), "none": 0.01 * rng.standard_normal((8, 2))}
    first = _compare(diffs).set_index(["measure", "arm"])
    row = first.loc[("primary", "none")]
    # Holm rejected "big" only (or nothing): enumerate the 2^8 subset means by hand at the reported level
    d = diffs["none"][:, 0]
    signs = np.array(np.meshgrid(*[[0, 1]] * 8)).reshape(8, -1).T.astype(bool)[1:]
    means = np.sort((signs * d).sum(axis=1) / signs.sum(axis=1))
    k = int(np.floor((1 - row["decision_level"]) / 2 * 2**8))
    assert k >= 1 and [row["decision_low"], row["decision_high"]] == pytest.approx([means[k - 1], means[-k]])
    expected = resampling.sign_flip(d[None], confidence=row["decision_level"])["ci"][0]
    assert [row["decision_low"], row["decision_high"]] == pytest.approx(expected)


def test_two_seeds_show_unbounded_not_a_t_interval_beside_inconclusive():
    # the 2-seed "GRPO at 1B scale" case: a t interval of -6.43 to -5.19 was shown beside "inconclusive"
    diffs = {"arm": np.array([[-0.0590, -0.0590], [-0.0696, -0.0696]])}
    table = _compare(diffs, ci_methods=["t"])
    row = table.iloc[0]
    assert [row["decision_low"], row["decision_high"]] == [-np.inf, np.inf]
    shown = tables.comparison_display(table).iloc[0]
    assert shown["verdict"] == "inconclusive" and shown[tables.DECISION_COLUMN] == "unbounded (95%)"
    d = diffs["arm"][:, 0]
    low, high = 100 * np.array(stats.t.interval(0.95, 1, loc=d.mean(), scale=d.std(ddof=1) / np.sqrt(2)))
    # the t interval, asked for, sits in its own column under its own name
    assert shown["95% CI sign_flip"] == "unbounded" and shown["95% CI t"] == f"[{low:+.2f}, {high:+.2f}]"
