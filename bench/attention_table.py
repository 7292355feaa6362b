#!/usr/bin/env python3
"""The GPU attention benchmark's table: bench_attention_cuda's and bench/attention_gpu.py's JSON lines (one run on one
GPU) merged into one markdown table per pass, rpb beside FlexAttention and SDPA, with rpb's time as a ratio of each.
    python3 bench/attention_table.py rpb.jsonl peers.jsonl
"""
import json
import sys


def main(paths):
    rows, devices = {}, []
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                r = json.loads(line)
                if "device" in r:
                    devices.append(r["device"] + (" (PyTorch %s)" % r["torch"] if "torch" in r else ""))
                if "impl" in r:
                    rows[(r["pass"], r["bias"], r["T"], r["impl"])] = r
    if not rows:
        sys.exit("no measurements in " + ", ".join(paths))
    print("Measured on: " + "; ".join(devices) + "\n")
    impls = ["rpb", "flex", "sdpa"]
    for p in ["fwd", "fwd+bwd"]:
        print("| %s | tokens | %s | rpb / flex | rpb / sdpa |" % (
            p, " | ".join("%s ms, MB, TFLOP/s" % i for i in impls)))
        print("|---|---|" + "---|" * (len(impls) + 2))
        keys = sorted({(b, t) for (pp, b, t, i) in rows if pp == p}, key=lambda k: (k[0], k[1]))
        for b, t in keys:
            cells, ms = [], {}
            for i in impls:
                r = rows.get((p, b, t, i))
                if r is None:
                    cells.append("-")
                    continue
                ms[i] = r["ms"]
                det = "" if r.get("deterministic") in (True, None) else " (atomics)"
                cells.append("%.2f, %.0f, %.1f%s" % (r["ms"], r["peak_mb"], r["tflops"], det))
            ratio = lambda o: "%.2f" % (ms["rpb"] / ms[o]) if "rpb" in ms and o in ms else "-"
            print("| %s | %d | %s | %s | %s |" % (b, t, " | ".join(cells), ratio("flex"), ratio("sdpa")))
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
