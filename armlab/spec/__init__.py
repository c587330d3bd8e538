"""What an experiment is: one frozen, typed dataclass per config section, each field's type, default, range and
meaning written once, here, as cleanrl and TRL write theirs.

Everything else reads these: the JSON schema ``workflows/schemas/config.schema.yaml`` and the settings tables of
``docs/settings.md`` (and the recipe table of ``docs/methods.md``) are generated from them (:mod:`armlab.schema`;
``python -m armlab.spec --check`` fails when a generated file differs, ``--write`` rewrites them), the analysis
validates its section against their ranges, and the statistics' keyword defaults are :data:`DEFAULT_ANALYSIS`'s.

A field is written ``name: type = setting(default, help=..., <JSON-schema keywords>)``:

- its type is the annotation (``Literal[...]`` is an enum of its values; ``X | None`` with default None is a key a
  config may leave out, absent from the resolved config; ``Annotated[T, Keywords(...)]`` puts schema keywords on
  an item type);
- its default is the dataclass default. The schema fills it into the resolved config, except where the field says
  ``fill=False`` (a key whose absence keeps the meaning, and the hashes, of configs written before it) or its
  section is checked by its own parser (``SCHEMA = "documented"``: the analysis and the plan);
- ``shown`` words a default that is another setting (``analysis.equivalence_margin``);
- the keywords (``minimum``, ``exclusiveMaximum``, ``minLength``, ...) are its range, as JSON schema writes it.

The record formats of the experiment's locks and ledgers (``predictions/lock.json``, ``sequential/design.json``,
``sequential/looks.jsonl``, a run's ``ledger.parquet``) are the contracts at the end of this module.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal

INT64_MAX = 2**63 - 1
# names that become paths (armlab/configfile.py NAME_PATTERN checks them whole, with a one-line error)
NAME_SCHEMA_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class Keywords(dict[str, Any]):
    """JSON-schema keywords of an item type, in ``Annotated[T, Keywords(minimum=1)]`` (hashable, as typing needs)."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))


def setting(
    default: Any = MISSING,
    *,
    help: str,
    factory: Callable[[], Any] | None = None,
    fill: bool = True,
    shown: str | None = None,
    optional: bool = False,
    nullable: bool = False,
    **keywords: Any,
) -> Any:
    """A field of a section: its default (or ``factory``), its one-line meaning, and its range as JSON-schema
    ``keywords``. ``optional``: a field a typed record always holds but a config may leave out (its parser fills it;
    ``shown`` says with what). ``nullable``: a config may write ``null`` (the schema's type admits it)."""
    metadata = {
        "help": " ".join(help.split()),
        "fill": fill,
        "shown": shown,
        "optional": optional,
        "nullable": nullable,
        "keywords": keywords,
    }
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class Setting:
    """One field of a section as the generators and parsers read it."""

    name: str
    type: Any  # the resolved annotation, Annotated extras included
    default: Any  # MISSING for a required field
    help: str
    fill: bool
    shown: str | None
    optional: bool
    nullable: bool
    keywords: Mapping[str, Any]

    @property
    def required(self) -> bool:
        """Whether a config must give the key."""
        return self.default is MISSING and not self.optional


@functools.cache
def settings_of(section: type) -> tuple[Setting, ...]:
    """The fields of ``section`` (a dataclass of this module), in order, with their resolved types."""
    hints = typing.get_type_hints(section, include_extras=True)
    out = []
    for f in dataclasses.fields(section):
        if f.default is not MISSING:
            default = f.default
        elif f.default_factory is not MISSING:
            default = f.default_factory()
        else:
            default = MISSING
        meta = f.metadata
        out.append(
            Setting(
                f.name,
                hints[f.name],
                default,
                meta["help"],
                meta["fill"],
                meta["shown"],
                meta["optional"],
                meta["nullable"],
                meta["keywords"],
            )
        )
    return tuple(out)


def default_of(section: type, name: str) -> Any:
    """The default of field ``name`` of ``section``: what a stage takes for a key the config leaves out."""
    found = next(s for s in settings_of(section) if s.name == name)
    if found.default is MISSING:
        raise KeyError(f"{section.__name__}.{name} has no default")
    return found.default


def parse(section: type, data: Mapping[str, Any] | None) -> Any:
    """``section`` made from its part of a validated config (a stage view): nested sections typed, lists as
    tuples, the keys the config left out at their defaults. Unknown keys are an error (the config was not
    validated against this spec)."""
    data = data or {}
    unknown = sorted(set(data) - {s.name for s in settings_of(section)})
    if unknown:
        raise KeyError(f"{section.__name__}: unknown key(s) {unknown}")
    if hasattr(section, "from_dict"):  # a section with its own reading of plain data (the recipe's methods)
        return section.from_dict(data)
    return section(**{s.name: _typed(s.type, data[s.name]) for s in settings_of(section) if s.name in data})


