"""armlab training: tasks and verifiers, the tiny policy, estimators, data policies and the GRPO trainer."""
