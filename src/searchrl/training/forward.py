"""log π of these rows: the one place the trainer computes token log-probs (and entropies) of trajectories.

Layout: each row is `prompt_ids + response_ids`, right-padded (`collate`). Response token j of row i sits at input
position `prompt_len_i + j` and is predicted by the hidden state at position `prompt_len_i + j - 1`. Every per-token
tensor handed to the algorithms is `(B, T)` over the response, T the longest response in the batch.

Two ways to compute the same numbers:

- `token_logprobs` is THE definition (about 40 lines): one padded forward of the transformer body, the LM head on
  the hidden states of the trained positions, log softmax(logits / T) gathered at the sampled tokens, and
  `searchrl.algorithms.entropy_from_logits` for the entropy. The LM head runs on chunks of positions: the default
  model's vocabulary is 49,152, so full logits for 8×400 tokens would take 630 MB per copy; with gradients on and
  more than one chunk, each chunk is recomputed in the backward pass (activation checkpointing).
- `StepForward` is what one RL step uses, over the step's rows: with `train.fast_forward: false` it calls
  `token_logprobs` and nothing else; with `train.fast_forward: true` (the default) it computes the same values
  (up to float rounding; tested against `token_logprobs` as the oracle, values and gradients) faster:
    * prompt sharing: the G trajectories of a group start with the same prompt, and all prompts start with the
      same instruction template; the body runs each distinct prompt once and the template once
      (`_shared_prompt_forward`), and autograd sums the rows' gradients through the shared part;
    * the lower-block cache: with `train.train_layers: n` the embeddings and lower blocks are frozen, so what they
      output for a row is the same in every forward of the step; it is recorded once (`FastForward`) and
      later forwards start at the first trainable block;
    * the weight-cast cache: under bf16 autocast each weight is cast once per optimiser update, not once per
      micro-batch (`weight_cast_cache`);
    * π_old reuse: the rows of the step's first update are not forwarded for π_old; that update's own forward,
      taken before any weight moves, is their π_old (`BehaviourLogProbs`).
  Each of these needs a deterministic forward (no active dropout) and a plain decoder; otherwise it falls back to
  the plain computation.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from searchrl.algorithms import entropy_from_logits
from searchrl.models import body_and_head, decoder_blocks
from searchrl.rollout.types import Trajectory, shared_prefix_len
from searchrl.training.policy import autocast, use_bf16  # autocast is precision (train.bf16), used by both paths


@dataclass
class TokenBatch:
    """Padded tensors for a list of trajectories."""

    input_ids: torch.Tensor  # (B, L) prompt + response, right-padded with pad_id
    attention_mask: torch.Tensor  # (B, L) 1 on real tokens
    response_ids: torch.Tensor  # (B, T) right-padded
    response_mask: torch.Tensor  # (B, T) float: 1 on sampled (trained) tokens, 0 on observations and padding
    response_valid: torch.Tensor  # (B, T) float: 1 on every real response token (sampled or observation)
    predict_pos: torch.Tensor  # (B, T) long: input position whose hidden state predicts response token j

    @property
    def size(self) -> int:
        return self.input_ids.shape[0]

    def to(self, device: torch.device | str) -> TokenBatch:
        """The same batch on `device` (`collate` builds it on the CPU; the model may live on a GPU)."""
        return TokenBatch(*(getattr(self, f.name).to(device) for f in fields(self)))


def collate(trajectories: Sequence[Trajectory], pad_id: int) -> TokenBatch:
    """Pad trajectories into a `TokenBatch` (checks the record invariants the loss relies on)."""
    if not trajectories:
        raise ValueError("collate: no trajectories")
    B = len(trajectories)
    L = max(len(t.prompt_ids) + len(t.response_ids) for t in trajectories)
    T = max(max(len(t.response_ids) for t in trajectories), 1)
    input_ids = torch.full((B, L), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((B, L), dtype=torch.long)
    response_ids = torch.full((B, T), pad_id, dtype=torch.long)
    response_mask = torch.zeros((B, T), dtype=torch.float32)
    response_valid = torch.zeros((B, T), dtype=torch.float32)
    predict_pos = torch.zeros((B, T), dtype=torch.long)
    for i, t in enumerate(trajectories):
        P, R = len(t.prompt_ids), len(t.response_ids)
        if P == 0:
            raise ValueError(f"trajectory {i} ({t.group_id}) has an empty prompt")
        if len(t.response_mask) != R:
            raise ValueError(f"trajectory {i} ({t.group_id}): response_mask has {len(t.response_mask)} entries for {R} tokens")
        input_ids[i, : P + R] = torch.tensor(list(t.prompt_ids) + list(t.response_ids), dtype=torch.long)
        attention_mask[i, : P + R] = 1
        if R:
            response_ids[i, :R] = torch.tensor(t.response_ids, dtype=torch.long)
            response_mask[i, :R] = torch.tensor(t.response_mask, dtype=torch.float32)
            response_valid[i, :R] = 1.0
            predict_pos[i, :R] = torch.arange(P - 1, P - 1 + R)
    return TokenBatch(input_ids, attention_mask, response_ids, response_mask, response_valid, predict_pos)


def sub_batch(batch: TokenBatch, rows: Sequence[int]) -> TokenBatch:
    """Rows of a padded batch, trimmed to their own longest sequence and response."""
    idx = torch.tensor(list(rows), device=batch.input_ids.device)
    L = int(batch.attention_mask[idx].sum(-1).max())
    T = max(int(batch.response_valid[idx].sum(-1).max()), 1)
    return TokenBatch(
        input_ids=batch.input_ids[idx, :L],
        attention_mask=batch.attention_mask[idx, :L],
        response_ids=batch.response_ids[idx, :T],
        response_mask=batch.response_mask[idx, :T],
        response_valid=batch.response_valid[idx, :T],
        predict_pos=batch.predict_pos[idx, :T],
    )


def pad_per_token(values: Sequence[Sequence[float]], T: int) -> torch.Tensor:
    """Right-pad per-token lists (e.g. sampling log-probs) to a (B, T) float tensor."""
    out = torch.zeros((len(values), T), dtype=torch.float32)
    for i, v in enumerate(values):
        if len(v):
            out[i, : len(v)] = torch.tensor(list(v)[:T], dtype=torch.float32)
    return out


def split_indices(n: int, size: int) -> list[list[int]]:
    """[0..n) in consecutive slices of `size` (the last may be shorter)."""
    return [list(range(i, min(i + size, n))) for i in range(0, n, size)]


# ============================================================================================ the definition


def token_logprobs(
    model: torch.nn.Module,
    batch: TokenBatch,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    chunk_size: int = 256,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """log π(response token) and the policy's entropy at each trained response position, (B, T) each.

    π = softmax(logits / temperature): pass the rollout's sampling temperature, so that log-probs and importance
    ratios refer to the distribution the tokens were drawn from. Positions outside `response_mask` (observations,
    padding) get 0; their logits are never computed. Gradients flow when enabled. Float32 (float64 for a float64
    model); under bf16 autocast the logits are upcast before the softmax.
    """
    body, head = body_and_head(model)
    out = body(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False)
    hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]  # (B, L, H)
    return _head_logprobs(hidden, batch.predict_pos, batch, head, temperature, with_entropy, chunk_size)


def _head_logprobs(
    hidden: torch.Tensor,
    predict_pos: torch.Tensor,
    batch: TokenBatch,
    head: torch.nn.Module,
    temperature: float,
    with_entropy: bool,
    chunk_size: int,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The LM head on the hidden states that predict trained tokens (`hidden[i, predict_pos[i, j]]` predicts
    response token j of row i), in chunks of `chunk_size` positions: (B, T) log-probs and entropies."""
    rows, cols = (batch.response_mask > 0).nonzero(as_tuple=True)
    flat_hidden = hidden[rows, predict_pos[rows, cols]]  # (N, H)
    flat_targets = batch.response_ids[rows, cols]  # (N,)
    weight, bias = head.weight, getattr(head, "bias", None)
    recompute = torch.is_grad_enabled() and flat_hidden.requires_grad and flat_hidden.shape[0] > chunk_size
    parts = []
    for start in range(0, flat_hidden.shape[0], chunk_size):
        args = (flat_hidden[start : start + chunk_size], weight, bias, flat_targets[start : start + chunk_size],
                with_entropy, temperature)
        parts.append(checkpoint(_chunk, *args, use_reentrant=False) if recompute else _chunk(*args))
    dtype = torch.promote_types(hidden.dtype, torch.float32)
    log_probs = torch.zeros(batch.response_ids.shape, dtype=dtype, device=hidden.device)
    entropy = torch.zeros_like(log_probs) if with_entropy else None
    if parts:
        log_probs = log_probs.index_put((rows, cols), torch.cat([lp for lp, _ in parts]).to(dtype))
        if entropy is not None:
            entropy = entropy.index_put((rows, cols), torch.cat([ent for _, ent in parts]).to(dtype))
    return log_probs, entropy


