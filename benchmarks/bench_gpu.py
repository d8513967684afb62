"""One GPU: rollout tokens/s, RL step time and peak GPU memory of searchrl's native trainer, against TRL's
GRPOTrainer doing the same work on the same GPU.

Models: the SmolLM2-135M and Qwen2.5-0.5B architectures (configs built with transformers' `LlamaConfig` and
`Qwen2Config` at the published sizes, vocabulary included), with seeded random weights: nothing is downloaded. The
tokenizer is the embedded default's (SmolLM2's, 49,152 tokens); for the Qwen architecture the ids beyond it keep
their full LM-head cost but are never sampled.

Fixed work: random weights would stop at a random EOS, so both sides get the same logits processor
(`workload.fix_lengths`: a forward hook on the LM head that bans EOS, the ids beyond the tokenizer and every token
holding '<', so no stop tag forms): every completion is exactly `--max-tokens` long on both sides (the table prints the measured mean, to check). Everything else is bench_train.py's
setting: the same questions in the same order (the world's, as searchrl's `QuestionSampler` draws them), the demo's
compact single-turn prompt opened with `<answer>`, B questions x G completions per step, the same mini- and
micro-batches, lr, bf16 autocast over fp32 weights in sampling and training alike (TRL: accelerate wraps the model's
forward, generation included; searchrl: `rollout.bf16`), gradient checkpointing, sampling at T=1 without top-p/top-k,
GRPO without KL, EM reward. searchrl: `train.device=cuda`, `rollout.max_turns=0`. TRL: `GRPOTrainer` on the GPU
with transformers' `generate` (no vLLM), `per_device_train_batch_size` = micro, `gradient_accumulation_steps` =
mini/micro, `steps_per_generation` = B*G/micro.

Timing: CUDA is synchronised at each stamp. "rollout" is `RolloutEngine.run` (searchrl) or `GRPOTrainer._generate`
(TRL); rollout tokens/s = sampled tokens / rollout wall time; a step is one generation batch and all its optimiser
updates; peak memory is `torch.cuda.max_memory_allocated` of the worker process. Each framework runs in its own
subprocess, alternating (`--rounds`; who goes first swaps each round), one at a time on the GPU; the first step of
each process is warm-up and is dropped; the table gives the median and [min, max] over the remaining steps of all
rounds, and the searchrl / TRL ratio per round (median [min, max]), with the GPU, driver, CUDA, torch and CPU
recorded. `--json` is rewritten after every process, so an interrupted run keeps what it measured. Each step also
records, on both sides, the seconds spent in Python's garbage collector and the rollout's cudaMalloc / cudaFree /
retry counts (neither adds a synchronisation). Diagnostics for searchrl's rollouts, whose times they change (so
not for the table): `--breakdown` times its model forwards and its sampling (synchronised), and `--profile FILE`
writes a cProfile of each rollout; `gpu_check.sh` runs one such process before the benchmark.

    .venv/bin/python benchmarks/bench_gpu.py                                   # both models, 3 rounds x 3 steps
    .venv/bin/python benchmarks/bench_gpu.py --models qwen2.5-0.5b --json /tmp/bench_gpu.json

Without a CUDA GPU it says so and exits with status 2 (`make bench` skips it there). Results: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import importlib.metadata
import importlib.util
import io
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from workload import fix_lengths, load_policy_with_fixed_lengths  # benchmarks/workload.py, beside this file

INSTRUCTION = "Answer the question with <answer>answer</answer>.\nQuestion: {question}\n"
PREFIX = "<answer>"

# The published sizes (SmolLM2-135M's config.json; Qwen2.5-0.5B-Instruct's config.json).
ARCHITECTURES: dict[str, tuple[str, dict[str, Any]]] = {
    "smollm2-135m": ("llama", dict(
        hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
        vocab_size=49152, max_position_embeddings=8192, rope_theta=100000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=True,
    )),
    "qwen2.5-0.5b": ("qwen2", dict(
        hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
        vocab_size=151936, max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
        tie_word_embeddings=True,
    )),
    "qwen2.5-3b": ("qwen2", dict(  # Qwen2.5-3B-Instruct's config.json; run it with --lora (configs/*_lora_1gpu.yaml)
        hidden_size=2048, intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16, num_key_value_heads=2,
        vocab_size=151936, max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
        tie_word_embeddings=True,
    )),
}
# The layers that get adapters under --lora: all seven linear layers of a block, as configs/*_lora_1gpu.yaml.
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def no_cuda_message() -> str | None:
    """Why this machine cannot run the benchmark, or None when it can."""
    import torch

    if torch.cuda.is_available():
        return None
    why = "a CPU-only torch build" if torch.version.cuda is None else f"torch built for CUDA {torch.version.cuda}"
    return (f"bench_gpu.py: no CUDA GPU here ({why}, torch {torch.__version__}); nothing was measured. Run it on a "
            "machine with an NVIDIA GPU and a CUDA build of torch 2.13.0; on a CPU the benchmarks are "
            "bench_train.py and bench_rollout.py.")


def build_random_model(arch: str, out: Path, seed: int, dtype: str = "float32", device: str = "cpu") -> Path:
    """Write seeded random weights of `arch` (no download), saved in `dtype`, with the default tokenizer beside them.

    `device` is where they are initialised: a 3B model's initialisation on a CPU takes minutes, on a GPU seconds.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    from searchrl.models import default_tokenizer

    kind, dims = ARCHITECTURES[arch]
    tokenizer = default_tokenizer()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    ids = dict(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
               pad_token_id=tokenizer.pad_token_id)
    config_cls, model_cls = (LlamaConfig, LlamaForCausalLM) if kind == "llama" else (Qwen2Config, Qwen2ForCausalLM)
    config = config_cls(**dims, **ids)
    with torch.random.fork_rng(devices=[]):  # the CPU generator restored after; a GPU's is reseeded, not restored
        torch.manual_seed(seed)
        with torch.device(device):
            model = model_cls(config)
    model.to(getattr(torch, dtype)).save_pretrained(out)
    tokenizer.save_pretrained(out)
    del model
    return out


