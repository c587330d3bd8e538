"""The TRL backend: one run of one arm with TRL's ``GRPOTrainer`` on a Hugging Face causal LM.

The common recipe and the arm map onto ``trl.GRPOConfig`` (:func:`grpo_config_kwargs`); rewards come from the
same verifiers as the builtin trainer (training/rollouts.py ``score``: training/tasks.py ``verify``, with
``noisy_verdict`` for reward-noise arms). What TRL cannot express is rejected at config validation by
:func:`check_recipe`, never ignored:

* estimators: ``grpo`` (``scale_rewards="group"``), ``grpo`` with ``norm_std: false`` and ``dr_grpo``
  (``scale_rewards="none"`` — ``loss_type="dr_grpo"`` alone keeps the std division). TRL's GRPOTrainer has no
  leave-one-out, median, pass@k or length-weighted baselines.
* ``grpo_batch_std`` → ``scale_rewards="batch"`` (group mean, std of the whole batch + 1e-4).
* ``loss_agg`` → ``loss_type``: token-mean → ``dapo``, seq-mean-token-mean → ``grpo``,
  seq-mean-token-sum-norm → ``dr_grpo`` (TRL docs, "Loss types"; ``bnpo`` equals ``dapo`` here, with one
  optimizer step per generation batch); token-sum and seq-mean-token-sum have no TRL loss_type.
* policy losses (:func:`loss_kwargs`): ``ppo_clip`` → ``epsilon``; ``clip_higher`` → ``epsilon_high``;
  ``dual_clip`` → ``delta`` = clip_c (TRL's INTELLECT-2 cap equals the dual clip for clip_c ≥ 1 + clip);
  ``cispo`` → ``loss_type="cispo"``, ``epsilon_high`` = 1 + clip_high (with token-mean, no lower bound);
  ``sapo`` → ``loss_type="sapo"`` with ``sapo_temperature_pos/neg`` (with seq-mean-token-mean); ``gmpo``,
  ``clip_cov``, ``kl_cov`` and ``gpg`` are not in GRPOTrainer. ``ratio_level`` → ``importance_sampling_level``.
* data policies: ``uniform``, the fixed domain mixture ``static`` and the adaptive domain mixtures
  ``reward_gap``, ``dump_ucb``, ``tscl`` and ``exp3``, through TRL's sampler extension point
  (``GRPOTrainer._get_train_sampler``): :class:`StepSampler` draws each step's prompts exactly as the builtin
  trainer's ``rollouts.draw_prompts`` does, from the same (experiment, seed, "prompts", step) stream and the policy's
  ``domain_shares(step)``, so a uniform or static TRL run sees the builtin run's prompts. Adaptive mixtures get
  their feedback through the reward function: it sees each generation batch (the sampler's step, P prompts × G
  completions, dataset columns ``id``/``domain``), checks that it is the block the sampler drew for that step, and
  calls ``policy.observe(step, group_domains, rewards, advantages, prompt_ids)`` with the batch's (P, G) rewards
  and TRL's own advantages (group mean; ÷ (unbiased std + 1e-4) when ``scale_rewards="group"``). The sampler
  draws step s + 1 only after step s's rewards were observed: accelerate's ``DataLoaderShard`` pre-draws one
  batch ahead, so in a single-process run :meth:`ArmlabGRPOTrainer.get_train_dataloader` hands the Trainer the
  unwrapped ``DataLoader`` (``num_workers=0``, which draws on demand); a multi-process run keeps accelerate's
  sharded loader and refuses adaptive mixtures (each process would see only its slice of the rewards).
  Per-step policy shares, realised shares and domain rewards go to ``mixture.parquet``. Policies that select or reweight
  rollouts or choose prompts from their per-prompt history (difffilter, maxvar, gfpo, topk, ar, per, softmax,
  diffband, dapo, greso, thompson) are rejected: GRPOTrainer has no public hook between scoring and the loss (it
  would take overriding its private ``_generate_and_score_completions``).

    python -m armlab.training.backends.trl_backend --config results/<exp>/config/train/<arm>.json --arm grpo --seed 1 \
        --data results/<exp>/data --out results/<exp>/runs/grpo/seed-1
"""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

