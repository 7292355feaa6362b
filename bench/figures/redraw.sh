#!/usr/bin/env bash
# Redraws the README's figures (bench/figures/<sweep>/<figure>.{svg,pdf}) with `rpb plot` from the results.json
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

# sweep, metric drawn, figure name: the README shows each.
figures=(
  "extrapolation perplexity perplexity"
  "extrapolation_paper mean_attention_distance attention_distance"
  "extrapolation_2d perplexity perplexity"
  "extrapolation_2d mean_attention_distance attention_distance"
)
for f in "${figures[@]}"; do
  read -r sweep metric name <<< "$f"
  dir=bench/figures/$sweep
  if [ "$copy" = 1 ]; then
    mkdir -p "$dir"
    cp "checkpoints/$sweep/results.json" "$dir/results.json"
  fi
  dest=${out_dir:-$dir}
  [ -n "$out_dir" ] && dest=$out_dir/$sweep && mkdir -p "$dest"
  for ext in ${formats//,/ }; do
    "$rpb" plot "$dir" --metric "$metric" --out "$dest/$name.$ext"
  done
done
