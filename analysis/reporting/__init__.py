"""The report: what ``armlab report`` makes of an analysis, above the analysis it reads.

- :mod:`~armlab.analysis.reporting.report`: ``armlab report``, the one-file HTML report: its figures, its page;
- :mod:`~armlab.analysis.reporting.sections`: the page's sections, one registry (``SECTIONS``), each a function of a
  ``Page``;
- :mod:`~armlab.analysis.reporting.html`: the HTML pieces the sections are made of;
- :mod:`~armlab.analysis.reporting.read`: what it reads, the analysis folder and the run folders;
- :mod:`~armlab.analysis.reporting.figures`: every figure, rendered to SVG and PNG.

The tables it shares with the analysis's own Markdown and LaTeX outputs are :mod:`armlab.analysis.tables`.
Nothing below imports this room (tests/test_import_graph.py).
"""
