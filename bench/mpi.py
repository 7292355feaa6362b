"""rpb on MPI, measured on this machine, and the cost model for N machines; writes bench/mpi.md.

1. MPI_Allreduce of float32 gradients against their size, one buffer against 4 MiB buckets (bench_allreduce).
2. Training models A and B (bench/bench_models.cpp's sizes) as one process with 2 threads against 2 ranks with 1
   thread each (`mpirun -np 2 rpb train`): tokens/s, and the allreduce's share of the step (rank 0's train.log).
3. The quick sweep (configs/extrapolation_quick.toml, 16 runs) as one process and on 2 ranks: wall time.
4. On paper: per-step compute against ring-allreduce time for A, B and a 10x larger B on N machines like this
   one at 10 and 100 Gb/s, and the N past which adding machines stops paying.

    bench/mpi.sh [--quick]       (builds, then: /usr/bin/python3 bench/mpi.py --build build)
"""
import argparse
import csv
import datetime
import os
import re
import statistics
import subprocess
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# bench/bench_models.cpp: kModelA, kModelB (t5, 32 buckets, max_distance 128, vocab 64).
MODELS = {
    "A": dict(d_model=128, heads=4, layers=2, d_ff=512, length=64, batch=32),
    "B": dict(d_model=256, heads=8, layers=4, d_ff=1024, length=256, batch=16),
}

CONFIG = """
[run]
name = "{name}"
out_dir = "{out_dir}"
steps = {steps}
batch = {batch}
length = {length}
log_every = {log_every}
checkpoint_every = 0
eval_multipliers = [1]
eval_tokens = {length}

[model]
d_model = {d_model}
heads = {heads}
layers = {layers}
d_ff = {d_ff}

[position]
scheme = "t5"
num_buckets = 32
max_distance = 128

[task]
kind = "markov"
vocab = 64
order = 1

[optim]
lr = 1e-3
warmup_steps = 2
"""


def mpi_env(threads=None):
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    env.pop("RPB_NUM_THREADS", None)
    if threads:
        env["RPB_NUM_THREADS"] = str(threads)
    return env


def sh(cmd, env, timeout=3600):
    t0 = time.time()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r, time.time() - t0


