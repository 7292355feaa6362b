"""python/rpb_plot/: every kind of figure read back through matplotlib's objects (the Figure the package
returns): each method label's colour (the registry's for a scheme, a derived shade for a variant, the same in every
figure), tick labels inside the data's range on every axis, nothing drawn at an n/a point inside the axes (n/a named
in the legend or the panel's title), no text outside the figure or over another axes' labels; the figure rules a
paper needs (PaperRulesTest: one legend per figure under a grid, the seeds and the band written on it, units on every
axis, one tick form per axis kind, accuracy in %, a marker and a dash of its own per line, flat data on a sensible
axis); and the script's exit codes and output formats.

    /usr/bin/python3 tests/python/test_rpb_plot.py

Fixtures are hand-written: tests/data/plot/ (results.json files, two runs' metrics.csv) and the bias data below.
ctest runs it (CMakeLists.txt, test python.rpb_plot); exits 77 (ctest: skipped) when matplotlib is missing.
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(SOURCE, "tests", "data", "plot")
sys.path.insert(0, os.path.join(SOURCE, "python"))

try:
    import matplotlib  # noqa: F401
    from matplotlib.colors import to_hex
    from matplotlib.text import Text
except ImportError:
    print("SKIPPED: matplotlib is missing (apt-get install python3-matplotlib)")
    sys.exit(77)

import rpb_plot  # noqa: E402

# The registry's styles as `rpb schemes --json` (and the C++'s requests) give them: a few schemes, the fields read.
STYLES = {"schemes": [
    {"name": "learned", "dims": [1], "color": "#8c564b", "marker": "s"},
    {"name": "t5", "dims": [1], "color": "#1f77b4", "marker": "o"},
    {"name": "alibi", "dims": [1], "color": "#d62728", "marker": "^"},
    {"name": "swin", "dims": [2], "color": "#2ca02c", "marker": "D"},
    {"name": "learned2d", "dims": [2], "color": "#9467bd", "marker": "v"},
    {"name": "alibi2d", "dims": [2], "color": "#ff7f0e", "marker": "P"},
    {"name": "none", "dims": [1, 2], "color": "#7f7f7f", "marker": "X"},
]}
BASE = {s["name"]: (s["color"], s["marker"]) for s in STYLES["schemes"]}
# The scheme of each method of tests/data/plot/results.json (its rows' "scheme").
SCHEME = {"learned": "learned", "t5": "t5", "t5@untrained=nearest": "t5", "alibi": "alibi"}
# The metrics rows hold, as rpb's requests send them (its one list, train/sweep/results_json.h sweep_metrics).
KNOWN_METRICS = rpb_plot.rpb_request([os.path.join(DATA, "results_grid.json")])["sweep"]["known_metrics"]


def sweep_request(results, **sweep):
    block = {"results": [os.path.join(DATA, r) for r in results], "tasks": [], "methods": [], "lengths": [],
             "metrics": [], "ylim": None, "against": "length", "known_metrics": KNOWN_METRICS}
    block.update(sweep)
    return {"format": "rpb-plot-1", "kind": "sweep", "outputs": [], "styles": STYLES, "sweep": block}


def bias_1d():
    distances = list(range(0, 41))
    values = [[-0.1 * math.log1p(d) for d in distances], [0.5 - 0.02 * d for d in distances]]
    return {"dims": 1, "scheme": "t5", "title": "T5 bias", "train_length": 16,
            "modules": [{"name": "blocks.0.attn.position", "distances": distances, "values": values,
                         "trained": [d < 24 for d in distances], "untrained_rows": "nearest"}]}


def bias_2d():
    offsets = list(range(-3, 4))
    heads = [[[h - 0.1 * (abs(y) + abs(x)) for x in offsets] for y in offsets] for h in range(3)]
    return {"dims": 2, "scheme": "clipped2d", "title": "Clipped 2-D", "train_length": 8,
            "modules": [{"name": "pos.clipped2d", "dy": offsets, "dx": offsets, "values": heads,
                         "trained": [[abs(y) <= 2 and abs(x) <= 2 for x in offsets] for y in offsets]}]}


def request(kind, block):
    return {"format": "rpb-plot-1", "kind": kind, "outputs": [], "styles": STYLES, kind: block}


# ---- reading figures back --------------------------------------------------------------------------------------

def data_axes(fig):
    """The axes that hold data (not colour bars)."""
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def labelled(ax, which):
    """Positions of the major ticks with a non-empty label inside the view limits."""
    axis = ax.yaxis if which == "y" else ax.xaxis
    lo, hi = sorted(ax.get_ylim() if which == "y" else ax.get_xlim())
    return [loc for loc, text in zip(axis.get_majorticklocs(), axis.get_majorticklabels())
            if text.get_text() and lo <= loc <= hi]


def method_lines(ax):
    """{gid: Line2D} of the lines the module tagged with a label (methods, runs, heads)."""
    return {line.get_gid(): line for line in ax.get_lines()
            if line.get_gid() and line.get_gid() != "optimum" and not line.get_gid().endswith(" band")}


def finite_points(line):
    return [(x, y) for x, y in zip(line.get_xdata(), line.get_ydata()) if math.isfinite(x) and math.isfinite(y)]


def figure_legend(ax):
    """The legend of the axes' figure (the sweep and curves figures have one, under their panels), else None."""
    legends = ax.figure.legends
    return legends[0] if legends else None


def legend_texts(ax):
    """The texts of the axes' own legend (bias figures), else of its figure's one legend."""
    legend = ax.get_legend() or figure_legend(ax)
    return [t.get_text() for t in legend.get_texts()] if legend else []


def title_line(ax):
    """The first line of the axes' title (the lines under it are notes on points not drawn)."""
    return ax.get_title().split("\n")[0]


class FigureChecks(unittest.TestCase):
    """Assertions on a Figure's matplotlib objects."""

    def assert_ticks_inside(self, ax, which, lo, hi):
        """At least two labelled ticks inside the data range [lo, hi] (one inside the view for a lone value)."""
        ticks = labelled(ax, which)
        if hi > lo:
            inside = [t for t in ticks if lo - 1e-9 * abs(hi) <= t <= hi + 1e-9 * abs(hi)]
            self.assertGreaterEqual(len(inside), 2, "%s: %s ticks %s, data %g .. %g" % (ax.get_title(), which, ticks,
                                                                                        lo, hi))
        else:
            self.assertGreaterEqual(len(ticks), 1, "%s: no labelled %s tick in view" % (ax.get_title(), which))

    def assert_data_ticks(self, ax, skip_x=False):
        """Ticks inside the range of the axes' line data, on both axes."""
        points = [p for line in method_lines(ax).values() for p in finite_points(line)]
        optimum = [line.get_ydata()[0] for line in ax.get_lines() if line.get_gid() == "optimum"]
        ys = [y for _, y in points] + optimum
        self.assert_ticks_inside(ax, "y", min(ys), max(ys))
        if not skip_x:
            xs = [x for x, _ in points]
            self.assert_ticks_inside(ax, "x", min(xs), max(xs))

    def assert_style(self, line, label, base):
        """A base label has its scheme's registry colour; a variant a shade of its own (markers and dashes: by the
        line's order in its figure, PaperRulesTest)."""
        color = to_hex(line.get_color())
        if label == base:
            self.assertEqual(color, BASE[base][0], label)
        else:
            self.assertNotEqual(color, BASE[base][0], label)

    def assert_nothing_clipped(self, fig):
        """Every text lies inside the figure; no legend covers another text of its axes."""
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        box = fig.bbox
        for text in fig.findobj(Text):
            if text.get_visible() and text.get_text().strip():
                e = text.get_window_extent(renderer)
                self.assertTrue(e.x0 >= box.x0 - 1 and e.y0 >= box.y0 - 1 and e.x1 <= box.x1 + 1
                                and e.y1 <= box.y1 + 1, "clipped: %r at %s" % (text.get_text(), e))
        for ax in data_axes(fig):
            legend = ax.get_legend()
            if legend is not None:
                lb = legend.get_window_extent(renderer)
                others = [ax.xaxis.label] + ax.get_xticklabels() + [ax.title]
                for t in others:
                    if t.get_text().strip():
                        self.assertFalse(lb.overlaps(t.get_window_extent(renderer)),
                                         "legend over %r in %s" % (t.get_text(), ax.get_title()))
            for legend in fig.legends:  # the figure's legend: under every panel, its labels and title
                self.assertFalse(legend.get_window_extent(renderer).overlaps(ax.get_tightbbox(renderer)),
                                 "the figure's legend over %s" % ax.get_title())

    def assert_no_na_drawn(self, ax, label, na_xs):
        """No artist of the label's colour has a point at an n/a x; its line is NaN there; the legend names it."""
        line = method_lines(ax)[label]
        for x in na_xs:
            self.assertNotIn(x, [p[0] for p in finite_points(line)], "%s drawn at n/a x=%s" % (label, x))
        color = to_hex(line.get_color())
        for other in ax.get_lines():
            if other is not line and to_hex(other.get_color()) == color:
                self.assertFalse(set(x for x, _ in finite_points(other)) & set(na_xs), label)
        for coll in ax.collections:
            if coll.get_gid() and coll.get_gid().startswith(label + " "):
                xs = {round(v[0], 9) for path in coll.get_paths() for v in path.vertices}
                self.assertFalse(xs & {round(x, 9) for x in na_xs}, "%s band at n/a" % label)
        self.assertEqual(list(ax.texts), [], "text inside the axes")
        entry = [t for t in legend_texts(ax) if t.startswith(label + " (n/a at")]
        entry += [t for t in ax.get_title().split("\n") if t.startswith(label + ": n/a at")]
        self.assertEqual(len(entry), 1, (legend_texts(ax), ax.get_title()))


