"""What can a design decide, and how far can its verdicts be trusted? The plan printed before any seed is spent:
the smallest attainable p, the detectable effects and the seeds needed, the wall time (``planning``, ``armlab
plan``); the measured coverage and error rates of the intervals and verdicts at each seed count and what they
make the report say (``validity``, reading the generated ``validity_measured``); and the synthetic data with known
truth and the simulations that measure them (``synthetic``).
"""
