"""Rewards for QA search agents: answer normalisation, EM / F1 / cover-EM, a format state machine, reward config.

Sources: Search-R1 @ a14dc3a `verl/utils/reward_score/qa_em.py` (normalisation, EM, answer extraction) and
`qa_em_format.py` (v0.3 format reward, `is_valid_sequence`, `is_retrieval_correct`); SAPO @ d1d2d33
`verl/utils/reward_score/qa_em.py` (`compute_f1_scores`, `cover_em_check`). See peers.md §1.5.

Where we differ from Search-R1, on purpose:
- the answer is the last `<answer>` of the response only. Search-R1 parses prompt + response and so needs two or
  more matches, the first being the prompt's `<answer> Beijing </answer>` example (Search-R1 issue #79);
- the format check does not look for `<|im_start|>assistant` (Qwen's chat template): it runs on the response,
  with the rollout's assistant prefix put back in front;
- `<think>` is optional before each action (Search-R1's state machine requires it);
- more than `max_answer_tags` (10) `<answer>` tags scores 0 (verl's search-R1-like reward divides by 4 instead).

This module depends on the standard library (and `searchrl.settings`) only; trajectories are read duck-typed (see
`score_trajectory`).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from searchrl.errors import SettingError
from searchrl.protocol import extract_answer
from searchrl.settings import build, check, setting

if TYPE_CHECKING:
    from searchrl.rollout.types import Trajectory

METRICS = ("em", "f1")
TURN_SCORES = ("silver", "gold")  # CalibAdv's per-search-turn correctness: its silver documents, or gold passages
_TAG_RE = re.compile(r"(</?(?:think|search|information|answer)>)")
_PUNCTUATION = frozenset(string.punctuation)
_YES_NO = ("yes", "no", "noanswer")


def _search_r1_normalize(text: str) -> str:
    """SQuAD normalisation in Search-R1's order: lower → drop `string.punctuation` → replace the words a/an/the by a
    space → collapse whitespace (`qa_em.normalize_answer`)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def normalize_answer(text: str) -> str:
    """Search-R1's normalisation (`_search_r1_normalize`) with Unicode NFKC before its steps, so that the same
    answer in decomposed (NFD) and composed form, or in compatibility forms (full-width letters, ligatures, a
    non-breaking space), normalises alike: gold "Müller" written as u + U+0308 matches a model's "Müller".

    Computed as steps(NFKC(steps(text))): NFKC runs on Search-R1's result and the steps run again on its output
    (NFKC can produce ASCII punctuation or an article, e.g. from full-width forms). The result depends on the
    text only through Search-R1's normal form, so two answers that Search-R1's normaliser matches still match:
    relative to it, this can only raise EM."""
    return _search_r1_normalize(unicodedata.normalize("NFKC", _search_r1_normalize(text)))


def _as_list(golds: str | Iterable[str]) -> list[str]:
    return [golds] if isinstance(golds, str) else list(golds)


