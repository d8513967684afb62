"""The verl plugin against the installed verl: registration, losses, CalibAdv, agent loop, reward.

verl is imported once for the module (several seconds). Configs are built the way verl builds them: hydra
composes verl's own ``ppo_trainer`` config, and the actor config is instantiated with ``omega_conf_to_dataclass``.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

verl = pytest.importorskip(
    "verl", reason="verl is not installed (pip install --no-deps verl==0.9.1 plus the light deps in docs/verl.md)"
)

from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl.trainer.ppo.core_algos import (  # noqa: E402
    compute_policy_loss_vanilla,
    get_adv_estimator_fn,
    get_policy_loss_fn,
)
from verl.utils.config import omega_conf_to_dataclass  # noqa: E402

import searchrl.integrations.verl as plugin  # noqa: E402
from searchrl.algorithms import (  # noqa: E402
    AdvantageBatch,
    CalibAdvParams,
    LLDSParams,
    PolicyBatch,
    PPOClipParams,
    SAPOParams,
    aggregate,
    calibadv,
    llds,
    ppo_clip,
    sapo,
)
from searchrl.rewards import silver_turn_scores  # noqa: E402
from searchrl.errors import ConfigError  # noqa: E402
from searchrl.integrations.verl import advantages as verl_advantages  # noqa: E402
from searchrl.integrations.verl import losses as verl_losses  # noqa: E402
from searchrl.integrations.verl.reward import compute_score  # noqa: E402

# verl announces its optional engines (torchtitan, megatron, ...) and the critic it disables for GRPO.
pytestmark = [
    pytest.mark.filterwarnings("ignore:.* engine is not available:UserWarning"),
    pytest.mark.filterwarnings("ignore:Disabled critic:UserWarning"),
]
torch.set_num_threads(2)
REPO = Path(__file__).resolve().parents[1]
VERL_CONFIG_DIR = str(Path(verl.__file__).parent / "trainer" / "config")
LOSS_TARGET = "searchrl.integrations.verl.config.SearchRLPolicyLossConfig"


def ppo_clip_loss(log_prob, old, adv, mask):
    term = ppo_clip(PolicyBatch(log_prob, old, adv, mask), PPOClipParams())
    return aggregate(term.per_token, term.mask, "token-mean"), term.metrics


def sapo_penalty(log_prob, old, adv, mask, **knobs):
    term = sapo(PolicyBatch(log_prob, old, adv, mask), SAPOParams(**knobs))
    return aggregate(term.per_token, term.mask, term.agg_mode)


def llds_penalty(log_prob, old, adv, mask, **knobs):
    term = llds(PolicyBatch(log_prob, old, adv, mask), LLDSParams(**knobs))
    return aggregate(term.per_token, term.mask, term.agg_mode)


def calibadv_advantages(rewards, group_ids, mask, turn_scores, **knobs):
    return calibadv(AdvantageBatch(rewards, group_ids, mask, turn_scores), CalibAdvParams(**knobs))
BASE_OVERRIDES = [
    "actor_rollout_ref.actor.strategy=fsdp",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.rollout.n=3",
    "data.max_prompt_length=1024",
    "data.max_response_length=400",
]


def verl_config(*overrides: str):
    """verl's ppo_trainer config composed by hydra with our overrides (what `python -m verl.trainer.main_ppo` sees)."""
    with initialize_config_dir(config_dir=VERL_CONFIG_DIR, version_base=None):
        return compose(config_name="ppo_trainer", overrides=[*BASE_OVERRIDES, *overrides])


def actor_config(*overrides: str):
    """The actor config as verl's workers build it: hydra instantiation of actor_rollout_ref.actor."""
    return omega_conf_to_dataclass(verl_config(*overrides).actor_rollout_ref.actor)


# ---------------------------------------------------------------------------------------------- registration


def test_plugin_loads_through_the_verl_plugins_entry_point_in_a_fresh_process():
    eps = [ep for ep in importlib.metadata.entry_points(group="verl.plugins") if ep.name == "searchrl"]
    assert [ep.value for ep in eps] == ["searchrl.integrations.verl"]
    probe = (
        "import sys, verl\n"
        "if 'searchrl.integrations.verl' not in sys.modules:\n"  # verl logs a failed plugin at debug level only
        "    import importlib.metadata as md\n"
        "    [ep.load() for ep in md.entry_points(group='verl.plugins') if ep.name == 'searchrl']\n"
        "    raise SystemExit('plugin not loaded by import verl')\n"
        "from verl.trainer.ppo.core_algos import get_policy_loss_fn, get_adv_estimator_fn\n"
        "from verl.experimental.agent_loop.agent_loop import _agent_loop_registry\n"
        "print([get_policy_loss_fn(n).__name__ for n in ('searchrl_sapo', 'searchrl_llds', 'searchrl_sapo_llds')],"
        " get_adv_estimator_fn('searchrl_calibadv').__name__, _agent_loop_registry['searchrl_search_r1'])\n"
    )
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "VERL_USE_EXTERNAL_PLUGINS": "auto"}
    env.pop("VERL_USE_EXTERNAL_MODULES", None)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "compute_policy_loss_searchrl_sapo_llds" in done.stdout
    assert "compute_searchrl_calibadv_advantage" in done.stdout
    assert "searchrl.integrations.verl.agent_loop.SearchR1AgentLoop" in done.stdout


