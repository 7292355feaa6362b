// Elementwise unary ops: exp, log, sqrt, tanh, sigmoid, relu, gelu. Forward and backward side by side.
#include <type_traits>
#include <unsupported/Eigen/SpecialFunctions>

#include "core/ops.h"
#include "core/ops/kernels.h"

namespace rpb {

namespace {

// Backward helper: grad_in = f(g, s) for the output gradient g and one saved tensor s (same shape).
template <typename F>
Tensor grad_kernel(const char* op, cuda::UnaryFn fn, const Tensor& g, const Tensor& s, F f) {
  RPB_CHECK(g.shape() == s.shape() && g.dtype() == s.dtype(), op, "gradient ", g.shape(), " does not match ",
            s.shape());
  if (cuda::on_cuda(op, {&g, &s})) {
    Tensor out = Tensor::empty(g.shape(), g.dtype(), Device::cuda);
    cuda::backend(op).unary_grad(fn, g.dtype(), g.raw_data(), s.raw_data(), out.raw_mutable_data(), g.numel());
    return out;
  }
  Tensor out = Tensor::empty(g.shape(), g.dtype());
  dispatch_float(g.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* po = out.mutable_data<T>();
    const T *pg = g.data<T>(), *ps = s.data<T>();
    for_blocks(g.numel(), [&](int64_t begin, int64_t end) {
      ArrayMap<T> o(po + begin, end - begin);
      const ConstArrayMap<T> gv(pg + begin, end - begin);
      const ConstArrayMap<T> sv(ps + begin, end - begin);
      f(o, gv, sv);
    });
  });
  return out;
}

constexpr double kSqrt1_2 = 0.70710678118654752440;      // 1/sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/sqrt(2*pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kGeluC = 0.044715;

}  // namespace

Tensor exp(const Tensor& x) {
  Tensor out = map_unary("exp", cuda::UnaryFn::exp, 0, x, [](auto& o, const auto& v) { o = v.exp(); });
  if (autograd::should_record({&x}))
    autograd::record(OpKind::Exp, out, {&x}, [y = out.detach()](const Tensor& g, InputGrads& gi) {
      gi.set(0, grad_kernel("exp", cuda::UnaryFn::exp, g, y, [](auto& o, const auto& gv, const auto& yv) { o = gv * yv; }));
    });
  return out;
}

Tensor log(const Tensor& x) {
  Tensor out = map_unary("log", cuda::UnaryFn::log, 0, x, [](auto& o, const auto& v) { o = v.log(); });
  if (autograd::should_record({&x}))
    autograd::record(OpKind::Log, out, {&x}, [x = x.detach()](const Tensor& g, InputGrads& gi) {
      gi.set(0, grad_kernel("log", cuda::UnaryFn::log, g, x, [](auto& o, const auto& gv, const auto& xv) { o = gv / xv; }));
    });
  return out;
}

Tensor sqrt(const Tensor& x) {
  Tensor out = map_unary("sqrt", cuda::UnaryFn::sqrt, 0, x, [](auto& o, const auto& v) { o = v.sqrt(); });
  if (autograd::should_record({&x}))
    autograd::record(OpKind::Sqrt, out, {&x}, [y = out.detach()](const Tensor& g, InputGrads& gi) {
      gi.set(0, grad_kernel("sqrt", cuda::UnaryFn::sqrt, g, y, [](auto& o, const auto& gv, const auto& yv) {
               using T = ScalarOf<decltype(o)>;
               o = T(0.5) * gv / yv;
             }));
    });
  return out;
}

Tensor tanh(const Tensor& x) {
  Tensor out = map_unary("tanh", cuda::UnaryFn::tanh, 0, x, [](auto& o, const auto& v) { o = v.tanh(); });
  if (autograd::should_record({&x}))
    autograd::record(OpKind::Tanh, out, {&x}, [y = out.detach()](const Tensor& g, InputGrads& gi) {
      gi.set(0, grad_kernel("tanh", cuda::UnaryFn::tanh, g, y, [](auto& o, const auto& gv, const auto& yv) {
               using T = ScalarOf<decltype(o)>;
               o = gv * (T(1) - yv.square());
             }));
    });
  return out;
}

