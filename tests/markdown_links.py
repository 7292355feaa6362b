"""Every relative link and picture in the project's Markdown files (README.md, docs/, CHANGELOG.md and bench/'s;
not those under build*/ or checkpoints/) points at a file or folder that exists, and every #anchor at a heading of
its page (as GitHub names headings), so no page shows a broken figure or sends a reader to a path or section that
was moved.
Exits 1 naming each broken link (file:line, the target).

    python3 tests/markdown_links.py [SOURCE_DIR]
    python3 tests/markdown_links.py --self-test
"""
import pathlib
import re
import sys
import tempfile

# [text](target) and ![alt](target), the target up to the first space or closing parenthesis; text may span lines.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SKIP_DIRS = {"build", "checkpoints", ".git", "node_modules"}
FENCE = re.compile(r"```.*?```", re.S)


def markdown_files(root):
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root)
        if len(rel.parts) > 1 and (rel.parts[0] in SKIP_DIRS or rel.parts[0].startswith("build")):
            continue
        yield path


def blank_code(text):
    """The text with fenced code blocks blanked out (their lines kept), so links and headings in them do not count."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def slug(heading):
    """GitHub's anchor of a heading: links and code marks dropped to their text, lower case, punctuation other than
    '-' and '_' removed, spaces as '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path, cache={}):
    """The anchors of the headings of the Markdown file `path` (a repeated heading gets -1, -2, ...)."""
    if path not in cache:
        seen, out = {}, set()
        for line in blank_code(path.read_text(encoding="utf-8")).splitlines():
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
        cache[path] = out
    return cache[path]


def check(root):
    """(broken links as 'file:line: message', the number of links checked) under `root`."""
    broken, checked = [], 0
    for path in markdown_files(root):
        blanked = blank_code(path.read_text(encoding="utf-8"))  # links may wrap over lines: match on the whole text
        for m in LINK.finditer(blanked):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue  # a URL or mailto:
            file_part, _, fragment = target.partition("#")
            dest = (path.parent / file_part) if file_part else path
            checked += 1
            where = f"{path.relative_to(root)}:{blanked.count(chr(10), 0, m.start()) + 1}"
            if not dest.exists():
                broken.append(f"{where}: {target} does not exist")
            elif fragment and dest.suffix == ".md" and dest.is_file() and fragment not in anchors(dest):
                broken.append(f"{where}: {target}: no heading of {dest.relative_to(root)} has the anchor #{fragment}")
    return broken, checked


def self_test():
    with tempfile.TemporaryDirectory(prefix="markdown_links_") as tmp:
        root = pathlib.Path(tmp)
        (root / "docs").mkdir()
        (root / "docs" / "a.md").write_text("# A page\n\n## The paper's regime: every `T5` bucket\n\n## Twice\n\n"
                                            "## Twice\n\n```sh\n# not a heading\n```\n")
        good = ("[a](docs/a.md) [b](docs/a.md#the-papers-regime-every-t5-bucket) [c](docs/a.md#twice-1) "
                "[d](#top) [e](https://example.org/x#y)\n\n# Top\n")
        (root / "README.md").write_text(good)
        ok_good = check(root) == ([], 4)
        (root / "README.md").write_text(good + "[f](docs/b.md) [g](docs/a.md#not-a-heading) [h](#nowhere)\n")
        broken, _ = check(root)
        ok_bad = [b.split(": ", 1)[1] for b in broken] == [
            "docs/b.md does not exist",
            "docs/a.md#not-a-heading: no heading of docs/a.md has the anchor #not-a-heading",
            "#nowhere: no heading of README.md has the anchor #nowhere"]
    for name, ok in (("good links pass", ok_good), ("a missing file and two missing anchors are named", ok_bad)):
        print(("ok      " if ok else "FAILED  ") + name)
    return 0 if ok_good and ok_bad else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    broken, checked = check(root)
    for b in broken:
        print(b)
    print(f"{checked} relative links checked, {len(broken)} broken")
    return 1 if broken or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
