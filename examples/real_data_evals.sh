#!/usr/bin/env bash
# The evaluations behind docs/real-data.md, for a finished `searchrl train --config nq_cpu` run:
#
#   examples/real_data_evals.sh RUN_DIR NQ_DIR [TRANSFER_DIR ...] [--out DIR] [--pool CORPUS]
#
# e.g. examples/real_data_evals.sh runs/nq tests/fixtures/qa/nq_oracle tests/fixtures/qa/hotpotqa_distractor \
#          --out runs/nq/evals
#
# On NQ_DIR's test part (the split the run held out): the untrained model with the run's protocol and budgets, the
# start model in --mode direct and --mode rag (the papers' baseline rows), the start of RL and the end of RL; the
# end of RL is paired against the start of RL and against the RAG row (both in nq_final). On each TRANSFER_DIR (all
# its questions, zero-shot): the start and the end of RL, paired. Every evaluation writes NAME.json, NAME.md and
# NAME.jsonl (one line per question) into the output folder (default RUN_DIR/evals). With --pool CORPUS (a corpus
# pooling NQ_DIR's passages with thousands of others: examples/merge_corpora.py), also the start and the end of RL
# on NQ_DIR's test part searching that corpus instead of NQ_DIR's own, paired (nq_pool_start, nq_pool_final).
set -euo pipefail
usage="usage: examples/real_data_evals.sh RUN_DIR NQ_DIR [TRANSFER_DIR ...] [--out DIR] [--pool CORPUS]"
run=${1:?$usage}
nq=${2:?$usage}
shift 2
out="$run/evals"
pool=""
transfer=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --pool) pool=${2:?--pool needs a corpus .jsonl}; shift 2 ;;
    *) transfer+=("$1"); shift ;;
  esac
done
if [ -n "$pool" ] && [ ! -f "$pool" ]; then echo "--pool $pool: no such corpus file (examples/merge_corpora.py writes one)" >&2; exit 2; fi
for folder in "$run/start_model" "$run/final_model"; do
  [ -f "$folder/searchrl_agent.json" ] || { echo "no exported agent in $folder: is $run a finished run?" >&2; exit 2; }
done
searchrl=${SEARCHRL:-searchrl}
mkdir -p "$out"

evaluate() {  # NAME MODEL DATA [eval arguments ...]
  local name=$1 model=$2 data=$3
  shift 3
  echo "== $name: $model on $data $*" >&2
  "$searchrl" eval --model "$model" --data "$data" --no-progress --out "$out/$name.json" --samples "$out/$name.jsonl" "$@"
}

# The run's protocol and budgets, for the untrained model (an exported agent carries them in searchrl_agent.json).
python3 - "$run/start_model/searchrl_agent.json" "$out/protocol.json" <<'EOF'
import json, sys
saved = json.load(open(sys.argv[1]))
json.dump(saved["protocol"], open(sys.argv[2], "w"))
budgets = saved["rollout"]
print(" ".join(f"--{k.replace('_', '-')} {budgets[k]}" for k in ("max_turns", "max_turn_tokens", "max_obs_tokens", "topk")
               if k in budgets), file=open(sys.argv[2] + ".args", "w"))
EOF
read -r -a budgets < "$out/protocol.json.args"

evaluate nq_untrained default "$nq@test" --template "$out/protocol.json" "${budgets[@]}"
evaluate nq_direct "$run/start_model" "$nq@test" --mode direct
evaluate nq_rag "$run/start_model" "$nq@test" --mode rag
evaluate nq_start "$run/start_model" "$nq@test"
evaluate nq_final "$run/final_model" "$nq@test" --paired-with "$out/nq_start.jsonl" --paired-with "$out/nq_rag.jsonl"
if [ -n "$pool" ]; then
  evaluate nq_pool_start "$run/start_model" "$nq@test" --retriever "$pool"
  evaluate nq_pool_final "$run/final_model" "$nq@test" --retriever "$pool" --paired-with "$out/nq_pool_start.jsonl"
fi
for data in "${transfer[@]+"${transfer[@]}"}"; do
  name=$(basename "$data")
  evaluate "${name}_start" "$run/start_model" "$data"
  evaluate "${name}_final" "$run/final_model" "$data" --paired-with "$out/${name}_start.jsonl"
done
echo "wrote $out" >&2
