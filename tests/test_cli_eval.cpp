// `rpb train` and `rpb eval` record every evaluation in the run folder; eval takes a run folder, `latest` or a file,
// --tokens, --json and --out; `rpb generate` from the command line.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "test_util.h"
#include "train/data/task.h"
#include "train/io/json_text.h"
#include "train/io/sha256.h"
#include "train/run/latest.h"

namespace fs = std::filesystem;
using rpb::testing::CommandResult;
using rpb::testing::contains;
using rpb::testing::file_text;
using rpb::testing::lines_stamped_otherwise;
using rpb::testing::run_rpb;
using rpb::testing::TempDir;

namespace {

// A run of `kind` (markov, kjv, grid2d) trained briefly: <dir>/<kind>.toml, run folder <dir>/<kind>.
std::string write_config(const fs::path& dir, const std::string& kind, const std::string& extra = "") {
  std::string run = "[run]\nname = \"" + kind + "\"\nout_dir = \"" + dir.string() +
                    "\"\nsteps = 20\nbatch = 4\nlog_every = 10\n";
  std::string task = "[task]\nkind = \"" + kind + "\"\n";
  if (kind == "markov") {
    run += "length = 16\neval_multipliers = [1, 2, 4]\neval_tokens = 256\n";
    task += "vocab = 5\norder = 1\ntrain_tokens = 4096\neval_tokens = 2048\n";
  } else if (kind == "kjv") {
    run += "length = 8\neval_multipliers = [1, 2]\neval_tokens = 32\n";
    task += "kjv_path = \"" + (dir / "kjv.txt").string() + "\"\n";
  } else {
    run += "length = 4\neval_multipliers = [1, 2]\neval_tokens = 64\n";
    task += "vocab = 4\n";
  }
  const std::string model = "[model]\nd_model = 16\nheads = 2\nlayers = 1\nd_ff = 32\n";
  const fs::path file = dir / (kind + ".toml");
  std::ofstream(file) << run << model << task << extra;
  return file.string();
}

// An eval record's JSON without its provenance: the command line and the date of two evaluations differ.
std::string sans_provenance(const std::string& text) {
  rpb::Json j = rpb::Json::parse(text);
  j.erase("provenance");
  return j.dump(2);
}

// stdout alone (stderr dropped): run_rpb's "2>&1" applies to `exit` after "; exit $?".
CommandResult rpb_stdout(const std::string& args) { return run_rpb(args + " 2>/dev/null; exit $?"); }

// The numbers of every `"key": number` in a JSON text, in order (null skipped).
std::vector<double> json_values(const std::string& json, const std::string& key) {
  std::vector<double> out;
  const std::regex re("\"" + key + "\": ([-0-9.e+]+)");
  for (std::sregex_iterator it(json.begin(), json.end(), re), end; it != end; ++it) out.push_back(std::stod((*it)[1]));
  return out;
}

// Braces and brackets balance outside strings, and the text is one object: a minimal well-formedness check.
bool balanced_object(const std::string& json) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth < 0) {
      return false;
    }
  }
  return depth == 0 && !in_string && json.front() == '{' && json.substr(json.size() - 2) == "}\n";
}

std::string fixed4(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

}  // namespace

