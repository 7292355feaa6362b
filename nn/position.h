// rpb/nn/position.h: the position schemes (nn/position/scheme.h: the interface and the registry) and the
// reference functions they are built on, exposed for tests and `rpb bias`.
//
// The schemes and their conventions, as their references compute them (each is also written in its file,
// nn/position/<name>.cpp):
//   t5           HF transformers `_relative_position_bucket`: relative position = key - query; bidirectional:
//                half the buckets per sign, key after query in the upper half; causal: every future key in
//                bucket 0; exact below max_exact = num_buckets/4 (bidirectional) or /2 (causal); log spacing to
//                max_distance in float32; clamp to the last bucket. Learned (num_buckets, heads) table, init
//                normal std 0.02.
//   shaw         tensor2tensor `_generate_relative_positions_matrix`: key - query clipped to [-K, K], shifted by
//                K; a (2K+1, heads) scalar table (seed 002).
//   log_decay    B[i,j] = -lambda * log(1 + |i - j|) (seed 001); lambda fixed, or learnable per head
//                (KERPLE-log with a = 1).
//   alibi        B[h,i,j] = -m_h * |i - j| with the paper's get_slopes (interleaved for head counts that are not
//                a power of two); not scaled by 1/sqrt(d).
//   sinusoidal   Vaswani et al.: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...), added to the token
//                embeddings.
//   learned      a (max_positions, d_model) table added to the token embeddings; positions past the table are
//                an error.
//   rope         rotary embeddings on Q and K (HF/GPT-NeoX rotate_half convention, inv_freq = base^(-2i/d)).
//   xpos         torchscale's XPOS (Sun et al. 2022): rotary on interleaved pairs (rotate_every_two) with the decay
//                zeta_k = (2k + 0.4d)/(1.4d) to the power +s/B on queries and -s/B on keys, s the position centred
//                over the sequence; a KV cache keeps keys unrotated. position.blockwise: blockwise causal attention
//                in evaluation (blocks of the train length).
//   swin         Swin V1 window attention's table (nn/window_attention.h): query - key per axis.
//   swin_v2      Swin V2's continuous bias MLP over log-spaced window coordinates.
//   learned2d    a learned (max_side, max_side, d_model) table, one vector per grid cell.
//   sinusoidal2d half the channels sinusoidal in the row, half in the column.
//   alibi2d      -slope_h * the Euclidean distance between the cells.
//   clipped2d    a learned ((2K+1)^2, heads) table read at the clipped 2-D offset, query - key per axis.
//   none         no position information.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/position/scheme.h"

namespace rpb::nn {

/// HF transformers `_relative_position_bucket` for one relative position (key - query).
int64_t t5_bucket(int64_t relative_position, bool bidirectional, int64_t num_buckets, int64_t max_distance);
/// (q_len, k_len) i64 buckets of key - query for queries at q_offset...
Tensor t5_buckets(int64_t q_len, int64_t k_len, int64_t q_offset, bool bidirectional, int64_t num_buckets,
                  int64_t max_distance);
/// (q_len, k_len) i64: clip(key - query, -K, K) + K.
Tensor shaw_index(int64_t q_len, int64_t k_len, int64_t q_offset, int64_t max_relative_position);
/// The ALiBi paper's get_slopes(heads).
std::vector<double> alibi_slopes(int64_t heads);
/// (length, d) sinusoidal embeddings of positions offset .. offset + length - 1.
Tensor sinusoidal_table(int64_t length, int64_t d, int64_t offset = 0, DType dtype = DType::f32);
/// clipped2d's (N, N) i64 row index for an H x W grid (N = H * W): (clip(dy, -K, K) + K) * (2K+1) +
/// clip(dx, -K, K) + K with dy, dx = query - key per axis (Swin's sign).
Tensor clipped_relative_index_2d(int64_t H, int64_t W, int64_t max_relative_position);

}  // namespace rpb::nn
