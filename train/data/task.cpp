// rpb/train/data/task.cpp: what every token task shares: its optimal perplexity, the streams it builds for a use,
// and the checks and numbers the markov and lag tasks share (data_detail.h).
#include "train/data/task.h"

#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "train/data/data_detail.h"

namespace rpb::data {

namespace detail {

double xlogx(double x) { return x > 0 ? x * std::log(x) : 0.0; }

void check_tokens(const TaskOptions& o) {
  RPB_CHECK(o.train_tokens >= 2, "task", "task.train_tokens must be >= 2, got ", o.train_tokens);
  RPB_CHECK(o.eval_tokens >= 2, "task", "task.eval_tokens must be >= 2, got ", o.eval_tokens);
}

void check_vocab(const TaskOptions& o) {
  RPB_CHECK(o.vocab >= 2 && o.vocab <= std::numeric_limits<int32_t>::max(), "task",
            "task.vocab must be in [2, 2147483647], got ", o.vocab);
}

std::string short_number(double x, int precision) {
  std::ostringstream os;
  os << std::setprecision(precision) << x;
  return os.str();
}

}  // namespace detail

std::optional<double> Task::optimal_perplexity() const {
  const auto h = entropy_rate();
  if (!h) return std::nullopt;
  return std::exp(*h);
}

void Task::sample_streams(const TaskOptions& options,
                          const std::function<std::vector<int32_t>(uint64_t, int64_t)>& sample) {
  if (options.use == DataUse::train) {
    train_ = sample(detail::kTrainStream, options.train_tokens);
    valid_ = sample(detail::kValidStream, options.eval_tokens);
  }
  test_ = sample(detail::kTestStream, options.eval_tokens);
}

bool builds_split(DataUse use, int split) { return use == DataUse::train || split == 2; }

std::string stream_size_text(const TokenStream& stream, DataUse use, int split) {
  return builds_split(use, split) ? std::to_string(stream.size()) + " tokens" : "not built";
}

std::string Task::decode(const std::vector<int32_t>& tokens) const {
  std::string s;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(tokens[i]);
  }
  return s;
}

}  // namespace rpb::data
