"""Wall time per RL step, searchrl vs TRL's GRPOTrainer doing the same work, on the embedded default model.

Same model (SmolLM2-135M-Instruct, `load_policy("default")`, float32 master weights), same questions in the same
order (the world's training questions as searchrl's `QuestionSampler` draws them), same prompt (the demo's compact
raw-text prompt, reply opened with `<answer>`), same group size G, questions per step B, completion budget,
optimiser updates per generation batch (mini-batches) and micro-batches, learning rate, bf16 autocast and gradient
checkpointing setting, sampling (T, no top-p/top-k), GRPO without KL, EM reward, torch threads. The sizes default
to the demo config's (`src/searchrl/configs/demo.yaml`). Single turn (no search tool), so TRL's plain
GRPOTrainer can run it: searchrl runs `rollout.max_turns=0`.

One "RL step" is one generation batch of B·G completions and all its optimiser updates (B·G/mini_batch_size
updates of mini_batch_size/micro_batch_size micro-batches each). TRL: `per_device_train_batch_size` = micro,
`gradient_accumulation_steps` = mini/micro, `steps_per_generation` = B·G/micro, `num_iterations` = 1.
Both sides compute the old log-probs with a separate no-grad forward (TRL does because it generates once per
several optimiser steps; searchrl always does).

How each step is timed (wall clock and process CPU time, `time.process_time`):
- searchrl: `searchrl.training.loop.rl_step` is wrapped (the loop looks it up at call time); rollout is
  `RolloutEngine.run` inside it.
- TRL: a callback stamps `on_step_begin` of the first and `on_step_end` of the last optimiser step of each
  generation cycle (generation happens inside the first one's `training_step`); rollout is `GRPOTrainer._generate`
  (tokenise + `model.generate` + decode); old log-probs are its no-grad `_get_per_token_logps_and_entropies` calls.
"update" = step − rollout on both sides (rewards, advantages, old log-probs and the optimiser updates).

The same work on both sides: by default every completion is exactly the token budget long on both sides
(`workload.fix_lengths`: EOS and every token holding '<' are unsampleable, so neither side stops early);
`--same-stop` instead lets both sides sample freely and stop at `</answer>` (the demo's setting: similar, not
identical, token counts; the table prints each side's mean). The same precision on both sides: with bf16, TRL
generates under accelerate's bf16 autocast, so searchrl samples under bf16 autocast too (`rollout.bf16=true`);
`--searchrl-fp32-rollout` runs searchrl's CPU default (float32 sampling on oneDNN-packed weights) as a separate,
labelled measurement.

Each framework runs in its own subprocess (peak memory = that process's max RSS); `--rounds R` (default 3) runs
one process of each per round, who goes first alternating by round, so load changes hit both. The first step of
each process is warm-up and is dropped; the table reports the median and [min, max] over the remaining steps of
all rounds, and the searchrl / TRL ratio of each round's medians (median [min, max] over rounds), with the CPU
model, its kernel flags, the thread count and the load.

    .venv/bin/python benchmarks/bench_train.py                                   # demo sizes, all 30 blocks, 3 rounds
    .venv/bin/python benchmarks/bench_train.py --train-layers 10                 # the demo's trained blocks
    .venv/bin/python benchmarks/bench_train.py --same-stop --json /tmp/bench_train.json

`--keep-groups` runs searchrl with `train.keep_groups_together=true` (verl's layout: whole groups per mini-batch),
so each of its forwards computes a micro-batch's shared prompt once (`training/forward.py`); the tokens
generated and trained and the updates are the same, only which rows share a mini-batch changes. TRL is unchanged.

With `--train-layers N` both sides train only the top N blocks (TRL's model is frozen below them with the same
helper as searchrl's `train.train_layers`), so the work is the same again; searchrl then also runs the frozen
blocks once per trajectory and step (the fast forward, `train.fast_forward`), which TRL has no counterpart for.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hostinfo import fmt, host, host_line  # benchmarks/, beside this file

REPO = Path(__file__).resolve().parents[1]
from workload import fix_lengths, load_policy_with_fixed_lengths

INSTRUCTIONS = {
    "short": "Answer the question with <answer>answer</answer>.\nQuestion: {question}\n",  # about 30 prompt tokens
    "search-r1": None,  # searchrl.protocol.SEARCH_R1_INSTRUCTION (protocol.instruction's default): ~130 tokens
}


def instruction(args: argparse.Namespace) -> str:
    from searchrl.protocol import SEARCH_R1_INSTRUCTION

    return INSTRUCTIONS[args.instruction] or SEARCH_R1_INSTRUCTION
PREFIX = "<answer>"
STOP = "</answer>"


def _peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # Linux: KiB


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _questions(args: argparse.Namespace) -> list[list[Any]]:
    """The questions of steps 1..steps, exactly as searchrl's trainer samples them (seeded epoch permutations)."""
    from searchrl.data import load_source

    try:
        from searchrl.training.state import QuestionSampler
    except ImportError:  # --compare-src: code from before training/state.py
        from searchrl.training.trainer import QuestionSampler

    questions = load_source("world", split="train").questions
    sampler = QuestionSampler(questions, args.batch_size, args.seed)
    return [sampler.batch(step) for step in range(1, args.steps + 1)]


