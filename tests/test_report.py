"""`searchrl report` on synthetic run folders: HTML + PNGs, robustness to missing data, and a headless browser."""

from __future__ import annotations

import base64
import io
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image, ImageChops

from searchrl.cli import main as cli_main
from searchrl.errors import DataError
from searchrl.analysis.report import (
    COLLAPSE_PANELS,
    ReportResult,
    _colours,
    _final_table_html,
    _plot_panels,
    default_report_path,
    final_table,
    load_run,
    parse_final_eval,
    write_report,
)

NAN = float("nan")


def write_run(
    folder: Path, *, steps: int = 30, collapse_at: int | None = None, final_eval: dict | None = None,
    events: list[dict] | None = None, diag: bool = True, val_every: int = 10,
) -> Path:
    """A run folder as the trainer writes it (docs/metrics.md), with a GRPO-like collapse if asked."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for step in range(1, steps + 1):
        collapsed = collapse_at is not None and step >= collapse_at
        row = {
            "step": step,
            "reward/mean": 0.05 if collapsed else 0.1 + 0.01 * step,
            "actor/pg_loss": 0.01,
            "actor/is_ratio_mean": 0.2 if collapsed else 1.0,
            "actor/clip_frac": 0.3 if collapsed else 0.01,
            "actor/entropy": 1.0 + (0.1 * step if collapse_at else 0.0),
            "env/searches_mean": 1.0 + 0.02 * step,
            "env/format_valid": 0.8,
            "response/length_mean": 120.0 + step,
        }
        if diag:
            row.update({
                "diag/is_ratio_mean": row["actor/is_ratio_mean"],
                "diag/clip_frac": row["actor/clip_frac"],
                "diag/entropy": row["actor/entropy"],
                "diag/ll_pos": -0.4 - (0.03 * step if collapse_at else 0.0),
                "diag/ll_neg": -1.1,
                "diag/garbled_rate": NAN,  # a documented key that never applied
                "diag/is_ratio_mean/search": 0.9, "diag/is_ratio_mean/answer": 1.0,
                "diag/is_ratio_p05": 0.6, "diag/log_ratio_drift": -0.02,
            })
        for ds in ("nq", "hotpotqa"):
            on_val = step % val_every == 0
            row[f"val/{ds}/em"] = 0.2 + 0.004 * step if on_val else NAN
            row[f"val/{ds}/em_ci_low"] = 0.17 + 0.004 * step if on_val else NAN
            row[f"val/{ds}/em_ci_high"] = 0.23 + 0.004 * step if on_val else NAN
        lines.append(json.dumps(row))  # NaN is written as the JSON token NaN, as the trainer does
    (folder / "metrics.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if events:
        (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    if final_eval is not None:
        (folder / "final_eval.json").write_text(json.dumps(final_eval), encoding="utf-8")
    return folder


EVENT = {"step": 22, "rule": "is_ratio_low", "message": "collapse warning [is_ratio_low] at step 22",
         "metric": "diag/is_ratio_mean", "value": 0.2, "threshold": 0.5, "action": "warn"}
FINAL = {"step": 30, "datasets": {"nq": {"em": 0.412, "em_ci_low": 0.381, "em_ci_high": 0.443, "n": 500},
                                  "hotpotqa": {"em": 0.301, "em_ci_low": 0.27, "em_ci_high": 0.33, "n": 500}}}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("runs")
    grpo = write_run(root / "grpo-s0", collapse_at=20, events=[EVENT])
    sapo = write_run(root / "sapo-s0", final_eval=FINAL)
    (grpo / "config.yaml").write_text("algorithm:\n  name: grpo\nseed: 0\n", encoding="utf-8")
    return [grpo, sapo]


@pytest.fixture(scope="module")
def report(two_runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> ReportResult:
    """The two-run report, rendered once for the tests that only read it (figures cost CPU)."""
    return write_report(two_runs, tmp_path_factory.mktemp("out") / "report.html")


def decode_png(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def assert_real_figure(image: Image.Image) -> None:
    assert image.width >= 400 and image.height >= 250
    colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
    assert colours is not None and len(colours) > 20, "figure is (nearly) a single colour"


def test_report_writes_html_and_figures(report: ReportResult) -> None:
    result, out = report, report.html
    assert out.name == "report.html" and out.is_file()
    slugs = [p.name for p in result.figures]
    assert slugs == ["report-collapse.png", "report-validation.png", "report-lld.png", "report-behaviour.png",
                     "report-ratio.png"]
    page = out.read_text(encoding="utf-8")
    embedded = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert len(embedded) == len(result.figures)
    for data, path in zip(embedded, result.figures):
        assert base64.b64decode(data) == path.read_bytes()  # the page embeds exactly the files beside it
        assert_real_figure(decode_png(path.read_bytes()))
    # Self-contained: no external resource, no script.
    assert not re.search(r"(src|href)\s*=\s*['\"]?(https?:)?//", page)
    assert "<script" not in page.lower()
    # Final table: final_eval.json for sapo (preferred), the last val row of metrics.jsonl for grpo.
    assert "0.412" in page and "[0.381, 0.443]" in page and "final_eval.json" in page
    assert "metrics.jsonl step 30" in page
    assert f"{(0.412 + 0.301) / 2:.3f}" in page  # sapo's macro average
    assert f"{0.2 + 0.004 * 30:.3f}" in page  # grpo's last validation EM (nq and hotpotqa)
    # Runs table and warnings.
    assert "grpo-s0" in page and "sapo-s0" in page and ">grpo<" in page
    assert "collapse warning [is_ratio_low] at step 22" in page
    assert "searchrl report: grpo" in page  # title from the algorithms found


def test_final_table_prefers_final_eval_json(two_runs: list[Path]) -> None:
    runs = [load_run(p) for p in two_runs]
    assert runs[1].final_eval_source == "final_eval.json"
    assert runs[0].final_eval_source == "metrics.jsonl step 30"
    table = final_table(runs)
    assert table.datasets == ["nq", "hotpotqa"]
    sapo = table.rows[1]
    assert sapo.run == "sapo-s0" and sapo.per_dataset["nq"]["em"] == 0.412 and sapo.n_datasets == 2
    assert sapo.macro == {"em": pytest.approx(0.3565)}  # no macro CI in this final_eval.json
    assert table.rows[0].per_dataset["nq"]["em_ci_low"] == pytest.approx(0.17 + 0.004 * 30)


def test_final_eval_written_by_the_evaluation_harness(tmp_path: Path) -> None:
    """EvalReport.to_dict(): per-dataset numbers plus text and counts, and a macro with a stratified CI."""
    payload = {
        "datasets": {
            "hotpotqa": {"n": 200, "em": 0.25, "em_ci_low": 0.19, "em_ci_high": 0.31, "f1": 0.33,
                         "sample": "stratified 200 of 7405", "finish_reasons": {"answer": 190, "max_turns": 10}},
            "nq": {"n": 200, "em": 0.35, "em_ci_low": 0.29, "em_ci_high": 0.41, "f1": None},
        },
        "macro": {"datasets": 2, "n": 400, "em": 0.30, "em_ci_low": 0.26, "em_ci_high": 0.34},
        "settings": {"model": "x"}, "timing": {"total_s": 1.0},
    }
    run = write_run(tmp_path / "llds-s0", steps=4, final_eval=payload)
    data = load_run(run)
    assert set(data.final_eval) == {"nq", "hotpotqa"} and "sample" not in data.final_eval["hotpotqa"]
    assert math.isnan(data.final_eval["nq"]["f1"])
    table = final_table([data])
    assert table.datasets == ["nq", "hotpotqa"]  # the papers' column order, whatever the file's order
    assert table.rows[0].macro == {"em": pytest.approx(0.30), "em_ci_low": 0.26, "em_ci_high": 0.34}
    page = _final_table_html(table)
    assert "0.300 <span class='ci'>[0.260, 0.340]</span>" in page
    assert page.index(">NQ<") < page.index(">HotpotQA<")


def test_events_are_drawn_on_the_curves(tmp_path: Path) -> None:
    with_events = load_run(write_run(tmp_path / "a" / "grpo-s0", collapse_at=20, events=[EVENT]))
    without = load_run(write_run(tmp_path / "b" / "grpo-s0", collapse_at=20))
    colours = _colours(1)
    png_with = _plot_panels([with_events], COLLAPSE_PANELS, colours, [], "t", mark_events=True)
    png_without = _plot_panels([without], COLLAPSE_PANELS, colours, [], "t", mark_events=True)
    a, b = decode_png(png_with).convert("RGB"), decode_png(png_without).convert("RGB")
    assert a.size == b.size
    diff = ImageChops.difference(a, b).convert("L").point(lambda v: 255 if v else 0)
    differing = diff.histogram()[255]
    assert differing > 200  # the marker, its label and the dotted lines


def test_missing_keys_and_nan_do_not_crash(tmp_path: Path) -> None:
    bare = write_run(tmp_path / "bare", diag=False, val_every=10**6)  # no diag/*, no validation at all
    empty = tmp_path / "failed-run"
    empty.mkdir()
    result = write_report([bare, empty], tmp_path / "r.html")
    page = result.html.read_text(encoding="utf-8")
    notes = "\n".join(result.notes)
    assert "diag/ll_pos" in notes and "curve skipped" in notes
    assert "no validation EM" in notes
    assert "failed-run: no metrics.jsonl" in notes
    assert "No final validation results" in page
    # The collapse panel still uses the trainer's actor/* keys.
    assert not any("actor/is_ratio_mean" in n and "bare" in n for n in result.notes)
    for path in result.figures:
        decode_png(path.read_bytes())


def test_truncated_last_line_is_skipped_but_a_bad_line_is_an_error(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", steps=5)
    with open(run / "metrics.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"step": 6, "reward/me')  # a run still writing
    data = load_run(run)
    assert len(data.rows) == 5 and any("line 6 is incomplete" in n for n in data.notes)
    lines = (run / "metrics.jsonl").read_text().splitlines()
    lines.insert(2, "not json")
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"metrics\.jsonl, line 3: not valid JSON"):
        load_run(run)


def test_errors_for_unusable_inputs(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not a directory"):
        write_report([tmp_path / "nope"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no metrics found"):
        write_report([tmp_path / "empty"])
    run = write_run(tmp_path / "run", steps=3)
    with pytest.raises(DataError, match="ends in .html|ending in .html"):
        write_report([run], tmp_path / "report.pdf")
    (run / "final_eval.json").write_text("{broken")
    with pytest.raises(DataError, match="final_eval.json: not valid JSON"):
        load_run(run)


def test_parse_final_eval_accepts_the_documented_shapes() -> None:
    nested = parse_final_eval({"datasets": {"nq": {"em": 0.4, "em_ci_low": 0.3, "em_ci_high": 0.5}}}, "x")
    by_name = parse_final_eval({"nq": {"em": 0.4, "em_ci_low": 0.3, "em_ci_high": 0.5}, "step": 3}, "x")
    flat = parse_final_eval({"val/nq/em": 0.4, "val/nq/em_ci_low": 0.3, "val/nq/em_ci_high": 0.5, "step": 3}, "x")
    assert nested == by_name == flat == {"nq": {"em": 0.4, "em_ci_low": 0.3, "em_ci_high": 0.5}}
    assert math.isnan(parse_final_eval({"nq/em": None}, "x")["nq"]["em"])  # null EM: kept, shown as "–"
    with pytest.raises(DataError):
        parse_final_eval([1, 2], "final_eval.json")


def test_cli_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "runs" / "grpo-s0", steps=4)
    assert cli_main(["report", str(run)]) == 0  # default: RUN_DIR/report.html, PNGs beside it
    assert (run / "report.html").is_file() and (run / "report-collapse.png").is_file()
    assert f"report: {run / 'report.html'}" in capsys.readouterr().out
    assert cli_main(["report", str(tmp_path / "missing")]) == 2
    assert "not a directory" in capsys.readouterr().err
    runs = [tmp_path / "runs" / "grpo-s0", tmp_path / "runs" / "sapo-s0"]
    assert default_report_path(runs) == (tmp_path / "runs" / "report.html").resolve()


CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)

# Appended to a COPY of the report (the product has no JavaScript): records whether every image decoded.
_IMAGE_PROBE = """<script>
window.addEventListener('load', () => {
  const imgs = Array.from(document.images);
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  document.body.setAttribute('data-images', ok + '/' + imgs.length);
});
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (Debian: apt-get install -y chromium)")
def test_report_loads_in_headless_chromium(report: ReportResult, tmp_path: Path) -> None:
    result = report
    # 1) The report as written: no console errors.
    # 2) A probed copy: every embedded image decodes in the browser with a non-zero size.
    probed = tmp_path / "probed.html"
    probed.write_text(result.html.read_text(encoding="utf-8").replace("</body>", _IMAGE_PROBE + "</body>"))
    for page in (result.html, probed):
        proc = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
             f"--user-data-dir={tmp_path / 'chrome-profile'}", "--virtual-time-budget=5000", "--dump-dom",
             page.as_uri()],
            capture_output=True, text=True, timeout=90,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line]
        assert console == [], console
        assert "Collapse warnings" in proc.stdout
    n = len(result.figures)
    assert f'data-images="{n}/{n}"' in proc.stdout


