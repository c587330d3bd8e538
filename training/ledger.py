"""A training run's compute ledger (ledger.parquet, :data:`armlab.contract.LEDGER`), written by the builtin and TRL
backends alike from the counts of each step."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from armlab.contract import LEDGER, LEDGER_FILE

STEP_COUNTS = ["prompts", "rollout_tokens", "trained_tokens", "gradient_updates", "seconds"]  # per step, as summed


def ledger(counts: pd.DataFrame, n_params: int) -> pd.DataFrame:
    """``step`` and the running totals of ``counts`` (one row per step: :data:`STEP_COUNTS`): prompts rolled out,
    tokens generated (every rollout, refills included), tokens trained (active tokens times update passes),
    gradient updates, trainer seconds, and FLOPs = 2 N per generated token + 6 N per trained token (Kaplan et al.
    2020, sec. 2.1: a forward pass, and a forward with a backward pass; N = the policy's parameters; attention,
    prompt tokens and the reference policy's passes are left out)."""
    totals = counts.sort_values("step")[STEP_COUNTS].cumsum()
    flops = 2.0 * n_params * totals["rollout_tokens"] + 6.0 * n_params * totals["trained_tokens"]
    columns = dict(zip(LEDGER, [*(totals[c] for c in STEP_COUNTS), flops]))
    return pd.DataFrame(
        {"step": counts.sort_values("step")["step"].to_numpy(), **{k: v.to_numpy() for k, v in columns.items()}}
    )


def write_ledger(counts: pd.DataFrame, n_params: int, directory: Path) -> str:
    """Write :func:`ledger` to ``directory``/ledger.parquet; return its name (for the run's manifest)."""
    ledger(counts, n_params).to_parquet(directory / LEDGER_FILE, index=False)
    return LEDGER_FILE
