#include "core/autograd.h"

#include <algorithm>

#include "core/cuda/backend.h"
#include "core/ops/kernels.h"

namespace rpb {

namespace {
thread_local Tape g_tape;
thread_local bool g_grad_enabled = true;

// Makes the slot's (defined) gradient safe to write in place, the one copy-on-write rule of every
// gradient mutation. A gradient no other handle or view can see (a rule's fresh output, held only here)
// is kept; one that may be shared (an add hands one tensor to both its inputs) is copied first.
Tensor& owned_grad(GradSlot& slot) {
  const TensorImpl& held = slot.grad.impl();
  if (!slot.owned && !(slot.grad.impl_ptr().use_count() == 1 && held.storage.use_count() == 1)) {
    slot.grad = slot.grad.clone();
  }
  slot.owned = true;
  return slot.grad;
}

// Adds `g` into `slot`, copying first when the stored gradient may be shared.
void accumulate(GradSlot& slot, Tensor g, const char* op, int input) {
  RPB_CHECK(g.shape() == slot.shape, op, "backward produced a gradient of shape ", g.shape(),
            " for input ", input, " of shape ", slot.shape);
  RPB_CHECK(g.dtype() == slot.dtype, op, "backward produced a ", dtype_name(g.dtype()),
            " gradient for input ", input, " of dtype ", dtype_name(slot.dtype));
  if (!slot.grad.defined()) {
    slot.grad = std::move(g);
    slot.owned = false;
    return;
  }
  add_inplace(owned_grad(slot), g);
}
}  // namespace

void scale_grad_(const Tensor& t, double factor) {
  if (!t.requires_grad() || !t.impl().slot->grad.defined()) return;
  Tensor& grad = owned_grad(*t.impl().slot);
  if (grad.is_cuda()) {
    cuda::backend("scale_grad_").unary(cuda::UnaryFn::mul_scalar, factor, grad.dtype(), grad.raw_data(),
                                       grad.raw_mutable_data(), grad.numel());
    return;
  }
  dispatch_float(grad.dtype(), "scale_grad_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    amap<T>(grad) *= T(factor);
  });
}

void Tape::push(Node n) {
  nodes_.push_back(std::move(n));
  if (nodes_.size() >= next_prune_) {
    prune();
    next_prune_ = std::max(kMinPrune, 2 * nodes_.size());  // amortized O(1) per push
  }
}

std::size_t Tape::prune() {
  // Walking backwards, a dead node's release of its inputs can kill earlier nodes in the same pass.
  std::vector<bool> dead(nodes_.size(), false);
  for (std::size_t k = nodes_.size(); k-- > 0;) {
    if (nodes_[k].out.expired()) {
      dead[k] = true;
      nodes_[k].ins.clear();
      nodes_[k].backward = nullptr;
    }
  }
  std::size_t kept = 0;
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    if (dead[k]) continue;
    if (kept != k) nodes_[kept] = std::move(nodes_[k]);  // never self-move: it may empty the node
    ++kept;
  }
  const std::size_t removed = nodes_.size() - kept;
  nodes_.resize(kept);
  return removed;
}

Tape& tape() { return g_tape; }
bool grad_enabled() { return g_grad_enabled; }

NoGradGuard::NoGradGuard() : prev_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = prev_; }

void backward(const Tensor& root, const Tensor& grad) {
  struct ClearOnExit {
    ~ClearOnExit() { g_tape.clear(); }
  } clear_on_exit;
  RPB_CHECK(root.requires_grad(), "backward", "the root tensor of shape ", root.shape(),
            " does not require grad (nothing recorded it)");
  Tensor seed = grad;
  if (!seed.defined()) {
    RPB_CHECK(root.numel() == 1, "backward", "a root of shape ", root.shape(),
              " needs an explicit gradient; only one-element roots default to 1");
    seed = Tensor::ones(root.shape(), root.dtype(), root.device());
  }
  RPB_CHECK(seed.shape() == root.shape() && seed.dtype() == root.dtype(), "backward", "gradient of shape ",
            seed.shape(), " (", dtype_name(seed.dtype()), ") for a root of shape ", root.shape(), " (",
            dtype_name(root.dtype()), ")");
  accumulate(*root.impl().slot, seed, "backward", 0);

  NoGradGuard no_grad;  // backward rules run ops; they must not record
  std::vector<Node>& nodes = g_tape.nodes();
  for (std::size_t k = nodes.size(); k-- > 0;) {
    Node& n = nodes[k];
    const std::shared_ptr<GradSlot> out = n.out.lock();
    if (!out || !out->grad.defined()) continue;  // no path from the root reaches this node
    RPB_CHECK(static_cast<bool>(n.backward), op_name(n.op), "op has no backward rule; it cannot be differentiated");
    Tensor g = std::move(out->grad);
    out->grad = Tensor();
    std::vector<bool> needed(n.ins.size());
    for (std::size_t i = 0; i < n.ins.size(); ++i) needed[i] = n.ins[i] != nullptr;
    InputGrads grads(std::move(needed));
    n.backward(g, grads);
    for (int i = 0; i < grads.size(); ++i) {
      if (!grads.needed(i)) continue;
      RPB_CHECK(grads[i].defined(), op_name(n.op), "backward produced no gradient for input ", i);
      accumulate(*n.ins[i], grads[i], op_name(n.op), i);
    }
    n.backward = nullptr;  // release what the rule saved as soon as it has run
  }
}