def searchrl_overrides(args: argparse.Namespace, run: Path, algorithm: str) -> list[str]:
    """searchrl's settings for the benchmark's work (the module docstring), its run folder `run`."""
    return [
        f"run.dir={run}", "run.overwrite=true", f"seed={args.seed}", f"train.steps={args.steps}",
        "train.device=cpu",  # a CPU benchmark, as TRL's side (use_cpu=True), even on a machine with a GPU
        f"train.batch_size={args.batch_size}", f"train.group_size={args.group_size}",
        f"train.mini_batch_size={args.mini_batch_size}", f"train.micro_batch_size={args.micro_batch_size}",
        "train.ppo_epochs=1", f"train.lr={args.lr}", "train.warm_start=null", f"train.bf16={str(args.bf16).lower()}",
        "train.warmup_ratio=0", "train.lr_schedule=constant", "train.time_budget_min=null",
        f"train.train_layers={args.train_layers if args.train_layers is not None else 'null'}",
        f"train.keep_groups_together={str(args.keep_groups).lower()}",  # explicit: the defaults differ across versions
        f"model.gradient_checkpointing={str(args.gradient_checkpointing).lower()}", "model.lora.enabled=false",
        "rollout.max_turns=0", f"rollout.max_turn_tokens={args.max_tokens}", f"rollout.temperature={args.temperature}",
        *(["rollout.bf16=true"] if args.bf16 and not args.searchrl_fp32_rollout else []),  # else: CPU default, fp32
        "rollout.top_p=1.0", "rollout.top_k=0", "rollout.greedy=false",
        f"protocol.instruction={json.dumps(instruction(args))}", f"protocol.assistant_prefix={PREFIX}",
        "protocol.use_chat_template=false", "reward.metric=em",
        f"algorithm.name={algorithm}", "algorithm.kl_coef=0", "algorithm.entropy_coef=0",
        "val.at_start=false", "val.untrained=false", "val.every=0", "val.max_questions=1", "val.test_max_questions=1",
        "checkpoint.every=0",
        "checkpoint.export_final=false", "log.tensorboard=false", "log.samples_every=0", "log.console=false",
    ]


