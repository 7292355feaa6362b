// rpb/core/cuda/plan.h: the host side of the CUDA ops: which device an op runs on, and the index plans
// (core/cuda/backend.h) its kernels read.
#pragma once

#include <initializer_list>
#include <vector>

#include "core/cuda/backend.h"
#include "core/tensor.h"

namespace rpb::cuda {

/// The device every defined tensor of an op's inputs is on; throws naming the op, both devices and the shapes when
/// they differ.
Device op_device(const char* op, std::initializer_list<const Tensor*> inputs);
/// op_device over a list.
Device op_device(const char* op, const std::vector<Tensor>& inputs);
/// True when an op with these inputs runs on the CUDA backend (checks that they share a device).
inline bool on_cuda(const char* op, std::initializer_list<const Tensor*> inputs) {
  return op_device(op, inputs) == Device::cuda;
}

/// Up to three operand shapes broadcast (numpy's rule, aligned at the last axis) into `out`.
Strides broadcast_plan(const Shape& out, std::initializer_list<Shape> operands);
/// A copy of the elements of extents `ext`: operand 0 read with strides `src`, operand 1 written with `dst`.
Strides copy_plan(const Shape& ext, const Shape& src, const Shape& dst);
/// A reduction of `shape` over the sorted `axes`.
ReducePlan reduce_plan(const Shape& shape, const std::vector<int>& axes);

}  // namespace rpb::cuda
