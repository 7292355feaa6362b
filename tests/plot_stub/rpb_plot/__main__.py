"""A stand-in for python/rpb_plot/ in rpb's C++ tests (tests/test_plot.cpp): checks a plot request's fields as
cli/python_runner.h describes them, and writes a small file of the right kind to each output path, without
matplotlib. The environment steers it:
  RPB_PLOT_STUB_EXIT=<n>   exit with code n (3: "matplotlib is missing") before writing anything
  RPB_PLOT_STUB_LOG=<path> copy the request there (the tests read it back)
Exit codes as the real module's: 0 done, 2 a bad request (the reason on stderr), 3 matplotlib missing."""
import json
import os
import sys

CONTENT = {"pdf": b"%PDF-1.4 stub\n", "svg": b"<svg xmlns=\"http://www.w3.org/2000/svg\">stub</svg>\n",
           "png": b"\x89PNG\r\n\x1a\nstub"}


class BadRequest(Exception):
    pass


def need(cond, what):
    if not cond:
        raise BadRequest(what)


def check_styles(styles):
    schemes = styles["schemes"]
    need(isinstance(schemes, list) and schemes, "styles.schemes: expected a non-empty list")
    for s in schemes:
        need(set(s) >= {"name", "label", "dims"}, f"styles.schemes: {s} lacks a field")
        need("color" not in s or (len(s["color"]) == 7 and s["color"][0] == "#"),
             f"styles.schemes: {s['name']}'s colour {s.get('color')}")


def check_sweep(b):
    need(b["results"] and all(os.path.isabs(p) and os.path.isfile(p) for p in b["results"]),
         "sweep.results: expected absolute paths of existing files")
    for key in ("tasks", "methods", "lengths", "metrics"):
        need(isinstance(b[key], list), f"sweep.{key}: expected a list")
    need(b["ylim"] is None or (len(b["ylim"]) == 2 and b["ylim"][0] < b["ylim"][1]), "sweep.ylim")
    need(isinstance(b["against"], str) and b["against"], "sweep.against")


def check_curves(b):
    need(b["runs"], "curves.runs: expected at least one run")
    for r in b["runs"]:
        need(set(r) == {"label", "method", "scheme", "metrics_csv"}, f"curves.runs: fields {sorted(r)}")
        need(r["scheme"] and r["method"], "curves.runs: scheme and method must not be empty")
        need(os.path.isabs(r["metrics_csv"]) and os.path.isfile(r["metrics_csv"]), "curves.runs.metrics_csv")
    need(b["x"] in ("step", "tokens"), "curves.x")
    need(b["ylim"] is None or len(b["ylim"]) == 2, "curves.ylim")


def check_bias(b):
    need(b["dims"] in (1, 2) and b["modules"] and isinstance(b["title"], str), "bias: dims, modules, title")
    need(isinstance(b["train_length"], int) and b["scheme"], "bias: train_length, scheme")
    for m in b["modules"]:
        heads = len(m["values"])
        need(heads >= 1 and len(m["head_notes"]) == heads, f"bias.modules {m['name']}: heads")
        if b["dims"] == 1:
            n = len(m["distances"])
            need(all(len(h) == n for h in m["values"]) and len(m["trained"]) == n, f"{m['name']}: 1-D shapes")
        else:
            ny, nx = len(m["dy"]), len(m["dx"])
            need(all(len(h) == ny and all(len(r) == nx for r in h) for h in m["values"]), f"{m['name']}: 2-D values")
            need(len(m["trained"]) == ny and all(len(r) == nx for r in m["trained"]), f"{m['name']}: 2-D trained")


def check(request):
    need(request.get("format") == "rpb-plot-1", "format: expected \"rpb-plot-1\"")
    kind = request.get("kind")
    need(kind in ("sweep", "curves", "bias"), f"kind: {kind!r}")
    blocks = {k for k in ("sweep", "curves", "bias") if k in request}
    need(blocks == {kind}, f"expected only the block {kind!r}, found {sorted(blocks)}")
    need(request["outputs"], "outputs: expected at least one")
    for o in request["outputs"]:
        path = o["path"]
        need(os.path.isabs(path) and os.path.isdir(os.path.dirname(path)), f"outputs: {path}")
        need(os.path.basename(path).startswith(".") and ".tmp." in path, f"outputs: {path} is no temp file")
        need(o["format"] in CONTENT, f"outputs: format {o['format']}")
        need(o.get("direct") is True and os.path.isabs(o.get("name", "")), f"outputs: {path}: direct and name")
    check_styles(request["styles"])
    {"sweep": check_sweep, "curves": check_curves, "bias": check_bias}[kind](request[kind])


def main():
    code = int(os.environ.get("RPB_PLOT_STUB_EXIT", "0") or 0)
    if code == 3:  # as the real module's __main__.py says it
        print("rpb_plot: matplotlib is missing: install it with `apt-get install python3-matplotlib` "
              "(scripts/deps.sh does)", file=sys.stderr)
    if code:
        print(f"rpb_plot stub: exit {code} as RPB_PLOT_STUB_EXIT says", file=sys.stderr)
        return code
    if sys.argv[1] == "-":  # rpb passes the request on standard input
        text = sys.stdin.read()
    else:
        with open(sys.argv[1]) as f:
            text = f.read()
    request = json.loads(text)
    if os.environ.get("RPB_PLOT_STUB_LOG"):
        with open(os.environ["RPB_PLOT_STUB_LOG"], "w") as f:
            f.write(text)
    try:
        check(request)
    except (BadRequest, KeyError, TypeError) as e:
        print(f"rpb_plot stub: bad request: {e}", file=sys.stderr)
        return 2
    for o in request["outputs"]:
        with open(o["path"], "wb") as f:
            f.write(CONTENT[o["format"]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
