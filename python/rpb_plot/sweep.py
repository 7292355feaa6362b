"""The sweep figure's panels: one per metric and task (per metric, task and length when drawn against a setting); a
method's line with its markers and its band of mean ± std over seeds, its n/a lengths named in its panel's title
(never a point), the optimal perplexity a dashed line. A metric with a "learned" key (passkey accuracy) is drawn
past the first length over the seeds that learned the task; a row where none did is named "not learned" there,
never a point. Against position (position_panels): the per-token loss at each position of a task's longest
evaluation, a line per method. sweep_figure.py lays them out with the figure's one legend."""
import math
from dataclasses import dataclass, field

from .axes import count_labels, linear_ticks, power_labels, tick_labels, wrap_note
from .errors import finite, require
from .results import Metric, length_indices, metric_stats, not_learned
from .styles import scheme_dims


@dataclass
class Series:
    """One method's line on one panel."""
    label: str  # the legend text before any n/a note (the row's method)
    scheme: str
    xs: list  # x of each point
    stats: list  # (mean, std) or None (n/a) per point
    names: list  # each point's name in an n/a note ("2x", "optim.lr=0.003")
    unlearned: list = field(default_factory=list)  # the names of points without a value because no seed learned
    seeds: int = 1  # the seeds its values are over (the row's seed lists)

    def na(self):
        return [n for n, s in zip(self.names, self.stats) if s is None and n not in self.unlearned]

    def note(self):
        """The note on the points not drawn: "n/a at 2x, 4x", "not learned at 2x, 4x (not drawn)" (both joined by
        "; "); "" when every point is drawn."""
        unlearned = [n for n, s in zip(self.names, self.stats) if s is None and n in self.unlearned]
        return "; ".join((["n/a at %s" % ", ".join(self.na())] if self.na() else []) + (
            ["not learned at %s (not drawn)" % ", ".join(unlearned)] if unlearned else []))


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

    def full_title(self, elsewhere=()):
        """The title with the note of each series with points not drawn ("t5: n/a at 8x"), a line each (wrapped),
        but those whose labels are in `elsewhere` (the figure's legend names them)."""
        notes = [wrap_note("%s: %s" % (s.label, s.note())) for s in self.series
                 if s.note() and s.label not in elsewhere]
        return "\n".join([self.title] + notes)

    def seeds(self):
        """The seed counts of its series."""
        return {s.seeds for s in self.series}


def _labels(pairs):
    """The legend label of each (results, row): what rpb sent as its label (Results.label_rows: as rpb's tables name
    it), else its method; with the sweep's name when two sweeps share its method, and its sliding-window stride when
    its method does not name it (a sweep whose config sets run.eval_stride)."""
    seen = {}
    for res, row in pairs:
        seen.setdefault((row["task"], row["method"]), set()).add(res.name)
    return [(row.get("shown") or row["method"])
            + (" (%s)" % res.name if len(seen[(row["task"], row["method"])]) > 1 else "")
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
                                 ["%dx" % res.multipliers[j] for j in keep if j in unlearned], _seeds(row, metric)))
        nothing = not any(s is not None for sr in series for s in sr.stats)
        if not series or (nothing and not empty):
            continue
        trains = {res.train_length for res, _ in mine}
        ticks = sorted(xs)
        names = dict.fromkeys(res.task_label(task) for res, _ in mine)
        trained = "/".join(map(str, sorted(trains)))
        title = "%s (trained at %s)" % (" / ".join(names), ("grid side " + trained) if _task_is_grid(mine, styles)
                                        else trained + " tokens")
        title += ": no %s at any length" % metric.key if nothing else ""
        grid = _task_is_grid(mine, styles)
        panels.append(Panel(title, metric, series, _optimum(mine, metric), ticks,
                            ["%d\n%dx" % (t, xs[t]) if len(trains) == 1 else str(t) for t in ticks],
                            "evaluation grid side (cells, log2)" if grid else "evaluation length (tokens, log2)",
                            True, 2, task))
    return panels


def _seeds(row, metric):
    """The seeds a row's values of `metric` are over: its seed lists (at least 1)."""
    return max(1, len(metric.values(row) or []))


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


# The x axis of a swept setting: a name with its unit ("learning rate (optim.lr)"); a key not listed is shown as
# written, with the unit its last word implies (SETTING_UNITS: "run.finetune_length" -> tokens).
SETTING_AXES = {"optim.lr": "learning rate (optim.lr)", "optim.weight_decay": "weight decay (optim.weight_decay)"}
SETTING_UNITS = (("length", "tokens"), ("stride", "tokens"), ("distance", "positions"), ("steps", "steps"),
                 ("batch", "sequences"))


