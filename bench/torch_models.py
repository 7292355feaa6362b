"""PyTorch's side of bench/compare.py: the same models as bench/bench_models.cpp, eager mode.

One measurement per process (so ru_maxrss is that case's peak); prints one JSON line.

  torch_models.py --case A|B [--steps 20] [--warmup 3]   train steps (forward, backward, AdamW)
  torch_models.py --case C --length 4096 [--scheme t5|fire|xpos]
                                                           evaluation of model A, no gradients, with the t5
                                                           scheme (the default) or FIRE or xPos (issue 27)
  torch_models.py --case D --length 1024                   t5-biased causal attention, forward + backward
  torch_models.py --case mm [--length 2048]                torch.mm, for reference beside cblas_sgemm
  torch_models.py --case parity --dir DIR                  loads DIR/model.h5 (an rpb checkpoint) and
                                                           checks the loss against DIR/parity.json

The model is rpb's nn::LanguageModel with the t5 scheme: token embedding, pre-LN blocks
x + attn(ln1(x)), x + mlp(ln2(x)), a fused qkv Linear(d, 3d) read as (B, T, 3, H, dh), tanh GELU,
final LayerNorm (eps 1e-5), head tied to the embedding, one (32, heads) T5 table shared by all layers,
its bias added after the 1/sqrt(dh) scale, causal mask, mean cross-entropy. Parameter names and
shapes are rpb's ("tok.weight", "pos.t5.table", "blocks.0.attn.qkv.weight", ...). It is python/rpb_torch.py's
model fixed to the benchmark's shapes, with the ways of forming the bias and the scores that bench/results.md
times (--bias, --scores); both share rpb_torch's T5 bucket function and checkpoint reader. To load any rpb
checkpoint into PyTorch, use rpb_torch.load.

With --scheme fire or xpos (case C only) the t5 table gives way to rpb_torch's modules with rpb's defaults
and initialisation: FIRE (rpb_torch.Fire: L0 = model A's train length 64, a 32-wide MLP, c 0.1, multiplier 1,
one module shared by the layers) builds the (1, H, L, L) bias once per forward as Fire.bias does, the ReLU in
place (inference mode; one (L, L, 32) buffer, not two); xPos (rpb_torch.Xpos: rope_base 10000, scale base 512,
not blockwise) rotates queries and keys, and a (1, 1, L, L) causal bias of 0 and -inf takes the table's place.

Thread settings are read by OpenMP and OpenBLAS when torch is imported, so they are set from the
command line before the import; the defaults are the fastest found on the bench machine (see
bench/results.md).
"""
import argparse
import json
import math
import os
import resource
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", required=True, choices=["A", "B", "C", "D", "mm", "parity"])
    p.add_argument("--length", type=int, default=0, help="C and D: sequence length; mm: n")
    p.add_argument("--scheme", default="t5", choices=["t5", "fire", "xpos"], help="C: model A's position scheme")
    p.add_argument("--steps", type=int, default=-1, help="timed steps")
    p.add_argument("--warmup", type=int, default=-1, help="untimed steps first")
    p.add_argument("--dir", help="parity: the folder bench_models --case parity wrote")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (and OMP_NUM_THREADS)")
    p.add_argument("--interop", type=int, default=1, help="torch.set_num_interop_threads (0: leave it)")
    p.add_argument("--blas-threads", type=int, default=2, help="OPENBLAS_NUM_THREADS")
    p.add_argument("--wait-policy", default="passive", help="OMP_WAIT_POLICY")
    p.add_argument("--foreach", type=int, default=1, help="torch.optim.AdamW(foreach=...)")
    p.add_argument("--bias", default="unfold", choices=["unfold", "gather"],
                   help="t5 bias as (H, L, L): from the (2L-1) offsets' rows (unfold) or the (L, L) bucket matrix")
    p.add_argument("--scores", default="mul", choices=["mul", "qscale", "baddbmm"],
                   help="how the scaled, biased scores are formed (see attention())")
    p.add_argument("--allocator", default="tcmalloc", choices=sorted(ALLOCATORS),
                   help="the C allocator under torch's CPU allocator (see ALLOCATORS)")
    return p.parse_args(argv)


