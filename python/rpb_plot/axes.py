"""Ticks, view limits, legends and figure creation shared by every figure: tick positions always inside the
data's range (nice_ticks), labels as people write numbers that read back as them (tick_labels), legends below
their axes."""
import math

from . import theme
from .backend import (Figure, FigureCanvasAgg, FixedFormatter, FixedLocator, NullFormatter, NullLocator,
                      ScaledTranslation, matplotlib)
from .errors import MATPLOTLIB_MISSING, MatplotlibMissing


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


def _exponent_form(t):
    """`t` as people write a power-of-ten form: 1e4, 2.5e7, 1e-5 (never 1e+04)."""
    mantissa, exponent = ("%.12e" % t).split("e")
    return "%se%d" % (mantissa.rstrip("0").rstrip("."), int(exponent))


def tick_labels(ticks):
    """Labels as people write numbers, each reading back as its tick (to 1e-6 of the ticks' span): evenly spaced
    ticks (a linear axis) share the fewest decimals that do (0.5, 1.0, 1.5), other ticks (a log axis) each take
    their own (0.01, 0.1, 1, 10, 100, 1000); a label whose power-of-ten form is two or more characters shorter takes
    it (1e4, 2.5e7, 1e-4)."""
    span = (max(ticks) - min(ticks)) or abs(ticks[0]) or 1.0
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    even = len(ticks) > 2 and max(gaps) - min(gaps) <= 1e-6 * span

    def fixed(t, digits):
        text = "%.*f" % (digits, t)
        return text.replace("-", "") if float(text) == 0 else text

    def fewest(values):
        return next((d for d in range(13) if all(abs(float(fixed(t, d)) - t) <= 1e-6 * span for t in values)), 12)
    shared = fewest(ticks) if even else None
    labels = []
    for t in ticks:
        text = fixed(t, shared if even else fewest([t]))
        power = _exponent_form(t)
        labels.append(power if len(power) + 2 <= len(text) and abs(float(power) - t) <= 1e-6 * span else text)
    return labels


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
    (`ticks`, else nice_ticks of the data range: one at a single value) labelled with
    `labels` or tick_labels; minor ticks unlabelled (none on a linear axis)."""
    axis = ax.yaxis if which == "y" else ax.xaxis
    if log:
        (ax.set_yscale if which == "y" else ax.set_xscale)("log", base=base)
    view = padded(lo, hi, log)
    if ticks is None:
        ticks = nice_ticks(lo, hi, log)
    (ax.set_ylim if which == "y" else ax.set_xlim)(*view)
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FixedFormatter(labels or tick_labels(ticks)))
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


def legend_lines(labels):
    """The lines a legend of `labels` takes, wrapped as legend_below wraps them (a panel's height allowance)."""
    return sum(wrap_label(label).count("\n") + 1 for label in labels)


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


def si_labels(ticks):
    """Tick labels of large counts with k, M or G (1200000 -> "1.2M"); tick_labels below 10^4."""
    top = max(abs(t) for t in ticks)
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if top >= max(scale, 1e4):
            return [s + suffix if float(s) else "0" for s in tick_labels([t / scale for t in ticks])]
    return tick_labels(ticks)

