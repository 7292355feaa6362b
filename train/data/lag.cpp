// rpb/train/data/lag.cpp: the lag task: its entropy rate and streams.
#include "train/data/lag.h"

#include <cmath>
#include <sstream>

#include "core/error.h"
#include "train/data/data_detail.h"
#include "train/data/sampling.h"

namespace rpb::data {

using namespace detail;

LagTask::LagTask(const TaskOptions& options) : opt_(options) {
  check_vocab(options);
  RPB_CHECK(options.lag >= 1, "task", "task.lag must be >= 1, got ", options.lag);
  RPB_CHECK(options.noise >= 0 && options.noise <= 1, "task", "task.noise must be in [0, 1], got ", options.noise);
  check_tokens(options);
  const double v = static_cast<double>(options.vocab);
  const double r = options.noise / v;
  entropy_ = -xlogx(1 - options.noise + r) - (v - 1) * xlogx(r);

  auto sample = [&](uint64_t id, int64_t n) {
    Generator g(derive_seed(options.seed, id));
    std::vector<int32_t> out(static_cast<size_t>(n));
    const uint64_t V = static_cast<uint64_t>(options.vocab);
    for (int64_t t = 0; t < n; ++t) {
      if (t < options.lag || g.uniform() < options.noise)
        out[t] = static_cast<int32_t>(uniform_index(g, V));
      else
        out[t] = out[t - options.lag];
    }
    return out;
  };
  sample_streams(options, sample);
}

std::string LagTask::describe() const {
  std::ostringstream os;
  os << "lag: x_t = x_{t-" << opt_.lag << "} with probability " << 1 - opt_.noise << ", else uniform over "
     << opt_.vocab << " tokens; seed " << opt_.seed << "; entropy rate " << short_number(entropy_)
     << " nats/token (optimal perplexity " << short_number(std::exp(entropy_)) << "); train " << opt_.train_tokens << ", valid "
     << opt_.eval_tokens << ", test " << opt_.eval_tokens << " tokens";
  return os.str();
}

}  // namespace rpb::data
