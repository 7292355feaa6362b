"""The Python API: draw a request into a Figure, write it (save, render), and the shortcuts that draw what
`rpb plot` draws, with the request it builds (rpb_request): of results.json files or sweep folders (plot_sweep) and of
run folders (plot_curves)."""
import json
import os
import stat
import subprocess

from .backend import PLAIN_TEXT, matplotlib
from .bias import draw_bias
from .curves import draw_curves
from .errors import MATPLOTLIB_MISSING, MatplotlibMissing, RequestError, WriteError, require
from .request import CHECKS, FORMATS, check_request
from .styles import rpb_binary
from .sweep_figure import draw_sweep

DRAWS = {"sweep": draw_sweep, "curves": draw_curves, "bias": draw_bias}  # a kind's block -> its Figure
KINDS = {kind: (CHECKS[kind], DRAWS[kind]) for kind in CHECKS}  # kind -> (check its block, draw it)


def draw(request):
    """The Figure of a request (checked first; nothing written); its labels are text as written (PLAIN_TEXT)."""
    check_request(request)
    if matplotlib is None:
        raise MatplotlibMissing(MATPLOTLIB_MISSING)
    with matplotlib.rc_context(PLAIN_TEXT):
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


def _live(pid):
    """Whether `pid` is a live process (os.kill(pid, 0) succeeds, or fails only for permission)."""
    if not 0 < pid < 2 ** 31:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_dead_temps(path):
    """Removes the temp files ".<name>.tmp.<pid>" that writes of `path` (here or by rpb) left when their process was
    killed: those whose pid is no live process; a folder under such a name is left, a link unlinked."""
    folder, name = os.path.split(os.path.abspath(path))
    prefix = "." + name + ".tmp."
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        digits = entry[len(prefix):]
        ours = digits.isascii() and digits.isdigit() and digits[0] != "0"  # str(pid): no leading zero
        if entry.startswith(prefix) and ours and not _live(int(digits)):
            full = os.path.join(folder, entry)
            try:
                if not stat.S_ISDIR(os.lstat(full).st_mode):
                    os.unlink(full)
            except OSError:
                pass


def save(fig, path, fmt=None, inputs=(), direct=False, name=None):
    """Writes `fig` to `path` as `fmt` (else by the path's extension: pdf, png or svg), without a date in the
    file (a redrawn figure differs from the committed one only where the drawing does): into the temp file
    ".<name>.tmp.<pid>" in the same folder (rpb's temp names: one a killed process left is removed by the next write
    of `path`, here or by rpb), renamed over `path`, so `path` is the new figure or untouched. With `direct`, `path`
    is itself a temp file that the caller renames (rpb's; created here, never through a link). Refuses
    (RequestError) a `path` that exists as anything but a regular file or is one of `inputs`; a write that fails
    raises WriteError naming `name` (default `path`), never a temp file."""
    fmt = fmt or os.path.splitext(path)[1].lstrip(".").lower()
    name = name or path
    require(fmt in FORMATS, 'cannot write "%s": the format must be one of %s' % (name, ", ".join(FORMATS)))
    _check_target(path, inputs)
    metadata = {"pdf": {"CreationDate": None}, "svg": {"Date": None}, "png": {}}[fmt]
    temp = path
    if not direct:
        _remove_dead_temps(path)
        folder, base = os.path.split(os.path.abspath(path))
        temp = os.path.join(folder, "." + base + ".tmp." + str(os.getpid()))
        if os.path.lexists(temp):
            os.unlink(temp)  # a leftover of a dead process that had this pid
    try:
        # Exclusive and not through a link; 0666 less the umask, as a file open() creates.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as e:
        raise WriteError('cannot write "%s": %s' % (name, e.strerror or e)) from None
    try:
        with os.fdopen(fd, "wb") as f, matplotlib.rc_context({"svg.hashsalt": "rpb", "pdf.compression": 6,
                                                             **PLAIN_TEXT}):
            fig.savefig(f, format=fmt, metadata=metadata)
        if not direct:
            _check_target(path, inputs)  # it may have changed meanwhile
            os.replace(temp, path)
    except BaseException as e:
        try:
            os.unlink(temp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise WriteError('cannot write "%s": %s' % (name, e.strerror or e)) from None
        raise


def render(request, inputs=()):
    """Draws a request and writes each of its outputs (never over one of its inputs, or `inputs`: the request's
    own file); returns the Figure."""
    fig = draw(request)
    for out in request.get("outputs", []):
        save(fig, out["path"], out["format"], list(inputs) + input_paths(request), out.get("direct", False),
             out.get("name"))
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
