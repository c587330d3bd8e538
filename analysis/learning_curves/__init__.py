"""How do the arms compare over training, and what will the final difference be? Accuracy per (arm, seed,
step) with the paired difference at every step and its simultaneous band (``curves``, ``armlab curves``), and the
saturating fits of each run's curve with forecasts of the final paired difference from the first part of training
(``forecasts``).
"""
