#!/usr/bin/env python3
"""Compares two JSON outputs of rpb as parsed values, not as text: the refactoring check of scripts/same_results.sh.

  scripts/same_json.py OLD NEW [--digits N] [--lines] [--new-key KEY=VALUE ...] [--ignore PATH ...]

Numbers match when NEW's value, printed with N significant digits (the precision OLD's writer printed, e.g. 10
for results.json before format rpb-results-2), reads back as OLD's value; without --digits they must be equal.
Objects must hold the same keys in the same order, but for the top-level --new-key members NEW adds (e.g.
format=rpb-results-2). --ignore PATH drops a member from both sides wherever it is present, before comparing:
PATH is keys joined by "." from the top, "*" standing for every element of an array ("provenance",
"rows.*.runs"); scripts/same_results.sh names the provenance fields this way. With --lines the files are compared
line by line: a line starting with "{" as JSON, others as text. Exits 0 when they match; else prints the first
differences (their path) and exits 1.
"""
import argparse
import json
import sys


def differences(old, new, digits, path, out):
    if isinstance(old, bool) or isinstance(new, bool) or old is None or new is None or isinstance(old, str):
        if type(old) is not type(new) or old != new:
            out.append(f"{path}: {old!r} != {new!r}")
    elif isinstance(old, (int, float)):
        if not isinstance(new, (int, float)):
            out.append(f"{path}: {old!r} != {new!r}")
        elif isinstance(old, int) and isinstance(new, int):
            if old != new:
                out.append(f"{path}: {old} != {new}")
        elif float(old) != (float(f"{new:.{digits}g}") if digits else float(new)):
            out.append(f"{path}: {old!r} != {new!r} (at {digits or 'all'} digits)")
    elif isinstance(old, list):
        if not isinstance(new, list) or len(old) != len(new):
            out.append(f"{path}: lists of other lengths or types")
            return
        for i, (a, b) in enumerate(zip(old, new)):
            differences(a, b, digits, f"{path}[{i}]", out)
    elif isinstance(old, dict):
        if not isinstance(new, dict) or list(old) != list(new):
            out.append(f"{path}: keys {list(old)} != {list(new) if isinstance(new, dict) else new!r}")
            return
        for k in old:
            differences(old[k], new[k], digits, f"{path}.{k}", out)


def drop(value, path):
    """`value` without the member at `path` (a list of keys, "*" for every array element), wherever present."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if head == "*" and isinstance(value, list):
        return [drop(v, rest) for v in value]
    if isinstance(value, dict):
        if not rest:
            return {k: v for k, v in value.items() if k != head}
        return {k: (drop(v, rest) if k == head else v) for k, v in value.items()}
    return value


def compare_json(old_text, new_text, args, where, out):
    old, new = json.loads(old_text), json.loads(new_text)
    for path in args.ignore:
        old, new = drop(old, path.split(".")), drop(new, path.split("."))
    for kv in args.new_key:
        key, value = kv.split("=", 1)
        if not isinstance(new, dict) or new.get(key) != value:
            out.append(f"{where}: the new output lacks {key}={value}")
            continue
        new = {k: v for k, v in new.items() if k != key}
    differences(old, new, args.digits, where, out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--digits", type=int, default=0)
    p.add_argument("--lines", action="store_true")
    p.add_argument("--new-key", action="append", default=[])
    p.add_argument("--ignore", action="append", default=[])
    args = p.parse_args()
    with open(args.old) as f:
        old_text = f.read()
    with open(args.new) as f:
        new_text = f.read()
    out = []
    if not args.lines:
        compare_json(old_text, new_text, args, "$", out)
    else:
        old_lines, new_lines = old_text.splitlines(), new_text.splitlines()
        if len(old_lines) != len(new_lines):
            out.append(f"{len(old_lines)} lines != {len(new_lines)} lines")
        for n, (a, b) in enumerate(zip(old_lines, new_lines), 1):
            if a.startswith("{") and b.startswith("{"):
                compare_json(a, b, args, f"line {n}", out)
            elif a != b:
                out.append(f"line {n}: {a!r} != {b!r}")
    for line in out[:20]:
        print(line)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
