"""Per-step collapse diagnostics: pure tensor functions, names under `diag/` (schema: docs/metrics.md).

The three papers diagnose collapse from curves: the importance-sampling ratio falling toward zero and the clip
fraction spiking (SAPO arXiv 2603.10069 Fig. 1), the likelihood of correct answers decaying (LLDS arXiv 2512.04220
Figs. 2 and 9a), entropy running away and garbled text (CalibAdv arXiv 2604.18235's stability monitors). Every
function here measures one family of those signals from the tensors the trainer already has; the trainer logs them
every step (`searchrl.training.metrics`) and `analysis.monitor` watches them.

How the trainer uses them, once per step (keys and meanings: docs/metrics.md):

    kind = turn_kind_from_mask(response_mask)                                       # (B, T)
    row |= rollout_diagnostics(old_log_probs=old, response_mask=mask, advantages=adv, rewards=r,
                               format_valid=fmt, num_searches=n_search, response_lengths=lengths,
                               turn_kind=kind, group_ids=gids, sampling_log_probs=sampler_lp)
    row |= calibadv_diagnostics(turn_scores=scores_or_None, advantages_seq=seq_adv, group_ids=gids,
                                rewards_f1=f1, format_valid=fmt)
    parts = [token_diagnostics(log_probs=lp, old_log_probs=old_mb, advantages=adv_mb, response_mask=mask_mb,
                               turn_kind=kind_mb, entropy=ent_mb, base_acting=loss.terms[base].acting,
                               penalty_acting={name: loss.terms[name].acting for name in penalties})
             for each micro-batch of each update]
    row |= average_diagnostics(parts)

Where a term acted (the clip of the surrogate, the region of a penalty) is read from the term itself (its
`acting` mask), never re-derived here from its parameters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from searchrl.algorithms import policy_loss_names
from searchrl.algorithms.masks import turn_ids

NAN = float("nan")

# Turn kinds, as stored in `turn_kind`.
OBSERVATION = 0
SEARCH_TURN = 1
ANSWER_TURN = 2

# A turn whose perplexity under the old policy is at least this is "garbled"
# (CalibAdv's `is_garbled`, ppl_threshold=50; wujwyi/CalibAdv@6ae1c4e).
GARBLED_PPL_THRESHOLD = 50.0
# A share of ratios below this is reported (`diag/is_ratio_lt_0.5`): SAPO's ISDD regime.
LOW_RATIO = 0.5
# ISDD as SAPO measures it (§3.2, Fig. 1a): tokens with A ≥ 0 whose ratio fell below 1 − ε, ε = 0.2 the PPO clip of
# Search-R1 and SAPO's runs (a fixed measurement threshold, whatever clip the run's surrogate uses).
ISDD_EPSILON = 0.2
# CalibAdv: a group has a silver set when some format-valid rollout reaches F1 >= 0.7 (hard-coded there).
SILVER_F1_THRESHOLD = 0.7
# CalibAdv stores "no score" as 1e-6; a turn counts as soft-penalised only above it.
CALIBADV_SCORE_EPS = 1e-6

_KIND_SUFFIX = {"": None, "/search": SEARCH_TURN, "/answer": ANSWER_TURN}
NONNEG_SUFFIX = "/nonneg_adv"  # the ratio statistics over tokens with advantage >= 0


# ----------------------------------------------------------------------------------------------------
# Turn structure
# ----------------------------------------------------------------------------------------------------


def turn_kind_from_mask(response_mask: torch.Tensor) -> torch.Tensor:
    """Label each sampled token with its turn kind from the mask alone. (B, T) long.

    Turns are the contiguous runs of 1s of `response_mask` (`searchrl.algorithms.masks.turn_ids`), since
    observation blocks separate them.

    The last contiguous run of 1s in a row is the answer turn (2), earlier runs are search turns (1),
    masked positions are 0. This is CalibAdv's convention (`advantage_scale`, only_answer branch): the
    last model segment counts as the answer turn even when the episode ended on a search or was truncated.
    """
    tid = turn_ids(response_mask)  # (B, T)
    last = tid.max(dim=1, keepdim=True).values  # (B, 1)
    kind = torch.where(tid == last, ANSWER_TURN, SEARCH_TURN)  # (B, T)
    return torch.where(tid > 0, kind, torch.zeros_like(kind))  # (B, T)


# ----------------------------------------------------------------------------------------------------
# Statistics helpers
# ----------------------------------------------------------------------------------------------------


def _nan(like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(NAN, dtype=torch.float64, device=like.device)


def quantile(values: torch.Tensor, q: float) -> torch.Tensor:
    """Linear-interpolation quantile of a 1-D tensor (numpy's default 'linear' method); NaN if empty.

    x_(k) are the sorted values, h = q·(n−1); Q(q) = x_(⌊h⌋) + (h − ⌊h⌋)·(x_(⌈h⌉) − x_(⌊h⌋)).
    Implemented by sorting because `torch.quantile` refuses inputs above 2^24 elements.
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile q must be in [0, 1], got {q}")
    n = values.numel()
    if n == 0:
        return _nan(values)
    sorted_values = torch.sort(values.reshape(-1).double()).values  # (n,)
    h = q * (n - 1)
    lo, hi = math.floor(h), math.ceil(h)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


def log_ratio_drift(log_ratio: torch.Tensor) -> torch.Tensor:
    """SAPO's drift λ = μ + σ²/2 of the token log importance ratios (0-d; NaN if empty).

    Source: SAPO (arXiv 2603.10069) §3.2, Proposition 1: with log r_t ~ N(μ, σ²), E[r_t] = exp(λ), and
    E[∏_t r_t] = exp(L·λ) for L independent tokens, so λ < 0 means the sequence ratio decays
    exponentially with length. μ and σ² are the plug-in (maximum-likelihood, divide-by-n) mean and
    variance of the given 1-D log-ratios; one token gives σ² = 0.
    """
    x = log_ratio.reshape(-1).double()  # (n,)
    if x.numel() == 0:
        return _nan(log_ratio)
    mu = x.mean()
    var = ((x - mu) ** 2).mean()
    return mu + 0.5 * var


def _seq_advantages(advantages: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """(B,) sequence advantage: as given if (B,), else the masked mean over each row of (B, T)."""
    if advantages.dim() == 1:
        return advantages.double()
    m = response_mask.double()  # (B, T)
    return (advantages.double() * m).sum(-1) / m.sum(-1).clamp(min=1.0)  # (B,)


def _token_advantages(advantages: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """(B, T) per-token advantage: a (B,) advantage is broadcast over the response."""
    adv = advantages.detach().double()
    if adv.dim() == 1:
        adv = adv[:, None]  # (B, 1)
    return adv.expand_as(like)  # (B, T)


def _check_same_shape(**tensors: torch.Tensor) -> None:
    shapes = {name: tuple(t.shape) for name, t in tensors.items() if t is not None}
    if len(set(shapes.values())) > 1:
        raise ValueError(f"diagnostics expect tensors of one (B, T) shape, got {shapes}")


# ----------------------------------------------------------------------------------------------------
# Token-level diagnostics (one call per update, or per mini-batch and averaged by the trainer)
# ----------------------------------------------------------------------------------------------------


def token_diagnostics(
    *,
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    turn_kind: torch.Tensor,
    entropy: torch.Tensor | None = None,
    base_acting: torch.Tensor | None = None,
    penalty_acting: dict[str, torch.Tensor | None] | None = None,
) -> dict[str, torch.Tensor]:
    """Importance-ratio, drift, clipping and entropy diagnostics over sampled tokens (0-d tensors).

    With r_t = exp(log π_θ(o_t) − log π_old(o_t)) over tokens with response_mask = 1:
    - `diag/is_ratio_mean`, `diag/is_ratio_min`, `diag/is_ratio_p01`, `diag/is_ratio_p05`: mean, minimum,
      1st and 5th percentile (linear interpolation) of r_t. SAPO Fig. 1(a) plots the mean (the official
      code does not log it; algorithms.md §1(d)); the low percentiles and the minimum show the ISDD tail
      before the mean moves.
    - `diag/is_ratio_lt_0.5`: share of tokens with r_t < 0.5.
    - each of the above again with suffix `/search` (turn_kind = 1) and `/answer` (turn_kind = 2): SAPO
      Prop. 1 says the drift concentrates on the action (tool-call) tokens.
    - each of the above again with suffix `/nonneg_adv`: tokens with Â ≥ 0 only, the tokens of good (and
      all-equal) trajectories whose ratio falling is ISDD (SAPO Fig. 1a; its term acts on them).
    - `diag/log_ratio_drift` (and `/search`, `/answer`): λ = μ + σ²/2 of log r_t, see `log_ratio_drift`.
    - `diag/isdd_share`: share of tokens with Â ≥ 0 whose ratio fell below 1 − ε (ε = 0.2), and
      `diag/isdd_ratio_mean` their mean ratio: ISDD as SAPO measures it (§3.2, Fig. 1a).
    - `diag/clip_frac_low`: share of tokens with Â < 0 whose gradient the surrogate's clip cut off (PPO: r <
      1 − ε_low); `diag/clip_frac_high`: Â > 0 (r > 1 + ε_high); `diag/clip_frac` = their sum (Search-R1
      `pg_clipfrac`, SAPO Fig. 1(b)). Read from `base_acting`, the surrogate term's `acting` mask: a token with
      Â ≠ 0 that is not acting was clipped. NaN without it.
    - `diag/entropy`: masked mean of the per-token entropy (NaN if `entropy` is None).
    - `diag/<penalty>_region/{search,answer}_{pos,zero}`, for every registered penalty (`sapo`, `llds`, ...):
      share of tokens where that penalty acted in this micro-batch (its `acting` mask, as the objective computed
      it with the run's parameters), split by turn kind and by Â > 0 (`pos`) versus Â = 0 (`zero`: all-equal
      GRPO groups). NaN when the objective does not use the penalty.

    All denominators are counts of the selected tokens; an empty selection gives NaN. Advantages may be
    (B,) (broadcast) or (B, T) (per token, e.g. after CalibAdv).
    """
    _check_same_shape(
        log_probs=log_probs, old_log_probs=old_log_probs, response_mask=response_mask, turn_kind=turn_kind,
        entropy=entropy, base_acting=base_acting, **{f"penalty_acting[{k}]": v for k, v in (penalty_acting or {}).items()},
    )
    with torch.no_grad():
        log_ratio = log_probs.detach().double() - old_log_probs.detach().double()  # (B, T)
        ratio = torch.exp(log_ratio)  # (B, T)
        sampled = response_mask.bool()  # (B, T)
        adv = _token_advantages(advantages, ratio)  # (B, T)
        out: dict[str, torch.Tensor] = {}
        selections = {suffix: sampled if kind is None else sampled & (turn_kind == kind)
                      for suffix, kind in _KIND_SUFFIX.items()}
        selections[NONNEG_SUFFIX] = sampled & (adv >= 0)
        for suffix, sel in selections.items():  # sel: (B, T)
            r = ratio[sel]  # (n,)
            if r.numel() == 0:
                for name in ("mean", "min", "p01", "p05", "lt_0.5"):
                    out[f"diag/is_ratio_{name}{suffix}"] = _nan(ratio)
            else:
                out[f"diag/is_ratio_mean{suffix}"] = r.mean()
                out[f"diag/is_ratio_min{suffix}"] = r.min()
                out[f"diag/is_ratio_p01{suffix}"] = quantile(r, 0.01)
                out[f"diag/is_ratio_p05{suffix}"] = quantile(r, 0.05)
                out[f"diag/is_ratio_lt_0.5{suffix}"] = (r < LOW_RATIO).double().mean()
            out[f"diag/log_ratio_drift{suffix}"] = log_ratio_drift(log_ratio[sel])

        n_tokens = sampled.sum()
        below = sampled & (adv >= 0) & (ratio < 1.0 - ISDD_EPSILON)  # (B, T)
        nonneg = (sampled & (adv >= 0)).sum()
        out["diag/isdd_share"] = below.sum().double() / nonneg if nonneg > 0 else _nan(ratio)
        out["diag/isdd_ratio_mean"] = ratio[below].mean() if below.any() else _nan(ratio)
        if n_tokens == 0 or base_acting is None:
            out["diag/clip_frac_low"] = out["diag/clip_frac_high"] = out["diag/clip_frac"] = _nan(ratio)
        else:
            cut = sampled & ~base_acting.bool()  # (B, T)
            out["diag/clip_frac_low"] = (cut & (adv < 0)).sum().double() / n_tokens
            out["diag/clip_frac_high"] = (cut & (adv > 0)).sum().double() / n_tokens
            out["diag/clip_frac"] = out["diag/clip_frac_low"] + out["diag/clip_frac_high"]

        for name in policy_loss_names("penalty"):
            acting = (penalty_acting or {}).get(name)
            for kind_name, kind in (("search", SEARCH_TURN), ("answer", ANSWER_TURN)):
                for sign_name, sign in (("pos", adv > 0), ("zero", adv == 0)):
                    key = f"diag/{name}_region/{kind_name}_{sign_name}"
                    if acting is None or n_tokens == 0:
                        out[key] = _nan(ratio)
                    else:
                        out[key] = (sampled & acting.bool() & sign & (turn_kind == kind)).sum().double() / n_tokens

        if entropy is None or n_tokens == 0:
            out["diag/entropy"] = _nan(ratio)
        else:
            out["diag/entropy"] = entropy.detach().double()[sampled].mean()
    return out


def token_diagnostic_keys() -> tuple[str, ...]:
    """The keys `token_diagnostics` returns (the region keys follow the registered penalties)."""
    return tuple(
        [f"diag/is_ratio_{n}{s}" for s in (*_KIND_SUFFIX, NONNEG_SUFFIX) for n in ("mean", "min", "p01", "p05", "lt_0.5")]
        + [f"diag/log_ratio_drift{s}" for s in (*_KIND_SUFFIX, NONNEG_SUFFIX)]
        + ["diag/isdd_share", "diag/isdd_ratio_mean"]
        + ["diag/clip_frac_low", "diag/clip_frac_high", "diag/clip_frac", "diag/entropy"]
        + [f"diag/{p}_region/{k}_{s}" for p in policy_loss_names("penalty") for k in ("search", "answer")
           for s in ("pos", "zero")]
    )


# ----------------------------------------------------------------------------------------------------
# Rollout-level diagnostics (once per step, on the rollout batch, under the old policy)
# ----------------------------------------------------------------------------------------------------


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> float:
    n = mask.sum()
    if n == 0:
        return NAN
    return float((values * mask).sum() / n)


def _as_1d(x: torch.Tensor | Sequence[float] | Sequence[bool] | Sequence[int]) -> torch.Tensor:
    return torch.as_tensor(x).reshape(-1).double()


def _group_rows(group_ids: Sequence[str]) -> list[list[int]]:
    groups: dict[str, list[int]] = {}
    for row, gid in enumerate(group_ids):
        groups.setdefault(str(gid), []).append(row)
    return list(groups.values())


def rollout_diagnostics(
    *,
    old_log_probs: torch.Tensor,
    response_mask: torch.Tensor,
    advantages: torch.Tensor,
    rewards: torch.Tensor | Sequence[float],
    format_valid: torch.Tensor | Sequence[bool],
    num_searches: torch.Tensor | Sequence[int],
    response_lengths: torch.Tensor | Sequence[int],
    turn_kind: torch.Tensor,
    group_ids: Sequence[str] | None = None,
    sampling_log_probs: torch.Tensor | None = None,
) -> dict[str, float]:
    """Likelihood, garbling, format and behaviour diagnostics of one rollout batch (floats).

    - `diag/ll_pos`, `diag/ll_neg`: mean per-token log-likelihood log π_old(o_t) over the sampled tokens of
      all trajectories with sequence advantage Â > 0 (resp. Â < 0), pooled over tokens. This is the LLD
      trend of LLDS (arXiv 2512.04220) Figs. 2 and 9a: read under π_old of step s, it is the likelihood of
      step s's correct responses after s−1 updates. Differs from the official code's
      `actor/pos_avg_old_log_prob`, whose denominator is all response tokens of the micro-batch.
    - `diag/ll_search`, `diag/ll_answer`: the same mean over all trajectories' search-turn (turn_kind = 1)
      and answer-turn (turn_kind = 2) tokens (LLDS Fig. 5 compares action log-likelihoods).
    - `diag/garbled_rate`: share of model turns (contiguous runs of response_mask) whose perplexity
      exp(−mean_t log π_old(o_t)) is ≥ 50; CalibAdv's `is_garbled` criterion (ppl_threshold = 50), counted
      per turn rather than per rollout, and without its "My previous action is invalid." clause.
    - `diag/format_valid`: mean of `format_valid`; `diag/searches_mean`: mean of `num_searches`;
      `diag/response_length_mean`: mean of `response_lengths` (tokens, as the trainer counts them).
    - `diag/zero_adv_group_share`: share of groups (by `group_ids`) whose sequence advantages are all 0
      (no learning signal under GRPO); `diag/group_all_correct_share`: share of groups whose rewards are
      all ≥ 1; `diag/group_all_wrong_share`: all ≤ 0 (oat's all-one / all-zero reward groups). NaN without
      `group_ids`.
    - `diag/sampler_logprob_gap`: masked mean of |log π_sampler − log π_old| over sampled tokens: the
      gap between the generation backend and the learner's recomputation (oat's collapse signal). NaN
      without `sampling_log_probs`.
    """
    _check_same_shape(
        old_log_probs=old_log_probs, response_mask=response_mask, turn_kind=turn_kind,
        sampling_log_probs=sampling_log_probs,
    )
    with torch.no_grad():
        old = old_log_probs.detach().double()  # (B, T)
        mask = response_mask.detach().double()  # (B, T)
        seq_adv = _seq_advantages(advantages.detach(), response_mask)  # (B,)
        out: dict[str, float] = {}
        out["diag/ll_pos"] = _masked_mean(old, mask * (seq_adv > 0).double()[:, None])
        out["diag/ll_neg"] = _masked_mean(old, mask * (seq_adv < 0).double()[:, None])
        out["diag/ll_search"] = _masked_mean(old, mask * (turn_kind == SEARCH_TURN).double())
        out["diag/ll_answer"] = _masked_mean(old, mask * (turn_kind == ANSWER_TURN).double())

        # Per-turn mean log-likelihood via scatter over turn indices (column 0 collects masked tokens).
        tid = turn_ids(response_mask)  # (B, T)
        n_turns_max = int(tid.max()) if tid.numel() else 0
        if n_turns_max == 0:
            out["diag/garbled_rate"] = NAN
        else:
            sums = torch.zeros(tid.size(0), n_turns_max + 1, dtype=torch.float64, device=old.device)
            counts = torch.zeros_like(sums)
            sums.scatter_add_(1, tid, old * mask)  # (B, K+1)
            counts.scatter_add_(1, tid, mask)  # (B, K+1)
            sums, counts = sums[:, 1:], counts[:, 1:]  # (B, K)
            exists = counts > 0  # (B, K)
            mean_ll = sums[exists] / counts[exists]  # (n_turns,)
            garbled = torch.exp(-mean_ll) >= GARBLED_PPL_THRESHOLD  # (n_turns,)
            out["diag/garbled_rate"] = float(garbled.double().mean())

        fmt, searches, lengths = _as_1d(format_valid), _as_1d(num_searches), _as_1d(response_lengths)
        out["diag/format_valid"] = float(fmt.mean()) if fmt.numel() else NAN
        out["diag/searches_mean"] = float(searches.mean()) if searches.numel() else NAN
        out["diag/response_length_mean"] = float(lengths.mean()) if lengths.numel() else NAN

        reward = _as_1d(rewards)
        if group_ids is None or len(group_ids) == 0:
            for key in ("zero_adv_group_share", "group_all_correct_share", "group_all_wrong_share"):
                out[f"diag/{key}"] = NAN
        else:
            if len(group_ids) != reward.numel() or len(group_ids) != seq_adv.numel():
                raise ValueError(
                    f"group_ids has {len(group_ids)} entries but there are {seq_adv.numel()} trajectories"
                )
            groups = _group_rows(group_ids)
            out["diag/zero_adv_group_share"] = sum(bool((seq_adv[g] == 0).all()) for g in groups) / len(groups)
            out["diag/group_all_correct_share"] = sum(bool((reward[g] >= 1.0).all()) for g in groups) / len(groups)
            out["diag/group_all_wrong_share"] = sum(bool((reward[g] <= 0.0).all()) for g in groups) / len(groups)

        if sampling_log_probs is None:
            out["diag/sampler_logprob_gap"] = NAN
        else:
            gap = (sampling_log_probs.detach().double() - old).abs()  # (B, T)
            out["diag/sampler_logprob_gap"] = _masked_mean(gap, mask)
    return out


ROLLOUT_DIAGNOSTIC_KEYS: tuple[str, ...] = (
    "diag/ll_pos", "diag/ll_neg", "diag/ll_search", "diag/ll_answer", "diag/garbled_rate",
    "diag/format_valid", "diag/searches_mean", "diag/response_length_mean", "diag/zero_adv_group_share",
    "diag/group_all_correct_share", "diag/group_all_wrong_share", "diag/sampler_logprob_gap",
)


# ----------------------------------------------------------------------------------------------------
# CalibAdv diagnostics
# ----------------------------------------------------------------------------------------------------


def calibadv_diagnostics(
    *,
    turn_scores: Sequence[Sequence[float]] | None,
    advantages_seq: torch.Tensor | Sequence[float],
    group_ids: Sequence[str],
    rewards_f1: torch.Tensor | Sequence[float],
    format_valid: torch.Tensor | Sequence[bool],
    silver_f1_threshold: float = SILVER_F1_THRESHOLD,
) -> dict[str, float]:
    """CalibAdv's mis-penalisation diagnostics (arXiv 2604.18235; wujwyi/CalibAdv@6ae1c4e, figure README).

    - `diag/calibadv_soft_penalised_share`: among the search turns of trajectories with sequence advantage
      Â_i < 0, the share whose correctness score c_{i,t} > 1e-6, i.e. turns the soft penalty relieves
      (the code's `soft_penalty_query_cnt / negative_query_cnt`). `turn_scores[i]` lists c for each search
      turn of trajectory i, in order (0 where no score applies, e.g. an empty silver set); its length is
      the trajectory's number of search turns. NaN when `turn_scores` is None (the algorithm computes no
      scores) or there is no search turn in a negative trajectory.
    - `diag/calibadv_empty_silver_share`: share of groups with no format-valid rollout with F1 ≥ 0.7, so no
      silver document set and no soft penalty (the paper's "all-incorrect groups"). Computable for every
      algorithm from F1 and format validity, so it is reported whatever the algorithm.
    """
    adv = _as_1d(advantages_seq)
    f1 = _as_1d(rewards_f1)
    fmt = _as_1d(format_valid)
    n = adv.numel()
    if not (len(group_ids) == f1.numel() == fmt.numel() == n):
        raise ValueError(
            f"calibadv_diagnostics: advantages_seq ({n}), group_ids ({len(group_ids)}), rewards_f1 "
            f"({f1.numel()}) and format_valid ({fmt.numel()}) must have one entry per trajectory"
        )
    out: dict[str, float] = {}
    if turn_scores is None:
        out["diag/calibadv_soft_penalised_share"] = NAN
    else:
        if len(turn_scores) != n:
            raise ValueError(f"turn_scores has {len(turn_scores)} entries but there are {n} trajectories")
        negative_turns = 0
        relieved = 0
        for row, scores in enumerate(turn_scores):
            if adv[row] < 0:
                negative_turns += len(scores)
                relieved += sum(1 for c in scores if c > CALIBADV_SCORE_EPS)
        out["diag/calibadv_soft_penalised_share"] = relieved / negative_turns if negative_turns else NAN
    if n == 0:
        out["diag/calibadv_empty_silver_share"] = NAN
    else:
        groups = _group_rows(group_ids)
        has_silver = (fmt > 0) & (f1 >= silver_f1_threshold)  # (B,)
        out["diag/calibadv_empty_silver_share"] = sum(not bool(has_silver[g].any()) for g in groups) / len(groups)
    return out


CALIBADV_DIAGNOSTIC_KEYS: tuple[str, ...] = ("diag/calibadv_soft_penalised_share", "diag/calibadv_empty_silver_share")

def all_diagnostic_keys() -> tuple[str, ...]:
    """Every `diag/` key of a metrics row: these functions' and the trainer's (each penalty's `_active` share, the
    non-finite count, the probe set's log-likelihood), for the registered penalties."""
    trainer = tuple(f"diag/{name}_active" for name in policy_loss_names("penalty"))
    trainer += ("diag/nonfinite_count", "diag/probe_ll")
    return token_diagnostic_keys() + ROLLOUT_DIAGNOSTIC_KEYS + CALIBADV_DIAGNOSTIC_KEYS + trainer


def average_diagnostics(parts: Sequence[dict[str, torch.Tensor | float]]) -> dict[str, float]:
    """Average per-mini-batch diagnostics into one step value per key, ignoring NaN parts.

    Used when `token_diagnostics` is called once per mini-batch (SAPO Fig. 1 averages over
    mini-batches, algorithms.md §1(d)). `…_min` keys take the minimum instead of the mean. A key that is
    NaN in every part stays NaN.
    """
    keys: list[str] = []
    for part in parts:
        keys.extend(k for k in part if k not in keys)
    out: dict[str, float] = {}
    for key in keys:
        values = [float(p[key]) for p in parts if key in p and not math.isnan(float(p[key]))]
        if not values:
            out[key] = NAN
        elif key.startswith("diag/is_ratio_min") or key.endswith("_min"):
            out[key] = min(values)
        else:
            out[key] = sum(values) / len(values)
    return out
