// rpb/core/autograd.h: the tape and reverse-mode differentiation.
//
// Every differentiable op that runs with grad mode on and at least one input
// that requires grad appends one Node to the thread's tape, in execution order.
// backward() walks the tape in reverse (a loop, no recursion over the graph),
// accumulating gradients into GradSlots, then clears the tape.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/registry.h"
#include "core/tensor.h"

namespace rpb {

/// Where a tensor's gradient accumulates. Shared by the tensor and the tape's
/// nodes, so the tape never keeps an op's output data alive.
struct GradSlot {
  Shape shape;  // the tensor's shape: every gradient must have it
  DType dtype = DType::f32;
  bool leaf = false;  // leaves keep their gradient across backward calls
  /// False while `grad` may alias a tensor handed out by a backward rule; the first accumulation
  /// then copies it before adding in place, unless no other handle or view shares its storage.
  bool owned = false;
  Tensor grad;
};

/// The gradients a backward rule produces, one per input of its op.
class InputGrads {
 public:
  explicit InputGrads(std::vector<bool> needed) : needed_(std::move(needed)), grads_(needed_.size()) {}
  /// True when input i requires grad; rules skip work for the others.
  bool needed(int i) const { return needed_[i]; }
  void set(int i, Tensor g) { grads_[i] = std::move(g); }
  int size() const { return static_cast<int>(grads_.size()); }
  const Tensor& operator[](int i) const { return grads_[i]; }

 private:
  std::vector<bool> needed_;
  std::vector<Tensor> grads_;
};

/// A backward rule: receives the output's gradient and sets each needed input's.
/// It captures exactly what it reads (saved inputs, outputs, or statistics).
using BackwardFn = std::function<void(const Tensor& grad_out, InputGrads& grads)>;

/// One tape entry. The output slot is held weakly: it stays alive while the output
/// tensor or a later node that consumed it does; once neither does, no backward can
/// ever reach the node, and the tape drops it.
struct Node {
  OpKind op;
  std::weak_ptr<GradSlot> out;
  std::vector<std::shared_ptr<GradSlot>> ins;  // null where the input does not require grad
  BackwardFn backward;                          // empty: the op has no backward rule
};

/// The nodes recorded on this thread since the last backward(). Graphs that were built
/// and then abandoned (a forward pass whose outputs are gone, without backward) are
/// pruned as the tape grows, so forgetting a NoGradGuard costs time, not memory.
class Tape {
 public:
  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<Node>& nodes() { return nodes_; }
  std::size_t size() const { return nodes_.size(); }
  void clear() {
    nodes_.clear();
    next_prune_ = kMinPrune;
  }
  void push(Node n);
  /// Drops the nodes no future backward can reach (their outputs are gone); returns how many.
  std::size_t prune();

 private:
  static constexpr std::size_t kMinPrune = 4096;
  std::vector<Node> nodes_;
  std::size_t next_prune_ = kMinPrune;
};

/// The current thread's tape.
Tape& tape();

/// True unless a NoGradGuard is alive on this thread.
bool grad_enabled();

/// While alive, ops record nothing and allocate no gradients (evaluation).
///
/// @code
/// rpb::Tensor w = rpb::Tensor::ones({3}).requires_grad_();
/// const std::size_t recorded = rpb::tape().size();
/// {
///   rpb::NoGradGuard no_grad;
///   rpb::Tensor y = w * 2.0;
///   CHECK(!y.requires_grad());
///   CHECK(rpb::tape().size() == recorded);
/// }
/// @endcode
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/// Reverse-mode pass from `root`. `grad` is d(loss)/d(root); it may be omitted
/// when root has one element (it is then 1). Leaf gradients accumulate over
/// calls; the whole tape is consumed and cleared, whether or not it succeeds.
void backward(const Tensor& root, const Tensor& grad = Tensor());

/// Multiplies t's accumulated gradient by `factor` (as `T(factor)` in the gradient's dtype, float32 or
/// float64), in place: the gradient-clipping step. Gradients change only here and in backward(), under
/// one copy-on-write rule: a gradient the slot does not own, which may be the very tensor another
/// input's gradient holds (an add hands one tensor to both its inputs), is replaced by a scaled copy, so
/// the other holder keeps its values. Does nothing when t has no gradient. Not recorded on the tape.
///
/// @code
/// rpb::Tensor a = rpb::Tensor::ones({2}).requires_grad_();
/// rpb::Tensor b = rpb::Tensor::ones({2}).requires_grad_();
/// rpb::backward(rpb::sum(a + b));  // a and b receive one shared gradient of ones
/// rpb::scale_grad_(a, 0.5);
/// CHECK(a.grad().to_vector() == std::vector<double>{0.5, 0.5});
/// CHECK(b.grad().to_vector() == std::vector<double>{1, 1});
/// @endcode
void scale_grad_(const Tensor& t, double factor);

namespace autograd {

/// True when an op with these inputs must be recorded.
bool should_record(std::initializer_list<const Tensor*> inputs);

/// Records `op` producing `out` from `inputs` with rule `fn` (may be empty for
/// an op with no backward: differentiating through it then throws).
/// Call only when should_record(inputs) is true.
void record(OpKind op, Tensor& out, std::initializer_list<const Tensor*> inputs, BackwardFn fn);
void record(OpKind op, Tensor& out, const std::vector<Tensor>& inputs, BackwardFn fn);

}  // namespace autograd
}  // namespace rpb
