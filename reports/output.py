"""Figures as files: PNG at any resolution, PDF and SVG, in a screen or a paper style.

A report figure is a :class:`Plot`: a drawing function and its size, drawn only when written
(:func:`render`), so the same figure can be written in several formats and styles. Drawing
happens on a fresh :class:`~matplotlib.figure.Figure` (no pyplot: no global state, no GUI
backend) inside a :func:`matplotlib.rc_context` holding the style, which stays active while the
files are saved (tick labels are created when the figure is drawn).

Styles (:data:`STYLES`):

``screen``
    The figure's own size (about 9 × 5 inches), 10 pt text: for the HTML report and slides.
``paper``
    One column of a two-column paper: 3.3 inches wide (ACM and IEEE columns are 3.33 and 3.5
    inches), or 7 inches for a figure spanning the page (``span="page"``), 8 pt text, 7 pt tick
    labels and legends, thinner lines. On figures this narrow, legends move below the figure,
    descriptive titles are left to the caption and axis labels are shortened (:func:`fit_text`,
    :func:`place_legend`).

Fonts: PDFs embed TrueType (Type 42) fonts, as publishers' PDF checkers ask (Type 3 fonts are
commonly flagged); SVGs keep text as text (``svg.fonttype = "none"``), small and editable,
rendered with the viewer's DejaVu Sans or a substitute.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import matplotlib as mpl
import numpy as np
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from PIL import Image

from schedlab.io import atomic_path

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

VECTOR_FORMATS = ("pdf", "svg")
"""Vector formats a figure can be written in, besides PNG."""

FILE_FORMATS = ("png", *VECTOR_FORMATS)
"""Every format a figure can be written in."""

BASE_RC: dict[str, Any] = {"pdf.fonttype": 42, "svg.fonttype": "none", "savefig.facecolor": "white"}
"""Settings of every style: TrueType fonts in PDFs, text as text in SVGs, white background."""

NARROW_INCHES = 5.0
"""Figures narrower than this get their legends below the figure (:func:`place_legend`)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Style:
    """How figures look: sizes in inches, text in points."""

    name: str
    """``"screen"`` or ``"paper"``."""
    column_width: float | None
    """Width of a one-column figure (inches); None keeps each figure's own size."""
    page_width: float | None
    """Width of a figure spanning the page (inches); None keeps each figure's own size."""
    height_scale: float
    """Paper height = screen height × (paper width / screen width) × this (room for legends
    moved below the plot)."""
    rc: Mapping[str, Any] = field(default_factory=dict)
    """matplotlib settings on top of seaborn's ``whitegrid`` and :data:`BASE_RC`."""

    def size(self, plot: Plot) -> tuple[float, float]:
        """Figure size (inches) of ``plot`` in this style."""
        w, h = plot.size
        width = self.page_width if plot.span == "page" else self.column_width
        if width is None:
            return w, h
        if plot.paper is not None:
            return plot.paper
        return width, max(1.6, h * width / w * self.height_scale)


SCREEN = Style(
    name="screen",
    column_width=None,
    page_width=None,
    height_scale=1.0,
    rc={"font.size": 10, "legend.fontsize": 9, "legend.title_fontsize": 9},
)
PAPER = Style(
    name="paper",
    column_width=3.3,
    page_width=7.0,
    height_scale=1.45,
    rc={
        "font.size": 8,
        "axes.titlesize": 8,
        "axes.labelsize": 8,
        "xtick.labelsize": 7,
        "ytick.labelsize": 7,
        "legend.fontsize": 7,
        "legend.title_fontsize": 7,
        "lines.linewidth": 1.1,
        "lines.markersize": 3.5,
        "axes.linewidth": 0.6,
        "grid.linewidth": 0.4,
        "patch.linewidth": 0.5,
        "xtick.major.width": 0.6,
        "ytick.major.width": 0.6,
        "xtick.major.size": 3,
        "ytick.major.size": 3,
        "legend.handlelength": 1.6,
        "legend.columnspacing": 1.0,
    },
)
STYLES = {"screen": SCREEN, "paper": PAPER}
"""Styles by name (``--style screen|paper``)."""


@dataclass(frozen=True, slots=True)
class Plot:
    """A figure to draw: ``draw(fig)`` adds its Axes to the (empty) Figure ``fig``."""

    draw: Callable[[Figure], Any]
    """Draws onto an empty Figure."""
    size: tuple[float, float]
    """Size in the screen style (width, height), inches."""
    span: Literal["column", "page"] = "column"
    """Width in the paper style: one column, or the whole page (two columns)."""
    paper: tuple[float, float] | None = None
    """Size in the paper style (inches), when the default scaling of ``size`` does not fit."""


def figure(
    draw: Callable[[Axes], Any],
    size: tuple[float, float],
    *,
    span: Literal["column", "page"] = "column",
    paper: tuple[float, float] | None = None,
) -> Plot:
    """A :class:`Plot` of one Axes: ``draw(ax)`` draws on it."""
    return Plot(lambda fig: draw(fig.subplots()), size, span, paper)