def test_moving_average_is_a_trailing_mean_over_the_raw_points() -> None:
    from searchrl.analysis.report import moving_average

    assert moving_average([1.0, 3.0, 5.0, 7.0]) == [1.0, 2.0, 3.0, 5.0]
    assert moving_average([2.0, 4.0], window=1) == [2.0, 4.0]
    with pytest.raises(ValueError, match="window"):
        moving_average([1.0], window=0)


# ------------------------------------------------------------------------------------------- arms over seeds


def _study_run(folder: Path, formats: list[float], val: dict[int, float], start_q: dict[str, float],
               final_q: dict[str, float]) -> Path:
    """A run folder with per-step format rates, validation EM at some steps, summary.json and evals.json."""
    folder.mkdir(parents=True)
    rows = [{"step": s, "diag/format_valid": f, "reward/mean": f / 2, "val/world/em": val.get(s, NAN)}
            for s, f in enumerate(formats, start=1)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    start, final = sum(start_q.values()) / len(start_q), sum(final_q.values()) / len(final_q)
    summary = {"val": {"start": {"world": {"em": val[0]}}},
               "evals": {"start": {"world": {"em": start}}, "final": {"world": {"em": final}}},
               "gain": {"world": {"em_gain": final - start, "ci_low": -1.0, "ci_high": 1.0}}}
    (folder / "summary.json").write_text(json.dumps(summary))
    evals = {"start": {"per_question_em": {"world": start_q}}, "final": {"per_question_em": {"world": final_q}}}
    (folder / "evals.json").write_text(json.dumps(evals))
    return folder


def test_arms_pool_seeds_collapse_steps_and_the_start_validation(tmp_path: Path) -> None:
    from searchrl.analysis.report import arms, collapse_step, study_tables
    from searchrl.analysis.seeds import seed_study

    qs = [f"q{i}" for i in range(40)]
    start = {q: float(i % 2) for i, q in enumerate(qs)}  # EM 0.5 at the start, the same model for every seed
    better = {q: 1.0 if i % 4 == 0 else start[q] for i, q in enumerate(qs)}  # 10 questions gained: +0.25
    same = dict(start)
    a = _study_run(tmp_path / "grpo-s0", [0.8, 0.1, 0.9], {0: 0.6, 3: 0.5}, start, same)
    b = _study_run(tmp_path / "grpo-s1", [0.8, 0.7, 0.9], {0: 0.6, 3: 0.2}, start, better)
    c = _study_run(tmp_path / "sapo-s0", [0.8, 0.7, 0.9], {0: 0.6, 3: 0.6}, start, better)
    d = _study_run(tmp_path / "sapo-s1", [0.8, 0.7, 0.9], {0: 0.6, 3: 0.6}, start, better)
    runs = [load_run(p) for p in (a, b, c, d)]
    assert list(arms(runs)) == ["grpo", "sapo"] and [r.name for r in arms(runs)["grpo"]] == ["grpo-s0", "grpo-s1"]
    # the start-of-RL validation (summary.json val.start) becomes the curve's step 0
    assert runs[0].rows[0] == {"step": 0, "val/world/em": 0.6}
    # format below 25 % at step 2; validation EM below half its start at step 3; never
    assert [collapse_step(r) for r in runs] == [2, 3, None, None]
    study = seed_study(study_tables(runs), "grpo")
    grpo, sapo = study["arms"]["grpo"], study["arms"]["sapo"]
    assert grpo["seeds"] == 2 and grpo["questions"] == 40 and grpo["mean"] == pytest.approx(0.125)  # (0 + 0.25) / 2
    assert grpo["per_seed"] == pytest.approx([0.0, 0.25])
    # t over two seeds, 0 and 0.25: 0.125 ± 12.706 · 0.1768 / √2 = 0.125 ± 1.588: wide, as two seeds are
    assert grpo["seeds_t"] == pytest.approx([0.125 - 12.706 * 0.125, 0.125 + 12.706 * 0.125], rel=1e-3)
    assert grpo["per_question"][0] <= 0.125 <= grpo["per_question"][1]
    assert sapo["mean"] == pytest.approx(0.25) and sapo["per_question"][0] > 0  # every changed question gained
    assert math.isnan(sapo["seeds_t"][0]) is False and sapo["seeds_t"] == pytest.approx([0.25, 0.25])  # no spread
    versus = study["against_reference"]["sapo"]
    assert versus["mean"] == pytest.approx(0.125) and versus["per_seed"] == pytest.approx([0.25, 0.0])
    result = write_report([a, b, c, d], tmp_path / "report.html")
    page = result.html.read_text()
    assert "Arms over seeds" in page and "grpo (2 seeds)" not in page  # legends live in the PNGs
    assert "0.125" in page and "sapo − grpo" in page
    assert json.loads((tmp_path / "report-seeds.json").read_text())["arms"]["grpo"]["mean"] == pytest.approx(0.125)


def test_no_paired_claim_across_seeds_that_scored_different_questions(tmp_path: Path) -> None:
    """Every seed of a study is scored on the same questions (val.sample_seed); runs whose seeds scored different
    samples get no seed-level claim: only the questions all seeds share count, and with none it says so."""
    from searchrl.analysis.report import study_tables
    from searchrl.analysis.seeds import seed_study

    def run(name: str, qs: list[str], gained: int) -> Path:
        start = {q: 0.0 for q in qs}
        final = {q: 1.0 if i < gained else 0.0 for i, q in enumerate(qs)}
        return _study_run(tmp_path / name, [0.8, 0.8, 0.8], {0: 0.5, 3: 0.5}, start, final)

    a = run("llds-s0", [f"a{i}" for i in range(40)], 20)  # +0.5 on its own 40 questions, the first 20 gained
    b = run("llds-s1", [f"a{i}" for i in range(10)] + [f"b{i}" for i in range(30)], 0)  # 10 shared
    c = run("llds-s2", [f"b{i}" for i in range(40)], 0)  # nothing in common with llds-s0
    two = seed_study(study_tables([load_run(a), load_run(b)]))["arms"]["llds"]
    assert two["questions"] == 10 and two["per_seed"] == pytest.approx([1.0, 0.0])  # a0..a9: gained, not gained
    none = seed_study(study_tables([load_run(a), load_run(c)]))["arms"]["llds"]
    assert none["questions"] == 0 and math.isnan(none["mean"])
    page = write_report([a, c], tmp_path / "report.html").html.read_text()
    assert "no paired claim across them" in page

def test_by_updates_reads_runs_of_different_update_counts_on_one_axis(tmp_path: Path) -> None:
    """examples/by_updates.py: the committed collapse-study GRPO seed-0 run (64 trajectories and 16 updates a step)
    collapses at step 2: the rollout after its first 16 updates; an on-policy run of 8 trajectories a step counts only the updates that
    moved the weights (a step whose gradient was all zero takes none), and its rates are read over 64 trajectories
    (8 steps), so one bad step of 8 trajectories is no collapse. A folder without config.yaml is a named error."""
    import sys

    root = Path(__file__).resolve().parents[1]
    script = root / "examples" / "by_updates.py"
    onpolicy = tmp_path / "grpo-onpolicy-s0"
    onpolicy.mkdir()
    (onpolicy / "config.yaml").write_text("train:\n  batch_size: 1\n  group_size: 8\n")
    rows = [{"step": s, "actor/updates": 1.0, "actor/zero_grad_updates": float(s % 2 == 0), "train/dead_step": float(s % 2 == 0),
             "env/answered": 0.0 if s == 9 else 0.875, "diag/format_valid": 0.75, "diag/entropy": 1.0} for s in range(1, 17)]
    (onpolicy / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out, table = tmp_path / "fig.png", tmp_path / "table.md"
    done = subprocess.run([sys.executable, str(script), str(root / "results" / "collapse" / "grpo-s0"), str(onpolicy),
                           "--out", str(out), "--table", str(table)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in table.read_text().splitlines()[2:]}
    assert lines["grpo-s0"][3:6] == ["192", "0", "2 (16)"]  # trained before updates were skipped: all 192 count
    # 8 of 16 steps took an update; 8 were dead; step 9's 0/8 answered is one eighth of its 64-trajectory window
    assert lines["grpo-onpolicy-s0"][1:6] == ["8", "16", "8", "8", "–"]
    assert float(lines["grpo-onpolicy-s0"][6]) == pytest.approx(0.875 * 7 / 8, abs=0.005)
    assert Image.open(out).size[0] > 500

    (onpolicy / "config.yaml").unlink()
    done = subprocess.run([sys.executable, str(script), str(onpolicy), "--out", str(tmp_path / "x.png")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and f"{onpolicy / 'config.yaml'}" in done.stderr and not (tmp_path / "x.png").exists()