def train(args, tmp, model, ranks, steps):
    m = MODELS[model]
    name = f"{model}-np{ranks}"
    path = os.path.join(tmp, name + ".toml")
    with open(path, "w") as f:
        f.write(CONFIG.format(name=name, out_dir=tmp, steps=steps, log_every=max(1, steps // 6), **m))
    rpb = os.path.join(args.build, "rpb")
    if ranks == 1:
        sh([rpb, "train", path], mpi_env(threads=2))
    else:
        sh([args.mpirun, "-np", str(ranks), rpb, "train", path], mpi_env())
    folder = os.path.join(tmp, name)
    with open(os.path.join(folder, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    tok_s = statistics.median(float(r["tokens_per_sec"]) for r in rows[1:])  # the first window warms up
    share = ms_comm = None
    with open(os.path.join(folder, "train.log")) as f:
        for line in f:
            mt = re.search(r"data-parallel: ([\d.]+) ms per step in MPI_Allreduce .*?, ([\d.]+)% of the ([\d.]+) ms", line)
            if mt:
                ms_comm, share = float(mt.group(1)), float(mt.group(2))
    params = None
    with open(os.path.join(folder, "train.log")) as f:
        mp = re.search(r", (\d+) parameters, steps", f.read())
        params = int(mp.group(1)) if mp else None
    return dict(tok_s=tok_s, share=share, ms_comm=ms_comm, params=params,
                step_ms=1e3 * m["batch"] * m["length"] / tok_s)


def sweep(args, tmp, ranks):
    rpb = os.path.join(args.build, "rpb")
    cfg = os.path.join(SOURCE, "configs", "extrapolation_quick.toml")
    out = ["--set", "run.out_dir=" + os.path.join(tmp, f"sweep-np{ranks}")]
    if args.quick:
        out += ["--set", "run.steps=100", "--set", "optim.warmup_steps=10"]
    if ranks == 1:
        r, secs = sh([rpb, "extrapolate", cfg, *out], mpi_env(threads=2))
    else:
        r, secs = sh([args.mpirun, "-np", str(ranks), rpb, "extrapolate", cfg, *out], mpi_env())
    with open(os.path.join(tmp, f"sweep-np{ranks}", "extrapolation_quick", "results.json")) as f:
        return secs, f.read()


def ring_allreduce_s(n_machines, nbytes, gbit_s, latency_s):
    """Ring allreduce: 2(N-1) steps, each sending 1/N of the buffer, each paying the link's latency."""
    if n_machines == 1:
        return 0.0
    return 2 * (n_machines - 1) * (nbytes / n_machines / (gbit_s * 1e9 / 8) + latency_s)


def cost_model(step_s, nbytes, gbit_s, latency_s=20e-6, n_max=4096):
    """Speedup of a fixed global batch over N machines: T1 / (T1 / N + allreduce). Returns (N at the best
    speedup, that speedup, the largest N still at >= 50% efficiency)."""
    best_n, best = 1, 1.0
    n50 = 1
    for n in range(1, n_max + 1):
        s = step_s / (step_s / n + ring_allreduce_s(n, nbytes, gbit_s, latency_s))
        if s > best:
            best_n, best = n, s
        if s / n >= 0.5:
            n50 = n
    return best_n, best, n50


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(SOURCE, "build"))
    p.add_argument("--mpirun", default="/usr/bin/mpirun")
    p.add_argument("--quick", action="store_true", help="fewer steps, a shortened sweep")
    p.add_argument("--out", default=os.path.join(SOURCE, "bench", "mpi.md"))
    args = p.parse_args()
    lines = [f"# rpb on MPI: results\n",
             f"Written by `bench/mpi.sh{' --quick' if args.quick else ''}` on "
             f"{datetime.datetime.now():%Y-%m-%d %H:%M}. Figures move from machine to machine; compare within a "
             f"table.\n"]
    with open("/proc/cpuinfo") as f:
        cpu = re.search(r"model name\s*:\s*(.*)", f.read())
    version = subprocess.run([os.path.join(args.build, "rpb"), "--version"], capture_output=True, text=True).stdout
    lines.append(f"- machine: {cpu.group(1) if cpu else '?'}, {os.cpu_count()} hardware threads\n- {version.strip()}\n")

    print("allreduce ...", flush=True)
    r, _ = sh([args.mpirun, "-np", "2", os.path.join(args.build, "bench_allreduce")] + (["--quick"] if args.quick else []),
              mpi_env())
    lines.append("## 1. MPI_Allreduce against buffer size (2 ranks, one machine)\n")
    lines.append(r.stdout.strip() + "\n")

    with tempfile.TemporaryDirectory(prefix="rpb-bench-mpi-") as tmp:
        print("training A and B ...", flush=True)
        steps = {"A": 30 if args.quick else 120, "B": 6 if args.quick else 24}
        res = {(m, n): train(args, tmp, m, n, steps[m]) for m in MODELS for n in (1, 2)}
        lines.append("## 2. Training: 1 process x 2 threads against 2 ranks x 1 thread\n")
        lines.append("Median tokens/s over the logging windows after the first; the allreduce share is rank 0's time "
                     "in the step's MPI_Allreduce calls (loss, stop flag, gradients), waiting for the other rank "
                     "included.\n")
        lines.append("| model | parameters | gradient MB | 1 x 2 threads tok/s | 2 ranks x 1 thread tok/s | 2 ranks / 1 "
                     "process | allreduce ms/step | allreduce share |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for m in MODELS:
            a, b = res[(m, 1)], res[(m, 2)]
            lines.append(f"| {m} | {a['params']:,} | {a['params'] * 4 / 1e6:.2f} | {a['tok_s']:,.0f} | {b['tok_s']:,.0f} | "
                         f"{b['tok_s'] / a['tok_s']:.2f}x | {b['ms_comm']:.3f} | {b['share']:.1f}% |")
        lines.append("")

        print("quick sweep ...", flush=True)
        s1, j1 = sweep(args, tmp, 1)
        s2, j2 = sweep(args, tmp, 2)
        lines.append("## 3. The quick sweep (configs/extrapolation_quick.toml" + (", 100 steps" if args.quick else "") +
                     ")\n")
        lines.append("| | wall time | results.json |")
        lines.append("|---|---|---|")
        lines.append(f"| 1 process x 2 threads | {s1:.1f} s | |")
        lines.append(f"| 2 ranks x 1 thread, whole runs per rank | {s2:.1f} s ({s1 / s2:.2f}x faster) | "
                     f"{'identical' if j1 == j2 else 'DIFFERENT'} |")
        lines.append("")

    lines.append("## 4. On paper: N machines like this one\n")
    lines.append("A fixed global batch split over N machines (data-parallel): each step computes T1 / N, T1 the "
                 "measured step of one machine (1 process, 2 threads, above), then a ring allreduce of the float32 "
                 "gradients, 2 (N - 1) transfers of S / N bytes each paying a 20 us latency: "
                 "t = 2 (N - 1) (S / (N BW) + 20 us). Speedup T1 / (T1 / N + t); it stops paying at the N of the "
                 "best speedup, and efficiency falls under 50% earlier. The 10x model is B with 10x the parameters "
                 "and 10x the compute per step (same tokens). Overlapping the allreduce with the backward pass "
                 "(not done) would hide up to the backward's time.\n")
    lines.append("| model | parameters | S (MB) | T1 (ms) | link | allreduce at N=8 (ms) | N at 50% efficiency | "
                 "best N | best speedup |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    a_step = res[("A", 1)]["step_ms"] / 1e3
    b_step = res[("B", 1)]["step_ms"] / 1e3
    models = [("A", res[("A", 1)]["params"], a_step), ("B", res[("B", 1)]["params"], b_step),
              ("10x B", 10 * res[("B", 1)]["params"], 10 * b_step)]
    for name, params, step in models:
        for gbit in (10, 100):
            nbytes = 4 * params
            n_best, speed, n50 = cost_model(step, nbytes, gbit)
            lines.append(f"| {name} | {params:,} | {nbytes / 1e6:.1f} | {1e3 * step:.1f} | {gbit} Gb/s | "
                         f"{1e3 * ring_allreduce_s(8, nbytes, gbit, 20e-6):.2f} | {n50} | {n_best} | {speed:.1f}x |")
    lines.append("")
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
