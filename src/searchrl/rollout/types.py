"""Records a rollout produces: one `Turn` per generation call, one `Trajectory` per sample."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from searchrl.data.types import Question

FINISH_REASONS = ("answer", "max_turns", "length", "retrieval_error")


@dataclass
class Turn:
    """One model generation call and what the environment did with it."""

    text: str  # decoded generated text of this turn
    think: str  # text of the last <think>…</think> in this turn ("" if none)
    action: str  # "search" | "answer" | "invalid" | "none" (a token budget ended the turn before any action)
    query: str | None = None  # the executed search query (after truncation)
    doc_ids: list[str] = field(default_factory=list)  # retrieved doc ids ([] if no search)
    docs: list[str] = field(default_factory=list)  # retrieved contents, same order
    query_truncated: bool = False


@dataclass
class Trajectory:
    """One sampled episode, token-exact: decoding `response_ids` gives exactly the text the model saw."""

    question: Question
    group_id: str  # shared by the G samples of one question
    prompt_ids: list[int]
    response_ids: list[int]  # sampled and observation tokens, in order
    response_mask: list[int]  # 1 sampled, 0 observation; same length as response_ids
    # Same length; 0.0 on observation tokens. The log-prob under the distribution sampled from: softmax(logits / T)
    # after top-k/top-p filtering, or the raw softmax when greedy (`searchrl.rollout.backend.sample_tokens`).
    sampling_logprobs: list[float]
    turns: list[Turn]
    answer: str | None  # content of the last <answer> in the sampled text
    num_searches: int  # searches sent to the retriever (a search in the final turn is not executed)
    finish_reason: str  # one of FINISH_REASONS
    reward: float = 0.0  # filled by the reward function
    # The engine sets "assistant_prefix" (str), "observations" (one str per turn, "" where none) and, on a
    # retrieval failure, "retrieval_error" (the message); rewards add em, f1, cover_em, format_valid, ...
    extras: dict = field(default_factory=dict)
    # (len(prompt_ids) + len(response_ids), H): the hidden states entering the policy's block k at each token, as
    # the sampler computed them, when its backend records them (`HFBackend.record_states_at` = k, which the trainer
    # sets to its first trained block); None otherwise. Not written to sample files.
    sampler_states: Any = None


# A common prefix shorter than this is computed with each sequence rather than in a forward of its own: below it
# the extra forward costs more than it saves (docs/benchmarks.md, "The shared-prefix threshold": with 8, a template
# of about a dozen tokens took one more forward per rollout, and a small RL step was 1.47x as long).
MIN_SHARED_PREFIX = 16


def common_prefix_len(sequences: Sequence[Sequence[int]]) -> int:
    """How many leading tokens all sequences share."""
    n = min(len(s) for s in sequences)
    for k in range(n):
        if any(s[k] != sequences[0][k] for s in sequences):
            return k
    return n


def shared_prefix_len(sequences: Sequence[Sequence[int]]) -> int:
    """The leading tokens that several sequences share and that are worth one forward of their own (the
    instruction template of a batch's prompts): their common prefix when it has at least `MIN_SHARED_PREFIX`
    tokens, else 0. The rollout prefills it once per batch; a training forward computes it once per micro-batch."""
    if len(sequences) < 2:
        return 0
    common = common_prefix_len(sequences)
    return common if common >= MIN_SHARED_PREFIX else 0