TEST_CASE("train and eval record the evaluation in <run>/eval/, with the numbers they print") {
  TempDir tmp("evalrec");
  const std::string cfg = write_config(tmp.path, "markov");
  const CommandResult train = rpb_stdout("train " + cfg);
  REQUIRE(train.code == 0);
  const fs::path run = tmp.path / "markov", record = run / "eval" / "step_00000020-256.json";
  REQUIRE(fs::exists(record));
  const std::string json = file_text(record);
  CHECK(balanced_object(json));
  CHECK(contains(json, "\"checkpoint\": \"step_00000020.h5\""));
  CHECK(contains(json, "\"step\": 20,"));
  CHECK(contains(json, "\"checkpoint_sha256\": \"" + rpb::sha256_file((run / "step_00000020.h5").string()) + "\""));
  const std::string first_line = file_text(run / "config.toml").substr(0, 100);  // "# config_digest = <hex> (..."
  REQUIRE(first_line.rfind("# config_digest = ", 0) == 0);
  CHECK(contains(json, "\"config_digest\": \"" + first_line.substr(18, 64) + "\""));
  CHECK(contains(json, "\"train_length\": 16,"));
  const std::vector<double> nll = json_values(json, "nll"), ppl = json_values(json, "perplexity");
  REQUIRE(nll.size() == 3);
  REQUIRE(ppl.size() == 3);
  CHECK(json_values(json, "tokens") == std::vector<double>{256, 256, 256, 256});  // the top level and each length
  CHECK(json_values(json, "optimal_perplexity").size() == 4);
  const int lengths[] = {16, 32, 64};
  for (int i = 0; i < 3; ++i) {
    CHECK(std::abs(ppl[i] - std::exp(nll[i])) < 1e-9 * ppl[i]);
    CHECK(contains(train.out, "| " + std::to_string(lengths[i]) + " | " + std::to_string(lengths[i] / 16) + "x | " +
                                  fixed4(nll[i]) + " | " + fixed4(ppl[i]) + " |"));
  }
  CHECK(contains(file_text(run / "train.log"), "recorded in eval/step_00000020-256.json: perplexity 16="));
  // The run's lines and the evaluation's, in one timestamp layout (train/run/log_format.h).
  CHECK(lines_stamped_otherwise(file_text(run / "train.log"), /*every_line=*/true).empty());
  // A run resumed at its last step saves nothing: its record names the digest of the checkpoint it loaded.
  fs::remove(record);
  REQUIRE(rpb_stdout("train " + cfg + " --resume").code == 0);
  CHECK(contains(file_text(record),
                 "\"checkpoint_sha256\": \"" + rpb::sha256_file((run / "step_00000020.h5").string()) + "\""));

  // The folder, its `latest` file and the checkpoint file are one checkpoint: the same table, the same record.
  for (const fs::path& arg : {run, run / "latest", run / "step_00000020.h5"}) {
    CAPTURE(arg);
    fs::remove(record);
    const CommandResult eval = rpb_stdout("eval " + arg.string());
    CHECK(eval.code == 0);
    CHECK(eval.out == train.out);
    CHECK(sans_provenance(file_text(record)) == sans_provenance(json));
  }
  const CommandResult as_json = rpb_stdout("eval " + run.string() + " --json");
  CHECK(as_json.code == 0);
  CHECK(sans_provenance(as_json.out) == sans_provenance(json));
  const CommandResult both = run_rpb("eval " + run.string());
  CHECK(contains(both.out, "evaluation recorded in " + record.string()));

  // The record carries the attention per length, layer (1) and head (2); --diagnostics prints the same numbers
  // after the perplexity table.
  const std::vector<double> distance = json_values(json, "mean_distance"), entropy = json_values(json, "entropy");
  REQUIRE(distance.size() == 6);
  REQUIRE(entropy.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(distance[i] >= 0);
    CHECK(distance[i] <= lengths[i / 2] - 1);  // causal: never past the first token
    CHECK(entropy[i] <= std::log(lengths[i / 2]) + 1e-9);
  }
  const CommandResult diag = rpb_stdout("eval " + run.string() + " --diagnostics --no-record");
  CHECK(diag.code == 0);
  CHECK(diag.out.rfind(train.out, 0) == 0);  // the perplexity table as without the flag, then the tables
  CHECK(contains(diag.out, "\nAttention at length 64 (4x): mean distance"));
  CHECK(contains(diag.out, "| layer | head | mean distance | entropy |"));
  char row[96];
  std::snprintf(row, sizeof row, "| 0 | 1 | %.3f | %.3f |", distance[5], entropy[5]);
  CHECK(contains(diag.out.substr(diag.out.find("length 64")), row));
}

