"""The run report: one self-contained HTML page (figures embedded as data URIs) plus PNGs beside it.

It puts GRPO and its stabilisers side by side, one line per run, in the papers' layout:
- SAPO Fig. 1's four panels (importance ratio, clip fraction, entropy, reward), with the collapse
  monitor's warnings (events.jsonl) marked on the curves;
- validation EM per dataset over steps (SAPO Fig. 4), with bootstrap CI bands when logged;
- the LLD panel: log-likelihood of positive- and negative-advantage trajectories (LLDS Figs. 2, 9a);
- behaviour: searches per question (LLDS Fig. 9b), valid-format rate, response length, garbled turns;
- the importance ratio split by turn kind and SAPO's drift λ (SAPO Prop. 1);
- a final table of every dataset's EM with its CI and the macro average, from final_eval.json when
  present, else from the last validation row of metrics.jsonl.

Missing keys and NaN values never crash the report: that curve is skipped and a note says so. The page
needs no network and no JavaScript. Schema of the inputs: docs/metrics.md.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


from searchrl.errors import DataError
from searchrl.fileio import atomic_write_bytes, check_output_path, load_yaml

METRICS_FILE = "metrics.jsonl"
EVENTS_FILE = "events.jsonl"
FINAL_EVAL_FILE = "final_eval.json"
CONFIG_FILES = ("config.yaml", "config.yml", "config.json", "resolved_config.yaml")

_VAL_EM = re.compile(r"^val/(?P<ds>.+)/em$")
_SEED_SUFFIX = re.compile(r"^(?P<arm>.+)-s(?P<seed>\d+)$")


@dataclass(frozen=True)
class Panel:
    """One axes: a title, the metric keys in order of preference (first with data wins), a y label."""

    title: str
    keys: tuple[str, ...]
    ylabel: str


# SAPO (arXiv 2603.10069) Fig. 1: (a) IS ratio, (b) clip fraction, (c) entropy, (d) reward.
COLLAPSE_PANELS = (
    Panel("(a) importance-sampling ratio", ("diag/is_ratio_mean", "actor/is_ratio_mean"), "mean ratio"),
    Panel("(b) clip fraction", ("diag/clip_frac", "actor/clip_frac"), "share of tokens"),
    Panel("(c) entropy", ("diag/entropy", "actor/entropy"), "nats per token"),
    Panel("(d) reward", ("reward/mean",), "mean reward"),
)
BEHAVIOUR_PANELS = (
    Panel("searches per question", ("diag/searches_mean", "env/searches_mean"), "searches"),
    Panel("valid-format rate", ("diag/format_valid", "env/format_valid"), "share"),
    Panel("response length", ("diag/response_length_mean", "response/length_mean"), "tokens"),
    Panel("garbled turns (perplexity >= 50)", ("diag/garbled_rate",), "share of turns"),
)
RATIO_PANELS = (
    Panel("ratio mean, search turns", ("diag/is_ratio_mean/search",), "mean ratio"),
    Panel("ratio mean, answer turns", ("diag/is_ratio_mean/answer",), "mean ratio"),
    Panel("ratio 5th percentile", ("diag/is_ratio_p05",), "ratio"),
    Panel("log-ratio drift (mu + sigma^2/2)", ("diag/log_ratio_drift",), "drift"),
    Panel("share of ratios below 0.5", ("diag/is_ratio_lt_0.5",), "share of tokens"),
    Panel("ratio mean, tokens with advantage >= 0 (ISDD)", ("diag/is_ratio_mean/nonneg_adv",), "mean ratio"),
    Panel("share of advantage >= 0 tokens with ratio < 1 - eps (ISDD)", ("diag/isdd_share",), "share of tokens"),
    Panel("mean ratio of those tokens", ("diag/isdd_ratio_mean",), "mean ratio"),
)
LLD_PANELS = (
    Panel("positive-advantage trajectories", ("diag/ll_pos",), "mean log-likelihood"),
    Panel("negative-advantage trajectories", ("diag/ll_neg",), "mean log-likelihood"),
    Panel("fixed probe set (oracle dev trajectories, log.probe_trajectories)", ("diag/probe_ll",),
          "mean log-likelihood"),
)


# ----------------------------------------------------------------------------------------------------
# Reading run folders
# ----------------------------------------------------------------------------------------------------


@dataclass
class RunData:
    """What the report reads from one run folder."""

    name: str
    path: Path
    rows: list[dict[str, Any]]
    events: list[dict[str, Any]]
    final_eval: dict[str, dict[str, float]]  # dataset -> {"em", "em_ci_low", "em_ci_high", ...}
    final_eval_source: str  # "final_eval.json", "metrics.jsonl step N" or ""
    algorithm: str | None
    final_macro: dict[str, float] = field(default_factory=dict)  # from final_eval.json when it has one
    notes: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)  # summary.json: start/final test EM and the paired gain
    per_question: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # evals.json: when -> ds -> q

    @property
    def seed(self) -> str:
        """The run's seed: the ``-s<seed>`` suffix of its name (``sapo-s1`` -> ``1``), else its name."""
        match = _SEED_SUFFIX.match(self.name)
        return match["seed"] if match else self.name

    @property
    def arm(self) -> str:
        """The run's arm: its name without a ``-s<seed>`` suffix (``sapo-s1`` -> ``sapo``), as compare names runs."""
        match = _SEED_SUFFIX.match(self.name)
        return match["arm"] if match else self.name

    def steps(self) -> list[int]:
        return [int(r["step"]) for r in self.rows if _finite(r.get("step"))]


