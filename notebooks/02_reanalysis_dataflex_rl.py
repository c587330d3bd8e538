# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 02 · DataFlex-RL's released table, re-analysed
#
# DataFlex-RL released one accuracy per run and benchmark (`results/all_runs_171.csv` of
# haolpku/DataFlex-RL, Apache-2.0): 171 runs × 12 benchmarks, three seeds per method. The config
# `config/experiments/dataflex_rl_released.yaml` reads it as a wide CSV (item = `"*"`) and asks
# the question of its paper: does any data-selection or reweighting method beat the baseline,
# and does any adaptive mixer beat the static mixture?
#
# Point `ARMLAB_DATAFLEX_CSV` at your copy of the table (default: `../shared/data/dataflex-rl/`
# next to this repository; the tests use a synthetic table of the same layout).

# %%
# %matplotlib inline
import os
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display

from armlab.analysis import config, pipeline, tables
from armlab.analysis.reporting import figures, sections

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "pyproject.toml").exists())
CONFIG = ROOT / "config" / "experiments" / "dataflex_rl_released.yaml"
CSV = Path(os.environ.get("ARMLAB_DATAFLEX_CSV", ROOT.parent / "shared" / "data" / "dataflex-rl" / "all_runs_171.csv"))
if not CSV.exists():
    import runpy
    import tempfile

    display(
        Markdown(
            f"**DataFlex-RL's table is not at `{CSV}`.** Download `results/all_runs_171.csv` from the DataFlex-RL "
            "repository (haolpku/DataFlex-RL) and set `ARMLAB_DATAFLEX_CSV` to its path (or put it at "
            "`../shared/data/dataflex-rl/all_runs_171.csv` beside this repository). Until then the cells below run on "
            "a **synthetic** table of the same layout (`tests/fixtures/report/build.py`): "
            "its numbers are not DataFlex-RL's."
        )
    )
    CSV = runpy.run_path(str(ROOT / "tests" / "fixtures" / "report" / "build.py"))["write_wide_csv"](
        Path(tempfile.mkdtemp(prefix="armlab-synthetic-")) / "all_runs_synthetic.csv"
    )

# %% [markdown]
# ## The table and what is compared

# %%
cfg = config.load_config(CONFIG, [f"input.path={CSV}"])
table = pd.read_csv(CSV)
print(f"{len(table)} runs in the file; columns: {', '.join(table.columns[:8])}, ...")
for comparison in cfg.comparisons:
    print(f"family {comparison.family}: {len(comparison.arms)} arms vs {comparison.reference}")

# %% [markdown]
# ## The analysis
#
# The converter keeps the rows the config's filters select (the 7B main round and the mixer
# campaign), turns percent into fractions, and the analysis runs as on our own results.

# %%
result = pipeline.analyze(cfg)
runs = result.summaries.reset_index().groupby("arm")["seed"].apply(lambda s: ", ".join(map(str, sorted(s))))
print(f"{len(runs)} arms; seeds per arm: {sorted(set(runs))}")

# %% [markdown]
# ## Verdicts in plain words
#
# Three seeds give an exact sign-flip test 2³ = 8 sign patterns, so no p-value can go below
# 0.25, and after Holm over eight methods nothing can be significant at all. The verdicts say so
# rather than "not significant".

# %%
rows = sections.primary_rows(result.comparisons)
for family, group in rows.groupby("family", sort=False):
    sentences = [*sections.family_headline(group, cfg.settings), sections.precision_sentence(group, cfg.settings)]
    display(Markdown(f"**{family}**\n\n" + "\n".join(f"- {s}" for s in sentences)))

# %%
display(Markdown(tables.comparisons_markdown(result.comparisons[result.comparisons["level"] == "summary"])))

# %% [markdown]
# ## Forest plots

# %%
styles = figures.arm_styles(cfg.compared_arms, [c.reference for c in cfg.comparisons])
for _, group in result.comparisons.groupby("family", sort=False):
    display(figures.forest_plot(group, cfg.settings.alpha, styles))

# %% [markdown]
# ## Does the ranking depend on the summary?
#
# The paper ranks methods by a math-heavy six-benchmark summary. Against the domain-balanced
# average the order changes; on the released table the Spearman correlation over the nine
# main-round methods is −1/3.

# %%
sensitivity = result.correlations
sensitivity[sensitivity["summary_b"] == "six_benchmark"].round(3)

# %%
figures.ranking_plot(result.rankings, styles)

# %% [markdown]
# ## Per benchmark, and how many seeds would be needed

# %%
figures.benchmark_heatmap(result.comparisons, cfg.benchmarks)

# %%
figures.power_plot(result.comparisons, cfg.settings, styles)

# %%
target = f"seeds for {100 * cfg.settings.power_effect:g} pt at power {cfg.settings.power:g}"
needed = rows[["family", "arm", "sd_diff", "seeds_needed"]].assign(sd_diff=(100 * rows["sd_diff"]).round(2))
needed.rename(columns={"sd_diff": "sd of differences (pts)", "seeds_needed": target})

# %% [markdown]
# There are no training logs for these runs: the released table has accuracies only, so the
# report built from it (`make report-dataflex`) says so instead of drawing training curves.
