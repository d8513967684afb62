"""How many bad inputs does the real `searchrl` command turn into a clean error? (issue #16)

Runs the installed `.venv/bin/searchrl` in a subprocess on a list of bad inputs across its commands (train, sft,
eval, index, serve, data): bad YAML, unknown keys, wrong types, missing files, non-UTF-8 files, malformed JSONL
lines, unwritable outputs, files where folders are expected, an unreachable retriever, group_size=1, ... Every
input is meant to fail during validation, in seconds, before a model is loaded.

A result is clean when the command exits non-zero, prints no traceback, and its error message (from the
`error:` line to the end of stderr) is at most two lines and names the offending file, key or value.

    .venv/bin/python benchmarks/probe_bad_inputs.py               # the table and the share of clean errors
    .venv/bin/python benchmarks/probe_bad_inputs.py --only eval   # the cases whose command starts with `eval`
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEARCHRL = REPO / ".venv" / "bin" / "searchrl"
QA = REPO / "tests" / "fixtures" / "qa"
MAX_MESSAGE_LINES = 2


@dataclass
class Case:
    argv: list[str]
    expect: str  # text the message must contain: the offending file, key or value
    note: str = ""  # whose fix it waits on, if not this script's author


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def build_cases(tmp: Path) -> list[Case]:
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
    ]


def error_message(stderr: str) -> list[str]:
    """The error's lines: from the last line holding 'error' (the CLI's `searchrl X: error: ...`) to the end."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    starts = [i for i, ln in enumerate(lines) if "error" in ln.lower()]
    return lines[starts[-1]:] if starts else lines[-3:]


def probe(case: Case, timeout: float) -> tuple[str, bool, str, float]:
    """(exit code as text, clean, one-line message, seconds) for one case."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "2",
           "NO_COLOR": "1", "COLUMNS": "200"}
    start = time.perf_counter()
    try:
        proc = subprocess.run([str(SEARCHRL), *case.argv], capture_output=True, text=True, timeout=timeout,
                              env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "-", False, f"TIMEOUT after {timeout:.0f} s (did not fail during validation)", timeout
    seconds = time.perf_counter() - start
    if "Traceback" in proc.stderr:
        last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
        return str(proc.returncode), False, f"TRACEBACK ({last[:120]})", seconds
    message = error_message(proc.stderr)
    text = " ".join(message)
    clean = (proc.returncode != 0 and bool(message) and len(message) <= MAX_MESSAGE_LINES
             and case.expect in text)
    if proc.returncode == 0:
        tail = proc.stdout.strip().splitlines()[-1:]
        text = "EXIT 0: " + (text or (tail[0] if tail else ""))
    elif len(message) > MAX_MESSAGE_LINES:
        text = f"({len(message)} lines) " + text
    elif case.expect not in text:
        text = f"(does not name {case.expect!r}) " + text
    return str(proc.returncode), clean, text, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="run the cases whose command starts with this word")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds per case (default %(default)s)")
    parser.add_argument("--width", type=int, default=150, help="characters of each message shown")
    args = parser.parse_args()
    if not SEARCHRL.is_file():
        print(f"{SEARCHRL} not found; run `make install` first", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="searchrl-probe-") as tmp_name:
        tmp = Path(tmp_name)
        cases = [c for c in build_cases(tmp) if args.only is None or c.argv[0] == args.only]
        results = []
        for i, case in enumerate(cases, 1):
            code, clean, text, seconds = probe(case, args.timeout)
            results.append(clean)
            shown = " ".join(a.replace(str(tmp), "$TMP") for a in case.argv)
            text = text.replace(str(tmp), "$TMP")
            mark = "ok " if clean else "BAD"
            note = f" [awaits: {case.note}]" if case.note and not clean else ""
            print(f"{i:>2} {mark} exit {code:>3} {seconds:5.1f}s  searchrl {shown}", flush=True)
            print(f"       {text[: args.width]}{note}", flush=True)
        for path in tmp.rglob("*"):  # a read-only folder must be writable again to be removed
            if path.is_dir():
                path.chmod(0o755)
    n_clean = sum(results)
    print(f"\nclean errors: {n_clean}/{len(results)} ({100 * n_clean / max(1, len(results)):.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
