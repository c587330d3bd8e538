"""Which arm is better than its reference, seed by seed? The per-run summaries (``summaries``: benchmark accuracy
and the weighted summaries), the paired comparisons of every family with their tests, intervals, Holm and verdicts
(``paired``), the paired probability of improvement (``improvement``) and rliable's performance profiles
(``profiles``).
"""
