"""`searchrl eval`: evaluate an agent on QA benchmarks with bootstrap confidence intervals.

    searchrl eval --model default --data world --limit 100 --out results.json
    searchrl eval --model ./ckpt --data nq,hotpotqa --retriever http://127.0.0.1:8000 --limit 500
    searchrl eval --data tests/fixtures/qa/nq_oracle --mode rag --max-turn-tokens 64

Outputs (--out, the .md beside it, --samples) never replace a file this command did not write, nor one of its
inputs; an earlier evaluation's files are replaced only with --overwrite.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from searchrl.errors import ConfigError, RetrievalError, SearchRLError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from searchrl.evaluation.harness import MODES
    from searchrl.protocol import PROTOCOL_PRESETS
    from searchrl.rollout.engine import RolloutConfig

    d = RolloutConfig()
    parser.add_argument("--model", default="default",
                        help="'default' (embedded SmolLM2-135M-Instruct), a Hugging Face model folder or a .gguf file")
    parser.add_argument("--data", default="world",
                        help="comma-separated sources: dataset folders, .jsonl/.parquet files, benchmark names "
                             "(nq, triviaqa, popqa, hotpotqa, 2wikimultihopqa, musique, bamboogle), world[:SEED]; "
                             "NAME=SPEC renames, SPEC@SPLIT picks a split (default %(default)s)")
    parser.add_argument("--split", default=None, help="split for sources that have several (world: test)")
    parser.add_argument("--retriever", default=None,
                        help="index folder, corpus .jsonl or http(s) URL for all sources; default: a cached BM25 "
                             "index over each source's own corpus.jsonl")
    parser.add_argument("--limit", type=int, default=None,
                        help="at most N questions per dataset: a seeded sample stratified by metadata.type or source")
    parser.add_argument("--mode", choices=MODES, default="search",
                        help="search: the agent; direct: answer without search; rag: retrieve once with the question")
    parser.add_argument("--out", default=None, help="write the JSON report here and the Markdown table beside it (.md)")
    parser.add_argument("--samples", default=None, help="also write one JSON line per question (answer, scores, text)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace --out / --samples files of an earlier evaluation (other files never are)")
    parser.add_argument("--paired-with", action="append", default=None, metavar="SAMPLES",
                        help="the --samples file of another evaluation: also report this one minus that one (EM, "
                             "F1) on the questions both scored, with paired 95%% bootstrap intervals; repeat it to "
                             "compare with several")
    parser.add_argument("--batch-size", type=int, default=32, help="questions per rollout batch (default %(default)s)")
    saved = "default: the model folder's saved setting (an exported agent carries its training's), else"
    parser.add_argument("--max-turns", type=int, default=None, help=f"searches allowed ({saved} {d.max_turns})")
    parser.add_argument("--max-turn-tokens", type=int, default=None,
                        help=f"generated tokens per turn ({saved} {d.max_turn_tokens})")
    parser.add_argument("--max-obs-tokens", type=int, default=None,
                        help=f"tokens per observation ({saved} {d.max_obs_tokens})")
    parser.add_argument("--topk", type=int, default=None, help=f"passages per search ({saved} {d.topk})")
    parser.add_argument("--prefix", default=None,
                        help="assistant prefix: text that opens the reply, e.g. '<search>' (small models need it)")
    parser.add_argument("--template", default=None,
                        help=f"prompt: a preset ({', '.join(PROTOCOL_PRESETS)}), a text file holding the instruction "
                             "with {question}, or a .yaml/.json file of protocol settings (instruction, "
                             "system_message, few_shot_question, few_shot_response, assistant_prefix, "
                             "use_chat_template, preset); default: in search mode the protocol an exported agent "
                             "was trained with, else the mode's prompt (Search-R1's for search)")
    parser.add_argument("--chat-template", choices=("auto", "on", "off"), default="auto",
                        help="wrap the prompt in the tokenizer's chat template (auto: when it has one)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample and the bootstrap (default 0)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default %(default)s)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--device", default="auto",
                        help="auto (a GPU when torch sees one, else the CPU), cpu, cuda or cuda:N (default %(default)s)")


def build_protocol(args: argparse.Namespace, saved: dict | None = None):
    """The protocol from --template / --prefix / --chat-template on top of the mode's default prompt, or, in
    search mode, of the protocol an exported agent was trained with (`saved`, models.read_agent_settings)."""
    from searchrl.evaluation.harness import default_protocol
    from searchrl.protocol import PROTOCOL_PRESETS, ProtocolConfig

    if args.template is None and saved and args.mode == "search":
        protocol = ProtocolConfig.from_dict(saved["protocol"], where=f"{saved['source']}: protocol")
    elif args.template is None:
        protocol = default_protocol(args.mode)
    elif args.template in PROTOCOL_PRESETS:
        protocol = PROTOCOL_PRESETS[args.template]
    else:
        path = Path(args.template)
        if not path.is_file():
            raise ConfigError(f"--template {args.template!r}: not a preset ({', '.join(PROTOCOL_PRESETS)}) "
                              "and not a file")
        text = path.read_text(encoding="utf-8")
        if path.suffix in (".yaml", ".yml", ".json"):
            import yaml

            from searchrl.fileio import load_yaml, yaml_input_error

            try:
                values = load_yaml(text)
            except yaml_input_error() as exc:
                raise ConfigError(f"--template {path}:{exc.problem_mark.line + 1}: {exc.problem}") from None
            except (yaml.YAMLError, RecursionError) as exc:
                raise ConfigError(f"--template {path}: not valid YAML/JSON ({exc})") from None
            if not isinstance(values, dict):
                raise ConfigError(f"--template {path}: expected a mapping of protocol settings")
            protocol = ProtocolConfig.from_dict(values, where=f"{path}")
        else:
            if "{question}" not in text:
                raise ConfigError(f"--template {path}: the prompt file must contain the placeholder {{question}}")
            protocol = ProtocolConfig(instruction=text)
    changes: dict = {}
    if args.prefix is not None:
        changes["assistant_prefix"] = args.prefix
    if args.chat_template != "auto":
        changes["use_chat_template"] = args.chat_template == "on"
    return dataclasses.replace(protocol, **changes) if changes else protocol


def _report_paths(out: str) -> tuple[Path, Path]:
    """(JSON path, Markdown path) that `EvalReport.write(out)` writes."""
    path = Path(out)
    return (path.with_suffix(".json"), path) if path.suffix == ".md" else (path, path.with_suffix(".md"))


def _is_report(path: Path) -> bool:
    from searchrl.fileio import read_small_json

    if path.suffix == ".md":
        try:
            with open(path, encoding="utf-8") as fh:
                return fh.readline().startswith("| metric |")  # render_markdown's first line
        except (OSError, UnicodeDecodeError):
            return False
    report = read_small_json(path)
    return isinstance(report, dict) and {"datasets", "macro", "settings"} <= report.keys()


def _is_samples(path: Path) -> bool:
    from searchrl.fileio import first_jsonl_row

    row = first_jsonl_row(path)
    return isinstance(row, dict) and {"dataset", "uid", "finish_reason"} <= row.keys()


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before any work, outputs that cannot be written or would replace a file this command did not write,
    one of its inputs, or (without --overwrite) an earlier evaluation's files."""
    from searchrl.data.loaders import spec_path
    from searchrl.fileio import check_output_path

    inputs = [spec_path(spec) for spec in (args.data or "").split(",")]
    inputs += [args.model, args.retriever, args.template, *(args.paired_with or ())]
    outputs = [(path, "--out", _is_report, "searchrl eval report") for path in _report_paths(args.out)] \
        if args.out else []
    if args.samples:
        outputs.append((Path(args.samples), "--samples", _is_samples, "searchrl eval --samples file"))
    if args.samples and args.out and any(Path(args.samples).resolve() == p.resolve() for p in _report_paths(args.out)):
        raise ConfigError(f"--samples {args.samples}: is also where --out writes the report; give it another name")
    for path, what, ours, kind in outputs:
        check_output_path(path, what, inputs=inputs, overwrite=args.overwrite, ours=ours, kind=kind)


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from searchrl.data.loaders import load_sources
    from searchrl.evaluation.harness import evaluate
    from searchrl.evaluation.report import paired_differences, read_samples
    from searchrl.fileio import atomic_write_text
    from searchrl.models import AGENT_ROLLOUT_KEYS, read_agent_settings, resolve_device
    from searchrl.rollout.engine import RolloutConfig

    console = Console(stderr=True)
    if args.limit is not None and args.limit < 1:
        raise ConfigError(f"--limit must be >= 1, got {args.limit}")
    device = resolve_device(args.device, key="--device")  # a missing GPU fails before the data loads
    check_outputs(args)  # outputs first: an unwritable or precious --out must not cost a whole evaluation
    others = [(path, read_samples(path)) for path in args.paired_with or ()]  # a bad file fails before any work
    saved = read_agent_settings(args.model) if Path(args.model).is_dir() else None
    protocol = build_protocol(args, saved)
    budgets = {k: v for k, v in (saved or {}).get("rollout", {}).items() if k in AGENT_ROLLOUT_KEYS}
    budgets.update({k: getattr(args, k) for k in AGENT_ROLLOUT_KEYS if getattr(args, k) is not None})
    rollout = RolloutConfig.from_dict({**budgets, "greedy": True, "seed": args.seed},
                                      where=f"{saved['source']}: rollout" if saved else "rollout")
    if saved:
        shown = ", ".join(f"{k}={v}" for k, v in budgets.items())
        console.print(f"model {args.model}: evaluated with the settings it was trained with "
                      f"(from {saved['source']}: {shown}"
                      + (", and its prompt)" if args.mode == "search" and args.template is None else ")"))
    sources = load_sources(args.data, split=args.split)
    for s in sources:
        console.print(f"[bold]{s.name}[/]: {len(s.questions)} questions ({s.origin})")
    console.print(f"model {args.model}: loaded on {device} after the data and the retriever …")
    # evaluate() loads the model by name after the retrievers, so an unreachable server fails first.
    report = evaluate(args.model, None, sources, retriever=args.retriever, limit=args.limit, mode=args.mode,
                      protocol_cfg=protocol, rollout_cfg=rollout, batch_size=args.batch_size, seed=args.seed,
                      n_resamples=args.resamples, progress=not args.no_progress, model_name=args.model, device=device)
    if others:
        report.paired = [{"with": str(path), "datasets": paired_differences(report.records, other, seed=args.seed)}
                         for path, other in others]
        for entry in report.paired:
            if not entry["datasets"]:
                raise ConfigError(f"--paired-with {entry['with']}: no question of this evaluation is in it (same "
                                  "data, split and --limit?)")
    print(report.to_markdown(), end="")
    try:
        if args.out:
            json_path, md_path = report.write(args.out)
            console.print(f"wrote {json_path} and {md_path}")
        if args.samples:
            path = Path(args.samples)
            atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in report.records))
            console.print(f"wrote {path} ({len(report.records)} questions)")
    except OSError as exc:  # checked at the start, but the disk may fill or a folder vanish meanwhile
        raise SearchRLError(f"cannot write the results to {exc.filename or args.out}: {exc.strerror or exc}; "
                            "the table above is the only copy") from None
    failed = [r for r in report.records if r["finish_reason"] == "retrieval_error"]
    if failed:
        # Never a silent table built on failed searches: the scores leave these questions out, and the exit
        # status says the run is incomplete (the engine and the HTTP client have both retried already).
        raise RetrievalError(
            f"{len(failed)} of {len(report.records)} questions failed retrieval after retries (first: "
            f"{failed[0]['retrieval_error']}); they are left out of the scores above. Check the retriever "
            f"({report.settings.get('retriever') or args.retriever}) and run again"
        )
    return 0
