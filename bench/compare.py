"""rpb against PyTorch (eager) on the same models, interleaved, in one run (issue 6).

  /usr/bin/python3 bench/compare.py [--reps 5] [--quick] [--no-tune] [--extrapolate] [--cases A,D4096]
                                    [--build build] [--out bench/results.md]

The cases (keys for --cases):
  A, B                       train steps of model A (d 128, 2 layers, 32 x 64 tokens) and B (d 256, 4 layers)
  C1024, C4096, C16384       evaluation of model A (t5 scheme) on one sequence, no gradients
  D256, D1024, D4096         t5-biased causal attention alone, forward + backward
  F4096, X4096               evaluation of model A with FIRE (F) or xPos (X) instead of t5, against PyTorch
                             (issue 27; PyTorch's FIRE holds an (L, L, 32) hidden layer: 2 GiB at 4096 tokens,
                             32 GiB at 16384, so it runs at 4096 only)
  FM4096, FM8192, FM16384,   rpb alone (no PyTorch) evaluating model A with FIRE (FM) or xPos (XM) at 4096, 8192
  XM4096, XM8192, XM16384    and 16384 tokens: rpb's peak memory, which must grow linearly in the length (see
                             memory_growth: the check and its criterion)

bench/run.sh builds rpb and runs this with Debian's python (python3-torch, python3-h5py).

First a parity check (fails loudly): bench_models writes model A from a fixed seed as an rpb checkpoint
with a batch and rpb's losses; torch_models.py loads it with h5py and must reach the same parameter
names, shapes and count, and the same loss to 1e-4 in float32 (1e-9 in float64).

Then (unless --no-tune or --quick) PyTorch alone under a few thread and attention settings; the
fastest is kept for the comparison, so PyTorch runs at its best on this machine.

Then, for rep in 1..N, for each case, each implementation runs in its own process (so its peak RSS is
that case's): rpb (the fused attention, the default path), rpb with the reference (unfused) attention
where it fits in memory, and PyTorch. The order alternates from rep to rep. Medians, ratios rpb/PyTorch
and every raw figure go to the terminal and to bench/results.md.

FLOPs are counted analytically, never measured: a matmul (M, K) @ (K, N) is 2 M N K; a model counts
its qkv, output, fc1, fc2 and tied-head matmuls and attention's q k^T and p v over the full L x L (also
when causal: the convention PyTorch users quote); a train step, or attention forward + backward, is 3x
the forward. Elementwise work (softmax, LayerNorm, GELU, AdamW) is not counted.
"""
import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_SCRIPT = os.path.join(ROOT, "bench", "torch_models.py")
VOCAB = 64
MODELS = {  # as bench_models.cpp and torch_models.py
    "A": dict(d_model=128, heads=4, layers=2, d_ff=512, length=64, batch=32),
    "B": dict(d_model=256, heads=8, layers=4, d_ff=1024, length=256, batch=16),
}
ATTN_HEADS, ATTN_HEAD_DIM = 8, 64
EVAL_LENGTHS = (1024, 4096, 16384)
SCHEME_KEYS = {"fire": "F", "xpos": "X"}  # issue 27's schemes: F4096 against PyTorch, FM<length> rpb alone
SCHEME_EVAL_LENGTH = 4096                 # where PyTorch still fits (its FIRE hidden layer is (L, L, 32) floats)
MEMORY_LENGTHS = (4096, 8192, 16384)      # rpb's peak memory, which must grow linearly
LINEAR_SLOPE_TOLERANCE = 1.25             # memory_growth's criterion (a quadratic term would give a ratio of 2)
ATTN_LENGTHS = (256, 1024, 4096)
REFERENCE_MAX_ELEMENTS = 2 ** 28  # rpb's reference path runs where its (H, L, L) scores stay below 1 GiB
SGEMM_FLOPS = 2 * 2048 ** 3  # bench_models --case sgemm and torch_models.py --case mm: (2048, 2048) @ (2048, 2048)


def model_forward_flops(m, batch, length):
    t, d, ff = batch * length, m["d_model"], m["d_ff"]
    per_layer = (2 * t * d * 3 * d + 2 * t * d * d + 2 * 2 * t * d * ff  # qkv, out, fc1 + fc2
                 + 2 * 2 * batch * length * length * d)                   # q k^T and p v, all heads
    return m["layers"] * per_layer + 2 * t * d * VOCAB                    # tied head


def attention_forward_flops(length):
    return 2 * 2 * ATTN_HEADS * length * length * ATTN_HEAD_DIM


class Case:
    """One row of the table: what runs, how long, and its FLOPs per step. `scheme` is model A's position scheme
    (case C: t5, fire or xpos); `torch` is False for rpb-only rows (the memory cases)."""

    def __init__(self, key, kind, length, flops, steps, warmup, reference, scheme="t5", torch=True):
        self.key, self.kind, self.length, self.flops = key, kind, length, flops
        self.steps, self.warmup, self.reference = steps, warmup, reference
        self.scheme, self.torch = scheme, torch

    def commands(self, build, torch_extra):
        """[(implementation, argv)] in the order one rep runs them."""
        timing = ["--steps", str(self.steps), "--warmup", str(self.warmup)]
        length = [] if self.kind in MODELS else ["--length", str(self.length)]
        scheme = [] if self.scheme == "t5" else ["--scheme", self.scheme]
        rpb = [os.path.join(build, "bench_models"), "--case", self.kind] + length + scheme + timing
        torch = [sys.executable, TORCH_SCRIPT, "--case", self.kind] + length + scheme + timing + torch_extra
        out = [("rpb", rpb)]
        if self.reference:
            out.append(("rpb-ref", rpb + ["--impl", "reference"]))
        if self.torch:
            out.append(("torch", torch))
        return out


