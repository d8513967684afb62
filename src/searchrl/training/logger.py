"""Where a run's numbers go: metrics.jsonl, TensorBoard, optional wandb, and a rich console.

`metrics.jsonl` holds one JSON object per RL step (schema: docs/metrics.md). Lines are deterministic for a
given run except the `time/…` fields: keys in a fixed order, floats by `repr`, NaN as the JSON token `NaN`.
On resume the file is cut back to the checkpoint's step, so a killed-and-resumed run has exactly the rows of
an uninterrupted one.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from searchrl.errors import ConfigError
from searchrl.fileio import atomic_write_text

METRICS_FILE = "metrics.jsonl"
EVENTS_FILE = "events.jsonl"


def truncate_jsonl(path: Path, max_step: int) -> int:
    """Keep only the rows with `step <= max_step` (atomically); returns how many rows were dropped.

    A torn last line (the process was killed mid-write) is dropped too.
    """
    path = Path(path)
    if not path.is_file():
        return 0
    kept, dropped = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            dropped += 1
            continue
        if isinstance(row, dict) and int(row.get("step", 0)) <= max_step:
            kept.append(line)
        else:
            dropped += 1
    atomic_write_text(path, "".join(line + "\n" for line in kept))
    return dropped


def read_jsonl(path: Path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _clean(value: Any) -> Any:
    """Tensors and numpy scalars to Python numbers (one `.item()` per value at logging time)."""
    return value.item() if hasattr(value, "item") else value


def _fmt(value: Any, digits: int = 3) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:.{digits}g}"
    return str(value)


class RunLogger:
    """Append metric rows to every sink; own the console progress bar."""

    def __init__(
        self,
        run_dir: Path,
        *,
        total_steps: int,
        start_step: int = 0,
        tensorboard: bool = True,
        wandb: bool = False,
        wandb_project: str = "searchrl",
        console: bool = True,
        config_dict: Mapping[str, Any] | None = None,
        run_name: str = "run",
    ) -> None:
        self.run_dir = Path(run_dir)
        self.metrics_path = self.run_dir / METRICS_FILE
        self.console = Console(stderr=True, quiet=not console)
        self.important = Console(stderr=True)  # results and how to resume: printed even with --quiet
        self.total_steps = total_steps
        self._tb = None
        self._use_tensorboard = tensorboard
        self._wandb = None
        self._wandb_init = None  # called on entering: nothing is written into the run folder before that
        if wandb:
            try:
                import wandb as wandb_module  # local: optional extra [wandb]
            except ImportError:
                raise ConfigError("log.wandb: true needs the wandb package; install it with `pip install wandb`") from None
            self._wandb_init = lambda: wandb_module.init(
                project=wandb_project, name=run_name, dir=str(self.run_dir), config=dict(config_dict or {}),
                resume="allow", id=f"{run_name}-{abs(hash(str(self.run_dir))) % 10**8}",
            )
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("elapsed"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
            disable=not console,
        )
        self._task = None
        self._start_step = start_step

    # -- console ---------------------------------------------------------------------------------

    def __enter__(self) -> RunLogger:
        if self._wandb_init is not None and self._wandb is None:
            self._wandb = self._wandb_init()
        if self._use_tensorboard and self._tb is None:
            # local: ~0.2 s on top of torch (~2.5 s cold); paid only by runs with log.tensorboard
            from torch.utils.tensorboard import SummaryWriter

            # purge_step drops events written after the checkpoint when a killed run is resumed.
            purge = self._start_step + 1 if self._start_step else None
            self._tb = SummaryWriter(log_dir=str(self.run_dir / "tb"), purge_step=purge)
        self._progress.start()
        self._task = self._progress.add_task("training", total=self.total_steps, completed=self._start_step)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def print(self, text: str) -> None:
        self.console.print(text, highlight=False, soft_wrap=True)

    def announce(self, text: Any) -> None:
        """Print a result line (evaluations, the summary, where the run is) even when the console is quiet."""
        (self.console if not self.console.quiet else self.important).print(text, highlight=False, soft_wrap=True)

    def status(self, description: str) -> None:
        """Say what the step is doing now (rollout, update, validation) next to the bar."""
        if self._task is not None:
            self._progress.update(self._task, description=description)

    # -- rows ------------------------------------------------------------------------------------

    def set_start_step(self, step: int) -> None:
        """The last step already logged (a resumed run): the bar starts there and TensorBoard purges after it."""
        self._start_step = step

    def log(self, step: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Write one step's row to every sink, print its one-line summary, advance the bar."""
        row = {"step": int(step)}
        row.update((k, _clean(v)) for k, v in metrics.items() if k != "step")
        line = json.dumps(row, allow_nan=True)
        with open(self.metrics_path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        if self._tb is not None:
            for key, value in row.items():
                if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
                    self._tb.add_scalar(key, value, global_step=step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log({k: v for k, v in row.items() if k != "step"}, step=step)
        self.print(self.summary(row))
        if self._task is not None:
            self._progress.update(self._task, completed=step, description="training")
        return row

    def summary(self, row: Mapping[str, Any]) -> str:
        """The one-line console summary of a step."""
        parts = [f"step {row['step']}/{self.total_steps}"]
        for key, label in (
            ("reward/mean", "reward"),
            ("actor/pg_loss", "loss"),
            ("diag/is_ratio_mean", "ratio"),
            ("diag/clip_frac", "clip"),
            ("diag/entropy", "ent"),
            ("actor/grad_norm", "gnorm"),
            ("diag/searches_mean", "searches"),
            ("diag/format_valid", "format"),
            ("diag/response_length_mean", "len"),
        ):
            if key in row:
                parts.append(f"{label} {_fmt(row[key])}")
        vals = [(k, v) for k, v in row.items() if k.startswith("val/") and k.endswith("/em") and isinstance(v, float)]
        for key, value in vals:
            if not math.isnan(value):
                parts.append(f"[bold]{key} {value:.3f}[/bold]")
        if "time/step_s" in row:
            parts.append(
                f"{_fmt(row['time/step_s'])}s (rollout {_fmt(row.get('time/rollout_s', float('nan')))}"
                f", update {_fmt(row.get('time/update_s', float('nan')))})"
            )
        if row.get("actor/nonfinite_skips"):
            parts.append(f"[red]skipped {row['actor/nonfinite_skips']:g} non-finite updates[/red]")
        return " | ".join(parts)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
        if self._tb is not None:
            self._tb.close()
            self._tb = None
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None
