"""The plot request: its format and output formats, and the checks of each kind's block (a RequestError names
the first field that is not as rpb_plot's docstring says)."""
import json
import math

from .errors import finite, require

REQUEST_FORMAT = "rpb-plot-1"
FORMATS = ("pdf", "png", "svg")


def _check_ylim(ylim, where):
    """null, or [lo, hi]: finite, lo < hi, hi - lo in [1e-300, 1e300] (an axis's ticks and padding stay finite)."""
    require(ylim is None or (isinstance(ylim, list) and len(ylim) == 2 and all(finite(v) for v in ylim)
                             and ylim[0] < ylim[1] and 1e-300 <= ylim[1] - ylim[0] <= 1e300),
            '%s.ylim must be null or [lo, hi] with lo < hi and hi - lo between 1e-300 and 1e300' % where)


def _check_list(block, key, where, item=str):
    value = block.get(key, [])
    require(isinstance(value, list) and all(isinstance(v, item) for v in value),
            "%s.%s must be a list of %s" % (where, key, item.__name__ if isinstance(item, type) else "values"))


def _bound(b):
    """Whether `b` is a metric's bound: a finite number, or None for none."""
    return b is None or (isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b))


def _scale(s):
    """Whether `s` is a metric's scale: a finite positive number."""
    return isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s) and s > 0


def check_sweep(block):
    require(isinstance(block.get("results"), list) and block["results"]
            and all(isinstance(p, str) for p in block["results"]), "sweep.results must list results.json paths")
    for key in ("tasks", "methods", "metrics"):
        _check_list(block, key, "sweep")
    _check_list(block, "lengths", "sweep", (int, str))
    require(isinstance(block.get("against", "length"), str), "sweep.against must be \"length\" or a setting key")
    known = block.get("known_metrics")
    require(isinstance(known, list) and known and all(
        isinstance(m, dict) and all(isinstance(m.get(k), str) for k in ("key", "label", "unit", "field", "entry",
                                                                       "optimum"))
        and isinstance(m.get("log"), bool) and isinstance(m.get("learned", ""), str)
        and all(_bound(m.get(b)) for b in ("lower", "upper")) and _scale(m.get("scale", 1.0)) for m in known),
        "sweep.known_metrics must list the metrics results.json rows hold, as rpb sends them ({\"key\", \"label\", "
        "\"unit\", \"log\", \"field\", \"entry\", \"optimum\"[, \"learned\", \"lower\", \"upper\", \"scale\"]}), "
        "found %s"
        % json.dumps(known)[:80])
    _check_ylim(block.get("ylim"), "sweep")


def check_curves(block):
    runs = block.get("runs")
    require(isinstance(runs, list) and runs, "curves.runs must list runs")
    for i, run in enumerate(runs):
        require(isinstance(run, dict) and isinstance(run.get("label"), str)
                and isinstance(run.get("metrics_csv"), str), "curves.runs[%d] needs a label and a metrics_csv" % i)
        require(isinstance(run.get("scheme"), str) and run["scheme"],
                "curves.runs[%d].scheme must name the run's position scheme (its config's position.scheme), found %s"
                % (i, json.dumps(run.get("scheme"))))
        require(isinstance(run.setdefault("method", run["label"]), str) and run["method"],
                "curves.runs[%d].method must be the run's method as results.json names it, found %s"
                % (i, json.dumps(run.get("method"))))
    require(block.get("x", "step") in ("step", "tokens"), 'curves.x must be "step" or "tokens"')
    _check_ylim(block.get("ylim"), "curves")


def _matrix(values, rows, columns):
    return (isinstance(values, list) and len(values) == rows
            and all(isinstance(r, list) and len(r) == columns and all(finite(v) for v in r) for r in values))


def _offsets(values, key):
    """Raises unless `values` are integers, evenly spaced and increasing (a heatmap's cells), naming `key`."""
    require(isinstance(values, list) and values and all(isinstance(v, int) and not isinstance(v, bool)
                                                        for v in values),
            "%s must list integer offsets, found %s" % (key, json.dumps(values)[:80]))
    steps = {b - a for a, b in zip(values, values[1:])}
    require(len(steps) <= 1 and all(s > 0 for s in steps),
            "%s must be evenly spaced and increasing, found %s" % (key, json.dumps(values)[:80]))