def test_import_is_idempotent_and_registrations_survive_a_reload():
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
    from verl.utils.import_utils import import_external_libs

    import_external_libs(["searchrl.integrations.verl"])  # the VERL_USE_EXTERNAL_MODULES path (verl < 0.9)
    for module in (verl_losses, verl_advantages, plugin.__dict__["_agent_loop"], plugin):
        importlib.reload(module)  # re-executes every registration
    importlib.reload(plugin)
    for name in plugin.POLICY_LOSS_NAMES:
        assert get_policy_loss_fn(name).__module__ == "searchrl.integrations.verl.losses"
    estimator = get_adv_estimator_fn("searchrl_calibadv")
    assert estimator is sys.modules["searchrl.integrations.verl.advantages"].compute_searchrl_calibadv_advantage
    assert _agent_loop_registry["searchrl_search_r1"] == {
        "_target_": "searchrl.integrations.verl.agent_loop.SearchR1AgentLoop"
    }


def test_importing_searchrl_never_imports_verl():
    probe = "import sys, searchrl, searchrl.integrations; assert 'verl' not in sys.modules; print('ok')"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


# ---------------------------------------------------------------------------------------------- policy losses


def random_batch(seed: int, rows: int = 6, width: int = 14):
    """Multi-turn masks (runs of 1s split by observation 0s, right padding), drifted log-probs, GRPO-like
    advantages with positive, zero and negative rows. |log r| is small enough that verl's dual clip (3.0)
    never binds, large enough that the 0.2 clip does. Float64 (drawn in float32, then widened): verl's loss and
    ours are the same math written twice (tests/README.md), so they are compared at float64's default tolerances."""
    gen = torch.Generator().manual_seed(seed)
    mask = torch.zeros(rows, width)
    for b in range(rows):
        pos = 0
        for _ in range(int(torch.randint(1, 4, (1,), generator=gen))):
            run = int(torch.randint(1, 4, (1,), generator=gen))
            mask[b, pos : pos + run] = 1
            pos += run + int(torch.randint(1, 3, (1,), generator=gen))
            if pos >= width - 1:
                break
    old = -torch.rand(rows, width, generator=gen) * 2 - 0.05
    log_prob = (old + 0.25 * torch.randn(rows, width, generator=gen)).double().requires_grad_(True)
    row_adv = torch.tensor([1.2, -0.7, 0.0, 0.4, -1.1, 0.0], dtype=torch.float64)[:rows]
    advantages = row_adv[:, None] * mask
    return old.double(), log_prob, advantages, mask


@pytest.fixture(scope="module")
def default_actor():
    return actor_config()


@pytest.fixture(scope="module")
def tuned_actor():
    return actor_config(
        "actor_rollout_ref.actor.policy_loss.loss_mode=searchrl_sapo_llds",
        f"actor_rollout_ref.actor.policy_loss._target_={LOSS_TARGET}",
        "+actor_rollout_ref.actor.policy_loss.searchrl.sapo.gamma=0.3",
        "+actor_rollout_ref.actor.policy_loss.searchrl.sapo.tau=1.1",
        "+actor_rollout_ref.actor.policy_loss.searchrl.llds.lam=0.5",
        "+actor_rollout_ref.actor.policy_loss.searchrl.llds.gate=response",
    )