TEST_CASE("eval --tokens goes past run.eval_tokens and the markov test stream, scoring exactly N tokens") {
  TempDir tmp("evaltok");
  REQUIRE(rpb_stdout("train " + write_config(tmp.path, "markov")).code == 0);
  const fs::path run = tmp.path / "markov";
  // task.eval_tokens = 2048: the test stream is generated longer for 4096.
  const CommandResult r = rpb_stdout("eval " + run.string() + " --tokens 4096 --lengths 16,64 --json");
  REQUIRE(r.code == 0);
  CHECK(balanced_object(r.out));
  CHECK(json_values(r.out, "tokens") == std::vector<double>{4096, 4096, 4096});
  CHECK(json_values(r.out, "length") == std::vector<double>{16, 64});
  CHECK(file_text(run / "eval" / "step_00000020-4096-L16_64.json") == r.out);
  const CommandResult few = run_rpb("eval " + run.string() + " --tokens 32");
  CHECK(few.code == 1);
  CHECK(contains(few.out, "--tokens 32 is fewer than the longest length 64"));
}

TEST_CASE("eval --stride: sliding windows, said in the table and the record's name, S = L the plain numbers") {
  TempDir tmp("evalstride");
  REQUIRE(rpb_stdout("train " + write_config(tmp.path, "markov")).code == 0);
  const fs::path run = tmp.path / "markov";
  const CommandResult plain = rpb_stdout("eval " + run.string() + " --json --no-record");
  const CommandResult table = rpb_stdout("eval " + run.string() + " --stride 16");
  REQUIRE(plain.code == 0);
  REQUIRE(table.code == 0);
  CHECK(contains(table.out, "\nProtocol: sliding window, stride 16 (windows of each length advanced by S = 16, each "
                            "scoring its last S targets"));
  CHECK(contains(rpb_stdout("eval " + run.string() + " --no-record").out, "\nProtocol: nonoverlapping segments"));
  const fs::path record = run / "eval" / "step_00000020-256-S16.json";
  REQUIRE(fs::exists(record));
  const std::string json = file_text(record);
  CHECK(contains(json, "\"protocol\": \"sliding_window\""));
  CHECK(contains(json, "\"stride\": 16"));
  const std::vector<double> a = json_values(plain.out, "nll"), b = json_values(json, "nll");
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == 3);
  CHECK(a[0] == b[0]);  // length 16 = S: the nonoverlapping number
  CHECK(a[2] != b[2]);  // length 64: windows advanced by 16
  CHECK(json_values(json, "tokens") == json_values(plain.out, "tokens"));
  const CommandResult above = run_rpb("eval " + run.string() + " --stride 17");
  CHECK(above.code == 1);
  CHECK(contains(above.out, "--stride 17 (run.eval_stride) is longer than the evaluation length 16"));
  CHECK(run_rpb("eval " + run.string() + " --stride 17 --lengths 32,64 --no-record").code == 0);
  REQUIRE(rpb_stdout("train " + write_config(tmp.path, "grid2d")).code == 0);
  const CommandResult grid = run_rpb("eval " + (tmp.path / "grid2d").string() + " --stride 2");
  CHECK(grid.code == 1);
  CHECK(contains(grid.out, "--stride 2 (run.eval_stride): sliding-window evaluation scores a token stream"));
}

