"""armlab's statistical analysis: seed-matched paired comparisons of arms.

It reads only the tidy scores table of docs/contracts.md. Modules, in the order data
flows through them:

- :mod:`analysis.config` -- the config's ``comparisons`` and ``analysis`` settings;
- :mod:`analysis.io` -- tidy files, converters (lm-eval output, wide CSV), validation;
- :mod:`analysis.summaries` -- benchmark accuracy, domain-balanced / flat / subset summaries;
- :mod:`analysis.statistics` -- the registry of per-run statistics (rliable's IQM, optimality gap);
- :mod:`analysis.resampling` -- vectorized bootstrap intervals, exact sign-flip test;
- :mod:`analysis.intervals` -- the registry of interval methods (``analysis.ci_methods``, ``crossed_methods``);
- :mod:`analysis.multiplicity` -- Holm, the smallest p a design can reach;
- :mod:`analysis.normal_theory` -- paired t interval and t-TOST, the crossed variance-components interval;
- :mod:`analysis.power` -- equivalence, minimum detectable effect, seeds needed;
- :mod:`analysis.validity` -- the measured validity table (coverage, size, FWER, power) the wording reads;
- :mod:`analysis.paired` -- every comparison of a config as one table;
- :mod:`analysis.improvement` -- the paired probability of improvement;
- :mod:`analysis.profiles` -- performance profiles;
- :mod:`analysis.sensitivity` -- rankings of arms and rank correlations between summaries;
- :mod:`analysis.tables` -- Markdown and LaTeX tables, the report;
- :mod:`analysis.pipeline` -- ``analyze`` / ``run_analysis`` / ``write_outputs``;
- :mod:`analysis.commands` -- the ``armlab analyze`` and ``armlab report`` subcommands (see :mod:`armlab_cli`).

The package namespace stays light (the CLI imports it before knowing the
subcommand); import the modules above directly.
"""

from analysis.errors import AnalysisInputError

__all__ = ["AnalysisInputError"]