def load_bench_config(package: Any, overrides: list[str]) -> Any:
    """`package`'s demo config with `overrides` (package: `searchrl`, or an older copy under another name).

    --compare-src runs an older searchrl: a key it predates is dropped when its value is what that code did anyway
    (it had no device setting and ran on the CPU), and any other unknown key stays an error."""
    config = importlib.import_module(f"{package.__name__}.training.config")
    errors = importlib.import_module(f"{package.__name__}.errors")
    overrides, predates = list(overrides), {"train.device=cpu"}
    while True:
        try:
            return config.load_config("demo", overrides)
        except errors.ConfigError as exc:
            dropped = [o for o in overrides if o in predates and f"'{o.split('=')[0]}'" in str(exc)]
            if not dropped:
                raise
            print(f"searchrl at {Path(package.__file__).parent} predates {dropped[0]}: dropped", file=sys.stderr)
            overrides.remove(dropped[0])


def worker_searchrl(args: argparse.Namespace) -> dict:
    import searchrl.models
    from searchrl.rollout.engine import RolloutEngine
    from searchrl.training import loop
    from searchrl.training.logger import read_jsonl

    run = Path(tempfile.mkdtemp(prefix="bench_searchrl_"))
    cfg = load_bench_config(searchrl, searchrl_overrides(args, run, args.algorithm))
    if not args.same_stop:
        load_policy_with_fixed_lengths()  # every completion runs to its budget (workload.fix_lengths)
    if args.unfused_adamw:  # the optimiser searchrl used before this benchmark: the per-tensor AdamW loop
        import torch

        from searchrl.training import policy

        def make_loop_adamw(model: Any, *, lr: float, weight_decay: float = 0.0, betas: Any = (0.9, 0.999),
                            eps: float = 1e-8) -> torch.optim.AdamW:
            return torch.optim.AdamW(policy.trainable_parameters(model), lr=lr, weight_decay=weight_decay,
                                     betas=betas, eps=eps, foreach=False)

        loop.make_optimizer = make_loop_adamw  # the name loop.build calls

    steps: list[dict[str, float]] = []
    rollouts: list[tuple[float, float]] = []
    run_engine = RolloutEngine.run
    rl_step = loop.rl_step

    @functools.wraps(run_engine)
    def timed_run(self: Any, *a: Any, **k: Any) -> Any:
        w0, c0 = _clock()
        try:
            return run_engine(self, *a, **k)
        finally:
            w1, c1 = _clock()
            rollouts.append((w1 - w0, c1 - c0))

    @functools.wraps(rl_step)
    def timed_step(t: Any, step: int) -> Any:
        w0, c0 = _clock()
        out = rl_step(t, step)
        w1, c1 = _clock()
        steps.append({"wall": w1 - w0, "cpu": c1 - c0, "rollout_wall": rollouts[-1][0], "rollout_cpu": rollouts[-1][1],
                      "update_only_wall": out.metrics["time/update_s"],
                      "completion_tokens_mean": out.metrics["response/sampled_length_mean"],
                      "updates": out.metrics["actor/updates"], "reward_mean": out.metrics["reward/mean"]})
        return out

    RolloutEngine.run = timed_run
    loop.rl_step = timed_step  # fit looks rl_step up in loop's namespace
    try:
        from searchrl.training.run import train
    except ImportError:  # --compare-src: code from before training/run.py
        train = loop.train
    start = time.perf_counter()
    train(cfg, console=False)
    rows = read_jsonl(run / "metrics.jsonl")
    shutil.rmtree(run, ignore_errors=True)  # its final checkpoint is about 1 GB: a few rounds would fill /tmp
    assert len(rows) == len(steps) == args.steps, (len(rows), len(steps))
    # The step's own timer (metrics row) and ours must agree: the wrapper adds nothing but two clock reads.
    for s, r in zip(steps, rows):
        s["metrics_step_wall"] = r["time/step_s"]
    return {"framework": "searchrl", "steps": steps, "total_s": time.perf_counter() - start, "peak_rss_gb": _peak_rss_gb()}


