"""`searchrl report RUN_DIR [RUN_DIR ...] [--out FILE]`: one self-contained HTML report for run folders."""

from __future__ import annotations

import argparse

from searchrl.analysis.report import write_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folders written by `searchrl train`")
    parser.add_argument(
        "--out", default=None, metavar="FILE",
        help="HTML file to write; PNG figures go beside it as <stem>-<figure>.png "
        "(default: RUN_DIR/report.html for one run, <common parent>/report.html for several)",
    )
    parser.add_argument("--title", default=None, help="page title (default: the algorithms or run names)")
    parser.add_argument("--reference", default=None, metavar="ARM",
                        help="the arm the others are compared to, paired within seeds (default: the first arm)")


def main(args: argparse.Namespace) -> int:
    result = write_report(args.run_dirs, args.out, title=args.title, reference=args.reference)
    print(f"report: {result.html}")
    for path in result.figures:
        print(f"figure: {path}")
    if result.notes:
        print(f"{len(result.notes)} note(s) in the report (skipped curves, missing files); see its Notes section")
    return 0
