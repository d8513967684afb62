"""A run's lifecycle: creating, resuming, interrupting and finishing a run folder, and its summary.

    train(cfg)            searchrl train
      lock run.dir; validate it (a fresh run never replaces what is not a run; a resume cleans a killed save)
      build the trainer (loop.build): data, model, ...   everything that can fail on bad input, before any write
      check that the run's weights fit on the disk (check_free_space)
      fresh: create the folder; untrained evaluation, warm start, start-of-RL evaluations, checkpoint 0
      resume: restore the newest intact checkpoint
      loop.fit: the RL steps
      finish: the final evaluations, final_model/, final_eval.json, evals.json, summary.json, the summary table

Signals: SIGINT (Ctrl-C) and SIGTERM (what `timeout`, `docker stop` and schedulers send) stop the run cleanly.
While no weight of the step in flight has moved, the step is abandoned at once; from its first optimiser update
on, the step is finished. Either way a checkpoint of the last completed step is written, the run says how to
resume, and the command exits non-zero (130 for SIGINT, 143 for SIGTERM). A second signal stops at once (the last
checkpoint stays).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.table import Table

from searchrl.errors import SearchRLError
from searchrl.evaluation.bootstrap import gain_verdict, paired_gain
from searchrl.fileio import atomic_write_json, check_writable
from searchrl.models import CHECKPOINTS, cache_dir, checkpoint_dir, saved_parameters
from searchrl.training.checkpoint import (
    CheckpointWriteError,
    best_checkpoint,
    clean_partial,
    complete_checkpoints,
    is_complete,
    latest_checkpoint,
    load_checkpoint,
    mark_best,
)
from searchrl.training.config import Config, save_config
from searchrl.training.logger import EVENTS_FILE, METRICS_FILE, truncate_jsonl
from searchrl.training.loop import build, fit
from searchrl.training.policy import ExportWriteError, export_policy, trainable_layers
from searchrl.training.sft import examples_needed, oracle_trajectories, read_trajectories, run_sft
from searchrl.training.state import (
    RunInterrupted,
    Trainer,
    TrainerState,
    record_validation,
    save,
    val_metrics,
    validate,
    validation_score,
)

START_MODEL = "start_model"  # the policy at the start of RL (after any warm start), exported like final_model/
FINAL_MODEL = "final_model"
RUN_MARKER = ".searchrl-run"  # written into every run folder it creates: the only folders run.overwrite replaces
CONFIG_FILE = "config.yaml"
SUMMARY_FILE = "summary.json"
# Errors of writing to the run folder (a full disk, a read-only folder), reported as messages, not tracebacks.
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


# ============================================================================================ train


def train(cfg: Config, *, resume: bool = False, console: bool = True,
          clock: Callable[[], float] | None = None) -> dict[str, Any]:
    """Run (or resume) a training run; returns the run summary (also written to summary.json).

    The run folder is locked while this process owns it, and it is not written before the data, retriever, model
    and (when resuming) checkpoint are loaded and accepted, so a refused start leaves it as it was. A fresh run
    refuses a run folder that already has checkpoints unless `run.overwrite` is set, and never replaces a folder
    that is not a searchrl run; a fresh run that fails before its first checkpoint leaves nothing behind. Resuming
    restores the newest intact checkpoint and cuts metrics.jsonl and events.jsonl back to its step; resuming a
    finished run only says where its summary is. `clock` replaces `time.perf_counter` for the time budget.
    """
    run_dir = run_folder(cfg)
    check_writable(_nearest_existing(run_dir), "run.dir", folder=True)
    with run_lock(run_dir):
        replace = False
        if resume:
            clean_partial(run_dir)
            skipped: list[tuple[Path, str]] = []
            latest = latest_checkpoint(run_dir, skipped=skipped)
            for folder, why in skipped:  # newer checkpoints that did not verify (a truncated file, a bad hash)
                print(f"searchrl train: skipping {folder.name}: {why}", file=sys.stderr)
            if latest is None and skipped:
                raise SearchRLError(
                    f"{run_dir}: no intact checkpoint to resume from ({len(skipped)} damaged, named above); "
                    f"start it afresh with `searchrl train --config {run_dir / CONFIG_FILE} run.overwrite=true`"
                )
            if latest is None:
                raise SearchRLError(
                    f"{run_dir}: no checkpoint to resume from (the run stopped before its first one); "
                    f"start it afresh with `searchrl train --config {run_dir / CONFIG_FILE}`"
                )
            finished = _finished_summary(run_dir, latest, cfg)
            if finished is not None:
                return finished
        else:
            replace = _check_new_run_folder(cfg, run_dir)

        t = build(cfg, run_dir, console=console, clock=clock)  # everything that can fail on bad input
        folder = _restore(t) if resume else None
        check_free_space(t)
        t.logger.set_start_step(t.state.step)
        created = next((p for p in reversed([run_dir, *run_dir.parents]) if not p.exists()), None)
        try:
            with _stop_signals(t):
                if not resume:
                    _create_run_folder(cfg, run_dir, replace=replace)
                with t.logger:
                    if folder is not None:
                        t.print(f"Resuming {run_dir} from step {t.state.step} ({folder.name}) on {t.device}")
                    else:
                        _start(t)
                    fit(t)
                    return _finish(t)
        except KeyboardInterrupt:
            _on_interrupt(t)
            raise
        except (CheckpointWriteError, ExportWriteError, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno not in _WRITE_ERRNOS:
                raise
            what = str(exc) if not isinstance(exc, OSError) else f"cannot write {exc.filename or run_dir} ({exc.strerror})"
            then = "nothing was kept; start the run again"
            if latest_checkpoint(run_dir) is not None:
                then = (f"the checkpoints in {run_dir} are intact: free disk space or fix the permissions, then "
                        f"resume with `searchrl train --resume {run_dir}`")
            raise SearchRLError(f"{what}; {then}") from exc
        finally:
            if not resume and not complete_checkpoints(run_dir):  # the run never started: leave nothing behind
                if created is not None:
                    shutil.rmtree(created, ignore_errors=True)
                else:
                    _empty_folder(run_dir)


def disk_needed(t: Trainer) -> dict[str, int]:
    """Bytes a run's weights take on disk at their peak, by part: the model folders (start_model/, final_model/)
    and the checkpoints alive at once (step 0, the last `checkpoint.keep_last`, the best, and the one being
    written). A checkpoint holds the saved weights (`saved_parameters`) and AdamW's two moments of the trained
    ones; step 0's has no moments yet. Logs, metrics and samples are small beside these and not counted."""
    cfg = t.cfg
    model_bytes = _bytes({p.data_ptr(): p for p in t.model.parameters()}.values())  # tied weights are saved once
    saved_params = saved_parameters(t.model).values()
    saved = _bytes(saved_params)
    moments = 2 * _bytes(p for p in saved_params if p.requires_grad)
    alive = cfg.checkpoint.keep_last + 1 + int(cfg.checkpoint.keep_best)
    return {
        "model folders": 2 * model_bytes if cfg.checkpoint.export_final else 0,
        "checkpoints": saved + alive * (saved + moments),
    }


