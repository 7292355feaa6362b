"""Golden values of KERPLE's power variant for tests/test_kerple.cpp: the forward of ParallelKerplePower
(chijames/KERPLE @ 73f1ee2d24722cdbe277d473899321218f5cbd00, megatron/mpu/layers.py, pos_emb "kerple_power_ap_":
learned bias_p and bias_a, no weight kernel), transcribed without its model-parallel split and cache, run in
float32 on fixed parameters, two of them outside the clamp's range. Prints the numbers the C++ test pastes.

    /usr/bin/python3 tests/python/kerple_golden.py
"""
import torch

EPS = 1e-2  # ParallelKerplePower's self.eps


def kerple_power_forward(x, bias_p, bias_a):
    """ParallelKerplePower.forward for bias_p, bias_a learned (wei_p = wei_a = None): clamps the parameters in
    place, then x + (-bias_a * diff^bias_p) with diff = tril(i - j)."""
    seq_len_k = x.shape[-1]
    diff = torch.tril(torch.arange(seq_len_k).view(seq_len_k, 1).repeat(1, seq_len_k)
                      + torch.arange(0, -seq_len_k, -1))
    diff = diff.to(x.dtype)
    bias_p.data = bias_p.data.clamp(min=EPS, max=2)
    bias = diff.pow(bias_p)
    bias_a.data = bias_a.data.clamp(min=EPS)
    bias = -bias * bias_a
    return x + bias


def main():
    heads, length = 3, 6
    # (H, 1, 1) as the reference holds them; p = 2.5 and a = -0.2 are clamped to 2 and 0.01.
    bias_p = torch.nn.Parameter(torch.tensor([0.7, 1.3, 2.5], dtype=torch.float32)[:, None, None])
    bias_a = torch.nn.Parameter(torch.tensor([0.5, -0.2, 1.25], dtype=torch.float32)[:, None, None])
    out = kerple_power_forward(torch.zeros(1, heads, length, length), bias_p, bias_a)
    print("clamped p:", [f"{v:.9g}" for v in bias_p.data.flatten().tolist()])
    print("clamped a:", [f"{v:.9g}" for v in bias_a.data.flatten().tolist()])
    print("bias, last query row of each head (keys 0 .. 5):")
    for h in range(heads):
        print("  {" + ", ".join(f"{v:.9g}" for v in out[0, h, length - 1].tolist()) + "},")
    # The gradient of sum(bias * w) for a fixed w, in float64 from the same parameters (clamped first, as above).
    w = torch.arange(heads * length * length, dtype=torch.float64).reshape(heads, length, length).sin()
    p64 = torch.tensor([0.7, 1.3, 2.5], dtype=torch.float64)[:, None, None].requires_grad_()
    a64 = torch.tensor([0.5, -0.2, 1.25], dtype=torch.float64)[:, None, None].requires_grad_()
    (kerple_power_forward(torch.zeros(1, heads, length, length, dtype=torch.float64), p64, a64)[0] * w).sum().backward()
    print("d/dp:", [f"{v:.12g}" for v in p64.grad.flatten().tolist()])
    print("d/da:", [f"{v:.12g}" for v in a64.grad.flatten().tolist()])


if __name__ == "__main__":
    main()
