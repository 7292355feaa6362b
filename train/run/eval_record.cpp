#include "train/run/eval_record.h"

#include "nn/position.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <utility>
#include <system_error>

#include "core/enum_names.h"
#include "core/error.h"
#include "train/checkpoint/data_identity.h"
#include "train/io/atomic_file.h"
#include "train/io/json_text.h"
#include "train/io/sha256.h"

namespace fs = std::filesystem;

namespace rpb {

namespace {

// A count, or null when there is none (0).
Json json_count(int64_t n) { return n > 0 ? Json(n) : Json(nullptr); }

// [{"layer": 0, "head": 0, "mean_distance": 3.2, "entropy": 1.1}, ...], or null when not measured.
Json attention_json(const AttentionDiagnostics& a) {
  if (a.empty()) return nullptr;
  Json out = Json::array();
  for (std::size_t l = 0; l < a.mean_distance.size(); ++l)
    for (std::size_t h = 0; h < a.mean_distance[l].size(); ++h)
      out.push_back({{"layer", l}, {"head", h}, {"mean_distance", json_number(a.mean_distance[l][h])},
                     {"entropy", json_number(a.entropy[l][h])}});
  return out;
}

// The most positions a record's per-position loss holds: far past any length rpb evaluates at.
constexpr std::size_t kMaxLoggedPositions = std::size_t(1) << 22;

// {"loss": [mean NLL | null per position], "targets": [count per position]}: null where no target was scored.
Json position_loss_json(const data::PositionLoss& p) {
  Json loss = Json::array();
  for (const std::optional<double>& m : p.means()) loss.push_back(json_number(m));
  return {{"loss", std::move(loss)}, {"targets", p.targets}};
}

// position_loss_json's object back: as many losses as counts, a finite loss of at least 0 where the count is
// positive and null where it is 0, at most kMaxLoggedPositions positions.
data::PositionLoss read_position_loss(const JsonIn& in) {
  const JsonIn loss = in["loss"], targets = in["targets"];
  if (loss.size() != targets.size() || loss.size() == 0 || loss.size() > kMaxLoggedPositions)
    in.fail("expected \"loss\" and \"targets\" of the same length, 1 to " + std::to_string(kMaxLoggedPositions) +
            ", found " + std::to_string(loss.size()) + " and " + std::to_string(targets.size()));
  data::PositionLoss p;
  for (std::size_t i = 0; i < loss.size(); ++i) {
    const int64_t n = targets[i].int64();
    const std::optional<double> mean = loss[i].optional_number();
    if (n < 0) targets[i].fail("expected a count of at least 0, found " + std::to_string(n));
    if ((n > 0) != mean.has_value() || (mean && !(std::isfinite(*mean) && *mean >= 0)))
      loss[i].fail(n > 0 ? "expected a finite loss of at least 0 where " + std::to_string(n) + " targets were scored"
                         : "expected null where no target was scored");
    p.sum.push_back(mean ? *mean * static_cast<double>(n) : 0.0);
    p.targets.push_back(n);
  }
  return p;
}

Json length_json(const LengthResult& r, const std::optional<double>& optimum) {
  Json out = {{"length", r.length},
              {"multiplier", r.multiplier},
              {"nll", json_number(r.nll)},
              {"perplexity", json_number(r.perplexity())},
              {"tokens", json_count(r.nll ? r.tokens : 0)},
              {"optimal_perplexity", json_number(optimum)},
              {"attention", attention_json(r.attention)}};
  if (r.bytes > 0) {  // a text task's: the text the scored tokens stand for
    out["bytes"] = r.bytes;
    out["bits_per_byte"] = json_number(r.bits_per_byte());
  }
  if (r.token_accuracy) {  // an algorithmic task's: per-token accuracy and exact match over its samples
    out["token_accuracy"] = json_number(r.token_accuracy);
    out["accuracy"] = json_number(r.accuracy);
    out["samples"] = r.samples;
  } else if (r.accuracy) {  // passkey retrieval's: exact matches over every depth and per tenth of depth
    out["accuracy"] = json_number(r.accuracy);
    out["depth_accuracy"] = r.depth_accuracy;
    out["samples_per_depth"] = r.samples_per_depth;
  }
  if (!r.position_loss.empty()) out["position_loss"] = position_loss_json(r.position_loss);
  return out;
}

// The entries of attention_json back as [layer][head] matrices: in the order written (layer by layer, head by head).
AttentionDiagnostics read_attention(const JsonIn& in) {
  AttentionDiagnostics a;
  if (in.is_null()) return a;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const JsonIn e = in[i];
    const int64_t layer = e["layer"].int64(), head = e["head"].int64();
    const bool next_layer = head == 0 && layer == static_cast<int64_t>(a.mean_distance.size());
    const bool next_head = !a.mean_distance.empty() && layer + 1 == static_cast<int64_t>(a.mean_distance.size()) &&
                           head == static_cast<int64_t>(a.mean_distance.back().size());
    if (!next_layer && !next_head)
      e.fail("layer " + std::to_string(layer) + " head " + std::to_string(head) +
             " out of order (the entries go layer by layer, head by head, from 0)");
    if (next_layer) a.mean_distance.emplace_back(), a.entropy.emplace_back();
    a.mean_distance.back().push_back(e["mean_distance"].number_or_nan());
    a.entropy.back().push_back(e["entropy"].number_or_nan());
  }
  if (a.mean_distance.empty()) in.fail("expected null or at least one layer and head, found an empty array");
  return a;
}

LengthResult read_length(const JsonIn& in) {
  LengthResult r;
  r.length = in["length"].int64();
  r.multiplier = in["multiplier"].int64();
  r.nll = in["nll"].optional_number();
  const JsonIn tokens = in["tokens"];
  r.tokens = tokens.is_null() ? 0 : tokens.int64();
  r.attention = read_attention(in["attention"]);
  if (in.has("bytes")) r.bytes = in["bytes"].int64();
  if (in.has("token_accuracy")) {
    r.token_accuracy = in["token_accuracy"].optional_number();
    r.accuracy = in["accuracy"].optional_number();
    r.samples = in["samples"].int64();
  } else if (in.has("accuracy")) {
    r.accuracy = in["accuracy"].optional_number();
    const JsonIn depth = in["depth_accuracy"];
    if (depth.size() != static_cast<std::size_t>(kDepthBins))
      depth.fail("expected " + std::to_string(kDepthBins) + " depth bins, found " + std::to_string(depth.size()));
    for (std::size_t b = 0; b < depth.size(); ++b) r.depth_accuracy.push_back(depth[b].number_or_nan());
    r.samples_per_depth = in["samples_per_depth"].int64();
  }
  if (in.has("position_loss")) r.position_loss = read_position_loss(in["position_loss"]);
  return r;
}

// A position setting's value as JSON: a number, a boolean or a choice's name.
Json setting_json(const nn::PositionValue& v) {
  return std::visit(
      [](auto x) -> Json {
        using T = decltype(x);
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double> || std::is_same_v<T, bool>) return x;
        else return nn::value_text(x);
      },
      v);
}

