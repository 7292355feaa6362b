"""Sweep results: reading results.json files, the metrics their rows hold (Metric, from the request's
"known_metrics"), a row's mean and std per evaluation length (past the first length over the seeds that learned the
task, for a metric that names its "learned" key), and the rows and lengths a request's filters keep."""
import json
import math
import os
from dataclasses import dataclass, field

from .errors import RequestError, finite, require


def mean_std(values):
    """(mean, sample std) of the finite numbers in `values` (std 0 for one), None when there are none; as
    train/sweep/sweep.cpp's mean_std."""
    xs = [v for v in values if finite(v)]
    if not xs:
        return None
    m = sum(xs) / len(xs)
    return m, (math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0)


@dataclass(frozen=True)
class Metric:
    """A value results.json rows hold per seed and length, drawn against length: an entry of the sweep block's
    "known_metrics" (rpb's one list of them, train/sweep/results_json.h sweep_metrics)."""
    key: str  # the name in a request's "metrics" ("perplexity")
    label: str  # the y axis label, before its unit
    unit: str  # "" for none
    log: bool  # a log y axis (when every value is positive)
    field: str  # the row's key holding [[cell per length] per seed]
    entry: str  # "": a cell is the value; else the key of the value in a cell's object
    optimum: str  # the row's key of the value drawn as the optimum line, "" for none
    learned: str = ""  # the row's key of [true/false per seed]: past the first length only the seeds marked true
    #                    count (passkey accuracy: "learned"); "" for every seed
    lower: float = None  # the values the metric can take as stored (perplexity >= 1, accuracy in [0, 1]): a band
    upper: float = None  # of mean ± std is drawn within them; None: unbounded
    scale: float = 1.0  # drawn as the stored value x scale, in `unit` (accuracy: stored 0-1, drawn in % with 100)
    on_request: bool = False  # drawn only when a request's "metrics" names it (passkey accuracy over every seed)

    def bounds(self):
        """(lower, upper) as drawn (x scale; None: unbounded)."""
        return tuple(None if b is None else b * self.scale for b in (self.lower, self.upper))

    def clamp(self, value):
        """`value` (as drawn) within the bounds."""
        lower, upper = self.bounds()
        value = value if lower is None else max(value, lower)
        return value if upper is None else min(value, upper)

    @property
    def axis(self):
        return "%s (%s)" % (self.label, self.unit) if self.unit else self.label

    def values(self, row):
        """[[value as drawn (x scale) or None per length] per seed] of the row, or None when the row lacks the
        field."""
        seeds = row.get(self.field)
        if not isinstance(seeds, list):
            return None
        cells = [[(c.get(self.entry) if isinstance(c, dict) else None) if self.entry else c for c in seed]
                 for seed in seeds if isinstance(seed, list)]
        return [[v * self.scale if finite(v) else v for v in seed] for seed in cells]


def learned_seeds(row, metric):
    """[bool per seed]: the seeds of `row` whose values of `metric` count past the first length (its row[learned],
    rpb's "learned": the seed reached the accuracy that counts as learning the task at the train length); None when
    every seed counts (a metric without a "learned" key, or a row without the list)."""
    flags = row.get(metric.learned) if metric.learned else None
    return [f is True for f in flags] if isinstance(flags, list) else None


def metric_stats(row, metric, lengths):
    """[(mean, std) or None (n/a) per length] of `metric` in `row`, or None when the row lacks it. At the first
    length over every seed, past it over learned_seeds only (as rpb's tables: a seed that never learned the task does
    not read as failing to extrapolate)."""
    seeds = metric.values(row)
    if seeds is None:
        return None
    learned = learned_seeds(row, metric)
    return [mean_std([v[j] if j < len(v) else None for s, v in enumerate(seeds)
                      if j == 0 or learned is None or (s < len(learned) and learned[s])])
            for j in range(lengths)]


def not_learned(row, metric, lengths):
    """The length indices past the first where `metric` has no value because no seed of `row` learned the task
    (learned_seeds all false): drawn as "not learned", never as n/a."""
    learned = learned_seeds(row, metric)
    return set(range(1, lengths)) if learned is not None and not any(learned) else set()


