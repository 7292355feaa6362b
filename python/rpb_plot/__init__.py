"""rpb's figures, drawn with matplotlib (Agg): sweep results, training curves and position-bias pictures.

As a script (what `rpb plot`, `rpb extrapolate` and `rpb inspect --plot` run; __main__.py):

    /usr/bin/python3 python/rpb_plot REQUEST.json        (- reads the request from standard input, as rpb passes it)

exit 0 when every output is written, 2 on a bad request (the reason on stderr), 3 when matplotlib is missing,
1 on anything else. As a package (python/ on sys.path):

    import rpb_plot
    rpb_plot.theme.DPI = 300        # restyle: any constant of theme.py, set before drawing
    rpb_plot.plot_sweep(["checkpoints/extrapolation_quick"], "results.pdf", tasks=["markov"])
    rpb_plot.plot_sweep(["grid/results.json"], "lr.png", against="optim.lr")
    rpb_plot.plot_curves(["checkpoints/t5", "checkpoints/alibi"], "curves.pdf", x="tokens")
    fig = rpb_plot.draw(request)    # any request as a dict; returns the matplotlib Figure (nothing written)

plot_sweep and plot_curves draw what `rpb plot PATH... [flags]` draws, from the request it builds (rpb_request runs
`rpb plot ... --request`: one rule for labels, methods and filters; lengths in tokens), so they need a built rpb
(build/rpb of this source tree, or $RPB). The names to import: draw, render, save, rpb_request,
plot_sweep, plot_curves; RequestError, MatplotlibMissing and the EXIT_* codes; the building blocks
listed in __all__ (ticks, styles, panels) for figures of one's own; theme (the constants).

The request (JSON; only the block named by "kind" is read; unknown fields are ignored):

    {"format": "rpb-plot-1", "kind": "sweep" | "curves" | "bias",
     "outputs": [{"path": "/abs/out.pdf", "format": "pdf" | "png" | "svg",
                  "direct": false, "name": "/abs/out.pdf"}],   # the last two optional: see below
     "styles": {"schemes": [{"name": "t5", "dims": [1], ...}, ...]},  # rpb schemes --json (a colour and marker optional)
     "sweep":  {"results": ["/abs/results.json"], "tasks": [], "methods": [], "lengths": [], "metrics": [],
                "ylim": null | [lo, hi], "against": "length" | "<setting key>",          # [] = all
                "known_metrics": [{"key": "perplexity", "label": "perplexity", "unit": "", "log": true,
                                   "field": "perplexity", "entry": "", "optimum": "optimal_perplexity",
                                   "learned": "", "lower": 1.0, "upper": null, "scale": 1.0}, ...]},  # last 4 optional
     "curves": {"runs": [{"label": "t5/seed0", "method": "t5", "scheme": "t5", "metrics_csv": "/abs/run/metrics.csv"}],
                "x": "step" | "tokens", "ylim": null | [lo, hi]},
     "bias":   {"dims": 1, "scheme": "t5", "title": "...", "train_length": 64,
                "modules": [{"name": "blocks.0.attn.position", "distances": [0, 1, ...],
                             "values": [[per distance] per head], "trained": [bool per distance],
                             "untrained_rows": "nearest" | null, "head_notes": ["slope 0.5", ...] (optional),
                             "query": the position of the one query whose keys the distances reach (optional)}]}
               2-D modules: {"name", "dy": [...], "dx": [...], "values": [[[per dx] per dy] per head],
                             "trained": [[per dx] per dy]}

results.json files must be of format "rpb-results-7", "rpb-results-6", "rpb-results-5" or "rpb-results-4"
(RESULTS_FORMATS: each row names its method's "scheme"; -5 adds each row's "protocol" and "eval_stride", and a row scored by sliding windows
whose method does not name its stride has it in its legend label; -6 adds "bytes", "bits_per_byte", "accuracy",
"depth_accuracy", "learned" and their stats, null in a row whose task has none; -7 adds the sweep's "task_labels"; an earlier one is refused: rerun
`rpb extrapolate CONFIG`, which reuses the finished runs and rewrites it). A curves
run's "scheme" is its config's position.scheme, its "method" (default: its label) the method whose colour it has (a
sweep's runs of one method share it). Nothing parses a label to find its scheme.
Outputs are written into a temp file ".<name>.tmp.<pid>" in their folder and renamed over them (the temp files of
writes that were killed, their pid no live process, are removed first); with "direct", "path" is itself the temp file,
created here and renamed by the caller (rpb's). Labels are drawn as the text they are (no mathtext, no TeX: a `$` is a
dollar sign). An output that exists as anything but a regular file, or is an input of the request (its results.json or
metrics.csv files), is refused; a write that fails (a full disk) raises WriteError naming "name" (default "path").

Sweep metrics: "known_metrics" is rpb's one list of them (train/sweep/results_json.h sweep_metrics): a metric's
values are row[field] ([[cell per length] per seed]; a cell's [entry] when entry is set), drawn x "scale" in "unit"
(accuracy: stored 0-1, drawn in %); a metric no selected row holds is not drawn (a row whose field is null lacks it).
A metric with "learned" (passkey accuracy: row["learned"], true per seed that reached the accuracy counting as
learning the task at the train length) is drawn past the first length over those seeds only; a row where none did is
named "not learned at 2x, ... (not drawn)". Sweep filters: "lengths" holds evaluation lengths in tokens (64) or
multipliers as text ("2x"); "metrics" holds keys of "known_metrics". Distances d, dy and dx are query - key.

The figures a paper can take as they are (sweep and curves alike):
- One figure, a grid of panels with ONE legend under them all (never a legend per panel): a sweep's metrics by rows
  and tasks by columns (per task and length against a setting); a single row or column is wrapped into rows of at
  most theme.GRID_COLUMNS (four panels 2 x 2, never one tall column). `rpb plot --metric KEY` draws one metric.
- The legend's title says what a line and its band are: "mean ± std over 3 seeds (band)" ("1-3 seeds" when files
  differ), "1 seed: no band", and for passkey accuracy that past the train length it is over the seeds that learned.
- Units on every axis: x "evaluation length (tokens, log2)", "evaluation grid side (cells, log2)", a setting's
  name and unit ("learning rate (optim.lr)"), "training step", "tokens seen (millions)"; y the metric's label and
  unit ("exact-match accuracy (%)", "loss (bits per byte)", "attention entropy (nats)", "loss (nats per token)").
- One tick form per axis kind: counts (steps, lengths, grid sides) plain integers (count_labels); learning rates
  a×10^b (power_labels: 3×10⁻³, 2.5×10⁻³); other values plain decimals, or a×10^b for the whole axis when a tick is
  outside 10⁻³ .. 10⁵ (tick_labels: never 1e0 beside 1.001).
- Each line a colour (its scheme's, theme.SCHEME_STYLES, a variant's a shade of it by its label's digest: the same in
  every figure) and a marker and a dash of its own, the i-th line of a figure theme.LINE_MARKERS[i] and a dash of
  theme.LINE_DASHES (line_look), so lines are told apart in greyscale.
- Flat data (spanning under theme.FLAT_FRACTION of its value: a perfect run's perplexity 1.000 .. 1.001) is drawn
  on a linear axis theme.FLAT_SPAN of its value wide within the metric's bounds (flat_range); a metric with both
  bounds (accuracy) spans them, 0-100%.
A method's line has a marker at every value, a band of mean ± std over seeds (within a known metric's "lower" and
"upper", null for none), and its n/a lengths named, never a point: in the legend ("learned (n/a at 2x, 4x)") when the
same in every panel, else under its panel's title ("t5: n/a at 8x"); the optimal perplexity is a dashed line with its
own legend entry; when no row has any value, a panel per task names every method as n/a. Against a setting, a line per
scheme and other settings (row["settings"]), a panel per task and evaluation length in tokens.
Ticks: nice_ticks (inside the data's range). Edit the constants in theme.py (or set rpb_plot.theme.DPI = 300 and the
like before drawing) to restyle every figure; a metric is added in rpb's list (train/sweep/results_json.cpp).

One concern per file: theme.py (the constants), errors.py (errors, exit codes), backend.py (matplotlib, Agg),
request.py (the request's checks), styles.py (colours, markers, dashes), axes.py (ticks, limits, legends,
figures), results.py (results.json, Metric), sweep.py (the sweep's panels), sweep_figure.py (the sweep figure),
curves.py and bias.py (the other figures), api.py (draw, save, render, rpb_request, plot_sweep, plot_curves),
__main__.py (the script).
"""
from . import theme
from .api import KINDS, draw, input_paths, plot_curves, plot_sweep, render, rpb_request, save
from .axes import (count_labels, figure_legend, flat_range, is_flat, legend_below, legend_rows, linear_ticks,
                   new_figure, nice_ticks, padded, power_labels, set_axis, tick_labels)