from armlab import numerics, registration
from armlab.contract import TRL_STEP_NAMES
from armlab.files import atomic_path, job_environment, write_manifest
from armlab.spec import Method, Recipe
from armlab.training.ledger import STEP_COUNTS, write_ledger
from armlab.training.recipe import kept_checkpoint_steps, resolve_arm
from armlab.training.utils import config_hash, derive_seed, run_arguments

if TYPE_CHECKING:
    import pandas

# loss_agg → the loss_type of TRL's ratio-clip losses (bnpo is dapo here: one optimizer step per generation batch)
LOSS_TYPES = {"token-mean": "dapo", "seq-mean-token-mean": "grpo", "seq-mean-token-sum-norm": "dr_grpo"}
FIXED_AGGREGATION = {"cispo": "token-mean", "sapo": "seq-mean-token-mean"}  # TRL fixes their aggregation
TRL_STD_EPS = 1e-4  # GRPOTrainer: advantages = (r - group mean) / (group std + 1e-4) with scale_rewards="group"
CHECKPOINT_DIR = "model"
CHECKPOINTS_DIR = "checkpoints"  # intermediate ones, step-NNNNNN/ (HF format), as the builtin's step-NNNNNN.pt
REASONING_GYM_PROMPTS = "reasoning_gym_prompts.parquet"  # trl.reasoning_gym's prompts of the run, when it has some
TRAINER_STATE = ("trainer_state.json", "training_args.bin", "rng_state")  # what a kept checkpoint leaves of TRL's


def scale_rewards(estimator: Method) -> str:
    """TRL's ``scale_rewards`` for an estimator spec; ``ValueError`` when GRPOTrainer cannot express it."""
    name, params = estimator["name"], {k: v for k, v in estimator.items() if k != "name"}
    if name == "grpo" and set(params) <= {"norm_std"}:
        return "group" if params.get("norm_std", True) else "none"
    if name == "dr_grpo" and not params:
        return "none"
    if name == "grpo_batch_std" and set(params) <= {"eps"} and params.get("eps", TRL_STD_EPS) == TRL_STD_EPS:
        return "batch"
    raise ValueError(
        f"estimator {estimator} cannot be expressed by TRL's GRPOTrainer (it has group-mean baselines "
        f"with group std, batch std (eps 1e-4) or no scaling); supported: grpo, grpo with norm_std: false, "
        f"dr_grpo, grpo_batch_std"
    )


def loss_kwargs(recipe: Recipe) -> dict:
    """``GRPOConfig``'s loss arguments (``loss_type``, clip bounds, SAPO temperatures) for the recipe's policy loss
    and ``loss_agg``; ``ValueError`` naming the recipe key when GRPOTrainer has no such loss."""
    from armlab.training.losses import loss_params, loss_spec

    spec = loss_spec(recipe)
    name, params, agg, clip = spec["name"], loss_params(spec), recipe.loss_agg, recipe.clip
    if name in FIXED_AGGREGATION and agg != FIXED_AGGREGATION[name]:
        raise ValueError(
            f"loss_agg: TRL's {name!r} loss aggregates {FIXED_AGGREGATION[name]} only (got {agg}); set loss_agg: "
            f"{FIXED_AGGREGATION[name]} for a {name} arm"
        )
    if name in ("ppo_clip", "clip_higher", "dual_clip"):
        if agg not in LOSS_TYPES:
            raise ValueError(f"loss_agg: {agg!r} has no TRL loss_type (supported: {list(LOSS_TYPES)})")
        kwargs = {"loss_type": LOSS_TYPES[agg], "epsilon": clip}
        if name == "clip_higher":
            kwargs["epsilon_high"] = params["clip_high"]
        if name == "dual_clip":
            # TRL's delta caps ρ before the min: −A·max(min(ρ, δ), clip(ρ)) for A < 0, which is the dual clip
            # −A·min(c, max(ρ, clip(ρ))) exactly when δ = c ≥ 1 + ε
            if params["clip_c"] < 1 + clip:
                raise ValueError(
                    f"policy_loss: dual_clip's clip_c {params['clip_c']} is below 1 + clip ({1 + clip}); TRL's delta "
                    f"equals the dual clip only for clip_c >= 1 + clip"
                )
            kwargs["delta"] = params["clip_c"]
        return kwargs
    if name == "cispo":
        if params["clip_low"] < 1:
            raise ValueError(
                f"policy_loss: TRL's cispo loss has no lower bound on the weight; clip_low must be 1.0 "
                f"(got {params['clip_low']})"
            )
        # TRL's epsilon_high is, for cispo, the absolute cap ε_max of the weight: 1 + clip_high
        return {"loss_type": "cispo", "epsilon": clip, "epsilon_high": 1 + params["clip_high"]}
    if name == "sapo":
        return {
            "loss_type": "sapo",
            "epsilon": clip,
            "sapo_temperature_pos": params["tau_pos"],
            "sapo_temperature_neg": params["tau_neg"],
        }
    raise ValueError(
        f"policy_loss: {name!r} is not implemented by TRL's GRPOTrainer "
        f"(supported: ppo_clip, clip_higher, dual_clip, cispo, sapo)"
    )