def _typed(hint: Any, value: Any) -> Any:
    """``value`` (plain data) as ``hint`` holds it."""
    hint = _strip(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if value is None:
        return None
    if dataclasses.is_dataclass(hint) and isinstance(value, Mapping):
        return parse(hint, value)  # type: ignore[arg-type]
    if origin in (typing.Union, _UNION) or origin is None:
        for arg in (a for a in args if a is not type(None)) if args else ():
            arg = _strip(arg)
            if dataclasses.is_dataclass(arg) and isinstance(value, Mapping):
                return parse(arg, value)  # type: ignore[arg-type]
            if typing.get_origin(arg) is tuple and isinstance(value, list):
                return _typed(arg, value)
            if typing.get_origin(arg) in (dict, Mapping) and isinstance(value, Mapping):
                return _typed(arg, value)
        return value
    if origin is tuple and isinstance(value, list):
        return tuple(_typed(args[0], item) for item in value)
    if origin in (dict, Mapping) and isinstance(value, Mapping) and len(args) == 2:
        return {key: _typed(args[1], item) for key, item in value.items()}
    return value


_UNION = type(int | None)


def _strip(hint: Any) -> Any:
    """``hint`` without its ``Annotated`` extras."""
    return typing.get_args(hint)[0] if typing.get_origin(hint) is Annotated else hint


def plain(value: Any, method: bool = False) -> Any:
    """A default as a config writes it: a section as {} (the schema fills its keys), tuples as lists, a ``method``
    of no parameters by its name."""
    if dataclasses.is_dataclass(value):
        return {}
    if isinstance(value, Mapping):
        if method and set(value) == {"name"}:
            return value["name"]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    return value


# ----------------------------------------------------------------------------------------------------- item types

Seed = Annotated[int, Keywords(minimum=0, maximum=INT64_MAX)]
Limit = Annotated[int, Keywords(minimum=1)]
Positive = Annotated[int, Keywords(minimum=1)]
# a method of the recipe (estimator, data policy, policy loss) in its dict form, read-only: {"name": ..., **params};
# a config writes a name or {name, ...parameters} (the schema's definitions.method)
METHOD_REF = Keywords({"$ref": "#/definitions/method"})
Method = Annotated[Mapping[str, Any], METHOD_REF]
METHOD_FIELDS = ("estimator", "data_policy", "policy_loss")  # the recipe's fields that hold one


def method_spec(value: str | Mapping[str, Any]) -> Mapping[str, Any]:
    """Normalise ``"name"`` or ``{"name": ..., **params}`` to the read-only dict form."""
    return MappingProxyType({"name": value} if isinstance(value, str) else dict(value))


# ------------------------------------------------------------------------------------------------------- sections


@dataclass(frozen=True, kw_only=True)
class SequentialDesign:
    """A group-sequential seed design (docs/statistics.md, "Sequential seeds")."""

    initial: int = setting(help="seeds per arm at the first look", minimum=2)
    wave: int = setting(help="seeds added per look to each arm still undecided", minimum=1)
    max: int = setting(help="most seeds an arm can get (the fixed design's count)", minimum=2)
    start: int = setting(1, fill=False, help="the first seed; seeds run in increasing order", minimum=0)
    spending: str = setting(
        "obrien_fleming",
        fill=False,
        help="""Lan-DeMets error-spending function (armlab.analysis.stats.sequential SPENDING): obrien_fleming
        spends little early (stops early only for large effects), pocock evenly (stops earlier, slightly less power
        at max)""",
        enum=["obrien_fleming", "pocock"],
    )
    margin: float | None = setting(
        None,
        nullable=True,
        shown="analysis.equivalence_margin",
        help="equivalence margin (score units) for stopping for equivalence, or null (the default)",
        exclusiveMinimum=0,
    )


@dataclass(frozen=True, kw_only=True)
class Limits:
    """The sizes a config and its input files may reach: past these a typo (steps: 10**12) would run for days or
    exhaust memory instead of failing at once. A config raises one on purpose in its `limits:` section."""

    SCHEMA: ClassVar[str] = "open"  # every key optional and unfilled; unknown keys refused by armlab.configfile
    VALUES: ClassVar[Any] = Limit

    steps: Limit = setting(100_000, help="the largest recipe.steps")
    group_size: Limit = setting(1024, help="the largest recipe.group_size")
    prompts_per_step: Limit = setting(65_536, help="the largest recipe.prompts_per_step")
    updates_per_batch: Limit = setting(64, help="the largest recipe.updates_per_batch")
    max_new_tokens: Limit = setting(4096, help="the largest recipe.max_new_tokens")
    base_steps: Limit = setting(1_000_000, help="the largest base.steps")
    pool_per_benchmark: Limit = setting(
        1_000_000, help="the largest data.pool_per_benchmark (and trl.reasoning_gym's n_items)"
    )
    n_items: Limit = setting(100_000, help="the largest benchmarks.<name>.n_items")
    seeds: Limit = setting(
        1000, help="the most seeds: len(seeds), or seeds.max of a sequential design (also armlab plan --seeds)"
    )
    samples: Limit = setting(4096, help="the largest eval.samples")
    prompt_chars: Limit = setting(
        65_536, help="the longest prompt of eval.external or trl.reasoning_gym, and a template's width or precision"
    )
    resamples: Limit = setting(1_000_000, help="the largest analysis.resamples")
    sign_flip_resamples: Limit = setting(10_000_000, help="the largest analysis.sign_flip_resamples")
    exact_max_seeds: Limit = setting(22, help="the largest analysis.exact_max_seeds (2^n sign patterns are enumerated)")
    # input files, checked before they are read: a mistaken path (a 1 TB disk image) fails at once
    input_file_bytes: Limit = setting(
        8 * 2**30, help="bytes of an input file of the analysis (a scores table, CSV, verl dump or lm-eval samples)"
    )
    json_file_bytes: Limit = setting(
        512 * 2**20, help="bytes of a JSON file parsed whole (lm-eval results, manifests, locks)"
    )
    input_line_bytes: Limit = setting(64 * 2**20, help="bytes of one line of a JSON-lines input")
    # a checkpoint trained elsewhere (backend checkpoints), checked before any job: a pattern that names a disk
    # instead of a model folder fails at once instead of hashing it
    checkpoint_bytes: Limit = setting(
        2**40, help="bytes of all the files of one checkpoint folder (backend checkpoints)"
    )
    checkpoint_files: Limit = setting(10_000, help="files of one checkpoint folder (backend checkpoints)")


@dataclass(frozen=True, kw_only=True)
class Command:
    """The command backend (training/backends/command.py)."""

    template: str | tuple[str, ...] = setting(
        help="""the trainer's command per (arm, seed); placeholders {arm} {seed} {estimator} {data_policy}
        {output_dir}, any recipe field ({steps}, {lr} …) and the fields of `estimator_fields`. Run without a shell: a
        list is one argument per item, a string is split into words like shlex.split (shell syntax such as ; && | >
        $ or backticks outside quotes is refused), and each value is filled into its own word, never re-parsed""",
        minLength=1,
        minItems=1,
    )
    shell: bool = setting(
        False,
        help="""the escape hatch: run the string template with /bin/bash -c, every value shell-quoted; placeholders
        inside quotes, $(...) or after a backslash, heredocs and backticks are refused""",
    )
    checkpoint: str = setting(
        help="""glob, relative to {output_dir}, of the checkpoint the trainer writes (Hugging Face format); the last
        match in sorted order is used""",
        minLength=1,
    )
    estimator_fields: dict[str, dict[str, str | float | bool]] = setting(
        factory=dict,
        help="""per estimator name, extra placeholders for the template (e.g. verl's adv_estimator,
        norm_adv_by_std_in_grpo); each value a name, a number or a boolean""",
    )
    base_checkpoint: str | None = setting(None, help="a Hugging Face checkpoint evaluated as arm 'base' (optional)")
    gpus: int = setting(1, help="GPUs per training job", minimum=0)
    eval_gpus: int = setting(1, help="GPUs per evaluation job", minimum=0)
    mem_mb: int = setting(64000, help="memory per training job", minimum=1)
    runtime: int = setting(1440, help="minutes per training job", minimum=1)


@dataclass(frozen=True, kw_only=True)
class ReasoningGymPool:
    """Training prompts drawn from one reasoning-gym dataset (the TRL backend)."""

    dataset: str = setting(help="a reasoning-gym dataset name (reasoning_gym.factory.DATASETS)", minLength=1)
    config: Mapping[str, Any] = setting(factory=dict, help="the dataset's config keywords")
    domain: str = setting(help="the domain whose training pool the prompts join", minLength=1)
    n_items: int | None = setting(None, shown="data.pool_per_benchmark", help="distinct prompts drawn", minimum=1)
    prompt: str = setting("{question}", fill=False, help="the prompt's template of {question}", minLength=1)


@dataclass(frozen=True, kw_only=True)
class Trl:
    """The TRL backend (training/backends/trl_backend.py)."""

    model: str | None = setting(
        None,
        help="""a local Hugging Face checkpoint to start from (evaluated as arm 'base'); builtin_base = the builtin
        base policy (trained as for the builtin backend), exported to a Hugging Face checkpoint (rule export_base)
        that every run starts from and that lm-eval's hf model evaluates as arm 'base'; omitted = a tiny random
        Qwen2 sized by `model`""",
        minLength=1,
    )
    gpus: int = setting(0, help="GPUs per training job", minimum=0)
    eval_gpus: int = setting(0, help="GPUs per evaluation job", minimum=0)
    mem_mb: int = setting(4000, help="memory per training job", minimum=1)
    runtime: int = setting(120, help="minutes per training job", minimum=1)
    reasoning_gym: dict[str, ReasoningGymPool] | None = setting(
        None,
        help="""training prompts drawn from reasoning-gym's generators (pip install 'armlab[reasoning_gym]'),
        beside the benchmarks' pools: name -> a dataset, its config and the domain whose pool its n_items distinct
        prompts join, seeded from (experiment, name, "train"); rewarded by the dataset's own score_answer (1 at full
        credit, else 0) on the completion's last <answer>...</answer> or all of it; never the question of an item of
        eval.external's reasoning-gym benchmarks. Every arm must train with TRL""",
    )


@dataclass(frozen=True, kw_only=True)
class StepLog:
    """Each run's training log, for the checkpoints backend."""

    kind: Literal["armlab", "jsonl", "trl", "wandb"] = setting(
        help="""what the logs are, a kind of `armlab steps` (analysis/inputs/steps.py STEP_LOGS): trl = TRL's
        trainer_state.json, wandb = a W&B run history (CSV or JSON lines), jsonl = one JSON object per step, armlab =
        armlab's own steps.parquet"""
    )
    pattern: str = setting(help="each run's log file, a path with {arm} and {seed}", minLength=1)
    fields: dict[str, Annotated[str, Keywords(minLength=1)]] = setting(
        factory=dict,
        help="armlab's name -> the log's field, as `armlab steps --field` (e.g. {cum_flops: perf/total_flops})",
    )


@dataclass(frozen=True, kw_only=True)
class Checkpoints:
    """The checkpoints backend (training/backends/checkpoints.py)."""

    pattern: str | None = setting(
        None,
        help="""each run's final checkpoint, a path with {arm} and {seed} (e.g. ckpts/{arm}/seed-{seed}/hf); exactly
        one folder must match per (arm, seed). Omitted: the last of `steps`' checkpoints""",
        minLength=1,
    )
    steps: str | None = setting(
        None,
        help="""each run's intermediate checkpoints, a path with {arm}, {seed} and {step} (a whole number, leading
        zeros allowed), e.g. ckpts/{arm}/seed-{seed}/global_step_{step}/actor/huggingface: the learning_curves target
        evaluates them""",
        minLength=1,
    )
    final_step: int | None = setting(
        None, help="the step of the final checkpoint (`pattern`) where it is not one of `steps`' matches", minimum=0
    )
    base: str | None = setting(
        None,
        help="""a Hugging Face model folder evaluated (and recorded) as arm 'base', e.g. the model the runs started
        from""",
        minLength=1,
    )
    step_log: StepLog | None = setting(
        None,
        help="""each run's training log, read as `armlab steps` reads it into the run's steps.parquet (the report's
        training curves); its columns named like the compute ledger's running totals (cum_prompts,
        cum_rollout_tokens, cum_trained_tokens, cum_gradient_updates, cum_seconds, cum_flops; map a log's own names
        with `fields`) become the run's ledger.parquet, and without them the run has no ledger: equal-compute
        comparisons say so""",
    )
    streams_of: str | None = setting(
        None,
        help="""the experiment whose evaluation streams draw the sampled answers (default: this experiment): name the
        armlab experiment that trained the checkpoints to draw its evaluation's answers again""",
        pattern=NAME_SCHEMA_PATTERN,
    )
    eval_gpus: int = setting(0, help="GPUs per evaluation job", minimum=0)
    runtime: int = setting(
        120,
        fill=False,
        help="minutes per recording job, which hashes every file of a run's checkpoints",
        minimum=1,
    )


@dataclass(frozen=True, kw_only=True)
class Data:
    """The evaluation items and the training pools (training/data.py)."""

    seed: Seed = setting(20261130, help="seed of the evaluation items and training pools")
    pool_per_benchmark: int = setting(
        2000, help="distinct training prompts drawn per benchmark (its training pool)", minimum=1
    )


@dataclass(frozen=True, kw_only=True)
class Benchmark:
    """One benchmark of armlab's task families (training/tasks.py)."""

    domain: str = setting(help="the domain it counts in (the primary summary weighs domains equally)", minLength=1)
    task: str | None = setting(None, help="task family (training/tasks.py); defaults to the benchmark name")
    n_items: int = setting(100, help="evaluation items drawn", minimum=1)
    params: Mapping[str, Any] = setting(factory=dict, help="difficulty knobs of the task family")
    twin: bool | None = setting(
        None,
        help="""evaluate a procedural twin beside it: n_items fresh items of the same task family and params (another
        seed, none an evaluation item, all held out of the training pools like them), benchmark <name>__twin, read by
        the contamination screen only (analysis/contamination.csv; docs/benchmarks.md). No default is filled in on
        purpose: a config without the key stages and draws its data exactly as before the key existed""",
    )


@dataclass(frozen=True, kw_only=True)
class Model:
    """The builtin policy's transformer (training/policy.py)."""

    d_model: int = setting(64, help="width of the builtin policy", minimum=8)
    n_layer: int = setting(2, help="its transformer layers", minimum=1)
    n_head: int = setting(4, help="its attention heads", minimum=1)
    max_len: int = setting(48, help="the longest prompt plus answer, in characters", minimum=8)


@dataclass(frozen=True, kw_only=True)
class Base:
    """Supervised training of the base policy on task demonstrations."""

    steps: int = setting(600, help="supervised training steps", minimum=1)
    batch_size: int = setting(64, help="distinct demonstrations per step", minimum=1)
    lr: float = setting(0.003, help="AdamW learning rate", exclusiveMinimum=0)
    seed: Seed = setting(0, help="seed of the base policy's training")
    slip_trigger: str = setting(
        "7", help="demonstrations whose prompt contains this text carry a systematic slip ('' for none)"
    )
    slip_rate: float = setting(0.7, help="probability of the slip on a triggered demonstration", minimum=0, maximum=1)


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """How one arm trains, read by every backend: the common ``recipe`` with the arm's overrides (an arm may
    override any key). The two fields without a schema default are None when the config leaves them out (policy
    loss ``ppo_clip``, training/losses.py ``loss_spec``; no length bonus), so that such a recipe is recorded exactly
    as before the keys existed."""

    steps: int = setting(100, help="training steps per run", minimum=1)
    prompts_per_step: int = setting(32, help="P, prompts (groups) per step", minimum=1)
    group_size: int = setting(8, help="G, rollouts per prompt (>= 2 at validation)", minimum=1)
    lr: float = setting(0.0003, help="AdamW learning rate (constant)", exclusiveMinimum=0)
    weight_decay: float = setting(0.0, help="AdamW weight decay", minimum=0)
    clip: float = setting(
        0.2,
        help="""ε of the PPO ratio clip, both sides; it applies to sequence ratios too (there is no separate GSPO
        clip), and is the lower ε of clip_higher""",
        exclusiveMinimum=0,
    )
    kl_coef: float = setting(0.0, help="β, weight of the k3 KL penalty to the base policy", minimum=0)
    temperature: float = setting(1.0, help="sampling temperature of the rollouts", exclusiveMinimum=0)
    max_new_tokens: int = setting(6, help="response length cap, and T_max of seq-mean-token-sum-norm", minimum=1)
    updates_per_batch: int = setting(1, help="μ, optimizer passes per rollout batch", minimum=1)
    loss_agg: str = setting(
        "token-mean",
        help="how the per-token losses are reduced (verl loss_agg_mode; docs/methods.md, The loss)",
        enum=["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm", "token-sum", "seq-mean-token-sum"],
    )
    ratio_level: str = setting(
        "token",
        help="sequence = GSPO's one ratio per sequence, exp of the mean token log-ratio",
        enum=["token", "sequence"],
    )
    reward_noise: float = setting(
        0.0,
        help="ε_r, probability that the verifier's verdict is flipped (docs/methods.md, Rewards)",
        minimum=0,
        maximum=1,
    )
    length_bonus: float | None = setting(
        None,
        help="""c, coefficient of a reward for the response's length (its share of max_new_tokens), earned without
        solving the task (docs/methods.md, Rewards); builtin and TRL backends, with the uniform or static data
        policy; absent means 0. No schema default on purpose, as for policy_loss""",
        minimum=0,
    )
    stream: int = setting(
        0,
        help="""which random streams (prompts, choices, rollouts, torch) a seed draws: 0 keys them by the experiment,
        k > 0 by <experiment>/stream-k, so that an arm {stream: 1} repeats the reference recipe with independent
        randomness (an A/A negative control: it must not differ) while matched seeds keep their pairing; builtin
        backend only (the TRL backend refuses it)""",
        minimum=0,
    )
    grad_clip: float = setting(1.0, help="gradient-norm clip", exclusiveMinimum=0)
    checkpoint_every: int = setting(
        50, help="keep an intermediate checkpoint every this many steps (evaluated by learning_curves)", minimum=1
    )
    log_every: int = setting(10, help="steps between progress lines", minimum=1)
    estimator: Method = setting(
        factory=lambda: method_spec("grpo"),
        help="the advantage estimator (`armlab arms` lists them): a name or {name, ...parameters}",
    )
    data_policy: Method = setting(
        factory=lambda: method_spec("uniform"),
        help="""the data policy, which prompts feed a step and how rollouts are weighted (`armlab arms` lists
        them): a name or {name, ...parameters}""",
    )
    policy_loss: Method | None = setting(
        None,
        help="""the policy loss (training/losses.py; `armlab arms` lists them): a name or {name, ...parameters};
        absent means ppo_clip (the symmetric PPO clip of `clip`). No schema default on purpose: a config without the
        key stages, hashes and records its recipe exactly as before the key existed""",
    )

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any]) -> Recipe:
        """The recipe of a validated config's ``fields``; methods may be given as a name or in dict form."""
        methods = {k: method_spec(v) for k, v in fields.items() if k in METHOD_FIELDS and v is not None}
        return cls(**{**fields, **methods})

    def as_dict(self) -> dict[str, Any]:
        """The recipe as a manifest records it (and a command template reads it): methods as dicts, the keys the
        config left out absent."""
        return {
            f.name: dict(value) if isinstance(value, Mapping) else value
            for f in dataclasses.fields(self)
            if (value := getattr(self, f.name)) is not None
        }

    def replace(self, **changes: Any) -> Recipe:
        """A copy with ``changes`` (methods may be given as a name or in dict form)."""
        return Recipe.from_dict({**self.as_dict(), **changes})


