"""matplotlib on the Agg backend, and the classes of it the figures use; `matplotlib` is None when it cannot be
imported (building requests and styles works without it; drawing raises MatplotlibMissing)."""
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
