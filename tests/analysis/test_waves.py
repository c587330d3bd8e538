"""A sequential design's statistics (analysis/waves.py): the runs each wave needs, each look replayed from the
scores, and the final table checked against the record of looks."""

import numpy as np
import pytest
from sequential_runs import CONFIG, RAW, run_scores, run_values

from armlab.analysis import waves
from armlab.analysis.config import parse_config
from armlab.analysis.errors import AnalysisInputError
from armlab.analysis.inputs import records
from armlab.analysis.stats import sequential
from armlab.configfile import ConfigError
from armlab.experiment import sequential as controller


def test_the_first_wave_is_every_compared_arm_at_the_first_seeds():
    assert waves.initial_runs(CONFIG) == [(a, s) for a in ("ref", "big", "null") for s in range(1, 7)]


def test_the_final_table_replays_the_recorded_looks(tmp_path):
    ledger = tmp_path / "looks.jsonl"
    values = run_values(range(1, 11))
    for look in (1, 2, 3):
        seeds = range(1, CONFIG.design.looks[look - 1] + 1)
        wanted = {k: v for k, v in values.items() if k[1] in seeds and (k[0] != "big" or k[1] <= 8)}
        record = controller.run_look(CONFIG, look, run_scores(wanted), ledger, "h")
        if record["done"]:
            break
    final = {k: v for k, v in values.items() if k[0] != "big" or k[1] <= 8}
    recorded = records.recorded_looks(ledger)
    table, looks = waves.final_tables(waves.primary_values(run_scores(final), CONFIG), CONFIG, recorded)
    table = table.set_index("arm")
    assert table.at["big", "decision"] == "differs" and table.at["big", "look"] == 2
    assert table.at["big", "direction"] == "better" and table.at["big", "seeds_saved"] == 2
    assert table.at["big", "rci_low"] > 0  # the repeated interval excludes 0 where the design rejected
    d = np.array([values[("big", s)] - values[("ref", s)] for s in range(1, 9)])
    assert table.at["big", "mean_diff"] == pytest.approx(d.mean())
    assert (table.at["big", "rci_low"], table.at["big", "rci_high"]) == sequential.repeated_interval(
        d, CONFIG.design, 2
    )
    assert len(looks) == sum(len(r["decisions"]) for r in records.read_ledger(ledger))
    tampered = {**final, ("null", 7): final[("null", 7)] + 0.3}
    with pytest.raises(AnalysisInputError, match="recorded with other decisions"):
        waves.final_tables(waves.primary_values(run_scores(tampered), CONFIG), CONFIG, records.recorded_looks(ledger))


def test_a_sequential_design_puts_every_arm_in_a_comparison():
    from armlab.experiment.validate import load_config

    with pytest.raises(ConfigError, match=r"arm\(s\) \['difffilter', 'no_learning'\] are in no comparison"):
        load_config(
            ["config/config.yaml"],
            {
                "seeds": {"initial": 2, "wave": 1, "max": 4},
                "comparisons": [{"family": "estimators", "reference": "grpo", "arms": ["dr_grpo"]}],
            },
        )
    with pytest.raises(ConfigError, match=r"seeds.initial: 6 is above seeds.max \(4\)"):
        load_config(["config/config.yaml"], {"seeds": {"initial": 6, "wave": 1, "max": 4}})


def test_a_looks_boundary_does_not_depend_on_the_looks_after_it():
    """Replaying look 1 at look 3 must give the boundary recorded at look 1; counting look 1's allowance in the
    2^4 paths of look 3 instead of its own 2^2 once turned an infinite boundary into a finite one, and the
    workflow refused its own record."""
    design = sequential.Design(initial=2, wave=1, max=4, spending="pocock", alpha=0.3)
    x = np.array([0.025, 0.0, -0.025, 0.05])
    for level in (0.15, 0.3):
        alone = sequential.crossing(x, design, [level], n_looks=1)[1][:, 0]
        later = sequential.crossing(x, design, [level], n_looks=3)[1][:, 0]
        assert alone[0] == later[0]
    assert np.isinf(sequential.crossing(x, design, [0.15], n_looks=3)[1][0, 0])


