// Gradient-check cases for core/ops/matmul.cpp.
#include "gradcheck.h"

namespace rpb::testing {

namespace {

// The stored shape of an operand whose op() is (r, c): transposed when `t`.
Shape stored(Shape batch, int64_t r, int64_t c, bool t) {
  batch.push_back(t ? c : r);
  batch.push_back(t ? r : c);
  return batch;
}

}  // namespace

void add_matmul_cases(CaseList& cases) {
  Generator gen(21);
  auto add = [&](const std::string& name, Tensor a, Tensor b, bool ta, bool tb) {
    cases.push_back({"matmul " + name + " " + a.shape().to_string() + (ta ? "^T" : "") + " @ " +
                         b.shape().to_string() + (tb ? "^T" : ""),
                     OpKind::Matmul, {a, b},
                     [ta, tb](const std::vector<Tensor>& in) { return matmul(in[0], in[1], ta, tb); }});
  };
  // 2-D and batched shapes under every combination of transpose flags.
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      add("2-D", input(gen, stored({}, 3, 4, ta)), input(gen, stored({}, 4, 2, tb)), ta, tb);
      add("3-D", input(gen, stored({2}, 3, 4, ta)), input(gen, stored({2}, 4, 2, tb)), ta, tb);
      add("4-D", input(gen, stored({2, 2}, 2, 3, ta)), input(gen, stored({2, 2}, 3, 2, tb)), ta, tb);
      add("broadcast batch", input(gen, stored({1, 2}, 2, 3, ta)), input(gen, stored({2, 2}, 3, 2, tb)), ta, tb);
      add("shared 2-D b", input(gen, stored({2}, 3, 4, ta)), input(gen, stored({}, 4, 2, tb)), ta, tb);
      add("shared 2-D a", input(gen, stored({}, 3, 4, ta)), input(gen, stored({2}, 4, 2, tb)), ta, tb);
    }
  add("attention scores", input(gen, {2, 2, 3, 2}), input(gen, {2, 2, 3, 2}), false, true);
  add("batch of ones in b", input(gen, {2, 3, 4}), input(gen, {1, 4, 2}), false, false);
  add("extra leading batch", input(gen, {2, 1, 2, 3}), input(gen, {3, 3, 2}), false, false);
  add("M=1", input(gen, {1, 4}), input(gen, {4, 3}), false, false);
  add("N=1", input(gen, {3, 4}), input(gen, {4, 1}), false, false);
  add("K=1", input(gen, {3, 1}), input(gen, {1, 4}), false, false);
  add("batched K=1 N=1", input(gen, {2, 3, 1}), input(gen, {2, 1, 1}), false, false);
  add("one input without grad", input(gen, {2, 3, 4}), rand({4, 2}, gen, DType::f64, -1.0, 1.0), false, false);
  add("one input without grad (a)", rand({3, 4}, gen, DType::f64, -1.0, 1.0), input(gen, {2, 4, 2}), false, false);

  cases.push_back({"matmul reused input x @ x^T", OpKind::Matmul, {input(gen, {3, 4})},
                   [](const std::vector<Tensor>& in) { return matmul(in[0], in[0], false, true); }});
  cases.push_back({"matmul reused input x^T @ x batched", OpKind::Matmul, {input(gen, {2, 3, 2})},
                   [](const std::vector<Tensor>& in) { return matmul(in[0], in[0], true, false); }});
  cases.push_back({"matmul through a reshape view", OpKind::Matmul, {input(gen, {12}), input(gen, {4, 2})},
                   [](const std::vector<Tensor>& in) { return matmul(reshape(in[0], {3, 4}), in[1]); }});
  cases.push_back({"matmul folded batch through a reshape view", OpKind::Matmul,
                   {input(gen, {6, 4}), input(gen, {2, 4})},
                   [](const std::vector<Tensor>& in) { return matmul(reshape(in[0], {2, 3, 4}), in[1], false, true); }});

  // linear: x (..., in) @ weight^T + bias.
  auto add_linear = [&](const std::string& name, std::vector<Tensor> in) {
    const bool with_bias = in.size() == 3;
    cases.push_back({"linear " + name + " " + in[0].shape().to_string() + " @ " + in[1].shape().to_string() + "^T" +
                         (with_bias ? " + " + in[2].shape().to_string() : ""),
                     OpKind::Linear, std::move(in), [with_bias](const std::vector<Tensor>& t) {
                       return linear(t[0], t[1], with_bias ? t[2] : Tensor());
                     }});
  };
  add_linear("2-D", {input(gen, {3, 4}), input(gen, {2, 4}), input(gen, {2})});
  add_linear("3-D", {input(gen, {2, 3, 4}), input(gen, {5, 4}), input(gen, {5})});
  add_linear("1-D input", {input(gen, {4}), input(gen, {3, 4}), input(gen, {3})});
  add_linear("without bias", {input(gen, {2, 3, 4}), input(gen, {2, 4})});
  add_linear("one output", {input(gen, {3, 2}), input(gen, {1, 2}), input(gen, {1})});
  add_linear("x without grad", {rand({2, 3, 4}, gen, DType::f64, -1.0, 1.0), input(gen, {2, 4}), input(gen, {2})});
  add_linear("weight without grad", {input(gen, {3, 4}), rand({2, 4}, gen, DType::f64, -1.0, 1.0), input(gen, {2})});
  add_linear("only the bias", {rand({3, 4}, gen, DType::f64, -1.0, 1.0), rand({2, 4}, gen, DType::f64, -1.0, 1.0),
                               input(gen, {2})});
  cases.push_back({"linear reused input x @ x^T + b", OpKind::Linear, {input(gen, {3, 3}), input(gen, {3})},
                   [](const std::vector<Tensor>& in) { return linear(in[0], in[0], in[1]); }});
  cases.push_back({"linear through a reshape view", OpKind::Linear, {input(gen, {12}), input(gen, {2, 4}), input(gen, {2})},
                   [](const std::vector<Tensor>& in) { return linear(reshape(in[0], {3, 4}), in[1], in[2]); }});
}

}  // namespace rpb::testing