def make_cases(quick):
    def steps(full, fast):
        return fast if quick else full

    cases = []
    for name, m in MODELS.items():
        train_steps = {"A": (20, 3), "B": (5, 2)}[name]
        s, w = steps(train_steps, (2, 1))
        cases.append(Case(name, name, m["length"], 3 * model_forward_flops(m, m["batch"], m["length"]), s, w, True))
    for length in EVAL_LENGTHS:
        s, w = steps({1024: (20, 2), 4096: (3, 1), 16384: (1, 1)}[length], (1, 1) if length < 16384 else (1, 0))
        ref = MODELS["A"]["heads"] * length * length <= REFERENCE_MAX_ELEMENTS
        cases.append(Case(f"C{length}", "C", length, model_forward_flops(MODELS["A"], 1, length), s, w, ref))
    for length in ATTN_LENGTHS:
        s, w = steps({256: (50, 5), 1024: (10, 2), 4096: (2, 1)}[length], (1, 1))
        ref = ATTN_HEADS * length * length <= REFERENCE_MAX_ELEMENTS
        cases.append(Case(f"D{length}", "D", length, 3 * attention_forward_flops(length), s, w, ref))
    return cases + scheme_cases(quick)


def scheme_cases(quick):
    """Issue 27's rows: FIRE and xPos evaluating model A against PyTorch at SCHEME_EVAL_LENGTH (F4096, X4096), then
    rpb alone at MEMORY_LENGTHS (FM4096 ... XM16384) for its peak memory."""
    cases = []
    flops = lambda length: model_forward_flops(MODELS["A"], 1, length)  # noqa: E731  (the schemes' work uncounted)
    ref = MODELS["A"]["heads"] * SCHEME_EVAL_LENGTH ** 2 <= REFERENCE_MAX_ELEMENTS
    for scheme, letter in SCHEME_KEYS.items():
        s, w = (1, 1) if quick else (3, 1)
        cases.append(Case(f"{letter}{SCHEME_EVAL_LENGTH}", "C", SCHEME_EVAL_LENGTH, flops(SCHEME_EVAL_LENGTH), s, w,
                          ref, scheme))
    for scheme, letter in SCHEME_KEYS.items():
        for length in MEMORY_LENGTHS:
            s, w = (1, 1 if length < 16384 else 0) if quick else {4096: (3, 1), 8192: (2, 1), 16384: (1, 1)}[length]
            cases.append(Case(f"{letter}M{length}", "C", length, flops(length), s, w, False, scheme, torch=False))
    return cases


# ---- running ----

def run_json(argv, timeout):
    """Runs one measurement; returns its last JSON line, or {"error": ...}."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0 or not lines:
        why = f"killed by signal {-p.returncode} (out of memory?)" if p.returncode < 0 else f"exit {p.returncode}"
        tail = (p.stderr.strip().splitlines() or [""])[-1][:200]
        return {"error": f"{why}: {tail}" if tail else why}
    return json.loads(lines[-1])


def check_parity(build, workdir, torch_extra):
    rpb = run_json([os.path.join(build, "bench_models"), "--case", "parity", "--out", workdir], 600)
    if "error" in rpb:
        raise SystemExit(f"parity: bench_models failed: {rpb['error']}")
    p = subprocess.run([sys.executable, TORCH_SCRIPT, "--case", "parity", "--dir", workdir] + torch_extra,
                       capture_output=True, text=True, cwd=ROOT)
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0 or not lines:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit("parity check FAILED: rpb and PyTorch do not compute the same model (see above)")
    torch = json.loads(lines[-1])
    print(f"parity: {torch['parameter_count']} parameters on both sides; loss float32 rpb {torch['rpb_loss_f32']:.9f} "
          f"torch {torch['loss_f32']:.9f} (|diff| {torch['diff_f32']:.2e}); float64 |diff| {torch['diff_f64']:.2e}")
    return rpb, torch


def cpu_snapshot():
    """(wall seconds, CPU seconds the whole machine has been busy, CPU seconds of this process and its children)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in f.readline().split()[1:8])
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.monotonic(), (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK"),
            own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime)


def other_cpu_share(before, after):
    """The share of the machine's cores that other processes (not this bench) kept busy between two snapshots."""
    wall, busy, mine = (a - b for a, b in zip(after, before))
    return max(0.0, busy - mine) / (wall * os.cpu_count()) if wall > 0 else float("nan")


def measure(cases, build, torch_extra, reps, log):
    """({(case key, impl): [result per rep]}, [other processes' CPU share per rep]), interleaved: rep by rep,
    case by case, impl by impl."""
    results, others = {}, []
    for rep in range(reps):
        snap = cpu_snapshot()
        for case in cases:
            commands = case.commands(build, torch_extra)
            if rep % 2:
                commands.reverse()  # alternate who runs first
            for impl, argv in commands:
                r = run_json(argv, timeout=900)
                results.setdefault((case.key, impl), []).append(r)
                shown = r.get("error") or f"{r['sec_per_step'] * 1e3:10.2f} ms/step  {r['peak_rss_mb']:8.1f} MB"
                log(f"rep {rep + 1}/{reps}  {case.key:7s} {impl:8s} {shown}")
        sgemm = run_json([os.path.join(build, "bench_models"), "--case", "sgemm"], 300)
        mm = run_json([sys.executable, TORCH_SCRIPT, "--case", "mm"], 300)
        results.setdefault(("sgemm", "rpb"), []).append(sgemm)
        results.setdefault(("sgemm", "torch"), []).append(mm)
        others.append(other_cpu_share(snap, cpu_snapshot()))
        log(f"rep {rep + 1}/{reps}  sgemm 2048^3: cblas {gflops_of(sgemm, SGEMM_FLOPS):.1f} GFLOP/s, "
            f"torch.mm {gflops_of(mm, SGEMM_FLOPS):.1f}; other processes used {others[-1]:.1%} of the CPUs")
    return results, others


def gflops_of(r, flops):
    return float("nan") if "error" in r else flops / r["sec_per_step"] * 1e-9


