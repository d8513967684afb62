"""CalibAdv as a verl advantage estimator: ``algorithm.adv_estimator=searchrl_calibadv``.

Registered with verl's ``register_adv_est``. verl calls a registered (non-``gae``, non-``grpo``) estimator as
``fn(token_level_rewards=(B, T), response_mask=(B, T), config=<algorithm config>, index=<uid per row>)`` and takes
``(advantages, returns)``, both (B, T) (verl 0.9.1 ``ray_trainer.compute_advantage``). The estimator:

1. R_b = Σ_t token_level_rewards[b, t] (the reward verl placed on the last response token);
2. c_{b,t} = ``searchrl.rewards.silver_turn_scores`` per group (uid), from the per-trajectory record the
   ``searchrl_search_r1`` agent loop writes into ``extra_fields["searchrl"]`` (retrieved document ids and think
   text per turn, F1 and format validity);
3. A = ``searchrl.algorithms.calibadv`` (R, uid, response_mask, c; rebalance_ratio) through ``build_objective``: GRPO,
   soft penalty on credited search turns of negative trajectories, in-group rebalance of final-turn advantages.

The limitation (verl 0.9.1): step 2 needs the batch's non-tensor fields, and verl passes ``non_tensor_batch`` to
a registered estimator only when it is named ``gdpo`` (``compute_advantage``, the ``AdvantageEstimator.GDPO``
branch); its v1 trainer (``trainer.use_v1=true``, the default) does not fetch non-tensor fields for the advantage
step at all (``PPOTrainer._compute_advantage`` selects a fixed list of fields). So with stock verl the estimator
never receives the turn records. Two ways to run:

- ``+algorithm.searchrl.calibadv.soft_penalty=false``: CalibAdv without the soft penalty — GRPO plus the in-group
  final-turn rebalance (steps 1 and 3), which needs only rewards, uids and the response mask (all passed).
- full CalibAdv: a trainer that passes ``non_tensor_batch=data.non_tensor_batch`` to this estimator (the legacy
  trainer needs the one line shown in docs/verl.md); the estimator accepts that keyword, as ``gdpo`` does.

With ``soft_penalty`` on (the default, the paper's method) and no records, the estimator raises a ConfigError
that says the above, rather than silently dropping the soft penalty.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from searchrl.algorithms import AdvantageBatch, build_objective, turn_ids
from searchrl.rewards import silver_turn_scores
from searchrl.errors import ConfigError
from searchrl.integrations.verl.config import ALGORITHM_KEY, section
from searchrl.integrations.verl.records import RECORD_KEY

ESTIMATOR_NAME = "searchrl_calibadv"
_WHERE = f"{ALGORITHM_KEY}.searchrl.calibadv"


def calibadv_settings(config: Any) -> tuple[Any, bool]:
    """(validated searchrl ``Objective`` of CalibAdv, soft_penalty flag) from ``algorithm.searchrl.calibadv``."""
    knobs = dict(section(section(config, "searchrl", ALGORITHM_KEY), "calibadv", f"{ALGORITHM_KEY}.searchrl"))
    soft_penalty = knobs.pop("soft_penalty", True)
    if not isinstance(soft_penalty, bool):
        raise ConfigError(f"{_WHERE}.soft_penalty: expected true or false, got {soft_penalty!r}")
    objective = build_objective({"name": "calibadv", "calibadv": knobs}, where=f"{ALGORITHM_KEY}.searchrl")
    return objective, soft_penalty


def _run_counts(response_mask: torch.Tensor) -> list[int]:
    ids = turn_ids(response_mask)  # (B, T)
    return (ids.amax(dim=1) if ids.shape[1] else torch.zeros(ids.shape[0], dtype=torch.long)).tolist()


def _search_turns(record: Any, row: int, n_runs: int) -> tuple[list[list[str]], list[str], float, bool]:
    """The doc ids and think texts of row ``row``'s search turns (every model turn but the last), F1, validity."""
    if not isinstance(record, Mapping):
        raise ConfigError(
            f"{_WHERE}: row {row} has no '{RECORD_KEY}' turn record (got {type(record).__name__}); every row must "
            "come from the searchrl_search_r1 agent loop, or set soft_penalty=false"
        )
    # Turns that sampled no token leave no run in the mask; drop them so turn t is run t.
    kept = [t for t, n in enumerate(record["turn_tokens"]) if n > 0]
    if len(kept) != n_runs:
        raise ConfigError(
            f"{_WHERE}: row {row} has {len(kept)} model turns in its record but {n_runs} runs of 1s in "
            "response_mask; the record does not describe this response (was the response truncated after the agent "
            "loop?)"
        )
    search = kept[:-1]
    doc_ids = [[str(d) for d in record["turns"][t]["doc_ids"]] for t in search]
    thinks = [str(record["turns"][t]["think"]) for t in search]
    return doc_ids, thinks, float(record["f1"]), bool(record["format_valid"])