def call_loss(name, old, log_prob, advantages, mask, mode, config, weights=None):
    """Call a registered loss exactly as verl's ppo_loss does (keywords; bool response mask)."""
    return get_policy_loss_fn(name)(
        old_log_prob=old,
        log_prob=log_prob,
        advantages=advantages,
        response_mask=mask.bool(),
        loss_agg_mode=mode,
        config=config,
        rollout_is_weights=weights,
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_token_mean_equals_searchrl_functions_and_gradients(default_actor, seed):
    old, log_prob, adv, mask = random_batch(seed)
    vanilla, _ = compute_policy_loss_vanilla(old, log_prob, adv, mask.bool(), "token-mean", default_actor)
    torch.testing.assert_close(vanilla, ppo_clip_loss(log_prob, old, adv, mask)[0])  # the dual clip does not bind

    def expected(name: str) -> torch.Tensor:  # a fresh graph per call; the penalties at the official strength
        want = ppo_clip_loss(log_prob, old, adv, mask)[0]
        if "sapo" in name:
            want = want + 0.1 * sapo_penalty(log_prob, old, adv, mask)
        if "llds" in name:
            want = want + 0.2 * llds_penalty(log_prob, old, adv, mask)
        return want

    for name in ("searchrl_sapo", "searchrl_llds", "searchrl_sapo_llds"):
        got, metrics = call_loss(name, old, log_prob, adv, mask, "token-mean", default_actor)
        want = expected(name)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(torch.autograd.grad(got, log_prob)[0], torch.autograd.grad(want, log_prob)[0])
        assert sorted(metrics) == sorted(verl_losses.metric_keys(name))
        assert all(np.isfinite(v) for v in metrics.values())
        assert metrics["actor/searchrl_penalty"] > 0  # the batch drifted: the penalties act


def test_sapo_is_normalised_over_the_non_negative_rows_like_the_official_code(default_actor):
    """The official SAPO line: masked_mean(kl_term[index], eos_mask[index]) with index = A ≥ 0, written out."""
    old, log_prob, adv, mask = random_batch(2)
    got, metrics = call_loss("searchrl_sapo", old, log_prob, adv, mask, "token-mean", default_actor)
    pg, _ = compute_policy_loss_vanilla(old, log_prob, adv, mask.bool(), "token-mean", default_actor)
    negative_approx_kl = log_prob - old
    kl_term = (-negative_approx_kl).masked_fill(torch.exp(negative_approx_kl) > 1.0, 0.0)
    index = adv.sum(-1) >= 0  # the rows' advantage (the official code reads advantages[:, 0])
    official = (kl_term[index] * mask[index]).sum() / mask[index].sum()
    torch.testing.assert_close(got, pg + 0.1 * official)
    assert metrics["actor/searchrl_sapo_penalty"] == pytest.approx(official.item())
    assert mask[index].sum() < mask.sum()  # the batch has negative rows: dividing by all tokens would differ


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"])
def test_penalties_keep_their_own_normalisation_under_every_aggregation_mode(tuned_actor, mode):
    old, log_prob, adv, mask = random_batch(3)
    weights = torch.rand(mask.shape, generator=torch.Generator().manual_seed(9)) + 0.5
    # this micro-batch is part of a larger global batch on 2 ranks: it holds 1/3 of the global tokens per rank
    info = {"dp_size": 2, "batch_num_tokens": int(mask.sum()) * 3, "global_batch_size": 20, "loss_scale_factor": 50}
    tuned_actor.global_batch_info.update(info)
    try:
        got, _ = call_loss("searchrl_sapo_llds", old, log_prob, adv, mask, mode, tuned_actor, weights)
        pg, _ = compute_policy_loss_vanilla(old, log_prob, adv, mask.bool(), mode, tuned_actor, weights)
    finally:
        tuned_actor.global_batch_info.clear()
    sapo_term = sapo(PolicyBatch(log_prob, old, adv, mask), SAPOParams(tau=1.1))
    llds_term = llds(PolicyBatch(log_prob, old, adv, mask), LLDSParams(gate="response"))
    official = 0.3 * (sapo_term.per_token * weights).sum() / sapo_term.mask.sum() + 0.5 * (
        llds_term.per_token * weights
    ).sum() / mask.sum()  # SAPO over the A ≥ 0 rows' tokens, LLDS over all tokens: whatever verl's mode
    want = pg + official * (2 / 3)  # the micro-batch's token share of the global batch: N · dp / (3N)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(torch.autograd.grad(got, log_prob)[0], torch.autograd.grad(want, log_prob)[0])


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean"])
def test_micro_batches_weigh_their_penalties_by_their_share_of_the_tokens(default_actor, mode):
    """Like the official code, each micro-batch normalises its penalty on its own; verl sums the micro-batch
    losses, so each is weighted by its share of the mini-batch's tokens (gradient accumulation's 1/K when the
    micro-batches hold equal token counts). The surrogate's parts still sum to the full batch's."""
    old, log_prob, adv, mask = random_batch(4)
    info = {"dp_size": 1, "batch_num_tokens": int(mask.sum()), "global_batch_size": 6, "loss_scale_factor": None}
    default_actor.global_batch_info.update(info)
    halves = (slice(0, 3), slice(3, 6))
    try:
        parts = [
            call_loss("searchrl_sapo", old[s], log_prob[s], adv[s], mask[s], mode, default_actor)[0] for s in halves
        ]
        surrogate = compute_policy_loss_vanilla(old, log_prob, adv, mask.bool(), mode, default_actor)[0]
    finally:
        default_actor.global_batch_info.clear()
    want = surrogate + sum(
        0.1 * sapo_penalty(log_prob[s], old[s], adv[s], mask[s]) * mask[s].sum() / mask.sum() for s in halves
    )
    torch.testing.assert_close(parts[0] + parts[1], want)
    torch.testing.assert_close(
        torch.autograd.grad(parts[0] + parts[1], log_prob)[0], torch.autograd.grad(want, log_prob)[0]
    )


@pytest.mark.parametrize(
    ("loss_name", "algorithm", "knobs"),
    [
        ("searchrl_sapo", {"name": "sapo"}, {}),
        ("searchrl_llds", {"name": "llds"}, {}),
        ("searchrl_sapo_llds", {"name": "sapo", "penalties": ["sapo", "llds"]}, {}),
        (
            "searchrl_sapo_llds",
            {"name": "sapo", "penalties": ["sapo", "llds"]},
            {"sapo": {"gamma": 0.3, "tau": 1.1, "normalization": "paper"},
             "llds": {"gate": "token", "normalization": "paper"}},
        ),
    ],
)
@pytest.mark.parametrize("seed", [0, 5])
def test_the_native_trainer_and_verl_give_the_same_loss_and_gradient(composed, loss_name, algorithm, knobs, seed):
    """One SAPO and one LLDS: the batch the native trainer's objective sees (one micro-batch, token-mean, no KL or
    entropy term) gives verl's loss the same value and gradient, at the defaults and under the paper knobs."""
    from searchrl.algorithms import PolicyBatch, build_objective

    node = copy.deepcopy(composed).actor_rollout_ref.actor
    OmegaConf.update(node, "policy_loss.loss_mode", loss_name)
    OmegaConf.update(node, "policy_loss._target_", LOSS_TARGET)
    if knobs:
        OmegaConf.update(node, "policy_loss.searchrl", knobs, force_add=True)
    config = omega_conf_to_dataclass(node)
    old, log_prob, adv, mask = random_batch(seed)
    got, _ = call_loss(loss_name, old, log_prob, adv, mask, "token-mean", config)
    objective = build_objective({**algorithm, **knobs, "kl_coef": 0.0, "entropy_coef": 0.0})
    native, terms, _ = objective.loss(PolicyBatch(log_prob, old, adv, mask))
    torch.testing.assert_close(got, native)
    torch.testing.assert_close(torch.autograd.grad(got, log_prob)[0], torch.autograd.grad(native, log_prob)[0])
    assert float(terms["penalty"]) > 0


def test_knobs_from_the_verl_config_are_used(tuned_actor, default_actor):
    assert type(tuned_actor.policy_loss).__name__ == "SearchRLPolicyLossConfig"
    old, log_prob, adv, mask = random_batch(5)
    pg, _ = compute_policy_loss_vanilla(old, log_prob, adv, mask.bool(), "token-mean", default_actor)
    for config, (gamma, tau, lam, gate) in ((default_actor, (0.1, 1.0, 0.2, "action")),
                                            (tuned_actor, (0.3, 1.1, 0.5, "response"))):
        got, _ = call_loss("searchrl_sapo_llds", old, log_prob, adv, mask, "token-mean", config)
        want = pg + gamma * sapo_penalty(log_prob, old, adv, mask, tau=tau) + lam * llds_penalty(
            log_prob, old, adv, mask, gate=gate
        )
        torch.testing.assert_close(got, want)


@pytest.fixture(scope="module")
def composed():
    return verl_config()


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"sapo": {"gamma": -1}}, "searchrl.sapo.gamma"),
        ({"llds": {"lam": 0.2}}, "has no 'llds' term"),
        ({"sapo": {"normalization": "mean"}}, "searchrl.sapo.normalization"),
        ({"sapo": {"colour": "red"}}, "searchrl.sapo.colour"),
    ],
)
def test_bad_knobs_are_config_errors_naming_the_key(composed, knobs, message):
    node = copy.deepcopy(composed).actor_rollout_ref.actor
    OmegaConf.update(node, "policy_loss._target_", LOSS_TARGET)
    OmegaConf.update(node, "policy_loss.searchrl", knobs, force_add=True)
    config = omega_conf_to_dataclass(node)  # hydra instantiation, as verl's workers do
    old, log_prob, adv, mask = random_batch(6)
    with pytest.raises(ConfigError, match="actor_rollout_ref.actor.policy_loss.searchrl") as err:
        call_loss("searchrl_sapo", old, log_prob, adv, mask, "token-mean", config)
    assert message in str(err.value)


