"""The sweep figure: its panels (sweep.py) in a grid, metrics by rows and tasks by columns (a single row or column
wrapped into rows of at most theme.GRID_COLUMNS), with ONE legend under them all: each method's line (a marker and a
dash of its own, by its order), the optimum line, and as its title the seeds the values are over and what the band
is ("mean ± std over 3 seeds (band)", "1 seed: no band"). Values are drawn in the metric's unit (accuracy in %),
flat data on a linear axis of a sensible span, never ticks that differ in the fourth digit."""
from . import theme
from .axes import figure_legend, is_flat, new_figure, set_axis
from .backend import Line2D, NullLocator
from .errors import require
from .results import known_metrics, length_indices, metrics_named, read_results, results_path, select_rows
from .styles import figure_styles
from .sweep import length_panels, position_panels, setting_panels


def _band(stat, log, metric):
    """(low, high) of mean ± std within the values `metric` can take (Metric.clamp: no accuracy band above 100%
    or below 0); on a log axis a low at or below zero stays at the mean."""
    mean, std = stat
    low, high = (mean - std, mean + std) if metric is None else (metric.clamp(mean - std), metric.clamp(mean + std))
    return (low if not log or low > 0 else mean), high


def _segments(stats):
    """Runs of consecutive defined points: [[index, ...], ...]."""
    runs, current = [], []
    for i, s in enumerate(stats):
        if s is None:
            runs, current = (runs + [current] if current else runs), []
        else:
            current.append(i)
    return runs + [current] if current else runs


