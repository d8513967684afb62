"""The reward function for verl's ``custom_reward_function``: Search-R1 EM / F1 / format, from searchrl.rewards.

    reward.custom_reward_function.path=pkg://searchrl.integrations.verl.reward
    reward.custom_reward_function.name=compute_score
    +reward.custom_reward_function.reward_kwargs.metric=f1      # optional: RewardConfig fields

verl's reward manager calls ``compute_score(data_source, solution_str, ground_truth, extra_info)`` with the
decoded response (observations included) and merges the agent loop's ``extra_fields`` into ``extra_info``.

- Rows from the ``searchrl_search_r1`` agent loop carry the trajectory record (``extra_info["searchrl"]``): the
  trajectory is rebuilt from it and scored by ``searchrl.rewards.score_trajectory``, the function searchrl's own
  trainer uses, so a verl run and a searchrl run reward the same text identically.
- Other rows are scored from ``solution_str``: it is split into model turns and environment observations at the
  protocol's observation markers (``\\n\\n<information>…</information>\\n\\n`` and the invalid-action message),
  and the resulting trajectory is scored the same way.

Returns ``{"score": reward, "em", "f1", "cover_em", "format_valid", "answer_in_retrieval", "has_answer"}``
(numbers; verl logs the extra keys). ``reward_kwargs`` are ``RewardConfig`` fields (``metric`` "em" or "f1",
``format_score``, ``final_format_score``, ``retrieval_score``, ``max_answer_tags``) or ``preset``; the default is
Search-R1's pure exact match.

This module imports no verl code.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from searchrl.data.types import Question
from searchrl.integrations.verl.records import RECORD_KEY, golden_answers, token_free_trajectory, trajectory_from_record
from searchrl.protocol import INVALID_ACTION_MESSAGE, OBSERVATION_CLOSE, OBSERVATION_OPEN
from searchrl.rewards import RewardConfig, extract_answer, score_trajectory
from searchrl.rollout.types import Trajectory, Turn

_REPORTED = ("em", "f1", "cover_em", "format_valid", "answer_in_retrieval")
# An environment observation inside a decoded response: a search result block or the invalid-action message.
_OBSERVATION_RE = re.compile(
    f"({re.escape(OBSERVATION_OPEN)}.*?{re.escape(OBSERVATION_CLOSE)}|{re.escape(INVALID_ACTION_MESSAGE)})",
    re.DOTALL,
)
_WHERE = "reward.custom_reward_function.reward_kwargs"
_CONFIGS: dict[tuple[tuple[str, Any], ...], RewardConfig] = {}


def reward_config(reward_kwargs: Mapping[str, Any]) -> RewardConfig:
    """The ``RewardConfig`` of verl's ``reward_kwargs`` (cached; errors name the key)."""
    key = tuple(sorted(reward_kwargs.items()))
    if key not in _CONFIGS:
        _CONFIGS[key] = RewardConfig.from_dict(dict(reward_kwargs), where=_WHERE)
    return _CONFIGS[key]


def trajectory_from_text(solution_str: str, question: Question) -> Trajectory:
    """A token-free trajectory from a decoded response: model turns alternate with environment observations."""
    parts = _OBSERVATION_RE.split(solution_str)  # [turn, obs, turn, obs, ..., turn]
    texts, observations = parts[0::2], parts[1::2] + [""]
    turns: list[Turn] = []
    for text, observation in zip(texts, observations):
        if observation.startswith(OBSERVATION_OPEN):
            body = observation[len(OBSERVATION_OPEN) : -len(OBSERVATION_CLOSE)]
            turns.append(Turn(text=text, think="", action="search", query="", docs=[body]))
        else:
            turns.append(Turn(text=text, think="", action="invalid" if observation else "none"))
    if turns and not turns[-1].text and len(turns) > 1:  # nothing after the last observation
        turns.pop()
        observations = observations[: len(turns)]
    return token_free_trajectory(
        question, turns, answer=extract_answer("".join(t.text for t in turns)),
        num_searches=sum(1 for t in turns if t.query is not None), finish_reason="answer", assistant_prefix="",
        observations=observations[: len(turns)],
    )


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **reward_kwargs: Any,
) -> dict[str, float]:
    """Score one response for verl (see the module docstring); ``score`` is the reward."""
    cfg = reward_config(reward_kwargs)
    question = Question(id="", question="", golden_answers=golden_answers(ground_truth), data_source=str(data_source))
    record = (extra_info or {}).get(RECORD_KEY)
    if isinstance(record, Mapping):
        traj = trajectory_from_record(record, question)
    else:
        traj = trajectory_from_text(solution_str, question)
    reward = score_trajectory(traj, cfg)
    out = {"score": float(reward), "has_answer": float(traj.answer is not None)}
    out.update({k: float(traj.extras[k]) for k in _REPORTED})
    return out
