"""Seeded stratified subsets: evaluate a few hundred questions per dataset instead of all 51k, honestly.

A subset keeps each stratum's share (e.g. HotpotQA's bridge/comparison split), so its mean estimates the
full set's mean without the extra variance of an unlucky mix; the report says that a subset was used.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from searchrl.data.types import Question


@dataclass(frozen=True)
class SampleInfo:
    """What `stratified_sample` did, for the report."""

    taken: int
    total: int
    stratified_by: str | None  # "metadata.type", "data_source" or None (no stratification needed)
    seed: int
    strata: dict[str, tuple[int, int]]  # stratum -> (taken, available)

    @property
    def is_subset(self) -> bool:
        return self.taken < self.total

    def describe(self) -> str:
        if not self.is_subset:
            return f"all {self.total} questions"
        how = f"stratified by {self.stratified_by}" if self.stratified_by else "uniform"
        return f"{self.taken} of {self.total} questions, seeded {how} sample (seed {self.seed})"


def strata_key(questions: Sequence[Question]) -> tuple[str | None, Callable[[Question], str]]:
    """Stratify by `metadata.type` when the questions carry one (HotpotQA, the world), else by source."""
    if questions and all("type" in q.metadata for q in questions):
        return "metadata.type", lambda q: str(q.metadata["type"])
    if len({q.data_source for q in questions}) > 1:
        return "data_source", lambda q: q.data_source
    return None, lambda q: ""


def allocate(sizes: Sequence[int], limit: int) -> list[int]:
    """Proportional allocation of `limit` draws over strata of `sizes` by largest remainder.

        n_s = floor(limit · N_s / N) + (1 for the strata with the largest remainders), Σ n_s = min(limit, N),
    and n_s ≤ N_s always (proportional shares never exceed a stratum's size).
    """
    total = sum(sizes)
    limit = min(limit, total)
    if total == 0:
        return [0 for _ in sizes]
    shares = [limit * s / total for s in sizes]
    counts = [int(x) for x in shares]
    order = sorted(range(len(sizes)), key=lambda i: (shares[i] - counts[i], sizes[i]), reverse=True)
    for i in order[: limit - sum(counts)]:
        counts[i] += 1
    return counts


def stratified_sample(questions: Sequence[Question], limit: int | None, seed: int = 0) -> tuple[list[Question], SampleInfo]:
    """A seeded, stratified subset of at most `limit` questions, in the original order.

    Within each stratum the draw uses a generator seeded by (seed, stratum name), so adding a stratum does
    not change the draws of the others. `limit=None` (or ≥ the number of questions) keeps everything.
    """
    total = len(questions)
    by, key = strata_key(questions)
    groups: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        groups.setdefault(key(q), []).append(i)
    if limit is None or limit >= total:
        strata = {k: (len(v), len(v)) for k, v in groups.items()}
        return list(questions), SampleInfo(total, total, by, seed, strata)
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    names = list(groups)
    counts = allocate([len(groups[k]) for k in names], limit)
    chosen: list[int] = []
    strata = {}
    for name, count in zip(names, counts):
        rng = random.Random(seed * 1_000_003 + zlib.crc32(name.encode()))
        chosen += rng.sample(groups[name], count)
        strata[name] = (count, len(groups[name]))
    chosen.sort()
    return [questions[i] for i in chosen], SampleInfo(len(chosen), total, by, seed, strata)
