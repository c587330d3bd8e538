"""A locked prediction keeps its meaning (analysis/predictions.py ``meaning``): changing after the lock what decides
its verdict (the family's reference or arms, the measures the family tests, the predicted measure's benchmarks and
weights or parameters, alpha, the test and its interval, the margin the test is run at, the runs that count) makes
it exploratory with a note naming the change, and a locked prediction whose comparison is gone is refused when the
workflow starts. Every case runs `armlab analyze CONFIG` from the experiment's root, as a user reruns an analysis
(its default --jobs, results/<experiment>, holds the lock and the registered jobs); the workflow's own case is in
tests/workflows/test_sequential_workflow.py.

The experiment is synthetic: its jobs' manifests and evaluations are written as the workflow writes them, after the
lock, so that it is confirmatory evidence as it stands.
"""

import copy
import shutil

import fork_server
import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, copy_of_the_repository
from hostile import tree

from armlab import cli, files, layout, registration
from armlab.analysis import predictions
from armlab.analysis.config import parse_config
from armlab.analysis.design.synthetic import synthetic_scores
from armlab.experiment import locks

EXPERIMENT = "locked"
BENCHMARKS = {"b0": "math", "b1": "math", "b2": "logic"}
SEEDS = list(range(1, 9))
RAW = {
    "experiment": EXPERIMENT,
    "seeds": SEEDS,
    "benchmarks": {b: {"domain": d} for b, d in BENCHMARKS.items()},
    "comparisons": [{"family": "f", "reference": "ref", "arms": ["big", "same"]}],
    "analysis": {
        "resamples": 200,
        "power_replicates": 100,
        "per_benchmark": False,
        "subsets": {"maths": ["b0", "b1"]},
        "statistics": {"optimality_gap": {"gamma": 0.9}},
    },
    "predictions": [
        {"family": "f", "arm": "big", "direction": "better", "source": "planted effect"},
        {"family": "f", "arm": "big", "summary": "maths", "direction": "better", "source": "planted effect"},
        {"family": "f", "arm": "same", "direction": "not_better", "margin": 0.1, "source": "planted null"},
        {"family": "f", "arm": "big", "summary": "optimality_gap", "direction": "better", "source": "planted"},
    ],
}
BIG, MATHS, NULL, GAP = (("f", p["arm"], p.get("summary", "domain_balanced")) for p in RAW["predictions"])


def _with(**changes):
    """A copy of RAW with ``changes`` applied: dotted keys, ``None`` deletes."""
    raw = copy.deepcopy(RAW)
    for dotted, value in changes.items():
        node, *path, last = [raw, *dotted.split("__")]
        for key in path:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value
    return raw


@pytest.fixture(scope="module")
def locked(tmp_path_factory):
    """An experiment whose predictions were locked before its jobs: runs and evaluations with manifests that
    record the lock, the scores of its evaluations."""
    root = tmp_path_factory.mktemp("locked")
    out = root / layout.experiment_dir(EXPERIMENT)
    assert locks.write_predictions_lock(out, parse_config(RAW)).startswith("predictions: 4 locked")
    scores = synthetic_scores(
        arms=["ref", "big", "same", "zero"],
        seeds=SEEDS,
        benchmarks=BENCHMARKS,
        items=None,
        rng=np.random.default_rng(3),
        effects={"big": 0.6},
        run_sd=0.01,
        experiment=EXPERIMENT,
    )
    for (arm, seed), rows in scores.groupby(["arm", "seed"]):
        run = out / "runs" / arm / f"seed-{seed}"
        run.mkdir(parents=True)
        files.write_json(
            run / files.MANIFEST, {"arm": arm, "seed": int(seed), "seconds": 1.0, **registration.record(run)}
        )
        evaluation = out / "evals" / arm / f"seed-{seed}"
        evaluation.mkdir(parents=True)
        rows.to_parquet(evaluation / "scores.parquet", index=False)
        record = {"arm": arm, "seed": int(seed), "seconds": 1.0, **registration.record(evaluation)}
        files.write_manifest(evaluation, record, "scores.parquet")
    scores.to_parquet(out / "scores.parquet", index=False)
    return root


