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
    * prefix sharing: the G trajectories of a group start with the same prompt, all prompts start with the same
      instruction template, and trajectories that made the same first search read the same passage; the body
      runs each shared span once (`prefix_tree`, `_tree_forward`), and autograd sums the rows' gradients through
      it;
    * the lower-block cache: with `train.train_layers: n` the embeddings and lower blocks are frozen, so what they
      output for a row is the same in every forward of the step; the rollout records it while it encodes the
      tokens (`Trajectory.sampler_states`, `FastForward.start_from`), or else the step's first forward of the row
      does (`FastForward`), and every other forward starts at the first trainable block;
    * the weight-cast cache: under bf16 autocast each weight is cast once per optimiser update, not once per
      micro-batch (`weight_cast_cache`);
    * π_old reuse: the rows of the step's first update are not forwarded for π_old; that update's own forward,
      taken before any weight moves, is their π_old (`BehaviourLogProbs`).
  Each of these needs a deterministic forward (no active dropout) and a plain decoder; otherwise it falls back to
  the plain computation. On the CPU both paths compute attention with plain products (`cpu_attention`).
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
from searchrl.rollout.types import MIN_SHARED_PREFIX, Trajectory, common_prefix_len
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
    `temperature`. With `fast` (`train.fast_forward`), prefix sharing, the lower-block cache, the weight-cast
    cache (inside `update()`) and π_old reuse (`behaviour`) apply; without it every call is `token_logprobs`.
    Make one per step: the lower-block cache is valid while the frozen weights do not change.
    """

    model: torch.nn.Module
    batch: TokenBatch
    temperature: float
    bf16: bool | str
    chunk_size: int
    fast: bool
    # Per row, the sampler's hidden states entering block `states_at` (`Trajectory.sampler_states`), or None.
    sampler_states: Sequence[torch.Tensor | None] | None = None
    states_at: int = 0

    def __post_init__(self) -> None:
        self.device = self.batch.input_ids.device
        self.dtype = torch.promote_types(next(self.model.parameters()).dtype, torch.float32)
        self.deterministic = not has_dropout(self.model)
        body, _ = body_and_head(self.model)
        self.shares_prefixes = self.fast and _can_share_prefixes(body, self.batch.input_ids.shape[1])
        self.fast_forward = FastForward(self.model, cache_lower_blocks=self.fast and self.deterministic,
                                        share_prefixes=self.shares_prefixes)
        if self.sampler_states is not None:
            self.fast_forward.start_from(self.sampler_states, self.states_at, self.batch)

    def __call__(self, rows: Sequence[int], *, with_entropy: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        sub = sub_batch(self.batch, rows)
        with autocast(self.bf16, self.device), cpu_attention(self.model):
            if not self.fast:
                return token_logprobs(self.model, sub, temperature=self.temperature, with_entropy=with_entropy,
                                      chunk_size=self.chunk_size)
            return self.fast_forward.token_logprobs(rows, sub, temperature=self.temperature, with_entropy=with_entropy,
                                             chunk_size=self.chunk_size)

    def of_model(self, model: torch.nn.Module, rows: Sequence[int]) -> torch.Tensor:
        """log π of `rows` under another model (the frozen KL reference), same precision and temperature."""
        with autocast(self.bf16, self.device), cpu_attention(model):
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
def cpu_attention(model: torch.nn.Module) -> Iterator[None]:
    """While open, a model on the CPU computes attention as softmax(QKᵀ/√d + mask)·V with plain batched products
    (transformers' "eager" implementation) instead of torch's SDPA kernel; on a GPU nothing changes.

    Why: at a training forward's shapes (a few rows of about a hundred queries over a few hundred keys, masked)
    the CPU's SDPA kernel, with its backward, is slower than the plain products (docs/benchmarks.md, "Where a demo
    step's time goes"). The same math through other kernels; the rollout
    keeps SDPA, which is the faster of the two for its one-token decode steps. Not under activation checkpointing,
    whose backward recomputes the blocks after this context has closed."""
    config = getattr(model, "config", None)
    device = next(model.parameters()).device
    if (config is None or device.type != "cpu" or getattr(config, "_attn_implementation", None) != "sdpa"
            or _checkpointing(body_and_head(model)[0])):
        yield
        return
    config._attn_implementation = "eager"
    try:
        yield
    finally:
        config._attn_implementation = "sdpa"


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


# -------------------------------------------------------------------------------- prefix sharing


@dataclass
class PrefixTree:
    """How the rows of a batch share their leading tokens: a tree that `_tree_forward` computes level by level.

    A node is a span [start, end) of token positions on which the rows below it agree; the tokens before `start`
    are its ancestors'. `levels[d]` lists the nodes at depth d as (parent: index into level d − 1, or −1 at the
    root level; start; end; row: a batch row that holds the span). A row's tokens are the spans of the nodes on
    its path. `widths[d]` is level d's widest span. `index[i, p]` says where row i's position p sits in the levels'
    outputs, concatenated and flattened (each level's (nodes, width, H) output right-padded to its width); padding
    positions hold 0.
    """

    levels: list[list[tuple[int, int, int, int]]]
    widths: list[int]
    index: torch.Tensor  # (B, L) long


def prefix_tree(batch: TokenBatch, min_saved: int = MIN_SHARED_PREFIX) -> PrefixTree | None:
    """The tree of the leading tokens that `batch`'s rows share, or None when nothing is worth sharing.

    The G trajectories of a group start with the same prompt, all prompts start with the same instruction
    template, and trajectories that made the same first search read the same passage: each such span is a node,
    computed once for all its rows, when it saves at least `min_saved` token computations ((rows − 1) × its
    length); a shorter one is computed within each row's own span (an extra forward would cost more than it
    saves; `rollout.types.MIN_SHARED_PREFIX`)."""
    lengths = [int(n) for n in batch.attention_mask.sum(-1).tolist()]
    seqs = [batch.input_ids[i, :n].tolist() for i, n in enumerate(lengths)]
    nodes: list[tuple[int, int, int, int, int]] = []  # (parent node id, start, end, row, depth)
    last_node = [0] * batch.size  # each row's path ends at this node
    shared = False

    def add(parent: int, start: int, end: int, rows: list[int]) -> int:
        nonlocal shared
        shared |= len(rows) > 1
        nodes.append((parent, start, end, rows[0], nodes[parent][4] + 1 if parent >= 0 else 0))
        return len(nodes) - 1

    def split(rows: list[int], start: int, scan: int, parent: int) -> None:
        """`rows` agree on positions [0, scan); positions [start, scan) are in no node yet."""
        end = scan + common_prefix_len([seqs[r][scan:] for r in rows])
        done = [r for r in rows if lengths[r] == end]
        rest = [r for r in rows if lengths[r] > end]
        if not rest or (len(rows) - 1) * (end - start) >= min_saved:
            parent, start = add(parent, start, end, rows), end
            for r in done:
                last_node[r] = parent
        elif done:  # rows that end inside a span not worth sharing: a leaf of their own (equal rows share it)
            leaf = add(parent, start, end, done)
            for r in done:
                last_node[r] = leaf
        by_token: dict[int, list[int]] = {}
        for r in rest:
            by_token.setdefault(seqs[r][end], []).append(r)
        for part in by_token.values():
            split(part, start, end, parent)

    split(list(range(batch.size)), 0, 0, -1)
    if not shared:
        return None
    depth = max(n[4] for n in nodes) + 1
    local = [0] * len(nodes)
    levels: list[list[tuple[int, int, int, int]]] = [[] for _ in range(depth)]
    for k, (parent, start, end, row, d) in enumerate(nodes):
        local[k] = len(levels[d])
        levels[d].append((local[parent] if parent >= 0 else -1, start, end, row))
    widths = [max(end - start for _, start, end, _ in level) for level in levels]
    offsets = [0]
    for level, width in zip(levels, widths):
        offsets.append(offsets[-1] + len(level) * width)
    index = torch.zeros(batch.input_ids.shape, dtype=torch.long)
    for i in range(batch.size):
        k = last_node[i]
        while k >= 0:
            parent, start, end, _, d = nodes[k]
            first = offsets[d] + local[k] * widths[d]
            index[i, start:end] = torch.arange(first, first + end - start)
            k = parent
    return PrefixTree(levels, widths, index.to(batch.input_ids.device))


def _tree_forward(body: torch.nn.Module, batch: TokenBatch, tree: PrefixTree,
                  states: torch.Tensor | None = None) -> torch.Tensor:
    """The body's output at every position of every node of `tree`, flattened as `tree.index` addresses it:
    (positions, H). One forward per level: its nodes, right-padded, attend to their ancestors' keys and values
    (the cache of the level before, selected per node: a differentiable index, so gradients flow back into the
    shared spans and autograd sums them over the rows below) at their own positions; padding columns are masked.

    With `states` (B, L, H), the hidden states entering the body's first block laid out like `batch` (see
    `FastForward`), each node takes its row's states instead of its token ids."""
    device = batch.input_ids.device
    cache, mask, outputs = None, None, []
    for level, width in zip(tree.levels, tree.widths):
        n = len(level)
        ids = torch.zeros((n, width), dtype=torch.long, device=device)
        own = torch.zeros((n, width), dtype=torch.long, device=device)
        embeds = states.new_zeros((n, width, states.shape[-1])) if states is not None else None
        for k, (_, start, end, row) in enumerate(level):
            ids[k, : end - start] = batch.input_ids[row, start:end]
            own[k, : end - start] = 1
            if embeds is not None:
                embeds[k, : end - start] = states[row, start:end]
        positions = torch.tensor([start for _, start, _, _ in level], device=device)[:, None] + torch.arange(
            width, device=device)
        if cache is not None:
            parents = torch.tensor([parent for parent, *_ in level], device=device)
            cache.batch_select_indices(parents)  # (nodes of the level before, ...) -> (n, ...)
            mask = torch.cat([mask[parents], own], dim=1)
        else:
            mask = own
        inputs = {"inputs_embeds": embeds} if embeds is not None else {"input_ids": ids}
        out = body(**inputs, attention_mask=mask, position_ids=positions, past_key_values=cache, use_cache=True)
        cache = out.past_key_values
        hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]  # (n, width, H)
        outputs.append(hidden.reshape(n * width, -1))
    return torch.cat(outputs)


