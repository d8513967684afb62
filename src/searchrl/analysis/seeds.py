"""Claims across seeds: each arm's test gain with seed-level intervals, and each arm against a reference arm,
paired within seeds.

Every run of a study scores the same test questions (the evaluation's question sample depends on
`val.sample_seed`, not on the run's seed), so a seed's paired gain is d_s(q) = EM_final,s(q) − EM_start,s(q) on
one question set Q, and two arms of one seed compare on the same questions. Three intervals, each answering its
own question:

- per question (pooled): the bootstrap over questions of mean_s d_s(q): how sure we are, for THESE seeds;
- t over seeds: mean_s ± t · sd_s / √S of the per-seed gains: the run-to-run spread a new seed would show;
- seeds and questions: the two-level bootstrap (resample seeds, then each seed's questions): both.

A claim across seeds rests on the last two.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from searchrl.evaluation.bootstrap import bootstrap_ci, seed_question_bootstrap, seed_t_interval

QuestionTable = Mapping[str, float]  # question uid -> per-question value (e.g. a paired EM difference)


def paired_differences(per_question: Mapping[str, Mapping[str, Mapping[str, float]]]) -> dict[str, float] | None:
    """d(q) = EM_final(q) − EM_start(q) of one run (its evals.json: when -> dataset -> question -> EM), on the
    questions both evaluations scored; None without both, or with more than one dataset."""
    start, final = per_question.get("start", {}), per_question.get("final", {})
    if len(start) != 1 or set(start) != set(final):
        return None
    ds = next(iter(start))
    table = {q: float(final[ds][q]) - float(v) for q, v in start[ds].items() if q in final[ds]}
    return table or None


def _on_common_questions(tables: Sequence[QuestionTable]) -> tuple[list[str], list[list[float]]]:
    common = sorted(set.intersection(*(set(t) for t in tables))) if tables else []
    return common, [[t[q] for q in common] for t in tables]


def summarise_seeds(tables: Sequence[QuestionTable], *, seed: int = 0) -> dict[str, Any]:
    """Per-question tables of one arm's seeds (or of one arm's paired difference to another, seed by seed) ->
    the mean and its three intervals (module docstring), on the questions every seed scored.

    Returns {"mean", "per_question": [lo, hi], "seeds_t": [lo, hi], "seeds_and_questions": [lo, hi],
    "per_seed": [mean of each seed], "seeds", "questions"}."""
    common, rows = _on_common_questions(tables)
    nan2 = [math.nan, math.nan]
    if not common:
        return {"mean": math.nan, "per_question": nan2, "seeds_t": nan2, "seeds_and_questions": nan2,
                "per_seed": [], "seeds": len(tables), "questions": 0}
    per_seed = [sum(r) / len(r) for r in rows]
    pooled = [sum(col) / len(col) for col in zip(*rows)]  # (Q,) mean over seeds of each question
    _, t_low, t_high = seed_t_interval(per_seed)
    mean, b_low, b_high = seed_question_bootstrap(rows, seed=seed)
    q_low, q_high = bootstrap_ci(pooled, n_resamples=2000, seed=seed)
    return {"mean": mean, "per_question": [q_low, q_high], "seeds_t": [t_low, t_high],
            "seeds_and_questions": [b_low, b_high], "per_seed": per_seed, "seeds": len(tables),
            "questions": len(common)}


def seed_study(arm_tables: Mapping[str, Mapping[int | str, QuestionTable]], reference: str | None = None,
               *, seed: int = 0) -> dict[str, Any]:
    """The study's seed-level summary. `arm_tables[arm][seed]` is that run's d(q) (`paired_differences`).

    Returns {"arms": {arm: summarise_seeds(...)}, "reference": arm, "against_reference": {arm: summary of the
    per-seed, per-question difference d_arm,s(q) − d_reference,s(q) over the seeds both ran}}."""
    out: dict[str, Any] = {"arms": {}, "reference": reference, "against_reference": {}}
    for arm, by_seed in arm_tables.items():
        out["arms"][arm] = summarise_seeds([by_seed[s] for s in sorted(by_seed, key=str)], seed=seed)
    if reference is not None and reference in arm_tables:
        ref = arm_tables[reference]
        for arm, by_seed in arm_tables.items():
            if arm == reference:
                continue
            shared = sorted(set(by_seed) & set(ref), key=str)
            diffs = [{q: by_seed[s][q] - ref[s][q] for q in set(by_seed[s]) & set(ref[s])} for s in shared]
            out["against_reference"][arm] = summarise_seeds(diffs, seed=seed)
    return out