def _flags(value, shape, key):
    """Raises unless `value` is null or booleans of `shape` ([n] or [rows, columns]), naming `key`."""
    ok = value is None or (isinstance(value, list) and len(value) == shape[0] and all(
        (isinstance(v, bool) if len(shape) == 1 else
         isinstance(v, list) and len(v) == shape[1] and all(isinstance(x, bool) for x in v)) for v in value))
    require(ok, "%s must be null or %s booleans, found %s"
            % (key, " x ".join(map(str, shape)), json.dumps(value)[:80]))


def check_bias(block):
    require(block.get("dims", 1) in (1, 2), "bias.dims must be 1 or 2")
    modules = block.get("modules")
    require(isinstance(modules, list) and modules, "bias.modules must list modules")
    for i, m in enumerate(modules):
        where = "bias.modules[%d]" % i
        require(isinstance(m, dict) and isinstance(m.get("values"), list) and m["values"], where + " needs values")
        m.setdefault("name", "module %d" % i)
        if block.get("dims", 1) == 2:
            _offsets(m.get("dy"), where + ".dy")
            _offsets(m.get("dx"), where + ".dx")
            for h, head in enumerate(m["values"]):
                require(_matrix(head, len(m["dy"]), len(m["dx"])), "%s.values[%d] must be dy x dx numbers" % (where, h))
            _flags(m.get("trained"), (len(m["dy"]), len(m["dx"])), where + ".trained")
        else:
            d = m.get("distances")
            require(isinstance(d, list) and d and all(finite(x) for x in d), where + " needs distances")
            require(_matrix(m["values"], len(m["values"]), len(d)), where + ".values must be [[per distance] per head]")
            _flags(m.get("trained"), (len(d),), where + ".trained")


def check_styles(styles):
    """Raises unless each listed scheme's colour is "#rrggbb" and its marker a string (names the scheme)."""
    schemes = (styles or {}).get("schemes", [])
    require(isinstance(schemes, list) and all(isinstance(e, dict) for e in schemes),
            "styles.schemes must list objects")
    for e in schemes:
        color = e.get("color")
        require(color is None or (isinstance(color, str) and len(color) == 7 and color[0] == "#"
                                  and all(c in "0123456789abcdefABCDEF" for c in color[1:])),
                'styles.schemes "%s": color must be "#rrggbb", found %s' % (e.get("name"), json.dumps(color)))
        require(e.get("marker") is None or isinstance(e["marker"], str),
                'styles.schemes "%s": marker must be a string, found %s' % (e.get("name"), json.dumps(e.get("marker"))))


CHECKS = {"sweep": check_sweep, "curves": check_curves, "bias": check_bias}  # the kinds, in the order named


def check_request(request):
    """Raises RequestError naming the first field of `request` that is not as the package docstring says."""
    require(isinstance(request, dict), "the request must be a JSON object")
    require(request.get("format") == REQUEST_FORMAT,
            'request format "%s", rpb_plot reads "%s"' % (request.get("format"), REQUEST_FORMAT))
    require(request.get("kind") in CHECKS, "request kind must be one of %s" % ", ".join(CHECKS))
    require(isinstance(request.get(request["kind"]), dict), 'the request has no "%s" block' % request["kind"])
    outputs = request.get("outputs", [])
    require(isinstance(outputs, list) and all(isinstance(o, dict) and isinstance(o.get("path"), str)
                                              and o.get("format") in FORMATS
                                              and isinstance(o.get("direct", False), bool)
                                              and isinstance(o.get("name", ""), str) for o in outputs),
            "outputs must be [{\"path\": ..., \"format\": one of %s, \"direct\": a bool (optional), "
            "\"name\": ... (optional)}]" % ", ".join(FORMATS))
    check_styles(request.get("styles"))
    CHECKS[request["kind"]](request[request["kind"]])
