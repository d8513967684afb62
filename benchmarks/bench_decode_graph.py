"""How much of a GPU decode step is host overhead: one model's decode step run eagerly and replayed as a CUDA graph.

On a GPU a small model's rollout is bound by the host (Python and kernel launches), not by the GPU: see
docs/benchmarks.md, "One GPU". This measures the bound directly, on transformers' own `StaticCache` so both sides
do the same work: the same model, weights, precision (bf16), rows, prompt and greedy tokens; the eager side calls
the model once per token, the graph side captures that call once and replays it. Rounds alternate the order.

    python benchmarks/bench_decode_graph.py --model smollm2-135m [--rows 64 --prompt 32 --steps 128]
    python benchmarks/bench_decode_graph.py --model DIR [--random-weights]

`--model` is an architecture of bench_gpu.py (random weights of the published sizes, no download) or a folder.

On a machine without CUDA only the eager side runs (a smoke test of the script). Prints and optionally writes JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gpu import ARCHITECTURES  # noqa: E402 - the benchmarks' one table of architectures


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="smollm2-135m",
                   help="an architecture of bench_gpu.py (random weights) or a model folder (default: %(default)s)")
    p.add_argument("--random-weights", action="store_true", help="a folder's config with random weights")
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--prompt", type=int, default=32, help="prompt tokens per row")
    p.add_argument("--steps", type=int, default=128, help="decode steps per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", type=Path, default=None)
    return p.parse_args(argv)


def sdpa_backends(config, rows: int, device) -> dict[str, str]:
    """Which SDPA backend torch picks for the attention call of a searchrl decode step (bf16; the query packed per
    KV head as transformers does for one query token under grouped-query attention; the keys a view of a longer
    buffer), with a padding mask and without one."""
    import torch
    from torch.nn.attention import SDPBackend

    kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    groups = config.num_attention_heads // kv_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    length, capacity = 100, 192
    buffer = torch.zeros(rows, kv_heads, capacity, head_dim, dtype=torch.bfloat16, device=device)
    keys = buffer[:, :, :length]
    query = torch.zeros(rows, kv_heads, groups, head_dim, dtype=torch.bfloat16, device=device)
    mask = torch.ones(rows, 1, groups, length, dtype=torch.bool, device=device)
    return {name: SDPBackend(torch._fused_sdp_choice(query, keys, keys, m, 0.0, False)).name
            for name, m in (("with_mask", mask), ("without_mask", None))}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, StaticCache

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    if args.model in ARCHITECTURES:
        from transformers import LlamaConfig, Qwen2Config

        kind, dims = ARCHITECTURES[args.model]
        config = (LlamaConfig if kind == "llama" else Qwen2Config)(**dims)
        model = AutoModelForCausalLM.from_config(config)
    elif args.random_weights:
        config = AutoConfig.from_pretrained(args.model)
        model = AutoModelForCausalLM.from_config(config)
    else:
        model = AutoModelForCausalLM.from_pretrained(args.model)
        config = model.config
    model = model.to(device=device, dtype=torch.bfloat16).eval()
    backends = sdpa_backends(config, args.rows, device)
    print("SDPA backend for a searchrl decode step's attention:", backends, flush=True)
    ids = torch.randint(0, config.vocab_size, (args.rows, args.prompt), device=device)
    cache = StaticCache(config=model.config, max_cache_len=args.prompt + args.steps + 4)
    step_ids = torch.zeros(args.rows, 1, dtype=torch.long, device=device)
    position = torch.zeros(1, dtype=torch.long, device=device)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    def prefill() -> None:
        cache.reset()
        logits = model(input_ids=ids, past_key_values=cache, use_cache=True,
                       cache_position=torch.arange(args.prompt, device=device)).logits
        step_ids.copy_(logits[:, -1:].argmax(-1))
        position.fill_(args.prompt)

    def decode_step() -> torch.Tensor:
        return model(input_ids=step_ids, past_key_values=cache, cache_position=position, use_cache=True).logits

    graph = None
    graph_logits = None
    graph_error = None
    with torch.no_grad():
        if device.type == "cuda":
            try:
                prefill()
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):  # warm-up outside capture (allocator, kernels' first calls)
                        decode_step()
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    graph_logits = decode_step()
            except Exception as exc:  # noqa: BLE001 - reported: the eager side still runs
                graph, graph_error = None, f"{type(exc).__name__}: {exc}"
                print("graph capture failed:", graph_error, file=sys.stderr)

        def run(kind: str) -> tuple[float, list[int]]:
            prefill()
            sync()
            tokens: list[int] = []
            start = time.perf_counter()
            for t in range(args.steps):
                position.fill_(args.prompt + t)
                if kind == "graph":
                    graph.replay()
                    logits = graph_logits
                else:
                    logits = decode_step()
                step_ids.copy_(logits[:, -1:].argmax(-1))
                tokens.append(int(step_ids[0, 0]))  # a host read per step, as a rollout's stop check does
            sync()
            return time.perf_counter() - start, tokens

        kinds = ["eager", "graph"] if graph is not None else ["eager"]
        times: dict[str, list[float]] = {k: [] for k in kinds}
        rows_tokens: dict[str, list[int]] = {}
        for r in range(args.rounds):
            for kind in (kinds if r % 2 == 0 else kinds[::-1]):
                seconds, tokens = run(kind)
                times[kind].append(seconds)
                rows_tokens[kind] = tokens
                print(f"round {r + 1} {kind}: {seconds / args.steps * 1e3:.2f} ms per decode step "
                      f"({args.rows} rows)", flush=True)
    result = {
        "device": torch.cuda.get_device_name(0) if device.type == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__, "rows": args.rows, "prompt": args.prompt, "steps": args.steps,
        "ms_per_step": {k: [s / args.steps * 1e3 for s in v] for k, v in times.items()},
        "graph_error": graph_error, "sdpa_backend_searchrl_decode": backends,
    }
    for kind, values in result["ms_per_step"].items():
        print(f"{kind}: median {statistics.median(values):.2f} ms per step [{min(values):.2f}, {max(values):.2f}]")
    if graph is not None:
        same = sum(a == b for a, b in zip(rows_tokens["eager"], rows_tokens["graph"]))
        result["row0_tokens_equal"] = f"{same}/{args.steps}"
        ratio = [e / g for e, g in zip(times["eager"], times["graph"])]
        result["eager_over_graph"] = ratio
        print(f"eager / graph per round: {', '.join(f'{x:.2f}x' for x in ratio)}; row 0 greedy tokens equal "
              f"{same}/{args.steps}")
    if args.json:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
        from searchrl.fileio import atomic_write_text

        atomic_write_text(args.json, json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
