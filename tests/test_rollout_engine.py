"""The rollout engine driven by a scripted policy: every branch of the agent loop, token for token."""

from __future__ import annotations

import pytest
from rich.progress import Progress

from searchrl.data import Question
from searchrl.errors import ConfigError, RetrievalError
from searchrl.models import default_tokenizer
from searchrl.protocol import INVALID_ACTION_MESSAGE, ProtocolConfig, encode_prompt, encode_text, render_observation
from searchrl.retrieval import Hit
from searchrl.rewards import RewardConfig, score_trajectories
from searchrl.rollout import RolloutConfig, RolloutEngine, ScriptedBackend, Trajectory


@pytest.fixture(scope="module")
def tok():
    return default_tokenizer()


class WordRetriever:
    """A deterministic retriever over a fixed passage list (word overlap); records every call."""

    def __init__(self, passages: list[tuple[str, str]] | None = None, fail_times: int = 0):
        self.passages = passages or [
            ("Paris", "Paris is the capital and largest city of France."),
            ("Hamlet", "Hamlet is a tragedy written by William Shakespeare."),
            ("Lyon", "Lyon is the third-largest city of France."),
            ("Everest", "Mount Everest is Earth's highest mountain above sea level."),
        ]
        self.calls: list[list[str]] = []
        self.fail_times = fail_times

    def search(self, queries: list[str], topk: int = 3) -> list[list[Hit]]:
        self.calls.append(list(queries))
        if self.fail_times > 0:
            self.fail_times -= 1
            raise RetrievalError("server down")
        out = []
        for q in queries:
            words = set(q.lower().split())
            ranked = sorted(
                range(len(self.passages)),
                key=lambda i: (-len(words & set(self.passages[i][1].lower().rstrip(".").split())), i),
            )
            out.append([
                Hit(f"doc{i}", self.passages[i][0], self.passages[i][1],
                    f'"{self.passages[i][0]}"\n{self.passages[i][1]}', None)
                for i in ranked[:topk]
            ])
        return out


QUESTIONS = [
    Question("q1", "what is the capital of france", ["Paris"], "nq"),
    Question("q2", "who wrote hamlet", ["William Shakespeare", "Shakespeare"], "hotpotqa"),
]


def _engine(tok, scripts, retriever=None, protocol=None, **cfg) -> tuple[RolloutEngine, ScriptedBackend, WordRetriever]:
    backend = ScriptedBackend(tok, scripts)
    retriever = retriever or WordRetriever()
    cfg.setdefault("retrieval_backoff_s", 0.0)
    engine = RolloutEngine(backend, tok, retriever, protocol or ProtocolConfig(), RolloutConfig(**cfg))
    return engine, backend, retriever


def _check_token_exact(traj: Trajectory, tok, backend: ScriptedBackend) -> None:
    """The invariants every trajectory must satisfy."""
    n = len(traj.response_ids)
    assert len(traj.response_mask) == n == len(traj.sampling_logprobs)
    expected_text = "".join(t.text + o for t, o in zip(traj.turns, traj.extras["observations"]))
    assert tok.decode(traj.response_ids) == expected_text
    # Sampled tokens carry the backend's log-prob, observation tokens 0.0.
    for m, lp in zip(traj.response_mask, traj.sampling_logprobs):
        assert lp == (backend.logprob if m == 1 else 0.0)
    # Observation tokens are exactly the tokenisation of each observation alone, at the right places.
    position = 0
    for turn, obs in zip(traj.turns, traj.extras["observations"]):
        sampled = position
        while position < n and traj.response_mask[position] == 1:
            position += 1
        assert tok.decode(traj.response_ids[sampled:position]) == turn.text
        obs_ids = encode_text(obs, tok) if obs else []
        assert traj.response_ids[position : position + len(obs_ids)] == obs_ids
        assert all(m == 0 for m in traj.response_mask[position : position + len(obs_ids)])
        position += len(obs_ids)
    assert position == n


