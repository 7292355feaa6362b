"""README.md stays a front door: at most 300 lines, and its first 60 lines hold the two commands (scripts/run.sh and
scripts/test.sh) and links to the results, to one's own text and to the extension guide. Everything else belongs in
docs/. Exits 1 naming what is missing or how long the README has grown.

    python3 tests/readme_front_door.py [SOURCE_DIR | README_FILE]
"""
import pathlib
import re
import sys

MAX_LINES = 300
HEAD_LINES = 60
# What a newcomer must meet in the first HEAD_LINES lines: the commands as text, the pages as link targets.
COMMANDS = ["scripts/run.sh", "scripts/test.sh"]
PAGES = {"docs/results.md": "the results", "docs/text.md": "one's own text", "docs/extending.md": "the extension guide"}


def problems(text, name):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = []
    if len(lines) > MAX_LINES:
        out.append(f"{name} has {len(lines)} lines, more than {MAX_LINES}: move sections to docs/ and link them")
    head = "\n".join(lines[:HEAD_LINES])
    for command in COMMANDS:
        if command not in head:
            out.append(f"{name}: {command} is not in the first {HEAD_LINES} lines")
    targets = {t.split("#", 1)[0] for t in re.findall(r"\]\(([^)\s]+)\)", head)}
    for page, what in PAGES.items():
        if page not in targets:
            out.append(f"{name}: no link to {page} ({what}) in the first {HEAD_LINES} lines")
    return out, len(lines)


def main():
    arg = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    readme = arg / "README.md" if arg.is_dir() else arg
    found, count = problems(readme.read_text(encoding="utf-8"), readme.name)
    for p in found:
        print(p)
    print(f"{readme.name}: {count} lines, {len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