# torch's CPU allocator takes every tensor from malloc and frees it at once. glibc's malloc serves blocks
# above its mmap threshold (128 KiB, rising as such blocks are freed, to 32 MiB at most) with mmap and
# returns them with munmap, so each op's multi-MB output costs fresh page faults; on the 2-core bench VM that
# made model A's step 1.9-2.3x slower. PyTorch's CPU tuning guides advise tcmalloc or jemalloc; glibc can
# also be told to keep what it frees, but not blocks of 32 MiB and more (B's and D1024's scores). tcmalloc,
# the default, was fastest on all three of compare.py's probes (jemalloc was 2.8x slower than it on model A).
# Each entry: environment variables to set (None: unset). glibc reads them, and the loader LD_PRELOAD, when
# the process starts, so torch_models.py restarts itself under them.
ALLOCATORS = {
    "glibc": {"MALLOC_MMAP_THRESHOLD_": None, "MALLOC_TRIM_THRESHOLD_": None, "LD_PRELOAD": None},
    # mmap only above 32 MiB (glibc's largest threshold), never trim the heap back to the OS
    "glibc-keep": {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 40),
                   "LD_PRELOAD": None},
    "tcmalloc": {"MALLOC_MMAP_THRESHOLD_": None, "MALLOC_TRIM_THRESHOLD_": None,
                 "LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"},  # libtcmalloc-minimal4
}


def use_allocator(name):
    """Restarts this script under allocator `name`'s environment unless it already runs under it."""
    want = ALLOCATORS[name]
    if all(os.environ.get(k) == v for k, v in want.items()):
        return
    preload = want.get("LD_PRELOAD")
    if preload and not os.path.exists(preload):
        raise SystemExit(f"--allocator {name}: {preload} is missing (Debian package libtcmalloc-minimal4)")
    env = {k: v for k, v in os.environ.items() if k not in want}
    env.update({k: v for k, v in want.items() if v is not None})
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    use_allocator(ARGS.allocator)
    # Before `import torch`: OpenMP and OpenBLAS read these once, when they load.
    os.environ["OMP_WAIT_POLICY"] = ARGS.wait_policy
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.blas_threads)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from rpb_torch import Fire, Xpos, read_checkpoint, t5_bucket  # noqa: E402  (python/rpb_torch.py: rpb in PyTorch)

VOCAB = 64
MODELS = {  # d_model, heads, layers, d_ff, length, batch: as bench_models.cpp
    "A": dict(d_model=128, heads=4, layers=2, d_ff=512, length=64, batch=32),
    "B": dict(d_model=256, heads=8, layers=4, d_ff=1024, length=256, batch=16),
}
NUM_BUCKETS, MAX_DISTANCE = 32, 128
FIRE_HIDDEN, FIRE_INIT_C, FIRE_INIT_MULTIPLIER = 32, 0.1, 1.0  # nn/position/scheme.h and fire.cpp's defaults
ROPE_BASE, XPOS_SCALE_BASE = 10000.0, 512                       # nn/position/scheme.h's defaults
ATTN_HEADS, ATTN_HEAD_DIM = 8, 64  # case D


class T5Bias(nn.Module):
    """A (num_buckets, heads) table; forward(L) gives the causal (1, H, L, L) bias, -inf above the diagonal."""

    def __init__(self, heads, method="unfold"):
        super().__init__()
        self.table = nn.Parameter(torch.randn(NUM_BUCKETS, heads) * 0.02)
        self.method = method
        self._cache = {}

    def _index(self, length):
        # Built once per length, like rpb's cached bucket row (and like a model that keeps them).
        if length not in self._cache:
            if self.method == "unfold":
                offsets = torch.arange(-(length - 1), length)  # key - query, for every offset once
                index = t5_bucket(offsets, False, NUM_BUCKETS, MAX_DISTANCE)
            else:
                pos = torch.arange(length)
                index = t5_bucket(pos[None, :] - pos[:, None], False, NUM_BUCKETS, MAX_DISTANCE)
            causal = torch.ones(length, length, dtype=torch.bool).triu_(1)
            self._cache = {length: (index, causal)}
        return self._cache[length]

    def forward(self, length):
        index, causal = self._index(length)
        if self.method == "unfold":
            rows = self.table[index].t()  # (H, 2L-1), column m at key - query = m - (L-1)
            # windows[h, n, j] = rows[h, n + j]; query i reads n = L-1-i, i.e. the windows flipped.
            bias = rows.unfold(1, length, 1).flip(1)  # a new (H, L, L) tensor
        else:
            bias = self.table[index].permute(2, 0, 1).contiguous()  # (L, L, H) -> (H, L, L)
        return bias.masked_fill_(causal, -math.inf).unsqueeze(0)