def exact_match(prediction: str, golds: str | Iterable[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer, else 0.0 (Search-R1 `em_check`)."""
    pred = normalize_answer(prediction)
    return float(any(normalize_answer(g) == pred for g in _as_list(golds)))


def cover_em(prediction: str, golds: str | Iterable[str]) -> float:
    """1.0 if any normalised gold answer is a substring of the normalised prediction (SAPO `cover_em_check`,
    Search-R1 `subem_check`)."""
    pred = normalize_answer(prediction)
    return float(any(normalize_answer(g) in pred for g in _as_list(golds)))


def f1(prediction: str, golds: str | Iterable[str]) -> float:
    """Token F1 between normalised prediction and gold, maximised over golds (SAPO `compute_f1_scores`).

    F1 = 2·P·R/(P+R), P = |common|/|pred tokens|, R = |common|/|gold tokens|, `common` the multiset intersection.
    As in SAPO's (and FlashRAG's) code, when either side normalises to "yes", "no" or "noanswer", the pair scores
    0 unless both are equal, so "no" does not earn partial credit against "yes no".
    """
    pred = normalize_answer(prediction)
    pred_tokens = pred.split()
    best = 0.0
    for gold in _as_list(golds):
        gold_norm = normalize_answer(gold)
        if (pred in _YES_NO or gold_norm in _YES_NO) and pred != gold_norm:
            continue
        common = Counter(pred_tokens) & Counter(gold_norm.split())
        num_same = sum(common.values())
        if num_same == 0:
            continue
        precision = num_same / len(pred_tokens)
        recall = num_same / len(gold_norm.split())
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


# Transitions of the format automaton: (state, tag) -> next state. Text outside tags must be whitespace.
_FORMAT_TRANSITIONS = {
    ("start", "<think>"): "in_think",
    ("start", "<search>"): "in_search",
    ("start", "<answer>"): "in_answer",
    ("in_think", "</think>"): "after_think",
    ("after_think", "<search>"): "in_search",
    ("after_think", "<answer>"): "in_answer",
    ("in_search", "</search>"): "after_search",
    ("after_search", "<information>"): "in_information",
    ("in_information", "</information>"): "start",
    ("in_answer", "</answer>"): "end",
}
_INSIDE_STATES = ("in_think", "in_search", "in_information", "in_answer")


def format_valid(response_text: str, assistant_prefix: str = "") -> bool:
    """Whether the response follows `(<think>…</think>? <search>…</search> <information>…</information>)*
    <think>…</think>? <answer>…</answer>`, with nothing but whitespace outside the tags.

    `assistant_prefix` (the rollout's reply opener, e.g. "<search>") is put back in front of the response, so the
    check never depends on a chat template. Judgement calls, documented: text outside tags (including Search-R1's
    invalid-action message, which the environment inserts after a bad turn) makes the response invalid, as in
    Search-R1's `is_valid_sequence`; `<think>` is optional; tags may not nest; an `<information>` block is only
    legal right after `</search>`, so a model that writes `<information>` itself is invalid, and nothing may
    follow the final `</answer>` except whitespace.
    """
    state = "start"
    for part in _TAG_RE.split(assistant_prefix + response_text):
        if _TAG_RE.fullmatch(part):
            state = _FORMAT_TRANSITIONS.get((state, part), "")
            if not state:
                return False
        elif part.strip() and state not in _INSIDE_STATES:
            return False
    return state == "end"


def answer_in_retrieval(retrieved: Trajectory | Iterable[str], golds: str | Iterable[str]) -> bool:
    """Whether any normalised gold answer occurs in any retrieved passage (Search-R1 `is_retrieval_correct`).

    `retrieved` is a trajectory (its turns' retrieved `docs`) or an iterable of passage texts."""
    if hasattr(retrieved, "turns"):
        texts: Iterable[str] = (doc for turn in retrieved.turns for doc in turn.docs)
    else:
        texts = retrieved
    gold_norms = [g for g in (normalize_answer(g) for g in _as_list(golds)) if g]
    return any(g in normalize_answer(t) for t in texts for g in gold_norms)


@dataclass(frozen=True)
class RewardConfig:
    """How a trajectory is scored (config section `reward`). All shaping terms default to 0 (pure answer metric);
    the Search-R1 v0.3 weights are `RewardConfig.search_r1_v03()`, or `preset: search_r1_v03`."""

    metric: str = setting("em", "\"em\" (Search-R1) or \"f1\" (SAPO, CalibAdv).", choices=METRICS)
    format_score: float = setting(0.0, "Search-R1 v0.3 `structure_format_score` (0.2 there).", ge=0, le=1)
    final_format_score: float = setting(
        0.0, "Search-R1 v0.3 score of a wrong answer in an invalid format (0.1 there).", ge=0, le=1
    )
    retrieval_score: float = setting(
        0.0, "Search-R1 v0.3 bonus when a gold answer was retrieved (0.0 there).", ge=0, le=1
    )
    max_answer_tags: int = setting(10, "more `<answer>` tags than this in the model text scores 0 (anti-spam).")
    turn_scores: str = setting(
        "silver", "CalibAdv's per-search-turn correctness c: \"silver\" (CalibAdv: documents the group's correct "
        "rollouts retrieved) or \"gold\" (a turn that retrieves a new supporting passage of the question, where the "
        "data names them: the world, HotpotQA)", choices=TURN_SCORES,
    )

    def __post_init__(self) -> None:
        check(self, "reward")
        if self.format_score + self.retrieval_score > 1.0 or self.format_score + self.final_format_score > 1.0:
            raise SettingError(
                "", "format_score + retrieval_score and format_score + final_format_score must each be <= 1", "reward"
            )

    @classmethod
    def search_r1_v03(cls, metric: str = "em") -> RewardConfig:
        """Search-R1 v0.3 (`main_ppo_format`, paper 2 scripts): structure 0.2, final format 0.1, retrieval 0."""
        return cls(metric=metric, format_score=0.2, final_format_score=0.1, retrieval_score=0.0)

    @classmethod
    def presets(cls) -> dict[str, RewardConfig]:
        """The named weightings a `preset:` key may start from."""
        return {"search_r1_v03": cls.search_r1_v03()}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None, *, where: str = "reward") -> RewardConfig:
        """From plain data (YAML, verl's `reward_kwargs`); see `searchrl.settings.build`."""
        return build(cls, values, where)


def shaped_reward(
    metric_value: float, has_answer: bool, valid: bool, retrieved_gold: bool, cfg: RewardConfig
) -> float:
    """Search-R1 v0.3's scoring table, extended linearly to F1.

    With m the answer metric (EM or F1), f = format_score, r = retrieval_score·[gold retrieved],
    g = final_format_score:
        no answer, invalid format:  0
        no answer, valid format:    f + r
        answer, valid format:       (f + r) + (1 − f − r)·m
        answer, invalid format:     g + (1 − f − g)·m
    For EM (m ∈ {0, 1}) this is Search-R1's table exactly (`qa_em_format.compute_score_em`): 1.0 correct and valid,
    1 − f = 0.8 correct and invalid, f (+ r) = 0.2 wrong and valid, g = 0.1 wrong and invalid, 0 for no answer and
    invalid. With all weights 0 it is m when there is an answer and 0 otherwise.
    """
    base = cfg.format_score + (cfg.retrieval_score if retrieved_gold else 0.0)
    if not has_answer:
        return base if valid else 0.0
    if valid:
        return base + (1.0 - base) * metric_value
    return cfg.final_format_score + (1.0 - cfg.format_score - cfg.final_format_score) * metric_value


def model_text(traj: Trajectory) -> str:
    """What the model wrote: the assistant prefix (from `extras["assistant_prefix"]`) and the turns' texts."""
    return str(traj.extras.get("assistant_prefix", "")) + "".join(turn.text for turn in traj.turns)


def response_text(traj: Trajectory) -> str:
    """The response as the model saw it: prefix, then each turn's text followed by its observation.

    Observations come from `extras["observations"]` (one string per turn, set by the rollout engine); without it,
    a search turn's observation is rebuilt as an `<information>` block over its retrieved docs."""
    observations: Sequence[str] | None = traj.extras.get("observations")
    parts = [str(traj.extras.get("assistant_prefix", ""))]
    for i, turn in enumerate(traj.turns):
        parts.append(turn.text)
        if observations is not None:
            parts.append(observations[i])
        elif turn.query is not None and turn.docs:
            parts.append("\n\n<information>" + "\n".join(turn.docs) + "</information>\n\n")
    return "".join(parts)


def score_trajectory(traj: Trajectory, cfg: RewardConfig) -> float:
    """Score one trajectory, set `traj.reward`, fill `traj.extras` and return the reward.

    Fills `extras`: `em`, `f1`, `cover_em` (0.0 when there is no answer), `format_valid`, `answer_in_retrieval`,
    `answer_tags` (count of `<answer>` in the model text). The answer is `traj.answer` (the engine's parse of the
    model text); if that is None it is re-extracted from the model text. A trajectory that ended in
    `retrieval_error` is scored like any other; the trainer excludes it by `finish_reason`.
    """
    golds = traj.question.golden_answers
    text = model_text(traj)
    answer = traj.answer if traj.answer is not None else extract_answer(text)
    valid = format_valid(response_text(traj), "") and not any(
        "<information>" in t.text or "</information>" in t.text for t in traj.turns
    )
    retrieved_gold = answer_in_retrieval(traj, golds)
    answer_tags = text.count("<answer>")
    em_value = exact_match(answer, golds) if answer is not None else 0.0
    f1_value = f1(answer, golds) if answer is not None else 0.0
    traj.extras.update(
        em=em_value,
        f1=f1_value,
        cover_em=cover_em(answer, golds) if answer is not None else 0.0,
        format_valid=valid,
        answer_in_retrieval=retrieved_gold,
        answer_tags=answer_tags,
    )
    metric_value = em_value if cfg.metric == "em" else f1_value
    if answer_tags > cfg.max_answer_tags:
        reward = 0.0
    else:
        reward = shaped_reward(metric_value, answer is not None, valid, retrieved_gold, cfg)
    traj.reward = reward
    return reward


def score_trajectories(trajectories: Iterable[Trajectory], cfg: RewardConfig) -> list[float]:
    """`score_trajectory` over a batch; returns the rewards in order."""
    return [score_trajectory(t, cfg) for t in trajectories]


# ---------------------------------------------------------------------------------------------- step rewards
# CalibAdv's intermediate-step correctness: a score c in [0, 1] for each search turn (arXiv 2604.18235), which its
# advantage estimator (searchrl.algorithms.calibadv) uses to penalise the search turns of wrong answers less.


def word_levenshtein(a: Sequence[str], b: Sequence[str]) -> int:
    """Edit distance between two word lists (insert, delete, substitute; each cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, word_a in enumerate(a, start=1):
        current = [i]
        for j, word_b in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word_a != word_b)))
        previous = current
    return previous[-1]


def word_edit_similarity(text_a: str, text_b: str) -> float:
    """1 − Levenshtein(words_a, words_b) / max(|words_a|, |words_b|); 0.0 when both are empty.

    Words are whitespace-split. Source: wujwyi/CalibAdv@6ae1c4e: verl/trainer/main_ppo_format.py
    ``word_edit_similarity`` (python-Levenshtein over word lists; two empty texts score 0, not 1).
    """
    words_a, words_b = text_a.split(), text_b.split()
    longest = max(len(words_a), len(words_b))
    if longest == 0:
        return 0.0
    return 1.0 - word_levenshtein(words_a, words_b) / longest


def silver_turn_scores(
    turn_doc_ids: Sequence[Sequence[Sequence[str]]],
    turn_thinks: Sequence[Sequence[str]],
    f1_rewards: Sequence[float],
    format_valid: Sequence[bool],
    *,
    f1_threshold: float = 0.7,
    think_similarity: float = 0.5,
    max_shared_docs: int = 1,
) -> list[list[float]]:
    """CalibAdv per-search-turn correctness scores c_{i,t} for ONE group (the G rollouts of one question).

    Inputs, per rollout i: ``turn_doc_ids[i][t]`` the document ids retrieved by search turn t, ``turn_thinks[i][t]``
    the think text of that turn, ``f1_rewards[i]`` and ``format_valid[i]``. Returns, per rollout, the list of c
    for its search turns, or ``[]`` when the rollout gets no scores (invalid format, or no silver set).

    1. Correct set C = {i : format_valid_i ∧ F1_i ≥ ``f1_threshold``}; if empty, every rollout gets ``[]``.
       R* = max_{i∈C} F1_i; silver set S = ∪ of all documents of the rollouts in C with F1 = R* (ties pooled).
    2. For every format-valid rollout and each search turn t:
       h = #{d ∈ D_t : d ∈ S and d not retrieved earlier in this rollout (earlier turns, or earlier in D_t)};
       h = 0 if word_edit_similarity(think_t, think_s) > ``think_similarity`` for any earlier turn s;
       h = 0 if |set(D_t) ∩ set(D_s)| > ``max_shared_docs`` for any earlier turn s;
       c_t = h / |D_t| if h > 0 else 0.0.

    Source: wujwyi/CalibAdv@6ae1c4e: verl/trainer/main_ppo_format.py ``RewardManager.__call__`` (silver set and
    ``query_score_calculator="old"``). Differs from the official code in: "no credit" is returned as 0.0; the
    official code stores 1e-6 (both mean no soft penalty, since only c > 1e-6 counts).
    """
    n = len(f1_rewards)
    if not (len(turn_doc_ids) == len(turn_thinks) == len(format_valid) == n):
        raise ValueError(
            "silver_turn_scores needs one entry per rollout in each argument; got "
            f"turn_doc_ids={len(turn_doc_ids)}, turn_thinks={len(turn_thinks)}, f1_rewards={n}, "
            f"format_valid={len(format_valid)}"
        )
    for i in range(n):
        if len(turn_doc_ids[i]) != len(turn_thinks[i]):
            raise ValueError(
                f"rollout {i}: {len(turn_doc_ids[i])} document lists but {len(turn_thinks[i])} think texts; "
                "give one of each per search turn"
            )
    correct = [i for i in range(n) if format_valid[i] and f1_rewards[i] >= f1_threshold]
    if not correct:
        return [[] for _ in range(n)]
    best = max(f1_rewards[i] for i in correct)
    silver = {doc for i in correct if f1_rewards[i] == best for docs in turn_doc_ids[i] for doc in docs}

    scores: list[list[float]] = []
    for i in range(n):
        if not format_valid[i]:
            scores.append([])
            continue
        seen: set[str] = set()
        earlier_thinks: list[str] = []
        earlier_docs: list[set[str]] = []
        row: list[float] = []
        for docs, think in zip(turn_doc_ids[i], turn_thinks[i]):
            hits = 0
            for doc in docs:
                if doc in silver and doc not in seen:
                    hits += 1
                seen.add(doc)
            if any(word_edit_similarity(think, prev) > think_similarity for prev in earlier_thinks):
                hits = 0
            doc_set = set(docs)
            if any(len(doc_set & prev) > max_shared_docs for prev in earlier_docs):
                hits = 0
            row.append(hits / len(docs) if hits > 0 else 0.0)
            earlier_thinks.append(think)
            earlier_docs.append(doc_set)
        scores.append(row)
    return scores


def rows_by_group(group_ids: Sequence[str]) -> list[list[int]]:
    """The row indices of each group, groups in order of first appearance."""
    groups: dict[str, list[int]] = {}
    for row, gid in enumerate(group_ids):
        groups.setdefault(gid, []).append(row)
    return list(groups.values())


def gold_turn_scores(traj: Trajectory) -> list[float] | None:
    """Intermediate-step correctness from the question's gold supporting passages: c_t = 1 for a search turn that
    retrieved a supporting passage no earlier turn of the trajectory retrieved, else 0 (the step found new
    evidence). None when the question names no supporting passages (`metadata.support_doc_ids`, which the
    synthetic world and HotpotQA give; NQ does not)."""
    support = set((traj.question.metadata or {}).get("support_doc_ids") or ())
    if not support:
        return None
    seen: set[str] = set()
    scores = []
    for turn in (t for t in traj.turns if t.query is not None):
        found = (set(turn.doc_ids) & support) - seen
        scores.append(1.0 if found else 0.0)
        seen.update(turn.doc_ids)
    return scores


def turn_scores_by_group(trajectories: Sequence[Trajectory], group_ids: Sequence[str],
                         kind: str = "silver") -> list[list[float]]:
    """CalibAdv's per-search-turn correctness scores c (one list per trajectory, one score per search turn).

    `kind` (`reward.turn_scores`): "silver", CalibAdv's own, group by group (`silver_turn_scores`: documents the
    group's correct rollouts retrieved); "gold", from the question's supporting passages (`gold_turn_scores`),
    falling back to silver for a question that names none."""
    if kind not in TURN_SCORES:
        raise ValueError(f"unknown turn score kind {kind!r}; allowed: {list(TURN_SCORES)}")
    scores: list[list[float]] = [[] for _ in trajectories]
    for rows in rows_by_group(group_ids):
        members = [trajectories[i] for i in rows]
        gold = [gold_turn_scores(tr) for tr in members] if kind == "gold" else [None] * len(members)
        if all(g is not None for g in gold):
            group_scores = gold
        else:
            searches = [[turn for turn in tr.turns if turn.query is not None] for tr in members]
            group_scores = silver_turn_scores(
                [[turn.doc_ids for turn in s] for s in searches],
                [[turn.think for turn in s] for s in searches],
                [float(tr.extras.get("f1", 0.0)) for tr in members],
                [bool(tr.extras.get("format_valid", False)) for tr in members],
            )
        for i, row_scores in zip(rows, group_scores):
            scores[i] = list(row_scores)
    return scores
