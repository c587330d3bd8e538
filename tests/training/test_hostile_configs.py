"""Hostile and careless configs: each is refused at load, with a one-line error naming the key, before any job.

Every case mutates the tiny experiment's config; validation runs no job and writes nothing, and the cases
run through the workflow itself check that no results folder appears.
"""

import json
import os
import string

import fork_server
import pytest
import yaml
from conftest import REPO, TINY

from armlab.analysis.config import load_config as load_analysis_config
from armlab.analysis.config import parse_config as parse_analysis_config
from armlab.analysis.errors import AnalysisInputError
from armlab.configfile import MAX_INCLUDE_DEPTH, NAME_OVERHEAD, ConfigError, load_mapping, max_name_length
from armlab.experiment.validate import validate_config
from armlab.files import atomic_path

LONGEST_NAME = max_name_length()  # 205 on a file system of 255-byte names


def _set(path, value):
    """A mutation setting ``raw[path...] = value``; a path element ``("rename", old, new)`` renames a key."""

    def mutate(raw):
        node = raw
        for part in path[:-1]:
            node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
        last = path[-1]
        if isinstance(last, tuple):
            _, old, new = last
            node[new] = node.pop(old)
        else:
            node[last] = value

    return mutate


def _rename_arm(new):
    def mutate(raw):
        raw["arms"][new] = raw["arms"].pop("difffilter")
        raw["comparisons"][0]["arms"] = [new]

    return mutate


def _rename_benchmark(new):
    def mutate(raw):
        raw["benchmarks"][new] = raw["benchmarks"].pop("add")
        raw["benchmarks"][new]["task"] = "add"

    return mutate


def _command(template, **section):
    """A mutation making the experiment a command-backend one with ``template`` and the other ``section`` keys."""

    def mutate(raw):
        raw["backend"] = "command"
        raw["command"] = {"template": template, "checkpoint": "model", **section}

    return mutate


def _lm_eval_task(name, domain):
    """A mutation listing an lm-eval task (scored on one answer per item, so pass@k stays at 1)."""

    def mutate(raw):
        raw["eval"]["pass_k"] = [1]
        raw["eval"]["lm_eval_tasks"] = {name: {"domain": domain}}

    return mutate


