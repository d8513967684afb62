"""The per-trajectory record the agent loop hands to verl, and the dataset-row conventions it reads.

verl moves a trajectory's non-tensor facts through ``AgentLoopOutput.extra_fields``: they become a
``non_tensor_batch`` column (``searchrl``), and verl's reward manager merges them into the ``extra_info`` it
gives ``compute_score``. The record is plain JSON-able data (it crosses Ray processes inside numpy object
arrays): the ``Trajectory`` without its token ids, so the reward function can rebuild the trajectory and score
it with ``searchrl.rewards.score_trajectory`` exactly as searchrl's own trainer does, and the CalibAdv
estimator can read the retrieved document ids and think text of every turn.

Dataset rows (verl ``RLHFDataset``; see examples/verl/prepare_data.py): the question text in a ``question``
column or ``extra_info.question`` (else read back from a Search-R1 prompt's ``Question: ...``); gold answers in
``reward_model.ground_truth`` as ``{"target": [...]}``
(Search-R1's parquet), a list, or a string; ``data_source``; an id in ``extra_info.id``, ``extra_info.index`` or ``id``.

This module imports no verl code (the reward function runs in verl's reward workers and in tests alike).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from searchrl.data.loaders import question_from_searchr1_prompt
from searchrl.data.types import Question
from searchrl.errors import DataError
from searchrl.rollout.types import Trajectory, Turn

RECORD_KEY = "searchrl"
# Reward facts score_trajectory puts in Trajectory.extras that the record carries (CalibAdv reads f1, format_valid).
_FACTS = ("em", "f1", "cover_em", "format_valid", "answer_in_retrieval")


def _plain(value: Any) -> Any:
    """numpy arrays and scalars (what parquet rows hold after pandas) as Python lists and values."""
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else value


def golden_answers(ground_truth: Any, where: str = "reward_model.ground_truth") -> list[str]:
    """The gold answers of a row: ``{"target": [...]}`` (Search-R1), a list of strings, or one string."""
    value = _plain(ground_truth)
    if isinstance(value, Mapping):
        if "target" not in value:
            raise DataError(f"{where}: a mapping must hold the answers under 'target', got keys {sorted(value)}")
        value = _plain(value["target"])
        where += ".target"
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence) and value and all(isinstance(v, str) for v in value):
        return list(value)
    raise DataError(f"{where}: expected a non-empty list of answer strings or one string, got {value!r}")


def question_from_row(row: Mapping[str, Any]) -> Question:
    """The searchrl ``Question`` of one verl dataset row (the keyword arguments verl gives an agent loop)."""
    extra = _plain(row.get("extra_info")) or {}
    if not isinstance(extra, Mapping):
        raise DataError(f"extra_info: expected a mapping, got {type(extra).__name__}")
    text = _plain(row.get("question", extra.get("question")))
    if not isinstance(text, str) or not text.strip():  # Search-R1's own parquet: read it back from the prompt
        text = question_from_searchr1_prompt(row.get("raw_prompt", row.get("prompt")))
    if not isinstance(text, str) or not text.strip():
        raise DataError(
            "dataset row has no question text: put it in a 'question' column or in extra_info.question "
            "(examples/verl/prepare_data.py writes both), or use a Search-R1 prompt ('... Question: ...'); the "
            "searchrl agent loop builds the Search-R1 prompt from the question"
        )
    reward_model = _plain(row.get("reward_model")) or {}
    if not isinstance(reward_model, Mapping) or "ground_truth" not in reward_model:
        raise DataError("dataset row has no reward_model.ground_truth (the gold answers)")
    row_id = extra.get("id", extra.get("index", row.get("id", row.get("index", ""))))
    return Question(
        id=str(_plain(row_id)),
        question=text,
        golden_answers=golden_answers(reward_model["ground_truth"]),
        data_source=str(_plain(row.get("data_source", ""))),
    )


def trajectory_record(traj: Trajectory, turn_tokens: Sequence[int]) -> dict[str, Any]:
    """The JSON-able record of a scored trajectory (``score_trajectory`` already filled ``traj.extras``).

    ``turn_tokens[t]``: how many tokens turn t sampled (a turn with none leaves no run in the response mask).
    """
    if len(turn_tokens) != len(traj.turns):
        raise ValueError(f"{len(turn_tokens)} token counts for {len(traj.turns)} turns")
    facts = {k: traj.extras[k] for k in _FACTS if k in traj.extras}
    return {
        "turns": [dataclasses.asdict(t) for t in traj.turns],
        "turn_tokens": [int(n) for n in turn_tokens],
        "observations": list(traj.extras.get("observations", [""] * len(traj.turns))),
        "assistant_prefix": str(traj.extras.get("assistant_prefix", "")),
        "answer": traj.answer,
        "num_searches": traj.num_searches,
        "finish_reason": traj.finish_reason,
        **{k: (bool(v) if isinstance(v, bool) else float(v)) for k, v in facts.items()},
    }


def token_free_trajectory(question: Question, turns: list[Turn], *, answer: str | None, num_searches: int,
                          finish_reason: str, assistant_prefix: str, observations: list[str]) -> Trajectory:
    """A ``Trajectory`` without token ids (verl holds the tokens): what ``score_trajectory`` reads."""
    return Trajectory(
        question=question, group_id=question.uid, prompt_ids=[], response_ids=[], response_mask=[],
        sampling_logprobs=[], turns=turns, answer=answer, num_searches=num_searches, finish_reason=finish_reason,
        extras={"assistant_prefix": assistant_prefix, "observations": observations},
    )


def trajectory_from_record(record: Mapping[str, Any], question: Question) -> Trajectory:
    """Rebuild the token-free ``Trajectory`` of a record, for ``score_trajectory``."""
    try:
        return token_free_trajectory(
            question, [Turn(**dict(t)) for t in record["turns"]], answer=record["answer"],
            num_searches=int(record["num_searches"]), finish_reason=str(record["finish_reason"]),
            assistant_prefix=record["assistant_prefix"], observations=list(record["observations"]),
        )
    except (KeyError, TypeError) as exc:
        raise DataError(f"extra_info.{RECORD_KEY}: not a searchrl trajectory record ({exc})") from None
