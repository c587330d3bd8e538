"""Could something other than the method explain the result? The contamination screen of gains on benchmarks
against gains on their procedural twins (``contamination``), numerics as a variance component and the verdicts it
could flip (``numerics_noise``), every verdict under another verifier (``verifier_sensitivity``), the arms' ranking
under each summary (``sensitivity``), and the report card grading the experiment against the minimum standard for
an RLVR claim (``report_card``).
"""
