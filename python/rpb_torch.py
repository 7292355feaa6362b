"""rpb's 1-D language model in PyTorch: build it from a checkpoint's stored config and load its parameters.

    import rpb_torch
    model, config = rpb_torch.load("checkpoints/t5/step_00000600.h5")   # eval mode, strict=True load
    logits = model(torch.tensor([[1, 2, 3]]))                            # (B, T, vocab)
    rpb_torch.perplexity(model, tokens, length=64)                       # exp(mean NLL), as `rpb eval`
    rpb_torch.tokenizer("checkpoints/t/step_00000600.h5").encode("text")   # a text run's ids (rpb_tokenizer.py)

The model is rpb's nn::LanguageModel (nn/transformer.cpp, nn/attention.cpp, nn/layers.cpp): token embedding
(times sqrt(d_model) under the `scaled` recipe of model.embedding) (plus the absolute position embedding of `learned` and `sinusoidal`), pre-LN blocks x + attn(ln1(x)),
x + mlp(ln2(x)) with LayerNorm eps 1e-5, a fused qkv Linear(d, 3d) read as (B, T, 3, H, dh), scores
q k^T * scale + bias (scale = model.attn_scale, or 1/sqrt(dh) when it is 0), causal mask (none for model.causal
= false, a bidirectional model: the algorithmic tasks' encoder framing), GELU (tanh or erf,
model.gelu), final LayerNorm, and logits from the token embedding (model.tie_head) or a bias-free `head`.
Dropout is off: the model is for evaluation. The model is built from rpb's scheme registry (`rpb schemes --json`,
read by registry(): how each scheme enters the model, whether it is one module per layer, its embedding recipe, the
options it reads); the only per-scheme code here is each 1-D scheme's forward (@scheme), with the convention of its
file nn/position/<scheme>.cpp. Learned bias tables are one per layer (`blocks.<i>.pos.<scheme>.table`) when
model.share_position is false, else one (`pos.<scheme>.table`).
Parameter names are rpb's checkpoint names, so `load_state_dict(strict=True)` checks every name and shape.

The config is read strictly: every key the model needs must be in the checkpoint's `config` attribute (a
missing one raises KeyError naming it); there is no second list of defaults here. The vocabulary is the
row count of /params/tok.weight. Needs torch, h5py and Python 3.11 (tomllib). The tokenizer a text run's
checkpoint stores is python/rpb_tokenizer.py's (read here as rpb_torch.tokenizer; its docstring says what it checks
of the stored model, and what it does not).
"""
import json
import math
import os
import subprocess
import tomllib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from rpb_tokenizer import FORMAT_VERSION, Tokenizer, open_checkpoint, tokenizer  # noqa: F401 (rpb_torch.tokenizer)

LAYER_NORM_EPS = 1e-5  # nn/layers.h: LayerNorm's default, not a config key


def is_causal(config):
    """model.causal: a stored config holds it only when false (a bidirectional model: the algorithmic tasks' encoder
    framing, train/data/algorithmic.h)."""
    return config["model"].get("causal", True)


def key(config, table, name):
    """config[table][name]; a missing key raises KeyError naming it ("model.d_model")."""
    try:
        return config[table][name]
    except KeyError:
        raise KeyError(f"the checkpoint's config has no {table}.{name} (rpb_torch reads every key it needs "
                       f"from the stored config)") from None


# ---- the scheme registry (`rpb schemes --json`) -----------------------------------------------------------------

_REGISTRY = None


