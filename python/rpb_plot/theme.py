"""The constants that style every figure: edit them here (or set rpb_plot.theme.DPI = 300 and the like before
drawing; the drawing code reads them here when it draws) to restyle every figure."""

PANEL_SIZE = (4.8, 3.3)  # inches of one panel, before its legend
LEGEND_ROW = 0.21  # inches per legend row under a panel
DPI = 150  # png resolution
BAND_ALPHA = 0.18  # the mean ± std band's opacity
# The palette and markers of a scheme the request's styles do not list (matplotlib's tab10, its filled markers).
FALLBACK_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
FALLBACK_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
# A variant's changes from its scheme's style, picked by its label's SHA-256: lightness (HLS), dash, marker.
VARIANT_SHADES = (-0.22, 0.18, -0.36, 0.30)
VARIANT_DASHES = ((0, (5, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)), (0, (3, 1, 1, 1, 1, 1)))
VARIANT_MARKERS = ("s", "^", "D", "v", "P", "X", "*", "<", ">", "h")
SEED_DASHES = ((0, (4, 1.5)), (0, (1, 1)), (0, (5, 1.5, 1, 1.5)), (0, (2, 2)))  # curves: a method's 2nd, 3rd, ... run
OPTIMUM_STYLE = {"color": "black", "linestyle": (0, (6, 3)), "linewidth": 1.3}
HEAD_COLORS = FALLBACK_COLORS  # 1-D bias: one colour and marker per head (10 and 9: 90 heads before a repeat)
HEAD_MARKERS = FALLBACK_MARKERS[:9]
UNTRAINED_STYLE = {"linestyle": (0, (1, 1.2)), "linewidth": 1.6}  # 1-D bias at untrained rows
TRAINED_SHADE = {"color": "#f0e6c8", "alpha": 0.7}  # 1-D bias: the trained range
HEATMAP_CMAP = "RdBu_r"  # 2-D bias: red above zero, blue below
HEADS_PER_ROW = 4  # 2-D bias: heatmaps per row
FEW_HEADS = 8  # 1-D bias: a module with at most this many heads lists values in its legend