# ---------------------------------------------------------------------------------------------- agent loop

CORPUS = [
    ("d1", "Freedonia", "Freedonia is a small country. Its capital city is Fredville."),
    ("d2", "Fredville", "Fredville is the capital of Freedonia, on the river Fredo."),
    ("d3", "Sylvania", "Sylvania borders Freedonia. Its capital is Sylvan."),
    ("d4", "Fredo", "The Fredo river flows through Freedonia and Sylvania."),
    ("d5", "Duck Soup", "Duck Soup is a film set in Freedonia."),
    ("d6", "Paris", "Paris is the capital of France."),
]
QUESTION = {"text": "What is the capital of Freedonia", "answers": ["Fredville"], "source": "world", "id": "q7"}
ENGINE_KNOBS = {"max_turns": 2, "max_turn_tokens": 48, "max_obs_tokens": 80, "topk": 2}


def scripts(tok):
    """Four rollouts of one question: correct; valid but wrong (its search finds a silver doc); a tag split
    across tokens with junk after it, then an invalid turn, then an answer; a turn that runs out of budget."""

    def ids(text):
        return tok(text, add_special_tokens=False)["input_ids"]

    split_search = ids("<think>hmm</think><search>Sylvania capital") + ids("</") + ids("search>") + ids(" junk after")
    return [
        ["<think>I need the capital.</think><search>capital of Freedonia</search>",
         "<think>Fredville it is.</think><answer>Fredville</answer>"],
        ["<think>Check the river.</think><search>Fredville river Fredo</search>", "<answer>Sylvan</answer>"],
        [split_search, "I will just guess", "<answer>Sylvan</answer>"],
        ["<think>" + "word " * 80],
    ]


