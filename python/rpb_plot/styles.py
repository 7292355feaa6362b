"""How lines look: a method's colour (its scheme's, theme.SCHEME_STYLES; a variant's a shade of it derived from its
label's digest), and each line of a figure a marker and a dash pattern of its own, by its order in the figure, so
lines are told apart in greyscale; the registry's styles read from `rpb schemes --json`."""
import colorsys
import hashlib
import os
from dataclasses import dataclass

from . import theme


@dataclass(frozen=True)
class Style:
    """How a line is drawn."""
    color: str  # "#rrggbb"
    marker: str  # a matplotlib marker
    linestyle: object = "-"  # "-" or a dash tuple (offset, (on, off, ...))


def _digest(text):
    return hashlib.sha256(text.encode("utf-8")).digest()


def base_style(scheme, styles=None):
    """The scheme's colour and marker: a request's own (its styles entry giving both), else theme.SCHEME_STYLES',
    else from theme.FALLBACK_* by the scheme name's digest (deterministic: the same in every figure and every run),
    so a scheme new to rpb is drawn without an entry here."""
    for entry in (styles or {}).get("schemes", []):
        if entry.get("name") == scheme and entry.get("color") and entry.get("marker"):
            return Style(entry["color"], entry["marker"])
    if scheme in theme.SCHEME_STYLES:
        return Style(*theme.SCHEME_STYLES[scheme])
    d = _digest(scheme)
    colors, markers = theme.FALLBACK_COLORS, theme.FALLBACK_MARKERS
    return Style(colors[d[0] % len(colors)], markers[d[1] % len(markers)])


def shade(color, amount):
    """`color` ("#rrggbb") with its HLS lightness moved by `amount` (-1 .. 1), clamped."""
    r, g, b = (int(color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, lightness, s = colorsys.rgb_to_hls(r, g, b)
    r, g, b = colorsys.hls_to_rgb(h, min(0.85, max(0.12, lightness + amount)), s)
    return "#%02x%02x%02x" % tuple(round(255 * c) for c in (r, g, b))


def method_color(label, scheme, styles):
    """The colour of a method label of `scheme` (as results.json rows and the curves block name it, never parsed
    from the label), the same in every figure: the scheme's when the label is the scheme's name; for a variant
    ("t5@untrained=nearest", a grid point, a renamed run) the scheme's colour shaded by an amount its label's SHA-256
    picks."""
    base = base_style(scheme, styles).color
    return base if label == scheme else shade(base, theme.VARIANT_SHADES[_digest(label)[0] % len(theme.VARIANT_SHADES)])


def line_look(i):
    """(marker, dash) of a figure's i-th line (0, 1, ...): each line's pair its own (theme.LINE_MARKERS and
    theme.LINE_DASHES; 100 lines before a pair repeats)."""
    markers, dashes = theme.LINE_MARKERS, theme.LINE_DASHES
    return markers[i % len(markers)], dashes[(i + i // len(markers)) % len(dashes)]


def figure_styles(labels, styles):
    """{label: Style} for the (label, scheme) pairs of one figure, in the figure's order (its legend's): the label's
    method_color, and the i-th label line_look(i), a marker and a dash of its own (deterministic: the same labels in
    the same order look the same in every figure)."""
    out = {}
    for label, scheme in dict.fromkeys(labels):
        if label not in out:
            out[label] = Style(method_color(label, scheme, styles), *line_look(len(out)))
    return out


def scheme_dims(scheme, styles):
    """The dims the styles give a scheme ("dims" as `rpb schemes --json` writes it: [1], [2] or [1, 2]): 1 or 2,
    or None when unknown or both."""
    for entry in (styles or {}).get("schemes", []):
        if entry.get("name") == scheme:
            dims = entry.get("dims")
            return dims[0] if isinstance(dims, list) and len(dims) == 1 and dims[0] in (1, 2) else None
    return None


def rpb_binary():
    """The rpb to ask for styles: env RPB, else build/rpb of the source tree holding python/rpb_plot/."""
    source = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.environ.get("RPB") or os.path.join(source, "build", "rpb")
