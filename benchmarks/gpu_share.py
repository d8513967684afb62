"""How several training processes share one GPU: the update of a small model, alone and N side by side.

A 135M model's update is bound by kernel launches, not by the GPU's arithmetic, so several runs on one GPU (the
collapse study's seeds and arms) may take little more time each than one alone, or, where the GPU time-slices
between processes, N times as long. This measures it: each worker builds SmolLM2-135M's architecture with random
weights on the GPU, and times full fine-tuning updates as the trainer runs them (bf16 autocast over float32
weights, one micro-batch of 8 sequences of 160 tokens, forward and backward, gradient clipping, AdamW) over the
same wall-clock window as the others. With --mps the same is measured again under CUDA's Multi-Process Service
(`nvidia-cuda-mps-control -d`), when the machine has it; the service is stopped at the end.

    python3 benchmarks/gpu_share.py --procs 1,6 --mps 6 --json OUT/gpu_share.json

Per setting: each process's updates per second, their median, the aggregate (their sum), and the slowdown of one
process against the first setting's (1 process). Needs transformers (on a lent GPU: the wheels of gpu_demo.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LEAD_S = 15.0  # time for every worker to import, build and warm up before the common window opens


def worker(start_at: float, window_s: float, out: Path, seed: int, device: str) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                         num_key_value_heads=3, vocab_size=49152, tie_word_embeddings=True)
    with torch.device(device):
        model = LlamaForCausalLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    ids = torch.randint(0, config.vocab_size, (8, 160), device=device)

    def update() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16):
            logits = model(input_ids=ids).logits
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1).float(), ids[:, 1:].flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        float(loss.detach())  # the trainer reads its loss every micro-batch: one synchronisation, as there

    for _ in range(3):
        update()
    late = time.time() > start_at
    while time.time() < start_at:
        time.sleep(0.001)
    began, count = time.time(), 0
    while time.time() < began + window_s:
        update()
        count += 1
    wall = time.time() - began
    out.write_text(json.dumps({"updates": count, "wall_s": wall, "per_s": count / wall, "late": late}))


def measure(procs: int, window_s: float, env: dict, device: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        start_at = time.time() + LEAD_S
        outs = [Path(tmp) / f"w{i}.json" for i in range(procs)]
        running = [subprocess.Popen([sys.executable, __file__, "--worker", str(start_at), str(window_s), str(o), str(i), device],
                                    env=env) for i, o in enumerate(outs)]
        codes = []
        for p in running:  # a worker that hangs (a GPU service that does not answer) is killed, not waited on
            try:
                codes.append(p.wait(timeout=max(1.0, start_at - time.time()) + window_s + 30))
            except subprocess.TimeoutExpired:
                p.kill()
                codes.append("killed")
        rows = [json.loads(o.read_text()) for o in outs if o.is_file()]
    rates = [r["per_s"] for r in rows]
    return {"procs": procs, "exit_codes": codes, "per_process_per_s": rates,
            "median_per_s": statistics.median(rates) if rates else None, "aggregate_per_s": sum(rates),
            "late": sum(r["late"] for r in rows)}


def mps(command: str) -> bool:
    control = shutil.which("nvidia-cuda-mps-control")
    if control is None:
        return False
    if command == "start":
        return subprocess.run([control, "-d"]).returncode == 0
    return subprocess.run([control], input="quit\n", text=True).returncode == 0


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(float(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", default="1,6", help="process counts to measure without MPS (the first is the baseline)")
    parser.add_argument("--mps", default="", help="process counts to measure under MPS, when the machine has it")
    parser.add_argument("--window", type=float, default=5.0, help="seconds every process is timed, together")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--device", default="cuda", help="cuda (cpu: a smoke run of the plumbing)")
    args = parser.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    result: dict = {"settings": []}

    def record(row: dict, under_mps: bool) -> None:
        row["mps"] = under_mps
        base = result["settings"][0]["median_per_s"] if result["settings"] else row["median_per_s"]
        row["slowdown"] = base / row["median_per_s"] if row["median_per_s"] else None
        result["settings"].append(row)
        print(json.dumps(row), flush=True)
        if args.json:
            args.json.write_text(json.dumps(result, indent=1) + "\n")

    for n in [int(x) for x in args.procs.split(",") if x]:
        record(measure(n, args.window, env, args.device), False)
    counts = [int(x) for x in args.mps.split(",") if x]
    if counts:
        result["mps_available"] = mps("start")
        if result["mps_available"]:
            try:
                for n in counts:
                    record(measure(n, args.window, env, args.device), True)
            finally:
                result["mps_stopped"] = mps("quit")
        print(json.dumps({"mps_available": result["mps_available"]}))
        if args.json:
            args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
