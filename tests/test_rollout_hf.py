"""The transformers backend: KV-cache continuation equals a full re-encode, exact log-probs, per-row stop.

Uses a tiny randomly initialised llama (no download); one slow test runs the real SmolLM2-135M-Instruct with a
BM25 index over the real NQ sample.

Precision (tests/README.md): the tests of the cache's logic (a cached or batched decode against a full forward or
another batching) run the tiny model in float64 (`tiny64`), where the greedy token is the full forward's argmax
and log-probs agree to `same_math`; the tests of the float32 kernels themselves (the oneDNN-packed linears, used in
float32 only) and of bf16 sampling keep `tiny` in float32 with tolerances derived from the magnitudes involved.
"""

from __future__ import annotations

import json
import os

import pytest
import torch

from conftest import EPS32, assert_same_math, float32_logprob_tolerance, same_math

from searchrl.data import Question
from searchrl.models import build_tiny_random_model, load_policy
from searchrl.protocol import ProtocolConfig, encode_text
from searchrl.retrieval import Hit
from searchrl.rollout import HFBackend, RolloutConfig, RolloutEngine, SamplingParams, full_forward_logprobs
from searchrl.rollout.backend import sample_tokens



pytestmark = pytest.mark.usefixtures("float64_norms")  # conftest.py: float64 models compute in float64


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # On a shared 2-core machine, two intra-op threads wait on each other at every small op (measured: a
    # 6x576x1536 linear takes 0.8 ms on 1 thread and 10 ms on 2 under load); these tests run small batches.
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    # initializer_range 0.5 gives peaked next-token distributions, so greedy decoding has clear winners.
    return build_tiny_random_model(tmp_path_factory.mktemp("tiny") / "m", initializer_range=0.5, seed=3)


@pytest.fixture(scope="module")
def tiny(tiny_path):
    """The tiny model in float32: for the float32 (oneDNN-packed) and bf16 kernels themselves."""
    return load_policy(tiny_path)


@pytest.fixture(scope="module")
def tiny64(tiny_path):
    """The same weights in float64: for the cache's logic against a full forward (same math, two code paths).
    Float32 runs of two paths differ by up to 4e-5 in log-probs and this model has greedy near-ties down to 3e-3
    between its two best tokens; in float64 (with conftest's `float64_norms`) two paths differ by ~1e-14."""
    model, tok = load_policy(tiny_path, dtype=torch.float64)
    assert next(model.parameters()).dtype == torch.float64
    return model, tok


class EchoRetriever:
    def search(self, queries: list[str], topk: int = 3) -> list[list[Hit]]:
        return [[Hit(f"d{i}", "T", f"passage {i} for {q}", f'"T"\npassage {i} for {q}') for i in range(topk)]
                for q in queries]


def _prompts(tok) -> list[list[int]]:
    return [
        tok.encode("hello there, how are you today?"),
        tok.encode("hello there, how are you today?"),  # same prompt: prefilled once, shared
        tok.encode("a"),  # a one-token prompt: nothing to prefill before the first step
        tok.encode("the quick brown fox jumps over the lazy dog and then some more words follow here"),
        tok.encode("short one"),
    ]


def _run_session(model, tok, prompts, *, greedy=True, temperature=1.0, seed=0, **backend_kw):
    """Two turns with different observations per row; returns each row's full sequence and per-token logprobs."""
    backend = HFBackend(model, tok, **backend_kw)
    session = backend.open_session(prompts, SamplingParams(temperature=temperature, greedy=greedy, seed=seed))
    rows = list(range(len(prompts)))
    seqs = [list(p) for p in prompts]
    sampled: list[list[tuple[int, int, float]]] = [[] for _ in prompts]  # (position, token, logprob)
    first = session.generate(rows, [5, 9, 3, 7, 4], [])
    observations = [encode_text(f" observation {i} " + "word " * (3 * i), tok) for i in rows]
    extend_rows = [0, 1, 3, 4]  # row 2 continues with no observation (only its last sampled token is pending)
    for row, gen in zip(rows, first):
        sampled[row] += [(len(seqs[row]) + k, t, lp) for k, (t, lp) in enumerate(zip(gen.token_ids, gen.logprobs))]
        seqs[row] += gen.token_ids
    session.extend(extend_rows, [observations[r] for r in extend_rows])
    for r in extend_rows:
        seqs[r] += observations[r]
    order = [3, 0, 4, 2, 1]
    second = session.generate(order, [6, 2, 8, 5, 3], [])
    for row, gen in zip(order, second):
        sampled[row] += [(len(seqs[row]) + k, t, lp) for k, (t, lp) in enumerate(zip(gen.token_ids, gen.logprobs))]
        seqs[row] += gen.token_ids
    session.close()
    return seqs, sampled, first + second


