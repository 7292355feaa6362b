"""Position-bias pictures of a checkpoint: 1-D, bias against distance d = query - key on a symlog axis (a line
per head, the trained range shaded, untrained rows dotted); 2-D, a heatmap per head over (dy, dx) with its colour
bar (untrained offsets hatched)."""
from . import theme
from .axes import legend_below, legend_rows, new_figure, nice_ticks, set_axis, tick_labels
from .backend import FixedFormatter, FixedLocator, Line2D, NullLocator, PatchCollection, Rectangle
from .errors import finite


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
    if len(module["values"]) > theme.FEW_HEADS:
        return "head %d" % h
    shown = [d for d in dict.fromkeys((0, 1, (train_length or 0) - 1)) if d in distances]
    return "head %d: " % h + ", ".join("b(%d) = %.3g" % (d, values[distances.index(d)] + 0.0) for d in shown)


def draw_bias_line(ax, module, train_length, untrained_rule):
    """Draws one 1-D module: bias against d = query - key on a symlog axis, one line (colour and marker) per head,
    solid at trained rows and dotted at untrained ones, the trained range |d| < train_length shaded."""
    d = module["distances"]
    trained = module.get("trained") or [True] * len(d)
    handles = []
    if train_length:
        lo, hi = max(min(d), -(train_length - 1)), min(max(d), train_length - 1)
        handles.append(ax.axvspan(lo, hi, label="trained: |d| < %d" % train_length, gid="trained",
                                  **theme.TRAINED_SHADE))
    for h, values in enumerate(module["values"]):
        colors, markers = theme.HEAD_COLORS, theme.HEAD_MARKERS
        color, marker = colors[h % len(colors)], markers[h % len(markers)]
        solid = [v if t else float("nan") for v, t in zip(values, trained)]
        dotted = [v if not t or (i + 1 < len(d) and not trained[i + 1]) or (i and not trained[i - 1]) else float("nan")
                  for i, (v, t) in enumerate(zip(values, trained))]
        handles.append(ax.plot(d, solid, color=color, marker=marker, markevery=_marks(d), markersize=4,
                               linewidth=1.6, label=_head_label(module, h, values, d, train_length),
                               gid="head %d" % h)[0])
        if not all(trained):
            ax.plot(d, dotted, color=color, gid="head %d untrained" % h, **theme.UNTRAINED_STYLE)
    if not all(trained):
        handles.append(Line2D([], [], color="0.3", label="untrained rows%s" % (
            " (filled: %s)" % untrained_rule if untrained_rule else ""), **theme.UNTRAINED_STYLE))
    ax.set_xscale("symlog", linthresh=1, linscale=0.6)
    ax.set_xlim(*(min(d) - 0.3, max(d) * 1.08 + 0.3))
    ticks = symlog_ticks(min(d), max(d))
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FixedFormatter([str(t) for t in ticks]))
    ax.xaxis.set_minor_locator(NullLocator())
    ys = [v for head in module["values"] for v in head if finite(v)]
    set_axis(ax, "y", min(ys), max(ys))
    # The bias of a scheme whose normaliser reads the query's position (FIRE) depends on which query: rpb says.
    query = module.get("query")
    where = "" if query is None else ", the query at position %d" % query
    ax.set_xlabel("distance d = query - key (positions%s; symlog)" % where, fontsize=9)
    ax.set_ylabel("bias (added to the score)", fontsize=9)
    ax.set_title(module["name"], fontsize=9.5)
    ax.tick_params(labelsize=8)
    legend_below(ax, handles, 2 if len(handles) <= 2 * theme.FEW_HEADS else 4)


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
    scale = max((abs(v) for row in values for v in row if finite(v)), default=0.0) or 1.0
    image = ax.imshow(values, origin="lower", extent=(*_extent(dx), *_extent(dy)), cmap=theme.HEATMAP_CMAP,
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
    notes = module.get("head_notes") or []
    ax.set_title("head %d" % h + (" (%s)" % notes[h] if h < len(notes) and notes[h] else ""), fontsize=9)
    ax.tick_params(labelsize=7)


def draw_bias(request_bias, styles):
    """The bias pictures of a checkpoint: per module, 1-D a line per head against distance, 2-D a heatmap per
    head with its colour bar."""
    modules, dims = request_bias["modules"], request_bias.get("dims", 1)
    title = request_bias.get("title") or request_bias.get("scheme") or ""
    if dims == 2:
        heads = max(len(m["values"]) for m in modules)
        columns, rows = min(theme.HEADS_PER_ROW, heads), legend_rows(heads, theme.HEADS_PER_ROW)
        fig = new_figure(3.4 * columns, 3.0 * rows * len(modules) + 0.4)
        subfigs = fig.subfigures(len(modules), 1, squeeze=False).ravel()
        for sub, module in zip(subfigs, modules):
            axes = sub.subplots(rows, columns, squeeze=False).ravel()
            for h, ax in enumerate(axes):
                if h < len(module["values"]):
                    draw_heatmap(sub, ax, module, h)
                else:
                    ax.remove()
            trained = module.get("trained")
            hatched = trained and not all(all(row) for row in trained)
            sub.suptitle(module["name"] + (" (hatched: untrained offsets)" if hatched else ""), fontsize=9.5)
    else:
        heads = max(len(m["values"]) for m in modules)
        columns = 2 if heads + 2 <= 2 * theme.FEW_HEADS else 4
        per = theme.PANEL_SIZE[1] + 0.6 + theme.LEGEND_ROW * legend_rows(heads + 2, columns)
        fig = new_figure(7.5, per * len(modules))
        for ax, module in zip(fig.subplots(len(modules), 1, squeeze=False).ravel(), modules):
            draw_bias_line(ax, module, request_bias.get("train_length"), module.get("untrained_rows"))
    fig.suptitle(title, fontsize=10.5)
    return fig

