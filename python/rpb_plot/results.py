"""Sweep results: reading results.json files, the metrics their rows hold (METRICS), a row's mean and std per
evaluation length, and the rows and lengths a request's filters keep."""
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


def _attention_distance(row):
    attention = row.get("attention")
    if not isinstance(attention, list):
        return row.get("mean_attention_distance")
    return [[c.get("mean_distance_overall") if isinstance(c, dict) else None for c in seed]
            for seed in attention if isinstance(seed, list)]


@dataclass(frozen=True)
class Metric:
    """A value results.json rows hold per seed and length, drawn against length."""
    key: str  # the name in a request's "metrics"
    axis: str  # the y axis label
    log: bool  # a log y axis (when every value is positive)
    read: object  # row -> [[value or null per length] per seed], or {"mean": [...], "std": [...]}, or None
    aliases: tuple = ()
    optimum: str = None  # the row field drawn as the dashed optimum line


METRICS = (
    Metric("perplexity", "perplexity", True, lambda row: row.get("perplexity"), ("ppl",), "optimal_perplexity"),
    Metric("mean_attention_distance", "mean attention distance (positions)", True, _attention_distance,
           ("distance", "attention")),
    Metric("accuracy", "accuracy", False, lambda row: row.get("accuracy"), ("acc",)),
)


def metric_stats(row, metric, lengths):
    """[(mean, std) or None (n/a) per length] of `metric` in `row`, or None when the row lacks it."""
    data = metric.read(row)
    if isinstance(data, dict):
        means, stds = data.get("mean") or [], data.get("std") or []
        return [(means[j], stds[j] if j < len(stds) and finite(stds[j]) else 0.0)
                if j < len(means) and finite(means[j]) else None for j in range(lengths)]
    if not isinstance(data, list):
        return None
    seeds = [s for s in data if isinstance(s, list)]
    return [mean_std([s[j] if j < len(s) else None for s in seeds]) for j in range(lengths)]


def find_metric(name):
    for m in METRICS:
        if name == m.key or name in m.aliases:
            return m
    raise RequestError('unknown metric "%s" (known: %s)' % (name, ", ".join(m.key for m in METRICS)))


def metrics_named(names):
    """The Metrics a request's "metrics" names (each by its key or an alias), all of METRICS when it names none."""
    return [find_metric(m) for m in names] or list(METRICS)


@dataclass
class Results:
    """One results.json."""
    path: str
    name: str
    train_length: int
    multipliers: list
    seeds: list
    rows: list  # the rows as read (dicts)


RESULTS_FORMAT = "rpb-results-4"  # the results.json format read: rows carry their method's "scheme"


def read_results(path):
    """Reads a results.json of format RESULTS_FORMAT (an earlier one is refused: its rows lack their scheme);
    unknown fields are ignored."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise RequestError("cannot read sweep results %s: %s" % (path, e)) from None
    fmt = data.get("format") if isinstance(data, dict) else None
    require(isinstance(data, dict) and (fmt is None or str(fmt).startswith("rpb-results-")),
            '%s is not an rpb results.json (format "%s")' % (path, fmt))
    require(fmt == RESULTS_FORMAT, "%s: written by an older rpb (%s, rows without their scheme); rerun `rpb "
            "extrapolate CONFIG`: it reuses the finished runs and rewrites it" % (path, fmt or "no format"))
    require(finite(data.get("train_length")) and isinstance(data.get("multipliers"), list)
            and isinstance(data.get("rows"), list), "%s lacks train_length, multipliers or rows" % path)
    for i, row in enumerate(data["rows"]):
        require(isinstance(row, dict) and all(isinstance(row.get(k), str) for k in ("task", "method", "scheme")),
                "%s: row %d lacks a task, a method or a scheme" % (path, i))
    return Results(path, str(data.get("name", os.path.basename(os.path.dirname(os.path.abspath(path))))),
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


