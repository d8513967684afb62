"""The search-again decision: does RL teach *when* to search, or only *how often*?

After every observation the agent chooses between another `<search>` and its `<answer>`. This module scores
that choice by teacher forcing, on fixed contexts (one model's greedy trajectories), so that models can be
compared on the very same decisions:

    log-odds(c) = log π(<search> | c) − log π(<answer> | c)        (summed over each tag's tokens)

For questions whose number of hops is known (the synthetic world records its supporting documents), a
decision point after k searches *needs another search* when k < hops. From the log-odds and that label:

- `correct`: decisions that search iff another search is needed (log-odds > 0);
- `auc`: the probability that a point needing another search has higher log-odds than one that does not, i.e.
  how well the model tells them apart, whatever its overall inclination to search;
- `best_shift`: the most correct decisions reachable by adding one shared constant δ to every log-odds, and δ.
  A policy change that only moves δ (how often the agent searches) cannot do better than this.

Comparing two models (before and after RL) separates the change into the shared shift of the mean log-odds
and the change in AUC: the first moves every question type at once, only the second helps one type without
costing another (measured for the demo in docs/demo.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from searchrl.models import body_and_head, module_device

SEARCH_TAG = "<search>"
ANSWER_TAG = "<answer>"
_OBS_END = re.compile(r"</information>\s*")


@dataclass(frozen=True)
class DecisionPoint:
    """One choice between searching again and answering, after `searches` observations of a trajectory."""

    uid: str
    group: str  # the question's type (world) or its dataset
    searches: int
    needs_search: bool | None  # None when the question's number of hops is unknown
    context: str  # prompt + response text up to the end of the observation


def decision_points(records: Sequence[Mapping[str, Any]], prompts: Mapping[str, str],
                    max_turns: int) -> list[DecisionPoint]:
    """The decision points of evaluation records (`EvalReport.records`), in record order.

    `prompts[uid]` is the prompt text without the assistant prefix (the record's text starts with that prefix).
    Points after `max_turns` searches are left out: the engine allows no further search there.
    """
    points = []
    for r in records:
        text, hops = r["text"], r.get("hops")
        for k, match in enumerate(_OBS_END.finditer(text), start=1):
            if k >= max_turns:
                break
            points.append(DecisionPoint(
                uid=r["uid"], group=str(r.get("type") or r.get("dataset") or "all"), searches=k,
                needs_search=None if hops is None else k < int(hops),
                context=prompts[r["uid"]] + text[: match.end()],
            ))
    return points


def decision_log_odds(model: torch.nn.Module, tokenizer: Any, contexts: Sequence[str], *,
                      batch_size: int = 16) -> torch.Tensor:
    """log π(SEARCH_TAG | c) − log π(ANSWER_TAG | c) for each context c, (N,) float32 (float64 for a float64 model).

    The tag is tokenised on its own and appended to the context's tokens, as the rollout engine appends a
    turn's generated tokens after an observation's. Runs on the model's device; the scores come back on the CPU.
    """
    tags = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in (SEARCH_TAG, ANSWER_TAG)]
    rows = [(i, j, tokenizer(c)["input_ids"]) for i, c in enumerate(contexts) for j in range(2)]
    body, head = body_and_head(model)
    dtype = torch.promote_types(next(model.parameters()).dtype, torch.float32)  # a float64 model stays float64
    scores = torch.zeros(len(contexts), 2, dtype=dtype)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    device = module_device(model)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for start in range(0, len(rows), batch_size):
                chunk = rows[start : start + batch_size]
                seqs = [ctx + tags[j] for _, j, ctx in chunk]
                width = max(map(len, seqs))
                ids = torch.full((len(seqs), width), pad, dtype=torch.long)
                mask = torch.zeros((len(seqs), width), dtype=torch.long)
                for b, s in enumerate(seqs):
                    ids[b, : len(s)] = torch.tensor(s)
                    mask[b, : len(s)] = 1
                out = body(input_ids=ids.to(device), attention_mask=mask.to(device), use_cache=False)
                hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
                for b, (i, j, ctx) in enumerate(chunk):
                    # The tag's tokens are predicted from the positions just before each of them.
                    positions = torch.arange(len(ctx) - 1, len(ctx) - 1 + len(tags[j]), device=device)
                    logits = head(hidden[b, positions]).to(dtype)
                    target = torch.tensor(tags[j], device=device)
                    scores[i, j] = float(torch.log_softmax(logits, -1).gather(1, target[:, None]).sum())
    finally:
        model.train(was_training)
    return scores[:, 0] - scores[:, 1]


def _auc(positive: Sequence[float], negative: Sequence[float]) -> float | None:
    """P(x > y) + ½·P(x = y) for x from `positive`, y from `negative` (the Mann-Whitney statistic)."""
    if not positive or not negative:
        return None
    wins = sum((x > y) + 0.5 * (x == y) for x in positive for y in negative)
    return wins / (len(positive) * len(negative))


def _best_shift(log_odds: Sequence[float], needs: Sequence[bool]) -> tuple[int, float]:
    """(most correct decisions, δ) over shared shifts δ of every log-odds; the smallest |δ| among ties."""
    # Decisions change only where δ crosses −log-odds: try one δ in each gap (and beyond both ends).
    cuts = sorted(set(-x for x in log_odds))
    candidates = [0.0] + [cuts[0] - 1.0, cuts[-1] + 1.0] + [(a + b) / 2 for a, b in zip(cuts, cuts[1:])]
    best = (-1, 0.0)
    for delta in candidates:
        correct = sum((x + delta > 0) == need for x, need in zip(log_odds, needs))
        if correct > best[0] or (correct == best[0] and abs(delta) < abs(best[1])):
            best = (correct, delta)
    return best


def summarise_decisions(points: Sequence[DecisionPoint], log_odds: Sequence[float]) -> dict[str, Any]:
    """Per group and over all points: n, mean log-odds, share searching; with labels, correct, AUC, best shift."""
    if len(points) != len(log_odds):
        raise ValueError(f"{len(points)} decision points but {len(log_odds)} log-odds")
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(points):
        groups.setdefault(p.group, []).append(i)
    out: dict[str, Any] = {"groups": {}}
    for name, idx in [*sorted(groups.items()), ("all", list(range(len(points))))]:
        xs = [float(log_odds[i]) for i in idx]
        entry: dict[str, Any] = {"n": len(xs), "mean_log_odds": sum(xs) / len(xs) if xs else math.nan,
                                 "search_share": sum(x > 0 for x in xs) / len(xs) if xs else math.nan}
        labelled = [i for i in idx if points[i].needs_search is not None]
        if labelled:
            needs = [bool(points[i].needs_search) for i in labelled]
            lx = [float(log_odds[i]) for i in labelled]
            entry["needs_search_share"] = sum(needs) / len(needs)
            entry["correct"] = sum((x > 0) == n for x, n in zip(lx, needs))
            entry["labelled"] = len(labelled)
            entry["auc"] = _auc([x for x, n in zip(lx, needs) if n], [x for x, n in zip(lx, needs) if not n])
            if name == "all":
                entry["best_shift_correct"], entry["best_shift"] = _best_shift(lx, needs)
        if name == "all":
            out["all"] = entry
        else:
            out["groups"][name] = entry
    return out


def compare_summaries(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The change from `before` to `after`: the shared shift of the mean log-odds, each group's, and ΔAUC."""
    shift = after["all"]["mean_log_odds"] - before["all"]["mean_log_odds"]
    groups = {g: after["groups"][g]["mean_log_odds"] - before["groups"][g]["mean_log_odds"]
              for g in before["groups"] if g in after["groups"]}
    auc_b, auc_a = before["all"].get("auc"), after["all"].get("auc")
    return {"shared_shift": shift, "group_shift": groups,
            "auc_change": None if auc_a is None or auc_b is None else auc_a - auc_b}


def points_as_rows(points: Sequence[DecisionPoint], log_odds: Sequence[float]) -> list[dict[str, Any]]:
    """One JSON-ready row per decision point, without its (long) context."""
    rows = []
    for p, x in zip(points, log_odds):
        row = asdict(p)
        del row["context"]
        rows.append({**row, "log_odds": float(x)})
    return rows