def _sync() -> None:
    import torch

    torch.cuda.synchronize()


def _clock() -> float:
    _sync()
    return time.perf_counter()


class _GCClock:
    """Seconds spent in Python's garbage collector since install (gc.callbacks; no GPU synchronisation)."""

    def __init__(self) -> None:
        self.seconds, self.collections, self._start = 0.0, 0, 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start
            self.collections += 1


def _cuda_allocs() -> dict[str, int] | None:
    """The CUDA caching allocator's counts of device allocations, frees and retries (None without CUDA)."""
    import torch

    if not torch.cuda.is_available():
        return None
    stats = torch.cuda.memory_stats()
    return {"cuda_mallocs": stats.get("num_device_alloc", 0), "cuda_frees": stats.get("num_device_free", 0),
            "alloc_retries": stats.get("num_alloc_retries", 0)}


def _cuda_allocs_since(before: dict[str, int] | None) -> dict[str, int]:
    """`rollout_<count>`: what the allocator did since `before` (`_cuda_allocs()`); empty without CUDA."""
    after = _cuda_allocs()
    if before is None or after is None:
        return {}
    return {f"rollout_{key}": after[key] - before[key] for key in before}


def _time_method(cls: Any, name: str, totals: dict[str, float], key: str) -> Any:
    """Wrap `cls.name` to add its synchronised wall time to `totals[key]` (for --breakdown); return the original."""
    method = getattr(cls, name)

    @functools.wraps(method)
    def timed(*a: Any, **k: Any) -> Any:
        start = _clock()
        try:
            return method(*a, **k)
        finally:
            totals[key] = totals.get(key, 0.0) + _clock() - start

    setattr(cls, name, timed)
    return method


