#!/usr/bin/env bash
# The GPU checks of the cuda target, for a machine with NVIDIA GPUs (the
# project's own machines have none, so CI only compiles and links the cuda
# target). Run from a built tree (scripts/setup.sh, with nvcc installed):
#
#   test/gpu/run-gpu-checks.sh [BUILD_DIR]      # default: build
#
# For the MLP (SGD + momentum), the CNN (SGD + momentum, BatchNorm, Dropout)
# and the tiny GPT (AdamW) it trains 6 steps with PyTorch (the reference),
# with the cpu target on one rank, and with the cuda target on one GPU and,
# given 4 GPUs, on a dp=2,tp=2 mesh under mpirun (2 GPUs: dp=2), and, given
# 2 GPUs, in 2 pipeline stages (with micro-batches but for the CNN). Each cuda
# run is checked the way test/distributed checks the cpu target: losses
# against PyTorch (compare.py) and against the single-rank cpu run
# (compare_runs.py), gathered parameters and optimizer state included, every
# replicated tensor bitwise identical on all ranks. Given 2 GPUs, a rank
# frozen mid-run must make the other abort the job (the NCCL watchdog), and
# a --trace of the pipelined GPT (CUDA events) must nest and match its plan.
#
# Prints one PASS or FAIL line per run and exits 1 if any failed. Keep the
# work directory it prints when reporting a failure.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
cleave="$build/bin/cleave"
python=/usr/bin/python3
reference="$root/test/reference"
work="$(mktemp -d /tmp/cleave-gpu-checks.XXXXXX)"
gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')"
if [[ "$gpus" -lt 1 ]]; then
  echo "error: no NVIDIA GPU found (nvidia-smi -L lists none)" >&2
  exit 1
fi
mpirun=(mpirun --oversubscribe --timeout 600)
[[ $(id -u) -eq 0 ]] && mpirun+=(--allow-run-as-root)
echo "cleave GPU checks: $gpus GPU(s), work directory $work"
nvidia-smi -L

failures=0
# check NAME COMMAND...: runs a check, prints PASS/FAIL with its log.
check() {
  local name="$1"; shift
  if "$@" > "$work/$name.log" 2>&1; then
    echo "PASS $name"
  else
    echo "FAIL $name (log: $work/$name.log)"
    failures=$((failures + 1))
  fi
}

# run_model MODEL TORCH_FLAGS COMPILE_FLAGS MESH_STRATEGY [COMPARE_FLAGS...]
run_model() {
  local model="$1" torch_flags="$2" compile_flags="$3" strategy="$4"
  shift 4
  local dir="$work/$model"
  mkdir -p "$dir"
  # shellcheck disable=SC2086
  check "$model-reference" $python "$reference/torch_train.py" \
    --model "$model" $torch_flags --steps 6 --out "$dir"
  local compile=("$cleave" compile "$dir/model.onnx" $compile_flags)
  local train=(--data "$dir/data" --steps 6 --quiet)
  check "$model-cpu-compile" "${compile[@]}" -o "$dir/cpu"
  check "$model-cpu-run" "$dir/cpu" "${train[@]}" --log "$dir/cpu.jsonl" \
    --dump-params "$dir/cpu.params"
  check "$model-cuda-compile" "${compile[@]}" --target cuda -o "$dir/cuda"
  check "$model-cuda-run" "$dir/cuda" "${train[@]}" --log "$dir/cuda.jsonl" \
    --dump-params "$dir/cuda.params"
  check "$model-cuda-vs-torch" $python "$reference/compare.py" \
    --reference "$dir/reference" --losses "$dir/cuda.jsonl" \
    --params "$dir/cuda.params"
  check "$model-cuda-vs-cpu" $python "$reference/compare_runs.py" \
    --losses "$dir/cuda.jsonl" --reference-losses "$dir/cpu.jsonl" \
    --params "$dir/cuda.params" --reference-params "$dir/cpu.params" "$@"

  local mesh ranks
  if [[ "$gpus" -ge 4 ]]; then
    mesh="dp=2,tp=2"; ranks=4
  elif [[ "$gpus" -ge 2 ]]; then
    mesh="dp=2"; strategy=dp; ranks=2
  else
    echo "SKIP $model-cuda-mesh (needs 2 or more GPUs)"
    return
  fi
  local name="$model-cuda-$ranks-ranks"
  check "$name-compile" "${compile[@]}" --target cuda --mesh "$mesh" \
    --strategy "$strategy" -o "$dir/mesh"
  check "$name-run" "${mpirun[@]}" -np "$ranks" "$dir/mesh" "${train[@]}" \
    --log "$dir/mesh.jsonl" --dump-params "$dir/mesh.params" \
    --dump-local "$dir/mesh.local"
  check "$name-vs-torch" $python "$reference/compare.py" \
    --reference "$dir/reference" --losses "$dir/mesh.jsonl" \
    --params "$dir/mesh.params"
  check "$name-vs-cpu" $python "$reference/compare_runs.py" \
    --losses "$dir/mesh.jsonl" --reference-losses "$dir/cpu.jsonl" \
    --params "$dir/mesh.params" --reference-params "$dir/cpu.params" \
    --local "$dir/mesh.local" "$@"
}

