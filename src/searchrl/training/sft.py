"""Supervised warm start: next-token loss on the model's own tokens of oracle or collected trajectories.

The loss uses exactly the rollout's masking: `response_mask` is 1 on tokens the model writes and 0 on
observation tokens (`<information>…</information>`) and the prompt, so the model is never trained to produce
retrieved text. This is the papers' "SFT" baseline and the practical cold start for a model as small as the
default; with `--min-reward` on collected `samples.jsonl` it is rejection-sampling fine-tuning.

    loss = Σ_{i,t} m_{i,t} · (−log π_θ(y_{i,t} | x_i, y_{i,<t})) / Σ_{i,t} m_{i,t}     (token mean per mini-batch)
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from searchrl.data.jsonl import iter_jsonl_objects
from searchrl.data.oracle import load_oracle
from searchrl.data.types import Question
from searchrl.errors import DataError
from searchrl.models import module_device
from searchrl.protocol import ProtocolConfig
from searchrl.rewards import RewardConfig, answer_in_retrieval, score_trajectories
from searchrl.rollout import RolloutEngine, ScriptedBackend
from searchrl.rollout.engine import RolloutConfig
from searchrl.rollout.types import Trajectory, Turn
from searchrl.training.config import SFTConfig
from searchrl.training.forward import TokenBatch, collate, split_indices, token_logprobs, weight_cast_cache
from searchrl.training.policy import autocast, lr_multiplier, make_optimizer, set_learning_rate, trainable_parameters


_THINK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)


@dataclass
class SFTResult:
    """What a warm start did, for the run's summary and docs/demo.md."""

    examples: int
    holdout_examples: int
    updates: int
    trained_tokens: int
    holdout_loss_before: float
    holdout_loss_after: float
    train_loss_first: float
    train_loss_last: float
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sft_loss(model: torch.nn.Module, batch: TokenBatch, *, chunk_size: int) -> tuple[torch.Tensor, int]:
    """Token-mean negative log-likelihood over `response_mask`; returns (loss, number of trained tokens)."""
    log_probs, _ = token_logprobs(model, batch, chunk_size=chunk_size)  # (B, T)
    n_tokens = int(batch.response_mask.sum().item())
    return -(log_probs * batch.response_mask).sum() / max(n_tokens, 1), n_tokens


@torch.no_grad()
def holdout_loss(
    model: torch.nn.Module, trajectories: Sequence[Trajectory], *, pad_id: int, micro_batch_size: int, chunk_size: int, bf16: bool | str
) -> float:
    """Token-mean NLL of `trajectories` (NaN if empty)."""
    if not trajectories:
        return float("nan")
    was_training = model.training
    model.eval()
    device = module_device(model)
    total, count = 0.0, 0
    with weight_cast_cache(bf16, device):  # the weights cast to bf16 once for all micro-batches
        for idx in split_indices(len(trajectories), micro_batch_size):
            batch = collate([trajectories[i] for i in idx], pad_id).to(device)
            with autocast(bf16, device):
                log_probs, _ = token_logprobs(model, batch, chunk_size=chunk_size)
            total += float(-(log_probs * batch.response_mask).sum())
            count += int(batch.response_mask.sum())
    if was_training:
        model.train()
    return total / max(count, 1)


def examples_needed(cfg: SFTConfig) -> int | None:
    """How many trajectories the `sft:` settings `cfg` use: the hold-out plus `max_examples` (None: all)."""
    return None if cfg.max_examples is None else cfg.max_examples + cfg.holdout


