"""The Python API: draw a request into a Figure, write it (save, render), and the shortcuts that build a request
from results.json files or sweep folders (plot_sweep) and from run folders (plot_curves)."""
import os
import stat
import tempfile

from .backend import matplotlib
from .bias import draw_bias
from .curves import draw_curves
from .errors import RequestError, require
from .request import CHECKS, FORMATS, REQUEST_FORMAT, check_request
from .results import results_path
from .styles import load_styles
from .sweep import draw_sweep

DRAWS = {"sweep": draw_sweep, "curves": draw_curves, "bias": draw_bias}  # a kind's block -> its Figure
KINDS = {kind: (CHECKS[kind], DRAWS[kind]) for kind in CHECKS}  # kind -> (check its block, draw it)


def draw(request):
    """The Figure of a request (checked first; nothing written)."""
    check_request(request)
    return DRAWS[request["kind"]](request[request["kind"]], request.get("styles") or {})


def input_paths(request):
    """The files a request reads: its results.json files and metrics.csv files."""
    block = request.get(request.get("kind")) or {}
    return list(block.get("results") or []) + [run["metrics_csv"] for run in block.get("runs") or []]


def _check_target(path, inputs):
    """Refuses to write `path` when it exists as anything but a regular file (a link, a folder, a device) or is
    one of `inputs` (by its real path)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    require(mode is None or stat.S_ISREG(mode),
            'cannot write "%s": it exists and is not a regular file (a link, a folder or a device)' % path)
    real = os.path.realpath(path)
    for i in inputs:
        require(os.path.realpath(i) != real, 'cannot write "%s": it is an input of the request (%s)' % (path, i))


def save(fig, path, fmt=None, inputs=()):
    """Writes `fig` to `path` as `fmt` (else by the path's extension: pdf, png or svg), without a date in the
    file (a redrawn figure differs from the committed one only where the drawing does): into a temp file in the
    same folder, renamed over `path`, so `path` is the new figure or untouched. Refuses (RequestError) a `path`
    that exists as anything but a regular file or is one of `inputs`."""
    fmt = fmt or os.path.splitext(path)[1].lstrip(".").lower()
    require(fmt in FORMATS, 'cannot write "%s": the format must be one of %s' % (path, ", ".join(FORMATS)))
    _check_target(path, inputs)
    metadata = {"pdf": {"CreationDate": None}, "svg": {"Date": None}, "png": {}}[fmt]
    folder, name = os.path.split(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix="." + name + ".", suffix=".tmp", dir=folder)
    try:
        umask = os.umask(0o22)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # as a file open() creates, not mkstemp's 0600
        with os.fdopen(fd, "wb") as f, matplotlib.rc_context({"svg.hashsalt": "rpb", "pdf.compression": 6}):
            fig.savefig(f, format=fmt, metadata=metadata)
        _check_target(path, inputs)  # it may have changed meanwhile
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def render(request, inputs=()):
    """Draws a request and writes each of its outputs (never over one of its inputs, or `inputs`: the request's
    own file); returns the Figure."""
    fig = draw(request)
    for out in request.get("outputs", []):
        save(fig, out["path"], out["format"], list(inputs) + input_paths(request))
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


def _run_config(run_dir):
    """A run folder's config.toml as a dict (a RequestError naming it when it cannot be read)."""
    path = os.path.join(run_dir, "config.toml")
    try:
        import tomllib
        with open(path, "rb") as f:
            config = tomllib.load(f)
    except ImportError:
        raise RequestError("cannot read %s: reading a config needs Python 3.11 (tomllib)" % path) from None
    except (OSError, ValueError) as e:
        raise RequestError("cannot read the run's config %s: %s" % (path, e)) from None
    scheme = config.get("position", {}).get("scheme")
    require(isinstance(scheme, str) and scheme, "%s has no position.scheme" % path)
    return config


def _run_entry(path, label=None):
    """The curves block's run of a run folder (or its metrics.csv): labelled by its folder's name, "t5/seed0" for
    a sweep's run (run.name "seed<run.seed>" in its config), whose method is the sweep's (its method folder)."""
    csv_path = os.path.abspath(path if path.endswith(".csv") else os.path.join(path, "metrics.csv"))
    folder = os.path.dirname(csv_path)
    config = _run_config(folder)
    run = config.get("run", {})
    name = os.path.basename(folder)
    method = name
    if run.get("name") == name == "seed%s" % run.get("seed", 0):
        method = os.path.basename(os.path.dirname(folder))
        name = "%s/%s" % (method, name)
    return {"label": label or name, "method": label or method, "scheme": config["position"]["scheme"],
            "metrics_csv": csv_path}


def plot_curves(run_dirs, out=None, x="step", ylim=None, labels=None, styles=None):
    """Training curves of run folders (or metrics.csv paths), labelled by folder name ("t5/seed0" in a sweep, styled
    as its method t5) unless `labels` are given, in the scheme of each run's config.toml; written to `out` when
    given; returns the Figure."""
    runs = [_run_entry(path, labels[i] if labels else None) for i, path in enumerate(run_dirs)]
    return render(request_for("curves", {"runs": runs, "x": x, "ylim": list(ylim) if ylim else None}, out, styles))
