#!/usr/bin/env bash
# The main job, end to end on this machine: compiles examples/gpt.onnx (a
# tiny GPT-2-style decoder exported from PyTorch with its training loss) for
# 4 ranks of the cpu target (dp=2 x tp=2, Megatron-style), prints the plan
# (the mesh, what each axis does, the bytes each rank will send per step),
# trains it under mpirun on examples/corpus.txt (characters as tokens) until
# the loss has visibly fallen, and prints each rank's memory, the bytes
# each rank sent per step (measured: they equal the prediction) and the loss
# curve's start and end; then writes report.html (cleave report: the plan,
# memory per rank, the pipeline schedule predicted and traced, the
# communication, the loss curve) and says where it is.
#
#   [BUILD_DIR=build] scripts/run-example.sh [--steps N] [--ranks 1|2|4] [--work DIR]
#                          [--model FILE.onnx] [-- TRAIN_FLAGS...]
#
# --ranks 2 is dp=2, 1 a single process. Another --model trains on random
# inputs (--synthetic). Flags after `--` go to the training program.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
steps=300
ranks=4
build_dir=${BUILD_DIR:-"$root/build"}
work="$build_dir/example"
model="$root/examples/gpt.onnx"
train_flags=()
while (($#)); do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --) shift; train_flags=("$@"); break ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "run-example.sh: unknown argument '$1'; see --help" >&2; exit 1 ;;
  esac
done
case $ranks in
  1) layout=() ; plan="one process, no mesh" ;;
  2) layout=(--mesh dp=2 --strategy dp)
     plan="dp=2: each rank takes half the batch; gradients all-reduced" ;;
  4) layout=(--mesh dp=2,tp=2 --strategy megatron)
     plan="dp=2 x tp=2: the batch split over dp; over tp, each attention and
  MLP block column- then row-parallel (Megatron), the embedding, output head
  and cross entropy split by vocabulary" ;;
  *) echo "run-example.sh: --ranks is 1, 2 or 4, not '$ranks'" >&2; exit 1 ;;
esac

BUILD_DIR=$build_dir "$root/scripts/setup.sh" >/dev/null
cleave="$build_dir/bin/cleave"
mkdir -p "$work"
data_flags=(--synthetic)
if [[ $model == "$root/examples/gpt.onnx" ]]; then
  /usr/bin/python3 "$root/examples/make_data.py" "$root/examples/corpus.txt" \
    "$work/data" >/dev/null
  data_flags=(--data "$work/data" --shuffle 1)
fi

echo "== plan: $(basename "$model") on $ranks rank(s)"
echo "  $plan"
echo "  predicted by the compiler:"
"$cleave" compile "$model" "${layout[@]}" --optimizer adamw --lr 0.01 \
  --print-comm -o "$work/train"
# The plan as cleave plan writes it (for the report), on this machine as
# cleave calibrate measures it, for the model's batch when it is fixed.
batch=$(/usr/bin/python3 -c "
import onnx, sys
m = onnx.load(sys.argv[1], load_external_data=False)
inits = {i.name for i in m.graph.initializer}
dims = [i.type.tensor_type.shape.dim for i in m.graph.input if i.name not in inits]
print(dims[0][0].dim_value if dims and dims[0] else 0)" "$model")
report_flags=()
if ((batch > 0)); then
  "$cleave" calibrate -o "$work/machine.yaml" --seconds 0.2 >/dev/null
  "$cleave" plan "$model" --cluster "$work/machine.yaml" --ranks "$ranks" \
    --global-batch "$batch" "${layout[@]}" --optimizer adamw --lr 0.01 \
    --json "$work/plan.json" >/dev/null
  report_flags=(--log "$work/log.jsonl")
fi
trace_flags=()
if ((steps >= 3)); then
  trace_flags=(--trace "$work/trace.json" --trace-steps 1:3)
fi
echo
echo "== training $steps steps (log: $work/log.jsonl)"
run=("$work/train" "${data_flags[@]}" --steps "$steps" --log "$work/log.jsonl"
     --print-memory --print-comm "${trace_flags[@]}" "${train_flags[@]}")
if ((ranks > 1)); then
  mpi=(mpirun -np "$ranks" --oversubscribe)
  [[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
  OMP_NUM_THREADS=1 "${mpi[@]}" "${run[@]}"
else
  "${run[@]}"
fi
echo
/usr/bin/python3 - "$work/log.jsonl" <<'EOF'
import json, sys
losses = [json.loads(line)["loss"] for line in open(sys.argv[1])]
k = max(1, len(losses) // 10)
first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
print("== loss: %.3f over the first %d steps, %.3f over the last %d"
      % (first, k, last, k))
EOF
if ((${#report_flags[@]})); then
  ((${#trace_flags[@]})) && report_flags+=(--trace "$work/trace.json")
  "$cleave" report --plan "$work/plan.json" "${report_flags[@]}" \
    -o "$work/report.html"
  echo "== report: $work/report.html (open it in a browser: memory per rank,"
  echo "   the pipeline schedule predicted and traced, communication, loss)"
fi