def turn_scores_from_records(
    records: Sequence[Any], group_ids: Sequence[str], response_mask: torch.Tensor
) -> list[list[float]]:
    """CalibAdv's c_{b,t} for every row's search turns: ``silver_turn_scores`` run once per group (uid)."""
    n_runs = _run_counts(response_mask)
    if len(records) != len(group_ids):
        raise ConfigError(f"{_WHERE}: {len(records)} turn records for {len(group_ids)} rows")
    rows_by_group: dict[str, list[int]] = defaultdict(list)
    for row, gid in enumerate(group_ids):
        rows_by_group[gid].append(row)
    scores: list[list[float]] = [[] for _ in group_ids]
    for rows in rows_by_group.values():
        parsed = [_search_turns(records[r], r, n_runs[r]) for r in rows]
        group_scores = silver_turn_scores(
            [p[0] for p in parsed], [p[1] for p in parsed], [p[2] for p in parsed], [p[3] for p in parsed]
        )
        for r, s in zip(rows, group_scores):
            scores[r] = s
    return scores


def compute_searchrl_calibadv_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Sequence[Any] | None = None,
    config: Any = None,
    non_tensor_batch: Mapping[str, Any] | None = None,
    **_verl_extras: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """CalibAdv advantages for verl: ``(advantages, returns)``, both (B, T), zero outside the response mask.

    ``index``: the GRPO group id (verl's ``uid``) of each row. ``non_tensor_batch``: the batch's non-tensor fields,
    holding the agent loop's ``searchrl`` record per row (needed for the soft penalty; see the module docstring).
    ``_verl_extras`` absorbs keywords verl passes to every estimator that this one does not use
    (``reward_baselines``). The math is ``searchrl.algorithms.calibadv``.
    """
    if index is None:
        raise ConfigError(
            f"{ESTIMATOR_NAME} needs the GRPO group id of each row; verl passes it as `index` when the batch has a "
            "'uid' field (it does whenever rollout.n > 1)"
        )
    objective, soft_penalty = calibadv_settings(config)
    group_ids = [str(g) for g in index]
    rewards = token_level_rewards.sum(dim=-1)  # (B,)
    if soft_penalty:
        records = None if non_tensor_batch is None else non_tensor_batch.get(RECORD_KEY)
        if records is None:
            raise ConfigError(
                f"{_WHERE}.soft_penalty is true (the paper's method) but verl passed no '{RECORD_KEY}' turn records "
                "to the advantage estimator: verl 0.9.1 passes non_tensor_batch only to 'gdpo', and its v1 trainer "
                "does not fetch non-tensor fields for this step. Set +algorithm.searchrl.calibadv.soft_penalty=false "
                "to run GRPO + CalibAdv's final-turn rebalance, or use a trainer that passes non_tensor_batch "
                "(docs/verl.md, 'CalibAdv')"
            )
        turn_scores = turn_scores_from_records(list(records), group_ids, response_mask)
    else:
        turn_scores = [[] for _ in group_ids]  # no search turn gets credit: no soft penalty anywhere
    batch = AdvantageBatch(rewards=rewards, group_ids=group_ids, response_mask=response_mask, turn_scores=turn_scores)
    advantages = objective.advantages(batch).to(token_level_rewards.dtype)
    return advantages, advantages


# A marker a trainer can test to pass ``non_tensor_batch`` generically, as verl does for ``gdpo`` by name.
compute_searchrl_calibadv_advantage.needs_non_tensor_batch = True  # type: ignore[attr-defined]


def register() -> None:
    """Register the estimator with verl, idempotently.

    verl's ``register_adv_est`` refuses a second, different function under one name; a re-imported copy of this
    module (``importlib.reload``) is the same estimator, so its earlier entry is replaced. Another package's
    estimator under this name is an error.
    """
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

    existing = ADV_ESTIMATOR_REGISTRY.get(ESTIMATOR_NAME)
    if existing is not None and existing is not compute_searchrl_calibadv_advantage:
        ours = (compute_searchrl_calibadv_advantage.__module__, compute_searchrl_calibadv_advantage.__qualname__)
        if (getattr(existing, "__module__", None), getattr(existing, "__qualname__", None)) != ours:
            raise ConfigError(
                f"verl already has an advantage estimator named {ESTIMATOR_NAME!r} from {existing.__module__}; "
                "searchrl cannot register its own"
            )
        del ADV_ESTIMATOR_REGISTRY[ESTIMATOR_NAME]
    register_adv_est(ESTIMATOR_NAME)(compute_searchrl_calibadv_advantage)
