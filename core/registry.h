// rpb/core/registry.h: the one table of primitive ops.
//
// Every op that can appear on the tape has an OpKind and one row in kOps.
// The gradient-check test iterates this table: an op without a gradcheck case
// fails it. Composites (attention, GELU-based MLPs, position schemes) live in
// nn/ and are built from these primitives.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace rpb {

enum class OpKind : uint16_t {
  // elementwise.cpp: broadcasting binary ops and scalar ops
  Add, Sub, Mul, Div, Neg, AddScalar, MulScalar, PowScalar,
  // unary.cpp
  Exp, Log, Sqrt, Tanh, Sigmoid, Relu, GeluTanh, GeluErf,
  // matmul.cpp
  Matmul, Linear,
  // reduce.cpp
  Sum, Mean, Max,
  // layout.cpp
  Reshape, Permute, Concat, Slice,
  // index.cpp
  IndexSelect, Gather,
  // select.cpp
  MaskedFill, Where,
  // softmax.cpp
  Softmax, LogSoftmax,
  // norm.cpp
  LayerNorm,
  // dropout.cpp
  Dropout,
  // loss.cpp
  CrossEntropy,
  // attention.cpp
  FusedAttention,
  Count
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  std::string_view family;  // the core/ops/<family>.cpp that holds forward and backward
};

inline constexpr std::array<OpInfo, static_cast<std::size_t>(OpKind::Count)> kOps{{
    {OpKind::Add, "add", "elementwise"},
    {OpKind::Sub, "sub", "elementwise"},
    {OpKind::Mul, "mul", "elementwise"},
    {OpKind::Div, "div", "elementwise"},
    {OpKind::Neg, "neg", "elementwise"},
    {OpKind::AddScalar, "add_scalar", "elementwise"},
    {OpKind::MulScalar, "mul_scalar", "elementwise"},
    {OpKind::PowScalar, "pow_scalar", "elementwise"},
    {OpKind::Exp, "exp", "unary"},
    {OpKind::Log, "log", "unary"},
    {OpKind::Sqrt, "sqrt", "unary"},
    {OpKind::Tanh, "tanh", "unary"},
    {OpKind::Sigmoid, "sigmoid", "unary"},
    {OpKind::Relu, "relu", "unary"},
    {OpKind::GeluTanh, "gelu_tanh", "unary"},
    {OpKind::GeluErf, "gelu_erf", "unary"},
    {OpKind::Matmul, "matmul", "matmul"},
    {OpKind::Linear, "linear", "matmul"},
    {OpKind::Sum, "sum", "reduce"},
    {OpKind::Mean, "mean", "reduce"},
    {OpKind::Max, "max", "reduce"},
    {OpKind::Reshape, "reshape", "layout"},
    {OpKind::Permute, "permute", "layout"},
    {OpKind::Concat, "concat", "layout"},
    {OpKind::Slice, "slice", "layout"},
    {OpKind::IndexSelect, "index_select", "index"},
    {OpKind::Gather, "gather", "index"},
    {OpKind::MaskedFill, "masked_fill", "select"},
    {OpKind::Where, "where", "select"},
    {OpKind::Softmax, "softmax", "softmax"},
    {OpKind::LogSoftmax, "log_softmax", "softmax"},
    {OpKind::LayerNorm, "layer_norm", "norm"},
    {OpKind::Dropout, "dropout", "dropout"},
    {OpKind::CrossEntropy, "cross_entropy", "loss"},
    {OpKind::FusedAttention, "fused_attention", "attention"},
}};

constexpr bool registry_is_ordered() {
  for (std::size_t i = 0; i < kOps.size(); ++i)
    if (static_cast<std::size_t>(kOps[i].kind) != i) return false;
  return true;
}
static_assert(registry_is_ordered(), "kOps rows must follow the OpKind order");

constexpr const OpInfo& op_info(OpKind k) { return kOps[static_cast<std::size_t>(k)]; }
/// The op's name as errors and the tape print it.
constexpr const char* op_name(OpKind k) { return op_info(k).name.data(); }

}  // namespace rpb
