"""The warm-start criterion, measured: the smallest number of oracle trajectories (1, 2, 4, 8, ...) after whose SFT
the greedy agent's format validity on the dev split reaches 0.95 (the world's, or a real dataset's with
`--config nq_cpu`, whose oracle is the retrieval oracle). With `--search-again` (configs/world_multihop.yaml), also:
sampled at the rollout temperature, G = 8 per question, at least one of the G samples searches a second time for
at least half of the dev split's bridge questions (`--bridge 24` of them, `--threshold`): the protocol includes searching
again, so that RL can find out when it pays; the greedy agent need not do it (and its bridge EM is reported).

    python examples/warm_start_criterion.py                 # the demo config; stops at the first N that passes
    python examples/warm_start_criterion.py --all 1,2,4,8,16 seed=1
    python examples/warm_start_criterion.py --config nq_cpu data.train=tests/fixtures/qa/nq_oracle   # real data

The warm start teaches the protocol (tags, one search, an answer), not the answers: its size is fixed by this
criterion before any RL result is looked at, never by EM. Each N starts from the untrained model; SFT uses the
config's `sft:` section on the first N training-split oracle trajectories (plus `sft.holdout` held out for the
loss), then the agent is evaluated greedily on the dev split. One JSON line per N.
"""

from __future__ import annotations

import argparse
import json
import os
import time

THRESHOLD = 0.95
SEARCH_AGAIN_GROUPS = 1 / 2  # --search-again: the share of dev bridge questions with a sampled second search (--threshold)


def search_again_share(model, tokenizer, retriever, cfg, questions: int) -> dict:
    """Sampled at the rollout temperature, G = 8 per dev bridge question: the share of questions where some sample
    searches a second time, and the share of samples that do."""
    from searchrl.data import load_source
    from searchrl.rollout import RolloutEngine
    from searchrl.rollout.hf import HFBackend

    bridge = [q for q in load_source(cfg.data.train, split=cfg.data.val_split).questions
              if q.metadata.get("type") == "bridge"][:questions]
    engine = RolloutEngine(HFBackend(model, tokenizer, max_batch_size=8 * len(bridge)), tokenizer, retriever,
                           cfg.protocol, cfg.rollout)
    trajectories = engine.run(bridge, 8, seed=cfg.seed)
    again = [t.num_searches >= 2 for t in trajectories]
    groups = [any(again[i : i + 8]) for i in range(0, len(again), 8)]
    return {"bridge_questions": len(bridge), "search_again_groups": round(sum(groups) / len(groups), 3),
            "search_again_samples": round(sum(again) / len(again), 3)}


def measure(n: int, overrides: list[str], config: str = "demo", search_again: int = 0) -> dict:
    from searchrl.data import load_source
    from searchrl.evaluation.harness import evaluate
    from searchrl.models import load_policy
    from searchrl.training.config import load_config
    from searchrl.training.policy import prepare_for_training
    from searchrl.training.sft import examples_needed, oracle_trajectories, run_sft
    from searchrl.training.state import build_retriever, validation_sources

    cfg = load_config(config, [*overrides, f"sft.max_examples={n}", "sft.holdout=16"])
    began = time.perf_counter()
    source = load_source(cfg.data.train, split=cfg.data.train_split)
    model, tokenizer = load_policy(cfg.model.name)
    model = prepare_for_training(model, lora=cfg.model.lora, gradient_checkpointing=cfg.model.gradient_checkpointing,
                                 seed=cfg.seed, train_layers=cfg.sft.train_layers, key="sft.train_layers")
    retriever = build_retriever(cfg, source)
    data = oracle_trajectories(source, tokenizer, retriever, cfg.protocol, cfg.rollout, limit=examples_needed(cfg.sft),
                               think=cfg.sft.oracle_think).trajectories
    result = run_sft(model, data, cfg.sft, pad_id=int(tokenizer.pad_token_id), seed=cfg.seed, bf16=cfg.train.bf16,
                     chunk_size=cfg.train.logprob_chunk_size, max_grad_norm=cfg.train.max_grad_norm)
    report = evaluate(model, tokenizer, validation_sources(cfg), limit=cfg.val.max_questions,
                      protocol_cfg=cfg.protocol, rollout_cfg=cfg.rollout, batch_size=cfg.val.batch_size,
                      seed=cfg.val.sample_seed, progress=False)
    (name, entry), = report.datasets.items()
    by_type: dict[str, list[float]] = {}
    for record in report.records:
        by_type.setdefault(record.get("type") or "all", []).append(record["em"])
    again = search_again_share(model, tokenizer, retriever, cfg, search_again) if search_again else {}
    return {"n": n, "sft_updates": result.updates, "split": cfg.data.val_split, "dataset": name, **again,
            "format_valid": entry["format_valid"], "em": entry["em"], "searches": entry["searches"],
            "em_by_type": {k: round(sum(v) / len(v), 3) for k, v in sorted(by_type.items())},
            "seconds": round(time.perf_counter() - began, 1), "config": config, "overrides": overrides}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("overrides", nargs="*", help="dotted config overrides (e.g. seed=1)")
    parser.add_argument("--config", default="demo", help="a packaged config name or a YAML file (default demo)")
    parser.add_argument("--all", default=None, metavar="N,N,...", help="measure these sizes, not stopping early")
    parser.add_argument("--search-again", action="store_true",
                        help=f"also require a sampled second search on >= --threshold of dev bridge questions")
    parser.add_argument("--bridge", type=int, default=24, help="dev bridge questions sampled for --search-again")
    parser.add_argument("--threshold", type=float, default=SEARCH_AGAIN_GROUPS,
                        help="--search-again: the share of dev bridge questions with a sampled second search")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sizes = [int(x) for x in args.all.split(",")] if args.all else [2 ** k for k in range(10)]
    for n in sizes:
        row = measure(n, args.overrides, args.config, args.bridge if args.search_again else 0)
        print(json.dumps(row), flush=True)
        met = row["format_valid"] >= THRESHOLD and (not args.search_again
                                                      or row["search_again_groups"] >= args.threshold)
        if not args.all and met:
            print(f"criterion met at N={n}: dev format validity {row['format_valid']:.3f} >= {THRESHOLD}"
                  + (f", a sampled second search on {row['search_again_groups']:.2f} of dev bridge questions"
                     if args.search_again else ""))
            break


if __name__ == "__main__":
    main()
