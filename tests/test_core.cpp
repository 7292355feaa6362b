// Tensor, shape, tape and generator behaviour.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/core.h"
#include "core/unicode.h"
#include "test_util.h"

using namespace rpb;
using rpb::testing::contains;
using rpb::testing::error_of;


TEST_CASE("shape broadcasting follows numpy and names the op on failure") {
  CHECK(broadcast_shapes({2, 1, 4}, {3, 1}, "add") == Shape{2, 3, 4});
  CHECK(broadcast_shapes({}, {5}, "add") == Shape{5});
  const std::string msg = error_of([] { broadcast_shapes({2, 3}, {4}, "mul"); });
  CHECK(msg.find("mul: shapes [2, 3] and [4] do not broadcast") == 0);
  CHECK(msg.find("shape.cpp:") != std::string::npos);  // file:line
  CHECK(error_of([] { Shape{1, 2, 3, 4, 5, 6, 7, 8}.push_back(1); }).find("at most 8 dimensions") != std::string::npos);
  CHECK(error_of([] { Shape{2, 3}.axis(2); }).find("axis 2 out of range for shape [2, 3]") != std::string::npos);
}

TEST_CASE("a cuda tensor without a GPU is refused, saying why, and cpu tensors are untouched by the CUDA build") {
  const Tensor x = Tensor::from_vector<float>({2}, {1, 2});
  CHECK(x.device() == Device::cpu);
  CHECK(x.to(Device::cpu).shares_storage(x));
  CHECK(parse_device("cuda", "run.device") == Device::cuda);
  CHECK_THROWS_WITH_AS(parse_device("gpu", "run.device"), doctest::Contains("run.device: expected \"cpu\" or \"cuda\", got \"gpu\""),
                       Error);
  if (cuda_available()) return;  // a GPU machine, or RPB_CUDA_EMULATE=1: tests/cuda/ covers it
  CHECK(cuda_backend_kind() == CudaBackendKind::none);
  try {
    (void)x.to(Device::cuda);
    FAIL("a cuda tensor was made without a device");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(m.find("needs a CUDA device, and there is none") != std::string::npos);
    const std::string why = cuda_device_description().substr(std::string("none: ").size());  // the reason found
    CHECK(m.find(why) != std::string::npos);
    if (!cuda_built()) CHECK(m.find("CUDA is not in this build") != std::string::npos);
  }
  CHECK(live_memory_bytes(Device::cuda) == 0);
}

TEST_CASE("tensor factories, element access and dtype checks") {
  Tensor t = Tensor::from_vector<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  CHECK(t.dtype() == DType::f32);
  CHECK(t.at({1, 2}) == 5.0);
  CHECK(Tensor::arange(4, DType::f64).to_vector() == std::vector<double>{0, 1, 2, 3});
  CHECK(Tensor::full({2}, 1.5, DType::f64).to_vector() == std::vector<double>{1.5, 1.5});
  CHECK(t.to(DType::f64).dtype() == DType::f64);
  CHECK(error_of([&] { t.data<double>(); }).find("read as float64") != std::string::npos);
  CHECK(error_of([&] { t.item(); }).find("has 6 elements") != std::string::npos);
  CHECK(error_of([] { Tensor::from_vector<float>({2, 2}, {1, 2, 3}); }).find("needs 4 values, got 3") !=
        std::string::npos);
  CHECK(error_of([] { Tensor::indices({2}, {1, 2}).requires_grad_(); }).find("only float tensors") !=
        std::string::npos);
}

TEST_CASE("reshape is a view that shares storage, permute copies") {
  Tensor x = Tensor::arange(6);
  Tensor v = reshape(x, {2, -1});
  CHECK(v.shape() == Shape{2, 3});
  CHECK(v.shares_storage(x));
  x.mutable_data<float>()[4] = 40;
  CHECK(v.at({1, 1}) == 40.0);
  Tensor p = transpose(v, 0, 1);
  CHECK_FALSE(p.shares_storage(x));
  CHECK(p.shape() == Shape{3, 2});
  CHECK(p.to_vector() == std::vector<double>{0, 3, 1, 40, 2, 5});
  CHECK(error_of([&] { reshape(x, {4, -1}); }).find("reshape: cannot infer -1") == 0);
}

