"""`searchrl train`: train a search agent with RL. With no arguments it runs the embedded demo.

    searchrl train                                        # configs/demo.yaml: SmolLM2-135M, the world, BM25, SAPO
    searchrl train --config sapo_qwen3b_lora_1gpu         # one GPU (train.device: cuda); README.md "One GPU"
    searchrl train --config my.yaml algorithm.name=grpo seed=1 run.dir=runs/grpo-1 train.lr=2e-6
    searchrl train --resume runs/grpo-1                   # continue exactly where a run stopped
    searchrl train --show-config                          # every key, its type, default and help
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from searchrl.errors import SearchRLError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = __doc__.split("\n", 2)[2]
    parser.add_argument(
        "overrides", nargs="*", metavar="KEY=VALUE",
        help="dotted config overrides, values parsed as YAML (e.g. train.lr=1e-6 rollout.topk=3 data.val=[world])",
    )
    parser.add_argument(
        "-c", "--config", default=None, metavar="FILE",
        help="YAML config file, or the name of a packaged config (default: demo)",
    )
    parser.add_argument(
        "--resume", default=None, metavar="RUN_DIR",
        help="continue a run from its latest checkpoint (its saved config.yaml, plus any overrides)",
    )
    parser.add_argument("--show-config", action="store_true", help="list every config key with its help and exit")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config as YAML and exit")
    parser.add_argument("--list-configs", action="store_true", help="list the packaged configs and exit")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or per-step console lines")


def main(args: argparse.Namespace) -> int:
    from searchrl.training import config as config_module  # local: ~0.17 s; `searchrl train --help` must not pay it

    if args.show_config:
        print(config_module.show_config())
        return 0
    if args.list_configs:
        for name in config_module.packaged_config_names():
            path = config_module.resolve_config_path(name)
            first = next((ln[1:].strip() for ln in path.read_text().splitlines() if ln.startswith("#")), "")
            print(f"{name:<24} {first}")
        return 0
    overrides = list(args.overrides)
    if args.resume:
        run_dir = Path(args.resume).expanduser()
        saved = run_dir / "config.yaml"
        if not saved.is_file():
            raise SearchRLError(f"--resume {run_dir}: no config.yaml there; is it a searchrl run folder?")
        if args.config:
            raise SearchRLError("--resume uses the run's saved config.yaml; drop --config (overrides are allowed)")
        cfg = config_module.load_config(saved, [*overrides, f"run.dir={run_dir}"])
    else:
        cfg = config_module.load_config(args.config, overrides)
    if args.print_config:
        print(yaml.safe_dump(config_module.to_dict(cfg), sort_keys=False, allow_unicode=True), end="")
        return 0

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded at run time
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from searchrl.training.run import train  # local: imports torch and transformers (~3.5 s), after the line above

    try:
        train(cfg, resume=bool(args.resume), console=not args.quiet)
    except KeyboardInterrupt as exc:  # the trainer saved what it could and printed how to resume
        signum = getattr(exc, "signum", 2)
        print(f"searchrl train: stopped by {'SIGTERM' if signum == 15 else 'SIGINT'}", file=sys.stderr)
        return 128 + signum
    return 0
