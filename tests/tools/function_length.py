#!/usr/bin/env python3
"""Fails when a function of rpb's library is over the bound (docs/architecture.md: "no function is over 80 lines"),
or a file of it over FILE_BOUND lines ("files are kept to about 500 lines": past 550, split it by concern).

  tests/tools/function_length.py SOURCE_DIR [--max N]   check core/ nn/ optim/ train/ cli/ (.cpp and .h)
  tests/tools/function_length.py --self-test            check the checker on made-up sources

The bound is N, else SOURCE_DIR/.clang-tidy's readability-function-size.LineThreshold (the one place it is set).
The lexical twin of clang-tidy's readability-function-size: a function's
length is the line of its body's closing brace minus the line of its opening brace (clang-tidy's count, blank lines
and comments included); lambdas and local classes count in the function that holds them. Comments, string and
character literals (raw strings included) and preprocessor lines are blanked first; then every brace at namespace
or class scope is classified by the text before it: a namespace, a class, a function body (a parameter list
before it), or an initializer. Prints file:line, the function and its length for each one over the bound; exit 1.
"""
import os
import re
import sys

ROOTS = ("core", "nn", "optim", "train", "cli")
FILE_BOUND = 550  # "about 500 lines" (docs/architecture.md), with room for a file that is a little over
# Functions allowed over the bound (generated tables and the like), each with the reason as a comment:
# (path relative to the source folder, function name as reported). None today.
ALLOWED = {
}


