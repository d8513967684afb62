"""Supervised warm start: loss on model tokens only, oracle replays through the real engine, RFT files, the CLI."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import torch
from conftest import SAME_MATH_ATOL, SAME_MATH_RTOL

from searchrl.errors import DataError
from searchrl.training.forward import collate, token_logprobs
from searchrl.training.config import load_config


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from searchrl.models import build_tiny_random_model

    # One folder per test session (idempotent builder), shared by the test modules that need it.
    return build_tiny_random_model(tmp_path_factory.getbasetemp() / "searchrl_tiny_model")


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


@pytest.fixture(scope="module")
def oracle(tiny_model):
    from searchrl.data import load_source
    from searchrl.models import load_policy
    from searchrl.training.state import build_retriever
    from searchrl.training.sft import oracle_trajectories

    cfg = load_config("demo", ["protocol.assistant_prefix=<search>", "rollout.max_turn_tokens=24"])
    source = load_source("world", split="train")
    _, tokenizer = load_policy(tiny_model)
    data = oracle_trajectories(source, tokenizer, build_retriever(cfg, source), cfg.protocol, cfg.rollout, limit=24,
                               think=False)
    return cfg, tokenizer, data


def test_oracle_replays_are_token_exact_rollouts(oracle):
    from searchrl.data import load_oracle
    from searchrl.data.world import world_dir

    cfg, tokenizer, data = oracle
    assert len(data.trajectories) + sum(data.dropped.values()) == 24
    assert len(data.trajectories) >= 20  # BM25 finds the world's named entities
    records = {r.uid: r for r in load_oracle(world_dir(0) / "oracle_train.jsonl")}
    for traj in data.trajectories:
        assert traj.reward == 1.0 and traj.finish_reason == "answer"
        assert tokenizer.decode(traj.prompt_ids).endswith("<search>")  # the assistant prefix is prompt, not trained
        sampled = tokenizer.decode([t for t, m in zip(traj.response_ids, traj.response_mask) if m])
        observed = tokenizer.decode([t for t, m in zip(traj.response_ids, traj.response_mask) if not m])
        actions = "".join(t for t in records[traj.question.uid].model_turns())
        actions = re.sub(r"<think>.*?</think>\s*", "", actions)
        assert "<search>" + sampled == actions  # exactly the oracle's actions, thoughts removed
        assert observed.count("<information>") == traj.num_searches >= 1  # observations: masked, from BM25


def test_sft_loss_counts_only_model_tokens(tiny_model, oracle, float64_norms):
    from searchrl.models import load_policy
    from searchrl.training.sft import sft_loss

    _, tokenizer, data = oracle
    # float64: the chunked, batched loss and the unbatched full forwards are the same math in other orders
    model, _ = load_policy(tiny_model, dtype=torch.float64)
    batch = collate(data.trajectories[:3], tokenizer.pad_token_id)
    loss, n_tokens = sft_loss(model, batch, chunk_size=7)
    assert loss.dtype == torch.float64
    manual, count = 0.0, 0
    with torch.no_grad():
        for traj in data.trajectories[:3]:
            ids = torch.tensor([traj.prompt_ids + traj.response_ids])
            logp = torch.log_softmax(model(ids).logits[0], -1)
            P = len(traj.prompt_ids)
            for j, (tok, m) in enumerate(zip(traj.response_ids, traj.response_mask)):
                if m:
                    manual -= float(logp[P + j - 1, tok])
                    count += 1
    assert n_tokens == count == sum(sum(t.response_mask) for t in data.trajectories[:3])
    assert float(loss.detach()) == pytest.approx(manual / count, rel=SAME_MATH_RTOL, abs=SAME_MATH_ATOL)


def test_sft_on_oracle_trajectories_lowers_the_loss(tiny_model, oracle):
    from searchrl.models import load_policy
    from searchrl.training.policy import prepare_for_training
    from searchrl.training.sft import run_sft

    cfg, tokenizer, data = oracle
    model, _ = load_policy(tiny_model)
    model = prepare_for_training(model, gradient_checkpointing=True)
    sft = dataclasses.replace(cfg.sft, epochs=2.0, batch_size=4, micro_batch_size=4, lr=3e-3, holdout=4,
                              max_examples=None, warmup_ratio=0.0)
    result = run_sft(model, data.trajectories, sft, pad_id=tokenizer.pad_token_id, seed=0, bf16="auto")
    assert result.holdout_examples == 4 and result.examples == len(data.trajectories) - 4
    assert result.updates == 2 * -(-result.examples // 4)
    assert result.holdout_loss_after < result.holdout_loss_before - 1.0
    assert result.train_loss_last < result.train_loss_first


def test_trajectory_records_round_trip_and_rft_filters_by_reward(tmp_path, oracle, tiny_model):
    from searchrl.models import load_policy
    from searchrl.training.policy import prepare_for_training
    from searchrl.training.sft import read_trajectories, run_sft, trajectory_to_record

    cfg, tokenizer, data = oracle
    trajectories = data.trajectories[:6]
    for i, traj in enumerate(trajectories):
        traj.reward = float(i % 2)
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(trajectory_to_record(t, tokenizer)) + "\n" for t in trajectories))
    back = read_trajectories(path)
    assert [t.response_ids for t in back] == [t.response_ids for t in trajectories]
    assert [t.response_mask for t in back] == [t.response_mask for t in trajectories]
    assert [t.turns for t in back] == [t.turns for t in trajectories]
    model = prepare_for_training(load_policy(tiny_model)[0])
    sft = dataclasses.replace(cfg.sft, min_reward=1.0, holdout=0, max_examples=None, epochs=1.0, batch_size=2,
                              micro_batch_size=1)
    result = run_sft(model, back, sft, pad_id=tokenizer.pad_token_id, seed=0)
    assert result.examples == 3  # the three with reward 1
    with pytest.raises(DataError, match="no trajectories"):
        run_sft(model, back, dataclasses.replace(sft, min_reward=2.0), pad_id=tokenizer.pad_token_id, seed=0)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(trajectory_to_record(trajectories[0])) + "\n{\"question\": 1}\n")
    with pytest.raises(DataError, match=rf"{bad}:2: field 'prompt_ids' is missing"):
        read_trajectories(bad)


def test_sft_command_writes_a_loadable_model(tiny_model, tmp_path):
    from searchrl.cli import main
    from searchrl.models import load_policy

    out = tmp_path / "sft"
    code = main(["sft", f"model.name={tiny_model}", "sft.max_examples=12", "sft.holdout=4", "sft.batch_size=4",
                 "sft.micro_batch_size=4", "sft.oracle_think=false", "protocol.assistant_prefix=<search>",
                 "--out", str(out), "--device", "cpu"])
    assert code == 0
    summary = json.loads((out / "sft_summary.json").read_text())
    # sft.max_examples trained, sft.holdout drawn apart from them: 12 + 4 oracle trajectories asked for
    assert summary["sft"]["examples"] == 12 and summary["sft"]["holdout_examples"] == 4
    assert summary["sft"]["examples"] + summary["sft"]["holdout_examples"] + sum(summary["dropped"].values()) == 16
    assert len((out / "sft_metrics.jsonl").read_text().splitlines()) == summary["sft"]["updates"]
    load_policy(out)
    assert main(["sft", f"model.name={tiny_model}", "--out", str(out)]) == 2  # refuses to overwrite


def test_the_retrieval_oracle_warm_starts_real_qa_data(tiny_model):
    """A real QA folder has no oracle file: search with the question, answer with a gold answer a top-k passage
    holds, drop the question otherwise; the replays are real rollouts that score EM 1 on grounded answers."""
    from searchrl.data import load_source
    from searchrl.models import load_policy
    from searchrl.rewards import answer_in_retrieval
    from searchrl.training.sft import oracle_trajectories, retrieval_oracle_scripts
    from searchrl.training.state import build_retriever

    folder = Path(__file__).parent / "fixtures" / "qa" / "nq_oracle"
    cfg = load_config("demo", [f"data.train={folder}", "data.train_split=train", "protocol.assistant_prefix=<search>",
                               "rollout.max_turn_tokens=48", "rollout.max_obs_tokens=256", "rollout.topk=3"])
    source = load_source(str(folder), split="train")
    retriever = build_retriever(cfg, source)
    pairs, dropped = retrieval_oracle_scripts(source.questions[:40], retriever, 3)
    assert len(pairs) + dropped == 40 and 0 < len(pairs) < 40  # BM25 finds some answers, not all
    for question, turns in pairs:
        assert turns[0] == f"<search> {question.question} </search>"
        answer = turns[1].removeprefix("<answer> ").removesuffix(" </answer>")
        assert answer in question.golden_answers
        passages = [h.contents for h in retriever.search([question.question], topk=3)[0]]
        assert answer_in_retrieval(passages, answer)
    _, tokenizer = load_policy(tiny_model)
    data = oracle_trajectories(source, tokenizer, retriever, cfg.protocol, cfg.rollout, limit=40, think=False)
    assert data.dropped["answer_not_in_top_k"] == dropped
    assert len(data.trajectories) + sum(data.dropped.values()) == 40
    assert len(data.trajectories) >= 0.8 * len(pairs)  # replays end on the grounded gold answer
    for traj in data.trajectories:
        assert traj.reward == 1.0 and traj.num_searches == 1 and traj.extras["answer_in_retrieval"]
