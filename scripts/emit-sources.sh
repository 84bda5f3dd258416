#!/usr/bin/env bash
# Emits the generated C++ (and CUDA C++) and the final IR of the reference
# models over a matrix of layouts, one file each per (model, layout), or the
# refusal's message, so that a refactoring of
# the compiler can show it changes nothing: run it with the old and the new
# `cleave`, then `diff -r` the two folders.
#
#   scripts/emit-sources.sh CLEAVE OUT_DIR [MODELS_DIR]
#
# MODELS_DIR holds mlp.onnx, cnn.onnx, resnet.onnx, gpt.onnx (made by
# test/models/export_models.py when absent).
set -euo pipefail
cleave=$1
out=$2
models=${3:-"$out/models"}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$out" "$models"
if [[ ! -f $models/gpt.onnx ]]; then
  /usr/bin/python3 "$root/test/models/export_models.py" --out "$models" >/dev/null
fi
layouts=(
  "single|"
  "adamw|--optimizer adamw --lr-schedule cosine --warmup-steps 2 --total-steps 10 --clip-grad-norm 1"
  "momentum|--optimizer sgd --momentum 0.9 --nesterov"
  "cuda|--target cuda"
  "inference|--inference"
  "dp2|--mesh dp=2 --strategy dp"
  "zero1|--mesh dp=4 --strategy zero1"
  "zero2|--mesh dp=4 --strategy zero2"
  "zero3|--mesh dp=4 --strategy zero3"
  "megatron|--mesh dp=2,tp=2 --strategy megatron"
  "megatron-cuda|--mesh dp=2,tp=2 --strategy megatron --target cuda"
  "pp2|--mesh pp=2 --pipeline pp"
  "dp2pp2-mb2|--mesh dp=2,pp=2 --strategy dp --pipeline pp --microbatches 2"
  "mb2|--microbatches 2"
)
for model in mlp cnn resnet gpt; do
  for layout in "${layouts[@]}"; do
    name=${layout%%|*}
    read -r -a flags <<<"${layout#*|}"
    target=$out/$model-$name.src
    shape=()
    [[ $model == mlp ]] && shape=(--input-shape batch=8)
    if ! "$cleave" compile "$models/$model.onnx" "${shape[@]}" \
         "${flags[@]}" --emit=source -o "$target" 2>"$target.err"; then
      mv "$target.err" "$target.refused"
    else
      rm -f "$target.err"
      "$cleave" compile "$models/$model.onnx" "${shape[@]}" "${flags[@]}" \
        --emit=mlir -o "$out/$model-$name.mlir"
    fi
  done
done
echo "emit-sources: $(ls "$out"/*.src | wc -l) sources and IRs," \
  "$(ls "$out"/*.refused 2>/dev/null | wc -l) refusals in $out"
