#!/usr/bin/env bash
# Every GPU check in one command, for a machine with a CUDA GPU: the `gpu`-marked tests (tests/test_gpu.py), the
# host overhead of a decode step (benchmarks/bench_decode_graph.py: eager against a CUDA graph replay), a
# diagnostic searchrl process (its rollouts' forward, sampling and GC time, and a cProfile of them), then
# benchmarks/bench_gpu.py (searchrl vs TRL's GRPOTrainer on the same GPU). Run from the repository root:
#
#   benchmarks/gpu_check.sh OUT_DIR [PYTHON]          # PYTHON: default .venv/bin/python, else python3
#
# OUT_DIR receives nvidia-smi.txt, versions.txt, gpu_tests.log, decode_graph.json, diagnostic.json, profile.txt,
# bench_gpu.log and bench_gpu.json (rewritten after every benchmark process, so a run cut short keeps what it
# measured). Time limits, in seconds, from the environment: GPU_TESTS_TIMEOUT (default 300), GPU_GRAPH_TIMEOUT
# (default 60; 0 skips the decode-graph check), GPU_PROFILE_TIMEOUT (default 120; 0 skips the diagnostic) and
# GPU_BENCH_TIMEOUT (default 600); BENCH_ARGS adds arguments to bench_gpu.py (e.g. "--models smollm2-135m").
# The defaults add up to more than one 10-minute call: on a short loan, narrow BENCH_ARGS and the limits.
# Exits non-zero if the tests or the benchmark failed.
set -uo pipefail
out=${1:?usage: benchmarks/gpu_check.sh OUT_DIR [PYTHON]}
py=${2:-}
if [ -z "$py" ]; then
  if [ -x .venv/bin/python ]; then py=.venv/bin/python; else py=python3; fi
fi
mkdir -p "$out"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false

nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" >>"$out/nvidia-smi.txt"
"$py" - >"$out/versions.txt" 2>&1 <<'EOF'
import importlib, platform, sys
import torch
print("python", sys.version.split()[0], platform.platform())
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("gpu", p.name, f"{p.total_memory / 2**30:.0f} GiB", f"sm_{p.major}{p.minor}", "bf16", torch.cuda.is_bf16_supported())
for name in ("transformers", "accelerate", "peft", "trl", "datasets", "bm25s", "searchrl"):
    try:
        module = importlib.import_module(name)
        print(name, getattr(module, "__version__", "?"), getattr(module, "__file__", ""))
    except Exception as exc:  # noqa: BLE001 - a report, not a check
        print(name, "NOT IMPORTABLE:", type(exc).__name__, exc)
EOF
cat "$out/versions.txt"

start=$(date +%s)
timeout "${GPU_TESTS_TIMEOUT:-300}" "$py" -m pytest -m gpu -v -p no:cacheprovider tests/test_gpu.py 2>&1 \
  | tee "$out/gpu_tests.log"
tests_rc=${PIPESTATUS[0]}
echo "gpu tests: exit $tests_rc in $(( $(date +%s) - start )) s" | tee -a "$out/gpu_tests.log"

if [ "${GPU_GRAPH_TIMEOUT:-60}" -gt 0 ]; then
  start=$(date +%s)
  timeout "${GPU_GRAPH_TIMEOUT:-60}" "$py" benchmarks/bench_decode_graph.py --model smollm2-135m \
    --json "$out/decode_graph.json" 2>&1 | tail -6 || true
  echo "decode graph: done in $(( $(date +%s) - start )) s ($out/decode_graph.json)"
fi

if [ "${GPU_PROFILE_TIMEOUT:-120}" -gt 0 ]; then
  # Where a searchrl rollout's time goes on this GPU: model forwards, sampling and GC per step (diagnostic.json),
  # own time per function (profile.txt; time blocked on the GPU shows as `tolist`). A diagnostic: the timers
  # synchronise and the profiler slows the Python side, so its times are not the benchmark's.
  start=$(date +%s)
  timeout "${GPU_PROFILE_TIMEOUT:-120}" "$py" benchmarks/bench_gpu.py --models smollm2-135m --only searchrl \
    --rounds 1 --steps 3 --breakdown --profile "$out/profile.txt" --json "$out/diagnostic.json" 2>&1 \
    | grep -E '^  steps:|failed' || true
  echo "diagnostic: done in $(( $(date +%s) - start )) s ($out/diagnostic.json, $out/profile.txt)"
fi

start=$(date +%s)
# shellcheck disable=SC2086 - BENCH_ARGS is a list of arguments
timeout "${GPU_BENCH_TIMEOUT:-600}" "$py" benchmarks/bench_gpu.py --json "$out/bench_gpu.json" ${BENCH_ARGS:-} 2>&1 \
  | tee "$out/bench_gpu.log"
bench_rc=${PIPESTATUS[0]}
echo "bench_gpu: exit $bench_rc in $(( $(date +%s) - start )) s" | tee -a "$out/bench_gpu.log"
[ "$tests_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
