"""How many bad inputs does the real `searchrl` command turn into a clean error? (issue #16)

Runs the installed `.venv/bin/searchrl` in a subprocess on a list of bad inputs across its commands (train, sft,
eval, index, serve, data): bad YAML, unknown keys, wrong types, missing files, non-UTF-8 files, malformed JSONL
lines, unwritable outputs, files where folders are expected, an unreachable retriever, group_size=1, ... Every
input is meant to fail during validation, in seconds, before a model is loaded.

A result is clean when the command exits non-zero, prints no traceback, and its error message (from the
`error:` line to the end of stderr) is at most two lines and names the offending file, key or value.

Each case belongs to a class, and a failure is counted in the class of what went wrong:

- traceback: a traceback instead of a message;
- silent accept: exit 0 on an input that must be refused (a key given twice, a train split leaking into test), or,
  for the inputs that must be accepted with a warning (`kind="warn"`), no warning;
- data loss: a file the case protects (the user's data beside an output: a corpus, questions, notes) changed or
  vanished, whatever the exit code: outputs must never replace what the command did not write, nor its inputs;
- hang: no answer within --timeout (an alias bomb must be refused in seconds);
- unclear: refused, but the message is longer than two lines or does not name what it should.

    .venv/bin/python benchmarks/probe_bad_inputs.py               # the table, the share of clean errors, the classes
    .venv/bin/python benchmarks/probe_bad_inputs.py --only eval   # the cases whose command starts with `eval`
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEARCHRL = REPO / ".venv" / "bin" / "searchrl"
QA = REPO / "tests" / "fixtures" / "qa"
MAX_MESSAGE_LINES = 2


@dataclass
class Case:
    argv: list[str]
    expect: str  # text the message must contain: the offending file, key or value (for "warn": the warning)
    note: str = ""  # whose fix it waits on, if not this script's author
    kind: str = "error"  # "error": must be refused; "warn": must succeed and print `expect`
    protect: tuple[Path, ...] = ()  # files and folders that must be left exactly as they were


def snapshot(paths: tuple[Path, ...]) -> dict[str, bytes | None]:
    """The bytes of every file below `paths` (None for a path that does not exist)."""
    out: dict[str, bytes | None] = {}
    for path in paths:
        files = [path] if not path.is_dir() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            out[str(file)] = file.read_bytes() if file.is_file() else None
    return out


def bomb_yaml(key: str, levels: int = 9) -> str:
    """A "billion laughs" document (9^levels strings once expanded) whose last alias is the value of `key`."""
    lines = ['l0: &l0 ["ha", "ha", "ha", "ha", "ha", "ha", "ha", "ha", "ha"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    section, _, name = key.rpartition(".")
    tail = f"{section}:\n  {name}: *l{levels - 1}\n" if section else f"{name}: *l{levels - 1}\n"
    return "\n".join(lines) + "\n" + tail


def dataset(folder: Path, *, splits: bool = False) -> Path:
    """A small dataset folder of the user's: questions (or train/test files), a corpus, their own notes."""
    rows = [json.dumps({"id": f"n{i}", "question": f"who is {i}?", "golden_answers": [f"a{i}"]}) for i in range(6)]
    if splits:
        write(folder / "train.jsonl", "\n".join(rows[:4]) + "\n")
        write(folder / "test.jsonl", "\n".join(rows[3:]) + "\n")  # n3 is in both: a leak
    else:
        write(folder / "questions.jsonl", "\n".join(rows) + "\n")
    write(folder / "corpus.jsonl", "".join(json.dumps({"id": str(i), "contents": f'"T{i}"\ntext {i}'}) + "\n"
                                          for i in range(6)))
    write(folder / "notes.md", "# my notes\n")
    return folder


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def build_cases(tmp: Path, tiny_model: Path | None = None) -> list[Case]:
    """The bad inputs, with the files they need written under `tmp`."""
    q_row = json.dumps({"id": "1", "question": "who?", "golden_answers": ["a"]})
    good_q = write(tmp / "good" / "questions.jsonl", q_row + "\n")
    write(tmp / "good" / "corpus.jsonl", json.dumps({"id": "0", "contents": '"T"\nsome text'}) + "\n")
    latin1_q = write(tmp / "latin1" / "questions.jsonl", q_row.encode() + b'\n{"id": "2", "question": "caf\xe9"}\n')
    bad_json_q = write(tmp / "badjson.jsonl", q_row + "\n{oops\n")
    no_answer_q = write(tmp / "noanswer.jsonl", json.dumps({"id": "1", "question": "who?"}) + "\n")
    no_questions = tmp / "noquestions"
    write(no_questions / "corpus.jsonl", json.dumps({"id": "0", "contents": "x"}) + "\n")
    csv = write(tmp / "questions.csv", "id,question\n1,who\n")
    a_file = write(tmp / "a_file.txt", "I am a file\n")
    bad_yaml = write(tmp / "bad.yaml", "train: {lr: 1e-6\n  batch_size: [\n")
    latin1_yaml = write(tmp / "latin1.yaml", "run:\n  name: caf\xe9\n".encode("latin-1"))
    list_yaml = write(tmp / "list.yaml", "- a\n- b\n")
    bad_corpus = write(tmp / "corpus_bad.jsonl", json.dumps({"id": "0", "contents": "x"}) + "\nnot json\n")
    latin1_corpus = write(tmp / "corpus_latin1.jsonl", b'{"id": "0", "contents": "caf\xe9"}\n')
    dup_corpus = write(tmp / "corpus_dup.jsonl", "".join(json.dumps({"id": "7", "contents": f"t{i}"}) + "\n"
                                                          for i in range(2)))
    no_id_corpus = write(tmp / "corpus_noid.jsonl", json.dumps({"contents": "x"}) + "\n")
    folder = tmp / "a_folder"
    folder.mkdir()
    # Root ignores folder permissions: a read-only mount is the honest unwritable place then.
    if os.geteuid() == 0:
        unwritable = Path("/sys/searchrl-probe/results.json")
    else:
        locked = tmp / "locked"
        locked.mkdir()
        locked.chmod(0o555)
        unwritable = locked / "results.json"
    run = ["--quiet", f"run.dir={tmp / 'run'}"]
    url = "http://127.0.0.1:9"  # the discard port: nothing listens there
    return [
        # train / sft: the config
        Case(["train", "--config", str(bad_yaml), *run], "bad.yaml"),
        Case(["train", "--config", str(latin1_yaml), *run], "latin1.yaml"),
        Case(["train", "--config", str(list_yaml), *run], "list.yaml"),
        Case(["train", "--config", str(tmp / "missing.yaml"), *run], "missing.yaml"),
        Case(["train", "train.lrr=1e-6", *run], "train.lrr"),
        Case(["train", "train.lr=fast", *run], "train.lr"),
        Case(["train", "train.batch_size=-4", *run], "train.batch_size"),
        Case(["train", "train.group_size=1", *run], "group_size", "training helper"),
        Case(["train", "algorithm.name=nope", *run], "algorithm.name"),
        Case(["train", "lr", *run], "lr"),
        Case(["train", f"data.train={tmp / 'nowhere'}", *run], "nowhere"),
        Case(["train", f"data.train={no_questions}", *run], "questions.jsonl"),
        Case(["train", f"data.train={latin1_q.parent}", *run], "latin1/questions.jsonl"),
        Case(["train", "--quiet", f"run.dir={a_file}"], "run.dir", "training helper"),
        Case(["train", "--resume", str(tmp / "norun")], "norun"),
        Case(["sft", "--out", str(a_file / "sft")], "a_file.txt", "training helper"),
        Case(["sft", "sft.lr=abc", "--out", str(tmp / "sft")], "sft.lr"),
        # eval
        Case(["eval", "--out", str(folder)], "a_folder"),
        Case(["eval", "--out", str(a_file / "res.json")], "a_file.txt"),
        Case(["eval", "--out", str(unwritable)], str(unwritable.parent)),
        Case(["eval", "--samples", str(a_file / "s.jsonl")], "a_file.txt"),
        Case(["eval", "--data", str(latin1_q)], f"{latin1_q}:2"),
        Case(["eval", "--data", str(bad_json_q)], f"{bad_json_q}:2"),
        Case(["eval", "--data", str(no_answer_q)], "golden_answers"),
        Case(["eval", "--data", str(tmp / "missing.jsonl")], "missing.jsonl"),
        Case(["eval", "--data", "world@val"], "val"),
        Case(["eval", "--data", str(good_q.parent), "--retriever", url], url),
        Case(["eval", "--data", str(good_q.parent), "--retriever", str(tmp / "no_index")], "no_index"),
        Case(["eval", "--limit", "0"], "--limit"),
        Case(["eval", "--limit", "many"], "--limit"),
        Case(["eval", "--template", str(tmp / "no_template.txt")], "no_template.txt"),
        # index / serve
        Case(["index", "build", "--corpus", str(tmp / "nocorpus.jsonl"), "--kind", "bm25", "--out",
              str(tmp / "idx1")], "nocorpus.jsonl"),
        Case(["index", "build", "--corpus", str(bad_corpus), "--kind", "bm25", "--out", str(tmp / "idx2")],
             f"{bad_corpus}:2"),
        Case(["index", "build", "--corpus", str(latin1_corpus), "--kind", "bm25", "--out", str(tmp / "idx3")],
             f"{latin1_corpus}:1"),
        Case(["index", "build", "--corpus", str(no_id_corpus), "--kind", "bm25", "--out", str(tmp / "idx4")],
             "id"),
        Case(["index", "build", "--corpus", str(dup_corpus), "--kind", "bm25", "--out", str(tmp / "idx5")],
             "7", "retrieval helper"),
        Case(["index", "build", "--corpus", str(good_q.parent / "corpus.jsonl"), "--kind", "bm25", "--out",
              str(a_file / "idx")], "a_file.txt", "retrieval helper"),
        Case(["index", "build", "--corpus", str(good_q.parent / "corpus.jsonl"), "--kind", "sparse", "--out",
              str(tmp / "idx6")], "sparse"),
        Case(["index", "info", str(folder)], "a_folder"),
        Case(["index", "search", url, "who"], url),
        Case(["serve", "--index", str(tmp / "no_index")], "no_index"),
        Case(["serve", "--index", str(a_file)], "a_file.txt"),
        Case(["serve", "--index", str(good_q.parent / "corpus.jsonl"), "--port", "70000"], "--port"),
        # data
        Case(["data", "show", str(latin1_q)], f"{latin1_q}:2"),
        Case(["data", "show", str(no_questions)], "questions.jsonl"),
        Case(["data", "show", str(csv)], "questions.csv"),
        Case(["data", "show", f"{no_questions}@train"], "train.jsonl"),
        Case(["data", "world", "--out", str(a_file)], "a_file.txt"),
        Case(["data", "world", "--out", str(tmp / "w"), "--mix", "1,2"], "--mix"),
        *own_cases(tmp, tiny_model),
    ]