def _long_name(length):
    """A valid name of ``length`` characters without a repeat at its end (Snakemake's periodic wildcards)."""
    return (string.ascii_letters * (length // 52 + 1))[:length]


def _leak(share=0.1, control=True, twin=True):
    """A mutation planting a leak of ``share`` in difffilter (contamination screen), in a family marked ``control``
    or not, with benchmark add twinned or not."""

    def mutate(raw):
        raw["arms"]["difffilter"]["leak"] = {"share": share}
        raw["comparisons"][0]["control"] = control
        if twin:
            raw["benchmarks"]["add"]["twin"] = True

    return mutate


def _leaky_reference(raw):
    _leak()(raw)
    raw["arms"]["grpo"]["leak"] = {"share": 0.1}
    raw["comparisons"].append({"family": "flip", "reference": "difffilter", "arms": ["grpo"], "control": True})


CASES = [
    ("one seed with a comparison", _set(["seeds"], [1]), r"seeds: \[1\] cannot be compared .* at least 2 seeds"),
    # names that become paths, wildcards or command-line arguments
    (
        "benchmark absolute path",
        _rename_benchmark("/abs/path"),
        r"benchmarks\./abs/path: '/abs/path' is not a valid name",
    ),
    ("benchmark parent dirs", _rename_benchmark("../../x"), r"benchmarks\.\.\./\.\./x: .* is not a valid name"),
    ("benchmark with dot-dot inside", _rename_benchmark("a..b"), r"benchmarks\.a\.\.b: .* without '\.\.'"),
    ("arm dot-dot", _rename_arm(".."), r"arms\.\.\.: '\.\.' is not a valid name"),
    ("arm with a space", _rename_arm("my arm"), r"arms\.my arm: 'my arm' is not a valid name"),
    ("arm with an accent", _rename_arm("été"), r"arms\.été: 'été' is not a valid name"),
    ("arm with markup", _rename_arm("<b>"), r"arms\.<b>: '<b>' is not a valid name"),
    ("arm like an option", _rename_arm("--help"), r"arms\.--help: '--help' is not a valid name"),
    ("arm hidden", _rename_arm(".hidden"), r"arms\.\.hidden: .* not starting with '\.' or '-'"),
    ("arm YAML null", _rename_arm(None), r"arms\.None: expected a name, got None .*quote the name"),
    ("arm YAML yes", _rename_arm(True), r"arms\.True: expected a name, got True .*quote the name"),
    ("arm a number", _rename_arm(3), r"arms\.3: expected a name, got 3 of type int"),
    (
        "domain path",
        _set(["benchmarks", "add", "domain"], "../d"),
        r"benchmarks\.add\.domain: '\.\./d' is not a valid name",
    ),
    ("experiment path", _set(["experiment"], "../../etc"), r"experiment: '\.\./\.\./etc' is not a valid name"),
    ("experiment hidden", _set(["experiment"], ".x"), r"experiment: '\.x' is not a valid name"),
    (
        "comparison arm null",
        _set(["comparisons", 0, "arms"], [None]),
        r"comparisons\[0\]\.arms\[0\]: expected a name, got None",
    ),
    # names that break Snakemake's wildcards or the file system's file names (final or temporary)
    (
        "arm ending in a repeat",
        _rename_arm("x" + "ab" * 20),
        r"arms\.x(ab)+: ends in 'ab' repeated 20 or more times, which Snakemake refuses in a wildcard",
    ),
    ("arm of one letter repeated", _rename_arm("a" * 20), r"arms\.a+: ends in 'a' repeated 20 or more times"),
    (
        "arm too long for its temporary",
        _rename_arm(_long_name(230)),
        rf"arms\.\w+: '\w+'\.\.\. is 230 characters; .* use at most {LONGEST_NAME}$",
    ),
    ("benchmark too long", _rename_benchmark(_long_name(LONGEST_NAME + 1)), r"benchmarks\.\w+: .* characters"),
    ("domain too long", _set(["benchmarks", "add", "domain"], _long_name(250)), r"benchmarks\.add\.domain: .* 250"),
    ("experiment too long", _set(["experiment"], _long_name(254)), r"experiment: '\w+'\.\.\. is 254 characters"),
    # lm-eval tasks: names and domains as benchmarks
    ("lm-eval task path", _lm_eval_task("../x", "math"), r"eval\.lm_eval_tasks\.\.\./x: '\.\./x' is not a valid name"),
    ("lm-eval task option", _lm_eval_task("--help", "math"), r"eval\.lm_eval_tasks\.--help: .* not a valid name"),
    (
        "lm-eval task domain path",
        _lm_eval_task("gsm8k", "a/b"),
        r"eval\.lm_eval_tasks\.gsm8k\.domain: 'a/b' is not a valid name",
    ),
    ("lm-eval task named like a benchmark", _lm_eval_task("add", "math"), r"eval\.lm_eval_tasks\.add: also a bench"),
    # temperatures whose sampling overflows float32
    ("eval temperature underflows", _set(["eval", "temperature"], 1e-300), r"eval\.temperature: 1e-300 is below"),
    (
        "recipe temperature underflows",
        _set(["recipe", "temperature"], 1e-40),
        r"recipe\.temperature: 1e-40 is below the minimum of 1e-06; sampling divides float32 logits by it",
    ),
    ("arm temperature underflows", _set(["arms", "grpo"], {"temperature": 1e-9}), r"arms\.grpo\.temperature: 1e-09"),
    # control characters that YAML's escapes and JSON's \u let through
    (
        "family with a terminal escape",
        _set(["comparisons", 0, "family"], "data\x1b[2J"),
        r"comparisons\[0\]\.family: holds the control character U\+001B; expected printable text",
    ),
    ("key with a bell", _set(["arms", "grpo"], {"lr\x07": 0.1}), r"arms\.grpo\.'lr\\x07': holds the control char"),
    ("seed negative", _set(["seeds"], [1, -1]), r"seeds\[1\]: -1 is outside 0 \.\. 2\*\*63-1"),
    ("seed beyond int64", _set(["seeds"], [1, 2**63]), r"seeds\[1\]: 9223372036854775808 is outside"),
    ("data seed negative", _set(["data", "seed"], -5), r"data\.seed: -5 is less than the minimum of 0"),
    # the command backend's template runs without a shell unless command.shell says so
    ("template with ;", _command("train {arm}; touch x"), r"command\.template: ';' at .* command\.shell: true"),
    ("template with &&", _command("train {arm} && merge"), r"command\.template: '&' at .* command\.shell: true"),
    ("template with $(...)", _command("train $(id) {arm}"), r"command\.template: '\$' at .* command\.shell: true"),
    ("template with backticks", _command("train `id` {arm}"), r"command\.template: '`' at .* command\.shell: true"),
    ("argv bash -c", _command(["bash", "-c", "{arm}"]), r"command\.template: a placeholder is passed to 'bash'"),
    ("argv sh -c glued", _command(["sh", "-c{arm}"]), r"command\.template: a placeholder is passed to 'sh'"),
    ("argv program", _command(["{arm}", "--x"]), r"command\.template: the program '\{arm\}' holds a placeholder"),
    (
        "argv find -exec",
        _command(["find", ".", "-exec", "{arm}", ";"]),
        r"command\.template: the program '\{arm\}' holds a placeholder",
    ),
    ("argv bash script", _command("bash {arm}"), r"command\.template: a placeholder is the script that 'bash' runs"),
    ("argv assignment", _command("X=1 train {arm}"), r"command\.template: 'X=1' assigns a variable"),
    ("shell backslash", _command("train \\{arm}", shell=True), r"command\.template: placeholder \{arm\} follows a"),
    ("shell list", _command(["train", "{arm}"], shell=True), r"command\.template: with command\.shell: true"),
    ("template a number", _command(3), r"command\.template: 3 is not of type 'string', 'array'"),
    ("argv item a number", _command(["train", 3]), r"command\.template\.1: 3 is not of type 'string'"),
    ("shell not a flag", _command("train {arm}", shell="yes"), r"command\.shell: 'yes' is not of type 'boolean'"),
    ("template empty list", _command([]), r"command\.template: \[\] should be non-empty"),
    (
        "argv checkpoint absolute",
        _command(["train", "{arm}"], checkpoint="/abs/model"),
        r"command\.checkpoint: '/abs/model' must be a glob relative to \{output_dir\}",
    ),
    (
        "argv checkpoint climbing",
        _command("train {arm}", checkpoint="../x/*"),
        r"command\.checkpoint: '\.\./x/\*' must be a glob relative",
    ),
    # method parameters, from their declared signatures
    (
        "norm_std as a string",
        _set(["arms", "grpo"], {"estimator": {"name": "grpo", "norm_std": "no"}}),
        r"arms\.grpo\.estimator\.norm_std: expected true or false, got 'no'",
    ),
    (
        "eps as a bool",
        _set(["arms", "grpo"], {"estimator": {"name": "grpo", "eps": True}}),
        r"arms\.grpo\.estimator\.eps: expected a number, got True",
    ),
    (
        "estimator parameter typo",
        _set(["arms", "grpo"], {"estimator": {"name": "grpo", "norm_sdt": False}}),
        r"arms\.grpo\.estimator\.norm_sdt: unknown parameter; expected one of \['eps', 'norm_std'\]",
    ),
    (
        "parameter of a parameterless estimator",
        _set(["arms", "grpo"], {"estimator": {"name": "rloo", "eps": 0.1}}),
        r"arms\.grpo\.estimator\.eps: unknown parameter; expected one of none",
    ),
    (
        "policy parameter as a string",
        _set(["arms", "difffilter"], {"data_policy": {"name": "difffilter", "low": "0.2"}}),
        r"arms\.difffilter\.data_policy\.low: expected a number, got '0\.2'",
    ),
    (
        "policy integer as a float",
        _set(["arms", "difffilter"], {"data_policy": {"name": "gfpo", "k": 2.5}}),
        r"arms\.difffilter\.data_policy\.k: expected an integer, got 2\.5",
    ),
    (
        "recipe policy typo",
        _set(["recipe", "data_policy"], {"name": "difffilter", "hgih": 0.9}),
        r"recipe\.data_policy\.hgih: unknown parameter",
    ),
    (
        "group of one",
        _set(["recipe", "group_size"], 1),
        r"recipe\.group_size: 1 rollout per prompt; estimator 'grpo' .*>= 2",
    ),
    (
        "arm group of one",
        _set(["arms", "grpo"], {"group_size": 1, "estimator": "rloo"}),
        r"arms\.grpo\.group_size: 1 rollout per prompt; estimator 'rloo'",
    ),
    ("lr NaN", _set(["recipe", "lr"], float("nan")), r"recipe\.lr: expected a finite number, got nan"),
    (
        "kl_coef infinite",
        _set(["recipe", "kl_coef"], float("inf")),
        r"recipe\.kl_coef: expected a finite number, got inf",
    ),
    ("arm lr infinite", _set(["arms", "grpo"], {"lr": float("-inf")}), r"arms\.grpo\.lr: expected a finite number"),
    (
        "more items than exist",
        _set(["benchmarks", "add", "n_items"], 500),
        r"benchmarks\.add\.n_items: only 100 distinct items exist .* n_items = 500",
    ),
    (
        "task parameter typo",
        _set(["benchmarks", "add", "params"], {"digitz": 2}),
        r"benchmarks\.add\.params\.digitz: unknown parameter; expected one of \['digits'\]",
    ),
    (
        "task parameter type",
        _set(["benchmarks", "add", "params"], {"digits": "2"}),
        r"benchmarks\.add\.params\.digits: expected an integer, got '2'",
    ),
    (
        "task flag type",
        _set(["benchmarks", "boolexpr", "params"], {"terms": 5, "precedence": 1}),
        r"benchmarks\.boolexpr\.params\.precedence: expected true or false, got 1",
    ),
    # sizes with stated limits
    (
        "steps for ever",
        _set(["recipe", "steps"], 10**12),
        r"recipe\.steps: 1000000000000 is above the limit of 100000; set limits\.steps",
    ),
    (
        "arm steps for ever",
        _set(["arms", "grpo"], {"steps": 10**9}),
        r"arms\.grpo\.steps: 1000000000 is above the limit",
    ),
    ("huge groups", _set(["recipe", "group_size"], 10**6), r"recipe\.group_size: 1000000 is above the limit of 1024"),
    (
        "huge pool",
        _set(["data", "pool_per_benchmark"], 10**9),
        r"data\.pool_per_benchmark: 1000000000 is above the limit",
    ),
    ("huge base training", _set(["base", "steps"], 10**9), r"base\.steps: 1000000000 is above the limit"),
    (
        "huge item count",
        _set(["benchmarks", "add", "n_items"], 10**7),
        r"benchmarks\.add\.n_items: 10000000 is above the limit",
    ),
    # the contamination screen (issue 55): a planted leak is for controls only, and a twin must be drawable
    (
        "leak in a claim's family",
        _leak(control=False),
        r"arms\.difffilter\.leak: a leak is for planted controls only: the arm is compared in family 'data_policies', "
        r"which is not marked `control: true`",
    ),
    ("leak on a reference", _leaky_reference, r"arms\.grpo\.leak: the reference of family 'data_policies'"),
    ("leak that leaks nothing", _leak(share=0.01), r"arms\.difffilter\.leak\.share: 0\.01 of benchmark add's 20 items"),
    ("leak without a twin", _leak(twin=False), r"arms\.difffilter\.leak: no benchmark has a twin"),
    (
        "leak of no copies",
        _set(["arms", "difffilter", "leak"], {"share": 0.1, "copies": 0}),
        r"arms\.difffilter\.leak\.copies: 0 is less than the minimum of 1",
    ),
    (
        "benchmark named like a twin",
        _rename_benchmark("add__twin"),
        r"benchmarks\.add__twin: names ending in '__twin' are the procedural twins'",
    ),
    (
        "twin beyond the generator",
        _set(["benchmarks", "add"], {"domain": "math", "n_items": 60, "params": {"digits": 1}, "twin": True}),
        r"benchmarks\.add\.twin: only 40 distinct items besides its 60 evaluation items exist",
    ),
    ("unknown limit", _set(["limits"], {"stepz": 5}), r"limits\.stepz: unknown limit"),
    ("limit not a number", _set(["limits"], {"steps": "many"}), r"limits\.steps: 'many' is not of type 'integer'"),
    (
        "unknown top-level key",
        _set(["recipee"], {}),
        r"\(top level\): Additional properties are not allowed \('recipee'",
    ),
]


@pytest.fixture
def raw():
    return yaml.safe_load(TINY.read_text())


@pytest.mark.parametrize("mutate, match", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_hostile_config_is_refused_naming_the_key(raw, mutate, match, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mutate(raw)
    with pytest.raises(ConfigError, match=r"^tiny\.yaml: " + match) as refused:
        validate_config(raw, source="tiny.yaml")
    assert "\n" not in str(refused.value)
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_raised_limit_lets_the_size_through(raw):
    raw["recipe"]["steps"] = 200_000
    raw["limits"] = {"steps": 500_000}
    assert validate_config(raw, source="tiny.yaml")["recipe"]["steps"] == 200_000


def test_the_longest_name_fits_its_longest_file_name_and_that_file_s_temporary(raw, tmp_path):
    """A name at the limit passes, and its longest file and that file's temporary (at the largest pid) fit exactly."""
    name = _long_name(LONGEST_NAME)
    _rename_arm(name)(raw)
    validate_config(raw, source="tiny.yaml")
    longest = tmp_path / f"samples_armlab_{name}.jsonl"
    assert len(f".{longest.name}.armlab-tmp-4194304-abcdefgh") == LONGEST_NAME + NAME_OVERHEAD
    with atomic_path(longest) as tmp:
        tmp.write_text("{}\n")
    assert [p.name for p in tmp_path.iterdir()] == [longest.name]


def _margin_default(raw):
    raw["analysis"] = {"equivalence_margin": 0.6}
    raw["predictions"] = [{"family": "data_policies", "arm": "difffilter", "direction": "equivalent", "source": "s"}]


ANALYSIS_CASES = [
    (
        "resamples",
        _set(["analysis"], {"resamples": 10**9}),
        r"analysis\.resamples: 1000000000 is above the limit of 1000000",
    ),
    ("sign_flip_resamples", _set(["analysis"], {"sign_flip_resamples": 10**9}), r"analysis\.sign_flip_resamples: 1000"),
    (
        "exact_max_seeds",
        _set(["analysis"], {"exact_max_seeds": 40}),
        r"analysis\.exact_max_seeds: 40 is above the limit",
    ),
    ("typo", _set(["analysis"], {"alpah": 0.1}), r"analysis: unknown key\(s\) \['alpah'\]"),
    # checked at start, not after training
    (
        "subset of an unknown benchmark",
        _set(["analysis"], {"subsets": {"arith": ["add", "mul"]}}),
        r"analysis\.subsets\.arith: unknown benchmark\(s\) \['mul'\]; known: \['add', ",
    ),
    (
        "ranking of an unknown arm",
        _set(["analysis"], {"rankings": {"all": ["grpo", "ppo"]}}),
        r"analysis\.rankings\.all: arm\(s\) \['ppo'\] do not exist; defined arms are \['grpo', 'difffilter', 'base'\]",
    ),
    (
        "ranking an arm twice",
        _set(["analysis"], {"rankings": {"all": ["grpo", "grpo"]}}),
        r"analysis\.rankings: expected .* each named once",
    ),
    ("ranking a null arm", _set(["analysis"], {"rankings": {"all": ["grpo", None]}}), r"analysis\.rankings: expected"),
    # names that would merge a benchmark's column with another measure's
    (
        "benchmark named flat",
        _rename_benchmark("flat"),
        r"benchmarks\.flat: 'flat' is the name of a built-in summary, whose column it would merge with",
    ),
    (
        "benchmark named domain_balanced",
        _rename_benchmark("domain_balanced"),
        r"benchmarks\.domain_balanced: .* summary",
    ),
    ("benchmark named iqm", _rename_benchmark("iqm"), r"benchmarks\.iqm: 'iqm' is the name of a statistic"),
    (
        "domain named flat",
        _set(["benchmarks", "add", "domain"], "flat"),
        r"benchmarks\.add\.domain: 'flat' is the name of a built-in summary",
    ),
    (
        "benchmark named like a subset",
        _set(["analysis"], {"subsets": {"mod": ["add", "mod"]}}),
        r"benchmarks\.mod: 'mod' is the name of a subset of analysis\.subsets",
    ),
    ("lm-eval task named flat", _lm_eval_task("flat", "math"), r"eval\.lm_eval_tasks\.flat: 'flat' is the name of"),
    # found by the stop-37 red team: accepted at start, then a traceback or a refusal after training
    (
        "subset named like a pass@k",
        _set(["analysis"], {"subsets": {"pass@2": ["add"]}}),
        r"analysis\.subsets\.pass@2: the name is reserved for a measure",
    ),
    (
        "subset named like a statistic",
        _set(["analysis"], {"subsets": {"iqm": ["add"]}}),
        r"analysis\.subsets\.iqm: the name is reserved for a measure",
    ),
    # a margin of half the scale or more makes a locked prediction unfalsifiable
    (
        "prediction margin of 0.5",
        _set(
            ["predictions"],
            [{"family": "data_policies", "arm": "difffilter", "direction": "not_worse", "margin": 0.5, "source": "s"}],
        ),
        r"predictions\[0\]\.margin: expected a positive number below 0\.5 \(score units, a scale of 0 to 1",
    ),
    (
        "default margin of 0.6",
        _margin_default,
        r"predictions\[0\]\.margin \(analysis\.equivalence_margin\): expected a positive number below 0\.5",
    ),
    (
        "subsets 1 and '1'",
        _set(["analysis"], {"subsets": {1: ["add"], "1": ["add"]}}),
        r"analysis\.subsets\.1: a second subset of that name",
    ),
]


@pytest.mark.parametrize(
    "mutate, match", [case[1:] for case in ANALYSIS_CASES], ids=[case[0] for case in ANALYSIS_CASES]
)
def test_hostile_analysis_config_is_refused_at_start(raw, mutate, match, tmp_path, monkeypatch):
    """The workflow's start (Snakefile) parses the whole validated config as the analysis will read it."""
    monkeypatch.chdir(tmp_path)
    mutate(raw)
    with pytest.raises(AnalysisInputError, match=r"^tiny\.yaml: " + match) as refused:
        parse_analysis_config(validate_config(raw, source="tiny.yaml"), source="tiny.yaml")
    assert "\n" not in str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_a_subset_may_weigh_an_lm_eval_task(raw):
    """The tasks of eval.lm_eval_tasks are benchmarks of the analysis: a subset or a prediction may name them."""
    _lm_eval_task("gsm8k", "math")(raw)
    raw["analysis"] = {"subsets": {"math": ["add", "gsm8k"]}}
    config = parse_analysis_config(validate_config(raw, source="tiny.yaml"), source="tiny.yaml")
    assert config.benchmarks["gsm8k"] == "math" and config.settings.subsets["math"] == {"add": 0.5, "gsm8k": 0.5}


YAML_BOMB = """experiment: bomb
a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
"""


@pytest.mark.parametrize(
    "name, text, match",
    [
        (
            "dup.yaml",
            TINY.read_text() + "seeds: [3, 4]\n",
            r"dup\.yaml: line \d+: duplicate key 'seeds' \(first at line \d+\)",
        ),
        (
            "dup.json",
            '{"experiment": "x", "analysis": {"alpha": 0.05, "alpha": 0.5}}',
            r"dup\.json: duplicate key\(s\) \['alpha'\]",
        ),
        ("bomb.yaml", YAML_BOMB, r"bomb\.yaml: its aliases expand to more than 200,000 nodes \(by line 7\)"),
        ("list.yaml", "- a\n- b\n", r"list\.yaml: expected a mapping at the top level, got list"),
        ("broken.yaml", "experiment: [unclosed\n", r"broken\.yaml: not valid YAML"),
        ("broken.json", '{"experiment": ', r"broken\.json: not valid JSON"),
        (
            "nan.yaml",
            "experiment: x\nanalysis: {alpha: .nan}\n",
            r"nan\.yaml: analysis\.alpha: expected a finite number",
        ),
        (
            "bell.yaml",
            "experiment: a\x07b\n",
            r"bell\.yaml: line 1: holds the control character U\+0007, which YAML does not allow",
        ),
        ("nul.yaml", "experiment: x\nnote: a\x00\n", r"nul\.yaml: line 2: holds the control character U\+0000"),
        ("escape.yaml", 'experiment: "x\\e[2J"\n', r"escape\.yaml: experiment: holds the control character U\+001B"),
        (
            "escape.json",
            '{"experiment": "x", "analysis": {"a\\u0007": 1}}',
            r"escape\.json: analysis\.'a\\x07': holds the control character U\+0007",
        ),
        ("newline-key.yaml", '"a\\nb": 1\n', r"newline-key\.yaml: 'a\\nb': holds the control character U\+000A"),
    ],
    ids=[
        "duplicate-yaml",
        "duplicate-json",
        "alias-bomb",
        "not-a-mapping",
        "bad-yaml",
        "bad-json",
        "nan",
        "raw-control-character",
        "raw-nul",
        "escaped-control-character",
        "json-escaped-control-character",
        "line-break-in-a-key",
    ],
)
def test_hostile_files_are_refused_by_the_one_loader(tmp_path, name, text, match):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_mapping(path)
    with pytest.raises(AnalysisInputError, match=match):  # `armlab analyze` loads through the same loader
        load_analysis_config(path)


def test_analyze_refuses_a_duplicated_alpha_instead_of_keeping_the_last(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "experiment: x\ncomparisons: [{family: f, reference: a, arms: [b]}]\nanalysis:\n  alpha: 0.05\n  alpha: 0.5\n"
    )
    with pytest.raises(AnalysisInputError, match=r"c\.yaml: line 5: duplicate key 'alpha'"):
        load_analysis_config(path)


def test_analyze_names_an_arm_whose_name_ends_in_a_space(tmp_path):
    """On 5a28ea2 an arm 'diff ' was analysed and shown as 'diff' (tables and HTML do not show the space)."""
    path = tmp_path / "c.yaml"
    path.write_text("experiment: x\ncomparisons: [{family: f, reference: a, arms: ['diff ']}]\n")
    with pytest.raises(AnalysisInputError, match=r"c\.yaml: comparisons\[0\]\.arms: 'diff ' begins or ends in white"):
        load_analysis_config(path)


def test_analyze_refuses_a_control_character_given_with_set(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("experiment: x\ncomparisons: [{family: f, reference: a, arms: [b]}]\n")
    with pytest.raises(
        AnalysisInputError, match=r"c\.yaml: comparisons\[0\]\.family: holds the control character U\+001B"
    ):
        load_analysis_config(path, ['comparisons=[{family: "f\\e[2J", reference: a, arms: [b]}]'])


def _workflow(root, configfile, *extra):
    return fork_server.run_snakemake(
        ["-s", str(REPO / "Snakefile"), "--configfile", str(configfile), "--cores", "1", *extra], root
    )


@pytest.mark.parametrize(
    "mutate, message",
    [
        (_set(["analysis"], {"alpah": 0.1}), "analysis: unknown key(s) ['alpah']"),
        (_set(["analysis"], {"resamples": 10**9}), "analysis.resamples: 1000000000 is above the limit"),
        (_rename_arm("--help"), "arms.--help: '--help' is not a valid name"),
        (_rename_arm("a" * 20), "ends in 'a' repeated 20 or more times"),
        (_rename_benchmark("flat"), "benchmarks.flat: 'flat' is the name of a built-in summary"),
        (_set(["analysis"], {"rankings": {"all": ["grpo", "ppo"]}}), "analysis.rankings.all: arm(s) ['ppo'] do not"),
        (_set(["eval", "temperature"], 1e-300), "eval.temperature: 1e-300 is below the minimum"),
    ],
    ids=[
        "analysis-typo",
        "analysis-resamples",
        "arm-option",
        "periodic-arm",
        "benchmark-flat",
        "ranking",
        "temperature",
    ],
)
def test_the_workflow_refuses_before_any_job(raw, tmp_path, mutate, message):
    mutate(raw)
    (tmp_path / "cfg").mkdir()
    bad = tmp_path / "cfg" / "bad.yaml"
    bad.write_text(yaml.safe_dump(raw))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    proc = _workflow(run_dir, bad)
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr
    assert not (run_dir / "results").exists()


def test_the_workflow_refuses_a_duplicate_key_in_a_configfile(tmp_path):
    bad = tmp_path / "dup.yaml"
    bad.write_text(TINY.read_text() + "recipe: {steps: 2}\n")
    proc = _workflow(tmp_path, bad, "-n")
    assert proc.returncode != 0
    assert "duplicate key 'recipe'" in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()


def test_command_line_config_values_update_the_file(tmp_path):
    """`--config` still works, and updates the named file only (not the demo)."""
    proc = _workflow(
        tmp_path,
        TINY,
        "--config",
        "threads=2",
        "-n",
        "--printshellcmds",
        "--workflow-profile",
        "none",  # its quiet: [rules] hides the shell commands
        "results/tiny/config/data.json",
        "results/tiny/config/base.json",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    view = json.loads(out.split("armlab.views results/tiny/config/base.json ")[1].split(" > ")[0].strip("'"))
    assert view["threads"] == 2 and sorted(view["benchmarks"]) == ["add", "boolexpr", "mod", "units"]


def test_a_raised_analysis_limit_reaches_the_analysis_job(raw):
    """The analyze job reads config/analysis.json: the view must carry the raised limit, or the job refuses late."""
    from armlab.experiment.stages import stage_config

    raw["analysis"] = {"resamples": 2_000_000}
    raw["limits"] = {"resamples": 3_000_000}
    view = stage_config(validate_config(raw, source="tiny.yaml"), "analysis")
    assert parse_analysis_config(view, source="analysis.json").settings.resamples == 2_000_000


def test_include_shares_a_block_and_the_file_updates_it(tmp_path):
    (tmp_path / "shared.yaml").write_text("model: {d_model: 32, n_layer: 1}\nseeds: [1]\n")
    (tmp_path / "exp.yaml").write_text("include: shared.yaml\nexperiment: x\nmodel: {n_layer: 2}\n")
    assert load_mapping(tmp_path / "exp.yaml") == {
        "model": {"d_model": 32, "n_layer": 2},
        "seeds": [1],
        "experiment": "x",
    }


def _include_chain(depth):
    """Files a.yaml -> c1.yaml -> ... -> c<depth>.yaml, each including the next."""
    names = ["a.yaml", *(f"c{i}.yaml" for i in range(1, depth + 1))]
    return {name: f"include: {after}\nk{i}: 1\n" for i, (name, after) in enumerate(zip(names, names[1:]))} | {
        names[-1]: "experiment: x\n"
    }


def test_an_include_chain_at_the_depth_limit_loads(tmp_path):
    for name, text in _include_chain(MAX_INCLUDE_DEPTH - 1).items():
        (tmp_path / name).write_text(text)
    assert load_mapping(tmp_path / "a.yaml")["experiment"] == "x"


@pytest.mark.parametrize(
    "files, match",
    [
        ({"a.yaml": "include: a.yaml\n"}, r"a\.yaml: include: the file includes itself"),
        ({"a.yaml": "include: b.yaml\n", "b.yaml": "include: a.yaml\n"}, r"include: the file includes itself"),
        ({"a.yaml": "include: missing.yaml\n"}, r"a\.yaml: include: 'missing\.yaml' is not a file"),
        ({"a.yaml": "include: [3]\n"}, r"a\.yaml: include: expected a file name or a list of file names, got \[3\]"),
        ({"a.yaml": "include: b.yaml\n", "b.yaml": "x: 1\nx: 2\n"}, r"b\.yaml: line 2: duplicate key 'x'"),
        (
            _include_chain(1000),
            rf"c{MAX_INCLUDE_DEPTH}\.yaml: include: {MAX_INCLUDE_DEPTH + 1} files deep \(from .*a\.yaml\), more than",
        ),
    ],
    ids=["self", "cycle", "missing", "not-a-name", "bad-included-file", "1000-deep"],
)
def test_hostile_includes(tmp_path, files, match):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_mapping(tmp_path / "a.yaml")


# ----------------------------------------------------------------------------- fourth round (issue 51): the start

GSM = [{"question": f"{i}+1=", "answer": f"#### {i + 1}"} for i in range(10)]
GPQA_HEADER = [
    "Record ID",
    "Question",
    "Correct Answer",
    "Incorrect Answer 1",
    "Incorrect Answer 2",
    "Incorrect Answer 3",
]
REASONING_GYM = REPO / "config" / "experiments" / "reasoning_gym.yaml"


def _jsonl(rows):
    return "".join(json.dumps(row) + "\n" for row in rows)


def _csv(header, *rows):
    import csv
    import io

    text = io.StringIO()
    csv.writer(text).writerows([header, *rows])
    return text.getvalue()


def _external(name, text, fmt="gsm8k", prompt="{question}", **top):
    """A config over the tiny experiment with one eval.external benchmark read from file ``name`` holding ``text``
    (a str, or bytes written as they are), in format ``fmt``; ``top``: more top-level keys."""

    def make(folder):
        path = folder / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        external = {"ext": {"source": "file", "format": fmt, "path": str(path), "domain": "math", "prompt": prompt}}
        override = {"eval": {"max_gen_toks": 5, "samples": 2, "temperature": 1.0, "external": external}, **top}
        (folder / "exp.json").write_text(json.dumps(override))
        return [TINY, folder / "exp.json"]

    return make


def _over(base, override):
    """``base`` updated by the JSON ``override`` (as a second --configfile)."""

    def make(folder):
        (folder / "exp.json").write_text(json.dumps(override))
        return [base, folder / "exp.json"]

    return make


def _training_prompt(prompt):
    return _over(REASONING_GYM, {"trl": {"reasoning_gym": {"arith": {"prompt": prompt}}}})


def _external_twin(twin):
    """The gsm8k benchmark of :func:`_external` with ``twin``: a JSON-lines text written beside it as its twin file
    (a str), or the value itself."""

    def make(folder):
        paths = _external("gsm.jsonl", _jsonl(GSM))(folder)
        override = json.loads(paths[1].read_text())
        if isinstance(twin, str):
            (folder / "twin.jsonl").write_text(twin)
        override["eval"]["external"]["ext"]["twin"] = str(folder / "twin.jsonl") if isinstance(twin, str) else twin
        paths[1].write_text(json.dumps(override))
        return paths

    return make


START_CASES = {
    # a twin file (contamination screen, issue 55) is read like its benchmark's and holds fresh items only
    "a twin file that repeats a published item": (
        _external_twin(_jsonl([{"question": "7+1=", "answer": "#### 8"}, {"question": "20+1=", "answer": "#### 21"}])),
        r"eval\.external\.ext\.twin: item ext__twin-00000 has the prompt of the benchmark's item ext-00007; a twin "
        r"holds fresh items",
    ),
    "a twin file without the format's fields": (
        _external_twin(_jsonl([{"problem": "20+1=", "answer": "#### 21"}])),
        r"eval\.external\.ext\.twin: .*twin\.jsonl: row 0: no field 'question'",
    ),
    "a file benchmark's twin that is not a file": (
        _external_twin(True),
        r"eval\.external\.ext\.twin: expected the path of a file of fresh items in the gsm8k format",
    ),
    # format specs: a width or precision is bounded by the prompt limit, the spec is checked before any prompt
    "a width of 400 million": (
        _external("gsm.jsonl", _jsonl(GSM), prompt="{question:>400000000}"),
        r"eval\.external\.ext\.prompt: .*asks for a width of 400000000 characters, above the limit of 65536 on a "
        r"prompt; set limits\.prompt_chars",
    ),
    "a precision of 20 digits": (
        _external("gsm.jsonl", _jsonl(GSM), prompt="{question:.99999999999999999999}"),
        r"eval\.external\.ext\.prompt: .*asks for a precision of 99999999999999999999 characters",
    ),
    "{options} in a format without options": (
        _external("gsm.jsonl", _jsonl(GSM), prompt="{question}\n{options}"),
        r"eval\.external\.ext\.prompt: .* is not a template of \{question\}: it names \{options\}",
    ),
    "an unknown format code": (
        _external("gsm.jsonl", _jsonl(GSM), prompt="{question:d}"),
        r"eval\.external\.ext\.prompt: .*its format spec 'd' does not format a text \(Unknown format code 'd'",
    ),
    "an unknown conversion": (
        _external("gsm.jsonl", _jsonl(GSM), prompt="{question!x}"),
        r"eval\.external\.ext\.prompt: .*it converts a field with !x, which is not !r, !s or !a",
    ),
    "a field inside a format spec": (
        _external("gsm.jsonl", _jsonl(GSM), fmt="gpqa_diamond", prompt="{question:{letters}}"),
        r"eval\.external\.ext\.prompt: .*its format spec '\{letters\}' holds a field",
    ),
    "a width of 400 million in a training prompt": (
        _training_prompt("{question:>400000000}"),
        r"trl\.reasoning_gym\.arith\.prompt: .*asks for a width of 400000000 characters",
    ),
    "an unknown format code in a training prompt": (
        _training_prompt("{question:d}"),
        r"trl\.reasoning_gym\.arith\.prompt: .*Unknown format code 'd'",
    ),
    "a prompt above limits.prompt_chars": (
        _external("gsm.jsonl", _jsonl(GSM), limits={"prompt_chars": 3}),
        r"eval\.external\.ext\.path: .*gsm\.jsonl: row 0 \(item ext-00000\): its prompt is 4 characters, above the "
        r"limit of 3; set limits\.prompt_chars",
    ),
    # every reader of a benchmark file within limits:
    "a benchmark file above input_file_bytes": (
        _external("gsm.jsonl", _jsonl(GSM), limits={"input_file_bytes": 100}),
        r"eval\.external\.ext\.path: .*gsm\.jsonl: benchmark file is \d+ bytes, above the limit of 100 bytes; set "
        r"limits\.input_file_bytes",
    ),
    "a benchmark line above input_line_bytes": (
        _external(
            "gsm.jsonl",
            _jsonl([{"question": "1+1=" + " " * 500, "answer": "#### 2"}]),
            limits={"input_line_bytes": 200},
        ),
        r"eval\.external\.ext\.path: .*gsm\.jsonl line 1: longer than the limit of 200 bytes; set "
        r"limits\.input_line_bytes",
    ),
    "a CSV field above input_line_bytes": (
        _external(
            "gpqa.csv",
            _csv(GPQA_HEADER, ["r1", "Q" * 3000, "a", "b", "c", "d"]),
            fmt="gpqa_diamond",
            prompt="{question}",
            limits={"input_line_bytes": 1000},
        ),
        r"eval\.external\.ext\.path: .*gpqa\.csv: line 2: a field longer than the limit of 1000 bytes; set "
        r"limits\.input_line_bytes",
    ),
    "a CSV field above Python's own field limit": (
        _external("gpqa.csv", _csv(GPQA_HEADER, ["r1", "Q" * 200_000, "a", "b", "c", "d"]), fmt="gpqa_diamond"),
        r"gpqa\.csv: row 0 \(item r1\): its prompt is \d+ characters, above the limit of 65536",
    ),
    "a key twice in a JSON-lines file": (
        _external("gsm.jsonl", '{"question": "1+1=", "question": "2+2=", "answer": "#### 4"}\n'),
        r"gsm\.jsonl: line 1: holds the key 'question' twice in one object",
    ),
    "a key twice in a JSON file": (
        _external("gsm.json", '[{"question": "1+1=", "answer": "#### 2", "answer": "#### 3"}]'),
        r"gsm\.json: benchmark file holds the key 'answer' twice in one object",
    ),
    "a column twice in a CSV file": (
        _external(
            "gpqa.csv", _csv([*GPQA_HEADER, "Question"], ["r1", "Q?", "a", "b", "c", "d", "other"]), fmt="gpqa_diamond"
        ),
        r"gpqa\.csv: line 1: column\(s\) \['Question'\] appear more than once in the header",
    ),
    "a FIFO as the benchmark file": (
        lambda folder: _fifo_external(folder),
        r"gsm\.jsonl: benchmark file is a FIFO \(named pipe\), not a regular file",
    ),
    # clear messages
    "a question that is a number": (
        _external("gsm.jsonl", _jsonl([{"question": 7, "answer": "#### 7"}])),
        r"gsm\.jsonl: row 0: 'question' is '7' \(a JSON number\); expected the question's text",
    ),
    "a question that is an object": (
        _external("gsm.jsonl", _jsonl([{"question": {"text": "1+1="}, "answer": "#### 2"}])),
        r"row 0: 'question' is \"\{'text': '1\+1='\}\" \(a JSON object\)",
    ),
    "a header of one column": (
        _external("gpqa.csv", _csv(["Frage"], ["Was?"]), fmt="gpqa_diamond"),
        r"gpqa\.csv: row 0: no field 'Question'; the row has \['Frage'\]",
    ),
    # checks as strong as documented
    "a reference math-verify reads only as its raw text": (
        _external("m.jsonl", _jsonl([{"problem": "p", "answer": "\\frac{1}{", "unique_id": "a"}]), fmt="math500"),
        r"eval\.external\.ext: item a: reference answer '\\\\frac\{1\}\{': math-verify reads nothing from it but "
        r"its raw text",
    ),
    "a reference that is null": (
        _external("m.jsonl", _jsonl([{"problem": "p", "answer": None, "unique_id": "a"}]), fmt="math500"),
        r"item a: reference answer 'None': math-verify reads the word 'None' as the product of its letters",
    ),
    "a reference in prose": (
        _external("m.jsonl", _jsonl([{"problem": "p", "answer": "the area is 5", "unique_id": "a"}]), fmt="math500"),
        r"item a: reference answer 'the area is 5': math-verify reads the word 'the' as the product of its letters",
    ),
    "a vllm_python that is no interpreter": (
        _over(
            TINY,
            {
                "backend": "trl",
                "arms": {"difffilter": {"data_policy": "uniform", "lr": 0.001}},
                "eval": {"engine": "vllm", "vllm_python": str(REPO / "README.md")},
            },
        ),
        r"eval\.engine: vllm: .*README\.md cannot be run",
    ),
    "an lm-eval task whose data are not cached": (
        _over(TINY, {"eval": {"pass_k": [1], "lm_eval_tasks": {"gsm8k": {"domain": "math"}}}}),
        r"eval\.lm_eval_tasks\.gsm8k: its data \(openai/gsm8k, main\) are not in the Hugging Face cache",
    ),
    # late: refused when the base policy's job starts
    "a base batch larger than the pools": (
        _over(TINY, {"data": {"pool_per_benchmark": 5}}),
        r"data\.pool_per_benchmark: 5 prompts x 4 benchmark\(s\) = 20, fewer than base\.batch_size 32",
    ),
}


def test_a_byte_order_mark_is_not_part_of_a_benchmark_file_s_first_column(tmp_path):
    """A CSV saved by a spreadsheet starts with U+FEFF: on 5a28ea2 GPQA's first column, "Record ID", was missing."""
    from armlab.evals.catalogue import external_items

    configs = _external(
        "gpqa.csv", b"\xef\xbb\xbf" + _csv(GPQA_HEADER, ["r1", "Q?", "a", "b", "c", "d"]).encode(), fmt="gpqa_diamond"
    )(tmp_path)
    config = json.loads(configs[1].read_text()) | {"experiment": "x", "benchmarks": {}}
    assert [item["id"] for item in external_items(config)["ext"]] == ["r1"]


def _fifo_external(folder):
    paths = _external("other.jsonl", _jsonl(GSM))(folder)
    os.mkfifo(folder / "gsm.jsonl")
    override = json.loads(paths[1].read_text())
    override["eval"]["external"]["ext"]["path"] = str(folder / "gsm.jsonl")
    paths[1].write_text(json.dumps(override))
    return paths


# on 5a28ea2 these built prompts of 400 MB each (4.1 GB for 10 items, 4.9 GB of training prompts)
MEMORY_CASES = ("a width of 400 million", "a precision of 20 digits", "a width of 400 million in a training prompt")


@pytest.mark.parametrize("case", START_CASES)
def test_hostile_inputs_read_at_the_start_are_one_line_before_any_job(case, tmp_path, monkeypatch):
    """experiment.load, the Snakefile's first step: one line naming the key, file or row, before any job and without
    building what the input asks for, and nothing written. On 5a28ea2 each was a traceback, a silent misreading, a
    failure in a job or, for :data:`MEMORY_CASES`, gigabytes of memory (here: Python's allocations stay below
    256 MiB, imports included)."""
    import tracemalloc

    from armlab import experiment

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    (tmp_path / "in").mkdir()
    configs = START_CASES[case][0](tmp_path / "in")
    if case in MEMORY_CASES:
        tracemalloc.start()
    try:
        with pytest.raises((ConfigError, AnalysisInputError), match=START_CASES[case][1]) as refused:
            experiment.load(configs)
        if case in MEMORY_CASES:
            assert tracemalloc.get_traced_memory()[1] < 2**28
    finally:
        tracemalloc.stop()
    assert "\n" not in str(refused.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]  # nothing written, no results folder


def _plain_list(items):
    return "experiment: x\nitems:\n" + "".join(f"  - {i}\n" for i in range(items))


@pytest.mark.parametrize(
    "name, text, match",
    [
        (
            "list.yaml",
            _plain_list(250_000),
            r"list\.yaml: it holds more than 200,000 nodes \(by line 199998\); a config this large is refused",
        ),
        ("deep.yaml", "experiment: " + "[" * 100_000 + "]" * 100_000 + "\n", r"deep\.yaml: .*nested more than 64"),
        ("deep.json", '{"experiment": ' + "[" * 100_000 + "]" * 100_000 + "}", r"deep\.json: .*nested more than 64"),
        ("nested.yaml", "experiment: " + "[" * 65 + "]" * 65 + "\n", r"nested\.yaml: line 1: .*nested more than 64"),
    ],
    ids=["plain-list", "deep-yaml", "deep-json", "just-too-deep"],
)
def test_a_large_or_deep_config_is_refused_before_it_is_built(tmp_path, monkeypatch, name, text, match):
    """On 5a28ea2 a plain list of 2 MB was composed whole (a 19 MB one took 262 s) and then refused as an alias bomb,
    and nesting 100,000 deep was a RecursionError. The count runs on the parser's events: the document is never
    composed (the loader's composer is a tripwire here)."""
    from armlab import configfile

    def tripwire(*args, **kwargs):
        raise AssertionError("the document was composed before its size was checked")

    monkeypatch.setattr(configfile._StrictLoader, "compose_document", tripwire)
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match=match) as refused:
        load_mapping(path)
    assert "\n" not in str(refused.value)


CLI_CASES = {
    "plan --seeds above limits.seeds": (
        ["plan", TINY, "--seeds", "5000"],
        "tiny.yaml: --seeds: 5000 is above the limit of 1000; set limits.seeds in the config to allow it",
    ),
    "plan --seeds of 99 billion": (["plan", TINY, "--seeds", "99999999999"], "--seeds: 99999999999 is above the limit"),
    "probe --steps above limits.steps": (
        ["probe", TINY, "--steps", "1000000000"],
        "tiny.yaml: --steps: 1000000000 is above the limit of 100000; set limits.steps",
    ),
}


@pytest.mark.parametrize("case", CLI_CASES)
def test_a_command_line_number_is_under_the_config_s_limit(case, tmp_path, monkeypatch, capsys):
    """On 5a28ea2 `armlab plan --seeds 5000` took 36 s and 5 GB, and a larger number was a traceback."""
    from hostile import assert_refused

    argv, message = CLI_CASES[case]
    assert_refused(tmp_path, monkeypatch, capsys, "armlab", argv, message)