TEST_CASE("a tensor used twice receives the sum of both paths") {
  Tensor x = Tensor::from_vector<double>({3}, {1, 2, 3}).requires_grad_();
  Tensor y = sum(x * x + x * 3.0);  // dy/dx = 2x + 3
  backward(y);
  CHECK(x.grad().to_vector() == std::vector<double>{5, 7, 9});
}

TEST_CASE("gradients accumulate over backward calls until zero_grad") {
  Tensor w = Tensor::from_vector<float>({2}, {1, -2}).requires_grad_();
  backward(sum(w * 2.0));
  backward(sum(w * 3.0));
  CHECK(w.grad().to_vector() == std::vector<double>{5, 5});
  w.zero_grad();
  CHECK_FALSE(w.grad().defined());
  backward(sum(w));
  CHECK(w.grad().to_vector() == std::vector<double>{1, 1});
}

TEST_CASE("accumulation never writes into a gradient another input shares") {
  // add's backward hands the same tensor to both inputs; accumulating into one must not change the other.
  Tensor a = Tensor::ones({2}).requires_grad_();
  Tensor b = Tensor::ones({2}).requires_grad_();
  Tensor s = add(a, b);
  backward(sum(s + s * 1.0 + a));
  CHECK(a.grad().to_vector() == std::vector<double>{3, 3});
  CHECK(b.grad().to_vector() == std::vector<double>{2, 2});
}

TEST_CASE("scale_grad_ copies a gradient another tensor shares, and scales an owned one in place") {
  Tensor a = Tensor::ones({2}).requires_grad_(), b = Tensor::ones({2}).requires_grad_();
  backward(sum(mul(a + b, Tensor::from_vector<float>({2}, {3, 4}))));
  const Tensor b_grad = b.grad();
  REQUIRE(a.grad().shares_storage(b_grad));  // add's backward hands both inputs one tensor: not owned
  scale_grad_(a, 0.5);
  CHECK(a.grad().to_vector() == std::vector<double>{1.5, 2});
  CHECK(b_grad.to_vector() == std::vector<double>{3, 4});  // the other holder is unchanged
  CHECK(b.grad().to_vector() == std::vector<double>{3, 4});
  CHECK_FALSE(a.grad().shares_storage(b.grad()));

  // A second backward accumulates into a gradient the slot then owns: it is scaled where it is.
  Tensor w = Tensor::from_vector<double>({2}, {1, 2}).requires_grad_();
  backward(sum(w * 2.0));
  backward(sum(w * 3.0));
  const Tensor owned = w.grad();
  scale_grad_(w, 0.25);
  CHECK(w.grad().storage_id() == owned.storage_id());
  CHECK(owned.to_vector() == std::vector<double>{1.25, 1.25});

  Tensor no_grad_yet = Tensor::ones({1}).requires_grad_(), plain = Tensor::ones({1});
  scale_grad_(no_grad_yet, 2.0);  // nothing to scale
  scale_grad_(plain, 2.0);
  CHECK_FALSE(no_grad_yet.grad().defined());
  CHECK(plain.item() == 1.0);
}

TEST_CASE("set_ repoints every copy of a handle, storage_id names the buffer a tensor and its views share") {
  Tensor x = Tensor::arange(6);
  const Tensor view = reshape(x, {2, 3});
  CHECK(view.storage_id() == x.storage_id());
  CHECK(x.clone().storage_id() != x.storage_id());

  Tensor buffer = Tensor::zeros({4});
  const Tensor alias = buffer;  // a second copy of the handle, as a module's buffer list holds
  buffer.set_(reshape(x, {3, 2}));
  CHECK(alias.shape() == Shape{3, 2});
  CHECK(alias.storage_id() == x.storage_id());
  x.mutable_data<float>()[5] = 50;  // writes through either are seen by both
  CHECK(alias.at({2, 1}) == 50.0);
  alias.set_(Tensor::indices({2}, {7, 8}));
  CHECK(buffer.dtype() == DType::i64);
  CHECK(buffer.to_vector() == std::vector<double>{7, 8});

  Tensor w = Tensor::ones({2}).requires_grad_();
  CHECK(contains(error_of([&] { w.set_(Tensor::zeros({3})); }), "set_: cannot repoint a tensor that requires grad"));
  CHECK(w.shape() == Shape{2});
  buffer.set_(w);  // shares w's data, not its graph
  CHECK_FALSE(buffer.requires_grad());
  CHECK(buffer.storage_id() == w.storage_id());
}

