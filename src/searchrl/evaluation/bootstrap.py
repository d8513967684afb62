"""Percentile-bootstrap confidence intervals for means over questions, vectorised with numpy.

Published results in this field are single greedy runs with no error bars (peers.md §8.6). A benchmark EM
is a mean over questions, so its sampling error is what a bootstrap over questions measures.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Resample in chunks so that n_resamples × n indices never exceed this many (≈32 MB of int64).
_CHUNK_ELEMENTS = 4_000_000


def bootstrap_means(values: Sequence[float] | np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of `n_resamples` resamples of `values` drawn with replacement: shape (n_resamples,).

        mean*_b = (1/n) Σ_i x[I_{b,i}],   I_{b,i} ~ Uniform{0, …, n−1} i.i.d.

    Vectorised over resamples, in chunks that bound memory (a 51k-question set with 1,000 resamples is
    51M draws).
    """
    x = np.asarray(values, dtype=np.float64)  # (n,)
    n = x.shape[0]
    if n == 0:
        return np.full(n_resamples, np.nan)
    out = np.empty(n_resamples, dtype=np.float64)
    rows = max(1, _CHUNK_ELEMENTS // n)
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))  # (b, n)
        out[start:stop] = x[idx].mean(axis=1)
    return out


def percentile_interval(resampled: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval [q_{α/2}, q_{1−α/2}] of bootstrap replicates, α = 1 − confidence."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if resampled.size == 0 or np.isnan(resampled).all():
        return float("nan"), float("nan")
    alpha = 1.0 - confidence
    low, high = np.quantile(resampled, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean of `values`.

    With x_1..x_n the per-question scores (EM ∈ {0, 1}, F1 ∈ [0, 1], searches ∈ ℕ, …):
        mean*_b = mean of a size-n resample of x with replacement, b = 1..B
        CI = [quantile_{α/2}(mean*), quantile_{1−α/2}(mean*)],  α = 1 − confidence.
    Source: Efron & Tibshirani, "An Introduction to the Bootstrap" (1993), §13.3, the percentile interval.
    Seeded (`seed`), so a report is reproducible. An empty input gives (nan, nan).
    """
    rng = np.random.default_rng(seed)
    return percentile_interval(bootstrap_means(values, n_resamples, rng), confidence)


def macro_bootstrap_ci(
    groups: Sequence[Sequence[float] | np.ndarray], *, n_resamples: int = 1000, confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap CI of a macro average: the mean over datasets of each dataset's mean.

        macro*_b = (1/D) Σ_d mean*_{b,d}, each dataset d resampled independently (a stratified bootstrap),
    so a small dataset (Bamboogle, 125 questions) carries its own, wider, uncertainty into the average.
    Empty groups are skipped; no groups gives (nan, nan).
    """
    rng = np.random.default_rng(seed)
    replicates = [bootstrap_means(g, n_resamples, rng) for g in groups if len(g) > 0]
    if not replicates:
        return float("nan"), float("nan")
    return percentile_interval(np.mean(np.stack(replicates), axis=0), confidence)


def paired_gain(start: dict | None, final: dict, *, seed: int) -> dict:
    """Per dataset: EM(final) − EM(start) on the same questions, with a paired bootstrap 95% interval.

    `start` and `final` hold `per_question_em` {dataset: {question uid: EM}}. d_i = EM_final(q_i) − EM_start(q_i);
    the interval is the percentile bootstrap of mean(d) (resampling questions, so the two evaluations' shared
    per-question difficulty cancels). Where `final` also holds `question_types` {dataset: {uid: type}} (the world's
    single-hop / bridge / comparison), each dataset's entry gets `by_type`: the same paired gain within each type.
    """
    out: dict = {}
    if start is None:
        return out

    def gain(diffs: list[float]) -> dict:
        low, high = bootstrap_ci(diffs, n_resamples=2000, seed=seed)
        return {"em_gain": sum(diffs) / len(diffs), "ci_low": low, "ci_high": high, "n": len(diffs)}

    for name, final_em in final.get("per_question_em", {}).items():
        start_em = start.get("per_question_em", {}).get(name, {})
        common = [uid for uid in final_em if uid in start_em]
        if not common:
            continue
        diffs = {u: final_em[u] - start_em[u] for u in common}
        out[name] = gain(list(diffs.values()))
        types = final.get("question_types", {}).get(name, {})
        kinds = sorted({types[u] for u in common if u in types})
        if kinds:
            out[name]["by_type"] = {k: gain([d for u, d in diffs.items() if types.get(u) == k]) for k in kinds}
    return out


def gain_verdict(gain: dict) -> str:
    """Whether a paired gain (see :func:`paired_gain`) is beyond its 95% interval, in words."""
    text = f"{gain['em_gain']:+.3f} [{gain['ci_low']:+.3f}, {gain['ci_high']:+.3f}] on {gain['n']} questions: "
    if gain["ci_low"] > 0:
        return text + "a real gain (the 95% interval excludes 0)"
    if gain["ci_high"] < 0:
        return text + "a real loss (the 95% interval excludes 0)"
    return text + "within the 95% interval, so not distinguishable from no change"


# Two-sided 97.5% quantiles of Student's t with df = 1..30 degrees of freedom (beyond 30: the normal's 1.960).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def seed_t_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, low, high): the 95% t interval over seeds, mean ± t_{0.975, n−1} · sd / √n, one value per seed
    (e.g. each seed's paired gain). It treats the seeds as the sample: the run-to-run spread a new seed would show,
    which a bootstrap over one seed's questions does not see. NaN bounds with fewer than two seeds."""
    x = np.asarray([v for v in values if np.isfinite(v)], dtype=np.float64)
    if x.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(x.mean())
    if x.size < 2:
        return mean, float("nan"), float("nan")
    t = _T975[x.size - 2] if x.size - 1 <= len(_T975) else 1.960
    half = t * float(x.std(ddof=1)) / np.sqrt(x.size)
    return mean, float(mean - half), float(mean + half)


def seed_question_bootstrap(per_seed: Sequence[Sequence[float]], *, n_resamples: int = 2000, seed: int = 0,
                            confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): a two-level percentile bootstrap of the mean over seeds of each seed's mean over
    questions: resample seeds with replacement, then each drawn seed's questions with replacement.
    `per_seed[s]` holds seed s's per-question values (e.g. paired EM differences), every seed scored on the same
    questions in the same order. It carries both the seeds' spread and the questions' sampling error."""
    tables = [np.asarray(v, dtype=np.float64) for v in per_seed]
    if not tables or any(t.size == 0 for t in tables):
        return float("nan"), float("nan"), float("nan")
    if len({t.size for t in tables}) != 1:
        raise ValueError("seed_question_bootstrap: every seed must be scored on the same questions")
    values = np.stack(tables)  # (S, Q)
    n_seeds, n_questions = values.shape
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, n_seeds, size=(n_resamples, n_seeds))  # (R, S)
    questions = rng.integers(0, n_questions, size=(n_resamples, n_seeds, n_questions))  # (R, S, Q)
    means = values[seeds[..., None], questions].mean(axis=(1, 2))  # (R,)
    low, high = percentile_interval(means, confidence)
    return float(values.mean()), low, high