def _full_logprobs(model, seq: list[int], temperature: float = 1.0) -> torch.Tensor:
    """(T, V) log-probs of one full forward, in the model's precision (at least float32: float64 stays float64)."""
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([seq], device=model.device)).logits[0]  # (T, V)
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
    return torch.log_softmax(logits / temperature, dim=-1).cpu()


def _assert_chosen_within(full: torch.Tensor, tol: torch.Tensor, position: int, token: int, logprob: float) -> None:
    """float32 form of "the greedy token is the full forward's argmax, with its log-prob": the chosen token's
    full-forward log-prob is within `tol` of the maximum (a near-tie may go either way under another summation
    order), and the sampled log-prob within `tol` of the full forward's."""
    row, bound = full[position - 1], float(tol[position - 1])
    assert float(row.max() - row[token]) <= bound, (position, token, float(row.max() - row[token]), bound)
    assert abs(float(row[token]) - logprob) <= bound, (position, token, float(row[token]) - logprob, bound)


# kv_bucket 16: attention over bucketed key lengths (a GPU's default is 64), the extra columns masked; with
# prefill_tokens 2 every prefill chunk is one column wide while the chunks after it are already marked real.
@pytest.mark.parametrize(("kv_bucket", "prefill_tokens"), [(None, 24), (16, 24), (16, 2), (None, 2), (1, 2)])
def test_kv_cache_continuation_equals_a_full_re_encode(tiny64, kv_bucket, prefill_tokens):
    model, tok = tiny64  # float64: the same math as the full forward, so exact argmax and tight log-probs
    seqs, sampled, gens = _run_session(model, tok, _prompts(tok), greedy=True, prefill_tokens=prefill_tokens,
                                       max_batch_size=3, kv_bucket=kv_bucket)
    assert all(g.finish == "length" for g in gens)
    for row, seq in enumerate(seqs):
        full = _full_logprobs(model, seq)
        assert full.dtype == torch.float64
        for position, token, logprob in sampled[row]:
            assert int(full[position - 1].argmax()) == token  # greedy picks the full forward's argmax
            assert same_math(logprob, float(full[position - 1, token]))


@pytest.mark.parametrize("greedy", [True, False])
@pytest.mark.parametrize("kv_bucket", [None, 16])
def test_static_decode_gives_the_shrinking_batch_tokens_and_logprobs(tiny64, greedy, kv_bucket):
    # The fixed-shape decode step (captured as a CUDA graph on a GPU) runs eagerly on the CPU: every slot in every
    # step, attention over the whole capacity. It samples its live rows in the shrinking batch's order, so the
    # same seed draws the same tokens. Float64: attention over other widths sums in another order, which in
    # float32 could flip a near-tie or a draw at a CDF boundary.
    model, tok = tiny64
    kw = dict(greedy=greedy, seed=4, max_batch_size=3, kv_bucket=kv_bucket)
    want, want_sampled, want_gens = _run_session(model, tok, _prompts(tok), **kw)
    got, got_sampled, got_gens = _run_session(model, tok, _prompts(tok), static_decode=True, **kw)
    assert got == want
    assert [g.finish for g in got_gens] == [g.finish for g in want_gens]
    for row_got, row_want in zip(got_sampled, want_sampled):
        assert [(p, t) for p, t, _ in row_got] == [(p, t) for p, t, _ in row_want]
        assert all(same_math(a[2], b[2]) for a, b in zip(row_got, row_want))


def test_a_failed_graph_capture_warns_and_decodes_eagerly(tiny64, monkeypatch):
    # On a GPU a capture can fail for an architecture whose forward a CUDA graph cannot hold; the rollout must warn,
    # finish the batch with the fixed-shape step run eagerly, and decode later batches the usual way. The capture is
    # forced here (the CPU never captures) and made to fail.
    from searchrl.rollout import hf

    model, tok = tiny64  # float64: the fixed-shape and the shrinking batch draw the same tokens (see above)
    kw = dict(greedy=False, seed=4, max_batch_size=3)
    want, _, _ = _run_session(model, tok, _prompts(tok), **kw)

    def failing_capture(self, bf16):
        raise RuntimeError("operation not permitted when stream is capturing")

    real_init = hf._StaticDecode.__init__
    backends = []

    def init_then_capture(self, session, buffer):
        real_init(self, session, buffer)
        backends.append(session.backend)
        self._try_capture(session.backend)

    monkeypatch.setattr(hf._StaticDecode, "_capture", failing_capture)
    monkeypatch.setattr(hf._StaticDecode, "__init__", init_then_capture)
    with pytest.warns(RuntimeWarning, match="capturing the decode step failed"):
        got, _, _ = _run_session(model, tok, _prompts(tok), static_decode=True, **kw)
    assert got == want
    assert len(backends) == 1 and not backends[0].static_decode  # one attempt; the later batches decoded eagerly


