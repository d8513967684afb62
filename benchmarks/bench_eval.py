"""Throughput of `searchrl eval` with the embedded SmolLM2-135M on this CPU, and where the time goes.

Runs the `searchrl eval` command in-process on a seeded, stratified sample of a QA set (default: 100 questions
of the NQ sample in tests/fixtures/qa/nq_oracle, searched with the BM25 index over its own corpus), then reads the
report's timing: the harness wraps the generation backend and the retriever with timers, so the wall time
of the evaluation loop splits into generation (model forwards inside the backend), retrieval (inside the
retriever) and bookkeeping (everything else: tokenisation, the engine's loop, scoring, bootstrap CIs).
Model loading and the one-off BM25 index build are set-up, reported separately, not in the throughput.

    .venv/bin/python benchmarks/bench_eval.py                      # 100 questions of nq_oracle
    .venv/bin/python benchmarks/bench_eval.py --questions 20 --data world

Target (issue #5): bookkeeping + retrieval under 10% of the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "fixtures" / "qa" / "nq_oracle"  # the NQ sample ships with the repository


ONE_SHOT_QUESTION = "who wrote the novel pride and prejudice"
ONE_SHOT_RESPONSE = (
    "<search>pride and prejudice author</search>\n\n<information>Doc 1(Title: \"Pride and Prejudice\") Pride and "
    "Prejudice is an 1813 novel of manners by Jane Austen.</information>\n\n<answer>Jane Austen</answer>"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA), help="data spec (default: the NQ sample in tests/fixtures/qa)")
    parser.add_argument("--model", default="default", help="model folder (default: the embedded SmolLM2-135M)")
    parser.add_argument("--json", default=None, help="also write the figures here")
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-turns", type=int, default=2)
    parser.add_argument("--max-turn-tokens", type=int, default=32)
    parser.add_argument("--max-obs-tokens", type=int, default=192)
    parser.add_argument("--topk", type=int, default=2)
    parser.add_argument("--prefix", default="<search>")
    parser.add_argument("--zero-shot", action="store_true", help="no one-shot example in the prompt")
    parser.add_argument("--threads", type=int, default=2,
                        help="torch threads (default 2; on a shared machine 1 avoids OpenMP oversubscription)")
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    from searchrl.cli import main as searchrl_main

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        argv = ["eval", "--model", args.model, "--data", args.data, "--limit", str(args.questions),
                "--batch-size", str(args.batch_size), "--max-turns", str(args.max_turns),
                "--max-turn-tokens", str(args.max_turn_tokens), "--max-obs-tokens", str(args.max_obs_tokens),
                "--topk", str(args.topk), "--prefix", args.prefix, "--out", str(out),
                "--samples", str(Path(tmp) / "samples.jsonl")]
        if not args.zero_shot:
            # One worked exchange: with it and the <search> prefix the 135M model closes its search tags
            # (cpu-feasibility.md §1), so the benchmark exercises retrieval as a trained agent would.
            template = Path(tmp) / "one_shot.yaml"
            template.write_text(json.dumps({"few_shot_question": ONE_SHOT_QUESTION,
                                            "few_shot_response": ONE_SHOT_RESPONSE}))
            argv += ["--template", str(template)]
        print("searchrl " + " ".join(argv), file=sys.stderr)
        start = time.perf_counter()
        code = searchrl_main(argv)
        total = time.perf_counter() - start
        if code != 0:
            return code
        report = json.loads(out.read_text())
        records = [json.loads(line) for line in (Path(tmp) / "samples.jsonl").read_text().splitlines()]

    t = report["timing"]
    wall = t["wall_s"]
    sampled = sum(r["sampled_tokens"] for r in records)
    rows = [
        ("questions", f"{t['questions']}"),
        ("evaluation wall time (s)", f"{wall:.1f}"),
        ("questions / minute", f"{t['questions_per_min']:.1f}"),
        ("generated tokens (total, per question)", f"{sampled}, {sampled / max(1, t['questions']):.1f}"),
        ("generated tokens / s (wall)", f"{sampled / wall:.1f}"),
        ("generation share", f"{100 * t['generation_s'] / wall:.1f}% ({t['generation_s']:.1f} s)"),
        ("retrieval share", f"{100 * t['retrieval_s'] / wall:.2f}% ({t['retrieval_s']:.2f} s)"),
        ("bookkeeping share", f"{100 * t['bookkeeping_s'] / wall:.2f}% ({t['bookkeeping_s']:.2f} s)"),
        ("retrieval + bookkeeping (target < 10%)", f"{100 * (t['retrieval_s'] + t['bookkeeping_s']) / wall:.2f}%"),
        ("set-up, not in the throughput (s)", f"index and sources {t['setup_s']:.1f}, "
                                              f"model load and the rest {total - wall - t['setup_s']:.1f}"),
    ]
    name = next(iter(report["datasets"]))
    d = report["datasets"][name]
    rows += [
        ("EM [95% CI]", f"{d['em']:.3f} [{d['em_ci_low']:.3f}, {d['em_ci_high']:.3f}]"),
        ("searches / question", f"{d['searches']:.2f}"),
        ("finish reasons", ", ".join(f"{k} {v}" for k, v in d["finish_reasons"].items())),
    ]
    width = max(len(k) for k, _ in rows)
    print(f"\nbench_eval: SmolLM2-135M-Instruct, {name}, torch threads {torch.get_num_threads()}, "
          f"batch {args.batch_size}, max_turns {args.max_turns}, {args.max_turn_tokens} tokens/turn, "
          f"obs ≤ {args.max_obs_tokens} tokens, top-{args.topk}, prefix {args.prefix!r}, "
          f"{'zero-shot' if args.zero_shot else 'one-shot'}")
    for key, value in rows:
        print(f"  {key:<{width}}  {value}")
    if args.json:
        figures = {"questions": t["questions"], "wall_s": wall, "questions_per_min": t["questions_per_min"],
                   "sampled_tokens": sampled, "tokens_per_s": sampled / wall,
                   "retrieval_and_bookkeeping_share": (t["retrieval_s"] + t["bookkeeping_s"]) / wall,
                   "em": d["em"], "finish_reasons": d["finish_reasons"], "threads": torch.get_num_threads(),
                   "load_at_end": os.getloadavg()[0], "args": vars(args)}
        path = Path(args.json)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(figures, indent=1))
        os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