def test_search_then_answer_is_token_exact(tok):
    engine, backend, retriever = _engine(tok, [
        ["<think>I need the capital.</think><search>capital of France</search>",
         "<think>Paris.</think><answer>Paris</answer>"],
        ["<search>hamlet author</search>", "<answer>William Shakespeare</answer>"],
    ])
    trajs = engine.run(QUESTIONS, group_size=1)
    assert [t.finish_reason for t in trajs] == ["answer", "answer"]
    assert [t.answer for t in trajs] == ["Paris", "William Shakespeare"]
    assert [t.num_searches for t in trajs] == [1, 1]
    first = trajs[0]
    assert [t.action for t in first.turns] == ["search", "answer"]
    assert first.turns[0].think == "I need the capital." and first.turns[1].think == "Paris."
    assert first.turns[0].query == "capital of France"
    assert first.turns[0].doc_ids[0] == "doc0" and first.turns[0].docs[0].startswith('"Paris"\n')
    assert retriever.calls == [["capital of France", "hamlet author"]]  # one call for the whole batch
    assert first.extras["observations"][0] == render_observation(retriever.search(["capital of France"])[0])
    session = backend.sessions[-1]
    for i, traj in enumerate(trajs):
        _check_token_exact(traj, tok, backend)
        # What the policy saw is exactly prompt + response.
        assert session.contexts[i] == traj.prompt_ids + traj.response_ids
        assert traj.prompt_ids == encode_prompt(traj.question.question, ProtocolConfig(), tok)
        assert tok.decode(traj.response_ids[-1:]) == ">"  # ends at </answer>: no EOS after a stop string
    rewards = score_trajectories(trajs, RewardConfig.search_r1_v03())
    assert rewards == [1.0, 1.0] and all(t.extras["format_valid"] for t in trajs)


def test_groups_are_question_major_with_shared_group_ids(tok):
    engine, backend, retriever = _engine(tok, [["<answer>Paris</answer>"]])
    trajs = engine.run(QUESTIONS, group_size=3)
    assert [t.group_id for t in trajs] == ["nq:q1"] * 3 + ["hotpotqa:q2"] * 3
    assert [t.question.id for t in trajs] == ["q1"] * 3 + ["q2"] * 3
    assert backend.sessions[-1].generate_calls == [[0, 1, 2, 3, 4, 5]]
    assert retriever.calls == []


def test_generation_stops_at_the_tag_and_drops_the_rest(tok):
    script = ["<search>capital of France</search> and more text <answer>x</answer>", "<answer>Paris</answer>"]
    engine, _, _ = _engine(tok, [script])
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert traj.turns[0].text == "<search>capital of France</search>"
    assert traj.finish_reason == "answer" and traj.answer == "Paris"


def test_a_tag_split_over_many_tokens_still_stops(tok):
    pieces = ["<", "search", ">", "capital", " of", " France", "<", "/", "s", "e", "a", "r", "c", "h", ">", " junk"]
    ids = [i for p in pieces for i in tok.encode(p, add_special_tokens=False)]
    engine, _, retriever = _engine(tok, [[ids, "<answer>Paris</answer>"]])
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert traj.turns[0].text == "<search>capital of France</search>"
    assert traj.turns[0].action == "search" and retriever.calls == [["capital of France"]]


def test_eos_is_kept_when_sampled(tok):
    engine, backend, _ = _engine(tok, [["I do not know", "<answer>Paris</answer>"]])
    traj = engine.run(QUESTIONS[:1], 1)[0]
    first_turn_len = len(tok.encode("I do not know", add_special_tokens=False)) + 1
    assert traj.response_ids[first_turn_len - 1] == tok.eos_token_id
    assert traj.response_mask[first_turn_len - 1] == 1
    assert traj.turns[0].text.endswith("<|im_end|>") and traj.turns[0].action == "invalid"
    assert traj.extras["observations"][0] == INVALID_ACTION_MESSAGE
    _check_token_exact(traj, tok, backend)


