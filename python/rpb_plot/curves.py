"""Training curves of one or more runs from their metrics.csv: train loss, valid loss per length and learning
rate, against step (plain integers) or tokens seen (in millions); a run's colour its method's (as in the sweep figure),
each run a marker and a dash of its own; one legend under the panels."""
import csv

from . import theme
from .axes import (count_labels, figure_legend, linear_ticks, new_figure, nice_ticks, power_labels, set_axis,
                   tick_labels, wrap_note)
from .backend import Line2D, NullLocator
from .errors import RequestError, finite, require
from .styles import Style, figure_styles, line_look


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


def run_styles(runs, styles):
    """The Style of each run: its method's colour (as in the sweep figure; a method's runs, its seeds, share it) and
    a marker and a dash of its own (styles.line_look, by its order in the figure)."""
    looks = figure_styles([(run["method"], run["scheme"]) for run in runs], styles)
    return [Style(looks[run["method"]].color, *line_look(i)) for i, run in enumerate(runs)]


def draw_curve_panel(ax, runs, tables, column, x, looks):
    """Every run's `column` against `x` (points where both are present), with markers, in its Style of `looks`;
    a run without the column is not drawn and is named in the panel's title ("n/a: t5"). Returns the data's
    (xs, ys) ranges and the labels of the runs not drawn."""
    xs_all, ys_all, missing = [], [], []
    for run, (cols, rows), style in zip(runs, tables, looks):
        points = [(r[x], r[column]) for r in rows if finite(r.get(x)) and finite(r.get(column))]
        if not points:
            missing.append(run["label"])
            continue
        xs, ys = zip(*points)
        xs_all += xs
        ys_all += ys
        ax.plot(xs, ys, color=style.color, marker=style.marker, linestyle=style.linestyle,
                markevery=max(1, len(xs) // 8), linewidth=1.5, markersize=5, label=run["label"], gid=run["label"])
    return xs_all, ys_all, missing


def _x_axis(ax, xs, x):
    """Steps as plain integers; tokens seen in millions (one form in every curves figure)."""
    lo, hi = min(xs), max(xs)
    if x == "tokens":
        millions = nice_ticks(lo / 1e6, hi / 1e6) if hi > lo else [lo / 1e6]
        set_axis(ax, "x", lo, hi, ticks=[t * 1e6 for t in millions], labels=tick_labels(millions))
    else:
        ticks = [t for t in linear_ticks(lo, hi, integer=True) if t == round(t)] if hi > lo else [lo]
        set_axis(ax, "x", lo, hi, ticks=ticks, labels=count_labels(ticks))


def draw_curves(request_curves, styles):
    """Training curves of one or more runs: train loss, valid loss per length, learning rate, against "step"
    or "tokens" (refused when a metrics.csv has no tokens column); one legend under the panels."""
    runs, x = request_curves["runs"], request_curves.get("x") or "step"
    tables = [read_metrics_csv(run["metrics_csv"]) for run in runs]
    for run, (cols, _) in zip(runs, tables):
        require(x in cols, '%s has no "%s" column (written by an older rpb?): draw its curves against step'
                % (run["metrics_csv"], x) if x == "tokens" else '%s has no "%s" column' % (run["metrics_csv"], x))
    panels = curve_panels(tables)
    require(panels, "the metrics.csv files have no train_loss, valid_loss@<length> or lr column")
    require(any(finite(r.get(x)) and finite(r.get(c)) for _, rows in tables for r in rows for c, _, _ in panels),
            "nothing to draw: %s hold no point (no row with a finite %s and a value)"
            % (", ".join(run["metrics_csv"] for run in runs), x))
    columns = min(theme.GRID_COLUMNS, len(panels))
    rows = -(-len(panels) // columns)
    width, height = theme.PANEL_SIZE
    fig = new_figure(width * columns, height * rows)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    looks = run_styles(runs, styles)
    for ax, (column, title, ylabel) in zip(axes, panels):
        xs, ys, missing = draw_curve_panel(ax, runs, tables, column, x, looks)
        ylim = request_curves.get("ylim") if column != "lr" else None
        if xs:
            _x_axis(ax, xs, x)
            set_axis(ax, "y", *(ylim or (min(ys), max(ys))), formatter=power_labels if column == "lr" else None)
        else:  # no run has a point here: no tick that would suggest a value
            ax.xaxis.set_major_locator(NullLocator())
            ax.yaxis.set_major_locator(NullLocator())
        ax.set_title(title + ("\n" + wrap_note("n/a: " + ", ".join(missing)) if missing else ""), fontsize=9.5)
        ax.set_xlabel("tokens seen (millions)" if x == "tokens" else "training step", fontsize=9)
        ax.set_ylabel(ylabel, fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(True, color="0.92", linewidth=0.6)
    for ax in axes[len(panels):]:
        ax.remove()
    figure_legend(fig, [Line2D([], [], color=s.color, marker=s.marker, linestyle=s.linestyle, linewidth=1.5,
                               markersize=5, label=run["label"]) for run, s in zip(runs, looks)])
    return fig