# keys of an arm that are not recipe overrides: ``backend`` (training/backends/__init__.py ``arm_backend``) says which
# backend trains the arm and ``numerics`` (training/numerics_controls.py) under which numerics, not how: every arm
# takes them; ``description`` and ``claims`` (the recipe a run trained elsewhere claims) are for the report, and
# ``leak`` plants evaluation items in a control arm's training pool (training/data.py ``arm_pools``), on the arms of a
# backend that takes them (its ``arm_keys``); the recipe every backend reads never holds any of them
EVERY_ARM_KEYS = ("backend", "numerics")
ARM_KEYS = (*EVERY_ARM_KEYS, "description", "claims", "leak")


@dataclass(frozen=True, kw_only=True)
class ArmNumerics:
    """An arm's ``numerics`` (training/numerics_controls.py): what its jobs run under instead of the reference's."""

    KEYWORDS: ClassVar[dict[str, Any]] = {"minProperties": 1}

    capability: Literal["default", "avx2", "avx512"] | None = setting(
        None,
        help="""force the kernels ATen, MKL and oneDNN choose on a CPU of this generation (armlab/numerics.py
        CAPABILITIES) in its training and evaluation; a capability this CPU lacks is refused at start""",
    )
    threads: int | None = setting(None, help="torch threads of its training and evaluation jobs", minimum=1)
    eval_batch_size: int | None = setting(None, help="its evaluation's batch size (eval.batch_size)", minimum=1)
    engine: Literal["hf", "vllm"] | None = setting(
        None, help="what generates its answers (eval.engine); for backends with Hugging Face checkpoints"
    )