from .bias import draw_bias, draw_bias_line, draw_heatmap, symlog_ticks
from .curves import curve_panels, draw_curve_panel, draw_curves, read_metrics_csv
from .errors import (EXIT_BAD_REQUEST, EXIT_ERROR, EXIT_NO_MATPLOTLIB, MatplotlibMissing, RequestError, WriteError,
                     require)
from .request import FORMATS, REQUEST_FORMAT, check_bias, check_curves, check_request, check_sweep
from .results import (RESULTS_FORMAT, RESULTS_FORMATS, Metric, Results, known_metrics, learned_seeds, mean_std,
                      metric_stats, metrics_named, not_learned, read_results, results_path, select_rows)
from .styles import Style, base_style, figure_styles, line_look, method_color, rpb_binary, scheme_dims, shade
from .sweep import Panel, Series, length_panels, setting_label, setting_of, setting_panels
from .sweep_figure import draw_panel, draw_series, draw_sweep, layout, legend_handles, seeds_note, sweep_panels

__all__ = [
    "draw", "render", "save", "input_paths", "rpb_request", "plot_sweep", "plot_curves",
    "rpb_binary",
    "RequestError", "MatplotlibMissing", "WriteError", "require", "EXIT_ERROR", "EXIT_BAD_REQUEST", "EXIT_NO_MATPLOTLIB",
    "REQUEST_FORMAT", "FORMATS", "KINDS", "check_request", "check_sweep", "check_curves", "check_bias",
    "Style", "base_style", "shade", "method_color", "line_look", "figure_styles", "scheme_dims",
    "linear_ticks", "nice_ticks", "tick_labels", "count_labels", "power_labels", "is_flat", "flat_range", "padded",
    "set_axis", "new_figure", "legend_below", "legend_rows", "figure_legend",
    "RESULTS_FORMAT", "RESULTS_FORMATS", "Metric", "Results", "mean_std", "metric_stats",
    "known_metrics", "metrics_named", "learned_seeds", "not_learned",
    "read_results", "results_path", "select_rows", "Series", "Panel", "length_panels", "setting_of", "setting_panels",
    "setting_label", "draw_series", "draw_panel", "sweep_panels", "layout", "seeds_note", "legend_handles",
    "draw_sweep",
    "read_metrics_csv", "curve_panels", "draw_curve_panel", "draw_curves",
    "symlog_ticks", "draw_bias_line", "draw_heatmap", "draw_bias", "theme",
]
