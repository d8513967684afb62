"""searchrl's verl plugin: SAPO and LLDS policy losses, the CalibAdv advantage estimator, the Search-R1 agent
loop and reward function, registered with verl when this module is imported.

verl imports it in every process that imports verl:

- verl >= 0.9: automatically, through the ``verl.plugins`` entry point searchrl declares (turn it off with
  ``VERL_USE_EXTERNAL_PLUGINS=none``, or list plugins by name);
- older verl (>= 0.7): set ``VERL_USE_EXTERNAL_MODULES=searchrl.integrations.verl`` in the environment of the
  driver and the Ray workers.

What it registers (see docs/verl.md):

- policy losses (``actor_rollout_ref.actor.policy_loss.loss_mode``): ``searchrl_sapo``, ``searchrl_llds``,
  ``searchrl_sapo_llds`` (``losses``);
- advantage estimator (``algorithm.adv_estimator``): ``searchrl_calibadv`` (``advantages``);
- agent loop (``actor_rollout_ref.rollout.agent.default_agent_loop`` or the dataset's ``agent_name``):
  ``searchrl_search_r1`` (``agent_loop``);
- the reward function needs no registration: ``reward.custom_reward_function.path=
  pkg://searchrl.integrations.verl.reward``.

Importing it twice (or reloading it) registers the same names again without error. It imports verl's loss and
agent-loop modules (verl's own workers import them anyway) and searchrl's light modules; retrieval indexes and
models load only when an agent loop first runs. ``import searchrl`` never imports verl.
"""

from __future__ import annotations

import logging

from searchrl.integrations.verl import advantages as _advantages
from searchrl.integrations.verl import losses as _losses

_log = logging.getLogger(__name__)

POLICY_LOSS_NAMES: tuple[str, ...] = tuple(_losses.POLICY_LOSSES)
ADVANTAGE_ESTIMATOR_NAMES: tuple[str, ...] = (_advantages.ESTIMATOR_NAME,)
AGENT_LOOP_NAMES: tuple[str, ...] = ("searchrl_search_r1",)
REWARD_FUNCTION = "pkg://searchrl.integrations.verl.reward"

_losses.register()
_advantages.register()
try:
    from searchrl.integrations.verl import agent_loop as _agent_loop

    _agent_loop.register_agent_loop()
except ImportError as _err:  # the losses still work in a process without verl's rollout dependencies
    _log.warning(
        "searchrl verl plugin: agent loop %s not registered (%s); the policy losses and advantage estimator are",
        AGENT_LOOP_NAMES[0],
        _err,
    )

__all__ = ["ADVANTAGE_ESTIMATOR_NAMES", "AGENT_LOOP_NAMES", "POLICY_LOSS_NAMES", "REWARD_FUNCTION"]