TEST_CASE("to_ converts in place, keeps the handle and drops the gradient") {
  Tensor w = Tensor::from_vector<float>({2}, {1.5, -2}).requires_grad_();
  const Tensor alias = w;
  backward(sum(w * 2.0));
  REQUIRE(w.grad().defined());
  w.to_(DType::f64);
  CHECK(alias.dtype() == DType::f64);
  CHECK(alias.to_vector() == std::vector<double>{1.5, -2});
  CHECK(alias.requires_grad());
  CHECK_FALSE(alias.grad().defined());
  backward(sum(w * 3.0));  // the slot now takes float64 gradients
  CHECK(w.grad().dtype() == DType::f64);
  CHECK(w.grad().to_vector() == std::vector<double>{3, 3});
  CHECK(contains(error_of([&] { w.to_(DType::i64); }), "a tensor that requires grad cannot become int64"));
  Tensor idx = Tensor::indices({2}, {1, 2});
  idx.to_(DType::f32);
  CHECK(idx.dtype() == DType::f32);
  CHECK(idx.to_vector() == std::vector<double>{1, 2});
}

TEST_CASE("backward walks the tape in reverse and clears it") {
  tape().clear();
  Tensor x = Tensor::scalar(2.0, DType::f64).requires_grad_();
  Tensor y = exp(x) * x;
  CHECK(tape().size() == 2);
  CHECK(tape().nodes()[0].op == OpKind::Exp);
  CHECK(tape().nodes()[1].op == OpKind::Mul);
  backward(y);
  CHECK(tape().size() == 0);
  CHECK(x.grad().item() == doctest::Approx(std::exp(2.0) * 3.0));
  CHECK_FALSE(y.grad().defined());  // non-leaf gradients are released
}

TEST_CASE("abandoned graphs are pruned: a forward without backward does not grow the tape forever") {
  tape().clear();
  Tensor w = Tensor::ones({4}).requires_grad_();
  for (int i = 0; i < 100000; ++i) {
    Tensor y = exp(w * 2.0);  // recorded, then dropped without backward
  }
  CHECK(tape().size() < 3 * 4096);
  // A live graph survives pruning and still differentiates.
  Tensor keep = sum(w * 3.0);
  for (int i = 0; i < 20000; ++i) Tensor y = w * 2.0;
  backward(keep);
  CHECK(w.grad().to_vector() == std::vector<double>{3, 3, 3, 3});
}

TEST_CASE("a deep chain does not recurse: 200000 recorded ops") {
  Tensor x = Tensor::scalar(0.0, DType::f64).requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 200000; ++i) y = y * 1.0 + 0.0;
  backward(y);
  CHECK(x.grad().item() == 1.0);
}

TEST_CASE("no-grad scope records nothing and detach leaves the graph") {
  tape().clear();
  Tensor w = Tensor::ones({3}).requires_grad_();
  {
    NoGradGuard guard;
    CHECK_FALSE(grad_enabled());
    Tensor y = exp(w * 2.0);
    CHECK_FALSE(y.requires_grad());
    CHECK(tape().size() == 0);
  }
  CHECK(grad_enabled());
  Tensor d = w.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.shares_storage(w));
  CHECK_FALSE((d * 2.0).requires_grad());
  CHECK(tape().size() == 0);
}

