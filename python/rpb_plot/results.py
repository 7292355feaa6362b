"""Sweep results: reading results.json files, the metrics their rows hold (Metric, from the request's
"known_metrics"), a row's mean and std per evaluation length, and the rows and lengths a request's filters keep."""
import json
import math
import os
from dataclasses import dataclass

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

    @property
    def axis(self):
        return "%s (%s)" % (self.label, self.unit) if self.unit else self.label

    def values(self, row):
        """[[value or None per length] per seed] of the row, or None when the row lacks the field."""
        seeds = row.get(self.field)
        if not isinstance(seeds, list):
            return None
        return [[(c.get(self.entry) if isinstance(c, dict) else None) if self.entry else c for c in seed]
                for seed in seeds if isinstance(seed, list)]


def metric_stats(row, metric, lengths):
    """[(mean, std) or None (n/a) per length] of `metric` in `row`, or None when the row lacks it."""
    seeds = metric.values(row)
    if seeds is None:
        return None
    return [mean_std([s[j] if j < len(s) else None for s in seeds]) for j in range(lengths)]


def known_metrics(entries):
    """The Metrics of a sweep block's "known_metrics" (checked by request.check_sweep)."""
    return [Metric(**{k: e[k] for k in ("key", "label", "unit", "log", "field", "entry", "optimum")})
            for e in entries]


def metrics_named(names, known):
    """The Metrics of `known` a request's "metrics" names, all of `known` when it names none."""
    keys = {m.key: m for m in known}
    unknown = [n for n in names if n not in keys]
    require(not unknown, 'unknown metric "%s" (known: %s)' % (", ".join(unknown), ", ".join(keys)))
    return [keys[n] for n in names] or list(known)


@dataclass
class Results:
    """One results.json."""
    name: str
    train_length: int
    multipliers: list
    seeds: list
    rows: list  # the rows as read (dicts)


RESULTS_FORMAT = "rpb-results-5"  # the results.json format written: rows carry their "scheme" and "protocol"
RESULTS_FORMATS = (RESULTS_FORMAT, "rpb-results-4")  # those read (rpb-results-4: every row nonoverlapping)


def read_results(path):
    """Reads a results.json of a format of RESULTS_FORMATS (an earlier one is refused: its rows lack their scheme);
    unknown fields are ignored. A row of rpb-results-4 was scored nonoverlapping (its "eval_stride" reads as None)."""
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


