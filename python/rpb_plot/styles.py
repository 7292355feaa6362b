"""How a method label looks in every figure: its scheme's registry colour and marker, a variant's shade, dash and
marker derived from its label's digest; the registry's styles read from `rpb schemes --json`."""
import colorsys
import hashlib
import os
from dataclasses import dataclass

from . import theme


@dataclass(frozen=True)
class Style:
    """How a method label is drawn in every figure."""
    color: str  # "#rrggbb"
    marker: str  # a matplotlib marker
    linestyle: object = "-"  # "-" or a dash tuple (offset, (on, off, ...))


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


def _variant(base, choice):
    """The variant Style of `base` at choice (shade, dash, marker) indices."""
    markers = [m for m in theme.VARIANT_MARKERS if m != base.marker]
    shades, dashes = theme.VARIANT_SHADES, theme.VARIANT_DASHES
    return Style(shade(base.color, shades[choice[0] % len(shades)]), markers[choice[2] % len(markers)],
                 dashes[choice[1] % len(dashes)])


def _choice(label):
    d = _digest(label)
    return d[0], d[1], d[2]


def style_of(label, styles, scheme):
    """The Style of a method label of `scheme` (as results.json rows and the curves block name it, never parsed
    from the label): the scheme's when the label is the scheme's name; for a variant ("t5@untrained=nearest", a
    grid point, a renamed run) the scheme's colour shaded, a dash and a marker other than the scheme's, each picked
    by the label's SHA-256."""
    base = base_style(scheme, styles)
    return base if label == scheme else _variant(base, _choice(label))


def figure_styles(labels, styles):
    """{label: Style} for the (label, scheme) pairs of one figure: style_of each, except that a variant whose look
    another label of the figure already has takes the next free (shade, dash, marker) combination after its own,
    the variants taken in sorted order (deterministic; the same labels give the same looks in every figure)."""
    out, used = {}, set()
    pairs = list(dict.fromkeys(labels))
    for label, scheme in pairs:
        if label == scheme:
            out[label] = base_style(scheme, styles)
            used.add(out[label])
    for label, scheme in sorted(p for p in pairs if p[0] != p[1]):
        base, first = base_style(scheme, styles), _choice(label)
        sizes = (len(theme.VARIANT_SHADES), len(theme.VARIANT_DASHES), len(theme.VARIANT_MARKERS) - 1)
        for k in range(sizes[0] * sizes[1] * sizes[2]):
            step = (k % sizes[2], k // sizes[2] % sizes[1], k // (sizes[2] * sizes[1]))  # marker, then dash, shade
            style = _variant(base, (first[0] + step[2], first[1] + step[1], first[2] + step[0]))
            if style not in used:
                break
        out[label] = style
        used.add(style)
    return out


def seed_style(style, k):
    """The look of a method's k-th run in one figure (k = 0, 1, ...: its seeds): the method's Style for the first,
    then the same colour and marker with theme.SEED_DASHES in turn (seeds differ by dash only)."""
    if k == 0:
        return style
    dashes = [d for d in theme.SEED_DASHES if d != style.linestyle]
    return Style(style.color, style.marker, dashes[(k - 1) % len(dashes)])


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