Tensor sigmoid(const Tensor& x) {
  Tensor out = map_unary("sigmoid", cuda::UnaryFn::sigmoid, 0, x, [](auto& o, const auto& v) { o = v.logistic(); });
  if (autograd::should_record({&x}))
    autograd::record(OpKind::Sigmoid, out, {&x}, [y = out.detach()](const Tensor& g, InputGrads& gi) {
      gi.set(0, grad_kernel("sigmoid", cuda::UnaryFn::sigmoid, g, y, [](auto& o, const auto& gv, const auto& yv) {
               using T = ScalarOf<decltype(o)>;
               o = gv * yv * (T(1) - yv);
             }));
    });
  return out;
}

Tensor relu(const Tensor& x) {
  Tensor out = map_unary("relu", cuda::UnaryFn::relu, 0, x, [](auto& o, const auto& v) {
    using T = ScalarOf<decltype(o)>;
    o = (v > T(0)).select(v, T(0));
  });
  if (autograd::should_record({&x}))
    autograd::record(OpKind::Relu, out, {&x}, [y = out.detach()](const Tensor& g, InputGrads& gi) {
      gi.set(0, grad_kernel("relu", cuda::UnaryFn::relu, g, y, [](auto& o, const auto& gv, const auto& yv) {
               using T = ScalarOf<decltype(o)>;
               o = (yv > T(0)).select(gv, T(0));
             }));
    });
  return out;
}

Tensor gelu(const Tensor& x, GeluApprox approx) {
  if (approx == GeluApprox::erf) {
    // y = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); dy/dx = Phi(x) + x * phi(x).
    Tensor out = map_unary("gelu_erf", cuda::UnaryFn::gelu_erf, 0, x, [](auto& o, const auto& v) {
      using T = ScalarOf<decltype(o)>;
      o = T(0.5) * v * (T(1) + (v * T(kSqrt1_2)).erf());
    });
    if (autograd::should_record({&x}))
      autograd::record(OpKind::GeluErf, out, {&x}, [x = x.detach()](const Tensor& g, InputGrads& gi) {
        gi.set(0, grad_kernel("gelu_erf", cuda::UnaryFn::gelu_erf, g, x, [](auto& o, const auto& gv, const auto& xv) {
                 using T = ScalarOf<decltype(o)>;
                 o = gv * (T(0.5) * (T(1) + (xv * T(kSqrt1_2)).erf()) +
                           T(kInvSqrt2Pi) * xv * (T(-0.5) * xv.square()).exp());
               }));
      });
    return out;
  }
  // y = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + c x^3);
  // dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 c x^2) with t = tanh(u).
  Tensor out = map_unary("gelu_tanh", cuda::UnaryFn::gelu_tanh, 0, x, [](auto& o, const auto& v) {
    using T = ScalarOf<decltype(o)>;
    o = T(0.5) * v * (T(1) + (T(kSqrt2OverPi) * (v + T(kGeluC) * v.cube())).tanh());
  });
  if (autograd::should_record({&x}))
    autograd::record(OpKind::GeluTanh, out, {&x}, [x = x.detach()](const Tensor& g, InputGrads& gi) {
      gi.set(0, grad_kernel("gelu_tanh", cuda::UnaryFn::gelu_tanh, g, x, [](auto& o, const auto& gv, const auto& xv) {
               using T = ScalarOf<decltype(o)>;
               o = (T(kSqrt2OverPi) * (xv + T(kGeluC) * xv.cube())).tanh();  // o holds t
               o = gv * (T(0.5) * (T(1) + o) + T(0.5 * kSqrt2OverPi) * xv * (T(1) - o.square()) *
                                                   (T(1) + T(3 * kGeluC) * xv.square()));
             }));
    });
  return out;
}

}  // namespace rpb
