# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 · How many seeds?
#
# Power planning from an existing experiment: the spread of its paired differences (arm − reference,
# seed by seed) says how small an effect a given number of seeds can detect, and how many seeds an
# effect of interest needs. Two limits apply (see `analysis/stats/power.py`):
#
# 1. the exact sign-flip test over n seeds cannot give p below 2/2ⁿ, and Holm asks the best
#    comparison of a family of k for α/k, so below a floor of seeds nothing can be significant;
# 2. above that floor, the sign-flip test's own power (simulated for normal differences up to 14
#    seeds, the t-test's beyond) at the observed standard deviation, which itself is uncertain
#    at few seeds: `mde_low`–`mde_high` in the comparisons table is its range.
#
# Reads the same environment variables as notebook 01 (`ARMLAB_CONFIG`, `ARMLAB_SCORES`).

# %%
# %matplotlib inline
import os
from pathlib import Path

import numpy as np
import pandas as pd

from armlab.analysis import config, inputs, pipeline
from armlab.analysis.reporting import figures, sections
from armlab.analysis.stats import power
from armlab.analysis.stats.resampling import min_sign_flip_pvalue

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "pyproject.toml").exists())
CONFIG = Path(os.environ.get("ARMLAB_CONFIG", ROOT / "config" / "config.yaml"))
SCORES = os.environ.get("ARMLAB_SCORES", str(ROOT / "results" / "demo" / "scores.parquet")) or None
SEEDS = [3, 4, 5, 6, 7, 8, 10, 12, 16, 20]
EFFECTS = [0.005, 0.01, 0.02, 0.03]  # score units: 0.01 is one point

# %% [markdown]
# ## The observed spread

# %%
cfg = config.load_config(CONFIG)
settings = cfg.settings
result = pipeline.run_analysis(cfg, *inputs.load_scores(cfg, SCORES))
rows = sections.primary_rows(result.comparisons)
k = rows.groupby("family")["arm"].transform("size")
rows = rows.assign(k=k, first_holm_level=settings.alpha / k, sd_points=(100 * rows["sd_diff"]).round(3))
rows[["family", "arm", "n_seeds", "k", "first_holm_level", "sd_points"]]

# %% [markdown]
# ## The floor: the fewest seeds that can reach α/k at all

# %%
floor = pd.DataFrame(
    {
        "seeds": SEEDS,
        "smallest p": min_sign_flip_pvalue(
            np.array(SEEDS), max_exact=settings.exact_max_seeds, resamples=settings.sign_flip_resamples
        ),
    }
)
for k_family in sorted(rows["k"].unique()):
    floor[f"reaches α/{k_family} = {settings.alpha / k_family:.3g}"] = floor["smallest p"] <= settings.alpha / k_family
floor

# %% [markdown]
# ## Minimum detectable effect (points) by number of seeds, at the observed spread
#
# `inf`: with that many seeds the sign-flip test cannot reach α/k, whatever the effect.

# %%
limits = settings.power_options()
sd, level = rows["sd_diff"].to_numpy(), rows["first_holm_level"].to_numpy()
index = pd.MultiIndex.from_frame(rows[["family", "arm"]])
mde = pd.DataFrame({n: 100 * power.minimum_detectable_effect(sd, n, level=level, **limits) for n in SEEDS}, index=index)
mde.round(2)

# %% [markdown]
# ## Seeds needed for an effect of interest

# %%
pd.DataFrame({f"{100 * e:g} pt": power.seeds_needed(e, sd, level=level, **limits) for e in EFFECTS}, index=index)

# %%
figures.power_plot(result.comparisons, settings, figures.arm_styles(cfg.compared_arms))

# %% [markdown]
# ## In plain words

# %%
for family, group in rows.groupby("family", sort=False):
    print(f"{family}: {sections.precision_sentence(group, settings)}")