def _predicting(tree: PrefixTree, batch: TokenBatch) -> torch.Tensor:
    """(B, T) index into `_tree_forward`'s output of the position that predicts each response token (row i's
    response token j at P_i + j is predicted from P_i − 1 + j); 0 past a row's response."""
    lengths = batch.attention_mask.sum(-1)
    prompt_len = lengths - batch.response_valid.sum(-1).long()
    pos = prompt_len[:, None] - 1 + torch.arange(batch.response_ids.shape[1], device=lengths.device)
    pos = torch.minimum(pos, lengths[:, None] - 1)
    return tree.index.gather(1, pos) * batch.response_valid.long()


# Plain decoder stacks: the body hands `inputs_embeds` to its first block unchanged (Gemma, for one, scales them
# first), so a forward from `inputs_embeds = states entering block k` over blocks [k, depth) is the full forward;
# and its attention reads a `DynamicCache` with explicit position ids, so a prefix's keys and values can be shared.
_PLAIN_DECODERS = frozenset({"llama", "mistral", "qwen2", "qwen3"})


def _is_plain_decoder(body: torch.nn.Module) -> bool:
    return getattr(getattr(body, "config", None), "model_type", None) in _PLAIN_DECODERS


def _can_share_prefixes(body: torch.nn.Module, width: int) -> bool:
    """Prefix sharing splits the forward at the shared spans: a plain decoder, no activation checkpointing (its blocks
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
    """The fast path's forward: prefix sharing, and the hidden states entering the first trainable block, per
    trajectory, computed once per RL step.

    Why: with `train.train_layers: n` the embeddings and the lower blocks are frozen, so what they output for a
    trajectory is the same in the old-log-prob pass and in every optimiser update of the step. The rollout has
    computed them already (`start_from`); without its states, the first forward of a trajectory records them (a
    hook on the last frozen block, no extra compute). Later forwards start at the first trainable block. In the
    demo (top 10 of 30 blocks) that skips two thirds of every forward.

    Values are those of the full forward up to float rounding of the padded width (a micro-batch of the same rows
    gives bitwise the same states). Prefix sharing applies on both sides: a recording forward of a prefix tree
    stores each row's states gathered from its nodes (`PrefixTree.index`), and a cached forward feeds the same
    tree the rows' states. Disabled (`start == 0`) when nothing is frozen, e.g. under LoRA (adapters in
    every block), or with `cache_lower_blocks=False` (a forward with dropout differs from call to call).
    """

    def __init__(self, model: torch.nn.Module, *, cache_lower_blocks: bool = True, share_prefixes: bool = True):
        self.start = frozen_block_count(model) if cache_lower_blocks else 0
        self.model = model
        self.share_prefixes = share_prefixes
        self.states: dict[int, torch.Tensor] = {}  # row -> (length of the row, H)

    def has(self, rows: Sequence[int]) -> bool:
        return self.start > 0 and all(r in self.states for r in rows)

    def start_from(self, states: Sequence[torch.Tensor | None], at: int, batch: TokenBatch) -> bool:
        """Take the sampler's states entering block `at` (one (length of the row, H) tensor per row of `batch`)
        as the cache, so that no forward of the step runs the frozen blocks; False (nothing taken) unless every row
        has them, recorded at this cache's block.

        Why: the rollout has just run every token of the step through the frozen blocks, with the same frozen
        weights; their outputs are the function the lower-block cache stores (in the sampler's precision, float32
        on a CPU, where the trainer's own forward would round them in bf16). Every forward of the step, π_old's
        included, then reads the same states, so the first update's ratio is still 1 exactly."""
        lengths = batch.attention_mask.sum(-1).tolist()
        hidden = getattr(getattr(self.model, "config", None), "hidden_size", None)
        if (self.start == 0 or at != self.start or len(states) != batch.size
                or any(s is None or tuple(s.shape) != (int(n), hidden) for s, n in zip(states, lengths))):
            return False
        dtype = torch.promote_types(next(self.model.parameters()).dtype, torch.float32)
        self.states = {i: s.to(device=batch.input_ids.device, dtype=dtype) for i, s in enumerate(states)}
        return True

    def token_logprobs(self, rows: Sequence[int], batch: TokenBatch, *, temperature: float = 1.0,
                       with_entropy: bool = False, chunk_size: int = 256) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`token_logprobs` of `batch` (rows `rows` of the step): from the rows' cached states when all are cached,
        else a full forward that records them; as a prefix tree when the rows share leading tokens."""
        body, head = body_and_head(self.model)
        tree = prefix_tree(batch) if self.share_prefixes else None
        cached = self.has(rows)
        states = self._gather(rows, batch) if cached else None
        from_block = _blocks_from(body, self.start) if cached else nullcontext()
        with from_block, self._record(rows, batch, tree):
            if tree is not None:
                flat = _tree_forward(body, batch, tree, states=states)  # (positions, H)
                hidden = flat[_predicting(tree, batch)]  # (B, T, H): j predicts response token j
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
    def _record(self, rows: Sequence[int], batch: TokenBatch, tree: PrefixTree | None) -> Iterator[None]:
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
        lengths = batch.attention_mask.sum(-1).tolist()
        if tree is None:  # one padded forward: (B, L, H)
            per_row = [outputs[0][i, : int(lengths[i])] for i in range(len(rows))]
        else:  # one forward per level of the tree
            flat = torch.cat([out.reshape(-1, out.shape[-1]) for out in outputs])
            per_row = [flat[tree.index[i, : int(lengths[i])]] for i in range(len(rows))]
        for r, state in zip(rows, per_row):
            self.states[r] = state.clone()
