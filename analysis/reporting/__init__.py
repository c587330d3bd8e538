"""The report: what ``armlab report`` makes of an analysis, above the analysis it reads.

- :mod:`~armlab.analysis.reporting.report`: the one-file HTML report, its sections (:data:`~.report.SECTIONS`)
  and the run folders it reads;
- :mod:`~armlab.analysis.reporting.figures`: every figure, rendered to SVG and PNG.

The tables it shares with the analysis's own Markdown and LaTeX outputs are :mod:`armlab.analysis.tables`.
Nothing below imports this room (tests/test_import_graph.py).
"""
