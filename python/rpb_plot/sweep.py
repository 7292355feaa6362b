"""The sweep figure: one row per metric the results hold, one column per task (per task and length when drawn
against a setting); a method's line with its markers and its band of mean ± std over seeds, its n/a lengths in
its legend entry (never a point), the optimal perplexity a dashed line with its own legend entry."""
from dataclasses import dataclass, field

from . import theme
from .axes import legend_below, legend_rows, new_figure, set_axis, tick_labels
from .backend import Patch
from .errors import finite, require
from .results import Metric, length_indices, metric_stats, metrics_named, read_results, results_path, select_rows
from .styles import scheme_dims, scheme_of, style_of


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


def _labels(pairs):
    """The legend label of each (results, row): its method, with the sweep's name when two sweeps share one."""
    seen = {}
    for res, row in pairs:
        seen.setdefault((row["task"], row["method"]), set()).add(res.name)
    return [row["method"] + (" (%s)" % res.name if len(seen[(row["task"], row["method"])]) > 1 else "")
            for res, row in pairs]


def _optimum(pairs, metric):
    values = [row.get(metric.optimum) for _, row in pairs] if metric.optimum else []
    return next((v for v in values if finite(v)), None)


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
            keep = length_indices(res, lengths)
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
    if all(finite(v) for v in values):
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
        for j in length_indices(res0, lengths):
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
                                  gid="optimum", **theme.OPTIMUM_STYLE))
    if banded:
        handles.append(Patch(color="0.45", alpha=theme.BAND_ALPHA, label="band: mean ± std over seeds"))
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
        require(any(length_indices(res, lengths) for res in results),
                "no length %s in the results" % ", ".join(map(str, lengths)))
    against = request_sweep.get("against") or "length"
    metrics = metrics_named(request_sweep.get("metrics") or [])
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
    height = theme.PANEL_SIZE[1] + theme.LEGEND_ROW * legend_rows(entries)
    fig = new_figure(theme.PANEL_SIZE[0] * columns, height * len(grid))
    axes = fig.subplots(len(grid), columns, squeeze=False)
    for r, row in enumerate(grid):
        for c in range(columns):
            if row[c]:
                draw_panel(axes[r][c], row[c], styles, request_sweep.get("ylim"))
            else:
                axes[r][c].remove()
    return fig