def _questions(args: argparse.Namespace) -> list[list[Any]]:
    """The questions of steps 1..steps, exactly as searchrl's trainer samples them."""
    from searchrl.data import load_source
    from searchrl.training.state import QuestionSampler

    sampler = QuestionSampler(load_source("world", split="train").questions, args.batch_size, args.seed)
    return [sampler.batch(step) for step in range(1, args.steps + 1)]


def _peak_gb() -> dict[str, float]:
    import torch

    return {"peak_allocated_gb": torch.cuda.max_memory_allocated() / 2**30,
            "peak_reserved_gb": torch.cuda.max_memory_reserved() / 2**30}


def worker_searchrl(args: argparse.Namespace) -> dict:
    import searchrl.models
    from searchrl.rollout.engine import RolloutEngine
    from searchrl.training import loop
    from searchrl.training.config import load_config

    # The worker patches these for its one run and puts them back after (it also runs inside the tests).
    originals = [(searchrl.models, "load_policy", load_policy_with_fixed_lengths()),
                 (RolloutEngine, "run", RolloutEngine.run), (loop, "rl_step", loop.rl_step)]
    run = Path(tempfile.mkdtemp(prefix="bench_gpu_searchrl_"))
    overrides = [
        f"model.name={args.model_dir}", f"run.dir={run}", "run.overwrite=true", f"seed={args.seed}",
        f"train.device={args.device}", f"train.steps={args.steps}", f"train.batch_size={args.batch_size}",
        f"train.group_size={args.group_size}", f"train.mini_batch_size={args.mini_batch_size}",
        f"train.micro_batch_size={args.micro_batch_size}", "train.ppo_epochs=1", f"train.lr={args.lr}",
        "train.warm_start=null", f"train.bf16={str(bool(args.bf16)).lower()}", "train.warmup_ratio=0",
        "train.lr_schedule=constant", "train.time_budget_min=null", "train.train_layers=null",
        f"model.gradient_checkpointing={str(bool(args.gradient_checkpointing)).lower()}",
        "rollout.max_turns=0", f"rollout.max_turn_tokens={args.max_tokens}",
        f"rollout.max_response_tokens={args.max_tokens}",
        f"rollout.bf16={str(bool(args.bf16)).lower()}", f"rollout.cuda_graphs={str(bool(args.cuda_graphs)).lower()}",
        "rollout.temperature=1.0", "rollout.top_p=1.0", "rollout.top_k=0", "rollout.greedy=false",
        f"protocol.instruction={json.dumps(INSTRUCTION)}", f"protocol.assistant_prefix={PREFIX}",
        "protocol.use_chat_template=false", "reward.metric=em",
        "algorithm.name=grpo", "algorithm.kl_coef=0", "algorithm.entropy_coef=0",
        "val.at_start=false", "val.untrained=false", "val.every=0", "val.max_questions=1", "val.test_max_questions=1",
        "checkpoint.every=0", "checkpoint.export_final=false", "log.tensorboard=false", "log.samples_every=0",
        "log.console=false",
    ]
    if args.lora:  # the adapters over a frozen bf16 base, as configs/sapo_qwen3b_lora_1gpu.yaml
        overrides += ["model.lora.enabled=true", f"model.lora.r={args.lora}", f"model.lora.alpha={2 * args.lora}",
                      "model.lora.dropout=0", f"model.lora.target_modules=[{','.join(LORA_TARGETS)}]",
                      "model.dtype=bfloat16"]
    else:
        overrides.append("model.lora.enabled=false")
    cfg = load_config("demo", overrides)
    steps: list[dict[str, float]] = []
    rollouts: list[float] = []
    parts: dict[str, float] = {}  # --breakdown: the current rollout's synchronised forward and sampling time
    if args.breakdown:
        from searchrl.rollout.hf import HFSession

        originals += [(HFSession, "_forward", _time_method(HFSession, "_forward", parts, "rollout_forward_s")),
                      (HFSession, "_choose", _time_method(HFSession, "_choose", parts, "rollout_sample_s"))]
    collector = _GCClock()
    run_engine, rl_step = RolloutEngine.run, loop.rl_step

    @functools.wraps(run_engine)
    def timed_run(self: Any, *a: Any, **k: Any) -> Any:
        profile = cProfile.Profile() if args.profile else None
        allocs = _cuda_allocs()
        start = _clock()
        try:
            if profile is None:
                return run_engine(self, *a, **k)
            return profile.runcall(run_engine, self, *a, **k)
        finally:
            rollouts.append(_clock() - start)
            parts.update(_cuda_allocs_since(allocs))  # cudaMalloc / cudaFree calls the rollout made
            if profile is not None:  # the step's rollout: where its wall time went, by own time
                text = io.StringIO()
                pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
                with open(args.profile, "a", encoding="utf-8") as f:
                    f.write(f"\n=== searchrl rollout call {len(rollouts)} (the RL steps' in order, then the final "
                            f"evaluation's): {rollouts[-1]:.2f} s (profiled) ===\n")
                    f.write(text.getvalue())

    @functools.wraps(rl_step)
    def timed_step(t: Any, step: int) -> Any:
        parts.clear()
        gc_before = (collector.seconds, collector.collections)
        start = _clock()
        out = rl_step(t, step)
        wall = _clock() - start
        n = args.batch_size * args.group_size
        tokens = out.metrics["response/sampled_length_mean"] * n
        steps.append({"wall": wall, "rollout_wall": rollouts[-1], "update_wall": wall - rollouts[-1],
                      "rollout_tok_s": tokens / rollouts[-1], "completion_tokens_mean": tokens / n,
                      "gc_s": collector.seconds - gc_before[0], "gc_collections": collector.collections - gc_before[1],
                      **dict(parts)})
        return out

    RolloutEngine.run, loop.rl_step = timed_run, timed_step  # fit looks rl_step up in loop's namespace
    from searchrl.training.run import train

    try:
        train(cfg, console=False)
    finally:
        shutil.rmtree(run, ignore_errors=True)
        for owner, name, value in originals:
            setattr(owner, name, value)
        gc.callbacks.remove(collector._callback)
    assert len(steps) == args.steps, (len(steps), args.steps)
    return {"framework": "searchrl", "steps": steps, **_peak_gb()}


