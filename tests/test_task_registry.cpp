// The task registry (train/data/task_registry.h): every registered task has a golden case that passes, the rows read
// consistently, and a task added from the tests (the toy "count" task: its class, one row, its golden case) trains
// end to end through the config parser, the memory estimate and the trainer.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <utility>

#include "core/text.h"
#include "test_util.h"
#include "train/config/memory.h"
#include "train/data/grid2d.h"
#include "train/data/passkey.h"
#include "train/data/sampling.h"
#include "train/data/task_registry.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace rpb;
using rpb::testing::TempDir;
using rpb::testing::contains;
using rpb::testing::error_of;

namespace task_registry_test {

// ---- the toy task: x_t = x_{t-1} + 1 mod task.vocab, each stream from a start drawn from the seed

class CountTask final : public data::Task {
 public:
  explicit CountTask(const data::TaskOptions& o) : vocab_(o.vocab) {
    RPB_CHECK(o.vocab >= 2, "task", "task.vocab must be >= 2, got ", o.vocab);
    train_ = stream(o, 1, o.train_tokens);
    valid_ = stream(o, 2, o.eval_tokens);
    test_ = stream(o, 3, o.eval_tokens);
  }
  int64_t vocab() const override { return vocab_; }
  std::string describe() const override { return "count: x_t = x_{t-1} + 1 mod " + std::to_string(vocab_); }
  std::optional<double> entropy_rate() const override { return 0.0; }