def causal_bias(length):
    """(L, L): 0 at and below the diagonal, -inf above it."""
    return torch.zeros(length, length).masked_fill_(torch.ones(length, length, dtype=torch.bool).triu_(1), -math.inf)


class FireBias(Fire):
    """rpb_torch.Fire with rpb's initialisation (c 0.1, multiplier 1; the MLP's init is LanguageModel's); forward(L)
    gives Fire.bias(L) as a causal (1, H, L, L) bias, -inf above the diagonal."""

    def __init__(self, length0, heads):
        super().__init__(length0, FIRE_HIDDEN, heads)
        with torch.no_grad():
            self.c.fill_(FIRE_INIT_C)
            self.multiplier.fill_(FIRE_INIT_MULTIPLIER)
        self._causal = {}

    def _mask(self, length):
        if length not in self._causal:  # built once per length, as T5Bias caches its index
            self._causal = {length: torch.ones(length, length, dtype=torch.bool).triu_(1)}
        return self._causal[length]

    def forward(self, length):
        bias = self.bias(length, inplace=torch.is_inference_mode_enabled())  # (H, L, L), a view of a new tensor
        return bias.masked_fill_(self._mask(length), -math.inf).unsqueeze(0)


class XposRotation(nn.Module):
    """rpb_torch.Xpos (rotates queries and keys; no parameters); forward(L) is the (1, 1, L, L) causal bias."""

    def __init__(self, head_dim):
        super().__init__()
        self.xpos = Xpos(head_dim, ROPE_BASE, XPOS_SCALE_BASE, 0)
        self._bias = {}

    def rotate(self, x):
        return self.xpos.rotate(x)

    def rotate_key(self, x):
        return self.xpos.rotate_key(x)

    def forward(self, length):
        if length not in self._bias:
            self._bias = {length: causal_bias(length)[None, None]}
        return self._bias[length]


def make_position(scheme, heads, head_dim, train_length, bias_method):
    """Model A's position module of `scheme`; forward(L) gives the (1, H or 1, L, L) bias attention adds."""
    if scheme == "fire":
        return FireBias(train_length, heads)
    if scheme == "xpos":
        return XposRotation(head_dim)
    return T5Bias(heads, bias_method)


def attention(q, k, v, bias, scale, scores="mul"):
    """softmax(q k^T * scale + bias) v, the eager way; bias (1, H, L, L) carries the causal -inf.
    scores: how q k^T * scale + bias is formed (all write one (B, H, L, L) buffer):
      mul      matmul(q, k^T).mul_(scale).add_(bias), in place;
      qscale   matmul(q * scale, k^T).add_(bias): the scale on the smaller q;
      baddbmm  one baddbmm(bias, q, k^T, alpha=scale) over B x H (the bias is copied B times when B > 1)."""
    if scores == "mul":
        s = torch.matmul(q, k.transpose(-2, -1)).mul_(scale).add_(bias)
    elif scores == "qscale":
        s = torch.matmul(q * scale, k.transpose(-2, -1)).add_(bias)
    else:
        b, h, t, dh = q.shape
        flat = bias.expand(b, h, t, t).reshape(b * h, t, t)
        s = torch.baddbmm(flat, q.reshape(b * h, t, dh), k.reshape(b * h, t, dh).transpose(1, 2), alpha=scale)
        s = s.view(b, h, t, t)
    return torch.matmul(torch.softmax(s, dim=-1), v)


class Attention(nn.Module):
    def __init__(self, d, heads, scores):
        super().__init__()
        self.heads, self.head_dim, self.scores = heads, d // heads, scores
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x, bias, rotary=None):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        if rotary is not None:
            q, k = rotary.rotate(q), rotary.rotate_key(k)
        h = attention(q, k, v, bias, 1.0 / math.sqrt(self.head_dim), self.scores)
        return self.out(h.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, d, d_ff):
        super().__init__()
        self.fc1 = nn.Linear(d, d_ff)
        self.fc2 = nn.Linear(d_ff, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, d, heads, d_ff, scores):
        super().__init__()
        self.ln1 = nn.LayerNorm(d, eps=1e-5)
        self.attn = Attention(d, heads, scores)
        self.ln2 = nn.LayerNorm(d, eps=1e-5)
        self.mlp = MLP(d, d_ff)

    def forward(self, x, bias, rotary=None):
        x = x + self.attn(self.ln1(x), bias, rotary)
        return x + self.mlp(self.ln2(x))


