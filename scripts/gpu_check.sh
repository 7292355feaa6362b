#!/usr/bin/env bash
# The GPU checks of the CUDA work, as one script for one call on a machine with an NVIDIA GPU (docs/gpu.md): the
# parity tests (every op and the fused attention against the CPU, bit-identical repeats), the fused attention's
# benchmark against FlexAttention and SDPA (bench/attention_table.py merges them into one table), and the smoke run
# of configs/extrapolation_gpu.toml (two schemes, one seed, 300 steps on the KJV). Each part has its own time limit,
# so a slow one leaves the others their results. Everything goes to $OUT (default: gpu-check/).
#
# Built programs come from RPB_BIN (default build-gpu): rpb, rpb_cuda_tests and bench_attention_cuda, e.g. packed here
#   ../shared/tools/device-pack.sh build-gpu/rpb build-gpu/rpb_cuda_tests build-gpu/bench_attention_cuda \
#       -- checkpoints/data/kjv.txt
# and unpacked there: RPB_BIN=/tmp/devpack/bin LD_LIBRARY_PATH=/tmp/devpack/lib scripts/gpu_check.sh
#   scripts/gpu_check.sh [--quick]   --quick: the benchmark at 256 tokens and a 20-step smoke run of a small model
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${RPB_BIN:-build-gpu}
OUT=${OUT:-gpu-check}
mkdir -p "$OUT"
quick=${1:-}
steps=300 small=()
if [ "$quick" = "--quick" ]; then  # a 20-step smoke run of a small model (the emulated backend can run it too)
  steps=20 small=(--set model.d_model=32 --set model.layers=1 --set model.heads=2 --set model.d_ff=64 --set run.batch=2
                  --set optim.warmup_steps=2)
fi
part() {  # part NAME SECONDS COMMAND...: runs COMMAND with a limit, its output in $OUT/NAME.txt; notes the status
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc after $((SECONDS - t0)) s (limit $limit s)" | tee -a "$OUT/summary.txt"
}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
  | tee "$OUT/summary.txt"
part cuda_tests 120 "$BIN/rpb_cuda_tests" --duration=true
part bench_rpb 120 sh -c "'$BIN/bench_attention_cuda' $quick > '$OUT/rpb.jsonl'"
part smoke 240 "$BIN/rpb" extrapolate configs/extrapolation_gpu.toml --device cuda --set run.steps=$steps \
  --set 'sweep.methods=["alibi", "fire"]' --set 'sweep.seeds=[0]' --set run.name=extrapolation_gpu_smoke \
  --set run.out_dir="$OUT/runs" "${small[@]}"
part bench_peers 300 sh -c "python3 bench/attention_gpu.py $quick > '$OUT/peers.jsonl'"
python3 bench/attention_table.py "$OUT/rpb.jsonl" "$OUT/peers.jsonl" > "$OUT/table.md" 2>&1
cat "$OUT/table.md"
tail -n 5 "$OUT/cuda_tests.txt"
