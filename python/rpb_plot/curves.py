"""Training curves of one or more runs from their metrics.csv: train loss, valid loss per length and learning
rate, against step or tokens seen; a run's colour and marker as its method label's in every figure."""
import csv

from . import theme
from .axes import legend_below, legend_rows, new_figure, nice_ticks, set_axis, si_labels
from .backend import Line2D, NullLocator
from .errors import RequestError, finite, require
from .styles import figure_styles, seed_style


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
    """The Style of each run: its method's (as in the sweep figure), the method's 2nd, 3rd, ... run (its seeds)
    differing by dash only (styles.seed_style)."""
    looks = figure_styles([(run["method"], run["scheme"]) for run in runs], styles)
    seen, out = {}, []
    for run in runs:
        k = seen[run["method"]] = seen.get(run["method"], -1) + 1
        out.append(seed_style(looks[run["method"]], k))
    return out


def draw_curve_panel(ax, runs, tables, column, x, styles):
    """Every run's `column` against `x` (points where both are present), with markers; a run without the
    column is listed "(n/a)" in the legend and not drawn. Returns the data's (xs, ys) ranges."""
    handles, xs_all, ys_all = [], [], []
    for run, (cols, rows), style in zip(runs, tables, run_styles(runs, styles)):
        points = [(r[x], r[column]) for r in rows if finite(r.get(x)) and finite(r.get(column))]
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
    require(any(finite(r.get(x)) and finite(r.get(c)) for _, rows in tables for r in rows for c, _, _ in panels),
            "nothing to draw: %s hold no point (no row with a finite %s and a value)"
            % (", ".join(run["metrics_csv"] for run in runs), x))
    columns = min(3, len(panels))
    rows = legend_rows(len(panels), columns)
    width, height = theme.PANEL_SIZE
    fig = new_figure(width * columns, (height + theme.LEGEND_ROW * legend_rows(len(runs))) * rows)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax, (column, title, ylabel) in zip(axes, panels):
        xs, ys = draw_curve_panel(ax, runs, tables, column, x, styles)
        ylim = request_curves.get("ylim") if column != "lr" else None
        if xs:
            ticks = nice_ticks(min(xs), max(xs)) if max(xs) > min(xs) else None
            set_axis(ax, "x", min(xs), max(xs), ticks=ticks, labels=si_labels(ticks) if ticks else None)
            set_axis(ax, "y", *(ylim or (min(ys), max(ys))))
        else:  # no run has a point here: no tick that would suggest a value
            ax.xaxis.set_major_locator(NullLocator())
            ax.yaxis.set_major_locator(NullLocator())
        ax.set_title(title, fontsize=9.5)
        ax.set_xlabel("tokens seen" if x == "tokens" else "step", fontsize=9)
        ax.set_ylabel(ylabel, fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(True, color="0.92", linewidth=0.6)
    for ax in axes[len(panels):]:
        ax.remove()
    return fig

