#include "train/config/toml_table.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/text.h"
#include "train/config/toml_depth.h"

namespace rpb {

namespace toml_config {

namespace {

// The shortest text that reads back as the same double (-0.1, not toml++'s -0.10000000000000001); `plain` prefers
// plain digits (0.0003, not 3e-04) unless they run long (1e-12).
std::string float_text(double v, bool plain) {
  char buf[400];
  char* end = buf;
  if (plain) end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed).ptr;
  if (!plain || end - buf > 12) end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  std::string text(buf, end);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string range_text(int64_t lo, int64_t hi) {
  std::ostringstream os;
  if (hi == INT64_MAX) os << "expected an integer >= " << lo;
  else os << "expected an integer in [" << lo << ", " << hi << "]";
  return os.str();
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::string where(const toml::source_region& r, const std::string& fallback) {
  std::ostringstream os;
  os << printable(r.path ? *r.path : fallback);
  if (r.begin.line > 0) os << ":" << r.begin.line << ":" << r.begin.column;
  return os.str();
}

namespace {

// Where `n` came from: the --set that inserted it, else the region `r` (its own, or its key's) in `source`.
std::string located(const toml::node& n, const toml::source_region& r, const std::string& source,
                    const OverrideMap& overrides) {
  const auto it = overrides.find(&n);
  return it != overrides.end() ? it->second : where(r, source);
}

}  // namespace

std::string node_location(const toml::node& n, const std::string& source, const OverrideMap& overrides) {
  return located(n, n.source(), source, overrides);
}

std::string repr(const toml::node& n) {
  std::ostringstream os;
  if (n.is_string()) os << '"' << printable(*n.value<std::string>()) << '"';
  else if (n.is_table()) os << "a table";
  else if (n.is_array()) {
    std::ostringstream text;  // as TOML writes it, escaped and cut like any user text
    text << *n.as_array();
    os << printable(text.str());
  }
  else if (n.is_floating_point() && std::isfinite(*n.value<double>())) os << float_text(*n.value<double>(), false);
  else n.visit([&](auto&& v) { os << v; });
  return os.str();
}

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date or time";
  }
}

Table::Table(const toml::table* t, std::string prefix, const std::string& source, const OverrideMap& overrides)
    : t_(t), prefix_(std::move(prefix)), source_(source), overrides_(&overrides) {}

void Table::get(const char* key, int64_t& out, int64_t lo, int64_t hi) {
  const toml::node* n = node(key);
  if (n) {
    if (!n->is_integer()) fail(key, *n, range_text(lo, hi));
    out = *n->value<int64_t>();
    if (out < lo || out > hi) fail(key, *n, range_text(lo, hi), false);
  }
}

void Table::get(const char* key, uint64_t& out) {
  int64_t v = static_cast<int64_t>(out);
  get(key, v, 0, INT64_MAX);
  out = static_cast<uint64_t>(v);
}

void Table::get(const char* key, double& out, double lo, double hi, bool lo_open, bool hi_open) {
  const toml::node* n = node(key);
  if (n) {
    if (!n->is_number()) fail(key, *n, "expected a number");
    out = n->is_integer() ? static_cast<double>(*n->value<int64_t>()) : *n->value<double>();
    const bool ok = (lo_open ? out > lo : out >= lo) && (hi_open ? out < hi : out <= hi);
    if (!ok) {
      std::ostringstream os;
      os << "expected a value in " << (lo_open ? "(" : "[") << lo << ", " << hi << (hi_open ? ")" : "]");
      fail(key, *n, os.str(), false);
    }
  }
}

void Table::get(const char* key, bool& out) {
  const toml::node* n = node(key);
  if (n) {
    if (!n->is_boolean()) fail(key, *n, "expected true or false");
    out = *n->value<bool>();
  }
}

void Table::get(const char* key, std::string& out, const std::vector<std::string>& allowed) {
  const toml::node* n = node(key);
  if (n) {
    if (!n->is_string()) fail(key, *n, "expected a string");
    out = *n->value<std::string>();
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), out) == allowed.end())
      fail(key, *n, "expected one of " + join(allowed) + suggestion(out, allowed, false), false);
  }
}