// ---- the Tensor methods that read or reset a gradient slot (declared in core/tensor.h) ----

Tensor& Tensor::requires_grad_(bool on) {
  if (!on) {
    RPB_CHECK(!requires_grad() || is_leaf(), "requires_grad_", "cannot turn off requires_grad on a non-leaf; use detach()");
    impl().slot.reset();
    return *this;
  }
  RPB_CHECK(is_floating(), "requires_grad_", "only float tensors can require grad, got ", dtype_name(dtype()));
  if (!impl().slot) {
    auto slot = std::make_shared<GradSlot>();
    slot->shape = shape();
    slot->dtype = dtype();
    slot->leaf = true;
    impl().slot = std::move(slot);
  }
  return *this;
}

bool Tensor::is_leaf() const { return !requires_grad() || impl().slot->leaf; }

Tensor Tensor::grad() const { return requires_grad() ? impl().slot->grad : Tensor(); }

void Tensor::zero_grad() const {
  if (requires_grad()) {
    impl().slot->grad = Tensor();
    impl().slot->owned = false;
  }
}

Tensor Tensor::detach() const {
  auto impl2 = std::make_shared<TensorImpl>(impl());
  impl2->slot.reset();
  return Tensor(std::move(impl2));
}

void Tensor::to_(DType target) const {
  if (dtype() == target) return;
  RPB_CHECK(!requires_grad() || target != DType::i64, "to_", "a tensor that requires grad cannot become ",
            dtype_name(target), " (shape ", shape(), ")");
  const Tensor converted = to(target);
  TensorImpl& self = impl();
  self.storage = converted.impl().storage;
  self.offset = 0;
  self.dtype = target;
  if (self.slot) {
    self.slot->dtype = target;
    zero_grad();
  }
}

void Tensor::to_(Device target) const {
  if (device() == target) return;
  const Tensor moved = to(target);
  TensorImpl& self = impl();
  self.storage = moved.impl().storage;
  self.offset = 0;
  if (self.slot) zero_grad();
}

namespace autograd {

bool should_record(std::initializer_list<const Tensor*> inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

namespace {
void record_impl(OpKind op, Tensor& out, std::vector<std::shared_ptr<GradSlot>> ins, BackwardFn fn) {
  RPB_CHECK(!out.impl().slot, op_name(op), "internal error: the output is already on the tape or a leaf");
  auto slot = std::make_shared<GradSlot>();
  slot->shape = out.shape();
  slot->dtype = out.dtype();
  out.impl().slot = slot;
  g_tape.push(Node{op, std::move(slot), std::move(ins), std::move(fn)});
}
std::shared_ptr<GradSlot> slot_of(const Tensor& t) {
  return t.defined() && t.requires_grad() ? t.impl().slot : nullptr;
}
}  // namespace

void record(OpKind op, Tensor& out, std::initializer_list<const Tensor*> inputs, BackwardFn fn) {
  std::vector<std::shared_ptr<GradSlot>> ins;
  ins.reserve(inputs.size());
  for (const Tensor* t : inputs) ins.push_back(slot_of(*t));
  record_impl(op, out, std::move(ins), std::move(fn));
}

void record(OpKind op, Tensor& out, const std::vector<Tensor>& inputs, BackwardFn fn) {
  std::vector<std::shared_ptr<GradSlot>> ins;
  ins.reserve(inputs.size());
  for (const Tensor& t : inputs) ins.push_back(slot_of(t));
  record_impl(op, out, std::move(ins), std::move(fn));
}

}  // namespace autograd
}  // namespace rpb
