#!/usr/bin/env bash
# Shows that two rpb binaries train, save and evaluate bit for bit alike: the refactoring check.
#   scripts/same_results.sh OLD_RPB NEW_RPB [WORK_DIR]
# Each binary runs short sweeps of every position scheme on every task (markov, lag and kjv with
# the 1-D schemes; grid2d with the 2-D ones, swin_v2@window8 included), with a checkpoint midway, and short sweeps of
# the other tasks and run kinds: one's own text with SentencePiece (the KJV as text), passkey retrieval in Markov
# filler and in text, and the evaluation-setting rows (rope scalings, xPos blockwise, sliding windows) and a
# fine-tune (run.init_from) of configs/extrapolation_recent.toml.
# Then every checkpoint's datasets and attributes (but the `created` time stamp) must be identical,
# and so must results.json and `rpb bias --json` as parsed JSON (scripts/same_json.py), results.csv cell by cell
# (scripts/same_csv.py), the printed tables, `rpb inspect` of each final checkpoint, `rpb eval` of each midway one
# (and of the rope, xpos and t5 ones with their evaluation flags: the JSON records without provenance and the names
# of every record file) and `rpb bias` of every 1-D scheme. Exit 0 when everything matches;
# otherwise each difference is shown (the first lines of its diff).
#
# Provenance (where a result came from: the commit, the command line, the date, the run folders and checkpoint
# digests) differs between two builds by design, and an older build writes none. These fields, and only these, are
# ignored (see prov_* below): a checkpoint's `commit` attribute, inspect's "(commit ...)", results.json's
# "provenance", its rows' "runs" and its "format" (rpb-results-3 added the two), and results.csv's provenance columns.
# Also ignored, as added after the baseline builds this script was written for: results.json rows' "settings" (the
# typed settings of a method, which a grid draws against) and "scheme" (the method's scheme, rpb-results-4); the rows'
# "protocol" and "eval_stride" (rpb-results-5), results.csv's protocol and eval_stride columns and `rpb eval`'s
# "Protocol:" line (sliding-window evaluation, run.eval_stride: a baseline prints nonoverlapping numbers without it);
# the rows' "bytes", "bits_per_byte", "bits_per_byte_stats", "accuracy", "depth_accuracy", "samples_per_depth",
# "accuracy_stats" and "learned" (rpb-results-6; null for the tasks compared here, which have neither text bytes nor
# passkey accuracy) and results.csv's bytes, bits_per_byte and accuracy columns (empty for them). The printed tables
# of these tasks gain nothing: bits per byte and accuracy tables are printed for text and passkey tasks only. And the
# labels, names for display that a later rpb may make otherwise ([sweep] labels, rpb-results-7): results.json's
# "task_labels" and rows' "label", and results.csv's label column.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: scripts/same_results.sh OLD_RPB NEW_RPB [WORK_DIR]" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
work=${3:-$(mktemp -d /tmp/rpb-same.XXXXXX)}
mkdir -p "$work"
# The provenance fields (train/io/provenance.h, train/sweep/results.h kResultsCsvProvenanceColumns).
prov_h5_attributes='commit'
prov_inspect_sed='s/ (commit [^)]*)//'
prov_json=(--ignore format --ignore provenance --ignore 'rows.*.runs' --ignore 'rows.*.settings' --ignore 'rows.*.scheme'
           --ignore 'rows.*.protocol' --ignore 'rows.*.eval_stride' --ignore task_labels --ignore 'rows.*.label')
for key in bytes bits_per_byte bits_per_byte_stats accuracy depth_accuracy samples_per_depth accuracy_stats learned; do
  prov_json+=(--ignore "rows.*.$key")
done
prov_csv_columns=(run_folder config_digest checkpoint checkpoint_sha256 rpb_version commit command date protocol
                  eval_stride bytes bits_per_byte accuracy label)
short=(--set run.steps=20 --set run.checkpoint_every=10 --set optim.warmup_steps=2 --set run.log_every=5
       --set run.eval_tokens=1024 --set 'sweep.seeds=[0]')

# A fine-tune's checkpoint: its stored config names the parent's SHA-256 (run.init_sha256).
is_finetune() { h5dump -a config "$1" 2>/dev/null | grep -q 'init_sha256 = '; }
finetune_sed="s/init_sha256 = '[0-9a-f]*'/init_sha256 = (the parent's SHA-256)/"
finetune_digest_sed='s/config digest [0-9a-f]*/config digest (of a fine-tune: with its parent'"'"'s SHA-256)/'

