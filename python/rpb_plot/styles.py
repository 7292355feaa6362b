"""How a method label looks in every figure: its scheme's registry colour and marker, a variant's shade, dash and
marker derived from its label's digest; the registry's styles read from `rpb schemes --json`."""
import colorsys
import hashlib
import json
import os
import subprocess
from dataclasses import dataclass

from . import theme


@dataclass(frozen=True)
class Style:
    """How a method label is drawn in every figure."""
    color: str  # "#rrggbb"
    marker: str  # a matplotlib marker
    linestyle: object = "-"  # "-" or a dash tuple (offset, (on, off, ...))


def scheme_of(label):
    """The scheme of a method label: the part before the first '@' ("t5@untrained=nearest" -> "t5")."""
    return label.split("@", 1)[0]


def _digest(text):
    return hashlib.sha256(text.encode("utf-8")).digest()


def base_style(scheme, styles=None):
    """The scheme's colour and marker from the request's styles (rpb's registry), else from theme.FALLBACK_* by
    the scheme name's digest (deterministic: the same in every figure and every run)."""
    for entry in (styles or {}).get("schemes", []):
        if entry.get("name") == scheme and entry.get("color") and entry.get("marker"):
            return Style(entry["color"], entry["marker"])
    d = _digest(scheme)
    colors, markers = theme.FALLBACK_COLORS, theme.FALLBACK_MARKERS
    return Style(colors[d[0] % len(colors)], markers[d[1] % len(markers)])


def shade(color, amount):
    """`color` ("#rrggbb") with its HLS lightness moved by `amount` (-1 .. 1), clamped."""
    r, g, b = (int(color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, lightness, s = colorsys.rgb_to_hls(r, g, b)
    r, g, b = colorsys.hls_to_rgb(h, min(0.85, max(0.12, lightness + amount)), s)
    return "#%02x%02x%02x" % tuple(round(255 * c) for c in (r, g, b))


def style_of(label, styles=None, scheme=None):
    """The Style of a method label: its scheme's (scheme_of(label) unless given) when the label is the scheme's
    name; for a variant ("t5@untrained=nearest", a grid point, a renamed run) the scheme's colour shaded, a dash
    and a marker other than the scheme's, each picked by the label's SHA-256."""
    scheme = scheme or scheme_of(label)
    base = base_style(scheme, styles)
    if label == scheme:
        return base
    d = _digest(label)
    markers = [m for m in theme.VARIANT_MARKERS if m != base.marker]
    shades, dashes = theme.VARIANT_SHADES, theme.VARIANT_DASHES
    return Style(shade(base.color, shades[d[0] % len(shades)]), markers[d[2] % len(markers)],
                 dashes[d[1] % len(dashes)])


def scheme_dims(scheme, styles):
    """The dims the styles give a scheme (1, 2, or None when unknown or both)."""
    for entry in (styles or {}).get("schemes", []):
        if entry.get("name") == scheme:
            dims = entry.get("dims")
            dims = dims if isinstance(dims, list) else [dims]
            return dims[0] if len(dims) == 1 and dims[0] in (1, 2) else None
    return None


def rpb_binary():
    """The rpb to ask for styles: env RPB, else build/rpb of the source tree holding python/rpb_plot/."""
    source = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.environ.get("RPB") or os.path.join(source, "build", "rpb")


def load_styles(rpb=None):
    """`rpb schemes --json` (its "schemes": name, dims, label, color, marker), or {"schemes": []} when rpb is
    missing or fails (style_of then uses the deterministic fallback palette)."""
    try:
        out = subprocess.run([rpb or rpb_binary(), "schemes", "--json"], capture_output=True, text=True,
                             timeout=60, check=True).stdout
        return {"schemes": json.loads(out).get("schemes", [])}
    except (OSError, subprocess.SubprocessError, ValueError, AttributeError):
        return {"schemes": []}

