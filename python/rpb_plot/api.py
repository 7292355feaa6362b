"""The Python API: draw a request into a Figure, write it (save, render), and the shortcuts that draw what
`rpb plot` draws, with the request it builds (rpb_request): of results.json files or sweep folders (plot_sweep) and of
run folders (plot_curves)."""
import json
import os
import stat
import subprocess
import tempfile

from .backend import matplotlib
from .bias import draw_bias
from .curves import draw_curves
from .errors import RequestError, require
from .request import CHECKS, FORMATS, check_request
from .styles import rpb_binary
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


def rpb_request(args, out=None, rpb=None):
    """The request `rpb plot ARGS --request` builds (rpb's one rule for labels, methods, schemes and filters), writing
    `out` when given (else no output); a RequestError with rpb's message when it refuses or cannot run."""
    command = [rpb or rpb_binary(), "plot"] + [str(a) for a in args] + ["--request"] + (["--out", out] if out else [])
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as e:
        raise RequestError("cannot run %s (build rpb, or set RPB to it): %s" % (command[0], e)) from None
    lines = done.stdout.strip().splitlines()
    require(done.returncode == 0 and lines, "rpb plot %s: %s" % (" ".join(command[2:]), done.stderr.strip()
                                                                or "exit %d" % done.returncode))
    return json.loads(lines[-1])  # "outputs": `out`, or none when not given


def _flags(flag, values):
    return [a for v in values for a in (flag, v)]


def plot_sweep(paths, out=None, tasks=(), methods=(), lengths=(), metrics=(), ylim=None, against="length",
               styles=None):
    """The sweep figure of results.json files or sweep folders (lengths in tokens), as `rpb plot PATH...` draws it;
    written to `out` when given; returns it."""
    args = list(paths) + _flags("--tasks", tasks) + _flags("--methods", methods) + _flags("--lengths", lengths)
    args += _flags("--metric", metrics) + (["--ylim", "%r,%r" % tuple(ylim)] if ylim else [])
    request = rpb_request(args + (["--against", against] if against != "length" else []), out)
    request["styles"] = styles if styles is not None else request["styles"]
    return render(request)


def plot_curves(run_dirs, out=None, x="step", ylim=None, labels=None, styles=None):
    """Training curves of run folders (or metrics.csv paths), as `rpb plot RUN...` draws them (labelled by folder
    name, "t5/seed0" and styled as its method t5 for a run its sweep's results.json lists) unless `labels` are given;
    written to `out` when given; returns the Figure."""
    request = rpb_request(list(run_dirs) + ["--x", x] + (["--ylim", "%r,%r" % tuple(ylim)] if ylim else []), out)
    for run, label in zip(request["curves"]["runs"], labels or []):
        run["label"] = run["method"] = label
    request["styles"] = styles if styles is not None else request["styles"]
    return render(request)