def test_bf16_sampling_keeps_a_bf16_cache_and_matches_a_bf16_full_forward(tiny):
    # rollout.bf16: forwards under bf16 autocast, the KV cache in bf16, no fp32 weight packing. The cache then
    # rounds keys and values to bf16 where a full forward keeps some in float32, so log-probs agree to bf16's
    # resolution only; the sampled tokens are the full forward's argmax wherever it wins by a clear margin.
    model, tok = tiny
    backend = HFBackend(model, tok, bf16=True)
    assert backend.bf16 and not backend.pack_weights
    session = backend.open_session(_prompts(tok), SamplingParams(greedy=True))
    session.generate([0], [2], [])
    assert session.cached[0].dtype == torch.bfloat16
    assert next(model.parameters()).dtype == torch.float32  # the weights are untouched
    seqs, sampled, gens = _run_session(model, tok, _prompts(tok), greedy=True, bf16=True, max_batch_size=3)
    assert all(g.finish == "length" for g in gens)
    checked, worst = 0, 0.0
    for seq, row in zip(seqs, sampled):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            full = _full_logprobs(model, seq)
        for position, token, logprob in row:
            worst = max(worst, abs(float(full[position - 1, token]) - logprob))
            top2 = full[position - 1].topk(2).values
            if float(top2[0] - top2[1]) > 0.5:
                assert int(full[position - 1].argmax()) == token
                checked += 1
    assert checked > len(sampled)  # the argmax check ran on most positions, not on none
    assert worst < 0.25  # measured 0.10: this model's logits reach tens, where bf16's spacing is 0.125-0.25