# ---- the tests -------------------------------------------------------------------------------------------------

class StyleTest(unittest.TestCase):
    def test_scheme_and_variants(self):
        self.assertEqual(rpb_plot.method_color("t5", "t5", STYLES), "#1f77b4")
        self.assertNotEqual(rpb_plot.method_color("t5@untrained=nearest", "t5", STYLES), "#1f77b4")
        # Without styles: the theme's colour of the scheme; a scheme the theme does not list (one new to rpb) takes the
        # fallback palette's, picked by its name's digest (the same in every process).
        self.assertEqual(rpb_plot.method_color("shaw", "shaw", {}), rpb_plot.theme.SCHEME_STYLES["shaw"][0])
        novel = rpb_plot.method_color("novel_scheme", "novel_scheme", {})
        self.assertIn(novel, rpb_plot.theme.FALLBACK_COLORS)
        self.assertEqual(novel, rpb_plot.method_color("novel_scheme", "novel_scheme", None))

    def test_theme_styles_are_distinct(self):
        # Within the 1-D schemes and within the 2-D ones (a 2-D scheme may share its 1-D relative's), each a colour
        # and a marker of its own, a valid "#rrggbb" and a matplotlib marker.
        styles = rpb_plot.theme.SCHEME_STYLES
        two_d = {n for n in styles if n.endswith("2d") or n.startswith("swin")}
        for group in (set(styles) - two_d, two_d | {"none"}):
            colors = [styles[n][0] for n in group]
            markers = [styles[n][1] for n in group]
            self.assertEqual(len(set(colors)), len(group), sorted(group))
            self.assertEqual(len(set(markers)), len(group), sorted(group))
            for c in colors:
                self.assertRegex(c, r"^#[0-9a-f]{6}$")
        # The scheme is given, never read from the label: a label naming another scheme keeps the given one's colour.
        self.assertNotEqual(rpb_plot.method_color("alibi", "t5", STYLES),
                            rpb_plot.method_color("alibi", "alibi", STYLES))
        shades = {rpb_plot.method_color("t5@optim.lr=%g" % lr, "t5", STYLES)
                  for lr in (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)}
        self.assertGreater(len(shades), 1)

    def test_ticks(self):
        for lo, hi, log in ((15.30, 15.35, True), (3.6, 3.9, True), (8.1, 15.4, True), (1.5, 400.0, True),
                            (0.0, 0.003, False), (5120.0, 25600.0, False), (-0.7, 0.5, False)):
            ticks = rpb_plot.nice_ticks(lo, hi, log)
            self.assertGreaterEqual(len([t for t in ticks if lo <= t <= hi]), 2, (lo, hi, ticks))
            labels = rpb_plot.tick_labels(ticks)
            self.assertEqual(len(set(labels)), len(labels), labels)


class LegendWrapTest(unittest.TestCase):
    def test_long_method_names_wrap_before_their_settings(self):
        name = ("rope@rope_scaling=yarn@rope_factor=16@run.init_from=rope@run.finetune_length=1024@run.batch=2"
                "@run.steps=200@optim.lr=3e-4@optim.warmup_steps=20")
        lines = rpb_plot.axes.wrap_label(name).split("\n")
        self.assertEqual("".join(lines), name)  # nothing lost, breaks only before '@'
        self.assertTrue(all(len(line) <= rpb_plot.axes.LEGEND_LINE for line in lines), lines)
        self.assertTrue(all(line.startswith("@") for line in lines[1:]), lines)
        self.assertEqual(rpb_plot.axes.wrap_label("t5@untrained=nearest"), "t5@untrained=nearest")


class SweepFigureTest(FigureChecks):
    @classmethod
    def setUpClass(cls):
        cls.fig = rpb_plot.draw(sweep_request(["results.json"]))
        cls.axes = cls.fig.axes

    def panel(self, task, ylabel):
        found = [ax for ax in self.axes if ax.get_title().startswith(task + " ") and ax.get_ylabel().startswith(ylabel)]
        self.assertEqual(len(found), 1, [(a.get_title(), a.get_ylabel()) for a in self.axes])
        return found[0]

    def test_every_metric_of_every_task(self):
        for task, label in (("markov", "perplexity"), ("lag", "perplexity"), ("markov", "mean attention"),
                            ("markov", "attention entropy (nats)")):
            self.panel(task, label)
        self.assertEqual(len(self.axes), 4)  # lag has no attention distance or entropy

    def test_colour_and_look_per_label(self):
        seen = {}
        for ax in self.axes:
            for label, line in method_lines(ax).items():
                self.assert_style(line, label, SCHEME[label])
                look = (to_hex(line.get_color()), line.get_marker(), str(line.get_linestyle()))
                self.assertEqual(seen.setdefault(label, look), look, "%s differs between panels" % label)
        self.assertEqual(set(seen), {"learned", "t5", "t5@untrained=nearest", "alibi"})

    def test_ticks_inside_data(self):
        for ax in self.axes:
            self.assert_data_ticks(ax)
        self.assertEqual(self.panel("markov", "perplexity").get_yscale(), "log")
        self.assertEqual(self.panel("markov", "attention entropy").get_yscale(), "linear")
        x = self.panel("markov", "perplexity").xaxis
        self.assertEqual([t.get_text() for t in x.get_majorticklabels()], ["16\n1x", "32\n2x", "64\n4x"])

    def test_na_not_drawn(self):
        for task, label in (("markov", "perplexity"), ("lag", "perplexity"), ("markov", "mean attention"),
                            ("markov", "attention entropy")):
            ax = self.panel(task, label)
            self.assert_no_na_drawn(ax, "learned", [32, 64])
            self.assertIn("learned (n/a at 2x, 4x)", legend_texts(ax))

    def test_optimum_and_bands(self):
        ax = self.panel("markov", "perplexity")
        optimum = [line for line in ax.get_lines() if line.get_gid() == "optimum"]
        self.assertEqual(len(optimum), 1)
        self.assertEqual(optimum[0].get_ydata()[0], 4.2)
        self.assertNotEqual(optimum[0].get_linestyle(), "-")
        self.assertIn("optimal perplexity (4.200)", legend_texts(ax))
        self.assertEqual(figure_legend(ax).get_title().get_text(), "mean ± std over 3 seeds (band)")
        bands = {c.get_gid() for c in ax.collections}
        self.assertTrue({"t5 band", "alibi band", "learned band"} <= bands, bands)
        self.assertEqual([line for line in self.panel("lag", "perplexity").get_lines()
                          if line.get_gid() == "optimum"], [])  # lag has no optimum

    def test_accuracy_over_every_seed_on_request(self):
        # A seed at 40% never learned the task: "accuracy" leaves it out past the train length; the accuracy over
        # every seed is drawn only when asked for, its axis saying so.
        with tempfile.TemporaryDirectory() as tmp:
            rows = [{"task": "passkey", "method": "t5", "scheme": "t5", "perplexity": [[1.0, 1.2], [1.5, 5.0]],
                     "accuracy": [[1.0, 0.9], [0.4, 0.1]], "learned": [True, False], "bits_per_byte": None}]
            block = {"results": [results_file(tmp, "r.json", rows, seeds=(0, 1))], "known_metrics": KNOWN_METRICS}
            labels = [ax.get_ylabel() for ax in rpb_plot.draw(request("sweep", dict(block))).axes]
            self.assertFalse(any("every seed" in y for y in labels), labels)
            block["metrics"] = ["accuracy_every_seed"]
            (ax,) = rpb_plot.draw(request("sweep", block)).axes
            self.assertIn("every seed (learned or not)", ax.get_ylabel())
            (line,) = method_lines(ax).values()
            self.assertEqual([round(y, 6) for y in line.get_ydata()], [70.0, 50.0])  # both seeds, in %

    def test_bands_stay_within_the_values_a_metric_takes(self):
        # Two seeds at 0.9 and 0.1: mean 0.5 ± 0.566 would reach below 0 and above 1 accuracy (drawn in %).
        bounds = {m["key"]: (m["lower"], m["upper"]) for m in KNOWN_METRICS}
        self.assertEqual(bounds["accuracy"], (0.0, 1.0))
        self.assertEqual(bounds["perplexity"], (1.0, None))
        with tempfile.TemporaryDirectory() as tmp:
            rows = [{"task": "passkey", "method": "t5", "scheme": "t5", "perplexity": [[1.0, 1.2], [1.0, 5.0]],
                     "accuracy": [[1.0, 0.9], [1.0, 0.1]], "learned": [True, True], "bits_per_byte": None}]
            block = {"results": [results_file(tmp, "r.json", rows, seeds=(0, 1))], "known_metrics": KNOWN_METRICS,
                     "metrics": ["accuracy"]}
            (ax,) = rpb_plot.draw(request("sweep", block)).axes
            (band,) = [c for c in ax.collections if c.get_gid() == "t5 band"]
            ys = [y for path in band.get_paths() for y in path.vertices[:, 1]]
            self.assertAlmostEqual(min(ys), 0.0)
            self.assertAlmostEqual(max(ys), 100.0)

    def test_nothing_clipped(self):
        self.assert_nothing_clipped(self.fig)

    def test_labels_rpb_sent(self):
        # The legend and the panel's title say what rpb sent (train/sweep/labels.h: its tables' names), never a row's
        # method where a label came; a request without labels shows methods and task names.
        with open(os.path.join(DATA, "results.json")) as f:
            rows = json.load(f)["rows"]
        shown = ["%s | shown" % row["method"] for row in rows]
        fig = rpb_plot.draw(sweep_request(["results.json"], tasks=["lag"], metrics=["perplexity"],
                                          labels=[{"rows": shown, "tasks": {"lag": "Lag task"}}]))
        (ax,) = fig.axes
        self.assertIn("t5 | shown", method_lines(ax))
        self.assertNotIn("t5", method_lines(ax))
        self.assertTrue(ax.get_title().startswith("Lag task (trained at 16 tokens)"), ax.get_title())
        (ax,) = rpb_plot.draw(sweep_request(["results.json"], tasks=["lag"], metrics=["perplexity"])).axes
        self.assertIn("t5", method_lines(ax))
        self.assertTrue(ax.get_title().startswith("lag (trained at 16 tokens)"), ax.get_title())

    def test_filters(self):
        fig = rpb_plot.draw(sweep_request(["results.json"], tasks=["lag"], methods=["t5", "alibi"],
                                          lengths=[16, "4x"], metrics=["perplexity"], ylim=[11, 12]))
        (ax,) = fig.axes
        self.assertEqual(set(method_lines(ax)), {"t5", "alibi"})
        self.assertEqual(list(method_lines(ax)["t5"].get_xdata()), [16, 64])
        self.assertEqual(ax.get_ylim()[0] < 11 < 12 < ax.get_ylim()[1], True)
        with self.assertRaisesRegex(rpb_plot.RequestError, "no task kjv"):
            rpb_plot.draw(sweep_request(["results.json"], tasks=["kjv"]))

    def test_grid_task_axis(self):
        fig = rpb_plot.draw(sweep_request(["results_2d.json"]))
        (ax,) = fig.axes
        self.assertIn("grid side", ax.get_xlabel())
        for label, line in method_lines(ax).items():
            self.assert_style(line, label, label)
        self.assert_no_na_drawn(ax, "learned2d", [16, 32])
        self.assert_data_ticks(ax)
        self.assert_nothing_clipped(fig)


