"""training/forward.py: the plain padded forward (`token_logprobs`, the definition) against the full logits, and
the fast path (prefix sharing, the lower-block cache, the weight-cast cache, π_old reuse) against the plain path as
its oracle: values and gradients, in float64 (the same math in other shapes and orders: conftest.assert_same_math),
and whole training runs metric by metric (`train.fast_forward` on and off)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from conftest import EPS_BF16, assert_same_math
from searchrl.training.config import load_config
from test_train import FLOAT64_RUN, assert_same_metrics, rows_without_time, tiny_model, tiny_overrides  # noqa: F401

pytestmark = pytest.mark.usefixtures("one_thread", "float64_norms")  # conftest.py


def _tiny_batch(tokenizer_model: Path):
    from searchrl.models import load_policy
    from searchrl.rollout.types import Trajectory
    from searchrl.training.forward import collate

    model, tok = load_policy(tokenizer_model)
    ids = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    trajs = []
    for k, (prompt, response) in enumerate([("Question: who wrote it?", " <search>the author</search>"),
                                            ("Q: where?", " <answer>Paris, in France</answer> and more")]):
        r = ids(response)
        mask = [1] * len(r)
        mask[2:4] = [0, 0]  # an observation inside the response
        trajs.append(Trajectory(question=None, group_id=f"g{k}", prompt_ids=ids(prompt), response_ids=r,
                                response_mask=mask, sampling_logprobs=[0.0] * len(r), turns=[], answer=None,
                                num_searches=0, finish_reason="stop"))
    return model, collate(trajs, int(tok.pad_token_id))

def _grouped_batch(tokenizer_model: Path, template: str = "", rows_kept: list[int] | None = None):
    """Two groups that each repeat a prompt (of different lengths), one row with a prompt of its own, an empty
    response and observation tokens inside responses; every prompt starts with `template`; `rows_kept` keeps some
    rows only."""
    from searchrl.models import load_policy
    from searchrl.rollout.types import Trajectory
    from searchrl.training.forward import collate

    model, tok = load_policy(tokenizer_model)
    ids = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    rows = [("Question: who wrote the book about the whale?", " <search>the author</search> and then"),
            ("Question: who wrote the book about the whale?", " <answer>Melville</answer>"),
            ("Q: where?", " <answer>Paris, in France</answer> and more"),
            ("Question: who wrote the book about the whale?", ""),
            ("Q: where?", " <search>capital</search>"),
            ("Q: when was it built, and by whom?", " <answer>1889</answer>")]
    trajs = []
    rows = [(template + prompt, response) for prompt, response in rows]
    for k, (prompt, response) in enumerate(rows):
        if rows_kept is not None and k not in rows_kept:
            continue
        r = ids(response)
        mask = [1] * len(r)
        mask[2:4] = [0] * len(mask[2:4])  # an observation inside the response
        trajs.append(Trajectory(question=None, group_id=prompt, prompt_ids=ids(prompt), response_ids=r,
                                response_mask=mask, sampling_logprobs=[0.0] * len(r), turns=[], answer=None,
                                num_searches=0, finish_reason="stop"))
    return model, collate(trajs, int(tok.pad_token_id))

def shared_or_plain(model: torch.nn.Module, batch, share: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch's log-probs and entropies: the fast path's prefix sharing, or the plain padded forward."""
    from searchrl.training.forward import FastForward, token_logprobs

    if share:
        return FastForward(model, cache_lower_blocks=False).token_logprobs(range(batch.size), batch, with_entropy=True)
    return token_logprobs(model, batch, with_entropy=True)


def _logit_spread(model: torch.nn.Module, batch) -> float:
    """max − min of the logits over the vocabulary, largest over `batch`'s positions (the float32 forward)."""
    with torch.no_grad():
        logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits.float()
    return float((logits.amax(-1) - logits.amin(-1)).max())

