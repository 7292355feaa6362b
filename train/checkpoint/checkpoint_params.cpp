// rpb/train/checkpoint/checkpoint_params.cpp: a checkpoint's parameters checked against a model's, and put into it.
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/text.h"
#include "train/checkpoint/checkpoint.h"

namespace rpb {

void check_params(const Checkpoint& c, const nn::NamedTensors& expected, const std::string& path) {
  const std::string op = "checkpoint " + path;
  auto describe = [](const Tensor& t) {  // "[2, 3] float32"
    std::ostringstream os;
    os << t.shape() << " " << dtype_name(t.dtype());
    return os.str();
  };
  std::map<std::string, const Tensor*> found;
  for (const auto& [name, t] : c.params) found.emplace(name, &t);
  std::vector<std::string> problems;
  std::map<std::string, bool> wanted;
  for (const auto& [name, t] : expected) {
    wanted[name] = true;
    const auto it = found.find(name);
    if (it == found.end()) {
      problems.push_back("dataset /params/" + printable(name) + " is missing (expected shape " + describe(t) + ")");
    } else if (it->second->shape() != t.shape() || it->second->dtype() != t.dtype()) {
      problems.push_back("dataset /params/" + printable(name) + ": expected shape " + describe(t) + ", found " +
                         describe(*it->second));
    }
  }
  for (const auto& [name, t] : c.params)
    if (!wanted.count(name))
      problems.push_back("dataset /params/" + printable(name) + " is not a parameter of the model (found " +
                         describe(t) + ")");
  if (problems.empty()) return;
  constexpr std::size_t kShown = 20;
  std::string message;
  for (std::size_t i = 0; i < problems.size() && i < kShown; ++i) message += (i ? "; " : "") + problems[i];
  if (problems.size() > kShown) message += "; and " + std::to_string(problems.size() - kShown) + " more";
  RPB_FAIL(op.c_str(), message);
}

void load_parameters(const Checkpoint& c, nn::Module& model, const std::string& path) {
  check_params(c, model.named_parameters(), path);
  NoGradGuard no_grad;
  for (const auto& [name, t] : model.named_parameters())
    for (const auto& [cname, ct] : c.params)
      if (cname == name) t.copy_(ct);
  for (const auto& [name, t] : model.named_buffers(true))
    for (const auto& [cname, ct] : c.buffers)
      if (cname == name) t.copy_(ct);
}

}  // namespace rpb
