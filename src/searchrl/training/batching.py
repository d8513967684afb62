"""Trajectories to padded tensors, and token log-probs computed in chunks.

Layout: each row is `prompt_ids + response_ids`, right-padded. Response token j of row i sits at input position
`prompt_len_i + j` and is predicted by the hidden state at position `prompt_len_i + j - 1`. All per-token tensors
handed to the algorithms are `(B, T)` over the response, T the longest response in the batch.

Log-probs: the vocabulary of the default model is 49,152, so full logits for a micro-batch of 8×400 tokens would
take 630 MB per copy. We run the transformer body once, gather the hidden states of the positions whose token
is trained (response tokens with mask 1; prompt and observation positions need no logits), and apply the LM head
to chunks of them; with gradients on and more than one chunk, each chunk is recomputed in the backward pass
(activation checkpointing), so only one chunk's logits are ever alive. A batch that fits in one chunk keeps its
logits for the backward pass instead (the same memory, one LM-head forward less).

Shared prompts: the G trajectories of a GRPO group start with the same prompt, and the transformer computes the
same keys, values and hidden states for it in every row. When rows of a batch repeat a prompt, the body runs each
distinct prompt once and the rows' responses attend to its keys and values (`_shared_prompt_forward`); autograd
sums the rows' gradients through the shared part, so values and gradients are those of the padded forward up to
float rounding. With one group per micro-batch (`train.keep_groups_together`) this removes (G − 1)/G of the prompt
tokens from every forward and backward. The distinct prompts' common prefix (the instruction template) runs once
too, so rows that share no prompt still share the template. With frozen lower blocks (`LowerBlockCache`) both
the recording forward and the later forwards from the first trainable block use this layout.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from searchrl.models import body_and_head, decoder_blocks
from searchrl.rollout.types import Trajectory, common_prefix_len


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


def pad_per_token(values: Sequence[Sequence[float]], T: int) -> torch.Tensor:
    """Right-pad per-token lists (e.g. sampling log-probs) to a (B, T) float tensor."""
    out = torch.zeros((len(values), T), dtype=torch.float32)
    for i, v in enumerate(values):
        if len(v):
            out[i, : len(v)] = torch.tensor(list(v)[:T], dtype=torch.float32)
    return out


# A common prefix of the distinct prompts (the instruction template before the question) shorter than this is
# computed with each prompt rather than in a forward of its own: on the CPU 8 shared tokens of a few prompts save
# more compute than one more call costs (docs/bench_train.md).
MIN_COMMON_PREFIX = 8


def prompt_owners(batch: TokenBatch) -> tuple[torch.Tensor, list[list[int]]] | None:
    """Which distinct prompt each row starts with: (owner index per row (B,), the distinct prompts' ids), or None
    when there is nothing to share (every row has its own prompt and they share fewer than `MIN_COMMON_PREFIX`
    leading tokens) or a prompt is a single token (no prefix to share)."""
    response_len = batch.response_valid.sum(-1).long()
    prompt_len = batch.attention_mask.sum(-1) - response_len
    distinct: dict[tuple[int, ...], int] = {}
    owner = [distinct.setdefault(tuple(batch.input_ids[i, : int(prompt_len[i])].tolist()), len(distinct))
             for i in range(batch.size)]
    if min(len(p) for p in distinct) < 2:
        return None
    if len(distinct) == batch.size and common_prefix_len([p[:-1] for p in distinct]) < MIN_COMMON_PREFIX:
        return None
    return torch.tensor(owner, device=batch.input_ids.device), [list(p) for p in distinct]


def _prefix_layout(prompts: list[list[int]]) -> tuple[int, int]:
    """(common, prefix_width) of `_shared_prompt_forward`: the leading tokens all distinct prompts share, run once
    (0 when fewer than `MIN_COMMON_PREFIX`), and the widest prompt less its last token."""
    common = common_prefix_len([p[:-1] for p in prompts]) if len(prompts) > 1 else 0
    return (common if common >= MIN_COMMON_PREFIX else 0), max(len(p) for p in prompts) - 1


def _shared_prompt_forward(body: torch.nn.Module, batch: TokenBatch, owner: torch.Tensor,
                           prompts: list[list[int]], states: torch.Tensor | None = None) -> torch.Tensor:
    """Hidden states (B, S, H) of each row's last prompt token and response tokens, S = longest response + 1:
    index j predicts response token j.

    Two forwards instead of one: the distinct prompts minus their last token (right-padded, U rows), keeping their
    keys and values; then every row's last prompt token and response, attending to its prompt's keys and values
    (selected per row; a differentiable index, so gradients flow back into the prompt forward) at positions
    P_i − 1, P_i, ... Padding columns are masked out on both sides. When the distinct prompts share at least
    `MIN_COMMON_PREFIX` leading tokens (the instruction template), that prefix runs once in a forward of its own
    and the prompts' remaining tokens attend to its keys and values: three forwards, the same values.

    With `states` (B, L, H), the hidden states entering the body's first block laid out like `batch` (see
    `LowerBlockCache`), each forward takes its tokens' states instead of their ids: a prompt's from the first row
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