class AgainstSettingTest(FigureChecks):
    def test_metric_against_a_swept_value(self):
        fig = rpb_plot.draw(sweep_request(["results_grid.json"], against="optim.lr"))
        self.assertEqual([title_line(ax) for ax in fig.axes], ["markov, length 16 (1x)", "markov, length 64 (4x)"])
        for ax in fig.axes:
            lines = method_lines(ax)
            self.assertEqual(set(lines), {"t5@position.max_distance=64", "t5@position.max_distance=128"})
            for label, line in lines.items():
                self.assert_style(line, label, "t5")
            self.assertEqual(ax.get_xscale(), "log")
            self.assertEqual([t.get_text() for t in ax.xaxis.get_majorticklabels()], ["1×10⁻³", "3×10⁻³", "1×10⁻²"])
            self.assertEqual(ax.get_xlabel(), "learning rate (optim.lr)")
            self.assert_data_ticks(ax)
        self.assert_no_na_drawn(fig.axes[1], "t5@position.max_distance=128", [0.003])
        self.assertIn("t5@position.max_distance=128: n/a at optim.lr=0.003", fig.axes[1].get_title())
        self.assert_nothing_clipped(fig)

    def test_unknown_setting(self):
        with self.assertRaisesRegex(rpb_plot.RequestError, "optim.wd"):
            rpb_plot.draw(sweep_request(["results_grid.json"], against="optim.wd"))


class CurvesFigureTest(FigureChecks):
    def runs(self, labels=("t5", "alibi"), schemes=("t5", "alibi"), folders=("run_a", "run_b")):
        return [{"label": lab, "scheme": s, "metrics_csv": os.path.join(DATA, f, "metrics.csv")}
                for lab, s, f in zip(labels, schemes, folders)]

    def test_curves_against_step(self):
        fig = rpb_plot.draw(request("curves", {"runs": self.runs(), "x": "step", "ylim": None}))
        titles = [title_line(ax) for ax in fig.axes]
        self.assertEqual(titles, ["train loss", "valid loss at length 16", "valid loss at length 64", "learning rate"])
        for ax in fig.axes:
            lines = method_lines(ax)
            for label, line in lines.items():
                self.assert_style(line, label, label)
            self.assert_data_ticks(ax)
        valid64 = fig.axes[2]
        self.assertEqual(set(method_lines(valid64)), {"alibi"})  # run_a has no valid loss at 64: not drawn
        self.assertEqual(valid64.get_title(), "valid loss at length 64\nn/a: t5")
        self.assertEqual(legend_texts(valid64), ["t5", "alibi"])  # one legend, of every run
        self.assertEqual([p[0] for p in finite_points(method_lines(fig.axes[1])["t5"])], [20, 40])
        self.assert_nothing_clipped(fig)

    def test_curves_against_tokens(self):
        with self.assertRaisesRegex(rpb_plot.RequestError, "tokens"):
            rpb_plot.draw(request("curves", {"runs": self.runs(), "x": "tokens"}))
        fig = rpb_plot.draw(request("curves", {"runs": self.runs()[:1], "x": "tokens"}))
        self.assertEqual(fig.axes[0].get_xlabel(), "tokens seen (millions)")
        self.assertEqual(list(method_lines(fig.axes[0])["t5"].get_xdata()), [5120, 10240, 15360, 20480, 25600])
        for ax in fig.axes:
            self.assert_data_ticks(ax)

    def test_variant_runs_and_python_api(self):
        fig = rpb_plot.plot_curves([os.path.join(DATA, "run_a"), os.path.join(DATA, "run_b")], styles=STYLES)
        lines = method_lines(fig.axes[0])
        # Runs no sweep lists: their scheme's own colour (the scheme from run_a/config.toml).
        self.assertEqual(to_hex(lines["run_a"].get_color()), BASE["t5"][0])
        self.assertEqual(to_hex(lines["run_b"].get_color()), BASE["alibi"][0])
        with tempfile.TemporaryDirectory() as tmp:  # no config.toml: no scheme, refused (never guessed from a name)
            os.mkdir(os.path.join(tmp, "t5"))
            with open(os.path.join(tmp, "t5", "metrics.csv"), "w") as f:
                f.write("step,train_loss\n1,2.0\n")
            with self.assertRaisesRegex(rpb_plot.RequestError, "config.toml"):
                rpb_plot.plot_curves([os.path.join(tmp, "t5")], styles=STYLES)


class BiasFigureTest(FigureChecks):
    def test_bias_1d(self):
        block = bias_1d()
        fig = rpb_plot.draw(request("bias", block))
        (ax,) = fig.axes
        self.assertEqual(ax.get_xscale(), "symlog")
        trained = [p for p in ax.patches if p.get_gid() == "trained"]
        self.assertEqual(len(trained), 1)
        span = trained[0]
        xs = ([x for x, _ in span.get_xy()] if hasattr(span, "get_xy")  # a Polygon (3.6), a Rectangle (3.9)
              else [span.get_x(), span.get_x() + span.get_width()])
        self.assertEqual((min(xs), max(xs)), (0, 15))
        lines = method_lines(ax)
        colors = set()
        for h in range(2):
            solid, dotted = lines["head %d" % h], lines["head %d untrained" % h]
            self.assertEqual(max(x for x, _ in finite_points(solid)), 23)
            self.assertEqual(min(x for x, _ in finite_points(dotted)), 23)  # joins the solid line
            self.assertEqual(max(x for x, _ in finite_points(dotted)), 40)
            self.assertNotEqual(dotted.get_linestyle(), "-")
            colors.add(to_hex(solid.get_color()))
            self.assertEqual(to_hex(dotted.get_color()), to_hex(solid.get_color()))
        self.assertEqual(len(colors), 2)
        texts = legend_texts(ax)
        self.assertIn("head 0: b(0) = 0, b(1) = -0.0693, b(15) = -0.277", texts)
        self.assertIn("untrained rows (filled: nearest)", texts)
        self.assertIn("trained: |d| < 16", texts)
        ticks = labelled(ax, "x")
        self.assertEqual(ticks, [0, 1, 2, 4, 8, 16, 32])
        self.assertEqual(ax.get_xlabel(), "distance d = query - key (positions; symlog)")  # no query given
        self.assert_data_ticks(ax)
        self.assert_nothing_clipped(fig)
        block["modules"][0]["query"] = 40  # rpb names the one query (FIRE's bias depends on it)
        (ax,) = rpb_plot.draw(request("bias", block)).axes
        self.assertEqual(ax.get_xlabel(), "distance d = query - key (positions, the query at position 40; symlog)")

    def test_bias_2d(self):
        fig = rpb_plot.draw(request("bias", bias_2d()))
        heads = data_axes(fig)
        self.assertEqual(len(heads), 3)
        self.assertEqual(len(fig.axes), 6)  # a colour bar per head
        for h, ax in enumerate(heads):
            (image,) = ax.images
            self.assertIsNotNone(image.colorbar)
            lo, hi = image.get_clim()
            self.assertAlmostEqual(lo, -hi)  # zero is the colour map's middle
            hatched = [c for c in ax.collections if c.get_gid() == "untrained"]
            self.assertEqual(len(hatched), 1)
            self.assertEqual(len(hatched[0].get_paths()), 7 * 7 - 5 * 5)
            for which in ("x", "y"):
                self.assert_ticks_inside(ax, which, -3, 3)
            self.assertEqual(ax.get_title(), "head %d" % h)
        self.assert_nothing_clipped(fig)
        self.assertIn("hatched", fig.subfigs[0]._suptitle.get_text())
        # Nothing untrained: no "hatched" in the title; a head's note in its title.
        block = bias_2d()
        block["modules"][0]["trained"] = None
        block["modules"][0]["head_notes"] = ["slope 0.5", "", "slope 0.125"]
        fig = rpb_plot.draw(request("bias", block))
        self.assertEqual(fig.subfigs[0]._suptitle.get_text(), "pos.clipped2d")
        self.assertEqual([ax.get_title() for ax in data_axes(fig)],
                         ["head 0 (slope 0.5)", "head 1", "head 2 (slope 0.125)"])

    def test_bad_bias(self):
        block = bias_1d()
        block["modules"][0]["values"][1] = block["modules"][0]["values"][1][:-1]
        with self.assertRaisesRegex(rpb_plot.RequestError, r"modules\[0\].values"):
            rpb_plot.draw(request("bias", block))
        # Each a RequestError (exit 2) naming the key, never a TypeError or a figure drawn wrong.
        for dims, key, value, message in (
                (2, "trained", 5, r"modules\[0\].trained must be null or 7 x 7 booleans, found 5"),
                (2, "dy", ["a", "b"], r"modules\[0\].dy must list integer offsets"),
                (2, "dy", [-1, 0, 5, 6, 7, 8, 9], r"modules\[0\].dy must be evenly spaced"),
                (1, "trained", "ab", r"modules\[0\].trained must be null or 41 booleans, found \"ab\"")):
            block = bias_2d() if dims == 2 else bias_1d()
            block["modules"][0][key] = value
            with self.assertRaisesRegex(rpb_plot.RequestError, message):
                rpb_plot.draw(request("bias", block))
        req = request("bias", bias_1d())
        req["styles"] = {"schemes": [{"name": "t5", "dims": [1], "color": "red", "marker": "o"}]}
        with self.assertRaisesRegex(rpb_plot.RequestError, 'styles.schemes "t5": color must be "#rrggbb", found "red"'):
            rpb_plot.draw(req)


