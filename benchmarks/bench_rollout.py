"""Benchmark: rollout throughput of searchrl's engine vs a Search-R1-style loop, with SmolLM2-135M on this CPU.

Run: .venv/bin/python benchmarks/bench_rollout.py [--questions 8] [--group 2] [--turn-tokens 128] [--max-turns 2]
        [--sizes 1,8,32] [--sweep-turn-tokens 64] [--threads 1] [--repeats 1] [--no-full-budget]
        [--no-unpacked-engine] [--packed-loop] [--sweep-only] [--data DIR] [--json FILE]

What it measures (same model, prompts, retriever, sampling T=1.0, in one process):

- **engine**: `RolloutEngine` + `HFBackend` on questions × group trajectories (default 8 × 2 = 16), up to
  `max_turns` searches + a final turn (default 2 + 1 = 3 turns): generation stops at `</search>`/`</answer>`/EOS,
  the KV cache is kept across turns (only observation tokens are prefilled), sampled ids are kept as sampled.
- **Search-R1-style loop** (`search_r1/llm_agent/generation.py::run_llm_loop`, reimplemented faithfully on
  transformers): each turn re-encodes the whole rolling context (prompt + responses + observations) with
  `model.generate(max_new_tokens=turn budget)` and no stop strings (rows stop only at EOS), decodes with
  `skip_special_tokens=True`, cuts the text after the first `</search>` (else `</answer>`), re-tokenises it,
  appends the observation (token ids cut to `max_obs` tokens), and after the loop runs one more generation
  without search. Two variants: rows stop at EOS (as vLLM's do in Search-R1), and every row generates the full
  per-turn budget (`min_new_tokens`; what Search-R1 does with a base model that never writes EOS).
- **useful tokens/s** = tokens kept in the trajectories (engine: sampled tokens, `response_mask` = 1; loop: the
  re-tokenised, cut responses) / wall time of the whole rollout (prefill, decode, retrieval, bookkeeping).
- **engine, stock F.linear**: the engine with `HFBackend(pack_weights=False)`, i.e. torch's own `F.linear` (MKL),
  as the loop uses; the gap to "engine" is the packed oneDNN weights' share of the speed-up.
- **encoded tokens**: tokens pushed through the model (prefill + decode), to show the cache reuse.
- engine tokens/s for batches of `--sizes` trajectories (`--sweep-turn-tokens` per turn).

Target: engine useful tokens/s >= 2x the loop's. The prompt is Search-R1's with a one-shot demo and the
assistant prefix `<search>`, so the 135M model actually searches (cpu-feasibility.md §1). Data: the NQ sample in
../shared/data/nq_oracle (questions, and a BM25 index over its 989 passages).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SEARCHRL_SHARED_DATA", REPO.parent / "shared" / "data"))
console = Console(stderr=True)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from searchrl.data import Question  # noqa: E402
from searchrl.models import load_policy  # noqa: E402
from searchrl.protocol import (  # noqa: E402
    INVALID_ACTION_MESSAGE,
    ProtocolConfig,
    encode_prompt,
    parse_action,
    render_observation,
)
from searchrl.rollout import HFBackend, RolloutConfig, RolloutEngine  # noqa: E402
from searchrl.rollout.hf import _PackedLinears  # noqa: E402


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


def load_bm25(folder: Path):
    from searchrl.retrieval.index import load_retriever

    return load_retriever(folder / "corpus.jsonl", cache=False)


# ---------------------------------------------------------------------------- the Search-R1-style baseline


def search_r1_loop(model, tok, retriever, protocol: ProtocolConfig, questions: list[Question], group: int,
                   max_turns: int, turn_tokens: int, max_obs: int, topk: int, seed: int,
                   full_budget: bool = False, packed_weights: bool = False) -> dict:
    """Search-R1's `run_llm_loop` on transformers `generate`; returns token counts.

    Rows stop at EOS, as vLLM's do in Search-R1; `full_budget=True` makes every row generate the whole per-turn
    budget (`min_new_tokens`), as Search-R1 does with a base model that never writes EOS. `packed_weights=True`
    runs `model.generate` on the engine's oneDNN-packed linear weights (`searchrl.rollout.hf._PackedLinears`), to
    separate the kernel's share of the engine's speed-up from the loop's design."""
    torch.manual_seed(seed)
    prompts = [encode_prompt(q.question, protocol, tok) for q in questions for _ in range(group)]
    contexts = [list(p) for p in prompts]  # rolling state: re-encoded in full every turn
    first = [True] * len(prompts)
    active = [True] * len(prompts)
    useful = generated = encoded = n_searches = 0
    pad = tok.pad_token_id
    packer = _PackedLinears(model) if packed_weights else None  # packs once, reused by every turn

    def generate(rows: list[int]) -> list[str]:
        nonlocal generated, encoded
        width = max(len(contexts[r]) for r in rows)
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, width - len(contexts[r]):] = torch.tensor(contexts[r])
            mask[i, width - len(contexts[r]):] = 1
        encoded += int(mask.sum())
        with torch.inference_mode(), (packer.active() if packer is not None else nullcontext()):
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=turn_tokens, do_sample=True,
                                 temperature=1.0, top_p=1.0, top_k=0, pad_token_id=pad,
                                 eos_token_id=tok.eos_token_id, min_new_tokens=turn_tokens if full_budget else 0)
        new = out[:, width:]
        generated += int((new != pad).sum()) + int((new == tok.eos_token_id).any(dim=1).sum())
        encoded += new.shape[1] * len(rows)  # the batch steps until its longest row is done
        texts = tok.batch_decode(new, skip_special_tokens=True)
        # _postprocess_responses: cut after the first </search>, else after the first </answer>.
        return [t.split("</search>")[0] + "</search>" if "</search>" in t
                else t.split("</answer>")[0] + "</answer>" if "</answer>" in t else t for t in texts]

    for step in range(max_turns + 1):
        rows = [r for r in range(len(prompts)) if active[r]]
        if not rows:
            break
        final = step == max_turns
        texts = generate(rows)
        searches: list[tuple[int, str]] = []
        for r, text in zip(rows, texts):
            resp_ids = tok(text, add_special_tokens=False)["input_ids"]  # re-tokenised: what would be trained
            useful += len(resp_ids)
            contexts[r] += resp_ids
            action = parse_action((protocol.assistant_prefix if first[r] else "") + text)
            first[r] = False
            if action.kind == "answer" or final:
                active[r] = False
            elif action.kind == "search":
                searches.append((r, action.content))
            else:
                contexts[r] += tok(INVALID_ACTION_MESSAGE, add_special_tokens=False)["input_ids"]
        n_searches += len(searches)
        if searches:
            results = retriever.search([q for _, q in searches], topk=topk)
            for (r, _), hits in zip(searches, results):
                obs_ids = tok(render_observation(hits), add_special_tokens=False)["input_ids"][:max_obs]
                contexts[r] += obs_ids
    return {"useful": useful, "generated": generated, "encoded": encoded, "searches": n_searches}