def draw_series(ax, series, style, log, metric=None):
    """The series' line with a marker at every defined point (NaN at n/a points: a gap, never a value) and its
    band of mean ± std (an error bar for a lone point) within the values `metric` (a Metric, or None) can take;
    returns its line."""
    ys = [s[0] if s is not None else float("nan") for s in series.stats]
    # A marker on at most about 12 points: a line of many points (the per-position loss) stays readable.
    line, = ax.plot(series.xs, ys, color=style.color, marker=style.marker, linestyle=style.linestyle,
                    linewidth=1.8, markersize=5.5, label=series.label, gid=series.label,
                    markevery=max(1, len(ys) // 12))
    for run in _segments(series.stats):
        if all(series.stats[i][1] == 0 for i in run):
            continue
        lo, hi = zip(*(_band(series.stats[i], log, metric) for i in run))
        if len(run) > 1:
            ax.fill_between([series.xs[i] for i in run], lo, hi, color=style.color, alpha=theme.BAND_ALPHA, linewidth=0,
                            gid=series.label + " band")
        else:
            m = series.stats[run[0]][0]
            bar = ax.errorbar([series.xs[run[0]]], [m], yerr=[[m - lo[0]], [hi[0] - m]], fmt="none",
                              ecolor=style.color, capsize=4)
            for artist in bar.get_children():
                artist.set_gid(series.label + " band")
    return line


def _y_range(panel, log, ylim):
    """(lo, hi) of the y axis: ylim when given, else a metric's bounds when it has both (accuracy: 0-100%), else
    the data's; None when the panel has no value at all."""
    values = [v for s in panel.series for st in s.stats if st is not None for v in _band(st, log, panel.metric)]
    values += [panel.optimum] if panel.optimum is not None and values else []
    if ylim or not values:
        return (ylim[0], ylim[1]) if ylim else None
    lower, upper = panel.metric.bounds()
    return (lower, upper) if lower is not None and upper is not None else (min(values), max(values))


def draw_panel(ax, panel, looks, ylim=None, elsewhere=()):
    """Draws a sweep panel: its series in `looks` ({label: Style}), the optimum line, axes with ticks inside the
    data (a log y axis for a metric drawn so, unless the data is flat), its title with the notes of points not
    drawn (but of the labels in `elsewhere`). No legend: the figure has one (draw_sweep)."""
    log = panel.metric.log and all(st[0] > 0 for s in panel.series for st in s.stats if st)
    log = log and (panel.optimum is None or panel.optimum > 0) and (not ylim or ylim[0] > 0)
    y_range = _y_range(panel, log, ylim)
    log = log and not (y_range and not ylim and is_flat(*y_range))
    for s in panel.series:
        draw_series(ax, s, looks[s.label], log, panel.metric)
    if panel.optimum is not None:
        ax.axhline(panel.optimum, label="optimal %s" % panel.metric.key, gid="optimum", **theme.OPTIMUM_STYLE)
    if y_range:
        set_axis(ax, "y", *y_range, log, bounds=panel.metric.bounds())
    else:  # every point n/a: no tick that would suggest a value
        ax.yaxis.set_major_locator(NullLocator())
    set_axis(ax, "x", min(panel.x_ticks), max(panel.x_ticks), panel.x_log, panel.x_ticks, panel.x_labels,
             panel.x_base)
    ax.set_xlabel(panel.x_label, fontsize=9)
    ax.set_ylabel(panel.metric.axis, fontsize=9)
    ax.set_title(panel.full_title(elsewhere), fontsize=9.5)
    ax.tick_params(labelsize=8)
    ax.grid(True, which="major", color="0.92", linewidth=0.6)


def sweep_panels(request_sweep, styles):
    """[[Panel or None per column] per metric row] for a request's "sweep" block: a metric row holds the
    columns (tasks) where some selected row has a value of it, each task in the same column in every row."""
    results = [read_results(results_path(p)) for p in request_sweep["results"]]
    for res, labels in zip(results, request_sweep.get("labels") or []):
        res.label_rows(labels)
    pairs = select_rows(results, request_sweep.get("tasks") or [], request_sweep.get("methods") or [])
    lengths = request_sweep.get("lengths") or []
    if lengths:
        require(any(length_indices(res, lengths) for res in results),
                "no length %s in the results" % ", ".join(map(str, lengths)))
    against = request_sweep.get("against") or "length"
    if against == "position":  # the per-token loss by position: one row of panels, one per task
        panels = position_panels(pairs, lengths)
        require(panels, "nothing to draw: no selected row has a per-token loss by position")
        return [panels]
    metrics = metrics_named(request_sweep.get("metrics") or [], known_metrics(request_sweep["known_metrics"]))
    rows = [(length_panels(pairs, metric, lengths, styles) if against == "length"
             else setting_panels(pairs, metric, lengths, against)) for metric in metrics]
    rows = [panels for panels in rows if panels]
    if not rows and against == "length":  # every value n/a (a sweep whose runs all failed): a figure that says so
        rows = [length_panels(pairs, metrics[0], lengths, styles, empty=True)]
    require(rows and rows[0], "nothing to draw: no selected row has a value of %s" % ", ".join(m.key for m in metrics))
    columns = list(dict.fromkeys(p.column for panels in rows for p in panels))
    return [[next((p for p in panels if p.column == c), None) for c in columns] for panels in rows]


def layout(grid):
    """The cells [[Panel or None per column] per row] the figure draws: `grid` as it is (metrics by rows, tasks
    by columns), or when it has a single row or column its panels in rows of at most theme.GRID_COLUMNS (4 panels:
    2 x 2), never one tall column."""
    if len(grid) > 1 and len(grid[0]) > 1:
        return grid
    panels = [p for row in grid for p in row if p]
    rows = -(-len(panels) // theme.GRID_COLUMNS)
    columns = -(-len(panels) // rows)
    cells = panels + [None] * (rows * columns - len(panels))
    return [cells[r * columns:(r + 1) * columns] for r in range(rows)]


def seeds_note(panels):
    """What a line and its band are, the legend's title: "mean ± std over 3 seeds (band)" ("over 2-3 seeds" when
    rows differ), "1 seed: no band"; with a line more for a metric drawn past the train length over the seeds that
    learned the task."""
    if all(p.metric.field == "position_loss" for p in panels):
        return "each line: every seed's targets pooled (no band)"
    counts = sorted(set().union(*(p.seeds() for p in panels)))
    many = "%d-%d" % (counts[0], counts[-1]) if len(counts) > 1 else "%d" % counts[0]
    note = "mean ± std over %s seeds (band)" % many if counts[-1] > 1 else "1 seed: no band"
    for metric in dict.fromkeys(p.metric for p in panels if p.metric.learned):
        note += "\n%s past the train length: over the seeds that learned the task" % metric.label
    return note


def common_notes(panels):
    """{label: note} of the methods drawn in every panel with the same note on points not drawn in each (a method
    n/a past 1x everywhere): the legend names it once, "learned (n/a at 2x, 4x)", instead of every panel."""
    notes = {}
    for p in panels:
        for s in p.series:
            notes.setdefault(s.label, []).append(s.note())
    return {label: n[0] for label, n in notes.items() if n[0] and len(n) == len(panels) and len(set(n)) == 1}


def legend_handles(panels, looks):
    """The figure legend's entries: each method's look (in the figure's order; its note when common_notes has
    one), then each metric's optimum line with its value when every panel has the same one."""
    notes = common_notes(panels)
    handles = [Line2D([], [], color=s.color, marker=s.marker, linestyle=s.linestyle, linewidth=1.8, markersize=5.5,
                      label=label + (" (%s)" % notes[label] if label in notes else "")) for label, s in looks.items()]
    for metric in dict.fromkeys(p.metric for p in panels if p.optimum is not None):
        values = {p.optimum for p in panels if p.metric == metric and p.optimum is not None}
        text = "optimal %s" % metric.key + (" (%.3f)" % values.pop() if len(values) == 1 else " (each task's)")
        handles.append(Line2D([], [], label=text, **theme.OPTIMUM_STYLE))
    return handles


def draw_sweep(request_sweep, styles):
    """The sweep figure: its panels laid out (layout), each method a colour, marker and dash of its own in every
    panel, one legend under them all titled by seeds_note."""
    cells = layout(sweep_panels(request_sweep, styles))
    panels = [p for row in cells for p in row if p]
    rows, columns = len(cells), len(cells[0])
    elsewhere = common_notes(panels)
    titles = [max(p.full_title(elsewhere).count("\n") for p in row if p) for row in cells]  # note lines per row
    fig = new_figure(theme.PANEL_SIZE[0] * columns, theme.PANEL_SIZE[1] * rows + 0.16 * sum(titles))
    axes = fig.subplots(rows, columns, squeeze=False)
    looks = figure_styles([(s.label, s.scheme) for p in panels for s in p.series], styles)
    for r, row in enumerate(cells):
        for c in range(columns):
            if row[c]:
                draw_panel(axes[r][c], row[c], looks, request_sweep.get("ylim"), elsewhere)
            else:
                axes[r][c].remove()
    figure_legend(fig, legend_handles(panels, looks), seeds_note(panels))
    return fig
