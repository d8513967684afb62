"""The replayed workload of benchmarks/bench_rollout.py: both rollout implementations do the recorded work exactly.

A sampled engine run of a tiny model (searches, observations, invalid actions, budget ends) is recorded; the engine
on a `ReplayBackend` reproduces every trajectory token for token, and the Search-R1-style loop driven by the same
record ends with the same contexts, so both sides emit the same number of tokens and read the same observations.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from test_rollout_hf import EchoRetriever

from searchrl.data import Question
from searchrl.models import build_tiny_random_model, load_policy
from searchrl.protocol import ProtocolConfig
from searchrl.rollout import HFBackend, RolloutConfig, RolloutEngine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from workload import ReplayBackend, load_workload, record, replay_search_r1_loop, save_workload  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


class CountingRetriever(EchoRetriever):
    def __init__(self) -> None:
        self.queries: list[str] = []

    def search(self, queries, topk=3):
        self.queries += queries
        return super().search(queries, topk)


# Turn texts per trajectory (G=2 per question): searches and observations, an answer, an invalid action (the
# notice is appended as an observation), a turn cut by its budget, and an unanswered last turn.
SCRIPTS = [
    ["<search> capital of peru</search>", "<answer> lima</answer>"],
    ["<search> peru</search>", "<search> lima city</search>", "<answer> lima</answer>"],
    ["<answer> x</answer>"],
    ["just thinking aloud", "<search> hamlet author</search>", "<answer> y</answer>"],
    ["<search> one</search>", "<search> two</search>", "<search> three</search>"],
    ["a turn that rambles on and on well past its token budget without any action at all"],
    ["<search> tallest mountain</search>", "no action here", "<answer> z</answer>"],
    ["<search> last</search>", "<answer> w</answer>"],
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    from searchrl.rollout import ScriptedBackend

    path = build_tiny_random_model(tmp_path_factory.mktemp("tiny_replay") / "m", seed=5)
    model, tok = load_policy(path)
    protocol = ProtocolConfig()
    cfg = RolloutConfig(max_turns=2, max_turn_tokens=12, max_obs_tokens=40, topk=2, temperature=1.0, seed=3)
    questions = [Question(str(i), f"question number {i}?", ["x"], "nq") for i in range(4)]
    # The recording: scripted turns (a random tiny model would rarely close a search tag) through the engine.
    scripted = ScriptedBackend(tok, SCRIPTS, logprob=0.0, eos_after_turn=True)
    trajectories = RolloutEngine(scripted, tok, EchoRetriever(), protocol, cfg).run(questions, 2)
    return model, tok, protocol, cfg, questions, trajectories


def test_the_record_holds_every_turn_and_observation(recorded):
    *_, trajectories = recorded
    workload = record(trajectories)
    for traj, replay in zip(trajectories, workload):
        assert replay.response_ids() == traj.response_ids
        assert replay.sampled_tokens == sum(traj.response_mask)
        assert [t.query for t in replay.turns] == [t.query for t in traj.turns]
    kinds = {t.action for tr in trajectories for t in tr.turns}
    assert {"search", "answer", "invalid"} <= kinds  # the workload has every kind of turn
    assert {tr.finish_reason for tr in trajectories} >= {"answer", "max_turns", "length"}


def test_the_engine_on_a_replay_backend_reproduces_the_recording(recorded):
    model, tok, protocol, cfg, questions, trajectories = recorded
    workload = record(trajectories)
    retriever = CountingRetriever()
    other_seed = RolloutConfig(**{**cfg.__dict__, "seed": 99})  # the replay, not the sampler, decides the tokens
    again = RolloutEngine(ReplayBackend(model, tok, workload), tok, retriever, protocol, other_seed).run(questions, 2)
    assert [t.response_ids for t in again] == [t.response_ids for t in trajectories]
    assert [t.response_mask for t in again] == [t.response_mask for t in trajectories]
    assert [t.finish_reason for t in again] == [t.finish_reason for t in trajectories]
    assert sorted(retriever.queries) == sorted(t.query for tr in trajectories for t in tr.turns if t.query is not None)


def test_the_search_r1_loop_replays_the_same_tokens_and_observations(recorded):
    model, tok, protocol, cfg, questions, trajectories = recorded
    workload = record(trajectories)
    retriever = CountingRetriever()
    out = replay_search_r1_loop(model, tok, workload, retriever, topk=cfg.topk)
    assert out["contexts"] == [t.prompt_ids + t.response_ids for t in trajectories]
    assert out["useful"] == sum(sum(t.response_mask) for t in trajectories)  # the same token count on both sides
    assert out["searches"] == len(retriever.queries) == sum(t.num_searches for t in trajectories)
    # The loop re-encodes: more tokens go through the model than the trajectories hold.
    assert out["encoded"] > sum(len(t.prompt_ids) + len(t.response_ids) for t in trajectories)


def test_a_saved_workload_replays_on_other_weights_of_the_same_architecture(recorded, tmp_path):
    """bench_rollout.py --save-workload / --workload --random-weights: the file round-trips, and a model with other
    weights replays it token for token (the timed work does not depend on the weights)."""
    model, tok, protocol, cfg, questions, trajectories = recorded
    workload = record(trajectories)
    save_workload(tmp_path / "w.json", workload, {"settings": {"seed": 3}})
    loaded, meta = load_workload(tmp_path / "w.json")
    assert loaded == workload and meta == {"settings": {"seed": 3}}
    other = build_tiny_random_model(tmp_path / "other", seed=6)
    other_model, _ = load_policy(other)
    assert not torch.equal(next(other_model.parameters()), next(model.parameters()))
    again = RolloutEngine(ReplayBackend(other_model, tok, loaded), tok, EchoRetriever(), protocol, cfg).run(
        questions, 2)
    assert [t.response_ids for t in again] == [t.response_ids for t in trajectories]
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(SystemExit, match="bad.json: not a saved workload"):
        load_workload(tmp_path / "bad.json")


def test_a_replay_refuses_other_prompts(recorded):
    model, tok, protocol, cfg, questions, trajectories = recorded
    workload = record(trajectories)
    others = [Question(q.id, q.question + " again", q.golden_answers, "nq") for q in questions]
    with pytest.raises(ValueError, match="prompt differs"):
        RolloutEngine(ReplayBackend(model, tok, workload), tok, EchoRetriever(), protocol, cfg).run(others, 2)


def test_fixed_lengths_make_every_completion_run_to_its_budget(tmp_path):
    from workload import fix_lengths

    from searchrl.rollout.backend import eos_token_ids

    path = build_tiny_random_model(tmp_path / "m", seed=3)
    model, tok = load_policy(path)
    eos = list(eos_token_ids(tok, model))

    def likely_eos(module, args, logits):  # left alone, this model ends rows early
        return logits.index_add(-1, torch.tensor(eos), torch.full((*logits.shape[:-1], len(eos)), 8.0))

    model.get_output_embeddings().register_forward_hook(likely_eos)  # fix_lengths' hook runs after it
    questions = [Question(str(i), f"what is item {i}?", ["x"], "nq") for i in range(6)]
    cfg = RolloutConfig(max_turns=0, max_turn_tokens=20, temperature=1.0, seed=1)
    protocol = ProtocolConfig(assistant_prefix="<answer>")
    before = RolloutEngine(HFBackend(model, tok), tok, EchoRetriever(), protocol, cfg).run(questions, 2)
    assert any(len(t.response_ids) < 20 for t in before)  # without the hook some stop early
    fix_lengths(model, tok)
    after = RolloutEngine(HFBackend(model, tok), tok, EchoRetriever(), protocol, cfg).run(questions, 2)
    assert all(len(t.response_ids) == 20 and t.finish_reason == "length" for t in after)
    assert all("<" not in tok.decode(t.response_ids) for t in after)


def test_bench_rollout_resumes_a_partial_run_on_the_same_cpu_kind(tmp_path):
    """bench_rollout.py --resume keeps the finished rounds of a partial JSON and runs the rest (a short GPU-machine
    loan fits two rounds of the default workload, not three); other options or another CPU kind are refused."""
    import json
    import subprocess

    model = build_tiny_random_model(tmp_path / "m", seed=4)
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_rollout.py"
    result = tmp_path / "r.json"
    run = [sys.executable, str(script), "--questions", "2", "--group", "2", "--turn-tokens", "8", "--max-turns", "1",
           "--rounds", "2", "--json", str(result), "--model", str(model)]
    subprocess.run([*run, "--save-workload", str(tmp_path / "w.json")], check=True, capture_output=True, timeout=300)
    full = json.loads(result.read_text())
    assert full["rounds_done"] == 2 and [len(v) for v in full["runs"].values()] == [2, 2]

    def stop_after_round_one(**changes) -> dict:  # the partial JSON of a process stopped after its first round
        partial = {**full, "runs": {k: v[:1] for k, v in full["runs"].items()}, "rounds_done": 1, **changes}
        result.write_text(json.dumps(partial))
        return partial

    partial = stop_after_round_one()
    subprocess.run([*run, "--resume"], check=True, capture_output=True, timeout=300)
    resumed = json.loads(result.read_text())
    assert [[r["round"] for r in v] for v in resumed["runs"].values()] == [[0, 1], [0, 1]]
    assert resumed["runs"]["engine"][0] == partial["runs"]["engine"][0]  # the finished round is kept as it was

    stop_after_round_one()
    other = subprocess.run([*run, "--resume", "--workload", str(tmp_path / "w.json"), "--random-weights"],
                           capture_output=True, text=True, timeout=300)
    assert other.returncode != 0 and "other options" in other.stdout + other.stderr

    stop_after_round_one(host={**full["host"], "flags": ["amx_tile"]})
    elsewhere = subprocess.run([*run, "--resume"], capture_output=True, text=True, timeout=300)
    assert elsewhere.returncode != 0 and "this CPU is" in elsewhere.stdout + elsewhere.stderr