TEST_CASE("eval of a checkpoint outside a run folder writes nothing unless --out, --no-record, no link is followed") {
  TempDir tmp("evalshared");
  REQUIRE(rpb_stdout("train " + write_config(tmp.path, "markov")).code == 0);
  const fs::path run = tmp.path / "markov", shared = tmp.path / "shared";
  fs::create_directories(shared);
  fs::copy_file(run / "step_00000020.h5", shared / "model.h5");
  CHECK(rpb_stdout("eval " + (shared / "model.h5").string()).code == 0);
  CHECK(fs::directory_iterator(shared) != fs::directory_iterator());
  CHECK(std::distance(fs::directory_iterator(shared), fs::directory_iterator()) == 1);  // model.h5 alone
  const fs::path out = tmp.path / "record.json";
  CHECK(rpb_stdout("eval " + (shared / "model.h5").string() + " --out " + out.string()).code == 0);
  CHECK(contains(file_text(out), "\"checkpoint\": \"model.h5\""));
  CHECK(std::distance(fs::directory_iterator(shared), fs::directory_iterator()) == 1);

  fs::remove_all(run / "eval");
  CHECK(rpb_stdout("eval " + run.string() + " --no-record").code == 0);
  CHECK(!fs::exists(run / "eval"));
  fs::create_directory_symlink(shared, run / "eval");
  const CommandResult linked = run_rpb("eval " + run.string());
  CHECK(linked.code == 1);
  CHECK(contains(linked.out, (run / "eval").string() + " is a symbolic link, which rpb does not follow"));
  CHECK(std::distance(fs::directory_iterator(shared), fs::directory_iterator()) == 1);
}

namespace {

// A text run of bytes trained briefly on <dir>/corpus.txt (a copy of the GPL): its run folder <dir>/t.
fs::path train_bytes_text_run(const fs::path& dir) {
  const fs::path corpus = dir / "corpus.txt";
  fs::copy_file("/usr/share/common-licenses/GPL-3", corpus);
  const fs::path config = dir / "text.toml";
  std::ofstream(config) << "[run]\nname = \"t\"\nout_dir = \"" << dir.string()
                        << "\"\nsteps = 2\nbatch = 2\nlength = 16\nlog_every = 1\neval_multipliers = [1]\n"
                           "eval_tokens = 64\n[model]\nd_model = 8\nheads = 2\nlayers = 1\nd_ff = 16\n[task]\n"
                           "kind = \"text\"\npath = \"" << corpus.string()
                        << "\"\ndocuments = \"blank_lines\"\ntokenizer = \"bytes\"\nvalid_fraction = 0.1\n"
                           "test_fraction = 0.1\n[optim]\nwarmup_steps = 1\n";
  REQUIRE(rpb_stdout("train " + config.string()).code == 0);
  return dir / "t";
}

}  // namespace

TEST_CASE("eval --data: what cannot be a text (a FIFO, a device, a missing path) is refused naming the flag") {
  TempDir tmp("evaldata");
  const fs::path run = train_bytes_text_run(tmp.path), fifo = tmp.path / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto records = [&] { return std::distance(fs::directory_iterator(run / "eval"), fs::directory_iterator()); };
  const auto before = records();
  for (const auto& one : std::vector<std::pair<std::string, std::string>>{
           {fifo.string(), ": is a FIFO; expected the text to evaluate on"},
           {"/dev/null", ": is a character device; expected the text to evaluate on"},
           {(tmp.path / "gone.txt").string(), ": does not exist; expected the text to evaluate on"}}) {
    const std::string& path = one.first;  // no structured binding: clang 14 cannot capture one (CAPTURE)
    const std::string& what = one.second;
    CAPTURE(path);
    const CommandResult r = run_rpb("eval " + run.string() + " --data " + path);
    CHECK(r.code == 1);
    CHECK(contains(r.out, "eval --data " + path + what));
    CHECK(!contains(r.out, "task.path"));  // the stored config's key, not what the user gave
  }
  // What the text task finds in the file names the flag too.
  const fs::path latin1 = tmp.path / "latin1.txt";
  std::ofstream(latin1, std::ios::binary) << "caf\xe9\n";
  const CommandResult bad = run_rpb("eval " + run.string() + " --data " + latin1.string());
  CHECK(bad.code == 1);
  CHECK(contains(bad.out, "eval --data: " + latin1.string() + " is not UTF-8 text"));
  CHECK(!contains(bad.out, "task.path"));
  CHECK(records() == before);
}

