#include "train/run/eval_record.h"

#include "nn/position.h"

#include <cmath>
#include <filesystem>
#include <sstream>
#include <system_error>

#include "core/error.h"
#include "train/io/atomic_file.h"
#include "train/io/json_text.h"

namespace fs = std::filesystem;

namespace rpb {

namespace {

std::string json_count(int64_t n) { return n > 0 ? std::to_string(n) : "null"; }

// [{"layer": 0, "head": 0, "mean_distance": 3.2, "entropy": 1.1}, ...], or null when not measured.
std::string attention_json(const AttentionDiagnostics& a) {
  if (a.empty()) return "null";
  std::ostringstream os;
  os << "[";
  const char* sep = "";
  for (std::size_t l = 0; l < a.mean_distance.size(); ++l)
    for (std::size_t h = 0; h < a.mean_distance[l].size(); ++h, sep = ",")
      os << sep << "\n      {\"layer\": " << l << ", \"head\": " << h
         << ", \"mean_distance\": " << json_number(a.mean_distance[l][h])
         << ", \"entropy\": " << json_number(a.entropy[l][h]) << "}";
  os << "]";
  return os.str();
}

std::string length_json(const LengthResult& r, const std::optional<double>& optimum) {
  std::ostringstream os;
  os << "{\"length\": " << r.length << ", \"multiplier\": " << r.multiplier << ", \"nll\": " << json_number(r.nll)
     << ", \"perplexity\": " << json_number(r.perplexity()) << ", \"tokens\": " << json_count(r.nll ? r.tokens : 0)
     << ", \"optimal_perplexity\": " << json_number(optimum) << ",\n     \"attention\": " << attention_json(r.attention)
     << "}";
  return os.str();
}

}  // namespace

int64_t EvalRecord::tokens() const {
  for (const LengthResult& r : lengths)
    if (r.nll) return r.tokens;
  return 0;
}

std::string eval_record_json(const EvalRecord& r) {
  std::ostringstream os;
  const std::optional<double> entropy =
      r.optimal_perplexity ? std::optional<double>(std::log(*r.optimal_perplexity)) : std::nullopt;
  os << "{\n  \"format\": \"rpb-eval-1\",\n  \"checkpoint\": " << json_string(r.checkpoint) << ",\n  \"step\": " << r.step
     << ",\n  \"checkpoint_sha256\": " << json_string(r.checkpoint_sha256)
     << ",\n  \"config_digest\": " << json_string(r.config_digest) << ",\n  \"run\": " << json_string(r.run)
     << ",\n  \"scheme\": " << json_string(r.scheme)
     << ",\n  \"untrained\": " << (r.untrained.empty() ? std::string("null") : json_string(r.untrained))
     << ",\n  \"task\": " << json_string(r.task)
     << ",\n  \"train_length\": " << r.train_length << ",\n  \"max_length\": " << json_count(r.max_length)
     << ",\n  \"tokens\": " << json_count(r.tokens()) << ",\n  \"optimal_perplexity\": "
     << json_number(r.optimal_perplexity) << ",\n  \"entropy_rate\": " << json_number(entropy)
     << ",\n  \"text\": " << json_string(r.text)
     << ",\n  \"text_sha256\": " << (r.text_sha256.empty() ? std::string("null") : json_string(r.text_sha256))
     << ",\n  \"lengths\": [";
  for (std::size_t i = 0; i < r.lengths.size(); ++i)
    os << (i ? ",\n    " : "\n    ") << length_json(r.lengths[i], r.optimal_perplexity);
  os << "\n  ]\n}\n";
  return os.str();
}

std::string eval_record_name(const EvalRecord& r) {
  std::ostringstream name;  // a stream, not a + chain: GCC 12 warns falsely (-Wstringop-overflow) on that
  name << fs::path(r.checkpoint).stem().string() << "-" << r.tokens();
  if (!r.default_lengths) {
    name << "-L";
    for (std::size_t i = 0; i < r.lengths.size(); ++i) name << (i ? "_" : "") << r.lengths[i].length;
  }
  if (r.untrained == nn::untrained_name(nn::Untrained::nearest)) name << "-nearest";
  if (r.text == "other") name << "-text" << r.text_sha256.substr(0, 12);
  name << ".json";
  return name.str();
}

std::string write_eval_record(const std::string& run_dir, const EvalRecord& record) {
  const fs::path dir = fs::path(run_dir) / "eval";
  std::error_code ec;
  fs::create_directory(dir, ec);  // an existing entry is checked below
  const fs::file_type type = fs::symlink_status(dir, ec).type();
  RPB_CHECK(type != fs::file_type::symlink, "eval record", dir.string(), " is a symbolic link, which rpb does not follow");
  RPB_CHECK(type == fs::file_type::directory, "eval record", "cannot use ", dir.string(), " as the folder of evaluation records: ",
            ec ? ec.message() : "it is not a folder");
  const std::string path = (dir / eval_record_name(record)).string();
  write_file_atomically(path, eval_record_json(record), "write the evaluation record " + path);
  return path;
}

}  // namespace rpb