def registry(source=None):
    """rpb's scheme registry as `rpb schemes --json` prints it (cli/schemes.cpp): {"schemes": [...], "options":
    [...]}. From `source` (that dict, its JSON text, or the path of a file holding it) when given, which stays the
    registry from then on; else, once, from the file $RPB_SCHEMES_JSON names, else by running `$RPB_BIN schemes
    --json`, else the build's rpb beside this folder (../build/rpb). Raises naming what it tried when none is there."""
    global _REGISTRY
    if source is not None:
        if isinstance(source, dict):
            _REGISTRY = source
        elif isinstance(source, str) and source.lstrip().startswith("{"):
            _REGISTRY = json.loads(source)
        else:
            with open(source) as f:
                _REGISTRY = json.load(f)
    if _REGISTRY is None:
        path = os.environ.get("RPB_SCHEMES_JSON")
        if path:
            return registry(path)
        here = os.path.dirname(os.path.realpath(__file__))
        binary = os.environ.get("RPB_BIN") or os.path.join(os.path.dirname(here), "build", "rpb")
        try:
            out = subprocess.run([binary, "schemes", "--json"], check=True, capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            raise RuntimeError(f"rpb_torch needs rpb's scheme registry: set RPB_SCHEMES_JSON to a file of `rpb schemes "
                               f"--json`, or RPB_BIN to the rpb binary (tried {binary}: {e})") from None
        _REGISTRY = json.loads(out)
    return _REGISTRY


def scheme_row(name):
    """The registry's row of the 1-D scheme `name` (a dict: kind, per_layer, embedding, options, ...)."""
    for row in registry()["schemes"]:
        if row["name"] == name and 1 in row["dims"]:
            return row
    raise ValueError(f"position.scheme {name!r} is not a 1-D scheme of rpb's registry "
                     f"({', '.join(r['name'] for r in registry()['schemes'] if 1 in r['dims'])})")


# Keys older rpb wrote no value for, read as their defaults: position.untrained (before the key existed).
_LEGACY_ABSENT = ("untrained",)


def scheme_options(config, row):
    """{key: value} of the options the scheme reads (the row's `options` the forward depends on, `loaded`): from the
    stored config's table, strictly, except the keys rpb writes only when set away from their defaults (an option's
    `added`), which take the registry's defaults when absent."""
    options = {o["key"]: o for o in registry()["options"]}
    out = {}
    for name in row["options"]:
        o = options[name]
        if not o["loaded"]:
            continue  # init_std: how training starts only
        table = config.get(o["table"], {})
        if name in table:
            out[name] = table[name]
        elif o.get("added") or name in _LEGACY_ABSENT:
            out[name] = o["default"]
        else:
            key(config, o["table"], name)  # raises KeyError naming it
    return out


# The forward of each 1-D scheme, by name (@scheme): the only per-scheme code here. How a scheme enters the model (its
# kind), whether it is one module per layer, its embedding recipe and the options it reads are the registry's.
FORWARDS = {}


def scheme(name):
    """Registers `build(o, config, d_model, heads)` as the forward module of scheme `name`: `o` holds the options the
    registry says it reads (scheme_options), `config` the whole stored config (run.length and the like)."""
    def register(build):
        FORWARDS[name] = build
        return build
    return register


# ---- position schemes (nn/position/<scheme>.cpp) -------------------------------------------------------------

def t5_bucket(relative_position, bidirectional, num_buckets, max_distance):
    """HF transformers' T5Attention._relative_position_bucket of key - query (nn/position/t5.cpp): causal puts
    every future key in bucket 0; exact below max_exact; float32 log up to max_distance; clamped."""
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets += (relative_position > 0).to(torch.long) * num_buckets
        n = torch.abs(relative_position)
    else:
        n = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(n < max_exact, n, large)


def alibi_slopes(heads):
    """The ALiBi paper's get_slopes: 2^(-8/n) geometric for a power of two, else interleaved (nn/position/alibi.cpp)."""
    def power_of_2(n):
        start = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    c = 2 ** int(math.floor(math.log2(heads)))
    if c == heads:
        return power_of_2(heads)
    return power_of_2(c) + alibi_slopes(2 * c)[0::2][:heads - c]


def relative_positions(length):
    """(L, L) key - query."""
    pos = torch.arange(length)
    return pos[None, :] - pos[:, None]


class TableBias(nn.Module):
    """t5 and shaw: a learned (rows, heads) table indexed per (query, key); bias(L) is (H, L, L). The buffer
    `trained` marks the rows training read; with position.untrained = "nearest" each other row reads the trained row
    nearest in key - query on its side of the query (nn/position/untrained.h; a causal model reads keys at or before
    the query only, a bidirectional one both sides)."""

    def __init__(self, rows, heads, index_of, untrained, reach, causal=True):
        super().__init__()
        self.table = nn.Parameter(torch.zeros(rows, heads))
        self.register_buffer("trained", torch.zeros(rows))
        self.index_of = index_of  # (L, L) key - query -> (L, L) table rows
        self.untrained, self.reach = untrained, reach  # reach: past it, key - query reads the last rows only
        self.causal = causal

    def nearest_rows(self):
        """For each row, the row evaluation reads under untrained = "nearest"."""
        positions = torch.arange(-self.reach, 1 if self.causal else self.reach + 1)  # key - query
        rows = self.index_of(positions)
        span = {}  # row -> (lo, hi) of the positions that read it
        for p, r in zip(positions.tolist(), rows.tolist()):
            lo, hi = span.get(r, (p, p))
            span[r] = (min(lo, p), max(hi, p))
        trained = [r for r in span if self.trained[r] != 0]
        if not trained:
            raise ValueError('position.untrained = "nearest" needs the rows training read, and this model records '
                             'none (a checkpoint written before rpb recorded them)')
        out = list(range(self.table.shape[0]))
        past = lambda r: span[r][1] <= 0  # noqa: E731  (a row's side of the query)
        near = lambda r: -span[r][1] if past(r) else span[r][0]  # noqa: E731  (its distance from the query)
        for r, (lo, hi) in span.items():
            side = [t for t in trained if past(t) == past(r)]
            if self.trained[r] == 0 and side:  # the smallest gap on its side, then the row nearer the query
                out[r] = min(side, key=lambda t: (max(0, lo - span[t][1], span[t][0] - hi), near(t)))
        return torch.tensor(out)

    def bias(self, length):
        table = self.table[self.nearest_rows()] if self.untrained == "nearest" else self.table
        return table[self.index_of(relative_positions(length))].permute(2, 0, 1)


class DistanceBias(nn.Module):
    """log_decay and alibi: -coefficient_h * f(|i - j|), f computed in float64 then stored in float32 as rpb does.
    A learnable log_decay lambda is the parameter `lambda`; fixed coefficients are non-persistent buffers."""

    def __init__(self, coefficients, learnable, f):
        super().__init__()
        values = torch.tensor(coefficients, dtype=torch.float32)
        if learnable:
            self.register_parameter("lambda", nn.Parameter(values))
        else:
            self.register_buffer("coefficients", values, persistent=False)
        self.learnable, self.f = learnable, f

    def bias(self, length):
        coefficients = getattr(self, "lambda") if self.learnable else self.coefficients
        distance = relative_positions(length).abs().to(torch.float64)
        return coefficients[:, None, None] * (-self.f(distance)).to(torch.float32)[None]


class LearnedEmbedding(nn.Module):
    """learned: a (max_positions, d_model) table added to the tokens; longer inputs are an error."""

    def __init__(self, max_positions, d_model):
        super().__init__()
        self.table = nn.Parameter(torch.zeros(max_positions, d_model))

    def embed(self, length):
        if length > self.table.shape[0]:
            raise ValueError(f"learned: position {length - 1} is beyond the table of {self.table.shape[0]} positions "
                             "(max_positions); this scheme cannot extrapolate")
        return self.table[:length]


class SinusoidalEmbedding(nn.Module):
    """sinusoidal: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...), in float64, then float32."""

    def __init__(self, d_model):
        super().__init__()
        self.d_model = d_model

    def embed(self, length):
        d = self.d_model
        denom = torch.tensor([10000.0 ** (2.0 * i / d) for i in range(d // 2)], dtype=torch.float64)
        angle = torch.arange(length, dtype=torch.float64)[:, None] / denom[None, :]
        return torch.stack([angle.sin(), angle.cos()], dim=-1).reshape(length, d).to(torch.float32)


def rope_scaled_frequencies(scaling, dim, base, factor, original_length, seq_len, beta_fast=32.0, beta_slow=1.0,
                            attention_factor=0.0):
    """(inv_freq, attention factor) of position.rope_scaling, transcribed from Hugging Face transformers
    src/transformers/modeling_rope_utils.py @ ef46806472a64b0013ed413781e3afed82bfa047 (linear, dynamic, yarn;
    dynamic's seq_len an int64 tensor as LlamaRotaryEmbedding._dynamic_frequency_update passes it); ntk is the static
    NTK-aware base * factor ** (dim / (dim - 2)) (bloc97's r/LocalLLaMA post). rpb: nn/position/rope_scaling.h."""
    def default(b):
        return 1.0 / (b ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    if scaling == "linear":
        inv_freq = default(base)
        inv_freq /= factor
        return inv_freq, 1.0
    if scaling == "ntk":
        return default(base * factor ** (dim / (dim - 2))), 1.0
    if scaling == "dynamic":
        seq_len = torch.tensor(seq_len) if seq_len > original_length else original_length
        b = base * ((factor * seq_len / original_length) - (factor - 1)) ** (dim / (dim - 2))
        return default(b), 1.0
    if scaling == "yarn":
        attention_factor = attention_factor or 0.1 * math.log(factor) + 1.0

        def correction_dim(rotations):
            return (dim * math.log(original_length / (rotations * 2 * math.pi))) / (2 * math.log(base))
        low = max(math.floor(correction_dim(beta_fast)), 0)
        high = min(math.ceil(correction_dim(beta_slow)), dim - 1)
        if low == high:
            high += 0.001
        ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
        pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
        extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
        keep = 1 - ramp
        return interpolation * (1 - keep) + extrapolation * keep, attention_factor
    raise ValueError(f"position.rope_scaling {scaling!r}: expected none, linear, ntk, dynamic or yarn")


class Rotary(nn.Module):
    """rope: x cos + rotate_half(x) sin (HF), angle = float32 position x float32 base^(-2k/head_dim); with
    position.rope_scaling, HF's frequencies (rope_scaled_frequencies, dynamic's for each forward's length) and cos and
    sin times the attention factor: in evaluation (module.eval()) only, unless `scaling_trained` (a fine-tune, whose
    config has run.init_from), as rpb's rope (nn/position/rope.cpp) reads them. `per_length`
    (position.rope_factor_per_length): the factor of a forward over T positions is max(1, T / original_length)."""

    def __init__(self, head_dim, base, scaling="none", factor=1.0, original_length=0, beta_fast=32.0, beta_slow=1.0,
                 attention_factor=0.0, scaling_trained=False, per_length=False):
        super().__init__()
        self.scaling, self.scaled, self.scaling_trained = scaling, None, scaling_trained
        self.register_buffer("plain_inv_freq", torch.tensor([base ** (-2.0 * i / head_dim) for i in range(head_dim // 2)],
                                                            dtype=torch.float64).to(torch.float32), persistent=False)
        if scaling == "none":
            inv_freq = torch.tensor([base ** (-2.0 * i / head_dim) for i in range(head_dim // 2)],
                                    dtype=torch.float64).to(torch.float32)
        else:
            def factor_at(seq_len):
                return max(1.0, seq_len / original_length) if per_length else factor
            self.scaled = lambda seq_len: rope_scaled_frequencies(scaling, head_dim, base, factor_at(seq_len),
                                                                  original_length, seq_len, beta_fast, beta_slow,
                                                                  attention_factor)
            inv_freq, _ = self.scaled(original_length)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def rotate(self, x):  # (B, H, T, dh)
        inv_freq, factor = self.inv_freq, 1.0
        if self.scaled is not None and self.training and not self.scaling_trained:
            inv_freq = self.plain_inv_freq  # the scaling is an evaluation setting of a run that is not a fine-tune
        elif self.scaled is not None:
            inv_freq, factor = self.scaled(x.shape[-2])
        angle = torch.arange(x.shape[-2], dtype=torch.float32)[:, None] * inv_freq[None, :]
        angle = torch.cat([angle, angle], dim=-1)
        cos, sin = angle.cos(), angle.sin()
        if factor != 1.0:
            cos, sin = cos * factor, sin * factor
        x1, x2 = x.chunk(2, dim=-1)
        return x * cos + torch.cat([-x2, x1], dim=-1) * sin

    rotate_key = rotate
    block = 0


def train_length(config, what):
    """L0 of a scheme that scales with the training length (`what` reads it): run.length, the tokens of a
    language-model task's sample. An algorithmic task's L0 is its sample's tokens at run.length
    (train/config/config.cpp, data::sequence_tokens), which rpb_torch does not compute: it raises."""
    kind = config.get("task", {}).get("kind", "markov")
    if any(t["name"] == kind and t["algorithmic"] for t in registry().get("tasks", [])):
        raise NotImplementedError(f"{what} reads L0, which for the algorithmic task {kind!r} is its sample's tokens "
                                  "at run.length (rpb's train/config/config.cpp); rpb_torch computes L0 as run.length "
                                  "only")
    return key(config, "run", "length")


@scheme("rope")
def _rope(o, config, d_model, heads):
    """rope with its scaling keys (factor 0: the largest of run.eval_multipliers; rope_factor_per_length: L / L0)."""
    scaling, factor = o["rope_scaling"], o["rope_factor"]
    betas = o["yarn_beta_fast"], o["yarn_beta_slow"]
    attention_factor = o["yarn_attention_factor"]
    base = o["rope_base"]
    if scaling == "none":
        return Rotary(d_model // heads, base)
    factor = factor or float(max(key(config, "run", "eval_multipliers")))
    fine_tune = "init_from" in config.get("run", {})
    return Rotary(d_model // heads, base, scaling, factor, train_length(config, "rope_scaling"), *betas,
                  attention_factor, scaling_trained=fine_tune, per_length=o["rope_factor_per_length"])


class Fire(nn.Module):
    """fire: f(psi(i - j) / (psi(max(i, L)) + 1e-6)), psi(x) = log(|c x| + 1), L = |multiplier L0|, f = out(relu(hidden(x)))
    (nn/position/fire.cpp; the FIRE module of mcleish7/arithmetic, cramming/architectures/embeddings.py), in float32."""

    def __init__(self, length0, width, heads):
        super().__init__()
        self.c = nn.Parameter(torch.zeros(1))
        self.multiplier = nn.Parameter(torch.zeros(1))
        self.hidden = nn.Linear(1, width)
        self.out = nn.Linear(width, heads)
        self.length0 = float(length0)

    def bias(self, length, inplace=False):
        """(H, L, L): every query's bias over every key (causal masking is the caller's). inplace applies the ReLU
        to the (L, L, width) hidden layer in place, which only a caller recording no gradient may ask for."""
        positions = torch.arange(length, dtype=torch.float32)
        threshold = torch.abs(self.multiplier * self.length0)
        normaliser = torch.max(positions, threshold)[:, None]
        distance = torch.log(torch.abs(self.c * (positions[:, None] - positions[None, :])) + 1)
        normaliser = torch.log(torch.abs(self.c * normaliser) + 1)
        x = distance / (normaliser + 1e-6)
        hidden = self.hidden(x[..., None])  # (L, L, width): FIRE's big buffer
        return self.out(hidden.relu_() if inplace else torch.relu(hidden)).permute(2, 0, 1)


@scheme("fire")
def _fire(o, config, d_model, heads):
    return Fire(o["fire_length"] or train_length(config, "fire (fire_length 0)"), o["fire_hidden"], heads)


class Xpos(nn.Module):
    """xpos: microsoft/torchscale's XPOS (torchscale/component/xpos_relative_position.py at 776b070), as
    nn/position/xpos.cpp: rotate_every_two on interleaved pairs, cos and sin of p * base^(-k/(d/2)) times
    zeta_k^(s/B) on queries and its inverse on keys, zeta_k = (2k + 0.4 d)/(1.4 d), s = p + (-(T) // 2) centred
    over the T positions. With position.blockwise, each query attends its block of the train length and the one
    before (the model is for evaluation)."""

    def __init__(self, head_dim, base, scale_base, block):
        super().__init__()
        self.base, self.scale_base, self.block = base, scale_base, block
        self.register_buffer("zeta", (torch.arange(0, head_dim, 2) + 0.4 * head_dim) / (1.4 * head_dim),
                             persistent=False)

    def _rotated(self, x, downscale):  # (B, H, T, dh)
        length = x.shape[-2]
        min_pos = -length // 2
        scale = self.zeta ** torch.arange(min_pos, length + min_pos, 1).to(self.zeta).div(self.scale_base)[:, None]
        half = scale.shape[1]
        inv_freq = 1.0 / (self.base ** (torch.arange(0, half) / half))
        angle = torch.einsum("i , j -> i j", torch.arange(0, length, dtype=torch.float), inv_freq).to(scale)
        if downscale:
            scale = 1 / scale
        sin, cos = ((t * scale).repeat_interleave(2, dim=-1) for t in (angle.sin(), angle.cos()))
        rotated = torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)
        return x * cos + rotated * sin

    def rotate(self, x):
        return self._rotated(x, False)

    def rotate_key(self, x):
        return self._rotated(x, True)


class AtPositions:
    """A rotary scheme at explicit positions: x's rows placed at their positions in a sequence of `span`, rotated as
    that sequence is (each row by its own position; xPos's centre the span's), and read back."""

    def __init__(self, rotary, at, span):
        self.rotary, self.at, self.span, self.block = rotary, at, span, rotary.block

    def _at(self, rotate, x):
        full = x.new_zeros(*x.shape[:-2], self.span, x.shape[-1]).index_copy(-2, self.at, x)
        return rotate(full).index_select(-2, self.at)

    def rotate(self, x):
        return self._at(self.rotary.rotate, x)

    def rotate_key(self, x):
        return self._at(self.rotary.rotate_key, x)


class NoPosition(nn.Module):
    """none: nothing (also the type of a block that holds no position module)."""


class KerplePower(nn.Module):
    """kerple_power: -a_h * |i - j|^p_h (nn/position/kerple_power.cpp; KERPLE's ParallelKerplePower, whose in-place
    clamp rpb applies after each optimizer step, so a checkpoint holds clamped values), in float32."""

    def __init__(self, heads):
        super().__init__()
        self.p = nn.Parameter(torch.zeros(heads))
        self.a = nn.Parameter(torch.zeros(heads))

    def bias(self, length):
        distance = relative_positions(length).abs().to(torch.float32)
        return -self.a[:, None, None] * distance[None].pow(self.p[:, None, None])


@scheme("t5")
def _t5(o, config, d_model, heads):
    num_buckets, max_distance = o["num_buckets"], o["max_distance"]
    causal = is_causal(config)
    return TableBias(num_buckets, heads, lambda r: t5_bucket(r, not causal, num_buckets, max_distance),
                     o["untrained"], max_distance, causal)


@scheme("xpos")
def _xpos(o, config, d_model, heads):
    block = train_length(config, "xpos blockwise") if o["blockwise"] else 0
    return Xpos(d_model // heads, o["rope_base"], o["xpos_scale_base"], block)


@scheme("shaw")
def _shaw(o, config, d_model, heads):
    k = o["max_relative_position"]
    return TableBias(2 * k + 1, heads, lambda r: r.clamp(-k, k) + k, o["untrained"], k, is_causal(config))


scheme("learned")(lambda o, config, d_model, heads: LearnedEmbedding(o["max_positions"], d_model))
scheme("sinusoidal")(lambda o, config, d_model, heads: SinusoidalEmbedding(d_model))
scheme("log_decay")(lambda o, config, d_model, heads: DistanceBias([o["lambda"]] * heads, o["learnable_lambda"],
                                                                   torch.log1p))
scheme("alibi")(lambda o, config, d_model, heads: DistanceBias(alibi_slopes(heads), False, lambda d: d))
scheme("kerple_power")(lambda o, config, d_model, heads: KerplePower(heads))
scheme("none")(lambda o, config, d_model, heads: NoPosition())


def make_position(config, d_model, heads):
    """The position module of [position].scheme, built from the options the registry says it reads."""
    row = scheme_row(key(config, "position", "scheme"))
    if row["name"] not in FORWARDS:
        raise ValueError(f"position.scheme {row['name']!r}: rpb_torch has no forward for it (it has "
                         f"{', '.join(FORWARDS)}; add one with @scheme)")
    return FORWARDS[row["name"]](scheme_options(config, row), config, d_model, heads)


def embedding_recipe(config):
    """"gpt2" or "scaled": model.embedding resolved for the scheme (model.embedding = "scheme": the registry row's
    `embedding`). A config stored before the key existed reads as "gpt2" (train/config/config.cpp's legacy_keys)."""
    choice = config["model"].get("embedding", "gpt2")
    return scheme_row(key(config, "position", "scheme"))["embedding"] if choice == "scheme" else choice


# ---- the model (nn/transformer.cpp) ---------------------------------------------------------------------------

class Attention(nn.Module):
    def __init__(self, d_model, heads, scale, causal=True):
        super().__init__()
        self.heads, self.head_dim, self.causal = heads, d_model // heads, causal
        self.scale = scale if scale > 0 else 1.0 / math.sqrt(self.head_dim)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, bias, rotary):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        if rotary is not None:
            q, k = rotary.rotate(q), rotary.rotate_key(k)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        if bias is not None:
            scores = scores + bias
        causal = torch.ones(t, t, dtype=torch.bool).triu_(1) if self.causal else torch.zeros(t, t, dtype=torch.bool)
        if rotary is not None and rotary.block > 0:  # blockwise: keys before the previous block's start
            p = torch.arange(t)
            causal |= p[None, :] < ((p // rotary.block - 1).clamp(min=0) * rotary.block)[:, None]
        probs = torch.softmax(scores.masked_fill(causal, -math.inf), dim=-1)
        return self.out(torch.matmul(probs, v).transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, d_model, d_ff, gelu):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)
        self.approximate = {"tanh": "tanh", "erf": "none"}[gelu]

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate=self.approximate))


class Block(nn.Module):
    def __init__(self, d_model, heads, d_ff, gelu, scale, causal, position=None):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        self.attn = Attention(d_model, heads, scale, causal)
        self.ln2 = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        self.mlp = MLP(d_model, d_ff, gelu)
        if position is not None:  # a learned bias of this layer's own: blocks.<i>.pos.<scheme>.*
            self.pos = nn.ModuleDict({position[0]: position[1]})

    def forward(self, x, bias, rotary):
        x = x + self.attn(self.ln1(x), bias, rotary)
        return x + self.mlp(self.ln2(x))


class LanguageModel(nn.Module):
    """rpb's nn::LanguageModel for a run config (a dict of TOML tables) and a vocabulary size."""

    def __init__(self, config, vocab):
        super().__init__()
        m = lambda name: key(config, "model", name)  # noqa: E731
        d_model, heads, layers = m("d_model"), m("heads"), m("layers")
        scheme = key(config, "position", "scheme")
        args = (d_model, heads, m("d_ff"), m("gelu"), m("attn_scale"), is_causal(config))
        probe = make_position(config, d_model, heads)
        # nn/transformer.cpp's positions_per_layer: one module per layer when the registry's row says per_layer and
        # the module learns; every other scheme is one module.
        row = scheme_row(scheme)
        per_layer = not m("share_position") and row["per_layer"] and any(True for _ in probe.parameters())
        self.kind = row["kind"]
        self.tok = nn.Embedding(vocab, d_model)
        if not per_layer:
            self.pos = nn.ModuleDict({scheme: probe})
        self.blocks = nn.ModuleList(
            Block(*args, position=(scheme, make_position(config, d_model, heads)) if per_layer else None)
            for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        scaled = embedding_recipe(config) == "scaled"
        tied = m("tie_head") and not scaled  # nn/transformer.h ties_head: the scaled recipe has its own projection
        if not tied:
            self.head = nn.Linear(d_model, vocab, bias=False)
        self.scheme, self.per_layer, self.tied = scheme, per_layer, tied
        # Randomized positions (added keys: absent means off): rpb evaluates such a model at positions drawn per batch
        # (nn/transformer.h), unless position.contiguous_eval; a forward here then needs them given.
        position = config["position"]
        self.drawn = position.get("randomized", False) and not position.get("contiguous_eval", False)
        self.embed_scale = math.sqrt(d_model) if scaled else None

    def forward(self, tokens, positions=None):
        """(B, T) int64 tokens -> (B, T, vocab) logits; `positions`: the tokens' explicit positions (T ascending
        distinct ints, randomized positions: nn/transformer.h), else 0 .. T - 1. At explicit positions every scheme
        reads its span 0 .. S - 1 (S = the last position + 1) at their rows: the embeddings' rows, the bias's rows and
        columns, the rotation's rows (xPos's centre that of the span), as rpb does."""
        t = tokens.shape[1]
        if positions is None and self.drawn:
            raise ValueError("this model was trained with position.randomized and rpb evaluates it at positions drawn "
                             "per batch (position.contiguous_eval is false): pass positions=, or set contiguous_eval")
        at = None if positions is None else torch.as_tensor(positions, dtype=torch.long)
        span = t if at is None else int(at[-1]) + 1
        pick = (lambda m: m) if at is None else (lambda m: m.index_select(-2, at).index_select(-1, at))  # noqa: E731
        modules = ([blk.pos[self.scheme] for blk in self.blocks] if self.per_layer
                   else [self.pos[self.scheme]] * len(self.blocks))
        x = self.tok(tokens)
        if self.embed_scale is not None:
            x = x * self.embed_scale
        if self.kind == "absolute":
            x = x + (modules[0].embed(t) if at is None else modules[0].embed(span)[at])
        biases = [pick(p.bias(span)) if self.kind == "additive_bias" else None for p in modules]
        if not self.per_layer:
            biases = [biases[0]] * len(self.blocks)  # shared: computed once
        for block, position, bias in zip(self.blocks, modules, biases):
            rotary = None if self.kind != "rotary" else position if at is None else AtPositions(position, at, span)
            x = block(x, bias, rotary)
        x = self.ln_f(x)
        return x @ self.tok.weight.t() if self.tied else self.head(x)


# ---- checkpoints and evaluation -------------------------------------------------------------------------------

def read_checkpoint(path):
    """(config dict, {name: tensor}) of an rpb checkpoint: its `config` attribute parsed as TOML, and /params
    with /buffers. Refuses another format version."""
    with open_checkpoint(path) as f:
        text = f.attrs["config"]
        if isinstance(text, bytes):  # checkpoints of rpb before variable-length strings
            text = text.decode("utf-8")
        tensors = {}
        for group in ("params", "buffers"):
            if group in f:
                tensors.update({name: torch.from_numpy(np.array(ds[()])) for name, ds in f[group].items()})
    return tomllib.loads(text), tensors


def load(path):
    """(model, config) for an rpb checkpoint: the model its stored config describes, with the checkpoint's
    parameters loaded by load_state_dict(strict=True), in eval mode; config is the parsed TOML (a dict)."""
    config, tensors = read_checkpoint(path)
    if "tok.weight" not in tensors:
        raise KeyError(f"{path}: /params/tok.weight is missing")
    model = LanguageModel(config, vocab=tensors["tok.weight"].shape[0])
    model.load_state_dict(tensors, strict=True)
    return model.eval(), config


@torch.no_grad()
def perplexity(model, tokens, length, batch=16):
    """exp(mean NLL) over the non-overlapping segments of `length` of `tokens` (a 1-D sequence of N + 1
    token ids, N a multiple of `length`): segment s has inputs tokens[s*l : s*l+l] and targets shifted by
    one, as `rpb eval` cuts its held-out stream (train/data/eval_segments.h, make_eval_segments)."""
    tokens = torch.as_tensor(tokens, dtype=torch.long).flatten()
    n = tokens.numel() - 1
    if n < length or n % length != 0:
        raise ValueError(f"perplexity: {tokens.numel()} tokens do not make whole segments of length {length} "
                         "(expected N + 1 tokens, N a positive multiple of the length)")
    inputs, targets = tokens[:-1].view(-1, length), tokens[1:].view(-1, length)
    total = 0.0
    for b in range(0, inputs.shape[0], batch):
        logits = model(inputs[b:b + batch])
        total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets[b:b + batch].reshape(-1),
                                 reduction="sum").double().item()
    return math.exp(total / n)
