"""The results tables in the docs are `rpb results` output, so they cannot drift from the committed data. A generated
block in README.md or docs/*.md is

    <!-- rpb results bench/figures/NAME/results.json [OPTION...] -->
    ...what `rpb results bench/figures/NAME/results.json [OPTION...]` prints, verbatim...
    <!-- end rpb results -->

(the path relative to the source folder). --check fails, naming the doc file, the line and the first line that
differs, when a block is not the command's output, when a marker is malformed or unclosed, or when a committed
bench/figures/*/results.json has no block; --write regenerates every block in place (never edit one by hand).
--self-test runs both on made-up docs with a stand-in for rpb.

    python3 tests/tools/docs_tables.py --rpb build/rpb --check [SOURCE_DIR]
    python3 tests/tools/docs_tables.py --rpb build/rpb --write [SOURCE_DIR]
"""
import argparse
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

OPEN = re.compile(r"^<!-- rpb results (\S.*?) -->$")
CLOSE = "<!-- end rpb results -->"


class DocError(Exception):
    pass


def doc_files(root):
    """README.md and the other Markdown files at the top, and every Markdown file under docs/."""
    return sorted(root.glob("*.md")) + sorted((root / "docs").rglob("*.md"))


def blocks(path, lines):
    """(line index of the opening marker, of the closing one, the command's arguments) for each block of `lines`."""
    out, start, args = [], None, None
    for i, line in enumerate(lines):
        m = OPEN.match(line)
        if m:
            if start is not None:
                raise DocError(f"{path}:{i + 1}: a block opens inside the block opened at line {start + 1}")
            start, args = i, shlex.split(m.group(1))
        elif line == CLOSE:
            if start is None:
                raise DocError(f"{path}:{i + 1}: '{CLOSE}' closes no block")
            out.append((start, i, args))
            start = None
        elif line.startswith("<!-- rpb results") or line.startswith("<!-- end rpb"):
            raise DocError(f"{path}:{i + 1}: malformed marker {line!r}; expected "
                           f"'<!-- rpb results PATH [OPTION...] -->' or '{CLOSE}'")
    if start is not None:
        raise DocError(f"{path}:{start + 1}: block never closed by '{CLOSE}'")
    return out