# Both binaries run in the same folder (paths are part of the stored configs and of the outputs), which is
# then renamed old/ or new/.
run_all() {  # <binary> <label>
  local rpb=$1 out=$work/run
  rm -rf "$out" "$work/$2" && mkdir -p "$out"
  "$rpb" extrapolate configs/extrapolation_quick.toml "${short[@]}" --set run.out_dir="\"$out\"" \
    --set 'sweep.tasks=["markov", "lag", "kjv"]' --set 'run.eval_multipliers=[1, 2, 4]' > "$out/table_1d.txt" 2> "$out/log_1d.txt"
  "$rpb" extrapolate configs/extrapolation_2d.toml "${short[@]}" --set run.out_dir="\"$out\"" \
    > "$out/table_2d.txt" 2> "$out/log_2d.txt"
  # The kjv sweep above wrote checkpoints/data/kjv.txt, which the text tasks read.
  "$rpb" extrapolate configs/extrapolation_text.toml "${short[@]}" --set run.out_dir="\"$out\"" \
    --set 'sweep.methods=["t5", "rope", "fire"]' --set 'run.eval_multipliers=[1, 2]' \
    > "$out/table_text.txt" 2> "$out/log_text.txt"
  "$rpb" extrapolate configs/extrapolation_passkey.toml "${short[@]}" --set run.out_dir="\"$out\"" \
    --set 'sweep.methods=["t5", "rope"]' > "$out/table_passkey.txt" 2> "$out/log_passkey.txt"
  "$rpb" extrapolate configs/extrapolation_passkey_text.toml "${short[@]}" --set run.out_dir="\"$out\"" \
    --set 'sweep.methods=["t5", "alibi"]' > "$out/table_passkey_text.txt" 2> "$out/log_passkey_text.txt"
  "$rpb" extrapolate configs/extrapolation_recent.toml "${short[@]}" --set run.out_dir="\"$out\"" \
    --set 'sweep.tasks=["markov"]' --set 'run.eval_multipliers=[1, 2, 4]' \
    --set 'sweep.methods=["rope", "rope@rope_scaling=yarn", "xpos", "xpos@blockwise=true", "t5@run.eval_stride=32", "rope@rope_scaling=linear@rope_factor=4@run.init_from=rope@run.finetune_length=128@run.steps=20@optim.warmup_steps=2"]' \
    > "$out/table_recent.txt" 2> "$out/log_recent.txt"
  for f in $(cd "$out" && find . -name 'step_*.h5' | sort); do
    # Without the blocks that depend on the clock: the `created` attribute (and its CRC), the measured tokens/s and the
    # elapsed training time; and without the provenance attributes. A fine-tune's stored config holds its parent
    # checkpoint's SHA-256, which the parent's `created` time changes, and so do the config's CRC and the digest:
    # those are left out of a fine-tune's dump (its parameters, state and the rest of its config stay compared).
    local skip_attr='('"$prov_h5_attributes"'|created)(\.crc32)?'
    if is_finetune "$out/$f"; then skip_attr+='|config\.crc32|config_digest(\.crc32)?'; fi
    h5dump "$out/$f" | awk '!skip && /(ATTRIBUTE "('"$skip_attr"')"|DATASET "(tokens_per_sec|elapsed_s)") \{/ {
        skip = 1; match($0, /^ */); indent = RLENGTH; next }
      skip && /^ *}$/ { match($0, /^ */); if (RLENGTH == indent) skip = 0; next }
      !skip' | sed "$finetune_sed" > "$out/$f.dump"
  done
  for f in $(cd "$out" && find . -name 'step_00000020.h5' | sort); do
    if is_finetune "$out/$f"; then
      "$rpb" inspect "$out/$f" | sed -e "$prov_inspect_sed" -e "$finetune_sed" -e "$finetune_digest_sed" > "$out/$f.inspect"
    else
      "$rpb" inspect "$out/$f" | sed "$prov_inspect_sed" > "$out/$f.inspect"
    fi
  done
  for f in $(cd "$out" && find . -name 'step_00000010.h5' | sort); do
    "$rpb" eval "$out/$f" | { grep -v '^Protocol: nonoverlapping segments' || true; } > "$out/$f.eval"
  done
  # The evaluation settings as `rpb eval` flags (nn/position/options.h eval_name) on midway checkpoints: the records
  # as JSON, and the names of every record the run folders hold (a flag's place in the name).
  local flag_sets f flags
  for f in $(cd "$out" && find . \( -path '*/rope/seed0/*' -o -path '*/xpos/seed0/*' -o -path '*/t5/seed0/*' \) \
               -name 'step_00000010.h5' | sort); do
    case "$f" in
      */rope/*) flag_sets=("--rope-scaling yarn --rope-factor 4" "--rope-scaling dynamic") ;;
      */xpos/*) flag_sets=("--blockwise") ;;
      *) flag_sets=("--untrained nearest --diagnostics") ;;
    esac
    for flags in "${flag_sets[@]}"; do
      # shellcheck disable=SC2086
      "$rpb" eval "$out/$f" $flags --json > "$out/$f.$(echo "$flags" | tr -c 'a-z0-9\n' _).eval.json"
    done
  done
  (cd "$out" && find . -path '*/eval/*.json' | sort) > "$out/eval_records.list"
  for scheme in $bias_schemes; do
    for flags in "" "--json" "--causal --heads 3 --query-length 5 --key-length 9 --query-offset 4"; do
      # shellcheck disable=SC2086
      "$rpb" bias --scheme "$scheme" $flags >> "$out/bias.txt" 2>&1 || echo "exit $?" >> "$out/bias.txt"
    done
  done
  # inspect's mean tokens/s is a timing.
  find "$out" -name '*.inspect' -exec sed -i 's/mean [0-9.e+]* tokens\/s/mean (timing) tokens\/s/' {} +
  mv "$out" "$work/$2"
}

# `rpb bias` runs for every 1-D scheme both binaries know, in the old binary's order: one newer than OLD_RPB (xpos) is
# left out, since the old binary would refuse it.
schemes_1d() {  # <binary>: its 1-D scheme names, one a line
  "$1" schemes --json | python3 -c 'import json, sys
print("\n".join(s["name"] for s in json.load(sys.stdin)["schemes"] if 1 in s["dims"] or not s["dims"]))'
}
bias_schemes=$(grep -Fxf <(schemes_1d "$new") <(schemes_1d "$old") | tr '\n' ' ')
echo "rpb bias compared for: $bias_schemes" >&2
run_all "$old" old
run_all "$new" new
status=0
# JSON is compared as parsed values (scripts/same_json.py): `bias --json` lines exactly, results.json without its
# provenance, at the 10 significant digits rpb printed before format rpb-results-2 (JSON through nlohmann: shortest
# round-trip doubles, another layout) when the old binary wrote that earlier format, else exactly.
same_json() {  # <file relative to old/ and new/>
  local f=$1 flags=()
  case "$f" in
    */bias.txt) flags=(--lines) ;;
    # A checkpoint file's SHA-256 covers its `created` time and commit (its contents are compared as *.h5.dump).
    *.eval.json) flags=("${prov_json[@]}" --ignore checkpoint_sha256) ;;
    *.json) flags=("${prov_json[@]}"); grep -q '"format"' "$work/old/$f" || flags+=(--digits 10) ;;
  esac
  python3 scripts/same_json.py "${flags[@]}" "$work/old/$f" "$work/new/$f"
}
same_csv() {  # <file relative to old/ and new/>
  local flags=()
  for c in "${prov_csv_columns[@]}"; do flags+=(--ignore-column "$c"); done
  python3 scripts/same_csv.py "${flags[@]}" "$work/old/$1" "$work/new/$1"
}
for pattern in 'bias.txt' 'table_*.txt' 'results.csv' 'results.json' '*.h5.dump' '*.inspect' '*.eval' '*.eval.json' \
               'eval_records.list'; do
  n=0
  for f in $(cd "$work/old" && find . -name "$pattern" | sort); do
    n=$((n + 1))
    if [ "$pattern" = results.csv ]; then
      same_csv "$f" > "$work/csv_diff.txt" || { echo "differs: $f"; head -n 20 "$work/csv_diff.txt"; status=1; }
    elif [ "$pattern" = bias.txt ] || [ "$pattern" = results.json ] || [ "$pattern" = '*.eval.json' ]; then
      same_json "$f" > "$work/json_diff.txt" || { echo "differs: $f"; head -n 20 "$work/json_diff.txt"; status=1; }
    elif ! cmp -s "$work/old/$f" "$work/new/$f"; then
      echo "differs: $f"; { diff "$work/old/$f" "$work/new/$f" || true; } | head -n 20; status=1
    fi
  done
  [ "$(cd "$work/new" && find . -name "$pattern" | wc -l)" = "$n" ] || { echo "the new binary wrote another number of $pattern files"; status=1; }
  echo "$pattern: $n files compared"
done
[ "$status" = 0 ] && echo "same_results: every checkpoint, table, inspect and eval output is identical ($work)"
exit "$status"