const toml::array& Table::checked_array(const char* key, const toml::node& n, const char* element,
                                        std::size_t max_size) const {
  const toml::array* a = n.as_array();
  if (!a || a->empty()) fail(key, n, std::string("expected a non-empty array of ") + element);
  if (a->size() > max_size)
    fail(key, n, "expected at most " + std::to_string(max_size) + " " + element + ", found " +
                     std::to_string(a->size()), false);
  std::map<std::string, std::size_t> first;  // value_text and type -> its first place (1-based)
  for (std::size_t i = 0; i < a->size(); ++i) {
    const toml::node& e = (*a)[i];
    const auto [it, added] = first.emplace(std::string(type_name(e)) + " " + value_text(e), i + 1);
    if (!added)
      fail(key, e, "listed twice (elements " + std::to_string(it->second) + " and " + std::to_string(i + 1) +
                       "); expected each value once", false);
  }
  return *a;
}

void Table::get(const char* key, std::vector<int64_t>& out, int64_t lo, int64_t hi, std::size_t max_size) {
  const toml::node* n = node(key);
  if (n) {
    const toml::array& a = checked_array(key, *n, "integers", max_size);
    out.clear();
    for (const toml::node& e : a) {
      if (!e.is_integer()) fail(key, e, "expected an integer array element");
      const int64_t v = *e.value<int64_t>();
      if (v < lo || v > hi) fail(key, e, range_text(lo, hi), false);
      out.push_back(v);
    }
  }
}

void Table::get(const char* key, std::vector<uint64_t>& out, std::size_t max_size) {
  std::vector<int64_t> v(out.begin(), out.end());
  get(key, v, 0, INT64_MAX, max_size);
  out.assign(v.begin(), v.end());
}

void Table::get(const char* key, std::vector<std::string>& out, const std::vector<std::string>& allowed,
                std::size_t max_size) {
  const toml::node* n = node(key);
  if (n) {
    const toml::array& a = checked_array(key, *n, "strings", max_size);
    out.clear();
    for (const toml::node& e : a) {
      if (!e.is_string()) fail(key, e, "expected a string array element");
      const std::string v = *e.value<std::string>();
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), v) == allowed.end())
        fail(key, e, "expected one of " + join(allowed) + suggestion(v, allowed, false), false);
      out.push_back(v);
    }
  }
}

void Table::fail_at(const char* key, const std::string& what) const {
  const toml::node* n = t_ ? t_->get(key) : nullptr;
  if (n) fail(key, *n, what, false);
  throw Error((t_ ? location(*t_, t_->source()) : where({}, source_)) + ": " + prefix_ + key + ": " + what);
}

std::string Table::set_by(const char* key) const {
  const toml::node* n = t_ ? t_->get(key) : nullptr;
  const auto it = n ? overrides_->find(n) : overrides_->end();
  return it != overrides_->end() ? " (set by " + it->second + ")" : "";
}

std::string Table::location(const toml::node& n, const toml::source_region& r) const {
  return located(n, r, source_, *overrides_);
}

void Table::done() const {
  if (!t_) return;
  for (auto&& [k, v] : *t_) {
    const std::string key(k.str());
    if (seen_.count(key)) continue;
    std::vector<std::string> known(seen_.begin(), seen_.end());
    known.insert(known.end(), ignored_.begin(), ignored_.end());
    if (std::find(ignored_.begin(), ignored_.end(), key) != ignored_.end()) continue;
    throw Error(location(v, k.source()) + ": unknown key " + prefix_ + printable(key) + suggestion(key, known, true));
  }
}

const toml::node* Table::node(const char* key) {
  seen_.insert(key);
  return t_ ? t_->get(key) : nullptr;
}

void Table::fail(const char* key, const toml::node& n, const std::string& what, bool wrong_type) const {
  throw Error(location(n, n.source()) + ": " + prefix_ + key + " = " + repr(n) + ": " + what +
              (wrong_type ? std::string(", found ") + type_name(n) : std::string()));
}

std::string Table::suggestion(const std::string& word, const std::vector<std::string>& known, bool is_key) const {
  const std::string best = closest(word, known);
  if (best.empty()) return "";
  return is_key ? " (did you mean " + prefix_ + best + "?)" : " (did you mean \"" + best + "\"?)";
}

std::string value_text(const toml::node& n) {
  if (const toml::array* a = n.as_array()) {
    std::string s = "[";
    for (const toml::node& e : *a) s += (s.size() > 1 ? ", " : "") + value_text(e);
    return s + "]";
  }
  if (n.is_floating_point() && std::isfinite(*n.value<double>())) return float_text(*n.value<double>(), true);
  std::ostringstream os;
  n.visit([&](auto&& v) { os << v; });
  return os.str();
}