TEST_CASE("eval of a text run reads its recorded task.path when it holds the training text, else names --data") {
  TempDir tmp("evalrecorded");
  const fs::path run = train_bytes_text_run(tmp.path), corpus = tmp.path / "corpus.txt", copy = tmp.path / "copy.txt";
  fs::copy_file(corpus, copy);
  const CommandResult recorded = rpb_stdout("eval " + run.string() + " --no-record");
  CHECK_MESSAGE(recorded.code == 0, recorded.out);
  CHECK(recorded.out == rpb_stdout("eval " + run.string() + " --data " + corpus.string() + " --no-record").out);
  // The splits it did not encode are not built, not of 0 tokens; the test split's tokens are counted.
  CHECK(std::regex_search(recorded.out, std::regex("train \\d+ documents, \\d+ bytes, not built; valid \\d+ "
                                                   "documents, \\d+ bytes, not built; test \\d+ documents, \\d+ "
                                                   "bytes, [1-9]\\d* tokens")));
  CHECK(!contains(recorded.out, " 0 tokens"));
  // Other text at the recorded path: refused by its digest, naming the key, --data and --other-text.
  std::ofstream(corpus, std::ios::app) << "\nA paragraph the training text did not hold.\n";
  const CommandResult other = run_rpb("eval " + run.string() + " --no-record");
  CHECK(other.code == 2);
  CHECK(contains(other.out, "eval: the corpus " + corpus.string() + " (task.path) is not the one "));
  CHECK(contains(other.out, "pass the training text with --data, or --other-text to eval on this one"));
  const CommandResult intended = rpb_stdout("eval " + run.string() + " --other-text --no-record");
  CHECK(intended.code == 0);
  CHECK(contains(intended.out, "on another text than the training text"));
  CHECK(rpb_stdout("eval " + run.string() + " --data " + copy.string() + " --no-record").code == 0);
  // Nothing at the recorded path, or what cannot be a text (a FIFO, which is never opened): --data names another.
  fs::remove(corpus);
  const CommandResult gone = run_rpb("eval " + run.string() + " --no-record");
  CHECK(gone.code == 2);
  CHECK(contains(gone.out, "was trained on task.path " + corpus.string()));
  CHECK(contains(gone.out, "which does not exist now; pass the text to evaluate on with --data PATH"));
  REQUIRE(::mkfifo(corpus.c_str(), 0600) == 0);
  const CommandResult fifo = run_rpb("eval " + run.string() + " --no-record");
  CHECK(fifo.code == 2);
  CHECK(contains(fifo.out, "which is a FIFO now; pass the text to evaluate on with --data PATH"));
  CHECK(rpb_stdout("eval " + run.string() + " --data " + copy.string() + " --no-record").code == 0);
}

TEST_CASE("generate prints a text run's bytes as UTF-8, an invalid sequence as U+FFFD, and ends with a newline") {
  TempDir tmp("gentext");
  const std::string run = train_bytes_text_run(tmp.path).string();
  // The prompt's bytes come back: 0xd3 without its continuation and a cut 3-byte sequence are one U+FFFD each.
  const CommandResult prompt =
      rpb_stdout("generate " + run + " --prompt \"$(printf 'a\\323n \\342\\202')\" --tokens 0");
  CHECK(prompt.code == 0);
  CHECK(prompt.out == "a\xef\xbf\xbdn \xef\xbf\xbd\n");
  const CommandResult sampled = rpb_stdout("generate " + run + " --prompt \"$(printf '\\323 ')\" --tokens 20 --seed 3");
  CHECK(sampled.code == 0);
  CHECK(sampled.out.rfind("\xef\xbf\xbd ", 0) == 0);
  CHECK(sampled.out.back() == '\n');
}