def test_token_logprobs_equal_the_full_logits_in_one_chunk_or_many(tiny_model):
    """One chunk (logits kept for the backward) and several (each recomputed in the backward) give the log-probs,
    entropies and gradients of the model's full logits.

    In float64: the chunks sum the head's gradient in another order, which in float32 moved elements of the tied
    embedding's gradient (|g| up to 13) by up to 2.6e-5 depending on the CPU kind; float64 keeps that ~1e-15."""
    from searchrl.training.forward import token_logprobs
    from searchrl.training.policy import prepare_for_training

    model, batch = _grouped_batch(tiny_model)
    model = prepare_for_training(model, gradient_checkpointing=False, dtype=torch.float64)
    model.zero_grad(set_to_none=True)
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    assert logits.dtype == torch.float64
    log_probs = logits.log_softmax(-1)
    rows = torch.arange(batch.size)[:, None]
    want = log_probs[rows, batch.predict_pos].gather(-1, batch.response_ids[..., None]).squeeze(-1)
    want_ent = -(log_probs.exp() * log_probs).sum(-1)[rows, batch.predict_pos]
    want, want_ent = want * batch.response_mask, want_ent * batch.response_mask
    (want.sum() + 0.1 * want_ent.sum()).backward()
    want_grads = [p.grad.clone() for p in model.parameters()]
    for chunk_size in (3, 256):
        model.zero_grad(set_to_none=True)
        lp, ent = token_logprobs(model, batch, chunk_size=chunk_size, with_entropy=True)
        (lp.sum() + 0.1 * ent.sum()).backward()
        assert_same_math(lp, want)  # float64 (conftest): the same math, summed in another order
        assert_same_math(ent, want_ent)
        for got, expected in zip([p.grad for p in model.parameters()], want_grads):
            assert_same_math(got, expected)

def _plain_and_shared(model, batch):
    """The padded and the shared-prompt forward of `batch`, each with its log-probs, entropies and gradients
    (log-probs + 0.1 · entropy backpropagated), and how many body forwards each ran."""
    calls = []
    handle = model.model.register_forward_hook(lambda module, args, out: calls.append(1))
    results = []
    try:
        for share in (False, True):
            calls.clear()
            model.zero_grad(set_to_none=True)
            lp, ent = shared_or_plain(model, batch, share)
            (lp.sum() + 0.1 * ent.sum()).backward()
            results.append(((lp.detach(), ent.detach(), [p.grad.clone() for p in model.parameters()]), len(calls)))
    finally:
        handle.remove()
    return results


def test_shared_prompts_give_the_padded_forward_values_and_gradients(tiny_model):
    """Rows that repeat a prompt compute it once (two body forwards: the shared prompt, then every row's own tokens)
    with the same log-probs, entropies and gradients as the padded forward, in float64 (the same math) and under
    bf16 autocast (float32 weights)."""
    from searchrl.training.forward import FastForward, prefix_tree, token_logprobs
    from searchrl.training.policy import prepare_for_training

    model, batch = _grouped_batch(tiny_model)
    model = prepare_for_training(model, gradient_checkpointing=False, dtype=torch.float64)
    tree = prefix_tree(batch)
    # Rows 0, 1 and 3 share the whale question (row 3 ends there); "Q: where?" (rows 2 and 4) saves too little.
    assert len(tree.levels) == 2 and [row for *_, row in tree.levels[0]] == [0, 2, 4, 5]
    (plain, plain_calls), (shared, shared_calls) = _plain_and_shared(model, batch)
    assert plain_calls == 1 and shared_calls == 2  # the level of the shared prompt, then the rows' own tokens
    assert_same_math(shared[0], plain[0])  # float64: the same math in another layout (conftest)
    assert_same_math(shared[1], plain[1])
    for got, want in zip(shared[2], plain[2]):
        assert_same_math(got, want)
    assert (plain[0][3] == 0).all()  # the empty response scores nothing
    model = model.to(torch.float32)  # bf16 autocast casts float32 weights (float64 ones it leaves alone)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        lp_plain, _ = token_logprobs(model, batch)
        lp_shared, _ = FastForward(model).token_logprobs(range(batch.size), batch)
    # bf16 (8 significant bits, EPS_BF16 = 2^-7) rounds the two layouts' activations differently: their logits
    # differ by a few bf16 roundings of numbers of the logits' size, and a log-prob is a difference of logits, so
    # the bound scales with the logits' spread (max - min over the vocabulary, ~1.9 here): 2 · EPS_BF16 · spread
    # ~ 0.03; measured <= 0.07x that (AMX, AVX512-BF16, AVX2, scalar dispatch); a wrong position moves it by more.
    bound = 2 * EPS_BF16 * _logit_spread(model, batch)
    torch.testing.assert_close(lp_shared, lp_plain, rtol=0, atol=bound)