def _finite(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _read_jsonl(path: Path, notes: list[str]) -> list[dict[str, Any]]:
    """Read a JSON-lines file. A malformed last line (a run still writing) is skipped with a note."""
    rows: list[dict[str, Any]] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):
                notes.append(f"{path}: line {number} is incomplete (run still writing?) and was skipped")
                continue
            raise DataError(
                f"{path}, line {number}: not valid JSON ({exc.msg}); each line must be one JSON object"
            ) from None
        if not isinstance(row, dict):
            raise DataError(f"{path}, line {number}: expected a JSON object, got {type(row).__name__}")
        rows.append(row)
    return rows


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def parse_final_eval(raw: Any, source: str) -> dict[str, dict[str, float]]:
    """Normalise a final_eval.json payload to {dataset: {"em", "em_ci_low", "em_ci_high", ...}}.

    Accepts {"datasets": {ds: {...}}}, {ds: {"em": ...}} and flat {"val/ds/em": ...} or {"ds/em": ...}.
    """
    if not isinstance(raw, Mapping):
        raise DataError(f"{source}: expected a JSON object with per-dataset results (docs/metrics.md)")
    if isinstance(raw.get("datasets"), Mapping):
        raw = raw["datasets"]
    out: dict[str, dict[str, float]] = {}
    raw = {k: v for k, v in raw.items() if k != "macro"}  # the macro average is read by `parse_final_macro`
    for key, value in raw.items():
        if isinstance(value, Mapping) and "em" in value:
            # Numbers only: EvalReport entries also carry `sample` (text) and `finish_reasons` (counts).
            out[str(key)] = {
                str(k): _as_float(v) for k, v in value.items() if v is None or isinstance(v, (int, float))
            }
            continue
        parts = str(key).split("/")
        if parts[0] == "val":
            parts = parts[1:]
        if len(parts) == 2 and parts[1] in ("em", "em_ci_low", "em_ci_high", "f1", "n"):
            out.setdefault(parts[0], {})[parts[1]] = _as_float(value)
    return {ds: vals for ds, vals in out.items() if "em" in vals}


def parse_final_macro(raw: Any) -> dict[str, float]:
    """The macro average of a final_eval.json (`{"macro": {"em", "em_ci_low", "em_ci_high", ...}}`), or {}.

    `searchrl.evaluation` writes it with a stratified-bootstrap CI, which the per-dataset CIs cannot give.
    """
    macro = raw.get("macro") if isinstance(raw, Mapping) else None
    if not isinstance(macro, Mapping) or not _finite(macro.get("em")):
        return {}
    return {str(k): _as_float(v) for k, v in macro.items() if v is None or isinstance(v, (int, float))}


def _final_from_rows(rows: Sequence[Mapping[str, Any]]) -> tuple[dict[str, dict[str, float]], str]:
    """Each dataset's last finite `val/<ds>/em` (with its CI from the same row)."""
    out: dict[str, dict[str, float]] = {}
    last_step = None
    for row in rows:
        for key, value in row.items():
            match = _VAL_EM.match(key)
            if match and _finite(value):
                ds = match["ds"]
                out[ds] = {
                    "em": float(value),
                    "em_ci_low": _as_float(row.get(f"val/{ds}/em_ci_low")),
                    "em_ci_high": _as_float(row.get(f"val/{ds}/em_ci_high")),
                }
                last_step = row.get("step", last_step)
    return out, (f"metrics.jsonl step {last_step}" if out else "")


def _read_algorithm(run_dir: Path) -> str | None:
    for name in CONFIG_FILES:
        path = run_dir / name
        if not path.is_file():
            continue
        try:
            if path.suffix == ".json":
                cfg = json.loads(path.read_text(encoding="utf-8"))
            else:
                cfg = load_yaml(path.read_text(encoding="utf-8"))  # strict: no alias bomb, no key twice
        except Exception:  # a config we cannot read only costs the label
            return None
        algo = cfg.get("algorithm") if isinstance(cfg, Mapping) else None
        if isinstance(algo, Mapping) and algo.get("name"):
            return str(algo["name"])
        if isinstance(algo, str):
            return algo
    return None