def _analyze(root, raw, monkeypatch, capsys, tmp_path):
    """`armlab analyze config.yaml --out OUT` from ``root``: (replications by (family, arm, measure), notes)."""
    config, out = tmp_path / "config.yaml", tmp_path / "analysis"
    config.write_text(yaml.safe_dump(raw))
    monkeypatch.chdir(root)
    capsys.readouterr()
    assert cli.main(["analyze", str(config), "--out", str(out)]) == 0, capsys.readouterr().err
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note: Predictions")]
    table = pd.read_csv(out / "replications.csv").set_index(["family", "arm", "measure"])
    return table, notes


def test_the_locked_experiment_is_confirmatory_as_it_stands_and_after_changes_that_decide_nothing(
    locked, monkeypatch, capsys, tmp_path
):
    for raw in (RAW, _with(analysis__resamples=300, analysis__ci_methods=["t"], analysis__power=0.9)):
        table, notes = _analyze(locked, raw, monkeypatch, capsys, tmp_path)
        assert set(table["registration"]) == {"confirmatory"} and notes == []
        assert table.loc[BIG, "verdict"] == "replicated" and table.loc[NULL, "verdict"] == "replicated"


# (what is changed after the lock, the predictions it makes exploratory, what the note names)
RETARGETED = {
    "the family's reference, to an arm that learns nothing": (
        _with(comparisons=[{"family": "f", "reference": "zero", "arms": ["big", "same", "ref"]}]),
        {BIG, MATHS, NULL, GAP},
        'reference "ref" -> "zero"',
    ),
    "the predicted subset, to the arm's best benchmark": (
        _with(analysis__subsets={"maths": ["b0"]}),
        {MATHS},
        "measure.weights.b1 0.5 -> null",
    ),
    "the subset's weights": (
        _with(analysis__subsets={"maths": {"b0": 3, "b1": 1}}),
        {MATHS},
        "measure.weights.b0 0.5 -> 0.75",
    ),
    "a statistic's parameter": (
        _with(analysis__statistics={"optimality_gap": {"gamma": 0.5}}),
        {GAP},
        "measure.parameters.gamma 0.9 -> 0.5",
    ),
    "alpha, raised to 0.45": (_with(analysis__alpha=0.45), {BIG, MATHS, NULL, GAP}, "analysis.alpha 0.05 -> 0.45"),
    "the margin the test is run at": (
        _with(analysis__equivalence_margin=0.2),
        {BIG, MATHS, NULL, GAP},
        "analysis.equivalence_margin 0.01 -> 0.2",
    ),
    "the interval method of the equivalence test": (
        _with(analysis__equivalence_test="t"),
        {BIG, MATHS, NULL, GAP},
        'analysis.equivalence_test "sign_flip" -> "t"',
    ),
    "the family's Holm family, by an arm more": (
        _with(comparisons=[{"family": "f", "reference": "ref", "arms": ["big", "same", "zero"]}]),
        {BIG, MATHS, NULL, GAP},
        'family arms ["big", "same"] -> ["big", "same", "zero"]',
    ),
    "the measures the family tests (the secondary Holm family)": (
        _with(analysis__per_benchmark=True),
        {BIG, MATHS, NULL, GAP},
        "family measures",
    ),
    "the runs that count": (
        _with(analysis__drop_incomplete=True),
        {BIG, MATHS, NULL, GAP},
        "analysis.drop_incomplete false -> true",
    ),
}


@pytest.mark.parametrize("case", RETARGETED)
def test_a_change_of_meaning_after_the_lock_makes_the_prediction_exploratory_naming_it(
    case, locked, monkeypatch, capsys, tmp_path
):
    """On 5a28ea2 every one of these kept its locked prediction confirmatory (its claim, "big is better than ref",
    beside another reference, a redefined subset or alpha 0.45)."""
    raw, exploratory, named = RETARGETED[case]
    table, notes = _analyze(locked, raw, monkeypatch, capsys, tmp_path)
    marked = {key for key, status in table["registration"].items() if status == "exploratory"}
    assert marked == exploratory
    assert len(notes) == len(exploratory) and all(named in note for note in notes), notes
    confirmatory = table.index.difference(list(exploratory))
    assert (table.loc[confirmatory, "registration"] == "confirmatory").all()


