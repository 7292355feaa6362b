#!/usr/bin/env python3
"""Compares two CSV outputs of rpb (results.csv) cell by cell, as text: the refactoring check of
scripts/same_results.sh.

  scripts/same_csv.py OLD NEW [--ignore-column NAME ...]

The columns named by --ignore-column are dropped from both files where their header has them (an older rpb's file
may lack them); the remaining headers, row counts and cells must be identical. Exits 0 when they match; else prints
the first differences (row and column) and exits 1.
"""
import argparse
import csv
import sys


def table(path, ignore):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return [], []
    keep = [i for i, name in enumerate(rows[0]) if name not in ignore]
    return [rows[0][i] for i in keep], [[r[i] if i < len(r) else None for i in keep] for r in rows[1:]]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--ignore-column", action="append", default=[])
    args = p.parse_args()
    ignore = set(args.ignore_column)
    (old_header, old_rows), (new_header, new_rows) = table(args.old, ignore), table(args.new, ignore)
    out = []
    if old_header != new_header:
        out.append(f"header: {old_header} != {new_header}")
    elif len(old_rows) != len(new_rows):
        out.append(f"{len(old_rows)} rows != {len(new_rows)} rows")
    else:
        for n, (a, b) in enumerate(zip(old_rows, new_rows), 2):
            for name, x, y in zip(old_header, a, b):
                if x != y:
                    out.append(f"line {n}, column {name}: {x!r} != {y!r}")
    for line in out[:20]:
        print(line)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
