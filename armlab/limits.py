"""The sizes a config and its input files may reach unless the config's ``limits:`` section raises them."""

# Sizes a config may not exceed unless its `limits:` section raises them: past these a typo (steps: 10**12)
# would run for days or exhaust memory instead of failing at once.
DEFAULT_LIMITS = {
    "steps": 100_000,  # recipe.steps
    "group_size": 1024,  # recipe.group_size
    "prompts_per_step": 65_536,  # recipe.prompts_per_step
    "updates_per_batch": 64,  # recipe.updates_per_batch
    "max_new_tokens": 4096,  # recipe.max_new_tokens
    "base_steps": 1_000_000,  # base.steps
    "pool_per_benchmark": 1_000_000,  # data.pool_per_benchmark
    "n_items": 100_000,  # benchmarks.<name>.n_items
    "seeds": 1000,  # len(seeds), or seeds.max of a sequential design
    "samples": 4096,  # eval.samples
    "prompt_chars": 65_536,  # a prompt of eval.external or trl.reasoning_gym, and a template's width or precision
    "resamples": 1_000_000,  # analysis.resamples
    "sign_flip_resamples": 10_000_000,  # analysis.sign_flip_resamples
    "exact_max_seeds": 22,  # analysis.exact_max_seeds (2^n sign patterns are enumerated)
    # input files, checked before they are read: a mistaken path (a 1 TB disk image) fails at once
    "input_file_bytes": 8 * 2**30,  # a scores table, CSV or JSON-lines input (verl dump, lm-eval samples)
    "json_file_bytes": 512 * 2**20,  # a JSON file parsed whole (lm-eval results, manifests, locks)
    "input_line_bytes": 64 * 2**20,  # one line of a JSON-lines input
    # a checkpoint trained elsewhere (backend checkpoints), checked before any job: a pattern that names a disk
    # instead of a model folder fails at once instead of hashing it
    "checkpoint_bytes": 2**40,  # all the files of one checkpoint folder (1 TiB)
    "checkpoint_files": 10_000,  # the files of one checkpoint folder
}