def _chunk(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, targets: torch.Tensor,
           with_entropy: bool, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    logits = F.linear(hidden, weight, bias)
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))  # (n, V); bf16 autocast's are upcast
    if temperature != 1.0:
        logits = logits / temperature  # the distribution the rollout sampled from (verl divides the same way)
    log_probs = torch.log_softmax(logits, dim=-1)  # (n, V)
    token_lp = log_probs.gather(-1, targets[:, None]).squeeze(-1)  # (n,)
    entropy = entropy_from_logits(logits, log_probs=log_probs) if with_entropy else torch.zeros_like(token_lp)
    return token_lp, entropy


# ============================================================================================ the fast path


@dataclass
class StepForward:
    """log π (and entropy) of rows of one RL step's batch under the current policy: the loop's one call.

    `forward(rows, with_entropy=...)` runs under `bf16` autocast on the model's device at the sampling
    `temperature`. With `fast` (`train.fast_forward`), prompt sharing, the lower-block cache, the weight-cast
    cache (inside `update()`) and π_old reuse (`behaviour`) apply; without it every call is `token_logprobs`.
    Make one per step: the lower-block cache is valid while the frozen weights do not change.
    """

    model: torch.nn.Module
    batch: TokenBatch
    temperature: float
    bf16: bool | str
    chunk_size: int
    fast: bool

    def __post_init__(self) -> None:
        self.device = self.batch.input_ids.device
        self.dtype = torch.promote_types(next(self.model.parameters()).dtype, torch.float32)
        self.deterministic = not has_dropout(self.model)
        body, _ = body_and_head(self.model)
        self.shares_prompts = self.fast and _can_share_prompts(body, self.batch.input_ids.shape[1])
        self.fast_forward = FastForward(self.model, cache_lower_blocks=self.fast and self.deterministic,
                                        share_prompts=self.shares_prompts)

    def __call__(self, rows: Sequence[int], *, with_entropy: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        sub = sub_batch(self.batch, rows)
        with autocast(self.bf16, self.device):
            if not self.fast:
                return token_logprobs(self.model, sub, temperature=self.temperature, with_entropy=with_entropy,
                                      chunk_size=self.chunk_size)
            return self.fast_forward.token_logprobs(rows, sub, temperature=self.temperature, with_entropy=with_entropy,
                                             chunk_size=self.chunk_size)

    def of_model(self, model: torch.nn.Module, rows: Sequence[int]) -> torch.Tensor:
        """log π of `rows` under another model (the frozen KL reference), same precision and temperature."""
        with autocast(self.bf16, self.device):
            log_probs, _ = token_logprobs(model, sub_batch(self.batch, rows), temperature=self.temperature,
                                          chunk_size=self.chunk_size)
        return log_probs

    @contextmanager
    def update(self) -> Iterator[None]:
        """The forwards and backwards of one optimiser update (the weight-cast cache, when fast)."""
        with weight_cast_cache(self.bf16, self.device) if self.fast else nullcontext():
            yield

    def behaviour(self, plan: list[list[list[list[int]]]], loss_mask: torch.Tensor) -> BehaviourLogProbs:
        """log π_old (N, T) of the step's rows, no gradient (see `BehaviourLogProbs`)."""
        return BehaviourLogProbs(self, loss_mask, plan, reuse_first_update=self.fast and self.deterministic)


class BehaviourLogProbs:
    """log π_old (N, T) of the step's trajectories: the policy before this step's first update.

    Computed in the micro-batches of the first epoch, so the first update sees ratio = 1 exactly (same shapes,
    same kernels). With `reuse_first_update`, the rows the first update trains on are not forwarded here: that
    update's own forward runs before any weight moves, so :meth:`take` keeps its log-probs as π_old.
    """

    def __init__(self, forward: StepForward, loss_mask: torch.Tensor, plan: list[list[list[list[int]]]],
                 *, reuse_first_update: bool) -> None:
        self.values = torch.zeros_like(loss_mask, dtype=forward.dtype)
        self.pending: set[int] = set()
        first_update = plan[0][0]
        with torch.no_grad(), forward.update():
            for mini in plan[0]:
                for micro in mini:
                    trains = bool(loss_mask[torch.tensor(micro, device=loss_mask.device)].sum() > 0)
                    if reuse_first_update and mini is first_update and trains:
                        self.pending.update(micro)  # filled by the first update's forward
                        continue
                    log_probs, _ = forward(micro)
                    scatter_rows(self.values, micro, log_probs)

    def take(self, rows: Sequence[int], log_probs: torch.Tensor) -> torch.Tensor:
        """log π_old of `rows` (b, T_rows); rows still pending take `log_probs`, the first update's forward."""
        if self.pending.intersection(rows):
            scatter_rows(self.values, rows, log_probs.detach())
            self.pending.difference_update(rows)
        return self.values[torch.tensor(list(rows), device=self.values.device), : log_probs.shape[1]]


def scatter_rows(target: torch.Tensor, rows: Sequence[int], values: torch.Tensor) -> None:
    """target[rows, :width] = values ((b, width) into (N, T))."""
    target[torch.tensor(list(rows), device=target.device), : values.shape[1]] = values.to(target.dtype)


def has_dropout(model: torch.nn.Module) -> bool:
    """Whether a training-mode forward differs from an eval-mode one (active dropout anywhere)."""
    config = getattr(model, "config", None)
    rates = [getattr(config, name, 0.0) or 0.0 for name in ("attention_dropout", "hidden_dropout", "dropout")]
    rates += [m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    return any(float(rate) > 0 for rate in rates if isinstance(rate, (int, float)))


@contextmanager
def weight_cast_cache(setting: bool | str, device: torch.device | str) -> Iterator[None]:
    """Keep autocast's bf16 copies of the weights across the forwards inside, when `setting` turns bf16 on.

    Each `autocast` region casts every weight it uses to bf16 once and drops the copies when the outermost region
    ends: one region per forward casts the whole model again for every micro-batch (about 0.25 s for
    SmolLM2-135M on one CPU thread). Autocast keeps copies of weights that require grad only; frozen ones are
    cast at every use either way. Inside this context autocast stays off, so losses and backward passes run as
    outside it; each forward turns it on with `autocast` and reuses the copies. The copies are valid until a
    weight changes: open one per optimiser update, never across an optimiser step, and do not mix no-grad and
    gradient forwards in one.
    """
    device = torch.device(device)
    if not use_bf16(setting, device):
        yield
        return
    # The outer region owns the cache (cleared when it ends); the inner one turns autocast off until a forward.
    with torch.autocast(device.type, dtype=torch.bfloat16), torch.autocast(device.type, enabled=False):
        yield


# -------------------------------------------------------------------------------- prompt sharing


def prompt_owners(batch: TokenBatch) -> tuple[torch.Tensor, list[list[int]]] | None:
    """Which distinct prompt each row starts with: (owner index per row (B,), the distinct prompts' ids), or None
    when there is nothing to share (every row has its own prompt and they share no prefix worth a forward of its
    own, `shared_prefix_len`) or a prompt is a single token (no prefix to share)."""
    response_len = batch.response_valid.sum(-1).long()
    prompt_len = batch.attention_mask.sum(-1) - response_len
    distinct: dict[tuple[int, ...], int] = {}
    owner = [distinct.setdefault(tuple(batch.input_ids[i, : int(prompt_len[i])].tolist()), len(distinct))
             for i in range(batch.size)]
    if min(len(p) for p in distinct) < 2:
        return None
    if len(distinct) == batch.size and not shared_prefix_len([p[:-1] for p in distinct]):
        return None
    return torch.tensor(owner, device=batch.input_ids.device), [list(p) for p in distinct]


def _prefix_layout(prompts: list[list[int]]) -> tuple[int, int]:
    """(common, prefix_width) of `_shared_prompt_forward`: the leading tokens all distinct prompts share, run once
    (0 when not worth a forward, `shared_prefix_len`), and the widest prompt less its last token."""
    return shared_prefix_len([p[:-1] for p in prompts]), max(len(p) for p in prompts) - 1


def _shared_prompt_forward(body: torch.nn.Module, batch: TokenBatch, owner: torch.Tensor,
                           prompts: list[list[int]], states: torch.Tensor | None = None) -> torch.Tensor:
    """Hidden states (B, S, H) of each row's last prompt token and response tokens, S = longest response + 1:
    index j predicts response token j.

    Two forwards instead of one: the distinct prompts minus their last token (right-padded, U rows), keeping their
    keys and values; then every row's last prompt token and response, attending to its prompt's keys and values
    (selected per row; a differentiable index, so gradients flow back into the prompt forward) at positions
    P_i − 1, P_i, ... Padding columns are masked out on both sides. When the distinct prompts share a prefix worth
    a forward (the instruction template), that prefix runs once in a forward of its own and the prompts' remaining
    tokens attend to its keys and values: three forwards, the same values.

    With `states` (B, L, H), the hidden states entering the body's first block laid out like `batch` (see
    `FastForward`), each forward takes its tokens' states instead of their ids: a prompt's from the first row
    that owns it.
    """
    device = batch.input_ids.device
    common, prefix_width = _prefix_layout(prompts)
    response_len = batch.response_valid.sum(-1).long().tolist()
    owners = owner.tolist()
    prompt_len = [len(prompts[u]) for u in owners]
    first_row = {u: owners.index(u) for u in range(len(prompts))}

    def inputs(ids: torch.Tensor, spans: list[tuple[int, int, int]]) -> dict[str, torch.Tensor]:
        """`input_ids=ids`, or with `states` the same layout of states: spans (batch row, start, length) per row."""
        if states is None:
            return {"input_ids": ids}
        embeds = states.new_zeros((*ids.shape, states.shape[-1]))
        for k, (row, start, length) in enumerate(spans):
            embeds[k, :length] = states[row, start : start + length]
        return {"inputs_embeds": embeds}

    cache = None
    if common:
        head = torch.tensor([prompts[0][:common]], device=device)  # (1, c)
        cache = body(**inputs(head, [(first_row[0], 0, common)]), use_cache=True).past_key_values
        cache.batch_select_indices(torch.zeros(len(prompts), dtype=torch.long, device=device))  # (U, ...)
    if prefix_width > common:
        rest = prefix_width - common
        rest_ids = torch.zeros((len(prompts), rest), dtype=torch.long, device=device)
        rest_mask = torch.zeros((len(prompts), prefix_width), dtype=torch.long, device=device)  # over the cache too
        for u, prompt in enumerate(prompts):
            rest_ids[u, : len(prompt) - 1 - common] = torch.tensor(prompt[common:-1], device=device)
            rest_mask[u, : len(prompt) - 1] = 1
        positions = (common + torch.arange(rest, device=device)).expand(len(prompts), rest)
        spans = [(first_row[u], common, len(p) - 1 - common) for u, p in enumerate(prompts)]
        cache = body(**inputs(rest_ids, spans), attention_mask=rest_mask, position_ids=positions,
                     past_key_values=cache, use_cache=True).past_key_values
    cache.batch_select_indices(owner)  # (U, ...) -> (B, ...): row i reads its prompt's keys and values

    width = max(response_len) + 1
    suffix_ids = torch.zeros((batch.size, width), dtype=torch.long, device=device)
    mask = torch.zeros((batch.size, prefix_width + width), dtype=torch.long, device=device)
    for i, (P, R) in enumerate(zip(prompt_len, response_len)):
        suffix_ids[i, : R + 1] = batch.input_ids[i, P - 1 : P + R]
        mask[i, : P - 1] = 1
        mask[i, prefix_width : prefix_width + R + 1] = 1
    positions = torch.tensor(prompt_len, device=device)[:, None] - 1 + torch.arange(width, device=device)
    spans = [(i, P - 1, R + 1) for i, (P, R) in enumerate(zip(prompt_len, response_len))]
    out = body(**inputs(suffix_ids, spans), attention_mask=mask, position_ids=positions, past_key_values=cache,
               use_cache=True)
    return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]


def _shared_states(outputs: list[torch.Tensor], batch: TokenBatch, owner: torch.Tensor,
                   prompts: list[list[int]]) -> list[torch.Tensor]:
    """Each row's hidden states (P + R, H) at one block, reassembled from that block's outputs in the forwards of
    `_shared_prompt_forward` (in call order: the common prefix if any, the prompts' rest if any, the responses)."""
    common, prefix_width = _prefix_layout(prompts)
    calls = iter(outputs)
    head = next(calls) if common else None  # (1, c, H)
    rest = next(calls) if prefix_width > common else None  # (U, rest, H)
    (suffix,) = calls  # (B, S, H)
    response_len = batch.response_valid.sum(-1).long().tolist()
    rows = []
    for i, (u, R) in enumerate(zip(owner.tolist(), response_len)):
        P = len(prompts[u])
        parts = [head[0, :common]] if head is not None else []
        if rest is not None:
            parts.append(rest[u, : P - 1 - common])
        parts.append(suffix[i, : R + 1])
        rows.append(torch.cat(parts))
    return rows


# Plain decoder stacks: the body hands `inputs_embeds` to its first block unchanged (Gemma, for one, scales them
# first), so a forward from `inputs_embeds = states entering block k` over blocks [k, depth) is the full forward;
# and its attention reads a `DynamicCache` with explicit position ids, so a prompt's keys and values can be shared.
_PLAIN_DECODERS = frozenset({"llama", "mistral", "qwen2", "qwen3"})


def _is_plain_decoder(body: torch.nn.Module) -> bool:
    return getattr(getattr(body, "config", None), "model_type", None) in _PLAIN_DECODERS


def _can_share_prompts(body: torch.nn.Module, width: int) -> bool:
    """Prompt sharing splits the forward at the prompt: a plain decoder, no activation checkpointing (its blocks
    drop the cache), and no sliding attention window shorter than the rows (the split forward is not windowed)."""
    window = _attention_window(body)
    return _is_plain_decoder(body) and not _checkpointing(body) and (window is None or window >= width)


def _attention_window(body: torch.nn.Module) -> int | None:
    """The sliding attention window some layer of the body uses (Mistral's `sliding_window`, Qwen's when
    `use_sliding_window`), or None when every layer attends to the whole sequence."""
    config = getattr(body, "config", None)
    window = getattr(config, "sliding_window", None)
    if not window or getattr(config, "use_sliding_window", True) is False:
        return None
    layer_types = getattr(config, "layer_types", None)
    if layer_types is not None and all(kind == "full_attention" for kind in layer_types):
        return None
    return int(window)


def _checkpointing(body: torch.nn.Module) -> bool:
    """Whether the body recomputes its blocks in the backward pass (its blocks then drop any cache)."""
    for name in ("is_activation_checkpointing", "is_gradient_checkpointing"):  # transformers >= 5.x name first
        if isinstance(getattr(type(body), name, None), property):
            return bool(getattr(body, name))
    return False


# -------------------------------------------------------------------------------- the lower-block cache


def frozen_block_count(model: torch.nn.Module) -> int:
    """How many of the lowest transformer blocks nothing trains, when the input embeddings are frozen too (else 0).

    The hidden states entering the first trainable block are then a fixed function of the input ids while the
    weights do not change, which `FastForward` exploits.
    """
    try:
        body, _ = body_and_head(model)
        blocks = decoder_blocks(body)
    except TypeError:
        return 0
    if not _is_plain_decoder(body):
        return 0
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    if embeddings is None or any(p.requires_grad for p in embeddings.parameters()):
        return 0
    count = 0
    for block in blocks:
        if any(p.requires_grad for p in block.parameters()):
            break
        count += 1
    return count if count < len(blocks) else 0  # an entirely frozen body: nothing to gain, nothing to train


@contextmanager
def _blocks_from(body: torch.nn.Module, start: int) -> Iterator[None]:
    """While open, the body's block list holds blocks [start, depth) only (its forward then starts there), and
    their attention layers write to KV-cache slots 0, 1, ... (a cache's length is read from slot 0)."""
    blocks = decoder_blocks(body)
    kept = list(blocks)[start:]
    attentions = [getattr(block, "self_attn", None) for block in kept]
    slots = [getattr(attn, "layer_idx", None) for attn in attentions]
    body.layers = torch.nn.ModuleList(kept)
    for k, attn in enumerate(attentions):
        if slots[k] is not None:
            attn.layer_idx = k
    try:
        yield
    finally:
        body.layers = blocks
        for attn, slot in zip(attentions, slots):
            if slot is not None:
                attn.layer_idx = slot


class FastForward:
    """The fast path's forward: prompt sharing, and the hidden states entering the first trainable block, per
    trajectory, computed once per RL step.

    Why: with `train.train_layers: n` the embeddings and the lower blocks are frozen, so what they output for a
    trajectory is the same in the old-log-prob pass and in every optimiser update of the step. The first forward
    of a trajectory records them (a hook on the last frozen block, no extra compute); later forwards start at the
    first trainable block. In the demo (top 10 of 30 blocks) that skips two thirds of each later forward.

    Values are those of the full forward up to float rounding of the padded width (a micro-batch of the same rows
    gives bitwise the same states). Prompt sharing applies on both sides: a recording forward in the shared-prompt
    layout stores each row's states reassembled from its forwards (`_shared_states`), and a cached forward feeds
    the same layout the rows' states. Disabled (`start == 0`) when nothing is frozen, e.g. under LoRA (adapters in
    every block), or with `cache_lower_blocks=False` (a forward with dropout differs from call to call).
    """

    def __init__(self, model: torch.nn.Module, *, cache_lower_blocks: bool = True, share_prompts: bool = True):
        self.start = frozen_block_count(model) if cache_lower_blocks else 0
        self.model = model
        self.share_prompts = share_prompts
        self.states: dict[int, torch.Tensor] = {}  # row -> (length of the row, H)

    def has(self, rows: Sequence[int]) -> bool:
        return self.start > 0 and all(r in self.states for r in rows)

    def token_logprobs(self, rows: Sequence[int], batch: TokenBatch, *, temperature: float = 1.0,
                       with_entropy: bool = False, chunk_size: int = 256) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`token_logprobs` of `batch` (rows `rows` of the step): from the rows' cached states when all are cached,
        else a full forward that records them; in the shared-prompt layout when prompts can be shared."""
        body, head = body_and_head(self.model)
        shared = prompt_owners(batch) if self.share_prompts else None
        cached = self.has(rows)
        states = self._gather(rows, batch) if cached else None
        from_block = _blocks_from(body, self.start) if cached else nullcontext()
        with from_block, self._record(rows, batch, shared):
            if shared is not None:
                hidden = _shared_prompt_forward(body, batch, *shared, states=states)  # (B, S, H): j predicts j
                predict_pos = torch.arange(batch.response_ids.shape[1], device=hidden.device).expand_as(batch.predict_pos)
            else:
                ids = {"inputs_embeds": states} if cached else {"input_ids": batch.input_ids}
                out = body(**ids, attention_mask=batch.attention_mask, use_cache=False)
                hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]  # (B, L, H)
                predict_pos = batch.predict_pos
        return _head_logprobs(hidden, predict_pos, batch, head, temperature, with_entropy, chunk_size)

    def _gather(self, rows: Sequence[int], batch: TokenBatch) -> torch.Tensor:
        """(B, L, H) states for `rows` laid out like `batch` (right-padded with zeros)."""
        B, L = batch.input_ids.shape
        first = self.states[rows[0]]
        out = torch.zeros((B, L, first.shape[-1]), dtype=first.dtype, device=first.device)
        for i, r in enumerate(rows):
            state = self.states[r]
            out[i, : state.shape[0]] = state
        return out

    @contextmanager
    def _record(self, rows: Sequence[int], batch: TokenBatch,
                shared: tuple[torch.Tensor, list[list[int]]] | None) -> Iterator[None]:
        """While open, a full forward of `batch` (rows `rows` of the step) stores each row's lower states."""
        if self.start == 0 or self.has(rows):
            yield
            return
        body, _ = body_and_head(self.model)
        outputs: list[torch.Tensor] = []

        def hook(module: torch.nn.Module, args: object, output: object) -> None:
            outputs.append((output[0] if isinstance(output, tuple) else output).detach())

        handle = decoder_blocks(body)[self.start - 1].register_forward_hook(hook)
        try:
            yield
        finally:
            handle.remove()
        if shared is None:  # one padded forward: (B, L, H)
            lengths = batch.attention_mask.sum(-1).tolist()
            per_row = [outputs[0][i, : int(lengths[i])] for i in range(len(rows))]
        else:  # the forwards of `_shared_prompt_forward`
            per_row = _shared_states(outputs, batch, *shared)
        for r, state in zip(rows, per_row):
            self.states[r] = state.clone()
