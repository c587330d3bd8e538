"""Task generators and exact verifiers; no evaluation item ever appears in a training pool."""

import copy

import numpy as np
import pytest

from armlab.training import data
from armlab.training.base import corrupt_answer, demonstrations
from armlab.training.tasks import TASKS, verify


@pytest.mark.parametrize(
    "task, answer, response, expected",
    [
        ("add", "95", "95", 1.0),
        ("add", "95", " 95 ", 1.0),
        ("add", "95", "095", 1.0),
        ("add", "95", "96", 0.0),
        ("add", "95", "9 5", 0.0),
        ("add", "95", "", 0.0),
        ("add", "95", "95.", 0.0),
        ("force", "-6", "-6", 1.0),
        ("force", "-6", "6", 0.0),
        ("boolexpr", "T", "T", 1.0),
        ("boolexpr", "T", "t", 0.0),
        ("boolexpr", "T", "TT", 0.0),
        ("sort", "0156", "0156", 1.0),
        ("sort", "0156", "156", 0.0),
        ("decimal", "0.40", "0.40", 1.0),
        ("decimal", "0.40", "0.4", 0.0),
        ("decimal", "0.40", ".40", 0.0),
        ("round", "350", "350", 1.0),
        ("round", "350", "35", 0.0),
    ],
)
def test_verifier_hand_cases(task, answer, response, expected):
    assert verify(task, answer, response) == expected


