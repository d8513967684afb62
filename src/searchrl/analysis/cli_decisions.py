"""`searchrl decisions`: does a model know *when* to search again? Compare models on the same decisions.

    searchrl decisions --model runs/sft --model runs/demo-sapo-seed0/final_model --out runs/decisions
    searchrl decisions --model runs/x/checkpoints/step_000000 --model runs/x/checkpoints/step_000020
    searchrl decisions --config my.yaml --model ./ckpt --limit 100

The first model's greedy trajectories on the validation split give the decision points (after each observation:
search again, or answer); every model is scored on those same contexts by teacher forcing. The prompt, budgets
and data come from the config (default: the demo's), as in `searchrl train`. For each model it prints the mean
log-odds of searching again per question type, how many decisions are right, the AUC between points that need
another search and points that do not, and the best that one shared shift of the log-odds could do; for each
later model, the change against the first. See `searchrl.analysis.decisions` for the definitions.
"""
# This command lives in training/ because it reads a training config (load_config, validation_sources); the
# analysis itself is searchrl.analysis.decisions, which imports nothing from training.

from __future__ import annotations

import argparse
import io
import json
import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from searchrl.cli import add_device_argument
from searchrl.errors import SearchRLError
from searchrl.fileio import atomic_write_bytes, atomic_write_text, check_output_path, read_small_json
from searchrl.models import load_policy, resolve_device
from searchrl.protocol import prompt_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = __doc__.split("\n", 2)[2]
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="dotted config overrides")
    parser.add_argument("-c", "--config", default=None, metavar="FILE", help="YAML config or packaged name (default: demo)")
    parser.add_argument("--model", action="append", required=True, metavar="PATH",
                        help="a model folder, a run's checkpoint folder (checkpoints/step_N, checkpoints/best) or 'default'; repeat "
                             "to compare (the first one's trajectories give the contexts)")
    parser.add_argument("--limit", type=int, default=None, help="questions (default: the config's val.max_questions)")
    parser.add_argument("--batch-size", type=int, default=16, help="sequences per scoring forward (default %(default)s)")
    parser.add_argument("--out", default=None, metavar="DIR", help="write decisions.json and decisions.png here")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace decisions.json and decisions.png that an earlier `searchrl decisions` wrote")
    add_device_argument(parser)


