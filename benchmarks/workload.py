"""A replayed rollout workload: the same work for two rollout implementations, token for token.

Two rollout loops that sample on their own sample different trajectories (a row that rambles to its budget in one
and answers early in the other), so their "useful tokens per second" measure different work. A replay removes
that: one sampled run of the engine is recorded (`record`), then each implementation is driven through exactly
those trajectories. The model still runs every forward pass as when sampling; only the draw is replaced by the
recorded token. Both sides then encode the same prompts, emit the same tokens per turn, stop each turn where the
recording stopped, call the retriever with the same queries and read the same observations.

- `record(trajectories)` -> `Workload`: per trajectory its prompt ids and its turns (sampled ids, the executed
  query or None, the observation ids that followed).
- `ReplayBackend(model, tokenizer, workload, ...)`: an `HFBackend` whose sessions emit the recorded tokens
  (`HFSession._choose` overridden); run it under the ordinary `RolloutEngine` with the recording's protocol,
  rollout settings and retriever, and the engine reproduces the recorded trajectories exactly.
- `replay_search_r1_loop(model, tokenizer, workload, retriever, ...)`: Search-R1's `run_llm_loop` structure
  (each turn re-encodes the whole rolling context with transformers' `generate`; a turn's batch decodes until its
  longest row is done, finished rows padded) with the recorded tokens forced by a logits processor, each row's
  turn ended by a forced EOS.

Where both sides sample (bench_train.py, bench_gpu.py), `fix_lengths` gives them the same work instead: EOS and
every token that could open a tag are made unsampleable, so no completion stops early on either side and each one
is exactly its token budget long.

Used by bench_rollout.py, bench_train.py and bench_gpu.py; tests/test_bench_workload.py checks that both replays
reproduce the recording's tokens and that fixed lengths hold.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from searchrl.fileio import atomic_write_text
from searchrl.rollout.backend import eos_token_ids
from searchrl.rollout.hf import HFBackend, HFSession, _PackedLinears

BANNED_LOGIT = -1e4  # finite: exp() underflows to 0, and an entropy's p * log p stays 0 (not 0 * -inf)


def fix_lengths(model: Any, tokenizer: Any) -> Any:
    """Make EOS, the ids beyond the tokenizer and every token whose text holds '<' unsampleable on this model (a
    forward hook on its LM head module): no stop tag can form and no EOS ends a completion, so every completion
    runs to its budget, whatever the weights. Returns `model`.

    The hook acts wherever the head module is called: in both sides' sampling and in TRL's log-prob forwards.
    searchrl's training forward multiplies by the head's weight itself (`training.forward`), so
    its log-probs are of the unmasked distribution: the same shapes and work except the mask itself (one
    elementwise pass over the completion logits, which only TRL's training pays)."""
    vocab = model.get_output_embeddings().weight.shape[0]
    banned = torch.zeros(vocab, dtype=torch.bool)
    banned[len(tokenizer):] = True
    banned[list(eos_token_ids(tokenizer, model))] = True
    for token_id in range(min(vocab, len(tokenizer))):
        if "<" in tokenizer.decode([token_id]):
            banned[token_id] = True
    on_device: dict[Any, torch.Tensor] = {}

    def hook(module: Any, args: Any, logits: torch.Tensor) -> torch.Tensor:
        mask = on_device.get(logits.device)
        if mask is None:  # one copy per device, made outside any CUDA graph capture (the warm-up call)
            mask = on_device[logits.device] = banned.to(logits.device)
        return logits.masked_fill(mask, BANNED_LOGIT)

    model.get_output_embeddings().register_forward_hook(hook)
    return model


def load_policy_with_fixed_lengths(models: Any = None) -> Any:
    """Make `models.load_policy` (by default `searchrl.models`; bench_step_paired.py also passes an older copy's
    module) return models with `fix_lengths` applied (the trainer looks it up at call time); returns the original,
    for the caller to put back."""
    import functools

    if models is None:
        import searchrl.models as models

    load_policy = models.load_policy

    @functools.wraps(load_policy)
    def load_fixed(*a: Any, **k: Any) -> Any:
        model, tokenizer = load_policy(*a, **k)
        return fix_lengths(model, tokenizer), tokenizer

    models.load_policy = load_fixed
    return load_policy


@dataclass
class ReplayTurn:
    sampled: list[int]  # the tokens the model emitted in this turn
    query: str | None  # the search it executed (None: answer, invalid action or the last turn)
    observation: list[int] = field(default_factory=list)  # the ids appended after the turn (passages or a notice)


@dataclass
class ReplayTrajectory:
    prompt_ids: list[int]
    turns: list[ReplayTurn]

    @property
    def sampled_tokens(self) -> int:
        return sum(len(t.sampled) for t in self.turns)

    def response_ids(self) -> list[int]:
        return [i for t in self.turns for i in (*t.sampled, *t.observation)]


Workload = list[ReplayTrajectory]


def record(trajectories: Sequence[Any]) -> Workload:
    """The replayable record of engine `Trajectory`s: turns are the runs of sampled tokens (`response_mask` 1),
    each followed by its run of observation tokens (0)."""
    out = []
    for traj in trajectories:
        runs: list[tuple[int, list[int]]] = []
        for token, mask in zip(traj.response_ids, traj.response_mask):
            if runs and runs[-1][0] == mask:
                runs[-1][1].append(token)
            else:
                runs.append((mask, [token]))
        turns: list[ReplayTurn] = []
        for mask, ids in runs:
            if mask:
                turns.append(ReplayTurn(sampled=ids, query=None))
            else:
                turns[-1].observation = ids
        if len(turns) != len(traj.turns):
            raise ValueError(f"trajectory {traj.question.uid}: {len(turns)} sampled runs for {len(traj.turns)} turns")
        for turn, engine_turn in zip(turns, traj.turns):
            turn.query = engine_turn.query
        out.append(ReplayTrajectory(list(traj.prompt_ids), turns))
    return out


def save_workload(path: Path, workload: Workload, meta: dict[str, Any]) -> None:
    """Write `workload` and `meta` (the settings that produced it) to `path` as JSON, atomically."""
    atomic_write_text(path, json.dumps({"meta": meta, "workload": [asdict(t) for t in workload]}))


def load_workload(path: Path) -> tuple[Workload, dict[str, Any]]:
    """The (workload, meta) that `save_workload` wrote to `path`."""
    try:
        raw = json.loads(Path(path).read_text())
        workload = [ReplayTrajectory(list(t["prompt_ids"]), [ReplayTurn(**turn) for turn in t["turns"]])
                    for t in raw["workload"]]
        return workload, dict(raw["meta"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"{path}: not a saved workload ({type(exc).__name__}: {exc}); write one with "
                         "bench_rollout.py --save-workload") from None


class _ReplaySession(HFSession):
    """An `HFSession` that emits each row's recorded tokens in order instead of sampling them."""

    def __init__(self, backend: ReplayBackend, prompts: Sequence[Sequence[int]], sampling: Any):
        super().__init__(backend, prompts, sampling)
        if len(prompts) != len(backend.workload):
            raise ValueError(f"the replay has {len(backend.workload)} trajectories; the session opened {len(prompts)}")
        for row, (prompt, traj) in enumerate(zip(prompts, backend.workload)):
            if list(prompt) != traj.prompt_ids:
                raise ValueError(f"row {row}: the prompt differs from the recording's (same questions and protocol?)")
        self.forced = [[i for turn in traj.turns for i in turn.sampled] for traj in backend.workload]
        self.cursor = [0] * len(prompts)

    def _choose(self, logits: torch.Tensor, rows: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        picked = []
        for row in rows:
            if self.cursor[row] >= len(self.forced[row]):
                raise RuntimeError(f"row {row} generates past its recording ({len(self.forced[row])} tokens)")
            picked.append(self.forced[row][self.cursor[row]])
            self.cursor[row] += 1
        tokens = torch.tensor(picked, dtype=torch.long, device=logits.device)
        # The log-prob a sampler would report (T = 1): the same per-step work as a draw, minus the draw.
        logprobs = torch.log_softmax(logits.float(), dim=-1).gather(1, tokens[:, None]).squeeze(1)
        return tokens, logprobs


class ReplayBackend(HFBackend):
    """`HFBackend` that replays `workload` (trajectory i of the recording is row i of the session)."""

    def __init__(self, model: Any, tokenizer: Any, workload: Workload, **kwargs: Any):
        super().__init__(model, tokenizer, **kwargs)
        self.workload = workload

    def open_session(self, prompts: Sequence[Sequence[int]], sampling: Any) -> _ReplaySession:
        return _ReplaySession(self, prompts, sampling)


class _Force:
    """A transformers logits processor: batch row i emits `turns[i]` token by token, then EOS."""

    def __init__(self, turns: list[list[int]], start: int, eos: int):
        self.turns, self.start, self.eos = turns, start, eos

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        k = input_ids.shape[1] - self.start  # tokens generated so far in this call
        wanted = [t[k] if k < len(t) else self.eos for t in self.turns]
        forced = torch.full_like(scores, float("-inf"))
        forced[torch.arange(len(wanted)), torch.tensor(wanted)] = 0.0
        return forced


def replay_search_r1_loop(model: Any, tokenizer: Any, workload: Workload, retriever: Any, *, topk: int,
                          packed_weights: bool = False) -> dict[str, Any]:
    """Search-R1's loop over `workload`: each turn, every row still active re-encodes its whole context (prompt,
    responses, observations) left-padded in one `generate` call, which decodes until the turn's longest row has
    emitted its tokens and EOS; the searches of the turn go to `retriever` in one batch; the recorded observation
    ids are appended. `packed_weights` runs `generate` on the engine's oneDNN-packed linear weights (the same
    kernels as the engine). Returns the final contexts and the token counts."""
    from transformers import LogitsProcessorList

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    eos = tokenizer.eos_token_id
    contexts = [list(t.prompt_ids) for t in workload]
    sampled = encoded = decode_steps = searches = 0
    packer = _PackedLinears(model) if packed_weights else None
    device = next(model.parameters()).device
    for turn_index in range(max(len(t.turns) for t in workload)):
        rows = [r for r, t in enumerate(workload) if turn_index < len(t.turns)]
        turns = [workload[r].turns[turn_index] for r in rows]
        width = max(len(contexts[r]) for r in rows)
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, width - len(contexts[r]):] = torch.tensor(contexts[r])
            mask[i, width - len(contexts[r]):] = 1
        steps = max(len(t.sampled) for t in turns) + 1  # every row ends its turn with EOS
        force = _Force([t.sampled for t in turns], width, eos)
        with torch.inference_mode(), (packer.active() if packer is not None else nullcontext()):
            model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), max_new_tokens=steps,
                           min_new_tokens=0, do_sample=False, pad_token_id=pad, eos_token_id=eos,
                           logits_processor=LogitsProcessorList([force]), top_p=None, top_k=None, temperature=None)
        encoded += int(mask.sum()) + steps * len(rows)  # the batch steps until its longest row is done
        decode_steps += steps
        queries = [(r, t.query) for r, t in zip(rows, turns) if t.query is not None]
        if queries:
            retriever.search([q for _, q in queries], topk=topk)
            searches += len(queries)
        for r, t in zip(rows, turns):
            sampled += len(t.sampled)
            contexts[r] += t.sampled + t.observation
    return {"contexts": contexts, "useful": sampled, "encoded": encoded, "decode_steps": decode_steps,
            "searches": searches}
