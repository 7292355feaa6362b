// rpb/nn/position/options.h: the schema of the position options a run config sets, one descriptor per option.
//
// The config reader (train/config/config.cpp read_position), `rpb bias` and `rpb eval` (their flags), the eval
// record (train/run/eval_record.h: the settings an evaluation was asked), the run identity (an option's role) and
// `rpb schemes` (the list of schemes and their options) read this table; nothing else lists the options. A scheme
// with an option of its own is its PositionOptions field (nn/position/scheme.h), its check in the scheme's validate,
// one row here, and its key in the scheme's row (SchemeInfo::reads).
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "nn/limits.h"
#include "nn/position/scheme.h"

namespace rpb::nn {

/// The PositionOptions field an option sets, by type: an integer, a real, a boolean, the choice of
/// position.untrained (read as one of untrained_names()) or of position.rope_scaling (one of rope_scaling_names()).
using PositionOptionMember = std::variant<int64_t PositionOptions::*, double PositionOptions::*,
                                          bool PositionOptions::*, Untrained PositionOptions::*,
                                          RopeScaling PositionOptions::*>;
/// A value of an option, of its type: the alternatives in PositionOptionMember's order, so an option's value holds
/// the alternative of the same index as its member.
using PositionValue = std::variant<int64_t, double, bool, Untrained, RopeScaling>;

/// What an option is to a run (train/config/run_identity.h): `identity`, part of what a run trains (a change makes
/// another run); `evaluation`, read by evaluation only (position.untrained, blockwise), so runs differing in it are one
/// run evaluated two ways; `fine_tune`, an evaluation setting of a trained run but part of a fine-tune's identity,
/// which trains with it (the rope scaling keys: PositionOptions::rope_scaling_trained).
enum class OptionRole { identity, evaluation, fine_tune };

inline constexpr EnumName<OptionRole> kOptionRoleNames[] = {
    {OptionRole::identity, "identity"}, {OptionRole::evaluation, "evaluation"}, {OptionRole::fine_tune, "fine_tune"}};
/// "identity", "evaluation", "fine_tune".
inline const char* option_role_name(OptionRole role) { return enum_name(kOptionRoleNames, role); }

/// One option of the position schemes.
struct PositionOptionInfo {
  const char* key;                  // the config key in [table] ("num_buckets"), and the field OptionError names
  PositionOptionMember member;      // the PositionOptions field it sets
  const char* doc;                  // one line: what it sets ("number of buckets")
  /// The schemes that read it besides those whose row lists it (SchemeInfo::reads): a row property (untrained:
  /// every row_table scheme); null for none.
  bool (*reads_if)(const SchemeInfo& s) = nullptr;
  limits::Range range{0, 0};        // an integer's accepted values (nn/limits.h)
  limits::RealRange real{0, 0};     // a real's accepted values (nn/limits.h)
  const char* table = "position";   // the config table: "position", or "grid" for max_side
  /// False when only how training starts depends on it (init_std): a trained model's forward does not read it.
  bool loaded = true;
  /// True when it changes what `rpb bias` prints: `rpb bias` takes it as --<key with '-' for '_'>.
  bool bias_flag = false;
  /// True for a key added after runs were stored: the effective config (a run's stored config text) holds it only
  /// when set away from its default, so the stored configs of runs that leave it stay byte for byte as before.
  bool added = false;
  /// Set for an option a scheme that does not read it refuses when set away from its default (an evaluation
  /// setting that would change nothing there): why, after the scheme's name ("has no rotary frequencies to scale").
  const char* refused_elsewhere = nullptr;
  OptionRole role = OptionRole::identity;
  /// Set for an evaluation setting (a role other than identity) that `rpb eval` takes, as --<key with '-' for '_'>
  /// (a boolean as a bare flag that sets it true): what the eval record's file name shows before the value asked
  /// (train/run/eval_record.h eval_record_name: "rope_" gives "-rope_yarn", "factor" "-factor8", "" the value alone,
  /// "-nearest"; a boolean shows it alone, "-blockwise"). Null: not an `rpb eval` flag (set in the config only).
  const char* eval_name = nullptr;

  /// True when scheme `s` reads it: `s.reads` names it, or reads_if(s).
  bool read_by(const SchemeInfo& s) const;
};

/// Every option, in the order the config reader reads them (which decides the first error of a config with two).
const std::vector<PositionOptionInfo>& position_option_table();

/// The option `key` ("max_side"), or null.
const PositionOptionInfo* find_position_option(const std::string& key);

/// The options scheme `s` reads, in the table's order.
std::vector<const PositionOptionInfo*> options_of(const SchemeInfo& s);

/// The names of the schemes that read `o`, in the registry's order: every one with `dims` 0, else those a model of
/// `dims` (1 or 2) accepts (SchemeInfo::fits).
std::vector<std::string> schemes_reading(const PositionOptionInfo& o, int64_t dims = 0);

/// "integer", "real", "boolean" or "choice".
const char* option_type(const PositionOptionInfo& o);

/// The --flag of `o` that `rpb bias` (PositionOptionInfo::bias_flag) and `rpb eval` (eval_name) take ("--num-buckets").
std::string option_flag_name(const PositionOptionInfo& o);

/// The options `rpb eval` takes as flags (PositionOptionInfo::eval_name set), in the table's order.
std::vector<const PositionOptionInfo*> eval_options();

/// The values it accepts, as the config reader's messages write them: "[2, 65536]", "(1, 1e+12]", "true or false",
/// "\"keep\" or \"nearest\"" (a choice: its names joined by " or ").
std::string accepted_values(const PositionOptionInfo& o);

/// Its value in `p` as TOML writes it ("32", "0.3", "true", "\"keep\"", "\"yarn\"").
std::string option_value_text(const PositionOptionInfo& o, const PositionOptions& p);

/// Its value in `p`.
PositionValue option_value(const PositionOptionInfo& o, const PositionOptions& p);

/// A value as the command line and an eval record's file name write it: "32", "0.3" (the shortest text that reads
/// back as it), "true", "keep", "yarn".
std::string value_text(const PositionValue& v);

/// `text` read as a value of `o`: an integer or a real in its bounds (nn/limits.h), "true" or "false", or one of a
/// choice's names; nullopt for anything else (the caller names accepted_values(o)).
std::optional<PositionValue> parse_option_value(const PositionOptionInfo& o, const std::string& text);

/// Whether `v` is of `o`'s type and within its bounds.
bool accepts(const PositionOptionInfo& o, const PositionValue& v);

/// One option set to a value: a setting `rpb eval` was asked (--rope-factor 8), as the eval record keeps it.
struct PositionSetting {
  const PositionOptionInfo* option = nullptr;  // a row of position_option_table()
  PositionValue value;                         // of the option's type (accepts(*option, value))

  /// Sets it in `p`. Throws rpb::Error naming the key when the value is not of the option's type.
  void apply(PositionOptions& p) const;
  /// "--rope-factor 8", "--blockwise" (a boolean set true): the flag that asks it.
  std::string flag_text() const;
  bool operator==(const PositionSetting&) const = default;  // the same row (rows live as long as the program)
};

/// Option `key` set to `value`. Throws rpb::Error naming the key for a key the table does not hold or a value
/// accepts() refuses.
PositionSetting position_setting(const std::string& key, const PositionValue& value);

/// A choice option's names (untrained_names(), rope_scaling_names()); empty for the other types.
std::vector<std::string> choice_names(const PositionOptionInfo& o);

}  // namespace rpb::nn
