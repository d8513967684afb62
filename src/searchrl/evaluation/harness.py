"""Greedy benchmark evaluation of a search agent: EM, F1, cover-EM, search behaviour, with bootstrap CIs.

`evaluate(policy, tokenizer, sources, ...)` runs the rollout engine greedily (one sample per question) on
each source, scores every trajectory with `searchrl.rewards`, and summarises per dataset with 95%
percentile-bootstrap intervals (`EvalReport`). `policy` may be a live model object (the trainer validates
its policy without reloading), a generation backend, or a name/path for `searchrl.models.load_policy`.

Three modes, the rows of the papers' tables:
- `search` (default): the agent protocol; the model decides when and what to search;
- `direct`: no search; the prompt asks for the answer directly (Search-R1's "Direct inference" row);
- `rag`: retrieve top-k passages with the question once, put them in the prompt, answer (the "RAG" row).

Time is split into generation (inside the backend), retrieval (inside the retriever) and everything else
("bookkeeping": tokenisation, the engine's loop, scoring, statistics), by wrapping the backend and the
retriever with timers; see `EvalReport.timing`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from searchrl import models  # models.load_policy, looked up at call time (tests replace it)
from searchrl.data.loaders import DataSource, load_source
from searchrl.errors import ConfigError, DataError, RetrievalError
from searchrl.evaluation.report import METRICS, EvalReport, summarise
from searchrl.evaluation.sampling import stratified_sample
from searchrl.protocol import ProtocolConfig, format_question
from searchrl.retrieval.base import Hit, Retriever, render_hits
from searchrl.retrieval.cache import CachedRetriever
from searchrl.retrieval.index import cached_bm25_index, is_url, load_index, load_retriever
from searchrl.rewards import RewardConfig, answer_in_retrieval, response_text, score_trajectory
from searchrl.rollout.engine import RolloutConfig, RolloutEngine

if TYPE_CHECKING:
    from searchrl.data.types import Question
    from searchrl.rollout.backend import GenerationBackend, GenerationSession
    from searchrl.rollout.types import Trajectory

MODES = ("search", "direct", "rag")

# Direct inference: the Search-R1 instruction without the search tool.
DIRECT_INSTRUCTION = (
    "Answer the given question. You can reason inside <think> and </think> first. Provide the answer inside "
    "<answer> and </answer>, without detailed illustrations. For example, <answer> Beijing </answer>. "
    "Question: {question}\n"
)
# RAG: the passages retrieved with the question are given in the prompt; {question} receives them too.
RAG_INSTRUCTION = (
    "Answer the given question using the documents below. You can reason inside <think> and </think> first. "
    "Provide the answer inside <answer> and </answer>, without detailed illustrations. For example, "
    "<answer> Beijing </answer>.\n\n{question}\n"
)


# --- timers ----------------------------------------------------------------------------------------------


class Stopwatch:
    """Accumulates seconds per named bucket."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, bucket: str, seconds: float) -> None:
        self.seconds[bucket] = self.seconds.get(bucket, 0.0) + seconds

    def timed(self, bucket: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self.add(bucket, time.perf_counter() - start)


class TimedRetriever:
    """A retriever whose `search` time goes to the stopwatch's "retrieval" bucket."""

    def __init__(self, inner: Retriever, watch: Stopwatch) -> None:
        self.inner, self.watch = inner, watch

    def search(self, queries: list[str], topk: int = 3) -> list[list[Hit]]:
        return self.watch.timed("retrieval", self.inner.search, queries, topk=topk)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _TimedSession:
    def __init__(self, inner: GenerationSession, watch: Stopwatch) -> None:
        self.inner, self.watch = inner, watch

    def generate(self, rows: Sequence[int], max_new_tokens: Sequence[int], stop: Sequence[str]) -> Any:
        return self.watch.timed("generation", self.inner.generate, rows, max_new_tokens, stop)

    def extend(self, rows: Sequence[int], token_ids: Sequence[Sequence[int]]) -> None:
        # Appending tokens is deferred prefill work for the model; count it as generation.
        self.watch.timed("generation", self.inner.extend, rows, token_ids)

    def close(self) -> None:
        self.watch.timed("generation", self.inner.close)

    def __getattr__(self, name: str) -> Any:  # release() and backend-specific extras
        return getattr(self.inner, name)


class TimedBackend:
    """A generation backend whose session calls go to the stopwatch's "generation" bucket."""

    def __init__(self, inner: GenerationBackend, watch: Stopwatch) -> None:
        self.inner, self.watch = inner, watch

    def open_session(self, prompts: Sequence[Sequence[int]], sampling: Any) -> _TimedSession:
        return _TimedSession(self.watch.timed("generation", self.inner.open_session, prompts, sampling), self.watch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _NoSearch:
    """The retriever of `direct` mode: the engine runs with max_turns=0 and never calls it."""

    def search(self, queries: list[str], topk: int = 3) -> list[list[Hit]]:
        raise RuntimeError("direct mode does not search")


# --- set-up ----------------------------------------------------------------------------------------------


def _as_sources(sources: Sequence[DataSource | str] | DataSource | str, split: str | None) -> list[DataSource]:
    if isinstance(sources, (str, DataSource)):
        sources = [s for s in sources.split(",") if s.strip()] if isinstance(sources, str) else [sources]
    out = [s if isinstance(s, DataSource) else load_source(s, split=split) for s in sources]
    if not out:
        raise DataError("no data source to evaluate")
    return out


def _resolve_policy(
    policy: Any, tokenizer: Any, batch_size: int, device: Any = None, cuda_graphs: bool = True
) -> tuple[GenerationBackend, Any, Any, str]:
    """(backend, tokenizer, model or None, description) from a backend, a model object or a name/path (loaded onto
    `device`; a model object stays where it is). A model on a CUDA GPU decodes with CUDA graphs if `cuda_graphs`
    (`RolloutConfig.cuda_graphs`)."""
    if hasattr(policy, "open_session"):
        if tokenizer is None:
            tokenizer = getattr(policy, "tokenizer", None)
        if tokenizer is None:
            raise ConfigError("evaluate(): pass the tokenizer along with a generation backend")
        return policy, tokenizer, getattr(policy, "model", None), type(policy).__name__
    # local: torch and transformers cost ~3.5 s to import; `searchrl eval --help` and evaluations with a scripted
    # backend must not pay them
    from searchrl.rollout.hf import HFBackend

    def backend_for(model: Any) -> HFBackend:
        on_cuda = next(model.parameters()).device.type == "cuda"
        return HFBackend(model, tokenizer, max_batch_size=batch_size, static_decode=cuda_graphs and on_cuda)

    if isinstance(policy, (str, Path)):
        model, tokenizer = models.load_policy(policy, device=device)
        return backend_for(model), tokenizer, model, str(policy)
    if tokenizer is None:
        raise ConfigError("evaluate(): pass the tokenizer along with the model")
    name = getattr(getattr(policy, "config", None), "_name_or_path", "") or type(policy).__name__
    return backend_for(policy), tokenizer, policy, str(name)


def _retriever_for(
    source: DataSource, retriever: Retriever | str | Mapping[str, Retriever | str] | None,
    loaded: dict[str, Retriever], show_progress: bool,
) -> tuple[Retriever, str]:
    """The retriever a source searches: the given one, else a cached BM25 index over the source's corpus."""
    spec = retriever.get(source.name) if isinstance(retriever, Mapping) else retriever
    if spec is not None and not isinstance(spec, (str, Path)):
        return spec, type(spec).__name__
    if spec is None:
        if source.corpus_path is None:
            raise ConfigError(
                f"data source '{source.name}' brings no corpus.jsonl; pass --retriever PATH_OR_URL (an index "
                "folder, a corpus .jsonl or a retrieval server URL)"
            )
        key = f"bm25:{source.corpus_path}"
        if key not in loaded:
            loaded[key] = CachedRetriever(load_index(cached_bm25_index(source.corpus_path, show_progress=show_progress)))
        return loaded[key], f"BM25 over {source.corpus_path}"
    key = str(spec)
    if key not in loaded:
        loaded[key] = load_retriever(key)
        if is_url(key):
            probe_retriever(loaded[key], key)
    return loaded[key], key


def probe_retriever(retriever: Retriever, described: str) -> None:
    """One test search, so an unreachable server fails the run before any generation, with what to do.

    A search rather than `GET /health`: Search-R1's own servers answer only `/retrieve`. The client has
    already retried (with backoff) when this raises.
    """
    try:
        retriever.search(["test"], topk=1)
    except Exception as exc:  # httpx, a bad answer, a server bug: all mean the evaluation cannot search
        raise RetrievalError(
            f"retriever {described} failed a test search ({exc}); start a retrieval server there "
            "(`searchrl serve --index INDEX_DIR --port PORT`) or pass --retriever an index folder or a corpus .jsonl"
        ) from None


def default_protocol(mode: str) -> ProtocolConfig:
    """The prompt of each mode: Search-R1's for search, `DIRECT_INSTRUCTION`, `RAG_INSTRUCTION`."""
    if mode == "direct":
        return ProtocolConfig(instruction=DIRECT_INSTRUCTION)
    if mode == "rag":
        return ProtocolConfig(instruction=RAG_INSTRUCTION)
    return ProtocolConfig()


def _rag_question(q: Question, hits: list[Hit]) -> Question:
    """The question as the RAG prompt shows it: the passages, then the question."""
    text = f"Documents:\n{render_hits(hits).strip()}\n\nQuestion: {format_question(q.question)}"
    return dataclasses.replace(q, question=text)


def _dataset_groups(source: DataSource) -> dict[str, list[Question]]:
    """A source with one data_source value is one dataset (named after the source); a merged file
    (Search-R1's test.parquet holds seven benchmarks) is split by its rows' data_source."""
    values = list(dict.fromkeys(q.data_source for q in source.questions))
    if len(values) <= 1:
        return {source.name: list(source.questions)}
    return {v: [q for q in source.questions if q.data_source == v] for v in values}


# --- the evaluation --------------------------------------------------------------------------------------


def evaluate(
    policy: Any,
    tokenizer: Any = None,
    sources: Sequence[DataSource | str] | DataSource | str = "world",
    *,
    retriever: Retriever | str | Mapping[str, Retriever | str] | None = None,
    limit: int | None = None,
    mode: str = "search",
    protocol_cfg: ProtocolConfig | None = None,
    rollout_cfg: RolloutConfig | None = None,
    batch_size: int = 32,
    seed: int = 0,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    progress: bool | Progress = True,
    split: str | None = None,
    model_name: str | None = None,
    device: Any = None,
) -> EvalReport:
    """Evaluate `policy` greedily on `sources`; return per-dataset metrics with bootstrap CIs.

    - `policy`: a `GenerationBackend` (e.g. `HFBackend`, `ScriptedBackend`), a transformers causal LM
      (wrapped in an `HFBackend`; put in eval mode for the run and restored), or a name/path for `load_policy`.
    - `sources`: `DataSource`s or specs for `load_source` (a comma-separated string works).
    - `retriever`: one retriever (object, index folder, corpus file or URL) for all sources, a mapping
      source name → retriever, or None: each source searches a cached BM25 index over its own corpus.
    - `limit`: at most this many questions per dataset, a seeded sample stratified by `metadata.type`
      (or by source); the report says so.
    - `mode`: "search", "direct" or "rag" (see the module docstring).
    - `protocol_cfg`, `rollout_cfg`: prompt and budgets; decoding is always greedy (one sample). In
      direct and rag modes `max_turns` is 0 (one answer turn, no search).
    - `batch_size`: questions per rollout batch (and rows per forward of a model wrapped here).
    - `progress`: True for a rich bar with ETA of its own, a rich `Progress` to add the task to (use this
      inside another live display, e.g. the trainer's console), or False.
    - `seed`: seeds the subset and the bootstrap; `n_resamples`, `confidence`: the bootstrap.
    - `device`: where a `policy` given by name is loaded (a `torch.device` from `searchrl.models.resolve_device`;
      None: the CPU); a model object evaluates on its own device.

    A retriever given as a URL gets one test search first (`probe_retriever`): an unreachable server raises
    `RetrievalError` before the model is loaded. A question whose search still fails after the retries ends
    as "retrieval_error": it is left out of the scores (it says nothing about the model) and counted in
    `retrieval_errors` (per dataset and in `macro`); the table warns, and `searchrl eval` exits 2.
    """
    if mode not in MODES:
        raise ConfigError(f"eval mode {mode!r} is not one of {list(MODES)}")
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    if limit is not None and limit < 1:
        raise ConfigError(f"limit must be >= 1, got {limit}")
    setup_start = time.perf_counter()
    data = _as_sources(sources, split)
    protocol = protocol_cfg or default_protocol(mode)
    rollout = dataclasses.replace(rollout_cfg or RolloutConfig(), greedy=True, seed=seed)
    if mode != "search":
        rollout = dataclasses.replace(rollout, max_turns=0)

    plans = []  # (dataset name, source, questions, sample note, total, retriever, retriever description)
    loaded: dict[str, Retriever] = {}
    show = progress is not False
    for source in data:
        needs_retriever = mode != "direct"
        found, described = _retriever_for(source, retriever, loaded, show) if needs_retriever else (_NoSearch(), "")
        for name, questions in _dataset_groups(source).items():
            chosen, info = stratified_sample(questions, limit, seed)
            plans.append((name, chosen, info, found, described))
    names = [p[0] for p in plans]
    if len(set(names)) != len(names):
        dupe = next(n for n in names if names.count(n) > 1)
        raise DataError(f"two data sources give the dataset name {dupe!r}; rename one with NAME=SPEC")
    # The model last: data and retrievers (an unreachable server) fail in seconds, not after loading it.
    backend, tokenizer, model, policy_name = _resolve_policy(policy, tokenizer, batch_size, device, rollout.cuda_graphs)
    setup_s = time.perf_counter() - setup_start

    watch = Stopwatch()
    timed_backend = TimedBackend(backend, watch)
    reward_cfg = RewardConfig()
    scores: dict[str, dict[str, list[float]]] = {}
    reasons: dict[str, list[str]] = {}
    records: list[dict] = []
    total_questions = sum(len(p[1]) for p in plans)
    was_training = bool(getattr(model, "training", False))
    if model is not None and hasattr(model, "eval"):
        model.eval()
    bar, task, own_bar = _progress(progress, total_questions)
    start = time.perf_counter()
    try:
        for name, questions, info, found, _ in plans:
            timed_retriever = TimedRetriever(found, watch)
            engine = RolloutEngine(timed_backend, tokenizer, timed_retriever, protocol, rollout)
            per_metric: dict[str, list[float]] = {k: [] for k in METRICS}
            reasons[name] = []
            if bar is not None:
                bar.update(task, description=f"eval {name}")
            for begin in range(0, len(questions), batch_size):
                batch = questions[begin: begin + batch_size]
                retrieved: list[list[Hit]] | None = None
                run_batch = batch
                if mode == "rag":
                    retrieved = timed_retriever.search([q.question for q in batch], topk=rollout.topk)
                    run_batch = [_rag_question(q, hits) for q, hits in zip(batch, retrieved)]
                trajectories = engine.run(run_batch, group_size=1)
                for i, (q, traj) in enumerate(zip(batch, trajectories)):
                    traj.question = q  # rag mode ran a rewritten question; report the original
                    traj.group_id = q.uid
                    score_trajectory(traj, reward_cfg)
                    searches = float(traj.num_searches)
                    if retrieved is not None:
                        traj.extras["answer_in_retrieval"] = answer_in_retrieval(
                            [h.contents for h in retrieved[i]], q.golden_answers)
                        searches = 1.0  # one retrieval with the question
                    row = _record(name, traj, searches)
                    records.append(row)
                    reasons[name].append(traj.finish_reason)
                    if traj.finish_reason == "retrieval_error":
                        continue  # not the model's fault: excluded from the scores, counted in the report
                    for key in METRICS:
                        per_metric[key].append(float(row[key]))
                if bar is not None:
                    bar.advance(task, len(batch))
            scores[name] = per_metric
    finally:
        if own_bar:
            bar.stop()
        if model is not None and was_training and hasattr(model, "train"):
            model.train()
    loop_s = time.perf_counter() - start

    stats_start = time.perf_counter()
    datasets, macro = summarise(
        scores, reasons, n_total={p[0]: p[2].total for p in plans},
        sample_notes={p[0]: p[2].describe() for p in plans}, n_resamples=n_resamples, confidence=confidence,
        seed=seed,
    )
    wall_s = loop_s + (time.perf_counter() - stats_start)
    generation_s = watch.seconds.get("generation", 0.0)
    retrieval_s = watch.seconds.get("retrieval", 0.0)
    timing = {
        "wall_s": wall_s, "generation_s": generation_s, "retrieval_s": retrieval_s,
        "bookkeeping_s": max(0.0, wall_s - generation_s - retrieval_s), "setup_s": setup_s,
        "questions": total_questions, "questions_per_min": 60.0 * total_questions / wall_s if wall_s > 0 else 0.0,
    }
    settings = {
        "model": model_name or policy_name, "mode": mode, "greedy": True, "samples_per_question": 1,
        "limit": limit, "seed": seed, "n_resamples": n_resamples, "confidence": confidence,
        "batch_size": batch_size,
        "retriever": "; ".join(dict.fromkeys(p[4] for p in plans if p[4])),
        "sources": {s.name: s.origin for s in data},
        "protocol": dataclasses.asdict(protocol), "rollout": dataclasses.asdict(rollout),
    }
    return EvalReport(datasets=datasets, macro=macro, settings=settings, timing=timing, records=records)


def _record(dataset: str, traj: Trajectory, searches: float) -> dict:
    x = traj.extras
    q = traj.question
    return {
        "dataset": dataset, "uid": q.uid, "question": q.question, "golden_answers": q.golden_answers,
        "type": q.metadata.get("type"), "answer": traj.answer,
        # Searches the question needs, where its supporting documents are known (the synthetic world's are).
        "hops": len(q.metadata["support_doc_ids"]) if q.metadata.get("support_doc_ids") else None,
        "em": float(x.get("em", 0.0)), "f1": float(x.get("f1", 0.0)), "cover_em": float(x.get("cover_em", 0.0)),
        "answer_in_retrieval": float(bool(x.get("answer_in_retrieval", False))), "searches": searches,
        "format_valid": float(bool(x.get("format_valid", False))), "finish_reason": traj.finish_reason,
        "retrieval_error": x.get("retrieval_error"),
        "queries": [t.query for t in traj.turns if t.query is not None],
        "sampled_tokens": int(sum(traj.response_mask)), "response_tokens": len(traj.response_ids),
        "text": response_text(traj),
    }


def _progress(progress: bool | Progress, total: int) -> tuple[Any, Any, bool]:
    """(progress, task id, whether we own it): a rich bar with ETA over questions."""
    if progress is False:
        return None, None, False
    if progress is True:
        bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       TextColumn("ETA"), TimeRemainingColumn())
        bar.start()
        return bar, bar.add_task("eval", total=total), True
    return progress, progress.add_task("eval", total=total), False