def test_bf16_sampling_casts_each_weight_once_per_call(tiny, weight_casts):
    # Autocast caches its bf16 copies of the weights under no_grad but not under inference mode, where every
    # decode step would cast the whole model again.
    model, tok = tiny
    counts = []
    for tokens in (2, 8):
        session = HFBackend(model, tok, bf16=True).open_session(_prompts(tok)[:2], SamplingParams(greedy=True))
        with weight_casts(model) as casts:
            gens = session.generate([0, 1], [tokens, tokens], [])
        assert [len(g.token_ids) for g in gens] == [tokens, tokens]
        counts.append(casts.count)
        session.close()
    weights = sum(1 for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert counts[0] == counts[1] and weights <= counts[0] <= 2 * weights  # weights (and biases), once a call


def test_batching_and_chunking_do_not_change_results(tiny64):
    model, tok = tiny64  # float64: other batch shapes sum in another order; float32 could flip a greedy near-tie
    prompts = _prompts(tok)
    reference, _, _ = _run_session(model, tok, prompts, greedy=True)
    chunked, _, _ = _run_session(model, tok, prompts, greedy=True, prefill_tokens=8, max_batch_size=2)
    assert chunked == reference
    one_row_batches, _, _ = _run_session(model, tok, prompts, greedy=True, max_cache_bytes=1)  # memory cap
    assert one_row_batches == reference
    for row in (2, 3):  # a row alone (its prompt in every slot) decodes as it did within the mixed batch
        alone, _, _ = _run_session(model, tok, [prompts[row]] * 5, greedy=True)
        assert alone[row] == reference[row]


def test_a_prompt_prefix_shared_by_all_questions_is_encoded_once(tiny64):
    model, tok = tiny64  # float64: the shared prefix's cache against a full forward (same math)
    template = "You answer questions. Think, search, then answer in tags. Be brief and exact. Question: "
    prompts = [tok.encode(template + q) for q in ("who wrote hamlet?", "capital of peru?", "tallest mountain?")]
    prompts = [p for p in prompts for _ in range(2)]  # G = 2
    backend = HFBackend(model, tok)
    session = backend.open_session(prompts, SamplingParams(greedy=True))
    gens = session.generate(list(range(6)), [6] * 6, [])
    unique = [p[:-1] for p in prompts[::2]]
    shared = len(os.path.commonprefix(unique))
    assert shared >= 16
    expected = shared + sum(len(p) - shared for p in unique) + len(prompts)  # + each row's last prompt token
    assert backend.stats["prefill_tokens"] == expected
    for prompt, gen in zip(prompts, gens):
        full = _full_logprobs(model, prompt + gen.token_ids)
        for k, (token, logprob) in enumerate(zip(gen.token_ids, gen.logprobs)):
            assert int(full[len(prompt) + k - 1].argmax()) == token
            assert same_math(logprob, float(full[len(prompt) + k - 1, token]))


def _turns_with_a_shared_observation(model, tok, **backend_kw):
    """Three rows of one prompt and one of another, greedy: the first three make the same first turn, so after the
    same observation their histories are equal; the fourth reads a longer one. Returns the backend, the session
    (open: its recorded states stay readable) and each row's tokens with (position, token, log-prob) samples."""
    prompts = [tok.encode("hello there, how are you today?")] * 3 + [tok.encode("short one")]
    backend = HFBackend(model, tok, **backend_kw)
    session = backend.open_session(prompts, SamplingParams(greedy=True))
    seqs = [list(p) for p in prompts]
    sampled: list[list[tuple[int, int, float]]] = [[] for _ in prompts]
    observations = [encode_text(" the same passage " + "word " * 12, tok)] * 3 + [encode_text(" another " * 20, tok)]
    for turn, budget in enumerate((4, 5)):
        for row, gen in enumerate(session.generate(range(4), [budget] * 4, [])):
            sampled[row] += [(len(seqs[row]) + k, t, lp) for k, (t, lp) in enumerate(zip(gen.token_ids, gen.logprobs))]
            seqs[row] += gen.token_ids
        if turn == 0:
            session.extend(range(4), observations)
            for row in range(4):
                seqs[row] += observations[row]
    return backend, session, seqs, sampled


def test_equal_histories_encode_their_observation_once(tiny64):
    """Rows whose histories are equal (the same prompt, first turn and observation) encode that observation once;
    what they sample next matches a full forward of each row, as without the sharing."""
    model, tok = tiny64  # float64: the shared cache against a full forward (same math)
    backend, session, seqs, sampled = _turns_with_a_shared_observation(model, tok)
    assert seqs[0] == seqs[1] == seqs[2] != seqs[3]  # greedy: the three rows stay equal
    shared, other = len(encode_text(" the same passage " + "word " * 12, tok)), len(encode_text(" another " * 20, tok))
    # The second turn encodes, once per distinct history, the last sampled token and the observation less its last
    # token, then each row's last observation token in its own row: 1 + (n - 1) per distinct history, 1 per row.
    second_turn = backend.stats["prefill_tokens"]
    session.close()
    first_turn = HFBackend(model, tok)
    first = first_turn.open_session([tok.encode("hello there, how are you today?")] * 3 + [tok.encode("short one")],
                                    SamplingParams(greedy=True))
    first.generate(range(4), [4] * 4, [])
    assert second_turn - first_turn.stats["prefill_tokens"] == shared + other + 4  # without sharing: 3 * shared + ...
    for row, seq in enumerate(seqs):
        full = _full_logprobs(model, seq)
        for position, token, logprob in sampled[row]:
            assert int(full[position - 1].argmax()) == token
            assert same_math(logprob, float(full[position - 1, token]))


def test_recorded_states_are_the_full_forwards_hidden_states(tiny64):
    """With `record_states_at = k` each row's states are the hidden states entering block k of one full forward of
    its tokens, at every encoded position (shared prompts and observations included), zero at the last one."""
    model, tok = tiny64
    _, session, seqs, _ = _turns_with_a_shared_observation(model, tok)
    assert session.states(0, len(seqs[0])) is None  # not recorded unless asked
    for k, batch in ((1, 64), (1, 2)):  # batches of 2 rows: the shrinking batch moves rows between slots
        backend = HFBackend(model, tok, max_batch_size=batch)
        backend.record_states_at = k
        prompts = [tok.encode("hello there, how are you today?")] * 3 + [tok.encode("short one")]
        session = backend.open_session(prompts, SamplingParams(greedy=True))
        seqs = [list(p) for p in prompts]
        for turn, budgets in enumerate(([4, 4, 4, 2], [5, 3, 6, 4])):  # rows stop at different steps
            for row, gen in enumerate(session.generate(range(4), budgets, [])):
                seqs[row] += gen.token_ids
            if turn == 0:
                obs = [encode_text(" the same passage " + "word " * 12, tok)] * 3 + [encode_text(" x " * 9, tok)]
                session.extend(range(4), obs)
                for row in range(4):
                    seqs[row] += obs[row]
        session.close()  # the recorded states outlive the caches
        for row, seq in enumerate(seqs):
            with torch.inference_mode():
                want = model(input_ids=torch.tensor([seq]), output_hidden_states=True).hidden_states[k][0]
            got = session.states(row, len(seq))
            assert got.shape == want.shape
            assert_same_math(got[:-1], want[:-1])  # every token but the last sampled one was encoded
            assert (got[-1] == 0).all()


def test_sampling_logprobs_match_a_full_forward(tiny64):
    model, tok = tiny64  # float64: the cached, tempered log-probs against a full forward (same math)
    seqs, sampled, _ = _run_session(model, tok, _prompts(tok), greedy=False, temperature=0.7, seed=11)
    for row, seq in enumerate(seqs):
        full = _full_logprobs(model, seq, temperature=0.7)
        for position, token, logprob in sampled[row]:
            assert same_math(logprob, float(full[position - 1, token]))


def test_per_row_stop_strings(tiny):
    model, tok = tiny
    prompts = [tok.encode(f"prompt number {i} with text") for i in range(6)]
    session = HFBackend(model, tok).open_session(prompts, SamplingParams(seed=5))
    gens = session.generate(list(range(6)), [40] * 6, ["e"])
    lengths = set()
    for gen in gens:
        text = tok.decode(gen.token_ids)
        if gen.finish == "stop":
            assert "e" in text and "e" not in tok.decode(gen.token_ids[:-1])
        else:
            assert gen.finish in ("length", "eos")
        lengths.add(len(gen.token_ids))
    assert any(g.finish == "stop" for g in gens) and len(lengths) > 1  # rows stop independently


def test_engine_with_the_hf_backend_is_token_exact_and_seeded(tiny64):
    model, tok = tiny64  # float64: the engine's log-probs against a full forward (same math)
    questions = [Question("1", "who wrote hamlet", ["Shakespeare"], "nq"),
                 Question("2", "capital of peru", ["Lima"], "nq")]
    cfg = RolloutConfig(max_turns=2, max_turn_tokens=10, temperature=0.8, seed=7)
    engine = RolloutEngine(HFBackend(model, tok), tok, EchoRetriever(), ProtocolConfig(), cfg)
    trajs = engine.run(questions, group_size=2)
    assert len(trajs) == 4 and {t.finish_reason for t in trajs} <= {"length", "max_turns", "answer"}
    for traj in trajs:
        assert tok.decode(traj.response_ids) == "".join(
            t.text + o for t, o in zip(traj.turns, traj.extras["observations"]))
        full = _full_logprobs(model, traj.prompt_ids + traj.response_ids, temperature=0.8)
        for k, (mask, logprob) in enumerate(zip(traj.response_mask, traj.sampling_logprobs)):
            position = len(traj.prompt_ids) + k
            if mask:
                assert same_math(logprob, float(full[position - 1, traj.response_ids[k]]))
            else:
                assert logprob == 0.0
    again = RolloutEngine(HFBackend(model, tok), tok, EchoRetriever(), ProtocolConfig(), cfg).run(questions, 2)
    assert [t.response_ids for t in again] == [t.response_ids for t in trajs]  # same seed, same samples
    second_run = engine.run(questions, 2)  # the next run of one engine uses the next seed
    assert [t.response_ids for t in second_run] != [t.response_ids for t in trajs]


def test_packed_weights_match_stock_linears_and_are_restored(tiny, monkeypatch):
    """The oneDNN-packed linears give the same greedy tokens and log-probs as torch's F.linear, and the model's
    own forward is back in place afterwards (the trainer shares the model).

    Float32 on purpose: the packed kernels run float32 weights only. The two kernels sum in different orders, so
    "the same" means within `float32_logprob_tolerance` (derived from the logits' magnitudes); the greedy tokens
    are the same up to the first near-tie (two best tokens within that tolerance), where either may win."""
    model, tok = tiny
    prompts = _prompts(tok)
    if not HFBackend(model, tok).pack_weights:
        pytest.skip("this torch build has no oneDNN")
    from searchrl.rollout import hf

    packed_calls = []  # the packed products run, so that the packed session is known to have used them
    real_linear = hf._onednn_linear

    def counting_linear(packed, bias):
        forward = real_linear(packed, bias)
        return lambda x: packed_calls.append(1) or forward(x)

    monkeypatch.setattr(hf, "_onednn_linear", counting_linear)
    stock, stock_sampled, _ = _run_session(model, tok, prompts, greedy=True, pack_weights=False)
    assert not packed_calls
    packed, packed_sampled, _ = _run_session(model, tok, prompts, greedy=True, pack_weights=True)
    assert packed_calls
    compared = 0
    for seq, row_stock, row_packed in zip(stock, stock_sampled, packed_sampled):
        full = _full_logprobs(model, seq)  # the stock kernels' full forward of the stock sequence
        tol = float32_logprob_tolerance(model, seq)
        for (position, token_s, lp_s), (position_p, token_p, lp_p) in zip(row_stock, row_packed):
            assert position_p == position
            bound = float(tol[position - 1])
            if token_p != token_s:  # allowed at a near-tie only; the two contexts differ from here on
                assert float(full[position - 1, token_s] - full[position - 1, token_p]) <= bound
                break
            assert abs(lp_p - lp_s) <= bound, (position, lp_p - lp_s, bound)
            compared += 1
    assert compared > len(prompts)  # not vacuous
    for seq, row in zip(packed, packed_sampled):  # every packed token is the full forward's argmax, within tol
        full, tol = _full_logprobs(model, seq), float32_logprob_tolerance(model, seq)
        for position, token, logprob in row:
            _assert_chosen_within(full, tol, position, token, logprob)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert linears and all("forward" not in vars(m) for m in linears)


def test_packed_weights_follow_in_place_weight_updates(tiny):
    """An optimizer step between rollouts changes the weights in place: the next session on the same backend
    must sample from the new weights."""
    import copy

    model, tok = copy.deepcopy(tiny[0]), tiny[1]
    backend = HFBackend(model, tok)
    if not backend.pack_weights:
        pytest.skip("this torch build has no oneDNN")
    prompt = tok.encode("hello there, how are you today?")

    def greedy_run() -> tuple[list[int], list[float]]:
        session = backend.open_session([prompt], SamplingParams(greedy=True))
        gen = session.generate([0], [6], [])[0]
        session.close()
        return gen.token_ids, gen.logprobs

    before = greedy_run()
    # A real fused AdamW step (the trainer's optimizer): it updates the weights in place without bumping their
    # version counters, so nothing but a fresh pack per session can notice.
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.05, fused=True)
    model(input_ids=torch.tensor([prompt])).logits.logsumexp(-1).mean().backward()
    optimizer.step()
    tokens, logprobs = greedy_run()
    assert (tokens, logprobs) != before
    # Float32 (the packed kernels' precision): within the derived tolerance of the updated model's full forward;
    # packs of the old weights would be off by far more (the lr 0.05 step moves log-probs by O(1)).
    full = _full_logprobs(model, prompt + tokens)
    tol = float32_logprob_tolerance(model, prompt + tokens)
    for k, (token, logprob) in enumerate(zip(tokens, logprobs)):
        _assert_chosen_within(full, tol, len(prompt) + k, token, logprob)