def time_extrapolate(build, log):
    """Seconds of `rpb extrapolate configs/extrapolation_quick.toml`, with the fused and the reference attention."""
    seconds, others = {}, {}
    for fused in (True, False):
        with tempfile.TemporaryDirectory(prefix="rpb-extrapolate-") as out_dir:
            argv = [os.path.join(build, "rpb"), "extrapolate", "configs/extrapolation_quick.toml",
                    "--set", f'run.out_dir="{out_dir}"', "--set", f"model.fused_attention={str(fused).lower()}"]
            snap = cpu_snapshot()
            p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
            seconds[fused] = time.monotonic() - snap[0] if p.returncode == 0 else float("nan")
            others[fused] = other_cpu_share(snap, cpu_snapshot())
            log(f"extrapolation_quick, fused_attention = {str(fused).lower()}: {seconds[fused]:.1f} s, other "
                f"processes used {others[fused]:.1%} of the CPUs"
                + ("" if p.returncode == 0 else f" (failed: {(p.stderr.strip().splitlines() or [''])[-1]})"))
    return seconds, others


# ---- torch settings ----

# First the C allocator under torch (torch_models.py's ALLOCATORS), then TUNE_GRID on top of the fastest.
ALLOCATOR_GRID = [  # (label, extra torch_models.py arguments); the first is torch_models.py's default
    ("tcmalloc (LD_PRELOAD)", []),
    ("glibc malloc keeping what it frees (mmap above 32 MiB only, no trimming)", ["--allocator", "glibc-keep"]),
    ("glibc malloc's defaults (mmap and munmap for every block above 128 KiB and up)", ["--allocator", "glibc"]),
]
TUNE_GRID = [  # (label, extra torch_models.py arguments); the first is torch_models.py's default
    ("default: 2 threads, OpenBLAS 2, interop 1, passive, foreach, unfold bias", []),
    ("OpenBLAS 1 thread", ["--blas-threads", "1"]),
    ("torch.set_num_threads(1) (OpenBLAS 2)", ["--threads", "1"]),
    ("interop threads left at torch's default", ["--interop", "0"]),
    ("AdamW without foreach", ["--foreach", "0"]),
    ("t5 bias gathered through an (L, L) bucket matrix", ["--bias", "gather"]),
    ("scores as matmul(q * scale, k^T).add_(bias)", ["--scores", "qscale"]),
    ("scores as one baddbmm(bias, q, k^T, alpha=scale)", ["--scores", "baddbmm"]),
]
# OMP_WAIT_POLICY=active (OpenMP's spinning) is left out: 2.4x slower on these probes when this was written.
TUNE_PROBES = [("A", ["--case", "A", "--steps", "10", "--warmup", "2"]),
               ("B", ["--case", "B", "--steps", "2", "--warmup", "1"]),
               ("D1024", ["--case", "D", "--length", "1024", "--steps", "3", "--warmup", "1"])]
TUNE_MIN_GAIN = 0.03  # a setting replaces the default only when its geometric-mean time is this much lower


def tune_stage(grid, base, reps, log):
    """Times PyTorch alone under each setting of `grid` (its extra arguments after `base`) on the probes,
    interleaved. Returns (the winning setting, table rows)."""
    times = {}
    for _ in range(reps):
        for probe, argv in TUNE_PROBES:
            for label, extra in grid:
                r = run_json([sys.executable, TORCH_SCRIPT] + argv + base + extra, 600)
                times.setdefault((label, probe), []).append(r.get("sec_per_step", float("nan")))
    medians = {key: statistics.median(v) for key, v in times.items()}
    default = grid[0][0]
    rows, score = [], {}
    for label, extra in grid:
        ratios = [medians[(label, p)] / medians[(default, p)] for p, _ in TUNE_PROBES]
        score[label] = statistics.geometric_mean(ratios) if all(r == r for r in ratios) else float("inf")
        rows.append([label] + [fmt(1e3 * medians[(label, p)]) for p, _ in TUNE_PROBES] + [fmt(score[label], 3)])
        log(f"tune: {label:52s} " + "  ".join(f"{p} {c} ms" for (p, _), c in zip(TUNE_PROBES, rows[-1][1:]))
            + f"  (x{rows[-1][-1]} the default)")
    best = min(grid, key=lambda g: score[g[0]])
    return (best if score[best[0]] < 1 - TUNE_MIN_GAIN else grid[0]), rows


def tune(reps, log):
    """The allocator (ALLOCATOR_GRID), then TUNE_GRID under it, each against its first setting.
    Returns (the winning extra arguments, (head, rows) for results.md)."""
    allocator, rows = tune_stage(ALLOCATOR_GRID, [], reps, log)
    log(f"tune: PyTorch's allocator: {allocator[0]}")
    winner, more = tune_stage(TUNE_GRID, allocator[1], reps, log)
    log(f"tune: PyTorch runs with: {winner[0]}")
    rows += [[f"{allocator[0]}; {more_row[0]}"] + more_row[1:] for more_row in more]
    head = ["setting"] + [f"{p} ms/step" for p, _ in TUNE_PROBES] + ["time against the stage's first row (geometric mean)"]
    return allocator[1] + winner[1], (head, rows)


# ---- report ----

def command_output(argv, env=None):
    try:
        return subprocess.run(argv, capture_output=True, text=True, env=env).stdout.strip()
    except OSError:
        return ""


def machine_info():
    model = next((line.split(":", 1)[1].strip() for line in command_output(["lscpu"]).splitlines()
                  if line.startswith("Model name")), platform.processor())
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    return f"{model}, {os.cpu_count()} cores, {mem_gb:.0f} GiB RAM"


