"""Every relative link and picture in the project's Markdown files points at a file or folder that exists, so
the README never shows a broken figure or sends a reader to a path that was moved. Exits 1 naming each broken
link (file:line, the target).

    python3 tests/markdown_links.py [SOURCE_DIR]
"""
import pathlib
import re
import sys

# [text](target) and ![alt](target), the target up to the first space or closing parenthesis; text may span lines.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SKIP_DIRS = {"build", "checkpoints", ".git", "node_modules"}


def markdown_files(root):
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root)
        if rel.parts and (rel.parts[0] in SKIP_DIRS or rel.parts[0].startswith("build")):
            continue
        yield path


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    broken, checked = [], 0
    for path in markdown_files(root):
        text = path.read_text(encoding="utf-8")
        # Links may wrap over lines: match on the text with code blocks blanked out.
        blanked = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
        for m in LINK.finditer(blanked):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue  # a URL, mailto: or an anchor in the same file
            file_part = target.split("#", 1)[0]
            checked += 1
            if not (path.parent / file_part).exists():
                line = blanked.count("\n", 0, m.start()) + 1
                broken.append(f"{path.relative_to(root)}:{line}: {target} does not exist")
    for b in broken:
        print(b)
    print(f"{checked} relative links checked, {len(broken)} broken")
    return 1 if broken or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