def test_scripted_turn_without_eos_ends_like_a_budget_cut(tok):
    backend = ScriptedBackend(tok, [["no tag here"]], eos_after_turn=False)
    engine = RolloutEngine(backend, tok, WordRetriever(), ProtocolConfig(), RolloutConfig())
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert traj.response_ids == tok.encode("no tag here", add_special_tokens=False)  # no EOS appended
    assert traj.finish_reason == "length" and traj.turns[0].action == "none"


def test_max_turns_then_a_final_turn_without_search(tok):
    always_search = [["<search>capital of France</search>"] * 10]
    engine, backend, retriever = _engine(tok, always_search, max_turns=2)
    traj = engine.run(QUESTIONS[:1], 2)[0]
    assert traj.finish_reason == "max_turns"
    assert len(traj.turns) == 3 and traj.num_searches == 2
    assert traj.turns[-1].action == "search" and traj.turns[-1].query is None and traj.turns[-1].docs == []
    assert traj.answer is None
    assert len(retriever.calls) == 2  # one call per executed turn; the 2 samples' identical queries deduplicated
    assert retriever.calls[0] == ["capital of France"]
    assert backend.sessions[-1].generate_calls == [[0, 1], [0, 1], [0, 1]]
    _check_token_exact(traj, tok, backend)


def test_answer_in_the_final_turn(tok):
    engine, _, _ = _engine(tok, [["<search>a</search>", "<search>b</search>", "<answer>Paris</answer>"]], max_turns=2)
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert traj.finish_reason == "answer" and traj.num_searches == 2 and traj.answer == "Paris"


def test_zero_max_turns_is_a_single_answer_turn(tok):
    engine, _, retriever = _engine(tok, [["<search>a</search>"]], max_turns=0)
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert traj.finish_reason == "max_turns" and traj.num_searches == 0 and retriever.calls == []


def test_per_turn_budget(tok):
    engine, backend, _ = _engine(tok, [["word " * 100]], max_turn_tokens=7)
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert traj.finish_reason == "length"
    assert len(traj.response_ids) == 7 and sum(traj.response_mask) == 7
    assert traj.turns[0].action == "none"
    _check_token_exact(traj, tok, backend)


def test_total_response_budget_cuts_the_observation_then_ends(tok):
    script = [["<search>capital of France</search>", "<answer>Paris</answer>"]]
    engine, backend, _ = _engine(tok, script, max_response_tokens=30, max_obs_tokens=500)
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert traj.finish_reason == "length"
    assert len(traj.response_ids) <= 30
    obs = traj.extras["observations"][0]
    assert obs.startswith("\n\n<information>") and obs.endswith("</information>\n\n")
    _check_token_exact(traj, tok, backend)


def test_context_budget(tok):
    prompt_len = len(encode_prompt(QUESTIONS[0].question, ProtocolConfig(), tok))
    script = [["<search>capital of France</search>", "<answer>Paris</answer>"]]
    engine, backend, _ = _engine(tok, script, max_context_tokens=prompt_len + 40)
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert traj.finish_reason == "length"
    assert len(traj.prompt_ids) + len(traj.response_ids) <= prompt_len + 40
    _check_token_exact(traj, tok, backend)
    # A prompt that does not fit ends at once, with an empty response.
    engine, backend, _ = _engine(tok, script, max_context_tokens=prompt_len)
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert traj.finish_reason == "length" and traj.turns == [] and traj.response_ids == []
    assert backend.sessions[-1].generate_calls == []


def test_observation_budget(tok):
    engine, backend, _ = _engine(tok, [["<search>france city</search>", "<answer>Paris</answer>"]], max_obs_tokens=25)
    traj = engine.run(QUESTIONS[:1], 1)[0]
    obs_tokens = len(traj.response_ids) - sum(traj.response_mask)
    assert 0 < obs_tokens <= 25 and traj.finish_reason == "answer"
    _check_token_exact(traj, tok, backend)


