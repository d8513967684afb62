"""The demo's trainer as `searchrl train` builds it, for benchmarks that time or check parts of it in one process.

`demo_trainer(tmp, overrides, model=None)` loads `configs/demo.yaml` with the overrides, builds the trainer in
`tmp/run` (no console, no status line) and runs its warm start (SFT on the demo's oracle trajectories), unless a
model folder is given: that model is then the policy as it is (`train.warm_start=null`). Returns (config, trainer).
Used by anatomy_demo_step.py, bench_allocator.py, bench_grouped_attention.py and check_eval_precision.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def demo_trainer(tmp: str | Path, overrides: Sequence[str] = (), model: str | None = None) -> tuple[Any, Any]:
    from searchrl.training import loop
    from searchrl.training import run as run_module
    from searchrl.training.config import load_config

    settings = [f"run.dir={tmp}/run", "log.console=false", *overrides]
    if model:
        settings += [f"model.name={model}", "train.warm_start=null"]
    cfg = load_config("demo", settings)
    t = loop.build(cfg, Path(tmp) / "run", console=False)
    t.status = lambda *a, **k: None
    (Path(tmp) / "run").mkdir()
    if cfg.train.warm_start == "sft":
        t.state.warm_start = run_module._warm_start_sft(t)
    return cfg, t