def _close_to_exact(got: torch.Tensor, exact: torch.Tensor, z: torch.Tensor) -> bool:
    """float32 log-probs `got` against their float64 values `exact`: a log-softmax of logits z subtracts numbers of
    size <= max|z| (the row's max and its logsumexp), each rounding by <= EPS32/2 of that, so 8·EPS32·max|z| per
    row bounds the float32 rounding with room (~1e-5 at max|z| = 10; a wrong formula is off by > 1e-2)."""
    bound = 8 * EPS32 * z.abs().amax(-1).double()
    return bool(((got.double() - exact).abs() <= bound).all())


def test_sample_tokens_filters():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(64, 50, generator=gen) * 3  # (B, V)
    greedy_tokens, greedy_lp = sample_tokens(logits, SamplingParams(greedy=True), gen)
    assert torch.equal(greedy_tokens, logits.argmax(-1))
    assert _close_to_exact(greedy_lp, torch.log_softmax(logits.double(), -1).max(-1).values, logits)
    top1, lp1 = sample_tokens(logits, SamplingParams(top_k=1), gen)
    assert torch.equal(top1, greedy_tokens) and torch.allclose(lp1, torch.zeros(64), atol=1e-6)
    tokens, lp = sample_tokens(logits, SamplingParams(top_k=5, temperature=0.5), gen)
    assert (logits.topk(5).indices == tokens[:, None]).any(-1).all()
    z = logits / 0.5  # exact in float32 (a power of two)
    kth = z.topk(5).values[:, -1:]
    expected = torch.log_softmax(z.masked_fill(z < kth, float("-inf")).double(), -1).gather(1, tokens[:, None])
    assert _close_to_exact(lp, expected.squeeze(1), z)
    # top-p: the kept set is the smallest prefix of the sorted distribution whose mass reaches p.
    probs = torch.softmax(logits.double(), -1)  # float64: the exact distribution
    tokens, lp = sample_tokens(logits, SamplingParams(top_p=0.5), gen)
    for row in range(64):
        order = probs[row].argsort(descending=True)
        mass = probs[row][order].cumsum(0)
        assert float((mass - 0.5).abs().min()) > 1e-4  # no token sits at the p boundary (where float32 may differ)
        kept = order[: int((mass < 0.5).sum()) + 1]
        assert int(tokens[row]) in kept.tolist()
        exact = torch.log(probs[row, tokens[row]] / probs[row, kept].sum())
        assert _close_to_exact(lp[row], exact, logits[row])


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sample_tokens_draws_what_the_plain_inverse_cdf_draws(temperature):
    """The in-place sampler against the formula written plainly: the same tokens and log-probs from the same
    generator state, and the caller's logits left as they were."""
    logits = torch.randn(16, 3000, generator=torch.Generator().manual_seed(2)) * 4  # (B, V)
    logits[:, 7] = float("-inf")  # a filtered token
    before = logits.clone()
    ours, oracle = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    for _ in range(5):
        tokens, lp = sample_tokens(logits, SamplingParams(temperature=temperature), ours)
        z = logits / temperature
        z_max = z.max(dim=-1, keepdim=True).values
        cdf = torch.exp(z - z_max).double().cumsum(dim=-1)
        u = torch.rand(z.shape[0], 1, generator=oracle, dtype=torch.float64) * cdf[:, -1:]
        expected = torch.searchsorted(cdf, u, right=True).clamp_(max=z.shape[-1] - 1).squeeze(1)
        assert torch.equal(tokens, expected)
        assert torch.equal(lp, (z.gather(1, expected[:, None]) - z_max - torch.log(cdf[:, -1:]).float()).squeeze(1))
    assert torch.equal(logits, before)


