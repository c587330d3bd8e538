"""armlab evaluation: lm-eval task configs for the benchmarks, the builtin-policy LM adapter, tidy per-item scores."""
