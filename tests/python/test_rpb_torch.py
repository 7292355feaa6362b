"""python/rpb_torch.py against rpb: for every 1-D position scheme, train a tiny model with build/rpb, then
score the same held-out tokens with `rpb eval` and with the PyTorch model rpb_torch builds from the checkpoint;
the perplexities must agree to 1e-4 (relative) at 1x and 4x the train length. rpb_torch builds its models from
`rpb schemes --json`; what it holds per scheme (a forward for each 1-D scheme, the keys each reads, its per-layer
modules) and this test's RUNS and CONFIG are checked against the registry: a difference fails naming it. rpb_torch.tokenizer gives the ids
rpb's stored tokenizer gives (eval_tokens --encode) for a bytes, a chars and a SentencePiece text run (the last
skipped where Python's sentencepiece is missing).

    /usr/bin/python3 tests/python/test_rpb_torch.py --rpb build/rpb --eval-tokens build/eval_tokens

ctest runs it (CMakeLists.txt, test python.rpb_torch). Exits 77 (ctest: skipped) with the reason when torch
or h5py cannot be imported.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import tomllib
import unittest

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARGS = None
HAVE_SENTENCEPIECE = False  # Python's sentencepiece (python3-sentencepiece): without it, its tokenizer is skipped
TOLERANCE = 1e-4
TRAIN_LENGTH = 16
LENGTHS = [TRAIN_LENGTH, 4 * TRAIN_LENGTH]

# Every key rpb_torch reads is set (the stored config holds what the config sets).
CONFIG = """
[run]
name = "{name}"
out_dir = "{out_dir}"
seed = 1
steps = 30
batch = 8
length = 16
log_every = 10
checkpoint_every = 0
eval_multipliers = [1, 4]
eval_tokens = 1024
eval_batch = 8

[model]
d_model = 16
heads = {heads}
layers = 2
d_ff = 32
dropout = 0.0
tie_head = {tie_head}
share_position = {share_position}
attn_scale = {attn_scale}
gelu = "{gelu}"
embedding = "{embedding}"

[position]
scheme = "{scheme}"
num_buckets = 8
max_distance = 32
max_relative_position = 4
lambda = 1.0
learnable_lambda = {learnable_lambda}
max_positions = 64
rope_base = 10000.0
xpos_scale_base = {xpos_scale_base}
blockwise = {blockwise}
untrained = "{untrained}"
fire_length = {fire_length}
fire_hidden = 8
rope_scaling = "{rope_scaling}"
rope_factor = {rope_factor}
rope_factor_per_length = {rope_factor_per_length}
yarn_beta_fast = {yarn_beta_fast}
yarn_beta_slow = 1.0
yarn_attention_factor = {yarn_attention_factor}
randomized = false
randomized_max = 2048
contiguous_eval = false

[task]
kind = "markov"
vocab = 8
order = 1
train_tokens = 8192
eval_tokens = 2048