 private:
  std::vector<int32_t> stream(const data::TaskOptions& o, uint64_t id, int64_t n) const {
    Generator g(data::derive_seed(o.seed, id));
    int32_t x = static_cast<int32_t>(data::uniform_index(g, static_cast<uint64_t>(vocab_)));
    std::vector<int32_t> s(static_cast<std::size_t>(n));
    for (int32_t& t : s) t = std::exchange(x, static_cast<int32_t>((x + 1) % vocab_));
    return s;
  }
  int64_t vocab_;
};

std::unique_ptr<data::Task> make_count(const data::TaskOptions& o) { return std::make_unique<CountTask>(o); }
data::DataMemory count_memory(const data::TaskOptions& o, data::DataUse use) {
  if (use == data::DataUse::generate) return {};
  return {4 * (use == data::DataUse::train ? o.train_tokens + 2 * o.eval_tokens : o.eval_tokens)};
}

// Its row, registered while the guard lives (the built-in rows are compiled into train/data/task_registry.cpp).
const data::TaskInfo kCountRow = {"count",      1, "x_t = x_{t-1} + 1 mod task.vocab (a test-only task)",
                                  make_count,   nullptr, count_memory,
                                  data::HeldOut::eval_tokens, false};
struct Registered {
  explicit Registered(const data::TaskInfo& row) : name(row.name) { data::register_task(row); }
  ~Registered() { data::remove_task(name); }
  std::string name;
};

// ---- golden cases: one per registered task

struct TaskCase {
  std::string task;
  std::function<void()> golden;
};

std::vector<int32_t> head(const data::TokenStream& s, std::size_t n = 12) {
  return s.to_vector(0, std::min(static_cast<int64_t>(n), s.size()));
}

// A token task's streams: their sizes and first tokens, its vocabulary and entropy rate.
struct StreamGolden {
  std::size_t train, valid, test;
  std::vector<int32_t> train_head, valid_head, test_head;
  int64_t vocab;
  std::optional<double> entropy;
};

void check_streams(const data::TaskOptions& o, const StreamGolden& g) {
  const std::unique_ptr<data::Task> t = data::make_task(o);
  CHECK(t->train_stream().size() == g.train);
  CHECK(t->valid_stream().size() == g.valid);
  CHECK(t->test_stream().size() == g.test);
  CHECK(head(t->train_stream()) == g.train_head);
  CHECK(head(t->valid_stream()) == g.valid_head);
  CHECK(head(t->test_stream()) == g.test_head);
  CHECK(t->vocab() == g.vocab);
  CHECK(t->entropy_rate().has_value() == g.entropy.has_value());
  if (g.entropy) CHECK(*t->entropy_rate() == doctest::Approx(*g.entropy).epsilon(1e-12));
  CHECK(contains(t->describe(), o.kind + ":"));
}

data::TaskOptions token_options(const std::string& kind) {
  data::TaskOptions o;
  o.kind = kind;
  o.vocab = 4;
  o.order = 2;
  o.lag = 3;
  o.noise = 0.2;
  o.seed = 3;
  o.train_tokens = 1000;
  o.eval_tokens = 300;
  return o;
}

void kjv_golden() {
  TempDir dir("task_registry_kjv");
  const fs::path file = dir.path / "kjv.txt";
  {
    std::ofstream f(file);
    for (int b = 0; b < 12; ++b) {
      if (b) f << "\n";
      f << "Book " << char('A' + b) << " one.\n" << "Book " << char('A' + b) << " two!\n";
    }
  }
  data::TaskOptions o;
  o.kind = "kjv";
  o.kjv_path = file.string();
  check_streams(o, {240, 24, 24, {5, 19, 19, 17, 1, 4, 1, 19, 18, 16, 3, 0}, {5, 19, 19, 17, 1, 8, 1, 19, 18, 16, 3, 0},
                    {5, 19, 19, 17, 1, 13, 1, 19, 18, 16, 3, 0}, 22, std::nullopt});
}

// text: eight one-line documents (files a.txt .. h.txt), split by their SHA-256 at valid 0.1 and test 0.1 (zeta's
// digest reads 0.127: valid; eta's 0.084: test; the others 0.40 to 0.95: train), bytes as tokens.
void text_golden() {
  TempDir dir("task_registry_text");
  const char* words[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"};
  for (int i = 0; i < 8; ++i) std::ofstream(dir.path / (std::string(1, char('a' + i)) + ".txt")) << words[i] << "\n";
  data::TaskOptions o;
  o.kind = "text";
  o.path = dir.path.string();
  o.valid_fraction = 0.1;
  o.test_fraction = 0.1;
  const auto bytes = [](const std::string& s) { return std::vector<int32_t>(s.begin(), s.end()); };
  check_streams(o, {37, 5, 4, bytes("alpha\nbeta\ng"), bytes("zeta\n"), bytes("eta\n"), 256, std::nullopt});
}

// grid2d has no stream (its row's make is null): the grid workload builds a Grid2DTask from [task].
void grid2d_golden() {
  data::Grid2DOptions g;
  g.vocab = 4;
  g.noise = 0.1;
  g.seed = 3;
  g.eval_cells = 64;
  const data::Grid2DTask t(g);
  CHECK(t.entropy_per_cell() == doctest::Approx(0.34878038491802871).epsilon(1e-12));
  CHECK(t.table().size() == 25);
  CHECK(std::vector<int32_t>(t.table().begin(), t.table().begin() + 12) ==
        std::vector<int32_t>{1, 3, 3, 0, 1, 3, 3, 2, 3, 0, 0, 2});
  Tensor x, y;
  t.eval_grids(4, x, y);
  CHECK(x.shape() == Shape{4, 4, 4});
  const std::vector<double> xs = x.to_vector(), ys = y.to_vector();
  CHECK(std::vector<double>(xs.begin(), xs.begin() + 12) == std::vector<double>{1, 0, 2, 1, 1, 1, 0, 3, 1, 0, 3, 3});
  CHECK(std::vector<double>(ys.begin(), ys.begin() + 12) == std::vector<double>{2, 0, 1, 2, 0, 3, 2, 3, 0, 3, 1, 0});
}

// passkey has no stream of its own (its streams are the filler's): its held-out samples, the first one pinned.
void passkey_golden() {
  data::TaskOptions o = token_options("passkey");
  o.passkey_digits = 2;
  o.passkey_samples = 1;
  const std::unique_ptr<data::Task> t = data::make_task(o);
  CHECK(t->vocab() == 16);
  CHECK(t->entropy_rate() == 0.0);
  CHECK(contains(t->describe(), "passkey:"));
  const auto& task = dynamic_cast<const data::PasskeyTask&>(*t);
  Tensor x, y;
  task.held_out(data::Split::test, 16, x, y);
  CHECK(x.shape() == Shape{10, 16});
  const std::vector<double> xs = x.to_vector(), ys = y.to_vector();
  // The key marker (14) and the digits 4 and 5 (ids 8, 9) at place 1, the query marker (15) at 16 - 2 = 14.
  CHECK(std::vector<double>(xs.begin(), xs.begin() + 16) ==
        std::vector<double>{3, 14, 8, 9, 0, 2, 0, 3, 1, 1, 3, 3, 0, 0, 15, 8});
  CHECK(std::vector<double>(ys.begin() + 12, ys.begin() + 16) == std::vector<double>{-100, -100, 8, 9});
}

// passkey_text: the filler is a text task's (here bytes); four-word documents split at valid 0.03 and test 0.14
// (theta's digest reads 0.129: test; epsilon's 0.154: valid; the others 0.175 to 0.568: train). The first held-out sample
// pinned: a run of the test split's bytes around the key block, the markers and digits the ids after the 256 bytes.
void passkey_text_golden() {
  TempDir dir("task_registry_passkey_text");
  const char* words[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"};
  for (int i = 0; i < 8; ++i)
    std::ofstream(dir.path / (std::string(1, char('a' + i)) + ".txt")) << words[i] << " " << words[i] << " "
                                                                      << words[i] << " " << words[i] << "\n";
  data::TaskOptions o;
  o.kind = "passkey_text";
  o.path = dir.path.string();
  o.valid_fraction = 0.03;
  o.test_fraction = 0.14;
  o.passkey_digits = 2;
  o.passkey_samples = 1;
  const std::unique_ptr<data::Task> t = data::make_task(o);
  CHECK(t->vocab() == 256 + 12);
  CHECK(t->entropy_rate() == 0.0);
  CHECK(contains(t->describe(), "passkey: 2 digits at a uniform depth in filler from one's own text"));
  const auto& task = dynamic_cast<const data::PasskeyTask&>(*t);
  const data::Task& text = task.data_source();
  CHECK(&text != t.get());
  CHECK(text.tokenizer() != nullptr);
  CHECK(text.test_stream().to_vector(0, text.test_stream().size()) ==
        std::vector<int32_t>(std::begin("theta theta theta theta\n"), std::end("theta theta theta theta\n") - 1));
  CHECK(text.valid_stream().size() == 32);  // epsilon's four words
  CHECK(text.train_stream().size() == 128);
  Tensor x, y;
  task.held_out(data::Split::test, 16, x, y);
  CHECK(x.shape() == Shape{10, 16});
  const std::vector<double> xs = x.to_vector(), ys = y.to_vector();
  // "theta theta" from the test split's start, the key block (266, then 1 and 9: ids 257, 265) at place 1, the query
  // marker (267) at 16 - 2 = 14.
  std::vector<double> want = {116, 266, 257, 265};
  for (const char c : std::string("heta theta")) want.push_back(c);
  want.insert(want.end(), {267, 257});
  CHECK(std::vector<double>(xs.begin(), xs.begin() + 16) == want);
  CHECK(std::vector<double>(ys.begin() + 12, ys.begin() + 16) == std::vector<double>{-100, -100, 257, 265});
  CHECK(task.decode(std::vector<int32_t>(xs.begin(), xs.begin() + 16)) == "t<key>19heta theta<query>1");
}

std::vector<TaskCase> task_cases() {
  return {
      {"markov",
       [] {
         check_streams(token_options("markov"),
                       {1000, 300, 300, {2, 1, 1, 3, 3, 0, 0, 1, 0, 0, 1, 0}, {3, 3, 0, 0, 1, 0, 0, 2, 0, 2, 0, 2},
                        {1, 3, 3, 0, 0, 0, 1, 0, 0, 2, 0, 2}, 4, 0.91923252025452784});
       }},
      {"lag",
       [] {
         check_streams(token_options("lag"),
                       {1000, 300, 300, {1, 0, 0, 1, 1, 0, 2, 1, 0, 2, 0, 0}, {1, 1, 2, 1, 1, 2, 1, 1, 2, 1, 1, 2},
                        {0, 0, 0, 2, 3, 2, 2, 3, 2, 2, 3, 2}, 4, 0.58750093110620727});
       }},
      {"kjv", kjv_golden},
      {"text", text_golden},
      {"grid2d", grid2d_golden},
      {"passkey", passkey_golden},
      {"passkey_text", passkey_text_golden},
      {"count",
       [] {
         data::TaskOptions o = token_options("count");
         o.vocab = 5;
         check_streams(o, {1000, 300, 300, {3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4}, {2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3},
                           {1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2}, 5, 0.0});
       }},
  };
}

// The registered tasks without a case in `cases`.
std::vector<std::string> without_case(const std::vector<TaskCase>& cases) {
  std::vector<std::string> missing;
  for (const data::TaskInfo& t : data::tasks())
    if (std::none_of(cases.begin(), cases.end(), [&](const TaskCase& c) { return c.task == t.name; }))
      missing.emplace_back(t.name);
  return missing;
}

}  // namespace task_registry_test

using namespace task_registry_test;

TEST_CASE("task registry: every registered task has a golden case, and it passes") {
  const Registered count(kCountRow);
  const std::vector<TaskCase> cases = task_cases();
  CHECK_MESSAGE(without_case(cases).empty(), "registered tasks without a golden case (add one to task_cases()): ",
                rpb::join(without_case(cases), ", "));
  std::set<std::string> registered;
  for (const data::TaskInfo& t : data::tasks()) {
    registered.insert(t.name);
    INFO("task: ", std::string(t.name));
    const auto it = std::find_if(cases.begin(), cases.end(), [&](const TaskCase& c) { return c.task == t.name; });
    REQUIRE(it != cases.end());
    it->golden();
  }
  // And no case for a task that is not registered (a renamed or removed one).
  for (const TaskCase& c : cases) CHECK_MESSAGE(registered.count(c.task) == 1, c.task);
  // A task registered without a case is found.
  const data::TaskInfo bare{"no_golden_case", 1, "a task without tests", make_count, nullptr, count_memory,
                            data::HeldOut::eval_tokens, false};
  const Registered without(bare);
  CHECK(without_case(cases) == std::vector<std::string>{"no_golden_case"});
}

TEST_CASE("task registry: rows read consistently, and what reads them follows") {
  std::set<std::string> names;
  for (const data::TaskInfo& t : data::tasks()) {
    INFO("task: ", std::string(t.name));
    CHECK(names.insert(t.name).second);
    CHECK((t.dims == 1 || t.dims == 2));
    CHECK(t.summary != nullptr);
    CHECK(static_cast<bool>(t.memory));
    CHECK((t.make != nullptr) == (t.dims == 1));               // a 2-D task is built by the grid workload
    CHECK((t.held_out == data::HeldOut::grids) == (t.dims == 2));  // grids draw their own held-out cells
    // Training holds data, an evaluation no more than training, a generation no more than an evaluation.
    const data::TaskOptions o;
    const int64_t train = t.memory(o, data::DataUse::train).bytes;
    const int64_t evaluate = t.memory(o, data::DataUse::evaluate).bytes;
    CHECK(train > 0);
    CHECK(evaluate <= train);
    CHECK(t.memory(o, data::DataUse::generate).bytes <= evaluate);
    CHECK(data::task_dims(t.name) == t.dims);
    CHECK(&data::task_info(t.name) == &t);
    CHECK(contains(data::task_help(), std::string("  ") + t.name + " "));
  }
  CHECK(data::task_names() == std::vector<std::string>{"markov", "lag", "kjv", "text", "passkey", "passkey_text", "grid2d"});
  CHECK(data::task_names(2) == std::vector<std::string>{"grid2d"});
  CHECK(data::find_task("fibonacci") == nullptr);
  CHECK(contains(error_of([] { data::task_info("makrov"); }),
                 "task.kind must be one of markov, lag, kjv, text, passkey, passkey_text, grid2d; got \"makrov\" (did you mean \"markov\"?)"));
  data::TaskOptions grid;
  grid.kind = "grid2d";
  CHECK(contains(error_of([&] { data::make_task(grid); }), "a 2-D task: the grid workload builds it"));
  // The test hook refuses a second row of a name and removes only what it added.
  CHECK(contains(error_of([] { data::register_task(kCountRow), data::register_task(kCountRow); }), "already registered"));
  data::remove_task("count");
  CHECK(contains(error_of([] { data::remove_task("markov"); }), "no task 'markov' was registered"));
  CHECK(data::task_names().size() == 7);
}

TEST_CASE("task registry: a task added from the tests trains end to end (config, memory estimate, trainer, eval)") {
  TempDir tmp("task_registry_toy");
  const Registered count(kCountRow);
  const std::string text = "[run]\nname = \"toy\"\nout_dir = \"" + tmp.path.string() +
                           "\"\nsteps = 40\nbatch = 8\nlength = 8\nlog_every = 20\n"
                           "eval_multipliers = [1, 2]\neval_tokens = 64\n"
                           "[model]\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\n"
                           "[position]\nscheme = \"alibi\"\n"
                           "[task]\nkind = \"count\"\nvocab = 5\ntrain_tokens = 2048\neval_tokens = 256\n"
                           "[optim]\nlr = 1e-2\n";
  const RunConfig c = parse_config(text, "toy.toml");
  CHECK(c.dims() == 1);
  CHECK(contains(c.text, "kind = 'count'"));
  // The config checks the evaluation lengths against the row's held-out rule (a stream of task.eval_tokens).
  CHECK(contains(error_of([&] { parse_config(text, "toy.toml", {"task.eval_tokens=12"}); }),
                 "the count test stream has task.eval_tokens = 12"));
  CHECK(contains(error_of([&] { parse_config(text, "toy.toml", {"task.kind=\"counter\""}); }), "count"));
  // The estimate's data part is the row's streams, the evaluation segments and a training batch.
  CHECK(vocab_bound(c) == 5);
  const MemoryEstimate e = estimate_memory(c, vocab_bound(c));
  CHECK(e.data.bytes == (2048 + 2 * 256) * 4 + 64 * 2 * 8 * 2 + 8 * 8 * 2 * 8);
  CHECK(std::string(e.data.key) == "task.train_tokens");
  Run run(c);
  const TrainSummary s = run.train(false);
  CHECK(s.step == 40);
  CHECK(contains(run.describe(), "count: x_t = x_{t-1} + 1 mod 5"));
  const std::vector<LengthResult> r = run.evaluate();
  REQUIRE(r.size() == 2);
  REQUIRE(r[0].perplexity());
  CHECK(*r[0].perplexity() < 2.0);  // a counter is learned quickly: far below the uniform 5
  CHECK(contains(error_of([&] { run.evaluate({}, 1000); }), "held-out test stream"));
}