def _chunk_logprob_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    targets: torch.Tensor,
    with_entropy: bool,
    temperature: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    # At least float32 (bf16 autocast's logits are upcast); a float64 model (the exact-math tests) stays float64.
    logits = F.linear(hidden, weight, bias)
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))  # (n, V)
    if temperature != 1.0:
        logits = logits / temperature  # the distribution the rollout sampled from (verl divides the same way)
    log_probs = torch.log_softmax(logits, dim=-1)  # (n, V)
    token_lp = log_probs.gather(-1, targets[:, None]).squeeze(-1)  # (n,)
    if with_entropy:
        entropy = -(log_probs.exp() * log_probs).sum(-1)  # (n,)
    else:
        entropy = torch.zeros_like(token_lp)
    return token_lp, entropy


# Plain decoder stacks: the body hands `inputs_embeds` to its first block unchanged (Gemma, for one, scales them
# first), so a forward from `inputs_embeds = states entering block k` over blocks [k, depth) is the full forward;
# and its attention reads a `DynamicCache` with explicit position ids, so a prompt's keys and values can be shared.
_PLAIN_DECODERS = frozenset({"llama", "mistral", "qwen2", "qwen3"})


def _is_plain_decoder(body: torch.nn.Module) -> bool:
    return getattr(getattr(body, "config", None), "model_type", None) in _PLAIN_DECODERS


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


def frozen_block_count(model: torch.nn.Module) -> int:
    """How many of the lowest transformer blocks nothing trains, when the input embeddings are frozen too (else 0).

    The hidden states entering the first trainable block are then a fixed function of the input ids while the
    weights do not change, which `LowerBlockCache` exploits.
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


class LowerBlockCache:
    """The hidden states entering the first trainable block, per trajectory, computed once per RL step.

    Why: with `train.train_layers: n` the embeddings and the lower blocks are frozen, so what they output for a
    trajectory is the same in the old-log-prob pass and in every optimiser update of the step. The first forward
    of a trajectory records them (a hook on the last frozen block, no extra compute); later forwards start at the
    first trainable block. In the demo (top 10 of 30 blocks) that skips two thirds of each later forward.

    Values are those of the full forward up to float rounding of the padded width (a micro-batch of the same rows
    gives bitwise the same states). Prompt sharing applies on both sides: a recording forward in the shared-prompt
    layout stores each row's states reassembled from its three forwards (`_shared_states`), and a cached forward
    feeds the same layout the rows' states (`_shared_prompt_forward(states=...)`). Valid while the frozen weights
    do not change: make one per step. Disabled (`start == 0`) when nothing is frozen, e.g. under LoRA (adapters in
    every block).
    """

    def __init__(self, model: torch.nn.Module, enabled: bool = True):
        self.start = frozen_block_count(model) if enabled else 0
        self.model = model
        self.states: dict[int, torch.Tensor] = {}  # row -> (length of the row, H)

    def has(self, rows: Sequence[int]) -> bool:
        return self.start > 0 and all(r in self.states for r in rows)

    def gather(self, rows: Sequence[int], batch: TokenBatch) -> torch.Tensor:
        """(B, L, H) states for `rows` laid out like `batch` (right-padded with zeros)."""
        B, L = batch.input_ids.shape
        first = self.states[rows[0]]
        out = torch.zeros((B, L, first.shape[-1]), dtype=first.dtype, device=first.device)
        for i, r in enumerate(rows):
            state = self.states[r]
            out[i, : state.shape[0]] = state
        return out

    @contextmanager
    def record(self, rows: Sequence[int], batch: TokenBatch) -> Iterator[None]:
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
        if len(outputs) == 1:  # one padded forward: (B, L, H)
            lengths = batch.attention_mask.sum(-1).tolist()
            per_row = [outputs[0][i, : int(lengths[i])] for i in range(len(rows))]
        else:  # the forwards of `_shared_prompt_forward`
            per_row = _shared_states(outputs, batch, *prompt_owners(batch))
        for r, state in zip(rows, per_row):
            self.states[r] = state.clone()

    def token_logprobs(self, rows: Sequence[int], batch: TokenBatch, **kwargs: object) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`token_logprobs` of rows `rows`: from their cached states when all are cached, else a full forward that
        records them."""
        if self.has(rows):
            return token_logprobs(self.model, batch, lower_states=self.gather(rows, batch), start_block=self.start,
                                  **kwargs)
        with self.record(rows, batch):
            return token_logprobs(self.model, batch, **kwargs)