def check_recipe(recipe: Recipe) -> None:
    """Raise ``ValueError`` (naming the recipe key) for anything TRL's GRPOTrainer cannot run faithfully."""
    try:
        scale_rewards(recipe.estimator)
    except ValueError as err:
        raise ValueError(f"estimator: {err}") from None
    loss_kwargs(recipe)
    if recipe.stream:
        raise ValueError("stream: the TRL backend draws TRL's own streams from (experiment, seed); only stream 0")
    from armlab.training.data_policies import DATA_POLICIES

    if DATA_POLICIES[recipe.data_policy["name"]].trl is None:
        raise ValueError(
            f"data_policy: {recipe.data_policy['name']!r} is not supported by the TRL backend "
            f"(supported: {[name for name, policy in DATA_POLICIES.items() if policy.trl is not None]})"
        )


def grpo_config_kwargs(recipe: Recipe, experiment: str, seed: int, output_dir: str, threads: int) -> dict:
    """``GRPOConfig`` arguments for one run: the recipe's fields under TRL's names."""
    return {
        # TRL counts optimizer updates; a recipe step is one rollout batch with `updates_per_batch` passes over it
        "output_dir": output_dir,
        "max_steps": recipe.steps * recipe.updates_per_batch,
        "num_generations": recipe.group_size,
        # one optimizer step per rollout batch: the batch counts completions (prompts × G)
        "per_device_train_batch_size": recipe.prompts_per_step * recipe.group_size,
        "gradient_accumulation_steps": 1,
        "num_iterations": recipe.updates_per_batch,
        "learning_rate": recipe.lr,
        "weight_decay": recipe.weight_decay,
        "lr_scheduler_type": "constant",
        "warmup_steps": 0,
        "max_grad_norm": recipe.grad_clip,
        "beta": recipe.kl_coef,
        **loss_kwargs(recipe),  # loss_type, epsilon (and epsilon_high, delta, SAPO's temperatures)
        "scale_rewards": scale_rewards(recipe.estimator),
        "importance_sampling_level": recipe.ratio_level,
        "temperature": recipe.temperature,
        "max_completion_length": recipe.max_new_tokens,
        "logging_steps": recipe.log_every,
        # the builtin's checkpoints: every checkpoint_every rollout batches before the last (moved to checkpoints/)
        "save_strategy": "steps" if kept_checkpoint_steps(recipe) else "no",
        "save_steps": recipe.checkpoint_every * recipe.updates_per_batch,
        "save_only_model": True,
        "report_to": "none",
        "bf16": False,
        "use_cpu": True,
        "dataloader_num_workers": 0,
        "disable_tqdm": True,
        # derived from (experiment, seed), not the arm: arms sharing a seed see the same prompt order
        "seed": derive_seed(experiment, seed, "trl") % 2**31,
    }


