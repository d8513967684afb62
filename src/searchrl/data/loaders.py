"""Dataset loaders: FlashRAG JSONL, Search-R1/verl parquet, dataset folders, benchmark names and the world.

One entry point, `load_source(spec, split=None) -> DataSource`. `spec` is one of

- a folder: `{split}.jsonl` / `{split}.parquet` or `questions.jsonl`, with an optional `corpus.jsonl`
  beside it (the layout of FlashRAG's per-dataset folders, and of tests/fixtures/qa);
- a `.jsonl` file in FlashRAG format (`{"id", "question", "golden_answers", "metadata"}`);
- a `.parquet` file in Search-R1/verl format (`prompt`, `reward_model.ground_truth.target`,
  `data_source`; the question is read back from the prompt's `Question: ...`), or a FlashRAG-style parquet;
- a benchmark name as in the papers (`nq`, `triviaqa`, `popqa`, `hotpotqa`, `2wikimultihopqa`, `musique`,
  `bamboogle`), fetched from the Hugging Face dataset `RUC-NLPIR/FlashRAG_datasets` when the machine is online;
- `world` or `world:SEED`: the built-in synthetic world, generated into the cache on first use.

`NAME=SPEC` renames a source (its questions' `data_source` becomes NAME) and `SPEC@SPLIT` picks a split.
A folder (or file) holding one undivided `questions.jsonl` has derived splits: `train`, `dev` and `test` are
the disjoint 60/10/30 parts `split_questions` cuts by a seeded hash of each question id (so `FOLDER@train`
trains and `FOLDER@test` is held out); without a split the whole file is loaded.
A malformed row raises `DataError` naming the file, the line (or parquet row) and the field, and a folder's
train file sharing a question (same id and text) with its dev or test file raises `DataError` naming both.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from searchrl.data.jsonl import iter_jsonl_objects
from searchrl.data.types import Question
from searchrl.data.world import DATA_SOURCE, SPLITS, world_dir
from searchrl.errors import DataError

# The seven benchmarks of Search-R1's table, in the papers' column order, with their evaluation split
# (FlashRAG_datasets names) and the short column titles the papers print.
BENCHMARKS: dict[str, tuple[str, str]] = {
    "nq": ("test", "NQ"),
    "triviaqa": ("test", "TriviaQA"),
    "popqa": ("test", "PopQA"),
    "hotpotqa": ("dev", "HotpotQA"),
    "2wikimultihopqa": ("dev", "2Wiki"),
    "musique": ("dev", "Musique"),
    "bamboogle": ("test", "Bamboogle"),
}
BENCHMARK_ALIASES = {"2wiki": "2wikimultihopqa", "trivia_qa": "triviaqa", "hotpot_qa": "hotpotqa",
                     "natural_questions": "nq", "pop_qa": "popqa"}
FLASHRAG_REPO = "RUC-NLPIR/FlashRAG_datasets"
# Split names FlashRAG and Search-R1 use, in the order a folder is searched when no split is given.
DEFAULT_SPLIT_ORDER = ("questions", "test", "dev", "validation", "val", "train")
_SPLIT_NAMES = {"train", "dev", "test", "val", "validation", "questions"}
# Derived splits of an undivided questions file (`split_questions`), and the names each may be asked for by.
DERIVED_SPLITS = ("train", "dev", "test")
# 30% test: an undivided file is usually small (a few hundred questions), and a paired interval on 50 test
# questions is about ±0.08 EM wide; on 150, about ±0.05.
DEFAULT_SPLIT_FRACTIONS = (0.6, 0.1, 0.3)
SPLIT_SEED = 0  # fixed, so that the trainer's train and validation loads cut the same way
_SPLIT_ALIASES = {"train": "train", "dev": "dev", "val": "dev", "validation": "dev", "test": "test"}


@dataclass
class DataSource:
    """A named set of questions, with the corpus that answers them when the source brings one."""

    name: str
    questions: list[Question]
    corpus_path: Path | None = None
    split: str | None = None
    origin: str = ""  # where the questions came from, for reports
    oracle_path: Path | None = None  # oracle trajectories for these questions (the world's oracle_{split}.jsonl)

    def __len__(self) -> int:
        return len(self.questions)


# --- FlashRAG JSONL ------------------------------------------------------------------------------------


def _golden(value: object, where: str, field_name: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if hasattr(value, "tolist"):  # numpy arrays from parquet
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise DataError(f"{where}: field '{field_name}' must be a list of strings, got {type(value).__name__}")
    answers = []
    for a in value:
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            a = str(a)  # years and counts are sometimes stored as numbers
        if not isinstance(a, str):
            raise DataError(f"{where}: field '{field_name}' must be a list of strings, found {type(a).__name__}")
        answers.append(a)
    if not answers:
        raise DataError(f"{where}: field '{field_name}' is empty; every question needs at least one gold answer")
    return answers


def question_from_row(row: object, where: str, data_source: str) -> Question:
    """Validate one FlashRAG row (`id`, `question`, `golden_answers`, optional `metadata`)."""
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    for key in ("id", "question", "golden_answers"):
        if key not in row:
            raise DataError(f"{where}: field '{key}' is missing (FlashRAG rows have id, question, golden_answers)")
    qid = row["id"]
    if isinstance(qid, bool) or not isinstance(qid, (str, int)):
        raise DataError(f"{where}: field 'id' must be a string or an integer, got {type(qid).__name__}")
    text = row["question"]
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"{where}: field 'question' must be a non-empty string")
    metadata = row.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise DataError(f"{where}: field 'metadata' must be an object, got {type(metadata).__name__}")
    return Question(id=str(qid), question=text.strip(), golden_answers=_golden(row["golden_answers"], where,
                    "golden_answers"), data_source=data_source, metadata=dict(metadata))


def _check_unique(questions: list[Question], where_of: list[str]) -> None:
    seen: dict[str, str] = {}
    for q, where in zip(questions, where_of):
        if q.id in seen:
            raise DataError(f"{where}: field 'id' repeats '{q.id}' (first at {seen[q.id]}); ids must be unique")
        seen[q.id] = where


def load_flashrag_jsonl(path: str | Path, data_source: str | None = None) -> list[Question]:
    """Read a FlashRAG JSONL file of questions; blank lines are skipped."""
    path = Path(path)
    source = data_source or _name_from_file(path)
    questions, wheres = [], []
    for where, row in iter_jsonl_objects(path):
        questions.append(question_from_row(row, where, source))
        wheres.append(where)
    if not questions:
        raise DataError(f"{path}: no questions (the file is empty)")
    _check_unique(questions, wheres)
    return questions


# --- Search-R1 / verl parquet --------------------------------------------------------------------------

_QUESTION_RE = re.compile(r"Question:\s*(.*?)\s*$", re.DOTALL)


def question_from_searchr1_prompt(prompt: object) -> str | None:
    """The question inside a Search-R1 prompt (`... Question: {question}\\n`), or None if absent.

    `prompt` is the chat list verl stores (`[{"role": "user", "content": ...}]`) or a plain string. The
    last `Question:` wins, so an instruction that mentions the word earlier does not confuse it.
    """
    if hasattr(prompt, "tolist"):
        prompt = prompt.tolist()
    if isinstance(prompt, (list, tuple)):
        contents = [m.get("content", "") for m in prompt if isinstance(m, dict) and m.get("role", "user") == "user"]
        prompt = contents[-1] if contents else ""
    if not isinstance(prompt, str):
        return None
    idx = prompt.rfind("Question:")
    if idx < 0:
        return None
    match = _QUESTION_RE.match(prompt[idx:])
    text = match.group(1).strip() if match else ""
    return text or None


def _dig(row: dict, dotted: str) -> object:
    value: object = row
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(dotted)
        value = value[part]
    return value


def iter_parquet_rows(path: Path) -> Iterator[tuple[int, dict]]:
    """Rows of a parquet file as dicts, numbered from 0, read batch by batch."""
    try:
        import pyarrow.parquet as pq  # local: ~0.26 s to import; `searchrl data` and the other loaders must not pay it

        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise DataError(f"{path}: not a readable parquet file ({exc})") from None
    row_no = 0
    for batch in pf.iter_batches(batch_size=4096):
        for row in batch.to_pylist():
            yield row_no, row
            row_no += 1


def load_parquet(path: str | Path, data_source: str | None = None) -> list[Question]:
    """Read Search-R1/verl parquet (`prompt`, `reward_model.ground_truth.target`, `data_source`).

    Also accepts FlashRAG columns (`id`, `question`, `golden_answers`). Each row's `data_source` column
    (e.g. `nq`, `hotpotqa`) becomes the question's `data_source` unless `data_source` is given. The id is
    the `id` column, else `extra_info.index`, else the row number; Search-R1's index restarts per source,
    so the unique key is `Question.uid` (source + id), never the index alone (peers.md §1.6).
    """
    path = Path(path)
    default_source = data_source or _name_from_file(path)
    questions, wheres = [], []
    for row_no, row in iter_parquet_rows(path):
        where = f"{path}: row {row_no}"
        if "question" in row and "golden_answers" in row:
            source = data_source or str(row.get("data_source") or default_source)
            q = question_from_row({**row, "id": row.get("id", row_no)}, where, source)
        else:
            if "prompt" not in row:
                raise DataError(f"{where}: field 'prompt' is missing (expected Search-R1 columns prompt, "
                                "reward_model.ground_truth.target, data_source; or FlashRAG columns)")
            text = question_from_searchr1_prompt(row["prompt"])
            if text is None:
                raise DataError(f"{where}: field 'prompt' holds no 'Question: ...' text to read the question from")
            try:
                target = _dig(row, "reward_model.ground_truth.target")
            except KeyError:
                raise DataError(f"{where}: field 'reward_model.ground_truth.target' is missing") from None
            extra = row.get("extra_info") or {}
            qid = row.get("id")
            if qid is None:
                qid = extra.get("index", row_no) if isinstance(extra, dict) else row_no
            source = data_source or str(row.get("data_source") or default_source)
            metadata = {k: v for k, v in (extra.items() if isinstance(extra, dict) else []) if k != "index"}
            if isinstance(row.get("metadata"), dict):
                metadata.update(row["metadata"])
            q = Question(id=str(qid), question=text,
                         golden_answers=_golden(target, where, "reward_model.ground_truth.target"),
                         data_source=source, metadata=metadata)
        questions.append(q)
        wheres.append(where)
    if not questions:
        raise DataError(f"{path}: no rows")
    seen: dict[str, str] = {}
    for q, where in zip(questions, wheres):
        if q.uid in seen:
            raise DataError(f"{where}: question '{q.uid}' repeats (first at {seen[q.uid]}); ids must be unique per source")
        seen[q.uid] = where
    return questions


# --- benchmark names via the Hugging Face hub ----------------------------------------------------------


def canonical_benchmark(name: str) -> str | None:
    """The papers' benchmark name for `name` (case-insensitive, a few aliases), or None."""
    key = name.strip().lower()
    key = BENCHMARK_ALIASES.get(key, key)
    return key if key in BENCHMARKS else None