def check_free_space(t: Trainer) -> None:
    """Refuse, before anything is written, a run whose weights would not fit on the run folder's disk
    (`disk_needed`, less what the run folder holds already: a resumed run's own files, or the old run that
    `run.overwrite` replaces), rather than fail on a full disk halfway through."""
    run_dir = t.run_dir
    have = sum(f.stat().st_size for f in run_dir.rglob("*") if f.is_file()) if run_dir.is_dir() else 0
    parts = disk_needed(t)
    need = sum(parts.values()) - have
    free = shutil.disk_usage(_nearest_existing(run_dir)).free
    if need > free:
        detail = ", ".join(f"{name} {n / 1e9:.2f} GB" for name, n in parts.items() if n)
        raise SearchRLError(
            f"run.dir {run_dir}: this run's weights need about {need / 1e9:.2f} GB more disk space ({detail}) and its "
            f"disk has {free / 1e9:.2f} GB free; free some space, pick a run.dir on another disk, or keep fewer "
            "weights (checkpoint.keep_last=1, checkpoint.keep_best=false, checkpoint.export_final=false)"
        )


def _bytes(params) -> int:
    return sum(p.numel() * p.element_size() for p in params)


def _nearest_existing(path: Path) -> Path:
    """`path` or its closest existing parent (the folder a new run.dir will be created in)."""
    return next(p for p in [path, *path.parents] if p.exists() or p == p.parent)


