"""The statistics: pure functions over arrays, with their options as keyword arguments, never the analysis
settings (:meth:`armlab.analysis.settings.Settings.interval_options` and ``power_options`` give a configured
analysis's). They import nothing of the analysis above them but its errors and defaults
(tests/test_import_graph.py).

- :mod:`~armlab.analysis.stats.resampling`: exact sign-flip and permutation tests, their intervals, the bootstrap
- :mod:`~armlab.analysis.stats.intervals`: the interval methods by name (registries)
- :mod:`~armlab.analysis.stats.multiplicity`: Holm and the gatekept families
- :mod:`~armlab.analysis.stats.normal_theory`: t intervals, TOST, variance components
- :mod:`~armlab.analysis.stats.power`: minimum detectable effect and seeds needed
- :mod:`~armlab.analysis.stats.sequential`: the group-sequential design and its boundaries
- :mod:`~armlab.analysis.stats.sampling`: the sampling noise of k answers per item
- :mod:`~armlab.analysis.stats.statistics`: per-run statistics over benchmarks (registry)
"""