class ScriptTest(unittest.TestCase):
    def run_script(self, req, env=None):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "request.json")
            for out in req.get("outputs", []):
                out["path"] = os.path.join(tmp, out["path"])
            with open(path, "w") as f:
                json.dump(req, f)
            p = subprocess.run([sys.executable, os.path.join(SOURCE, "python", "rpb_plot"), path],
                               capture_output=True, text=True, env=env)
            written = {}
            for out in req.get("outputs", []):
                if os.path.exists(out["path"]):
                    with open(out["path"], "rb") as f:
                        written[out["format"]] = f.read()
            return p, written

    def test_formats_by_output(self):
        req = sweep_request(["results.json"])
        req["outputs"] = [{"path": ".r.pdf.tmp1", "format": "pdf"}, {"path": "r.png", "format": "png"},
                          {"path": "r.svg", "format": "svg"}]
        p, written = self.run_script(req)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(written["pdf"].startswith(b"%PDF"))
        self.assertTrue(written["png"].startswith(b"\x89PNG"))
        self.assertIn(b"<svg", written["svg"][:400])
        self.assertNotIn(b"<dc:date>", written["svg"])  # no date: a redrawn figure differs only where it should

    def test_bad_request(self):
        req = sweep_request(["results.json"])
        req["format"] = "rpb-plot-0"
        p, _ = self.run_script(req)
        self.assertEqual(p.returncode, 2)
        self.assertIn("rpb-plot-1", p.stderr)
        p, _ = self.run_script(sweep_request(["missing.json"]))
        self.assertEqual(p.returncode, 2)
        self.assertIn("missing.json", p.stderr)

    def test_matplotlib_missing(self):
        with tempfile.TemporaryDirectory() as fake:
            os.mkdir(os.path.join(fake, "matplotlib"))
            with open(os.path.join(fake, "matplotlib", "__init__.py"), "w") as f:
                f.write("raise ImportError('no matplotlib here')\n")
            p, _ = self.run_script(sweep_request(["results.json"]), dict(os.environ, PYTHONPATH=fake))
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("apt-get install python3-matplotlib", p.stderr)

    def test_plot_sweep_writes_by_extension(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "results.pdf")
            fig = rpb_plot.plot_sweep([os.path.join(DATA, "results_grid.json")], out, tasks=["markov"],
                                      metrics=["perplexity"], styles=STYLES)
            with open(out, "rb") as f:
                self.assertTrue(f.read().startswith(b"%PDF"))
            self.assertEqual(len(fig.axes), 1)
            with self.assertRaisesRegex(rpb_plot.RequestError, "format"):
                rpb_plot.save(fig, os.path.join(tmp, "results.jpeg"))


def results_file(folder, name, rows, multipliers=(1, 4), train_length=16, fmt="rpb-results-4", seeds=(0,)):
    """A results.json in `folder` of rows {"task", "method", "scheme", "perplexity"} (other keys as rows give them)."""
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        json.dump({"format": fmt, "name": os.path.splitext(name)[0], "train_length": train_length,
                   "multipliers": list(multipliers), "seeds": list(seeds), "rows": rows}, f)
    return path


def listing_results(folder, method, scheme, seeds):
    """A results.json in sweep folder `folder` as rpb writes it (tests/data/plot/results_grid.json's), of one row of
    `method` on markov listing its runs <folder>/markov/<method>/seed<k> (the folders as the sweep named them)."""
    with open(os.path.join(DATA, "results_grid.json")) as f:
        data = json.load(f)
    row = data["rows"][0]
    for key in ("perplexity", "nll", "tokens", "attention"):
        row[key] = row[key] * len(seeds)
    row.update(method=method, scheme=scheme, runs=[dict(row["runs"][0], seed=k, folder="elsewhere/%s/markov/%s/seed%d"
                                                        % (os.path.basename(folder), method, k)) for k in seeds])
    data.update(seeds=list(seeds), rows=[row])
    with open(os.path.join(folder, "results.json"), "w") as f:
        json.dump(data, f)


