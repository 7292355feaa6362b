// rpb/train/config/toml_depth.cpp: see toml_depth.h. A small lexer: it knows keys, headers, values, strings and comments
// well enough to count nesting, and nothing else (the TOML parser checks the syntax afterwards).
#include "train/config/toml_depth.h"

#include <cstddef>
#include <vector>

#include "core/error.h"

namespace rpb {

namespace {

class DepthScanner {
 public:
  DepthScanner(std::string_view text, const std::string& source) : s_(text), source_(source) {}

  void run() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\n') {
        ++line_;
        ++i_;
        if (stack_.empty()) mode_ = Mode::key;  // a new top-level line: a key or a header comes next
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        ++i_;
        continue;
      }
      if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
        continue;
      }
      if (c == '"' || c == '\'') {
        if (mode_ == Mode::key) start_part();
        skip_string();
        continue;
      }
      if (mode_ == Mode::key)
        key_char(c);
      else
        value_char(c);
      ++i_;
    }
  }

 private:
  enum class Mode { key, value };
  struct Frame {
    char close;  // ']' or '}'
    int depth;   // of the array or inline table
  };

  [[noreturn]] void fail(int depth) const {
    throw Error(source_ + ":" + std::to_string(line_) + ": TOML nesting deeper than " +
                std::to_string(kMaxTomlDepth) + " levels (found " + std::to_string(depth) +
                " so far: dotted key parts, table headers, arrays and inline tables); rpb reads no deeper");
  }
  void check(int depth) const {
    if (depth > kMaxTomlDepth) fail(depth);
  }
  // The depth of the table the current key belongs to.
  int base() const { return stack_.empty() ? header_ : stack_.back().depth; }
  void start_part() {
    if (parts_ == 0) parts_ = 1;
    check(base() + parts_);
  }

  void key_char(char c) {
    if (c == '[' && stack_.empty() && parts_ == 0) return header();
    if (c == '.') {
      ++parts_;
      check(base() + parts_);
    } else if (c == '=') {
      value_depth_ = base() + parts_;
      parts_ = 0;
      mode_ = Mode::value;
    } else if (c == '}' && !stack_.empty()) {  // an empty inline table, or a trailing comma
      close();
    } else if (c == ',') {
      parts_ = 0;
    } else {
      start_part();
    }
  }

  void value_char(char c) {
    if (c == '[' || c == '{') {
      const int depth = (c == '[' && !stack_.empty() && stack_.back().close == ']' ? stack_.back().depth : value_depth_) + 1;
      check(depth);
      stack_.push_back({c == '[' ? ']' : '}', depth});
      if (c == '{') mode_ = Mode::key, parts_ = 0;
      else value_depth_ = depth;
    } else if ((c == ']' || c == '}') && !stack_.empty()) {
      close();
    } else if (c == ',' && !stack_.empty()) {
      if (stack_.back().close == '}') mode_ = Mode::key, parts_ = 0;
      else value_depth_ = stack_.back().depth;
    }
  }

  void close() {
    stack_.pop_back();
    mode_ = Mode::value;
    parts_ = 0;
  }

  // "[a.b]" or "[[a.b]]" at the start of a top-level line: the depth of the keys below it.
  void header() {
    ++i_;
    const bool array = i_ < s_.size() && s_[i_] == '[';
    if (array) ++i_;
    header_ = 0;
    int parts = 0;
    while (i_ < s_.size() && s_[i_] != ']' && s_[i_] != '\n') {
      const char c = s_[i_];
      if (c == '"' || c == '\'') {
        parts = parts ? parts : 1;
        skip_string();
        continue;
      }
      if (c == '.') ++parts;
      else if (c != ' ' && c != '\t') parts = parts ? parts : 1;
      check(parts + (array ? 1 : 0));
      ++i_;
    }
    header_ = parts + (array ? 1 : 0);
    while (i_ < s_.size() && s_[i_] == ']') ++i_;
    --i_;  // the last character read: run() steps past it (a newline after the header still ends the line)
    mode_ = Mode::value;  // the rest of the line is a comment, or an error the parser reports
    parts_ = 0;
  }

  // Skips the string starting at i_ (basic or literal, one-line or multi-line), counting its lines.
  void skip_string() {
    const char q = s_[i_];
    const bool basic = q == '"';
    const bool multi = s_.substr(i_, 3) == std::string(3, q);
    i_ += multi ? 3 : 1;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (basic && c == '\\') {
        if (i_ + 1 < s_.size() && s_[i_ + 1] == '\n') ++line_;
        i_ += 2;
        continue;
      }
      if (c == '\n') {
        if (!multi) return;  // an unterminated string: the parser says so
        ++line_;
      }
      if (c == q && (!multi || s_.substr(i_, 3) == std::string(3, q))) {
        i_ += multi ? 3 : 1;
        for (int extra = 0; multi && extra < 2 && i_ < s_.size() && s_[i_] == q; ++extra) ++i_;  // """a"""" is a"
        return;
      }
      ++i_;
    }
  }

  std::string_view s_;
  const std::string& source_;
  std::size_t i_ = 0;
  int line_ = 1;
  Mode mode_ = Mode::key;
  int header_ = 0;       // depth of the current [table]
  int parts_ = 0;        // dotted parts of the key being read (0: none yet)
  int value_depth_ = 0;  // depth of the key whose value is being read
  std::vector<Frame> stack_;
};

}  // namespace

void check_toml_depth(std::string_view text, const std::string& source) { DepthScanner(text, source).run(); }

}  // namespace rpb