def openblas_kernels():
    """The OpenBLAS kernel set both sides run on, and OpenBLAS's own choice when the environment forces one."""
    probe = ("import ctypes; lib = ctypes.CDLL('libopenblas.so.0'); "
             "lib.openblas_get_corename.restype = ctypes.c_char_p; print(lib.openblas_get_corename().decode())")
    active = command_output([sys.executable, "-c", probe]) or "?"
    forced = os.environ.get("OPENBLAS_CORETYPE")
    if not forced:
        return f"{active} (OpenBLAS's own choice for this CPU)"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    own = command_output([sys.executable, "-c", probe], env) or "?"
    return (f"{active}, set by `OPENBLAS_CORETYPE={forced}` in the environment (OpenBLAS's own choice for this "
            f"CPU would be {own}); rpb and PyTorch inherit it alike")


def versions():
    torch_version = command_output([sys.executable, "-c", "import torch, numpy, h5py; "
                                    "print(torch.__version__, numpy.__version__, h5py.__version__)"]).split()
    package = lambda name: command_output(["dpkg-query", "-W", "-f=${Version}", name])  # noqa: E731
    gxx = (command_output(["g++", "--version"]).splitlines() or [""])[0]
    torch = torch_version[0] if torch_version else "?"
    return {"g++": gxx, "OpenBLAS": f"libopenblas0-pthread {package('libopenblas0-pthread')}",
            "OpenBLAS kernels": openblas_kernels(),
            "torch": f"{torch} (python3-torch {package('python3-torch')})",
            "numpy": torch_version[1] if torch_version else "?",
            "h5py": torch_version[2] if torch_version else "?",
            "python": f"{platform.python_version()} ({sys.executable})"}


def stats(values):
    v = [x for x in values if x == x]  # drop NaN (failed reps)
    if not v:
        return float("nan"), float("nan"), float("nan")
    return min(v), statistics.median(v), max(v)


def fmt(x, digits=1):
    return "n/a" if x != x else f"{x:,.{digits}f}"


class Summary:
    """Medians and ratios of one case."""

    def __init__(self, case, results, sgemm_gflops):
        self.case = case
        self.runs = {impl: rs for (key, impl), rs in results.items() if key == case.key}
        self.sgemm = sgemm_gflops
        for rs in self.runs.values():  # the two sides must count the same FLOPs
            for r in rs:
                if "flops_per_step" in r and abs(r["flops_per_step"] / case.flops - 1) > 1e-5:
                    raise SystemExit(f"{case.key}: bench_models counts {r['flops_per_step']:.6g} FLOPs per step, "
                                     f"compare.py {case.flops:.6g}")

    def values(self, impl, field):
        return [r.get(field, float("nan")) for r in self.runs.get(impl, [])]

    def secs(self, impl):
        return self.values(impl, "sec_per_step")

    def rss(self, impl):
        return self.values(impl, "peak_rss_mb")

    def median_of(self, impl, field):
        return stats(self.values(impl, field))[1]

    def median_sec(self, impl):
        return stats(self.secs(impl))[1]

    def median_rss(self, impl):
        return stats(self.rss(impl))[1]

    def speedup(self, impl="rpb"):
        """PyTorch's time over impl's: rpb's tokens/s over PyTorch's."""
        return self.median_sec("torch") / self.median_sec(impl)

    def memory_fraction(self, impl="rpb"):
        return self.median_rss(impl) / self.median_rss("torch")

    def tokens_per_s(self, impl):
        m = MODELS.get(self.case.kind)
        tokens = m["batch"] * m["length"] if m else self.case.length
        return tokens / self.median_sec(impl)

    def gflops(self, impl):
        return self.case.flops / self.median_sec(impl) * 1e-9

    def errors(self):
        return [f"{impl} rep {i + 1}: {r['error']}" for impl, rs in self.runs.items()
                for i, r in enumerate(rs) if "error" in r]


def describe(case):
    if case.kind in MODELS:
        m = MODELS[case.kind]
        return f"{case.kind}: train, d {m['d_model']}, {m['layers']} layers, batch {m['batch']} x {m['length']}"
    if case.kind == "C" and not case.torch:
        return f"{case.key[:2]}: eval model A ({case.scheme}), 1 x {case.length}, rpb alone"
    if case.kind == "C":
        scheme = "" if case.scheme == "t5" else f" ({case.scheme})"
        return f"{case.key[0]}: eval model A{scheme}, 1 x {case.length}"
    return f"D: attention fwd+bwd, 8 x {case.length} x 64"


def main_table(summaries):
    head = ["case", "rpb tok/s", "rpb-ref tok/s", "torch tok/s", "rpb/torch speed", "rpb GFLOP/s",
            "rpb % sgemm", "torch GFLOP/s", "torch % sgemm", "rpb MB", "torch MB", "rpb/torch memory"]
    rows = []
    for s in summaries:
        has_ref, has_torch = "rpb-ref" in s.runs, s.case.torch
        torch = lambda text: text if has_torch else "-"  # noqa: E731
        rows.append([describe(s.case), fmt(s.tokens_per_s("rpb"), 0),
                     fmt(s.tokens_per_s("rpb-ref"), 0) if has_ref else "-", torch(fmt(s.tokens_per_s("torch"), 0)),
                     torch(f"{fmt(s.speedup(), 2)}x"), fmt(s.gflops("rpb")),
                     f"{fmt(100 * s.gflops('rpb') / s.sgemm, 0)}%",
                     torch(fmt(s.gflops("torch"))), torch(f"{fmt(100 * s.gflops('torch') / s.sgemm, 0)}%"),
                     fmt(s.median_rss("rpb"), 0), torch(fmt(s.median_rss("torch"), 0)),
                     torch(fmt(s.memory_fraction(), 3))])
    return head, rows


