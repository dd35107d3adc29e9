"""Every chart as a file for a paper: SVG, PNG or PDF drawn by matplotlib in a plain style, and
its data as CSV, from the same Plotly figure JSON the page draws (one source for both).

The pages draw scatter traces (lines, markers, asymmetric error bars), in one plot or in a grid
of subplots, with dotted vertical or horizontal reference lines; that is what is drawn here.
Hover text and colours of the page's theme are left out; trace colours are kept.
"""

from __future__ import annotations

import base64
import csv
import io
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from django.http import Http404, HttpRequest, HttpResponse
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

FORMATS = {
    "svg": "image/svg+xml",
    "png": "image/png",
    "pdf": "application/pdf",
    "csv": "text/csv; charset=utf-8",
}
CSV_COLUMNS = ("series", "x", "y", "low", "high")
WIDTH_INCHES = 6.4
PANEL_HEIGHT_INCHES = 3.6
PNG_DPI = 200
TITLE_WIDTH = 80  # characters a title line holds at this width
LEGEND_COLUMN_CHARACTERS = 45  # the longest legend entry two columns hold at this width
DASHES = {"dot": ":", "dash": "--", "dashdot": "-."}


def _numbers(values: Any) -> list[Any]:
    """A trace's array: a list, or Plotly's typed-array form ``{"dtype", "bdata"}``."""
    if values is None:
        return []
    if isinstance(values, Mapping) and "bdata" in values:
        return list(np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"]))
    return list(values)


def _text(value: Any) -> str:
    """A Plotly title, given as text or as ``{"text": ...}``; HTML line breaks as spaces."""
    text = value.get("text", "") if isinstance(value, Mapping) else (value or "")
    return re.sub(r"<br\s*/?>", " ", str(text))


def _axis_name(reference: str, letter: str) -> str:
    """A trace's ``"x2"`` is the layout's ``"xaxis2"``."""
    return f"{letter}axis{reference[1:]}"


def _error_bounds(
    trace: Mapping[str, Any], ys: Sequence[float]
) -> tuple[list[float | None], list[float | None]] | None:
    """Each point's interval from the trace's error bars (None for a point without one)."""
    error = trace.get("error_y") or {}
    above = _numbers(error.get("array"))
    if not above:
        return None
    below = _numbers(error.get("arrayminus")) or above
    lows = [None if minus is None else y - minus for y, minus in zip(ys, below, strict=True)]
    highs = [None if plus is None else y + plus for y, plus in zip(ys, above, strict=True)]
    return lows, highs


def _legend_label(trace: Mapping[str, Any]) -> str | None:
    """The trace's name, unless the page keeps it out of the legend."""
    return None if trace.get("showlegend") is False else trace.get("name")


def _style_axis(axes: Any, layout: Mapping[str, Any], x_name: str, y_name: str) -> None:
    x_axis, y_axis = layout.get(x_name, {}), layout.get(y_name, {})
    axes.set_xlabel(_text(x_axis.get("title")))
    axes.set_ylabel(_text(y_axis.get("title")))
    if x_axis.get("range"):
        axes.set_xlim(*x_axis["range"])
    if y_axis.get("range"):
        axes.set_ylim(*y_axis["range"])
    if x_axis.get("dtick") == 1:
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    if str(y_axis.get("tickformat", "")).endswith("%"):
        axes.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    axes.spines[["top", "right"]].set_visible(False)
    axes.grid(True, color="#e4e7ec", linewidth=0.6)
    axes.set_axisbelow(True)


def _reference_lines(
    axes_by_name: Mapping[tuple[str, str], Any], layout: Mapping[str, Any]
) -> None:
    for shape in layout.get("shapes", ()):
        if shape.get("type") != "line":
            continue
        x_ref = str(shape.get("xref", "x")).split(" ")[0]
        y_ref = str(shape.get("yref", "y")).split(" ")[0]
        axes = axes_by_name.get(
            (x_ref if x_ref != "paper" else "x", y_ref if y_ref != "paper" else "y")
        )
        if axes is None:
            continue
        line = shape.get("line", {})
        style = {"color": line.get("color", "#667085"), "linewidth": 0.9,
                 "linestyle": DASHES.get(line.get("dash", ""), "-")}  # fmt: skip
        if shape.get("x0") == shape.get("x1") and "domain" in str(shape.get("yref", "")):
            axes.axvline(shape["x0"], **style)
        elif shape.get("y0") == shape.get("y1") and "domain" in str(shape.get("xref", "")):
            axes.axhline(shape["y0"], **style)


def _domain(layout: Mapping[str, Any], reference: str, letter: str) -> tuple[float, float]:
    start, end = layout.get(_axis_name(reference, letter), {}).get("domain", [0, 1])
    return float(start), float(end)


def _axes_grid(
    figure: Figure, layout: Mapping[str, Any], pairs: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], Any]:
    """One matplotlib axes per (x, y) axis pair the traces use, in the grid cell the layout's
    domains put it in (Plotly's subplot grid: columns by x domain, rows by y domain, top first)."""
    columns = sorted({_domain(layout, x_ref, "x") for x_ref, _ in pairs})
    rows = sorted({_domain(layout, y_ref, "y") for _, y_ref in pairs}, reverse=True)
    grid = figure.add_gridspec(len(rows), len(columns))
    return {
        (x_ref, y_ref): figure.add_subplot(
            grid[
                rows.index(_domain(layout, y_ref, "y")), columns.index(_domain(layout, x_ref, "x"))
            ]
        )
        for x_ref, y_ref in pairs
    }