def panels(
    draw: Callable[[np.ndarray], Any],
    size: tuple[float, float],
    *,
    nrows: int = 1,
    ncols: int = 1,
    span: Literal["column", "page"] = "page",
    **subplots: Any,
) -> Plot:
    """A :class:`Plot` of a grid of Axes: ``draw(axes)`` gets them as an array of shape
    ``(nrows, ncols)``; ``subplots`` go to :meth:`~matplotlib.figure.Figure.subplots` (e.g.
    ``sharex=True``, ``gridspec_kw``)."""
    return Plot(lambda fig: draw(fig.subplots(nrows, ncols, squeeze=False, **subplots)), size, span)


@dataclass(frozen=True, kw_only=True, slots=True)
class FigureOptions:
    """Which files a report writes for each figure."""

    dpi: int = 200
    """Resolution of the PNG files (dots per inch)."""
    style: str = "screen"
    """A name of :data:`STYLES`."""
    vector: tuple[str, ...] | None = None
    """Vector copies written beside each PNG (a subset of :data:`VECTOR_FORMATS`); None: PDF
    and SVG in the paper style, none in the screen style (they cost more time than the PNG)."""
    html_dpi: int = 100
    """Resolution of the lighter PNG copies embedded in HTML (at most ``dpi``)."""

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            msg = f"style must be one of {sorted(STYLES)}, got {self.style!r}"
            raise ValueError(msg)
        bad = [f for f in self.vector or () if f not in VECTOR_FORMATS]
        if bad:
            msg = f"vector formats must be among {VECTOR_FORMATS}, got {bad}"
            raise ValueError(msg)
        if not (self.dpi > 0 and self.html_dpi > 0):
            msg = f"dpi and html_dpi must be > 0, got {self.dpi} and {self.html_dpi}"
            raise ValueError(msg)

    @property
    def vector_formats(self) -> tuple[str, ...]:
        """The vector formats written (``vector``, or the style's default)."""
        if self.vector is not None:
            return tuple(dict.fromkeys(self.vector))
        return VECTOR_FORMATS if self.style == "paper" else ()


def render(
    plot: Plot,
    formats: Sequence[str] = ("png",),
    *,
    dpi: int = 100,
    html_dpi: int | None = None,
    style: str | Style = "screen",
) -> dict[str, bytes]:
    """Draw ``plot`` once and save it in each of ``formats``.

    Parameters
    ----------
    plot
        The figure.
    formats
        Formats to save, among :data:`FILE_FORMATS`.
    dpi
        Resolution of the PNG (dots per inch).
    html_dpi
        Resolution of a lighter PNG copy, averaged down from the PNG's pixels (no second
        drawing); None for none. Needs ``"png"`` in ``formats``.
    style
        A :class:`Style` or the name of one.

    Returns
    -------
    dict
        Each format (and ``"html"`` with ``html_dpi``) -> file contents.

    Raises
    ------
    ValueError
        If a format is unknown.
    """
    drawn = draw(plot, formats, dpi=dpi, style=style)
    return encode(drawn, None if html_dpi is None else html_dpi / dpi)


def draw(
    plot: Plot, formats: Sequence[str] = ("png",), *, dpi: int = 100, style: str | Style = "screen"
) -> dict[str, Image.Image | bytes]:
    """The drawing half of :func:`render`: ``"png"`` -> the RGBA image (not yet encoded), each
    vector format -> its file contents. Matplotlib holds the interpreter while it draws;
    :func:`encode` does not (Pillow releases it), so a report encodes one figure in a thread
    while it draws the next."""
    bad = [f for f in formats if f not in FILE_FORMATS]
    if bad:
        msg = f"figure formats must be among {FILE_FORMATS}, got {bad}"
        raise ValueError(msg)
    st = STYLES[style] if isinstance(style, str) else style
    out: dict[str, Image.Image | bytes] = {}
    # the keys are matplotlib's (rc_context checks them); the stubs want them as literals
    rc = cast("dict[RcKeyType, Any]", {**BASE_RC, **st.rc})
    with sns.axes_style("whitegrid"), mpl.rc_context(rc):
        fig = Figure(figsize=st.size(plot), layout="constrained")
        plot.draw(fig)
        for fmt in formats:
            if fmt == "png":
                out["png"] = _raster(fig, dpi)
            else:
                buf = io.BytesIO()
                fig.savefig(buf, format=fmt)
                out[fmt] = buf.getvalue()
            fig.set_layout_engine("none")  # keep the layout of the first save: one draw each
    return out