class ReviewMendsTest(FigureChecks):
    """The figure module's review findings (each test fails without its mend)."""

    def test_2d_heatmap_is_drawn_at_query_minus_key(self):
        # An asymmetric table: the value at (dy, dx) is 10 dy + dx. The image's pixel at data point (dy, dx) holds it
        # and the axes say query - key, the sign rpb inspect sends (cli/plot_bias.cpp).
        block = bias_2d()
        offsets = block["modules"][0]["dy"]
        block["modules"][0]["values"] = [[[10.0 * y + x for x in offsets] for y in offsets]]
        fig = rpb_plot.draw(request("bias", block))
        (ax,) = data_axes(fig)
        (image,) = ax.images
        data = image.get_array()
        x0, x1, y0, y1 = image.get_extent()
        for dy, dx in ((2, -1), (-3, 1), (1, 3)):
            col = int((dx - x0) / (x1 - x0) * data.shape[1])
            row = int((dy - y0) / (y1 - y0) * data.shape[0])  # origin "lower": row 0 at the bottom
            self.assertEqual(data[row][col], 10.0 * dy + dx, (dy, dx))
        self.assertIn("query", ax.get_xlabel().split("-")[0])
        self.assertIn("query", ax.get_ylabel().split("-")[0])

    def test_older_results_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = results_file(tmp, "old.json", [{"task": "markov", "method": "t5", "perplexity": [[4.0, 5.0]]}],
                                fmt="rpb-results-3")
            with self.assertRaisesRegex(rpb_plot.RequestError, "old.json: written by an older rpb \\(rpb-results-3, "
                                        "rows without their scheme\\); rerun `rpb extrapolate CONFIG`"):
                rpb_plot.draw(sweep_request([path]))

    def test_sliding_window_rows_say_their_stride(self):
        # rpb-results-5 rows carry their protocol: a row scored by sliding windows whose method does not name the
        # stride (the sweep's config set run.eval_stride) says it in its legend; an rpb-results-4 file still reads.
        with tempfile.TemporaryDirectory() as tmp:
            rows = [{"task": "markov", "method": "t5", "scheme": "t5", "eval_stride": 32, "perplexity": [[4.0, 5.0]]},
                    {"task": "markov", "method": "alibi@run.eval_stride=32", "scheme": "alibi", "eval_stride": 32,
                     "settings": {"run.eval_stride": 32}, "perplexity": [[4.5, 5.5]]},
                    {"task": "markov", "method": "rope", "scheme": "rope", "eval_stride": None,
                     "perplexity": [[4.2, 6.0]]}]
            path = results_file(tmp, "new.json", rows, fmt="rpb-results-5")
            fig = rpb_plot.draw(sweep_request([path]))
            texts = legend_texts(data_axes(fig)[0])
            self.assertIn("t5 (sliding window, stride 32)", texts)
            self.assertIn("alibi@run.eval_stride=32", texts)
            self.assertIn("rope", texts)
            old = results_file(tmp, "old.json", [dict(rows[2])], fmt="rpb-results-4")
            self.assertIn("rope", legend_texts(data_axes(rpb_plot.draw(sweep_request([old])))[0]))

    def test_per_token_loss_against_position(self):
        # --against position: a panel per task at its longest length measured, a point per bin at its centre, a gap
        # where no target was scored, the entropy rate (log of the optimal perplexity) dashed, no band.
        with tempfile.TemporaryDirectory() as tmp:
            rows = [{"task": "markov", "method": "t5", "scheme": "t5", "perplexity": [[4.0, 5.0]],
                     "optimal_perplexity": 3.0, "position_loss": [None, {"bin": 16, "loss": [1.5, None, 1.7, 2.5]}]},
                    {"task": "markov", "method": "alibi", "scheme": "alibi", "perplexity": [[4.5, 5.5]],
                     "optimal_perplexity": 3.0,
                     "position_loss": [{"bin": 1, "loss": [1.0] * 16}, {"bin": 16, "loss": [1.4, 1.4, 1.4, 1.5]}]},
                    {"task": "lag", "method": "t5", "scheme": "t5", "perplexity": [[4.0, 5.0]]}]
            path = results_file(tmp, "pos.json", rows, fmt="rpb-results-7")
            fig = rpb_plot.draw(sweep_request([path], against="position"))
            axes = data_axes(fig)
            self.assertEqual(len(axes), 1)  # lag has no per-position loss
            ax = axes[0]
            self.assertIn("at 64 tokens (4x; trained at 16)", title_line(ax))
            lines = {line.get_gid(): line for line in ax.get_lines()}
            self.assertEqual(list(lines["t5"].get_xdata()), [7.5, 23.5, 39.5, 55.5])
            self.assertTrue(math.isnan(lines["t5"].get_ydata()[1]))
            self.assertAlmostEqual(lines["optimum"].get_ydata()[0], math.log(3.0))
            self.assertEqual(ax.get_ylabel(), "per-token loss (nats)")
            self.assertFalse([c for c in ax.collections if "band" in str(c.get_gid())])
            self.assertIn("pooled", figure_legend(ax).get_title().get_text())
            # --lengths picks the length: at 16 only alibi has it.
            fig = rpb_plot.draw(sweep_request([path], against="position", lengths=["16"]))
            self.assertIn("at 16 tokens", title_line(data_axes(fig)[0]))
            with self.assertRaises(rpb_plot.RequestError):
                rpb_plot.draw(sweep_request([path], against="position", tasks=["lag"]))

    def test_bits_per_byte_and_accuracy_of_rpb_results_6(self):
        # A text row's bits per byte and a passkey row's accuracy are drawn; past the train length the accuracy is
        # the mean over the seeds that learned the task ("learned"), and a row where none did is named "not
        # learned" there, with no point (never a value that would read as failing to extrapolate).
        with tempfile.TemporaryDirectory() as tmp:
            text = {"task": "text", "method": "t5", "scheme": "t5", "perplexity": [[3.0, 3.5], [3.2, 3.6]],
                    "bits_per_byte": [[1.1, 1.3], [1.2, 1.4]], "accuracy": None, "learned": None}
            t5 = {"task": "passkey", "method": "t5", "scheme": "t5", "perplexity": [[1.2, 2.0], [1.5, 3.0]],
                  "bits_per_byte": None, "accuracy": [[0.98, 0.6], [0.5, 0.1]], "learned": [True, False]}
            alibi = {"task": "passkey", "method": "alibi", "scheme": "alibi", "perplexity": [[1.9, 2.5], [2.0, 2.6]],
                     "bits_per_byte": None, "accuracy": [[0.7, 0.6], [0.9, 0.8]], "learned": [False, False]}
            path = results_file(tmp, "six.json", [text, t5, alibi], fmt="rpb-results-6", seeds=(0, 1))
            fig = rpb_plot.draw(sweep_request([path]))
            panels = {(ax.get_title().split(" ")[0], ax.get_ylabel()): ax for ax in fig.axes}
            self.assertEqual(set(panels), {("text", "perplexity"), ("passkey", "perplexity"),
                                           ("text", "loss (bits per byte)"), ("passkey", "exact-match accuracy (%)")})
            bits = method_lines(panels[("text", "loss (bits per byte)")])["t5"]
            self.assertEqual([round(y, 9) for y in bits.get_ydata()], [1.15, 1.35])
            ax = panels[("passkey", "exact-match accuracy (%)")]
            lines = method_lines(ax)
            self.assertEqual([round(y, 9) for y in lines["t5"].get_ydata()], [74, 60])  # 4x: seed 0 alone; in %
            self.assertEqual(round(lines["alibi"].get_ydata()[0], 9), 80)
            self.assertFalse(math.isfinite(lines["alibi"].get_ydata()[1]))
            self.assertEqual(finite_points(lines["alibi"]), [(16, 80)])
            self.assertIn("alibi: not learned at 4x (not drawn)", ax.get_title())  # in this panel only
            self.assertIn("t5", legend_texts(ax))
            self.assert_nothing_clipped(fig)
            # Against a setting the same rule: a not-learned point is named, not drawn.
            for row, lr in ((t5, 0.001), (alibi, 0.01)):
                row.update(scheme="t5", method="t5@optim.lr=%g" % lr, settings={"optim.lr": lr})
            grid = results_file(tmp, "grid.json", [t5, alibi], fmt="rpb-results-6", seeds=(0, 1))
            fig = rpb_plot.draw(sweep_request([grid], against="optim.lr", metrics=["accuracy"]))
            at_4x = [ax for ax in fig.axes if title_line(ax).endswith("(4x)")][0]
            self.assertIn("t5: not learned at optim.lr=0.01 (not drawn)", at_4x.get_title())
            self.assertEqual(finite_points(method_lines(at_4x)["t5"]), [(0.001, 60)])
            # An rpb-results-5 file still reads (its rows have neither metric).
            five = results_file(tmp, "five.json", [{"task": "markov", "method": "t5", "scheme": "t5",
                                                    "perplexity": [[4.0, 5.0]]}], fmt="rpb-results-5")
            self.assertEqual([ax.get_ylabel() for ax in rpb_plot.draw(sweep_request([five])).axes], ["perplexity"])

    def test_against_a_setting_groups_by_scheme_and_settings(self):
        # rpb names a grid point by the key as written (max_distance=64); settings hold it dotted.
        fig = rpb_plot.draw(sweep_request(["results_grid.json"], against="position.max_distance"))
        self.assertEqual([title_line(ax) for ax in fig.axes], ["markov, length 16 (1x)", "markov, length 64 (4x)"])
        lines = method_lines(fig.axes[0])
        self.assertEqual(set(lines), {"t5@optim.lr=0.001", "t5@optim.lr=0.003", "t5@optim.lr=0.01"})
        for line in lines.values():
            self.assertEqual(list(line.get_xdata()), [64, 128])

    def test_mixed_results_files_each_at_its_own_length(self):
        # Two sweeps at different lengths: each row's value at a length comes from its own file's index of it.
        with tempfile.TemporaryDirectory() as tmp:
            a = results_file(tmp, "a.json", [
                {"task": "markov", "method": "t5@optim.lr=0.001", "scheme": "t5", "settings": {"optim.lr": 0.001},
                 "perplexity": [[4.0, 5.0]]},
                {"task": "markov", "method": "t5@optim.lr=0.01", "scheme": "t5", "settings": {"optim.lr": 0.01},
                 "perplexity": [[4.1, 5.1]]}], multipliers=(1, 4))
            b = results_file(tmp, "b.json", [
                {"task": "markov", "method": "t5@optim.lr=0.001", "scheme": "t5", "settings": {"optim.lr": 0.001},
                 "perplexity": [[7.0, 9.0]]},
                {"task": "markov", "method": "t5@optim.lr=0.01", "scheme": "t5", "settings": {"optim.lr": 0.01},
                 "perplexity": [[7.1, 9.1]]}], multipliers=(4, 8))
            fig = rpb_plot.draw(sweep_request([a, b], against="optim.lr"))
        titles = [title_line(ax) for ax in fig.axes]
        self.assertEqual(titles, ["markov, length 16 (1x)", "markov, length 64 (4x)", "markov, length 128 (8x)"])
        at64 = method_lines(fig.axes[1])
        self.assertEqual(set(at64), {"t5 (a)", "t5 (b)"})
        self.assertEqual([y for _, y in finite_points(at64["t5 (a)"])], [5.0, 5.1])  # a's index 1: 4 x 16
        self.assertEqual([y for _, y in finite_points(at64["t5 (b)"])], [7.0, 7.1])  # b's index 0: 4 x 16
        self.assertEqual(set(method_lines(fig.axes[2])), {"t5 (b)"})  # the same label in every panel

    def test_a_sweep_run_has_its_methods_colour(self):
        with tempfile.TemporaryDirectory() as tmp:
            runs = []
            for seed in (0, 1):
                folder = os.path.join(tmp, "quick", "markov", "t5@untrained=nearest", "seed%d" % seed)
                os.makedirs(folder)
                with open(os.path.join(folder, "config.toml"), "w") as f:
                    f.write('[run]\nname = "seed%d"\nseed = %d\n[position]\nscheme = "t5"\n' % (seed, seed))
                with open(os.path.join(folder, "metrics.csv"), "w") as f:
                    f.write("step,train_loss\n1,2.0\n2,1.5\n")
                runs.append(folder)
            unlisted = method_lines(rpb_plot.plot_curves(runs, styles=STYLES).axes[0])
            self.assertEqual(set(unlisted), {"seed0", "seed1"})  # no results.json lists them: their scheme's colour
            self.assertEqual(to_hex(unlisted["seed0"].get_color()), BASE["t5"][0])
            listing_results(os.path.join(tmp, "quick"), "t5@untrained=nearest", "t5", (0, 1))
            fig = rpb_plot.plot_curves(runs, styles=STYLES)
        lines = method_lines(fig.axes[0])
        self.assertEqual(set(lines), {"t5@untrained=nearest/seed0", "t5@untrained=nearest/seed1"})
        sweep = method_lines(rpb_plot.draw(sweep_request(["results.json"], tasks=["markov"],
                                                         metrics=["perplexity"])).axes[0])
        method = sweep["t5@untrained=nearest"]
        seed0, seed1 = lines["t5@untrained=nearest/seed0"], lines["t5@untrained=nearest/seed1"]
        for line in (seed0, seed1):  # the sweep figure's colour of the method
            self.assertEqual(to_hex(line.get_color()), to_hex(method.get_color()))
        # Each run a marker and a dash of its own (told apart in greyscale).
        self.assertNotEqual((seed0.get_marker(), seed0._unscaled_dash_pattern),
                            (seed1.get_marker(), seed1._unscaled_dash_pattern))

    def test_every_value_na_draws_a_figure_that_says_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = results_file(tmp, "failed.json", [
                {"task": "markov", "method": "t5", "scheme": "t5", "perplexity": [[None, None]]},
                {"task": "markov", "method": "alibi", "scheme": "alibi", "perplexity": [[None, None]]}])
            fig = rpb_plot.draw(sweep_request([path]))
        (ax,) = fig.axes
        self.assertIn("no perplexity at any length", ax.get_title())
        self.assertIn("t5 (n/a at 1x, 4x)", legend_texts(ax))
        self.assertIn("alibi (n/a at 1x, 4x)", legend_texts(ax))
        self.assertEqual(labelled(ax, "y"), [])  # no tick that would suggest a value
        self.assert_nothing_clipped(fig)

    def test_empty_curves(self):
        with tempfile.TemporaryDirectory() as tmp:
            runs = []
            for name, text in (("header", "step,train_loss,lr\n"), ("nan", "step,train_loss,lr\n1,nan,nan\n"),
                               ("half", "step,train_loss,lr,valid_loss@16\n1,2.0,0.1,\n2,1.5,0.1,\n")):
                path = os.path.join(tmp, name + ".csv")
                with open(path, "w") as f:
                    f.write(text)
                runs.append({"label": name, "scheme": "t5", "metrics_csv": path})
            for run in runs[:2]:  # no point at all: a bad request naming the file
                with self.assertRaisesRegex(rpb_plot.RequestError, "nothing to draw: %s" % run["metrics_csv"]):
                    rpb_plot.draw(request("curves", {"runs": [run], "x": "step"}))
            fig = rpb_plot.draw(request("curves", {"runs": runs[2:], "x": "step"}))
        valid = [ax for ax in fig.axes if title_line(ax) == "valid loss at length 16"][0]
        self.assertEqual((labelled(valid, "x"), labelled(valid, "y")), ([], []))  # an empty panel: no fake ticks

    def test_no_two_lines_look_alike(self):
        # These two labels' digests pick the same shade: within one figure each line still has a marker and a dash
        # of its own.
        a, b = "t5@max_distance=128@optim.lr=0.01", "t5@max_distance=64@optim.lr=0.01"
        self.assertEqual(rpb_plot.method_color(a, "t5", STYLES), rpb_plot.method_color(b, "t5", STYLES))
        with tempfile.TemporaryDirectory() as tmp:
            path = results_file(tmp, "clash.json", [
                {"task": "markov", "method": m, "scheme": "t5", "perplexity": [[4.0 + i, 5.0]]}
                for i, m in enumerate(("t5", a, b))])
            (ax,) = rpb_plot.draw(sweep_request([path])).axes
        lines = method_lines(ax)
        looks = {label: (to_hex(line.get_color()), line.get_marker(), line._unscaled_dash_pattern)
                 for label, line in lines.items()}
        self.assertEqual(len(set(looks.values())), 3, looks)
        # 1-D bias: heads h and h + 10 differ (10 colours, 9 markers).
        block = bias_1d()
        block["modules"][0]["values"] = [[0.01 * h * d for d in block["modules"][0]["distances"]] for h in range(12)]
        (ax,) = rpb_plot.draw(request("bias", block)).axes
        heads = method_lines(ax)
        self.assertNotEqual((to_hex(heads["head 0"].get_color()), heads["head 0"].get_marker()),
                            (to_hex(heads["head 10"].get_color()), heads["head 10"].get_marker()))