class StepSampler:
    """Dataset row indices for TRL, one step at a time: the builtin trainer's prompts, each repeated G times.

    A step's P prompts come from ``armlab.training.rollouts.draw_prompts`` with the generator of (experiment, seed,
    "prompts", step) and the data policy's ``domain_shares(step)``; like TRL's ``RepeatSampler`` the step's block
    is yielded ``repeat_count`` times (``num_iterations`` reuse) with every index ``group_size`` times in a row.
    Iteration is lazy: step s + 1 is drawn only when its first index is requested, so the rewards of step s that
    :meth:`feedback` passed to ``policy.observe`` shape its shares. Each iteration starts from a fresh policy.
    """

    def __init__(
        self,
        domains: list[str],
        recipe: Recipe,
        experiment: str,
        seed: int,
        repeat_count: int = 1,
        ids: list[str] | None = None,
    ):
        from armlab.training.data_policies import DATA_POLICIES

        self.row_domains, self.ids = list(domains), None if ids is None else list(ids)
        self.rows = {domain: [i for i, d in enumerate(domains) if d == domain] for domain in sorted(set(domains))}
        self.recipe, self.experiment, self.seed, self.repeat_count = recipe, experiment, seed, repeat_count
        self.adaptive = DATA_POLICIES[recipe.data_policy["name"]].trl == "adaptive"
        self.live = True  # feedback on; the trainer turns it off in a multi-process run (non-adaptive policies)
        self.reset()

    def reset(self) -> None:
        """A fresh policy and an empty record (the start of an iteration)."""
        from armlab.training.data_policies import make_data_policy

        self.policy = make_data_policy(self.recipe.data_policy, sorted(self.rows))
        self.pending: deque[tuple[int, list[int]]] = deque()  # (step, rows) drawn, rewards not yet observed
        self.history: dict[int, dict] = {}  # step -> shares, rows, and once observed: group domains and rewards

    def rows_for(self, step: int, shares) -> list[int]:
        """The step's P prompt rows for given domain shares (None: uniform over all rows)."""
        import numpy as np

        from armlab.training.rollouts import draw_prompts, step_seed

        rng = np.random.default_rng(step_seed(self.experiment, self.seed, "prompts", step))
        return draw_prompts(rng, self.rows, shares, self.recipe.prompts_per_step)

    def step_rows(self, step: int) -> list[int]:
        """Draw step ``step``: ask the policy for its shares (once per step, in order) and record the draw."""
        shares = self.policy.domain_shares(step)
        block = self.rows_for(step, shares)
        if len(block) != self.recipe.prompts_per_step:
            raise ValueError(
                f"step {step}: drew {len(block)} prompts, not prompts_per_step = "
                f"{self.recipe.prompts_per_step} (a domain pool is smaller than its share); "
                f"a sampler step must fill exactly one generation batch"
            )
        self.pending.append((step, block))
        self.history[step] = {"shares": None if shares is None else [float(x) for x in shares], "rows": block}
        return block

    def __iter__(self):
        self.reset()
        for step in range(1, self.recipe.steps + 1):
            block = self.step_rows(step)
            for _ in range(self.repeat_count):
                for index in block:
                    yield from [index] * self.recipe.group_size

    def __len__(self) -> int:
        return self.recipe.steps * self.recipe.prompts_per_step * self.recipe.group_size * self.repeat_count

    def feedback(self, ids: list[str], rewards: list[float], completion_tokens: int | None = None) -> dict:
        """Observe one generation batch's rewards (P·G, in the sampler's order) and the number of completion tokens
        it generated (for the compute ledger); return step metrics to log.

        The batch must be the oldest drawn step whose rewards are still due — a mismatch raises, so a step of the
        sampler always maps onto exactly one generation batch.
        """
        import numpy as np
        import torch

        if not self.pending:
            raise RuntimeError("a generation batch was scored that the sampler never drew")
        step, block = self.pending.popleft()
        G = self.recipe.group_size
        if len(rewards) != len(block) * G or (
            self.ids is not None and list(ids) != [self.ids[i] for i in block for _ in range(G)]
        ):
            raise RuntimeError(
                f"the generation batch scored is not the block the sampler drew for step {step} "
                f"({len(block)} prompts × {G}); sampler and TRL are out of step"
            )
        r = torch.tensor(rewards, dtype=torch.float32).view(len(block), G)
        advantages = r - r.mean(1, keepdim=True)
        scaling = scale_rewards(self.recipe.estimator)
        if scaling == "group":
            advantages = advantages / (r.std(1, keepdim=True) + TRL_STD_EPS)
        if scaling == "batch":
            advantages = advantages / (r.std() + TRL_STD_EPS)
        group_domains = [self.row_domains[i] for i in block]
        prompt_ids = None if self.ids is None else [self.ids[i] for i in block]
        self.policy.observe(step, group_domains, r, advantages=advantages, prompt_ids=prompt_ids)
        self.history[step].update(group_domains=group_domains, rewards=r.tolist(), rollout_tokens=completion_tokens)
        metrics = {}
        for domain in self.rows:
            in_domain = np.array(group_domains) == domain
            metrics[f"share_{domain}"] = float(in_domain.mean())
            if in_domain.any():
                metrics[f"reward_{domain}"] = float(r[torch.from_numpy(in_domain)].mean())
        return metrics

    def ledger_counts(self, step_ends: dict[int, float], start: float) -> pandas.DataFrame:
        """The compute ledger's counts per observed step (:data:`armlab.training.ledger.STEP_COUNTS`): its P prompts,
        the completion tokens TRL generated, those tokens trained on in each of the ``num_iterations`` optimizer
        steps of the batch, and the wall seconds from the previous step's last optimizer step (``step_ends``:
        optimizer step -> ``time.perf_counter()`` at its end; ``start``: the training's start)."""
        import pandas as pd

        u, rows = self.repeat_count, []
        for step, record in sorted(self.history.items()):
            if record.get("rollout_tokens") is None or step * u not in step_ends:
                continue
            tokens, begun = record["rollout_tokens"], step_ends.get((step - 1) * u, start)
            rows.append((step, len(record["rows"]), tokens, tokens * u, u, step_ends[step * u] - begun))
        return pd.DataFrame(rows, columns=["step", *STEP_COUNTS])

    def records(self) -> list[dict]:
        """One row per observed step: the policy's shares, the realised shares and mean reward per domain."""
        import numpy as np

        rows = []
        for step, record in sorted(self.history.items()):
            if "rewards" not in record:
                continue
            row: dict[str, float] = {"step": step}  # the step, then the per-domain floats
            domains = np.array(record["group_domains"])
            rewards = np.array(record["rewards"])
            for k, domain in enumerate(self.rows):
                in_domain = domains == domain
                row[f"policy_share_{domain}"] = float("nan") if record["shares"] is None else record["shares"][k]
                row[f"share_{domain}"] = float(in_domain.mean())
                row[f"reward_{domain}"] = float(rewards[in_domain].mean()) if in_domain.any() else float("nan")
            rows.append(row)
        return rows