def setting_label(key):
    """The x axis label of setting `key`: SETTING_AXES's, else the key with the unit its name implies."""
    unit = next((u for end, u in SETTING_UNITS if key.endswith(end)), None)
    return SETTING_AXES.get(key) or (key + (" (%s)" % unit if unit else ""))


def is_rate(key):
    """Whether setting `key` is a learning rate (its ticks written a×10^b: power_labels)."""
    return key == "lr" or key.endswith(".lr") or key.endswith("_lr")


def _setting_axis(values, key):
    """(x of each value, ticks, labels, log): numbers on a log axis when positive over a factor of 8 or more,
    else linear, labelled in one form (learning rates a×10^b, whole numbers as integers, else tick_labels);
    anything else categorical in order of appearance."""
    if all(finite(v) for v in values):
        ticks = sorted(set(values))
        log = ticks[0] > 0 and ticks[-1] / ticks[0] >= 8
        whole = all(float(t).is_integer() for t in ticks)
        labels = (power_labels if is_rate(key) else count_labels if whole else tick_labels)(ticks)
        return list(values), ticks, labels, log
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
        xs, ticks, labels, log = _setting_axis([v for _, _, v in mine], key)
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
                    g = groups.setdefault(label, Series(label, row["scheme"], [], [], [], [], _seeds(row, metric)))
                    g.xs.append(x), g.stats.append(stats[at[id(res)]]), g.names.append("%s=%s" % (key, value))
                    if at[id(res)] in not_learned(row, metric, len(res.multipliers)):
                        g.unlearned.append(g.names[-1])
            if any(s is not None for g in groups.values() for s in g.stats):
                times = {res.multipliers[at[id(res)]] for res, _, _ in mine if id(res) in at}
                title = "%s, length %d%s" % (task, length, " (%dx)" % times.pop() if len(times) == 1 else "")
                panels.append(Panel(title, metric, [_sorted(g) for g in groups.values()],
                                    _optimum([(r, w) for r, w, _ in mine], metric),
                                    ticks, labels, setting_label(key), log, 10, (task, length)))
    return panels


def _sorted(series):
    order = sorted(range(len(series.xs)), key=lambda i: series.xs[i])
    return Series(series.label, series.scheme, *([getattr(series, f)[i] for i in order]
                                                  for f in ("xs", "stats", "names")), series.unlearned, series.seeds)


POSITION_LOSS = Metric("loss", "per-token loss", "nats", False, "position_loss", "", "")  # "optimal loss": the entropy rate


def _position_series(row, j, label):
    """(Series of row's binned per-token loss at length index j: a point per bin at its centre, None where no target
    was scored; no band: the seeds' targets are pooled), or None when the row has none there."""
    entries = row.get("position_loss")
    entry = entries[j] if isinstance(entries, list) and j < len(entries) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("loss"), list) or not finite(entry.get("bin")):
        return None
    width = int(entry["bin"])
    xs = [i * width + (width - 1) / 2 for i in range(len(entry["loss"]))]
    stats = [(v, 0.0) if finite(v) else None for v in entry["loss"]]
    return Series(label, row["scheme"], xs, stats, [], seeds=len(row.get("perplexity") or [None]))


def position_panels(pairs, lengths):
    """One Panel per task: the per-token loss against the position in the sequence (results.json rows'
    "position_loss", binned) at the longest length of `lengths` (all when empty) where some row has it, a line per
    method, the task's entropy rate as the optimum line where it is known."""
    panels = []
    for task in dict.fromkeys(row["task"] for _, row in pairs):
        mine = [(res, row) for res, row in pairs if row["task"] == task]
        res = mine[0][0]
        measured = [j for j in length_indices(res, lengths)
                    if any(_position_series(row, j, "") for r, row in mine if r is res)]
        if not measured:
            continue
        j = measured[-1]
        series = [s for (r, row), label in zip(mine, _labels(mine)) if r is res
                  for s in [_position_series(row, j, label)] if s]
        last = max(x for s in series for x in s.xs)
        ticks = linear_ticks(0, max(last, 1), integer=True)
        optimum = _optimum(mine, Metric("", "", "", False, "", "", "optimal_perplexity"))
        title = "%s at %d tokens (%dx; trained at %d)" % (res.task_label(task), res.multipliers[j] * res.train_length,
                                                           res.multipliers[j], res.train_length)
        panels.append(Panel(title, POSITION_LOSS, series, math.log(optimum) if optimum else None, ticks,
                            count_labels(ticks), "position in the sequence", False, 10, task))
    return panels