def worker_trl(args: argparse.Namespace) -> dict:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from searchrl.models import load_policy
    from searchrl.protocol import ProtocolConfig, prompt_text
    from searchrl.rewards import exact_match, extract_answer

    model, tokenizer = load_policy("default")  # float32: bf16=True below is autocast over fp32 weights, as ours
    if not args.same_stop:
        fix_lengths(model, tokenizer)
    if args.train_layers is not None:  # the same trainable blocks as searchrl's train.train_layers
        from searchrl.training.policy import freeze_below_top_layers

        freeze_below_top_layers(model, args.train_layers, "--train-layers")
    protocol = ProtocolConfig(instruction=instruction(args), use_chat_template=False, assistant_prefix=PREFIX)
    ordered = [q for batch in _questions(args) for q in batch]
    dataset = Dataset.from_dict({
        "prompt": [prompt_text(q.question, protocol, tokenizer) for q in ordered],
        "golden": [list(q.golden_answers) for q in ordered],
    })

    def em_reward(completions: list[str], golden: list[list[str]], **_: object) -> list[float]:
        out = []
        for text, gold in zip(completions, golden):
            answer = extract_answer(PREFIX + text)
            out.append(float(exact_match(answer, gold)) if answer is not None else 0.0)
        return out

    per_generation = args.batch_size * args.group_size
    accumulation = args.mini_batch_size // args.micro_batch_size
    updates = per_generation // args.mini_batch_size
    generation_kwargs = None
    if args.same_stop:
        # searchrl's engine stops a row at its closing tag; give TRL the same stop (transformers' stop strings
        # need the tokenizer at generate time, which TRL does not pass, so bind it).
        generation_kwargs = {"stop_strings": [STOP]}
        model.generate = functools.partial(model.generate, tokenizer=tokenizer)
    config = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="bench_trl_"), use_cpu=True, bf16=args.bf16,
        gradient_checkpointing=args.gradient_checkpointing,
        per_device_train_batch_size=args.micro_batch_size, gradient_accumulation_steps=accumulation,
        steps_per_generation=per_generation // args.micro_batch_size, num_generations=args.group_size,
        max_completion_length=args.max_tokens, num_iterations=1, beta=0.0, loss_type="grpo", epsilon=0.2,
        temperature=args.temperature, top_p=1.0, top_k=0, generation_kwargs=generation_kwargs,
        learning_rate=args.lr, lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, max_grad_norm=1.0,
        adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
        max_steps=args.steps * updates, logging_steps=1, save_strategy="no", report_to="none",
        shuffle_dataset=False, seed=args.seed, disable_dropout=True, dataloader_num_workers=0,
    )
    begins: list[tuple[float, float]] = []
    ends: list[tuple[float, float]] = []
    generations: list[dict[str, float]] = []
    old_logprob: list[float] = []
    logged: list[dict[str, float]] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *a: object, **k: object) -> None:
            begins.append(_clock())

        def on_step_end(self, *a: object, **k: object) -> None:
            ends.append(_clock())

        def on_log(self, _args: object, _state: object, _control: object, logs: dict | None = None, **k: object) -> None:
            if logs:
                logged.append(dict(logs))

    trainer = GRPOTrainer(model=model, reward_funcs=em_reward, args=config, train_dataset=dataset,
                          processing_class=tokenizer, callbacks=[Clock()])
    generate = trainer._generate
    logps = trainer._get_per_token_logps_and_entropies

    def timed_generate(*a: Any, **k: Any) -> Any:
        w0, c0 = _clock()
        out = generate(*a, **k)
        w1, c1 = _clock()
        completion_ids = out[1]
        generations.append({"wall": w1 - w0, "cpu": c1 - c0,
                            "completion_tokens_mean": sum(map(len, completion_ids)) / len(completion_ids)})
        return out

    def timed_logps(*a: Any, **k: Any) -> Any:
        if torch.is_grad_enabled():
            return logps(*a, **k)
        w0 = time.perf_counter()
        try:
            return logps(*a, **k)
        finally:
            old_logprob.append(time.perf_counter() - w0)

    trainer._generate = timed_generate
    trainer._get_per_token_logps_and_entropies = timed_logps
    start = time.perf_counter()
    trainer.train()
    total = time.perf_counter() - start
    assert len(generations) == args.steps and len(begins) == len(ends) == args.steps * updates, (
        len(generations), len(begins), len(ends))
    steps = []
    for i in range(args.steps):
        (w0, c0), (w1, c1) = begins[i * updates], ends[(i + 1) * updates - 1]
        g = generations[i]
        steps.append({"wall": w1 - w0, "cpu": c1 - c0, "rollout_wall": g["wall"], "rollout_cpu": g["cpu"],
                      "completion_tokens_mean": g["completion_tokens_mean"], "updates": updates,
                      "old_logprob_wall": old_logprob[i] if len(old_logprob) == args.steps else float("nan")})
    rewards = [row["reward"] for row in logged if "reward" in row]
    return {"framework": "trl", "trl_version": __import__("trl").__version__, "steps": steps,
            "reward_mean_logged": rewards, "total_s": total, "peak_rss_gb": _peak_rss_gb(),
            "torch_threads": torch.get_num_threads()}


