"""The generation-backend contract the rollout engine drives, and the stop logic every backend shares.

A backend opens a *session* over a batch of prompts (token ids). The engine then alternates, for any subset of
rows: `generate` (sample until a stop string, EOS or a per-row token budget; the sampled tokens join the row's
sequence) and `extend` (append environment tokens, e.g. an observation, that the row's next turn sees). Rows are
indices into the session's prompt list. Nothing is ever re-tokenised: a backend works on token ids only, and
returns exactly the ids it sampled with their log-probabilities.

Backends: `searchrl.rollout.hf.HFBackend` (transformers, CPU-first, KV cache kept across turns) and
`searchrl.rollout.scripted.ScriptedBackend` (a fake policy that replays scripts, for tests). A vLLM backend only
has to implement `GenerationBackend.open_session` and the three session methods.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from searchrl.errors import ConfigError

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase

FINISH_STOP = "stop"  # a stop string appeared in the turn's generated text
FINISH_EOS = "eos"  # an end-of-sequence token was sampled (and kept)
FINISH_LENGTH = "length"  # the row's token budget ran out


@dataclass(frozen=True)
class SamplingParams:
    """How tokens are drawn. `greedy` takes the argmax (temperature, top-p and top-k are then ignored).

    `top_k=0` and `top_p=1.0` disable those filters. `seed` seeds the session's generator (None: nondeterministic).
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    greedy: bool = False
    seed: int | None = None

    def __post_init__(self) -> None:
        if not self.greedy and self.temperature <= 0:
            raise ConfigError(f"rollout.temperature: {self.temperature} must be > 0 (set rollout.greedy for argmax)")
        if not 0.0 < self.top_p <= 1.0:
            raise ConfigError(f"rollout.top_p: {self.top_p} must be in (0, 1]")
        if self.top_k < 0:
            raise ConfigError(f"rollout.top_k: {self.top_k} must be >= 0 (0 disables it)")


@dataclass
class Generation:
    """What one row produced in one `generate` call.

    `token_ids` are exactly the sampled ids (the stop string's last token or the EOS included); `logprobs` has one
    entry per id (see the backend for which distribution); `finish` is "stop", "eos" or "length".
    """

    token_ids: list[int]
    logprobs: list[float]
    finish: str


@runtime_checkable
class GenerationSession(Protocol):
    """One batch of sequences being generated, turn by turn. Rows index the prompts the session was opened with."""

    def generate(
        self, rows: Sequence[int], max_new_tokens: Sequence[int], stop: Sequence[str]
    ) -> list[Generation]:
        """Sample for each row until a stop string, EOS, or `max_new_tokens[i]` (>= 1) tokens; one result per row."""
        ...

    def extend(self, rows: Sequence[int], token_ids: Sequence[Sequence[int]]) -> None:
        """Append environment tokens (never sampled) to each row's sequence."""
        ...

    def release(self, rows: Sequence[int]) -> None:
        """The engine is done with these rows (their trajectories ended): free their state."""
        ...

    def close(self) -> None:
        """Free the session's state (KV caches)."""
        ...


