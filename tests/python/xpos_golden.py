"""Golden values of xPos for tests/test_xpos.cpp: microsoft/torchscale's XPOS, transcribed from
torchscale/component/xpos_relative_position.py at 776b070d68aef2aca447dc3e1adb64682fbec126 (its functions
unchanged), run on a fixed small input in float32. Prints the numbers the C++ test pastes.

    /usr/bin/python3 tests/python/xpos_golden.py
"""
import torch
import torch.nn as nn


def fixed_pos_embedding(x):
    seq_len, dim = x.shape
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim) / dim))
    sinusoid_inp = (
        torch.einsum("i , j -> i j", torch.arange(0, seq_len, dtype=torch.float), inv_freq).to(x)
    )
    return torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)


def rotate_every_two(x):
    x1 = x[:, :, ::2]
    x2 = x[:, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def duplicate_interleave(m):
    dim0 = m.shape[0]
    m = m.view(-1, 1)
    m = m.repeat(1, 2)
    m = m.view(dim0, -1)
    return m


def apply_rotary_pos_emb(x, sin, cos, scale=1):
    sin, cos = map(lambda t: duplicate_interleave(t * scale), (sin, cos))
    return (x * cos) + (rotate_every_two(x) * sin)


class XPOS(nn.Module):
    def __init__(self, head_dim, scale_base=512):
        super().__init__()
        self.head_dim = head_dim
        self.scale_base = scale_base
        self.register_buffer("scale", (torch.arange(0, head_dim, 2) + 0.4 * head_dim) / (1.4 * head_dim))

    def forward(self, x, offset=0, downscale=False):
        length = x.shape[1]
        min_pos = -(length + offset) // 2
        max_pos = length + offset + min_pos
        scale = self.scale ** torch.arange(min_pos, max_pos, 1).to(self.scale).div(self.scale_base)[:, None]
        sin, cos = fixed_pos_embedding(scale)
        if scale.shape[0] > length:
            scale = scale[-length:]
            sin = sin[-length:]
            cos = cos[-length:]
        if downscale:
            scale = 1 / scale
        x = apply_rotary_pos_emb(x, sin, cos, scale)
        return x


def fmt(t):
    return ", ".join("%.9g" % v for v in t.flatten().tolist())


if __name__ == "__main__":
    d, length = 6, 5
    # x[0, t, c] = 0.1 (t + 1) - 0.05 c + 0.3 (c % 2): every pair distinct, nothing symmetric
    x = torch.tensor([[[0.1 * (t + 1) - 0.05 * c + 0.3 * (c % 2) for c in range(d)] for t in range(length)]],
                     dtype=torch.float32)
    xpos = XPOS(d, scale_base=8)  # a small scale base: the scales differ visibly from 1
    print("zeta:", fmt(xpos.scale))
    print("queries, offset 0:", fmt(xpos(x, offset=0)))
    print("keys, offset 0:", fmt(xpos(x, offset=0, downscale=True)))
    print("queries, offset 4 (T = 2):", fmt(xpos(x[:, 3:5], offset=4)))
    print("keys, offset 4 (T = 2):", fmt(xpos(x[:, 3:5], offset=4, downscale=True)))
    big = XPOS(d)  # scale_base 512 at 16 x 512 positions: the centred scales stay finite
    far = x[:, :1]
    print("queries, offset 8191, scale_base 512:", fmt(big(far, offset=8191)))
    print("keys, offset 8191, scale_base 512:", fmt(big(far, offset=8191, downscale=True)))