def test_a_lock_that_pins_no_meanings_is_exploratory(locked, monkeypatch, capsys, tmp_path):
    """A lock from before the lock pinned what decides the verdicts (no "meanings") cannot rule out a change."""
    root = tmp_path / "old"
    shutil.copytree(locked, root)
    out = root / layout.experiment_dir(EXPERIMENT)
    lock = files.read_json(out / predictions.LOCK)
    del lock["meanings"]
    lock["hash"] = predictions.predictions_hash([predictions.Prediction(**p) for p in lock["predictions"]])
    files.write_json(out / predictions.LOCK, lock)
    for job, _ in registration.recorded(out).items():  # the jobs ran under that lock
        manifest = files.read_json(job)
        manifest[registration.KEY]["predictions_lock"] = files.file_sha256(out / predictions.LOCK)
        files.write_json(job, manifest)
    for evaluation in (out / "evals").glob("*/seed-*"):
        manifest = files.read_json(evaluation / files.MANIFEST)
        files.write_manifest(evaluation, {k: v for k, v in manifest.items() if k != files.FILES_KEY}, "scores.parquet")
    config, analysis = tmp_path / "config.yaml", tmp_path / "analysis"
    config.write_text(yaml.safe_dump(RAW))
    monkeypatch.chdir(root)
    assert cli.main(["analyze", str(config), "--out", str(analysis)]) == 0
    assert set(pd.read_csv(analysis / "replications.csv")["registration"]) == {"exploratory"}
    assert "pins the predictions but not what decides their verdicts" in capsys.readouterr().out


WITHDRAWN = {
    "family renamed": (
        _with(comparisons=[{"family": "g", "reference": "ref", "arms": ["big", "same"]}], predictions=[]),
        "locked prediction (f, big, domain_balanced): family 'f' is not compared",
    ),
    "arm dropped": (
        _with(comparisons=[{"family": "f", "reference": "ref", "arms": ["same"]}], predictions=RAW["predictions"][2:3]),
        "locked prediction (f, big, domain_balanced): arm 'big' is not in family 'f'",
    ),
    "subset dropped": (
        _with(analysis__subsets={}, predictions=RAW["predictions"][:1]),
        "locked prediction (f, big, maths): measure 'maths' is not compared",
    ),
}


@pytest.mark.parametrize("case", WITHDRAWN)
def test_a_locked_prediction_whose_comparison_is_gone_is_refused_at_start(case, locked, tmp_path):
    """`snakemake -n --configfile changed.yaml` from the repository's root refuses it in one line (the Snakefile's
    experiment.load) and changes nothing; on 5a28ea2 the workflow went on, and its analysis job would fail on it
    after every other job."""
    raw, message = WITHDRAWN[case]
    root = copy_of_the_repository(tmp_path / "checkout")
    shutil.copytree(locked / "results", root / "results")
    workflow = yaml.safe_load((REPO / "tests" / "fixtures" / "tiny.yaml").read_text())
    workflow |= {k: v for k, v in raw.items() if k != "benchmarks"}
    workflow["arms"] = {"ref": {}, "big": {"lr": 0.02}, "same": {"lr": 0.0001}, "zero": {"lr": 1e-9}}
    workflow["benchmarks"] = {b: {"domain": d, "task": "add", "n_items": 5} for b, d in BENCHMARKS.items()}
    (root / "changed.yaml").write_text(yaml.safe_dump(workflow))
    before = tree(root / "results")
    dry = fork_server.run_snakemake(
        ["--configfile", "changed.yaml", "--replace-workflow-config", "--cores", "1", "-n"], root
    )
    output = dry.stdout + dry.stderr
    assert dry.returncode != 0 and "Traceback" not in output, output[-2000:]
    assert [line for line in output.splitlines() if "predictions/lock.json: " in line] == [
        f"{layout.experiment_dir(EXPERIMENT)}/predictions/lock.json: {message} in the config now; a locked "
        f"prediction cannot be withdrawn (the analysis gives its verdict): restore its comparison"
    ]
    assert tree(root / "results") == before