// The value `in` holds for option `o` (of its type, within its bounds), or nullopt for null and for a boolean's
// false (a boolean setting is asked only as true).
std::optional<nn::PositionValue> read_setting(const JsonIn& in, const nn::PositionOptionInfo& o) {
  if (in.is_null()) return std::nullopt;
  std::optional<nn::PositionValue> v;
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(nn::PositionOptions{}.*member)>;
        if constexpr (std::is_same_v<T, int64_t>) v = in.int64();
        else if constexpr (std::is_same_v<T, double>) v = *in.optional_number();  // not null: checked above
        else if constexpr (std::is_same_v<T, bool>) v = in.boolean();
        else v = nn::parse_option_value(o, in.string());
      },
      o.member);
  if (!v || !nn::accepts(o, *v))
    in.fail("expected null or " + nn::accepted_values(o) + " (position." + o.key + ")");
  if (const bool* b = std::get_if<bool>(&*v); b && !*b) return std::nullopt;
  return v;
}

// Whether the added position option `o` is written: asked, or another added option the same schemes read was.
bool written(const nn::PositionOptionInfo& o, const std::vector<nn::PositionSetting>& asked) {
  for (const nn::PositionSetting& s : asked)
    if (s.option == &o || (s.option->added && nn::schemes_reading(*s.option) == nn::schemes_reading(o))) return true;
  return false;
}

// The position options of `o` that are written in `first` place (the options of the first records: after
// "lengths") or after the evaluation's own settings (the added ones), in the table's order: each with its setting
// or null when not asked.
std::vector<std::pair<const nn::PositionOptionInfo*, const nn::PositionSetting*>> position_entries(
    const EvalRecordOptions& o, bool first) {
  std::vector<std::pair<const nn::PositionOptionInfo*, const nn::PositionSetting*>> out;
  for (const nn::PositionOptionInfo* row : nn::eval_options())
    if (row->added != first && (first || written(*row, o.position))) out.emplace_back(row, o.asked(row->key));
  return out;
}

