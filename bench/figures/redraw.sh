#!/usr/bin/env bash
# Redraws the docs' figures (bench/figures/<sweep>/<figure>.{svg,pdf}) with `rpb plot` from the results.json
# committed beside them. After rerunning the sweeps, --from-checkpoints first copies each sweep's results.json from
# checkpoints/<sweep>/ (where `rpb extrapolate` writes it). --out-dir DIR draws into DIR instead (the test
# bench.figures_redraw does, in SVG only), --formats svg,pdf,png picks the files, --rpb PATH the binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
rpb=build/rpb
out_dir=
formats=svg,pdf
copy=0
while [ $# -gt 0 ]; do
  case $1 in
    --from-checkpoints) copy=1 ;;
    --out-dir) out_dir=$2; shift ;;
    --formats) formats=$2; shift ;;
    --rpb) rpb=$2; shift ;;
    *) echo "usage: $0 [--from-checkpoints] [--out-dir DIR] [--formats svg,pdf,png] [--rpb PATH]" >&2; exit 2 ;;
  esac
  shift
done

# sweep, metric drawn (position: the per-token loss by position, --against position), figure name, then any further
# `rpb plot` options (no spaces inside one): README.md or docs/ shows each.
recent_methods=t5,alibi,log_decay,rope,rope@rope_scaling=dynamic,fire,xpos,xpos@xpos_scale_base=32
recent_methods+=,xpos@xpos_scale_base=32@blockwise=true
recent_methods+=,rope@rope_scaling=yarn@rope_factor=16@run.init_from=rope@run.finetune_length=1024@run.batch=2
recent_methods+=@run.steps=200@optim.lr=3e-4@optim.warmup_steps=20
paper_methods=t5,alibi,log_decay,rope,rope@rope_scaling=dynamic,fire,xpos,xpos@xpos_scale_base=64
paper_methods+=,xpos@xpos_scale_base=64@blockwise=true
paper_methods+=,rope@rope_scaling=yarn@rope_factor=16@run.init_from=rope@run.finetune_length=2048@run.batch=1
paper_methods+=@run.steps=200@optim.lr=3e-4@optim.warmup_steps=20
figures=(
  "extrapolation perplexity perplexity"
  "extrapolation_paper mean_attention_distance attention_distance"
  "extrapolation_2d perplexity perplexity"
  "extrapolation_2d mean_attention_distance attention_distance"
  "extrapolation_recent perplexity perplexity --methods $recent_methods"
  "extrapolation_recent_paper perplexity perplexity --methods $paper_methods"
  "extrapolation_rope_scaling perplexity perplexity"
  "extrapolation_rope_scaling position position_loss --lengths 256"
  "extrapolation_text bits_per_byte bits_per_byte"
  "extrapolation_passkey accuracy accuracy"
  "extrapolation_passkey mean_attention_distance attention_distance"
  "extrapolation_passkey attention_entropy attention_entropy"
  "extrapolation_passkey_text accuracy accuracy"
  "extrapolation_passkey_text mean_attention_distance attention_distance"
)
if [ "$copy" = 1 ]; then  # each sweep once, however many figures it has
  for sweep in $(printf '%s\n' "${figures[@]}" | cut -d' ' -f1 | sort -u); do
    mkdir -p "bench/figures/$sweep"
    cp "checkpoints/$sweep/results.json" "bench/figures/$sweep/results.json"
  done
fi
for f in "${figures[@]}"; do
  read -r sweep metric name options <<< "$f"
  dir=bench/figures/$sweep
  dest=$dir
  if [ -n "$out_dir" ]; then dest=$out_dir/$sweep; mkdir -p "$dest"; fi
  for ext in ${formats//,/ }; do
    # shellcheck disable=SC2086  # the options split into words
    if [ "$metric" = position ]; then what=(--against position); else what=(--metric "$metric"); fi
    "$rpb" plot "$dir" "${what[@]}" --out "$dest/$name.$ext" ${options:-}
  done
done
