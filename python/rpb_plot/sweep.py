"""The sweep figure: one row per metric the results hold, one column per task (per task and length when drawn
against a setting); a method's line with its markers and its band of mean ± std over seeds, its n/a lengths in
its legend entry (never a point), the optimal perplexity a dashed line with its own legend entry. A metric with a
"learned" key (passkey accuracy) is drawn past the first length over the seeds that learned the task; a row where
none did says "not learned" in its legend there, never a point."""
from dataclasses import dataclass, field

from . import theme
from .axes import legend_below, legend_lines, legend_rows, new_figure, set_axis, tick_labels
from .backend import NullLocator, Patch
from .errors import finite, require
from .results import (Metric, known_metrics, length_indices, metric_stats, metrics_named, not_learned, read_results,
                      results_path, select_rows)
from .styles import figure_styles, scheme_dims


@dataclass
class Series:
    """One method's line on one panel."""
    label: str  # the legend text before any n/a note (the row's method)
    scheme: str
    xs: list  # x of each point
    stats: list  # (mean, std) or None (n/a) per point
    names: list  # each point's name in an n/a note ("2x", "optim.lr=0.003")
    unlearned: list = field(default_factory=list)  # the names of points without a value because no seed learned

    def na(self):
        return [n for n, s in zip(self.names, self.stats) if s is None and n not in self.unlearned]

    def note(self):
        """The legend's note on the points not drawn: " (n/a at 2x, 4x)", " (not learned: 2x, 4x not drawn)"."""
        unlearned = [n for n, s in zip(self.names, self.stats) if s is None and n in self.unlearned]
        return ((" (n/a at %s)" % ", ".join(self.na()) if self.na() else "")
                + (" (not learned: %s not drawn)" % ", ".join(unlearned) if unlearned else ""))


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
    column: object = None  # what the figure's column shows: the task (with the length index against a setting)


def _labels(pairs):
    """The legend label of each (results, row): its method, with the sweep's name when two sweeps share one, and
    its sliding-window stride when its method does not name it (a sweep whose config sets run.eval_stride)."""
    seen = {}
    for res, row in pairs:
        seen.setdefault((row["task"], row["method"]), set()).add(res.name)
    return [row["method"] + (" (%s)" % res.name if len(seen[(row["task"], row["method"])]) > 1 else "")
            + _protocol_note(row) for res, row in pairs]


def _protocol_note(row):
    """" (sliding window, stride 32)" for a row scored so whose method does not say it; "" otherwise."""
    stride = row.get("eval_stride")
    return " (sliding window, stride %d)" % stride if stride and setting_of(row, "run.eval_stride") is None else ""


def _optimum(pairs, metric):
    values = [row.get(metric.optimum) for _, row in pairs] if metric.optimum else []
    return next((v for v in values if finite(v)), None)


def _task_is_grid(pairs, styles):
    return any(scheme_dims(row["scheme"], styles) == 2 for _, row in pairs)


def length_panels(pairs, metric, lengths, styles, empty=False):
    """One Panel per task: `metric` against the evaluation length (log2 axis, a tick per length); a task where no
    row has a value is left out, unless `empty` (then its panel lists every method as n/a everywhere)."""
    panels = []
    for task in dict.fromkeys(row["task"] for _, row in pairs):
        mine = [(res, row) for res, row in pairs if row["task"] == task]
        series, xs = [], {}
        for (res, row), label in zip(mine, _labels(mine)):
            stats = metric_stats(row, metric, len(res.multipliers))
            keep = length_indices(res, lengths)
            stats = [None] * len(res.multipliers) if stats is None and empty else stats
            if stats is None or not keep:
                continue
            points = [res.multipliers[j] * res.train_length for j in keep]
            xs.update({p: res.multipliers[j] for p, j in zip(points, keep)})
            unlearned = not_learned(row, metric, len(res.multipliers))
            series.append(Series(label, row["scheme"], points, [stats[j] for j in keep],
                                 ["%dx" % res.multipliers[j] for j in keep],
                                 ["%dx" % res.multipliers[j] for j in keep if j in unlearned]))
        nothing = not any(s is not None for sr in series for s in sr.stats)
        if not series or (nothing and not empty):
            continue
        trains = {res.train_length for res, _ in mine}
        ticks = sorted(xs)
        seeds = max(len(res.seeds) for res, _ in mine)
        title = "%s (trained at %s%s)" % (task, "/".join(map(str, sorted(trains))),
                                          "; mean ± std over %d seeds" % seeds if seeds > 1 else "")
        title += ": no %s at any length" % metric.key if nothing else ""
        grid = _task_is_grid(mine, styles)
        panels.append(Panel(title, metric, series, _optimum(mine, metric), ticks,
                            ["%d\n%dx" % (t, xs[t]) if len(trains) == 1 else str(t) for t in ticks],
                            "evaluation grid side (cells, log2)" if grid else "evaluation length (tokens, log2)",
                            True, 2, task))
    return panels


