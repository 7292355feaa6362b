"""The constants that style every figure: edit them here (or set rpb_plot.theme.DPI = 300 and the like before
drawing; the drawing code reads them here when it draws) to restyle every figure."""

PANEL_SIZE = (4.8, 3.3)  # inches of one panel
LEGEND_ROW = 0.21  # inches per legend row under a panel (the bias figures' legends)
GRID_COLUMNS = 3  # a figure of one row or one column of panels is wrapped into rows of at most this many
DPI = 150  # png resolution
BAND_ALPHA = 0.18  # the mean ± std band's opacity
# Each scheme's colour and marker (rpb schemes --json lists the schemes): distinct among the schemes of one dims, a
# 2-D scheme in its 1-D relative's colour. Presentation only: a scheme without an entry gets a fallback below.
SCHEME_STYLES = {
    "learned": ("#8c564b", "v"), "sinusoidal": ("#e377c2", "P"), "rope": ("#9467bd", "D"), "t5": ("#1f77b4", "o"),
    "shaw": ("#ff7f0e", "s"), "log_decay": ("#bcbd22", "X"), "kerple_power": ("#637939", "d"),
    "alibi": ("#2ca02c", "^"), "xpos": ("#393b79", "*"), "fire": ("#17becf", "H"),
    "swin": ("#d62728", "h"), "swin_v2": ("#17becf", "p"), "learned2d": ("#8c564b", "v"),
    "sinusoidal2d": ("#e377c2", "P"), "alibi2d": ("#2ca02c", "^"), "clipped2d": ("#ff7f0e", "s"),
    "none": ("#7f7f7f", "x"),
}
# The palette and markers of a scheme SCHEME_STYLES does not list (matplotlib's tab10, its filled markers).
FALLBACK_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
FALLBACK_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
# A variant's colour (any label other than its scheme's name): the scheme's, its HLS lightness moved by one of these,
# picked by its label's SHA-256.
VARIANT_SHADES = (-0.22, 0.18, -0.36, 0.30)
# The i-th line of a figure (in legend order) has LINE_MARKERS[i] and LINE_DASHES[(i + i // 10) % 10]: a marker and a
# dash pattern of its own (100 lines before a pair repeats), so lines are told apart in greyscale. The markers'
# outlines differ (no circle beside a hexagon); the dashes are each clear at the figures' line width.
LINE_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINE_DASHES = ("-", (0, (5, 2)), (0, (1, 1.2)), (0, (7, 2, 1.5, 2)), (0, (2.5, 1.5)),
               (0, (9, 2.5)), (0, (4, 1.5, 1, 1.5, 1, 1.5)), (0, (1, 3)), (0, (6, 1.5, 3, 1.5)), (0, (12, 2, 2, 2)))
OPTIMUM_STYLE = {"color": "black", "linestyle": (0, (6, 3)), "linewidth": 1.3}
# Flat data: values spanning less than FLAT_FRACTION of their magnitude (a perfect run's perplexity 1.000 .. 1.001)
# are drawn on a linear axis FLAT_SPAN of their magnitude wide (within the metric's bounds), not over a span whose
# ticks would differ in the fourth digit.
FLAT_FRACTION = 0.005
FLAT_SPAN = 0.05
HEAD_COLORS = FALLBACK_COLORS  # 1-D bias: one colour and marker per head (10 and 9: 90 heads before a repeat)
HEAD_MARKERS = FALLBACK_MARKERS[:9]
UNTRAINED_STYLE = {"linestyle": (0, (1, 1.2)), "linewidth": 1.6}  # 1-D bias at untrained rows
TRAINED_SHADE = {"color": "#f0e6c8", "alpha": 0.7}  # 1-D bias: the trained range
HEATMAP_CMAP = "RdBu_r"  # 2-D bias: red above zero, blue below
HEADS_PER_ROW = 4  # 2-D bias: heatmaps per row
FEW_HEADS = 8  # 1-D bias: a module with at most this many heads lists values in its legend