namespace {

// A key as TOML text: bare when it is made of letters, digits, '_' and '-' only (every key rpb reads), else quoted
// (a [sweep] labels key is a method: "rope@rope_scaling=yarn"), so that it reads back as the one key it is.
std::string key_text(std::string_view k) {
  const bool bare = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  return bare ? std::string(k) : value_text(toml::value<std::string>(std::string(k)));
}

void write_section(std::string& out, const toml::table& t, const std::string& header, const std::string& path) {
  if (!header.empty()) out += (out.empty() ? "" : "\n") + header + "\n";
  for (auto&& [k, v] : t)
    if (!v.is_table() && !(v.is_array() && v.as_array()->is_array_of_tables() && !v.as_array()->empty()))
      out += key_text(k.str()) + " = " + value_text(v) + "\n";
  for (auto&& [k, v] : t) {
    const std::string sub = path.empty() ? key_text(k.str()) : path + "." + key_text(k.str());
    if (const toml::table* st = v.as_table()) write_section(out, *st, "[" + sub + "]", sub);
    else if (v.is_array() && v.as_array()->is_array_of_tables() && !v.as_array()->empty())
      for (const toml::node& e : *v.as_array()) write_section(out, *e.as_table(), "[[" + sub + "]]", sub);
  }
}

}  // namespace

std::string document_text(const toml::table& root) {
  std::string out;
  write_section(out, root, "", "");
  return out;
}

const toml::table* subtable(const toml::table& root, const char* name, const std::string& source,
                            const OverrideMap& overrides) {
  const toml::node* n = root.get(name);
  if (!n) return nullptr;
  if (!n->is_table())
    throw Error(node_location(*n, source, overrides) + ": " + name + " = " + repr(*n) + ": expected a table [" + name +
                "], found " + type_name(*n));
  return n->as_table();
}

namespace {

// Records `n` and everything it holds (an array's elements, a table's values) as set by `from`, so that an error
// about any of them names the --set instead of the file.
void record_inserted(const toml::node& n, const std::string& from, OverrideMap& applied) {
  applied[&n] = from;
  if (const toml::array* a = n.as_array())
    for (const toml::node& e : *a) record_inserted(e, from, applied);
  if (const toml::table* t = n.as_table())
    for (auto&& [k, v] : *t) record_inserted(v, from, applied);
}

}  // namespace

toml::table parse_value(const std::string& key, const std::string& value, const std::string& from) {
  // A bare word (--set position.scheme=alibi) is a string, as a shell user means it; anything
  // else must be a TOML value. The schema still checks the type afterwards.
  const bool bare_word = !value.empty() && std::all_of(value.begin(), value.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.' || ch == '/';
  }) && !std::isdigit(static_cast<unsigned char>(value[0])) && value[0] != '-' && value[0] != '.' &&
                         value != "true" && value != "false" && value != "inf" && value != "nan";
  if (static_cast<int>(std::count(key.begin(), key.end(), '.')) >= kMaxTomlDepth)
    throw Error(from + ": the key has more than " + std::to_string(kMaxTomlDepth) +
                " dotted parts; rpb reads no deeper");
  check_toml_depth("value = " + value, from);
  try {
    return toml::parse("value = " + (bare_word ? "\"" + value + "\"" : value), std::string_view("--set " + key));
  } catch (const toml::parse_error& e) {
    throw Error(from + ": the value is not TOML (" + printable(e.description()) + "); quote strings with spaces: " +
                printable(key) + "='\"some text\"'");
  }
}

void set_value(toml::table& root, const std::string& key, const toml::node& value, OverrideMap& applied,
               const std::string& from) {
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  toml::table* t = &root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    const bool created = !t->contains(parts[i]);
    if (created) t->insert(parts[i], toml::table{});
    toml::node* n = t->get(parts[i]);
    if (!n->is_table()) throw Error(from + ": " + printable(parts[i]) + " is not a table");
    t = n->as_table();
    if (created) applied[t] = from;
  }
  t->insert_or_assign(parts.back(), value);
  record_inserted(*t->get(parts.back()), from, applied);
}

void apply_override(toml::table& root, const std::string& spec, OverrideMap& applied, const std::string& origin) {
  const std::string from = origin == "--set" ? "--set " + printable(spec) : origin;
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(from + ": expected key=value (e.g. --set model.d_model=256)");
  const std::string key = spec.substr(0, eq);
  const toml::table parsed = parse_value(key, spec.substr(eq + 1), from);
  set_value(root, key, *parsed.get("value"), applied, from);
}

}  // namespace toml_config
}  // namespace rpb
