#!/usr/bin/env python3
"""rpb's figures, drawn with matplotlib (Agg): sweep results, training curves and position-bias pictures.

As a script (what `rpb plot`, `rpb extrapolate` and `rpb inspect --plot` run):

    /usr/bin/python3 python/rpb_plot.py REQUEST.json

exit 0 when every output is written, 2 on a bad request (the reason on stderr), 3 when matplotlib is missing,
1 on anything else. As a module (python/ on sys.path):

    import rpb_plot
    rpb_plot.plot_sweep(["checkpoints/extrapolation_quick"], "results.pdf", tasks=["markov"])
    rpb_plot.plot_sweep(["grid/results.json"], "lr.png", against="optim.lr")
    rpb_plot.plot_curves(["checkpoints/t5", "checkpoints/alibi"], "curves.pdf", x="tokens")
    fig = rpb_plot.draw(request)    # any request as a dict; returns the matplotlib Figure (nothing written)

The request (JSON; only the block named by "kind" is read; unknown fields are ignored):

    {"format": "rpb-plot-1", "kind": "sweep" | "curves" | "bias",
     "outputs": [{"path": "/abs/out.pdf", "format": "pdf" | "png" | "svg"}],
     "styles": {"schemes": [{"name": "t5", "dims": 1, "color": "#1f77b4", "marker": "o"}, ...]},
     "sweep":  {"results": ["/abs/results.json"], "tasks": [], "methods": [], "lengths": [], "metrics": [],
                "ylim": null | [lo, hi], "against": "length" | "<setting key>"},          # [] = all
     "curves": {"runs": [{"label": "t5", "scheme": "t5", "metrics_csv": "/abs/run/metrics.csv"}],
                "x": "step" | "tokens", "ylim": null | [lo, hi]},
     "bias":   {"dims": 1, "scheme": "t5", "title": "...", "train_length": 64,
                "modules": [{"name": "blocks.0.attn.position", "distances": [0, 1, ...],
                             "values": [[per distance] per head], "trained": [bool per distance],
                             "untrained_rows": "nearest" | null, "head_notes": ["slope 0.5", ...] (optional)}]}
               2-D modules: {"name", "dy": [...], "dx": [...], "values": [[[per dx] per dy] per head],
                             "trained": [[per dx] per dy]}

Sweep filters: "lengths" holds evaluation lengths in tokens (64) or multipliers as text ("2x"); "metrics" holds
keys of METRICS (or their aliases). Distances d, dy and dx are query - key. The figures: one column per task
(per task and length against a setting), one row per metric; a method's line has its markers, a band of
mean ± std over seeds, and its n/a lengths in its legend entry, never a point; the optimal perplexity is a dashed
line with its own legend entry. Colours and markers: style_of (the scheme's registry colour and marker; a
variant, any label other than the scheme's name, gets a shade, dash and marker derived from its label's digest).
Ticks: nice_ticks (always inside the data's range). Edit the constants below to restyle every figure.
"""
import colorsys
import csv
import hashlib
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass, field

try:
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import PatchCollection
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullFormatter, NullLocator
    from matplotlib.transforms import ScaledTranslation
except ImportError:  # building requests and styles works without it; drawing raises MatplotlibMissing
    matplotlib = None

REQUEST_FORMAT = "rpb-plot-1"
EXIT_ERROR, EXIT_BAD_REQUEST, EXIT_NO_MATPLOTLIB = 1, 2, 3
FORMATS = ("pdf", "png", "svg")
PANEL_SIZE = (4.8, 3.3)  # inches of one panel, before its legend
LEGEND_ROW = 0.21  # inches per legend row under a panel
DPI = 150  # png resolution
BAND_ALPHA = 0.18  # the mean ± std band's opacity
# The palette and markers of a scheme the request's styles do not list (matplotlib's tab10, its filled markers).
FALLBACK_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
FALLBACK_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
# A variant's changes from its scheme's style, picked by its label's SHA-256: lightness (HLS), dash, marker.
VARIANT_SHADES = (-0.22, 0.18, -0.36, 0.30)
VARIANT_DASHES = ((0, (5, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)), (0, (3, 1, 1, 1, 1, 1)))
VARIANT_MARKERS = ("s", "^", "D", "v", "P", "X", "*", "<", ">", "h")
OPTIMUM_STYLE = {"color": "black", "linestyle": (0, (6, 3)), "linewidth": 1.3}
HEAD_COLORS = FALLBACK_COLORS  # 1-D bias: one colour and marker per head
UNTRAINED_STYLE = {"linestyle": (0, (1, 1.2)), "linewidth": 1.6}  # 1-D bias at untrained rows
TRAINED_SHADE = {"color": "#f0e6c8", "alpha": 0.7}  # 1-D bias: the trained range
HEATMAP_CMAP = "RdBu_r"  # 2-D bias: red above zero, blue below
HEADS_PER_ROW = 4  # 2-D bias: heatmaps per row
FEW_HEADS = 8  # 1-D bias: a module with at most this many heads lists values in its legend


class RequestError(ValueError):
    """A request (or a file it names) that cannot be drawn: exit 2, the message says what and where."""


class MatplotlibMissing(RuntimeError):
    """matplotlib cannot be imported: exit 3."""


def require(condition, message):
    """Raises RequestError(message) unless `condition`."""
    if not condition:
        raise RequestError(message)


# ---- styles --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Style:
    """How a method label is drawn in every figure."""
    color: str  # "#rrggbb"
    marker: str  # a matplotlib marker
    linestyle: object = "-"  # "-" or a dash tuple (offset, (on, off, ...))


def scheme_of(label):
    """The scheme of a method label: the part before the first '@' ("t5@untrained=nearest" -> "t5")."""
    return label.split("@", 1)[0]


def _digest(text):
    return hashlib.sha256(text.encode("utf-8")).digest()