@pytest.fixture(scope="module")
def tokenizer():
    return _tokenizer()


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    from searchrl.retrieval import build_index

    root = tmp_path_factory.mktemp("verl_corpus")
    corpus = root / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": i, "contents": f'"{t}"\n{x}', "title": t, "text": x}) + "\n" for i, t, x in CORPUS)
    )
    return str(build_index(corpus, "bm25", root / "index", show_progress=False))


@pytest.fixture(scope="module")
def trainer_config(index_dir):
    cfg = verl_config("actor_rollout_ref.rollout.calculate_log_probs=true")
    OmegaConf.update(cfg, "searchrl", {"agent_loop": {"retriever": index_dir, "rollout": ENGINE_KNOBS}}, force_add=True)
    return cfg


class ScriptedServerManager:
    """verl's server-manager contract (``await generate(request_id, prompt_ids=, sampling_params=)`` ->
    ``TokenOutput``) serving ScriptedBackend scripts: request id k (in order of first use) replays script k.
    Like vLLM it honours ``max_tokens`` and ``stop`` (ids up to the token that completes a stop string);
    ``honour_stop=False`` plays a server that ignores stop strings and returns the whole turn."""

    def __init__(self, tok, turn_scripts, *, honour_stop=True, logprob=-0.5):
        from searchrl.rollout import ScriptedBackend

        self.backend = ScriptedBackend(tok, turn_scripts, logprob=logprob)
        self.tok = tok
        self.honour_stop = honour_stop
        self.logprob = logprob
        self.rows: dict[str, int] = {}
        self.turns: dict[int, int] = {}
        self.calls: list[tuple[int, list[int], dict]] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from searchrl.rollout import StopChecker
        from verl.workers.rollout.replica import TokenOutput

        row = self.rows.setdefault(request_id, len(self.rows))
        turn = self.turns.get(row, 0)
        self.turns[row] = turn + 1
        self.calls.append((row, list(prompt_ids), dict(sampling_params)))
        intended = self.backend.turn_ids(row, turn, list(prompt_ids))
        stop = sampling_params["stop"] if self.honour_stop else []
        checker = StopChecker(self.tok, stop, self.backend.eos_token_ids)
        emitted: list[int] = []
        for token in intended:
            emitted.append(token)
            if checker.check(emitted) is not None or len(emitted) >= sampling_params["max_tokens"]:
                break
        return TokenOutput(token_ids=emitted, log_probs=[self.logprob] * len(emitted))


def dataset_row(index: int) -> dict:
    """One row of a verl dataset as the agent loop receives it (examples/verl/prepare_data.py's layout)."""
    return {
        "raw_prompt": [{"role": "user", "content": "(unused: the prompt is built from the question)"}],
        "data_source": QUESTION["source"],
        "reward_model": {"style": "rule", "ground_truth": {"target": np.array(QUESTION["answers"], dtype=object)}},
        "extra_info": {"question": QUESTION["text"], "index": QUESTION["id"], "split": "train"},
        "index": index,
    }


def run_agent_loops(trainer_config, tok, server) -> list:
    """Instantiate and run the registered agent loop exactly as verl's AgentLoopWorker does, once per rollout."""
    import hydra
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
    from verl.utils.dataset.rl_dataset import RLHFDataset

    sampling = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
    outputs = []
    for g in range(4):
        loop = hydra.utils.instantiate(
            config=_agent_loop_registry["searchrl_search_r1"],
            trainer_config=DictConfigWrap(config=trainer_config),
            server_manager=server,
            tokenizer=tok,
            processor=None,
            hf_model_type=None,
            dataset_cls=RLHFDataset,
            data_config=DictConfigWrap(trainer_config.data),
            tools=ToolListWrap([]),
        )
        outputs.append(asyncio.run(loop.run(dict(sampling), **dataset_row(g))))
    return outputs


@pytest.fixture(scope="module")
def engine_trajectories(tokenizer, index_dir, trainer_config):
    """searchrl's own engine on the same scripts, budgets and retriever (the reference)."""
    from searchrl.data.types import Question
    from searchrl.retrieval import load_retriever
    from searchrl.rollout import RolloutConfig, RolloutEngine, ScriptedBackend

    rollout = trainer_config.actor_rollout_ref.rollout
    cfg = RolloutConfig(
        **ENGINE_KNOBS,
        max_response_tokens=rollout.response_length,
        max_context_tokens=rollout.prompt_length + rollout.response_length,
        seed=None,
    )
    engine = RolloutEngine(ScriptedBackend(tokenizer, scripts(tokenizer), logprob=-0.5), tokenizer,
                           load_retriever(index_dir), rollout_cfg=cfg)
    question = Question(QUESTION["id"], QUESTION["text"], QUESTION["answers"], QUESTION["source"])
    return engine.run([question], group_size=4)