def run_sft(
    model: torch.nn.Module,
    trajectories: Sequence[Trajectory],
    cfg: SFTConfig,
    *,
    pad_id: int,
    seed: int,
    bf16: bool | str = "auto",
    chunk_size: int = 256,
    max_grad_norm: float = 1.0,
    on_update: Callable[[int, int, float], None] | None = None,
    metrics_path: Path | None = None,
) -> SFTResult:
    """Fine-tune `model` in place on `trajectories` with the `sft:` settings `cfg` (an `SFTConfig`).

    Data order, hold-out split and shuffles come from `seed` only. `on_update(update, total, loss)` is called
    after each optimiser update (progress bars); rows go to `metrics_path` (JSONL) when given. Batches go to the
    model's device.
    """
    start = time.perf_counter()
    device = module_device(model)
    rng = random.Random(seed)
    data = [t for t in trajectories if sum(t.response_mask) > 0]
    if cfg.min_reward is not None:
        data = [t for t in data if t.reward >= cfg.min_reward]
    if not data:
        raise DataError("sft: no trajectories with trained tokens left to learn from (check sft.data and sft.min_reward)")
    rng.shuffle(data)
    # The hold-out is drawn first, then up to `max_examples` training examples from the rest. Data with no more
    # trajectories than the hold-out asks for hold out a fifth instead (the result records how many).
    n_holdout = cfg.holdout if len(data) > cfg.holdout else len(data) // 5
    holdout, train = data[:n_holdout], data[n_holdout:]
    if cfg.max_examples is not None:
        train = train[: cfg.max_examples]
    per_epoch = math.ceil(len(train) / cfg.batch_size)
    total_updates = max(1, math.ceil(per_epoch * cfg.epochs)) if cfg.epochs > 0 else 0
    warmup_updates = int(round(cfg.warmup_ratio * total_updates))
    optimizer = make_optimizer(model, lr=cfg.lr)
    evaluate = lambda: holdout_loss(  # noqa: E731
        model, holdout, pad_id=pad_id, micro_batch_size=cfg.micro_batch_size, chunk_size=chunk_size, bf16=bf16
    )
    before = evaluate()
    model.train()
    losses: list[float] = []
    trained_tokens = 0
    order: list[int] = []
    for update in range(1, total_updates + 1):
        if len(order) < cfg.batch_size:  # next epoch: a fresh permutation appended
            perm = list(range(len(train)))
            rng.shuffle(perm)
            order += perm
        batch_idx, order = order[: cfg.batch_size], order[cfg.batch_size :]
        lr = cfg.lr * lr_multiplier(update - 1, warmup_steps=warmup_updates, total_steps=total_updates, schedule="cosine")
        set_learning_rate(optimizer, lr)
        micro = [batch_idx[i : i + cfg.micro_batch_size] for i in range(0, len(batch_idx), cfg.micro_batch_size)]
        # Token mean over the whole mini-batch: weight each micro-batch by its share of the trained tokens.
        batches = [collate([train[i] for i in idx], pad_id).to(device) for idx in micro]
        n_total = sum(int(b.response_mask.sum()) for b in batches)
        optimizer.zero_grad(set_to_none=True)
        loss_sum = 0.0
        with weight_cast_cache(bf16, device):  # cast to bf16 once per update, not per micro-batch
            for batch in batches:
                with autocast(bf16, device):
                    loss, n_tokens = sft_loss(model, batch, chunk_size=chunk_size)
                (loss * (n_tokens / max(n_total, 1))).backward()
                loss_sum += float(loss.detach()) * n_tokens
        grad_norm = torch.nn.utils.clip_grad_norm_(trainable_parameters(model), max_grad_norm or float("inf"))
        if torch.isfinite(grad_norm):
            optimizer.step()
        mean_loss = loss_sum / max(n_total, 1)
        losses.append(mean_loss)
        trained_tokens += n_total
        if metrics_path is not None:
            with open(metrics_path, "a", encoding="utf-8") as fh:
                row = {"update": update, "sft/loss": mean_loss, "sft/grad_norm": float(grad_norm), "sft/lr": lr}
                fh.write(json.dumps(row) + "\n")
        if on_update is not None:
            on_update(update, total_updates, mean_loss)
    after = evaluate()
    model.train()
    return SFTResult(
        examples=len(train),
        holdout_examples=len(holdout),
        updates=total_updates,
        trained_tokens=trained_tokens,
        holdout_loss_before=before,
        holdout_loss_after=after,
        train_loss_first=losses[0] if losses else float("nan"),
        train_loss_last=losses[-1] if losses else float("nan"),
        seconds=time.perf_counter() - start,
    )


# ---------------------------------------------------------------------------------------------- trajectory files


