"""`searchrl sft`: supervised warm start on oracle or collected trajectories (loss on model tokens only).

    searchrl sft --out runs/sft                              # the demo config's model on the world's oracle
    searchrl sft --data runs/x/samples/step_0040.jsonl --min-reward 1 --out runs/rft   # rejection sampling FT
    searchrl sft --config my.yaml sft.epochs=3 sft.lr=2e-5 --out runs/sft --eval
    searchrl sft --device cuda --out runs/sft                # on a GPU (default: the config's train.device)
    searchrl train train.warm_start=runs/sft                 # then RL from it

The model, prompt template, rollout budgets and retriever come from the config (as in `searchrl train`), so
oracle trajectories are laid out token for token as this config's rollouts would be.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from searchrl.data import load_source
from searchrl.cli import add_device_argument
from searchrl.errors import SearchRLError
from searchrl.data.loaders import spec_path
from searchrl.fileio import atomic_write_json, check_output_path
from searchrl.models import load_policy, resolve_device

if TYPE_CHECKING:
    import torch

    from searchrl.training.config import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = __doc__.split("\n", 2)[2]
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="dotted config overrides (e.g. sft.lr=2e-5)")
    parser.add_argument("-c", "--config", default=None, metavar="FILE", help="YAML config or packaged name (default: demo)")
    parser.add_argument("--data", default=None, help="'oracle' (default: sft.data) or a samples.jsonl of trajectories")
    parser.add_argument("--min-reward", type=float, default=None, help="keep trajectories with reward >= this (RFT)")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for the fine-tuned model (HF format)")
    parser.add_argument("--eval", action="store_true", help="evaluate greedily on the validation split before and after")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an --out folder an earlier `searchrl sft` wrote (never any other folder)")
    add_device_argument(parser)


def main(args: argparse.Namespace) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from searchrl.training.config import load_config  # local: ~0.17 s to import; `searchrl sft --help` must not pay it

    overrides = list(args.overrides)
    if args.data is not None:
        overrides.append(f"sft.data={args.data}")
    if args.min_reward is not None:
        overrides.append(f"sft.min_reward={args.min_reward}")
    cfg = load_config(args.config, overrides)
    # Before anything loads: a missing GPU is reported at once.
    device = resolve_device(args.device, key="--device") if args.device else resolve_device(cfg.train.device)
    out = Path(args.out).expanduser()
    data_path = spec_path(cfg.data.train)
    check_output_path(  # before the model loads and trains, not after
        out, "--out", inputs=[cfg.model.name, data_path, None if cfg.sft.data == "oracle" else cfg.sft.data,
                              cfg.retrieval.index],
        overwrite=args.overwrite, ours="sft_summary.json", kind="searchrl sft model folder", folder=True,
    )
    summary = run_sft_command(cfg, out, evaluate_too=args.eval, device=device)
    print(json.dumps(summary, indent=2, default=float))
    return 0


def run_sft_command(cfg: Config, out: Path, *, evaluate_too: bool = False, device: torch.device | None = None) -> dict:
    """Fine-tune the config's model with its `sft:` section on `device` (default: the config's train.device) and
    save it to `out` (HF folder + sft_summary.json)."""
    # local: torch (~2.2 s) and, through training.trainer, transformers (~1.1 s more) and searchrl.evaluation;
    # `searchrl sft --help` must not pay them
    import torch

    from searchrl.evaluation.harness import evaluate
    from searchrl.training.policy import export_policy, prepare_for_training
    from searchrl.training.sft import examples_needed, oracle_trajectories, read_trajectories, run_sft
    from searchrl.training.state import build_retriever, validation_sources

    console = Console(stderr=True)
    source = load_source(cfg.data.train, split=cfg.data.train_split)
    device = resolve_device(cfg.train.device) if device is None else device
    dtype = getattr(torch, cfg.model.dtype)
    model, tokenizer = load_policy(cfg.model.name, dtype=dtype)
    model = prepare_for_training(model, lora=cfg.model.lora, gradient_checkpointing=cfg.model.gradient_checkpointing,
                                 seed=cfg.seed, train_layers=cfg.sft.train_layers,
                                 key="sft.train_layers", dtype=dtype, device=device)
    retriever = build_retriever(cfg, source)
    dropped: dict = {}
    if cfg.sft.data == "oracle":
        oracle = oracle_trajectories(source, tokenizer, retriever, cfg.protocol, cfg.rollout, limit=examples_needed(cfg.sft),
                                     think=cfg.sft.oracle_think)
        data, dropped = oracle.trajectories, oracle.dropped
    else:
        data = read_trajectories(Path(cfg.sft.data))
    console.print(f"SFT on {len(data)} trajectories from {cfg.sft.data} (dropped: {dropped or 'none'})")

    def evaluate_now(label: str) -> dict:
        report = evaluate(model, tokenizer, validation_sources(cfg),
                          limit=cfg.val.max_questions, protocol_cfg=cfg.protocol, rollout_cfg=cfg.rollout,
                          batch_size=cfg.val.batch_size, seed=cfg.val.sample_seed, progress=True)
        model.train()
        for name, entry in report.datasets.items():
            console.print(f"{label}: {name} EM {entry['em']:.3f} [{entry['em_ci_low']:.3f}, {entry['em_ci_high']:.3f}], "
                          f"format valid {entry['format_valid']:.3f} ({cfg.data.val_split} split)")
        keys = ("em", "em_ci_low", "em_ci_high", "f1", "format_valid", "n")
        return {n: {k: e[k] for k in keys} | {"split": cfg.data.val_split} for n, e in report.datasets.items()}

    summary: dict = {"data": cfg.sft.data, "dropped": dropped}
    if evaluate_too:
        summary["eval_before"] = evaluate_now("before SFT")
    out.parent.mkdir(parents=True, exist_ok=True)
    metrics_tmp = out.parent / f".{out.name}.sft_metrics.jsonl"  # export_policy replaces `out` as a whole
    metrics_tmp.unlink(missing_ok=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("ETA"), TimeRemainingColumn(), console=console) as bar:
        task = bar.add_task("SFT", total=None)

        def on_update(i: int, n: int, loss: float) -> None:
            bar.update(task, completed=i, total=n, description=f"SFT loss {loss:.3f}")

        result = run_sft(model, data, cfg.sft, pad_id=int(tokenizer.pad_token_id), seed=cfg.seed, bf16=cfg.train.bf16,
                         chunk_size=cfg.train.logprob_chunk_size, max_grad_norm=cfg.train.max_grad_norm,
                         on_update=on_update, metrics_path=metrics_tmp)
    summary["sft"] = result.to_dict()
    if evaluate_too:
        summary["eval_after"] = evaluate_now("after SFT")
    export_policy(model, tokenizer, out)
    os.replace(metrics_tmp, out / "sft_metrics.jsonl")
    atomic_write_json(out / "sft_summary.json", json.loads(json.dumps(summary, default=float)))
    console.print(f"Saved the fine-tuned model to {out}; RL from it: searchrl train train.warm_start={out}")
    return summary
