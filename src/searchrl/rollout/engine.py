"""The multi-turn rollout engine: Search-R1's agent loop, token-exact, stopping where the agent stops.

Loop (Search-R1 `LLMGenerationManager.run_llm_loop`, peers.md §1.4), for all G×Q trajectories at once:

    for turn in 0 .. max_turns:                # max_turns generation calls, then one final call
        generate for every active trajectory until </search>, </answer>, EOS or its token budget
        answer                 → done ("answer")
        search (not final)     → queued; ONE retriever call for all queued queries of this turn
        search (final turn)    → done ("max_turns"); the search is not executed
        no valid action        → Search-R1's invalid-action message is the observation (final turn: "max_turns")
        budget hit, no action  → done ("length")
        append each observation's tokens (mask 0) and continue

So `max_turns` bounds the generation calls of the loop, as in Search-R1 (4 → at most 4 searches and 5 calls);
an invalid turn uses one of them. Differences from Search-R1 (peers.md §1.4, "weaknesses"):

- generation stops at the closing tag instead of running to the full budget and cutting the text afterwards;
- the sampled ids are kept exactly (EOS included); nothing is decoded and re-tokenised; observations are
  tokenised alone (`protocol.encode_text`), so decoding `response_ids` gives exactly the text the model saw;
- budgets end a trajectory ("length") instead of silently cutting the context from the left;
- a failing retriever is retried, then the trajectories that needed it end as "retrieval_error" (for the
  trainer to exclude), instead of crashing the run or scoring 0;
- identical queries within a turn (common within a GRPO group) are sent to the retriever once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from searchrl.errors import ConfigError, RetrievalError
from searchrl.protocol import (
    INVALID_ACTION_MESSAGE,
    STOP_STRINGS,
    ProtocolConfig,
    encode_observation,
    encode_prompt,
    encode_text,
    extract_answer,
    extract_think,
    parse_action,
    truncate_query,
)
from searchrl.rollout.backend import FINISH_LENGTH, GenerationBackend, GenerationSession, SamplingParams
from searchrl.rollout.types import Trajectory, Turn
from searchrl.settings import build, check, setting

if TYPE_CHECKING:
    from rich.progress import Progress
    from transformers import PreTrainedTokenizerBase

    from searchrl.data.types import Question
    from searchrl.retrieval.base import Hit, Retriever

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RolloutConfig:
    """Rollout budgets and sampling (config section `rollout`). Defaults are Search-R1's where it has one
    (peers.md §1.7); Search-R1 trains at T=1 and evaluates greedily."""

    max_turns: int = setting(
        4, "generation calls before the final one (Search-R1 `max_turns` 4): at most this many searches.", ge=0
    )
    max_turn_tokens: int = setting(
        500, "sampled tokens per generation call (Search-R1 `max_response_length` 500).", ge=1
    )
    max_response_tokens: int = setting(
        4096,
        "sampled + observation tokens of a whole trajectory. Search-R1 caps it at `max_prompt_length` 4096 (by cutting "
        "the context from the left); here a trajectory that reaches it ends with \"length\".",
        ge=1,
    )
    max_context_tokens: int = setting(
        4096, "prompt + response tokens; a trajectory that reaches it ends with \"length\" (Search-R1: 4096).", ge=1
    )
    max_obs_tokens: int = setting(
        500,
        "tokens of one observation (Search-R1 `max_obs_length` 500); passages are cut, the `<information>` wrapper is "
        "kept.",
        ge=1,
    )
    topk: int = setting(3, "passages per search (Search-R1 `retriever.topk` 3).", ge=1)
    temperature: float = setting(1.0, "sampling temperature (> 0 unless greedy).")
    top_p: float = setting(1.0, "nucleus sampling mass (1.0: off).", gt=0, le=1)
    top_k: int = setting(0, "sample among the k most likely tokens (0: off).", ge=0)
    greedy: bool = setting(False, "take the argmax instead of sampling (evaluation).")
    bf16: bool | None = setting(
        None,
        "sample the training rollouts under bf16 autocast with a bf16 KV cache; null: as train.bf16 on a CUDA GPU "
        "(the precision of the trainer's log-prob forwards, and what TRL and vLLM sample in), float32 on the CPU "
        "(where the oneDNN-packed float32 kernels decode faster: 32 rows x 48 tokens took 12.6 s against 23.8 s "
        "under bf16 autocast on an Intel Xeon with avx512_bf16; on an AMD EPYC with avx512_bf16 true was no faster in "
        "the demo, and a trained demo agent sampled in bf16 wrote well-formed trajectories 0.09 less often: "
        "docs/benchmarks.md, Where a demo step's time goes). Evaluation always decodes in float32.",
    )
    cuda_graphs: bool = setting(
        True,
        "on a CUDA GPU, decode each batch by replaying one captured CUDA graph of its decode step (fixed shapes: a "
        "finished row keeps its slot until the batch ends); a small model's GPU decode step is host-bound, and a "
        "replay skips the host's work (docs/benchmarks.md, One GPU). false: eager decoding with a shrinking batch. No "
        "effect on the CPU.",
    )
    max_query_chars: int = setting(4096, "longer queries are cut (the retrieval server's limit is 4096).", ge=1)
    retrieval_attempts: int = setting(3, "tries of a failing retriever call, with exponential backoff.", ge=1)
    retrieval_backoff_s: float = setting(0.5, "first backoff between retriever tries, in seconds.", ge=0)
    seed: int | None = setting(
        0, "seeds sampling; run k of one engine uses `seed + k`, so runs differ but replay exactly."
    )

    def __post_init__(self) -> None:
        check(self, "rollout")
        self.sampling(None)  # temperature 0 needs greedy

    def sampling(self, seed: int | None) -> SamplingParams:
        return SamplingParams(self.temperature, self.top_p, self.top_k, self.greedy, seed)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None, *, where: str = "rollout") -> RolloutConfig:
        """From plain data (YAML, verl's config); see `searchrl.settings.build`."""
        return build(cls, values, where)


@dataclass
class _Row:
    """A trajectory under construction."""

    index: int
    question: Question
    prompt_ids: list[int]
    response_ids: list[int] = field(default_factory=list)
    response_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    error: str | None = None

    def add_sampled(self, ids: Sequence[int], logprobs: Sequence[float]) -> None:
        self.response_ids.extend(ids)
        self.response_mask.extend([1] * len(ids))
        self.logprobs.extend(float(x) for x in logprobs)

    def add_observation(self, ids: Sequence[int], text: str) -> None:
        self.response_ids.extend(ids)
        self.response_mask.extend([0] * len(ids))
        self.logprobs.extend([0.0] * len(ids))
        self.observations[-1] = text


class RolloutEngine:
    """Runs batches of multi-turn search-agent trajectories (see the module docstring for the loop).

    `backend` is any `GenerationBackend` (`HFBackend`, `ScriptedBackend`, ...); `retriever` any object with
    `search(queries, topk) -> list[list[Hit]]` (pass a `CachedRetriever` to cache). The engine itself holds no
    model state; it is cheap to build and reuse.
    """

    def __init__(
        self,
        backend: GenerationBackend,
        tokenizer: PreTrainedTokenizerBase,
        retriever: Retriever,
        protocol_cfg: ProtocolConfig | None = None,
        rollout_cfg: RolloutConfig | None = None,
    ):
        self.backend = backend
        self.tokenizer = tokenizer
        self.retriever = retriever
        self.protocol = protocol_cfg or ProtocolConfig()
        self.cfg = rollout_cfg or RolloutConfig()
        self._invalid_ids = encode_text(INVALID_ACTION_MESSAGE, tokenizer)
        self._runs = 0

    def run(
        self,
        questions: Sequence[Question],
        group_size: int,
        progress: Progress | bool | None = None,
        *,
        seed: int | None = None,
    ) -> list[Trajectory]:
        """Sample `group_size` trajectories per question; return them question-major (q0's G, then q1's, ...).

        Each trajectory's `group_id` is its question's `uid`. `progress`: a rich `Progress` to add a task to, or
        True for a progress bar of its own. `seed` overrides the config's seed for this run.
        """
        if group_size < 1:
            raise ConfigError(f"rollout group_size: {group_size} must be >= 1")
        if seed is None and self.cfg.seed is not None:
            seed = self.cfg.seed + self._runs
        self._runs += 1
        prompts = [encode_prompt(q.question, self.protocol, self.tokenizer) for q in questions]
        rows = [
            _Row(index=qi * group_size + g, question=q, prompt_ids=prompts[qi])
            for qi, q in enumerate(questions)
            for g in range(group_size)
        ]
        if not rows:
            return []
        own_progress = None
        if progress is True:
            from rich.progress import Progress as RichProgress

            own_progress = progress = RichProgress(transient=True)
            own_progress.start()
        tracker = _Tracker(progress if progress not in (None, False, True) else None, len(rows))
        session = self.backend.open_session([r.prompt_ids for r in rows], self.cfg.sampling(seed))
        try:
            for row in rows:
                if len(row.prompt_ids) >= self.cfg.max_context_tokens:
                    self._finish(session, tracker, row, FINISH_LENGTH)
            for turn_index in range(self.cfg.max_turns + 1):
                active = [r for r in rows if r.finish_reason is None]
                if not active:
                    break
                self._turn(session, tracker, active, final=turn_index == self.cfg.max_turns)
        finally:
            session.close()
            if own_progress is not None:
                own_progress.stop()
        states = getattr(session, "states", None)  # a backend that records hidden states (HFBackend)
        return [self._trajectory(r, states) for r in rows]

    # -- one turn ---------------------------------------------------------------------------------------------
    def _room(self, row: _Row) -> int:
        """Tokens this row may still add to its response under the response and context limits."""
        used = len(row.response_ids)
        return min(self.cfg.max_response_tokens - used, self.cfg.max_context_tokens - len(row.prompt_ids) - used)

    def _turn(self, session: GenerationSession, tracker: _Tracker, active: list[_Row], *, final: bool) -> None:
        budgets = {r.index: min(self.cfg.max_turn_tokens, self._room(r)) for r in active}
        for row in active:
            if budgets[row.index] < 1:
                self._finish(session, tracker, row, FINISH_LENGTH)
        active = [r for r in active if r.finish_reason is None]
        if not active:
            return
        generations = session.generate([r.index for r in active], [budgets[r.index] for r in active], STOP_STRINGS)
        searching: list[tuple[_Row, str]] = []
        invalid: list[_Row] = []
        for row, gen in zip(active, generations):
            row.add_sampled(gen.token_ids, gen.logprobs)
            text = self.tokenizer.decode(gen.token_ids, skip_special_tokens=False)
            # The assistant prefix belongs to the first reply: parse it together with what follows.
            parsed_text = (self.protocol.assistant_prefix if not row.turns else "") + text
            action = parse_action(parsed_text)
            turn = Turn(text=text, think=extract_think(parsed_text), action=action.kind)
            row.turns.append(turn)
            row.observations.append("")
            if action.kind == "answer":
                self._finish(session, tracker, row, "answer")
            elif gen.finish == FINISH_LENGTH and action.kind == "invalid":
                turn.action = "none"
                self._finish(session, tracker, row, FINISH_LENGTH)
            elif final:
                # Search-R1's last call runs with do_search=False: a search is not executed, no answer was given.
                self._finish(session, tracker, row, "max_turns")
            elif action.kind == "search":
                turn.query, turn.query_truncated = truncate_query(action.content, self.cfg.max_query_chars)
                searching.append((row, turn.query))
            else:
                invalid.append(row)
        extend_rows: list[_Row] = []
        extend_ids: list[list[int]] = []
        for row in invalid:
            if len(self._invalid_ids) > self._room(row):
                self._finish(session, tracker, row, FINISH_LENGTH)
                continue
            row.add_observation(self._invalid_ids, INVALID_ACTION_MESSAGE)
            extend_rows.append(row)
            extend_ids.append(self._invalid_ids)
        if searching:
            hits, error = self._retrieve([q for _, q in searching])
            for i, (row, _) in enumerate(searching):
                if hits is None:
                    row.error = error
                    self._finish(session, tracker, row, "retrieval_error")
                    continue
                turn = row.turns[-1]
                turn.doc_ids = [h.doc_id for h in hits[i]]
                turn.docs = [h.contents for h in hits[i]]
                limit = min(self.cfg.max_obs_tokens, self._room(row))
                ids, text, _ = encode_observation(hits[i], self.tokenizer, limit)
                if not ids:  # not even the <information> wrapper fits
                    self._finish(session, tracker, row, FINISH_LENGTH)
                    continue
                row.add_observation(ids, text)
                extend_rows.append(row)
                extend_ids.append(ids)
        if extend_rows:
            session.extend([r.index for r in extend_rows], extend_ids)

    def _retrieve(self, queries: list[str]) -> tuple[list[list[Hit]] | None, str | None]:
        """One retriever call for the distinct queries of a turn, retried; (hits per query, None) or (None, error)."""
        unique = list(dict.fromkeys(queries))
        error = ""
        for attempt in range(self.cfg.retrieval_attempts):
            try:
                results = self.retriever.search(unique, topk=self.cfg.topk)
                if len(results) != len(unique):
                    raise RetrievalError(
                        f"the retriever returned {len(results)} result lists for {len(unique)} queries"
                    )
                by_query = dict(zip(unique, results))
                return [list(by_query[q]) for q in queries], None
            except Exception as exc:  # any retriever failure (HTTP, index, bug) is retried, then reported
                error = f"{type(exc).__name__}: {exc}"
                log.warning("retrieval attempt %d/%d failed: %s", attempt + 1, self.cfg.retrieval_attempts, error)
                if attempt + 1 < self.cfg.retrieval_attempts and self.cfg.retrieval_backoff_s > 0:
                    time.sleep(self.cfg.retrieval_backoff_s * 2**attempt)
        return None, error

    def _finish(self, session: GenerationSession, tracker: _Tracker, row: _Row, reason: str) -> None:
        row.finish_reason = reason
        release = getattr(session, "release", None)
        if release is not None:
            release([row.index])
        tracker.advance()

    def _trajectory(self, row: _Row, states: Callable[[int, int], Any] | None = None) -> Trajectory:
        prefix = self.protocol.assistant_prefix
        model_text = prefix + "".join(t.text for t in row.turns)
        extras: dict[str, Any] = {"assistant_prefix": prefix, "observations": list(row.observations)}
        if row.error is not None:
            extras["retrieval_error"] = row.error
        return Trajectory(
            question=row.question,
            group_id=row.question.uid,
            prompt_ids=list(row.prompt_ids),
            response_ids=row.response_ids,
            response_mask=row.response_mask,
            sampling_logprobs=row.logprobs,
            turns=row.turns,
            answer=extract_answer(model_text),
            num_searches=sum(1 for t in row.turns if t.query is not None),
            finish_reason=str(row.finish_reason),
            extras=extras,
            sampler_states=states(row.index, len(row.prompt_ids) + len(row.response_ids)) if states else None,
        )


class _Tracker:
    """Advances a rich progress task as trajectories finish (no-op without one)."""

    def __init__(self, progress: Progress | None, total: int):
        self.progress = progress
        self.task = progress.add_task("rollout", total=total) if progress is not None else None

    def advance(self) -> None:
        if self.progress is not None and self.task is not None:
            self.progress.advance(self.task)