[optim]
kind = "adamw"
lr = 1e-2
schedule = "constant"
"""

# One run per scheme of nn/position/registry.cpp's 1-D rows (and none); the model options vary between runs so
# that each of them is exercised: a head of its own, erf GELU, an explicit scale, per-layer tables, 3 heads (ALiBi's
# interleaved slopes).
DEFAULTS = dict(heads=2, tie_head="true", share_position="true", attn_scale="0.0", gelu="tanh",
                learnable_lambda="false", embedding="scheme", untrained="keep", fire_length="0", rope_scaling="none",
                rope_factor="0.0", rope_factor_per_length="false", yarn_beta_fast="32.0", yarn_attention_factor="0.0", xpos_scale_base=512,
                blockwise="false")
RUNS = {
    "t5": dict(),
    "t5_per_layer": dict(scheme="t5", share_position="false", tie_head="false"),
    "t5_nearest": dict(scheme="t5", untrained="nearest"),  # rows past distance 16 read the nearest trained one
    "shaw": dict(share_position="false", gelu="erf"),
    "log_decay": dict(learnable_lambda="true", share_position="false"),
    "log_decay_fixed": dict(scheme="log_decay", attn_scale="0.25"),
    "alibi": dict(heads=4),
    "sinusoidal": dict(gelu="erf"),  # the scaled recipe: sqrt(d) x tokens, a head of its own
    "sinusoidal_gpt2": dict(scheme="sinusoidal", embedding="gpt2"),
    "learned": dict(tie_head="false"),
    "rope": dict(),
    "fire": dict(share_position="false"),  # L0 = run.length: at 4x, queries past the threshold
    "fire_shared": dict(scheme="fire", fire_length="8"),  # a threshold of its own, below run.length
    # RoPE scaling (HF's frequencies): evaluation settings, so each run trains as plain rope (a fine-tune, run.init_from,
    # would train with them) and evaluates scaled; factor 0: max(run.eval_multipliers) = 4
    "rope_linear": dict(scheme="rope", rope_scaling="linear"),
    "rope_ntk": dict(scheme="rope", rope_scaling="ntk", rope_factor="2.0"),
    "rope_dynamic": dict(scheme="rope", rope_scaling="dynamic", rope_factor="3.0"),  # scaled at 64, not at 16
    "rope_yarn": dict(scheme="rope", rope_scaling="yarn", yarn_beta_fast="8.0", yarn_attention_factor="1.2"),
    # the factor per evaluation length: s = L / 16 at each of LENGTHS (unscaled at 16)
    "rope_yarn_per_length": dict(scheme="rope", rope_scaling="yarn", rope_factor_per_length="true"),
    "xpos": dict(xpos_scale_base=8),  # a small scale base: the decay matters at 16 and 64 positions
    "xpos_blockwise": dict(scheme="xpos", xpos_scale_base=8, blockwise="true"),  # 4 blocks of 16 at 64
    "kerple_power": dict(share_position="false", heads=4),  # a and p per head and per layer
    "none": dict(),
}


def rpb_perplexities(checkpoint):
    """{length: perplexity} from `rpb eval --json` (the record train/run/eval_record.h describes)."""
    out = subprocess.run([ARGS.rpb, "eval", checkpoint, "--lengths", ",".join(map(str, LENGTHS)), "--json",
                          "--no-record"], check=True, capture_output=True, text=True).stdout
    rows = json.loads(out)["lengths"]
    if [r["length"] for r in rows] != LENGTHS:
        raise AssertionError(f"rpb eval --json holds lengths {[r['length'] for r in rows]}, expected {LENGTHS}")
    return {r["length"]: r["perplexity"] for r in rows}


def eval_tokens(checkpoint):
    out = subprocess.run([ARGS.eval_tokens, checkpoint, ",".join(map(str, LENGTHS))],
                         check=True, capture_output=True, text=True).stdout
    return [int(t) for t in out.split()]


def rpb_schemes():
    """`rpb schemes --json` (cli/schemes.h): the registry's schemes and the position options."""
    out = subprocess.run([ARGS.rpb, "schemes", "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def run_config(scheme, **options):
    """CONFIG for `scheme` with DEFAULTS and `options`, parsed (a dict of tables, as a checkpoint's config)."""
    values = dict(DEFAULTS, scheme=scheme, name=scheme, out_dir="unused")
    values.update(options)
    return tomllib.loads(CONFIG.format(**values))


class RecordingTable(dict):
    """A config table that records the keys read from it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read = set()

    def __getitem__(self, name):
        self.read.add(name)
        return super().__getitem__(name)

    def get(self, name, default=None):
        self.read.add(name)
        return super().get(name, default)


class RegistryCopies(unittest.TestCase):
    """rpb_torch's and this file's copies of nn/position/registry.cpp against `rpb schemes --json`."""

    @classmethod
    def setUpClass(cls):
        listing = rpb_schemes()
        cls.schemes = [s for s in listing["schemes"] if 1 in s["dims"]]  # the 1-D ones, none included
        cls.names = [s["name"] for s in cls.schemes]
        cls.options = {o["key"]: o for o in listing["options"]}

    def assertSameNames(self, ours, what):
        missing, extra = [n for n in self.names if n not in ours], [n for n in ours if n not in self.names]
        self.assertFalse(missing or extra, f"{what}: rpb's 1-D schemes {missing} are missing, {extra} are not "
                                           "registered 1-D schemes (rpb schemes --json)")

    def test_rpb_torch_has_a_forward_for_every_1d_scheme(self):
        self.assertSameNames(rpb_torch.FORWARDS, "rpb_torch.FORWARDS (@scheme)")

    def test_runs_cover_every_1d_scheme(self):
        self.assertSameNames({options.get("scheme", run) for run, options in RUNS.items()}, "RUNS")

    def test_each_builder_reads_its_schemes_options(self):
        for s in self.schemes:
            if s["name"] not in rpb_torch.FORWARDS:
                continue  # test_rpb_torch_builds_every_1d_scheme names it
            with self.subTest(scheme=s["name"]):
                table = RecordingTable({k: o["default"] for k, o in self.options.items() if o["table"] == "position"},
                                       scheme=s["name"])
                rpb_torch.make_position({"position": table, "run": {"length": 16}, "model": {}}, 16, 2)  # fire's L0
                want = {k for k in s["options"] if self.options[k]["loaded"]}
                self.assertEqual(table.read - {"scheme"}, want,
                                 f"{s['name']}: the [position] keys rpb_torch reads, against rpb schemes --json's "
                                 "options of the scheme (init_std aside)")

    def test_config_sets_every_key_rpb_torch_reads(self):
        position = run_config("t5")["position"]
        for s in self.schemes:
            for k in s["options"]:
                if self.options[k]["loaded"]:
                    self.assertIn(k, position, f"CONFIG's [position] lacks {k}, which {s['name']} reads")

    def test_an_algorithmic_tasks_l0_is_refused(self):
        # rpb's L0 for an algorithmic task is its sample's tokens (train/config/config.cpp): rpb_torch, which computes
        # no sample lengths, refuses the schemes that read it there, and reads run.length for the other tasks.
        for scheme, options in (("rope", dict(rope_scaling="yarn")), ("fire", {}), ("xpos", dict(blockwise="true"))):
            with self.subTest(scheme=scheme):
                config = run_config(scheme, **options)
                config["task"] = {"kind": "reverse_string"}
                with self.assertRaises(NotImplementedError):
                    rpb_torch.make_position(config, 16, 2)
                config["task"] = {"kind": "markov"}
                rpb_torch.make_position(config, 16, 2)

    def test_per_layer_modules_are_the_registrys(self):
        # nn/transformer.cpp's positions_per_layer: model.share_position = false gives each layer its own module when
        # the registry's row says per_layer and the module has parameters.
        for s in self.schemes:
            if s["name"] not in rpb_torch.FORWARDS:
                continue
            with self.subTest(scheme=s["name"]):
                config = run_config(s["name"], share_position="false", learnable_lambda="true")
                learned = any(True for _ in rpb_torch.make_position(config, 16, 2).parameters())
                model = rpb_torch.LanguageModel(config, vocab=8)
                self.assertEqual(model.per_layer, s["per_layer"] and learned,
                                 f"{s['name']}: rpb_torch's per-layer modules against the registry's per_layer")


class RpbTorch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="rpb_torch_")
        cls.checkpoints = {}
        for name, options in RUNS.items():
            values = dict(DEFAULTS, scheme=name, name=name, out_dir=cls.tmp.name)
            values.update(options)
            path = os.path.join(cls.tmp.name, name + ".toml")
            with open(path, "w") as f:
                f.write(CONFIG.format(**values))
            subprocess.run([ARGS.rpb, "train", path], check=True, capture_output=True)
            cls.checkpoints[name] = os.path.join(cls.tmp.name, name, "step_00000030.h5")
        cls.worst = {}

    @classmethod
    def tearDownClass(cls):
        print("\nlargest relative perplexity difference, torch vs rpb:", file=sys.stderr)
        for name, diff in cls.worst.items():
            print(f"  {name}: {diff:.2e}", file=sys.stderr)
        cls.tmp.cleanup()

    def test_every_scheme_matches_rpb_eval(self):
        for name, checkpoint in self.checkpoints.items():
            with self.subTest(run=name):
                model, config = rpb_torch.load(checkpoint)
                self.assertFalse(model.training)
                tokens = eval_tokens(checkpoint)
                ours = rpb_perplexities(checkpoint)
                worst = 0.0
                for length in LENGTHS:
                    theirs = rpb_torch.perplexity(model, tokens, length)
                    diff = abs(theirs - ours[length]) / ours[length]
                    worst = max(worst, diff)
                    self.assertLess(diff, TOLERANCE, f"{name} at length {length}: torch {theirs}, rpb {ours[length]}")
                self.worst[name] = worst

    def test_explicit_positions_match_rpb(self):
        # Randomized positions (nn/transformer.h): rpb's logits with the tokens at explicit positions (eval_tokens
        # --at, LanguageModel::forward_at) against rpb_torch's with the same positions, every run's scheme.
        at = [0, 3, 4, 9, 17, 18, 25, 31, 40, 41, 52, 60]
        for name, checkpoint in self.checkpoints.items():
            if name == "xpos_blockwise":  # blockwise attention is evaluation's at 0 .. T - 1
                continue
            with self.subTest(run=name):
                out = subprocess.run([ARGS.eval_tokens, checkpoint, "--at", ",".join(map(str, at))], check=True,
                                     capture_output=True, text=True).stdout.splitlines()
                tokens = torch.tensor([[int(t) for t in out[0].split()]])
                ours = torch.tensor([float(v) for v in out[1].split()]).view(1, len(at), -1)
                model, _ = rpb_torch.load(checkpoint)
                with torch.no_grad():
                    theirs = model(tokens, positions=at)
                    plain = model(tokens)
                error = ((theirs - ours).abs().max() / ours.abs().max()).item()
                self.assertLess(error, TOLERANCE, f"{name}: logits at explicit positions differ by {error}")
                # The positions matter: not the plain forward's logits (no positions for none; FIRE's MLP is still
                # near its initial std of 0.02 after 30 steps, its bias a few 1e-4, too small to show here).
                if name != "none" and not name.startswith("fire"):
                    self.assertGreater((plain - ours).abs().max().item(), 1e-4, name)

    def test_names_and_modules(self):
        # Per-layer tables live in the blocks; a shared one at the top, as in rpb's checkpoints.
        names = set(rpb_torch.load(self.checkpoints["t5_per_layer"])[0].state_dict())
        self.assertIn("blocks.1.pos.t5.table", names)
        self.assertIn("head.weight", names)
        self.assertNotIn("pos.t5.table", names)
        self.assertIn("pos.t5.table", set(rpb_torch.load(self.checkpoints["t5"])[0].state_dict()))
        self.assertIn("blocks.0.pos.log_decay.lambda", set(rpb_torch.load(self.checkpoints["log_decay"])[0].state_dict()))

    def test_learned_positions_end_at_their_table(self):
        model, _ = rpb_torch.load(self.checkpoints["learned"])
        with self.assertRaisesRegex(ValueError, "beyond the table of 64 positions"):
            model(torch.zeros(1, 65, dtype=torch.long))

    def test_config_strings_are_str_and_keys_are_required(self):
        checkpoint = self.checkpoints["rope"]
        with h5py.File(checkpoint, "r") as f:
            text = f.attrs["config"]
        self.assertIsInstance(text, str)  # variable-length UTF-8: h5py returns str, not bytes
        copy = os.path.join(self.tmp.name, "missing_key.h5")
        with open(checkpoint, "rb") as src, open(copy, "wb") as dst:
            dst.write(src.read())
        with h5py.File(copy, "r+") as f:
            f.attrs["config"] = text.replace("rope_base", "#rope_base")
        with self.assertRaisesRegex(KeyError, "position.rope_base"):
            rpb_torch.load(copy)
        with h5py.File(copy, "r+") as f:  # a fixed-length string, as rpb wrote before: still read
            f.attrs.create("config", text.encode(), dtype=h5py.string_dtype("utf-8", len(text.encode())))
        model, config = rpb_torch.load(copy)
        self.assertEqual(config["position"]["scheme"], "rope")

    def test_docs_example_runs_as_written(self):
        with open(os.path.join(SOURCE, "docs", "pytorch.md")) as f:
            blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
        self.assertEqual(len(blocks), 1)
        root = os.path.join(self.tmp.name, "readme")  # the repository root as the example sees it
        os.makedirs(os.path.join(root, "checkpoints", "t5"))
        os.symlink(os.path.join(SOURCE, "python"), os.path.join(root, "python"))
        os.symlink(self.checkpoints["t5"], os.path.join(root, "checkpoints", "t5", "step_00000600.h5"))
        out = subprocess.run([sys.executable, "-c", blocks[0]], cwd=root, check=True, capture_output=True,
                             text=True, env=dict(os.environ, RPB_BIN=os.path.abspath(ARGS.rpb))).stdout
        self.assertRegex(out, r"^torch.Size\(\[1, 64, 8\]\) \d+\.\d+$")

    def test_perplexity_checks_its_tokens(self):
        model, _ = rpb_torch.load(self.checkpoints["none"])
        with self.assertRaisesRegex(ValueError, "whole segments of length 16"):
            rpb_torch.perplexity(model, list(range(8)) * 3, 16)
        self.assertTrue(math.isfinite(rpb_torch.perplexity(model, [1] * 33, 16)))


TEXT_CONFIG = """
[run]
name = "{tokenizer}"
out_dir = "{out_dir}"
steps = 1
batch = 2
length = 16
log_every = 1
eval_multipliers = [1]
eval_tokens = 32

[model]
d_model = 8
heads = 2
layers = 1
d_ff = 16

[task]
kind = "text"
path = "{corpus}"
documents = "blank_lines"
tokenizer = "{tokenizer}"
vocab = 400
valid_fraction = 0.1
test_fraction = 0.1

[optim]
warmup_steps = 1
"""

# The corpus's own characters beyond the GPL's ASCII (the chars tokenizer encodes no other).
WIDE = "\u00c9t\u00e9 \u00fcber \u2713 \U0001F600 na\u00efve \u00e9\u00e9\u00e9"


class Tokenizers(unittest.TestCase):
    """rpb_torch.tokenizer against rpb: the ids of a text from each kind of stored tokenizer (eval_tokens --encode
    prints the ids rpb's stored tokenizer gives a file, as `rpb generate` encodes a prompt), and the cheap checks of
    the stored model."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="rpb_tokenizer_")
        corpus = os.path.join(cls.tmp.name, "corpus.txt")
        with open("/usr/share/common-licenses/GPL-3") as src, open(corpus, "w") as dst:
            dst.write(src.read() + "\n\n" + WIDE + "\n")
        cls.checkpoints = {}
        for kind in ("bytes", "chars", "sentencepiece"):
            config = os.path.join(cls.tmp.name, kind + ".toml")
            with open(config, "w") as f:
                f.write(TEXT_CONFIG.format(tokenizer=kind, out_dir=cls.tmp.name, corpus=corpus))
            subprocess.run([ARGS.rpb, "train", config], check=True, capture_output=True)
            cls.checkpoints[kind] = os.path.join(cls.tmp.name, kind, "step_00000001.h5")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def rpb_ids(self, checkpoint, text):
        path = os.path.join(self.tmp.name, "text.txt")
        with open(path, "w") as f:
            f.write(text)
        out = subprocess.run([ARGS.eval_tokens, checkpoint, "--encode", path], check=True, capture_output=True,
                             text=True).stdout
        return [int(t) for t in out.split()]

    def test_ids_are_rpbs(self):
        # Lines of the GPL, a line past 1024 bytes (cut at a space), one with none for 1500 bytes, runs past 64 KiB
        # without a space (cut at a character boundary: inside a 2-byte character's run, and inside a word, where
        # SentencePiece's ids for the whole text differ from rpb's) and the corpus's wide characters.
        long_line = " ".join(["the licensee"] * 200)
        text = ("This License applies to any program.\n\n" + long_line + "\n" + "x" * 1500 + " free\n" +
                "z" + "\u00e9" * 40000 + "\n" + "License" * 12000 + "\n" + WIDE + " software\n")
        for kind, checkpoint in self.checkpoints.items():
            with self.subTest(tokenizer=kind):
                if kind == "sentencepiece" and not HAVE_SENTENCEPIECE:
                    self.skipTest(f"{sys.executable} cannot import sentencepiece (Debian: python3-sentencepiece)")
                tok = rpb_torch.tokenizer(checkpoint)
                self.assertEqual(tok.kind, kind)
                ids = tok.encode(text)
                self.assertEqual(ids, self.rpb_ids(checkpoint, text))
                self.assertEqual(tok.decode(ids), text)
                with h5py.File(checkpoint, "r") as f:  # the model's embedding has a row for every id
                    self.assertEqual(tok.vocab, f["params/tok.weight"].shape[0])
        other = "\u65e5\u672c\u8a9e and byte fallback \u00a7\n"  # characters outside the corpus: SentencePiece's bytes
        with self.assertRaisesRegex(ValueError, "U\\+65E5 is not in the vocabulary"):
            rpb_torch.tokenizer(self.checkpoints["chars"]).encode(other)
        if not HAVE_SENTENCEPIECE:
            return
        self.assertEqual(rpb_torch.tokenizer(self.checkpoints["sentencepiece"]).encode(other),
                         self.rpb_ids(self.checkpoints["sentencepiece"], other))

    def test_decode_replaces_invalid_utf8(self):
        tok = rpb_torch.tokenizer(self.checkpoints["bytes"])  # as `rpb generate` prints them: U+FFFD
        self.assertEqual(tok.decode([0x61, 0xD3, 0x6E, 0xE2, 0x82]), "a\ufffdn\ufffd")
        with self.assertRaisesRegex(ValueError, "token 256 outside the vocabulary of 256"):
            tok.decode([256])

    def copy(self, kind, name):
        path = os.path.join(self.tmp.name, name + ".h5")
        with open(self.checkpoints[kind], "rb") as src, open(path, "wb") as dst:
            dst.write(src.read())
        return path

    def test_stored_model_cheap_checks(self):
        model = self.copy("sentencepiece", "wide")
        with h5py.File(model, "r+") as f:  # the model's bytes as int64: not rpb's dataset
            data = f["data/tokenizer_model"][()]
            del f["data/tokenizer_model"]
            f["data/tokenizer_model"] = data.astype("int64")
        with self.assertRaisesRegex(ValueError, r"/data/tokenizer_model: expected 1 to 67108864 bytes \(uint8\)"):
            rpb_torch.tokenizer(model)
        with h5py.File(model, "r+") as f:
            del f["data/tokenizer_model"]
        with self.assertRaisesRegex(ValueError, "/data/tokenizer_model is missing: a sentencepiece tokenizer"):
            rpb_torch.tokenizer(model)
        kind = self.copy("bytes", "kind")
        with h5py.File(kind, "r+") as f:
            f["data"].attrs["tokenizer"] = "words"
        with self.assertRaisesRegex(ValueError, "names a tokenizer 'words'"):
            rpb_torch.tokenizer(kind)
        chars = self.copy("chars", "unsorted")
        with h5py.File(chars, "r+") as f:
            data = f["data/tokenizer_model"][()]
            f["data/tokenizer_model"][0], f["data/tokenizer_model"][1] = data[1], data[0]
        with self.assertRaisesRegex(ValueError, "distinct, in increasing order"):
            rpb_torch.tokenizer(chars)

    def test_a_run_without_a_tokenizer_says_so(self):
        checkpoint = os.path.join(self.tmp.name, "markov.toml")
        with open(checkpoint, "w") as f:
            f.write(CONFIG.format(**dict(DEFAULTS, scheme="none", name="markov", out_dir=self.tmp.name)))
        subprocess.run([ARGS.rpb, "train", checkpoint, "--set", "run.steps=1"], check=True, capture_output=True)
        with self.assertRaisesRegex(ValueError, "no stored tokenizer"):
            rpb_torch.tokenizer(os.path.join(self.tmp.name, "markov", "step_00000001.h5"))


# The encoder framing (train/data/algorithmic.h): a bidirectional model (model.causal = false) on reverse_string, one
# run per scheme with a bidirectional form (`rpb schemes --json`'s "bidirectional"), on the same held-out samples
# (eval_tokens prints them with rpb's logits): rpb_torch's logits within 1e-4 of rpb's (relative to their largest),
# and the scores `rpb eval` reports, the scored targets' NLL to 1e-4 and the per-token accuracy, from rpb_torch's.
ENCODER_TASK = """
[task]
kind = "reverse_string"
eval_samples = 32
"""


def encoder_config(scheme, out_dir):
    text = CONFIG.format(**dict(DEFAULTS, scheme=scheme, name=scheme, out_dir=out_dir))
    text = text.replace("[model]\n", "[model]\ncausal = false\n")
    # Learned tables of std 1 (position.init_std): a bias read at the wrong offset moves the NLL well past 1e-4.
    text = text.replace("[position]\n", "[position]\ninit_std = 1.0\n")
    return text[:text.index("[task]")] + ENCODER_TASK + text[text.index("[optim]"):]


def held_out_samples(checkpoint):
    """{length: (inputs, targets, scored, logits)} of an algorithmic checkpoint's held-out samples: (N, T) tensors and
    rpb's (N, T, V) logits (None where the model cannot run)."""
    out = subprocess.run([ARGS.eval_tokens, checkpoint, ",".join(map(str, LENGTHS))],
                         check=True, capture_output=True, text=True).stdout
    samples = {}
    for line in out.splitlines():
        length, *lists = line.split()
        x, y, s = (torch.tensor([int(v) for v in part.split(",")]).view(32, -1) for part in lists[:3])
        logits = None if lists[3] == "-" else torch.tensor([float(v) for v in lists[3].split(",")]).view(32, x.shape[1], -1)
        samples[int(length)] = (x, y, s, logits)
    return samples


class Bidirectional(unittest.TestCase):
    def test_every_bidirectional_scheme_matches_rpb_eval(self):
        schemes = [s["name"] for s in rpb_schemes()["schemes"] if 1 in s["dims"] and s["bidirectional"]]
        refused = [s["name"] for s in rpb_schemes()["schemes"] if 1 in s["dims"] and not s["bidirectional"]]
        self.assertEqual(refused, ["fire"])
        with tempfile.TemporaryDirectory(prefix="rpb_torch_encoder_") as tmp:
            for scheme in schemes:
                with self.subTest(scheme=scheme):
                    path = os.path.join(tmp, scheme + ".toml")
                    with open(path, "w") as f:
                        f.write(encoder_config(scheme, tmp))
                    subprocess.run([ARGS.rpb, "train", path], check=True, capture_output=True)
                    checkpoint = os.path.join(tmp, scheme, "step_00000030.h5")
                    out = subprocess.run([ARGS.rpb, "eval", checkpoint, "--json", "--no-record"], check=True,
                                         capture_output=True, text=True).stdout
                    rows = {r["length"]: r for r in json.loads(out)["lengths"]}
                    model, config = rpb_torch.load(checkpoint)
                    self.assertFalse(rpb_torch.is_causal(config))
                    for length, (x, y, s, ours) in held_out_samples(checkpoint).items():
                        if rows[length]["nll"] is None:  # learned positions past their table
                            with self.assertRaisesRegex(ValueError, "beyond the table"):
                                model(x)
                            continue
                        with torch.no_grad():
                            logits = model(x)
                        error = ((logits - ours).abs().max() / ours.abs().max()).item()
                        self.assertLess(error, TOLERANCE, f"{scheme} at length {length}: logits differ by {error}")
                        mask = s.bool()
                        nll = F.cross_entropy(logits[mask].double(), y[mask], reduction="mean").item()
                        accuracy = (logits[mask].argmax(-1) == y[mask]).double().mean().item()
                        self.assertLess(abs(nll - rows[length]["nll"]) / rows[length]["nll"], TOLERANCE,
                                        f"{scheme} at length {length}: torch {nll}, rpb {rows[length]['nll']}")
                        self.assertEqual(accuracy, rows[length]["token_accuracy"], f"{scheme} at length {length}")


def main():
    global ARGS, rpb_torch, torch, F, h5py, HAVE_SENTENCEPIECE
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rpb", default=os.path.join(SOURCE, "build", "rpb"))
    p.add_argument("--eval-tokens", default=os.path.join(SOURCE, "build", "eval_tokens"))
    ARGS, rest = p.parse_known_args()
    os.environ["OMP_WAIT_POLICY"] = "passive"  # before torch loads OpenMP and OpenBLAS
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import h5py
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"SKIPPED: {sys.executable} cannot import {e.name} (Debian: python3-torch, python3-h5py)")
        sys.exit(77)
    torch.set_num_threads(1)
    try:
        import sentencepiece  # noqa: F401
        HAVE_SENTENCEPIECE = True
    except ImportError:
        pass
    sys.path.insert(0, os.path.join(SOURCE, "python"))
    import rpb_torch
    rpb_torch.registry(rpb_schemes())  # the registry of the rpb under test, not of whatever $RPB_BIN names
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