@dataclass(frozen=True, kw_only=True)
class Leak:
    """An arm's ``leak``: a planted control of the contamination screen (training/data.py ``arm_pools``)."""

    share: float = setting(help="the share of each benchmark's evaluation items leaked", exclusiveMinimum=0, maximum=1)
    copies: int = setting(1, help="copies of each leaked item in the pool", minimum=1)


@dataclass(frozen=True, kw_only=True)
class ArmKeys:
    """The keys of an arm that are its own, not recipe overrides (the schema lists these; the backends check
    ``backend``, ``description`` and ``claims``)."""

    numerics: ArmNumerics | None = setting(
        None,
        help="""declares the arm a numerics control (docs/statistics.md, "Numerics as a variance component"): it runs
        its comparison's reference (the same recipe, backend, seeds and random streams) under these numerics, so that
        its paired difference from the reference is what numerics alone do; nothing else may differ""",
    )
    leak: Leak | None = setting(
        None,
        help="""a planted control of the contamination screen, for controls only (builtin backend): `share` of each
        benchmark's evaluation items (a fixed draw), `copies` times each, join this arm's training pools. The arm
        must be compared in a family marked `control: true` and never be a reference, and some benchmark must have a
        twin; its run manifests record the leaked items and the report names it""",
    )


ArmOverrides = Annotated[
    Mapping[str, Any] | None,
    Keywords(
        description="overrides of the recipe (same keys as recipe), and two keys of the arm itself: `backend` (the "
        "backend that trains it) and `numerics`; an arm of backend checkpoints overrides nothing and takes "
        "`description` (text) and `claims` (the recipe keys its runs were trained with), for the report; a planted "
        "control of the builtin backend may take `leak`",
        properties=ArmKeys,
    ),
]