def _checkpointing(body: torch.nn.Module) -> bool:
    """Whether the body recomputes its blocks in the backward pass (its blocks then drop any cache)."""
    for name in ("is_activation_checkpointing", "is_gradient_checkpointing"):  # transformers >= 5.x name first
        if isinstance(getattr(type(body), name, None), property):
            return bool(getattr(body, name))
    return False


def token_logprobs(
    model: torch.nn.Module,
    batch: TokenBatch,
    *,
    chunk_size: int = 256,
    with_entropy: bool = False,
    only_masked: bool = True,
    temperature: float = 1.0,
    lower_states: torch.Tensor | None = None,
    start_block: int = 0,
    share_prompts: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log π(response token) and its categorical entropy per response position, (B, T) each.

    π is softmax(logits / temperature): pass the rollout's sampling temperature so that log-probs and
    importance ratios refer to the distribution the tokens were drawn from.

    Positions outside `response_mask` (observations, padding) get 0 when `only_masked` (their logits are never
    computed); with `only_masked=False` every real response token is scored. Gradients flow when enabled.
    With `lower_states` (B, L, H), the hidden states entering block `start_block` (see `LowerBlockCache`), the
    forward starts there instead of at the embeddings. With `share_prompts`, rows that repeat a prompt compute it
    once (the module docstring; a plain decoder without activation checkpointing, and without a sliding attention
    window shorter than the rows, only).
    """
    body, head = body_and_head(model)
    shared = None
    window = _attention_window(body)
    if (share_prompts and not _checkpointing(body) and _is_plain_decoder(body)
            and (window is None or window >= batch.input_ids.shape[1])):  # the split forward is not windowed
        shared = prompt_owners(batch)
    blocks = _blocks_from(body, start_block) if lower_states is not None else nullcontext()
    if shared is not None:
        with blocks:
            hidden = _shared_prompt_forward(body, batch, *shared, states=lower_states)  # (B, S, H): j predicts token j
        predict_pos = torch.arange(batch.response_ids.shape[1], device=hidden.device).expand_as(batch.predict_pos)
    else:
        with blocks:
            if lower_states is not None:
                out = body(inputs_embeds=lower_states, attention_mask=batch.attention_mask, use_cache=False)
            else:
                out = body(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False)
        hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]  # (B, L, H)
        predict_pos = batch.predict_pos
    select = (batch.response_mask if only_masked else batch.response_valid) > 0  # (B, T)
    rows, cols = select.nonzero(as_tuple=True)
    flat_hidden = hidden[rows, predict_pos[rows, cols]]  # (N, H)
    flat_targets = batch.response_ids[rows, cols]  # (N,)
    weight, bias = head.weight, getattr(head, "bias", None)
    lp_parts, ent_parts = [], []
    recompute = torch.is_grad_enabled() and flat_hidden.requires_grad and flat_hidden.shape[0] > chunk_size
    for start in range(0, flat_hidden.shape[0], chunk_size):
        h = flat_hidden[start : start + chunk_size]
        y = flat_targets[start : start + chunk_size]
        if recompute:
            lp, ent = checkpoint(
                _chunk_logprob_entropy, h, weight, bias, y, with_entropy, temperature, use_reentrant=False
            )
        else:
            lp, ent = _chunk_logprob_entropy(h, weight, bias, y, with_entropy, temperature)
        lp_parts.append(lp)
        ent_parts.append(ent)
    B, T = batch.response_ids.shape
    dtype = torch.cat(lp_parts).dtype if lp_parts else torch.promote_types(hidden.dtype, torch.float32)
    log_probs = torch.zeros((B, T), dtype=dtype, device=hidden.device)
    entropy = torch.zeros((B, T), dtype=dtype, device=hidden.device) if with_entropy else None
    if lp_parts:
        log_probs = log_probs.index_put((rows, cols), torch.cat(lp_parts))
        if entropy is not None:
            entropy = entropy.index_put((rows, cols), torch.cat(ent_parts))
    return log_probs, entropy


def split_indices(n: int, size: int) -> list[list[int]]:
    """[0..n) in consecutive slices of `size` (the last may be shorter)."""
    return [list(range(i, min(i + size, n))) for i in range(0, n, size)]
