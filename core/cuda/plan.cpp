#include "core/cuda/plan.h"

#include <algorithm>

#include "core/error.h"

namespace rpb::cuda {

namespace {

Device check_pair(const char* op, const Tensor*& first, const Tensor* t) {
  if (!t || !t->defined()) return first ? first->device() : Device::cpu;
  if (!first) {
    first = t;
    return t->device();
  }
  RPB_CHECK(first->device() == t->device(), op, "inputs on different devices: ", device_name(first->device()), " ",
            first->shape(), " and ", device_name(t->device()), " ", t->shape(), "; move one with to(Device)");
  return t->device();
}

}  // namespace

Device op_device(const char* op, std::initializer_list<const Tensor*> inputs) {
  const Tensor* first = nullptr;
  Device d = Device::cpu;
  for (const Tensor* t : inputs) d = check_pair(op, first, t);
  return first ? first->device() : d;
}

Device op_device(const char* op, const std::vector<Tensor>& inputs) {
  const Tensor* first = nullptr;
  for (const Tensor& t : inputs) check_pair(op, first, &t);
  return first ? first->device() : Device::cpu;
}

Strides broadcast_plan(const Shape& out, std::initializer_list<Shape> operands) {
  Strides p;
  p.nd = out.size();
  for (int d = 0; d < p.nd; ++d) p.ext[d] = out[d];
  RPB_CHECK(operands.size() <= 3, "broadcast", "a plan holds at most 3 operands, got ", operands.size());
  const Shape* in = operands.begin();
  for (std::size_t k = 0; k < operands.size() && k < 3; ++k) {
    const Shape st = broadcast_strides(in[k], out);
    for (int d = 0; d < p.nd; ++d) p.st[k][d] = st[d];
  }
  return p;
}

Strides copy_plan(const Shape& ext, const Shape& src, const Shape& dst) {
  Strides p;
  p.nd = ext.size();
  for (int d = 0; d < p.nd; ++d) {
    p.ext[d] = ext[d];
    p.st[0][d] = src[d];
    p.st[1][d] = dst[d];
  }
  return p;
}

ReducePlan reduce_plan(const Shape& shape, const std::vector<int>& axes) {
  ReducePlan p;
  const Shape st = contiguous_strides(shape);
  for (int d = 0; d < shape.size(); ++d) {
    if (std::binary_search(axes.begin(), axes.end(), d)) {
      p.rext[p.nr] = shape[d];
      p.rst[p.nr++] = st[d];
      p.r *= shape[d];
    } else {
      p.kext[p.nk] = shape[d];
      p.kst[p.nk++] = st[d];
      p.outputs *= shape[d];
    }
  }
  return p;
}

}  // namespace rpb::cuda
