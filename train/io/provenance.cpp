// rpb/train/io/provenance.cpp: see provenance.h.
#include "train/io/provenance.h"

#include <ctime>
#include <utility>

#include "train/io/version.h"

namespace rpb {

namespace {

std::vector<std::string>& stored_command() {
  static std::vector<std::string> argv;
  return argv;
}

}  // namespace

Provenance current_provenance() {
  return {version(), build_commit(), shell_command(process_command()), utc_now_iso8601()};
}

Json provenance_object(const Provenance& p) {
  return {{"rpb_version", p.rpb_version}, {"commit", p.commit}, {"command", p.command}, {"date", p.date}};
}

Provenance provenance_from_json(const JsonIn& in) {
  return {in["rpb_version"].string(), in["commit"].string(), in["command"].string(), in["date"].string()};
}

void set_process_command(std::vector<std::string> argv) { stored_command() = std::move(argv); }

const std::vector<std::string>& process_command() { return stored_command(); }

std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "0123456789_./=,:@+-") == std::string::npos;
  if (plain) return word;
  std::string q = "'";
  for (const char ch : word) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

std::string shell_command(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    out += shell_word(w);
  }
  return out;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace rpb