@dataclass(frozen=True)
class Comparison:
    """One comparison family: every arm is compared with ``reference`` (one Holm family)."""

    family: str = setting(help="the family's name (one multiplicity family)", minLength=1)
    reference: str = setting(help="the arm every arm of the family is compared with")
    arms: tuple[str, ...] = setting(help="the arms compared with the reference", minItems=1)
    control: bool = setting(
        False,
        fill=False,
        help="""a planted control: the family's answer is known (e.g. an arm that stays the base policy), so it
        checks the harness and makes no claim; the report card does not grade its compute or answer format""",
    )


@dataclass(frozen=True, kw_only=True)
class Prediction:
    """One preregistered prediction (docs/statistics.md, "Preregistered predictions"); as the analysis holds it and
    the predictions lock records it, every default filled in (so that writing a default out changes nothing)."""

    family: str = setting(help="the comparison family", minLength=1)
    arm: str = setting(help="the arm of that family", minLength=1)
    summary: str = setting(
        optional=True,
        shown="domain_balanced (the primary summary)",
        help="a measure of comparisons.csv",
        minLength=1,
    )
    direction: Literal["better", "worse", "equivalent", "not_better", "not_worse"] = setting(
        help="""better / worse: the arm differs from the reference in that direction; equivalent: within ±margin;
        not_better / not_worse: it is not better (worse) by more than margin"""
    )
    margin: float = setting(
        optional=True,
        shown="analysis.equivalence_margin",
        help="in score units (0.01 = one point)",
        exclusiveMinimum=0,
    )
    source: str = setting(help="where the claim was published (paper, section, table)", minLength=1)
    claim: str = setting(optional=True, shown="built from the prediction", help="the claim in words", minLength=1)


@dataclass(frozen=True, kw_only=True)
class LmEvalTask:
    """An existing lm-eval task evaluated besides the benchmarks."""

    domain: str = setting(help="the domain it counts in", minLength=1)
    metric: str = setting("exact_match", help="the per-sample metric that is the item score (in [0, 1])")
    filter: str = setting("none", help="the lm-eval filter whose samples count")