def own_cases(tmp: Path, tiny_model: Path | None) -> list[Case]:
    """Cases of the classes data loss, hang and silent accept (issue #60's classes, with new inputs)."""
    work = tmp / "own"
    run = ["--quiet", f"run.dir={work / 'run'}"]
    cases = []

    # data loss: outputs over the user's files or over the command's own inputs
    d1 = dataset(work / "d1")
    cases.append(Case(["eval", "--data", str(d1), "--out", str(d1 / "corpus.jsonl")], "corpus.jsonl", protect=(d1,)))
    d2 = dataset(work / "d2")
    cases.append(Case(["eval", "--data", str(d2), "--samples", str(d2 / "notes.md")], "notes.md", protect=(d2,)))
    d3 = dataset(work / "d3")  # --out names the .md; the .json beside it is the user's
    write(d3 / "summary.json", '{"mine": 1}\n')
    cases.append(Case(["eval", "--data", str(d3), "--out", str(d3 / "summary.md"), "--overwrite"], "summary.json",
                      protect=(d3,)))
    d4 = dataset(work / "d4" / "deep" / "data")  # the corpus two levels below --out
    cases.append(Case(["index", "build", "--corpus", str(d4 / "corpus.jsonl"), "--kind", "bm25", "--out",
                       str(work / "d4"), "--overwrite", "--quiet"], "corpus.jsonl", protect=(work / "d4",)))
    home = work / "home"  # not an index: the user's files
    write(home / ".bashrc", "alias ll='ls -l'\n")
    write(home / "thesis.tex", "\\documentclass{article}\n")
    cases.append(Case(["index", "build", "--corpus", str(d1 / "corpus.jsonl"), "--kind", "bm25", "--out", str(home),
                       "--overwrite", "--quiet"], str(home), protect=(home,)))
    d5 = dataset(work / "d5", splits=True)
    cases.append(Case(["data", "world", "--out", str(d5), "--overwrite", "--people", "20"], str(d5), protect=(d5,)))
    run_copy = work / "report_run"  # a real run's logs; the report may not replace the user's page
    shutil.copytree(REPO / "results" / "demo" / "seed0-xeon-avx512", run_copy)
    write(work / "page" / "index.html", "<html>my page</html>\n")
    cases.append(Case(["report", str(run_copy), "--out", str(work / "page" / "index.html")], "index.html",
                      "training helper", protect=(work / "page",)))
    if tiny_model is not None:  # sft trains (a few seconds on the tiny model), then writes --out
        d6 = dataset(work / "d6")
        cases.append(Case(["sft", f"model.name={tiny_model}", "sft.max_examples=4", "sft.holdout=0",
                           "sft.batch_size=4", "sft.micro_batch_size=4", "--device", "cpu", "--out", str(d6),
                           "--overwrite"], str(d6), "training helper", protect=(d6,)))

    # hang: alias bombs in other places than the run.name
    bomb_cfg = write(work / "bomb_lr.yaml", bomb_yaml("train.lr"))
    cases.append(Case(["train", "--config", str(bomb_cfg), *run], "bomb_lr.yaml"))
    bomb_template = write(work / "bomb_template.yaml", bomb_yaml("instruction"))
    cases.append(Case(["eval", "--template", str(bomb_template)], "bomb_template.yaml"))
    inline = "[" + ", ".join(f"&x{i} [{', '.join([f'*x{i - 1}' if i else 'ha'] * 9)}]" for i in range(9)) + "]"
    cases.append(Case(["train", f"run.name={inline}", *run], "run.name"))
    bomb_sft = write(work / "bomb_sft.yaml", bomb_yaml("sft.data"))
    cases.append(Case(["sft", "--config", str(bomb_sft), "--out", str(work / "sft_bomb")], "bomb_sft.yaml"))

    # silent accept: duplicate keys, a leak between splits; and one accepted with a warning
    twice = write(work / "twice.yaml", "rollout:\n  max_turns: 2\n  topk: 3\n  max_turns: 4\n")
    cases.append(Case(["train", "--config", str(twice), *run], "twice.yaml:4"))
    twice_json = write(work / "twice.json", '{"instruction": "Q: {question}", "instruction": "A: {question}"}\n')
    cases.append(Case(["eval", "--template", str(twice_json)], "twice.json"))
    cases.append(Case(["train", "rollout={max_turns: 2, max_turns: 3}", *run], "max_turns"))
    leak = dataset(work / "leak", splits=True)
    cases.append(Case(["data", "show", str(leak)], "n3"))
    cases.append(Case(["eval", "--data", f"{leak}@train"], "n3"))
    untitled = write(work / "untitled.jsonl", "".join(json.dumps({"id": str(i), "contents": f"passage {i}"}) + "\n"
                                                      for i in range(5)))
    cases.append(Case(["index", "build", "--corpus", str(untitled), "--kind", "bm25", "--out", str(work / "i_u"),
                       "--quiet"], "5 passage(s) do not open with", kind="warn"))
    return cases