def trajectory_to_record(traj: Trajectory, tokenizer: Any | None = None) -> dict[str, Any]:
    """A JSON-safe record of a trajectory (token ids included, so it can be trained on exactly); with a tokenizer,
    the decoded prompt and response text are added for reading."""
    row: dict[str, Any] = {
        "question": asdict(traj.question),
        "group_id": traj.group_id,
        "reward": traj.reward,
        "answer": traj.answer,
        "num_searches": traj.num_searches,
        "finish_reason": traj.finish_reason,
        "extras": {k: v for k, v in traj.extras.items() if _jsonable(v)},
        "turns": [asdict(t) for t in traj.turns],
        "prompt_ids": list(traj.prompt_ids),
        "response_ids": list(traj.response_ids),
        "response_mask": list(traj.response_mask),
        "sampling_logprobs": [round(float(x), 6) for x in traj.sampling_logprobs],
    }
    if tokenizer is not None:
        row["prompt_text"] = tokenizer.decode(traj.prompt_ids)
        row["response_text"] = tokenizer.decode(traj.response_ids)
    return row


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def trajectory_from_record(row: dict[str, Any], where: str) -> Trajectory:
    """Inverse of `trajectory_to_record`; errors name `where` (file:line) and the field."""
    for key in ("question", "prompt_ids", "response_ids", "response_mask"):
        if key not in row:
            raise DataError(f"{where}: field '{key}' is missing (expected a trajectory record as written in samples/*.jsonl)")
    q = row["question"]
    if not isinstance(q, dict) or "question" not in q:
        raise DataError(f"{where}: field 'question' must be an object with 'id', 'question', 'golden_answers'")
    response_ids, response_mask = row["response_ids"], row["response_mask"]
    if len(response_ids) != len(response_mask):
        raise DataError(f"{where}: 'response_mask' has {len(response_mask)} entries for {len(response_ids)} 'response_ids'")
    question = Question(
        id=str(q.get("id", "")), question=q["question"], golden_answers=list(q.get("golden_answers", [])),
        data_source=str(q.get("data_source", "")), metadata=dict(q.get("metadata", {})),
    )
    turns = [Turn(**t) for t in row.get("turns", [])]
    return Trajectory(
        question=question,
        group_id=str(row.get("group_id", question.uid)),
        prompt_ids=[int(x) for x in row["prompt_ids"]],
        response_ids=[int(x) for x in response_ids],
        response_mask=[int(x) for x in response_mask],
        sampling_logprobs=[float(x) for x in row.get("sampling_logprobs", [0.0] * len(response_ids))],
        turns=turns,
        answer=row.get("answer"),
        num_searches=int(row.get("num_searches", 0)),
        finish_reason=str(row.get("finish_reason", "answer")),
        reward=float(row.get("reward", 0.0)),
        extras=dict(row.get("extras", {})),
    )


def read_trajectories(path: Path) -> list[Trajectory]:
    """Read a samples.jsonl of trajectory records; a malformed line names the file and line."""
    return [trajectory_from_record(row, where)
            for where, row in iter_jsonl_objects(path, missing="no such trajectory file")]


# ---------------------------------------------------------------------------------------------- oracle data


def oracle_path(source: Any) -> Path:
    """The oracle trajectory file of a data source (the synthetic world ships `oracle_<split>.jsonl`)."""
    if source.corpus_path is None:
        raise DataError(
            f"sft.data: 'oracle' needs oracle trajectories, but the source '{source.name}' has none; "
            "pass a samples.jsonl of collected trajectories instead"
        )
    path = Path(source.corpus_path).parent / f"oracle_{source.split or 'train'}.jsonl"
    if not path.is_file():
        raise DataError(
            f"sft.data: 'oracle' needs {path}, which does not exist (only the synthetic world ships oracle "
            "trajectories); pass a samples.jsonl of collected trajectories instead"
        )
    return path


@dataclass
class OracleData:
    """Oracle trajectories replayed through the real rollout engine, and how many were dropped and why."""

    trajectories: list[Trajectory]
    dropped: dict[str, int]