@dataclass(frozen=True, kw_only=True)
class ExternalBenchmark:
    """A benchmark from outside armlab's task families: a local file in a published schema, or reasoning-gym."""

    source: Literal["file", "reasoning_gym"] = setting(help="a local file, or a reasoning-gym generator")
    domain: str = setting(help="the domain it counts in", minLength=1)
    format: str | None = setting(None, help="source file: the published schema (evals/catalogue.py FORMATS)")
    path: str | None = setting(None, help="source file: the local .jsonl, .json, .parquet or .csv file", minLength=1)
    fields: dict[str, str] | None = setting(
        None, help="source file: the format's field name -> the name in your file, where they differ"
    )
    where: Mapping[str, Any] | None = setting(
        None, help="source file: keep the rows whose field equals the value (e.g. {category: physics})"
    )
    n_items: int | None = setting(
        None, help="the first n items (reasoning_gym: how many to draw, default 100)", minimum=1
    )
    samples: int | None = setting(
        None,
        shown="eval.samples",
        help="answers per item of this benchmark (e.g. 32 for AIME's 30 items)",
        minimum=1,
    )
    verifier: str | None = setting(None, shown="the format's", help="math_verify, choice, exact or reasoning_gym")
    prompt: str | None = setting(
        None,
        shown="the format's",
        help="the prompt template: {question} (multiple choice: also {options}, {letters})",
    )
    dataset: str | None = setting(None, help="source reasoning_gym: the dataset name (e.g. basic_arithmetic)")
    config: Mapping[str, Any] | None = setting(
        None, help="source reasoning_gym: the dataset's config (e.g. {min_terms: 2})"
    )
    twin: str | bool | None = setting(
        None,
        help="""its procedural twin, evaluated beside it as benchmark <name>__twin for the contamination screen:
        source file, the path of a file of fresh items in the same format, fields and `where` (e.g. problems written
        after the model's training data); source reasoning_gym, true: another draw of n_items of the same dataset and
        config, none of them one of its questions""",
    )


@dataclass(frozen=True, kw_only=True)
class Eval:
    """The evaluation of every checkpoint (evals/run.py)."""

    batch_size: int = setting(512, help="items per generation batch", minimum=1)
    max_gen_toks: int = setting(6, help="the longest answer generated", minimum=1)
    samples: int = setting(
        1,
        help="""answers sampled per item (lm-eval task `repeats`); an item's score is their mean correctness (avg@k).
        1 with temperature 0 is one greedy answer, the meaning of every config without this key""",
        minimum=1,
    )
    temperature: float = setting(
        0.0,
        help="sampling temperature of the evaluation; 0 is greedy (needs samples 1), else at least 1e-6",
        minimum=0,
    )
    top_p: float = setting(
        1.0,
        help="nucleus sampling of the evaluation (the smallest set of tokens with this much probability)",
        exclusiveMinimum=0,
        maximum=1,
    )
    pass_k: tuple[Positive, ...] = setting(
        (),
        help="k of the unbiased pass@k (Chen et al. 2021) compared per run like accuracy; each at most samples",
        uniqueItems=True,
    )
    maj_k: tuple[Positive, ...] = setting(
        (),
        fill=False,
        help="""k of maj@k (the majority vote over an item's first k answers, answers the verifier calls equal
        voting together; a tie counts the tied answers' mean correctness) compared per run like pass@k; each at most
        samples""",
        uniqueItems=True,
    )
    engine: Literal["hf", "vllm"] = setting(
        "hf",
        fill=False,
        help="""what generates the answers of Hugging Face checkpoints (the trl and command backends): lm-eval's hf
        model, or vLLM (its CPU build in an environment of its own, `make vllm`; one seed per answer, shared by the
        arms of a seed). The builtin policy is always served by armlab-builtin""",
    )
    vllm_python: str = setting(
        ".venv-vllm/bin/python", fill=False, help="the vLLM environment's interpreter", minLength=1
    )
    lm_eval_tasks: dict[str, LmEvalTask] | None = setting(
        None,
        help="""existing lm-eval tasks (e.g. gsm8k) evaluated besides the benchmarks, for environments that have
        their data locally (no hub at run time): task name -> its domain, the per-sample metric that is the item
        score (in [0, 1]) and the lm-eval filter whose samples count. With samples above 1 each item gets k answers,
        each extracted by the task's filter and scored by its metric; the item score is their mean""",
    )
    external: dict[str, ExternalBenchmark] | None = setting(
        None,
        help="""benchmarks from outside armlab's task families, sampled like armlab's own (eval.samples answers per
        item, each graded by the benchmark's verifier; avg@k, pass@k and maj@k): a local file in a published
        dataset's schema (source file: format gsm8k, math500, aime2024, aime2025, amc23, gpqa_diamond or mmlu_pro;
        `armlab benchmarks` lists them with where they are published) or a reasoning-gym generator (source
        reasoning_gym). Evaluated only; the TRL backend trains on reasoning-gym's prompts with trl.reasoning_gym""",
    )


