"""Generation engines for Hugging Face checkpoints, side by side: answers per second of vLLM's CPU build
(``eval.engine: vllm``, in .venv-vllm) against lm-eval's ``hf`` model, on the same model and the same items.

One evaluation job's lm-eval part (``armlab.evals.run.evaluate``) of GSM8K-format items (synthetic, written here)
sampled k times at temperature 1, for a GPT-2-architecture model made locally with armlab's character tokenizer
(random weights: both engines stop an answer at the tokenizer's EOS, a newline, or at ``--max-new`` tokens). Figures are
whole-evaluation seconds, vLLM's included start-up of its worker (loading the model), median of ``--repeats``
with the two engines alternating, and answers per second; importing torch and lm-eval is not included. It also
checks that vLLM gave the same answers in every repeat (one seed per answer).

    .venv/bin/python benchmarks/engine_throughput.py --items 100 --samples 4 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

from armlab.evals.engines import DEFAULT_PYTHON, missing_engine
from armlab.evals.lm_eval_tasks import write_task_configs
from armlab.evals.run import evaluate
from armlab.experiment.validate import load_config
from armlab.training.backends.hf_export import char_tokenizer
from armlab.training.policy import EOS_ID, PAD_ID

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "fixtures" / "tiny.yaml"


def gpt2(folder: Path, width: int, layers: int, heads: int, context: int) -> Path:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    # the end of an answer is the tokenizer's EOS ("\n") for both engines: GPT-2's own (50256) is not in this vocabulary
    config = GPT2Config(
        vocab_size=len(char_tokenizer()), n_embd=width, n_layer=layers, n_head=heads, n_positions=context,
        tie_word_embeddings=False, bos_token_id=None, eos_token_id=EOS_ID, pad_token_id=PAD_ID,
    )  # fmt: skip
    GPT2LMHeadModel(config).save_pretrained(folder)
    char_tokenizer().save_pretrained(folder)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--max-new", type=int, default=32)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    python = REPO / DEFAULT_PYTHON
    why = missing_engine(python)
    if why:
        raise SystemExit(f"engine_throughput: {why}")
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows = [{"question": f"{a}+{b}=", "answer": f"#### {a + b}"} for a in range(1000) for b in (1, 2)]
        items = work / "gsm.jsonl"
        items.write_text("".join(json.dumps(row) + "\n" for row in rows[: args.items]))
        model = gpt2(work / "gpt2", args.width, args.layers, heads=args.width // 64, context=args.max_new + 32)
        external = {"gsm": {"source": "file", "format": "gsm8k", "path": str(items), "domain": "math",
                            "prompt": "{question}"}}  # fmt: skip
        sampling = {"samples": args.samples, "temperature": 1.0, "max_gen_toks": args.max_new, "batch_size": 64}
        config = load_config([TINY], {"threads": args.threads, "benchmarks": {"add": {"domain": "math"}}})
        config["eval"] |= {**sampling, "external": external, "vllm_python": str(python)}
        tasks = work / "tasks"
        (work / "data" / "eval").mkdir(parents=True)
        pd.DataFrame([{"id": "add-0", "benchmark": "add", "domain": "math", "task": "add", "prompt": "1+1=",
                       "answer": "2"}]).to_parquet(work / "data" / "eval" / "add.parquet")  # fmt: skip
        write_task_configs(config, work / "data", tasks)
        answers = (args.items + 1) * args.samples
        seconds: dict[str, list[float]] = {"hf": [], "armlab-vllm": []}
        vllm_texts = []
        for repeat in range(args.repeats):
            for engine in seconds:
                start = time.perf_counter()
                out = work / f"{engine}-{repeat}"
                evaluate(config, tasks, model, "arm", 1, out, model=engine)
                seconds[engine].append(time.perf_counter() - start)
                if engine == "armlab-vllm":
                    vllm_texts.append((out / "samples_armlab_gsm.jsonl").read_text())
        print(
            f"{answers} answers ({args.items + 1} items x {args.samples} samples, {args.max_new} new tokens), "
            f"GPT-2 {args.width} wide x {args.layers} layers, {args.threads} threads; median of {args.repeats}"
        )
        print(f"{'engine':>12} {'seconds':>8} {'answers/s':>10}")
        medians = {engine: statistics.median(values) for engine, values in seconds.items()}
        for engine, median in medians.items():
            print(f"{engine:>12} {median:8.2f} {answers / median:10.1f}")
        print(f"vLLM / hf answers per second: {medians['hf'] / medians['armlab-vllm']:.1f}x")
        print(f"vLLM's answers identical in every repeat: {len(set(vllm_texts)) == 1}")


if __name__ == "__main__":
    main()
