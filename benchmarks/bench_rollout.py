"""Benchmark: rollout throughput of searchrl's engine vs a Search-R1-style loop, on the same work and kernels.

Run: .venv/bin/python benchmarks/bench_rollout.py [--questions 8] [--group 2] [--turn-tokens 128] [--max-turns 2]
        [--rounds 3] [--threads 1] [--stock] [--sizes 1,8,32] [--data DIR] [--json FILE]
        [--save-workload FILE | --workload FILE [--model DIR --random-weights]] [--resume]

The same work on both sides (benchmarks/workload.py): the engine samples one run of `questions` x `group`
trajectories (default 8 x 2 = 16; up to `max_turns` searches + a final turn, `turn_tokens` per turn, the
observations cut to `max_obs` tokens, BM25 top-`topk`), which is recorded; then each variant replays exactly that
recording: the same prompts, the same tokens in every turn (forced in place of the draw; every forward pass still
runs), the same turn ends, the same retriever calls and observations. So "useful tokens" (tokens kept in the
trajectories) are identical on both sides, and useful tokens/s compares the structures:

- **engine**: `RolloutEngine` + `HFBackend`: KV cache kept across turns (only observation tokens are prefilled),
  each distinct prompt and the prompts' shared prefix prefilled once, a row that has stopped leaves the decode
  batch, stop at `</search>` / `</answer>`.
- **Search-R1 loop** (`search_r1/llm_agent/generation.py::run_llm_loop` on transformers' `generate`): each turn
  re-encodes every active row's whole context (prompt, responses, observations), left-padded; the turn's batch
  decodes until its longest row is done, rows that ended padded along.

Both run on the same kernels: the engine's oneDNN-packed float32 linear weights (`HFBackend(pack_weights=True)`,
and `_PackedLinears` around the loop's `generate`). `--stock` adds both on torch's stock `F.linear` as separate,
labelled rows. Every round runs every variant once, in a fresh seeded random order; the table gives per variant
the median and [min, max] over rounds of the wall time and useful tokens/s, and per variant the ratio to the
engine in each round (median [min, max]); the CPU model, its kernel flags, the thread count and the load are
printed with it. Target: the engine >= 2x the loop's useful tokens/s on the same kernels. `--sizes` adds the
engine's tokens/s at other batch sizes (sampled, `--sweep-turn-tokens` per turn; a report, not a comparison).
The prompt is Search-R1's with a one-shot demo and the assistant prefix `<search>`, so the 135M model searches
(cpu-feasibility.md §1). Data: the NQ sample (tests/fixtures/qa/nq_oracle: questions, BM25 over its passages).

On a machine without the model's weights (the GPU machines take no file over 64 MiB), record the workload where
the weights are (`--save-workload FILE`), carry FILE and the model folder's config and tokenizer files, and replay
it there with `--workload FILE --model DIR --random-weights`: every token is forced, so random weights of the same
architecture time the same forward passes, retriever calls and observations (the table's host line says so).
The JSON is rewritten after every round; `--resume` keeps the finished rounds of such a partial file and runs the
rest, with the same options on the same CPU kind (each run records the machine's name), so the rounds can span
two short loans of a machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "fixtures" / "qa" / "nq_oracle"  # the NQ sample ships with the repository
console = Console(stderr=True, width=160)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from searchrl.data import Question  # noqa: E402
from searchrl.fileio import atomic_write_text  # noqa: E402
from searchrl.models import load_policy  # noqa: E402
from searchrl.protocol import ProtocolConfig  # noqa: E402
from searchrl.rollout import HFBackend, RolloutConfig, RolloutEngine  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostinfo import fmt, host, host_line, load  # noqa: E402
from workload import (  # noqa: E402
    ReplayBackend, Workload, load_workload, record, replay_search_r1_loop, save_workload)


# A one-shot demo in Search-R1's format (cpu-feasibility.md §1: demo + a reply opened with `<search>` gives 7/8
# closed searches from the 135M model; the opened reply alone gives few).
DEMO_QUESTION = "who wrote the novel pride and prejudice"
DEMO_RESPONSE = (
    "<search>Pride and Prejudice author</search>\n\n<information>Doc 1(Title: \"Pride and Prejudice\") Pride and "
    "Prejudice is an 1813 novel of manners by Jane Austen.</information>\n\n<answer>Jane Austen</answer>"
)


def load_questions(folder: Path, n: int) -> list[Question]:
    rows = [json.loads(line) for line in (folder / "questions.jsonl").open()]
    return [Question(str(r["id"]), r["question"], list(r["golden_answers"]), "nq") for r in rows[:n]]


# The options that decide the recorded work: a saved workload replays only under the same ones.
WORKLOAD_SETTINGS = ("questions", "group", "turn_tokens", "max_turns", "max_obs", "topk", "seed")


def load_random_policy(folder: str, seed: int):
    """The architecture in `folder`'s config.json with seeded random float32 weights, and its tokenizer."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder), dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok


def load_bm25(folder: Path):
    from searchrl.retrieval.index import load_retriever

    return load_retriever(folder / "corpus.jsonl", cache=False)


# ---------------------------------------------------------------------------- the variants


def engine_replay(model, tok, retriever, protocol, cfg, questions, group, workload, pack_weights=True) -> dict:
    backend = ReplayBackend(model, tok, workload, pack_weights=pack_weights)
    trajs = RolloutEngine(backend, tok, retriever, protocol, cfg).run(questions, group)
    return {"useful": sum(sum(t.response_mask) for t in trajs),
            "encoded": backend.stats["prefill_tokens"] + backend.stats["decode_tokens"],
            "forward_calls": backend.stats["forward_calls"], "searches": sum(t.num_searches for t in trajs)}


def loop_replay(model, tok, retriever, protocol, cfg, questions, group, workload, pack_weights=True) -> dict:
    out = replay_search_r1_loop(model, tok, workload, retriever, topk=cfg.topk, packed_weights=pack_weights)
    return {"useful": out["useful"], "encoded": out["encoded"], "forward_calls": out["decode_steps"],
            "searches": out["searches"]}


def describe(workload: Workload, trajectories) -> dict:
    turns = [len(t.sampled) for w in workload for t in w.turns]
    return {"trajectories": len(workload), "sampled_tokens": sum(turns), "turns": len(turns),
            "searches": sum(t.query is not None for w in workload for t in w.turns),
            "tokens_per_turn_max": max(turns), "tokens_per_turn_median": sorted(turns)[len(turns) // 2],
            "finish": {r: sum(t.finish_reason == r for t in trajectories)
                       for r in sorted({t.finish_reason for t in trajectories})}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--group", type=int, default=2)
    parser.add_argument("--turn-tokens", type=int, default=128)
    parser.add_argument("--max-turns", type=int, default=2)
    parser.add_argument("--max-obs", type=int, default=200)
    parser.add_argument("--topk", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3, help="every variant once per round, in a random order")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--seed", type=int, default=0, help="seeds the recorded run and the order of the variants")
    parser.add_argument("--stock", action="store_true", help="also both sides on torch's stock F.linear")
    parser.add_argument("--sizes", default="", help="engine batch sizes (trajectories) to time, e.g. 1,8,32")
    parser.add_argument("--sweep-turn-tokens", type=int, default=64, help="tokens per turn in the batch sweep")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", type=Path, default=None,
                        help="also write the results here (rewritten after every round)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the finished rounds of the partial --json file and run the rest (the same "
                             "options and CPU kind; the rounds may come from several processes or machines)")
    parser.add_argument("--save-workload", type=Path, default=None, metavar="FILE",
                        help="write the recorded workload (and the settings that made it) here")
    parser.add_argument("--workload", type=Path, default=None, metavar="FILE",
                        help="replay this saved workload instead of recording one (same settings required)")
    parser.add_argument("--model", default="default",
                        help="the policy: 'default' or a Hugging Face model folder (default: %(default)s)")
    parser.add_argument("--random-weights", action="store_true",
                        help="seeded random weights from --model's config.json (for a machine without the "
                             "weights): the timed work is the same, since every token is replayed; needs --workload")
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl").is_file():
        console.print(f"[red]no corpus.jsonl in {args.data}; pass --data FOLDER with questions.jsonl and corpus.jsonl")
        return 2
    if args.random_weights and (args.workload is None or args.sizes):
        console.print("[red]--random-weights needs --workload (a random model's own samples are not the work to "
                      "time) and cannot run the --sizes sweep (it samples)")
        return 2
    torch.set_num_threads(args.threads)
    info = host(args.threads)
    names = ["engine", "Search-R1 loop"] + (["engine, stock F.linear", "Search-R1 loop, stock F.linear"]
                                            if args.stock else [])
    resumed = resumed_runs(args, info, names) if args.resume else None  # checked before any work is done
    done = 0
    model, tok = load_random_policy(args.model, args.seed) if args.random_weights else load_policy(args.model)
    info["weights"] = "random (seeded), replayed tokens" if args.random_weights else str(args.model)
    retriever = load_bm25(args.data)
    protocol = ProtocolConfig(assistant_prefix="<search>", few_shot_question=DEMO_QUESTION,
                              few_shot_response=DEMO_RESPONSE)
    sizes = [int(x) for x in args.sizes.split(",") if x]
    questions = load_questions(args.data, max(args.questions, max(sizes, default=1)))
    qs = questions[: args.questions]
    cfg = RolloutConfig(max_turns=args.max_turns, max_turn_tokens=args.turn_tokens, max_obs_tokens=args.max_obs,
                        topk=args.topk, temperature=1.0, seed=args.seed)

    settings = {k: getattr(args, k) for k in WORKLOAD_SETTINGS}
    settings["data"] = str(args.data.resolve().relative_to(REPO)) if args.data.resolve().is_relative_to(REPO) \
        else str(args.data)
    if args.workload is not None:
        workload, meta = load_workload(args.workload)
        differ = {k: (meta["settings"].get(k), v) for k, v in settings.items() if meta["settings"].get(k) != v}
        if differ:
            console.print(f"[red]{args.workload} was recorded with other settings (saved, given): {differ}; pass "
                          "the same options")
            return 2
        shape = meta["shape"]
        console.print(f"replaying the workload in {args.workload}: {shape}")
    else:
        console.print(f"recording the workload: the engine samples {len(qs)} x {args.group} trajectories ...")
        trajectories = RolloutEngine(HFBackend(model, tok), tok, retriever, protocol, cfg).run(qs, args.group)
        workload = record(trajectories)
        shape = describe(workload, trajectories)
        console.print(f"  {shape}")
        if args.save_workload is not None:
            save_workload(args.save_workload, workload, {"settings": settings, "shape": shape,
                                                         "model": str(args.model)})

    variants = [("engine", engine_replay, True), ("Search-R1 loop", loop_replay, True)]
    if args.stock:
        variants += [("engine, stock F.linear", engine_replay, False),
                     ("Search-R1 loop, stock F.linear", loop_replay, False)]
    assert [name for name, _, _ in variants] == names  # the names a resume was checked against
    order_rng = random.Random(args.seed)
    runs: dict[str, list[dict]] = {name: [] for name, _, _ in variants}
    if resumed is not None:
        runs, done = resumed
        console.print(f"resuming {args.json}: {done} of {args.rounds} rounds done")
    for round_index in range(args.rounds):
        order = list(variants)
        order_rng.shuffle(order)  # drawn for finished rounds too, so a resumed run keeps the same orders
        if round_index < done:
            continue
        for name, fn, packed in order:
            before = load()
            start, cpu_start = time.perf_counter(), time.process_time()
            result = fn(model, tok, retriever, protocol, cfg, qs, args.group, workload, pack_weights=packed)
            result.update(wall_s=time.perf_counter() - start, cpu_s=time.process_time() - cpu_start,
                          load_before=before, load_after=load(), round=round_index, machine=platform.node())
            if result["useful"] != shape["sampled_tokens"]:
                raise SystemExit(f"{name} emitted {result['useful']} tokens; the workload has "
                                 f"{shape['sampled_tokens']}: not the same work")
            runs[name].append(result)
            console.print(f"round {round_index + 1}/{args.rounds} {name}: {result['wall_s']:.1f} s "
                          f"(load {before:.2f} -> {result['load_after']:.2f})")
        write_json(args.json, {"host": info, "args": {k: str(v) for k, v in vars(args).items()}, "workload": shape,
                               "runs": runs, "rounds_done": round_index + 1})

    tokens = shape["sampled_tokens"]
    table = Table(title=f"same work: {shape['trajectories']} trajectories, {shape['turns']} turns, {tokens} tokens, "
                        f"{shape['searches']} searches; {args.rounds} rounds, median [min, max]")
    for col in ("variant", "wall s", "useful tok/s", "CPU s", "tokens through the model", "forward passes",
                "engine speed-up (per round)"):
        table.add_column(col)
    ratios: dict[str, list[float]] = {}
    for name, _, packed in variants:
        rs = runs[name]
        twin = "engine" if packed else "engine, stock F.linear"
        if name != twin:  # the engine over this variant in each round, on the same kernels
            ratios[name] = [b["wall_s"] / a["wall_s"] for a, b in zip(runs[twin], rs)]
        table.add_row(name, fmt([r["wall_s"] for r in rs], ".1f"), fmt([tokens / r["wall_s"] for r in rs], ".1f"),
                      fmt([r["cpu_s"] for r in rs], ".1f"), str(rs[0]["encoded"]), str(rs[0]["forward_calls"]),
                      fmt(ratios[name], ".2f", "x") if name in ratios else "")
    console.print(host_line(info) + (f"; weights: {info['weights']}" if args.random_weights else ""))
    console.print(table)

    sweep = []
    for size in sizes:
        group = 1 if size == 1 else 2
        sq = questions[: max(1, size // group)]
        sweep_cfg = RolloutConfig(max_turns=args.max_turns, max_turn_tokens=args.sweep_turn_tokens,
                                  max_obs_tokens=args.max_obs, topk=args.topk, temperature=1.0, seed=100 + size)
        start = time.perf_counter()
        trajs = RolloutEngine(HFBackend(model, tok), tok, retriever, protocol, sweep_cfg).run(sq, group)
        seconds = time.perf_counter() - start
        n = sum(sum(t.response_mask) for t in trajs)
        sweep.append({"batch": len(sq) * group, "tokens": n, "seconds": seconds, "tok_s": n / seconds})
        console.print(f"  engine, batch {len(sq) * group}: {n} tokens in {seconds:.1f} s = {n / seconds:.1f} tok/s")

    out = {"host": info, "load_at_end": load(), "args": {k: str(v) for k, v in vars(args).items()},
           "workload": shape, "runs": runs, "rounds_done": args.rounds, "engine_speedup_by_round": ratios,
           "sweep": sweep}
    write_json(args.json, out)
    return 0


# What a resumed run must share with the runs it continues.
RESUME_SETTINGS = (*WORKLOAD_SETTINGS, "threads", "stock", "workload", "model", "random_weights", "rounds")


def resumed_runs(args: argparse.Namespace, info: dict, names: list[str]) -> tuple[dict[str, list[dict]], int]:
    """The runs and the number of finished rounds in `args.json`, after checking that they were measured with the
    same options on the same CPU kind (model and kernel flags)."""
    if args.json is None or not args.json.is_file():
        raise SystemExit("--resume needs the partial --json FILE of an earlier run")
    try:
        saved = json.loads(args.json.read_text())
        saved["args"], saved["host"], saved["runs"], saved["rounds_done"]  # noqa: B018 - the keys a resume reads
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"--resume: {args.json} is not a bench_rollout JSON ({type(exc).__name__}: {exc})") from None
    differ = {k: (saved["args"].get(k), str(getattr(args, k))) for k in RESUME_SETTINGS
              if saved["args"].get(k) != str(getattr(args, k))}
    if differ:
        raise SystemExit(f"--resume: {args.json} was measured with other options (saved, given): {differ}")
    kind = lambda h: (h["cpu"], list(h["flags"]))  # noqa: E731
    if kind(saved["host"]) != kind(info):
        raise SystemExit(f"--resume: {args.json} was measured on {kind(saved['host'])}, this CPU is {kind(info)}")
    runs = {name: list(saved["runs"].get(name, [])) for name in names}
    return runs, int(saved["rounds_done"])


def write_json(path: Path | None, out: dict) -> None:
    if path is not None:
        atomic_write_text(path, json.dumps(out, indent=1))


if __name__ == "__main__":
    sys.exit(main())