def _demo_defaults() -> dict[str, Any]:
    from searchrl.training.config import load_config

    cfg = load_config("demo")
    return {
        "batch_size": cfg.train.batch_size, "group_size": cfg.train.group_size,
        "mini_batch_size": cfg.train.mini_batch_size, "micro_batch_size": cfg.train.micro_batch_size,
        "max_tokens": cfg.rollout.max_turn_tokens, "lr": cfg.train.lr, "temperature": cfg.rollout.temperature,
        "bf16": cfg.train.bf16, "gradient_checkpointing": cfg.model.gradient_checkpointing, "seed": cfg.seed,
    }


def precision_label(args: argparse.Namespace) -> str:
    """The precision each side samples and trains in, for the header line."""
    if not args.bf16:
        return "float32 throughout"
    if not args.searchrl_fp32_rollout:
        return "the same precision in sampling and training (bf16 autocast)"
    if args.compare_src:
        return "both sides searchrl: float32 sampling (packed), bf16 autocast in training"
    return "searchrl samples in float32 (packed), TRL under bf16 autocast"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="RL steps per process (the first is warm-up)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of one searchrl and one TRL process, who goes first alternating by round")
    parser.add_argument("--batch-size", type=int, default=None, help="questions per step B (default: the demo's)")
    parser.add_argument("--group-size", type=int, default=None, help="completions per question G (default: the demo's)")
    parser.add_argument("--mini-batch-size", type=int, default=None, help="completions per optimiser update")
    parser.add_argument("--micro-batch-size", type=int, default=None, help="completions per forward/backward")
    parser.add_argument("--max-tokens", type=int, default=None, help="completion budget in tokens")
    parser.add_argument("--lr", type=float, default=None)
    parser.add_argument("--temperature", type=float, default=None)
    parser.add_argument("--bf16", type=int, choices=(0, 1), default=None, help="bf16 autocast (default: the demo's)")
    parser.add_argument("--gradient-checkpointing", type=int, choices=(0, 1), default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads in each worker")
    parser.add_argument("--train-layers", type=int, default=None,
                        help="both sides train only the top N blocks (searchrl's train.train_layers; default: all)")
    parser.add_argument("--instruction", choices=tuple(INSTRUCTIONS), default="short",
                        help="the prompt on both sides: a one-line instruction (default) or Search-R1's, searchrl's "
                             "default protocol.instruction (about 130 tokens; the reply still opens with <answer>)")
    parser.add_argument("--keep-groups", action="store_true",
                        help="searchrl's mini-batches hold whole groups (train.keep_groups_together; verl's layout), so "
                             "its forwards compute each shared prompt once; the work is the same, TRL is unchanged")
    parser.add_argument("--same-stop", action="store_true",
                        help=f"sample freely and stop at {STOP} on both sides (default: every completion runs to "
                             "the budget on both sides)")
    parser.add_argument("--searchrl-fp32-rollout", action="store_true",
                        help="searchrl samples in float32 on packed weights (its CPU default) while TRL samples "
                             "under bf16 autocast: a labelled, unequal-precision measurement")
    parser.add_argument("--unfused-adamw", action="store_true",
                        help="searchrl uses the per-tensor AdamW loop (foreach=False) instead of the fused kernel")
    parser.add_argument("--algorithm", default="grpo", help="searchrl's algorithm.name (TRL runs GRPO)")
    parser.add_argument("--algorithms", default=None, metavar="A,B,...",
                        help="instead of TRL, time searchrl with each of these algorithms (e.g. grpo,sapo,llds), in an "
                             "order that rotates by round; ratios are against the first")
    parser.add_argument("--only", choices=("searchrl", "trl"), default=None)
    parser.add_argument("--compare-src", default=None, metavar="DIR",
                        help="instead of TRL, time searchrl from another source tree (the src/ folder of another "
                             "checkout, e.g. `git worktree add /tmp/old COMMIT`) against this one, alternating")
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument("--worker", choices=("searchrl", "trl"), default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    for key, value in _demo_defaults().items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    from searchrl.training.policy import use_bf16

    # the demo's 'auto' resolves here, for both sides: bf16 autocast only where this CPU computes bf16 natively
    args.bf16, args.gradient_checkpointing = use_bf16(args.bf16), bool(args.gradient_checkpointing)
    if (args.batch_size * args.group_size) % args.mini_batch_size or args.mini_batch_size % args.micro_batch_size:
        parser.error("B·G must be a multiple of --mini-batch-size, and that a multiple of --micro-batch-size")

    if args.worker:
        import torch

        torch.set_num_threads(args.threads)
        result = (worker_searchrl if args.worker == "searchrl" else worker_trl)(args)
        print("RESULT " + json.dumps(result))
        return 0

    worker_args = [
        "--steps", str(args.steps), "--batch-size", str(args.batch_size), "--group-size", str(args.group_size),
        "--mini-batch-size", str(args.mini_batch_size), "--micro-batch-size", str(args.micro_batch_size),
        "--max-tokens", str(args.max_tokens), "--lr", str(args.lr), "--temperature", str(args.temperature),
        "--bf16", str(int(args.bf16)), "--gradient-checkpointing", str(int(args.gradient_checkpointing)),
        "--seed", str(args.seed), "--threads", str(args.threads),
    ]
    worker_args += ["--train-layers", str(args.train_layers)] if args.train_layers is not None else []
    worker_args += ["--same-stop"] if args.same_stop else []
    worker_args += ["--instruction", args.instruction]
    worker_args += ["--keep-groups"] if args.keep_groups else []
    worker_args += ["--searchrl-fp32-rollout"] if args.searchrl_fp32_rollout else []
    worker_args += ["--unfused-adamw"] if args.unfused_adamw else []
    worker_args += ["--algorithm", args.algorithm]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads),
           "TOKENIZERS_PARALLELISM": "false"}
    info = host(args.threads)
    names = [n for n in ("searchrl", "trl") if args.only in (None, n)]
    worker_of = {"searchrl": "searchrl", "trl": "trl"}
    envs = {name: env for name in names}
    if args.compare_src:
        other = f"searchrl@{args.compare_src}"
        names, worker_of[other] = ["searchrl", other], "searchrl"
        envs = {"searchrl": {**env, "PYTHONPATH": str(REPO / "src")},
                other: {**env, "PYTHONPATH": str(Path(args.compare_src).resolve())}}
    extra_args = {name: [] for name in names}
    if args.algorithms:
        algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
        names = [f"searchrl:{a}" for a in algorithms]
        worker_of.update({n: "searchrl" for n in names})
        envs = {n: env for n in names}
        extra_args = {n: ["--algorithm", a] for n, a in zip(names, algorithms)}
    results: dict[str, list[dict]] = {n: [] for n in names}
    for round_index in range(args.rounds):
        k = round_index % len(names)
        order = names[k:] + names[:k] if args.algorithms else (names if round_index % 2 == 0 else names[::-1])
        for name in order:  # who goes first alternates (rotates) by round
            load_before = os.getloadavg()[0]
            print(f"round {round_index + 1}/{args.rounds}: {name} ({args.steps} steps) ...", file=sys.stderr, flush=True)
            proc = subprocess.run([sys.executable, __file__, "--worker", worker_of[name], *worker_args, *extra_args[name]],
                                  capture_output=True, text=True, env=envs[name])
            line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
            if proc.returncode != 0 or line is None:
                print(proc.stderr[-6000:], file=sys.stderr)
                raise SystemExit(f"{name} worker failed (exit {proc.returncode})")
            result = json.loads(line[len("RESULT "):])
            result["load_average"] = [load_before, os.getloadavg()[0]]
            result["round"] = round_index
            for step in result["steps"]:
                step["update_wall"], step["update_cpu"] = step["wall"] - step["rollout_wall"], step["cpu"] - step["rollout_cpu"]
            results[name].append(result)

    keys = ("wall", "rollout_wall", "update_wall", "cpu", "completion_tokens_mean")
    values = {name: {key: [s[key] for r in rs for s in r["steps"][1:]] for key in keys} for name, rs in results.items()}
    mode = ("both sample freely and stop at " + STOP) if args.same_stop else "every completion exactly the budget"
    precision = precision_label(args)
    print(host_line(info))
    print(f"B={args.batch_size} G={args.group_size} mini={args.mini_batch_size} micro={args.micro_batch_size} "
          f"budget={args.max_tokens} tokens ({mode}), {precision}, grad-ckpt={args.gradient_checkpointing}, "
          f"trained blocks: {args.train_layers or 'all'}, {args.rounds} rounds x {args.steps} steps"
          + (", searchrl with the unfused AdamW loop" if args.unfused_adamw else "")
          + (", searchrl keeps groups together (train.keep_groups_together)" if args.keep_groups else ""))
    w = max(9, *(len(n) for n in names))
    print(f"{'framework':<{w}} {'step s':>20} {'rollout s':>20} {'update s':>20} {'tokens':>6} {'RSS GB':>6} "
          "(median [min, max] over the steps after each process's first)")
    for name, v in values.items():
        print(f"{name:<{w}} {fmt(v['wall']):>20} {fmt(v['rollout_wall']):>20} {fmt(v['update_wall']):>20} "
              f"{statistics.mean(v['completion_tokens_mean']):>6.1f} "
              f"{max(r['peak_rss_gb'] for r in results[name]):>6.2f}")
    ratios: dict[str, list[float]] = {}
    med = lambda r, key: statistics.median(s[key] for s in r["steps"][1:])  # noqa: E731
    if len(results) == 2 and not args.algorithms:
        first, second = names
        ratios = {key: [med(a, key) / med(b, key) for a, b in zip(results[first], results[second])]
                  for key in ("wall", "rollout_wall", "update_wall")}
        print(f"{first} / {second} per round (median [min, max]): " + ", ".join(
            f"{k} {fmt(v, '.2f', 'x')}" for k, v in ratios.items())
            + ("" if args.compare_src else "  (target: step <= 0.5x)"))
    if args.algorithms:
        base = names[0]
        for name in names[1:]:
            ratios[name] = [med(a, "wall") / med(b, "wall") for a, b in zip(results[name], results[base])]
            print(f"{name} / {base} step per round (median [min, max]): {fmt(ratios[name], '.3f', 'x')}")
    if args.json:
        path = Path(args.json)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps({"host": info, "args": vars(args), "ratios_by_round": ratios, "results": results},
                                  indent=2) + "\n")
        os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