def _first_turn_batch(tokenizer_model: Path):
    """One group of 6 rows after a template-sized prompt: rows 0-2 make the same first search and read the same
    passage (an observation long enough to share), then answer differently (rows 1 and 2 identically); rows 3
    and 4 make another search; row 5 answers at once."""
    from searchrl.models import load_policy
    from searchrl.rollout.types import Trajectory
    from searchrl.training.forward import collate

    model, tok = load_policy(tokenizer_model)
    ids = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    prompt = ids("Answer the question. Search with <search>query</search>, then answer.\nQuestion: who wrote it?\n")
    passage = "<information>Doc 1 (Title: Moby-Dick) Moby-Dick is a novel written by Herman Melville, 1851.</information>"
    turns = [[(" author of it</search>", 1), (passage, 0), (" <answer>Melville</answer>", 1)],
             [(" author of it</search>", 1), (passage, 0), (" <answer>Herman</answer>", 1)],
             [(" author of it</search>", 1), (passage, 0), (" <answer>Herman</answer>", 1)],
             [(" the whale</search>", 1), ("<information>Doc 1 (Title: Whale) A whale.</information>", 0),
              (" <answer>no idea</answer>", 1)],
             [(" the whale</search>", 1), ("<information>Doc 1 (Title: Whale) A whale.</information>", 0)],
             [(" <answer>Melville</answer>", 1)]]
    trajs = []
    for parts in turns:
        response, mask = [], []
        for text, sampled in parts:
            response += ids(text)
            mask += [sampled] * len(ids(text))
        trajs.append(Trajectory(question=None, group_id="g", prompt_ids=prompt, response_ids=response,
                                response_mask=mask, sampling_logprobs=[0.0] * len(response), turns=[],
                                answer=None, num_searches=0, finish_reason="answer"))
    return model, collate(trajs, int(tok.pad_token_id)), len(ids(" author of it</search>" + passage))


def test_a_shared_first_turn_runs_once_with_the_padded_forward_values_and_gradients(tiny_model):
    """Trajectories of a group that made the same first search read the same passage: the prompt, then that first
    turn, then each row's own tokens (three levels; two equal rows share even their last node), with the padded
    forward's log-probs, entropies and gradients (float64), and the lower-block cache recorded from that tree."""
    from searchrl.training.forward import FastForward, prefix_tree
    from searchrl.training.policy import prepare_for_training

    model, batch, first_turn = _first_turn_batch(tiny_model)
    model = prepare_for_training(model, gradient_checkpointing=False, dtype=torch.float64)
    tree = prefix_tree(batch)
    prompt_len = int(batch.attention_mask[0].sum() - batch.response_valid[0].sum())
    # The prompt; the two first turns (rows 0-2's up to "<answer>", where they part) and row 5's answer; the rest.
    assert [len(level) for level in tree.levels] == [1, 3, 3]
    (_, start, end, _), = tree.levels[0]
    assert (start, end) == (0, prompt_len)
    assert any(start == prompt_len and end >= prompt_len + first_turn for _, start, end, _ in tree.levels[1])
    assert torch.equal(tree.index[1], tree.index[2])  # equal rows: one path
    (plain, plain_calls), (shared, shared_calls) = _plain_and_shared(model, batch)
    assert plain_calls == 1 and shared_calls == 3
    assert_same_math(shared[0], plain[0])
    assert_same_math(shared[1], plain[1])
    for got, want in zip(shared[2], plain[2]):
        assert_same_math(got, want)
    positions = int(sum((end - start) * 1 for level in tree.levels for _, start, end, _ in level))
    assert positions < int(batch.attention_mask.sum()) * 0.6  # the shared spans are computed once

    model = prepare_for_training(model, gradient_checkpointing=False, train_layers=1, dtype=torch.float64)
    cache = FastForward(model)
    with torch.no_grad():
        cache.token_logprobs(range(batch.size), batch)  # records the states entering block 1 through the tree
    for r in range(batch.size):
        assert cache.states[r].shape == (int(batch.attention_mask[r].sum()), model.config.hidden_size)
    cached_lp, _ = cache.token_logprobs(range(batch.size), batch)
    assert_same_math(cached_lp, plain[0])


