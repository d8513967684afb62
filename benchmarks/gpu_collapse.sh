#!/usr/bin/env bash
# The collapse study's long horizon on a lent GPU: `searchrl compare` with the real default model, the run records
# packed into a tarball every 30 s, so that a call cut by its time limit still brings back every finished step.
#
#   benchmarks/gpu_collapse.sh start FOLDER OUT DEADLINE WAIT -- COMPARE-ARGS...
#   benchmarks/gpu_collapse.sh wait OUT WAIT
#
# `start` (in the call that carries the last part of benchmarks/gpu_demo.py's FOLDER, its wheels and other parts
# received in earlier calls to the same machine) launches the comparison in a session of its own, so that it outlives the call,
# with a hard deadline of DEADLINE seconds (then it is interrupted: Ctrl-C, its runs end and keep their records).
# It then waits up to WAIT seconds, or until the comparison ends, and copies the latest records into OUT. `wait`, in
# a next call to the same warm machine (within its 30 s idle window), waits WAIT seconds more and copies again. So a
# comparison longer than one call's 10 minutes runs over two calls. Give the runs `train.time_budget_min` below
# DEADLINE, so that each stops RL in time for its final evaluations. The 150-step study as run (docs/experiments.md),
# over two calls:
#
#   benchmarks/gpu_collapse.sh start .gpu_demo $OUT 780 570 -- --config collapse_drift --algos grpo,sapo \
#       --seeds 0,1,2,3,4 --jobs 10 train.device=cuda train.time_budget_min=12.0
#   benchmarks/gpu_collapse.sh wait $OUT 215
#
# OUT receives runs.tar.gz (every run's config, metrics.jsonl, evals.json, events, summary, logs; no checkpoints or
# models), compare.log, nvidia-smi.txt and versions.txt. Several runs share the GPU better under CUDA's
# Multi-Process Service: start it first with `nvidia-cuda-mps-control -d` (benchmarks/gpu_share.py measures it).
set -uo pipefail
stage=${SEARCHRL_COLLAPSE_STAGE:-/tmp/searchrl_gpu_demo/collapse-stage}
runs=$stage/runs
python=${PYTHON:-python3}

usage() {
    echo "usage: $0 start FOLDER OUT DEADLINE WAIT -- COMPARE-ARGS...  |  $0 wait OUT WAIT" >&2
    exit 2
}

snapshot() {  # the run records only, under a temporary name, then renamed: a reader never sees half a tarball
    (cd "$runs" && find . -type f -not -path '*/checkpoints/*' -not -path '*_model/*' -size -20M -print0 \
        | tar czf "$stage/runs.tar.gz.part$$" --null -T -) && mv "$stage/runs.tar.gz.part$$" "$stage/runs.tar.gz"
}

collect() {  # wait up to $2 seconds for the comparison to end, then copy what it has written into OUT ($1)
    local out=$1 until=$(( $(date +%s) + $2 ))
    mkdir -p "$out"
    while [ ! -f "$stage/exit" ] && [ "$(date +%s)" -lt "$until" ]; do sleep 2; done
    [ -f "$stage/exit" ] || snapshot
    cp "$stage/runs.tar.gz" "$stage/compare.log" "$stage/nvidia-smi.txt" "$stage/versions.txt" "$out/" 2>/dev/null
    if [ -f "$stage/exit" ]; then
        echo "compare exit $(cat "$stage/exit")"
    else
        echo "compare still running; collect the rest with: $0 wait OUT SECONDS"
    fi
    tail -n 30 "$stage/compare.log"
}

case "${1:-}" in
start)
    [ $# -ge 6 ] && [ "$6" = "--" ] || usage
    folder=$2 out=$3 deadline=$4 wait_s=$5
    shift 6
    rm -rf "$stage"
    mkdir -p "$runs"
    { nvidia-smi || echo "no nvidia-smi"; } > "$stage/nvidia-smi.txt" 2>&1
    PYTHONPATH=/tmp/searchrl_gpu_demo/site${PYTHONPATH:+:$PYTHONPATH} "$python" -c \
        "import platform, torch, transformers; print('python', platform.python_version()); print('torch', torch.__version__, 'cuda', torch.version.cuda); print('transformers', transformers.__version__)" \
        > "$stage/versions.txt" 2>&1
    git rev-parse HEAD >> "$stage/versions.txt" 2>/dev/null || true
    export -f snapshot
    export stage runs
    # a session of its own (setsid): the comparison and its snapshots outlive this call, until the machine goes back
    setsid bash -c '
        (while sleep 30; do snapshot; done) & snapshotter=$!
        timeout --signal=INT --kill-after=20 "$0" "$1" benchmarks/gpu_demo.py exec "$2" -- compare --out "$runs" \
            "${@:3}" > "$stage/compare.log" 2>&1
        code=$?
        kill $snapshotter; wait $snapshotter 2>/dev/null
        snapshot
        echo $code > "$stage/exit"
    ' "$deadline" "$python" "$folder" "$@" < /dev/null > /dev/null 2>&1 &
    collect "$out" "$wait_s"
    ;;
wait)
    [ $# -eq 3 ] || usage
    collect "$2" "$3"
    ;;
*)
    usage
    ;;
esac