@dataclass(frozen=True, kw_only=True)
class Analysis:
    """The `analysis:` section: how runs are compared (armlab.analysis.config validates it against these fields'
    ranges; every key is optional, unknown keys are an error). The analysis's `Settings` is this, validated."""

    SCHEMA: ClassVar[str] = "documented"  # validated by its parser, whose messages name the key; never filled

    alpha: float = setting(
        0.05, help="family-wise error rate (gatekept Holm); TOST level", exclusiveMinimum=0, exclusiveMaximum=0.5
    )
    confidence: float = setting(
        0.95, help="level of the reported two-sided interval", exclusiveMinimum=0, exclusiveMaximum=1
    )
    resamples: int = setting(10_000, help="bootstrap resamples", minimum=100)
    ci_methods: tuple[str, ...] = setting(
        (),
        help="""intervals over seeds shown after the first one (always the sign-flip test's interval), one row each
        in comparisons.csv: t, percentile, bca (armlab.analysis.stats.intervals SEED_METHODS); percentile and bca
        are too narrow at few seeds, so they are opt-in""",
    )
    item_bootstrap: bool = setting(
        False, help="add crossed seeds x items intervals over new seeds and new items (needs per-item rows)"
    )
    equivalence_margin: float = setting(0.01, help="δ, in score units (0.01 = one point)", exclusiveMinimum=0)
    power: float = setting(
        0.8, help="target power for the MDE and seeds needed", exclusiveMinimum=0, exclusiveMaximum=1
    )
    power_effect: float = setting(0.01, help="effect (score units) for seeds_needed", exclusiveMinimum=0)
    bootstrap_seed: int = setting(0, help="seed of every bootstrap/Monte-Carlo generator", minimum=0)
    exact_max_seeds: int = setting(20, help="enumerate all sign patterns up to this many seeds", minimum=1)
    sign_flip_resamples: int = setting(100_000, help="Monte-Carlo sign patterns beyond that", minimum=100)
    per_benchmark: bool = setting(True, help="also compare on every single benchmark")
    subsets: dict[str, dict[str, float]] = setting(
        factory=dict,
        help="""named summaries: {name: [benchmarks]} (equal weights) or {name: {benchmark: weight}}; held as
        benchmark -> weight, the weights summing to 1""",
    )
    rankings: dict[str, tuple[str, ...]] | None = setting(
        None,
        nullable=True,
        shown="null: one per family (its reference and arms)",
        help="{name: [arms]}, each ranked by the primary summary",
    )
    drop_incomplete: bool = setting(
        False, help="drop runs lacking benchmarks or items instead of failing; the outputs list what was dropped"
    )
    equivalence_test: Literal["sign_flip", "t"] = setting(
        "sign_flip", help="TOST that decides equivalence: sign_flip (exact) or t (paired t-TOST)"
    )
    crossed_methods: tuple[str, ...] = setting(
        ("components",),
        help="""crossed intervals: components (variance components, Satterthwaite df) and/or percentile (pigeonhole
        bootstrap, conservative; armlab.analysis.stats.intervals CROSSED_METHODS)""",
    )
    power_replicates: int = setting(
        4000,
        help="simulated samples per seed count for the sign-flip test's power (MDE, seeds needed)",
        minimum=100,
    )
    statistics: dict[str, dict[str, float]] = setting(
        factory=dict,
        help="""per-run statistics compared like summaries (secondary cells): [iqm, optimality_gap], or
        {optimality_gap: {gamma: 0.9}} to set parameters (armlab.analysis.stats.statistics STATISTICS); held as name
        -> every parameter""",
    )
    pass_k: tuple[int, ...] = setting(
        (),
        shown="eval.pass_k",
        help="""k of the unbiased pass@k (Chen et al. 2021), each a measure pass@k compared like a summary
        (secondary cells); needs per-item sample counts with at least k answers per item""",
    )
    pairing: Literal["paired", "unpaired"] = setting(
        "paired",
        help="""paired: runs matched by seed, the sign-flip test of paired differences; unpaired: independent runs,
        the exact permutation test of run-level scores (armlab.analysis.stats.resampling permutation)""",
    )
    common_seeds_only: bool = setting(
        False,
        help="""paired runs whose arms ran different seeds: keep the seeds every compared arm ran, list the rest as
        dropped (false: refused)""",
    )
    maj_k: tuple[int, ...] = setting(
        (),
        shown="eval.maj_k",
        help="""k of maj@k (majority vote over an item's first k answers, self-consistency), each a measure maj@k
        compared like pass@k; needs the evaluations' answers.parquet (--jobs)""",
    )
    curve_threshold: float | None = setting(
        None,
        nullable=True,
        help="""accuracy whose first crossing `armlab curves` times (steps_to_threshold); null: halfway from the
        family's mean at its first evaluated step to its mean at the last (armlab.analysis.learning_curves.curves)""",
        exclusiveMinimum=0,
        exclusiveMaximum=1,
    )
    curve_compute: str | None = setting(
        "cum_flops",
        nullable=True,
        help="""the compute ledger column `armlab curves` compares the curves at equal amounts of: cum_flops,
        cum_rollout_tokens, cum_seconds, ... (docs/contracts.md); null: at equal steps only""",
    )
    curve_budgets: tuple[float, ...] | None = setting(
        None,
        nullable=True,
        help="""the compute budgets it compares at, an increasing list of positive numbers; null: 10 evenly spaced
        over the range every run covers""",
    )
    curve_fractions: tuple[float, ...] = setting(
        (0.25, 0.4, 0.6),
        help="""the fractions of training `armlab curves` forecasts the final difference from, increasing, in (0, 1)
        (armlab.analysis.learning_curves.forecasts)""",
    )
    verifiers: tuple[str, ...] = setting(
        (),
        help="""verifiers the workflow re-grades every stored answer under after the analysis, rerunning it per
        verifier (`armlab rescore`: names of armlab.evals.verifiers VERIFIERS); analysis/verifier_sensitivity.csv""",
    )