def retrieval_oracle_scripts(
    questions: Sequence[Question], retriever: Any, topk: int
) -> tuple[list[tuple[Question, list[str]]], int]:
    """The retrieval oracle, for real QA data where no gold search path exists: search with the question; when a
    passage of the top `topk` contains a gold answer (normalised, as `rewards.answer_in_retrieval`), answer with
    that gold answer; otherwise drop the question. It teaches the protocol (search, read, answer with a short
    span), not answers the passages do not hold. Returns ((question, model turns) pairs, number dropped)."""

    hits = retriever.search([q.question for q in questions], topk=topk) if questions else []
    kept, dropped = [], 0
    for question, found in zip(questions, hits):
        passages = [h.contents for h in found]
        answer = next((g for g in question.golden_answers if answer_in_retrieval(passages, g)), None)
        if answer is None:
            dropped += 1
            continue
        kept.append((question, [f"<search> {question.question} </search>", f"<answer> {answer} </answer>"]))
    return kept, dropped


def oracle_trajectories(
    source: Any,
    tokenizer: Any,
    retriever: Any,
    protocol_cfg: ProtocolConfig,
    rollout_cfg: RolloutConfig,
    *,
    limit: int | None = None,
    think: bool = True,
    batch_size: int = 256,
) -> OracleData:
    """Token-exact trajectories of the oracle's actions, as this run's rollouts would lay them out.

    The oracle's model turns are replayed by a `ScriptedBackend` through the real `RolloutEngine`, so the
    prompt template, the assistant prefix, the observations (what THIS retriever returns at this top-k) and the
    token budgets are exactly those of RL; the oracle file's own observation text is not used. With
    `think=False` the oracle's `<think>…</think>` texts are removed (actions only). A replay is kept
    only if it ends with the gold answer and the answer appears in what was retrieved (otherwise budgets or the
    retriever broke it, and training on it would teach an ungrounded answer).

    A source without an oracle file (real QA data) gets the retrieval oracle, :func:`retrieval_oracle_scripts`.
    """
    has_file = source.corpus_path is not None and (
        Path(source.corpus_path).parent / f"oracle_{source.split or 'train'}.jsonl").is_file()
    if has_file:
        records = load_oracle(oracle_path(source))
        by_uid = {q.uid: q for q in source.questions}
        pairs = [(by_uid[rec.uid], rec.model_turns()) for rec in records[:limit] if rec.uid in by_uid]
        dropped = {"wrong_or_unfinished": 0, "answer_not_retrieved": 0}
    else:
        pairs, no_answer = retrieval_oracle_scripts(source.questions[:limit], retriever, rollout_cfg.topk)
        dropped = {"answer_not_in_top_k": no_answer, "wrong_or_unfinished": 0, "answer_not_retrieved": 0}
    prefix = protocol_cfg.assistant_prefix
    questions, scripts = [], []
    for question, turns in pairs:
        if not think:
            turns = [_THINK.sub("", turn) for turn in turns]
        if prefix:
            if not turns[0].startswith(prefix):
                raise DataError(
                    f"protocol.assistant_prefix {prefix!r} does not open the oracle's first turn {turns[0][:40]!r}; "
                    "use a prefix the oracle starts with (e.g. '<think>' with think-style oracles) or none"
                )
            turns[0] = turns[0][len(prefix) :]
        questions.append(question)
        scripts.append(turns)
    out: list[Trajectory] = []
    for begin in range(0, len(questions), batch_size):
        backend = ScriptedBackend(tokenizer, scripts[begin : begin + batch_size], logprob=0.0, eos_after_turn=False)
        engine = RolloutEngine(backend, tokenizer, retriever, protocol_cfg, rollout_cfg)
        trajectories = engine.run(questions[begin : begin + batch_size], 1, seed=0)
        score_trajectories(trajectories, RewardConfig())
        for traj in trajectories:
            if traj.extras.get("em", 0.0) < 1.0 or traj.finish_reason != "answer":
                dropped["wrong_or_unfinished"] += 1
            elif not traj.extras.get("answer_in_retrieval", False):
                dropped["answer_not_retrieved"] += 1
            else:
                out.append(traj)
    if not out and questions:
        raise DataError(
            f"sft.data: all {len(questions)} oracle replays failed ({dropped}); the rollout budgets cannot hold the "
            f"oracle's turns (rollout.max_turns={rollout_cfg.max_turns}, rollout.max_turn_tokens="
            f"{rollout_cfg.max_turn_tokens}, rollout.max_obs_tokens={rollout_cfg.max_obs_tokens}) or the retriever "
            "misses the gold passages; raise them"
        )
    return OracleData(out, dropped)
