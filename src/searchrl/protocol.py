"""The Search-R1 agent protocol: prompt templates, tag parsing, the invalid-action message, observations.

The agent writes `<think>…</think>`, `<search>query</search>` and `<answer>…</answer>`; the environment answers a
search with `\\n\\n<information>{hits}</information>\\n\\n` and anything else with Search-R1's invalid-action
message. Sources: Search-R1 @ a14dc3a `scripts/data_process/qa_search_train_merge.py::make_prefix` (prompt) and
`search_r1/llm_agent/generation.py` (`postprocess_predictions`, `execute_predictions`, `_passages2string`);
the template and the multi-turn rollout are those of the Search-R1 paper (Jin et al., arXiv 2503.09516, Table 1 and
§3).

Differences from Search-R1, on purpose:
- an optional **assistant prefix** (e.g. `"<search>"`): text placed at the start of the assistant reply, part of
  the prompt tokens (never trained) but part of the text parsed for the first action, so a small model that
  never opens a tag on its own can still be scaffolded (cpu-feasibility.md §1: 0/16 without, 7/8 with);
- an empty `<search></search>` is an invalid action (Search-R1 would send an empty query to the retriever);
- observations keep their closing `</information>` when truncated (Search-R1 cuts the token ids, closing tag
  included).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from searchrl.errors import ConfigError, SettingError
from searchrl.retrieval.base import Hit, render_hits
from searchrl.settings import build, check, setting

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

TAGS = ("think", "search", "information", "answer")
# Generation stops once either closing tag appears in the turn's generated text.
STOP_STRINGS = ("</search>", "</answer>")

# Verbatim, "as your want" typo included: the canonical Search-R1 instruction (template_type='base').
SEARCH_R1_INSTRUCTION = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get "
    "new information. After reasoning, if you find you lack some knowledge, you can call a search engine by "
    "<search> query </search> and it will return the top searched results between <information> and "
    "</information>. You can search as many times as your want. If you find no further external knowledge "
    "needed, you can directly provide the answer inside <answer> and </answer>, without detailed illustrations. "
    "For example, <answer> Beijing </answer>. Question: {question}\n"
)

# Verbatim from Search-R1 `execute_predictions`: the observation after a turn with no valid action.
INVALID_ACTION_MESSAGE = (
    "\nMy previous action is invalid. If I want to search, I should put the query between <search> and </search>. "
    "If I want to give the final answer, I should put the answer between <answer> and </answer>. Let me try again.\n"
)

OBSERVATION_OPEN = "\n\n<information>"
OBSERVATION_CLOSE = "</information>\n\n"

_ACTION_RE = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
_THINK_RE = re.compile(r"<think>(.*?)</think>", re.DOTALL)


@dataclass(frozen=True)
class ProtocolConfig:
    """How a question becomes the prompt the policy sees (config section `protocol`; `preset: NAME` starts from one
    of `PROTOCOL_PRESETS`)."""

    instruction: str = setting(
        SEARCH_R1_INSTRUCTION,
        "the user message; `{question}` is replaced by the question (stripped, `?` appended if missing, as "
        "Search-R1 does). Default: Search-R1's instruction, verbatim.",
    )
    use_chat_template: bool | None = setting(
        None,
        "apply the tokenizer's chat template with the instruction as one user message and "
        "`add_generation_prompt=True`. `None` (default) does what Search-R1's dataset does: use the chat template when "
        "the tokenizer has one, raw text otherwise.",
    )
    system_message: str | None = setting(
        None, "a system message for the chat template (`None`: the template's own default, if any)."
    )
    few_shot_question: str | None = setting(
        None,
        "question of an optional worked example (with few_shot_response), given as a previous user/assistant "
        "exchange (chat template) or as the same text followed by a blank line (raw text).",
    )
    few_shot_response: str | None = setting(None, "the worked example's answer (with few_shot_question).")
    assistant_prefix: str = setting(
        "",
        "text placed at the start of the assistant reply (e.g. `\"<search>\"`); its tokens are part of the prompt, "
        "but the text parsed for the first action (and checked for format) starts with it.",
    )

    def __post_init__(self) -> None:
        check(self, "protocol")
        if "{question}" not in self.instruction:
            raise SettingError("instruction", "must contain the placeholder {question}", "protocol")
        if (self.few_shot_question is None) != (self.few_shot_response is None):
            raise SettingError("", "few_shot_question and few_shot_response must be given together", "protocol")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None, *, where: str = "protocol") -> ProtocolConfig:
        """From plain data (YAML, verl's config); see `searchrl.settings.build`."""
        return build(cls, values, where)

    @classmethod
    def presets(cls) -> dict[str, ProtocolConfig]:
        """The named protocols a `preset:` key may start from."""
        return PROTOCOL_PRESETS


PROTOCOL_PRESETS: dict[str, ProtocolConfig] = {
    # Search-R1 exactly.
    "search_r1": ProtocolConfig(),
    # Search-R1's prompt with the reply opened by `<search>`: what the 135M default model needs to act at all.
    "search_r1_prefill_search": ProtocolConfig(assistant_prefix="<search>"),
    # Search-R1's prompt with the reply opened by `<think>` (CalibAdv's `prepend_think_token`, first turn).
    "search_r1_prefill_think": ProtocolConfig(assistant_prefix="<think>"),
}


def format_question(question: str) -> str:
    """Search-R1's question normalisation: strip, append `?` if it does not end with one."""
    question = question.strip()
    return question if question.endswith("?") else question + "?"


def _instruction(cfg: ProtocolConfig, question: str) -> str:
    # str.replace, not str.format: an instruction may contain other braces (JSON examples).
    return cfg.instruction.replace("{question}", format_question(question))


def _uses_chat_template(cfg: ProtocolConfig, tokenizer: PreTrainedTokenizerBase) -> bool:
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if cfg.use_chat_template is None:
        return has_template
    if cfg.use_chat_template and not has_template:
        raise ConfigError(
            "protocol.use_chat_template is true but the tokenizer has no chat template; set it to false (raw text)"
        )
    return cfg.use_chat_template


def prompt_text(question: str, cfg: ProtocolConfig, tokenizer: PreTrainedTokenizerBase) -> str:
    """The full prompt text: the templated instruction, then the assistant prefix."""
    if _uses_chat_template(cfg, tokenizer):
        messages: list[dict[str, str]] = []
        if cfg.system_message is not None:
            messages.append({"role": "system", "content": cfg.system_message})
        if cfg.few_shot_question is not None:
            messages.append({"role": "user", "content": _instruction(cfg, cfg.few_shot_question)})
            messages.append({"role": "assistant", "content": str(cfg.few_shot_response)})
        messages.append({"role": "user", "content": _instruction(cfg, question)})
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    else:
        text = ""
        if cfg.system_message is not None:
            text += cfg.system_message + "\n\n"
        if cfg.few_shot_question is not None:
            text += _instruction(cfg, cfg.few_shot_question) + str(cfg.few_shot_response) + "\n\n"
        text += _instruction(cfg, question)
    return text + cfg.assistant_prefix


def encode_prompt(question: str, cfg: ProtocolConfig, tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """Token ids of `prompt_text`. The chat template already holds its special tokens; raw text gets the
    tokenizer's own special tokens (e.g. a BOS), as Search-R1's dataset does for base models."""
    chat = _uses_chat_template(cfg, tokenizer)
    text = prompt_text(question, cfg, tokenizer)
    return list(tokenizer(text, add_special_tokens=not chat)["input_ids"])


@dataclass(frozen=True)
class Action:
    """The action of one model turn: `kind` is "search", "answer" or "invalid"; `content` is the tag's text."""

    kind: str
    content: str = ""


def parse_action(text: str) -> Action:
    """The first complete `<search>…</search>` or `<answer>…</answer>` in `text` (Search-R1's regex, first match,
    content stripped). No complete tag, or an empty search query, is an invalid action."""
    match = _ACTION_RE.search(text)
    if match is None:
        return Action("invalid")
    kind, content = match.group(1), match.group(2).strip()
    if kind == "search" and not content:
        return Action("invalid")
    return Action(kind, content)


def extract_think(text: str) -> str:
    """The text of the last `<think>…</think>` in `text`, stripped ("" if none)."""
    matches = _THINK_RE.findall(text)
    return matches[-1].strip() if matches else ""


def truncate_query(query: str, max_chars: int) -> tuple[str, bool]:
    """Cut a search query to `max_chars` characters; return it and whether it was cut."""
    if len(query) <= max_chars:
        return query, False
    return query[:max_chars], True


def render_observation(hits: Sequence[Hit]) -> str:
    """The observation after a search: `\\n\\n<information>{render_hits(hits).strip()}</information>\\n\\n`
    (Search-R1 `execute_predictions` strips the rendered passages)."""
    return OBSERVATION_OPEN + render_hits(list(hits)).strip() + OBSERVATION_CLOSE


def encode_text(text: str, tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """Token ids of environment text alone: no BOS/EOS added, and special-token strings inside it (a passage that
    contains `<|im_end|>`) are split into ordinary tokens, so retrieved text can never inject control tokens."""
    return list(tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])


def encode_observation(
    hits: Sequence[Hit], tokenizer: PreTrainedTokenizerBase, max_tokens: int
) -> tuple[list[int], str, bool]:
    """Tokenise the observation for `hits`, truncated to at most `max_tokens` tokens.

    Truncation cuts the passages, never the `<information>` wrapper, and the returned ids are the tokenisation of
    the returned text (so decoding them gives that text). Returns `(ids, text, truncated)`; if even the wrapper does
    not fit, returns `([], "", True)`.
    """
    text = render_observation(hits)
    ids = encode_text(text, tokenizer)
    if len(ids) <= max_tokens:
        return ids, text, False
    body_ids = encode_text(render_hits(list(hits)).strip(), tokenizer)
    keep = len(body_ids) - (len(ids) - max_tokens)
    while keep > 0:
        # A cut can split a multi-byte character; drop the replacement character it decodes to.
        body = tokenizer.decode(body_ids[:keep]).rstrip("\ufffd")
        text = OBSERVATION_OPEN + body + OBSERVATION_CLOSE
        ids = encode_text(text, tokenizer)
        if len(ids) <= max_tokens:
            return ids, text, True
        keep -= max(1, len(ids) - max_tokens)  # re-tokenising the boundary can add a token; shrink and retry
    text = OBSERVATION_OPEN + OBSERVATION_CLOSE
    ids = encode_text(text, tokenizer)
    if len(ids) <= max_tokens:
        return ids, text, True
    return [], "", True


_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def extract_answer(response_text: str) -> str | None:
    """The stripped content of the last `<answer>…</answer>` in the response text, or None.

    Pass the response only (the model's text, with the assistant prefix), never the prompt."""
    matches = _ANSWER_RE.findall(response_text)
    return matches[-1].strip() if matches else None


def answer_span_positions(response_ids: Sequence[int], response_mask: Sequence[int], decode: Any) -> list[int]:
    """Response positions of the tokens that spell the last `<answer>…</answer>` of the last model turn (the
    span LLDS-MA weights). `decode` turns token ids into text (the tokenizer's `decode`)."""
    runs: list[list[int]] = []
    for j, m in enumerate(response_mask):
        if m:
            if runs and runs[-1][-1] == j - 1:
                runs[-1].append(j)
            else:
                runs.append([j])
    if not runs:
        return []
    positions = runs[-1]
    ids = [response_ids[j] for j in positions]
    text = decode(ids)
    begin = text.rfind("<answer>")
    if begin < 0:
        return []
    end = text.find("</answer>", begin)
    end = len(text) if end < 0 else end + len("</answer>")
    out = []
    for k in range(len(ids)):  # token k covers characters [len(decode(ids[:k])), len(decode(ids[:k+1])))
        lo, hi = len(decode(ids[:k])), len(decode(ids[: k + 1]))
        if hi > begin and lo < end:
            out.append(positions[k])
    return out