def load_run(run_dir: str | os.PathLike[str], name: str | None = None) -> RunData:
    """Read metrics.jsonl, events.jsonl, final_eval.json and the algorithm name from a run folder."""
    path = Path(run_dir)
    if not path.is_dir():
        raise DataError(f"{path}: not a directory; pass run folders written by `searchrl train` (run.dir)")
    notes: list[str] = []
    metrics_path = path / METRICS_FILE
    rows: list[dict[str, Any]] = []
    if metrics_path.is_file():
        rows = _read_jsonl(metrics_path, notes)
        for index, row in enumerate(rows, start=1):
            if not _finite(row.get("step")):
                row["step"] = index  # a row without a step is numbered by its position
        if not rows:
            notes.append(f"{metrics_path}: no metric rows yet")
    else:
        notes.append(f"{path}: no {METRICS_FILE} (the run failed before its first step?)")
    events = _read_jsonl(path / EVENTS_FILE, notes) if (path / EVENTS_FILE).is_file() else []
    final: dict[str, dict[str, float]] = {}
    macro: dict[str, float] = {}
    source = ""
    final_path = path / FINAL_EVAL_FILE
    if final_path.is_file():
        try:
            raw = json.loads(final_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DataError(f"{final_path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        final = parse_final_eval(raw, str(final_path))
        macro = parse_final_macro(raw) if final else {}
        source = FINAL_EVAL_FILE if final else ""
        if not final:
            notes.append(f"{final_path}: no dataset with an `em` value; using metrics.jsonl instead")
    if not final:
        final, source = _final_from_rows(rows)
    summary: dict[str, Any] = {}
    if (path / "summary.json").is_file():
        try:
            loaded = json.loads((path / "summary.json").read_text(encoding="utf-8"))
            summary = loaded if isinstance(loaded, dict) else {}
        except json.JSONDecodeError as exc:
            notes.append(f"{path / 'summary.json'}: not valid JSON ({exc.msg}); its test gain is not shown")
    _add_start_validation(rows, summary)
    per_question: dict[str, dict[str, dict[str, float]]] = {}
    if (path / "evals.json").is_file():
        try:
            loaded = json.loads((path / "evals.json").read_text(encoding="utf-8"))
            per_question = {when: dict(v.get("per_question_em", {})) for when, v in loaded.items()
                            if isinstance(v, dict)} if isinstance(loaded, dict) else {}
        except (json.JSONDecodeError, AttributeError):
            notes.append(f"{path / 'evals.json'}: not readable; the pooled test gain leaves this run out")
    return RunData(
        name=name or path.name, path=path, rows=rows, events=events, final_eval=final,
        final_eval_source=source, algorithm=_read_algorithm(path), final_macro=macro, notes=notes, summary=summary,
        per_question=per_question,
    )


def _add_start_validation(rows: list[dict[str, Any]], summary: Mapping[str, Any]) -> None:
    """The trainer logs the start-of-RL validation in summary.json (``val.start``), not in metrics.jsonl; put it
    in as a step-0 row so validation curves start where RL starts."""
    start = summary.get("val", {}).get("start", {}) if isinstance(summary.get("val"), dict) else {}
    if not isinstance(start, dict) or any(r.get("step") == 0 for r in rows):
        return
    row = {f"val/{ds}/{k}": v[k] for ds, v in start.items() if isinstance(v, dict)
           for k in ("em", "em_ci_low", "em_ci_high") if _finite(v.get(k))}
    if row:
        rows.insert(0, {"step": 0, **row})


def _unique_names(paths: Sequence[Path]) -> list[str]:
    names = [p.resolve().name for p in paths]
    if len(set(names)) == len(names):
        return names
    return [f"{p.resolve().parent.name}/{p.resolve().name}" for p in paths]


def series(run: RunData, keys: Sequence[str]) -> tuple[str, list[float], list[float]] | None:
    """(key, steps, values) of the first key with at least one finite value; None when none has."""
    for key in keys:
        xs, ys = [], []
        for row in run.rows:
            value = row.get(key)
            if _finite(value):
                xs.append(float(row["step"]))
                ys.append(float(value))
        if ys:
            return key, xs, ys
    return None


# ----------------------------------------------------------------------------------------------------
# Figures (matplotlib, Agg, no pyplot global state)
# ----------------------------------------------------------------------------------------------------
# matplotlib is imported in the functions that draw: it costs ~0.8 s to import, which `searchrl report --help`,
# `searchrl compare` (until its runs end) and the readers of run data must not pay.


def _new_figure(n_panels: int, ncols: int = 2, panel_size: tuple[float, float] = (5.2, 3.4)) -> tuple[Any, list[Any]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # local: matplotlib, see above
    from matplotlib.figure import Figure

    ncols = max(1, min(ncols, n_panels))
    nrows = math.ceil(n_panels / ncols)
    fig = Figure(figsize=(panel_size[0] * ncols, panel_size[1] * nrows), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(nrows, ncols, i + 1) for i in range(n_panels)]
    return fig, axes


def _colours(n: int) -> list[Any]:
    from matplotlib import colormaps  # local: matplotlib, see above

    cmap = colormaps["tab10"]
    return [cmap(i % 10) for i in range(n)]


def _style_axes(ax: Any, ylabel: str) -> None:
    from matplotlib.ticker import MaxNLocator  # local: matplotlib, see above

    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are integers
    ax.ticklabel_format(axis="y", useOffset=False)  # no "1e-6+1.07e1" offsets on flat curves
    ax.grid(alpha=0.3)


def _linestyle(index: int) -> str:
    # Runs that coincide (e.g. before a stabiliser's term ever activates) stay visible under each other.
    # Dotted is left for the monitor's warning lines.
    return ("-", "--", "-.")[index % 3]


def _no_data(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9, color="0.4", wrap=True)


def _png_bytes(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


SMOOTHING_WINDOW = 3  # steps: a per-step value comes from 8 questions x G rollouts, so it is noisy


def moving_average(values: Sequence[float], window: int = SMOOTHING_WINDOW) -> list[float]:
    """Trailing mean of the last ``window`` points (fewer at the start), drawn over the raw per-step points."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    return [sum(values[max(0, i - window + 1) : i + 1]) / len(values[max(0, i - window + 1) : i + 1])
            for i in range(len(values))]


def arms(runs: Sequence[RunData]) -> dict[str, list[RunData]]:
    """Runs grouped by arm (``sapo-s0``, ``sapo-s1`` -> ``sapo``), in order of first appearance."""
    grouped: dict[str, list[RunData]] = {}
    for run in runs:
        grouped.setdefault(run.arm, []).append(run)
    return grouped


def seed_mean(found: Sequence[tuple[list[float], list[float]]]) -> tuple[list[float], list[float]]:
    """The mean over seeds at the steps every seed logged: (steps, means)."""
    common = sorted(set.intersection(*(set(xs) for xs, _ in found))) if found else []
    lookup = [dict(zip(xs, ys)) for xs, ys in found]
    return common, [sum(values[x] for values in lookup) / len(lookup) for x in common]


def _plot_panels(
    runs: Sequence[RunData], panels: Sequence[Panel], colours: Sequence[Any], notes: list[str],
    figure_title: str, mark_events: bool = False,
) -> bytes:
    grouped = arms(runs)
    by_arm = any(len(members) > 1 for members in grouped.values())
    fig, axes = _new_figure(len(panels))
    if by_arm:
        fig.suptitle(f"{figure_title} (bold: mean over seeds, {SMOOTHING_WINDOW}-step moving average; "
                     "thin: each seed, same average)")
    else:
        fig.suptitle(f"{figure_title} (lines: {SMOOTHING_WINDOW}-step moving average; faint dots: each step)")
    for ax, panel in zip(axes, panels):
        plotted = 0
        for index, (arm, members) in enumerate(grouped.items()):
            colour = colours[index % len(colours)]
            found = []
            for run in members:
                series_found = series(run, panel.keys)
                if series_found is None:
                    if run.rows:
                        notes.append(f"{run.name}: no finite values for {' / '.join(panel.keys)}; "
                                     f"curve skipped in '{panel.title}'")
                    continue
                _, xs, ys = series_found
                found.append((xs, ys))
                if by_arm:
                    ax.plot(xs, moving_average(ys), color=colour, linewidth=0.7, alpha=0.45,
                            linestyle=_linestyle(index))
                else:
                    ax.plot(xs, ys, color=colour, linewidth=0.8, alpha=0.35, marker=".", linestyle=_linestyle(index))
                    ax.plot(xs, moving_average(ys), color=colour, label=run.name, linewidth=1.8,
                            linestyle=_linestyle(index))
                if mark_events:
                    _mark_events(ax, run, panel, xs, ys, colour)
            if not found:
                continue
            plotted += 1
            if by_arm:
                xs, ys = seed_mean(found)
                if xs:
                    ax.plot(xs, moving_average(ys), color=colour, linewidth=2.2, linestyle=_linestyle(index),
                            label=f"{arm} ({len(found)} seed{'s' if len(found) > 1 else ''})")
        ax.set_title(panel.title, fontsize=10)
        _style_axes(ax, panel.ylabel)
        if plotted:
            ax.legend(fontsize=8)
        else:
            _no_data(ax, f"no data ({', '.join(panel.keys)})")
    return _png_bytes(fig)


def _mark_events(ax: Any, run: RunData, panel: Panel, xs: Sequence[float], ys: Sequence[float], colour: Any) -> None:
    """Dotted vertical line at every warning; on the panel of the warning's metric, a labelled marker (labels of
    warnings at the same step are stacked, not drawn over each other)."""
    labelled: dict[float, int] = {}
    for event in run.events:
        if not _finite(event.get("step")):
            continue
        step = float(event["step"])
        ax.axvline(step, color=colour, linestyle=":", linewidth=1.0, alpha=0.8)
        if event.get("metric") in panel.keys or (panel.keys == ("reward/mean",) and not _event_on_collapse_panel(event)):
            # Marker on the curve at the nearest logged step.
            nearest = min(range(len(xs)), key=lambda i: abs(xs[i] - step))
            ax.plot([xs[nearest]], [ys[nearest]], marker="v", markersize=9, color=colour, markeredgecolor="black")
            above = labelled.get(step, 0)
            labelled[step] = above + 1
            ax.annotate(str(event.get("rule", "warning")), (xs[nearest], ys[nearest]), textcoords="offset points",
                        xytext=(4, 6 + 9 * above), fontsize=7, color="black")


def _event_on_collapse_panel(event: Mapping[str, Any]) -> bool:
    return any(event.get("metric") in p.keys for p in COLLAPSE_PANELS)


def _plot_validation(runs: Sequence[RunData], colours: Sequence[Any], notes: list[str]) -> bytes | None:
    datasets: list[str] = []
    for run in runs:
        for row in run.rows:
            for key, value in row.items():
                match = _VAL_EM.match(key)
                if match and _finite(value) and match["ds"] not in datasets:
                    datasets.append(match["ds"])
    if not datasets:
        notes.append("no validation EM (val/<dataset>/em) in any run's metrics.jsonl; validation figure skipped")
        return None
    datasets = _column_order(datasets)
    grouped = arms(runs)
    by_arm = any(len(members) > 1 for members in grouped.values())
    fig, axes = _new_figure(len(datasets), ncols=3, panel_size=(4.4, 3.2))
    fig.suptitle("Validation EM over training (SAPO Fig. 4)" + (" (bold: mean over seeds; thin: each seed)"
                                                                if by_arm else ""))
    for ax, ds in zip(axes, datasets):
        plotted = 0
        for index, (arm, members) in enumerate(grouped.items()):
            colour = colours[index % len(colours)]
            found = []
            for run in members:
                series_found = series(run, (f"val/{ds}/em",))
                if series_found is None:
                    continue
                _, xs, ys = series_found
                found.append((xs, ys))
                if by_arm:
                    ax.plot(xs, ys, color=colour, linewidth=0.7, alpha=0.45, linestyle=_linestyle(index))
                    continue
                ax.plot(xs, ys, color=colour, label=run.name, marker="o", markersize=3, linestyle=_linestyle(index))
                low, high = series(run, (f"val/{ds}/em_ci_low",)), series(run, (f"val/{ds}/em_ci_high",))
                if low is not None and high is not None and low[1] == high[1]:
                    ax.fill_between(low[1], low[2], high[2], color=colour, alpha=0.15, linewidth=0)
            if not found:
                continue
            plotted += 1
            if by_arm:
                xs, ys = seed_mean(found)
                ax.plot(xs, ys, color=colour, linewidth=2.2, marker="o", markersize=3, linestyle=_linestyle(index),
                        label=f"{arm} ({len(found)} seed{'s' if len(found) > 1 else ''})")
        ax.set_title(_column_title(ds), fontsize=10)
        _style_axes(ax, "EM")
        if plotted:
            ax.legend(fontsize=8)
        else:
            _no_data(ax, "no data")
    return _png_bytes(fig)


# ----------------------------------------------------------------------------------------------------
# Final table
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FinalRow:
    run: str
    per_dataset: dict[str, dict[str, float]]
    macro: dict[str, float]  # "em" (unweighted mean over the run's datasets) and, when known, its CI
    n_datasets: int
    source: str


@dataclass(frozen=True)
class FinalTable:
    datasets: list[str]  # in the papers' column order (NQ, TriviaQA, PopQA, HotpotQA, 2Wiki, Musique, Bamboogle)
    rows: list[FinalRow]


def _column_order(names: list[str]) -> list[str]:
    # local: searchrl.evaluation imports numpy (~0.2 s); `searchrl report --help` must not pay it
    from searchrl.evaluation.report import column_order

    return column_order(names)


def _column_title(name: str) -> str:
    from searchrl.evaluation.report import column_title  # local: see _column_order

    return column_title(name)


def final_table(runs: Sequence[RunData]) -> FinalTable:
    """Every dataset's final EM per run, and the macro average (unweighted mean over the run's datasets).

    The macro CI comes from final_eval.json's `macro` (a stratified bootstrap) when it covers the same EM.
    """
    datasets: list[str] = []
    for run in runs:
        datasets.extend(ds for ds in run.final_eval if ds not in datasets)
    rows = []
    for run in runs:
        ems = [v["em"] for v in run.final_eval.values() if _finite(v.get("em"))]
        macro: dict[str, float] = {"em": sum(ems) / len(ems) if ems else math.nan}
        if run.final_macro and _finite(macro["em"]) and abs(run.final_macro["em"] - macro["em"]) < 1e-9:
            macro.update({k: run.final_macro[k] for k in ("em_ci_low", "em_ci_high") if k in run.final_macro})
        rows.append(FinalRow(run.name, run.final_eval, macro, len(ems), run.final_eval_source))
    return FinalTable(_column_order(datasets), rows)


def _fmt(x: Any, digits: int = 3) -> str:
    return f"{float(x):.{digits}f}" if _finite(x) else "–"


def _em_cell(values: Mapping[str, float] | None, best: float | None) -> str:
    if not values or not _finite(values.get("em")):
        return "–"
    em = float(values["em"])
    text = f"<b>{_fmt(em)}</b>" if best is not None and em == best else _fmt(em)
    if _finite(values.get("em_ci_low")) and _finite(values.get("em_ci_high")):
        text += f" <span class='ci'>[{_fmt(values['em_ci_low'])}, {_fmt(values['em_ci_high'])}]</span>"
    return text


def _final_table_html(table: FinalTable) -> str:
    if not table.datasets:
        return "<p class='note'>No final validation results (final_eval.json or val/&lt;dataset&gt;/em) in any run.</p>"
    def best_of(values: list[Any]) -> float | None:
        """The column's best value, or None when there is nothing to single out (one value, or all tied)."""
        finite = [float(v) for v in values if _finite(v)]
        return max(finite) if len(set(finite)) > 1 else None

    best = {ds: best_of([r.per_dataset.get(ds, {}).get("em") for r in table.rows]) for ds in table.datasets}
    best_macro = best_of([r.macro.get("em") for r in table.rows])
    head = "".join(f"<th>{html.escape(_column_title(ds))}</th>" for ds in table.datasets)
    body = []
    for row in table.rows:
        cells = "".join(f"<td>{_em_cell(row.per_dataset.get(ds), best[ds])}</td>" for ds in table.datasets)
        macro = _em_cell(row.macro, best_macro)
        if _finite(row.macro.get("em")) and row.n_datasets < len(table.datasets):
            macro += f" <span class='ci'>({row.n_datasets} of {len(table.datasets)} datasets)</span>"
        body.append(
            f"<tr><th>{html.escape(row.run)}</th>{cells}<td>{macro}</td>"
            f"<td class='src'>{html.escape(row.source or '–')}</td></tr>"
        )
    return (
        "<table><thead><tr><th>run</th>" + head + "<th>macro avg</th><th>source</th></tr></thead><tbody>"
        + "".join(body) + "</tbody></table>"
        "<p class='note'>Exact match (EM) with its 95 % bootstrap confidence interval in brackets where the run "
        "recorded one; the macro average is the unweighted mean of the datasets' EM; the best value per column "
        "is bold (none when tied).</p>"
    )


# ----------------------------------------------------------------------------------------------------
# Arms over seeds
# ----------------------------------------------------------------------------------------------------

# A run has collapsed at the first step where fewer than this share of its trajectories are well-formed ...
COLLAPSE_FORMAT_BELOW = 0.25
# ... or where a validation EM falls below this fraction of its value at the start of RL.
COLLAPSE_VAL_FRACTION = 0.5


def collapse_step(run: RunData) -> int | None:
    """The first step at which the run collapsed (``COLLAPSE_FORMAT_BELOW``, ``COLLAPSE_VAL_FRACTION``), else None."""
    start: dict[str, float] = {}
    for row in sorted(run.rows, key=lambda r: r["step"]):
        for key, value in row.items():
            match = _VAL_EM.match(key)
            if match and _finite(value) and key not in start:
                start[key] = float(value)
    for row in sorted(run.rows, key=lambda r: r["step"]):
        if row["step"] < 1:
            continue
        fmt = next((row[k] for k in ("diag/format_valid", "env/format_valid") if _finite(row.get(k))), None)
        if fmt is not None and float(fmt) < COLLAPSE_FORMAT_BELOW:
            return int(row["step"])
        for key, first in start.items():
            if _finite(row.get(key)) and first > 0 and float(row[key]) < COLLAPSE_VAL_FRACTION * first:
                return int(row["step"])
    return None


def _val_em(run: RunData, which: str) -> float:
    """The run's mean validation EM over datasets at its first (``"start"``) or last (``"end"``) validation."""
    rows = [r for r in sorted(run.rows, key=lambda r: r["step"]) if any(_VAL_EM.match(k) and _finite(v)
                                                                        for k, v in r.items())]
    if not rows:
        return math.nan
    row = rows[0] if which == "start" else rows[-1]
    values = [float(v) for k, v in row.items() if _VAL_EM.match(k) and _finite(v)]
    return sum(values) / len(values)


def _test_gain(run: RunData) -> tuple[float, float, float, float, float]:
    """(start EM, final EM, paired gain, its CI low, high) on the test split, from summary.json (NaN if absent)."""
    evals, gains = run.summary.get("evals", {}), run.summary.get("gain", {})
    if not isinstance(gains, dict) or not gains:
        return (math.nan,) * 5
    ds = sorted(gains)[0]
    gain = gains[ds] if isinstance(gains[ds], dict) else {}
    start = evals.get("start", {}).get(ds, {}).get("em", math.nan) if isinstance(evals, dict) else math.nan
    final = evals.get("final", {}).get(ds, {}).get("em", math.nan) if isinstance(evals, dict) else math.nan
    return (_as_float(start), _as_float(final), _as_float(gain.get("em_gain")), _as_float(gain.get("ci_low")),
            _as_float(gain.get("ci_high")))


def _spread(values: Sequence[float]) -> str:
    finite = [v for v in values if _finite(v)]
    if not finite:
        return "–"
    mean = sum(finite) / len(finite)
    return _fmt(mean) if len(finite) == 1 else f"{_fmt(mean)} <span class='ci'>[{_fmt(min(finite))}, {_fmt(max(finite))}]</span>"


def study_tables(runs: Sequence[RunData]) -> dict[str, dict[str, dict[str, float]]]:
    """arm -> seed -> d(q) = final − start test EM per question (evals.json), for `seeds.seed_study`."""
    from searchrl.analysis.seeds import paired_differences  # local: numpy (~0.13 s), off `searchrl report --help`

    out: dict[str, dict[str, dict[str, float]]] = {}
    for arm, members in arms(runs).items():
        for run in members:
            table = paired_differences(run.per_question)
            if table is not None:
                out.setdefault(arm, {})[run.seed] = table
    return out


def _interval(summary: Mapping[str, Any], key: str) -> str:
    low, high = summary[key]
    return f"[{_fmt(low)}, {_fmt(high)}]" if _finite(low) else "–"


def _arm_table_html(runs: Sequence[RunData], reference: str | None = None) -> tuple[str, dict[str, Any]]:
    """Per arm over its seeds: validation EM at the start and end of RL, steps to collapse, test EM gain with its
    per-question and seed-level intervals; then each arm against the reference arm, paired within seeds."""
    from searchrl.analysis.seeds import seed_study  # local: numpy (~0.13 s), off `searchrl report --help`

    study = seed_study(study_tables(runs), reference or next(iter(arms(runs)), None))
    body = []
    for arm, members in arms(runs).items():
        gains = [_test_gain(run) for run in members]
        per_seed = "; ".join(
            f"{html.escape(run.name)}: {_fmt(g[2], 3) if _finite(g[2]) else '–'}"
            + (f" [{_fmt(g[3])}, {_fmt(g[4])}]" if _finite(g[3]) else "") for run, g in zip(members, gains)
        )
        s = study["arms"].get(arm)
        mean_text = f"{_fmt(s['mean'])} ({s['seeds']} seeds × {s['questions']} questions)" if s and s["questions"] else "–"
        collapses = ", ".join("–" if c is None else str(c) for c in (collapse_step(run) for run in members))
        body.append(
            f"<tr><th>{html.escape(arm)}</th><td>{len(members)}</td>"
            f"<td>{_spread([_val_em(r, 'start') for r in members])}</td>"
            f"<td>{_spread([_val_em(r, 'end') for r in members])}</td><td>{collapses}</td>"
            f"<td>{_spread([g[0] for g in gains])}</td><td>{_spread([g[1] for g in gains])}</td>"
            f"<td>{mean_text}</td>"
            + "".join(f"<td>{_interval(s, k) if s and s['questions'] else '–'}</td>"
                      for k in ("per_question", "seeds_t", "seeds_and_questions"))
            + f"<td class='src'>{per_seed}</td></tr>"
        )
    versus = []
    for arm, s in study["against_reference"].items():
        if s["questions"]:
            per_seed = ", ".join(_fmt(v) for v in s["per_seed"])
            versus.append(f"<tr><th>{html.escape(arm)} − {html.escape(study['reference'])}</th><td>{_fmt(s['mean'])}</td>"
                          + "".join(f"<td>{_interval(s, k)}</td>" for k in ("per_question", "seeds_t", "seeds_and_questions"))
                          + f"<td class='src'>{per_seed}</td></tr>")
    intervals = "<th>per question</th><th>t over seeds</th><th>seeds and questions</th>"
    out = (
        "<table><thead><tr><th>arm</th><th>seeds</th><th>validation EM, start</th><th>validation EM, end</th>"
        "<th>collapse step per seed</th><th>test EM, start</th><th>test EM, end</th>"
        f"<th>test EM gain, mean over seeds</th>{intervals}"
        "<th>per seed: gain [paired 95 % CI over its questions]</th></tr></thead><tbody>" + "".join(body)
        + "</tbody></table>"
    )
    if versus:
        out += ("<table><thead><tr><th>arm − reference, paired within seeds</th><th>mean gain difference</th>"
                f"{intervals}<th>per seed</th></tr></thead><tbody>" + "".join(versus) + "</tbody></table>")
    return out + (
        "<p class='note'>Mean over seeds with [min, max]. Validation EM: the mean over validation datasets at the "
        "first and the last validation. A run collapsed at the first step where fewer than "
        f"{COLLAPSE_FORMAT_BELOW:.0%} of its trajectories were well-formed or a validation EM fell below "
        f"{COLLAPSE_VAL_FRACTION:.0%} of its start (– = never). The test gain is each seed's paired gain "
        "(final − start on the same questions, evals.json), averaged over seeds, on the questions every seed "
        "scored; its 95 % intervals: a bootstrap over questions (these seeds), a t interval over the seeds' gains "
        "(the run-to-run spread), and a two-level bootstrap over seeds and questions (both). A claim across seeds "
        "rests on the last two. – : the seeds scored different questions, so no paired claim across them.</p>"
    ), study


# ----------------------------------------------------------------------------------------------------
# HTML
# ----------------------------------------------------------------------------------------------------


_CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em auto; max-width: 1150px;
       color: #222; line-height: 1.45; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
thead th { background: #f3f3f3; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
.ci { color: #666; font-size: 0.85em; } .src { color: #666; font-size: 0.85em; }
.note { color: #555; font-size: 0.9em; } .warn { color: #a4000f; }
figure { margin: 1em 0; } figcaption { color: #444; font-size: 0.9em; }
"""


@dataclass(frozen=True)
class ReportResult:
    html: Path
    figures: list[Path]
    notes: list[str]


def default_report_path(run_dirs: Sequence[str | os.PathLike[str]]) -> Path:
    """`<run>/report.html` for one run; `<common parent>/report.html` for several."""
    paths = [Path(p).resolve() for p in run_dirs]
    if len(paths) == 1:
        return paths[0] / "report.html"
    return Path(os.path.commonpath([str(p) for p in paths])) / "report.html"


def write_report(
    run_dirs: Sequence[str | os.PathLike[str]],
    out_html: str | os.PathLike[str] | None = None,
    *,
    title: str | None = None,
    extra_notes: Iterable[str] = (),
    reference: str | None = None,
) -> ReportResult:
    """Write the HTML report for `run_dirs` to `out_html` and PNGs beside it (`<stem>-<figure>.png`); with runs of
    several seeds, also `<stem>-seeds.json`, each arm's gain with its seed-level intervals and each arm against
    `reference` (default: the first arm), paired within seeds (`searchrl.analysis.seeds`).

    Raises DataError when no run folder has any metric row. Runs without data are listed with a note.
    """
    if not run_dirs:
        raise DataError("no run folders given; pass one or more folders written by `searchrl train`")
    paths = [Path(p) for p in run_dirs]
    names = _unique_names(paths)
    runs = [load_run(p, name) for p, name in zip(paths, names)]
    notes: list[str] = list(extra_notes)
    for run in runs:
        notes.extend(run.notes)
    if not any(run.rows for run in runs):
        raise DataError(
            "no metrics found: none of " + ", ".join(str(p / METRICS_FILE) for p in paths)
            + " has a metric row; pass run folders written by `searchrl train`"
        )
    out = Path(out_html) if out_html is not None else default_report_path(paths)
    if out.suffix.lower() not in (".html", ".htm"):
        raise DataError(f"--out {out}: the report is an HTML file; give a path ending in .html")
    check_report_outputs(out, FIGURE_SLUGS)
    plotted = [run for run in runs if run.rows]
    colours = _colours(len(plotted))

    figures: list[tuple[str, str, bytes]] = []  # (slug, caption, png)
    figures.append((
        "collapse",
        "SAPO Fig. 1's four collapse signals, one line per run. In the paper's collapsing GRPO run the "
        "importance-sampling ratio falls toward 0 and the clip fraction spikes while entropy runs away, before "
        "reward collapses. Dotted lines and triangles mark the collapse monitor's warnings (events.jsonl).",
        _plot_panels(plotted, COLLAPSE_PANELS, colours, notes, "Collapse signals (SAPO Fig. 1)", mark_events=True),
    ))
    val_png = _plot_validation(plotted, colours, notes)
    if val_png is not None:
        figures.append(("validation", "Validation EM per dataset over training steps (SAPO Fig. 4); shaded: "
                        "bootstrap 95 % CI where logged.", val_png))
    figures.append((
        "lld",
        "Lazy likelihood displacement (LLDS Figs. 2, 9a): mean per-token log-likelihood under the rollout policy "
        "of positive- and negative-advantage trajectories (each step's own samples), and of a fixed probe set "
        "of correct trajectories, the same every step (`log.probe_trajectories`). LLDS reports a falling positive "
        "curve before GRPO collapses.",
        _plot_panels(plotted, LLD_PANELS, colours, notes, "Likelihood of positive and negative trajectories"),
    ))
    figures.append((
        "behaviour",
        "Search behaviour: searches per question (LLDS Fig. 9b), valid-format rate, response length and the "
        "share of garbled turns (perplexity >= 50 under the rollout policy, CalibAdv).",
        _plot_panels(plotted, BEHAVIOUR_PANELS, colours, notes, "Search behaviour"),
    ))
    figures.append((
        "ratio",
        "Importance ratio by turn kind and SAPO's drift: Proposition 1 predicts the drift concentrates on the "
        "search-action tokens, and the 5th percentile falls before the mean does. ISDD as SAPO measures it: the "
        "share of advantage >= 0 tokens whose ratio fell below 1 - eps, and their mean ratio.",
        _plot_panels(plotted, RATIO_PANELS, colours, notes, "Importance ratio detail (SAPO Prop. 1)"),
    ))

    figure_paths: list[Path] = []
    for slug, _, png in figures:
        fig_path = out.with_name(f"{out.stem}-{slug}.png")
        atomic_write_bytes(fig_path, png)
        figure_paths.append(fig_path)

    arm_html = ""
    if any(run.summary for run in runs) or any(len(m) > 1 for m in arms(runs).values()):
        table_html, study = _arm_table_html(runs, reference)
        arm_html = "<h2>Arms over seeds</h2>" + table_html
        if any(len(m) > 1 for m in arms(runs).values()):
            seeds_path = out.with_name(f"{out.stem}-seeds.json")
            atomic_write_bytes(seeds_path, (json.dumps(study, indent=1, default=float) + "\n").encode("utf-8"))
    page = _render_html(runs, figures, final_table(runs), notes, title or _default_title(runs), arm_html)
    atomic_write_bytes(out, page.encode("utf-8"))
    return ReportResult(html=out, figures=figure_paths, notes=notes)


REPORT_SIGNATURE = "by <code>searchrl report</code>"  # in every report's footer: how a rerun recognises its own page
FIGURE_SLUGS = ("collapse", "validation", "lld", "behaviour", "ratio", "seeds")


def is_report_file(path: Path) -> bool:
    """Whether `path` is an HTML page `searchrl report` wrote (its footer's signature)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return REPORT_SIGNATURE in fh.read(4 * 1024 * 1024)
    except OSError:
        return False


def check_report_outputs(out: Path, slugs: Sequence[str]) -> None:
    """Before anything is written: the report replaces its own page and the files beside it (`<stem>-<slug>.png`,
    `<stem>-seeds.json`) only; a file of that name that another program wrote is never replaced."""
    check_output_path(out, "--out", ours=is_report_file, overwrite=True, kind="searchrl report page")
    ours = out.is_file() and is_report_file(out)
    for slug in slugs:
        beside = out.with_name(f"{out.stem}-{slug}.{'json' if slug == 'seeds' else 'png'}")
        check_output_path(beside, "--out", ours=lambda p: ours, overwrite=True, writable=False,
                          kind=f"figure of the searchrl report {out.name}")


def _default_title(runs: Sequence[RunData]) -> str:
    labels = sorted({run.algorithm for run in runs if run.algorithm})
    return "searchrl report: " + (" vs ".join(labels) if labels else ", ".join(run.name for run in runs))


def _render_html(
    runs: Sequence[RunData], figures: Sequence[tuple[str, str, bytes]], table: FinalTable, notes: Sequence[str],
    title: str, arm_html: str = "",
) -> str:
    run_rows = []
    for run in runs:
        steps = run.steps()
        status = "no metrics" if not run.rows else f"{len(run.rows)} rows, steps {min(steps)}–{max(steps)}"
        warn = f"<span class='warn'>{len(run.events)}</span>" if run.events else "0"
        run_rows.append(
            f"<tr><th>{html.escape(run.name)}</th><td>{html.escape(run.algorithm or '–')}</td>"
            f"<td>{html.escape(status)}</td><td>{warn}</td><td class='src'>{html.escape(str(run.path))}</td></tr>"
        )
    figure_html = []
    for slug, caption, png in figures:
        data = base64.b64encode(png).decode("ascii")
        figure_html.append(
            f"<figure id='fig-{slug}'><img alt='{html.escape(slug)} figure' src='data:image/png;base64,{data}'>"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
    event_rows = []
    for run in runs:
        for event in run.events:
            event_rows.append(
                f"<tr><td>{html.escape(run.name)}</td><td>{html.escape(str(event.get('step', '?')))}</td>"
                f"<td>{html.escape(str(event.get('rule', '?')))}</td><td>{html.escape(str(event.get('action', '')))}</td>"
                f"<td>{html.escape(str(event.get('message', '')))}</td></tr>"
            )
    events_html = (
        "<table><thead><tr><th>run</th><th>step</th><th>rule</th><th>action</th><th>message</th></tr></thead><tbody>"
        + "".join(event_rows) + "</tbody></table>"
        if event_rows else "<p class='note'>No collapse warnings in any run.</p>"
    )
    unique_notes = list(dict.fromkeys(notes))
    notes_html = (
        "<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in unique_notes) + "</ul>"
        if unique_notes else "<p class='note'>None.</p>"
    )
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
<p class="note">Generated {generated} {REPORT_SIGNATURE}. Metric definitions: docs/metrics.md.</p>
<h2>Runs</h2>
<table><thead><tr><th>run</th><th>algorithm</th><th>metrics</th><th>warnings</th><th>folder</th></tr></thead>
<tbody>{''.join(run_rows)}</tbody></table>
{arm_html}<h2>Final evaluation</h2>
{_final_table_html(table)}
<h2>Figures</h2>
{''.join(figure_html)}
<h2>Collapse warnings</h2>
{events_html}
<h2>Notes</h2>
{notes_html}
</body>
</html>
"""