@pytest.fixture(scope="module")
def agent_outputs(tokenizer, trainer_config):
    server = ScriptedServerManager(tokenizer, scripts(tokenizer))
    return run_agent_loops(trainer_config, tokenizer, server), server


def test_agent_loop_matches_searchrl_engine_token_for_token(agent_outputs, engine_trajectories):
    outputs, server = agent_outputs
    assert [t.finish_reason for t in engine_trajectories] == ["answer", "answer", "answer", "length"]
    for out, traj in zip(outputs, engine_trajectories):
        assert out.prompt_ids == traj.prompt_ids
        assert out.response_ids == traj.response_ids
        assert out.response_mask == traj.response_mask
        assert out.response_logprobs == traj.sampling_logprobs
        record = out.extra_fields["searchrl"]
        assert [t["doc_ids"] for t in record["turns"]] == [t.doc_ids for t in traj.turns]
        assert [(t["think"], t["action"], t["query"]) for t in record["turns"]] == [
            (t.think, t.action, t.query) for t in traj.turns
        ]
        assert record["finish_reason"] == traj.finish_reason and record["answer"] == traj.answer
    # masks: observations are 0, and there is one run of 1s per model turn
    assert 0 in outputs[0].response_mask and outputs[0].response_mask[0] == 1
    assert outputs[0].extra_fields["searchrl"]["turns"][0]["doc_ids"][0] in {"d1", "d2"}
    # token in, token out: each call sends the whole context so far, and the stop strings
    row2 = [(prompt, params) for row, prompt, params in server.calls if row == 2]
    assert [p["stop"] for _, p in row2] == [["</search>", "</answer>"]] * 3
    for prompt, _ in row2:
        sent = len(prompt) - len(outputs[2].prompt_ids)
        assert prompt == outputs[2].prompt_ids + outputs[2].response_ids[:sent]
    assert "junk" not in tokenizer_decode(outputs[2])  # the tokens after </search> were dropped
    # the v1 trainer stores outputs with as_dict() in a TensorDict: the record survives it
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    stored = list_of_dict_to_tensordict([o.as_dict() for o in outputs])["extra_fields"]
    assert [stored[b]["searchrl"] for b in range(4)] == [o.extra_fields["searchrl"] for o in outputs]


@functools.lru_cache(maxsize=1)
def _tokenizer():
    from searchrl.models import default_tokenizer

    return default_tokenizer()


def tokenizer_decode(output) -> str:
    return _tokenizer().decode(output.response_ids, skip_special_tokens=True)  # as verl's reward manager


def test_agent_loop_cuts_a_server_that_ignores_stop_strings(tokenizer, trainer_config, agent_outputs):
    outputs, _ = agent_outputs
    overshooting = ScriptedServerManager(tokenizer, scripts(tokenizer), honour_stop=False)
    again = run_agent_loops(trainer_config, tokenizer, overshooting)
    for a, b in zip(again, outputs):
        assert (a.response_ids, a.response_mask, a.response_logprobs) == (b.response_ids, b.response_mask,
                                                                           b.response_logprobs)


def test_agent_loop_settings_errors_name_the_key(tokenizer, trainer_config):
    from searchrl.integrations.verl.agent_loop import AgentLoopSettings

    bad = OmegaConf.create({"searchrl": {"agent_loop": {"retriever": "x", "rollout": {"temperature": 0.5}}}})
    with pytest.raises(ConfigError, match=r"searchrl\.agent_loop\.rollout\.temperature: verl decides"):
        AgentLoopSettings.from_config(bad)
    with pytest.raises(ConfigError, match=r"searchrl\.agent_loop\.retriever: missing"):
        AgentLoopSettings.from_config(OmegaConf.create({}))
    with pytest.raises(ConfigError, match=r"searchrl\.agent_loop\.rollout\.max_turns"):
        AgentLoopSettings.from_config(OmegaConf.create({"searchrl": {"agent_loop": {"retriever": "x",
                                                                                     "rollout": {"max_turns": -1}}}}))


# ---------------------------------------------------------------------------------------------- CalibAdv