def _subplot_titles(axes_by_name: Mapping[tuple[str, str], Any], layout: Mapping[str, Any]) -> None:
    """make_subplots writes each subplot's title as an annotation centred over its domain."""
    for annotation in layout.get("annotations", ()):
        if annotation.get("xref") != "paper" or annotation.get("yref") != "paper":
            continue
        for (x_ref, y_ref), axes in axes_by_name.items():
            x0, x1 = _domain(layout, x_ref, "x")
            y_top = _domain(layout, y_ref, "y")[1]
            if (
                abs(annotation.get("x", -1) - (x0 + x1) / 2) < 1e-6
                and abs(annotation.get("y", -1) - y_top) < 1e-6
            ):
                axes.set_title(_text(annotation.get("text")), fontsize=9)


def draw(figure_json: Mapping[str, Any]) -> Figure:
    """A matplotlib figure of the Plotly figure's scatter traces."""
    layout = figure_json.get("layout", {})
    traces = [
        trace for trace in figure_json.get("data", ()) if trace.get("type", "scatter") == "scatter"
    ]
    pairs = list(dict.fromkeys((t.get("xaxis", "x"), t.get("yaxis", "y")) for t in traces)) or [
        ("x", "y")
    ]
    rows = len({_domain(layout, y_ref, "y") for _, y_ref in pairs})
    height = PANEL_HEIGHT_INCHES * (1 if rows == 1 else 0.7 * rows)
    figure = Figure(figsize=(WIDTH_INCHES, height), layout="constrained")
    axes_by_name = _axes_grid(figure, layout, pairs)
    for trace in traces:
        axes = axes_by_name[(trace.get("xaxis", "x"), trace.get("yaxis", "y"))]
        xs, ys = _numbers(trace.get("x")), _numbers(trace.get("y"))
        line = trace.get("line") or {}
        colour = line.get("color") or (trace.get("marker") or {}).get("color")
        mode = trace.get("mode", "lines+markers")
        dash = DASHES.get(line.get("dash", ""), "-")
        style = {"color": colour, "linewidth": 1.4, "markersize": 4,
                 "marker": "o" if "markers" in mode else None,
                 "linestyle": dash if "lines" in mode else "none"}  # fmt: skip
        bounds = _error_bounds(trace, ys)
        if bounds:
            lows, highs = bounds
            yerr = [  # no bar where a point has no interval
                [0 if low is None else y - low for y, low in zip(ys, lows, strict=True)],
                [0 if high is None else high - y for y, high in zip(ys, highs, strict=True)],
            ]
            axes.errorbar(
                xs, ys, yerr=yerr, capsize=2, elinewidth=0.8, label=_legend_label(trace), **style
            )
        else:
            axes.plot(xs, ys, label=_legend_label(trace), **style)
    for (x_ref, y_ref), axes in axes_by_name.items():
        _style_axis(axes, layout, _axis_name(x_ref, "x"), _axis_name(y_ref, "y"))
    _reference_lines(axes_by_name, layout)
    _subplot_titles(axes_by_name, layout)
    title = _text(layout.get("title"))
    if title:
        figure.suptitle("\n".join(textwrap.wrap(title, TITLE_WIDTH)), fontsize=10)
    named = [t for t in traces if t.get("name") and t.get("showlegend", True) is not False]
    if len(named) > 1 and len(axes_by_name) == 1:
        # Side by side while the names fit the width; one a row otherwise.
        longest = max(len(str(trace["name"])) for trace in named)
        columns = 2 if longest <= LEGEND_COLUMN_CHARACTERS else 1
        figure.legend(loc="outside lower center", ncols=columns, fontsize=8, frameon=False)
    return figure