TEST_CASE("an op without a backward rule throws, it never returns zeros") {
  Tensor x = Tensor::ones({2}).requires_grad_();
  Tensor y;
  {
    NoGradGuard g;
    y = x * 2.0;
  }
  autograd::record(OpKind::MulScalar, y, {&x}, BackwardFn{});
  const std::string msg = error_of([&] { backward(sum(y)); });
  CHECK(msg.find("mul_scalar: op has no backward rule") == 0);
  CHECK(tape().size() == 0);  // cleared even on failure
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("backward checks its root and the gradient shapes rules produce") {
  Tensor c = Tensor::ones({2});
  CHECK(error_of([&] { backward(c); }).find("does not require grad") != std::string::npos);
  Tensor x = Tensor::ones({2}).requires_grad_();
  CHECK(error_of([&] { backward(x * 2.0); }).find("needs an explicit gradient") != std::string::npos);
  Tensor y;
  {
    NoGradGuard g;
    y = x * 2.0;
  }
  autograd::record(OpKind::MulScalar, y, {&x}, [](const Tensor& g, InputGrads& gi) { gi.set(0, Tensor::ones({3})); });
  CHECK(error_of([&] { backward(sum(y)); }).find("mul_scalar: backward produced a gradient of shape [3] for input 0 of shape [2]") ==
        0);
}

TEST_CASE("the generator is deterministic and its state round-trips") {
  Generator a(123), b(123), c(124);
  for (int i = 0; i < 10; ++i) {
    const uint64_t va = a.next_u64();
    CHECK(va == b.next_u64());
    CHECK(va != c.next_u64());
  }
  const Generator::State s = a.state();
  const Tensor r1 = randn({100}, a, DType::f64);
  a.set_state(s);
  const Tensor r2 = randn({100}, a, DType::f64);
  CHECK(r1.to_vector() == r2.to_vector());
  CHECK_THROWS_AS(a.set_state({0, 0, 0, 0}), Error);
}

TEST_CASE("generator distributions have the right moments") {
  Generator g(7);
  const Tensor n = randn({200000}, g, DType::f64, 1.0, 2.0);
  const double m = mean(n).item();
  const double var = mean(pow(n - m, 2.0)).item();
  CHECK(m == doctest::Approx(1.0).epsilon(0.02));
  CHECK(var == doctest::Approx(4.0).epsilon(0.02));
  const Tensor u = rand({100000}, g, DType::f32, -1.0, 3.0);
  CHECK(max(u).item() < 3.0);
  CHECK(-max(-u).item() >= -1.0);
  CHECK(mean(u).item() == doctest::Approx(1.0).epsilon(0.02));
  const Tensor t = trunc_normal({20000}, g, DType::f64, 0.0, 1.0, -0.5, 0.5);
  CHECK(max(t).item() <= 0.5);
  CHECK(-max(-t).item() >= -0.5);
  const Tensor k = randint({5000}, 7, g);
  const std::vector<double> kv = k.to_vector();
  CHECK(*std::min_element(kv.begin(), kv.end()) == 0);
  CHECK(*std::max_element(kv.begin(), kv.end()) == 6);
}

TEST_CASE("every registry row names its op and family") {
  for (const OpInfo& op : kOps) {
    CHECK_FALSE(op.name.empty());
    CHECK_FALSE(op.family.empty());
  }
  CHECK(std::string(op_name(OpKind::LayerNorm)) == "layer_norm");
}

TEST_CASE("replace_invalid_utf8 replaces each maximal subpart with U+FFFD, as Python's errors=\"replace\"") {
  // Each case's U+FFFD count is what python3 gives for bytes.decode("utf-8", errors="replace").
  const std::string r = "\xef\xbf\xbd";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\xd3n", r + "n"},                           // a lead byte without its continuation (generate's \xd3n)
      {"\xe2\x82!", r + "!"},                      // a cut sequence: one U+FFFD
      {"\xe2\x82", r},                             // cut at the end
      {"\xf0\x9f\x98", r},                        // a cut 4-byte sequence
      {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},      // whole: unchanged
      {"\xf0\x80\x80", r + r + r},                // overlong: 0x80 may not follow 0xf0
      {"\xed\xa0\x80", r + r + r},                // a surrogate
      {"\xf4\x90\x80\x80", r + r + r + r},         // past U+10FFFF
      {"\xff\xfe", r + r},                         // never in UTF-8
      {"\x80\xbf", r + r},                         // continuation bytes alone
      {"x\xe0\x80y", "x" + r + r + "y"},
      {"\xe0\xa0\xc2\xa9", r + "\xc2\xa9"},           // a cut sequence, then a whole one
      {"plain \xe2\x82\xac", "plain \xe2\x82\xac"},
  };
  for (const auto& c : cases) {
    CAPTURE(printable(c.first));
    CHECK(rpb::replace_invalid_utf8(c.first) == c.second);
  }
  CHECK(rpb::utf8_sequence("\xe2\x82", 0) == 0);  // utf8_sequence shares the rule: a cut sequence is none
  CHECK(rpb::utf8_sequence("\xe2\x82\xac", 0) == 3);
}

TEST_CASE("printable escapes what a terminal acts on and cuts long text") {
  CHECK(printable(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(printable("\x7f\xff\xc3") == "\\x7f\\xff\\xc3");   // DEL, a byte never in UTF-8, a cut sequence
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a UTF-16 surrogate is not UTF-8
  CHECK(printable("\xe2\x82\xac", 2) == "\\xe2\\x82... (3 bytes)");  // the cut never keeps half a letter
  CHECK(printable("back\\slash") == "back\\\\slash");
  CHECK(printable("") == "");
}