def batch_from_outputs(outputs, reward_kwargs):
    """verl's view of the rollouts: padded masks, the reward on each last response token, uids, records."""
    width = max(len(o.response_mask) for o in outputs)
    mask = torch.zeros(len(outputs), width)
    rewards = torch.zeros(len(outputs), width)
    tok = tokenizer_decode
    scores = []
    for b, out in enumerate(outputs):
        mask[b, : len(out.response_mask)] = torch.tensor(out.response_mask, dtype=torch.float32)
        row = dataset_row(b)
        score = compute_score(row["data_source"], tok(out), row["reward_model"]["ground_truth"],
                              {"searchrl": out.extra_fields["searchrl"]}, **reward_kwargs)
        rewards[b, len(out.response_mask) - 1] = score["score"]
        scores.append(score["score"])
    uids = np.array(["uid-7"] * len(outputs), dtype=object)
    records = np.array([o.extra_fields["searchrl"] for o in outputs], dtype=object)
    return rewards, mask, uids, records, scores


def test_calibadv_estimator_with_turn_records_equals_searchrl(agent_outputs, engine_trajectories, trainer_config):
    outputs, _ = agent_outputs
    rewards, mask, uids, records, scores = batch_from_outputs(outputs, {"metric": "f1"})
    assert scores[0] == 1.0 and scores[1] == 0.0
    fn = get_adv_estimator_fn("searchrl_calibadv")
    adv, returns = fn(token_level_rewards=rewards, response_mask=mask, config=trainer_config.algorithm, index=uids,
                      non_tensor_batch={"searchrl": records})
    from searchrl.rewards import RewardConfig, score_trajectory

    for traj in engine_trajectories:
        score_trajectory(traj, RewardConfig(metric="f1"))
    c = silver_turn_scores(
        [[t.doc_ids for t in traj.turns[:-1]] for traj in engine_trajectories],
        [[t.think for t in traj.turns[:-1]] for traj in engine_trajectories],
        [traj.extras["f1"] for traj in engine_trajectories],
        [traj.extras["format_valid"] for traj in engine_trajectories],
    )
    assert c[1] and c[1][0] > 0  # the wrong rollout's search found a silver document: soft penalty applies
    want = calibadv_advantages(torch.tensor(scores), list(uids), mask, c)
    torch.testing.assert_close(adv, want)
    assert returns is adv
    no_soft = calibadv_advantages(torch.tensor(scores), list(uids), mask, [[] for _ in scores])
    assert not torch.allclose(adv, no_soft)


def test_verl_compute_advantage_calls_the_estimator_and_the_record_limitation_is_explicit(agent_outputs):
    from verl import DataProto
    from verl.trainer.ppo.ray_trainer import compute_advantage

    outputs, _ = agent_outputs
    rewards, mask, uids, records, scores = batch_from_outputs(outputs, {"metric": "f1"})

    def data():
        return DataProto.from_dict(
            tensors={"token_level_rewards": rewards.clone(), "response_mask": mask.clone()},
            non_tensors={"uid": uids, "searchrl": records},
        )

    full = verl_config("algorithm.adv_estimator=searchrl_calibadv")
    with pytest.raises(ConfigError, match="soft_penalty=false"):
        compute_advantage(data(), adv_estimator=full.algorithm.adv_estimator, config=full.algorithm)
    rebalance_only = verl_config("algorithm.adv_estimator=searchrl_calibadv",
                                 "+algorithm.searchrl.calibadv.soft_penalty=false",
                                 "+algorithm.searchrl.calibadv.rebalance_ratio=1.5")
    out = compute_advantage(data(), adv_estimator="searchrl_calibadv", config=rebalance_only.algorithm)
    want = calibadv_advantages(torch.tensor(scores), list(uids), mask, [[] for _ in scores], rebalance_ratio=1.5)
    torch.testing.assert_close(out.batch["advantages"], want)


def test_calibadv_knob_errors_name_the_key(agent_outputs):
    rewards = torch.zeros(2, 3)
    mask = torch.ones(2, 3)
    cfg = OmegaConf.create({"searchrl": {"calibadv": {"rebalance_ratio": 0, "soft_penalty": False}}})
    with pytest.raises(ConfigError, match=r"algorithm\.searchrl\.calibadv\.rebalance_ratio"):
        get_adv_estimator_fn("searchrl_calibadv")(token_level_rewards=rewards, response_mask=mask, config=cfg,
                                                  index=np.array(["a", "a"], dtype=object))


# ---------------------------------------------------------------------------------------------- reward


def test_reward_from_the_agent_loop_record_equals_searchrl_scoring(agent_outputs, engine_trajectories):
    from searchrl.rewards import RewardConfig, score_trajectory

    outputs, _ = agent_outputs
    for kwargs in ({}, {"metric": "f1"}, {"preset": "search_r1_v03"}):
        cfg = RewardConfig.from_dict(dict(kwargs))
        for b, (out, traj) in enumerate(zip(outputs, engine_trajectories)):
            row = dataset_row(b)
            text = tokenizer_decode(out)
            got = compute_score(row["data_source"], text, row["reward_model"]["ground_truth"],
                                {"searchrl": out.extra_fields["searchrl"], "index": b}, **kwargs)
            assert got["score"] == score_trajectory(traj, cfg)
            assert (got["em"], got["f1"], bool(got["format_valid"])) == (
                traj.extras["em"], traj.extras["f1"], traj.extras["format_valid"])
            # without the record (another agent loop), the decoded text alone gives the same reward here
            assert compute_score(row["data_source"], text, ["Fredville"], None, **kwargs)["score"] == got["score"]


