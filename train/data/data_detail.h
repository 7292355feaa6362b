// rpb/train/data/data_detail.h: what the data files share (internal to train/data/).
#pragma once

#include <cstdint>
#include <string>

namespace rpb::data {
struct TaskOptions;
}

namespace rpb::data::detail {

// Stream ids of derive_seed.
constexpr uint64_t kTableStream = 0, kTrainStream = 1, kValidStream = 2, kTestStream = 3, kBatchStream = 0xBA7C4;

// What the markov and lag tasks share (train/data/task.cpp).
/// x log x, 0 at 0: a term of an entropy.
double xlogx(double x);
/// Refuses task.train_tokens or task.eval_tokens below 2, naming the key.
void check_tokens(const TaskOptions& o);
/// Refuses a task.vocab outside [2, 2^31 - 1], naming the key.
void check_vocab(const TaskOptions& o);
/// `x` with `precision` significant digits, as a task's description writes its entropy rate.
std::string short_number(double x, int precision = 4);

}  // namespace rpb::data::detail