def worker_trl(args: argparse.Namespace) -> dict:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from searchrl.models import load_policy
    from searchrl.protocol import ProtocolConfig, prompt_text
    from searchrl.rewards import exact_match, extract_answer

    # float32 (bf16=True below is autocast over fp32 weights, as ours); under --lora a frozen bf16 base, as ours
    model, tokenizer = load_policy(args.model_dir, dtype=torch.bfloat16 if args.lora else None)
    fix_lengths(model, tokenizer)
    peft_config = None
    if args.lora:  # the same adapters as searchrl's (peft's LoRA too): rank, alpha = 2r, no dropout, 7 targets
        from peft import LoraConfig

        peft_config = LoraConfig(r=args.lora, lora_alpha=2 * args.lora, lora_dropout=0.0,
                                 target_modules=list(LORA_TARGETS), task_type="CAUSAL_LM")
    protocol = ProtocolConfig(instruction=INSTRUCTION, use_chat_template=False, assistant_prefix=PREFIX)
    ordered = [q for batch in _questions(args) for q in batch]
    dataset = Dataset.from_dict({"prompt": [prompt_text(q.question, protocol, tokenizer) for q in ordered],
                                 "golden": [list(q.golden_answers) for q in ordered]})

    def em_reward(completions: list[str], golden: list[list[str]], **_: object) -> list[float]:
        answers = [extract_answer(PREFIX + text) for text in completions]
        return [float(exact_match(a, g)) if a is not None else 0.0 for a, g in zip(answers, golden)]

    per_generation = args.batch_size * args.group_size
    updates = per_generation // args.mini_batch_size
    out_dir = tempfile.mkdtemp(prefix="bench_gpu_trl_")
    config = GRPOConfig(
        output_dir=out_dir, use_cpu=False, bf16=bool(args.bf16),
        gradient_checkpointing=bool(args.gradient_checkpointing),
        per_device_train_batch_size=args.micro_batch_size,
        gradient_accumulation_steps=args.mini_batch_size // args.micro_batch_size,
        steps_per_generation=per_generation // args.micro_batch_size, num_generations=args.group_size,
        max_completion_length=args.max_tokens, num_iterations=1, beta=0.0, loss_type="grpo", epsilon=0.2,
        temperature=1.0, top_p=1.0, top_k=0, learning_rate=args.lr, lr_scheduler_type="constant", warmup_steps=0,
        weight_decay=0.0, max_grad_norm=1.0, adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
        max_steps=args.steps * updates, logging_steps=1, save_strategy="no", report_to="none",
        shuffle_dataset=False, seed=args.seed, disable_dropout=True, dataloader_num_workers=0,
    )
    begins: list[float] = []
    ends: list[float] = []
    generations: list[dict[str, float]] = []
    collector = _GCClock()
    gc_begins: list[tuple[float, int]] = []  # (GC seconds, collections) at each optimiser step's start
    gc_ends: list[tuple[float, int]] = []  # ... and end

    class Clock(TrainerCallback):
        def on_step_begin(self, *a: object, **k: object) -> None:
            gc_begins.append((collector.seconds, collector.collections))
            begins.append(_clock())

        def on_step_end(self, *a: object, **k: object) -> None:
            ends.append(_clock())
            gc_ends.append((collector.seconds, collector.collections))

    trainer = GRPOTrainer(model=model, reward_funcs=em_reward, args=config, train_dataset=dataset,
                          processing_class=tokenizer, callbacks=[Clock()], peft_config=peft_config)
    generate = trainer._generate

    def timed_generate(*a: Any, **k: Any) -> Any:
        allocs = _cuda_allocs()
        start = _clock()
        out = generate(*a, **k)
        wall = _clock() - start
        completion_ids = out[1]
        tokens = sum(map(len, completion_ids))
        generations.append({"wall": wall, "tokens": tokens, "rows": len(completion_ids),
                            **_cuda_allocs_since(allocs)})
        return out

    trainer._generate = timed_generate
    torch.cuda.reset_peak_memory_stats()
    try:
        trainer.train()
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
        gc.callbacks.remove(collector._callback)
    assert len(generations) == args.steps and len(begins) == len(ends) == args.steps * updates, (
        len(generations), len(begins), len(ends))
    steps = []
    for i in range(args.steps):
        wall = ends[(i + 1) * updates - 1] - begins[i * updates]
        g = generations[i]
        before, after = gc_begins[i * updates], gc_ends[(i + 1) * updates - 1]
        steps.append({"wall": wall, "rollout_wall": g["wall"], "update_wall": wall - g["wall"],
                      "rollout_tok_s": g["tokens"] / g["wall"], "completion_tokens_mean": g["tokens"] / g["rows"],
                      "gc_s": after[0] - before[0], "gc_collections": after[1] - before[1],
                      **{key: value for key, value in g.items() if key.startswith("rollout_")}})
    return {"framework": "trl", "trl_version": __import__("trl").__version__, "steps": steps, **_peak_gb()}