@pytest.mark.parametrize(
    ("response", "truth", "kwargs", "score"),
    [
        ("<think>a</think><search>q</search>\n\n<information>Doc 1(Title: F) Fredville.</information>\n\n"
         "<answer>Fredville</answer>", {"target": np.array(["Fredville"])}, {}, 1.0),
        ("<answer>The Fredville</answer>", "fredville", {}, 1.0),
        ("<answer>Sylvan</answer>", ["Fredville", "Fred"], {}, 0.0),
        ("<answer>Fredville city</answer>", ["Fredville"], {"metric": "f1"}, pytest.approx(2 / 3)),
        ("I think <answer>Fredville</answer>", ["Fredville"], {"preset": "search_r1_v03"}, pytest.approx(0.8)),
        ("<think>no idea</think>", ["Fredville"], {"preset": "search_r1_v03"}, 0.0),
    ],
)
def test_compute_score_examples(response, truth, kwargs, score):
    out = compute_score("nq", response, truth, {}, **kwargs)
    assert out["score"] == score
    assert set(out) == {"score", "has_answer", "em", "f1", "cover_em", "format_valid", "answer_in_retrieval"}


def test_compute_score_rejects_bad_config_and_ground_truth():
    from searchrl.errors import DataError

    with pytest.raises(ConfigError, match="reward.custom_reward_function.reward_kwargs.metric"):
        compute_score("nq", "<answer>x</answer>", ["x"], None, metric="bleu")
    with pytest.raises(DataError, match="reward_model.ground_truth"):
        compute_score("nq", "<answer>x</answer>", {"answers": ["x"]}, None)


# ---------------------------------------------------------------------------------------------- examples


@pytest.mark.parametrize(
    ("name", "loss_mode", "group", "batch", "max_turns", "metric"),
    [("search_r1_grpo", "vanilla", 5, 512, 4, "em"), ("sapo", "searchrl_sapo", 10, 256, 5, "f1")],
)
def test_example_configs_compose_validate_and_build(name, loss_mode, group, batch, max_turns, metric):
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    from searchrl.integrations.verl.agent_loop import AgentLoopSettings
    from searchrl.integrations.verl.reward import reward_config

    with initialize_config_dir(config_dir=str(REPO / "examples" / "verl" / "config"), version_base=None):
        cfg = compose(config_name=name)
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    assert actor.policy_loss.loss_mode == loss_mode
    assert (cfg.actor_rollout_ref.rollout.n, cfg.data.train_batch_size) == (group, batch)
    hyper = (actor.optim.lr, actor.kl_loss_coef, actor.kl_loss_type, actor.clip_ratio)
    assert hyper == (1e-6, 0.001, "low_var_kl", 0.2)
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "searchrl_search_r1"
    settings = AgentLoopSettings.from_config(cfg)
    assert settings.rollout_config(512, 3584).max_turns == max_turns
    assert reward_config(cfg.reward.custom_reward_function.reward_kwargs).metric == metric
    if loss_mode.startswith("searchrl_"):
        objective = verl_losses.loss_objective(loss_mode, actor)
        assert [(entry.name, params.gamma, params.tau) for entry, params in objective.penalties] == [("sapo", 0.1, 1.0)]
        old, log_prob, adv, mask = random_batch(7)
        loss, _ = call_loss(loss_mode, old, log_prob, adv, mask, actor.loss_agg_mode, actor)
        assert torch.isfinite(loss)


def test_prepare_data_writes_rows_verl_reads_and_the_agent_loop_understands(tmp_path, tokenizer):
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from searchrl.integrations.verl.records import question_from_row

    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        json.dumps({"id": "q1", "question": "What is the capital of Freedonia", "golden_answers": ["Fredville"]}) + "\n"
        + json.dumps({"id": "q2", "question": "Who wrote Duck Soup?", "golden_answers": ["Marx", "the Marx Brothers"]})
        + "\n"
    )
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "verl" / "prepare_data.py"), "--train", str(questions),
         "--test", str(questions), "--out", str(tmp_path / "verl")],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    cfg = verl_config(f"data.train_files={tmp_path / 'verl' / 'train.parquet'}", "data.dataloader_num_workers=0")
    dataset = RLHFDataset(str(tmp_path / "verl" / "train.parquet"), tokenizer, cfg.data)
    assert len(dataset) == 2
    row = dataset[1]
    question = question_from_row(row)
    assert (question.id, question.question, question.golden_answers) == (
        "q2", "Who wrote Duck Soup?", ["Marx", "the Marx Brothers"])
    assert row["agent_name"] == "searchrl_search_r1"
    assert row["raw_prompt"][0]["content"].endswith("Question: Who wrote Duck Soup?\n")
