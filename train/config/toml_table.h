// rpb/train/config/toml_table.h: reading a TOML document key by key, with errors that name the file, line, column,
// key, value and what was expected (internal to train/; train/config/config.cpp builds the run config with it).
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace rpb {

namespace toml_config {

/// Nodes inserted by --set, with the override's text: copies lose their source region, so errors name the --set.
/// The nodes set from outside the file, with where each came from ("--set model.d_model=256").
using OverrideMap = std::map<const toml::node*, std::string>;

/// "file:line:column" of a region (`fallback` names the source when the region has no path).
std::string where(const toml::source_region& r, const std::string& fallback);
/// Where the node `n` came from: the --set that inserted it (or the array or table holding it: apply_override
/// records every node it inserts), else its file:line:column in `source`.
std::string node_location(const toml::node& n, const std::string& source, const OverrideMap& overrides);
/// A value as TOML shows it ("\"text\"", 0.1, [ 1, 2 ], a table), user text escaped and cut (printable()).
std::string repr(const toml::node& n);
/// "a string", "an integer", ...
const char* type_name(const toml::node& n);

/// Reads one table: each get() consumes a key; done() rejects the keys nobody asked for (with a did-you-mean).
/// An absent table reads as empty. Every failure throws rpb::Error "<location>: <prefix><key> = <value>: <what>",
/// where the user's text (file names, --set specs, unknown keys, string values) is escaped and cut (printable()).
class Table {
 public:
  Table(const toml::table* t, std::string prefix, const std::string& source, const OverrideMap& overrides);

  bool has(const char* key) const { return t_ && t_->contains(key); }
  /// True when `key` holds a boolean (for a key that takes either a boolean or a list, as sweep.figures).
  bool holds_boolean(const char* key) const {
    const toml::node* n = t_ ? t_->get(key) : nullptr;
    return n && n->is_boolean();
  }

  void get(const char* key, int64_t& out, int64_t lo, int64_t hi);
  void get(const char* key, uint64_t& out);
  /// A float in [lo, hi] (or open at an end when lo_open / hi_open).
  void get(const char* key, double& out, double lo, double hi, bool lo_open = false, bool hi_open = false);
  void get(const char* key, bool& out);
  /// A string, one of `allowed` when it is not empty.
  void get(const char* key, std::string& out, const std::vector<std::string>& allowed = {});
  /// A non-empty array of at most `max_size` distinct values (a value listed twice is refused at its second place),
  /// each in [lo, hi].
  void get(const char* key, std::vector<int64_t>& out, int64_t lo, int64_t hi, std::size_t max_size);
  void get(const char* key, std::vector<uint64_t>& out, std::size_t max_size);
  /// The same for strings, each one of `allowed` when it is not empty.
  void get(const char* key, std::vector<std::string>& out, const std::vector<std::string>& allowed,
           std::size_t max_size);

  /// Fails at `key` (or at the table when the key is absent) with `what`.
  [[noreturn]] void fail_at(const char* key, const std::string& what) const;
  /// " (set by --set run.steps=10)" when `key` of this table came from a --set override, else "": for messages
  /// about another key that this one constrains, so the user sees which override caused them.
  std::string set_by(const char* key) const;
  /// Where a node came from: its file:line:column, or the --set that inserted it.
  std::string location(const toml::node& n, const toml::source_region& r) const;
  /// Rejects the keys no get() asked for and no ignore() or know() named.
  void done() const;
  /// Keys read elsewhere (sub-tables handled by another reader).
  void ignore(const std::string& key) { ignored_.push_back(key); }
  /// Registers a key as known even if this reader never asks for its value.
  void know(const char* key) { seen_.insert(key); }
  /// The keys asked for so far (by get() or know()), without the prefix.
  const std::set<std::string>& seen() const { return seen_; }

 private:
  const toml::node* node(const char* key);
  /// A wrong type names what was found; a wrong value only what was expected.
  [[noreturn]] void fail(const char* key, const toml::node& n, const std::string& what, bool wrong_type = true) const;
  /// The array at `key`: non-empty, at most `max_size` elements (`element` names them: "integers"), none equal to
  /// an earlier one.
  const toml::array& checked_array(const char* key, const toml::node& n, const char* element,
                                   std::size_t max_size) const;
  /// " (did you mean model.d_model?)" for a key, " (did you mean \"alibi\"?)" for a value; "" when nothing is close.
  std::string suggestion(const std::string& word, const std::vector<std::string>& known, bool is_key) const;

  const toml::table* t_;
  std::string prefix_;
  std::string source_;
  const OverrideMap* overrides_;
  std::set<std::string> seen_;
  std::vector<std::string> ignored_;
};

/// The sub-table `name` of `root`, null when absent; a key of another type is an error, naming the --set that
/// set it when `overrides` holds it.
const toml::table* subtable(const toml::table& root, const char* name, const std::string& source,
                            const OverrideMap& overrides);

/// A value as TOML text that reads back as the same value: floats in their shortest form (3e-4 is "0.0003", not
/// toml++'s "0.00029999999999999997"), strings quoted and escaped, arrays on one line.
std::string value_text(const toml::node& n);

/// `root` as a TOML document in a fixed layout: one [table] section per sub-table and one [[array]] section per
/// table of an array of tables, keys in sorted order (toml::table's), values as value_text writes them. Two
/// documents holding the same keys and values give the same text, whatever their order, spacing or comments.
std::string document_text(const toml::table& root);

/// The value of `key` written `value` as --set reads it, in a table at "value" (a bare word is a string: alibi is
/// "alibi"); a value that is not TOML, or too deep, throws rpb::Error from `from` ("--set a.b=c").
toml::table parse_value(const std::string& key, const std::string& value, const std::string& from);

/// Sets the dotted `key` of `root` to `value`, creating the tables on its way, and records the nodes in `applied`
/// as set by `from` (apply_override's second half).
void set_value(toml::table& root, const std::string& key, const toml::node& value, OverrideMap& applied,
               const std::string& from);

/// Applies "a.b.c=value" to `root` (the value is TOML; a bare word is a string) and records the node (with the elements
/// of an array value and the tables the dotted key creates) in `applied` with where it came from: "<origin> <spec>"
/// ("--set model.d_model=256"), or `origin` alone when it says more ("sweep method \"t5@max_distance=64\"").
void apply_override(toml::table& root, const std::string& spec, OverrideMap& applied,
                    const std::string& origin = "--set");

}  // namespace toml_config
}  // namespace rpb