def base_style(scheme, styles=None):
    """The scheme's colour and marker from the request's styles (rpb's registry), else from FALLBACK_* by
    the scheme name's digest (deterministic: the same in every figure and every run)."""
    for entry in (styles or {}).get("schemes", []):
        if entry.get("name") == scheme and entry.get("color") and entry.get("marker"):
            return Style(entry["color"], entry["marker"])
    d = _digest(scheme)
    return Style(FALLBACK_COLORS[d[0] % len(FALLBACK_COLORS)], FALLBACK_MARKERS[d[1] % len(FALLBACK_MARKERS)])


def shade(color, amount):
    """`color` ("#rrggbb") with its HLS lightness moved by `amount` (-1 .. 1), clamped."""
    r, g, b = (int(color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, lightness, s = colorsys.rgb_to_hls(r, g, b)
    r, g, b = colorsys.hls_to_rgb(h, min(0.85, max(0.12, lightness + amount)), s)
    return "#%02x%02x%02x" % tuple(round(255 * c) for c in (r, g, b))


def style_of(label, styles=None, scheme=None):
    """The Style of a method label: its scheme's (scheme_of(label) unless given) when the label is the scheme's
    name; for a variant ("t5@untrained=nearest", a grid point, a renamed run) the scheme's colour shaded, a dash
    and a marker other than the scheme's, each picked by the label's SHA-256."""
    scheme = scheme or scheme_of(label)
    base = base_style(scheme, styles)
    if label == scheme:
        return base
    d = _digest(label)
    markers = [m for m in VARIANT_MARKERS if m != base.marker]
    return Style(shade(base.color, VARIANT_SHADES[d[0] % len(VARIANT_SHADES)]), markers[d[2] % len(markers)],
                 VARIANT_DASHES[d[1] % len(VARIANT_DASHES)])


def scheme_dims(scheme, styles):
    """The dims the styles give a scheme (1, 2, or None when unknown or both)."""
    for entry in (styles or {}).get("schemes", []):
        if entry.get("name") == scheme:
            dims = entry.get("dims")
            dims = dims if isinstance(dims, list) else [dims]
            return dims[0] if len(dims) == 1 and dims[0] in (1, 2) else None
    return None


def rpb_binary():
    """The rpb to ask for styles: env RPB, else build/rpb beside this file's folder."""
    return os.environ.get("RPB") or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                 "build", "rpb")


def load_styles(rpb=None):
    """`rpb schemes --json` (its "schemes": name, dims, label, color, marker), or {"schemes": []} when rpb is
    missing or fails (style_of then uses the deterministic fallback palette)."""
    try:
        out = subprocess.run([rpb or rpb_binary(), "schemes", "--json"], capture_output=True, text=True,
                             timeout=60, check=True).stdout
        return {"schemes": json.loads(out).get("schemes", [])}
    except (OSError, subprocess.SubprocessError, ValueError, AttributeError):
        return {"schemes": []}


# ---- ticks and axes ------------------------------------------------------------------------------------------

def _finite(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def linear_ticks(lo, hi, most=6):
    """Ticks inside [lo, hi] (lo < hi) at the finest 1-2-2.5-5 step giving at most `most` of them; at least two
    (lo and hi themselves if nothing nicer fits)."""
    power = 10.0 ** math.floor(math.log10((hi - lo) / 10))
    steps = [m * power * 10 ** k for k in range(3) for m in (1, 2, 2.5, 5)]
    step = next(s for s in steps if math.floor(hi / s + 1e-9) - math.ceil(lo / s - 1e-9) + 1 <= most)
    first = math.ceil(lo / step - 1e-9)
    decimals = max(0, 3 - math.floor(math.log10(step)))
    ticks = [round(k * step, decimals) for k in range(first, int(math.floor(hi / step + 1e-9)) + 1)]
    return ticks if len(ticks) >= 2 else [lo, hi]


def nice_ticks(lo, hi, log=False):
    """Tick positions inside [lo, hi], at least two when lo < hi: on a log axis over a decade or more 1, 2, 5
    (or every integer mantissa) per decade, else (any linear axis, or a log axis over a narrow range, where
    decades would leave the data unlabelled) linear_ticks."""
    if not hi > lo:
        return [lo]
    if log and lo > 0 and hi / lo >= 5:
        decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
        for mantissas in ((1,), (1, 2, 5), tuple(range(1, 10))):
            ticks = [m * 10.0 ** e for e in decades for m in mantissas if lo <= m * 10.0 ** e <= hi]
            if len(ticks) >= 3:
                return ticks
    return linear_ticks(lo, hi)


def tick_labels(ticks):
    """The shortest labels that tell the ticks apart and read back as them: fixed-point (15.32, 0.001, 64), or %g
    (1e-05, 2.5e+07) when fixed-point would need more than 6 digits."""
    span = (max(ticks) - min(ticks)) or abs(ticks[0]) or 1.0

    def fits(labels):
        return len(set(labels)) == len(labels) and all(abs(float(s) - t) <= 1e-6 * span
                                                       for s, t in zip(labels, ticks))
    for fmt in ("%.*f", "%.*g"):
        for digits in range(0 if fmt == "%.*f" else 1, 13):
            labels = [(fmt % (digits, t)).replace("-0", "0") if float(fmt % (digits, t)) == 0 else fmt % (digits, t)
                      for t in ticks]
            if fits(labels) and (fmt == "%.*g" or max(len(s.lstrip("-")) for s in labels) <= 7):
                return labels
    return ["%r" % t for t in ticks]


def padded(lo, hi, log=False, fraction=0.06):
    """The view limits around data in [lo, hi]: `fraction` of the span each side (in log space on a log axis);
    a single value gets 5% (a decade's 5% on a log axis) each side."""
    if log:
        a, b = padded(math.log10(lo), math.log10(hi), False, fraction) if hi > lo else (math.log10(lo) - 0.05,
                                                                                        math.log10(hi) + 0.05)
        return 10 ** a, 10 ** b
    pad = (hi - lo) * fraction if hi > lo else (abs(lo) * 0.05 or 1.0)
    return lo - pad, hi + pad


def set_axis(ax, which, lo, hi, log=False, ticks=None, labels=None, base=10):
    """Scale ("log" with `base`, else linear), view limits padded around the data range [lo, hi], major ticks
    (`ticks`, else nice_ticks of the data range, or of the view when the data is a single value) labelled with
    `labels` or tick_labels; minor ticks unlabelled (none on a linear axis)."""
    axis = ax.yaxis if which == "y" else ax.xaxis
    if log:
        (ax.set_yscale if which == "y" else ax.set_xscale)("log", base=base)
    view = padded(lo, hi, log)
    if ticks is None:
        ticks = nice_ticks(lo, hi, log) if hi > lo else nice_ticks(view[0], view[1], log)
    (ax.set_ylim if which == "y" else ax.set_xlim)(*view)
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FixedFormatter(labels or tick_labels(ticks)))
    axis.set_minor_formatter(NullFormatter())
    if not log:
        axis.set_minor_locator(NullLocator())


def new_figure(width, height):
    """A constrained-layout Figure on an Agg canvas (fig.canvas.draw() works; savefig picks pdf/png/svg)."""
    if matplotlib is None:
        raise MatplotlibMissing("matplotlib is missing: install it with `apt-get install python3-matplotlib` "
                                "(scripts/deps.sh does)")
    fig = Figure(figsize=(width, height), layout="constrained", dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def legend_below(ax, handles, columns=2, below=0.5):
    """The axes' legend `below` inches under the axes' bottom edge (clear of its tick labels and x label), in
    `columns` columns (one when a label is long); constrained layout makes room for it, so nothing is clipped."""
    if handles:
        columns = 1 if max(len(h.get_label()) for h in handles) > 30 else columns
        offset = ax.transAxes + ScaledTranslation(0, -below, ax.figure.dpi_scale_trans)
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=offset, ncol=columns,
                  fontsize=7.5, frameon=False, borderaxespad=0.0)


def legend_rows(entries, columns=2):
    """Rows of a legend of `entries` in `columns` (a panel's height allowance)."""
    return -(-entries // columns)


def si_labels(ticks):
    """Tick labels of large counts with k, M or G (1200000 -> "1.2M"); tick_labels below 10^4."""
    top = max(abs(t) for t in ticks)
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if top >= max(scale, 1e4):
            return [s + suffix if float(s) else "0" for s in tick_labels([t / scale for t in ticks])]
    return tick_labels(ticks)


# ---- sweep results -------------------------------------------------------------------------------------------

def mean_std(values):
    """(mean, sample std) of the finite numbers in `values` (std 0 for one), None when there are none; as
    train/sweep/sweep.cpp's mean_std."""
    xs = [v for v in values if _finite(v)]
    if not xs:
        return None
    m = sum(xs) / len(xs)
    return m, (math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0)


def _attention_distance(row):
    attention = row.get("attention")
    if not isinstance(attention, list):
        return row.get("mean_attention_distance")
    return [[c.get("mean_distance_overall") if isinstance(c, dict) else None for c in seed]
            for seed in attention if isinstance(seed, list)]


@dataclass(frozen=True)
class Metric:
    """A value results.json rows hold per seed and length, drawn against length."""
    key: str  # the name in a request's "metrics"
    axis: str  # the y axis label
    log: bool  # a log y axis (when every value is positive)
    read: object  # row -> [[value or null per length] per seed], or {"mean": [...], "std": [...]}, or None
    aliases: tuple = ()
    optimum: str = None  # the row field drawn as the dashed optimum line


METRICS = (
    Metric("perplexity", "perplexity", True, lambda row: row.get("perplexity"), ("ppl",), "optimal_perplexity"),
    Metric("mean_attention_distance", "mean attention distance (positions)", True, _attention_distance,
           ("distance", "attention")),
    Metric("accuracy", "accuracy", False, lambda row: row.get("accuracy"), ("acc",)),
)


def metric_stats(row, metric, lengths):
    """[(mean, std) or None (n/a) per length] of `metric` in `row`, or None when the row lacks it."""
    data = metric.read(row)
    if isinstance(data, dict):
        means, stds = data.get("mean") or [], data.get("std") or []
        return [(means[j], stds[j] if j < len(stds) and _finite(stds[j]) else 0.0)
                if j < len(means) and _finite(means[j]) else None for j in range(lengths)]
    if not isinstance(data, list):
        return None
    seeds = [s for s in data if isinstance(s, list)]
    return [mean_std([s[j] if j < len(s) else None for s in seeds]) for j in range(lengths)]


def find_metric(name):
    for m in METRICS:
        if name == m.key or name in m.aliases:
            return m
    raise RequestError('unknown metric "%s" (known: %s)' % (name, ", ".join(m.key for m in METRICS)))


@dataclass
class Results:
    """One results.json."""
    path: str
    name: str
    train_length: int
    multipliers: list
    seeds: list
    rows: list  # the rows as read (dicts)


def read_results(path):
    """Reads a results.json (any "rpb-results-N" format, or none); unknown fields are ignored."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise RequestError("cannot read sweep results %s: %s" % (path, e)) from None
    fmt = data.get("format") if isinstance(data, dict) else None
    require(isinstance(data, dict) and (fmt is None or str(fmt).startswith("rpb-results-")),
            '%s is not an rpb results.json (format "%s")' % (path, fmt))
    require(_finite(data.get("train_length")) and isinstance(data.get("multipliers"), list)
            and isinstance(data.get("rows"), list), "%s lacks train_length, multipliers or rows" % path)
    for i, row in enumerate(data["rows"]):
        require(isinstance(row, dict) and isinstance(row.get("task"), str) and isinstance(row.get("method"), str),
                "%s: row %d lacks a task or a method" % (path, i))
    return Results(path, str(data.get("name", os.path.basename(os.path.dirname(os.path.abspath(path))))),
                   int(data["train_length"]), [int(m) for m in data["multipliers"]], data.get("seeds") or [],
                   data["rows"])


def results_path(path):
    """A results.json, or a sweep folder's results.json."""
    return os.path.join(path, "results.json") if os.path.isdir(path) else path


@dataclass
class Series:
    """One method's line on one panel."""
    label: str  # the legend text before any n/a note (the row's method)
    scheme: str
    xs: list  # x of each point
    stats: list  # (mean, std) or None (n/a) per point
    names: list  # each point's name in an n/a note ("2x", "optim.lr=0.003")

    def na(self):
        return [n for n, s in zip(self.names, self.stats) if s is None]


@dataclass
class Panel:
    """One axes of a sweep figure: its series, what they measure, its title and x axis."""
    title: str
    metric: Metric
    series: list
    optimum: float = None
    x_ticks: list = field(default_factory=list)  # tick positions
    x_labels: list = field(default_factory=list)
    x_label: str = ""
    x_log: bool = True
    x_base: int = 2  # the log x axis's base
    seeds: int = 1
    column: object = None  # what the figure's column shows: the task (with the length index against a setting)


def _length_indices(res, lengths):
    """The indices j of res.multipliers a "lengths" filter keeps: tokens (64) or multipliers ("2x")."""
    if not lengths:
        return list(range(len(res.multipliers)))
    keep = {str(v).strip() for v in lengths}
    return [j for j, m in enumerate(res.multipliers) if str(m * res.train_length) in keep or "%dx" % m in keep]


def select_rows(results, tasks, methods):
    """[(results, row)] whose task and method pass the filters ([] = all); an unknown name is a RequestError."""
    pairs = [(res, row) for res in results for row in res.rows]
    for wanted, key in ((tasks, "task"), (methods, "method")):
        known = list(dict.fromkeys(row[key] for _, row in pairs))
        unknown = [w for w in wanted if w not in known]
        require(not unknown, "no %s %s in the results (they hold %s)" % (key, ", ".join(unknown), ", ".join(known)))
    return [(res, row) for res, row in pairs
            if (not tasks or row["task"] in tasks) and (not methods or row["method"] in methods)]


def _labels(pairs):
    """The legend label of each (results, row): its method, with the sweep's name when two sweeps share one."""
    seen = {}
    for res, row in pairs:
        seen.setdefault((row["task"], row["method"]), set()).add(res.name)
    return [row["method"] + (" (%s)" % res.name if len(seen[(row["task"], row["method"])]) > 1 else "")
            for res, row in pairs]


def _optimum(pairs, metric):
    values = [row.get(metric.optimum) for _, row in pairs] if metric.optimum else []
    return next((v for v in values if _finite(v)), None)


def _task_is_grid(pairs, styles):
    return any(scheme_dims(scheme_of(row["method"]), styles) == 2 for _, row in pairs)


def length_panels(pairs, metric, lengths, styles):
    """One Panel per task: `metric` against the evaluation length (log2 axis, a tick per length)."""
    panels = []
    for task in dict.fromkeys(row["task"] for _, row in pairs):
        mine = [(res, row) for res, row in pairs if row["task"] == task]
        series, xs = [], {}
        for (res, row), label in zip(mine, _labels(mine)):
            stats = metric_stats(row, metric, len(res.multipliers))
            keep = _length_indices(res, lengths)
            if stats is None or not keep:
                continue
            points = [res.multipliers[j] * res.train_length for j in keep]
            xs.update({p: res.multipliers[j] for p, j in zip(points, keep)})
            series.append(Series(label, scheme_of(row["method"]), points, [stats[j] for j in keep],
                                 ["%dx" % res.multipliers[j] for j in keep]))
        if not any(s is not None for sr in series for s in sr.stats):
            continue
        trains = {res.train_length for res, _ in mine}
        ticks = sorted(xs)
        seeds = max(len(res.seeds) for res, _ in mine)
        title = "%s (trained at %s%s)" % (task, "/".join(map(str, sorted(trains))),
                                          "; mean ± std over %d seeds" % seeds if seeds > 1 else "")
        grid = _task_is_grid(mine, styles)
        panels.append(Panel(title, metric, series, _optimum(mine, metric), ticks,
                            ["%d\n%dx" % (t, xs[t]) if len(trains) == 1 else str(t) for t in ticks],
                            "evaluation grid side (cells, log2)" if grid else "evaluation length (tokens, log2)",
                            True, 2, seeds, task))
    return panels


def parse_setting(text):
    """A setting's value from a method label ("0.001" -> 0.001, "64" -> 64, "true" -> True, else the text)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text, text)


def setting_of(row, key):
    """The row's value of setting `key`: its "settings" object, else its method label's "@key=value"."""
    settings = row.get("settings")
    if isinstance(settings, dict) and key in settings:
        return settings[key]
    for part in row["method"].split("@")[1:]:
        name, _, value = part.partition("=")
        if name == key:
            return parse_setting(value)
    return None


def without_setting(method, key):
    """The method label without its "@key=value" part (the line a setting's values lie on)."""
    return "@".join(p for i, p in enumerate(method.split("@")) if i == 0 or not p.startswith(key + "="))


def _setting_axis(values):
    """(x of each value, ticks, labels, log): numbers on a log axis when positive over a factor of 8 or more,
    else linear; anything else categorical in order of appearance."""
    if all(_finite(v) for v in values):
        ticks = sorted(set(values))
        log = ticks[0] > 0 and ticks[-1] / ticks[0] >= 8
        labels = ["%g" % t for t in ticks]  # the values as a config writes them
        return list(values), ticks, labels if len(set(labels)) == len(labels) else tick_labels(ticks), log
    order = list(dict.fromkeys(str(v) for v in values))
    return [order.index(str(v)) for v in values], list(range(len(order))), order, False


def setting_panels(pairs, metric, lengths, key):
    """One Panel per task and length: `metric` against setting `key`, a line per method without that key."""
    rows = [(res, row, setting_of(row, key)) for res, row in pairs]
    rows = [r for r in rows if r[2] is not None]
    require(rows, 'no row of the results has the setting "%s" (rows\' "settings" or "@%s=..." in the method)'
            % (key, key))
    panels = []
    for task in dict.fromkeys(row["task"] for _, row, _ in rows):
        mine = [r for r in rows if r[1]["task"] == task]
        res0 = mine[0][0]
        xs, ticks, labels, log = _setting_axis([v for _, _, v in mine])
        for j in _length_indices(res0, lengths):
            groups = {}
            for (res, row, value), x in zip(mine, xs):
                stats = metric_stats(row, metric, len(res.multipliers))
                if stats is not None and j < len(stats):
                    g = groups.setdefault(without_setting(row["method"], key), Series(
                        without_setting(row["method"], key), scheme_of(row["method"]), [], [], []))
                    g.xs.append(x), g.stats.append(stats[j]), g.names.append("%s=%s" % (key, value))
            if any(s is not None for g in groups.values() for s in g.stats):
                length = res0.multipliers[j] * res0.train_length
                panels.append(Panel("%s, length %d (%dx)" % (task, length, res0.multipliers[j]), metric,
                                    [_sorted(g) for g in groups.values()],
                                    _optimum([(r, w) for r, w, _ in mine], metric),
                                    ticks, labels, key, log, 10, max(len(r.seeds) for r, _, _ in mine),
                                    (task, j)))
    return panels


def _sorted(series):
    order = sorted(range(len(series.xs)), key=lambda i: series.xs[i])
    return Series(series.label, series.scheme, *([getattr(series, f)[i] for i in order]
                                                  for f in ("xs", "stats", "names")))


def _band(stat, log):
    """(low, high) of mean ± std; on a log axis a low at or below zero stays at the mean."""
    mean, std = stat
    return (mean - std if not log or mean - std > 0 else mean), mean + std


def _segments(stats):
    """Runs of consecutive defined points: [[index, ...], ...]."""
    runs, current = [], []
    for i, s in enumerate(stats):
        if s is None:
            runs, current = (runs + [current] if current else runs), []
        else:
            current.append(i)
    return runs + [current] if current else runs


def draw_series(ax, series, style, log):
    """The series' line with a marker at every defined point (NaN at n/a points: a gap, never a value) and its
    band of mean ± std (an error bar for a lone point); returns (its line, whether a band was drawn)."""
    note = " (n/a at %s)" % ", ".join(series.na()) if series.na() else ""
    ys = [s[0] if s is not None else float("nan") for s in series.stats]
    line, = ax.plot(series.xs, ys, color=style.color, marker=style.marker, linestyle=style.linestyle,
                    linewidth=1.8, markersize=5.5, label=series.label + note, gid=series.label)
    banded = False
    for run in _segments(series.stats):
        if all(series.stats[i][1] == 0 for i in run):
            continue
        lo, hi = zip(*(_band(series.stats[i], log) for i in run))
        banded = True
        if len(run) > 1:
            ax.fill_between([series.xs[i] for i in run], lo, hi, color=style.color, alpha=BAND_ALPHA, linewidth=0,
                            gid=series.label + " band")
        else:
            m = series.stats[run[0]][0]
            bar = ax.errorbar([series.xs[run[0]]], [m], yerr=[[m - lo[0]], [hi[0] - m]], fmt="none",
                              ecolor=style.color, capsize=4)
            for artist in bar.get_children():
                artist.set_gid(series.label + " band")
    return line, banded


def _y_range(panel, log, ylim):
    if ylim:
        return ylim[0], ylim[1]
    values = [v for s in panel.series for st in s.stats if st is not None for v in _band(st, log)]
    values += [panel.optimum] if panel.optimum is not None else []
    return min(values), max(values)


def draw_panel(ax, panel, styles, ylim=None):
    """A sweep panel: its series, the optimum line, axes with ticks inside the data, the legend below."""
    log = panel.metric.log and all(st[0] > 0 for s in panel.series for st in s.stats if st)
    log = log and (panel.optimum is None or panel.optimum > 0) and (not ylim or ylim[0] > 0)
    handles, banded = [], False
    for s in panel.series:
        line, band = draw_series(ax, s, style_of(s.label, styles, s.scheme), log)
        handles.append(line)
        banded = banded or band
    if panel.optimum is not None:
        handles.append(ax.axhline(panel.optimum, label="optimal %s (%.3f)" % (panel.metric.key, panel.optimum),
                                  gid="optimum", **OPTIMUM_STYLE))
    if banded:
        handles.append(Patch(color="0.45", alpha=BAND_ALPHA, label="band: mean ± std over seeds"))
    lo, hi = _y_range(panel, log, ylim)
    set_axis(ax, "y", lo, hi, log)
    set_axis(ax, "x", min(panel.x_ticks), max(panel.x_ticks), panel.x_log, panel.x_ticks, panel.x_labels,
             panel.x_base)
    ax.set_xlabel(panel.x_label, fontsize=9)
    ax.set_ylabel(panel.metric.axis, fontsize=9)
    ax.set_title(panel.title, fontsize=9.5)
    ax.tick_params(labelsize=8)
    ax.grid(True, which="major", color="0.92", linewidth=0.6)
    legend_below(ax, handles, below=0.62 if "\n" in "".join(panel.x_labels) else 0.5)
    return len(handles)


def sweep_panels(request_sweep, styles):
    """[[Panel or None per column] per metric row] for a request's "sweep" block: a metric row holds the
    columns (tasks) where some selected row has a value of it, each task in the same column in every row."""
    results = [read_results(results_path(p)) for p in request_sweep["results"]]
    pairs = select_rows(results, request_sweep.get("tasks") or [], request_sweep.get("methods") or [])
    lengths = request_sweep.get("lengths") or []
    if lengths:
        require(any(_length_indices(res, lengths) for res in results),
                "no length %s in the results" % ", ".join(map(str, lengths)))
    against = request_sweep.get("against") or "length"
    metrics = [find_metric(m) for m in request_sweep.get("metrics") or []] or list(METRICS)
    rows = [(length_panels(pairs, metric, lengths, styles) if against == "length"
             else setting_panels(pairs, metric, lengths, against)) for metric in metrics]
    rows = [panels for panels in rows if panels]
    require(rows, "nothing to draw: no selected row has a value of %s" % ", ".join(m.key for m in metrics))
    columns = list(dict.fromkeys(p.column for panels in rows for p in panels))
    return [[next((p for p in panels if p.column == c), None) for c in columns] for panels in rows]


def draw_sweep(request_sweep, styles):
    """The sweep figure: one row per metric the results hold, one column per task (per task and length when
    drawn against a setting)."""
    grid = sweep_panels(request_sweep, styles)
    columns = len(grid[0])
    entries = max(len(p.series) for row in grid for p in row if p) + 2
    height = PANEL_SIZE[1] + LEGEND_ROW * legend_rows(entries)
    fig = new_figure(PANEL_SIZE[0] * columns, height * len(grid))
    axes = fig.subplots(len(grid), columns, squeeze=False)
    for r, row in enumerate(grid):
        for c in range(columns):
            if row[c]:
                draw_panel(axes[r][c], row[c], styles, request_sweep.get("ylim"))
            else:
                axes[r][c].remove()
    return fig


# ---- training curves -----------------------------------------------------------------------------------------

def read_metrics_csv(path):
    """(columns, rows) of a run's metrics.csv: rows as {column: float or None (an empty cell)}."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f)
            rows = [{k: (float(v) if v not in ("", None) else None) for k, v in r.items() if k} for r in reader]
            return reader.fieldnames or [], rows
    except (OSError, ValueError, csv.Error) as e:
        raise RequestError("cannot read metrics %s: %s" % (path, e)) from None


def _valid_length(column):
    """The sort key of a valid_loss@<length> column: its length, numerically."""
    length = column.split("@", 1)[1]
    return (0, int(length), "") if length.isdigit() else (1, 0, length)


def curve_panels(tables):
    """[(column, title, y label)]: train loss, valid loss per length (ascending), learning rate, as present."""
    columns = list(dict.fromkeys(c for cols, _ in tables for c in cols))
    valid = sorted((c for c in columns if c.startswith("valid_loss@")), key=_valid_length)
    panels = [("train_loss", "train loss", "loss (nats per token)")] if "train_loss" in columns else []
    panels += [(c, "valid loss at length %s" % c.split("@", 1)[1], "loss (nats per token)") for c in valid]
    return panels + ([("lr", "learning rate", "learning rate")] if "lr" in columns else [])


def draw_curve_panel(ax, runs, tables, column, x, styles):
    """Every run's `column` against `x` (points where both are present), with markers; a run without the
    column is listed "(n/a)" in the legend and not drawn. Returns the data's (xs, ys) ranges."""
    handles, xs_all, ys_all = [], [], []
    for run, (cols, rows) in zip(runs, tables):
        style = style_of(run["label"], styles, run.get("scheme"))
        points = [(r[x], r[column]) for r in rows if _finite(r.get(x)) and _finite(r.get(column))]
        if not points:
            handles.append(Line2D([], [], color=style.color, marker=style.marker, linestyle=style.linestyle,
                                  label=run["label"] + " (n/a)"))
            continue
        xs, ys = zip(*points)
        xs_all += xs
        ys_all += ys
        handles.append(ax.plot(xs, ys, color=style.color, marker=style.marker, linestyle=style.linestyle,
                               markevery=max(1, len(xs) // 8), linewidth=1.5, markersize=5, label=run["label"],
                               gid=run["label"])[0])
    legend_below(ax, handles)
    return xs_all, ys_all


def draw_curves(request_curves, styles):
    """Training curves of one or more runs: train loss, valid loss per length, learning rate, against "step"
    or "tokens" (refused when a metrics.csv has no tokens column)."""
    runs, x = request_curves["runs"], request_curves.get("x") or "step"
    tables = [read_metrics_csv(run["metrics_csv"]) for run in runs]
    for run, (cols, _) in zip(runs, tables):
        require(x in cols, '%s has no "%s" column (written by an older rpb?): draw its curves against step'
                % (run["metrics_csv"], x) if x == "tokens" else '%s has no "%s" column' % (run["metrics_csv"], x))
    panels = curve_panels(tables)
    require(panels, "the metrics.csv files have no train_loss, valid_loss@<length> or lr column")
    columns = min(3, len(panels))
    rows = legend_rows(len(panels), columns)
    fig = new_figure(PANEL_SIZE[0] * columns, (PANEL_SIZE[1] + LEGEND_ROW * legend_rows(len(runs))) * rows)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax, (column, title, ylabel) in zip(axes, panels):
        xs, ys = draw_curve_panel(ax, runs, tables, column, x, styles)
        ylim = request_curves.get("ylim") if column != "lr" else None
        if xs:
            ticks = nice_ticks(min(xs), max(xs)) if max(xs) > min(xs) else None
            set_axis(ax, "x", min(xs), max(xs), ticks=ticks, labels=si_labels(ticks) if ticks else None)
            set_axis(ax, "y", *(ylim or (min(ys), max(ys))))
        ax.set_title(title, fontsize=9.5)
        ax.set_xlabel("tokens seen" if x == "tokens" else "step", fontsize=9)
        ax.set_ylabel(ylabel, fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(True, color="0.92", linewidth=0.6)
    for ax in axes[len(panels):]:
        ax.remove()
    return fig


# ---- bias pictures -------------------------------------------------------------------------------------------

def symlog_ticks(lo, hi):
    """0 and ±1, 2, 4, ... inside [lo, hi]; every other power of two when that would be more than 12."""
    powers, p = [], 1
    while p <= max(abs(lo), abs(hi)):
        powers.append(p)
        p *= 2
    if len(powers) > 12:
        powers = powers[::2]
    ticks = [-p for p in reversed(powers)] + [0] + powers
    return [t for t in ticks if lo <= t <= hi]


def _head_label(module, h, values, distances, train_length):
    notes = module.get("head_notes") or []
    if h < len(notes) and notes[h]:
        return "head %d (%s)" % (h, notes[h])
    if len(module["values"]) > FEW_HEADS:
        return "head %d" % h
    shown = [d for d in dict.fromkeys((0, 1, (train_length or 0) - 1)) if d in distances]
    return "head %d: " % h + ", ".join("b(%d) = %.3g" % (d, values[distances.index(d)] + 0.0) for d in shown)


def draw_bias_line(ax, module, train_length, untrained_rule):
    """One 1-D module: bias against d = query - key on a symlog axis, one line (colour and marker) per head,
    solid at trained rows and dotted at untrained ones, the trained range |d| < train_length shaded."""
    d = module["distances"]
    trained = module.get("trained") or [True] * len(d)
    handles = []
    if train_length:
        lo, hi = max(min(d), -(train_length - 1)), min(max(d), train_length - 1)
        handles.append(ax.axvspan(lo, hi, label="trained: |d| < %d" % train_length, gid="trained", **TRAINED_SHADE))
    for h, values in enumerate(module["values"]):
        color, marker = HEAD_COLORS[h % len(HEAD_COLORS)], FALLBACK_MARKERS[h % len(FALLBACK_MARKERS)]
        solid = [v if t else float("nan") for v, t in zip(values, trained)]
        dotted = [v if not t or (i + 1 < len(d) and not trained[i + 1]) or (i and not trained[i - 1]) else float("nan")
                  for i, (v, t) in enumerate(zip(values, trained))]
        handles.append(ax.plot(d, solid, color=color, marker=marker, markevery=_marks(d), markersize=4,
                               linewidth=1.6, label=_head_label(module, h, values, d, train_length),
                               gid="head %d" % h)[0])
        if not all(trained):
            ax.plot(d, dotted, color=color, gid="head %d untrained" % h, **UNTRAINED_STYLE)
    if not all(trained):
        handles.append(Line2D([], [], color="0.3", label="untrained rows%s" % (
            " (filled: %s)" % untrained_rule if untrained_rule else ""), **UNTRAINED_STYLE))
    ax.set_xscale("symlog", linthresh=1, linscale=0.6)
    ax.set_xlim(*(min(d) - 0.3, max(d) * 1.08 + 0.3))
    ticks = symlog_ticks(min(d), max(d))
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FixedFormatter([str(t) for t in ticks]))
    ax.xaxis.set_minor_locator(NullLocator())
    ys = [v for head in module["values"] for v in head if _finite(v)]
    set_axis(ax, "y", min(ys), max(ys))
    ax.set_xlabel("distance d = query - key (positions; symlog)", fontsize=9)
    ax.set_ylabel("bias (added to the score)", fontsize=9)
    ax.set_title(module["name"], fontsize=9.5)
    ax.tick_params(labelsize=8)
    legend_below(ax, handles, 2 if len(handles) <= 2 * FEW_HEADS else 4)
    return len(handles)


def _marks(d):
    """Marker positions on a symlog distance axis: d = 0, 1, 2, 4, ... (evenly spread on the axis)."""
    wanted = set(symlog_ticks(min(d), max(d)))
    return [i for i, x in enumerate(d) if x in wanted] or None


def _extent(values):
    step = (values[1] - values[0]) if len(values) > 1 else 1
    return values[0] - step / 2, values[-1] + step / 2


def draw_heatmap(fig, ax, module, h):
    """One head of a 2-D module: bias over (dy, dx), zero white, its colour bar; untrained cells hatched."""
    dy, dx, values = module["dy"], module["dx"], module["values"][h]
    scale = max((abs(v) for row in values for v in row if _finite(v)), default=0.0) or 1.0
    image = ax.imshow(values, origin="lower", extent=(*_extent(dx), *_extent(dy)), cmap=HEATMAP_CMAP,
                      vmin=-scale, vmax=scale, interpolation="nearest", aspect="equal", gid="head %d" % h)
    fig.colorbar(image, ax=ax, shrink=0.85).ax.tick_params(labelsize=7)
    trained = module.get("trained")
    if trained and not all(all(row) for row in trained):
        wx, wy = (_extent(dx)[1] - _extent(dx)[0]) / len(dx), (_extent(dy)[1] - _extent(dy)[0]) / len(dy)
        cells = [Rectangle((x - wx / 2, y - wy / 2), wx, wy) for i, y in enumerate(dy) for j, x in enumerate(dx)
                 if not trained[i][j]]
        ax.add_collection(PatchCollection(cells, facecolor="none", edgecolor="0.35", hatch="///", linewidth=0,
                                          gid="untrained"))
    for which, values_ in (("x", dx), ("y", dy)):
        ticks = nice_ticks(min(values_), max(values_))
        ticks = [t for t in ticks if float(t).is_integer()] or ticks
        (ax.xaxis if which == "x" else ax.yaxis).set_major_locator(FixedLocator(ticks))
        (ax.xaxis if which == "x" else ax.yaxis).set_major_formatter(FixedFormatter(tick_labels(ticks)))
    ax.set_xlabel("dx = query col - key col", fontsize=8.5)
    ax.set_ylabel("dy = query row - key row", fontsize=8.5)
    ax.set_title("head %d" % h, fontsize=9)
    ax.tick_params(labelsize=7)


def draw_bias(request_bias, styles):
    """The bias pictures of a checkpoint: per module, 1-D a line per head against distance, 2-D a heatmap per
    head with its colour bar."""
    modules, dims = request_bias["modules"], request_bias.get("dims", 1)
    title = request_bias.get("title") or request_bias.get("scheme") or ""
    if dims == 2:
        heads = max(len(m["values"]) for m in modules)
        columns, rows = min(HEADS_PER_ROW, heads), legend_rows(heads, HEADS_PER_ROW)
        fig = new_figure(3.4 * columns, 3.0 * rows * len(modules) + 0.4)
        subfigs = fig.subfigures(len(modules), 1, squeeze=False).ravel()
        for sub, module in zip(subfigs, modules):
            axes = sub.subplots(rows, columns, squeeze=False).ravel()
            for h, ax in enumerate(axes):
                if h < len(module["values"]):
                    draw_heatmap(sub, ax, module, h)
                else:
                    ax.remove()
            sub.suptitle("%s (hatched: untrained offsets)" % module["name"], fontsize=9.5)
    else:
        heads = max(len(m["values"]) for m in modules)
        per = PANEL_SIZE[1] + 0.6 + LEGEND_ROW * legend_rows(heads + 2, 2 if heads + 2 <= 2 * FEW_HEADS else 4)
        fig = new_figure(7.5, per * len(modules))
        for ax, module in zip(fig.subplots(len(modules), 1, squeeze=False).ravel(), modules):
            draw_bias_line(ax, module, request_bias.get("train_length"), module.get("untrained_rows"))
    fig.suptitle(title, fontsize=10.5)
    return fig


# ---- requests ------------------------------------------------------------------------------------------------

def _check_ylim(ylim, where):
    require(ylim is None or (isinstance(ylim, list) and len(ylim) == 2 and all(_finite(v) for v in ylim)
                             and ylim[0] < ylim[1]), '%s.ylim must be null or [lo, hi] with lo < hi' % where)


def _check_list(block, key, where, item=str):
    value = block.get(key, [])
    require(isinstance(value, list) and all(isinstance(v, item) for v in value),
            "%s.%s must be a list of %s" % (where, key, item.__name__ if isinstance(item, type) else "values"))


def check_sweep(block):
    require(isinstance(block.get("results"), list) and block["results"]
            and all(isinstance(p, str) for p in block["results"]), "sweep.results must list results.json paths")
    for key in ("tasks", "methods", "metrics"):
        _check_list(block, key, "sweep")
    _check_list(block, "lengths", "sweep", (int, str))
    require(isinstance(block.get("against", "length"), str), "sweep.against must be \"length\" or a setting key")
    _check_ylim(block.get("ylim"), "sweep")


def check_curves(block):
    runs = block.get("runs")
    require(isinstance(runs, list) and runs, "curves.runs must list runs")
    for i, run in enumerate(runs):
        require(isinstance(run, dict) and isinstance(run.get("label"), str)
                and isinstance(run.get("metrics_csv"), str), "curves.runs[%d] needs a label and a metrics_csv" % i)
        run.setdefault("scheme", scheme_of(run["label"]))
    require(block.get("x", "step") in ("step", "tokens"), 'curves.x must be "step" or "tokens"')
    _check_ylim(block.get("ylim"), "curves")


def _matrix(values, rows, columns):
    return (isinstance(values, list) and len(values) == rows
            and all(isinstance(r, list) and len(r) == columns and all(_finite(v) for v in r) for r in values))


def check_bias(block):
    require(block.get("dims", 1) in (1, 2), "bias.dims must be 1 or 2")
    modules = block.get("modules")
    require(isinstance(modules, list) and modules, "bias.modules must list modules")
    for i, m in enumerate(modules):
        where = "bias.modules[%d]" % i
        require(isinstance(m, dict) and isinstance(m.get("values"), list) and m["values"], where + " needs values")
        m.setdefault("name", "module %d" % i)
        if block.get("dims", 1) == 2:
            require(isinstance(m.get("dy"), list) and isinstance(m.get("dx"), list) and m["dy"] and m["dx"],
                    where + " needs dy and dx")
            for h, head in enumerate(m["values"]):
                require(_matrix(head, len(m["dy"]), len(m["dx"])), "%s.values[%d] must be dy x dx numbers" % (where, h))
            t = m.get("trained")
            require(t is None or (len(t) == len(m["dy"]) and all(len(r) == len(m["dx"]) for r in t)),
                    where + ".trained must be dy x dx booleans")
        else:
            d = m.get("distances")
            require(isinstance(d, list) and d and all(_finite(x) for x in d), where + " needs distances")
            require(_matrix(m["values"], len(m["values"]), len(d)), where + ".values must be [[per distance] per head]")
            require(m.get("trained") is None or len(m["trained"]) == len(d), where + ".trained must match distances")


KINDS = {"sweep": (check_sweep, draw_sweep), "curves": (check_curves, draw_curves), "bias": (check_bias, draw_bias)}


def check_request(request):
    """Raises RequestError naming the first field of `request` that is not as the module docstring says."""
    require(isinstance(request, dict), "the request must be a JSON object")
    require(request.get("format") == REQUEST_FORMAT,
            'request format "%s", rpb_plot reads "%s"' % (request.get("format"), REQUEST_FORMAT))
    require(request.get("kind") in KINDS, "request kind must be one of %s" % ", ".join(KINDS))
    require(isinstance(request.get(request["kind"]), dict), 'the request has no "%s" block' % request["kind"])
    outputs = request.get("outputs", [])
    require(isinstance(outputs, list) and all(isinstance(o, dict) and isinstance(o.get("path"), str)
                                              and o.get("format") in FORMATS for o in outputs),
            "outputs must be [{\"path\": ..., \"format\": one of %s}]" % ", ".join(FORMATS))
    KINDS[request["kind"]][0](request[request["kind"]])


def draw(request):
    """The Figure of a request (checked first; nothing written)."""
    check_request(request)
    return KINDS[request["kind"]][1](request[request["kind"]], request.get("styles") or {})


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
    `labels` are given,
    styled by the scheme of each run's config.toml; written to `out` when given; returns the Figure."""
    runs = []
    for i, path in enumerate(run_dirs):
        folder = os.path.dirname(path) if path.endswith(".csv") else path
        label = labels[i] if labels else _run_label(folder)
        runs.append({"label": label, "scheme": _run_scheme(folder) or scheme_of(label),
                     "metrics_csv": os.path.abspath(path if path.endswith(".csv")
                                                    else os.path.join(path, "metrics.csv"))})
    return render(request_for("curves", {"runs": runs, "x": x, "ylim": list(ylim) if ylim else None}, out, styles))


def main(argv):
    """The script: rpb_plot.py REQUEST.json; returns the exit code."""
    if len(argv) != 2:
        print("usage: rpb_plot.py REQUEST.json", file=sys.stderr)
        return EXIT_BAD_REQUEST
    if matplotlib is None:
        print("rpb_plot: matplotlib is missing: install it with `apt-get install python3-matplotlib` "
              "(scripts/deps.sh does)", file=sys.stderr)
        return EXIT_NO_MATPLOTLIB
    try:
        with open(argv[1], encoding="utf-8") as f:
            request = json.load(f)
        render(request)
        return 0
    except (RequestError, OSError, ValueError) as e:
        if not isinstance(e, RequestError) and "request" not in locals():
            e = RequestError("cannot read the request: %s" % e)
        if isinstance(e, RequestError):
            print("rpb_plot: bad request %s: %s" % (argv[1], e), file=sys.stderr)
            return EXIT_BAD_REQUEST
        print("rpb_plot: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return EXIT_ERROR
    except Exception as e:  # noqa: BLE001 (the exit code says "anything else")
        print("rpb_plot: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main(sys.argv))
