#!/usr/bin/env bash
# The collapse study's long horizon on a lent GPU: `searchrl compare` with the real default model, the run records
# packed into OUT/runs.tar.gz every 30 s, so that a call cut by its time limit still brings back every finished step.
#
#   benchmarks/gpu_collapse.sh FOLDER OUT SECONDS -- COMPARE-ARGS...
#
# FOLDER is benchmarks/gpu_demo.py's (its wheels and part 1 received in earlier calls to the same machine, part 2
# carried by this one); SECONDS is a hard deadline for the comparison, after which it is interrupted (Ctrl-C: its
# runs end and keep their records). Give the runs `train.time_budget_min` below SECONDS, so that each stops RL in
# time for its final evaluations. Example (docs/experiments.md, docs/gpu.md):
#
#   benchmarks/gpu_collapse.sh .gpu_demo $OUT 570 -- --config collapse_drift --algos grpo,sapo,llds --seeds 0 \
#       --jobs 3 train.device=cuda train.time_budget_min=8.6
#
# OUT receives runs.tar.gz (every run's config, metrics.jsonl, evals.json, events, summary, logs; no checkpoints or
# models), compare.log, nvidia-smi.txt and versions.txt.
set -uo pipefail
if [ $# -lt 4 ] || [ "$4" != "--" ]; then
    echo "usage: $0 FOLDER OUT SECONDS -- COMPARE-ARGS..." >&2
    exit 2
fi
folder=$1 out=$2 seconds=$3
shift 4
python=${PYTHON:-python3}
runs=${SEARCHRL_COLLAPSE_RUNS:-/tmp/searchrl_gpu_demo/collapse}
mkdir -p "$out" "$runs"
began=$(date +%s)

{ nvidia-smi || echo "no nvidia-smi"; } > "$out/nvidia-smi.txt" 2>&1
PYTHONPATH=/tmp/searchrl_gpu_demo/site${PYTHONPATH:+:$PYTHONPATH} "$python" -c \
    "import platform, torch, transformers; print('python', platform.python_version()); print('torch', torch.__version__, 'cuda', torch.version.cuda); print('transformers', transformers.__version__)" \
    > "$out/versions.txt" 2>&1
git rev-parse HEAD >> "$out/versions.txt" 2>/dev/null || true

snapshot() {  # the run records only, into a temporary name, then renamed: a cut call never returns half a tarball
    (cd "$runs" && find . -type f -not -path '*/checkpoints/*' -not -path '*_model/*' -size -20M -print0 \
        | tar czf "$out/runs.tar.gz.part" --null -T -) && mv "$out/runs.tar.gz.part" "$out/runs.tar.gz"
}
(while sleep 30; do snapshot; done) &
snapshotter=$!

timeout --signal=INT --kill-after=20 "$seconds" \
    "$python" benchmarks/gpu_demo.py exec "$folder" -- compare --out "$runs" "$@" > "$out/compare.log" 2>&1
code=$?
kill "$snapshotter" 2>/dev/null
wait "$snapshotter" 2>/dev/null
snapshot
echo "compare exit $code after $(( $(date +%s) - began )) s" | tee -a "$out/compare.log"
tail -n 40 "$out/compare.log"
exit "$code"