class MetricsAndTicksTest(FigureChecks):
    """The metrics drawn are rpb's one list, found in the rows; tick labels as people write numbers."""

    def test_metrics_come_from_rpbs_list_and_the_rows(self):
        self.assertEqual([m["key"] for m in KNOWN_METRICS],
                         ["perplexity", "mean_attention_distance", "attention_entropy", "bits_per_byte", "accuracy",
                          "accuracy_every_seed", "token_accuracy"])
        with tempfile.TemporaryDirectory() as tmp:
            rows = [{"task": "lag", "method": "t5", "scheme": "t5", "perplexity": [[3.0, 3.5]],
                     "exact_match": [[0.5, 0.4]], "bits_per_byte": None, "accuracy": None}]
            block = {"results": [results_file(tmp, "r.json", rows)], "known_metrics": KNOWN_METRICS}
            fig = rpb_plot.draw(request("sweep", dict(block)))
            self.assertEqual([ax.get_ylabel() for ax in fig.axes], ["perplexity"])  # no row holds the others
            # A metric rows come to hold is drawn by one entry more in rpb's list.
            exact = {"key": "exact_match", "label": "exact match", "unit": "", "log": False, "field": "exact_match",
                     "entry": "", "optimum": ""}
            block["known_metrics"] = KNOWN_METRICS + [exact]
            fig = rpb_plot.draw(request("sweep", dict(block)))
            self.assertEqual([ax.get_ylabel() for ax in fig.axes], ["perplexity", "exact match"])
            with self.assertRaisesRegex(rpb_plot.RequestError, 'unknown metric "ppl"'):
                rpb_plot.draw(request("sweep", dict(block, metrics=["ppl"])))
            with self.assertRaisesRegex(rpb_plot.RequestError, "sweep.known_metrics"):
                rpb_plot.draw(request("sweep", {"results": block["results"]}))

    def test_tick_labels_read_as_numbers_people_write(self):
        ticks = rpb_plot.nice_ticks(5, 1e9, log=True)  # past 10^5: every tick a×10^b, never 1000 beside 1e4
        self.assertEqual(rpb_plot.tick_labels(ticks), ["1×10¹", "1×10²", "1×10³", "1×10⁴", "1×10⁵", "1×10⁶", "1×10⁷",
                                                       "1×10⁸", "1×10⁹"])
        self.assertEqual(rpb_plot.tick_labels([10, 100, 1000, 10000]), ["10", "100", "1000", "10000"])
        self.assertEqual(rpb_plot.tick_labels([0.01, 0.1, 1, 10]), ["0.01", "0.1", "1", "10"])
        self.assertEqual(rpb_plot.tick_labels([0.5, 1.0, 1.5, 2.0]), ["0.5", "1.0", "1.5", "2.0"])
        self.assertEqual(rpb_plot.tick_labels([2.5e7, 5e7, 7.5e7]), ["2.5×10⁷", "5×10⁷", "7.5×10⁷"])
        self.assertEqual(rpb_plot.tick_labels([1e-4, 2e-4, 3e-4]), ["1×10⁻⁴", "2×10⁻⁴", "3×10⁻⁴"])
        self.assertEqual(rpb_plot.tick_labels([12000, 14000, 16000]), ["12000", "14000", "16000"])
        self.assertEqual(rpb_plot.tick_labels([0.002, 0.0025, 0.003]), ["0.0020", "0.0025", "0.0030"])
        self.assertEqual(rpb_plot.tick_labels([0, 0.0005, 0.001]), ["0", "5×10⁻⁴", "1×10⁻³"])
        self.assertEqual(rpb_plot.count_labels([64, 1024, 16384]), ["64", "1024", "16384"])

    def test_theme_constants_restyle_every_figure(self):
        dpi = rpb_plot.theme.DPI
        try:
            rpb_plot.theme.DPI = 200
            self.assertEqual(rpb_plot.new_figure(2, 2).dpi, 200)
        finally:
            rpb_plot.theme.DPI = dpi


PLAIN = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")  # a plain decimal: 16, 0.25
POWER = re.compile("^-?[0-9]+(\\.[0-9]+)?\u00d710\u207b?[\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+$|^0$")  # 2.5×10⁻³


def tick_texts(ax, which):
    """The non-empty major tick labels of an axis (x labels: their first line, the length; not its multiplier)."""
    axis = ax.yaxis if which == "y" else ax.xaxis
    return [t.get_text().split("\n")[0] for t in axis.get_majorticklabels() if t.get_text()]


