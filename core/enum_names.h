// rpb/core/enum_names.h: the names of a closed set, one table per enum.
//
// A config value from a closed set ("cosine", "skip") is parsed once, at the config boundary, into an enum; the enum's
// table is the one place its names live. The table lists every value once, in the order of the choices an error
// message names.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace rpb {

/// One row of an enum's name table.
template <typename E>
struct EnumName {
  E value;
  const char* name;  // as configs write it
};

/// The name of `value` in `table`, or "?" for a value the table lacks.
template <typename E, std::size_t N>
const char* enum_name(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& row : table)
    if (row.value == value) return row.name;
  return "?";
}

/// Every name of `table`, in its order.
template <typename E, std::size_t N>
std::vector<std::string> enum_names(const EnumName<E> (&table)[N]) {
  std::vector<std::string> names;
  for (const EnumName<E>& row : table) names.emplace_back(row.name);
  return names;
}

/// The value named `name` in `table`, or nullopt.
template <typename E, std::size_t N>
std::optional<E> enum_value(const EnumName<E> (&table)[N], const std::string& name) {
  for (const EnumName<E>& row : table)
    if (name == row.name) return row.value;
  return std::nullopt;
}

}  // namespace rpb
