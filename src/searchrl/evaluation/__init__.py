"""Evaluation: greedy benchmark runs with bootstrap confidence intervals, in the papers' table layout.

`evaluate(policy, tokenizer, sources, ...) -> EvalReport`; `searchrl eval` is the command-line front end.
"""

from searchrl.evaluation.bootstrap import bootstrap_ci, bootstrap_means, macro_bootstrap_ci, percentile_interval
from searchrl.evaluation.harness import DIRECT_INSTRUCTION, MODES, RAG_INSTRUCTION, default_protocol, evaluate
from searchrl.evaluation.report import METRICS, EvalReport, column_order, render_markdown, summarise
from searchrl.evaluation.sampling import SampleInfo, allocate, stratified_sample

__all__ = [
    "DIRECT_INSTRUCTION",
    "EvalReport",
    "METRICS",
    "MODES",
    "RAG_INSTRUCTION",
    "SampleInfo",
    "allocate",
    "bootstrap_ci",
    "bootstrap_means",
    "column_order",
    "default_protocol",
    "evaluate",
    "macro_bootstrap_ci",
    "percentile_interval",
    "render_markdown",
    "stratified_sample",
    "summarise",
]
