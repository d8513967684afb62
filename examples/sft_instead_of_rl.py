"""What RL adds: spend the demo's RL wall time on more supervised fine-tuning instead, and compare on test.

    python examples/sft_instead_of_rl.py --run runs/demo-sapo-seed0 [--epochs 1.5]

Starting from the untrained model, as the demo's warm start does, SFT runs over all of the world's training
oracle trajectories (the oracle's answers included: this is what RL does without) for `--epochs` passes; the
script prints the SFT wall time next to the run's RL wall time (the sum of its steps' `time/step_s`), then the
greedy EM of the SFT model on the run's test split and its paired difference with the run's model after RL on
the same questions. One JSON object; the run's config gives the model, prompt, budgets and splits.

For a comparison at equal wall time, choose `--epochs` so that `sft_seconds` (loading included) comes out at
`rl_seconds`: one epoch is ceil(984 / sft.batch_size) = 62 updates, and an update's seconds are the machine's
(on a 2-core Xeon with AMX at two threads, 56 updates took 557 s and 72 took 762 s, loading included: the demo's
592 s of RL bought 0.89 epochs).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, help="a finished demo run folder (config.yaml, evals.json)")
    parser.add_argument("--epochs", type=float, default=1.5, help="SFT passes over the oracle trajectories")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from searchrl.data import load_source
    from searchrl.evaluation.bootstrap import bootstrap_ci
    from searchrl.evaluation.harness import evaluate
    from searchrl.models import load_policy
    from searchrl.training.config import load_config
    from searchrl.training.policy import prepare_for_training
    from searchrl.training.sft import oracle_trajectories, run_sft
    from searchrl.training.state import build_retriever, test_sources

    run = Path(args.run)
    cfg = load_config(run / "config.yaml", ["sft.max_examples=null", "sft.holdout=16", f"sft.epochs={args.epochs}"])
    rl_seconds = sum(json.loads(line)["time/step_s"] for line in (run / "metrics.jsonl").open())
    began = time.perf_counter()
    source = load_source(cfg.data.train, split=cfg.data.train_split)
    model, tokenizer = load_policy(cfg.model.name)
    model = prepare_for_training(model, lora=cfg.model.lora, gradient_checkpointing=cfg.model.gradient_checkpointing,
                                 seed=cfg.seed, train_layers=cfg.sft.train_layers, key="sft.train_layers")
    retriever = build_retriever(cfg, source)
    data = oracle_trajectories(source, tokenizer, retriever, cfg.protocol, cfg.rollout, think=cfg.sft.oracle_think)
    result = run_sft(model, data.trajectories, cfg.sft, pad_id=int(tokenizer.pad_token_id), seed=cfg.seed,
                     bf16=cfg.train.bf16, chunk_size=cfg.train.logprob_chunk_size,
                     max_grad_norm=cfg.train.max_grad_norm)
    sft_seconds = time.perf_counter() - began
    report = evaluate(model, tokenizer, test_sources(cfg), limit=cfg.val.test_max_questions,
                      protocol_cfg=cfg.protocol, rollout_cfg=cfg.rollout, batch_size=cfg.val.batch_size,
                      seed=cfg.seed, progress=False)
    evals = json.loads((run / "evals.json").read_text())
    out = {"run": str(run), "sft_trajectories": len(data.trajectories) - cfg.sft.holdout, "epochs": args.epochs,
           "sft_updates": result.updates, "sft_seconds": round(sft_seconds, 1), "rl_seconds": round(rl_seconds, 1),
           "split": cfg.data.test_split, "datasets": {}}
    for name, entry in report.datasets.items():
        sft_em = {r["uid"]: float(r["em"]) for r in report.records if r["dataset"] == name}
        row = {"sft_em": entry["em"], "sft_em_ci": [entry["em_ci_low"], entry["em_ci_high"]], "n": entry["n"]}
        for key in ("start", "final"):
            other = evals.get(key, {}).get("per_question_em", {}).get(name, {})
            common = [u for u in sft_em if u in other]
            diffs = [sft_em[u] - other[u] for u in common]
            low, high = bootstrap_ci(diffs, n_resamples=2000, seed=cfg.seed)
            row[f"sft_minus_{key}"] = {"em": sum(diffs) / len(diffs), "ci": [low, high], "n": len(common)}
        by_type: dict[str, list[float]] = {}
        for r in report.records:
            by_type.setdefault(r.get("type") or "all", []).append(r["em"])
        row["em_by_type"] = {k: round(sum(v) / len(v), 3) for k, v in sorted(by_type.items())}
        out["datasets"][name] = row
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