def render(figure_json: Mapping[str, Any], file_format: str) -> bytes:
    """The figure as ``svg``, ``png`` or ``pdf`` bytes, or its data as ``csv``."""
    if file_format == "csv":
        return figure_csv(figure_json).encode()
    if file_format not in FORMATS:
        raise ValueError(f"unknown figure format {file_format!r}: one of {', '.join(FORMATS)}")
    buffer = io.BytesIO()
    # No timestamps or tool versions in the file: the same figure gives the same bytes.
    metadata = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(file_format)
    # A fixed salt for the SVG's element ids, which matplotlib otherwise draws at random.
    with rc_context({"svg.hashsalt": "dialab"}):
        draw(figure_json).savefig(buffer, format=file_format, dpi=PNG_DPI, metadata=metadata)
    return buffer.getvalue()


def figure_csv(figure_json: Mapping[str, Any]) -> str:
    """The data of every trace in long form: one row per point, with its interval if any."""
    output = io.StringIO()
    writer = csv.writer(output)
    writer.writerow(CSV_COLUMNS)
    for trace in figure_json.get("data", ()):
        xs, ys = _numbers(trace.get("x")), _numbers(trace.get("y"))
        unknown: list[float | None] = [None] * len(ys)
        bounds = _error_bounds(trace, ys) or (unknown, unknown)
        for x, y, low, high in zip(xs, ys, *bounds, strict=True):
            writer.writerow([trace.get("name", ""), x, _cell(y), _cell(low), _cell(high)])
    return output.getvalue()


def _cell(value: Any) -> str:
    return "" if value is None else str(round(float(value), 6))


def filename(stem: str, file_format: str) -> str:
    return f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', stem).strip('-') or 'figure'}.{file_format}"


def download_response(figure_json: Mapping[str, Any], file_format: str, stem: str) -> HttpResponse:
    """The figure (or its CSV) as an attachment named ``<stem>.<format>``; 404 for a format
    that is not one of ``FORMATS``."""
    if file_format not in FORMATS:
        raise Http404(f"No figure format {file_format!r}: one of {', '.join(FORMATS)}.")
    response = HttpResponse(render(figure_json, file_format), content_type=FORMATS[file_format])
    response["Content-Disposition"] = f'attachment; filename="{filename(stem, file_format)}"'
    return response


def requested_download(
    request: HttpRequest, figures: Mapping[str, Mapping[str, Any] | None], stem: str
) -> HttpResponse | None:
    """The file ``?figure=<name>&download=<format>`` asks for (``core.templatetags``'s
    ``figure_download_url`` writes such links), None when the request asks for none: views
    that draw figures answer with it before rendering their page."""
    file_format = request.GET.get("download")
    if not file_format:
        return None
    name = request.GET.get("figure", "")
    figure = figures.get(name)
    if figure is None:
        raise Http404(f"This page has no {name!r} figure.")
    return download_response(figure, file_format, f"{stem}-{name}")