# run_pipeline MODEL COMPILE_FLAGS MICROBATCHES [COMPARE_FLAGS...]: after
# run_model, the model in 2 pipeline stages (2 GPUs), checked against the
# cpu run with every tensor whole on exactly one stage's ranks.
run_pipeline() {
  local model="$1" compile_flags="$2" microbatches="$3"
  shift 3
  local dir="$work/$model" name="$model-cuda-pipeline"
  if [[ "$gpus" -lt 2 ]]; then
    echo "SKIP $name (needs 2 or more GPUs)"
    return
  fi
  # shellcheck disable=SC2086
  check "$name-compile" "$cleave" compile "$dir/model.onnx" $compile_flags \
    --target cuda --mesh pp=2 --pipeline pp --microbatches "$microbatches" \
    -o "$dir/pipeline"
  check "$name-run" "${mpirun[@]}" -np 2 "$dir/pipeline" --data "$dir/data" \
    --steps 6 --quiet --log "$dir/pipeline.jsonl" \
    --dump-params "$dir/pipeline.params" --dump-local "$dir/pipeline.local"
  check "$name-vs-cpu" $python "$reference/compare_runs.py" \
    --losses "$dir/pipeline.jsonl" --reference-losses "$dir/cpu.jsonl" \
    --params "$dir/pipeline.params" --reference-params "$dir/cpu.params" \
    --local "$dir/pipeline.local" --mesh pp=2 --stages pp "$@"
}

run_model mlp "--optimizer sgd --lr 0.05 --momentum 0.9 --batch 8" \
  "--input-shape batch=8 --optimizer sgd --lr 0.05 --momentum 0.9" megatron
run_model cnn "--optimizer sgd --lr 0.05 --momentum 0.9 --batch 8" \
  "--optimizer sgd --lr 0.05 --momentum 0.9" dp --param-atol 1e-7
run_model gpt "--optimizer adamw --lr 0.01 --eps 1e-6 --batch 4" \
  "--optimizer adamw --lr 0.01 --eps 1e-6" megatron
# Pipeline stages (NCCL send/recv between the stages' GPUs); with
# micro-batches the CNN's BatchNorm would normalize each micro-batch by its
# own statistics, another trajectory than the whole-batch cpu run it is
# compared with, so it runs without them.
run_pipeline mlp "--input-shape batch=8 --optimizer sgd --lr 0.05 --momentum 0.9" 2
run_pipeline cnn "--optimizer sgd --lr 0.05 --momentum 0.9" 1 --param-atol 1e-7
run_pipeline gpt "--optimizer adamw --lr 0.01 --eps 1e-6" 2

# --trace on the GPU: slices timed by CUDA events on the compute stream
# (test/cuda/trace-emulation.test checks the same in the host emulation):
# nested in their steps, the pipeline's collectives as planned, with the
# bytes the program counts.
if [[ "$gpus" -ge 2 ]]; then
  check gpt-cuda-trace-plan "$cleave" plan "$work/gpt/model.onnx" \
    --cluster dgx-a100-80g --ranks 2 --global-batch 4 --mesh pp=2 \
    --pipeline pp --microbatches 2 --optimizer adamw --lr 0.01 --eps 1e-6 \
    --json "$work/gpt/plan.json"
  check gpt-cuda-trace-run "${mpirun[@]}" -np 2 "$work/gpt/pipeline" \
    --data "$work/gpt/data" --steps 4 --quiet --trace "$work/gpt/trace.json" \
    --trace-steps 1:3 --print-comm
  check gpt-cuda-trace-check bash -c "$python '$root/test/report/Inputs/check_trace.py' \
    '$work/gpt/trace.json' '$work/gpt/plan.json' '$work/gpt-cuda-trace-run.log' \
    | tee /dev/stderr | grep -q 'partly overlapping: 0, outside their step: 0' && \
    $python '$root/test/report/Inputs/check_trace.py' '$work/gpt/trace.json' \
    '$work/gpt/plan.json' '$work/gpt-cuda-trace-run.log' \
    | grep -q 'match the plan: True; bytes match --print-comm: True'"
fi

# The NCCL watchdog: a rank frozen mid-run (SIGSTOP) leaves its peer's step
# waiting in NCCL; after --collective-timeout the peer aborts the job,
# naming itself (runtime/cuda/CudaDevice.cu waitForCompute).
if [[ "$gpus" -ge 2 ]]; then
  check "mlp-cuda-watchdog" $python "$root/test/distributed/Inputs/stop_rank.py" \
    --rank 1 --log "$work/watchdog.jsonl" --limit 60 -- \
    "${mpirun[@]}" -np 2 "$work/mlp/mesh" --data "$work/mlp/data" \
    --steps 1000000 --log "$work/watchdog.jsonl" --collective-timeout 10 --quiet
fi

if [[ "$failures" -gt 0 ]]; then
  echo "FAILED: $failures check(s); logs in $work"
  exit 1
fi
echo "PASSED: every check; logs in $work"