def _hub_reachable(timeout: float = 3.0) -> bool:
    """False when offline mode is set or the hub's host cannot be reached within `timeout` seconds.

    Checked first so that an offline machine fails in seconds instead of sitting through the hub client's
    retries (about a minute).
    """
    # local: socket adds ~3 ms to `searchrl data --help`, which imports this module and must not get slower
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    try:
        # local: huggingface_hub reads HF_HUB_OFFLINE when first imported, which the commands set before loading
        # models; only benchmark downloads need it
        from huggingface_hub import constants

        if getattr(constants, "HF_HUB_OFFLINE", False):
            return False
        endpoint = getattr(constants, "ENDPOINT", "https://huggingface.co")
    except ImportError:
        return False
    host = urlparse(endpoint).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def load_benchmark(name: str, split: str | None = None) -> list[Question]:
    """Download a benchmark's split from `RUC-NLPIR/FlashRAG_datasets` (needs the network or the HF cache).

    Reads `{name}/{split}.jsonl` with `huggingface_hub` (the file is then parsed by our own loader, so bad
    rows are reported with their line); falls back to `datasets.load_dataset` when it is installed.
    Offline, a copy in the Hugging Face cache is used if there is one; otherwise the error says how to
    supply the file locally.
    """
    bench = canonical_benchmark(name)
    if bench is None:
        raise DataError(f"unknown benchmark '{name}'; known: {', '.join(BENCHMARKS)}")
    split = split or BENCHMARKS[bench][0]
    filename = f"{bench}/{split}.jsonl"
    online = _hub_reachable()
    errors = []
    try:
        from huggingface_hub import hf_hub_download  # local: see _hub_reachable

        local = hf_hub_download(FLASHRAG_REPO, filename, repo_type="dataset", local_files_only=not online)
        return load_flashrag_jsonl(local, data_source=bench)
    except ImportError:
        errors.append("huggingface_hub is not installed")
    except DataError:
        raise
    except Exception as exc:  # not cached, not found, network errors: try `datasets`, then explain
        errors.append(f"huggingface_hub: {type(exc).__name__}")
    if online:
        try:
            import datasets  # local: optional, ~1.5 s to import; resolves the dataset's configs itself

            rows = datasets.load_dataset(FLASHRAG_REPO, bench, split=split)
            where = f"{FLASHRAG_REPO}/{bench}[{split}]"
            return [question_from_row(dict(r), f"{where} row {i}", bench) for i, r in enumerate(rows)]
        except ImportError:
            errors.append("datasets: not installed")
        except DataError:
            raise
        except Exception as exc:
            errors.append(f"datasets: {type(exc).__name__}")
    state = "the hub answered but the file could not be fetched" if online else (
        "this machine is offline (or HF_HUB_OFFLINE=1) and the file is not in the Hugging Face cache")
    raise DataError(
        f"cannot load benchmark '{bench}' ({split} split) from {FLASHRAG_REPO}: {state} ({'; '.join(errors)}). "
        f"To use local files instead, download {filename} on a machine with internet access, e.g. "
        f"`hf download {FLASHRAG_REPO} {filename} --repo-type dataset --local-dir flashrag`, copy it here and "
        f"pass its path (flashrag/{filename}) or its folder in place of '{name}'; a folder may also hold a "
        "corpus.jsonl to search."
    )


