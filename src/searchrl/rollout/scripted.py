"""`ScriptedBackend`: a fake policy that replays scripted turns, for tests across the project.

It implements the same `GenerationBackend` contract as the real backends and the same stop logic
(`StopChecker`: EOS, then stop strings found in the decoded tail of the turn's own tokens, then the budget), so
the engine, the trainer, the evaluation harness and the verl agent loop can be tested without a model.

A script gives, per row, the text (or token ids) the "model" writes at each turn::

    backend = ScriptedBackend(tokenizer, [
        ["<think>need facts</think><search>capital of France</search>", "<answer>Paris</answer>"],
        ["<answer>Lyon</answer>"],
    ])

Row i of a session replays `scripts[i % len(scripts)]` (so one script per question, repeated over a group, works
when the group size divides evenly: pass one script per row otherwise). A turn given as text is tokenised with
`add_special_tokens=False`; a turn given as a list of ids is emitted exactly (use it to split a tag across
tokens, or to emit invalid UTF-8). Each generate call emits the row's next turn token by token and stops like a
model would: at a stop string (the rest of the turn is dropped), at an EOS id, or at the budget. If a turn runs
out without stopping, an EOS is emitted after it (`eos_after_turn=True`), as a chat model ends its reply; with
`eos_after_turn=False` it finishes with "length", as if the budget had cut it. A row with no turns left emits EOS.

Instead of lists, `scripts` may be a callable `policy(row, turn, context_text) -> str | list[int] | None`, which
sees the decoded prompt and response so far (e.g. an oracle that answers with a word from the last observation);
None means the row has nothing more to say (EOS).

Every token gets the log-probability `logprob`. The backend records what happened: `sessions[-1].contexts[row]`
holds the ids each row has seen (prompt, sampled and extended tokens), `sessions[-1].generate_calls` the rows of
each generate call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from searchrl.rollout.backend import (
    FINISH_LENGTH,
    Generation,
    SamplingParams,
    StopChecker,
    eos_token_ids,
)

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

ScriptTurn = str | Sequence[int]
Policy = Callable[[int, int, str], ScriptTurn | None]


class ScriptedBackend:
    """A `GenerationBackend` that replays scripts (see the module docstring)."""

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        scripts: Sequence[Sequence[ScriptTurn]] | Policy,
        *,
        logprob: float = -1.0,
        eos_after_turn: bool = True,
    ):
        if not callable(scripts) and len(scripts) == 0:
            raise ValueError("ScriptedBackend needs at least one script")
        self.tokenizer = tokenizer
        self.scripts = scripts
        self.logprob = logprob
        self.eos_after_turn = eos_after_turn
        self.eos_token_ids = eos_token_ids(tokenizer)
        self.eos_id = int(tokenizer.eos_token_id)
        self.sessions: list[ScriptedSession] = []

    def open_session(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> ScriptedSession:
        session = ScriptedSession(self, prompts, sampling)
        self.sessions.append(session)
        return session

    def turn_ids(self, row: int, turn: int, context: list[int]) -> list[int]:
        """The ids row `row` intends to write at turn `turn` (before stop logic), EOS appended if configured."""
        if callable(self.scripts):
            item: ScriptTurn | None = self.scripts(row, turn, self.tokenizer.decode(context))
        else:
            script = self.scripts[row % len(self.scripts)]
            item = script[turn] if turn < len(script) else None
        if item is None:
            return [self.eos_id]
        ids = (
            list(self.tokenizer(item, add_special_tokens=False)["input_ids"])
            if isinstance(item, str)
            else [int(i) for i in item]
        )
        return ids + [self.eos_id] if self.eos_after_turn else ids


class ScriptedSession:
    """A session of a `ScriptedBackend`; records contexts and generate calls for assertions."""

    def __init__(self, backend: ScriptedBackend, prompts: Sequence[Sequence[int]], sampling: SamplingParams):
        self.backend = backend
        self.sampling = sampling
        self.contexts: list[list[int]] = [list(p) for p in prompts]
        self.turns = [0] * len(prompts)
        self.generate_calls: list[list[int]] = []
        self.released: set[int] = set()
        self.closed = False

    def generate(self, rows: Sequence[int], max_new_tokens: Sequence[int], stop: Sequence[str]) -> list[Generation]:
        if len(rows) != len(max_new_tokens):
            raise ValueError("generate: rows and max_new_tokens differ in length")
        checker = StopChecker(self.backend.tokenizer, stop, self.backend.eos_token_ids)
        self.generate_calls.append(list(rows))
        results = []
        for row, budget in zip(rows, max_new_tokens):
            if row in self.released or self.closed:
                raise ValueError(f"row {row} is not an open row of this session")
            if budget < 1:
                raise ValueError(f"generate: row {row} has a budget of {budget} tokens; it must be >= 1")
            intended = self.backend.turn_ids(row, self.turns[row], self.contexts[row])
            self.turns[row] += 1
            emitted: list[int] = []
            # A turn that ends without a stop string or EOS (eos_after_turn=False) finishes as if cut by the budget.
            finish = FINISH_LENGTH
            for token in intended:
                emitted.append(token)
                stopped = checker.check(emitted)
                if stopped is not None:
                    finish = stopped
                    break
                if len(emitted) >= budget:
                    break
            self.contexts[row].extend(emitted)
            results.append(Generation(emitted, [self.backend.logprob] * len(emitted), finish))
        return results

    def extend(self, rows: Sequence[int], token_ids: Sequence[Sequence[int]]) -> None:
        for row, ids in zip(rows, token_ids, strict=True):
            if row in self.released or self.closed:
                raise ValueError(f"row {row} is not an open row of this session")
            self.contexts[row].extend(int(i) for i in ids)

    def release(self, rows: Sequence[int]) -> None:
        self.released.update(rows)

    def close(self) -> None:
        self.closed = True