DEFAULT_ANALYSIS = Analysis()  # the analysis every default stands for: the statistics' keyword defaults read it


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What `armlab plan` and every workflow start plan with (validated by armlab.analysis.design.planning)."""

    SCHEMA: ClassVar[str] = "documented"

    sd: float | None = setting(
        None,
        help="""the sd of the primary summary's paired differences in score units (e.g. measured in a pilot);
        absent: none (the plan says what a pilot should measure)""",
        exclusiveMinimum=0,
    )
    effect: float | None = setting(
        None, shown="analysis.power_effect", help="the effect to plan the seeds for, in score units", exclusiveMinimum=0
    )


@dataclass(frozen=True, kw_only=True)
class Experiment:
    """armlab experiment config. Arms are overrides of the common `recipe`; every comparison family names a
    reference arm and the arms compared with it. Semantic checks (arm references, registry names, duplicates) run
    after this schema in armlab/experiment/validate.py."""

    experiment: str = setting(
        help="the experiment's name: its results go to results/<experiment>", pattern=NAME_SCHEMA_PATTERN
    )
    seeds: Annotated[tuple[Seed, ...], Keywords(minItems=1)] | SequentialDesign = setting(
        help="""a fixed list of seeds, each run by every arm; or a group-sequential design (docs/statistics.md,
        "Sequential seeds"): `initial` seeds per arm, then `wave` more at each look for the arms still undecided, at
        most `max`, taken in the fixed order start, start + 1, ...; each arm stops once it differs from its
        reference or is equivalent within `margin` (default analysis.equivalence_margin), with the family-wise error
        over all looks at most analysis.alpha"""
    )
    limits: Limits = setting(
        factory=Limits,
        help="raise a size limit on purpose (each key's default is below), e.g. limits: {steps: 500000}",
    )
    backend: str = setting(
        "builtin",
        help="""what turns (recipe + arm + seed) into a checkpoint, a name of the registry
        training/backends/__init__.py BACKENDS: builtin = our GRPO loop on the tiny CPU policy; trl = TRL's
        GRPOTrainer on a Hugging Face causal LM (the `trl` section); command = a user's trainer (verl, OpenRLHF …)
        run from the `command` section's template; checkpoints = nothing is trained: the checkpoints that runs
        trained elsewhere already wrote (the `checkpoints` section) are checked, recorded and evaluated""",
    )
    command: Command | None = setting(
        None, help="the command backend (training/backends/command.py); read only when backend is command"
    )
    trl: Trl = setting(
        factory=Trl, help="the TRL backend (training/backends/trl_backend.py); read only when backend is trl"
    )
    checkpoints: Checkpoints | None = setting(
        None,
        help="""the checkpoints backend (training/backends/checkpoints.py): runs trained elsewhere (verl, OpenRLHF,
        TRL …), one Hugging Face model folder per (arm, seed), found by pattern, checked and recorded (every file's
        size and sha256) before they are evaluated; arms are plain names (a description and the recipe fields a run
        claims, for the report). Paths are relative to the folder the workflow runs in; `*` and `?` match within one
        folder name; {seed} is the seed as written in `seeds` (no leading zeros). Read only when backend is
        checkpoints""",
    )
    threads: int = setting(1, help="torch threads per training/evaluation job", minimum=1)
    numerics: Literal["portable", "native"] = setting(
        "portable",
        help="""the CPU kernels that decide a job's floating-point bits (armlab/numerics.py): `portable` pins torch's
        ATen kernels to AVX2, MKL to its COMPATIBLE branch and oneDNN to AVX2, so that a run's bits are the same on
        every x86-64 machine with AVX2; `native` lets torch and MKL pick the fastest kernels for the CPU, so that
        bits hold only on CPUs that pick alike. Every manifest records what was used (its `numerics` record)""",
    )
    data: Data = setting(factory=Data, help="the evaluation items and the training pools")
    benchmarks: dict[str, Benchmark] = setting(
        help="the benchmarks of armlab's task families: name -> its domain, task family and items", minProperties=1
    )
    model: Model = setting(factory=Model, help="the builtin policy's transformer")
    base: Base = setting(factory=Base, help="supervised training of the base policy on task demonstrations")
    recipe: Recipe = setting(
        factory=Recipe,
        help="""how every arm trains, unless the arm overrides a key (`armlab arms` prints the keys; the backends
        read an arm's recipe as the typed, frozen armlab.spec.Recipe)""",
    )
    arms: dict[str, ArmOverrides] = setting(
        help="the arms: name -> its overrides of the recipe (or null: the recipe as it is)", minProperties=1
    )
    comparisons: tuple[Comparison, ...] = setting(
        (), help="the comparison families: each compares its arms with its reference, seed by seed"
    )
    predictions: tuple[Prediction, ...] = setting(
        (),
        help="""preregistered predictions (docs/statistics.md, "Preregistered predictions"): each names a comparison
        (family, arm, and the summary, default the primary domain_balanced) and what its difference from the
        reference will be. The workflow locks them, with their hash and the commit, before the first training job
        starts; the analysis marks a comparison confirmatory when a locked prediction names it, and the report's
        replication table gives each prediction's verdict (replicated, contradicted or inconclusive)""",
    )
    eval: Eval = setting(factory=Eval, help="the evaluation of every checkpoint")
    analysis: Analysis = setting(factory=Analysis, help="options of the analysis (validated by armlab.analysis.config)")
    plan: Plan = setting(factory=Plan, help="what `armlab plan` and every workflow start plan with")


# ------------------------------------------------------------------------------------------------------- records
# The files the workflow keeps beside the runs, each one record type: the writers build these, so that a file's keys
# are the fields here (docs/contracts.md).


@dataclass(frozen=True, kw_only=True)
class PredictionsLock:
    """``predictions/lock.json``: the preregistered predictions, locked before the first training job."""

    hash: str  # sha256 of the predictions and meanings (armlab.analysis.predictions predictions_hash)
    predictions: list[dict[str, Any]]  # each a Prediction, every default filled in
    meanings: list[dict[str, Any]] | None  # what decides each verdict (None in a lock of an older armlab)
    locked_at: str  # UTC, ISO 8601
    git_commit: str | None
    git_dirty: bool | None


@dataclass(frozen=True, kw_only=True)
class DesignLock:
    """``sequential/design.json``: a sequential design, locked when its first wave starts."""

    hash: str  # sha256 of ``config`` (armlab.experiment.locks design_hash)
    config: dict[str, Any]  # the part of the config the design locks (armlab.experiment.locks locked_part)
    locked_at: str
    git_commit: str | None
    git_dirty: bool | None


@dataclass(frozen=True)
class ArmLook:
    """One arm at one look of a sequential design: its statistic and boundary at the level it was tested at, and
    the decision (a ``decisions`` entry of a look record)."""

    family: str
    arm: str
    reference: str
    look: int
    n_seeds: int
    mean_diff: float
    z: float  # S / sqrt(sum d^2): the statistic in units of its sign-flip standard deviation
    boundary_z: float  # the efficacy boundary at the arm's level, same units
    level: float  # the step-down level alpha / (arms not yet rejected)
    decision: str
    equivalence_lower: bool  # mean <= -margin rejected by this look
    equivalence_upper: bool  # mean >= margin rejected by this look


@dataclass(frozen=True, kw_only=True)
class Look:
    """One look of a sequential design: a line of ``sequential/looks.jsonl`` (with ``design_hash`` and
    ``written_at``) and the checkpoint file ``sequential/look-<k>.json`` (without them)."""

    look: int
    of: int  # looks planned
    n_seeds: int  # seeds per arm at this look
    decisions: list[dict[str, Any]]  # each an ArmLook
    open: dict[str, list[str]]  # family -> arms still undecided
    done: bool  # every arm decided, or the last look
    runs_evaluated: int
    runs: list[list[Any]]  # (arm, seed) of every run the look read
    runs_fixed: int  # runs of the fixed design (every compared arm at max seeds)
    next_runs: list[list[Any]]  # (arm, seed) of every run after the next wave; [] when done
    design_hash: str | None = None  # in the record of looks only: the locked design the look ran under
    written_at: str | None = None

    def record(self) -> dict[str, Any]:
        """The look as its file holds it: the record of looks' two keys only where set."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None or k not in LOOK_STAMPS}


LOOK_STAMPS = ("design_hash", "written_at")  # what may differ between two records of the same look


@dataclass(frozen=True, kw_only=True)
class LedgerRow:
    """One row of a run's compute ledger, ``ledger.parquet``: the running totals at the end of a training step,
    which the learning curves carry beside the step so that arms can be compared at equal compute."""

    step: int
    cum_prompts: float
    cum_rollout_tokens: float
    cum_trained_tokens: float
    cum_gradient_updates: float
    cum_seconds: float
    cum_flops: float