# --- derived splits ------------------------------------------------------------------------------------


def split_questions(
    questions: Sequence[Question], seed: int = SPLIT_SEED, fractions: Sequence[float] = DEFAULT_SPLIT_FRACTIONS,
) -> dict[str, list[Question]]:
    """Cut questions into disjoint `train` / `dev` / `test` parts of about `fractions` of them each.

    A question goes to the part whose cumulative-fraction interval holds u = blake2b(f"{seed}:{id}") / 2^64,
    so its part depends only on (seed, id, fractions): not on the file's order, and not on other questions
    (appending questions never moves one from test into train). Part sizes are binomial around the fractions
    (500 questions: dev ≈ 50 ± 7). Each part keeps the input order.
    """
    if len(fractions) != len(DERIVED_SPLITS) or any(not math.isfinite(f) or f < 0 for f in fractions) \
            or abs(sum(fractions) - 1.0) > 1e-6:
        raise ValueError(f"fractions must be three numbers >= 0 summing to 1 (train, dev, test), got {fractions}")
    bounds = [sum(fractions[: i + 1]) for i in range(len(fractions) - 1)]
    out: dict[str, list[Question]] = {name: [] for name in DERIVED_SPLITS}
    for q in questions:
        digest = hashlib.blake2b(f"{seed}:{q.id}".encode(), digest_size=8).digest()
        u = int.from_bytes(digest, "big") / 2.0**64
        out[DERIVED_SPLITS[sum(u >= b for b in bounds)]].append(q)
    return out