def run_folder(cfg: Config) -> Path:
    """`run.dir`, or runs/<name>-<algorithm>-seed<seed>."""
    if cfg.run.dir:
        return Path(cfg.run.dir).expanduser()
    return Path("runs") / f"{cfg.run.name}-{cfg.algorithm.get('name', 'algo')}-seed{cfg.seed}"


def is_run_folder(path: Path) -> bool:
    """Whether `path` holds a searchrl run: its marker file, or (a run from before the marker) config.yaml next to
    checkpoints/ or metrics.jsonl."""
    path = Path(path)
    if (path / RUN_MARKER).is_file():
        return True
    return (path / CONFIG_FILE).is_file() and ((path / CHECKPOINTS).is_dir() or (path / METRICS_FILE).is_file())


@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on `run_dir` while the block runs; a second process that asks for it is refused.

    The lock is a file in the searchrl cache named after the folder's absolute path (never a file inside a folder
    the run may refuse or replace), locked with flock: the kernel releases it when the process ends, kill -9
    included, so a crashed run never leaves a stale lock."""
    key = hashlib.sha256(str(run_dir.expanduser().resolve()).encode()).hexdigest()[:24]
    path = cache_dir() / "locks" / f"run-{key}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")  # noqa: SIM115 - held for the block's duration
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "another process"
            raise SearchRLError(
                f"run.dir: {run_dir} is in use by a running searchrl process ({owner}); wait for it to end, or pick "
                "another run.dir"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}")
        handle.flush()
        yield
    finally:
        handle.close()  # releases the lock


@contextmanager
def _stop_signals(t: Trainer) -> Iterator[None]:
    """SIGINT and SIGTERM: abandon the step at once while no update has happened (the last checkpoint's state is
    still the live state), else finish the step; either way save a checkpoint and stop. A second signal during
    the finishing step stops at once (the last periodic checkpoint stays)."""

    def handler(signum: int, frame: Any) -> None:
        if t.abortable or t.stop_requested:
            raise RunInterrupted(signum)
        t.stop_requested = signum
        t.print(f"[yellow]{signal.Signals(signum).name}: finishing this step's updates, then saving a checkpoint "
                "(signal again to stop without saving this step)[/yellow]")

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _on_interrupt(t: Trainer) -> None:
    """After a signal: save the last completed step's state if the live weights are exactly that state."""
    latest = latest_checkpoint(t.run_dir)
    if t.abortable and (latest is None or not latest.name.endswith(f"{t.state.step:06d}")):
        if t.state.step > 0 or latest is not None:
            save(t, best=False)
    latest = latest_checkpoint(t.run_dir)
    t.logger.close()
    if latest is None:
        t.logger.announce("Interrupted before the first checkpoint: nothing kept; start the run again")
        return
    t.logger.announce(f"Interrupted after step {t.state.step}: checkpoint {latest.name} saved in {t.run_dir}. "
                      f"Resume with: searchrl train --resume {t.run_dir}")


# ============================================================================================ the run folder


def _check_new_run_folder(cfg: Config, run_dir: Path) -> bool:
    """Refuse a run.dir a fresh run may not use; returns whether it holds files the run is to replace."""
    if not run_dir.exists() or not any(run_dir.iterdir()):
        return False
    if not is_run_folder(run_dir):
        raise SearchRLError(
            f"run.dir: {run_dir} holds files but is not a searchrl run folder (no {RUN_MARKER}, no config.yaml with "
            "checkpoints/); nothing there is replaced, run.overwrite included: pick another run.dir"
        )
    never_started = not complete_checkpoints(run_dir)  # nothing of value to keep (a damaged checkpoint counts)
    if not never_started and not cfg.run.overwrite:
        raise SearchRLError(
            f"run folder {run_dir} already exists; resume it with `searchrl train --resume {run_dir}`, "
            "pick another run.dir, or set run.overwrite=true to delete it"
        )
    inside = _sources_inside(cfg, run_dir)
    if inside:
        raise SearchRLError(
            f"run.dir: {run_dir} holds {inside[0]}, which this run reads, and would be replaced; "
            "move that out of the run folder or pick another run.dir"
        )
    return True


