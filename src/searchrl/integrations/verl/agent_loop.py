"""The Search-R1 agent loop for verl's agent-loop framework: ``agent_name`` / ``default_agent_loop`` =
``searchrl_search_r1``.

verl runs one ``AgentLoopBase`` per trajectory as an asyncio task and generates token-in/token-out through its
server manager (vLLM or SGLang). This loop does not re-implement the protocol: it runs searchrl's own
``RolloutEngine`` (the loop searchrl's CPU trainer uses) on one question, in a worker thread, over a
``GenerationBackend`` whose ``generate`` forwards to ``server_manager.generate`` on the event loop. So a verl
run and a searchrl run share every rule: stop at ``</search>`` / ``</answer>`` / EOS, the exact sampled ids and
their log-probabilities kept (nothing decoded and re-tokenised), one retriever call per search, observations
``\\n\\n<information>…</information>\\n\\n`` (or the invalid-action message) appended with mask 0, budgets that
end a trajectory instead of cutting its context, and the prompt built by ``searchrl.protocol`` from the row's
question.

Every ``generate`` call sends the trajectory's whole context (prompt, sampled and observation tokens) with
``max_tokens`` = the turn's remaining budget and ``stop`` = the protocol's stop strings, under one request id per
trajectory (verl routes it to one server, for prefix caching). The returned ids are cut at the first stop string
or EOS with searchrl's ``StopChecker``, so a server that overshoots a stop string still yields the engine's turn.

Output: ``AgentLoopOutput`` with ``response_mask`` 1 on sampled tokens and 0 on observations,
``response_logprobs`` the server's log-probs (None when the server returned none: set
``actor_rollout_ref.rollout.calculate_log_probs=true``), and ``extra_fields["searchrl"]``: the trajectory record
(``records.trajectory_record``: per turn the text, think, action, query, retrieved doc ids and contents; the
answer, finish reason, EM, F1, format validity), which the reward function and the CalibAdv estimator read.

Settings: the top-level ``searchrl.agent_loop`` section of the verl config (``AgentLoopSettings``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

from searchrl.errors import ConfigError
from searchrl.integrations.verl.config import section
from searchrl.integrations.verl.records import RECORD_KEY, question_from_row, trajectory_record
from searchrl.protocol import ProtocolConfig, encode_prompt
from searchrl.retrieval.base import Hit, Retriever
from searchrl.rewards import RewardConfig, score_trajectory
from searchrl.rollout.backend import FINISH_LENGTH, Generation, SamplingParams, StopChecker, eos_token_ids
from searchrl.rollout.engine import RolloutConfig, RolloutEngine

log = logging.getLogger(__name__)

AGENT_NAME = "searchrl_search_r1"
SETTINGS_KEY = "searchrl.agent_loop"
# RolloutConfig fields the agent loop takes from searchrl.agent_loop.rollout.
ENGINE_KEYS = (
    "max_turns",
    "max_turn_tokens",
    "max_obs_tokens",
    "topk",
    "max_query_chars",
    "retrieval_attempts",
    "retrieval_backoff_s",
)
# RolloutConfig fields verl decides: where to set them instead.
_VERL_DECIDES = {
    "temperature": "actor_rollout_ref.rollout.temperature (validation: rollout.val_kwargs.temperature)",
    "top_p": "actor_rollout_ref.rollout.top_p",
    "top_k": "actor_rollout_ref.rollout.top_k",
    "greedy": "actor_rollout_ref.rollout.val_kwargs.temperature=0 (verl samples greedily at temperature 0)",
    "seed": "actor_rollout_ref.rollout.seed",
    "bf16": "actor_rollout_ref.rollout.dtype (the inference engine's precision)",
    "max_response_tokens": "actor_rollout_ref.rollout.response_length",
    "max_context_tokens": "data.max_prompt_length + data.max_response_length (rollout.prompt_length + "
    "rollout.response_length)",
}


@dataclass(frozen=True)
class AgentLoopSettings:
    """The ``searchrl.agent_loop`` section of the verl config.

    - ``retriever``: an index folder, a ``.jsonl`` corpus or a ``searchrl serve`` URL (``load_retriever``).
    - ``protocol``: ``ProtocolConfig`` fields or ``preset`` (default: Search-R1's prompt, verbatim).
    - ``rollout``: ``RolloutConfig`` budgets, among ``ENGINE_KEYS`` (defaults: Search-R1's: 4 searches, 500 tokens
      per turn and per observation, top-3); sampling and total lengths come from verl's rollout config.
    - ``threads``: trajectories one agent-loop worker process runs at once (each waits on the server in a thread).
    """

    retriever: str
    protocol: ProtocolConfig
    engine: dict[str, Any]
    threads: int = 256

    @classmethod
    def from_config(cls, config: Any) -> AgentLoopSettings:
        raw = dict(section(section(config, "searchrl", ""), "agent_loop", "searchrl"))
        known = {"retriever", "protocol", "rollout", "threads"}
        for key in raw:
            if key not in known:
                raise ConfigError(f"{SETTINGS_KEY}.{key}: unknown key; known keys are {sorted(known)}")
        retriever = raw.get("retriever")
        if not isinstance(retriever, str) or not retriever:
            raise ConfigError(
                f"{SETTINGS_KEY}.retriever: missing; set +{SETTINGS_KEY}.retriever= an index folder, a .jsonl corpus "
                "or the URL of `searchrl serve` (e.g. http://127.0.0.1:8000)"
            )
        protocol_raw = raw.get("protocol") or {}
        if not isinstance(protocol_raw, dict):
            raise ConfigError(f"{SETTINGS_KEY}.protocol: expected a mapping, got {protocol_raw!r}")
        protocol = ProtocolConfig.from_dict(protocol_raw, where=f"{SETTINGS_KEY}.protocol")
        engine = raw.get("rollout") or {}
        if not isinstance(engine, dict):
            raise ConfigError(f"{SETTINGS_KEY}.rollout: expected a mapping, got {engine!r}")
        for key in engine:
            if key in _VERL_DECIDES:
                raise ConfigError(f"{SETTINGS_KEY}.rollout.{key}: verl decides this; set {_VERL_DECIDES[key]}")
            if key not in ENGINE_KEYS:
                raise ConfigError(f"{SETTINGS_KEY}.rollout.{key}: unknown key; known keys are {list(ENGINE_KEYS)}")
        checked = RolloutConfig.from_dict(engine, where=f"{SETTINGS_KEY}.rollout")  # validates and types the values
        threads = raw.get("threads", cls.threads)
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ConfigError(f"{SETTINGS_KEY}.threads: {threads!r} must be an integer >= 1")
        engine = {key: getattr(checked, key) for key in engine}
        return cls(retriever=retriever, protocol=protocol, engine=engine, threads=threads)

    def rollout_config(self, prompt_length: int, response_length: int) -> RolloutConfig:
        """The engine's config: our budgets, verl's lengths; sampling is verl's (the engine's is unused)."""
        return RolloutConfig(
            **self.engine,
            max_response_tokens=response_length,
            max_context_tokens=prompt_length + response_length,
            seed=None,
        )


# -- per-process shared state: one retriever per spec, one thread pool -----------------------------------------

_LOCK = threading.Lock()
_RETRIEVERS: dict[str, Retriever] = {}
_EXECUTORS: dict[int, ThreadPoolExecutor] = {}
_SETTINGS: dict[str, AgentLoopSettings] = {}


class _SerializedRetriever:
    """A local index searched by one thread at a time (index libraries do not promise thread safety)."""

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever
        self.lock = threading.Lock()

    def search(self, queries: list[str], topk: int = 3) -> list[list[Hit]]:
        with self.lock:
            return self.retriever.search(queries, topk=topk)


def shared_retriever(spec: str) -> Retriever:
    """The process-wide retriever for ``spec`` (loaded once; a URL's client is thread-safe and not serialised)."""
    with _LOCK:
        if spec not in _RETRIEVERS:
            from searchrl.retrieval import load_retriever

            retriever = load_retriever(spec)
            is_url = spec.lower().startswith(("http://", "https://"))
            _RETRIEVERS[spec] = retriever if is_url else _SerializedRetriever(retriever)
        return _RETRIEVERS[spec]


def _executor(threads: int) -> ThreadPoolExecutor:
    with _LOCK:
        if threads not in _EXECUTORS:
            _EXECUTORS[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="searchrl-agent")
        return _EXECUTORS[threads]


def agent_loop_settings(config: Any) -> AgentLoopSettings:
    """Parsed and validated ``searchrl.agent_loop`` (cached per distinct section)."""
    key = json.dumps(section(config, "searchrl", ""), sort_keys=True, default=str)
    with _LOCK:
        cached = _SETTINGS.get(key)
    if cached is None:
        cached = AgentLoopSettings.from_config(config)
        with _LOCK:
            _SETTINGS[key] = cached
    return cached


# -- the generation backend over verl's server manager -----------------------------------------------------------


class _TimedRetriever:
    """Counts the seconds spent in retrieval, for verl's ``tool_calls`` timing metric."""

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever
        self.seconds = 0.0

    def search(self, queries: list[str], topk: int = 3) -> list[list[Hit]]:
        start = time.perf_counter()
        try:
            return self.retriever.search(queries, topk=topk)
        finally:
            self.seconds += time.perf_counter() - start


class ServerBackend:
    """A searchrl ``GenerationBackend`` whose sessions generate through verl's async server manager.

    Built on the event loop, used from a worker thread: each ``generate`` schedules
    ``server_manager.generate(...)`` on ``loop`` and waits for it. ``sampling_params`` are verl's (temperature,
    top_p, top_k, logprobs, ...); the engine's own sampling settings are not used.
    """

    def __init__(
        self,
        server_manager: Any,
        loop: asyncio.AbstractEventLoop,
        tokenizer: Any,
        sampling_params: dict[str, Any],
    ) -> None:
        self.server_manager = server_manager
        self.loop = loop
        self.tokenizer = tokenizer
        self.sampling_params = dict(sampling_params)
        self.eos_token_ids = eos_token_ids(tokenizer)
        self.sessions: list[ServerSession] = []

    def open_session(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> ServerSession:
        session = ServerSession(self, prompts)
        self.sessions.append(session)
        return session


class ServerSession:
    """One engine session (here: one trajectory) over the server manager: whole context in, new ids out."""

    def __init__(self, backend: ServerBackend, prompts: Sequence[Sequence[int]]) -> None:
        self.backend = backend
        self.contexts = [list(p) for p in prompts]
        self.request_ids = [uuid4().hex for _ in prompts]  # sticky: every turn of a row goes to one server
        self.turn_tokens: list[list[int]] = [[] for _ in prompts]
        self.logprobs_missing = False
        self.generate_seconds = 0.0

    def _cut(self, ids: list[int], logprobs: list[float], budget: int, stop: Sequence[str]) -> Generation:
        """The turn as the engine defines it: up to the first stop string or EOS, at most ``budget`` ids."""
        checker = StopChecker(self.backend.tokenizer, stop, self.backend.eos_token_ids)
        for end in range(1, min(len(ids), budget) + 1):
            finish = checker.check(ids[:end])
            if finish is not None:
                return Generation(ids[:end], logprobs[:end], finish)
        end = min(len(ids), budget)
        return Generation(ids[:end], logprobs[:end], FINISH_LENGTH)

    def generate(self, rows: Sequence[int], max_new_tokens: Sequence[int], stop: Sequence[str]) -> list[Generation]:
        results = []
        for row, budget in zip(rows, max_new_tokens, strict=True):
            params = {**self.backend.sampling_params, "max_tokens": int(budget), "stop": list(stop)}
            start = time.perf_counter()
            output = asyncio.run_coroutine_threadsafe(
                self.backend.server_manager.generate(
                    request_id=self.request_ids[row], prompt_ids=list(self.contexts[row]), sampling_params=params
                ),
                self.backend.loop,
            ).result()
            self.generate_seconds += time.perf_counter() - start
            ids = [int(i) for i in output.token_ids]
            logprobs = output.log_probs
            if logprobs is None or len(logprobs) != len(ids):
                self.logprobs_missing = True
                logprobs = [0.0] * len(ids)
            generation = self._cut(ids, [float(x) for x in logprobs], int(budget), stop)
            self.contexts[row].extend(generation.token_ids)
            self.turn_tokens[row].append(len(generation.token_ids))
            results.append(generation)
        return results

    def extend(self, rows: Sequence[int], token_ids: Sequence[Sequence[int]]) -> None:
        for row, ids in zip(rows, token_ids, strict=True):
            self.contexts[row].extend(int(i) for i in ids)

    def release(self, rows: Sequence[int]) -> None:
        """Nothing to free: the server holds no per-request state between calls."""

    def close(self) -> None:
        """Nothing to free."""


# -- the agent loop ------------------------------------------------------------------------------------------------


@register(AGENT_NAME)
class SearchR1AgentLoop(AgentLoopBase):
    """Search-R1's multi-turn search loop (searchrl's ``RolloutEngine``) as a verl agent loop."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = agent_loop_settings(self.config)
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.response_length = int(self.rollout_config.response_length)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        question = question_from_row(kwargs)
        prompt_ids = encode_prompt(question.question, self.settings.protocol, self.tokenizer)
        if len(prompt_ids) > self.prompt_length:
            raise ConfigError(
                f"the Search-R1 prompt of question {question.id!r} has {len(prompt_ids)} tokens, more than "
                f"actor_rollout_ref.rollout.prompt_length = {self.prompt_length}; raise data.max_prompt_length"
            )
        loop = asyncio.get_running_loop()
        backend = ServerBackend(self.server_manager, loop, self.tokenizer, sampling_params)
        retriever = _TimedRetriever(shared_retriever(self.settings.retriever))
        engine = RolloutEngine(
            backend,
            self.tokenizer,
            retriever,
            self.settings.protocol,
            self.settings.rollout_config(self.prompt_length, self.response_length),
        )
        trajectories = await loop.run_in_executor(_executor(self.settings.threads), engine.run, [question], 1)
        traj = trajectories[0]
        session = backend.sessions[-1]
        if traj.finish_reason == "retrieval_error":
            log.warning(
                "question %s: retrieval failed after retries: %s", question.id, traj.extras.get("retrieval_error")
            )
        # EM, F1 and format validity do not depend on the reward config; the reward itself is compute_score's.
        score_trajectory(traj, RewardConfig())
        record = trajectory_record(traj, session.turn_tokens[0])
        observations = sum(1 for text in traj.extras.get("observations", []) if text)
        return AgentLoopOutput(
            prompt_ids=traj.prompt_ids,
            response_ids=traj.response_ids,
            response_mask=traj.response_mask,
            response_logprobs=None if session.logprobs_missing else traj.sampling_logprobs,
            num_turns=1 + len(traj.turns) + observations,
            metrics={"generate_sequences": session.generate_seconds, "tool_calls": retriever.seconds},
            extra_fields={RECORD_KEY: record, "turn_scores": [], "tool_rewards": []},
        )


def register_agent_loop() -> None:
    """(Re-)register the agent loop under ``AGENT_NAME`` (verl's registry overwrites; idempotent)."""
    register(AGENT_NAME)(SearchR1AgentLoop)
