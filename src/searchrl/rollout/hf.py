"""A CPU-first generation backend on Hugging Face transformers that keeps each sequence's KV cache across turns.

It runs where the model is: the KV buffers, ids and sampling generator follow the model's device (CPU or CUDA);
the oneDNN weight packing below applies on the CPU only.

How the cache is reused (so a turn after an observation never re-encodes the history):

- Between turns every row keeps a compact KV tensor `(layers, 2, kv_heads, length, head_dim)` for the tokens
  already encoded, plus a short list of *pending* ids not yet encoded: the last sampled token and the
  observation tokens appended by `extend`.
- A `generate` call stacks the active rows' compact caches into one preallocated, left-aligned batch buffer
  `(layers, 2, rows, kv_heads, capacity, head_dim)` (padding columns are masked out), prefills only the pending
  tokens (in column chunks, to bound memory), then decodes one token per step for all active rows. Positions are
  each row's own token count, so padding never shifts RoPE positions.
- A row that stops (stop string, EOS, budget) drops out of the next forward: its cache columns are copied out to
  its compact tensor and the last active slot is moved into its place ("swap-remove"), so the forward batch is
  always a contiguous view of the active rows and the total copying per turn is one pass over the cache.
- The first turn prefills each distinct prompt once (the G samples of a question share it), and the prefix all
  prompts share (the instruction template before `Question:`) once for the whole batch, like vLLM's prefix cache.
  Later turns do the same for equal histories: samples that made the same search read the same passage, whose
  tokens are encoded once for all of them (`_prefill_pending`).
- With `record_states_at = k` (set by the trainer to its first trained block) the session keeps, for every token it
  encodes, the hidden state entering block k (`HFSession.states`): what the trainer's frozen lower blocks would
  compute for the same tokens, so its forwards can start at block k.
- On a GPU, `static_decode` decodes with fixed shapes instead (`_StaticDecode`: no swap-remove, attention over the
  whole buffer), so that one captured CUDA graph per batch replays every decode step.

The layers are written through a `DynamicCache` whose layers write into the buffer in place instead of
concatenating (a concatenating cache copies the whole cache at every decode step). Models whose layers are all
full attention are supported (llama, qwen2, mistral without a sliding window, ...).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer

from searchrl.errors import SearchRLError
from searchrl.rollout.backend import (
    FINISH_LENGTH,
    Generation,
    SamplingParams,
    StopChecker,
    eos_token_ids,
    sample_tokens,
)
from searchrl.rollout.types import shared_prefix_len

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase



def _onednn_linear(packed: torch.Tensor, bias: torch.Tensor | None):
    """`nn.Linear.forward` on a oneDNN-packed weight: x (..., in) -> (..., out), the same y = x W^T + b."""

    def forward(x: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x.contiguous(), packed, bias, "none", [], "")

    return forward


class _PackedLinears:
    """oneDNN-packed copies of a model's float32 CPU `nn.Linear` weights, swapped in while a session generates.

    Why: torch's CPU `F.linear` goes through MKL sgemm, which on this AMD CPU is slow for the few-row products of
    decoding (measured at 1 thread: all 211 SmolLM2 products of one step 49-126 ms for 1-16 rows, against 23-55 ms
    on packed oneDNN weights, and about 2x faster at prefill widths too). The product is the same y = x W^T + b up
    to float rounding (max abs difference about 1e-6). The copies are made on the first `active()` and reused
    until this object is dropped, so it must not outlive a change of the weights: a session (one rollout, during
    which nothing trains) owns one. Weight versions cannot tell: a fused AdamW step updates the weights without
    bumping their version counters. Costs a second copy of the weights while it lives; a weight that oneDNN
    cannot pack keeps the model's own forward.
    """

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self.packed: list[tuple[torch.nn.Linear, torch.Tensor]] | None = None  # made on first use

    @staticmethod
    def usable() -> bool:
        return bool(torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled
                    and hasattr(torch.ops.mkldnn, "_reorder_linear_weight"))

    def _pack(self) -> list[tuple[torch.nn.Linear, torch.Tensor]]:
        packed = []
        for module in self.model.modules():
            if not (type(module) is torch.nn.Linear and module.weight.device.type == "cpu"
                    and module.weight.dtype == torch.float32
                    and (module.bias is None or module.bias.dtype == torch.float32)):
                continue
            try:
                packed.append((module, torch.ops.mkldnn._reorder_linear_weight(module.weight.detach(), None)))
            except RuntimeError:  # a shape or layout oneDNN does not take: that layer keeps F.linear
                continue
        return packed

    @contextmanager
    def active(self) -> Iterator[None]:
        """While open, every packed Linear of the model computes with its packed weight."""
        if self.packed is None:
            with torch.inference_mode():
                self.packed = self._pack()
        patched: list[torch.nn.Module] = []
        try:
            for module, weight in self.packed:
                module.forward = _onednn_linear(weight, module.bias)  # an instance attribute shadows the class's
                patched.append(module)
            yield
        finally:
            for module in patched:
                del module.forward


GROUPED_SDPA = "searchrl_grouped_sdpa"  # the name `_grouped_attention` gives the model's attention while a session runs


def grouped_sdpa_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                           attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                           is_causal: bool | None = None, **kwargs: Any) -> tuple[torch.Tensor, None]:
    """transformers' SDPA attention, softmax(QKᵀ·scaling + mask)·V, except for a masked query of several tokens over
    grouped key/value heads (a prefill chunk of a GQA model): SDPA reads each key/value head for its group of
    query heads (`enable_gqa`) instead of a copy of the keys and values repeated `num_key_value_groups` times.

    query (B, H, q, D); key, value (B, H_kv, k, D); mask (B, 1, q, k), True = attend. Returns (B, q, H, D), None.
    Why: transformers 5.x repeats the keys and values before the kernel whenever a mask is given (its test for
    `enable_gqa` is written for CUDA, where a mask sends GQA to a slower kernel); on the CPU that copy is about a
    tenth of a prefill's time (docs/benchmarks.md, "Where a demo step's time goes"). The same kernel on the same
    numbers: query head h reads key/value head h // groups either way. Decode steps (q = 1) and every other case
    go to transformers' own function, which folds a one-token query's groups into its length."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = getattr(module, "num_key_value_groups", 1)
    if (groups == 1 or query.shape[2] == 1 or attention_mask is None or query.device.type != "cpu"
            or kwargs.get("position_bias") is not None or kwargs.get("cache") is not None):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling, enable_gqa=True)
    return out.transpose(1, 2).contiguous(), None