def test_sampling_follows_the_distribution():
    """Empirical frequencies of 40,000 draws match softmax(logits / T) (and the filtered one with top-k)."""
    gen = torch.Generator().manual_seed(1)
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0, float("-inf"), 0.5]]).repeat(40_000, 1)  # (B, V)
    tokens, lp = sample_tokens(logits, SamplingParams(temperature=0.8), gen)
    expected = torch.softmax(logits[0] / 0.8, -1)
    freq = torch.bincount(tokens, minlength=6).double() / len(tokens)
    assert float((freq - expected).abs().max()) < 0.01  # ~4 standard errors at these probabilities
    assert freq[4] == 0  # a zero-probability token is never drawn
    assert torch.allclose(lp, torch.log(expected[tokens]).float(), atol=1e-5)
    tokens, _ = sample_tokens(logits, SamplingParams(top_k=2), gen)
    freq = torch.bincount(tokens, minlength=6).double() / len(tokens)
    assert set(tokens.unique().tolist()) == {0, 1}
    assert abs(float(freq[0]) - float(torch.softmax(torch.tensor([2.0, 1.0]), -1)[0])) < 0.01


@pytest.mark.slow
def test_real_smollm2_with_bm25_over_nq(qa_samples, tmp_path):
    """The default model, a real BM25 index over the NQ sample, a batch of multi-turn trajectories."""
    model, tok = load_policy("default")
    retriever = _bm25_retriever(qa_samples / "nq_oracle" / "corpus.jsonl", tmp_path)
    rows = [json.loads(line) for line in (qa_samples / "nq_oracle" / "questions.jsonl").open()][:3]
    questions = [Question(str(r["id"]), r["question"], list(r["golden_answers"]), "nq") for r in rows]
    # The 135M model needs scaffolding to act: a one-shot demo and its first action opened (cpu-feasibility §1).
    protocol = ProtocolConfig(
        assistant_prefix="<search>",
        few_shot_question="who wrote the novel pride and prejudice",
        few_shot_response="<search>Pride and Prejudice author</search>\n\n<information>Doc 1(Title: \"Pride and "
        "Prejudice\") Pride and Prejudice is an 1813 novel by Jane Austen.</information>\n\n"
        "<answer>Jane Austen</answer>",
    )
    cfg = RolloutConfig(max_turns=2, max_turn_tokens=40, max_obs_tokens=160, temperature=0.7, seed=0)
    engine = RolloutEngine(HFBackend(model, tok), tok, retriever, protocol, cfg)
    trajs = engine.run(questions, group_size=2)
    assert len(trajs) == 6
    assert sum(t.num_searches for t in trajs) >= 3  # the scaffolding makes it search
    executed = [turn for t in trajs for turn in t.turns if turn.query is not None]
    assert executed and all(len(turn.doc_ids) == len(turn.docs) <= 3 for turn in executed)
    assert any(turn.doc_ids for turn in executed)  # a query sharing no word with the corpus gets no passage
    for traj in trajs:
        assert tok.decode(traj.response_ids) == "".join(
            t.text + o for t, o in zip(traj.turns, traj.extras["observations"]))
        assert len(traj.response_mask) == len(traj.response_ids) == len(traj.sampling_logprobs)
    traj = max(trajs, key=lambda t: len(t.response_ids))
    seq, start = traj.prompt_ids + traj.response_ids, len(traj.prompt_ids)
    full = _full_logprobs(model, seq, temperature=0.7)
    # Float32, the production kernels (oneDNN-packed, cached) against a full forward: the derived tolerance, for
    # logits divided by T = 0.7 (about 3e-3 / 0.7 here; measured differences <= 6e-5 on three CPU dispatches).
    tol = float32_logprob_tolerance(model, seq) / 0.7
    excess = [abs(float(full[start + k - 1, traj.response_ids[k]]) - lp) - float(tol[start + k - 1])
              for k, (m, lp) in enumerate(zip(traj.response_mask, traj.sampling_logprobs)) if m]
    assert excess and max(excess) <= 0