@pytest.mark.parametrize("rows_kept", [None, [0, 2, 5]], ids=["repeated prompts", "all prompts distinct"])
def test_a_common_prompt_prefix_runs_once_with_the_padded_forward_values_and_gradients(tiny_model, rows_kept):
    """Prompts that start with the same instruction template: the template runs once in a forward of its own,
    then the repeated prompt's remaining tokens (when some rows repeat one), then every row's own tokens, also
    when no row repeats a prompt; log-probs, entropies and gradients are the padded forward's."""
    from searchrl.rollout.types import MIN_SHARED_PREFIX, common_prefix_len
    from searchrl.training.forward import prefix_tree
    from searchrl.training.policy import prepare_for_training

    template = "Answer the question. Search with <search>query</search>, then answer with <answer>answer</answer>.\n"
    model, batch = _grouped_batch(tiny_model, template, rows_kept)
    model = prepare_for_training(model, gradient_checkpointing=False, dtype=torch.float64)  # same math: float64
    tree = prefix_tree(batch)
    (_, start, end, _), = tree.levels[0]  # the template, once
    assert start == 0 and end == common_prefix_len(batch.input_ids.tolist()) >= MIN_SHARED_PREFIX
    (plain, plain_calls), (shared, shared_calls) = _plain_and_shared(model, batch)
    assert plain_calls == 1 and shared_calls == len(tree.levels) == (3 if rows_kept is None else 2)
    assert_same_math(shared[0], plain[0])  # float64: the same math in several forwards instead of one (conftest)
    assert_same_math(shared[1], plain[1])
    for got, want in zip(shared[2], plain[2]):
        assert_same_math(got, want)

def test_shared_prompts_fall_back_to_the_padded_forward(tiny_model):
    """No repeated prompt and no shared template, activation checkpointing (its blocks drop the cache), or a sliding
    attention window shorter than the rows: one padded forward."""
    from searchrl.training.forward import FastForward, StepForward, prefix_tree, sub_batch
    from searchrl.training.policy import prepare_for_training

    model, batch = _grouped_batch(tiny_model)
    distinct = sub_batch(batch, [0, 2, 5])
    assert prefix_tree(distinct) is None
    calls = []
    for checkpointing, sub in ((False, distinct), (True, batch)):
        model = prepare_for_training(model, gradient_checkpointing=checkpointing)
        step = StepForward(model, sub, temperature=1.0, bf16=False, chunk_size=256, fast=True)
        assert step.shares_prefixes is not checkpointing  # checkpointing turns prefix sharing off
        handle = model.model.register_forward_hook(lambda module, args, out: calls.append(1))
        calls.clear()
        lp, _ = step(list(range(sub.size)))
        lp.sum().backward()
        handle.remove()
        assert len(calls) == 1
    model, batch = _grouped_batch(tiny_model)  # a fresh model: no activation checkpointing
    model = prepare_for_training(model, gradient_checkpointing=False)
    handle = model.model.register_forward_hook(lambda module, args, out: calls.append(1))
    for window, forwards in ((batch.input_ids.shape[1] - 1, 1), (batch.input_ids.shape[1], 2)):
        model.config.sliding_window = window  # as Mistral's: a window shorter than the rows is not shared
        calls.clear()
        StepForward(model, batch, temperature=1.0, bf16=False, chunk_size=256, fast=True)(list(range(batch.size)))
        assert len(calls) == forwards
    del model.config.sliding_window
    handle.remove()


def test_lower_block_cache_gives_the_full_forward_values_and_gradients(tiny_model):
    from searchrl.training.forward import FastForward, frozen_block_count, token_logprobs
    from searchrl.training.policy import prepare_for_training

    model, batch = _tiny_batch(tiny_model)
    model = prepare_for_training(model, gradient_checkpointing=False, dtype=torch.float64)  # same math: float64
    assert frozen_block_count(model) == 0 and not FastForward(model).has([0])  # everything trains: no cache
    model = prepare_for_training(model, gradient_checkpointing=False, train_layers=1, dtype=torch.float64)
    assert frozen_block_count(model) == 1
    rows = [0, 1]

    full_lp, full_ent = token_logprobs(model, batch, with_entropy=True)
    full_lp.sum().backward()
    full_grads = [p.grad.clone() for p in model.parameters() if p.requires_grad]
    model.zero_grad(set_to_none=True)

    cache = FastForward(model)
    with torch.no_grad():
        first, _ = cache.token_logprobs(rows, batch)  # records the states entering block 1
    assert cache.has(rows) and not cache.has([2])
    assert cache.states[0].shape == (int(batch.attention_mask[0].sum()), model.config.hidden_size)
    calls = []
    handle = model.model.layers[0].register_forward_hook(lambda *a: calls.append(1))
    cached_lp, cached_ent = cache.token_logprobs(rows, batch, with_entropy=True)  # starts at block 1
    handle.remove()
    assert calls == []  # the frozen block did not run
    assert len(model.model.layers) == 2  # the block list is restored
    cached_lp.sum().backward()
    # float64 (conftest.assert_same_math): the cached forward sums other shapes in another order
    assert_same_math(first, full_lp.detach())
    assert_same_math(cached_lp, full_lp)
    assert_same_math(cached_ent, full_ent)
    for got, want in zip([p.grad for p in model.parameters() if p.requires_grad], full_grads):
        assert_same_math(got, want)

