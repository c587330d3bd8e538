"""The sha256 of every shipped config as the workflow resolves it, and of what each stage reads of it.

    python ci/config_hashes.py > hashes.json              # in a checkout (its .venv), from the repository root
    python ci/config_hashes.py --compare old.json new.json

For each workflow config (config/config.yaml, config/experiments/*.yaml, tests/fixtures/*.yaml): the resolved
config (validated, defaults filled), every stage view (data, base, eval, analysis, and one training view per arm:
what a job reads and Snakemake reruns on), the analysis's validated settings and each arm's recipe as its manifest
records it. An analysis-only config (with ``input:``) gives its analysis settings. Two checkouts that agree on every
hash run every shipped experiment alike; ``--compare`` lists the differences and exits 1 on any.
"""

import argparse
import dataclasses
import glob
import hashlib
import json
import sys


def _sha(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=list).encode()).hexdigest()


def hashes() -> dict:
    from armlab.analysis.config import parse_config
    from armlab.configfile import load_configs
    from armlab.experiment.stages import stage_config
    from armlab.experiment.validate import validate_config
    from armlab.training.recipe import resolve_arm

    out = {}
    paths = [
        "config/config.yaml",
        *sorted(glob.glob("config/experiments/*.yaml")),
        *sorted(glob.glob("tests/fixtures/*.yaml")),
    ]
    for path in paths:
        raw = load_configs([path])
        entry = {}
        if "input" in raw:  # read by armlab analyze, not run by the workflow
            entry["analysis settings"] = _sha(dataclasses.asdict(parse_config(raw, source=path).settings))
        else:
            config = validate_config(raw, source=path)
            entry["resolved"] = _sha(config)
            for stage in ("data", "base", "eval", "analysis"):
                entry[f"view {stage}"] = _sha(stage_config(config, stage))
            for arm in config["arms"]:
                entry[f"view train/{arm}"] = _sha(stage_config(config, "train", arm))
                entry[f"recipe {arm}"] = _sha(resolve_arm(config, arm).as_dict())
            entry["analysis settings"] = _sha(dataclasses.asdict(parse_config(config, source=path).settings))
        out[path] = entry
    return out


def compare(old: dict, new: dict) -> list[str]:
    lines = []
    for path in sorted(set(old) | set(new)):
        a, b = old.get(path, {}), new.get(path, {})
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                lines.append(f"{path}: {key}: {str(a.get(key))[:12]} -> {str(b.get(key))[:12]}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"))
    args = parser.parse_args()
    if args.compare:
        old, new = (json.load(open(p)) for p in args.compare)
        lines = compare(old, new)
        print("\n".join(lines) or f"identical: {sum(len(v) for v in new.values())} hashes of {len(new)} configs")
        return 1 if lines else 0
    json.dump(hashes(), sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