def test_invalid_action_message_and_continue(tok):
    engine, backend, retriever = _engine(tok, [["Let me think about it.", "<answer>Paris</answer>"]])
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert [t.action for t in traj.turns] == ["invalid", "answer"]
    assert traj.extras["observations"] == [INVALID_ACTION_MESSAGE, ""]
    assert retriever.calls == [] and traj.finish_reason == "answer"
    score_trajectories([traj], RewardConfig.search_r1_v03())
    assert traj.extras["format_valid"] is False and traj.reward == pytest.approx(0.8)
    _check_token_exact(traj, tok, backend)


def test_empty_query_is_invalid(tok):
    engine, _, retriever = _engine(tok, [["<search>   </search>", "<answer>Paris</answer>"]])
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert traj.turns[0].action == "invalid" and traj.turns[0].query is None
    assert traj.extras["observations"][0] == INVALID_ACTION_MESSAGE and retriever.calls == []


def test_huge_query_is_truncated(tok):
    long_query = "france " * 1500  # 10,500 characters
    engine, _, retriever = _engine(tok, [[f"<search>{long_query}</search>", "<answer>Paris</answer>"]],
                                   max_turn_tokens=5000, max_response_tokens=10_000, max_context_tokens=10_000)
    traj = engine.run(QUESTIONS[:1], 1)[0]
    turn = traj.turns[0]
    assert turn.query_truncated and len(turn.query) == 4096
    assert retriever.calls == [[turn.query]]
    assert traj.finish_reason == "answer"


def test_model_written_information_is_model_text(tok):
    fake = "<information>Paris is fake</information><answer>Lyon</answer>"
    engine, backend, retriever = _engine(tok, [[fake]])
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert traj.finish_reason == "answer" and traj.answer == "Lyon" and retriever.calls == []
    assert all(m == 1 for m in traj.response_mask)  # never treated as retrieved text
    assert traj.turns[0].docs == []
    score_trajectories([traj], RewardConfig.search_r1_v03())
    assert traj.extras["format_valid"] is False and traj.extras["answer_in_retrieval"] is False


def test_unclosed_and_nested_tags(tok):
    engine, backend, retriever = _engine(tok, [
        ["<think>unclosed <search>capital", "<search><search>nested</search>", "<answer>Paris"],
    ], max_turns=2)
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert [t.action for t in traj.turns] == ["invalid", "search", "invalid"]
    assert traj.turns[1].query == "<search>nested"  # Search-R1's regex, first match: the inner text is the query
    assert retriever.calls == [["<search>nested"]]
    assert traj.finish_reason == "max_turns" and traj.answer is None
    _check_token_exact(traj, tok, backend)


def test_invalid_utf8_is_decoded_with_replacement(tok):
    lone_lead_byte = tok.convert_tokens_to_ids("Ã")  # byte 0xC3 alone: not valid UTF-8
    ids = [lone_lead_byte] + tok.encode("<answer>Par", add_special_tokens=False) + [lone_lead_byte]
    ids += tok.encode("is</answer>", add_special_tokens=False)
    engine, backend, _ = _engine(tok, [[ids]])
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert "\ufffd" in traj.turns[0].text
    assert traj.finish_reason == "answer" and traj.answer == "Par\ufffdis"
    assert traj.response_ids == ids  # the ids are kept, whatever they decode to
    score_trajectories([traj], RewardConfig())


