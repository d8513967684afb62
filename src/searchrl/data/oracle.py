"""Oracle trajectories: the right searches, the right passages and the answer, in the protocol's text format.

A record of `oracle_train.jsonl` (written by the synthetic world) is::

    {"id": "train-00042", "data_source": "world", "question": "...", "golden_answers": ["..."],
     "type": "bridge", "queries": ["...", "..."], "doc_ids": ["12", "87"],
     "turns": [["<think>…</think>\\n<search>…</search>", false],
               ["\\n\\n<information>Doc 1(Title: …) …\\n</information>\\n\\n", true],
               ...,
               ["<think>…</think>\\n<answer>…</answer>", false]]}

`turns` alternate model text (`false`) and environment observations (`true`), exactly as the rollout engine
lays out a trajectory, so the trajectories serve as a supervised warm start (loss on model text only) and
as a test oracle (a scripted backend that emits the model texts must score EM 1.0). Each observation holds
the gold passage of that hop only (one hit), rendered as the engine renders observations
(`searchrl.protocol.render_observation`, which uses `searchrl.retrieval.render_hits`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from searchrl.data.jsonl import iter_jsonl_objects
from searchrl.errors import DataError
from searchrl.retrieval.base import Hit


def observation_text(hits: list[Hit]) -> str:
    """The environment's observation for `hits`, exactly as the rollout engine writes it
    (`searchrl.protocol.render_observation`: ``\n\n<information>{rendered hits}</information>\n\n``)."""
    # local: searchrl.protocol (with searchrl.settings) adds ~7 ms to `searchrl data --help`, which imports this
    # module and must not get slower
    from searchrl.protocol import render_observation

    return render_observation(hits)


@dataclass
class OracleTrajectory:
    """One oracle trajectory; `turns` is a list of (text, is_observation)."""

    id: str
    question: str
    golden_answers: list[str]
    turns: list[tuple[str, bool]]
    data_source: str = "world"
    type: str = ""
    queries: list[str] = field(default_factory=list)
    doc_ids: list[str] = field(default_factory=list)

    @property
    def uid(self) -> str:
        return f"{self.data_source}:{self.id}"

    def model_turns(self) -> list[str]:
        """The texts the model writes, one per generation call (what a scripted backend should emit)."""
        return [text for text, is_obs in self.turns if not is_obs]


def load_oracle(path: str | Path) -> list[OracleTrajectory]:
    """Read an oracle JSONL file; a malformed line raises `DataError` naming the file, line and field."""
    out = []
    for where, row in iter_jsonl_objects(path, missing="oracle file not found (generate one with `searchrl data world --out DIR`)"):
        for key in ("id", "question", "golden_answers", "turns"):
            if key not in row:
                raise DataError(f"{where}: field '{key}' is missing")
        turns = row["turns"]
        if not isinstance(turns, list) or not all(
            isinstance(t, list) and len(t) == 2 and isinstance(t[0], str) and isinstance(t[1], bool)
            for t in turns
        ):
            raise DataError(f"{where}: field 'turns' must be a list of [text, is_observation] pairs")
        out.append(OracleTrajectory(
            id=str(row["id"]), question=str(row["question"]), golden_answers=list(row["golden_answers"]),
            turns=[(t[0], t[1]) for t in turns], data_source=str(row.get("data_source", "world")),
            type=str(row.get("type", "")), queries=list(row.get("queries", [])),
            doc_ids=[str(d) for d in row.get("doc_ids", [])],
        ))
    return out


def oracle_script(oracles: Sequence[OracleTrajectory], assistant_prefix: str = "") -> Callable[[int, int, str], str | None]:
    """A scripted policy that plays the oracle: for `searchrl.rollout.ScriptedBackend(tokenizer, policy)`.

    The policy finds the question in the row's decoded context (the last ``Question: ...`` of the prompt
    that names an oracle question) and emits that oracle's model turns in order, then nothing (EOS). The
    first turn drops `assistant_prefix` when it starts with it, since the prompt already holds the prefix.
    Unknown questions get no turns.
    """
    from searchrl.protocol import format_question  # local: see observation_text

    by_question = {format_question(o.question): o.model_turns() for o in oracles}

    def policy(row: int, turn: int, context: str) -> str | None:
        asked = [m for m in _QUESTION_IN_PROMPT.findall(context) if m.strip() in by_question]
        if not asked:
            return None
        turns = by_question[asked[-1].strip()]
        if turn >= len(turns):
            return None
        text = turns[turn]
        if turn == 0 and assistant_prefix and text.startswith(assistant_prefix):
            text = text[len(assistant_prefix):]
        return text

    return policy


_QUESTION_IN_PROMPT = re.compile(r"Question: (.*?)\n")