def _derived_split(questions: list[Question], split: str, path: Path) -> tuple[list[Question], str]:
    """(the `split` part of an undivided questions file, a note for the source's origin); `DataError` if empty."""
    shares = "/".join(f"{round(100 * f)}" for f in DEFAULT_SPLIT_FRACTIONS)
    part = split_questions(questions)[_SPLIT_ALIASES[split]]
    if not part:
        raise DataError(f"{path}: the '{split}' part of its {shares} train/dev/test split is empty ({len(questions)} "
                        f"questions are too few); add questions or give a {split}.jsonl beside it")
    note = f"{_SPLIT_ALIASES[split]} part of a {shares} train/dev/test split by id hash (seed {SPLIT_SEED})"
    return part, f"{path}, {note}"


# --- folders, specs ------------------------------------------------------------------------------------


def _name_from_file(path: Path) -> str:
    """`nq/test.jsonl` -> `nq`; `my_questions.jsonl` -> `my_questions`."""
    return path.parent.name if path.stem.lower() in _SPLIT_NAMES and path.parent.name else path.stem


def _load_file(path: Path, data_source: str | None) -> list[Question]:
    if path.suffix == ".parquet":
        return load_parquet(path, data_source)
    if path.suffix in (".jsonl", ".json"):
        return load_flashrag_jsonl(path, data_source)
    raise DataError(f"{path}: unsupported file type '{path.suffix}'; use FlashRAG .jsonl or Search-R1 .parquet")