def make_trainer_class():
    """``GRPOTrainer`` with armlab's :class:`StepSampler` plugged into its sampler extension point."""
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    class StepClock(TrainerCallback):
        """When each optimizer step ended (``time.perf_counter()``), for the compute ledger's seconds."""

        def __init__(self) -> None:
            self.ends: dict[int, float] = {}

        def on_step_end(self, args, state, control, **kwargs):
            self.ends[state.global_step] = time.perf_counter()

    class ArmlabGRPOTrainer(GRPOTrainer):
        def __init__(self, *args, step_sampler: StepSampler, **kwargs):
            self.step_sampler = step_sampler
            self.clock = StepClock()
            super().__init__(*args, **kwargs)
            self.add_callback(self.clock)
            if self.accelerator.num_processes > 1:
                if step_sampler.adaptive:
                    raise RuntimeError(
                        f"data policy {step_sampler.recipe.data_policy['name']!r} needs a "
                        f"single-process TRL run: its reward feedback sees one process's slice"
                    )
                step_sampler.live = False

        def _get_train_sampler(self, dataset=None):
            return self.step_sampler

        def get_train_dataloader(self):
            # accelerate's DataLoaderShard draws one batch ahead — step s + 1 before step s is scored. In a
            # single process it only adds device placement (the batch is a list of dicts), so hand the Trainer
            # the plain DataLoader underneath, which draws each generation batch when it is needed.
            loader = super().get_train_dataloader()
            if self.accelerator.num_processes == 1:
                loader = getattr(loader, "base_dataloader", loader)
                if loader.num_workers != 0:
                    raise ValueError("the TRL backend's lazy sampler needs dataloader_num_workers=0")
            return loader

    return ArmlabGRPOTrainer