TEST_CASE("generate from a markov run: ids, deterministic for a seed, bad prompts exit 2, learned tables end") {
  TempDir tmp("genmarkov");
  REQUIRE(rpb_stdout("train " + write_config(tmp.path, "markov", "[position]\nscheme = \"learned\"\nmax_positions = 64\n"))
              .code == 0);
  const std::string run = (tmp.path / "markov").string();
  const CommandResult a = rpb_stdout("generate " + run + " --prompt \"1 2,3\" --tokens 30 --seed 7");
  REQUIRE(a.code == 0);
  CHECK(a.out.rfind("1 2 3 ", 0) == 0);
  CHECK(std::count(a.out.begin(), a.out.end(), ' ') == 32);  // 33 ids
  CHECK(rpb_stdout("generate " + run + "/latest --prompt \"1 2,3\" --tokens 30 --seed 7").out == a.out);
  CHECK(rpb_stdout("generate " + run + " --prompt \"1 2,3\" --tokens 30 --seed 7 --no-cache").out == a.out);
  const CommandResult greedy = rpb_stdout("generate " + run + " --prompt 4 --tokens 10 --temperature 0");
  CHECK(greedy.code == 0);
  const CommandResult bad = run_rpb("generate " + run + " --prompt \"1 5\"");
  CHECK(bad.code == 2);
  CHECK(contains(bad.out, "--prompt: expected token ids in [0, 5) separated by spaces or commas, found \"5\""));
  const CommandResult far = run_rpb("generate " + run + " --prompt 1 --tokens 64");
  CHECK(far.code == 1);
  CHECK(contains(far.out, "make 65 positions, past the 64 the learned scheme runs at (position.max_positions = 64)"));
  CHECK(rpb_stdout("generate " + run + " --prompt 1 --tokens 63").code == 0);
}

TEST_CASE("kjv: generate prints text from a prompt of the vocabulary, eval refuses more tokens than the test split") {
  TempDir tmp("genkjv");
  {
    std::ofstream f(tmp.path / "kjv.txt");
    for (int b = 0; b < 12; ++b)
      f << (b ? "\n" : "") << "Book " << char('A' + b) << " verse one.\nAnd the second verse of it!\nThe third.\n";
  }
  REQUIRE(rpb_stdout("train " + write_config(tmp.path, "kjv")).code == 0);
  const std::string run = (tmp.path / "kjv").string(), text = " --kjv-path " + (tmp.path / "kjv.txt").string();
  const CommandResult g = rpb_stdout("generate " + run + text + " --prompt Book --tokens 20 --seed 1");
  REQUIRE(g.code == 0);
  CHECK(g.out.rfind("Book", 0) == 0);
  CHECK(g.out.size() == 4 + 20 + 1);  // every character of this text prints as itself; a final newline
  const CommandResult bad = run_rpb("generate " + run + text + " --prompt Boox");
  CHECK(bad.code == 2);
  CHECK(contains(bad.out, "--prompt: character \"x\" at byte 3 is not in the kjv vocabulary"));

  rpb::data::TaskOptions o;
  o.kind = "kjv";
  o.kjv_path = (tmp.path / "kjv.txt").string();
  const int64_t held_out = static_cast<int64_t>(rpb::data::make_task(o)->test_stream().size()) - 1;
  const CommandResult many = run_rpb("eval " + run + text + " --tokens " + std::to_string(held_out + 16));
  CHECK(many.code == 1);
  CHECK(contains(many.out, "holds " + std::to_string(held_out) + " target tokens (the kjv test split is fixed)"));
  const int64_t fits = held_out / 16 * 16;
  const CommandResult ok = rpb_stdout("eval " + run + text + " --json --tokens " + std::to_string(fits));
  CHECK(ok.code == 0);
  CHECK(json_values(ok.out, "tokens") == std::vector<double>(3, static_cast<double>(fits)));
}

TEST_CASE("generate refuses a grid2d checkpoint, naming the 1-D tasks") {
  TempDir tmp("gengrid");
  REQUIRE(rpb_stdout("train " + write_config(tmp.path, "grid2d", "[position]\nscheme = \"alibi2d\"\n")).code == 0);
  const CommandResult r = run_rpb("generate " + (tmp.path / "grid2d").string() + " --prompt 1");
  CHECK(r.code == 1);
  CHECK(contains(r.out, "predicts the cells of a grid, not a sequence; generate runs models of the 1-D tasks"));
}