def main(args: argparse.Namespace) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # local: evaluation.decisions and training.trainer import torch (~2.2 s), evaluation.harness numpy (~0.2 s),
    # training.config ~0.17 s; `searchrl decisions --help` must not pay them
    from searchrl.analysis.decisions import (
        compare_summaries,
        decision_log_odds,
        decision_points,
        points_as_rows,
        summarise_decisions,
    )
    from searchrl.evaluation.harness import evaluate
    from searchrl.training.config import load_config
    from searchrl.training.state import validation_sources

    console = Console(stderr=True)
    cfg = load_config(args.config, list(args.overrides))
    if args.out:  # before the scoring work, not after it
        out = Path(args.out).expanduser()
        ours = lambda p: isinstance(m := read_small_json(p), dict) and {"contexts_from", "results"} <= set(m)  # noqa: E731
        check_output_path(out / "decisions.json", "--out", inputs=args.model, overwrite=args.overwrite, ours=ours,
                          kind="searchrl decisions result")
        check_output_path(out / "decisions.png", "--out", overwrite=args.overwrite, kind="searchrl decisions figure",
                          ours=lambda p: ours(out / "decisions.json"))
    if args.limit is not None and args.limit < 1:
        raise SearchRLError(f"--limit must be >= 1, got {args.limit}")
    device = resolve_device(args.device, key="--device") if args.device else resolve_device(cfg.train.device)
    sources = validation_sources(cfg)
    model, tokenizer = load_policy(args.model[0], device=device)
    report = evaluate(model, tokenizer, sources, limit=args.limit or cfg.val.max_questions, protocol_cfg=cfg.protocol,
                      rollout_cfg=cfg.rollout, batch_size=cfg.val.batch_size, seed=cfg.val.sample_seed, progress=True)
    prefix = cfg.protocol.assistant_prefix
    prompts = {}
    for r in report.records:
        text = prompt_text(r["question"], cfg.protocol, tokenizer)
        prompts[r["uid"]] = text[: len(text) - len(prefix)] if prefix else text
    points = decision_points(report.records, prompts, cfg.rollout.max_turns)
    if not points:
        raise SearchRLError(f"--model {args.model[0]}: its greedy trajectories reached no decision point (no "
                            f"observation before the last of rollout.max_turns={cfg.rollout.max_turns} searches)")
    console.print(f"{len(points)} decision points from {len(report.records)} greedy trajectories of {args.model[0]}")

    results = []
    for i, spec in enumerate(args.model):
        if i:
            model, tokenizer = load_policy(spec, device=device)
        log_odds = decision_log_odds(model, tokenizer, [p.context for p in points], batch_size=args.batch_size)
        results.append({"model": spec, "summary": summarise_decisions(points, log_odds.tolist()),
                        "points": points_as_rows(points, log_odds.tolist())})
    for r in results[1:]:
        r["change"] = compare_summaries(results[0]["summary"], r["summary"])

    groups = sorted(results[0]["summary"]["groups"])
    table = Table(title="Search again or answer? Per type: mean log-odds of <search> over <answer> after an "
                        "observation (share that searches); right decisions, AUC, best with one shared shift δ")
    table.add_column("model", overflow="fold")
    for g in groups:
        table.add_column(g, overflow="fold")
    for col in ("right", "AUC", "best (δ)"):
        table.add_column(col, overflow="fold")
    for r in results:
        s = r["summary"]
        cells = [f"{s['groups'][g]['mean_log_odds']:+.2f} ({s['groups'][g]['search_share']:.0%})" for g in groups]
        a = s["all"]
        labelled = "labelled" in a
        cells += [f"{a['correct']}/{a['labelled']}" if labelled else "-",
                  f"{a['auc']:.3f}" if labelled and a.get("auc") is not None else "-",
                  f"{a['best_shift_correct']} (δ {a['best_shift']:+.2f})" if labelled else "-"]
        table.add_row(short_name(r["model"]), *cells)
    console.print(table)
    for r in results[1:]:
        c = r["change"]
        per = ", ".join(f"{g} {v:+.2f}" for g, v in sorted(c["group_shift"].items()))
        auc = "" if c["auc_change"] is None else f"; AUC {c['auc_change']:+.3f}"
        console.print(f"{short_name(r['model'])} against {short_name(results[0]['model'])}: shared shift "
                      f"{c['shared_shift']:+.2f} "
                      f"(per type: {per}){auc}")
    if args.out:
        out = Path(args.out).expanduser()
        atomic_write_text(out / "decisions.json", json.dumps({"contexts_from": args.model[0], "results": results},
                                                            indent=1))
        plot_decisions(results, out / "decisions.png")
        console.print(f"wrote {out / 'decisions.json'} and {out / 'decisions.png'}")
    return 0


def short_name(spec: str) -> str:
    """A model's label: its last two path parts (`run/final_model`, `checkpoints/step_000020`)."""
    parts = Path(spec).parts
    return "/".join(parts[-2:]) if len(parts) > 1 else spec


def plot_decisions(results: list[dict[str, Any]], path: Path) -> None:
    """One panel per model: the log-odds of each question type's decision points, split by whether they need a
    further search (filled) or not (outlined); the threshold 0 is where greedy decoding flips."""
    # local: matplotlib costs ~0.8 s to import; only --out draws
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.2 * len(results), 3.4), layout="constrained")
    axes = fig.subplots(1, len(results), squeeze=False, sharey=True)[0]
    groups = sorted({p["group"] for p in results[0]["points"]})
    for ax, r in zip(axes, results):
        for y, g in enumerate(groups):
            for need, style in ((True, {"color": "C0"}), (False, {"facecolors": "none", "edgecolors": "C3"}),
                                (None, {"color": "grey"})):
                xs = [p["log_odds"] for p in r["points"] if p["group"] == g and p["needs_search"] is need]
                if xs:
                    # A deterministic jitter keeps overlapping points visible.
                    ys = [y + 0.3 * ((k * 0.618) % 1 - 0.5) for k in range(len(xs))]
                    ax.scatter(xs, ys, s=10, linewidths=0.8, **style)
        ax.axvline(0.0, color="black", linewidth=0.8)
        ax.set_yticks(range(len(groups)), groups)
        ax.set_xlabel("log π(<search>) − log π(<answer>)")
        ax.set_title(short_name(r["model"]), fontsize=9)
    fig.suptitle("filled: the point needs another search; outlined: it does not; greedy decoding searches right of 0",
                 fontsize=8)
    buf = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buf)
    atomic_write_bytes(path, buf.getvalue())