def make_reward(recipe: Recipe, seed: int, sampler: StepSampler | None = None):
    """A TRL reward function scoring completions with the tasks' verifiers (dataset columns arrive as kwargs).

    With a ``sampler`` it also feeds each generation batch's rewards back to the data policy
    (:meth:`StepSampler.feedback`) and logs the step's domain shares and rewards through TRL's ``log_metric``.
    """
    from armlab.training.reasoning_gym_tasks import REBUILD_KEYS
    from armlab.training.rollouts import score

    def verifier_reward(prompts, completions, answer, task, id, log_metric=None, completion_ids=None, **columns):
        # a reasoning-gym prompt carries what rebuilds it (trl.reasoning_gym); armlab's own prompts carry None
        rebuilds = [
            dict(zip(REBUILD_KEYS, values)) if values[0] else None
            for values in zip(*(columns.get(key) or [None] * len(id) for key in REBUILD_KEYS))
        ]
        rewards = [
            score(t, a, i, c, recipe, seed, rebuild)
            for t, a, i, c, rebuild in zip(task, answer, id, completions, rebuilds)
        ]
        if sampler is not None and sampler.live:
            tokens = None if completion_ids is None else sum(len(ids) for ids in completion_ids)
            for name, value in sampler.feedback(id, rewards, tokens).items():
                if log_metric is not None:
                    log_metric(name, value)
        return rewards

    return verifier_reward


def load_start(config: dict, seed_for_init: int, hf_base: Path | None = None):
    """The model and tokenizer a run starts from: ``trl.model`` (a local HF checkpoint), the exported builtin base
    policy ``hf_base`` when ``trl.model: builtin_base`` (training/backends/hf_export.py), or a tiny random Qwen2."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import armlab.training.backends.hf_char  # noqa: F401 (registers the armlab_char model type of exported policies)
    from armlab.contract import BUILTIN_BASE
    from armlab.training.backends.hf_export import char_tokenizer, tiny_model

    path = config["trl"].get("model")
    if path == BUILTIN_BASE:
        if hf_base is None:
            raise ValueError(
                f"trl.model: {BUILTIN_BASE} needs the exported base policy (--hf_base, the model/ directory "
                f"written by python -m armlab.training.backends.hf_export)"
            )
        path = hf_base
    if path:
        return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    return tiny_model(config["model"], seed_for_init), char_tokenizer()


def step_log(log_history: list[dict], experiment: str, arm: str, seed: int) -> pandas.DataFrame:
    """The steps.parquet of a TRL run: its log history's training rows (those with a reward), identity first."""
    import pandas as pd

    rows = [row for row in log_history if "reward" in row]  # none when the run is shorter than TRL's logging_steps
    steps = pd.DataFrame(rows, columns=None if rows else ["step"]).rename(columns=TRL_STEP_NAMES)
    identity = {"experiment": experiment, "arm": arm, "seed": seed, "step": steps.pop("step")}
    return pd.concat([pd.DataFrame(identity), steps], axis=1)