@pytest.mark.parametrize(
    "seeds, message",
    [
        ({"initial": 4}, r"seeds: a sequential design needs initial, wave and max \(missing \['wave', 'max'\]\)"),
        ({"initial": 1, "wave": 1, "max": 4}, "seeds.initial: 1 is less than the minimum of 2"),
        ({"initial": 4, "wave": 1, "max": 8, "spending": "linear"}, "seeds.spending: 'linear' is not one of"),
        ({"initial": 4, "wave": 1, "max": 8, "every": 2}, r"seeds: Additional properties .*'every' was unexpected"),
        ({"initial": 4, "wave": 1, "max": 2000}, "seeds.max: 2000 is above the limit of 1000"),
    ],
)
def test_a_bad_design_is_one_line_naming_the_key(seeds, message):
    from armlab.experiment.validate import load_config

    with pytest.raises(ConfigError, match=message):
        load_config(["config/config.yaml"], {"seeds": seeds})


def test_a_design_beyond_exact_enumeration_replays_its_looks():
    """Enumerating while a look had few seeds and drawing once it had more changed look 1 when look 2 replayed
    it (a design with max above analysis.exact_max_seeds refused its own record); the mode is the design's."""
    design = sequential.Design(initial=12, wave=4, max=20, spending="pocock", max_exact=16)
    x = np.array([0.108, 1.942, 0.06, -0.53, -1.015, 1.205, 0.725, 1.198, 0.154, 1.794,
                  1.233, 1.18, 0.332, 1.568, 1.681, 0.731, 0.286, -0.747, 0.835, 1.058])  # fmt: skip
    at_look_1 = sequential.run_family({"a": x[:12]}, design, upto=1)
    at_look_2 = sequential.run_family({"a": x}, design, upto=2)
    assert at_look_2[0] == at_look_1[0]
    with pytest.raises(AnalysisInputError, match="look 4 is not one of the design's 3 looks"):
        sequential.run_family({"a": x}, design, upto=4)


def test_an_arm_open_in_one_family_and_stopped_in_another_is_analysed():
    """`A` differs from `R` early (family F1) but stays open against `B` (F2), so it ends with more seeds than its
    F1 reference; the analysis once refused the seed sets (the arm's not a subset of its reference's)."""
    from armlab.analysis.pipeline import run_analysis

    raw = {**RAW, "comparisons": [{"family": "F1", "reference": "R", "arms": ["A"]},
                                  {"family": "F2", "reference": "B", "arms": ["A"]}]}  # fmt: skip
    config = parse_config(raw)
    rng = np.random.default_rng(5)
    values = {}
    for seed in range(1, 11):
        base = 0.4 + rng.normal(0, 0.01)
        values |= {("R", seed): base, ("A", seed): base + 0.3, ("B", seed): base + 0.3 + rng.normal(0, 0.1)}
    looks = waves.chain(waves.primary_values(run_scores(values), config), config)
    ran = {tuple(run) for run in looks[-1]["runs"]}
    assert ("R", 10) not in ran and ("A", 10) in ran and ("B", 10) in ran  # R stopped with F1, A went on with F2
    result = run_analysis(config, run_scores({k: v for k, v in values.items() if k in ran}))
    table = result.sequential.set_index("family")
    assert table.at["F1", "decision"] == "differs" and table.at["F1", "n_seeds"] == 6
    assert table.at["F2", "n_seeds"] == 10
    assert any("the rankings use the 6 seeds every compared arm ran" in note for note in result.notes)


@pytest.mark.parametrize("key", ["max", "start", "initial"])
def test_a_whole_number_written_as_a_float_is_refused_naming_the_key(key):
    from armlab.experiment.validate import load_config

    seeds = {"initial": 4, "wave": 1, "max": 8, "start": 1} | {key: 4.0}
    with pytest.raises(ConfigError, match=rf"seeds\.{key}: expected a whole number of seeds, got 4.0"):
        load_config(["config/config.yaml"], {"seeds": seeds})


def test_a_huge_max_is_refused_before_any_seed_list_is_built():
    from armlab.experiment.validate import load_config

    with pytest.raises(ConfigError, match="seeds.max: 1000000000000 is above the limit of 1000"):
        load_config(["config/config.yaml"], {"seeds": {"initial": 4, "wave": 1, "max": 10**12}})


def test_the_final_tables_refuse_an_incomplete_record(tmp_path):
    ledger = tmp_path / "looks.jsonl"
    values = run_values(range(1, 11))
    for look, n in ((1, 6), (2, 8), (3, 10)):
        controller.run_look(CONFIG, look, run_scores({k: v for k, v in values.items() if k[1] <= n}), ledger, "h")
    ledger.write_text("".join(line + "\n" for line in ledger.read_text().splitlines()[:2]))  # the last line lost
    with pytest.raises(AnalysisInputError, match=r"records looks \[1, 2\], but the runs give looks 1..3"):
        waves.final_tables(waves.primary_values(run_scores(values), CONFIG), CONFIG, records.recorded_looks(ledger))