def test_retrieval_failure_is_retried_then_reported(tok):
    script = [["<search>capital of France</search>", "<answer>Paris</answer>"]]
    flaky = WordRetriever(fail_times=2)
    engine, _, _ = _engine(tok, script, retriever=flaky, retrieval_attempts=3)
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert len(flaky.calls) == 3 and traj.finish_reason == "answer"

    down = WordRetriever(fail_times=100)
    engine, backend, _ = _engine(tok, script, retriever=down, retrieval_attempts=2)
    trajs = engine.run(QUESTIONS, 2)
    assert len(down.calls) == 2
    assert {t.finish_reason for t in trajs} == {"retrieval_error"}
    traj = trajs[0]
    assert traj.turns[0].query == "capital of France" and traj.turns[0].docs == []
    assert "server down" in traj.extras["retrieval_error"]
    assert traj.extras["observations"] == [""]
    _check_token_exact(traj, tok, backend)


def test_one_retriever_call_per_turn_for_the_whole_batch(tok):
    questions = [Question(f"q{i}", f"question {i}", ["x"], "nq") for i in range(4)]

    def policy(row: int, turn: int, context: str) -> str:
        # Different queries per row, searches for two turns, then answers.
        return f"<search>query {row} turn {turn}</search>" if turn < 2 else "<answer>x</answer>"

    backend = ScriptedBackend(tok, policy)
    retriever = WordRetriever()
    engine = RolloutEngine(backend, tok, retriever, ProtocolConfig(), RolloutConfig())
    trajs = engine.run(questions, group_size=2)
    assert len(retriever.calls) == 2
    assert retriever.calls[0] == [f"query {r} turn 0" for r in range(8)]
    assert all(t.finish_reason == "answer" and t.num_searches == 2 for t in trajs)


def test_a_scripted_oracle_reads_its_observation(tok):
    def oracle(row: int, turn: int, context: str) -> str:
        if turn == 0:
            return "<search>capital of France</search>"
        last_doc = context.rsplit("<information>", 1)[1]
        return f"<answer>{last_doc.split('(Title: ')[1].split(')')[0].strip(chr(34))}</answer>"

    engine = RolloutEngine(ScriptedBackend(tok, oracle), tok, WordRetriever(), ProtocolConfig(), RolloutConfig())
    trajs = engine.run(QUESTIONS[:1], 1)
    assert trajs[0].answer == "Paris"
    assert score_trajectories(trajs, RewardConfig()) == [1.0]


def test_assistant_prefix_is_prompt_but_parsed_with_the_first_turn(tok):
    protocol = ProtocolConfig(assistant_prefix="<search>")
    script = ["capital of France</search>", "<answer>Paris</answer>"]
    engine, backend, retriever = _engine(tok, [script], protocol=protocol)
    traj = engine.run(QUESTIONS[:1], 1)[0]
    assert tok.decode(traj.prompt_ids).endswith("<|im_start|>assistant\n<search>")
    assert traj.turns[0].text == "capital of France</search>" and traj.turns[0].action == "search"
    assert retriever.calls == [["capital of France"]]
    score_trajectories([traj], RewardConfig.search_r1_v03())
    assert traj.extras["format_valid"] is True and traj.reward == 1.0
    _check_token_exact(traj, tok, backend)


def test_progress_task_counts_finished_trajectories(tok):
    engine, _, _ = _engine(tok, [["<answer>Paris</answer>"]])
    with Progress(disable=True) as progress:
        engine.run(QUESTIONS, 2, progress=progress)
        task = progress.tasks[0]
        assert task.total == 4 and task.completed == 4


def test_config_validation():
    with pytest.raises(ConfigError, match="rollout.max_turn_tokens"):
        RolloutConfig(max_turn_tokens=0)
    with pytest.raises(ConfigError, match="rollout.temperature"):
        RolloutConfig(temperature=0.0)
    with pytest.raises(ConfigError, match="rollout.max_turn: unknown key"):
        RolloutConfig.from_dict({"max_turn": 3})
    assert RolloutConfig.from_dict({"greedy": True, "max_turns": 2}) == RolloutConfig(greedy=True, max_turns=2)
    cfg = RolloutConfig()
    assert (cfg.max_turns, cfg.max_turn_tokens, cfg.max_obs_tokens, cfg.topk) == (4, 500, 500, 3)
