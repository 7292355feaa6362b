#!/usr/bin/env bash
# The text pipeline's time and peak memory against its printed estimate (train/data/text.h, corpus.h, token_cache.h):
# generated corpora, tokenized with SentencePiece (4,000 pieces from 200,000 sampled lines), a run of 20 steps that
# writes the token cache, then a later run that reads it back verified. Not a test (minutes, and GBs of disk):
#   bench/text_memory.sh [build/rpb]              # 96 MB in 100 files, and one document of 100 MB
#   RPB_BENCH_GB=1 bench/text_memory.sh           # also 1 GB in 1,000 files
# Prints a Markdown table: corpus, the first run's seconds and peak resident memory (VmHWM, GNU time's %M), the later
# run's, the estimate the run logged ("memory: about ... estimated") and the token cache's size on disk. The corpora go to $RPB_BENCH_DIR (default a
# temporary folder, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
RPB=$(realpath "${1:-build/rpb}")
work=${RPB_BENCH_DIR:-$(mktemp -d)}
[ -n "${RPB_BENCH_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"

# Paragraphs of 1 to 12 lines of 4 to 16 words, each word drawn (seeded) from 20,000 words of two to four syllables
# (a vocabulary rich enough for SentencePiece's 4,000 pieces).
generate() {  # <folder> <files> <bytes per file> <one line per document: 0|1>
  /usr/bin/python3 - "$@" <<'PY'
import os, random, sys
folder, files, per_file, single = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
rng = random.Random(7)
syllables = [a + b for a in ["", "b", "c", "d", "f", "g", "h", "l", "m", "n", "p", "r", "s", "t", "v", "w", "st", "th"]
             for b in ["a", "e", "i", "o", "u", "ai", "ea", "ou"]]
words = ["".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(20000)]
os.makedirs(folder, exist_ok=True)
for f in range(files):
    out, size = [], 0
    while size < per_file:
        para = "\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(4, 16)))
                         for _ in range(rng.randint(1, 12))) + "\n\n"
        out.append(para)
        size += len(para)
    with open(os.path.join(folder, f"part{f:04d}.txt"), "w") as fh:
        fh.write("".join(out))
PY
}

run() {  # <label> <corpus> <documents> [--set ...]; prints a table row
  local label=$1 corpus=$2 documents=$3 out=$work/runs/$1
  shift 3
  rm -rf "$out"
  local sets=(--set run.out_dir="\"$out\"" --set run.steps=20 --set run.checkpoint_every=0 --set run.eval_every=0
              --set run.eval_multipliers=[1] --set run.eval_tokens=512 --set task.path="\"$corpus\""
              --set task.documents="\"$documents\"" --set task.vocab=4000 --set optim.warmup_steps=1 "$@")
  local row="| $label |"
  for pass in first later; do
    [ "$pass" = later ] && sets+=(--set run.name='"later"')
    /usr/bin/time -f "%e %M" -o "$work/time" "$RPB" train configs/text.toml "${sets[@]}" > "$work/log" 2>&1 ||
      { tail -n 20 "$work/log"; exit 1; }
    read -r secs kib < "$work/time"
    row+=" $secs s, $((kib / 1024)) MiB |"
  done
  estimate=$(sed -n 's/.*memory: about \([0-9.]* [KMGT]*i*B\).*/\1/p' "$work/log" | head -n 1)
  echo "$row $estimate | $(du -sm "$out/.token_cache" | cut -f1) MB |"
}

echo "| corpus | first run (tokenize, cache, 20 steps) | a later run (reads the cache) | estimate | token cache |"
echo "|---|---|---|---|---|"
generate "$work/c1" 20 50000 0
run "1 MB, 20 files, paragraphs (the process itself)" "$work/c1" blank_lines
generate "$work/c96" 100 1000000 0
run "96 MB, 100 files, paragraphs" "$work/c96" blank_lines
mkdir -p "$work/c100"
generate "$work/c100" 1 100000000 0
for i in $(seq 60); do echo "A short document, number $i." > "$work/c100/short$i.txt"; done
# At these fractions the large document falls in the train split (its SHA-256's first 64 bits are 0.255 of 2^64).
run "one document of 100 MB (and 60 short ones)" "$work/c100" files --set task.valid_fraction=0.1 \
  --set task.test_fraction=0.1
if [ "${RPB_BENCH_GB:-0}" = 1 ]; then
  generate "$work/c1g" 1000 1000000 0
  run "1.0 GB, 1,000 files, paragraphs" "$work/c1g" blank_lines
fi