def time_table(summaries):
    head = ["case", "rpb ms", "rpb-ref ms", "torch ms", "torch/rpb", "torch/rpb-ref", "rpb MB", "rpb-ref MB",
            "torch MB", "rpb tensors MB"]
    rows = []
    for s in summaries:
        has_ref, has_torch = "rpb-ref" in s.runs, s.case.torch
        rows.append([s.case.key, fmt(1e3 * s.median_sec("rpb"), 2),
                     fmt(1e3 * s.median_sec("rpb-ref"), 2) if has_ref else "-",
                     fmt(1e3 * s.median_sec("torch"), 2) if has_torch else "-",
                     f"{fmt(s.speedup(), 2)}x" if has_torch else "-",
                     f"{fmt(s.speedup('rpb-ref'), 2)}x" if has_ref and has_torch else "-",
                     fmt(s.median_rss("rpb"), 0), fmt(s.median_rss("rpb-ref"), 0) if has_ref else "-",
                     fmt(s.median_rss("torch"), 0) if has_torch else "-", fmt(s.median_of("rpb", "tensor_peak_mb"))])
    return head, rows


def memory_growth(summaries):
    """{scheme: growth} for each scheme whose memory cases (FM4096, FM8192, FM16384; XM...) all ran. rpb's peak
    memory grows linearly when the MB it adds per 1k tokens from 8192 to 16384 is at most LINEAR_SLOPE_TOLERANCE
    times what it adds from 4096 to 8192: a linear peak a + bL gives a ratio of 1, a quadratic term cL^2 (an
    (L, L) buffer) a ratio of 2 on its own. Judged on the peak RSS (median over reps), which holds everything the
    process touched; the same slopes of rpb's live tensor storage are shown beside it. `linear` is None when a
    length has no successful run."""
    by_key = {s.case.key: s for s in summaries}
    out = {}
    for scheme, letter in SCHEME_KEYS.items():
        rows = [by_key.get(f"{letter}M{length}") for length in MEMORY_LENGTHS]
        if None in rows:
            continue
        rss = [s.median_rss("rpb") for s in rows]
        tensors = [s.median_of("rpb", "tensor_peak_mb") for s in rows]
        rss_slopes, tensor_slopes = slopes_per_1k(rss), slopes_per_1k(tensors)
        ratio = rss_slopes[1] / rss_slopes[0] if rss_slopes[0] > 0 else float("nan")
        out[scheme] = dict(rss=rss, tensors=tensors, rss_slopes=rss_slopes, tensor_slopes=tensor_slopes,
                           ratio=ratio, linear=None if ratio != ratio else ratio <= LINEAR_SLOPE_TOLERANCE)
    return out


def slopes_per_1k(peaks):
    """MB added per 1,000 tokens between consecutive MEMORY_LENGTHS."""
    return [(b - a) / ((lb - la) / 1000) for a, b, la, lb in zip(peaks, peaks[1:], MEMORY_LENGTHS, MEMORY_LENGTHS[1:])]


def memory_table(growth):
    lengths = MEMORY_LENGTHS
    head = (["scheme"] + [f"rpb MB at {n}" for n in lengths]
            + [f"MB per 1k tokens, {a} to {b}" for a, b in zip(lengths, lengths[1:])]
            + ["ratio of the slopes", "rpb tensors MB (" + ", ".join(str(n) for n in lengths) + ")",
               "tensors MB per 1k tokens", "linear"])
    rows = []
    for scheme, g in growth.items():
        rows.append([scheme] + [fmt(x, 0) for x in g["rss"]] + [fmt(x, 2) for x in g["rss_slopes"]]
                    + [fmt(g["ratio"], 2), ", ".join(fmt(x, 1) for x in g["tensors"]),
                       ", ".join(fmt(x, 2) for x in g["tensor_slopes"]), verdict(g["linear"])])
    return head, rows


def raw_table(summaries, sgemm_runs):
    head = ["case", "impl", "ms/step min", "median", "max", "peak RSS MB min", "median", "max", "every rep (ms/step)"]
    rows = []
    for s in summaries:
        for impl in ("rpb", "rpb-ref", "torch"):
            if impl not in s.runs:
                continue
            lo, mid, hi = stats(s.secs(impl))
            rlo, rmid, rhi = stats(s.rss(impl))
            every = ", ".join(fmt(1e3 * x, 2) for x in s.secs(impl))
            rows.append([s.case.key, impl, fmt(1e3 * lo, 2), fmt(1e3 * mid, 2), fmt(1e3 * hi, 2),
                         fmt(rlo, 0), fmt(rmid, 0), fmt(rhi, 0), every])
    for impl, label in (("rpb", "cblas_sgemm 2048^3 (GFLOP/s)"), ("torch", "torch.mm 2048^3 (GFLOP/s)")):
        g = [gflops_of(r, SGEMM_FLOPS) for r in sgemm_runs[impl]]
        lo, mid, hi = stats(g)
        rows.append([label, impl, fmt(lo), fmt(mid), fmt(hi), "", "", "", ", ".join(fmt(x) for x in g)])
    return head, rows


def targets(by_key, extrapolate=None, growth=None):
    """(target, measured, met) for issue 6's targets, then issue 27's (growth: memory_growth's result)."""
    out = []

    def speed(key, need, text):
        s = by_key.get(key)
        if s:
            x = s.speedup()
            out.append((text, f"{fmt(x, 2)}x PyTorch's tokens/s", "yes" if x >= need else "**no**"))

    speed("A", 2.0, "(A) at least 2x PyTorch's tokens/s")
    speed("B", 1.5, "(B) at least 1.5x PyTorch's tokens/s")
    for key, label in (("C16384", "(C) at 16384 tokens: at most 1/8 of PyTorch's peak memory, and faster"),
                       ("D4096", "(D) at L = 4096: faster than PyTorch, with at most 1/8 of its memory")):
        s = by_key.get(key)
        if s:
            x, f = s.speedup(), s.memory_fraction()
            met = x > 1 and f <= 1 / 8
            out.append((label, f"{fmt(x, 2)}x faster, {fmt(f, 3)} of the memory "
                               f"({fmt(s.median_rss('rpb'), 0)} MB against {fmt(s.median_rss('torch'), 0)} MB)",
                        "yes" if met else "**no**"))
    text = "configs/extrapolation_quick.toml end to end (`rpb extrapolate`), before and after"
    if extrapolate:
        seconds, others = extrapolate
        out.append((text, f"{fmt(seconds[True])} s with the fused attention, {fmt(seconds[False])} s with "
                          "`model.fused_attention = false` (the unfused attention this issue started from, at "
                          "today's code; one run each, not interleaved; other processes used "
                          f"{others[True]:.0%} and {others[False]:.0%} of the CPUs meanwhile)", "reported"))
    else:
        out.append((text, "not measured in this run (`compare.py --extrapolate` adds it, about 10 minutes)", "-"))
    return out + scheme_targets(by_key, growth or {})


