#!/usr/bin/env bash
# Rebuilds the committed seed corpora of the fuzz targets (tests/fuzz/corpus/{config,checkpoint}).
# Usage: tests/fuzz/make_corpus.sh [path/to/rpb]   (default: build/rpb)
# config/: the configs/*.toml files, plus the small valid and invalid variants kept in this script.
# checkpoint/: checkpoints of two tiny runs (SGD without state, AdamW with its moments), then
# truncated and bit-flipped copies of the first. Files stay small (14 and 20 KB), but for the 256 KiB piece of a
# hostile SentencePiece model. Then short seeds of the target's 'L', 'N', 'T', 'S' and 'C' modes.
set -euo pipefail
cd "$(dirname "$0")/../.."
RPB=$(realpath "${1:-build/rpb}")
out=tests/fuzz/corpus
rm -rf "$out" && mkdir -p "$out/config" "$out/checkpoint"

# ---- config ----
for f in configs/*.toml; do cp "$f" "$out/config/$(basename "$f")"; done
printf '' > "$out/config/empty.toml"
printf '[model]\nd_model = 8\nheads = 2\n#set position.scheme=alibi' > "$out/config/set_override.toml"
printf '[run]\nsteps = 10\n#set run.eval_multipliers=[1,4]' > "$out/config/set_array.toml"
printf '[model\nd_model = 8\n' > "$out/config/bad_syntax.toml"
printf '[model]\nd_modle = 8\n' > "$out/config/unknown_key.toml"
printf '[model]\nheads = "4"\n' > "$out/config/wrong_type.toml"
printf '[optim]\nlr = 0\n[model]\ndropout = 1.0\n' > "$out/config/out_of_range.toml"
printf '[model]\nd_model = 64\nheads = 6\n' > "$out/config/heads_divide.toml"
printf '[position]\nscheme = "t5"\nnum_buckets = 32\nmax_distance = 8\n' > "$out/config/t5_distance.toml"
printf '[position]\nscheme = "learned"\nmax_positions = 16\n[run]\nlength = 64\n' > "$out/config/learned_short.toml"
printf '[position]\nscheme = "shaw"\nmax_relative_position = 4\n[optim]\nkind = "sgd"\nmomentum = 0.9\n[[optim.group]]\npattern = "*.bias"\nweight_decay = 0.0\nlr_scale = 2\n' > "$out/config/shaw_groups.toml"
printf '[task]\nkind = "grid2d"\n[position]\nscheme = "swin_v2"\n[grid]\nwindow = 4\neval_window = 8\n[sweep]\nmethods = ["swin", "swin_v2@window8"]\n' > "$out/config/grid.toml"
printf '[task]\nkind = "lag"\nlag = 3\nnoise = 0.1\n[sweep]\ntasks = ["markov", "lag"]\nseeds = [0, 1]\n' > "$out/config/sweep.toml"
printf 'model = 3\n' > "$out/config/not_a_table.toml"
# Regression: validating these used to build 4 TiB and 8 GiB position tables.
printf '[model]\nd_model = 65536\nheads = 1\n[position]\nscheme = "learned"\nmax_positions = 16777216\n' > "$out/config/huge_learned.toml"
printf '[model]\nd_model = 1024\nheads = 1024\n[position]\nscheme = "shaw"\nmax_relative_position = 1048576\n' > "$out/config/huge_shaw.toml"

# Regression: a key or header of 50,000 dotted parts overflowed toml++'s stack (SIGSEGV); 1,000 parts seed it.
deep=$(printf 'a%.0s.' $(seq 999))a
printf '[run]\n%s = 1\n' "$deep" > "$out/config/deep_dotted_key.toml"
printf '[%s]\nx = 1\n' "$deep" > "$out/config/deep_header.toml"

# ---- checkpoint ----
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tiny='[run]
name = "tiny"
steps = 2
batch = 1
length = 4
log_every = 1
eval_multipliers = [1]
eval_tokens = 8
[model]
d_model = 2
heads = 1
layers = 1
d_ff = 2
tie_head = true
[position]
scheme = "t5"
num_buckets = 2
max_distance = 4
[task]
kind = "markov"
vocab = 2
train_tokens = 64
eval_tokens = 16
'
printf '%s[optim]\nkind = "sgd"\nmomentum = 0.0\n' "$tiny" > "$tmp/sgd.toml"
printf '%s[optim]\nkind = "adamw"\n' "$tiny" > "$tmp/adamw.toml"
(cd "$tmp" && "$RPB" train sgd.toml --set run.out_dir=sgd && "$RPB" train adamw.toml --set run.out_dir=adamw) > /dev/null 2>&1
good=$out/checkpoint/tiny_sgd.h5
cp "$tmp/sgd/tiny/step_00000002.h5" "$good"
cp "$tmp/adamw/tiny/step_00000002.h5" "$out/checkpoint/tiny_adamw.h5"
size=$(stat -c %s "$good")
for keep in 96 $((size / 2)) $((size - 1)); do head -c "$keep" "$good" > "$out/checkpoint/cut_$keep.h5"; done
# One flipped bit each: in the superblock, in the metadata, in the middle and near the end.
for at in 20 3000 $((size / 2 + 7)) $((size - 40)); do
  cp "$good" "$out/checkpoint/flip_$at.h5"
  byte=$(od -An -tu1 -j "$at" -N1 "$good" | tr -d ' ')
  printf "$(printf '\\%03o' $((byte ^ 4)))" | dd of="$out/checkpoint/flip_$at.h5" bs=1 seek="$at" conv=notrunc status=none
done

# The 'L' (links and storage) and 'C' (stored config) modes of fuzz_checkpoint.cpp, one seed per kind of
# edit (the encoding: tests/fuzz/checkpoint_edits.h), which the target applies to tiny_adamw.h5. Objects:
# 2 /optim, 3 /optim/exp_avg, 7 /rng/sampler, 8 /metrics/step, 13 and 14 the first two parameters.
seed() { printf "$2" > "$out/checkpoint/$1"; }
seed L_soft_link 'L\x0d\x00\x07'
seed L_external_link 'L\x0d\x01\x0d'
seed L_external_fifo 'L\x0d\x01\x1d'
seed L_external_self 'L\x0d\x01\x3d'
seed L_hard_cycle 'L\x03\x02\x02'
seed L_hard_shared 'L\x0e\x02\x0d'
seed L_huge_unstored 'L\x0d\x03\x00\x01\xa8\x00\x00\x00'
seed L_metrics_2p28 'L\x08\x03\x02\x01\x9c\x00\x00\x00'
seed L_compact 'L\x0d\x04\x00\x02\x02\x02\x00\x01\x00abcdefghijklmnop'
seed L_chunked_deflate 'L\x0d\x05\x00\x02\x02\x02\x02\x01\x00abcdefghijklmnop'
seed L_external_zero 'L\x0d\x06\x00\x02\x02\x02\x08\x00\x00'
seed L_virtual 'L\x0d\x07\x00\x02\x02\x02\x00\x00\x0d'
seed L_config_1mib 'L\x00\x08\x80\x00\x05hello'
seed L_step_negative 'L\x00\x09\x00\xff\xff\xff\xff\xff\xff\xff\xff'
seed L_counter_escape 'L\x00\x09\x02\x00\x00\x00\x00\x00\x00\x00\x07'
# 'N': a NaN (float32 0x7fc00000) as the first value of parameter 0, and +inf as that of parameter 1.
seed N_nan_param 'N\x00\x00\x00\xc0\x7f'
seed N_inf_param 'N\x01\x00\x00\x80\x7f'
# 'T': a text run's tokenizer (data[1] picks the registry's row: 0 bytes, 1 chars, 2 sentencepiece), the rest its
# model: none, a sorted character list, and the SentencePiece model of a tiny text run over Debian's GPL-3.
seed T_bytes 'T\x00'
seed T_chars 'T\x01\t\n ,.abcdefghijklmnopqrstuvwxyz\xc3\xa9'
mkdir -p "$tmp/corpus" && cp /usr/share/common-licenses/GPL-3 "$tmp/corpus/"
printf '[run]\nname = "tiny"\nsteps = 2\nbatch = 1\nlength = 4\neval_multipliers = [1]\neval_tokens = 8\n[model]\nd_model = 2\nheads = 1\nlayers = 1\nd_ff = 2\n[task]\nkind = "text"\npath = "corpus"\ndocuments = "blank_lines"\ntokenizer = "sentencepiece"\nvocab = 400\nvalid_fraction = 0.1\ntest_fraction = 0.1\n' > "$tmp/text.toml"
(cd "$tmp" && "$RPB" train text.toml --set run.out_dir=text) > /dev/null 2>&1
h5dump -d /data/tokenizer_model -b LE -o "$tmp/sp.model" "$tmp/text/tiny/step_00000002.h5" > /dev/null
{ printf 'T\x02'; cat "$tmp/sp.model"; } > "$out/checkpoint/T_sentencepiece"
# Hostile SentencePiece models (issue 39): that model with protobuf fields appended (a message field given again
# merges into the one before, the later value winning; a piece is added to the pieces). A 9-byte precompiled
# normalizer map crashed SentencePiece's encoder, and with a self-test sample its loader; a piece of 256 KiB
# overflowed its loader's stack. Their neighbours: other maps and normalizers, pieces of 1024 and 1025 bytes.
varint() {  # the varint of $1
  local n=$1
  while ((n >= 128)); do printf "\\x$(printf %02x $(((n & 127) | 128)))"; n=$((n >> 7)); done
  printf "\\x$(printf %02x "$n")"
}
field() { varint $(($1 << 3 | 2)); varint "$(stat -c %s "$2")"; cat "$2"; }  # field $1 holding file $2's bytes
piece() {  # a piece of file $1's bytes, score -20, type 1 (normal)
  { field 1 "$1"; printf '\x15\x00\x00\xa0\xc1\x18\x01'; } > "$tmp/piece"
  field 1 "$tmp/piece"
}
sp_seed() { local name=$1; shift; { printf 'T\x02'; cat "$tmp/sp.model" "$@"; } > "$out/checkpoint/T_$name"; }
printf '\x04\x00\x00\x00\xff\xff\xff\xffx' > "$tmp/map9"  # a trie of one unit leading outside itself
printf 'x' > "$tmp/map1"
printf 'nmt_nfkc' > "$tmp/nfkc"
printf 'a\tb\n' > "$tmp/rules"
printf 'abc' > "$tmp/input" && printf 'a b c' > "$tmp/expected"
{ field 1 "$tmp/input"; field 2 "$tmp/expected"; } > "$tmp/sample" && field 1 "$tmp/sample" > "$tmp/samples"
for n in map9 map1; do field 2 "$tmp/$n" > "$tmp/spec_$n"; done
field 1 "$tmp/nfkc" > "$tmp/spec_nfkc"
field 6 "$tmp/rules" > "$tmp/spec_rules"
printf '\x18\x01' > "$tmp/spec_dummy"  # add_dummy_prefix = true
for n in map9 map1 nfkc rules dummy; do field 3 "$tmp/spec_$n" > "$tmp/normalizer_$n"; done
field 5 "$tmp/spec_map9" > "$tmp/denormalizer_map9"
field 4 "$tmp/samples" > "$tmp/self_test"
sp_seed charsmap_9 "$tmp/normalizer_map9"
sp_seed charsmap_9_self_test "$tmp/normalizer_map9" "$tmp/self_test"
sp_seed charsmap_1 "$tmp/normalizer_map1"
sp_seed denormalizer_charsmap_9 "$tmp/denormalizer_map9"
sp_seed normalizer_nmt_nfkc "$tmp/normalizer_nfkc"
sp_seed normalizer_rules "$tmp/normalizer_rules"
sp_seed dummy_prefix "$tmp/normalizer_dummy"
for n in 1024 1025 262144; do
  head -c "$n" /dev/zero | tr '\0' a > "$tmp/a$n" && piece "$tmp/a$n" > "$tmp/piece_a$n"
  sp_seed "piece_$n" "$tmp/piece_a$n"
done
head -c $(($(stat -c %s "$tmp/sp.model") / 2)) "$tmp/sp.model" > "$tmp/half.model"
{ printf 'T\x02'; cat "$tmp/half.model"; } > "$out/checkpoint/T_sentencepiece_cut"
# 'S': the same models straight to the reader (rpb's, cut, with the 9-byte map, with the 1025-byte piece).
{ printf 'S'; cat "$tmp/sp.model"; } > "$out/checkpoint/S_sentencepiece"
{ printf 'S'; cat "$tmp/half.model"; } > "$out/checkpoint/S_sentencepiece_cut"
{ printf 'S'; cat "$tmp/sp.model" "$tmp/normalizer_map9"; } > "$out/checkpoint/S_charsmap_9"
{ printf 'S'; cat "$tmp/sp.model" "$tmp/piece_a1025"; } > "$out/checkpoint/S_piece_1025"
# 'K': a token cache entry's file (data[1]: 0 manifest.json, 1 tokenizer, 2 train.u16) replaced: a manifest of the
# right shape with wrong digests, one claiming 2^40 ids, a chars tokenizer, ids past its vocabulary.
seed K_manifest 'K\x00{"format": "rpb-token-cache-1", "inputs": "fuzz: the inputs of a token cache entry\\n", "tokenizer_bytes": 34, "tokenizer_sha256": "00", "splits": {"train": {"ids": 18, "sha256": "00"}, "valid": {"ids": 18, "sha256": "00"}, "test": {"ids": 18, "sha256": "00"}}}'
seed K_manifest_huge 'K\x00{"format": "rpb-token-cache-1", "inputs": "x", "tokenizer_bytes": 34, "tokenizer_sha256": "00", "splits": {"train": {"ids": 1099511627776, "sha256": "00"}}}'
seed K_tokenizer 'K\x01chars\nab'
seed K_train_ids 'K\x02\x01\x00\xff\xff\x00\x01'
printf 'C%s[optim]\nkind = "adamw"\n' "$tiny" > "$out/checkpoint/C_tiny.toml"
printf 'C%s[optim]\nkind = "sgd"\n' "${tiny/d_model = 2/d_model = 4}" > "$out/checkpoint/C_other_model.toml"
printf 'C[model\nd_model = ' > "$out/checkpoint/C_bad_syntax.toml"
printf 'C[%s]\nx = 1\n' "$deep" > "$out/checkpoint/C_deep_header.toml"
ls -l "$out/config" "$out/checkpoint" | awk 'NR > 1 && $5 { n++; s += $5 } END { print n " files, " s " bytes" }'