def host_info(device: str) -> dict[str, str]:
    import torch

    index = torch.device(device).index or 0
    props = torch.cuda.get_device_properties(index)
    driver = "unknown"
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=30).stdout.split("\n")[0].strip() or driver
    except (OSError, subprocess.SubprocessError):
        pass
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    versions = {name: (importlib.metadata.version(name) if importlib.util.find_spec(name) else "not installed")
                for name in ("transformers", "peft", "trl")}
    return {"gpu": f"{props.name}, {props.total_memory / 2**30:.0f} GiB, sm_{props.major}{props.minor}",
            "driver": driver, "cuda": str(torch.version.cuda), "torch": torch.__version__, **versions,
            "cpu": f"{cpu}, {os.cpu_count()} cores", "python": sys.version.split()[0]}


def _spread(results: list[dict], key: str) -> tuple[float, float, float]:
    """Median, min and max of `key` over the steps after each process's warm-up step."""
    values = [s[key] for r in results for s in r["steps"][1:]]
    if not values:
        return float("nan"), float("nan"), float("nan")
    return statistics.median(values), min(values), max(values)


def _step_line(st: dict[str, float]) -> str:
    inside = (f", forward {st['rollout_forward_s']:.1f}, sampling {st['rollout_sample_s']:.1f}"
              if "rollout_forward_s" in st else "")
    if "rollout_cuda_mallocs" in st:
        inside += f", {st['rollout_cuda_mallocs']} cudaMalloc, {st['rollout_alloc_retries']} retries"
    return f"{st['wall']:.1f} s (rollout {st['rollout_wall']:.1f}{inside}; GC {st.get('gc_s', float('nan')):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(ARCHITECTURES), help="architectures (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=3, help="RL steps per process (the first is warm-up)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of one searchrl and one TRL process, the order alternating by round")
    parser.add_argument("--batch-size", type=int, default=8, help="questions per step B")
    parser.add_argument("--group-size", type=int, default=8, help="completions per question G")
    parser.add_argument("--mini-batch-size", type=int, default=16, help="completions per optimiser update")
    parser.add_argument("--micro-batch-size", type=int, default=8, help="completions per forward/backward")
    parser.add_argument("--max-tokens", type=int, default=128, help="tokens per completion (every one runs to it)")
    parser.add_argument("--lr", type=float, default=1e-6)
    parser.add_argument("--bf16", type=int, choices=(0, 1), default=1, help="bf16 autocast over fp32 weights")
    parser.add_argument("--gradient-checkpointing", type=int, choices=(0, 1), default=1)
    parser.add_argument("--lora", type=int, default=0, metavar="R",
                        help="train LoRA adapters of rank R (alpha 2R, all 7 linear layers) over a frozen bf16 base "
                             "on both sides, instead of all weights (0, the default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cuda", help="cuda or cuda:N")
    parser.add_argument("--only", choices=("searchrl", "trl"), default=None)
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument("--from-json", default=None, metavar="PATH",
                        help="print the table of a saved --json file (complete or cut short) and exit")
    parser.add_argument("--cuda-graphs", type=int, choices=(0, 1), default=1,
                        help="searchrl decodes by replaying one CUDA graph per batch (rollout.cuda_graphs, default 1); "
                             "0 times its eager decoding")
    parser.add_argument("--breakdown", action="store_true",
                        help="time searchrl's model forwards and sampling inside each rollout (synchronised: adds "
                             "a GPU sync per forward, so such a run's times are a diagnostic, not the benchmark's)")
    parser.add_argument("--profile", default=None, metavar="FILE",
                        help="profile searchrl's rollouts with cProfile and append each step's top functions to "
                             "FILE (diagnostic: profiling slows the Python side, so such a run's times are not "
                             "comparable; use it with --only searchrl --rounds 1)")
    parser.add_argument("--worker", choices=("searchrl", "trl"), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        print_summary(saved["host"], argparse.Namespace(**saved["args"]), saved["results"])
        return 0
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ[key] = "1"
    message = no_cuda_message()
    if message:
        print(message, file=sys.stderr)
        return 2
    if (args.batch_size * args.group_size) % args.mini_batch_size or args.mini_batch_size % args.micro_batch_size:
        parser.error("B·G must be a multiple of --mini-batch-size, and that a multiple of --micro-batch-size")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in models if m not in ARCHITECTURES]
    if unknown:
        parser.error(f"--models: {unknown} unknown; known: {', '.join(ARCHITECTURES)}")

    if args.worker:
        result = (worker_searchrl if args.worker == "searchrl" else worker_trl)(args)
        print("RESULT " + json.dumps(result))
        return 0

    trl_installed = importlib.util.find_spec("trl") is not None
    names = [n for n in ("searchrl", "trl") if args.only in (None, n) and (n != "trl" or trl_installed)]
    worker_args = ["--steps", str(args.steps), "--batch-size", str(args.batch_size), "--group-size",
                   str(args.group_size), "--mini-batch-size", str(args.mini_batch_size), "--micro-batch-size",
                   str(args.micro_batch_size), "--max-tokens", str(args.max_tokens), "--lr", str(args.lr),
                   "--bf16", str(args.bf16), "--gradient-checkpointing", str(args.gradient_checkpointing),
                   "--lora", str(args.lora), "--seed", str(args.seed), "--device", args.device]
    if args.profile:
        worker_args += ["--profile", str(Path(args.profile).resolve())]
    if args.breakdown:
        worker_args.append("--breakdown")
    worker_args += ["--cuda-graphs", str(args.cuda_graphs)]
    from searchrl.models import resolve_device

    device = resolve_device(args.device, key="--device")
    if device.type != "cuda":
        parser.error(f"--device {args.device}: this benchmark measures a GPU; pass cuda or cuda:N")
    host = host_info(str(device))
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    if device.index is not None:  # both workers see that one GPU only, as "cuda" (TRL's accelerator takes cuda:0)
        visible = [v for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
        env["CUDA_VISIBLE_DEVICES"] = visible[device.index] if visible else str(device.index)
    worker_args[worker_args.index("--device") + 1] = "cuda"
    work = Path(tempfile.mkdtemp(prefix="bench_gpu_models_"))
    results: dict[str, dict[str, list[dict]]] = {}
    try:
        for arch in models:
            print(f"{arch}: building random weights ...", file=sys.stderr, flush=True)
            folder = build_random_model(arch, work / arch, args.seed, "bfloat16" if args.lora else "float32", "cuda")
            results[arch] = {n: [] for n in names}
            for round_index in range(args.rounds):
                for name in (names if round_index % 2 == 0 else names[::-1]):  # alternate who goes first
                    print(f"{arch} round {round_index + 1}/{args.rounds}: {name} ({args.steps} steps) ...",
                          file=sys.stderr, flush=True)
                    proc = subprocess.run([sys.executable, __file__, "--worker", name, "--model-dir", str(folder),
                                           *worker_args], capture_output=True, text=True, env=env)
                    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
                    if proc.returncode != 0 or line is None:
                        print(proc.stderr[-6000:], file=sys.stderr)
                        raise SystemExit(f"{name} worker failed on {arch} (exit {proc.returncode})")
                    result = json.loads(line[len("RESULT "):])
                    result["load_average"] = os.getloadavg()[0]
                    result["round"] = round_index
                    print("  steps: " + "; ".join(_step_line(st) for st in result["steps"]), file=sys.stderr,
                          flush=True)
                    results[arch][name].append(result)
                    if args.json:  # after every process, so that an interrupted run keeps what it measured
                        _write_json(Path(args.json), {"host": host, "args": vars(args), "partial": True,
                                                      "results": results})
    finally:
        shutil.rmtree(work, ignore_errors=True)

    summary = print_summary(host, args, results, trl_installed)
    if args.json:
        _write_json(Path(args.json), {"host": host, "args": vars(args), "summary": summary, "results": results})
    return 0


def print_summary(host: dict, args: Any, results: dict[str, dict[str, list[dict]]], trl_installed: bool = True) -> dict:
    """Print the table (and the searchrl / TRL ratios per round) for `results`; return the summary."""
    print(f"GPU {host['gpu']}, driver {host['driver']}, CUDA {host['cuda']}, torch {host['torch']}"
          + "".join(f", {name} {host[name]}" for name in ("transformers", "peft", "trl") if name in host)
          + f"; CPU {host['cpu']}")
    print(f"B={args.batch_size} G={args.group_size} mini={args.mini_batch_size} micro={args.micro_batch_size}, "
          f"{args.max_tokens} tokens per completion, bf16={bool(args.bf16)}, "
          f"grad-ckpt={bool(args.gradient_checkpointing)}, "
          + (f"LoRA r={args.lora} over a bf16 base, " if getattr(args, "lora", 0) else "full fine-tuning, ")
          + f"{args.rounds} rounds x {args.steps} steps "
          "(median [min, max] over the steps after each process's first)")
    if results and all(isinstance(v, list) for by in results.values() for v in by.values()) and any(
            len(v) < args.rounds for by in results.values() for v in by.values()):
        print("PARTIAL: the run was cut short; the processes column says how many each row has")
    summary: dict[str, dict[str, Any]] = {}
    header = (f"{'model':<13} {'framework':<9} {'step s':>22} {'rollout tok/s':>24} {'update s':>22} "
              f"{'tokens':>6} {'peak GB':>7} {'processes':>9}")
    print(header)
    for arch, by_name in results.items():
        summary[arch] = {}
        for name in ("searchrl", "trl"):
            rs = by_name.get(name)
            if not rs:
                installed = name != "trl" or trl_installed
                why = "not run" if installed else "not installed (pip install 'searchrl[bench]')"
                print(f"{arch:<13} {name:<9} {why}")
                summary[arch][name] = why
                continue
            row = {key: _spread(rs, key) for key in ("wall", "rollout_tok_s", "update_wall", "completion_tokens_mean")}
            row["peak_allocated_gb"] = max(r["peak_allocated_gb"] for r in rs)
            summary[arch][name] = row
            cell = lambda v, f: f"{v[0]:{f}} [{v[1]:{f}}, {v[2]:{f}}]"  # noqa: E731
            print(f"{arch:<13} {name:<9} {cell(row['wall'], '.2f'):>22} {cell(row['rollout_tok_s'], '.0f'):>24} "
                  f"{cell(row['update_wall'], '.2f'):>22} {row['completion_tokens_mean'][0]:>6.1f} "
                  f"{row['peak_allocated_gb']:>7.2f} {len(rs):>9}")
        pair = summary[arch]
        if isinstance(pair.get("searchrl"), dict) and isinstance(pair.get("trl"), dict):
            s, t = pair["searchrl"], pair["trl"]
            ratios = {key: _round_ratios(by_name["searchrl"], by_name["trl"], key)
                      for key in ("wall", "rollout_tok_s", "update_wall")}
            pair["ratio_by_round"] = ratios
            cell = lambda v: f"{statistics.median(v):.2f}x [{min(v):.2f}, {max(v):.2f}]"  # noqa: E731
            print(f"{arch:<13} searchrl / TRL (median [min, max] over rounds): step {cell(ratios['wall'])}, "
                  f"rollout tok/s {cell(ratios['rollout_tok_s'])}, update {cell(ratios['update_wall'])}, "
                  f"peak memory {s['peak_allocated_gb'] / t['peak_allocated_gb']:.2f}x")
    return summary


def _round_ratios(ours: list[dict], theirs: list[dict], key: str) -> list[float]:
    """searchrl / TRL per round: the median of `key` over each process's steps after its first, round by round."""
    median = lambda r: statistics.median(s[key] for s in r["steps"][1:])  # noqa: E731
    return [median(a) / median(b) for a, b in zip(ours, theirs) if len(a["steps"]) > 1 and len(b["steps"]) > 1]


def _write_json(path: Path, data: dict) -> None:
    from searchrl.fileio import atomic_write_text

    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