class LanguageModel(nn.Module):
    def __init__(self, d_model, heads, layers, d_ff, length, bias_method="unfold", scores="mul", scheme="t5", **_):
        super().__init__()
        self.scheme = scheme
        self.tok = nn.Embedding(VOCAB, d_model)
        self.pos = nn.ModuleDict({scheme: make_position(scheme, heads, d_model // heads, length, bias_method)})
        self.blocks = nn.ModuleList(Block(d_model, heads, d_ff, scores) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model, eps=1e-5)
        for name, p in self.named_parameters():  # near rpb's init; the timing does not depend on it
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)
            elif name.endswith(".bias"):
                nn.init.zeros_(p)

    def forward(self, tokens, targets):
        x = self.tok(tokens)
        position = self.pos[self.scheme]
        bias = position(tokens.shape[1])  # once per forward, shared by the layers
        rotary = position if isinstance(position, XposRotation) else None
        for block in self.blocks:
            x = block(x, bias, rotary)
        logits = self.ln_f(x) @ self.tok.weight.t()
        return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def time_steps(warmup, steps, step):
    for _ in range(warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps


def bench_train(name, args):
    m = MODELS[name]
    torch.manual_seed(1)
    model = LanguageModel(**m, bias_method=args.bias, scores=args.scores)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=bool(args.foreach))
    tokens = torch.randint(VOCAB, (m["batch"], m["length"]))
    targets = torch.randint(VOCAB, (m["batch"], m["length"]))

    def step():
        opt.zero_grad(set_to_none=True)
        model(tokens, targets).backward()
        opt.step()

    sec = time_steps(3 if args.warmup < 0 else args.warmup, 20 if args.steps < 0 else args.steps, step)
    return sec, m["batch"] * m["length"]


def bench_eval(args):
    torch.manual_seed(1)
    model = LanguageModel(**MODELS["A"], bias_method=args.bias, scores=args.scores, scheme=args.scheme).eval()
    tokens = torch.randint(VOCAB, (1, args.length))
    targets = torch.randint(VOCAB, (1, args.length))

    def step():
        with torch.inference_mode():  # faster than no_grad: no version counters
            model(tokens, targets).item()

    sec = time_steps(1 if args.warmup < 0 else args.warmup, 2 if args.steps < 0 else args.steps, step)
    return sec, args.length


def bench_attention(args):
    torch.manual_seed(1)
    length = args.length
    shape = (1, ATTN_HEADS, length, ATTN_HEAD_DIM)
    q, k, v = (torch.randn(shape, requires_grad=True) for _ in range(3))
    g = torch.randn(shape)
    pos = T5Bias(ATTN_HEADS, args.bias)
    scale = 1.0 / math.sqrt(ATTN_HEAD_DIM)

    def step():
        for t in (q, k, v, pos.table):
            t.grad = None
        attention(q, k, v, pos(length), scale, args.scores).backward(g)

    sec = time_steps(1 if args.warmup < 0 else args.warmup, 3 if args.steps < 0 else args.steps, step)
    return sec, length


def bench_mm(args):
    n = args.length or 2048
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        torch.mm(a, b)
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2], 0


def check_parity(directory, args):
    """Loads rpb's checkpoint into the torch model and compares the loss (and gradients) with rpb's."""
    with open(os.path.join(directory, "parity.json")) as f:
        ref = json.load(f)
    _, params = read_checkpoint(os.path.join(directory, ref["checkpoint"]))  # the stored config is not needed
    model = LanguageModel(**MODELS["A"], bias_method=args.bias, scores=args.scores)
    ours = dict(model.named_parameters())
    problems = []
    if sorted(ours) != sorted(params):
        problems.append(f"names differ: only rpb {sorted(set(params) - set(ours))}, "
                        f"only torch {sorted(set(ours) - set(params))}")
    for name, p in ours.items():
        if name in params and tuple(params[name].shape) != tuple(p.shape):
            problems.append(f"{name}: rpb {params[name].shape}, torch {tuple(p.shape)}")
    count = sum(p.numel() for p in model.parameters())
    if count != ref["parameter_count"] or count != sum(a.numel() for a in params.values()):
        problems.append(f"parameter count: torch {count}, rpb {ref['parameter_count']}")
    if problems:
        raise SystemExit("parity: the models differ:\n  " + "\n  ".join(problems))
    with torch.no_grad():
        for name, p in ours.items():
            p.copy_(params[name])

    shape = (ref["batch"], ref["length"])
    tokens = torch.tensor(ref["tokens"], dtype=torch.long).view(shape)
    targets = torch.tensor(ref["targets"], dtype=torch.long).view(shape)
    loss32 = model(tokens, targets)
    loss32.backward()
    grad_norms = {name: p.grad.double().norm().item() for name, p in ours.items()}
    table_grad = ours["pos.t5.table"].grad.double().flatten()
    with torch.no_grad():
        loss64 = model.double()(tokens, targets).item()

    result = {
        "side": "torch", "case": "parity", "parameter_count": count,
        "loss_f32": loss32.item(), "rpb_loss_f32": ref["loss_f32"], "diff_f32": abs(loss32.item() - ref["loss_f32"]),
        "loss_f64": loss64, "rpb_loss_f64": ref["loss_f64"], "diff_f64": abs(loss64 - ref["loss_f64"]),
        "grad_norm_max_rel_diff": max(abs(grad_norms[n] - ref["grad_norms"][n]) / max(ref["grad_norms"][n], 1e-30)
                                      for n in grad_norms),
        "table_grad_max_abs_diff": (table_grad - torch.tensor(ref["table_grad"], dtype=torch.float64)).abs().max().item(),
    }
    failures = []
    if result["diff_f32"] > 1e-4:
        failures.append(f"float32 loss: torch {result['loss_f32']:.9g}, rpb {ref['loss_f32']:.9g}")
    if result["diff_f64"] > 1e-9:
        failures.append(f"float64 loss: torch {loss64:.17g}, rpb {ref['loss_f64']:.17g}")
    if result["grad_norm_max_rel_diff"] > 1e-3:
        failures.append(f"gradient norms differ by up to {result['grad_norm_max_rel_diff']:.3g} (relative)")
    if result["table_grad_max_abs_diff"] > 1e-5:
        failures.append(f"pos.t5.table gradient differs by up to {result['table_grad_max_abs_diff']:.3g}")
    result["ok"] = not failures
    print(json.dumps(result), flush=True)
    if failures:
        raise SystemExit("parity FAILED: " + "; ".join(failures))


def settings(args):
    return {"threads": torch.get_num_threads(), "interop": torch.get_num_interop_threads(),
            "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
            "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
            "foreach": bool(args.foreach), "bias": args.bias, "scores": args.scores, "allocator": args.allocator,
            "scheme": args.scheme}


def main(args):
    torch.set_num_threads(args.threads)
    if args.interop > 0:
        torch.set_num_interop_threads(args.interop)
    if args.case == "parity":
        if not args.dir:
            raise SystemExit("--case parity needs --dir")
        check_parity(args.dir, args)
        return
    if args.case in ("C", "D") and args.length <= 0:
        raise SystemExit(f"--case {args.case} needs --length")
    if args.scheme != "t5" and args.case != "C":
        raise SystemExit("--scheme is for --case C only")
    if args.case in MODELS:
        sec, tokens = bench_train(args.case, args)
    elif args.case == "C":
        sec, tokens = bench_eval(args)
    elif args.case == "D":
        sec, tokens = bench_attention(args)
    else:
        sec, tokens = bench_mm(args)
    length = MODELS[args.case]["length"] if args.case in MODELS else (args.length or 2048)
    print(json.dumps({"side": "torch", "case": args.case, "impl": "eager", "scheme": args.scheme, "length": length,
                      "sec_per_step": sec,
                      "tokens_per_s": tokens / sec, "peak_rss_mb": peak_rss_mb(), "settings": settings(args)}),
          flush=True)


if __name__ == "__main__":
    main(ARGS)
    sys.exit(0)
