"""Golden values for rpb's RoPE scalings (tests/test_rope_scaling.cpp), transcribed from Hugging Face transformers.

huggingface/transformers src/transformers/modeling_rope_utils.py @ ef46806472a64b0013ed413781e3afed82bfa047:
_compute_default_rope_parameters, _compute_linear_scaling_rope_parameters, _compute_dynamic_ntk_parameters and
_compute_yarn_parameters, with the config reduced to its numbers (dim = head_dim, base = rope_theta,
max_position_embeddings = L0). The dynamic update (src/transformers/models/llama/modeling_llama.py @ 5dd4a63,
LlamaRotaryEmbedding._dynamic_frequency_update; later the dynamic_rope_update decorator) passes
seq_len = torch.max(position_ids) + 1, an int64 tensor, so the new base is computed in float32 tensor arithmetic:
dynamic() below takes it the same way. `ntk` (static NTK-aware, base * factor^(d/(d-2)), bloc97's r/LocalLLaMA post)
has no HF function: it is the default frequencies at that base. Run: python3 tests/python/hf_rope_scaling_golden.py
"""
import math

import torch


def default(dim, base):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    return inv_freq, 1.0


def linear(dim, base, factor):
    inv_freq, attention_factor = default(dim, base)
    inv_freq /= factor
    return inv_freq, attention_factor


def dynamic(dim, base, factor, max_position_embeddings, seq_len):
    seq_len = seq_len if seq_len is not None and seq_len > max_position_embeddings else max_position_embeddings
    base = base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2))
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    return inv_freq, 1.0


def ntk(dim, base, factor):
    return default(dim, base * factor ** (dim / (dim - 2)))


def yarn(dim, base, factor, max_position_embeddings, attention_factor=None, beta_fast=None, beta_slow=None):
    if attention_factor is None:
        attention_factor = 0.1 * math.log(factor) + 1.0
    beta_fast = beta_fast or 32
    beta_slow = beta_slow or 1

    def find_correction_dim(num_rotations, dim, base, max_position_embeddings):
        return (dim * math.log(max_position_embeddings / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    def find_correction_range(low_rot, high_rot, dim, base, max_position_embeddings):
        low = math.floor(find_correction_dim(low_rot, dim, base, max_position_embeddings))
        high = math.ceil(find_correction_dim(high_rot, dim, base, max_position_embeddings))
        return max(low, 0), min(high, dim - 1)

    def linear_ramp_factor(min, max, dim):
        if min == max:
            max += 0.001
        linear_func = (torch.arange(dim, dtype=torch.float32) - min) / (max - min)
        return torch.clamp(linear_func, 0, 1)

    pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)
    low, high = find_correction_range(beta_fast, beta_slow, dim, base, max_position_embeddings)
    inv_freq_extrapolation_factor = 1 - linear_ramp_factor(low, high, dim // 2).float()
    inv_freq = (inv_freq_interpolation * (1 - inv_freq_extrapolation_factor)
                + inv_freq_extrapolation * inv_freq_extrapolation_factor)
    return inv_freq, attention_factor


def show(name, result):
    inv_freq, attention_factor = result
    values = ", ".join(f"{v:.9e}f" for v in inv_freq.tolist())
    print(f"// {name}: attention factor {attention_factor!r}\n{{{values}}}")


if __name__ == "__main__":
    dim, base, L0 = 16, 10000.0, 64
    show("none", default(dim, base))
    for factor in (4.0, 3.0):
        show(f"linear factor {factor}", linear(dim, base, factor))
        show(f"ntk factor {factor}", ntk(dim, base, factor))
        for seq_len in (64, 100, 256):
            show(f"dynamic factor {factor} seq_len {seq_len}", dynamic(dim, base, factor, L0, torch.tensor(seq_len)))
        show(f"yarn factor {factor}", yarn(dim, base, factor, L0))
    show("yarn factor 4 beta_fast 8 beta_slow 2 attention_factor 1.5", yarn(dim, base, 4.0, L0, 1.5, 8, 2))
    show("yarn factor 16 head_dim 32 L0 256", yarn(32, base, 16.0, 256))
    # cos and sin at position 100 under yarn (factor 4): HF multiplies both by the attention factor in float32.
    inv_freq, af = yarn(dim, base, 4.0, L0)
    freqs = inv_freq[:, None].float() @ torch.tensor([[100.0]])
    emb = torch.cat((freqs.T, freqs.T), dim=-1)
    print("// yarn factor 4 cos at position 100:", ", ".join(f"{v:.9e}f" for v in (emb.cos() * af)[0].tolist()))
    print("// yarn factor 4 sin at position 100:", ", ".join(f"{v:.9e}f" for v in (emb.sin() * af)[0].tolist()))