Json options_json(const EvalRecordOptions& o) {
  const auto text_or_null = [](const std::string& t) { return t.empty() ? Json(nullptr) : Json(t); };
  Json j = {{"lengths", o.lengths.empty() ? Json(nullptr) : Json(o.lengths)}};
  const auto add_position = [&](bool first) {
    for (const auto& [row, setting] : position_entries(o, first))
      j[row->key] = setting ? setting_json(setting->value) : Json(nullptr);
  };
  add_position(true);
  j["diagnostics"] = o.diagnostics;
  j["other_text"] = text_or_null(o.other_text);
  j["stride"] = o.stride > 0 ? Json(o.stride) : Json(nullptr);
  add_position(false);
  return j;
}

EvalRecordOptions read_options(const JsonIn& in, bool with_stride) {
  EvalRecordOptions o;
  if (!in["lengths"].is_null())
    for (std::size_t i = 0; i < in["lengths"].size(); ++i) o.lengths.push_back(in["lengths"][i].int64());
  for (const nn::PositionOptionInfo* row : nn::eval_options()) {
    if (row->added && !in.has(row->key)) continue;  // an added option is written only around an asked one
    if (const std::optional<nn::PositionValue> v = read_setting(in[row->key], *row)) o.position.push_back({row, *v});
  }
  o.diagnostics = in["diagnostics"].boolean();
  o.other_text = in["other_text"].string_or_empty();
  if (!o.other_text.empty() && !is_sha256_hex(o.other_text))
    in["other_text"].fail("expected null or 64 lowercase hex digits (a SHA-256)");
  if (with_stride && !in["stride"].is_null()) {
    o.stride = in["stride"].int64();
    if (o.stride < 1) in["stride"].fail("expected null (nonoverlapping) or a stride >= 1");
  }
  return o;
}

}  // namespace

const nn::PositionSetting* EvalRecordOptions::asked(const std::string& key) const {
  for (const nn::PositionSetting& s : position)
    if (key == s.option->key) return &s;
  return nullptr;
}

int64_t EvalRecord::tokens() const {
  for (const LengthResult& r : lengths)
    if (r.nll) return r.tokens;
  return 0;
}

Json eval_record_object(const EvalRecord& r) {
  const std::optional<double> entropy =
      r.optimal_perplexity ? std::optional<double>(std::log(*r.optimal_perplexity)) : std::nullopt;
  Json lengths = Json::array();
  for (const LengthResult& l : r.lengths) lengths.push_back(length_json(l, r.optimal_perplexity));
  Json j = {{"format", kEvalRecordFormat},
            {"provenance", provenance_object(r.provenance)},
            {"checkpoint", r.checkpoint},
            {"step", r.step},
            {"checkpoint_sha256", r.checkpoint_sha256},
            {"config_digest", r.config_digest},
            {"run", r.run},
            {"scheme", r.scheme},
            {"untrained", r.untrained.empty() ? Json(nullptr) : Json(r.untrained)}};
  if (!r.rope_scaling.empty()) {  // absent without a scaling: the records of before stay byte for byte
    j["rope_scaling"] = r.rope_scaling;
    j["rope_factor"] = r.rope_factor;
    if (r.rope_factor_per_length) j["rope_factor_per_length"] = true;
  }
  j["task"] = r.task;
  j["train_length"] = r.train_length;
  j["max_length"] = json_count(r.max_length);
  j["tokens"] = json_count(r.tokens());
  j["optimal_perplexity"] = json_number(r.optimal_perplexity);
  j["entropy_rate"] = json_number(entropy);
  j["text"] = r.text;
  j["text_sha256"] = r.text_sha256.empty() ? Json(nullptr) : Json(r.text_sha256);
  j["default_lengths"] = r.default_lengths();
  j["protocol"] = eval_protocol_name(r.options.stride);
  j["options"] = options_json(r.options);
  j["lengths"] = std::move(lengths);
  return j;
}

std::string eval_record_json(const EvalRecord& record) { return json_text(eval_record_object(record)); }

