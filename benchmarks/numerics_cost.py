"""What portable numerics cost: the trainer benchmark under `numerics: portable` and `native`, side by side.

Each repeat runs benchmarks/trainer_bench.py once per mode, alternately, each in a fresh process (torch and MKL read
the kernel variables once per process), and the medians over repeats are compared: seconds per GRPO step of the
builtin trainer and of TRL's GRPOTrainer, and portable's over native's.

    .venv/bin/python benchmarks/numerics_cost.py --repeats 5 --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from armlab import numerics

BENCH = Path(__file__).with_name("trainer_bench.py")


def one_run(mode: str, args) -> dict:
    """trainer_bench.py once under ``mode``, in a process whose environment pins nothing beforehand."""
    env = {k: v for k, v in os.environ.items() if k not in numerics.RECORDED_VARIABLES}
    command = [sys.executable, str(BENCH), "--numerics", mode, "--repeats", "1", "--steps", str(args.steps)]
    command += ["--threads", str(args.threads)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout[done.stdout.rindex('{\n  "shape"') :])  # its last lines: the result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    runs: dict[str, list[dict]] = {mode: [] for mode in numerics.MODES}
    for repeat in range(args.repeats):
        for mode in numerics.MODES:
            runs[mode].append(one_run(mode, args))
            print(f"repeat {repeat + 1}/{args.repeats} {mode}: builtin {runs[mode][-1]['builtin_s_per_step']} s/step, "
                  f"TRL {runs[mode][-1]['trl_s_per_step']} s/step", flush=True)  # fmt: skip
    result = {mode: {"class": found[-1]["numerics"]} for mode, found in runs.items()}
    for trainer in ("builtin", "trl"):
        medians = {mode: statistics.median(r[f"{trainer}_s_per_step"] for r in found) for mode, found in runs.items()}
        for mode, median in medians.items():
            result[mode][f"{trainer}_s_per_step_median"] = round(median, 4)
        result[f"{trainer}_portable_over_native"] = round(medians["portable"] / medians["native"], 3)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
