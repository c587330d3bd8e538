"""armlab's statistical analysis: seed-matched paired comparisons of arms.

It reads only the files of docs/contracts.md (the tidy scores table, run folders, lm-eval and verl outputs).
In the order data flows through it:

- the statistics, :mod:`armlab.analysis.stats`: pure functions over arrays with keyword options (exact tests
  and intervals, interval methods by name, Holm, normal theory, power, the sequential design, sampling noise,
  per-run statistics); they import nothing above them but :mod:`~armlab.analysis.errors` (and
  :mod:`armlab.spec`, whose :class:`~armlab.spec.Analysis` holds every default they take);
- the config: :mod:`~armlab.analysis.settings` (the validated ``analysis:`` section, an
  :class:`armlab.spec.Analysis`, and the options it gives the statistics), :mod:`~armlab.analysis.config`
  (``comparisons``, ``analysis``, ``input``, ``predictions``);
- the inputs, :mod:`armlab.analysis.inputs`: one module per format (``tidy``, ``wide_csv``, ``lmeval``, ``verl``)
  behind the registry ``FORMATS``, reading within limits (``reading``), locating runs (``runs``) and
  ``validation``;
- the computation, grouped by the question each part answers (each folder's docstring lists its modules):
  :mod:`armlab.analysis.comparisons` (which arm beats its reference, seed by seed: the summaries, every paired
  comparison as one table, probability of improvement, performance profiles), :mod:`armlab.analysis.samples` (what
  the k answers per item say: avg@k, pass@k and maj@k, unparsed answers), :mod:`armlab.analysis.learning_curves`
  (the comparison over training and forecasts of its end), :mod:`armlab.analysis.design` (what the seeds can decide:
  ``armlab plan``, the measured validity the wording reads, simulations with known truth),
  :mod:`armlab.analysis.screens` (what else could explain a result: contamination, numerics, the grader, the
  summary chosen; the report card); beside them at the root, :mod:`~armlab.analysis.waves` (the sequential design's
  looks replayed and checked against their record) and :mod:`~armlab.analysis.predictions` (preregistered
  predictions and their lock, read);
- the outputs: :mod:`~armlab.analysis.outputs` (the catalogue of analysis tables, for the writer and the reader),
  :mod:`~armlab.analysis.pipeline` (``run_analysis`` / ``write_outputs``), :mod:`~armlab.analysis.tables`
  (Markdown and LaTeX tables, verdict lines);
- the report, :mod:`armlab.analysis.reporting`: ``figures`` and ``report`` (the HTML report and its sections),
  above everything it reads;
- the entry point for Python, :mod:`~armlab.analysis.api` (``compare`` on a DataFrame, ``from_score_arrays``); the
  command line's (``armlab analyze``, ``report``, ``curves``, ``plan``, ``summary``, ``steps``) is
  :mod:`armlab.cli.analysis`.

The package namespace stays light (the CLI imports it before knowing the subcommand); import the modules above
directly.
"""

from armlab.analysis.errors import AnalysisInputError

__all__ = ["AnalysisInputError"]