def _register_grouped_sdpa() -> None:
    """Register `GROUPED_SDPA` with transformers, once: `grouped_sdpa_attention`, and SDPA's masks."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    if GROUPED_SDPA not in ALL_MASK_ATTENTION_FUNCTIONS._global_mapping:
        AttentionMaskInterface.register(GROUPED_SDPA, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])
    if GROUPED_SDPA not in AttentionInterface._global_mapping:
        AttentionInterface.register(GROUPED_SDPA, grouped_sdpa_attention)


@contextmanager
def _grouped_attention(model: torch.nn.Module) -> Iterator[None]:
    """While open, a CPU model that attends with transformers' "sdpa" attends with `grouped_sdpa_attention` (the
    same masks); anything else runs as it is."""
    config = getattr(model, "config", None)
    if (config is None or getattr(config, "_attn_implementation", None) != "sdpa"
            or next(model.parameters()).device.type != "cpu"):
        yield
        return
    _register_grouped_sdpa()
    config._attn_implementation = GROUPED_SDPA
    try:
        yield
    finally:
        config._attn_implementation = "sdpa"


class _SlotBuffer:
    """Preallocated KV for one batch: `kv` (L, 2, B, H, capacity, D); slots [0, m) active, columns [0, n) written.

    `bucket` > 1 rounds the capacity, and the columns a forward attends over, up to a multiple of `bucket` (the
    extra columns are masked), so that attention sees a few repeated shapes and strides instead of a new key
    length at every decode step. Why: on a GPU, attention kernels that plan per shape (cuDNN's SDPA graphs) paid
    a new plan at every step of a rollout whose lengths they had not seen (see docs/benchmarks.md, "One GPU").
    """

    def __init__(self, num_layers: int, batch: int, heads: int, capacity: int, head_dim: int, dtype: torch.dtype,
                 device: torch.device, bucket: int = 1):
        capacity = -(-capacity // bucket) * bucket
        self.kv = torch.zeros(num_layers, 2, batch, heads, capacity, head_dim, dtype=dtype, device=device)
        self.mask = torch.zeros(batch, capacity, dtype=torch.long, device=device)  # (B, capacity): 1 = real token
        self.owners: list[list[int]] = [[] for _ in range(batch)]  # per slot: the session rows its tokens belong to
        self.capacity = capacity
        self.bucket = bucket
        self.m = batch
        self.n = 0

    def width(self, q: int) -> int:
        """The key columns a forward of q new tokens attends over: n + q, rounded up to the bucket.

        Exact for the first forward of a buffer (n = 0): there transformers (5.x, `_ignore_causal_mask_sdpa`) drops
        a mask that is real up to the query and padding after it, which for one query token leaves it unmasked
        over the whole width."""
        if self.n == 0:
            return q
        return min(self.capacity, -(-(self.n + q) // self.bucket) * self.bucket)


class _SlotLayer(DynamicLayer):
    """A cache layer that writes new keys/values into the shared buffer at column n and returns views of it."""

    def __init__(self, buffer: _SlotBuffer, layer: int):
        super().__init__()
        self.buffer = buffer
        self.layer = layer
        self.is_initialized = True

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        return None

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any):
        b = self.buffer
        q = key_states.shape[-2]
        keys, values = b.kv[self.layer, 0], b.kv[self.layer, 1]  # (B, H, capacity, D)
        keys[: b.m, :, b.n : b.n + q] = key_states
        values[: b.m, :, b.n : b.n + q] = value_states
        width = b.width(q)
        return keys[: b.m, :, :width], values[: b.m, :, :width]

    def get_seq_length(self) -> int:
        return self.buffer.n

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.buffer.width(query_length), 0


class _StaticSlotLayer(_SlotLayer):
    """A `_SlotLayer` for fixed-shape decoding: writes one new key/value per slot at column `col` (a device tensor,
    so a captured graph reads it at replay) and returns the whole buffer; the attention mask hides what is not
    real."""

    def __init__(self, buffer: _SlotBuffer, layer: int, col: torch.Tensor):
        super().__init__(buffer, layer)
        self.col = col

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any):
        keys, values = self.buffer.kv[self.layer, 0], self.buffer.kv[self.layer, 1]  # (M, H, capacity, D)
        keys.index_copy_(2, self.col, key_states.to(keys.dtype))
        values.index_copy_(2, self.col, value_states.to(values.dtype))
        return keys, values


class _StaticDecode:
    """A batch's decode step with fixed shapes, so that on CUDA it is captured once as a CUDA graph and replayed.

    Why: on a GPU a small model's decode step is bound by the host (Python and kernel launches): 27 ms eager
    against 3.8 ms replayed for SmolLM2-135M at 64 rows on an H200 (docs/benchmarks.md, "One GPU"). Fixed shapes:
    every slot of the buffer takes part in every step (a finished row's slot stays, its output unused), attention
    runs over the whole capacity under a (M, 1, 1, capacity) mask, and the write column is a device tensor. On the
    CPU the same step runs eagerly (what the tests check against the shrinking batch of `_generate_batch`).
    """

    def __init__(self, session: HFSession, buffer: _SlotBuffer):
        backend = session.backend
        slots, device = buffer.kv.shape[2], session.device
        self.buffer, self.model = buffer, backend.model
        self.ids = torch.full((slots, 1), backend.pad_token_id, dtype=torch.long, device=device)
        self.positions = torch.zeros((slots, 1), dtype=torch.long, device=device)
        self.col = torch.zeros(1, dtype=torch.long, device=device)
        self.mask = buffer.mask[:, None, None, :].bool()  # (M, 1, 1, capacity): True = attend
        self.cache = DynamicCache()
        self.cache.layers = [_StaticSlotLayer(buffer, i, self.col) for i in range(backend.num_layers)]
        self.graph: torch.cuda.CUDAGraph | None = None
        self.logits: torch.Tensor | None = None
        if device.type == "cuda":
            self._try_capture(backend)

    def _try_capture(self, backend: HFBackend) -> None:
        """Capture the step as a CUDA graph; if that fails (an architecture whose forward a graph cannot hold),
        warn, decode this batch eagerly and turn `backend.static_decode` off for later batches."""
        try:
            self._capture(backend.bf16)
        except Exception as exc:  # noqa: BLE001 - reported, and decoding goes on without the graph
            self.graph = self.logits = None
            backend.static_decode = False
            warnings.warn(
                f"rollout.cuda_graphs: capturing the decode step failed ({type(exc).__name__}: {exc}); decoding "
                "eagerly from now on (rollout.cuda_graphs=false skips the attempt)",
                RuntimeWarning, stacklevel=2,
            )

    def _run(self) -> torch.Tensor:
        out = self.model(input_ids=self.ids, attention_mask=self.mask, position_ids=self.positions,
                         past_key_values=self.cache, use_cache=True, logits_to_keep=1)
        return out.logits[:, -1, :]

    def _capture(self, bf16: bool) -> None:
        # Autocast may not cache its weight casts inside a graph; the casts are then part of every replay.
        precision = torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False) if bf16 else nullcontext()
        self.col.fill_(self.buffer.n)  # the warm-up writes where the first step will write again
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), precision:
            for _ in range(2):  # first calls (allocator, kernel selection) outside the capture
                self._run()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with precision, torch.cuda.graph(graph):  # the cache is off before the capture starts
            self.logits = self._run()
        self.graph = graph

    def step(self, slots: Sequence[int], tokens: Sequence[int], positions: Sequence[int]) -> torch.Tensor:
        """Decode one token for the live `slots` (their last tokens and positions); logits (M, V) of every slot."""
        b = self.buffer
        index = torch.tensor(list(slots), device=self.ids.device)
        self.ids[index, 0] = torch.tensor(list(tokens), device=self.ids.device)
        self.positions[index, 0] = torch.tensor(list(positions), device=self.ids.device)
        b.mask[index, b.n] = 1
        self.mask[index, 0, 0, b.n] = True
        self.col.fill_(b.n)
        if self.graph is not None:
            self.graph.replay()
            logits = self.logits
        else:
            logits = self._run()
        b.n += 1
        return logits


def _record_step(rows: Sequence[int], budgets: Sequence[int], tokens: Sequence[int], token_logprobs: Sequence[float],
                 generated: dict[int, list[int]], logprobs: dict[int, list[float]], results: dict[int, Generation],
                 checker: StopChecker) -> list[int]:
    """Append one decode step's token to each live row (`rows[j]` got `tokens[j]`); a row that hit a stop string,
    EOS or its budget gets its `Generation` in `results`. Returns the indices j of the rows that finished."""
    finished = []
    for j, row in enumerate(rows):
        generated[row].append(tokens[j])
        logprobs[row].append(token_logprobs[j])
        finish = checker.check(generated[row])
        if finish is None and len(generated[row]) >= budgets[j]:
            finish = FINISH_LENGTH
        if finish is not None:
            finished.append(j)
            results[row] = Generation(generated[row], logprobs[row], finish)
    return finished


class HFBackend:
    """Generation with a transformers causal LM: batched, KV cache kept per sequence across turns.

    `max_batch_size` bounds the rows of one forward, and `max_cache_bytes` the KV buffer of one batch (more rows
    run in consecutive batches of similar lengths); `prefill_tokens` bounds rows × columns of one prefill forward
    (activation memory); `pack_weights` runs the float32 CPU linear layers on oneDNN-packed copies of their weights
    (about 2x faster products on CPU, for one extra copy of the weights; see `_PackedLinears`); `bf16` runs the
    forwards under bf16 autocast with a bf16 KV cache (the weights stay as they are; a GPU's usual sampling
    precision, and the precision of the trainer's log-prob forwards under `train.bf16`), which turns the packing
    off; `kv_bucket` rounds attention's key length up to a multiple of it (default 64 on a GPU, exact on the CPU;
    see `_SlotBuffer`). Log-probabilities follow `searchrl.rollout.backend.sample_tokens`: under
    softmax(logits / T) (after top-k / top-p filtering) when sampling, under the raw softmax when greedy.
    `stats` counts the tokens pushed through the model (prefill and decode) and the forward calls.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        max_batch_size: int = 64,
        max_cache_bytes: int = 4 << 30,
        prefill_tokens: int = 4096,
        pack_weights: bool = True,
        bf16: bool = False,
        kv_bucket: int | None = None,
        static_decode: bool = False,
    ):
        config = model.config.get_text_config(decoder=True)
        layer_types = getattr(config, "layer_types", None)
        if layer_types and any(t != "full_attention" for t in layer_types):
            raise SearchRLError(
                f"HFBackend supports models whose layers are all full attention; {config.model_type} has "
                f"{sorted(set(layer_types))}"
            )
        self.model = model
        self.tokenizer = tokenizer
        self.max_batch_size = max_batch_size
        self.max_cache_bytes = max_cache_bytes
        self.prefill_tokens = prefill_tokens
        # Each session generates on oneDNN-packed linear weights (see _PackedLinears); False: the model's F.linear.
        # A CPU-only optimisation: a model on a GPU keeps its own kernels.
        on_cpu = next(model.parameters()).device.type == "cpu"
        self.bf16 = bool(bf16)
        # The packed kernels are float32 products called directly, outside autocast: not under bf16.
        self.pack_weights = bool(pack_weights and on_cpu and not self.bf16 and _PackedLinears.usable())
        # Attention widths in multiples of kv_bucket (see _SlotBuffer): on a GPU 64, on the CPU exact (1), where
        # masked columns would only add work.
        self.kv_bucket = int(kv_bucket) if kv_bucket is not None else (1 if on_cpu else 64)
        if self.kv_bucket < 1:
            raise ValueError(f"HFBackend: kv_bucket must be >= 1, got {kv_bucket}")
        # Decode with fixed shapes (`_StaticDecode`): one CUDA graph per batch on a GPU; on the CPU eager (tests).
        self.static_decode = bool(static_decode)
        self.num_layers = config.num_hidden_layers
        self.kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        self.eos_token_ids = eos_token_ids(tokenizer, model)
        self.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.eos_token_ids)
        # Tokens pushed through the model: prefilled (prompt and observation tokens) and decoded (one per row-step).
        self.stats = {"prefill_tokens": 0, "decode_tokens": 0, "forward_calls": 0}
        # Record the hidden states entering this block for every token encoded (0: off; see `HFSession.states`). The
        # trainer sets it to its first trained block: those states are what its frozen lower blocks would compute.
        self.record_states_at = 0

    def open_session(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> HFSession:
        return HFSession(self, prompts, sampling)


class HFSession:
    """One batch of sequences on an `HFBackend` (see the module docstring for the cache layout)."""

    def __init__(self, backend: HFBackend, prompts: Sequence[Sequence[int]], sampling: SamplingParams):
        if any(len(p) == 0 for p in prompts):
            raise SearchRLError("HFBackend: every prompt needs at least one token")
        self.backend = backend
        self.sampling = sampling
        param = next(backend.model.parameters())
        self.device = param.device
        self.dtype = torch.bfloat16 if backend.bf16 else param.dtype  # the KV cache's
        self.generator = torch.Generator(device=self.device)
        if sampling.seed is not None:
            self.generator.manual_seed(sampling.seed)
        else:
            self.generator.seed()
        self.prompts = [list(p) for p in prompts]
        n = len(prompts)
        self.cached: list[torch.Tensor | None] = [None] * n  # (L, 2, H, length, D) per row
        self.cached_len = [0] * n
        self.pending: list[list[int]] = [list(p) for p in prompts]
        # Every token of each row so far (encoded or pending): rows with equal histories have equal caches.
        self.history: list[list[int]] = [list(p) for p in prompts]
        # With `record_states_at`: per row, (first position, states (n, H)) of the tokens encoded so far.
        self.record_at = 0 if backend.static_decode else backend.record_states_at
        self.recorded: list[list[tuple[int, torch.Tensor]]] = [[] for _ in prompts]
        self._hooked: torch.Tensor | None = None
        self.released = [False] * n
        # Packed on the first generate, dropped on close: the weights cannot change during a rollout.
        self.packed = _PackedLinears(backend.model) if backend.pack_weights else None

    # -- public API -------------------------------------------------------------------------------------------
    def extend(self, rows: Sequence[int], token_ids: Sequence[Sequence[int]]) -> None:
        for row, ids in zip(rows, token_ids, strict=True):
            self._check_row(row)
            self.pending[row].extend(int(i) for i in ids)
            self.history[row].extend(int(i) for i in ids)

    def release(self, rows: Sequence[int]) -> None:
        for row in rows:
            self.cached[row] = None
            self.pending[row] = []
            self.released[row] = True

    def close(self) -> None:
        self.release(range(len(self.prompts)))
        self.packed = None  # frees the packed copy of the weights

    def states(self, row: int, length: int) -> torch.Tensor | None:
        """(length, H): the hidden states entering block `record_states_at` at positions [0, length) of `row`, as
        this session computed them while encoding its tokens; zero at positions never encoded (a row's last sampled
        token, and an observation no turn read). None when the session did not record."""
        if not self.record_at or not self.recorded[row]:
            return None
        first = self.recorded[row][0][1]
        out = torch.zeros((length, first.shape[-1]), dtype=first.dtype, device=first.device)
        for start, chunk in self.recorded[row]:
            end = min(start + chunk.shape[0], length)
            if end > start:
                out[start:end] = chunk[: end - start]
        return out

    @contextmanager
    def _recording(self) -> Iterator[None]:
        """While open (with `record_at`), a hook keeps the output of the block below `record_at`: the states
        entering it, which `_forward` files under the rows they belong to."""
        if not self.record_at:
            yield
            return
        from searchrl.models import body_and_head, decoder_blocks

        def hook(module: torch.nn.Module, args: object, output: object) -> None:
            self._hooked = output[0] if isinstance(output, tuple) else output

        body, _ = body_and_head(self.backend.model)
        handle = decoder_blocks(body)[self.record_at - 1].register_forward_hook(hook)
        try:
            yield
        finally:
            handle.remove()
            self._hooked = None

    def _file_states(self, buffer: _SlotBuffer, positions: torch.Tensor, q: int) -> None:
        """File the states of the forward just run (its q new columns of each active slot) under the slots' rows."""
        states, self._hooked = self._hooked, None
        if states is None:
            return
        if q == 1:  # a decode step: one token per slot
            starts, counts = [0] * buffer.m, [1] * buffer.m
        else:  # a prefill: padding columns (left of each slot's tokens) are not tokens
            real = buffer.mask[: buffer.m, buffer.n - q : buffer.n].bool().cpu()  # (m, q)
            starts = real.int().argmax(1).tolist()  # a slot's tokens are its last columns
            counts = real.sum(1).tolist()
        # the position of each slot's first token: one read of the device per forward
        first = positions.gather(1, torch.tensor(starts, device=positions.device)[:, None])[:, 0].tolist()
        for slot in range(buffer.m):
            if not counts[slot]:
                continue
            # (n, H), a copy: the hook's tensor is the forward's own
            chunk = states[slot, starts[slot] : starts[slot] + counts[slot]].clone()
            for row in buffer.owners[slot]:
                self.recorded[row].append((first[slot], chunk))

    # no_grad rather than inference_mode: under inference mode autocast does not cache its casts, so bf16 sampling
    # would cast every weight again at every decode step (about a quarter of a bf16 decode step for SmolLM2-135M
    # at 64 rows on one CPU thread: 480 against 360 ms); under no_grad each weight is cast once per call.
    @torch.no_grad()
    def generate(self, rows: Sequence[int], max_new_tokens: Sequence[int], stop: Sequence[str]) -> list[Generation]:
        if len(rows) != len(max_new_tokens):
            raise ValueError("generate: rows and max_new_tokens differ in length")
        for row, budget in zip(rows, max_new_tokens):
            self._check_row(row)
            if budget < 1:
                raise ValueError(f"generate: row {row} has a budget of {budget} tokens; it must be >= 1")
        precision = torch.autocast(self.device.type, dtype=torch.bfloat16) if self.backend.bf16 else nullcontext()
        packed = self.packed.active() if self.packed is not None else nullcontext()
        with precision, packed, _grouped_attention(self.backend.model), self._recording():
            generations = self._generate(rows, max_new_tokens, stop)
        for row, gen in zip(rows, generations):
            self.history[row].extend(gen.token_ids)
        return generations

    # -- internals --------------------------------------------------------------------------------------------
    def _generate(self, rows: Sequence[int], max_new_tokens: Sequence[int], stop: Sequence[str]) -> list[Generation]:
        checker = StopChecker(self.backend.tokenizer, stop, self.backend.eos_token_ids)
        self._prefill_fresh([r for r in rows if self.cached[r] is None])
        self._prefill_pending([r for r in rows if len(self.pending[r]) > 1])
        budget_of = dict(zip(rows, max_new_tokens))
        # Rows of similar length share a batch (less padding); the batch size keeps the KV buffer under budget.
        ordered = sorted(rows, key=lambda r: self.cached_len[r] + len(self.pending[r]))
        capacity = max(self.cached_len[r] for r in rows) + max(len(self.pending[r]) for r in rows) + max(max_new_tokens)
        b = self.backend
        bytes_per_row = 2 * b.num_layers * b.kv_heads * b.head_dim * capacity * self.dtype.itemsize
        size = max(1, min(b.max_batch_size, b.max_cache_bytes // bytes_per_row))
        results: dict[int, Generation] = {}
        for start in range(0, len(ordered), size):
            chunk = ordered[start : start + size]
            results.update(self._generate_batch(chunk, [budget_of[r] for r in chunk], checker))
        return [results[r] for r in rows]

    def _choose(self, logits: torch.Tensor, rows: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """The next token of each active row (`rows`, in slot order) and its log-prob: sampled with
        `sample_tokens`. (benchmarks/workload.py overrides it to replay recorded tokens: the same work twice.)"""
        return sample_tokens(logits, self.sampling, self.generator)

    def _check_row(self, row: int) -> None:
        if not 0 <= row < len(self.prompts) or self.released[row]:
            raise ValueError(f"row {row} is not an open row of this session")

    def _new_buffer(self, batch: int, capacity: int) -> _SlotBuffer:
        b = self.backend
        return _SlotBuffer(b.num_layers, batch, b.kv_heads, capacity, b.head_dim, self.dtype, self.device,
                           b.kv_bucket)

    def _forward(self, buffer: _SlotBuffer, input_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Run the model on (m, q) new tokens at columns [n, n+q); return last-position logits (m, V)."""
        q = input_ids.shape[1]
        cache = DynamicCache()
        cache.layers = [_SlotLayer(buffer, i) for i in range(self.backend.num_layers)]
        width = buffer.width(q)
        mask = buffer.mask[: buffer.m, :width]
        if width > buffer.n + q:  # bucket columns: masked here, whatever a chunked prefill has marked beyond
            mask = mask.clone()
            mask[:, buffer.n + q :] = 0
        out = self.backend.model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        buffer.n += q
        if self.record_at:
            self._file_states(buffer, positions, q)
        self.backend.stats["forward_calls"] += 1
        return out.logits[:, -1, :]

    def _prefill_left_aligned(
        self, buffer: _SlotBuffer, pending: list[list[int]], first_pos: list[int]
    ) -> torch.Tensor:
        """Append each slot's pending ids right-aligned after column `buffer.n`, in column chunks; return logits."""
        width = max(len(p) for p in pending)
        m = len(pending)
        ids = torch.full((m, width), self.backend.pad_token_id, dtype=torch.long)  # (m, P)
        pos = torch.zeros((m, width), dtype=torch.long)  # (m, P)
        for i, p in enumerate(pending):
            ids[i, width - len(p) :] = torch.tensor(p, dtype=torch.long)
            pos[i, width - len(p) :] = torch.arange(first_pos[i], first_pos[i] + len(p))
            buffer.mask[i, buffer.n + width - len(p) : buffer.n + width] = 1
        ids, pos = ids.to(self.device), pos.to(self.device)
        self.backend.stats["prefill_tokens"] += sum(len(p) for p in pending)
        step = max(1, self.backend.prefill_tokens // m)
        logits = None
        for c in range(0, width, step):
            logits = self._forward(buffer, ids[:, c : c + step], pos[:, c : c + step])
        assert logits is not None
        return logits

    def _keep(self, buffer: _SlotBuffer, slot: int, row: int, length: int, last_token: int) -> None:
        """A finished row keeps its cache columns (`length` of them) and its last sampled token, not yet encoded."""
        self.cached[row] = self._take(buffer, slot)
        self.cached_len[row] = length
        self.pending[row] = [last_token]

    def _take(self, buffer: _SlotBuffer, slot: int) -> torch.Tensor:
        """Copy one slot's real (unmasked) cache columns out of the buffer: (L, 2, H, length, D)."""
        cols = buffer.mask[slot, : buffer.n].nonzero().squeeze(1)
        return buffer.kv[:, :, slot].index_select(3, cols)

    def _prefill_fresh(self, rows: list[int]) -> None:
        """Encode all but the last prompt token of rows with no cache: once per distinct prompt, and the prefix
        that all distinct prompts share (the instruction template before the question) once for all of them."""
        unique: dict[tuple[int, ...], list[int]] = {}
        for row in rows:
            prefix = tuple(self.pending[row][:-1])
            if prefix:
                unique.setdefault(prefix, []).append(row)
        if not unique:
            return
        prompts = sorted(unique, key=len)
        shared = prompts[0][: shared_prefix_len(prompts)]
        shared_kv = None
        if shared:
            buffer = self._new_buffer(1, len(shared))
            buffer.owners = [[row for members in unique.values() for row in members]]
            self._prefill_left_aligned(buffer, [list(shared)], [0])
            shared_kv = self._take(buffer, 0)  # (L, 2, H, len(shared), D)
        base = len(shared) if shared_kv is not None else 0
        i = 0
        while i < len(prompts):
            # Group prompts of similar length so that rows × width stays under the prefill budget.
            j = i + 1
            while j < len(prompts) and (j + 1 - i) * (len(prompts[j]) - base) <= self.backend.prefill_tokens:
                j += 1
            group = prompts[i:j]
            suffixes = [list(p[base:]) for p in group]
            buffer = self._new_buffer(len(group), base + max(len(x) for x in suffixes))
            buffer.owners = [unique[prompt] for prompt in group]
            if shared_kv is not None:
                buffer.kv[:, :, :, :, :base] = shared_kv[:, :, None]  # every slot starts with the shared prefix
                buffer.mask[:, :base] = 1
                buffer.n = base
            if any(suffixes):
                self._prefill_left_aligned(buffer, suffixes, [base] * len(group))
            for slot, prompt in enumerate(group):
                kv = self._take(buffer, slot)
                for row in unique[prompt]:
                    self.cached[row] = kv  # shared by the G rows of one prompt; never written in place
                    self.cached_len[row] = len(prompt)
                    self.pending[row] = self.pending[row][-1:]
            i = j

    def _prefill_pending(self, rows: list[int]) -> None:
        """Encode all but the last pending token (an observation after the last sampled token) of rows that have a
        cache, once per distinct history, in batches of histories whose pending lengths are alike; when no two
        rows share a history, leave it all to `_generate_batch`.

        Why: the G samples of a question often make the same first search and read the same passage; their
        histories, hence their caches, are then equal, so one forward serves all of them (a third to two thirds of
        a demo rollout's observation tokens). `_generate_batch` then encodes each row's last pending token in a row
        of its own, as its first decode step; were the other rows' observations left to it, its left-padded prefill
        would pad the shared rows' single tokens to the longest observation. Without any shared history (the
        evaluation's greedy rows) this pass would only copy every cache twice more."""
        unique: dict[tuple[int, ...], list[int]] = {}
        for row in rows:
            unique.setdefault(tuple(self.history[row]), []).append(row)
        if len(unique) == len(rows):
            return
        owners = sorted((members[0] for members in unique.values()), key=lambda r: -len(self.pending[r]))
        b = self.backend
        i = 0
        while i < len(owners):
            width = len(self.pending[owners[i]]) - 1
            longest = max(self.cached_len[r] for r in owners[i:])  # an upper bound for the batch's buffer
            bytes_per_row = 2 * b.num_layers * b.kv_heads * b.head_dim * (longest + width) * self.dtype.itemsize
            size = max(1, min(b.max_batch_size, b.max_cache_bytes // bytes_per_row))
            j = i + 1
            while j < len(owners) and j - i < size and 4 * (len(self.pending[owners[j]]) - 1) >= 3 * width:
                j += 1  # at most a quarter of a row's columns is padding
            batch = owners[i:j]
            lengths = [self.cached_len[r] for r in batch]
            buffer = self._new_buffer(len(batch), max(lengths) + width)
            buffer.owners = [unique[tuple(self.history[owner])] for owner in batch]
            self._load_caches(buffer, batch)
            self._prefill_left_aligned(buffer, [self.pending[r][:-1] for r in batch], lengths)
            for slot, owner in enumerate(batch):
                kv = self._take(buffer, slot)
                length = lengths[slot] + len(self.pending[owner]) - 1
                for row in unique[tuple(self.history[owner])]:
                    self.cached[row] = kv  # shared by rows with this history; never written in place
                    self.cached_len[row] = length
                    self.pending[row] = self.pending[row][-1:]
            i = j

    def _load_caches(self, buffer: _SlotBuffer, rows: list[int]) -> None:
        """Copy the rows' compact caches into slots 0, 1, ... of a fresh buffer, right-aligned at its column n (the
        longest cache); each row's own cache is dropped (the buffer holds it now)."""
        lengths = [self.cached_len[r] for r in rows]
        longest = max(lengths)
        for slot, row in enumerate(rows):
            kv = self.cached[row]
            if kv is not None and lengths[slot]:
                buffer.kv[:, :, slot, :, longest - lengths[slot] : longest] = kv
                buffer.mask[slot, longest - lengths[slot] : longest] = 1
            self.cached[row] = None
        buffer.n = longest

    def _decode_static(self, buffer: _SlotBuffer, logits: torch.Tensor, rows: list[int], budgets: list[int],
                       positions: list[int], checker: StopChecker) -> dict[int, Generation]:
        """`_generate_batch`'s decode loop with fixed shapes (`_StaticDecode`): slots stay where they are; `order`
        lists the live ones in the order the shrinking batch would hold them, so sampling sees its rows in the same
        order and draws the same tokens."""
        static: _StaticDecode | None = None
        order = list(range(len(rows)))  # live slots
        slot_rows, slot_budget = list(rows), list(budgets)  # per entry of `order`
        generated: dict[int, list[int]] = {r: [] for r in rows}
        logprobs: dict[int, list[float]] = {r: [] for r in rows}
        results: dict[int, Generation] = {}
        while True:
            live = logits if len(order) == logits.shape[0] and order == list(range(len(order))) else (
                logits[torch.tensor(order, device=logits.device)])
            tokens, token_logprobs = self._choose(live, slot_rows)
            tokens_list, lp_list = tokens.tolist(), token_logprobs.tolist()
            finished = _record_step(slot_rows, slot_budget, tokens_list, lp_list, generated, logprobs, results,
                                    checker)
            for j in sorted(finished, reverse=True):
                self._keep(buffer, order[j], slot_rows[j], positions[j], generated[slot_rows[j]][-1])
                last = len(order) - 1
                if j != last:  # the shrinking batch's swap-remove, on the list only
                    order[j], slot_rows[j], positions[j], slot_budget[j], tokens_list[j] = (
                        order[last], slot_rows[last], positions[last], slot_budget[last], tokens_list[last])
                for values in (order, slot_rows, positions, slot_budget, tokens_list):
                    values.pop()
            if not order:
                return results
            if static is None:
                static = _StaticDecode(self, buffer)
            logits = static.step(order, tokens_list, positions)
            self.backend.stats["forward_calls"] += 1
            self.backend.stats["decode_tokens"] += len(order)
            positions = [p + 1 for p in positions]

    def _generate_batch(
        self, rows: list[int], budgets: list[int], checker: StopChecker
    ) -> dict[int, Generation]:
        lengths = [self.cached_len[r] for r in rows]
        pending_width = max(len(self.pending[r]) for r in rows)
        buffer = self._new_buffer(len(rows), max(lengths) + pending_width + max(budgets))
        buffer.owners = [[row] for row in rows]
        self._load_caches(buffer, rows)
        logits = self._prefill_left_aligned(buffer, [self.pending[r] for r in rows], lengths)
        positions = [lengths[s] + len(self.pending[r]) for s, r in enumerate(rows)]  # next position per slot
        if self.backend.static_decode:
            return self._decode_static(buffer, logits, rows, budgets, positions, checker)
        slot_rows = list(rows)
        slot_budget = list(budgets)
        generated: dict[int, list[int]] = {r: [] for r in rows}
        logprobs: dict[int, list[float]] = {r: [] for r in rows}
        results: dict[int, Generation] = {}
        while True:
            tokens, token_logprobs = self._choose(logits, slot_rows)  # (m,), (m,)
            tokens_list, lp_list = tokens.tolist(), token_logprobs.tolist()
            finished = _record_step(slot_rows, slot_budget, tokens_list, lp_list, generated, logprobs, results,
                                    checker)
            for slot in sorted(finished, reverse=True):
                self._keep(buffer, slot, slot_rows[slot], positions[slot], generated[slot_rows[slot]][-1])
                last = buffer.m - 1
                if slot != last:
                    # Swap-remove: move the last active slot here so active slots stay contiguous.
                    buffer.kv[:, :, slot, :, : buffer.n] = buffer.kv[:, :, last, :, : buffer.n]
                    buffer.mask[slot] = buffer.mask[last]
                    buffer.owners[slot] = buffer.owners[last]
                    slot_rows[slot], positions[slot], slot_budget[slot] = (
                        slot_rows[last], positions[last], slot_budget[last])
                    tokens_list[slot] = tokens_list[last]
                slot_rows.pop()
                positions.pop()
                slot_budget.pop()
                tokens_list.pop()
                buffer.owners.pop()
                buffer.m -= 1
            if buffer.m == 0:
                return results
            buffer.mask[: buffer.m, buffer.n] = 1
            input_ids = torch.tensor(tokens_list, dtype=torch.long, device=self.device)[:, None]  # (m, 1)
            pos = torch.tensor(positions, dtype=torch.long, device=self.device)[:, None]  # (m, 1)
            logits = self._forward(buffer, input_ids, pos)
            self.backend.stats["decode_tokens"] += buffer.m
            positions = [p + 1 for p in positions]


def full_forward_logprobs(
    model: PreTrainedModel, prompt_ids: Sequence[int], response_ids: Sequence[int], temperature: float = 1.0
) -> list[float]:
    """Log-probs of `response_ids` given `prompt_ids` from one full forward pass (no cache, no padding):
    log softmax(logits / T) at each response position. The oracle that cache-based sampling must match."""
    device = next(model.parameters()).device
    ids = torch.tensor([list(prompt_ids) + list(response_ids)], dtype=torch.long, device=device)
    with torch.inference_mode():
        logits = model(input_ids=ids).logits[0]
        logits = logits.to(torch.promote_types(logits.dtype, torch.float32))  # (T, V); a float64 model's stay float64
    start = len(prompt_ids)
    logp = torch.log_softmax(logits[start - 1 : -1] / temperature, dim=-1)  # (R, V)
    return logp.gather(1, torch.tensor(list(response_ids), device=device)[:, None]).squeeze(1).tolist()
