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
#include "train/data/algorithmic.h"
#include "train/data/eval_segments.h"
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

// An algorithmic task (train/data/algorithmic.h) in its literature's framing: its vocabulary (the alphabet and three
// framing tokens) and its first held-out sample at length 4 (mqar: 1 pair), each checked by hand in the comment.
void check_algorithmic(const std::string& kind, int64_t vocab, const std::vector<double>& x,
                       const std::vector<double>& y) {
  data::TaskOptions o;
  o.kind = kind;
  o.seed = 3;
  o.eval_samples = 1;
  if (kind == "mqar") o.alphabet = 16;
  o.causal = data::find_task(kind)->algorithmic->literature == data::Framing::decoder;
  const std::unique_ptr<data::Task> t = data::make_task(o);
  CHECK(t->vocab() == vocab);
  CHECK(t->entropy_rate() == 0.0);
  CHECK(contains(t->describe(), kind + ":"));
  Tensor inputs, targets;
  std::vector<uint8_t> scored;
  dynamic_cast<const data::AlgorithmicTask&>(*t).held_out(data::Split::test, kind == "mqar" ? 1 : 4, inputs, targets,
                                                          scored);
  CHECK(inputs.to_vector() == x);
  CHECK(targets.to_vector() == y);
}

std::vector<TaskCase> algorithmic_cases() {
  const double u = data::kUnscoredTarget;
  return {
      // 0 0 1 0: odd
      {"parity_check", [=] { check_algorithmic("parity_check", 5, {0, 0, 1, 0, 2}, {u, u, u, u, 1}); }},
      // L 4 loses a position: 3 + 0 = 3 (mod 5), the blank 8
      {"modular_arithmetic", [=] { check_algorithmic("modular_arithmetic", 11, {3, 5, 0, 8}, {u, u, u, 3}); }},
      // +1 0 -1 -1 from place 0: place 4, id 7
      {"cycle_navigation", [=] { check_algorithmic("cycle_navigation", 11, {2, 1, 0, 0, 8}, {u, u, u, u, 7}); }},
      {"reverse_string",
       [=] { check_algorithmic("reverse_string", 5, {0, 0, 1, 0, 2, 2, 2, 2}, {u, u, u, u, 0, 1, 0, 0}); }},
      // stack 0 1 0, PUSH 1: 1 0 1 0 top first, the end token 5
      {"stack_manipulation",
       [=] {
         check_algorithmic("stack_manipulation", 9, {0, 1, 0, 4, 6, 6, 6, 6, 6}, {u, u, u, u, 1, 0, 1, 0, 5});
       }},
      {"duplicate_string",
       [=] {
         check_algorithmic("duplicate_string", 5, {0, 0, 1, 0, 2, 2, 2, 2, 2, 2, 2, 2},
                           {u, u, u, u, 0, 0, 1, 0, 0, 0, 1, 0});
       }},
      // "1" + "10" little-endian: 1 + 1 = 2 = "01", the end token 3, then padding
      {"binary_addition",
       [=] { check_algorithmic("binary_addition", 7, {1, 2, 1, 0, 4, 4, 4, 4, 4}, {u, u, u, u, 0, 1, 3, 0, 0}); }},
      {"bucket_sort",
       [=] { check_algorithmic("bucket_sort", 8, {3, 0, 3, 2, 5, 5, 5, 5}, {u, u, u, u, 0, 2, 3, 3}); }},
      // the decoder: the input, the separator 101, the answer; the end token 102 the last target
      {"copy",
       [=] {
         check_algorithmic("copy", 103, {88, 50, 73, 92, 101, 88, 50, 73, 92}, {u, u, u, u, 88, 50, 73, 92, 102});
       }},
      // 9203 + 9 = 9212, the separator 12 and the end token 13
      {"addition",
       [=] {
         check_algorithmic("addition", 14, {9, 2, 0, 3, 10, 9, 12, 9, 2, 1, 2}, {u, u, u, u, u, u, 9, 2, 1, 2, 13});
       }},
      // the pair 3 -> 8, key 3 asked again at position 10, its target the value
      {"mqar",
       [=] {
         check_algorithmic("mqar", 19, {3, 8, 14, 5, 15, 10, 1, 6, 14, 2, 3, 9, 13, 12, 15, 3},
                           {u, u, u, u, u, u, u, u, u, u, 8, u, u, u, u, u});
       }},
      // w 0, r 0, i 0, r: each read answers 0 (id 3)
      {"flip_flop", [=] { check_algorithmic("flip_flop", 8, {0, 3, 1, 3, 2, 3, 1}, {u, u, 3, u, u, u, 3}); }},
  };
}

std::vector<TaskCase> task_cases() {
  std::vector<TaskCase> cases = {
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
  for (TaskCase& c : algorithmic_cases()) cases.push_back(std::move(c));
  return cases;
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
    CHECK((train > 0) == (t.algorithmic == nullptr));  // an algorithmic task holds no data: it draws its samples
    CHECK(evaluate <= train);
    CHECK(t.memory(o, data::DataUse::generate).bytes <= evaluate);
    CHECK(data::task_dims(t.name) == t.dims);
    CHECK(&data::task_info(t.name) == &t);
    CHECK(contains(data::task_help(), std::string("  ") + t.name + " "));
  }
  // The built-in rows, then one per algorithmic spec in its order.
  std::vector<std::string> built_in{"markov", "lag", "kjv", "text", "passkey", "passkey_text", "grid2d"};
  for (const data::AlgorithmicSpec& s : data::algorithmic_specs()) built_in.emplace_back(s.name);
  CHECK(data::task_names() == built_in);
  CHECK(data::algorithmic_specs().size() == 12);
  CHECK(data::task_names(2) == std::vector<std::string>{"grid2d"});
  CHECK(data::find_task("fibonacci") == nullptr);
  CHECK(contains(error_of([] { data::task_info("makrov"); }),
                 "task.kind must be one of markov, lag, kjv, text, passkey, passkey_text, grid2d, parity_check, "
                 "modular_arithmetic"));
  CHECK(contains(error_of([] { data::task_info("makrov"); }), "flip_flop; got \"makrov\" (did you mean \"markov\"?)"));
  data::TaskOptions grid;
  grid.kind = "grid2d";
  CHECK(contains(error_of([&] { data::make_task(grid); }), "a 2-D task: the grid workload builds it"));
  // The test hook refuses a second row of a name and removes only what it added.
  CHECK(contains(error_of([] { data::register_task(kCountRow), data::register_task(kCountRow); }), "already registered"));
  data::remove_task("count");
  CHECK(contains(error_of([] { data::remove_task("markov"); }), "no task 'markov' was registered"));
  CHECK(data::task_names() == built_in);
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