def load_folder(folder: Path, split: str | None = None, name: str | None = None) -> DataSource:
    """A dataset folder: questions in `{split}.jsonl|.parquet` or `questions.jsonl`, corpus in `corpus.jsonl`.

    Without `split`, the first of `DEFAULT_SPLIT_ORDER` found. With `split` train/dev/test (val, validation)
    and no file of that name, the split is derived from `questions.jsonl|.parquet` (`split_questions`).
    """
    source = name or folder.name
    if split is None:
        candidates = [f"{c}{ext}" for c in DEFAULT_SPLIT_ORDER for ext in (".jsonl", ".parquet")]
    elif _SPLIT_ALIASES.get(split) == "dev":  # FlashRAG says dev, others validation or val
        candidates = [f"{c}{ext}" for c in ("dev", "validation", "val") for ext in (".jsonl", ".parquet")]
    else:
        candidates = [f"{split}.jsonl", f"{split}.parquet"]
    derive = None
    path = next((folder / c for c in candidates if (folder / c).is_file()), None)
    if path is None and split in _SPLIT_ALIASES:
        path = next((p for p in (folder / "questions.jsonl", folder / "questions.parquet") if p.is_file()), None)
        derive = split
    if path is None:
        if split is None:
            wanted = ("questions.jsonl (cut 60/10/30 into train/dev/test when a split is asked for) or per-split "
                      "files train.jsonl, dev.jsonl, test.jsonl (or .parquet)")
        else:
            wanted = " or ".join(candidates) + (" or questions.jsonl (to cut into train/dev/test)"
                                                if split in _SPLIT_ALIASES else "")
        found = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
        listing = ", ".join(found[:8]) + (", …" if len(found) > 8 else "") if found else "nothing"
        raise DataError(f"{folder}: no question file found; expected {wanted} with FlashRAG rows (id, question, "
                        f"golden_answers), and corpus.jsonl beside it to search; the folder holds {listing}")
    questions = _load_file(path, source)
    origin = str(path)
    if derive:
        questions, origin = _derived_split(questions, derive, path)
    else:
        _check_no_leak(path, questions, source)
    corpus = folder / "corpus.jsonl"
    oracle = folder / f"oracle_{path.stem}.jsonl"
    return DataSource(name=source, questions=questions, corpus_path=corpus if corpus.is_file() else None,
                      split=_SPLIT_ALIASES[derive] if derive else (None if path.stem == "questions" else path.stem),
                      origin=origin, oracle_path=oracle if oracle.is_file() and not derive else None)


def _check_no_leak(path: Path, questions: list[Question], source: str) -> None:
    """`DataError` if the split file `path` shares questions (the same id and text) with the folder's files of the
    other side of the train / held-out line: train against dev (validation, val) and test, and the reverse.

    Ids alone are not compared: Search-R1's parquet numbers each split from 0, so ids repeat across its files."""
    split = _SPLIT_ALIASES.get(path.stem.lower())
    if split is None:
        return
    others = ("train",) if split != "train" else ("dev", "validation", "val", "test")
    mine = {(q.id, q.question) for q in questions}
    for other in (path.parent / f"{name}{ext}" for name in others for ext in (".jsonl", ".parquet")):
        if not other.is_file():
            continue
        try:
            shared = [q.id for q in _load_file(other, source) if (q.id, q.question) in mine]
        except DataError:
            continue  # its own load reports it
        if shared:
            held_out = path.stem if split != "train" else other.stem
            raise DataError(f"{path}: {len(shared)} question(s) of its {path.stem} split are also in {other} (same "
                            f"id and question; e.g. ids {', '.join(shared[:3])}); the {held_out} scores would count "
                            "questions trained on: remove them from one of the files")