def _sources_inside(cfg: Config, run_dir: Path) -> list[str]:
    """The `key=value` settings whose file or folder is `run_dir` or lies inside it."""
    settings = {"data.train": [cfg.data.train], "data.val": list(cfg.data.val),
                "retrieval.index": [cfg.retrieval.index], "model.name": [cfg.model.name],
                "train.warm_start": [cfg.train.warm_start], "sft.data": [cfg.sft.data]}
    root = run_dir.resolve()
    out = []
    for key, values in settings.items():
        for value in filter(None, values):
            body = value.split("=", 1)[-1].rsplit("@", 1)[0]  # a data spec's NAME=PATH@SPLIT
            paths = {Path(v).expanduser().resolve() for v in (value, body) if Path(v).expanduser().exists()}
            if any(p == root or root in p.parents for p in paths):
                out.append(f"{key}={value}")
    return out


def _create_run_folder(cfg: Config, run_dir: Path, *, replace: bool) -> None:
    """Create (or empty, when replacing) the run folder, mark it as a run and save the config."""
    if replace:
        _empty_folder(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(run_dir / RUN_MARKER, {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    save_config(cfg, run_dir / CONFIG_FILE)


def _empty_folder(path: Path) -> None:
    if path.is_dir():
        for entry in path.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def _finished_summary(run_dir: Path, latest: Path, cfg: Config) -> dict[str, Any] | None:
    """The summary of a run that already ran all of `train.steps` (and wrote summary.json), else None."""
    summary = run_dir / SUMMARY_FILE
    step = json.loads((latest / "state.json").read_text())["step"]
    if not summary.is_file() or step < cfg.train.steps:
        return None
    print(f"{run_dir} is finished ({step} of train.steps={cfg.train.steps} steps); its summary is {summary}. "
          f"Nothing to do; to train on, resume with a larger train.steps", file=sys.stderr)
    return json.loads(summary.read_text())


def _restore(t: Trainer) -> Path:
    """Load the latest checkpoint into the trainer, refusing one the config does not fit; only then save the
    (possibly overridden) config, cut the logs back to the checkpoint's step and mark its best checkpoint."""
    folder = latest_checkpoint(t.run_dir)
    raw = load_checkpoint(folder, model=t.model, optimizer=t.optimizer)
    t.state = TrainerState.from_dict(raw)
    expected = t.sampler.cursor(t.state.step + 1)
    if raw.get("data_cursor") != expected:
        raise SearchRLError(
            f"{folder}: its data cursor ({raw.get('data_cursor')}) does not match train.batch_size="
            f"{t.cfg.train.batch_size} (which gives {expected}); resume with the run's train.batch_size"
        )
    if t.state.monitor is not None:
        t.monitor.load_state_dict(t.state.monitor)
    save_config(t.cfg, t.run_dir / CONFIG_FILE)
    truncate_jsonl(t.run_dir / METRICS_FILE, t.state.step)
    truncate_jsonl(t.run_dir / EVENTS_FILE, t.state.step)
    best = checkpoint_dir(t.run_dir, t.state.best_step) if t.state.best_step is not None else None
    if t.cfg.checkpoint.keep_best and best is not None and best_checkpoint(t.run_dir) != best and is_complete(best):
        mark_best(t.run_dir, t.state.best_step, t.state.best_score)  # killed between a checkpoint and its best.json
    return folder


# ============================================================================================ start and finish


def _start(t: Trainer) -> None:
    """Before RL: the untrained evaluation, the warm start, the starting-point evaluations, checkpoint 0.

    The untrained and starting-point evaluations that the summary reports run on the test split; the starting
    point is also validated on the validation split, the baseline of every decision (checkpoints/best)."""
    cfg = t.cfg
    warm = cfg.train.warm_start is not None
    t.logger.announce(f"Run folder: {t.run_dir} (device: {t.device}, train.device={cfg.train.device})")
    if cfg.val.untrained and warm:
        untrained = validate(t, "untrained", test=True, limit=cfg.val.untrained_max_questions)
        t.state.evals["untrained"] = _announce(t, untrained, "untrained model")
    if cfg.train.warm_start == "sft":
        with t.timed("warm_start"):
            t.state.warm_start = _warm_start_sft(t)
    if cfg.val.at_start:
        start = _announce(t, validate(t, "start", test=True), "starting point of RL")
        t.state.evals["start"] = start
        if cfg.val.untrained and not warm:
            t.state.evals["untrained"] = start  # no warm start: the untrained model is the starting point
        val_start = start if t.test_sources is None else _announce(t, validate(t, "start"), "starting point of RL")
        t.state.evals["val_start"] = val_start
        t.state.best_score, t.state.best_step = validation_score(val_start), 0
        t.monitor.observe_start(val_metrics(t, val_start))  # val_drop measures a fall from the start of RL
    t.abortable = True
    save(t, best=cfg.val.at_start)
    if cfg.checkpoint.export_final:
        # The start of RL as a model folder beside final_model/: both evaluate on any data (`searchrl eval
        # --model`). A kill before this line leaves checkpoints/step_000000, which loads the same weights.
        t.logger.status(f"exporting {START_MODEL}/")
        with t.timed("exports"):
            export_policy(t.model, t.tokenizer, t.run_dir / START_MODEL, protocol=cfg.protocol, rollout=cfg.rollout)


def _warm_start_sft(t: Trainer) -> dict[str, Any]:
    cfg = t.cfg
    t.logger.status("warm start: preparing SFT data")
    if cfg.sft.data == "oracle":
        oracle = oracle_trajectories(t.train_source, t.tokenizer, t.retriever, cfg.protocol, cfg.rollout,
                                     limit=examples_needed(cfg.sft), think=cfg.sft.oracle_think)
        data, dropped = oracle.trajectories, oracle.dropped
    else:
        data, dropped = read_trajectories(Path(cfg.sft.data)), {}
    with trainable_layers(t.model, cfg.sft.train_layers):
        result = run_sft(
            t.model, data, cfg.sft, pad_id=t.pad_id, seed=cfg.seed, bf16=cfg.train.bf16,
            chunk_size=cfg.train.logprob_chunk_size, max_grad_norm=cfg.train.max_grad_norm,
            on_update=lambda i, n, loss: t.logger.status(f"warm start: SFT update {i}/{n}, loss {loss:.3f}"),
            metrics_path=t.run_dir / "sft_metrics.jsonl",
        )
    t.print(f"Warm start: SFT on {result.examples} trajectories from {cfg.sft.data} ({result.holdout_examples} "
            f"more held out; dropped: {dropped or 'none'}) in {result.seconds:.0f}s: {result.updates} updates, "
            f"held-out loss {result.holdout_loss_before:.3f} -> {result.holdout_loss_after:.3f}")
    return {**result.to_dict(), "dropped": dropped, "data": cfg.sft.data}


def _announce(t: Trainer, result: dict[str, Any], what: str) -> dict[str, Any]:
    for name, entry in result["datasets"].items():
        t.logger.announce(
            f"[bold]{what}[/bold]: {name} EM {entry['em']:.3f} [{entry['em_ci_low']:.3f}, {entry['em_ci_high']:.3f}] "
            f"on {entry['n']} {result['split']} questions ({result['seconds']:.0f}s)"
        )
    return result


def _finish(t: Trainer) -> dict[str, Any]:
    """Final evaluations (the last step's validation, then the test split), final_model/, final_eval.json and
    summary.json. The test split is evaluated here and at the start only; no decision reads it."""
    cfg = t.cfg
    if t.state.step == 0 and "val_start" in t.state.evals:  # no RL step: the final model is the start of RL
        t.state.evals.setdefault("last", t.state.evals["val_start"])
    last = t.state.evals.get("last")
    if last is None or last.get("step") != t.state.step:  # e.g. the time budget ended RL between validations
        if record_validation(t, validate(t, "final")) and is_complete(checkpoint_dir(t.run_dir, t.state.step)):
            if cfg.checkpoint.keep_best:
                mark_best(t.run_dir, t.state.step, t.state.best_score)
        last = t.state.evals["last"]
    if t.test_sources is None:
        final = last
    elif t.state.step == 0 and "start" in t.state.evals:  # the same model the start-of-RL test evaluation scored
        final = t.state.evals["start"]
    else:
        final = validate(t, "final", test=True)
    final = dict(final, label="final")
    t.state.evals["final"] = final
    if cfg.checkpoint.export_final:
        t.logger.status(f"exporting {FINAL_MODEL}/")
        with t.timed("exports"):
            export_policy(t.model, t.tokenizer, t.run_dir / FINAL_MODEL, protocol=cfg.protocol, rollout=cfg.rollout)
    atomic_write_json(
        t.run_dir / "final_eval.json",
        {"step": t.state.step, "datasets": {n: eval_entry(e) for n, e in final["datasets"].items()}},
    )
    atomic_write_json(  # per-question EM of each evaluation, for paired comparisons across runs
        t.run_dir / "evals.json",
        {k: {"step": v.get("step"), "split": v.get("split"), "per_question_em": v.get("per_question_em", {}),
             "question_types": v.get("question_types", {})}
         for k, v in t.state.evals.items() if k in ("untrained", "start", "final")},
    )
    val = {"start": t.state.evals.get("val_start"), "final": t.state.evals.get("last")}
    elapsed = t.budget.elapsed()
    summary = {
        "run_dir": str(t.run_dir),
        "steps": t.state.step,
        "stopped_early": t.state.stopped_early,
        "seconds": elapsed,
        "algorithm": cfg.algorithm.get("name"),
        "warm_start": t.state.warm_start,
        "split": final.get("split"),  # of evals and gain; val holds the validation split's start and end
        "evals": {k: {n: eval_entry(e) for n, e in v["datasets"].items()} for k, v in t.state.evals.items()
                  if k in ("untrained", "start", "final")},
        "gain": paired_gain(t.state.evals.get("start"), final, seed=cfg.seed),
        "val": {"split": cfg.data.val_split, **{k: {n: eval_entry(e) for n, e in v["datasets"].items()}
                                                 for k, v in val.items() if v is not None}},
        "best_step": t.state.best_step,
        "best_checkpoint": str(best_checkpoint(t.run_dir) or ""),
        "time": time_by_phase(t, elapsed),
    }
    atomic_write_json(t.run_dir / SUMMARY_FILE, json.loads(json.dumps(summary, default=float)))
    print_summary(t, summary)
    return summary


PHASES = ("rl_steps", "evaluations", "warm_start", "checkpoints", "exports")


def time_by_phase(t: Trainer, total: float) -> dict[str, float]:
    """summary.json's `time`: the trainer's `total` seconds (summary.json's `seconds`) by phase, and the rest
    (`other_s`: loading the data and the model, logging, the monitor). Of this process: a resumed run counts from
    its resume."""
    out = {"total_s": total, **{f"{phase}_s": t.seconds.get(phase, 0.0) for phase in PHASES}}
    out["other_s"] = max(0.0, total - sum(t.seconds.get(phase, 0.0) for phase in PHASES))
    return out


def eval_entry(entry: dict[str, Any]) -> dict[str, Any]:
    keys = ("em", "em_ci_low", "em_ci_high", "f1", "f1_ci_low", "f1_ci_high", "n", "em_by_type")
    return {k: entry[k] for k in keys if k in entry}


def print_summary(t: Trainer, summary: dict[str, Any]) -> None:
    table = Table(title=f"EM on the {summary.get('split') or 'validation'} split (greedy, 95% bootstrap CI) — {t.run_dir}")
    table.add_column("policy")
    for name in t.val_names:
        table.add_column(name)
    labels = {"untrained": "untrained model", "start": "start of RL (after warm start)" if t.state.warm_start
              else "start of RL", "final": f"after RL ({t.state.step} steps)"}
    for key, label in labels.items():
        if key in summary["evals"]:
            cells = [f"{e['em']:.3f} [{e['em_ci_low']:.3f}, {e['em_ci_high']:.3f}]"
                     for e in (summary["evals"][key].get(n, {}) for n in t.val_names) if e]
            table.add_row(label, *cells)
    if summary["gain"]:
        table.add_row("RL gain (paired)", *[
            f"{g['em_gain']:+.3f} [{g['ci_low']:+.3f}, {g['ci_high']:+.3f}]"
            for g in (summary["gain"].get(n) for n in t.val_names) if g
        ])
    t.logger.announce(table)
    for name in t.val_names:
        if summary["gain"].get(name):
            t.logger.announce(f"RL gain on {name} ({summary.get('split')} split): {gain_verdict(summary['gain'][name])}")
    for name in t.val_names:
        parts = []
        for key, label in labels.items():
            kinds = summary["evals"].get(key, {}).get(name, {}).get("em_by_type")
            if kinds:
                parts.append(f"{label}: " + ", ".join(f"{k} {v:.2f}" for k, v in kinds.items()))
        if parts:
            t.logger.announce(f"{name} EM by question type — " + "; ".join(parts))
        by_type = (summary["gain"].get(name) or {}).get("by_type")
        if by_type:
            t.logger.announce(f"{name} RL gain by question type (paired 95% interval): " + ", ".join(
                f"{k} {g['em_gain']:+.3f} [{g['ci_low']:+.3f}, {g['ci_high']:+.3f}] (n={g['n']})"
                for k, g in by_type.items()))
    spent = summary["time"]
    if spent["total_s"] > 0:
        t.logger.announce("Where the time went: " + ", ".join(
            f"{key[:-2].replace('_', ' ')} {value:.0f} s ({value / spent['total_s']:.0%})"
            for key, value in spent.items() if key != "total_s" and value > 0))
    hint = evaluation_share_hint(t.cfg, summary)
    if hint:
        t.logger.announce(f"[yellow]{hint}[/yellow]")
    t.logger.announce(f"Run folder: {t.run_dir} ({summary['seconds'] / 60:.1f} min)")


def evaluation_share_hint(cfg: Config, summary: dict[str, Any]) -> str | None:
    """When the time budget ended RL early and evaluations took over a third of the run, what trades them for RL
    steps on this machine (None otherwise). Why: on a slow CPU the demo's evaluations, not its RL steps, are most of
    its budget (docs/benchmarks.md, "The floor of the demo's evaluations")."""
    spent = summary.get("time") or {}
    total, evaluations = spent.get("total_s", 0.0), spent.get("evaluations_s", 0.0)
    if not (summary.get("stopped_early") and total > 0 and evaluations > total / 3):
        return None
    options = []
    validated = sum(entry.get("n", 0) for entry in ((summary.get("val") or {}).get("start") or {}).values())
    if validated > 100 and cfg.data.test_split is not None:  # without a test split validation is the result
        options.append(f"a smaller validation sample (val.max_questions=100; {validated} questions now)")
    if cfg.val.untrained and cfg.train.warm_start is not None:
        options.append("no untrained evaluation (val.untrained=false)")
    test = "fewer test questions (val.test_max_questions)"
    if options and cfg.data.test_split is not None:
        trade = (f"{' or '.join(options)} leaves more of the budget to RL; {test} would too, at the cost of a wider "
                 "interval on the reported gain")
    elif options:
        trade = f"{' or '.join(options)} leaves more of the budget to RL"
    elif cfg.data.test_split is not None:
        trade = f"{test} would leave more of the budget to RL, at the cost of a wider interval on the reported gain"
    else:
        return None
    return (f"Evaluations took {evaluations / total:.0%} of this run's time, and the time budget ended RL after "
            f"{summary.get('steps', 0)} of {cfg.train.steps} steps. On this machine, {trade}.")
