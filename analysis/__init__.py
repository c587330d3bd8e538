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
- the computation: :mod:`~armlab.analysis.summaries` (benchmark accuracy and the summaries),
  :mod:`~armlab.analysis.paired` (every comparison as one table), :mod:`~armlab.analysis.improvement`,
  :mod:`~armlab.analysis.profiles`, :mod:`~armlab.analysis.sensitivity`, :mod:`~armlab.analysis.sampled` (k
  answers per item), :mod:`~armlab.analysis.waves` (the sequential design's looks replayed and checked against
  their record), :mod:`~armlab.analysis.predictions` (preregistered predictions and their lock, read),
  :mod:`~armlab.analysis.curves` (learning curves), :mod:`~armlab.analysis.validity` with
  :mod:`~armlab.analysis.validity_measured` (the measured validity the wording reads),
  :mod:`~armlab.analysis.planning` (``armlab plan``), :mod:`~armlab.analysis.synthetic` (simulations with known truth);
- the outputs: :mod:`~armlab.analysis.outputs` (the catalogue of analysis tables, for the writer and the reader),
  :mod:`~armlab.analysis.pipeline` (``run_analysis`` / ``write_outputs``), :mod:`~armlab.analysis.tables`
  (Markdown and LaTeX tables, verdict lines);
- the report, :mod:`armlab.analysis.reporting`: ``figures`` and ``report`` (the HTML report and its sections),
  above everything it reads;
- the entry points: :mod:`~armlab.analysis.commands` (``armlab analyze``, ``report``, ``curves``, ``plan``; see
  :mod:`armlab.cli`) and :mod:`~armlab.analysis.api` (``compare`` on a DataFrame, ``from_score_arrays``).

The package namespace stays light (the CLI imports it before knowing the subcommand); import the modules above
directly.
"""

from armlab.analysis.errors import AnalysisInputError

__all__ = ["AnalysisInputError"]