def passkey_rows():
    """A passkey sweep's rows (rpb-results-6, 3 seeds, train length 16 at 1x, 2x, 4x): t5 learned it, alibi did not
    (its perplexity past 10^4 at 4x); every metric present (perplexity, attention distance and entropy, accuracy)."""
    def attention(d, e):
        return [[{"mean_distance_overall": d * m + s, "entropy_overall": e + 0.1 * m + 0.05 * s} for m in (1, 2, 4)]
                for s in range(3)]
    return [{"task": "passkey", "method": "t5", "scheme": "t5", "perplexity": [[1.2, 1.5, 2.0]] * 3,
             "attention": attention(5, 1.0), "accuracy": [[1.0, 0.9, 0.5], [0.98, 0.8, 0.4], [1.0, 0.85, 0.3]],
             "learned": [True, True, True], "bits_per_byte": None},
            {"task": "passkey", "method": "alibi", "scheme": "alibi", "perplexity": [[1.3, 40.0, 20000.0]] * 3,
             "attention": attention(3, 1.5), "accuracy": [[0.5, 0.4, 0.3]] * 3, "learned": [False] * 3,
             "bits_per_byte": None}]


class PaperRulesTest(FigureChecks):
    """The rules that make a figure one a paper can take as it is; each test fails when its rule is broken."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        path = results_file(cls.tmp.name, "passkey.json", passkey_rows(), multipliers=(1, 2, 4), fmt="rpb-results-6",
                            seeds=(0, 1, 2))
        cls.passkey = rpb_plot.draw(request("sweep", {"results": [path], "known_metrics": KNOWN_METRICS}))
        runs = [{"label": lab, "scheme": lab, "metrics_csv": os.path.join(DATA, f, "metrics.csv")}
                for lab, f in (("t5", "run_a"), ("alibi", "run_b"))]
        cls.curves = rpb_plot.draw(request("curves", {"runs": runs, "x": "step"}))
        cls.tokens = rpb_plot.draw(request("curves", {"runs": runs[:1], "x": "tokens"}))
        cls.figures = {"passkey": cls.passkey, "two tasks": rpb_plot.draw(sweep_request(["results.json"])),
                       "2-D": rpb_plot.draw(sweep_request(["results_2d.json"])),
                       "against lr": rpb_plot.draw(sweep_request(["results_grid.json"], against="optim.lr")),
                       "curves": cls.curves, "tokens": cls.tokens}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_one_legend_under_a_grid(self):
        for name, fig in self.figures.items():
            self.assertEqual(len(fig.legends), 1, name)
            self.assertEqual([ax for ax in fig.axes if ax.get_legend()], [], name)  # no legend repeated per panel
            self.assert_nothing_clipped(fig)  # the legend under the panels, over none
        # One task's four metrics: 2 x 2, never a tall column; two tasks: metrics by rows, tasks by columns.
        self.assertEqual(len(self.passkey.axes), 4)
        self.assertEqual(len({round(ax.get_position().x0, 3) for ax in self.passkey.axes}), 2)
        self.assertEqual(len({round(ax.get_position().y0, 3) for ax in self.passkey.axes}), 2)
        texts = legend_texts(self.passkey.axes[0])
        self.assertEqual(texts[:2], ["t5", "alibi"])  # each method once
        columns = {title_line(ax).split(" ")[0]: round(ax.get_position().x0, 3)
                   for ax in self.figures["two tasks"].axes}
        self.assertNotEqual(columns["markov"], columns["lag"])

    def test_seeds_and_band_written_on_the_figure(self):
        title = figure_legend(self.passkey.axes[0]).get_title().get_text()
        self.assertEqual(title, "mean ± std over 3 seeds (band)\nexact-match accuracy past the train length: over the "
                                "seeds that learned the task")
        self.assertTrue(any(c.get_gid() == "t5 band" for ax in self.passkey.axes for c in ax.collections))
        with tempfile.TemporaryDirectory() as tmp:
            rows = [{"task": "markov", "method": "t5", "scheme": "t5", "perplexity": [[4.0, 5.0]]}]
            fig = rpb_plot.draw(sweep_request([results_file(tmp, "one.json", rows)]))
            self.assertEqual(figure_legend(fig.axes[0]).get_title().get_text(), "1 seed: no band")
            self.assertEqual([c for c in fig.axes[0].collections if (c.get_gid() or "").endswith(" band")], [])
            two = results_file(tmp, "two.json", [dict(rows[0], method="alibi", scheme="alibi",
                                                      perplexity=[[4.1, 5.1], [4.2, 5.3]])], seeds=(0, 1))
            fig = rpb_plot.draw(sweep_request([results_file(tmp, "one.json", rows), two]))
            self.assertEqual(figure_legend(fig.axes[0]).get_title().get_text(), "mean ± std over 1-2 seeds (band)")

    def test_units_on_every_axis(self):
        x_labels = {"evaluation length (tokens, log2)", "evaluation grid side (cells, log2)",
                    "learning rate (optim.lr)", "training step", "tokens seen (millions)"}
        units = {m["label"]: m["unit"] for m in KNOWN_METRICS}
        units.update({"loss": None, "learning rate": ""})  # bits per byte's "loss" and the curves' loss, below
        for name, fig in self.figures.items():
            for ax in fig.axes:
                self.assertIn(ax.get_xlabel(), x_labels, name)
                label = ax.get_ylabel()
                quantity = label.split(" (")[0]
                self.assertIn(quantity, units, (name, label))
                if units[quantity] is None:
                    self.assertIn(label, ("loss (bits per byte)", "loss (nats per token)"), name)
                elif units[quantity]:
                    self.assertEqual(label, "%s (%s)" % (quantity, units[quantity]), name)
        ylabels = {ax.get_ylabel() for ax in self.passkey.axes}
        self.assertEqual(ylabels, {"perplexity", "mean attention distance (positions)", "attention entropy (nats)",
                                   "exact-match accuracy (%)"})

    def test_one_tick_form_per_axis_kind(self):
        # The issue's axes: learning rates 2e-3 beside 0.0025, a log axis's 1000 beside 1e4.
        for ticks in ([0.002, 0.0025, 0.003], [1, 10, 100, 1000, 10000], [10, 100, 1000, 10000, 100000], [1.0, 1.001]):
            texts = rpb_plot.tick_labels(ticks)
            self.assertTrue(all(PLAIN.match(t) for t in texts) or all(POWER.match(t) for t in texts), texts)
        for name, fig in self.figures.items():
            for ax in fig.axes:
                for which in ("x", "y"):
                    texts = tick_texts(ax, which)
                    self.assertTrue(all(PLAIN.match(t) for t in texts) or all(POWER.match(t) for t in texts),
                                    "%s, %s: %s axis mixes forms: %s" % (name, title_line(ax), which, texts))
        # Learning rates a×10^b (the curves' lr 0.001 .. 0.003 and a swept optim.lr); counts as plain integers
        # (steps, lengths); tokens seen in millions.
        lr = [ax for ax in self.curves.axes if title_line(ax) == "learning rate"][0]
        for ax, which in [(lr, "y")] + [(ax, "x") for ax in self.figures["against lr"].axes]:
            self.assertTrue(all(POWER.match(t) and t != "0" for t in tick_texts(ax, which)), tick_texts(ax, which))
        for ax in self.curves.axes + self.passkey.axes + self.figures["2-D"].axes:
            self.assertTrue(all(t.isdigit() for t in tick_texts(ax, "x")), tick_texts(ax, "x"))
        self.assertEqual(tick_texts(self.passkey.axes[0], "x"), ["16", "32", "64"])
        for ax in self.tokens.axes:
            ticks = tick_texts(ax, "x")
            self.assertTrue(ticks and all(PLAIN.match(t) and float(t) < 1 for t in ticks), ticks)  # 5120 .. 25600

    def test_accuracy_in_percent(self):
        (ax,) = [ax for ax in self.passkey.axes if ax.get_ylabel().startswith("exact-match accuracy")]
        self.assertEqual(ax.get_ylabel(), "exact-match accuracy (%)")
        t5 = method_lines(ax)["t5"]
        self.assertAlmostEqual(t5.get_ydata()[0], 100 * (1.0 + 0.98 + 1.0) / 3)  # results.json holds 0-1
        self.assertEqual(tick_texts(ax, "y")[0], "0")
        self.assertEqual(tick_texts(ax, "y")[-1], "100")  # the axis spans the metric's bounds, 0-100%

    def test_a_marker_and_a_dash_of_its_own_per_line(self):
        # Twelve methods of two schemes (variants share a colour family): told apart without colour, by marker and
        # dash, in the order the figure lists them.
        methods = ["t5", "alibi"] + ["t5@optim.lr=%d" % k for k in range(10)]
        with tempfile.TemporaryDirectory() as tmp:
            rows = [{"task": "markov", "method": m, "scheme": m.split("@")[0], "perplexity": [[4.0 + i, 5.0 + i]]}
                    for i, m in enumerate(methods)]
            fig = rpb_plot.draw(sweep_request([results_file(tmp, "many.json", rows)]))
            reversed_fig = rpb_plot.draw(sweep_request([results_file(tmp, "back.json", rows[::-1])]))
        figs = [fig, reversed_fig] + list(self.figures.values())
        for f in figs:
            for ax in f.axes:
                lines = list(method_lines(ax).values())
                looks = [(line.get_marker(), str(line._unscaled_dash_pattern)) for line in lines]
                self.assertEqual(len(set(looks)), len(looks), (title_line(ax), looks))
                if len(lines) <= len(rpb_plot.theme.LINE_MARKERS):
                    self.assertEqual(len({m for m, _ in looks}), len(looks), looks)  # markers alone differ
                    self.assertEqual(len({d for _, d in looks}), len(looks), looks)  # and dashes alone
        handles = figure_legend(fig.axes[0]).legend_handles if hasattr(figure_legend(fig.axes[0]), "legend_handles") \
            else figure_legend(fig.axes[0]).legendHandles
        for i, (label, handle) in enumerate(zip(methods, handles)):
            self.assertEqual((handle.get_label(), handle.get_marker()), (label, rpb_plot.line_look(i)[0]))
            line = method_lines(fig.axes[0])[label]  # the legend shows the line as drawn
            self.assertEqual((line.get_marker(), line._unscaled_dash_pattern),
                             (handle.get_marker(), handle._unscaled_dash_pattern))
        first = method_lines(reversed_fig.axes[0])[methods[-1]]  # by order: the first listed, whichever it is
        self.assertEqual((first.get_marker(), first.get_linestyle()), (rpb_plot.theme.LINE_MARKERS[0], "-"))

    def test_flat_data_gets_a_sensible_axis(self):
        # A perfect run: perplexity 1.000 .. 1.001 (log by its metric), accuracy 100% everywhere, one seed.
        with tempfile.TemporaryDirectory() as tmp:
            rows = [{"task": "passkey", "method": "t5", "scheme": "t5", "perplexity": [[1.0, 1.0004, 1.001]],
                     "accuracy": [[1.0, 1.0, 1.0]], "learned": [True], "bits_per_byte": None}]
            fig = rpb_plot.draw(sweep_request([results_file(tmp, "flat.json", rows, multipliers=(1, 2, 4),
                                                            fmt="rpb-results-6")]))
        panels = {ax.get_ylabel(): ax for ax in fig.axes}
        ppl = panels["perplexity"]
        self.assertEqual(ppl.get_yscale(), "linear")
        texts = tick_texts(ppl, "y")
        self.assertGreaterEqual(len(texts), 3, texts)
        self.assertTrue(all(PLAIN.match(t) for t in texts) and len(set(texts)) == len(texts), texts)
        self.assertTrue(all(len(t.split(".")[-1]) <= 2 for t in texts), texts)  # no tick 1.0002 beside 1.0004
        lo, hi = ppl.get_ylim()
        self.assertGreaterEqual(hi - lo, rpb_plot.theme.FLAT_SPAN)  # a span a reader can take in
        self.assertGreater(lo, 0.99)  # within perplexity's bound, 1
        self.assertEqual(tick_texts(panels["exact-match accuracy (%)"], "y")[::5], ["0", "100"])  # its bounds
        for value in (0.0, 3.5, 7.0):  # a single value: a linear axis around it, ticks of one form
            f = rpb_plot.new_figure(3, 3)
            ax = f.subplots()
            rpb_plot.set_axis(ax, "y", value, value, log=True)
            self.assertEqual(ax.get_yscale(), "linear")
            self.assertLess(ax.get_ylim()[0], value)
            self.assertGreater(ax.get_ylim()[1], value)
            self.assertGreaterEqual(len(tick_texts(ax, "y")), 2)


class OutputSafetyTest(unittest.TestCase):
    """The module writes its outputs into a temp file renamed over them, never through a link or over an input."""

    def run_script(self, req, path):
        with open(path, "w") as f:
            json.dump(req, f)
        return subprocess.run([sys.executable, os.path.join(SOURCE, "python", "rpb_plot"), path],
                              capture_output=True, text=True)

    def test_never_an_input_or_a_link(self):
        with tempfile.TemporaryDirectory() as tmp:
            results = os.path.join(tmp, "results.json")
            with open(os.path.join(DATA, "results.json")) as src, open(results, "w") as dst:
                dst.write(src.read())
            request_path = os.path.join(tmp, "request.json")
            target = os.path.join(tmp, "target.png")
            with open(target, "w") as f:
                f.write("keep")
            link = os.path.join(tmp, "link.png")
            os.symlink(target, link)
            for out, what in ((request_path, "input"), (results, "input"), (link, "not a regular file")):
                req = sweep_request([results])
                req["outputs"] = [{"path": out, "format": "png"}]
                p = self.run_script(req, request_path)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(what, p.stderr)
                with open(results) as f:
                    self.assertTrue(f.read().startswith("{"))
            with open(target) as f:
                self.assertEqual(f.read(), "keep")
            self.assertTrue(os.path.islink(link))
            req = sweep_request([results])
            req["outputs"] = [{"path": target, "format": "png"}]
            p = self.run_script(req, request_path)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(target, "rb") as f:
                self.assertTrue(f.read().startswith(b"\x89PNG"))
            self.assertEqual(sorted(os.listdir(tmp)), ["link.png", "request.json", "results.json", "target.png"])


class PlainTextTest(FigureChecks):
    """Labels are drawn as the text they are: a `$` is a dollar sign, never mathtext, whose parser refused these and
    cost a sweep its figure and its exit status."""
    LABEL = "t5@x=$a_$ and $\\frac{1}$"  # two spans mathtext refuses

    def test_curves_label_with_dollars(self):
        runs = [{"label": self.LABEL, "method": self.LABEL, "scheme": "t5",
                 "metrics_csv": os.path.join(DATA, "run_a", "metrics.csv")}]
        fig = rpb_plot.draw(request("curves", {"runs": runs, "x": "step", "ylim": None}))
        self.assertIn(self.LABEL, legend_texts(fig.axes[0]))
        fig.canvas.draw()  # rendered: the label is not parsed as mathtext
        dollars = [t for t in fig.findobj(Text) if "$" in t.get_text()]
        self.assertTrue(dollars)
        self.assertFalse(any(t.get_parse_math() for t in dollars))

    def test_sweep_method_with_dollars_written_by_the_script(self):
        with tempfile.TemporaryDirectory() as tmp:
            rows = [{"task": "markov", "method": self.LABEL, "scheme": "t5", "perplexity": [[4.0, 5.0]]}]
            req = sweep_request([results_file(tmp, "r.json", rows)])
            req["outputs"] = [{"path": os.path.join(tmp, "r.png"), "format": "png"}]
            p = subprocess.run([sys.executable, os.path.join(SOURCE, "python", "rpb_plot"), "-"],
                               input=json.dumps(req), capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(os.path.join(tmp, "r.png"), "rb") as f:
                self.assertTrue(f.read().startswith(b"\x89PNG"))
            self.assertIn(self.LABEL, legend_texts(rpb_plot.draw(req).axes[0])[0])


class WriteTest(unittest.TestCase):
    """Outputs: a failed write names the output asked for (never a temp file); the temp files of writes that were
    killed are removed by the next write of the same output; the request on standard input; an axis that overflows."""

    def setUp(self):
        self.fig = rpb_plot.draw(sweep_request(["results.json"]))

    def test_a_failed_write_names_the_output_not_a_temp_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "gone", "r.png")
            with self.assertRaises(rpb_plot.WriteError) as e:
                rpb_plot.save(self.fig, out)
            self.assertEqual(str(e.exception), 'cannot write "%s": No such file or directory' % out)
            temp = os.path.join(tmp, "gone", ".r.png.tmp.123")  # rpb's temp file, written directly
            with self.assertRaises(rpb_plot.WriteError) as e:
                rpb_plot.save(self.fig, temp, "png", direct=True, name=out)
            self.assertEqual(str(e.exception), 'cannot write "%s": No such file or directory' % out)

    def test_temp_files_of_killed_writes_are_removed_by_the_next(self):
        with tempfile.TemporaryDirectory() as tmp:
            child = subprocess.Popen([sys.executable, "-c", ""])
            child.wait()
            dead = str(child.pid)
            left = [".r.png.tmp." + dead, ".r.png.tmp.99999999999"]
            kept = [".r.png.tmp.%d" % os.getppid(), ".r.png.tmp.1x", ".s.png.tmp." + dead, "r.png.tmp." + dead,
                    ".r.png.tmp.0" + dead]
            for name in left + kept:
                with open(os.path.join(tmp, name), "w") as f:
                    f.write("x")
            os.mkdir(os.path.join(tmp, ".r.png.tmp.7" + dead))  # a folder under the name: left alone
            rpb_plot.save(self.fig, os.path.join(tmp, "r.png"))
            self.assertEqual(sorted(os.listdir(tmp)), sorted(kept + ["r.png", ".r.png.tmp.7" + dead]))

    def test_request_on_standard_input(self):
        p = subprocess.run([sys.executable, os.path.join(SOURCE, "python", "rpb_plot"), "-"],
                           input=json.dumps(sweep_request(["missing.json"])), capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertTrue(p.stderr.startswith("rpb_plot: bad request: "), p.stderr)
        self.assertIn("missing.json", p.stderr)

    def test_a_ylim_whose_span_overflows_is_refused(self):
        for ylim in ([-1e308, 1e308], [5e-324, 1e-323]):
            with self.assertRaisesRegex(rpb_plot.RequestError, "hi - lo between 1e-300 and 1e300"):
                rpb_plot.draw(sweep_request(["results.json"], ylim=ylim))


if __name__ == "__main__":
    unittest.main()