def setting_of(row, key):
    """The row's value of setting `key` (its "settings" object, as rpb writes it), or None."""
    settings = row.get("settings")
    return settings.get(key) if isinstance(settings, dict) else None


def _setting_text(value):
    """A setting's value as a label shows it (64, 0.001, true, nearest)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "%g" % value if isinstance(value, float) else str(value)


def _line_label(row, key):
    """The label of the line a row lies on against setting `key`: its scheme with its other settings
    ("t5@position.max_distance=64"), built from the row's scheme and settings (never cut out of its method name)."""
    return row["scheme"] + "".join("@%s=%s" % (k, _setting_text(v)) for k, v in row["settings"].items() if k != key)


def _setting_axis(values):
    """(x of each value, ticks, labels, log): numbers on a log axis when positive over a factor of 8 or more,
    else linear; anything else categorical in order of appearance."""
    if all(finite(v) for v in values):
        ticks = sorted(set(values))
        log = ticks[0] > 0 and ticks[-1] / ticks[0] >= 8
        labels = ["%g" % t for t in ticks]  # the values as a config writes them
        return list(values), ticks, labels if len(set(labels)) == len(labels) else tick_labels(ticks), log
    order = list(dict.fromkeys(str(v) for v in values))
    return [order.index(str(v)) for v in values], list(range(len(order))), order, False


def _token_lengths(mine, lengths):
    """{evaluation length in tokens: {id of a Results: its index j of it}} of the lengths the filter keeps."""
    out = {}
    for res, _, _ in mine:
        for j in length_indices(res, lengths):
            out.setdefault(res.multipliers[j] * res.train_length, {})[id(res)] = j
    return dict(sorted(out.items()))


def setting_panels(pairs, metric, lengths, key):
    """One Panel per task and evaluation length (in tokens, each results file at its own index of it): `metric`
    against setting `key`, a line per scheme and other settings (with the sweep's name when two sweeps share one)."""
    rows = [(res, row, setting_of(row, key)) for res, row in pairs]
    rows = [r for r in rows if r[2] is not None]
    require(rows, 'no row of the results has the setting "%s" (in its "settings")' % key)
    panels = []
    for task in dict.fromkeys(row["task"] for _, row, _ in rows):
        mine = [r for r in rows if r[1]["task"] == task]
        xs, ticks, labels, log = _setting_axis([v for _, _, v in mine])
        names = {}
        for res, row, _ in mine:
            names.setdefault(_line_label(row, key), set()).add(res.name)
        for length, at in _token_lengths(mine, lengths).items():
            groups = {}
            for (res, row, value), x in zip(mine, xs):
                stats = metric_stats(row, metric, len(res.multipliers)) if id(res) in at else None
                if stats is not None:
                    label = _line_label(row, key)
                    label += " (%s)" % res.name if len(names[label]) > 1 else ""
                    g = groups.setdefault(label, Series(label, row["scheme"], [], [], []))
                    g.xs.append(x), g.stats.append(stats[at[id(res)]]), g.names.append("%s=%s" % (key, value))
                    if at[id(res)] in not_learned(row, metric, len(res.multipliers)):
                        g.unlearned.append(g.names[-1])
            if any(s is not None for g in groups.values() for s in g.stats):
                times = {res.multipliers[at[id(res)]] for res, _, _ in mine if id(res) in at}
                title = "%s, length %d%s" % (task, length, " (%dx)" % times.pop() if len(times) == 1 else "")
                panels.append(Panel(title, metric, [_sorted(g) for g in groups.values()],
                                    _optimum([(r, w) for r, w, _ in mine], metric),
                                    ticks, labels, key, log, 10, (task, length)))
    return panels


def _sorted(series):
    order = sorted(range(len(series.xs)), key=lambda i: series.xs[i])
    return Series(series.label, series.scheme, *([getattr(series, f)[i] for i in order]
                                                  for f in ("xs", "stats", "names")), series.unlearned)