def encode(drawn: dict[str, Image.Image | bytes], html: float | None = None) -> dict[str, bytes]:
    """The files of :func:`draw`'s output: the PNG encoded (and, with ``html``, a copy scaled
    by that factor under ``"html"``), the vector files as they are."""
    out = {k: v for k, v in drawn.items() if isinstance(v, bytes)}
    image = drawn.get("png")
    if isinstance(image, Image.Image):
        rgb = image.convert("RGB")
        out["png"] = _encode(rgb)
        if html is not None:
            out["html"] = _encode(_shrink(rgb, html))
    return out


def _raster(fig: Figure, dpi: int) -> Image.Image:
    """``fig`` drawn at ``dpi`` as an RGBA image (white background)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="rgba", dpi=dpi)
    width = int(fig.get_figwidth() * dpi)
    raw = buf.getvalue()
    return Image.frombuffer("RGBA", (width, len(raw) // (4 * width)), raw, "raw", "RGBA", 0, 1)


def _shrink(image: Image.Image, factor: float) -> Image.Image:
    """``image`` scaled by ``factor`` (<= 1) with a box filter (pixel averages)."""
    if factor >= 1.0:
        return image
    inverse = 1.0 / factor
    if abs(inverse - round(inverse)) < 1e-9:
        return image.reduce(round(inverse))
    size = (max(1, round(image.width * factor)), max(1, round(image.height * factor)))
    return image.resize(size, Image.Resampling.BOX)


def _encode(image: Image.Image) -> bytes:
    """PNG bytes of ``image`` (zlib level 3: nearly the size of level 6, in 2/3 of the time)."""
    buf = io.BytesIO()
    image.save(buf, format="png", compress_level=3)
    return buf.getvalue()


def save(
    plot: Plot, path: str | os.PathLike[str], *, dpi: int = 200, style: str | Style = "screen"
) -> Path:
    """Write ``plot`` to ``path`` (atomically) in the format its suffix names.

    Raises
    ------
    ValueError
        If the suffix is not one of :data:`FILE_FORMATS`.
    """
    target = Path(path)
    fmt = target.suffix.lower().lstrip(".")
    if fmt not in FILE_FORMATS:
        msg = f"{target}: the file name must end in one of {[f'.{f}' for f in FILE_FORMATS]}"
        raise ValueError(msg)
    data = render(plot, (fmt,), dpi=dpi, style=style)[fmt]
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
    return target


def is_narrow(ax: Axes) -> bool:
    """Whether the figure of ``ax`` is too narrow for a legend beside the plot."""
    return bool(ax.figure.figure.get_figwidth() < NARROW_INCHES)  # the root Figure


def fit_text(
    ax: Axes,
    *,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    short: dict[str, str] | None = None,
    slant: bool = False,
) -> None:
    """Set the title and axis labels; on a narrow figure use the ``short`` variants (keys
    ``"xlabel"``, ``"ylabel"``), leave the title out (the caption carries it) and, with
    ``slant``, slant the x tick labels (categories) so they do not overlap."""
    narrow = is_narrow(ax)
    alt = short or {}
    if title is not None and not narrow:
        ax.set_title(title)
    if xlabel is not None:
        ax.set_xlabel(alt.get("xlabel", xlabel) if narrow else xlabel)
    if ylabel is not None:
        ax.set_ylabel(alt.get("ylabel", ylabel) if narrow else ylabel)
    if narrow and slant:
        ax.tick_params(axis="x", labelrotation=35)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
            label.set_rotation_mode("anchor")


def place_panel_legend(axes: Sequence[Axes], **kwargs: Any) -> None:
    """One legend for panels stacked top to bottom: beside the top one, or below the bottom
    one on a narrow figure; ``kwargs`` go to :func:`place_legend`."""
    place_legend(axes[-1] if is_narrow(axes[0]) else axes[0], **kwargs)


def place_legend(
    ax: Axes,
    *,
    title: str | None = "Policy",
    ncol: int | None = None,
    handles: Sequence[Any] | None = None,
) -> None:
    """Legend outside the Axes: right of it on wide figures, below the figure on narrow ones.

    Narrow figures (:data:`NARROW_INCHES`, e.g. one paper column) cannot spare the width of a
    legend; below the figure (a figure legend, placed by the constrained layout) it spreads over
    up to three columns (one for long labels). The entries are ``handles`` (artists with
    labels) or the labelled artists of ``ax``; nothing happens when there are none.
    """
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    else:
        labels = [h.get_label() for h in handles]
    if not handles:
        return
    old = ax.get_legend()
    if old is not None:
        old.remove()  # e.g. seaborn's own, replaced by this one
    if is_narrow(ax):
        cols = ncol or (1 if max(map(len, labels)) > 24 else min(3, len(labels)))
        ax.figure.legend(
            handles, labels, title=title, loc="outside lower center", ncol=cols, frameon=False
        )
    else:
        ax.legend(
            handles,
            labels,
            title=title,
            loc="upper left",
            frameon=False,
            ncol=ncol or 1,
            bbox_to_anchor=(1.01, 1.0),
        )
