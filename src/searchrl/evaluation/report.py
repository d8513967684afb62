"""Evaluation results: per-dataset metrics with bootstrap CIs, the papers' seven-benchmark table, JSON.

`summarise(scores_by_dataset)` turns per-question scores into an `EvalReport`; the harness fills the
scores, this module does the statistics and the layout. Columns follow Search-R1's tables (NQ, TriviaQA,
PopQA, HotpotQA, 2Wiki, Musique, Bamboogle, for those present), then any other source, then the macro
average over datasets.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from searchrl.data.loaders import BENCHMARKS, canonical_benchmark
from searchrl.evaluation.bootstrap import bootstrap_ci, macro_bootstrap_ci
from searchrl.fileio import atomic_write_text

# Per-question metrics, in the order the table prints them: key -> (row label, decimals).
METRICS: dict[str, tuple[str, int]] = {
    "em": ("EM", 3),
    "f1": ("F1", 3),
    "cover_em": ("cover-EM", 3),
    "answer_in_retrieval": ("answer in retrieval", 3),
    "searches": ("searches / question", 2),
    "format_valid": ("format valid", 3),
}


@dataclass
class EvalReport:
    """Per-dataset metrics (`datasets[name]`, in the papers' column order) and their macro average.

    Each metrics dict holds, for every key of `METRICS`, the mean and its 95% bootstrap interval
    (`em`, `em_ci_low`, `em_ci_high`, …), plus `n` (questions scored), `n_total` (questions in the
    source), `sample` (how the subset was drawn), `finish_reasons` (counts) and `retrieval_errors` (questions
    left out of the scores because their search failed after the retries). `macro` averages the
    datasets' means, with a stratified-bootstrap interval. `settings` records how the run was made
    (model, mode, protocol, rollout, retriever, seed, bootstrap); `timing` the seconds spent.
    """

    datasets: dict[str, dict]
    macro: dict
    settings: dict = field(default_factory=dict)
    timing: dict = field(default_factory=dict)
    records: list[dict] = field(default_factory=list)  # one per question: answer, scores, finish reason, text
    # `searchrl eval --paired-with`, one entry per file: {"with": file, "datasets": paired_differences(...)}
    paired: list[dict] | None = None

    def metric(self, dataset: str, key: str = "em") -> float:
        return float(self.datasets[dataset][key])

    def flat_metrics(self, prefix: str = "val") -> dict[str, float]:
        """`{prefix}/{dataset}/{key}` for every metric, CI bound and `n`, plus `{prefix}/avg/...` when there
        are several datasets: the flat keys a metrics log wants (e.g. `val/world/em`, `val/world/em_ci_low`)."""
        out: dict[str, float] = {}
        groups = dict(self.datasets)
        if len(groups) > 1:
            groups["avg"] = self.macro
        for name, entry in groups.items():
            for key in METRICS:
                for suffix in ("", "_ci_low", "_ci_high"):
                    out[f"{prefix}/{name}/{key}{suffix}"] = float(entry[f"{key}{suffix}"])
            out[f"{prefix}/{name}/n"] = float(entry["n"])
        return out

    def to_dict(self, include_records: bool = False) -> dict:
        out = {"datasets": self.datasets, "macro": self.macro, "settings": self.settings, "timing": self.timing}
        if self.paired is not None:
            out["paired"] = self.paired
        if include_records:
            out["records"] = self.records
        return out

    def to_json(self, include_records: bool = False) -> str:
        return json.dumps(_finite(self.to_dict(include_records)), indent=2, ensure_ascii=False)

    def to_markdown(self) -> str:
        text = render_markdown(self)
        for entry in self.paired or ():
            text += "\n" + render_paired(entry["datasets"], entry["with"])
        return text

    def write(self, path: str | Path) -> tuple[Path, Path]:
        """Write the JSON report and the Markdown table beside it (`x.json` + `x.md`), each atomically.

        `path` names either file; the other gets the other suffix. Returns (json path, markdown path).
        """
        path = Path(path)
        json_path, md_path = (path.with_suffix(".json"), path) if path.suffix == ".md" else (path, path.with_suffix(".md"))
        atomic_write_text(json_path, self.to_json() + "\n")
        atomic_write_text(md_path, self.to_markdown())
        return json_path, md_path



def _finite(obj: object) -> object:
    """JSON has no NaN: write null instead."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def column_order(names: Sequence[str]) -> list[str]:
    """The papers' seven benchmarks first, in their order, then the other names as given."""
    rank = {b: i for i, b in enumerate(BENCHMARKS)}
    known = sorted((n for n in names if canonical_benchmark(n)), key=lambda n: rank[canonical_benchmark(n)])
    return known + [n for n in names if not canonical_benchmark(n)]


def column_title(name: str) -> str:
    bench = canonical_benchmark(name)
    return BENCHMARKS[bench][1] if bench else name


def summarise(
    scores: Mapping[str, Mapping[str, Sequence[float]]],
    finish_reasons: Mapping[str, Sequence[str]],
    *,
    n_total: Mapping[str, int] | None = None,
    sample_notes: Mapping[str, str] | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[dict[str, dict], dict]:
    """Per-dataset means with bootstrap CIs, and the macro average; `scores[dataset][metric]` per question."""
    datasets: dict[str, dict] = {}
    for name in column_order(list(scores)):
        per_metric = scores[name]
        n = len(next(iter(per_metric.values()))) if per_metric else 0
        entry: dict = {"n": n, "n_total": (n_total or {}).get(name, n)}
        for key in METRICS:
            values = per_metric.get(key, [])
            mean = float(sum(values) / len(values)) if len(values) else float("nan")
            low, high = bootstrap_ci(values, n_resamples=n_resamples, confidence=confidence, seed=seed)
            entry.update({key: mean, f"{key}_ci_low": low, f"{key}_ci_high": high})
        entry["finish_reasons"] = dict(Counter(finish_reasons.get(name, [])).most_common())
        entry["retrieval_errors"] = entry["finish_reasons"].get("retrieval_error", 0)
        if sample_notes and name in sample_notes:
            entry["sample"] = sample_notes[name]
        datasets[name] = entry
    macro: dict = {"datasets": len(datasets), "n": sum(d["n"] for d in datasets.values()),
                   "retrieval_errors": sum(d["retrieval_errors"] for d in datasets.values())}
    for key in METRICS:
        means = [d[key] for d in datasets.values() if not math.isnan(d[key])]
        low, high = macro_bootstrap_ci([scores[name].get(key, []) for name in datasets], n_resamples=n_resamples,
                                       confidence=confidence, seed=seed)
        macro.update({key: float(sum(means) / len(means)) if means else float("nan"),
                      f"{key}_ci_low": low, f"{key}_ci_high": high})
    return datasets, macro


def _cell(entry: Mapping, key: str, decimals: int) -> str:
    value = entry.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    low, high = entry.get(f"{key}_ci_low"), entry.get(f"{key}_ci_high")
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return f"{value:.{decimals}f}"
    return f"{value:.{decimals}f} [{low:.{decimals}f}, {high:.{decimals}f}]"


def render_markdown(report: EvalReport) -> str:
    """The papers' layout: one column per dataset, then the macro average; rows are the metrics."""
    names = list(report.datasets)
    many = len(names) > 1
    header = ["metric", *(column_title(n) for n in names), *(["Avg"] if many else [])]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    for key, (label, decimals) in METRICS.items():
        cells = [_cell(report.datasets[n], key, decimals) for n in names]
        if many:
            cells.append(_cell(report.macro, key, decimals))
        lines.append("| " + " | ".join([label, *cells]) + " |")
    counts = [f"{report.datasets[n]['n']}" for n in names]
    lines.append("| " + " | ".join(["questions", *counts, *([str(report.macro["n"])] if many else [])]) + " |")
    failed = report.macro.get("retrieval_errors", 0)
    if failed:
        errors = [str(report.datasets[n].get("retrieval_errors", 0)) for n in names]
        lines.append("| " + " | ".join(["retrieval errors", *errors, *([str(failed)] if many else [])]) + " |")

    notes = []
    if failed:
        notes.append(f"**WARNING: {failed} question(s) failed retrieval after retries and are left out of the "
                     "scores above; check the retriever and run again.**")
    s = report.settings
    if s:
        what = [f"model `{s.get('model', '?')}`", f"mode `{s.get('mode', 'search')}`"]
        if s.get("retriever"):
            what.append(f"retriever {s['retriever']}")
        notes.append("Greedy decoding, one sample per question; " + ", ".join(what) + ".")
    conf = int(round(100 * s.get("confidence", 0.95))) if s else 95
    notes.append(
        f"Brackets: {conf}% percentile-bootstrap intervals over questions ({s.get('n_resamples', 1000):,} "
        f"resamples, seed {s.get('seed', 0)})" + ("; Avg is the macro average over datasets, its interval from "
                                                   "resampling each dataset independently." if many else ".")
    )
    for n in names:
        entry = report.datasets[n]
        reasons = ", ".join(f"{k} {v}" for k, v in entry.get("finish_reasons", {}).items()) or "none"
        sample = entry.get("sample")
        notes.append(f"{column_title(n)}: {sample or 'all questions'}; finish reasons: {reasons}.")
    if report.timing.get("wall_s"):
        t = report.timing
        notes.append(
            f"Time: {t['wall_s']:.1f} s ({t.get('questions_per_min', float('nan')):.1f} questions/min; generation "
            f"{t.get('generation_s', 0):.1f} s, retrieval {t.get('retrieval_s', 0):.1f} s, "
            f"other {t.get('bookkeeping_s', 0):.1f} s)."
        )
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {note}" for note in notes) + "\n"


# --- paired comparison of two evaluations ----------------------------------------------------------------

PAIRED_METRICS = ("em", "f1")


def read_samples(path: str | Path) -> dict[tuple[str, str], dict]:
    """Per-question records of an earlier `searchrl eval --samples` file, keyed by (dataset, uid); a line without
    the fields a paired comparison needs raises `DataError` naming the file, line and field."""
    from searchrl.data.jsonl import iter_jsonl_objects
    from searchrl.errors import DataError

    out: dict[tuple[str, str], dict] = {}
    for where, row in iter_jsonl_objects(path, missing="not found (write one with `searchrl eval --samples FILE`)"):
        for key in ("dataset", "uid", *PAIRED_METRICS):
            if key not in row:
                raise DataError(f"{where}: field '{key}' is missing (a --samples file of `searchrl eval` has it)")
        for key in PAIRED_METRICS:
            if not isinstance(row[key], (int, float)) or isinstance(row[key], bool):
                raise DataError(f"{where}: field '{key}' must be a number, got {row[key]!r}")
        out[(str(row["dataset"]), str(row["uid"]))] = row
    return out


def paired_differences(records: Sequence[Mapping], other: Mapping[tuple[str, str], Mapping], *,
                       n_resamples: int = 2000, seed: int = 0) -> dict[str, dict]:
    """Per dataset, this evaluation minus `other` on the questions both scored, for EM and F1:

        d_i = m_this(q_i) − m_other(q_i),  gain = mean(d),  95% CI = percentile bootstrap of mean(d)

    resampling questions (so the two evaluations' shared per-question difficulty cancels: a paired interval).
    Datasets with no shared question are left out."""
    by_dataset: dict[str, list[tuple[Mapping, Mapping]]] = {}
    for row in records:
        if row.get("finish_reason") == "retrieval_error":
            continue
        match = other.get((str(row["dataset"]), str(row["uid"])))
        if match is not None and match.get("finish_reason") != "retrieval_error":
            by_dataset.setdefault(str(row["dataset"]), []).append((row, match))
    out: dict[str, dict] = {}
    for name, pairs in by_dataset.items():
        entry: dict = {"n": len(pairs)}
        for key in PAIRED_METRICS:
            diffs = [float(a[key]) - float(b[key]) for a, b in pairs]
            low, high = bootstrap_ci(diffs, n_resamples=n_resamples, seed=seed)
            entry[f"{key}_gain"], entry[f"{key}_ci_low"], entry[f"{key}_ci_high"] = sum(diffs) / len(diffs), low, high
        out[name] = entry
    return out


def render_paired(paired: Mapping[str, Mapping], other: str) -> str:
    """The paired differences as a Markdown table."""
    lines = [f"Paired against {other} (this minus that, on the same questions; 95% bootstrap interval):", "",
             "| dataset | n | EM gain | F1 gain |", "| --- | --- | --- | --- |"]
    for name, e in paired.items():
        cells = [f"{e[f'{k}_gain']:+.3f} [{e[f'{k}_ci_low']:+.3f}, {e[f'{k}_ci_high']:+.3f}]" for k in PAIRED_METRICS]
        lines.append(f"| {name} | {e['n']} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"

