"""matplotlib on the Agg backend, and the classes of it the figures use; `matplotlib` is None when it cannot be
imported (building requests and styles works without it; drawing raises MatplotlibMissing). PLAIN_TEXT: the settings
every figure is drawn and written under."""
try:
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import PatchCollection
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullFormatter, NullLocator
    from matplotlib.transforms import ScaledTranslation
except ImportError:
    matplotlib = None
    FigureCanvasAgg = PatchCollection = Figure = Line2D = Patch = Rectangle = None
    FixedFormatter = FixedLocator = NullFormatter = NullLocator = ScaledTranslation = None

# Labels are text as written: a `$` in a method's or a run's name is a dollar sign, never the start of mathtext (whose
# parser refused "$x_$" and lost the figure) or TeX. Only the settings this matplotlib has (text.parse_math: 3.5+).
PLAIN_TEXT = {} if matplotlib is None else {k: v for k, v in (("text.parse_math", False), ("text.usetex", False))
                                            if k in matplotlib.rcParams}