@pytest.mark.parametrize("rows_kept", [None, [0, 2, 5]], ids=["repeated prompts", "all prompts distinct"])
def test_lower_block_cache_shares_prompts_with_the_padded_forward_values_and_gradients(tiny_model, rows_kept):
    """With frozen lower blocks and prompts that share a template (and some repeat): the recording forward and the
    cached forwards both run the prefix tree (one body forward per level, the cached ones from block 1), with
    the padded full forward's log-probs, entropies and gradients."""
    from searchrl.training.forward import FastForward, prefix_tree, token_logprobs
    from searchrl.training.policy import prepare_for_training

    template = "Answer the question. Search with <search>query</search>, then answer with <answer>answer</answer>.\n"
    model, batch = _grouped_batch(tiny_model, template, rows_kept)
    model = prepare_for_training(model, gradient_checkpointing=False, train_layers=1, dtype=torch.float64)
    rows = list(range(batch.size))

    def grads() -> list[torch.Tensor]:
        out = [p.grad.clone() for p in model.parameters() if p.requires_grad]
        model.zero_grad(set_to_none=True)
        return out

    plain_lp, plain_ent = token_logprobs(model, batch, with_entropy=True)
    (plain_lp.sum() + 0.1 * plain_ent.sum()).backward()
    plain_grads = grads()

    cache = FastForward(model)
    body_calls, lower_calls = [], []
    handles = [model.model.register_forward_hook(lambda *a: body_calls.append(1)),
               model.model.layers[0].register_forward_hook(lambda *a: lower_calls.append(1))]
    first_lp, first_ent = cache.token_logprobs(rows, batch, with_entropy=True)  # records, sharing the template
    (first_lp.sum() + 0.1 * first_ent.sum()).backward()
    first_grads = grads()
    levels = len(prefix_tree(batch).levels)
    assert len(body_calls) == levels == len(lower_calls) and cache.has(rows)
    for r in rows:
        assert cache.states[r].shape == (int(batch.attention_mask[r].sum()), model.config.hidden_size)
    body_calls.clear(), lower_calls.clear()
    cached_lp, cached_ent = cache.token_logprobs(rows, batch, with_entropy=True)  # from block 1, sharing again
    (cached_lp.sum() + 0.1 * cached_ent.sum()).backward()
    cached_grads = grads()
    assert len(body_calls) == levels and lower_calls == []  # the frozen block did not run
    assert len(model.model.layers) == 2 and [b.self_attn.layer_idx for b in model.model.layers] == [0, 1]
    for lp, ent, got_grads in ((first_lp, first_ent, first_grads), (cached_lp, cached_ent, cached_grads)):
        assert_same_math(lp, plain_lp)  # float64: the same math in other layouts (conftest)
        assert_same_math(ent, plain_ent)
        for got, want in zip(got_grads, plain_grads):
            assert_same_math(got, want)
    for handle in handles:
        handle.remove()

