"""Performance profiles: the share of an arm's runs that score above each threshold, with a band over seeds.

rliable's score distribution (Agarwal et al. 2021, "Deep RL at the Edge of
the Statistical Precipice", NeurIPS; ``rliable.library.run_score_deviation``):
for an arm with n seeds and B benchmarks, the profile at tau is the share of
its n x B benchmark accuracies above tau, ``mean(scores > tau)``. A profile
that lies above another everywhere is better for every threshold (stochastic
dominance). The band is the percentile bootstrap over seeds
(:mod:`armlab.analysis.stats.intervals`, the comparisons' resamples): rliable resamples
runs within each task, armlab whole seeds, which keeps a seed's benchmarks
together. Like every percentile interval over few seeds it is too narrow
(about 75% coverage at 3 seeds for a nominal 95%, analysis/README.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from armlab.analysis.stats import intervals

if TYPE_CHECKING:
    from armlab.analysis.settings import Settings

THRESHOLDS = np.arange(101) / 100  # tau = 0, 0.01, ..., 1 in score units, each the double nearest k / 100
BAND = "percentile"
COLUMNS = ["arm", "tau", "fraction", "ci_low", "ci_high", "n_seeds", "ci_method", "ci_level"]


def performance_profiles(
    accuracy: pd.DataFrame, arms: Iterable[str], settings: Settings, thresholds: np.ndarray = THRESHOLDS
) -> pd.DataFrame:
    """The profile of each of ``arms`` at every threshold, with its band (:data:`COLUMNS`).

    ``accuracy`` is runs (index arm, seed) x benchmarks.
    """
    frames = []
    for arm in arms:
        above = accuracy.loc[arm].to_numpy()[:, :, None] > thresholds  # seeds x benchmarks x thresholds
        # thresholds below or above every score give the same row: bootstrap each distinct row once
        distinct, row_of = np.unique(above.mean(axis=1).T, axis=0, return_inverse=True)  # thresholds x seeds
        band, _ = intervals.SEED_METHODS[BAND](intervals.Block(distinct, **settings.interval_options(methods=(BAND,))))
        band = band[row_of.ravel()]
        frames.append(
            pd.DataFrame(
                {
                    "arm": arm,
                    "tau": thresholds,
                    "fraction": above.mean(axis=(0, 1)),
                    "ci_low": band[:, 0],
                    "ci_high": band[:, 1],
                    "n_seeds": len(above),
                    "ci_method": BAND,
                    "ci_level": settings.confidence,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)[COLUMNS]