def known_metrics(entries):
    """The Metrics of a sweep block's "known_metrics" (checked by request.check_sweep)."""
    return [Metric(**{k: e[k] for k in ("key", "label", "unit", "log", "field", "entry", "optimum")},
                   learned=e.get("learned", ""), lower=e.get("lower"), upper=e.get("upper"), scale=e.get("scale", 1.0),
                   on_request=bool(e.get("on_request", False)))
            for e in entries]


def metrics_named(names, known):
    """The Metrics of `known` a request's "metrics" names; when it names none, all of `known` but those drawn only on
    request."""
    keys = {m.key: m for m in known}
    unknown = [n for n in names if n not in keys]
    require(not unknown, 'unknown metric "%s" (known: %s)' % (", ".join(unknown), ", ".join(keys)))
    return [keys[n] for n in names] or [m for m in known if not m.on_request]


@dataclass
class Results:
    """One results.json."""
    name: str
    train_length: int
    multipliers: list
    seeds: list
    rows: list  # the rows as read (dicts)
    task_labels: dict = field(default_factory=dict)  # task -> its name in figures, as the request's labels give it

    def task_label(self, task):
        """What figures call `task`: the name rpb sent (label_rows), else the task's own."""
        return self.task_labels.get(task, task)

    def label_rows(self, labels):
        """Takes the labels rpb sent for this file (a request's sweep "labels" entry: {"rows": [...], "tasks":
        {...}}, made by rpb as its tables name the rows and tasks, train/sweep/labels.h): each row's legend text
        ("shown") and the task names. Labels are rpb's alone: without them (None) a row is shown as its method and a
        task as its name."""
        if not isinstance(labels, dict):
            return
        rows, tasks = labels.get("rows"), labels.get("tasks")
        if isinstance(rows, list) and len(rows) == len(self.rows) and all(isinstance(x, str) for x in rows):
            for row, label in zip(self.rows, rows):
                row["shown"] = label
        if isinstance(tasks, dict):
            self.task_labels.update({k: v for k, v in tasks.items() if isinstance(v, str)})


RESULTS_FORMAT = "rpb-results-7"  # the results.json format written: rows carry their "scheme", "protocol", "bytes",
#                                   "bits_per_byte", "accuracy" and "learned" (null in a row whose task has none), and
#                                   the sweep its "task_labels"
RESULTS_FORMATS = (RESULTS_FORMAT, "rpb-results-6", "rpb-results-5", "rpb-results-4")  # those read (rpb-results-6:
#                                   without "task_labels"; -5: rows without bits per byte or accuracy; rpb-results-4:
#                                   every row nonoverlapping, too)


def read_results(path):
    """Reads a results.json of a format of RESULTS_FORMATS (an earlier one is refused: its rows lack their scheme);
    unknown fields are ignored. A row of rpb-results-4 was scored nonoverlapping (its "eval_stride" reads as None);
    a row of rpb-results-5 or -4 has no "bits_per_byte" or "accuracy" (the metrics are not drawn for it)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise RequestError("cannot read sweep results %s: %s" % (path, e)) from None
    fmt = data.get("format") if isinstance(data, dict) else None
    require(isinstance(data, dict) and (fmt is None or str(fmt).startswith("rpb-results-")),
            '%s is not an rpb results.json (format "%s")' % (path, fmt))
    require(fmt in RESULTS_FORMATS, "%s: written by an older rpb (%s, rows without their scheme); rerun `rpb "
            "extrapolate CONFIG`: it reuses the finished runs and rewrites it" % (path, fmt or "no format"))
    require(finite(data.get("train_length")) and isinstance(data.get("multipliers"), list)
            and isinstance(data.get("rows"), list), "%s lacks train_length, multipliers or rows" % path)
    for i, row in enumerate(data["rows"]):
        require(isinstance(row, dict) and all(isinstance(row.get(k), str) for k in ("task", "method", "scheme")),
                "%s: row %d lacks a task, a method or a scheme" % (path, i))
    return Results(str(data.get("name", os.path.basename(os.path.dirname(os.path.abspath(path))))),
                   int(data["train_length"]), [int(m) for m in data["multipliers"]], data.get("seeds") or [],
                   data["rows"])


def results_path(path):
    """A results.json, or a sweep folder's results.json."""
    return os.path.join(path, "results.json") if os.path.isdir(path) else path


def length_indices(res, lengths):
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