@runtime_checkable
class GenerationBackend(Protocol):
    """A policy that can open generation sessions."""

    def open_session(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> GenerationSession: ...


class StopChecker:
    """Decides, after each sampled token, whether a row's turn is over.

    EOS ends it first; then a stop string counts if it occurs in the decoded tail of the row's own generated
    tokens for this turn, so a tag split across several tokens (`</`, `search`, `>`) still stops generation. The
    tail is long enough to hold the longest stop string even when every token decodes to a single character.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, stop: Sequence[str], eos_token_ids: Collection[int]):
        self.tokenizer = tokenizer
        self.stop = tuple(s for s in stop if s)
        self.eos_token_ids = frozenset(eos_token_ids)
        self.tail_tokens = max((len(s) for s in self.stop), default=0) + 2

    def check(self, generated: Sequence[int]) -> str | None:
        """`FINISH_EOS`, `FINISH_STOP` or None, for the ids generated so far in this turn."""
        if generated and generated[-1] in self.eos_token_ids:
            return FINISH_EOS
        if self.stop:
            tail = self.tokenizer.decode(list(generated[-self.tail_tokens :]), skip_special_tokens=False)
            if any(s in tail for s in self.stop):
                return FINISH_STOP
        return None


def eos_token_ids(tokenizer: PreTrainedTokenizerBase, model: object | None = None) -> frozenset[int]:
    """The ids that end a sequence: the tokenizer's EOS and the model's generation-config EOS ids."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    generation_config = getattr(model, "generation_config", None)
    extra = getattr(generation_config, "eos_token_id", None)
    if isinstance(extra, int):
        ids.add(extra)
    elif extra is not None:
        ids.update(int(i) for i in extra)
    return frozenset(ids)


def sample_tokens(
    logits: torch.Tensor, params: SamplingParams, generator: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw one token per row and return `(tokens (B,), logprobs (B,))`.

    logits: (B, V). The log-probability is that of the distribution actually sampled from:
    - greedy: argmax, and log softmax(logits)[token] (the raw, untempered distribution);
    - sampling: z = logits / T; top-k keeps the k largest z; top-p keeps the smallest set of highest-probability
      tokens whose mass reaches p (the token that crosses p included); filtered tokens get z = −inf; the token is
      drawn from softmax(z) and its log-prob is log softmax(z)[token], i.e. under the renormalised filtered
      distribution. With top_p = 1 and top_k = 0 this is log softmax(logits / T), what a trainer recomputes.
    The draw is by inverse CDF (one uniform per row against the cumulative sum of exp(z − max z)), which is exact
    and about 30x cheaper than `torch.multinomial` over a 49k vocabulary on CPU.
    """
    # local: torch costs ~2.2 s to import; this module comes with the rollout engine, which config loading,
    # `searchrl eval --help` and the scripted backend import without torch (logits are torch tensors: it is loaded)
    import torch

    # At least float32 (bf16 logits are upcast); a float64 model's logits stay float64 (the exact-math tests).
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))  # (B, V)
    if params.greedy:
        tokens = logits.argmax(dim=-1)  # (B,)
        chosen = logits.gather(1, tokens[:, None]).squeeze(1)
        return tokens, chosen - torch.logsumexp(logits, dim=-1)
    z = logits / params.temperature if params.temperature != 1.0 else logits  # (B, V); x / 1 is x: no pass
    if params.top_k > 0 and params.top_k < z.shape[-1]:
        kth = torch.topk(z, params.top_k, dim=-1).values[:, -1:]  # (B, 1)
        z = z.masked_fill(z < kth, float("-inf"))
    if params.top_p < 1.0:
        sorted_z, order = torch.sort(z, dim=-1, descending=True)  # (B, V)
        sorted_p = torch.softmax(sorted_z, dim=-1)
        mass_before = sorted_p.cumsum(dim=-1) - sorted_p  # (B, V): mass of strictly better tokens
        drop_sorted = mass_before >= params.top_p  # the first token is never dropped (mass_before = 0)
        drop = torch.zeros_like(drop_sorted).scatter(1, order, drop_sorted)
        z = z.masked_fill(drop, float("-inf"))
    z_max = z.max(dim=-1, keepdim=True).values  # (B, 1)
    # exp(z − max z), then its float64 running sum; in place on the new tensors (two (B, V) allocations instead of
    # four; the same values).
    cdf = torch.sub(z, z_max).exp_().double().cumsum_(dim=-1)  # (B, V); filtered tokens add 0
    total = cdf[:, -1:]  # (B, 1)
    u = torch.rand(z.shape[0], 1, generator=generator, device=z.device, dtype=torch.float64) * total
    # The first index whose cumulative mass exceeds u: zero-probability tokens have empty intervals.
    tokens = torch.searchsorted(cdf, u, right=True).clamp_(max=z.shape[-1] - 1).squeeze(1)  # (B,)
    chosen = z.gather(1, tokens[:, None]) - z_max  # (B, 1)
    return tokens, (chosen - torch.log(total).to(chosen.dtype)).squeeze(1)