def scheme_targets(by_key, growth):
    """(target, measured, met) for issue 27: FIRE and xPos against PyTorch at SCHEME_EVAL_LENGTH (reported), and
    rpb's peak memory growing linearly over MEMORY_LENGTHS (memory_growth's criterion)."""
    out = []
    for scheme, letter in SCHEME_KEYS.items():
        s = by_key.get(f"{letter}{SCHEME_EVAL_LENGTH}")
        if s:
            out.append((f"({letter}) {scheme} evaluating model A on {SCHEME_EVAL_LENGTH} tokens, against PyTorch",
                        f"{fmt(s.speedup(), 2)}x faster, {fmt(s.memory_fraction(), 3)} of the memory "
                        f"({fmt(s.median_rss('rpb'), 0)} MB against {fmt(s.median_rss('torch'), 0)} MB)", "reported"))
    lengths = ", ".join(str(n) for n in MEMORY_LENGTHS)
    for scheme, g in growth.items():
        out.append((f"({SCHEME_KEYS[scheme]}M) {scheme}: rpb's peak memory grows linearly over {lengths} tokens "
                    f"(MB per 1k tokens from {MEMORY_LENGTHS[1]} to {MEMORY_LENGTHS[2]} at most "
                    f"{LINEAR_SLOPE_TOLERANCE}x that from {MEMORY_LENGTHS[0]} to {MEMORY_LENGTHS[1]})",
                    f"{' / '.join(fmt(x, 0) for x in g['rss'])} MB: {fmt(g['rss_slopes'][0], 2)} then "
                    f"{fmt(g['rss_slopes'][1], 2)} MB per 1k tokens (x{fmt(g['ratio'], 2)})",
                    verdict(g["linear"])))
    return out


def verdict(met):
    """A target's 'met' column: yes, **no**, or n/a when it could not be judged (None)."""
    return "n/a" if met is None else "yes" if met else "**no**"


def torch_settings_text(summaries):
    """What the PyTorch runs of this report used, as they reported it."""
    used = next((r["settings"] for s in summaries for r in s.runs.get("torch", []) if "settings" in r), None)
    if used is None:
        return "No PyTorch run succeeded."
    bias = {"unfold": "from the table rows of the 2L-1 query-key offsets (`unfold` + `flip`)",
            "gather": "gathered through an (L, L) bucket matrix (HF T5's `compute_bias`)"}[used["bias"]]
    scores = {"mul": "`matmul(q, k^T).mul_(scale).add_(bias)`, in place",
              "qscale": "`matmul(q * scale, k^T).add_(bias)`, the scale on q",
              "baddbmm": "one `baddbmm(bias, q, k^T, alpha=scale)` over B x H (the bias copied per batch entry)"
              }[used["scores"]]
    allocator = {"glibc": "glibc's malloc with its defaults",
                 "glibc-keep": "glibc's malloc told to keep what it frees (`MALLOC_MMAP_THRESHOLD_=33554432`, "
                               "`MALLOC_TRIM_THRESHOLD_=1099511627776`; with glibc's defaults every multi-MB tensor "
                               "is a fresh mmap and its page faults)",
                 "tcmalloc": "tcmalloc (`LD_PRELOAD=libtcmalloc_minimal.so.4`)"}[used.get("allocator", "glibc")]
    return (
        "Eager mode (torch 1.13: no `scaled_dot_product_attention`, no `torch.compile`); Debian's torch calls the "
        f"system BLAS, OpenBLAS. Under {allocator}. "
        f"Before `import torch`: `OMP_WAIT_POLICY={used['OMP_WAIT_POLICY']}`, "
        f"`OMP_NUM_THREADS={used['threads']}`, `OPENBLAS_NUM_THREADS={used['OPENBLAS_NUM_THREADS']}`; then "
        f"`torch.set_num_threads({used['threads']})` and `torch.set_num_interop_threads({used['interop']})`. "
        f"`torch.optim.AdamW(lr=1e-3, weight_decay=0.01, foreach={used['foreach']})`, gradients set to None "
        "between steps; evaluation under `torch.inference_mode()`. The t5 bias is built once per forward and "
        f"shared by the layers, {bias}, its buckets cached per length (as rpb caches them), the causal -inf "
        f"folded into it; scores are {scores} (one (B, H, L, L) buffer before the softmax). "
        "Warm-up steps are not timed." + (SCHEMES_TORCH_TEXT if any(s.case.scheme != "t5" and s.case.torch
                                                                    for s in summaries) else "")
    )


SCHEMES_TORCH_TEXT = (
    " FIRE and xPos (F, X) are python/rpb_torch.py's `Fire` and `Xpos` with rpb's defaults and initialisation "
    "(FIRE: L0 = model A's train length 64, a 32-wide MLP, c 0.1, multiplier 1, one module shared by the layers; "
    "xPos: rope_base 10000, scale base 512): FIRE's bias is built once per forward as `Fire.bias` builds it, with "
    "the ReLU in place (one (L, L, 32) buffer), the causal -inf folded into it; xPos rotates queries and keys, and "
    "a cached (L, L) causal bias of 0 and -inf takes the t5 bias's place.")


def print_table(head, rows):
    """A table for the terminal, right-aligned columns."""
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    for row in [head] + rows:
        print("  ".join(str(c).rjust(w) for c, w in zip(row, widths)))


