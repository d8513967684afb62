"""Evaluation harness: bootstrap CIs, stratified subsets, the report layout, and `evaluate` end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from searchrl.cli import main as cli_main
from searchrl.data import Question, load_oracle, load_source, world_dir
from searchrl.data.oracle import oracle_script
from searchrl.errors import ConfigError
from searchrl.evaluation import (
    DIRECT_INSTRUCTION,
    EvalReport,
    allocate,
    bootstrap_ci,
    column_order,
    evaluate,
    macro_bootstrap_ci,
    stratified_sample,
    summarise,
)
from searchrl.evaluation import bootstrap as bootstrap_module
from searchrl.rollout import RolloutConfig, ScriptedBackend

# --- bootstrap -------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=5, allow_nan=False), min_size=1, max_size=60), st.integers(0, 99))
def test_bootstrap_interval_contains_the_mean(values: list[float], seed: int) -> None:
    low, high = bootstrap_ci(values, n_resamples=200, seed=seed)
    mean = float(np.mean(values))
    assert low - 1e-9 <= mean <= high + 1e-9
    assert min(values) - 1e-9 <= low <= high <= max(values) + 1e-9


def test_bootstrap_interval_shrinks_with_n_like_the_normal_approximation() -> None:
    rng = np.random.default_rng(1)
    widths = {}
    for n in (100, 400, 1600):
        em = (rng.random(n) < 0.4).astype(float)
        low, high = bootstrap_ci(em, n_resamples=2000, seed=0)
        widths[n] = high - low
        p = em.mean()
        normal = 2 * 1.96 * math.sqrt(p * (1 - p) / n)
        assert abs(widths[n] - normal) / normal < 0.2  # percentile bootstrap ≈ Wald interval at these n
    assert widths[100] > widths[400] > widths[1600]
    assert 1.6 < widths[100] / widths[400] < 2.5  # ∝ 1/√n


def test_bootstrap_is_seeded_chunking_invariant_and_handles_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.random.default_rng(0).random(300)
    first = bootstrap_ci(values, seed=3)
    assert bootstrap_ci(values, seed=3) == first and bootstrap_ci(values, seed=4) != first
    monkeypatch.setattr(bootstrap_module, "_CHUNK_ELEMENTS", 1000)  # 3 resamples per chunk: same draws
    assert bootstrap_ci(values, seed=3) == first
    assert bootstrap_ci([1.0] * 50) == (1.0, 1.0)
    assert all(math.isnan(x) for x in bootstrap_ci([]))
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci(values, confidence=1.5)
    narrow, wide = bootstrap_ci(values, confidence=0.5), bootstrap_ci(values, confidence=0.99)
    assert wide[0] < narrow[0] < narrow[1] < wide[1]


def test_macro_bootstrap() -> None:
    rng = np.random.default_rng(2)
    a, b = (rng.random(200) < 0.8).astype(float), (rng.random(50) < 0.2).astype(float)
    low, high = macro_bootstrap_ci([a, b], seed=0)
    assert low < (a.mean() + b.mean()) / 2 < high
    assert macro_bootstrap_ci([a], seed=5) == bootstrap_ci(a, seed=5)
    assert macro_bootstrap_ci([a, []], seed=5) == bootstrap_ci(a, seed=5)  # empty datasets are skipped


# --- stratified subsets ----------------------------------------------------------------------------------


def make_questions(types: dict[str, int], source: str = "hotpotqa") -> list[Question]:
    out = []
    for t, n in types.items():
        out += [Question(f"{t}{i}", f"q {t} {i}", ["a"], source, {"type": t}) for i in range(n)]
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=6), st.integers(0, 400))
def test_allocate_is_proportional_and_exact(sizes: list[int], limit: int) -> None:
    counts = allocate(sizes, limit)
    total = sum(sizes)
    assert sum(counts) == min(limit, total)
    for n, size in zip(counts, sizes):
        assert 0 <= n <= size
        if total:
            assert abs(n - min(limit, total) * size / total) < 1.0 + 1e-9


def test_stratified_sample_keeps_type_shares_and_order() -> None:
    qs = make_questions({"bridge": 300, "comparison": 100})
    sample, info = stratified_sample(qs, 40, seed=7)
    assert len(sample) == 40 and info.is_subset and info.stratified_by == "metadata.type"
    assert sum(q.metadata["type"] == "bridge" for q in sample) == 30
    assert [qs.index(q) for q in sample] == sorted(qs.index(q) for q in sample)  # original order
    again, _ = stratified_sample(qs, 40, seed=7)
    other, _ = stratified_sample(qs, 40, seed=8)
    assert [q.id for q in again] == [q.id for q in sample] and [q.id for q in other] != [q.id for q in sample]
    assert "40 of 400 questions, seeded stratified by metadata.type sample (seed 7)" == info.describe()
    everything, info_all = stratified_sample(qs, None)
    assert everything == qs and not info_all.is_subset and info_all.describe() == "all 400 questions"


def test_stratified_sample_by_source_when_untyped() -> None:
    qs = [Question(str(i), "q", ["a"], "nq" if i < 90 else "bamboogle") for i in range(100)]
    sample, info = stratified_sample(qs, 10, seed=0)
    assert info.stratified_by == "data_source" and sum(q.data_source == "nq" for q in sample) == 9


# --- report layout ---------------------------------------------------------------------------------------


def test_report_columns_follow_the_papers_and_json_is_finite(tmp_path: Path) -> None:
    names = ["world", "bamboogle", "nq", "mine", "2wikimultihopqa", "hotpotqa"]
    assert column_order(names) == ["nq", "hotpotqa", "2wikimultihopqa", "bamboogle", "world", "mine"]
    scores = {n: {"em": [1.0, 0.0, 1.0, 1.0], "f1": [1.0, 0.5, 1.0, 1.0]} for n in names}
    scores["mine"] = {"em": [], "f1": []}
    datasets, macro = summarise(scores, {n: ["answer"] * 4 for n in names}, n_resamples=100)
    report = EvalReport(datasets, macro, settings={"model": "m", "mode": "search"})
    header = report.to_markdown().splitlines()[0]
    assert header == "| metric | NQ | HotpotQA | 2Wiki | Bamboogle | world | mine | Avg |"
    assert macro["em"] == pytest.approx(0.75) and macro["datasets"] == 6
    flat = report.flat_metrics()
    assert flat["val/nq/em"] == 0.75 and flat["val/avg/f1"] == pytest.approx(0.875) and flat["val/nq/n"] == 4
    assert {"val/world/searches_ci_low", "val/avg/em_ci_high"} <= set(flat)
    json_path, md_path = report.write(tmp_path / "r.json")
    loaded = json.loads(json_path.read_text())  # NaN (the empty dataset) is written as null
    assert loaded["datasets"]["mine"]["em"] is None and md_path.read_text() == report.to_markdown()
    assert not list(tmp_path.glob(".*"))  # no temporary files left


# --- evaluate end to end with scripted policies ----------------------------------------------------------


@pytest.fixture(scope="module")
def tokenizer():
    from searchrl.models import default_tokenizer

    return default_tokenizer()


@pytest.fixture(scope="module")
def world_test():
    return load_source("world"), load_oracle(world_dir(0) / "oracle_test.jsonl")


class CountingRetriever:
    def __init__(self, inner) -> None:
        self.inner, self.calls = inner, []

    def search(self, queries, topk=3):
        self.calls.append(list(queries))
        return self.inner.search(queries, topk=topk)


def test_oracle_policy_scores_perfectly_through_the_full_path(tokenizer, world_test) -> None:
    source, oracles = world_test
    report = evaluate(ScriptedBackend(tokenizer, oracle_script(oracles)), tokenizer, [source], limit=200,
                      progress=False, n_resamples=200)
    world = report.datasets["world"]
    assert world["n"] == 200 and world["finish_reasons"] == {"answer": 200}
    assert world["n_total"] == len(source.questions) > 200
    for key in ("em", "f1", "cover_em", "format_valid", "answer_in_retrieval"):
        assert world[key] == 1.0 and world[f"{key}_ci_low"] == 1.0, key
    assert world["searches"] == pytest.approx((100 * 1 + 60 * 2 + 40 * 2) / 200)  # single, bridge, comparison
    assert world["searches_ci_low"] < 1.5 < world["searches_ci_high"]
    t = report.timing
    assert t["questions"] == 200 and t["generation_s"] > 0 and t["retrieval_s"] > 0
    assert t["generation_s"] + t["retrieval_s"] + t["bookkeeping_s"] == pytest.approx(t["wall_s"], rel=1e-6)
    record = report.records[0]
    assert record["em"] == 1.0 and "<information>" in record["text"] and record["queries"]


def test_wrong_answers_without_search_score_zero(tokenizer, world_test) -> None:
    source, _ = world_test
    report = evaluate(ScriptedBackend(tokenizer, [["<answer>nobody</answer>"]]), tokenizer, [source], limit=30,
                      progress=False, n_resamples=100)
    world = report.datasets["world"]
    total = len(source.questions)
    assert world["n"] == 30 and world["n_total"] == total
    assert world["em"] == world["f1"] == world["searches"] == world["answer_in_retrieval"] == 0.0
    assert world["format_valid"] == 1.0  # a bare answer is a valid protocol sequence
    assert world["sample"] == f"30 of {total} questions, seeded stratified by metadata.type sample (seed 0)"
    assert f"30 of {total} questions" in report.to_markdown()


def test_limit_and_seed_pick_a_stratified_reproducible_subset(tokenizer, world_test) -> None:
    source, oracles = world_test
    backend = ScriptedBackend(tokenizer, oracle_script(oracles))
    a = evaluate(backend, tokenizer, [source], limit=20, seed=1, progress=False, n_resamples=50)
    b = evaluate(backend, tokenizer, [source], limit=20, seed=1, progress=False, n_resamples=50)
    assert [r["uid"] for r in a.records] == [r["uid"] for r in b.records]
    assert [r["type"] for r in a.records].count("single-hop") == 10  # half the split is single-hop


def test_direct_mode_never_searches(tokenizer, world_test) -> None:
    source, _ = world_test
    never = CountingRetriever(None)
    backend = ScriptedBackend(tokenizer, [["<think>hm</think><search>x</search>", "<answer>y</answer>"]])
    report = evaluate(backend, tokenizer, [source], retriever=never, mode="direct", limit=5, progress=False,
                      n_resamples=50)
    assert never.calls == []
    assert report.datasets["world"]["finish_reasons"] == {"max_turns": 5}  # one turn, a search is not executed
    assert report.settings["rollout"]["max_turns"] == 0
    prompt = tokenizer.decode(backend.sessions[-1].contexts[0])
    assert DIRECT_INSTRUCTION.split("{question}")[0].strip() in prompt


def test_rag_mode_puts_the_question_s_passages_in_the_prompt(tokenizer, world_test) -> None:
    source, oracles = world_test
    answers = {o.question: o.golden_answers[0] for o in oracles}
    backend = ScriptedBackend(tokenizer, lambda row, turn, ctx: next(
        (f"<answer>{a}</answer>" for q, a in answers.items() if q in ctx), "<answer>?</answer>") if turn == 0 else None)
    single = [q for q in source.questions if q.metadata["type"] == "single-hop"][:8]
    src = type(source)(name="world", questions=single, corpus_path=source.corpus_path)
    report = evaluate(backend, tokenizer, [src], mode="rag", progress=False, n_resamples=50,
                      rollout_cfg=RolloutConfig(topk=2))
    world = report.datasets["world"]
    assert world["em"] == 1.0 and world["searches"] == 1.0 and world["answer_in_retrieval"] >= 0.875
    context = tokenizer.decode(backend.sessions[-1].contexts[0])
    assert "Doc 1(Title:" in context and "Doc 2(Title:" in context and "Doc 3(Title:" not in context
    assert report.records[0]["question"] == single[0].question  # the report keeps the original question


def write_folder(folder: Path, questions: list[dict], corpus: list[dict]) -> Path:
    folder.mkdir(parents=True)
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    return folder


def test_several_sources_each_search_their_own_corpus(tmp_path: Path, tokenizer, world_test) -> None:
    world, oracles = world_test
    nq = write_folder(
        tmp_path / "nq",
        [{"id": str(i), "question": f"what colour is the zorbling {i}", "golden_answers": [f"teal{i}"]} for i in range(3)],
        [{"id": str(i), "contents": f'"Zorbling {i}"\nThe zorbling {i} is teal{i} all over.'} for i in range(3)],
    )
    script = oracle_script(oracles)

    def policy(row: int, turn: int, ctx: str):
        if "zorbling" in ctx:
            number = ctx.split("zorbling ")[1].split("?")[0]
            return [f"<search>zorbling {number}</search>", f"<answer>teal{number}</answer>"][turn] if turn < 2 else None
        return script(row, turn, ctx)

    report = evaluate(ScriptedBackend(tokenizer, policy), tokenizer, [str(nq), world], limit=10, progress=False,
                      n_resamples=50)
    assert list(report.datasets) == ["nq", "world"]  # the papers' columns first
    assert report.datasets["nq"]["em"] == 1.0 and report.datasets["nq"]["answer_in_retrieval"] == 1.0
    assert report.datasets["world"]["em"] == 1.0
    assert report.macro["em"] == 1.0 and report.macro["n"] == 13
    assert report.to_markdown().splitlines()[0] == "| metric | NQ | world | Avg |"


def test_merged_parquet_splits_by_data_source_and_needs_a_retriever(tmp_path: Path, tokenizer) -> None:
    rows = [{"data_source": src, "prompt": [{"role": "user", "content": f"... Question: {q}?\n"}],
             "reward_model": {"ground_truth": {"target": [a]}}, "extra_info": {"index": i}}
            for i, (src, q, a) in enumerate([("nq", "n1", "x"), ("hotpotqa", "h1", "y"), ("nq", "n2", "z")])]
    path = tmp_path / "test.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    backend = ScriptedBackend(tokenizer, [["<answer>x</answer>"]])
    with pytest.raises(ConfigError, match="brings no corpus.jsonl; pass --retriever"):
        evaluate(backend, tokenizer, [str(path)], progress=False)
    corpus = tmp_path / "c" / "corpus.jsonl"
    corpus.parent.mkdir()
    corpus.write_text(json.dumps({"id": "0", "contents": '"X"\nx is here'}) + "\n")
    report = evaluate(backend, tokenizer, [str(path)], retriever=str(corpus), progress=False, n_resamples=50)
    assert list(report.datasets) == ["nq", "hotpotqa"]
    assert report.datasets["nq"]["n"] == 2 and report.datasets["nq"]["em"] == 0.5
    assert report.datasets["hotpotqa"]["em"] == 0.0


def test_bad_arguments_are_config_errors(tokenizer, world_test) -> None:
    source, _ = world_test
    backend = ScriptedBackend(tokenizer, [["<answer>x</answer>"]])
    with pytest.raises(ConfigError, match="mode"):
        evaluate(backend, tokenizer, [source], mode="closed-book")
    with pytest.raises(ConfigError, match="limit"):
        evaluate(backend, tokenizer, [source], limit=0)
    with pytest.raises(ConfigError, match="tokenizer"):
        evaluate(backend.sessions, None, [source])  # neither a backend nor a model: needs a tokenizer


# --- a live model object and the CLI ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, tokenizer) -> Path:
    from searchrl.models import build_tiny_random_model

    return build_tiny_random_model(tmp_path_factory.mktemp("tiny") / "model")


def test_a_live_model_object_is_evaluated_and_its_mode_restored(tiny_model_dir: Path, world_test) -> None:
    from searchrl.models import load_policy

    model, tok = load_policy(tiny_model_dir)
    model.train()
    report = evaluate(model, tok, [world_test[0]], limit=3, progress=False, n_resamples=50,
                      rollout_cfg=RolloutConfig(max_turns=1, max_turn_tokens=6))
    assert model.training
    assert report.datasets["world"]["n"] == 3 and sum(report.datasets["world"]["finish_reasons"].values()) == 3


def test_cli_eval_writes_json_markdown_and_samples(tiny_model_dir: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "res.json"
    code = cli_main(["eval", "--model", str(tiny_model_dir), "--data", "world", "--limit", "4", "--max-turns", "1",
                     "--max-turn-tokens", "4", "--prefix", "<search>", "--out", str(out), "--samples",
                     str(tmp_path / "s.jsonl"), "--no-progress", "--resamples", "50", "--device", "cpu"])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["datasets"]["world"]["n"] == 4 and report["settings"]["protocol"]["assistant_prefix"] == "<search>"
    assert out.with_suffix(".md").read_text().startswith("| metric | world |")
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 4
    assert "| EM |" in capsys.readouterr().out
    # Run again into the same files: refused before any work without --overwrite, replaced with it.
    again = ["eval", "--model", str(tiny_model_dir), "--data", "world", "--limit", "2", "--max-turns", "1",
             "--max-turn-tokens", "4", "--out", str(out), "--samples", str(tmp_path / "s.jsonl"), "--no-progress",
             "--resamples", "50", "--device", "cpu"]
    assert cli_main(again) == 2
    assert capsys.readouterr().err == (f"searchrl eval: error: --out {out}: already exists (a searchrl eval report); "
                                       "pass --overwrite to replace it, or choose another --out\n")
    assert json.loads(out.read_text())["datasets"]["world"]["n"] == 4
    assert cli_main([*again, "--overwrite"]) == 0
    assert json.loads(out.read_text())["datasets"]["world"]["n"] == 2
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 2
    capsys.readouterr()
    assert cli_main(["eval", "--model", str(tiny_model_dir), "--template", "nope"]) == 2
    assert "--template 'nope': not a preset" in capsys.readouterr().err
    bad = tmp_path / "p.yaml"
    bad.write_text("instruction: 'Q: {question}'\nfew_shot: x\n")
    assert cli_main(["eval", "--model", str(tiny_model_dir), "--template", str(bad)]) == 2
    assert f"{bad}.few_shot: unknown key" in capsys.readouterr().err


def test_cli_eval_paired_with_an_earlier_evaluation(tiny_model_dir: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    common = ["eval", "--model", str(tiny_model_dir), "--data", "world", "--limit", "6", "--max-turns", "1",
              "--max-turn-tokens", "4", "--no-progress", "--resamples", "200", "--device", "cpu"]
    first = tmp_path / "first.jsonl"
    assert cli_main([*common, "--samples", str(first)]) == 0
    capsys.readouterr()
    # The same model on the same questions: a paired difference of exactly 0.
    out = tmp_path / "again.json"
    assert cli_main([*common, "--paired-with", str(first), "--out", str(out)]) == 0
    (paired,) = json.loads(out.read_text())["paired"]
    assert paired["with"] == str(first)
    assert paired["datasets"]["world"] == {"n": 6, "em_gain": 0.0, "em_ci_low": 0.0, "em_ci_high": 0.0,
                                           "f1_gain": 0.0, "f1_ci_low": 0.0, "f1_ci_high": 0.0}
    assert "Paired against" in capsys.readouterr().out
    # An earlier run that got every question right: this one is 1 - (its EM) behind, on every question. Both
    # comparisons from one evaluation (--paired-with repeats), each reported under its own file.
    rows = [json.loads(line) for line in first.read_text().splitlines()]
    better = tmp_path / "better.jsonl"
    better.write_text("".join(json.dumps({**r, "em": 1.0, "f1": 1.0}) + "\n" for r in rows))
    assert cli_main([*common, "--paired-with", str(first), "--paired-with", str(better), "--out", str(out),
                     "--overwrite"]) == 0
    same, worse = json.loads(out.read_text())["paired"]
    assert (same["with"], worse["with"]) == (str(first), str(better))
    assert same["datasets"]["world"]["em_gain"] == 0.0
    gain = worse["datasets"]["world"]
    assert gain["em_gain"] == pytest.approx(sum(r["em"] for r in rows) / 6 - 1.0)
    assert gain["em_ci_high"] <= 0.0
    assert capsys.readouterr().out.count("Paired against") == 2
    # A file that is not an evaluation's samples: a clean error naming the file, line and field, before any work.
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps({"dataset": "world", "uid": "world:1", "f1": 0.5}) + "\n")
    assert cli_main([*common, "--paired-with", str(broken)]) == 2
    err = capsys.readouterr().err
    assert f"{broken}:1: field 'em' is missing" in err and "Traceback" not in err
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"dataset": "nq", "uid": "nq:1", "em": 1, "f1": 1}) + "\n")
    assert cli_main([*common, "--paired-with", str(other)]) == 2
    assert "no question of this evaluation is in it" in capsys.readouterr().err


def test_cli_eval_uses_the_settings_an_exported_agent_carries(tiny_model_dir: Path, tmp_path: Path) -> None:
    """A model folder with searchrl_agent.json (final_model/, start_model/) is prompted as it was trained, with its
    turn budgets; flags given on the command line still win."""
    import shutil

    from searchrl.models import write_agent_settings

    agent = tmp_path / "agent"
    shutil.copytree(tiny_model_dir, agent)
    protocol = {"instruction": "Q: {question}\n", "assistant_prefix": "<search> ", "use_chat_template": False}
    write_agent_settings(agent, protocol, {"max_turns": 1, "max_turn_tokens": 3, "max_obs_tokens": 16, "topk": 2,
                                           "temperature": 1.0})
    out = tmp_path / "res.json"
    common = ["--data", "world", "--limit", "2", "--no-progress", "--resamples", "20", "--device", "cpu", "--overwrite"]
    assert cli_main(["eval", "--model", str(agent), "--out", str(out), *common]) == 0
    settings = json.loads(out.read_text())["settings"]
    assert settings["protocol"]["instruction"] == "Q: {question}\n"
    assert settings["protocol"]["assistant_prefix"] == "<search> "
    assert {k: settings["rollout"][k] for k in ("max_turns", "max_turn_tokens", "max_obs_tokens", "topk")} == {
        "max_turns": 1, "max_turn_tokens": 3, "max_obs_tokens": 16, "topk": 2}
    assert cli_main(["eval", "--model", str(agent), "--out", str(out), "--max-turn-tokens", "5", *common]) == 0
    assert json.loads(out.read_text())["settings"]["rollout"]["max_turn_tokens"] == 5
    (agent / "searchrl_agent.json").write_text("{not json")
    assert cli_main(["eval", "--model", str(agent), *common]) == 2


def test_a_checkpoint_is_evaluated_with_its_runs_protocol(tiny_model_dir: Path, tmp_path: Path) -> None:
    """A checkpoint (RUN/checkpoints/step_N) carries no searchrl_agent.json: its run's config.yaml gives the protocol
    and budgets (evaluated with the default prompt, a multihop checkpoint scored 0.105 instead of 0.355 on dev)."""
    import shutil

    from searchrl.errors import SearchRLError
    from searchrl.models import read_agent_settings

    run = tmp_path / "run"
    ckpt = run / "checkpoints" / "step_000003"
    shutil.copytree(tiny_model_dir, ckpt)
    assert read_agent_settings(ckpt) is None  # no config.yaml: not a run's checkpoint
    (run / "config.yaml").write_text("protocol:\n  instruction: \"Q: {question}\\n\"\n  assistant_prefix: <search>\n"
                                     "  use_chat_template: false\nrollout:\n  max_turns: 1\n  max_turn_tokens: 3\n"
                                     "  max_obs_tokens: 16\n  topk: 2\n  temperature: 1.0\n")
    saved = read_agent_settings(ckpt)
    assert saved["source"] == str(run / "config.yaml") and saved["protocol"]["assistant_prefix"] == "<search>"
    out = tmp_path / "res.json"
    common = ["--data", "world", "--limit", "2", "--no-progress", "--resamples", "20", "--device", "cpu"]
    assert cli_main(["eval", "--model", str(ckpt), "--out", str(out), *common]) == 0
    settings = json.loads(out.read_text())["settings"]
    assert settings["protocol"]["instruction"] == "Q: {question}\n"
    assert settings["protocol"]["assistant_prefix"] == "<search>"
    assert settings["rollout"]["max_turns"] == 1 and settings["rollout"]["topk"] == 2
    (run / "config.yaml").write_text("protocol: [unclosed\n")
    with pytest.raises(SearchRLError, match="config.yaml: the run's configuration is not readable"):
        read_agent_settings(ckpt)


def test_cli_protocol_from_template_files(tmp_path: Path) -> None:
    import argparse

    from searchrl.evaluation.cli import add_arguments, build_protocol

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    spec = tmp_path / "one_shot.yaml"
    spec.write_text("preset: search_r1_prefill_search\nfew_shot_question: who wrote X\n"
                    "few_shot_response: <answer>Y</answer>\n")
    p = build_protocol(parser.parse_args(["--template", str(spec), "--chat-template", "off"]))
    assert p.assistant_prefix == "<search>" and p.few_shot_question == "who wrote X" and p.use_chat_template is False
    text = tmp_path / "prompt.txt"
    text.write_text("Q: {question}\nA:")
    p = build_protocol(parser.parse_args(["--template", str(text), "--prefix", "<think>"]))
    assert p.instruction == "Q: {question}\nA:" and p.assistant_prefix == "<think>"
    text.write_text("no placeholder")
    with pytest.raises(ConfigError, match="placeholder"):
        build_protocol(parser.parse_args(["--template", str(text)]))
    assert "without detailed" in build_protocol(parser.parse_args(["--mode", "direct"])).instruction


# --- a retriever that fails ------------------------------------------------------------------------------


class FailingRetriever:
    """Fails every call that carries one of `bad` queries; answers the rest with `inner`."""

    def __init__(self, inner, bad: set[str]) -> None:
        self.inner, self.bad, self.calls = inner, bad, 0

    def search(self, queries, topk=3):
        self.calls += 1
        if self.bad & set(queries):
            raise RuntimeError("connection refused")
        return self.inner.search(queries, topk=topk)


def test_questions_whose_search_failed_are_left_out_of_the_scores_and_counted(tokenizer, world_test) -> None:
    from searchrl.retrieval.index import load_retriever

    source, oracles = world_test
    chosen, _ = stratified_sample(source.questions, 8, 0)
    by_uid = {o.uid: o for o in oracles}
    bad = {by_uid[chosen[0].uid].queries[0], by_uid[chosen[3].uid].queries[-1]}
    failing = {q.uid for q in chosen if bad & set(by_uid[q.uid].queries)}
    retriever = FailingRetriever(load_retriever(str(source.corpus_path)), bad)
    report = evaluate(ScriptedBackend(tokenizer, oracle_script(oracles)), tokenizer, [source], retriever=retriever,
                      limit=8, batch_size=1, progress=False, n_resamples=50,
                      rollout_cfg=RolloutConfig(retrieval_backoff_s=0))  # batch_size=1: a failure hits one question
    world = report.datasets["world"]
    assert world["retrieval_errors"] == len(failing) >= 2 and report.macro["retrieval_errors"] == len(failing)
    assert world["finish_reasons"]["retrieval_error"] == len(failing)
    assert world["n"] == 8 - len(failing) and world["em"] == 1.0  # failures are not scored as wrong answers
    failed = [r for r in report.records if r["finish_reason"] == "retrieval_error"]
    assert {r["uid"] for r in failed} == failing and "connection refused" in failed[0]["retrieval_error"]
    table = report.to_markdown()
    assert f"| retrieval errors | {len(failing)} |" in table and "WARNING" in table
    assert json.loads(report.to_json())["datasets"]["world"]["retrieval_errors"] == len(failing)


def test_an_unreachable_retriever_url_fails_before_the_model_is_loaded(monkeypatch: pytest.MonkeyPatch,
                                                                       world_test) -> None:
    import searchrl.models
    from searchrl.errors import RetrievalError
    from searchrl.retrieval import client

    monkeypatch.setattr(client, "backoff_delay", lambda *a: 0.0)  # the client's retries, without their waits
    monkeypatch.setattr(searchrl.models, "load_policy", lambda *a, **k: pytest.fail("the model was loaded"))
    with pytest.raises(RetrievalError) as err:
        evaluate("default", None, [world_test[0]], retriever="http://127.0.0.1:9", progress=False)
    msg = str(err.value)
    assert "http://127.0.0.1:9" in msg and "failed a test search" in msg and "searchrl serve" in msg


def test_cli_eval_exits_2_and_says_so_when_searches_failed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                           tokenizer, world_test,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    import searchrl.evaluation.harness as harness

    source, oracles = world_test
    real = harness.evaluate
    retriever = FailingRetriever(None, {o.queries[0] for o in oracles})  # every first search fails

    def scripted(policy, tokenizer_, sources, **kw):  # the CLI's call, with a scripted policy and that retriever
        return real(ScriptedBackend(tokenizer, oracle_script(oracles)), tokenizer, sources,
                    **{**kw, "retriever": retriever, "rollout_cfg": RolloutConfig(retrieval_backoff_s=0)})

    monkeypatch.setattr(harness, "evaluate", scripted)
    out = tmp_path / "res.json"
    code = cli_main(["eval", "--data", "world", "--limit", "3", "--out", str(out), "--no-progress",
                     "--resamples", "20"])
    captured = capsys.readouterr()
    assert code == 2 and "Traceback" not in captured.err
    assert "3 of 3 questions failed retrieval after retries" in captured.err and "connection refused" in captured.err
    assert "| retrieval errors | 3 |" in captured.out  # the table is printed and written, with the count
    assert json.loads(out.read_text())["datasets"]["world"]["retrieval_errors"] == 3


# --- a paired comparison ----------------------------------------------------------------------------------


def test_paired_gain_interval_is_paired_not_two_independent_bootstraps() -> None:
    """Two evaluations of the same questions are highly correlated: a paired bootstrap of the per-question
    differences is much narrower than the difference of two independent (unpaired) bootstraps."""
    from searchrl.evaluation.bootstrap import bootstrap_means, percentile_interval
    from searchrl.evaluation.bootstrap import paired_gain

    rng = np.random.default_rng(0)
    n = 400
    start = (rng.random(n) < 0.5).astype(float)
    final = start.copy()
    final[rng.choice(np.flatnonzero(start == 0), 20, replace=False)] = 1.0  # +0.05 EM, all else unchanged
    g = paired_gain({"per_question_em": {"d": {f"q{i}": start[i] for i in range(n)}}},
                    {"per_question_em": {"d": {f"q{i}": final[i] for i in range(n)}}}, seed=0)["d"]
    assert g["em_gain"] == pytest.approx(0.05) and g["n"] == n
    draws = np.random.default_rng(0)
    unpaired = percentile_interval(bootstrap_means(final, 2000, draws) - bootstrap_means(start, 2000, draws))
    paired_width, unpaired_width = g["ci_high"] - g["ci_low"], unpaired[1] - unpaired[0]
    # sd of the mean: paired √(0.05·0.95/400) ≈ 0.011, unpaired √(2·0.25/400) ≈ 0.035, about 3× wider.
    assert paired_width < 0.5 * unpaired_width
    assert g["ci_low"] > 0 > unpaired[0]  # only the paired interval sees the gain


# --- the real default model ------------------------------------------------------------------------------


@pytest.mark.slow
def test_real_smollm2_on_nq_sample_completes_and_reports(qa_samples: Path) -> None:
    import torch

    from searchrl.models import load_policy
    from searchrl.protocol import ProtocolConfig

    torch.set_num_threads(2)
    model, tok = load_policy("default")
    report = evaluate(model, tok, [str(qa_samples / "nq_oracle")], limit=20, progress=False,
                      protocol_cfg=ProtocolConfig(assistant_prefix="<search>"),
                      rollout_cfg=RolloutConfig(max_turns=1, max_turn_tokens=16, max_obs_tokens=128, topk=1),
                      batch_size=20)
    nq = report.datasets["nq_oracle"]
    assert nq["n"] == 20 and nq["n_total"] == 500 and sum(nq["finish_reasons"].values()) == 20
    for key in ("em", "f1", "cover_em", "answer_in_retrieval", "format_valid"):
        assert 0.0 <= nq[f"{key}_ci_low"] <= nq[key] <= nq[f"{key}_ci_high"] <= 1.0
    assert 0.0 <= nq["searches"] <= 1.0
    assert all(r["text"].startswith("<search>") and r["sampled_tokens"] >= 1 for r in report.records)
    assert report.timing["generation_s"] > 0.5 * report.timing["wall_s"]
    assert "| EM |" in report.to_markdown()
