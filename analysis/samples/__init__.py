"""What do the k sampled answers per item say? Each run's avg@k and pass@k, the base policy's pass@k curve, the
sampling noise and the allocation advice (``sampled``), each benchmark's pass@k and maj@k compared like accuracy,
the table RLVR papers print (``per_benchmark``), and the share of unparsed answers compared seed by seed
(``unparsed``).
"""
