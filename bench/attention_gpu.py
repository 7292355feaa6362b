#!/usr/bin/env python3
"""The peers of bench_attention_cuda on the same GPU, in float32: FlexAttention (compiled once per bias, the bias a
score_mod reading a learnable table) and scaled_dot_product_attention with the bias materialised; causal, 4 heads of
32, batch 1; forward and forward+backward at 1,024, 4,096 and 16,384 tokens (SDPA up to 4,096 and the one 16,384
point with --sdpa-16k: 35.6 s there); the T5 (learnable table over offsets), ALiBi and FIRE biases. One JSON line per
measurement, as bench_attention_cuda prints, so the two merge into one table.

Needs PyTorch 2.5 or later and a GPU (FlexAttention); elsewhere (Debian's PyTorch is 1.13) it prints one
"skipped" line and exits 0.
    python3 bench/attention_gpu.py [--quick] [--sdpa-16k]
"""
import json
import math
import sys
import time


def skip(why):
    print(json.dumps({"skipped": why}))
    sys.exit(0)


try:
    import torch
except ImportError:
    skip("no PyTorch")
if not torch.cuda.is_available():
    skip("no GPU")
try:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
except ImportError:
    skip("PyTorch %s has no FlexAttention (2.5 or later)" % torch.__version__)

H, DH = 4, 32
dev = "cuda"


def biases(T):
    """Each bias as (score_mod over a learnable table, the (H, T, T) materialised bias, its learnable tensors)."""
    off = torch.arange(T, device=dev)
    rel = off[None, :] - off[:, None]  # key - query
    out = {}
    t5 = (0.1 * torch.randn(H, 2 * T - 1, device=dev)).requires_grad_()
    out["t5"] = (lambda s, b, h, q, k: s + t5[h, k - q + T - 1],
                 lambda: t5[:, rel + T - 1], [t5])
    slopes = torch.tensor([2 ** (-8 * (h + 1) / H) for h in range(H)], device=dev)
    out["alibi"] = (lambda s, b, h, q, k: s - slopes[h] * (q - k).abs(),
                    lambda: -slopes[:, None, None] * rel.abs()[None], [])
    # FIRE (Li et al. 2023): f(psi(i - j) / psi(max(i, L))), psi(x) = log(|c x| + 1), an MLP 1 -> 32 -> H.
    c = torch.tensor(0.1, device=dev, requires_grad=True)
    w1, b1 = (torch.randn(32, device=dev) * 0.02).requires_grad_(), torch.zeros(32, device=dev, requires_grad=True)
    w2, b2 = (torch.randn(H, 32, device=dev) * 0.02).requires_grad_(), torch.zeros(H, device=dev, requires_grad=True)
    L = 512.0

    def fire_x(q, k):
        psi = lambda x: torch.log((c * x).abs() + 1)
        return psi((q - k).float()) / (psi(torch.clamp(q.float(), min=L)) + 1e-6)

    def fire_f(x, h):
        return (w2[h] * torch.relu(w1 * x[..., None] + b1)).sum(-1) + b2[h]

    out["fire"] = (lambda s, b, h, q, k: s + fire_f(fire_x(q, k), h),
                   lambda: torch.stack([fire_f(fire_x(off[:, None], off[None, :]), h) for h in range(H)]),
                   [c, w1, b1, w2, b2])
    return out


def measure(f, reps):
    f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        f()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return sorted(ts)[len(ts) // 2]


def main():
    quick = "--quick" in sys.argv
    lengths = [256] if quick else [1024, 4096, 16384]
    print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__}))
    for name in ["t5", "alibi", "fire"]:
        for T in lengths:
            score_mod, full, params = biases(T)[name]
            q, k, v = (torch.randn(1, H, T, DH, device=dev, requires_grad=True) for _ in range(3))
            mask = create_block_mask(lambda b, h, qi, ki: qi >= ki, 1, 1, T, T, device=dev)
            flex = torch.compile(flex_attention)
            causal = torch.ones(T, T, dtype=torch.bool, device=dev).tril()
            impls = [("flex", lambda: flex(q, k, v, score_mod=score_mod, block_mask=mask))]
            if T <= 4096 or "--sdpa-16k" in sys.argv:
                impls.append(("sdpa", lambda: torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, attn_mask=full().masked_fill(~causal, float("-inf"))[None])))
            for impl, fwd in impls:
                for bwd in (False, True):
                    def step():
                        o = fwd()
                        if bwd:
                            o.sum().backward()
                    torch.cuda.reset_peak_memory_stats()
                    base = torch.cuda.memory_allocated()
                    t = measure(step, 2 if quick else 5)
                    flops = 4.0 * T * T * DH * H / 2 * (3.5 if bwd else 1.0)
                    print(json.dumps({"impl": impl, "bias": name, "T": T, "pass": "fwd+bwd" if bwd else "fwd",
                                      "ms": round(1e3 * t, 3),
                                      "peak_mb": round((torch.cuda.max_memory_allocated() - base) / 2 ** 20, 1),
                                      "tflops": round(flops / t / 1e12, 2),
                                      "deterministic": None if impl == "sdpa" else not params}), flush=True)


if __name__ == "__main__":
    main()