def _split_spec(spec: str) -> tuple[str | None, str, str | None]:
    """`NAME=SPEC@SPLIT` -> (NAME, SPEC, SPLIT); each part optional except SPEC."""
    name = None
    if "=" in spec and not Path(spec).exists():
        left, right = spec.split("=", 1)
        if re.fullmatch(r"[A-Za-z0-9_.\-]+", left):
            name, spec = left, right
    split = None
    if "@" in spec and not Path(spec).exists():
        left, right = spec.rsplit("@", 1)
        if re.fullmatch(r"[A-Za-z0-9_]+", right):
            spec, split = left, right
    return name, spec, split


def spec_path(spec: str) -> Path | None:
    """The file or folder a data spec reads (`NAME=PATH@SPLIT` -> PATH), or None for a benchmark name or the world."""
    _, body, _ = _split_spec(spec.strip())
    path = Path(body).expanduser()
    return path if body and path.exists() else None


def load_source(spec: str, split: str | None = None) -> DataSource:
    """Load questions (and the corpus path when there is one) from a spec; see the module docstring.

    `split` applies where a source has splits (folders, benchmarks, the world); an explicit `@SPLIT` in
    the spec wins. For the world the default split is `test`.
    """
    name, body, spec_split = _split_spec(spec.strip())
    split = spec_split or split
    if not body:
        raise DataError("empty data spec; pass a folder, a .jsonl/.parquet file, a benchmark name or 'world'")

    world = re.fullmatch(r"world(?::(-?\d+))?", body)
    if world:
        seed = int(world.group(1) or 0)
        split = split or "test"
        if split not in SPLITS:
            raise DataError(f"the world has splits {', '.join(repr(x) for x in SPLITS)}, not '{split}'")
        folder = world_dir(seed)
        label = name or (DATA_SOURCE if seed == 0 else f"{DATA_SOURCE}:{seed}")
        questions = load_flashrag_jsonl(folder / f"{split}.jsonl", data_source=name or DATA_SOURCE)
        return DataSource(name=label, questions=questions, corpus_path=folder / "corpus.jsonl", split=split,
                          origin=f"synthetic world, seed {seed} ({folder})",
                          oracle_path=folder / f"oracle_{split}.jsonl")

    path = Path(body).expanduser()
    if path.is_dir():
        return load_folder(path, split, name)
    if path.is_file():
        questions = _load_file(path, name)
        corpus = path.parent / "corpus.jsonl"
        # A file that is not itself a split (questions.jsonl, my_set.parquet) is cut like a folder's questions.jsonl.
        origin = str(path)
        derive = split in _SPLIT_ALIASES and path.stem.lower() not in _SPLIT_ALIASES
        if derive:
            questions, origin = _derived_split(questions, split, path)
        return DataSource(name=name or _name_from_file(path), questions=questions,
                          corpus_path=corpus if corpus.is_file() and corpus != path else None,
                          split=_SPLIT_ALIASES[split] if derive else split, origin=origin)
    if canonical_benchmark(body):
        bench = canonical_benchmark(body)
        assert bench is not None
        questions = load_benchmark(bench, split)
        if name:
            for q in questions:
                q.data_source = name
        return DataSource(name=name or bench, questions=questions, corpus_path=None,
                          split=split or BENCHMARKS[bench][0], origin=f"{FLASHRAG_REPO}:{bench}")
    if any(sep in body for sep in ("/", "\\")) or body.endswith((".jsonl", ".parquet", ".json")):
        raise DataError(f"{body}: no such file or folder")
    raise DataError(
        f"'{body}' is not a file, a folder, 'world[:SEED]' or a known benchmark ({', '.join(BENCHMARKS)})"
    )


def load_sources(specs: str | list[str], split: str | None = None) -> list[DataSource]:
    """Several sources from a comma-separated string or a list; names must be distinct."""
    items = [s for s in (specs.split(",") if isinstance(specs, str) else specs) if s.strip()]
    if not items:
        raise DataError("no data source given")
    sources = [load_source(s, split) for s in items]
    names = [s.name for s in sources]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise DataError(f"two data sources share the name {dupes[0]!r}; rename one with NAME=SPEC")
    return sources
