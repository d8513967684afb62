"""Loaders: FlashRAG JSONL, Search-R1 parquet, folders, specs, benchmark names (offline error path)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from searchrl.cli import main as cli_main
from searchrl.data import (
    DataSource,
    Question,
    load_flashrag_jsonl,
    load_parquet,
    load_source,
    load_sources,
    question_from_searchr1_prompt,
)
from searchrl.data.loaders import split_questions
from searchrl.errors import DataError

SEARCH_R1_PROMPT = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get "
    "new information. After reasoning, if you find you lack some knowledge, you can call a search engine by "
    "<search> query </search> and it will return the top searched results between <information> and "
    "</information>. You can search as many times as your want. If you find no further external knowledge "
    "needed, you can directly provide the answer inside <answer> and </answer>, without detailed illustrations. "
    "For example, <answer> Beijing </answer>. Question: {q}\n"
)


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def flashrag_rows(n: int = 3) -> list[dict]:
    return [{"id": f"q{i}", "question": f"who wrote book {i}", "golden_answers": [f"Author {i}"],
             "metadata": {"type": "single-hop" if i % 2 else "bridge"}} for i in range(n)]


# --- FlashRAG JSONL ------------------------------------------------------------------------------------


def test_flashrag_jsonl_reads_rows_and_names_source_after_folder(tmp_path: Path) -> None:
    folder = tmp_path / "nq"
    folder.mkdir()
    path = write_jsonl(folder / "test.jsonl", [*flashrag_rows(3), ""])  # trailing blank line is fine
    qs = load_flashrag_jsonl(path)
    assert [q.id for q in qs] == ["q0", "q1", "q2"]
    assert qs[1].golden_answers == ["Author 1"] and qs[1].metadata == {"type": "single-hop"}
    assert {q.data_source for q in qs} == {"nq"}  # FlashRAG layout {dataset}/{split}.jsonl
    assert qs[0].uid == "nq:q0"


@pytest.mark.parametrize(
    ("bad_line", "expected"),
    [
        ("{not json", ":2: invalid JSON"),
        (json.dumps({"id": "x", "question": "q?"}), ":2: field 'golden_answers' is missing"),
        (json.dumps({"id": "x", "question": "q?", "golden_answers": 5}), ":2: field 'golden_answers' must be a list"),
        (json.dumps({"id": "x", "question": "q?", "golden_answers": []}), ":2: field 'golden_answers' is empty"),
        (json.dumps({"id": "x", "question": "", "golden_answers": ["a"]}), ":2: field 'question' must be"),
        (json.dumps({"question": "q?", "golden_answers": ["a"]}), ":2: field 'id' is missing"),
        (json.dumps({"id": "x", "question": "q?", "golden_answers": ["a"], "metadata": [1]}), ":2: field 'metadata'"),
        (json.dumps(["a", "b"]), ":2: expected a JSON object"),
        (json.dumps({"id": "q0", "question": "q?", "golden_answers": ["a"]}), ":2: field 'id' repeats 'q0'"),
    ],
)
def test_flashrag_jsonl_errors_name_file_line_and_field(tmp_path: Path, bad_line: str, expected: str) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", [flashrag_rows(1)[0], bad_line])
    with pytest.raises(DataError) as err:
        load_flashrag_jsonl(path)
    assert str(path) in str(err.value) and expected in str(err.value)


def test_flashrag_jsonl_coerces_numeric_answers_and_ids(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "years.jsonl", [{"id": 7, "question": "when?", "golden_answers": [1912, "1912"]}])
    (q,) = load_flashrag_jsonl(path)
    assert q.id == "7" and q.golden_answers == ["1912", "1912"] and q.data_source == "years"


def test_a_non_utf8_line_names_the_file_and_line_and_a_bom_is_accepted(tmp_path: Path) -> None:
    row = json.dumps(flashrag_rows(1)[0]).encode()
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(row + b"\n" + '{"id": "x", "question": "caf\u00e9?", "golden_answers": ["a"]}\n'.encode("latin-1"))
    with pytest.raises(DataError, match=r"latin1\.jsonl:2: not valid UTF-8 .*save the file as UTF-8"):
        load_flashrag_jsonl(path)
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + row + b"\n")  # Windows editors start files with a byte-order mark
    assert [q.id for q in load_flashrag_jsonl(bom)] == ["q0"]


def test_empty_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="empty"):
        load_flashrag_jsonl(write_jsonl(tmp_path / "e.jsonl", []))
    with pytest.raises(DataError, match="cannot read"):
        load_flashrag_jsonl(tmp_path / "missing.jsonl")


# --- Search-R1 parquet ---------------------------------------------------------------------------------


def searchr1_table(rows: list[tuple[str, str, list[str], int]]) -> pa.Table:
    return pa.Table.from_pylist([
        {"data_source": src,
         "prompt": [{"role": "user", "content": SEARCH_R1_PROMPT.format(q=q)}],
         "ability": "fact-reasoning",
         "reward_model": {"style": "rule", "ground_truth": {"target": answers}},
         "extra_info": {"split": "test", "index": index}}
        for src, q, answers, index in rows
    ])


def test_searchr1_parquet_extracts_question_answers_and_source(tmp_path: Path) -> None:
    path = tmp_path / "test.parquet"
    pq.write_table(searchr1_table([
        ("nq", "who got the first nobel prize in physics?", ["Wilhelm Conrad Röntgen"], 0),
        ("hotpotqa", "which came first, A or B?", ["A"], 0),  # same per-source index as the nq row
        ("nq", "when did x happen?", ["1901", "in 1901"], 1),
    ]), path)
    qs = load_parquet(path)
    assert [q.question for q in qs] == ["who got the first nobel prize in physics?", "which came first, A or B?",
                                        "when did x happen?"]
    assert [q.data_source for q in qs] == ["nq", "hotpotqa", "nq"]
    assert qs[2].golden_answers == ["1901", "in 1901"]
    # Search-R1's per-source index collides across sources; the uid does not.
    assert qs[0].id == qs[1].id == "0" and qs[0].uid != qs[1].uid
    assert qs[0].metadata == {"split": "test"}


def test_searchr1_parquet_row_errors(tmp_path: Path) -> None:
    table = searchr1_table([("nq", "ok?", ["a"], 0)]).to_pylist()
    broken = dict(table[0], reward_model={"style": "rule", "ground_truth": {"other": ["a"]}})
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist([table[0], broken]), path)
    with pytest.raises(DataError) as err:
        load_parquet(path)
    assert f"{path}: row 1" in str(err.value) and "reward_model.ground_truth.target" in str(err.value)

    no_question = dict(table[0], prompt=[{"role": "user", "content": "Answer something."}])
    path2 = tmp_path / "noq.parquet"
    pq.write_table(pa.Table.from_pylist([no_question]), path2)
    with pytest.raises(DataError, match=r"row 0: field 'prompt' holds no 'Question: \.\.\.'"):
        load_parquet(path2)

    path3 = tmp_path / "dupe.parquet"
    pq.write_table(searchr1_table([("nq", "a?", ["a"], 3), ("nq", "b?", ["b"], 3)]), path3)
    with pytest.raises(DataError, match="row 1: question 'nq:3' repeats"):
        load_parquet(path3)

    junk = tmp_path / "junk.parquet"
    junk.write_text("this is not parquet")
    with pytest.raises(DataError, match="not a readable parquet file"):
        load_parquet(junk)


def test_flashrag_style_parquet(tmp_path: Path) -> None:
    path = tmp_path / "flash.parquet"
    pq.write_table(pa.Table.from_pylist(flashrag_rows(2)), path)
    qs = load_parquet(path)
    assert [q.id for q in qs] == ["q0", "q1"] and qs[0].data_source == "flash"


def test_question_from_prompt_variants() -> None:
    assert question_from_searchr1_prompt(SEARCH_R1_PROMPT.format(q="where is x?")) == "where is x?"
    assert question_from_searchr1_prompt([{"role": "system", "content": "Question: no"},
                                          {"role": "user", "content": "Question:   spaced out?  \n"}]) == "spaced out?"
    assert question_from_searchr1_prompt("no marker") is None
    assert question_from_searchr1_prompt("Question:   \n") is None


# --- folders and specs ---------------------------------------------------------------------------------


def test_folder_source_with_corpus_and_splits(tmp_path: Path) -> None:
    folder = tmp_path / "mydata"
    folder.mkdir()
    write_jsonl(folder / "train.jsonl", flashrag_rows(4))
    write_jsonl(folder / "test.jsonl", flashrag_rows(6)[4:])  # held-out questions: none of train's
    write_jsonl(folder / "corpus.jsonl", [{"id": "0", "contents": '"T"\ntext'}])
    src = load_source(str(folder))
    assert isinstance(src, DataSource)
    assert src.name == "mydata" and src.split == "test" and len(src.questions) == 2  # test before train
    assert src.corpus_path == folder / "corpus.jsonl"
    assert len(load_source(str(folder), split="train").questions) == 4
    assert len(load_source(f"{folder}@train").questions) == 4
    renamed = load_source(f"other={folder}@train")
    assert renamed.name == "other" and {q.data_source for q in renamed.questions} == {"other"}
    with pytest.raises(DataError, match="no question file found"):
        load_source(str(folder), split="dev")


def test_single_file_source_picks_up_sibling_corpus(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "questions.jsonl", flashrag_rows(2))
    assert load_source(str(tmp_path / "questions.jsonl")).corpus_path is None
    write_jsonl(tmp_path / "corpus.jsonl", [{"id": "0", "contents": '"T"\ntext'}])
    assert load_source(str(tmp_path / "questions.jsonl")).corpus_path == tmp_path / "corpus.jsonl"


def test_real_sample_folders_load(qa_samples: Path) -> None:
    nq = load_source(str(qa_samples / "nq_oracle"))
    assert nq.name == "nq_oracle" and len(nq.questions) == 500
    assert nq.corpus_path == qa_samples / "nq_oracle" / "corpus.jsonl"
    hotpot = load_source(str(qa_samples / "hotpotqa_distractor"))
    assert {q.metadata["type"] for q in hotpot.questions} == {"bridge", "comparison"}


def test_nq_outside_shares_no_question_or_passage_with_nq_oracle() -> None:
    """The outside-the-folder NQ test set (examples/build_nq_outside.py) is disjoint from the folder nq_cpu trains
    on, loads whole as a test split, and every question's gold passage holds one of its answers."""
    fixtures = Path(__file__).parent / "fixtures" / "qa"  # shipped, whatever SEARCHRL_TEST_DATA says
    outside = load_source(str(fixtures / "nq_outside"))
    assert outside.split == "test" and len(outside.questions) == 492
    folder = [json.loads(line) for line in (fixtures / "nq_oracle" / "questions.jsonl").open()]
    assert not {q.question for q in outside.questions} & {q["question"] for q in folder}
    passages = {p["id"]: p for p in map(json.loads, (fixtures / "nq_outside" / "corpus.jsonl").open())}
    folder_texts = {p["text"] for p in map(json.loads, (fixtures / "nq_oracle" / "corpus.jsonl").open())}
    assert len(passages) == 979 and not {p["text"] for p in passages.values()} & folder_texts
    for q in outside.questions:
        gold = passages[q.metadata["gold_doc_id"]]["contents"].lower()
        assert any(answer.lower() in gold for answer in q.golden_answers), q.id