def _independent_answer(task, prompt):
    """Recompute the answer from the prompt text by other means than the generator."""
    body = prompt.rstrip("=")
    if task in ("add", "sub", "sum3", "mod", "mul"):
        return str(eval(body))  # the prompt is a plain Python arithmetic expression
    if task == "boolexpr":
        return (
            "T"
            if eval(body.replace("T", " True ").replace("F", " False ").replace("&", " and ").replace("|", " or "))
            else "F"
        )
    if task == "sort":
        return "".join(sorted(body.split()[1]))
    if task == "count":
        _, target, digits = body.split()
        return str(digits.count(target))
    if task == "second":
        return sorted(set(body.split()[1]))[-2]
    if task == "max":
        return max(body.split()[1])
    if task == "reverse":
        return body.split()[1][::-1]
    if task == "parity":
        return str(body.split()[1].count("1") % 2)
    if task == "atoms":
        import re

        return str(sum(int(n or 1) for _, n in re.findall(r"([A-Z][a-z]?)(\d*)", body.split()[1])))
    if task == "ohm":
        i, r = (int(part.split("=")[1]) for part in body.split()[1:])
        return str(i * r)
    if task == "units":
        import re

        value, unit = re.fullmatch(r"(\d+)(.*)", body).groups()
        factor = {"km>m": 1000, "m>cm": 100, "kg>g": 1000, "m>mm": 1000, "L>mL": 1000, "h>min": 60}[unit]
        return str(int(value) * factor)
    if task == "force":
        return str(sum(int(x) for x in body.split()[1].split(",")))
    if task == "speed":
        d, t = (int(part.split("=")[1]) for part in body.split()[1:])
        return str(d // t)
    if task == "round":
        from decimal import ROUND_HALF_UP, Decimal

        return str(int(Decimal(body.split()[1]).scaleb(-1).quantize(Decimal(1), ROUND_HALF_UP).scaleb(1)))
    if task == "floordiv":
        number, divisor = body.split("//")
        return number[: len(number) - (len(divisor) - 1)] or "0"  # dropping k digits divides by 10^k
    if task == "sci":
        return str(int(float(body)))  # "34e2" is a Python float literal
    if task == "decimal":
        from decimal import Decimal

        mantissa, exponent = body.split("e-")
        return f"{Decimal(mantissa).scaleb(-int(exponent)):.{exponent}f}"
    if task == "element":
        import re

        element, formula = body.split(" in ")
        return str({e: int(n or 1) for e, n in re.findall(r"([A-Z][a-z]?)(\d*)", formula)}[element])
    raise AssertionError(f"no independent check for {task}")


@pytest.mark.parametrize("task", sorted(TASKS))
def test_generators_answer_correctly(task):
    rng = np.random.default_rng(0)
    family = TASKS[task]
    kwargs = {"precedence": True} if task == "boolexpr" else {}
    for _ in range(200):
        prompt, answer = family.generate(rng, **kwargs)
        assert answer == _independent_answer(task, prompt), prompt
        assert verify(task, answer, answer) == 1.0


def test_boolexpr_left_to_right_differs_from_precedence():
    # "F&F|T" is T either way; "T|F&F" is T with precedence, F left to right
    rng = np.random.default_rng(3)
    texts = {TASKS["boolexpr"].generate(rng, terms=3)[0] for _ in range(50)}
    assert "T|F&F=" in texts
    from armlab.training.tasks import gen_boolexpr

    class Fixed:  # replays "T|F&F"
        def integers(self, *a, **k):
            return np.array([1, 0, 0])

        def choice(self, *a, **k):
            return np.array(["|", "&"])

    assert gen_boolexpr(Fixed(), terms=3) == ("T|F&F=", "F")
    assert gen_boolexpr(Fixed(), terms=3, precedence=True) == ("T|F&F=", "T")


def test_no_evaluation_item_in_any_training_pool(tiny_config):
    eval_items, pools = data.generate(tiny_config)
    eval_prompts = {item["prompt"] for items in eval_items.values() for item in items}
    train_prompts = [item["prompt"] for pool in pools.values() for item in pool]
    assert eval_prompts and train_prompts
    assert eval_prompts.isdisjoint(train_prompts)
    for bench, items in eval_items.items():
        assert len(items) == tiny_config["benchmarks"][bench]["n_items"]
        assert len({item["prompt"] for item in items}) == len(items)


def test_a_twin_is_fresh_items_of_its_generator_held_out_of_training(tiny_config):
    """benchmarks.<b>.twin: n_items fresh items of the same task and params, none an evaluation item or a training
    prompt, and the draws without a twin are those of a config without the key."""
    config = copy.deepcopy(tiny_config)
    config["benchmarks"]["add"]["twin"] = True
    eval_items, pools = data.generate(config)
    twin, published = eval_items["add__twin"], eval_items["add"]
    assert len(twin) == len(published) == config["benchmarks"]["add"]["n_items"]
    assert {item["benchmark"] for item in twin} == {"add__twin"} and {i["task"] for i in twin} == {"add"}
    assert all(verify("add", item["answer"], item["answer"]) for item in twin)
    assert {i["prompt"] for i in twin}.isdisjoint(
        i["prompt"] for items in eval_items.values() if items is not twin for i in items
    )
    assert {i["prompt"] for i in twin}.isdisjoint(i["prompt"] for pool in pools.values() for i in pool)
    untwinned = data.generate(tiny_config)[0]
    assert {b: items for b, items in eval_items.items() if b != "add__twin"} == untwinned


def test_a_planted_leak_puts_the_same_evaluation_items_in_the_arms_pool(tiny_config, tiny_experiment):
    """arms.<arm>.leak: round(share * n) of each benchmark's evaluation items (never a twin's), copies times each,
    the same draw for every call; every other arm's pool is the experiment's."""
    config = copy.deepcopy(tiny_config)
    config["arms"]["difffilter"]["leak"] = {"share": 0.1, "copies": 3}
    eval_items = data.load_eval_items(tiny_experiment / "data")
    leaked = data.leaked_items(config["data"]["seed"], eval_items, 0.1)
    assert sorted(item["benchmark"] for item in leaked) == sorted(b for b in eval_items for _ in range(2))
    pools, leak = data.arm_pools(config, "difffilter", tiny_experiment / "data")
    clean = data.load_pools(tiny_experiment / "data")
    for domain, pool in pools.items():
        assert pool[: len(clean[domain])] == clean[domain]
        assert pool[len(clean[domain]) :] == [i for i in leaked if i["domain"] == domain for _ in range(3)]
    assert leak == {"share": 0.1, "copies": 3, "items": [item["id"] for item in leaked]}
    assert data.arm_pools(config, "grpo", tiny_experiment / "data") == (clean, None)
    assert data.leaked_items(config["data"]["seed"], eval_items, 0.1) == leaked


def test_written_data_round_trips_and_stays_disjoint(tiny_experiment):
    eval_items = data.load_eval_items(tiny_experiment / "data")
    pools = data.load_pools(tiny_experiment / "data")
    assert set(pools) == {"math", "logic", "science"}
    eval_prompts = {item["prompt"] for items in eval_items.values() for item in items}
    assert eval_prompts.isdisjoint(item["prompt"] for pool in pools.values() for item in pool)


def test_too_small_problem_space_is_a_clear_error(tiny_config):
    config = {
        **tiny_config,
        "benchmarks": {"add": {"domain": "math", "task": "add", "n_items": 500, "params": {"digits": 1}}},
    }
    with pytest.raises(ValueError, match=r"benchmarks\.add\.n_items: only 100 distinct items"):
        data.generate(config)


def test_systematic_slip_of_the_base_demonstrations():
    assert [corrupt_answer(a) for a in ["95", "99", "T", "F", "abj", "-6"]] == ["96", "90", "F", "T", "aba", "-7"]
    items = [{"prompt": "17+2=", "answer": "19"}, {"prompt": "12+2=", "answer": "14"}]
    slipped = demonstrations(items, "7", 1.0, np.random.default_rng(0))
    assert [d["answer"] for d in slipped] == ["10", "14"]
    assert demonstrations(items, "7", 0.0, np.random.default_rng(0)) == items