def test_weight_cast_cache_casts_each_weight_once_with_the_same_gradients(tiny_model, weight_casts):
    """Two micro-batches' bf16 forwards and backwards (as one optimiser update runs them) cast the weights once
    inside `weight_cast_cache`, and twice without it; the gradients are the same, and the code between forwards
    (loss, backward) runs with autocast off either way."""
    from contextlib import nullcontext

    from searchrl.training.forward import token_logprobs
    from searchrl.training.forward import sub_batch
    from searchrl.training.forward import weight_cast_cache
    from searchrl.training.policy import autocast, prepare_for_training

    model, batch = _grouped_batch(tiny_model)
    model = prepare_for_training(model, gradient_checkpointing=False)
    micro_batches = [sub_batch(batch, [0, 1, 2]), sub_batch(batch, [3, 4, 5])]

    def update(cached: bool) -> tuple[int, list[torch.Tensor]]:
        model.zero_grad(set_to_none=True)
        with weight_casts(model) as casts, weight_cast_cache(True, "cpu") if cached else nullcontext():
            for sub in micro_batches:
                with autocast(True, "cpu"):
                    log_probs, _ = token_logprobs(model, sub)
                assert not torch.is_autocast_enabled("cpu")
                log_probs.sum().backward()
        assert not torch.is_autocast_enabled("cpu")
        return casts.count, [p.grad.clone() for p in model.parameters()]

    per_forward, plain = update(cached=False)
    once, cached = update(cached=True)
    assert once > 0 and per_forward == 2 * once
    for got, want in zip(cached, plain):
        # Bit for bit: the same bf16 copies through the same kernels on the same shapes, accumulated in the same
        # order (checked under AMX, AVX512-BF16, AVX2 and scalar dispatch)
        assert torch.equal(got, want)
    with weight_casts(model) as casts, weight_cast_cache(False, "cpu"), autocast(False, "cpu"):
        token_logprobs(model, micro_batches[0])
    assert casts.count == 0  # bf16 off: neither casts

def test_training_with_frozen_lower_blocks_matches_the_plain_run(tiny_model, tmp_path, monkeypatch):
    """`train.fast_forward` on (the lower-block cache filled from the sampler's states, prefix sharing, π_old
    reuse) against off (the plain padded forward everywhere), whole runs metric by metric, in float64 (the same
    math in other shapes)."""
    from searchrl.training import forward
    from searchrl.training.run import train

    def run(name: str, fast: bool) -> list[dict]:
        cfg = load_config("demo", tiny_overrides(tiny_model, tmp_path / name, train__train_layers=1,
                                                 train__steps=2, train__micro_batch_size=2, train__group_size=4,
                                                 train__mini_batch_size=4, train__fast_forward=str(fast).lower(),
                                                 **FLOAT64_RUN))
        train(cfg, console=False)
        return rows_without_time(tmp_path / name / "metrics.jsonl")

    starts = []
    real = forward.FastForward.token_logprobs

    def recording(self, rows, *args, **kwargs):
        starts.append(self.has(rows))  # a forward that starts above the frozen block
        return real(self, rows, *args, **kwargs)

    monkeypatch.setattr(forward.FastForward, "token_logprobs", recording)
    fast = run("fast", True)
    assert starts and all(starts)  # every forward started above the frozen block, from the sampler's states
    starts.clear()
    plain = run("plain", False)
    assert not starts  # the plain path never enters the fast forward
    assert [r["actor/updates"] for r in fast] == [2, 2]
    assert_same_metrics(fast, plain)


def test_training_with_groups_together_matches_the_padded_forward(tiny_model, tmp_path, monkeypatch):
    """A run whose micro-batches hold whole groups shares each prompt's forward; in float64 (the same math in
    another layout) it trains as the plain padded forward does, metric by metric."""
    from searchrl.training import forward
    from searchrl.training.run import train

    def run(name: str, fast: bool) -> list[dict]:
        cfg = load_config("demo", tiny_overrides(tiny_model, tmp_path / name, train__steps=2, train__group_size=4,
                                                 train__mini_batch_size=4, train__micro_batch_size=4,
                                                 train__keep_groups_together="true", checkpoint__every=0,
                                                 train__fast_forward=str(fast).lower(), log__samples_every=0,
                                                 **FLOAT64_RUN))
        train(cfg, console=False)
        return rows_without_time(tmp_path / name / "metrics.jsonl")

    trees = []
    real_tree = forward.prefix_tree
    monkeypatch.setattr(forward, "prefix_tree", lambda batch: trees.append(real_tree(batch)) or trees[-1])
    shared = run("shared", True)
    assert trees and all(t is not None and len(t.levels[0]) == 1 for t in trees)  # one prompt per micro-batch
    trees.clear()
    padded = run("padded", False)
    assert not trees
    assert_same_metrics(shared, padded)
