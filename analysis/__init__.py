"""armlab's statistical analysis: seed-matched paired comparisons of arms.

It reads only the tidy scores table of docs/contracts.md. Modules, in the order data
flows through them:

- :mod:`armlab.analysis.config` -- the config's ``comparisons`` and ``analysis`` settings;
- :mod:`armlab.analysis.io` -- tidy files, converters (lm-eval output, wide CSV), validation;
- :mod:`armlab.analysis.summaries` -- benchmark accuracy, domain-balanced / flat / subset summaries;
- :mod:`armlab.analysis.statistics` -- the registry of per-run statistics (rliable's IQM, optimality gap);
- :mod:`armlab.analysis.resampling` -- vectorized bootstrap intervals, exact sign-flip test;
- :mod:`armlab.analysis.intervals` -- the registry of interval methods (``analysis.ci_methods``, ``crossed_methods``);
- :mod:`armlab.analysis.multiplicity` -- Holm, the smallest p a design can reach;
- :mod:`armlab.analysis.normal_theory` -- paired t interval and t-TOST, the crossed variance-components interval;
- :mod:`armlab.analysis.power` -- equivalence, minimum detectable effect, seeds needed;
- :mod:`armlab.analysis.validity` -- the measured validity table (coverage, size, FWER, power) the wording reads;
- :mod:`armlab.analysis.paired` -- every comparison of a config as one table;
- :mod:`armlab.analysis.improvement` -- the paired probability of improvement;
- :mod:`armlab.analysis.profiles` -- performance profiles;
- :mod:`armlab.analysis.sensitivity` -- rankings of arms and rank correlations between summaries;
- :mod:`armlab.analysis.tables` -- Markdown and LaTeX tables, the report;
- :mod:`armlab.analysis.pipeline` -- ``analyze`` / ``run_analysis`` / ``write_outputs``;
- :mod:`armlab.analysis.commands` -- the ``armlab analyze`` and ``armlab report`` subcommands (see :mod:`armlab.cli`).
- :mod:`armlab.analysis.api` -- the Python API: ``compare`` on a DataFrame, ``from_score_arrays`` (rliable-style).

The package namespace stays light (the CLI imports it before knowing the
subcommand); import the modules above directly.
"""

from armlab.analysis.errors import AnalysisInputError

__all__ = ["AnalysisInputError"]