def _bm25_retriever(corpus, tmp_path):
    try:
        from searchrl.retrieval.index import load_retriever

        return load_retriever(corpus)
    except ImportError:  # the retrieval package is being written in parallel; fall back to bm25s directly
        import bm25s

        docs = [json.loads(line) for line in corpus.open()]
        index = bm25s.BM25()
        index.index(bm25s.tokenize([d["contents"] for d in docs], stopwords="en", show_progress=False),
                    show_progress=False)

        class _Retriever:
            def search(self, queries, topk=3):
                ids, scores = index.retrieve(bm25s.tokenize(queries, stopwords="en", show_progress=False),
                                             k=topk, show_progress=False)
                return [[Hit(str(docs[i]["id"]), docs[i].get("title", ""), docs[i].get("text", ""),
                             docs[i]["contents"], float(s)) for i, s in zip(row, srow)]
                        for row, srow in zip(ids.tolist(), scores.tolist())]

        return _Retriever()


def test_grouped_sdpa_attention_is_transformers_sdpa_over_repeated_heads():
    """The oracle: transformers' SDPA attention, which repeats the key/value heads under a mask, on the same
    float64 inputs (a prefill chunk of 5 queries over 9 keys with left padding, 4 query heads on 2 key/value
    heads), and a one-token query, which goes to transformers' own function."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from searchrl.rollout.hf import grouped_sdpa_attention

    class Attention(torch.nn.Module):
        num_key_value_groups = 2
        is_causal = True

    module = Attention()
    g = torch.Generator().manual_seed(0)
    for q_len in (5, 1):
        query = torch.randn(3, 4, q_len, 8, generator=g, dtype=torch.float64)
        key, value = (torch.randn(3, 2, 9, 8, generator=g, dtype=torch.float64) for _ in range(2))
        mask = torch.ones(3, 1, q_len, 9, dtype=torch.bool)
        mask[1, :, :, :3] = False  # a left-padded row
        mask[:, :, :, 9 - q_len:] &= torch.ones(q_len, q_len, dtype=torch.bool).tril()  # causal within the chunk
        got, _ = grouped_sdpa_attention(module, query, key, value, mask, scaling=8**-0.5)
        want, _ = sdpa_attention_forward(module, query, key, value, mask, scaling=8**-0.5)
        assert got.shape == want.shape == (3, q_len, 4, 8)
        assert_same_math(got, want)


def test_sessions_attend_with_grouped_sdpa_on_the_cpu_and_restore_the_models_setting(tiny64, monkeypatch):
    """Every prefill chunk of several tokens runs `grouped_sdpa_attention` while a session generates (the tiny
    model has 2 query heads per key/value head), one-token decode steps pass through it to transformers' own
    function, and the model's attention setting is "sdpa" again afterwards (the trainer's `cpu_attention`
    switches from it)."""
    import searchrl.rollout.hf as hf_module

    model, tok = tiny64
    calls = []
    real = hf_module.grouped_sdpa_attention

    def counting(module, query, *args, **kwargs):
        calls.append(query.shape[2])
        return real(module, query, *args, **kwargs)

    from transformers import AttentionInterface

    hf_module._register_grouped_sdpa()
    monkeypatch.setitem(AttentionInterface._global_mapping, hf_module.GROUPED_SDPA, counting)
    assert model.config._attn_implementation == "sdpa"
    backend = HFBackend(model, tok)
    session = backend.open_session([[5, 6, 7, 8, 9], [5, 6, 7, 10, 11, 12]], SamplingParams(greedy=True, seed=0))
    session.generate([0, 1], [4, 4], [])
    session.extend([0, 1], [[13, 14, 15], [16, 17]])
    session.generate([0, 1], [3, 3], [])
    assert model.config._attn_implementation == "sdpa"
    assert any(q > 1 for q in calls) and 1 in calls
