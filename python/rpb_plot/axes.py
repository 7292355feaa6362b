"""Ticks, view limits, legends and figure creation shared by every figure: tick positions always inside the
data's range (nice_ticks), labels of one form per axis kind that read back as the ticks (tick_labels for values,
count_labels for counts, power_labels for learning rates), flat data on a linear axis of a sensible span
(flat_range), a figure's one legend under its panels (figure_legend; legend_below for one axes)."""
import math

from . import theme
from .backend import (Figure, FigureCanvasAgg, FixedFormatter, FixedLocator, NullFormatter, NullLocator,
                      ScaledTranslation, matplotlib)
from .errors import MATPLOTLIB_MISSING, MatplotlibMissing


def linear_ticks(lo, hi, most=6, integer=False):
    """Ticks inside [lo, hi] (lo < hi) at the finest 1-2-2.5-5 step giving at most `most` of them (with `integer`
    whole steps only: counts); at least two (lo and hi themselves if nothing nicer fits)."""
    power = 10.0 ** math.floor(math.log10((hi - lo) / 10))
    steps = [m * power * 10 ** k for k in range(3) for m in (1, 2, 2.5, 5)]
    steps = [s for s in steps if not integer or (s >= 1 and abs(s - round(s)) < 1e-9)] or [1.0]
    step = next((s for s in steps if math.floor(hi / s + 1e-9) - math.ceil(lo / s - 1e-9) + 1 <= most), steps[-1])
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


SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")
PLAIN_RANGE = (1e-3, 1e5)  # tick values written as plain decimals; an axis with one outside is written a×10^b


def _fewest(values, span):
    """The fewest decimals that write each of `values` within 1e-6 of `span` (at most 12)."""
    return next((d for d in range(13) if all(abs(float("%.*f" % (d, t)) - t) <= 1e-6 * span for t in values)), 12)


def _fixed(t, digits):
    text = "%.*f" % (digits, t)
    return text.replace("-", "") if float(text) == 0 else text


def power_labels(ticks):
    """Each tick as a×10^b (2.5×10⁻³, 1×10⁴; 0 as "0"), the mantissa with the fewest decimals that read back as the
    tick: learning rates, and values an axis cannot write as plain decimals."""
    labels = []
    for t in ticks:
        if t == 0:
            labels.append("0")
            continue
        exponent = math.floor(math.log10(abs(t)) + 1e-12)
        mantissa = t / 10.0 ** exponent
        digits = _fewest([mantissa], abs(mantissa))
        labels.append("%s\u00d710%s" % (_fixed(mantissa, digits), str(exponent).translate(SUPERSCRIPT)))
    return labels


def tick_labels(ticks):
    """Labels of one form on the whole axis, each reading back as its tick (to 1e-6 of the ticks' span): plain
    decimals when every nonzero tick lies in PLAIN_RANGE (evenly spaced ticks, a linear axis, sharing the fewest
    decimals that do: 0.5, 1.0, 1.5; other ticks, a log axis, each its own: 0.01, 0.1, 1, 10, 1000, 10000), else
    power_labels for every tick (1×10⁴ ... 1×10⁹): never 1e0 beside 1.001."""
    span = (max(ticks) - min(ticks)) or abs(ticks[0]) or 1.0
    if any(t != 0 and not PLAIN_RANGE[0] <= abs(t) < PLAIN_RANGE[1] for t in ticks):
        return power_labels(ticks)
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    even = len(ticks) > 2 and max(gaps) - min(gaps) <= 1e-6 * span
    shared = _fewest(ticks, span) if even else None
    return [_fixed(t, shared if even else _fewest([t], span)) for t in ticks]


def count_labels(ticks):
    """Counts (steps, lengths, grid sides) as plain integers: 64, 1024, 16384, 200000."""
    return ["%d" % round(t) for t in ticks]


def padded(lo, hi, log=False, fraction=0.06):
    """The view limits around data in [lo, hi]: `fraction` of the span each side (in log space on a log axis);
    a single value gets 5% (a decade's 5% on a log axis) each side."""
    if log:
        a, b = padded(math.log10(lo), math.log10(hi), False, fraction) if hi > lo else (math.log10(lo) - 0.05,
                                                                                        math.log10(hi) + 0.05)
        return 10 ** a, 10 ** b
    pad = (hi - lo) * fraction if hi > lo else (abs(lo) * 0.05 or 1.0)
    return lo - pad, hi + pad


def is_flat(lo, hi):
    """Whether data in [lo, hi] is flat: spanning at most theme.FLAT_FRACTION of its magnitude (one value, too)."""
    return hi - lo <= theme.FLAT_FRACTION * max(abs(lo), abs(hi))


def flat_range(lo, hi, lower=None, upper=None):
    """The range a linear axis shows flat data in [lo, hi] over: theme.FLAT_SPAN of its magnitude (of the bounds'
    span at zero, else 1) centred on it, moved inside the metric's bounds `lower` and `upper` (None: none)."""
    mid = (lo + hi) / 2
    bounded = lower is not None and upper is not None
    span = theme.FLAT_SPAN * abs(mid) or (theme.FLAT_SPAN * (upper - lower) if bounded else 0) or 1.0
    a, b = mid - span / 2, mid + span / 2
    if lower is not None and a < lower:
        a, b = lower, lower + span
    if upper is not None and b > upper:
        a, b = upper - span, upper
    return min(a, lo), max(b, hi)


