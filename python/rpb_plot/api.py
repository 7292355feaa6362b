"""The Python API: draw a request into a Figure, write it (save, render), and the shortcuts that build a request
from results.json files or sweep folders (plot_sweep) and from run folders (plot_curves)."""
import os

from .backend import matplotlib
from .bias import draw_bias
from .curves import draw_curves
from .errors import require
from .request import CHECKS, FORMATS, REQUEST_FORMAT, check_request
from .results import results_path
from .styles import load_styles, scheme_of
from .sweep import draw_sweep

DRAWS = {"sweep": draw_sweep, "curves": draw_curves, "bias": draw_bias}  # a kind's block -> its Figure
KINDS = {kind: (CHECKS[kind], DRAWS[kind]) for kind in CHECKS}  # kind -> (check its block, draw it)


def draw(request):
    """The Figure of a request (checked first; nothing written)."""
    check_request(request)
    return DRAWS[request["kind"]](request[request["kind"]], request.get("styles") or {})


def save(fig, path, fmt=None):
    """Writes `fig` to `path` as `fmt` (else by the path's extension: pdf, png or svg), without a date in the
    file (a redrawn figure differs from the committed one only where the drawing does)."""
    fmt = fmt or os.path.splitext(path)[1].lstrip(".").lower()
    require(fmt in FORMATS, 'cannot write "%s": the format must be one of %s' % (path, ", ".join(FORMATS)))
    metadata = {"pdf": {"CreationDate": None}, "svg": {"Date": None}, "png": {}}[fmt]
    with matplotlib.rc_context({"svg.hashsalt": "rpb", "pdf.compression": 6}):
        fig.savefig(path, format=fmt, metadata=metadata)


def render(request):
    """Draws a request and writes each of its outputs; returns the Figure."""
    fig = draw(request)
    for out in request.get("outputs", []):
        save(fig, out["path"], out["format"])
    return fig


def request_for(kind, block, out=None, styles=None):
    """A request dict of `kind` with `block`, writing `out` (format by extension) when given."""
    outputs = [{"path": os.path.abspath(out), "format": os.path.splitext(out)[1].lstrip(".").lower()}] if out else []
    return {"format": REQUEST_FORMAT, "kind": kind, "outputs": outputs,
            "styles": styles if styles is not None else load_styles(), kind: block}


def plot_sweep(paths, out=None, tasks=(), methods=(), lengths=(), metrics=(), ylim=None, against="length",
               styles=None):
    """The sweep figure of results.json files or sweep folders; written to `out` when given; returns it."""
    return render(request_for("sweep", {
        "results": [os.path.abspath(results_path(p)) for p in paths], "tasks": list(tasks), "methods": list(methods),
        "lengths": list(lengths), "metrics": list(metrics), "ylim": list(ylim) if ylim else None,
        "against": against}, out, styles))


def _run_scheme(run_dir):
    try:
        import tomllib
        with open(os.path.join(run_dir, "config.toml"), "rb") as f:
            return tomllib.load(f).get("position", {}).get("scheme")
    except (OSError, ValueError, ImportError):
        return None


def _run_label(folder):
    """A run folder's name; a sweep's seed folder with its method's ("t5/seed0")."""
    folder = os.path.normpath(os.path.abspath(folder))
    name = os.path.basename(folder)
    if name[:4] == "seed" and name[4:].isdigit():
        return "%s/%s" % (os.path.basename(os.path.dirname(folder)), name)
    return name


def plot_curves(run_dirs, out=None, x="step", ylim=None, labels=None, styles=None):
    """Training curves of run folders (or metrics.csv paths), labelled by folder name ("t5/seed0" in a sweep) unless
    `labels` are given, styled by the scheme of each run's config.toml; written to `out` when given; returns the
    Figure."""
    runs = []
    for i, path in enumerate(run_dirs):
        folder = os.path.dirname(path) if path.endswith(".csv") else path
        label = labels[i] if labels else _run_label(folder)
        runs.append({"label": label, "scheme": _run_scheme(folder) or scheme_of(label),
                     "metrics_csv": os.path.abspath(path if path.endswith(".csv")
                                                    else os.path.join(path, "metrics.csv"))})
    return render(request_for("curves", {"runs": runs, "x": x, "ylim": list(ylim) if ylim else None}, out, styles))

