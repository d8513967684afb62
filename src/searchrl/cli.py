"""The `searchrl` command: argument dispatch only.

Each sub-command lives in its own module, which exposes `add_arguments(parser)` and `main(args) -> int`.
Modules are imported lazily so `searchrl --help` is fast and one broken optional dependency does not
break unrelated commands.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from searchrl.errors import SearchRLError

# name -> (module, help). Order is the order shown in --help.
COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("searchrl.training.cli_train", "train a search agent with RL (no arguments: the embedded demo)"),
    "sft": ("searchrl.training.cli_sft", "supervised warm start on oracle or collected trajectories"),
    "eval": ("searchrl.evaluation.cli", "evaluate an agent on QA benchmarks (EM, F1, bootstrap CIs)"),
    "decisions": ("searchrl.analysis.cli_decisions", "does a model know when to search again? compare models on it"),
    "compare": ("searchrl.analysis.cli_compare", "run several algorithms side by side and write a report"),
    "report": ("searchrl.analysis.cli_report", "write an HTML report with figures for run folders"),
    "index": ("searchrl.retrieval.cli_index", "build a BM25, dense or hybrid index over a corpus"),
    "serve": ("searchrl.retrieval.cli_serve", "serve an index over HTTP with Search-R1's /retrieve API"),
    "data": ("searchrl.data.cli", "data utilities: generate the synthetic world"),
}


def add_device_argument(parser: argparse.ArgumentParser, default: str = "the config's train.device") -> None:
    """The `--device` option of the commands that load a model."""
    parser.add_argument("--device", default=None,
                        help=f"auto, cpu, cuda or cuda:N (default: {default}; auto: a GPU when torch sees one)")


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="searchrl", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        # Only the invoked command's module is imported (keeps `--help` fast).
        if name == wanted:
            mod = importlib.import_module(module)
            mod.add_arguments(p)
            p.set_defaults(_main=mod.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    if extra:
        # argparse takes one run of positionals only: dotted overrides after an option (`--limit 4 a.b=1`)
        # arrive here, in command-line order, and join the command's overrides.
        if hasattr(args, "overrides") and all("=" in a and not a.startswith("-") for a in extra):
            args.overrides = [*args.overrides, *extra]
        else:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    try:
        return int(args._main(args) or 0)
    except SearchRLError as exc:
        print(f"searchrl {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C, or a run stopped by SIGTERM (after its checkpoint): 128 + signal
        signum = getattr(exc, "signum", 2)
        print(f"searchrl {args.command}: interrupted ({'SIGTERM' if signum == 15 else 'SIGINT'})", file=sys.stderr)
        return 128 + signum


if __name__ == "__main__":
    sys.exit(main())