def markdown_table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_report(path, args, info, parity, summaries, sgemm_runs, tuned, extrapolate, started, finished):
    rpb_parity, torch_parity = parity
    sgemm = stats([gflops_of(r, SGEMM_FLOPS) for r in sgemm_runs["rpb"]])[1]
    by_key = {s.case.key: s for s in summaries}
    growth = memory_growth(summaries)
    v = info["versions"]
    out = [
        "# rpb against PyTorch: results",
        "",
        f"Written by `bench/run.sh` (bench/compare.py {' '.join(args.argv)}) on {started['date']}; "
        f"{args.reps} interleaved repetitions{' (--quick: a smoke run, not for quoting)' if args.quick else ''}. "
        "Only ratios from one run count: figures move from machine to machine.",
        "",
        "## Machine and versions",
        "",
        f"- machine: {info['machine']}",
        f"- quiet? load average at the start {started['load']}; other processes (not this bench) kept "
        f"{quiet_text(finished['others'])} of the CPUs busy during the comparison's repetitions "
        "(from /proc/stat less the bench's own CPU time; above a few %, the figures are disturbed)",
    ]
    out += [f"- {name}: {value}" for name, value in v.items()]
    out += [
        "- rpb: Release build (`-O3 -march=native`), OpenBLAS with its default threads (2), the fused attention "
        "kernel's pool with 2 threads",
        "",
        "## PyTorch settings",
        "",
        torch_settings_text(summaries),
    ]
    if tuned:
        out += ["", "How they were chosen (`--tune`): median ms per step of PyTorch alone under each setting, "
                "interleaved, in two stages: the allocator first, then the thread and attention settings under "
                "the chosen allocator; in each, the fastest by geometric mean replaces the stage's first row only "
                f"when it is at least {TUNE_MIN_GAIN:.0%} faster. `OMP_WAIT_POLICY=active` (OpenMP's spinning) is "
                "not retried: it was 2.4x slower on these probes when the bench was written; jemalloc "
                "(`LD_PRELOAD=libjemalloc.so.2`) neither: 2.8x slower than tcmalloc on model A.",
                "", markdown_table(*tuned)]
    else:
        out += ["", "This run skipped the search of `compare.py --tune` (glibc's malloc with or without its "
                "defaults, or tcmalloc; OpenBLAS 1 or 2 threads, "
                "torch.set_num_threads 1 or 2, interop 1 or torch's default, "
                "AdamW with and without foreach, two ways to build the bias, three to form the scores): these "
                "are torch_models.py's defaults."]
    out += [
        "",
        "## Parity: the same model on both sides",
        "",
        f"Model A ({torch_parity['parameter_count']:,} parameters on both sides, same names and shapes) from a "
        "fixed seed with every parameter spread away from its initialisation (so that a wrong bucket, mask, "
        "scale or GELU moves the loss), saved by rpb as an HDF5 checkpoint (`/params/<module path>`), loaded "
        "by `torch_models.py` with h5py; one batch of 32 x 64 tokens:",
        "",
        markdown_table(["", "rpb", "PyTorch", "abs. difference", "tolerance"], [
            ["loss, float32", f"{torch_parity['rpb_loss_f32']:.9f}", f"{torch_parity['loss_f32']:.9f}",
             f"{torch_parity['diff_f32']:.2e}", "1e-4"],
            ["loss, float64", f"{torch_parity['rpb_loss_f64']:.15f}", f"{torch_parity['loss_f64']:.15f}",
             f"{torch_parity['diff_f64']:.2e}", "1e-9"],
            ["loss, float32, rpb's reference attention", f"{rpb_parity['loss_f32_reference']:.9f}", "", "", ""],
            ["largest relative difference of a parameter's gradient norm", "", "",
             f"{torch_parity['grad_norm_max_rel_diff']:.2e}", "1e-3"],
            ["largest difference in the t5 table's gradient", "", "",
             f"{torch_parity['table_grad_max_abs_diff']:.2e}", "1e-5"],
        ]),
        "",
        "## Results (medians)",
        "",
        f"cblas_sgemm 2048^3 with 2 threads, measured in every rep: **{fmt(sgemm)} GFLOP/s** (median); "
        "'% sgemm' is a figure's GFLOP/s against it. tok/s for D is query positions per second.",
        "",
        markdown_table(*main_table(summaries)),
        "",
        "rpb's causal kernel skips the masked half of L x L that the count includes, so its '% sgemm' can pass "
        "100% where attention dominates (C, D).",
        "",
        "Time per step (a train step, one evaluation forward, one attention forward + backward); "
        "torch/rpb > 1 means rpb is faster. rpb-ref is rpb with `fused_attention = false` (the unfused "
        "reference path), run where its (H, L, L) scores stay under 1 GiB (with FIRE it also holds the (L, L, 32) "
        "hidden layer of the bias's MLP, as PyTorch does). MB is the peak RSS; 'rpb tensors MB' is the peak of "
        "rpb's live tensor storage (what the model and the tape hold):",
        "",
        markdown_table(*time_table(summaries)),
    ]
    if growth:
        out += memory_section(growth)
    out += [
        "",
        "## Targets (issues 6 and 27)",
        "",
        markdown_table(["target", "measured", "met"], targets(by_key, extrapolate, growth)),
        "",
        "## How FLOPs are counted",
        "",
        "Analytically, the same formula in bench_models.cpp and compare.py (checked equal every run): "
        "a matmul (M, K) @ (K, N) is 2MNK. A model's forward counts, per layer, qkv 2T d 3d, out 2T d d, "
        "fc1 and fc2 2T d d_ff each, and attention's q k^T and p v 2 B L L d each over the full L x L "
        "(causal masking included: the convention PyTorch users quote, although a causal kernel can skip "
        "half of it), plus the tied head 2T d vocab (T = batch x length). A train step is 3x the forward "
        "(backward = 2x forward); evaluation is 1x. Attention alone (D): 4 H L L dh forward, 3x with backward. "
        "Softmax, LayerNorm, GELU, embedding and AdamW are not counted.",
        "",
        "Peak memory is the process's peak resident set (`getrusage` ru_maxrss), one process per measurement; "
        "it includes each runtime's fixed part (the Python interpreter and torch's libraries are a few hundred "
        "MB; rpb's executable a few MB).",
        "",
        "## Every repetition",
        "",
        markdown_table(*raw_table(summaries, sgemm_runs)),
    ]
    errors = [e for s in summaries for e in s.errors()]
    if errors:
        out += ["", "## Failed measurements", ""] + [f"- {e}" for e in errors]
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def memory_section(growth):
    """results.md's lines on rpb's peak memory with FIRE and xPos over MEMORY_LENGTHS."""
    return [
        "",
        "## rpb's peak memory with FIRE and xPos (issue 27)",
        "",
        "rpb alone evaluating model A with FIRE and with xPos (cases FM and XM; PyTorch would need tens of GB at "
        "16384 tokens: its FIRE hidden layer is (L, L, 32) floats, 32 GiB). rpb evaluates both on the fused "
        "attention path, FIRE's bias computed tile by tile from its function. Peak RSS (median over reps), the MB "
        "it adds per 1,000 tokens between consecutive lengths, and the ratio of the second slope to the first: "
        f"the peak grows linearly when that ratio is at most {LINEAR_SLOPE_TOLERANCE} (a linear peak a + bL gives "
        "1, an (L, L) buffer alone 2). rpb's live tensor storage is shown beside it, with its own slopes:",
        "",
        markdown_table(*memory_table(growth)),
    ]