def command_output(rpb, root, args, where):
    r = subprocess.run([rpb, "results", *args], cwd=root, capture_output=True, text=True)
    if r.returncode != 0:
        raise DocError(f"{where}: `rpb results {' '.join(args)}` exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout.splitlines()


def first_difference(found, expected):
    """(index, found line, expected line) of the first line that differs; None when the lists are equal."""
    for i in range(max(len(found), len(expected))):
        a = found[i] if i < len(found) else "(the block ends)"
        b = expected[i] if i < len(expected) else "(the output ends)"
        if a != b:
            return i, a, b
    return None


def run(rpb, root, write):
    """Checks (or with `write`, regenerates) every block under `root`; returns the problems as lines."""
    problems, shown, count = [], set(), 0
    for path in doc_files(root):
        rel = path.relative_to(root)
        lines = path.read_text(encoding="utf-8").split("\n")
        try:
            found = blocks(rel, lines)
        except DocError as e:
            problems.append(str(e))
            continue
        for start, end, args in reversed(found):  # from the end, so that rewriting keeps the earlier indices
            count += 1
            shown.update(a for a in args if a.endswith(".json"))
            try:
                expected = command_output(rpb, root, args, f"{rel}:{start + 1}")
            except DocError as e:
                problems.append(str(e))
                continue
            body = lines[start + 1:end]
            diff = first_difference(body, expected)
            if diff is None:
                continue
            if write:
                lines[start + 1:end] = expected
            else:
                i, a, b = diff
                problems.append(f"{rel}:{start + 2 + i}: the block of `rpb results {' '.join(args)}` differs from "
                                f"the command's output at its line {i + 1}:\n  doc:    {a}\n  output: {b}\n"
                                f"  (regenerate: python3 tests/tools/docs_tables.py --rpb build/rpb --write .)")
        text = "\n".join(lines)
        if write and text != path.read_text(encoding="utf-8"):
            path.write_text(text, encoding="utf-8")
    for results in sorted((root / "bench" / "figures").glob("*/results.json")):
        rel = str(results.relative_to(root))
        if rel not in shown:
            problems.append(f"{rel}: no generated block shows it (<!-- rpb results {rel} --> in README.md or docs/)")
    if count == 0:
        problems.append(f"no generated block in {root}'s README.md or docs/")
    return problems, count


def self_test():
    """The checker on made-up docs: a stand-in rpb prints fixed tables; a changed line, an unclosed block, an
    unshown results.json and a failing command are found; --write makes the docs pass."""
    with tempfile.TemporaryDirectory(prefix="docs_tables_") as tmp:
        root = pathlib.Path(tmp)
        (root / "docs").mkdir()
        (root / "bench" / "figures" / "a").mkdir(parents=True)
        (root / "bench" / "figures" / "a" / "results.json").write_text("{}")
        fake = root / "rpb"
        fake.write_text("#!/bin/sh\n[ -f \"$2\" ] || { echo \"no such file $2\" >&2; exit 1; }\n"
                        "printf '\\n| Method | PPL |\\n|---|---|\\n| T5 | 8.39 |\\n\\nTask: markov\\n'\n")
        fake.chmod(0o755)
        good = "\n\n| Method | PPL |\n|---|---|\n| T5 | 8.39 |\n\nTask: markov"
        doc = root / "docs" / "results.md"
        doc.write_text(f"# R\n\n<!-- rpb results bench/figures/a/results.json -->{good}\n{CLOSE}\n")
        checks = []
        problems, count = run(str(fake), root, False)
        checks.append(("an up-to-date block passes", not problems and count == 1))
        doc.write_text(doc.read_text().replace("8.39", "8.40"))
        problems, _ = run(str(fake), root, False)
        checks.append(("a changed cell is named with its file and line",
                       len(problems) == 1 and problems[0].startswith("docs/results.md:7:") and "8.40" in problems[0]))
        run(str(fake), root, True)
        checks.append(("--write regenerates it", run(str(fake), root, False)[0] == [] and "8.39" in doc.read_text()))
        doc.write_text(doc.read_text().replace(CLOSE, ""))
        problems, _ = run(str(fake), root, False)
        checks.append(("an unclosed block is refused", any("never closed" in p for p in problems)))
        doc.write_text(f"<!-- rpb results bench/figures/b/results.json -->\n{CLOSE}\n")
        problems, _ = run(str(fake), root, False)
        checks.append(("a failing command and an unshown results.json are named",
                       any("exited 1" in p for p in problems) and any(p.startswith("bench/figures/a/results.json")
                                                                      for p in problems)))
        doc.write_text("# no blocks\n")
        problems, _ = run(str(fake), root, False)
        checks.append(("docs without any block fail", any("no generated block in" in p for p in problems)))
    failed = [name for name, ok in checks if not ok]
    for name, ok in checks:
        print(("ok      " if ok else "FAILED  ") + name)
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rpb", default="build/rpb", help="the rpb binary")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="fail when a block differs from the command's output")
    mode.add_argument("--write", action="store_true", help="regenerate every block in place")
    mode.add_argument("--self-test", action="store_true", help="check the checker on made-up docs")
    p.add_argument("root", nargs="?", default=".", help="the source folder (default: .)")
    args = p.parse_args()
    if args.self_test:
        return self_test()
    rpb = os.path.abspath(args.rpb)
    problems, count = run(rpb, pathlib.Path(args.root).resolve(), args.write)
    for line in problems:
        print(line)
    print(f"{count} generated blocks {'written' if args.write else 'checked'}, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
