#!/usr/bin/env python3
"""results.tex compiles and fits a page: every committed sweep's tables (`rpb results --format latex` over
bench/figures/*/results.json) set with pdflatex in a default one-column `article` (booktabs, graphicx), failing on a
LaTeX error or an "Overfull \\hbox" (a table wider than the text). First a self-check: a table made too wide on
purpose must be reported, so that the check can fail. Exit 77 (ctest: skipped) where pdflatex is missing (Debian's
texlive-latex-base and texlive-latex-recommended; scripts/deps.sh installs them).

usage: latex_fits.py --rpb BIN ROOT
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

PREAMBLE = "\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage{graphicx}\n\\begin{document}\n"


def compile_tables(tex, workdir, name):
    """pdflatex's problems with `tex` set in the document: a list of messages (empty: it compiled and fits)."""
    path = os.path.join(workdir, name + ".tex")
    with open(path, "w", encoding="utf-8") as f:
        f.write(PREAMBLE + tex + "\n\\end{document}\n")
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", name + ".tex"], cwd=workdir,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    log = run.stdout.decode("utf-8", "replace")
    problems = [line for line in log.splitlines() if line.startswith("Overfull \\hbox") or line.startswith("! ")]
    if run.returncode != 0 and not problems:
        problems.append("pdflatex exited %d" % run.returncode)
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rpb", required=True)
    ap.add_argument("root")
    a = ap.parse_args()
    if not shutil.which("pdflatex"):
        print("SKIPPED: pdflatex is missing (texlive-latex-base, texlive-latex-recommended)")
        return 77
    files = sorted(glob.glob(os.path.join(a.root, "bench", "figures", "*", "results.json")))
    if not files:
        print("no bench/figures/*/results.json under %s" % a.root)
        return 1
    failed = False
    with tempfile.TemporaryDirectory() as workdir:
        wide = "\\begin{tabular}{l}%s\\end{tabular}\n" % ("x" * 400)
        if not compile_tables(wide, workdir, "self_check"):
            print("self-check: a table wider than the page was not reported")
            return 1
        for i, path in enumerate(files):
            tex = subprocess.run([a.rpb, "results", path, "--format", "latex"], check=True,
                                 stdout=subprocess.PIPE).stdout.decode("utf-8")
            problems = compile_tables(tex, workdir, "t%d" % i)
            for p in problems:
                print("%s: %s" % (os.path.relpath(path, a.root), p))
            failed = failed or bool(problems)
            if not problems:
                print("%s: %d tables fit" % (os.path.relpath(path, a.root), tex.count("\\begin{table}")))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