def quiet_text(shares):
    lo, mid, hi = stats(shares)
    return f"{mid:.1%} (median over reps; {lo:.1%} to {hi:.1%})"


def load_average():
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def select_cases(cases, keys):
    """The cases named in `keys` ("A,F4096"; all when empty), in make_cases's order; an unknown key fails."""
    if not keys:
        return cases
    wanted = set(keys.split(","))
    unknown = wanted - {c.key for c in cases}
    if unknown:
        raise SystemExit(f"--cases: no case {', '.join(sorted(unknown))} (the keys: {', '.join(c.key for c in cases)})")
    return [c for c in cases if c.key in wanted]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5, help="interleaved repetitions (>= 1; 5 or more to quote)")
    p.add_argument("--quick", action="store_true", help="a smoke run: 1 rep unless --reps, fewer steps")
    p.add_argument("--tune", action=argparse.BooleanOptionalAction, default=None,
                   help="first time PyTorch under a few thread and attention settings and keep the fastest "
                        "(default: on, off with --quick)")
    p.add_argument("--tune-reps", type=int, default=2, help="repetitions of the --tune search")
    p.add_argument("--build", default=os.environ.get("RPB_BUILD_DIR", "build"), help="rpb's build folder")
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results.md"), help="the report")
    p.add_argument("--cases", default="", help="comma-separated subset, e.g. A,D1024 (default: all)")
    p.add_argument("--extrapolate", action="store_true",
                   help="also time configs/extrapolation_quick.toml with the fused and the reference attention")
    argv = sys.argv[1:]
    args = p.parse_args(argv)
    args.argv = argv
    if args.quick and "--reps" not in argv:
        args.reps = 1
    if args.tune is None:
        args.tune = not args.quick
    if args.reps < 1:
        raise SystemExit("--reps must be at least 1")
    build = os.path.join(ROOT, args.build) if not os.path.isabs(args.build) else args.build
    if not os.path.exists(os.path.join(build, "bench_models")):
        raise SystemExit(f"{build}/bench_models is missing: build rpb with its benchmarks first (scripts/build.sh -DRPB_BUILD_BENCH=ON)")

    cases = select_cases(make_cases(args.quick), args.cases)
    started = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "load": load_average()}
    log = lambda line: print(line, flush=True)  # noqa: E731
    info = {"machine": machine_info(), "versions": versions()}
    log(f"# {info['machine']}; load average {started['load']}")
    with tempfile.TemporaryDirectory(prefix="rpb-parity-") as workdir:
        parity = check_parity(build, workdir, [])
        torch_extra, tuned = tune(1 if args.quick else args.tune_reps, log) if args.tune else ([], None)
        if torch_extra:  # the settings the timing uses must compute the same model too
            parity = check_parity(build, workdir, torch_extra)

    results, others = measure(cases, build, torch_extra, args.reps, log)
    sgemm_runs = {"rpb": results.pop(("sgemm", "rpb")), "torch": results.pop(("sgemm", "torch"))}
    sgemm = stats([gflops_of(r, SGEMM_FLOPS) for r in sgemm_runs["rpb"]])[1]
    summaries = [Summary(c, results, sgemm) for c in cases]

    print()
    print_table(*main_table(summaries))
    print(f"\ncblas_sgemm 2048^3: {fmt(sgemm)} GFLOP/s (median)")
    growth = memory_growth(summaries)
    if growth:
        a, b, c = MEMORY_LENGTHS
        print(f"\nrpb's peak memory with FIRE and xPos (linear: the MB per 1k tokens from {b} to {c} at most "
              f"{LINEAR_SLOPE_TOLERANCE}x that from {a} to {b}):")
        print_table(*memory_table(growth))
    extrapolate = time_extrapolate(build, log) if args.extrapolate else None
    for target, measured, met in targets({s.case.key: s for s in summaries}, extrapolate, growth):
        print(f"{ {'yes': 'MET', '**no**': 'MISSED'}.get(met, '-'):6s}  {target}: {measured}")
    finished = {"others": others}
    write_report(args.out, args, info, parity, summaries, sgemm_runs, tuned, extrapolate, started, finished)
    print(f"\nwrote {os.path.relpath(args.out, os.getcwd())}")


if __name__ == "__main__":
    main()