def blank(text):
    """`text` with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":  # a preprocessor line, with its continuations
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if c == "\n":
            at_line_start = True
        elif not c.isspace():
            at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c == "R" and text.startswith('"', i + 1) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^()\\\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
        elif c in "\"'":
            if c == "'" and i and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(c)  # a digit separator: 1'000'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            out.append(c)
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        i = j
    return "".join(out)


def depth0(stmt):
    """`stmt` with everything inside parentheses, brackets and angle-free braces removed (their text blanked)."""
    out, depth = [], 0
    for c in stmt:
        if c in "([{":
            depth += 1
            out.append(c if depth == 1 else " ")
        elif c in ")]}":
            depth -= 1
            out.append(c if depth == 0 else " ")
        else:
            out.append(c if depth == 0 else " ")
    return "".join(out)


def classify(stmt):
    """What the brace after `stmt` opens: 'scope' (namespace, class), 'function', 'member-init' or 'other'."""
    s = re.sub(r"\boperator\s*(\(\s*\)|[^\s(]+)", "operator", stmt)  # operator()( / operator==( / operator[](
    s = re.sub(r"\btemplate\s*<[^{};]*?>\s*(?=(class|struct|union|typename|[A-Za-z_]))", " ", s)
    s = re.sub(r"\[\[.*?\]\]", " ", s).strip()
    if re.match(r"^(inline\s+)?(namespace|extern)\b", s) or re.match(r"^(typedef\s+)?(class|struct|union|enum)\b", s):
        return "scope"
    flat = depth0(s)
    first = flat.find("(")
    if first < 0 or "=" in flat[:first]:
        return "other"
    ctor_init = re.search(r"\)\s*:(?!:)", flat)
    if ctor_init and re.search(r"[A-Za-z0-9_>]\s*$", flat):
        return "member-init"  # Foo() : a_{...}: a member's brace initialiser
    return "function"


def name_of(stmt):
    flat = depth0(re.sub(r"\boperator\s*(\(\s*\)|[^\s(]+)", lambda m: "operator" + re.sub(r"\W", "_", m.group(1)),
                         stmt))
    first = flat.find("(")
    m = re.search(r"([~\w]+(?:<[^<>()]*>)?(?:::[~\w]+)*)\s*$", flat[:first] if first >= 0 else flat)
    return m.group(1) if m else "?"


def long_functions(text, bound):
    """[(line, name, length)] of the functions of `text` whose length is over `bound`."""
    code = blank(text)
    found = []
    stack = []  # per open brace: (kind, open line, name, line of the name)
    stmt_start, line = 0, 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            inside = any(k in ("function", "other") for k, *_ in stack)
            stmt = code[stmt_start:i]
            kind = "nested" if inside else classify(stmt)
            name = name_of(stmt) if kind == "function" else ""
            paren = depth0(stmt).find("(")  # the name's line: just before its parameter list
            decl_line = line - code[stmt_start + max(paren, 0):i].count("\n")
            stack.append((kind, line, name, decl_line))
            if kind != "member-init":
                stmt_start = i + 1
        elif c == "}":
            if not stack:
                continue
            kind, open_line, name, decl_line = stack.pop()
            if kind == "function" and line - open_line > bound:
                found.append((decl_line, name, line - open_line))
            if kind == "member-init":
                continue  # the constructor's statement goes on to its body
            if not any(k in ("function", "other") for k, *_ in stack):
                stmt_start = i + 1
        elif c == ";" and not any(k in ("function", "other", "member-init") for k, *_ in stack):
            stmt_start = i + 1
    return found


def clang_tidy_bound(source_dir):
    """readability-function-size.LineThreshold of SOURCE_DIR/.clang-tidy (its "value:" on the line after the key)."""
    path = os.path.join(source_dir, ".clang-tidy")
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as e:
        sys.exit(f"function_length: cannot read {path} for the bound ({e.strerror}); pass --max N")
    m = re.search(r"key:\s*readability-function-size\.LineThreshold\s*\n\s*value:\s*'?(\d+)'?", text)
    if not m:
        sys.exit(f"function_length: {path} sets no readability-function-size.LineThreshold")
    return int(m.group(1))


def file_lines(text):
    """The number of lines of `text` (a last line without its newline counts)."""
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def check(source_dir, bound):
    failures = []
    for root in ROOTS:
        for folder, _, files in sorted(os.walk(os.path.join(source_dir, root))):
            for f in sorted(files):
                if not f.endswith((".cpp", ".h")):
                    continue
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, source_dir)
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                for line, name, length in long_functions(text, bound):
                    if (rel, name) not in ALLOWED:
                        failures.append(f"{rel}:{line}: function {name} is {length} lines (over {bound})")
                lines = file_lines(text)
                if lines > FILE_BOUND:
                    failures.append(f"{rel}: {lines} lines (over {FILE_BOUND}: split it by concern)")
    return failures


def self_test():
    body = lambda n: "\n".join(["  x += 1;"] * n)
    cases = [  # (source, the long functions' (name, length)), bound 10
        ("int f() {\n" + body(9) + "\n}\n", []),
        ("int f() {\n" + body(10) + "\n}\n", [("f", 11)]),
        ("namespace a {\nstruct S {\n  S(int v) : v_{v}, w_(\"{\") {\n" + body(12) + "\n  }\n  int v_, w_;\n};\n}\n",
         [("S", 13)]),
        ("auto g = [](int x) {\n" + body(20) + "\n};\nconst int t[] = {\n" + body(20) + "\n};\n", []),
        ("bool Foo::operator==(const Foo& o) const noexcept {\n" + body(11) + "\n}\n", [("Foo::operator__", 12)]),
        ("std::string h() {\n  const char* s = R\"x(}}{{)x\";  // }\n  /* { */\n" + body(9) + "\n}\n", [("h", 12)]),
        ("template <typename T>\nstd::vector<T> k(T a) {\n  auto l = [&]() {\n" + body(9) + "\n  };\n}\n", [("k", 12)]),
        ("#define M {\nenum class E : int { a, b };\nint m() {\n" + body(3) + "\n}\n", []),
    ]
    bad = 0
    for source, expected in cases:
        got = [(name, length) for _, name, length in long_functions(source, 10)]
        if got != expected:
            print(f"self-test: {got} != {expected} for:\n{source}")
            bad += 1
    file_cases = (("", 0), ("a\n", 1), ("a\nb", 2), ("a\n" * 551, 551))
    for text, lines in file_cases:
        if file_lines(text) != lines:
            print(f"self-test: file_lines gives {file_lines(text)} lines, not {lines}")
            bad += 1
    total = len(cases) + len(file_cases)
    print(f"function_length self-test: {total - bad} of {total} cases right")
    return 1 if bad else 0


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    bound = None
    if "--max" in args:
        k = args.index("--max")
        bound = int(args[k + 1])
        del args[k:k + 2]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    if bound is None:
        bound = clang_tidy_bound(args[0])
    failures = check(args[0], bound)
    for f in failures:
        print(f)
    print(f"function_length: {len(failures)} function(s) over {bound} lines or file(s) over {FILE_BOUND} in "
          f"{', '.join(ROOTS)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
