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
# # 01 · Results overview
#
# An experiment's tidy scores, walked through with the functions of `analysis/`, step by step:
# what was run, the per-run summaries, the paired comparisons with their verdicts, the figures of
# the report, and the LaTeX table for a paper. `armlab analyze` and `armlab report` do the same in
# one command each; this notebook shows the pieces.
#
# By default it reads the demo (`make demo` writes `results/demo`). Point it at another
# experiment with the environment variables `ARMLAB_CONFIG`, `ARMLAB_SCORES` and `ARMLAB_RUNS`
# (the tests point them at a small synthetic fixture). Results converted from elsewhere (a wide
# CSV, lm-eval logs) work the same: leave `ARMLAB_SCORES` empty to use the config's `input:`
# section, and `ARMLAB_RUNS` empty when there are no training logs.

# %%
# %matplotlib inline
import os
from pathlib import Path

from IPython.display import Markdown, display

from armlab.analysis import api, config, inputs, pipeline, tables
from armlab.analysis.comparisons import summaries
from armlab.analysis.reporting import figures, read, sections

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "pyproject.toml").exists())
CONFIG = Path(os.environ.get("ARMLAB_CONFIG", ROOT / "config" / "config.yaml"))
SCORES = os.environ.get("ARMLAB_SCORES", str(ROOT / "results" / "demo" / "scores.parquet")) or None
RUNS = os.environ.get("ARMLAB_RUNS", str(ROOT / "results" / "demo" / "runs")) or None

# %% [markdown]
# ## The scores
#
# One row per scored item: `experiment, arm, seed, benchmark, domain, item, score` (the contract
# in docs/contracts.md). The config says which arms are compared with which reference.

# %%
cfg = config.load_config(CONFIG)
scores, source = inputs.load_scores(cfg, SCORES)
print(source)
print(f"{len(scores)} rows; {scores['benchmark'].nunique()} benchmarks in {scores['domain'].nunique()} domains")
scores.groupby(["arm", "seed"]).size().unstack("seed")

# %%
for comparison in cfg.comparisons:
    print(f"family {comparison.family}: {', '.join(comparison.arms)} vs {comparison.reference}")

# %% [markdown]
# ## Summaries per run
#
# Benchmark accuracy is the mean item score of a run; the primary summary is the domain-balanced
# average (mean over domains of the mean over each domain's benchmarks), `flat` the plain mean.

# %%
accuracy = summaries.benchmark_accuracy(scores)
weights = summaries.summary_weights(summaries.benchmark_domains(scores), cfg.settings.subsets)
per_run = summaries.summarize(accuracy, weights)
(100 * per_run.groupby(level="arm").agg(["mean", "std"])).round(2)

# %% [markdown]
# ## Paired comparisons
#
# `run_analysis` validates the scores, pairs every arm with its reference seed by seed, and
# computes bootstrap intervals, exact sign-flip p-values, Holm within each family, equivalence and
# power. The verdicts in plain words come first, then the table.

# %%
result = pipeline.run_analysis(cfg, scores, source)
rows = sections.primary_rows(result.comparisons)
for family, group in rows.groupby("family", sort=False):
    sentences = [*sections.family_headline(group, cfg.settings), sections.precision_sentence(group, cfg.settings)]
    display(Markdown(f"**{family}**\n\n" + "\n".join(f"- {s}" for s in sentences)))

# %%
display(Markdown(tables.comparisons_markdown(result.comparisons[result.comparisons["level"] == "summary"])))

# %% [markdown]
# The config's families and analysis settings in one call on the DataFrame, with the Python API the README
# documents (`armlab.analysis.api`). It takes no sequential design, predictions or job times, so under a
# sequential design (whose arms ran different seeds) this cell says so instead.

# %%
raw = config.load_raw(CONFIG)
if cfg.design is None:
    print("\n".join(api.verdicts(api.compare(scores, comparisons=raw["comparisons"], analysis=raw.get("analysis")))))
else:
    print("a sequential design, which compare() does not take: its verdicts are in the report's Sequential section")

# %%
for note in result.notes:
    print("-", note)

# %% [markdown]
# ## Figures
#
# The same figures as the report, one style for all. A forest plot per family: the paired
# difference with its interval per arm; filled markers are Holm-significant, diamonds equivalent
# within the margin (grey band).

# %%
references = [c.reference for c in cfg.comparisons]
styles = figures.arm_styles(cfg.compared_arms, references)
for _, group in result.comparisons.groupby("family", sort=False):
    display(figures.forest_plot(group, cfg.settings.alpha, styles))

# %%
figures.benchmark_heatmap(result.comparisons, cfg.benchmarks)

# %%
figures.ranking_plot(result.rankings, styles)

# %%
figures.power_plot(result.comparisons, cfg.settings, styles)

# %% [markdown]
# Training curves need the runs' step logs, which only our own experiments have.

# %%
runs = read.read_runs(RUNS) if RUNS and Path(RUNS).is_dir() else None
if runs is None:
    print("No training logs: these results come from elsewhere.")
else:
    display(figures.training_curves(runs.steps, styles))

# %% [markdown]
# ## A table for the paper
#
# Arms as rows; Δ, interval, p, Holm p and verdict as columns; the best values in bold (booktabs).

# %%
first = result.comparisons[
    (result.comparisons["family"] == cfg.comparisons[0].family) & (result.comparisons["level"] == "summary")
]
print(tables.latex_table(first))