# ---------------------------------------------------------------------------- the engine


def run_engine(model, tok, retriever, protocol, questions, group, max_turns, turn_tokens, max_obs, topk, seed,
               pack_weights: bool = True) -> dict:
    backend = HFBackend(model, tok, pack_weights=pack_weights)
    cfg = RolloutConfig(max_turns=max_turns, max_turn_tokens=turn_tokens, max_obs_tokens=max_obs, topk=topk,
                        temperature=1.0, seed=seed)
    trajs = RolloutEngine(backend, tok, retriever, protocol, cfg).run(questions, group)
    useful = sum(sum(t.response_mask) for t in trajs)
    return {
        "useful": useful,
        "generated": useful,
        "encoded": backend.stats["prefill_tokens"] + backend.stats["decode_tokens"],
        "searches": sum(t.num_searches for t in trajs),
        "forward_calls": backend.stats["forward_calls"],
        "finish": {r: sum(t.finish_reason == r for t in trajs) for r in ("answer", "max_turns", "length",
                                                                       "retrieval_error")},
    }


def timed(fn, *args) -> tuple[dict, float]:
    """Run fn(*args); return its result (with "cpu_s", the process CPU time it used) and its wall time."""
    start, cpu_start = time.perf_counter(), time.process_time()
    result = fn(*args)
    result["cpu_s"] = time.process_time() - cpu_start
    result["load_avg_1min_at_end"] = os.getloadavg()[0]  # the machine is shared: how busy it was
    return result, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--group", type=int, default=2)
    parser.add_argument("--turn-tokens", type=int, default=128)
    parser.add_argument("--max-turns", type=int, default=2)
    parser.add_argument("--max-obs", type=int, default=200)
    parser.add_argument("--topk", type=int, default=3)
    parser.add_argument("--sizes", default="1,8,32", help="engine batch sizes (trajectories) to time")
    parser.add_argument("--sweep-turn-tokens", type=int, default=64, help="tokens per turn in the batch sweep")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1 is faster on a busy CPU)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-full-budget", action="store_true", help="skip the full-budget loop variant")
    parser.add_argument("--no-unpacked-engine", action="store_true",
                        help="skip the engine variant on stock F.linear (pack_weights=False)")
    parser.add_argument("--sweep-only", action="store_true", help="only the engine batch sweep (--sizes)")
    parser.add_argument("--packed-loop", action="store_true",
                        help="also run the full-budget loop on the engine's packed linear weights")
    parser.add_argument("--data", type=Path, default=SHARED / "nq_oracle")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl").is_file():
        console.print(f"[red]no corpus.jsonl in {args.data}; pass --data FOLDER with questions.jsonl and corpus.jsonl")
        return 2
    torch.set_num_threads(args.threads)
    model, tok = load_policy("default")
    retriever = load_bm25(args.data)
    protocol = ProtocolConfig(assistant_prefix="<search>", few_shot_question=DEMO_QUESTION,
                              few_shot_response=DEMO_RESPONSE)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    questions = load_questions(args.data, max(args.questions, max(sizes, default=1)))
    common = (args.max_turns, args.turn_tokens, args.max_obs, args.topk)

    with torch.inference_mode():  # warm-up: first calls allocate and pick kernels
        model.generate(torch.tensor([tok.encode("warm up")]), max_new_tokens=4, do_sample=False)

    variants = [("engine", run_engine, {})]
    if not args.no_unpacked_engine:
        variants.append(("engine, stock F.linear", run_engine, {"pack_weights": False}))
    variants.append(("Search-R1 loop (EOS stops a row)", search_r1_loop, {}))
    if not args.no_full_budget:
        variants.append(("Search-R1 loop (full budget)", search_r1_loop, {"full_budget": True}))
    if args.packed_loop:
        variants.append(("Search-R1 loop (full budget, packed weights)", search_r1_loop,
                         {"full_budget": True, "packed_weights": True}))
    rows = []
    for repeat in range(0 if args.sweep_only else args.repeats):
        qs = questions[: args.questions]
        results = {}
        for name, fn, kwargs in variants:
            console.print(f"[bold]repeat {repeat + 1}/{args.repeats}[/]: {name} on {len(qs)}x{args.group}")
            result, seconds = timed(lambda: fn(model, tok, retriever, protocol, qs, args.group, *common, repeat,
                                               **kwargs))
            result["wall_s"] = seconds
            results[name] = result
            console.print(f"  {seconds:.1f} s, {result}")
        rows.append(results)

    table = Table(title=f"{args.questions}x{args.group} trajectories, <= {args.max_turns}+1 turns, "
                        f"{args.turn_tokens} tokens/turn, threads={args.threads}")
    for col in ("variant", "wall s", "CPU s", "useful tokens", "useful tok/s (wall)", "useful tok/CPU-s",
                "generated", "encoded", "searches", "engine ratio (wall / CPU)"):
        table.add_column(col)
    ratios: dict[str, list[list[float]]] = {}
    for results in rows:
        engine = results["engine"]
        for name, v in results.items():
            ratio = ""
            if name != "engine":
                wall = (engine["useful"] / engine["wall_s"]) / (v["useful"] / v["wall_s"])
                cpu = (engine["useful"] / engine["cpu_s"]) / (v["useful"] / v["cpu_s"])
                ratios.setdefault(name, []).append([wall, cpu])
                ratio = f"{wall:.2f} / {cpu:.2f}"
            table.add_row(name, f"{v['wall_s']:.1f}", f"{v['cpu_s']:.1f}", str(v["useful"]),
                          f"{v['useful'] / v['wall_s']:.1f}", f"{v['useful'] / v['cpu_s']:.1f}",
                          str(v["generated"]), str(v["encoded"]), str(v["searches"]), ratio)
    console.print(table)

    sweep = []
    for size in sizes:
        group = 1 if size == 1 else 2
        qs = questions[: max(1, size // group)]
        sweep_common = (args.max_turns, args.sweep_turn_tokens, args.max_obs, args.topk)
        result, seconds = timed(run_engine, model, tok, retriever, protocol, qs, group, *sweep_common, 100 + size)
        sweep.append({"batch": len(qs) * group, "seconds": seconds, "cpu_s": result["cpu_s"],
                      "tokens": result["useful"], "tok_s": result["useful"] / seconds,
                      "tok_cpu_s": result["useful"] / result["cpu_s"], "encoded": result["encoded"],
                      "finish": result["finish"]})
        console.print(f"  batch {len(qs) * group}: {result['useful']} tokens in {seconds:.1f} s "
                      f"({result['cpu_s']:.1f} CPU s) = {result['useful'] / seconds:.1f} tok/s, "
                      f"{result['useful'] / result['cpu_s']:.1f} tok/CPU-s ({result['finish']})")

    out = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared)",
           "threads": args.threads, "load_avg_at_end": os.getloadavg(),
           "args": {k: str(v) for k, v in vars(args).items()}, "comparison": rows,
           "ratios_wall_cpu": ratios, "sweep": sweep, "python": sys.version.split()[0],
           "torch": torch.__version__}
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