def test_unknown_specs_explain_what_is_accepted(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such file or folder"):
        load_source(str(tmp_path / "nope.jsonl"))
    with pytest.raises(DataError, match="known benchmark"):
        load_source("not_a_benchmark")
    with pytest.raises(DataError, match="splits 'train', 'dev', 'test', not 'val'"):
        load_source("world@val")
    weird = tmp_path / "q.csv"
    weird.write_text("a,b\n")
    with pytest.raises(DataError, match="unsupported file type"):
        load_source(str(weird))


def test_duplicate_source_names_rejected(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "a.jsonl", flashrag_rows(1))
    with pytest.raises(DataError, match="share the name"):
        load_sources(f"{tmp_path / 'a.jsonl'},{tmp_path / 'a.jsonl'}")
    two = load_sources(f"x={tmp_path / 'a.jsonl'},y={tmp_path / 'a.jsonl'}")
    assert [s.name for s in two] == ["x", "y"]


def test_benchmark_name_offline_error_says_how_to_supply_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError) as err:
        load_source("nq")
    msg = str(err.value)
    assert "nq" in msg and "offline" in msg and "nq/test.jsonl" in msg and "hf download" in msg
    with pytest.raises(DataError, match="hotpotqa/dev.jsonl"):  # the papers' eval split per benchmark
        load_source("HotpotQA")
    with pytest.raises(DataError, match="2wikimultihopqa/dev.jsonl"):
        load_source("2wiki")