EvalRecord eval_record_from_json(const Json& json, const std::string& source, const std::string& file_name) {
  const JsonIn in(json, source);
  const std::string format = in["format"].string();
  const bool v1 = format == "rpb-eval-1", v4 = format == kEvalRecordFormat, v3 = v4 || format == "rpb-eval-3";
  if (!v3 && format != "rpb-eval-2" && !v1)
    in["format"].fail("\"" + format + "\", rpb reads \"" + kEvalRecordFormat +
                      "\", \"rpb-eval-3\", \"rpb-eval-2\" and \"rpb-eval-1\"");
  EvalRecord r;
  if (v3) r.provenance = provenance_from_json(in["provenance"]);
  r.checkpoint = in["checkpoint"].string();
  r.step = in["step"].int64();
  r.checkpoint_sha256 = in["checkpoint_sha256"].string();
  r.config_digest = in["config_digest"].string();
  r.run = in["run"].string();
  r.scheme = in["scheme"].string();
  r.untrained = in["untrained"].string_or_empty();
  if (in.has("rope_scaling")) {
    r.rope_scaling = in["rope_scaling"].string();
    if (!enum_value(nn::kRopeScalingNames, r.rope_scaling) || r.rope_scaling == "none")
      in["rope_scaling"].fail("\"" + r.rope_scaling + "\" is not a position.rope_scaling value other than none");
    r.rope_factor = in["rope_factor"].optional_number().value_or(0);
    if (!(r.rope_factor >= 1)) in["rope_factor"].fail("expected a factor of at least 1");
    if (in.has("rope_factor_per_length")) {
      r.rope_factor_per_length = in["rope_factor_per_length"].boolean();
      if (!r.rope_factor_per_length) in["rope_factor_per_length"].fail("expected true (absent when false)");
    }
  }
  r.task = in["task"].string();
  r.train_length = in["train_length"].int64();
  r.max_length = in["max_length"].is_null() ? 0 : in["max_length"].int64();
  r.optimal_perplexity = in["optimal_perplexity"].optional_number();
  if (!v1 || in.has("text")) {
    r.text = in["text"].string();
    r.text_sha256 = in["text_sha256"].string_or_empty();
  } else {  // an rpb-eval-1 record written before rpb recorded the text: kjv's is unknown, the others' generated
    r.text = text_match_name(r.task.rfind("kjv:", 0) == 0 ? TextMatch::unverified : TextMatch::generated);
  }
  for (std::size_t i = 0; i < in["lengths"].size(); ++i) r.lengths.push_back(read_length(in["lengths"][i]));
  if (v3) {
    r.options = read_options(in["options"], v4);  // rpb-eval-3 and older: nonoverlapping, stride 0
    if (v4 && in["protocol"].string() != eval_protocol_name(r.options.stride))
      in["protocol"].fail("\"" + in["protocol"].string() + "\" disagrees with options.stride; expected \"" +
                          eval_protocol_name(r.options.stride) + "\"");
    return r;
  }
  // rpb-eval-2 and -1 stored no options: the ones their file names showed.
  if (r.untrained == nn::untrained_name(nn::Untrained::nearest))
    r.options.position.push_back(nn::position_setting("untrained", nn::Untrained::nearest));
  if (r.text == "other") r.options.other_text = r.text_sha256;
  // rpb-eval-1 did not store default_lengths either: its file name did ("-L<lengths>" when chosen on the command line)
  const bool default_lengths = v1 ? file_name == eval_record_name(r) : in["default_lengths"].boolean();
  if (!default_lengths)
    for (const LengthResult& l : r.lengths) r.options.lengths.push_back(l.length);
  return r;
}

EvalRecord read_eval_record(const std::string& path) {
  const std::string what = "eval record";
  return eval_record_from_json(read_json_file(path, what, kMaxEvalRecordBytes), what + " " + path,
                               fs::path(path).filename().string());
}

std::string eval_record_name(const std::string& checkpoint, int64_t tokens, const EvalRecordOptions& options) {
  // Every member, by name: a setting added to EvalRecordOptions stops this from compiling until it is named here.
  const auto& [lengths, diagnostics, other_text, stride, position] = options;
  std::ostringstream name;  // a stream, not a + chain: GCC 12 warns falsely (-Wstringop-overflow) on that
  name << fs::path(checkpoint).stem().string() << "-" << tokens;
  if (!lengths.empty()) {
    name << "-L";
    for (std::size_t i = 0; i < lengths.size(); ++i) name << (i ? "_" : "") << lengths[i];
  }
  const auto add_position = [&](bool first) {
    for (const auto& [row, setting] : position_entries(options, first)) {
      if (!setting) continue;
      name << "-" << row->eval_name;
      if (!std::holds_alternative<bool>(setting->value)) name << nn::value_text(setting->value);
    }
  };
  add_position(true);
  if (diagnostics) name << "-diag";
  if (!other_text.empty()) name << "-text" << other_text.substr(0, 12);
  if (stride > 0) name << "-S" << stride;
  add_position(false);
  name << ".json";
  return name.str();
}

std::string eval_record_name(const EvalRecord& r) {
  return eval_record_name(r.checkpoint, r.tokens(), r.options);
}

std::string eval_protocol_name(int64_t stride) { return stride > 0 ? "sliding_window" : "nonoverlapping"; }

std::string eval_protocol_text(int64_t stride) {
  return stride > 0 ? "sliding window, stride " + std::to_string(stride) : "nonoverlapping segments";
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