def train(config: dict, arm: str, seed: int, data_dir: Path, out_dir: Path, hf_base: Path | None = None) -> None:
    """Train one (arm, seed) with ``GRPOTrainer``; write the HF checkpoint, the step log and the manifest.

    ``hf_base``: the exported builtin base policy, the start when ``trl.model: builtin_base``."""
    import datasets
    import pandas as pd
    from trl import GRPOConfig

    from armlab.training.data import load_pools
    from armlab.training.reasoning_gym_tasks import REBUILD_KEYS, training_pools

    recipe, experiment, threads = resolve_arm(config, arm), config["experiment"], config["threads"]
    numerics.start_job(config, strict=False)
    pools, drawn = load_pools(data_dir), training_pools(config)
    for domain, prompts in drawn.items():  # trl.reasoning_gym's prompts join their domains' pools
        pools.setdefault(domain, []).extend(prompts)
    items = [item for domain in sorted(pools) for item in pools[domain]]
    # armlab's prompts carry no rebuild keys (None in their columns) beside reasoning-gym's
    columns = ("prompt", "answer", "task", "domain", "id", *(REBUILD_KEYS if drawn else ()))
    dataset = datasets.Dataset.from_list([{k: item.get(k) for k in columns} for item in items])
    model, tokenizer = load_start(config, config["base"]["seed"], hf_base)
    start = time.perf_counter()
    with atomic_path(out_dir) as tmp:
        args = GRPOConfig(**grpo_config_kwargs(recipe, experiment, seed, str(tmp / "trainer"), threads))
        sampler = StepSampler(
            dataset["domain"], recipe, experiment, seed, repeat_count=args.num_iterations, ids=dataset["id"]
        )
        trainer = make_trainer_class()(
            model=model,
            reward_funcs=[make_reward(recipe, seed, sampler)],
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            step_sampler=sampler,
        )
        began = time.perf_counter()
        trainer.train()
        trainer.save_model(str(tmp / CHECKPOINT_DIR))
        tokenizer.save_pretrained(str(tmp / CHECKPOINT_DIR))
        checkpoints = keep_checkpoints(tmp / "trainer", tmp / CHECKPOINTS_DIR, recipe, tokenizer)
        steps = step_log(trainer.state.log_history, experiment, arm, seed)
        steps.to_parquet(tmp / "steps.parquet", index=False)
        pd.DataFrame(sampler.records()).to_parquet(tmp / "mixture.parquet", index=False)
        gym = [REASONING_GYM_PROMPTS] if drawn else []  # what was drawn, to read without rebuilding it
        if drawn:
            pd.DataFrame([item for domain in sorted(drawn) for item in drawn[domain]]).to_parquet(
                tmp / gym[0], index=False
            )
        counts = sampler.ledger_counts(trainer.clock.ends, began)
        ledger = [write_ledger(counts, model.num_parameters(), tmp)] if len(counts) == recipe.steps else []
        write_manifest(
            tmp,
            {
                "experiment": experiment,
                "arm": arm,
                "seed": seed,
                "backend": "trl",
                "recipe": recipe.as_dict(),
                "grpo_config": args.to_dict(),
                "checkpoint": str((out_dir / CHECKPOINT_DIR).resolve()),
                "start": str(Path(hf_base).resolve()) if hf_base else config["trl"].get("model"),
                "config_hash": config_hash(config),
                "config": config,
                "seconds": time.perf_counter() - start,
                **job_environment(config),
                **registration.record(out_dir),
            },
            CHECKPOINT_DIR,
            *checkpoints,
            "steps.parquet",
            "mixture.parquet",
            *gym,
            *ledger,
        )


def keep_checkpoints(trainer_dir: Path, out: Path, recipe: Recipe, tokenizer) -> list[str]:
    """TRL's intermediate checkpoints (``checkpoint-<optimizer step>``) as the builtin names them: the model and
    tokenizer of each rollout batch ``checkpoint_every`` × k before the last, in ``out/step-NNNNNN``; then the
    trainer's directory goes (the final model is ``CHECKPOINT_DIR``). Their paths relative to the run."""
    import shutil

    kept, kept_steps = [], kept_checkpoint_steps(recipe)
    for saved in sorted(trainer_dir.glob("checkpoint-*"), key=lambda path: int(path.name.split("-")[1])):
        step = int(saved.name.split("-")[1]) // recipe.updates_per_batch
        if step in kept_steps:
            target = out / f"step-{step:06d}"
            target.mkdir(parents=True)
            for path in saved.iterdir():
                if not path.name.startswith(TRAINER_STATE):
                    path.rename(target / path.name)
            tokenizer.save_pretrained(str(target))
            kept.append(f"{out.name}/{target.name}")
    shutil.rmtree(trainer_dir, ignore_errors=True)
    return kept


def main(argv=None) -> None:
    config, args = run_arguments(__doc__.splitlines()[0], "data", argv=argv, optional=("hf_base",))
    numerics.start_job(config)  # before any torch operation, checked
    train(config, args.arm, args.seed, args.data, args.out, args.hf_base)


if __name__ == "__main__":
    main()
