"""The plot request: its format and output formats, and the checks of each kind's block (a RequestError names
the first field that is not as rpb_plot's docstring says)."""
from .errors import finite, require
from .styles import scheme_of

REQUEST_FORMAT = "rpb-plot-1"
FORMATS = ("pdf", "png", "svg")


def _check_ylim(ylim, where):
    require(ylim is None or (isinstance(ylim, list) and len(ylim) == 2 and all(finite(v) for v in ylim)
                             and ylim[0] < ylim[1]), '%s.ylim must be null or [lo, hi] with lo < hi' % where)


def _check_list(block, key, where, item=str):
    value = block.get(key, [])
    require(isinstance(value, list) and all(isinstance(v, item) for v in value),
            "%s.%s must be a list of %s" % (where, key, item.__name__ if isinstance(item, type) else "values"))


def check_sweep(block):
    require(isinstance(block.get("results"), list) and block["results"]
            and all(isinstance(p, str) for p in block["results"]), "sweep.results must list results.json paths")
    for key in ("tasks", "methods", "metrics"):
        _check_list(block, key, "sweep")
    _check_list(block, "lengths", "sweep", (int, str))
    require(isinstance(block.get("against", "length"), str), "sweep.against must be \"length\" or a setting key")
    _check_ylim(block.get("ylim"), "sweep")


def check_curves(block):
    runs = block.get("runs")
    require(isinstance(runs, list) and runs, "curves.runs must list runs")
    for i, run in enumerate(runs):
        require(isinstance(run, dict) and isinstance(run.get("label"), str)
                and isinstance(run.get("metrics_csv"), str), "curves.runs[%d] needs a label and a metrics_csv" % i)
        run.setdefault("scheme", scheme_of(run["label"]))
    require(block.get("x", "step") in ("step", "tokens"), 'curves.x must be "step" or "tokens"')
    _check_ylim(block.get("ylim"), "curves")


def _matrix(values, rows, columns):
    return (isinstance(values, list) and len(values) == rows
            and all(isinstance(r, list) and len(r) == columns and all(finite(v) for v in r) for r in values))


def check_bias(block):
    require(block.get("dims", 1) in (1, 2), "bias.dims must be 1 or 2")
    modules = block.get("modules")
    require(isinstance(modules, list) and modules, "bias.modules must list modules")
    for i, m in enumerate(modules):
        where = "bias.modules[%d]" % i
        require(isinstance(m, dict) and isinstance(m.get("values"), list) and m["values"], where + " needs values")
        m.setdefault("name", "module %d" % i)
        if block.get("dims", 1) == 2:
            require(isinstance(m.get("dy"), list) and isinstance(m.get("dx"), list) and m["dy"] and m["dx"],
                    where + " needs dy and dx")
            for h, head in enumerate(m["values"]):
                require(_matrix(head, len(m["dy"]), len(m["dx"])), "%s.values[%d] must be dy x dx numbers" % (where, h))
            t = m.get("trained")
            require(t is None or (len(t) == len(m["dy"]) and all(len(r) == len(m["dx"]) for r in t)),
                    where + ".trained must be dy x dx booleans")
        else:
            d = m.get("distances")
            require(isinstance(d, list) and d and all(finite(x) for x in d), where + " needs distances")
            require(_matrix(m["values"], len(m["values"]), len(d)), where + ".values must be [[per distance] per head]")
            require(m.get("trained") is None or len(m["trained"]) == len(d), where + ".trained must match distances")



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
                                              and o.get("format") in FORMATS for o in outputs),
            "outputs must be [{\"path\": ..., \"format\": one of %s}]" % ", ".join(FORMATS))
    CHECKS[request["kind"]](request[request["kind"]])