def test_cli_data_show_reports_errors_without_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write_jsonl(tmp_path / "bad.jsonl", ["{oops"])
    assert cli_main(["data", "show", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1: invalid JSON" in err and "Traceback" not in err
    good = write_jsonl(tmp_path / "good.jsonl", flashrag_rows(2))
    assert cli_main(["data", "show", str(good), "-n", "1"]) == 0
    assert "good: 2 questions" in capsys.readouterr().out


# --- derived train / dev / test splits of an undivided questions file ----------------------------------


def numbered(n: int, start: int = 0) -> list[Question]:
    return [Question(id=f"q{i}", question=f"question {i}", golden_answers=["a"], data_source="x")
            for i in range(start, start + n)]


def test_split_questions_is_disjoint_seeded_order_free_and_stable() -> None:
    questions = numbered(2000)
    parts = split_questions(questions, seed=0)
    ids = {name: [q.id for q in part] for name, part in parts.items()}
    assert list(ids) == ["train", "dev", "test"]
    assert sorted(sum(ids.values(), []), key=lambda x: int(x[1:])) == [q.id for q in questions]  # a partition
    assert len(set(sum(ids.values(), []))) == 2000
    for name, share in (("train", 0.6), ("dev", 0.1), ("test", 0.3)):
        assert abs(len(ids[name]) / 2000 - share) < 0.03, name  # binomial: ±0.007 (dev) to ±0.009 (train) sd
        assert ids[name] == sorted(ids[name], key=lambda x: int(x[1:]))  # input order kept
    assert {k: [q.id for q in v] for k, v in split_questions(questions[::-1], seed=0).items()} == \
        {k: v[::-1] for k, v in ids.items()}  # the file's order does not matter
    assert {k: [q.id for q in v] for k, v in split_questions(questions, seed=0).items()} == ids  # deterministic
    assert [q.id for q in split_questions(questions, seed=1)["test"]] != ids["test"]  # seeded
    # Stable: appending questions never moves an old one to another part (no test question leaks into train).
    grown = split_questions(questions + numbered(500, start=2000), seed=0)
    for name in ids:
        assert [q.id for q in grown[name]][: len(ids[name])] == ids[name]
    halves = split_questions(questions, seed=0, fractions=(0.5, 0.0, 0.5))
    assert halves["dev"] == [] and len(halves["train"]) + len(halves["test"]) == 2000
    with pytest.raises(ValueError, match="summing to 1"):
        split_questions(questions, fractions=(0.8, 0.1))


def test_a_folder_with_only_questions_jsonl_trains_on_train_and_holds_out_test(qa_samples: Path) -> None:
    from searchrl.training.config import DataConfig

    folder = qa_samples / "nq_oracle"  # questions.jsonl + corpus.jsonl, no per-split files
    cfg = DataConfig()
    train = load_source(str(folder), split=cfg.train_split)  # what `searchrl train data.train=FOLDER` loads
    val = load_source(str(folder), split=cfg.val_split)
    parts = {name: load_source(f"{folder}@{name}") for name in ("train", "dev", "test")}
    assert [q.uid for q in train.questions] == [q.uid for q in parts["train"].questions]
    ids = {name: {q.id for q in src.questions} for name, src in parts.items()}
    assert not ids["train"] & ids["dev"] and not ids["train"] & ids["test"] and not ids["dev"] & ids["test"]
    assert not ids["train"] & {q.id for q in val.questions}  # validation never sees a training question
    assert len(ids["train"]) + len(ids["dev"]) + len(ids["test"]) == 500
    assert 250 <= len(ids["train"]) <= 350 and 30 <= len(ids["dev"]) <= 70 and 110 <= len(ids["test"]) <= 190
    for name, src in parts.items():
        assert src.split == name and src.name == "nq_oracle" and src.corpus_path == folder / "corpus.jsonl"
        assert f"{name} part of a 60/10/30 train/dev/test split" in src.origin
    assert {q.id for q in load_source(str(folder), split="validation").questions} == ids["dev"]
    assert {q.id for q in load_source(f"{folder / 'questions.jsonl'}@test").questions} == ids["test"]  # a file too
    assert len(load_source(str(folder)).questions) == 500  # no split asked: the whole file


def test_per_split_files_win_over_the_derived_split(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "questions.jsonl", flashrag_rows(40))
    write_jsonl(tmp_path / "dev.jsonl", flashrag_rows(3))
    assert len(load_source(str(tmp_path), split="dev").questions) == 3
    assert load_source(str(tmp_path), split="val").split == "dev"  # dev.jsonl answers for val too
    assert load_source(str(tmp_path), split="train").split == "train"  # no train.jsonl: cut from questions.jsonl
    write_jsonl(tmp_path / "train.jsonl", flashrag_rows(5))
    assert len(load_source(str(tmp_path / "train.jsonl"), split="test").questions) == 5  # a split file is whole


def test_a_derived_split_that_comes_out_empty_says_so(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "questions.jsonl", flashrag_rows(2))
    empty = next(name for name, part in split_questions(load_source(str(tmp_path)).questions).items() if not part)
    with pytest.raises(DataError, match=f"the '{empty}' part of its 60/10/30 train/dev/test split is empty"):
        load_source(str(tmp_path), split=empty)


def test_a_folder_without_questions_says_which_files_it_expects(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(tmp_path / "corpus.jsonl", [{"id": "0", "contents": '"T"\ntext'}])
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(DataError) as err:
        load_source(str(tmp_path), split="train")
    msg = str(err.value)
    assert "train.jsonl or train.parquet or questions.jsonl (to cut into train/dev/test)" in msg
    assert "the folder holds corpus.jsonl, notes.txt" in msg
    with pytest.raises(DataError, match="expected questions.jsonl .* or per-split files train.jsonl, dev.jsonl"):
        load_source(str(tmp_path))
    assert cli_main(["data", "show", str(tmp_path)]) == 2
    err_text = capsys.readouterr().err
    assert "questions.jsonl" in err_text and "Traceback" not in err_text and len(err_text.splitlines()) == 1


# --- a train split that leaks into dev or test -------------------------------------------------------------


def test_a_question_in_both_train_and_a_held_out_file_is_refused(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    rows = flashrag_rows(8)
    folder = tmp_path / "leaky"
    folder.mkdir()
    write_jsonl(folder / "train.jsonl", rows[:5])
    write_jsonl(folder / "dev.jsonl", [rows[4], rows[5]])  # q4 is trained on and validated on
    write_jsonl(folder / "test.jsonl", rows[6:])
    with pytest.raises(DataError) as info:
        load_source(f"{folder}@train")
    assert str(info.value) == (f"{folder / 'train.jsonl'}: 1 question(s) of its train split are also in "
                               f"{folder / 'dev.jsonl'} (same id and question; e.g. ids q4); the dev scores would "
                               "count questions trained on: remove them from one of the files")
    with pytest.raises(DataError, match=rf"{folder / 'dev.jsonl'}: 1 question\(s\) of its dev split are also in "
                                        rf"{folder / 'train.jsonl'}"):
        load_source(str(folder), split="dev")
    assert [q.id for q in load_source(str(folder), split="test").questions] == ["q6", "q7"]  # test is clean
    assert cli_main(["data", "show", f"{folder}@val"]) == 2
    assert "e.g. ids q4" in capsys.readouterr().err
    write_jsonl(folder / "test.jsonl", rows[:3] + rows[6:])  # three more, into test: a few ids are named
    write_jsonl(folder / "dev.jsonl", [rows[5]])
    with pytest.raises(DataError, match=r"3 question\(s\) of its test split .* e.g. ids q0, q1, q2\)"):
        load_source(str(folder), split="test")


def test_ids_numbered_from_zero_in_each_split_are_not_a_leak(tmp_path: Path) -> None:
    # Search-R1's parquet numbers each split's rows from 0: the same id with another question is no leak.
    folder = tmp_path / "searchr1"
    folder.mkdir()
    pq.write_table(searchr1_table([("nq", "who is a", ["a"], 0), ("nq", "who is b", ["b"], 1)]),
                   folder / "train.parquet")
    pq.write_table(searchr1_table([("nq", "who is c", ["c"], 0)]), folder / "test.parquet")
    assert len(load_source(str(folder), split="train").questions) == 2
    pq.write_table(searchr1_table([("nq", "who is b", ["b"], 1)]), folder / "test.parquet")
    with pytest.raises(DataError, match=r"test.parquet: 1 question\(s\) of its test split are also in"):
        load_source(str(folder), split="test")
