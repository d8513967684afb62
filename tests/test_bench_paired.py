"""benchmarks/bench_step_paired.py: two versions of searchrl load in one process, and the baton lets one side run at
a time, in the scheduled order."""

from __future__ import annotations

import importlib
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_step_paired import Baton, copy_as  # noqa: E402

import searchrl  # noqa: E402


def test_copy_as_loads_a_second_searchrl_beside_this_one(tmp_path: Path) -> None:
    copy_as(Path(searchrl.__file__).parents[1], "searchrl_copy", tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        loop = importlib.import_module("searchrl_copy.training.loop")
        config = importlib.import_module("searchrl_copy.training.config")
        cfg = config.load_config("demo", ["algorithm.name=grpo"])  # the packaged configs, found under the new name
        # every searchrl module the copy uses is its own, not this process's searchrl
        assert loop.rl_step.__module__ == "searchrl_copy.training.loop"
        assert loop.models.__name__ == "searchrl_copy.models"
        assert type(cfg).__module__ == "searchrl_copy.training.config"
        from searchrl.training.config import load_config

        assert cfg.train.batch_size == load_config("demo").train.batch_size
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n.startswith("searchrl_copy")]:
            del sys.modules[name]


def test_copy_as_refuses_a_folder_without_searchrl(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no searchrl package there"):
        copy_as(tmp_path, "searchrl_old", tmp_path / "out")


def test_baton_runs_one_side_at_a_time_in_the_scheduled_order() -> None:
    schedule = ["a", "b", "a", "b", "b", "a"]
    baton, ran, busy = Baton(schedule), [], []

    def side(name: str) -> None:
        for _ in range(schedule.count(name)):
            baton.wait_for(name)
            busy.append(name)
            assert len(busy) == 1, busy  # nobody else is running
            ran.append(name)
            time.sleep(0.01)
            busy.pop()
            baton.pass_on()

    threads = [threading.Thread(target=side, args=(n,)) for n in ("b", "a")]  # started out of order on purpose
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=10)
    assert ran == schedule


def test_baton_stops_the_other_sides_when_one_fails() -> None:
    baton, raised = Baton(["a", "b"]), []

    def waiting_side() -> None:
        try:
            baton.wait_for("b")
        except RuntimeError as exc:
            raised.append(str(exc))

    th = threading.Thread(target=waiting_side)
    th.start()
    baton.fail()
    th.join(timeout=10)
    assert raised == ["another side failed"]
