"""Training backends other than the builtin GRPO loop (``training/train.py``): see DESIGN.md, "Backends"."""
