"""Prefill attention over grouped key/value heads read in place (`grouped_sdpa_attention`) against transformers'
SDPA path, which repeats them under a mask, on the demo's work.

SmolLM2-135M has 9 query heads on 3 key/value heads. transformers 5.x repeats the keys and values 3 times before
SDPA whenever a mask is given and the query has more than one token: every prefill chunk of the rollout and of the
greedy evaluation. The rollout backend attends with `searchrl.rollout.hf.grouped_sdpa_attention` instead, the same
kernel reading each key/value head for its group (docs/benchmarks.md, "Where a demo step's time goes").

One process builds the demo's trainer (`configs/demo.yaml`: its data, model and sizes) and its warm start (SFT on
2 oracle trajectories), then runs, per side and round, the greedy evaluation of the 200 dev questions and one
rollout batch (the demo's first: 8 questions x 8 samples, the same sampling seed), alternating which side goes
first by round. The "transformers" side leaves the model on transformers' own SDPA path (`hf._grouped_attention`
made a no-op). Both sides do the same work: the same weights, questions and seeds; the table checks that they
score the same on every question (per-question EM) and sample the same tokens.

Reported, with the CPU model, thread count and load: per side the evaluation's and the rollout's seconds, and the
seconds inside prefill forwards (median [min, max] over rounds); per round the grouped side's time over
transformers' (median [min, max]).

    .venv/bin/python benchmarks/bench_grouped_attention.py --rounds 3 --json results/benchmarks/epyc-avx512/grouped-attention.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostinfo import fmt, host, host_line  # noqa: E402

SIDES = ("transformers", "grouped")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--questions", type=int, default=200, help="dev questions evaluated per side and round")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    info = host(args.threads)
    from transformers import AttentionInterface

    from searchrl.rollout import hf
    from demo_trainer import demo_trainer
    from searchrl.training.state import step_seed, validate

    hf._register_grouped_sdpa()
    calls = {"grouped": 0}  # attention calls on the grouped path: the table shows which side ran it

    def counting(module, query, *a, **k):
        calls["grouped"] += query.shape[2] > 1 and getattr(module, "num_key_value_groups", 1) > 1
        return hf.grouped_sdpa_attention(module, query, *a, **k)

    AttentionInterface._global_mapping[hf.GROUPED_SDPA] = counting
    grouped_attention = hf._grouped_attention
    prefill = {"seconds": 0.0}
    inner = hf.HFSession._prefill_left_aligned

    def timed_prefill(self, *a, **k):
        start = time.perf_counter()
        try:
            return inner(self, *a, **k)
        finally:
            prefill["seconds"] += time.perf_counter() - start

    hf.HFSession._prefill_left_aligned = timed_prefill

    @contextmanager
    def side(name: str):
        hf._grouped_attention = grouped_attention if name == "grouped" else (lambda model: nullcontext())
        try:
            yield
        finally:
            hf._grouped_attention = grouped_attention

    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg, t = demo_trainer(tmp, [f"val.max_questions={args.questions}"])
        questions = t.sampler.batch(0)
        for r in range(args.rounds):
            for name in (SIDES if r % 2 == 0 else SIDES[::-1]):
                with side(name):
                    calls["grouped"] = 0
                    prefill["seconds"] = 0.0
                    start = time.perf_counter()
                    report = validate(t, "bench")
                    eval_s, eval_prefill = time.perf_counter() - start, prefill["seconds"]
                    prefill["seconds"] = 0.0
                    t.model.eval()
                    start = time.perf_counter()
                    trajectories = t.engine.run(questions, cfg.train.group_size,
                                                seed=step_seed(cfg.seed, 0, "rollout"))
                    rollout_s = time.perf_counter() - start
                rows.append({
                    "round": r, "side": name, "eval_s": eval_s, "eval_prefill_s": eval_prefill,
                    "rollout_s": rollout_s, "rollout_prefill_s": prefill["seconds"],
                    "grouped_calls": calls["grouped"],
                    "dev_em": report["datasets"]["world"]["em"],
                    "per_question_em": report["per_question_em"]["world"],
                    "response_ids": [list(tr.response_ids) for tr in trajectories],
                })
                print(f"round {r} {name:<12} eval {eval_s:6.1f} s (prefill {eval_prefill:5.1f})  rollout "
                      f"{rollout_s:5.1f} s (prefill {prefill['seconds']:4.1f})", file=sys.stderr, flush=True)

    by_side = {name: [row for row in rows if row["side"] == name] for name in SIDES}
    base = by_side["transformers"][0]
    same_answers = all(row["per_question_em"] == base["per_question_em"] for row in rows)
    differing = max(sum(a != b for a, b in zip(row["response_ids"], base["response_ids"])) for row in rows)
    tokens = sorted({sum(len(ids) for ids in row["response_ids"]) for row in rows})
    print(host_line(info))
    print(f"{args.questions} dev questions and one rollout batch of {len(base['response_ids'])} trajectories per side "
          f"and round, {args.rounds} rounds; seconds, median [min, max]")
    print(f"{'side':<13} {'evaluation':<24} {'its prefill':<24} {'rollout':<24} {'its prefill':<24}")
    for name in SIDES:
        cells = [fmt([row[key] for row in by_side[name]]) for key in
                 ("eval_s", "eval_prefill_s", "rollout_s", "rollout_prefill_s")]
        print(f"{name:<13} " + " ".join(f"{c:<24}" for c in cells))
    ratios = {}
    for key in ("eval_s", "eval_prefill_s", "rollout_s", "rollout_prefill_s"):
        ratios[key] = [g[key] / b[key] for g, b in zip(by_side["grouped"], by_side["transformers"])]
    print("grouped / transformers per round: " + ", ".join(f"{key[:-2]} {fmt(v)}x" for key, v in ratios.items()))
    print("attention calls on the grouped path per run: " + ", ".join(
        f"{name} {sorted({row['grouped_calls'] for row in by_side[name]})}" for name in SIDES))
    print(f"same per-question dev EM on both sides in every round: {same_answers} (dev EM "
          f"{sorted({row['dev_em'] for row in rows})}); rollout trajectories differing from the first run's: at most "
          f"{differing} of {len(base['response_ids'])}; response tokens {tokens}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        slim = [{k: v for k, v in row.items() if k not in ("per_question_em", "response_ids")} for row in rows]
        Path(args.json).write_text(json.dumps({
            "host": info, "config": "demo", "questions": args.questions, "rounds": slim, "ratios": ratios,
            "same_dev_answers": same_answers, "max_differing_trajectories": differing, "response_tokens": tokens,
        }, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