def error_message(stderr: str) -> list[str]:
    """The error's lines: from the last line holding 'error' (the CLI's `searchrl X: error: ...`) to the end."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    starts = [i for i, ln in enumerate(lines) if "error" in ln.lower()]
    return lines[starts[-1]:] if starts else lines[-3:]


CLASSES = ("traceback", "silent accept", "data loss", "hang", "unclear")


def probe(case: Case, timeout: float) -> tuple[str, str, str, float]:
    """(exit code as text, outcome: "clean" or one of CLASSES, one-line message, seconds) for one case."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2"),
           "NO_COLOR": "1", "COLUMNS": "200"}
    before = snapshot(case.protect)
    start = time.perf_counter()
    try:
        proc = subprocess.run([str(SEARCHRL), *case.argv], capture_output=True, text=True, timeout=timeout,
                              env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "-", "hang", f"TIMEOUT after {timeout:.0f} s (did not fail during validation)", timeout
    seconds = time.perf_counter() - start
    lost = [name for name, data in before.items() if snapshot((Path(name),)).get(name) != data]
    if lost:
        return str(proc.returncode), "data loss", f"DATA LOSS: {len(lost)} file(s) changed or gone ({lost[0]})", seconds
    if "Traceback" in proc.stderr:
        last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
        return str(proc.returncode), "traceback", f"TRACEBACK ({last[:120]})", seconds
    if case.kind == "warn":
        ok = proc.returncode == 0 and case.expect in proc.stderr
        shown = next((ln for ln in proc.stderr.splitlines() if case.expect in ln), proc.stderr.strip()[-150:])
        return str(proc.returncode), "clean" if ok else "silent accept", ("" if ok else "NO WARNING: ") + shown, seconds
    message = error_message(proc.stderr)
    text = " ".join(message)
    clean = (proc.returncode != 0 and bool(message) and len(message) <= MAX_MESSAGE_LINES
             and case.expect in text)
    outcome = "clean" if clean else "unclear"
    if proc.returncode == 0:
        tail = proc.stdout.strip().splitlines()[-1:]
        text = "EXIT 0: " + (text or (tail[0] if tail else ""))
        outcome = "silent accept"
    elif len(message) > MAX_MESSAGE_LINES:
        text = f"({len(message)} lines) " + text
    elif case.expect not in text:
        text = f"(does not name {case.expect!r}) " + text
    return str(proc.returncode), outcome, text, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="run the cases whose command starts with this word")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds per case (default %(default)s)")
    parser.add_argument("--width", type=int, default=150, help="characters of each message shown")
    parser.add_argument("--no-model", action="store_true", help="skip the cases that need a tiny model (sft)")
    args = parser.parse_args()
    if not SEARCHRL.is_file():
        print(f"{SEARCHRL} not found; run `make install` first", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="searchrl-probe-") as tmp_name:
        tmp = Path(tmp_name)
        tiny = None
        if not args.no_model and args.only in (None, "sft"):
            from searchrl.models import build_tiny_random_model

            tiny = build_tiny_random_model(tmp / "tiny_model")
        cases = [c for c in build_cases(tmp, tiny) if args.only is None or c.argv[0] == args.only]
        outcomes: Counter = Counter()
        awaiting: Counter = Counter()
        for i, case in enumerate(cases, 1):
            code, outcome, text, seconds = probe(case, args.timeout)
            outcomes[outcome] += 1
            if case.note and outcome != "clean":
                awaiting[outcome] += 1
            shown = " ".join(a.replace(str(tmp), "$TMP") for a in case.argv)
            text = text.replace(str(tmp), "$TMP")
            mark = "ok " if outcome == "clean" else "BAD"
            note = f" [awaits: {case.note}]" if case.note and outcome != "clean" else ""
            print(f"{i:>2} {mark} exit {code:>3} {seconds:5.1f}s  searchrl {shown[:300]}", flush=True)
            print(f"       {text[: args.width]}{note}", flush=True)
        for path in tmp.rglob("*"):  # a read-only folder must be writable again to be removed
            if path.is_dir():
                path.chmod(0o755)
    n_clean = outcomes["clean"]
    print(f"\nclean: {n_clean}/{len(cases)} ({100 * n_clean / max(1, len(cases)):.0f}%)")
    print("failures by class: " + ", ".join(f"{c} {outcomes[c]}" + (f" ({awaiting[c]} awaiting another fix)"
                                                                      if awaiting[c] else "") for c in CLASSES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