def _band(stat, log, metric):
    """(low, high) of mean ± std within the values `metric` can take (Metric.clamp: no accuracy band above 1 or
    below 0); on a log axis a low at or below zero stays at the mean."""
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
    returns (its line, whether a band was drawn)."""
    note = series.note()
    ys = [s[0] if s is not None else float("nan") for s in series.stats]
    line, = ax.plot(series.xs, ys, color=style.color, marker=style.marker, linestyle=style.linestyle,
                    linewidth=1.8, markersize=5.5, label=series.label + note, gid=series.label)
    banded = False
    for run in _segments(series.stats):
        if all(series.stats[i][1] == 0 for i in run):
            continue
        lo, hi = zip(*(_band(series.stats[i], log, metric) for i in run))
        banded = True
        if len(run) > 1:
            ax.fill_between([series.xs[i] for i in run], lo, hi, color=style.color, alpha=theme.BAND_ALPHA, linewidth=0,
                            gid=series.label + " band")
        else:
            m = series.stats[run[0]][0]
            bar = ax.errorbar([series.xs[run[0]]], [m], yerr=[[m - lo[0]], [hi[0] - m]], fmt="none",
                              ecolor=style.color, capsize=4)
            for artist in bar.get_children():
                artist.set_gid(series.label + " band")
    return line, banded


def _y_range(panel, log, ylim):
    """(lo, hi) of the y data (ylim when given), or None when the panel has no value at all."""
    if ylim:
        return ylim[0], ylim[1]
    values = [v for s in panel.series for st in s.stats if st is not None for v in _band(st, log, panel.metric)]
    values += [panel.optimum] if panel.optimum is not None and values else []
    return (min(values), max(values)) if values else None


def draw_panel(ax, panel, styles, ylim=None, looks=None):
    """Draws a sweep panel: its series (in `looks`, {label: Style}, else figure_styles of the panel's), the optimum
    line, axes with ticks inside the data, the legend below."""
    looks = looks or figure_styles([(s.label, s.scheme) for s in panel.series], styles)
    log = panel.metric.log and all(st[0] > 0 for s in panel.series for st in s.stats if st)
    log = log and (panel.optimum is None or panel.optimum > 0) and (not ylim or ylim[0] > 0)
    handles, banded = [], False
    for s in panel.series:
        line, band = draw_series(ax, s, looks[s.label], log, panel.metric)
        handles.append(line)
        banded = banded or band
    if panel.optimum is not None:
        handles.append(ax.axhline(panel.optimum, label="optimal %s (%.3f)" % (panel.metric.key, panel.optimum),
                                  gid="optimum", **theme.OPTIMUM_STYLE))
    if banded:
        handles.append(Patch(color="0.45", alpha=theme.BAND_ALPHA, label="band: mean ± std over seeds"))
    y_range = _y_range(panel, log, ylim)
    if y_range:
        set_axis(ax, "y", *y_range, log)
    else:  # every point n/a: no tick that would suggest a value
        ax.yaxis.set_major_locator(NullLocator())
    set_axis(ax, "x", min(panel.x_ticks), max(panel.x_ticks), panel.x_log, panel.x_ticks, panel.x_labels,
             panel.x_base)
    ax.set_xlabel(panel.x_label, fontsize=9)
    ax.set_ylabel(panel.metric.axis, fontsize=9)
    ax.set_title(panel.title, fontsize=9.5)
    ax.tick_params(labelsize=8)
    ax.grid(True, which="major", color="0.92", linewidth=0.6)
    legend_below(ax, handles, below=0.62 if "\n" in "".join(panel.x_labels) else 0.5)


def sweep_panels(request_sweep, styles):
    """[[Panel or None per column] per metric row] for a request's "sweep" block: a metric row holds the
    columns (tasks) where some selected row has a value of it, each task in the same column in every row."""
    results = [read_results(results_path(p)) for p in request_sweep["results"]]
    pairs = select_rows(results, request_sweep.get("tasks") or [], request_sweep.get("methods") or [])
    lengths = request_sweep.get("lengths") or []
    if lengths:
        require(any(length_indices(res, lengths) for res in results),
                "no length %s in the results" % ", ".join(map(str, lengths)))
    against = request_sweep.get("against") or "length"
    metrics = metrics_named(request_sweep.get("metrics") or [], known_metrics(request_sweep["known_metrics"]))
    rows = [(length_panels(pairs, metric, lengths, styles) if against == "length"
             else setting_panels(pairs, metric, lengths, against)) for metric in metrics]
    rows = [panels for panels in rows if panels]
    if not rows and against == "length":  # every value n/a (a sweep whose runs all failed): a figure that says so
        rows = [length_panels(pairs, metrics[0], lengths, styles, empty=True)]
    require(rows and rows[0], "nothing to draw: no selected row has a value of %s" % ", ".join(m.key for m in metrics))
    columns = list(dict.fromkeys(p.column for panels in rows for p in panels))
    return [[next((p for p in panels if p.column == c), None) for c in columns] for panels in rows]


def draw_sweep(request_sweep, styles):
    """The sweep figure: one row per metric the results hold, one column per task (per task and length when
    drawn against a setting)."""
    grid = sweep_panels(request_sweep, styles)
    columns = len(grid[0])
    entries = max(legend_lines([s.label for s in p.series]) for row in grid for p in row if p) + 2  # wrapped lines
    height = theme.PANEL_SIZE[1] + theme.LEGEND_ROW * legend_rows(entries)
    fig = new_figure(theme.PANEL_SIZE[0] * columns, height * len(grid))
    axes = fig.subplots(len(grid), columns, squeeze=False)
    looks = figure_styles([(s.label, s.scheme) for row in grid for p in row if p for s in p.series], styles)
    for r, row in enumerate(grid):
        for c in range(columns):
            if row[c]:
                draw_panel(axes[r][c], row[c], styles, request_sweep.get("ylim"), looks)
            else:
                axes[r][c].remove()
    return fig