def set_axis(ax, which, lo, hi, log=False, ticks=None, labels=None, base=10, bounds=(None, None),
             formatter=None):
    """Scale ("log" with `base`, else linear), view limits padded around the data range [lo, hi], major ticks
    (`ticks`, else nice_ticks of the data range) labelled with `labels` or `formatter` (default tick_labels: one
    form per axis); minor ticks unlabelled (none on a linear axis). Flat data (is_flat: one value, or a perfect run's
    1.000 .. 1.001) without given ticks gets a linear axis over flat_range within `bounds` (lower, upper)."""
    axis = ax.yaxis if which == "y" else ax.xaxis
    if ticks is None and is_flat(lo, hi):
        log = False
        lo, hi = flat_range(lo, hi, *bounds)
        ticks = linear_ticks(lo, hi)
    if log:
        (ax.set_yscale if which == "y" else ax.set_xscale)("log", base=base)
    view = padded(lo, hi, log)
    if ticks is None:
        ticks = nice_ticks(lo, hi, log)
    (ax.set_ylim if which == "y" else ax.set_xlim)(*view)
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FixedFormatter(labels or (formatter or tick_labels)(ticks)))
    axis.set_minor_formatter(NullFormatter())
    if not log:
        axis.set_minor_locator(NullLocator())


def new_figure(width, height):
    """A constrained-layout Figure on an Agg canvas (fig.canvas.draw() works; savefig picks pdf/png/svg)."""
    if matplotlib is None:
        raise MatplotlibMissing(MATPLOTLIB_MISSING)
    fig = Figure(figsize=(width, height), layout="constrained", dpi=theme.DPI)
    FigureCanvasAgg(fig)
    return fig


LEGEND_LINE = 60  # the longest legend line; a longer label is wrapped (wrap_label)


def wrap_label(text, width=LEGEND_LINE):
    """`text` in lines of at most `width` characters, broken only before an '@' of a method's settings
    ("rope@rope_scaling=yarn@...@optim.lr=3e-4"); a part longer than `width` keeps its own line. A fine-tune
    method's name runs past 100 characters, and one unbroken line wider than the figure leaves constrained layout
    no room for the axes (matplotlib then draws no legend)."""
    if len(text) <= width:
        return text
    parts = text.split("@")
    lines = [parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + 1 + len(part) <= width:
            lines[-1] += "@" + part
        else:
            lines.append("@" + part)
    return "\n".join(lines)


def wrap_note(text, width=LEGEND_LINE):
    """A panel's note in lines of at most `width` characters, broken after a comma or a semicolon (a part longer
    than `width` keeps its own line)."""
    lines = [""]
    for word in text.replace(", ", ",\0").replace("; ", ";\0").split("\0"):
        if lines[-1] and len(lines[-1]) + 1 + len(word) > width:
            lines.append(word)
        else:
            lines[-1] += (" " if lines[-1] else "") + word
    return "\n".join(lines)


def legend_below(ax, handles, columns=2, below=0.5):
    """The axes' legend `below` inches under the axes' bottom edge (clear of its tick labels and x label), in
    `columns` columns (one when a label is long), each label wrapped (wrap_label); constrained layout makes room for
    it, so nothing is clipped. The handles keep their own labels (lines are found by them)."""
    if handles:
        columns = 1 if max(len(h.get_label()) for h in handles) > 30 else columns
        offset = ax.transAxes + ScaledTranslation(0, -below, ax.figure.dpi_scale_trans)
        ax.legend(handles=handles, labels=[wrap_label(h.get_label()) for h in handles], loc="upper center",
                  bbox_to_anchor=(0.5, 0), bbox_transform=offset, ncol=columns, fontsize=7.5, frameon=False,
                  borderaxespad=0.0)


def legend_rows(entries, columns=2):
    """Rows of a legend of `entries` in `columns` (a panel's height allowance)."""
    return -(-entries // columns)


def figure_legend(fig, handles, title=None):
    """The figure's one legend, centred under all its panels (each label wrapped: wrap_label), in as many columns
    (up to 4) as fit the figure's width, `title` above its entries: the figure grows by the legend's height and
    constrained layout keeps the panels above it, so nothing overlaps or is clipped. The handles keep their own
    labels (lines are found by them). Returns the Legend."""
    renderer = fig.canvas.get_renderer()
    width, height = fig.get_size_inches()
    legend = None
    for columns in range(min(4, len(handles)) or 1, 0, -1):
        if legend is not None:
            legend.remove()
        legend = fig.legend(handles=handles, labels=[wrap_label(h.get_label()) for h in handles], loc="upper center",
                            ncol=columns, fontsize=7.5, frameon=False, title=title, title_fontsize=8,
                            borderaxespad=0.3)
        if legend.get_window_extent(renderer).width <= (width - 0.2) * fig.dpi:
            break
    below = legend.get_window_extent(renderer).height / fig.dpi + 0.15  # inches under the panels
    total = height + below
    fig.set_size_inches(width, total)
    fig.get_layout_engine().set(rect=(0, below / total, 1, 1 - below / total))
    legend.set_bbox_to_anchor((0.5, below / total), transform=fig.transFigure)
    return legend
