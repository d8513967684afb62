#!/usr/bin/env bash
# Search-R1 GRPO on Qwen2.5-3B-Instruct with verl on one 8-GPU node, using searchrl's retriever, agent loop and
# reward (config: config/search_r1_grpo.yaml; guide: docs/verl.md).
#
#   INDEX=indexes/wiki18_e5 DATA_DIR=data/verl bash examples/verl/run_search_r1_grpo.sh [extra hydra overrides]
#
# INDEX: a searchrl index folder (`searchrl index build --corpus wiki-18.jsonl --kind bm25 --out ...`)
# or a .jsonl corpus (a BM25 index is built once). DATA_DIR: the output of examples/verl/prepare_data.py.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INDEX="${INDEX:?set INDEX to a searchrl index folder or a .jsonl corpus}"
DATA_DIR="${DATA_DIR:-data/verl}"
MODEL="${MODEL:-Qwen/Qwen2.5-3B-Instruct}"
PORT="${PORT:-8000}"
export RAY_AUTH_MODE="${RAY_AUTH_MODE:-disabled}"

# 1. The retrieval server (Search-R1's POST /retrieve API), shared by every agent-loop worker.
searchrl serve --index "$INDEX" --port "$PORT" --workers 4 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true' EXIT
python3 - "$PORT" "$SERVER" <<'PY'
import os, sys, time, httpx
port, pid = sys.argv[1], int(sys.argv[2])
while True:
    try:
        if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
            break
    except httpx.HTTPError:
        pass
    os.kill(pid, 0)  # raises if the server died
    time.sleep(2)
PY

# 2. verl; the searchrl plugin loads in every Ray process through its `verl.plugins` entry point (verl >= 0.9;
#    for older verl add: export VERL_USE_EXTERNAL_MODULES=searchrl.integrations.verl).
python3 -m verl.trainer.main_ppo --config-path "$HERE/config" --config-name search_r1_grpo \
    data.train_files="$DATA_DIR/train.parquet" \
    data.val_files="$DATA_DIR/test.parquet" \
    actor_rollout_ref.model.path="$MODEL" \
    searchrl.agent_loop.retriever="http://127.0.0.1:$PORT" \
    "$@"
