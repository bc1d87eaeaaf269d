"""Rendering: the plan's SVG charts (speedup by alpha, best K by batch, the ITL distribution, and with an SLO, each
P99 over its bound against the request rate per GPU).
"""
from __future__ import annotations

import math

from ..trust import INTERVAL_LEVEL, Z_INTERVAL
from ..schedule import K_MAX
from .words import ratio_span


# Hand-written SVG (it is text): fixed size, fixed number formats, so the same run gives
# the same bytes. Lines differ in colour lightness and in dash pattern, so they stay
# apart in greyscale.
CHART_SIZE = (760, 460)                             # width, height in px
PLOT_BOX = (72, 54, 560, 380)                        # left, top, right, bottom of the plot area
LINE_STYLES = [("#111111", ""), ("#d95f02", "9 5"), ("#1f78b4", "2 4"), ("#33a02c", "12 4 3 4"),
               ("#6a3d9a", "6 3"), ("#a6761d", "1 2")]
CHART_FILES = {"speedup": "chart-speedup.svg", "best_k": "chart-best-k.svg", "itl": "chart-itl-cdf.svg",
               "slo": "chart-slo.svg"}
CHOICE_CHART = "chart-choose.svg"   # --choose's chart (render/choice.py): cost per million tokens by candidate
ALL_CHARTS = (*CHART_FILES.values(), CHOICE_CHART)   # every chart a run may write beside the plan
CHART_MARK = "<!-- written by eagle3-rollout: python code/main.py -->"   # a chart this tool may replace


def xml_escape(text):
    """Text safe inside an XML element (xml.sax.saxutils.escape, without importing urllib with it)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg_text(x, y, text, size=13, anchor="start", extra=""):
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"{extra}>'
            f"{xml_escape(text)}</text>")


def svg_chart(title, x_label, y_label, *, x_axis, y_axis, series, markers=(), notes=(), drops=(), bands=()):
    """A line chart. x_axis, y_axis: (low, high, ticks, log?); series: (label, points, style index);
    markers: (x, y, label), labels alternately above and below; drops: (x, style index) vertical lines;
    bands: (low points, high points, style index), shaded between, clipped to the y axis."""
    width, height = CHART_SIZE
    left, top, right, bottom = PLOT_BOX

    def scale(value, axis, lo_px, hi_px):
        low, high, _, log = axis
        if log:
            value, low, high = math.log10(value), math.log10(low), math.log10(high)
        return lo_px + (value - low) / (high - low) * (hi_px - lo_px)

    sx = lambda x: scale(x, x_axis, left, right)
    sy = lambda y: scale(y, y_axis, bottom, top)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif">', CHART_MARK,
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           svg_text(width / 2, 28, title, 16, "middle", ' font-weight="bold"')]
    for tick in x_axis[2]:
        x = sx(tick)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#e4e4e4"/>')
        out.append(svg_text(x, bottom + 18, f"{tick:g}", 12, "middle"))
    for tick in y_axis[2]:
        y = sy(tick)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        out.append(svg_text(left - 8, y + 4, f"{tick:g}", 12, "end"))
    out.append(f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" '
               'fill="none" stroke="#444444"/>')
    out.append(svg_text((left + right) / 2, bottom + 42, x_label, 13, "middle"))
    out.append(svg_text(18, (top + bottom) / 2, y_label, 13, "middle",
                        f' transform="rotate(-90 18 {(top + bottom) / 2:.1f})"'))
    for low, high, style in bands:
        colour = LINE_STYLES[style % len(LINE_STYLES)][0]
        clip = lambda y: min(max(y, y_axis[0]), y_axis[1])
        outline = [(x, clip(y)) for x, y in high] + [(x, clip(y)) for x, y in reversed(low)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in outline)
        out.append(f'<polygon class="band" points="{path}" fill="{colour}" fill-opacity="0.10" stroke="none"/>')
    for i, (label, points, style) in enumerate(series):
        colour, dash = LINE_STYLES[style % len(LINE_STYLES)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<polyline class="series" points="{path}" fill="none" stroke="{colour}" '
                   f'stroke-width="2.2"{dash_attr}/>')
        ly = top + 8 + 22 * i
        out.append(f'<line x1="{right + 14}" y1="{ly:.1f}" x2="{right + 50}" y2="{ly:.1f}" stroke="{colour}" '
                   f'stroke-width="2.2"{dash_attr}/>')
        out.append(svg_text(right + 56, ly + 4, label, 12))
    for x, style in drops:
        colour, dash = LINE_STYLES[style % len(LINE_STYLES)]
        out.append(f'<line x1="{sx(x):.1f}" y1="{top}" x2="{sx(x):.1f}" y2="{bottom}" stroke="{colour}" '
                   f'stroke-width="1"' + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
    for i, (x, y, label) in enumerate(markers):
        out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="4" fill="#ffffff" stroke="#111111" '
                   'stroke-width="1.5"/>')
        out.append(svg_text(sx(x) + 6, sy(y) + (-8 if i % 2 == 0 else 17), label, 11))
    for i, note in enumerate(notes):
        out.append(svg_text(left, bottom + 62 + 15 * i, note, 11))
    return "\n".join(out + ["</svg>", ""])


def nice_step(span, target=6):
    """A 1-2-5 tick step giving about `target` ticks over span."""
    raw = span / target
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def ticks(low, high, step):
    return [round(low + i * step, 10) for i in range(int((high - low) / step + 1e-9) + 1)]


def render_speedup_chart(charts, dep):
    data = charts
    top = max([1.5] + [max(y for _, y in c.points) for c in data.curves])
    step = nice_step(top)
    y_high = step * math.ceil(top / step)
    series = [(f"B = {c.concurrency} (eps {c.eps:.2f})", c.points, i) for i, c in enumerate(data.curves)]
    series.append(("speedup 1.0", [(0.0, 1.0), (1.0, 1.0)], 5))
    markers = [(c.breakeven, 1.0, f"{c.breakeven:.2f}") for c in data.curves if c.breakeven is not None]
    notes = [f"{dep.model} on {dep.tp} x {dep.gpu}, draft {dep.draft}; circles: break-even alpha."]
    bands = []
    if data.speedup_sd is not None:
        spread = math.exp(Z_INTERVAL * data.speedup_sd)
        bands = [([(x, y / spread) for x, y in c.points], [(x, y * spread) for x, y in c.points], i)
                 for i, c in enumerate(data.curves)]
        notes.append(f"Shaded: the {INTERVAL_LEVEL:.0%} range of each curve ({ratio_span(data.speedup_sd)}), "
                     "the model's own error.")
    if data.left_out:
        notes.append("Left out, KV cache does not fit: B = " + ", ".join(map(str, data.left_out)) + ".")
    return svg_chart(f"Speedup against per-token alpha, K = {data.k}", "per-token acceptance alpha",
                     "speedup over plain decoding (x)", x_axis=(0.0, 1.0, ticks(0, 1, 0.1), False),
                     y_axis=(0.0, y_high, ticks(0, y_high, step), False), series=series, markers=markers, notes=notes, bands=bands)


def render_best_k_chart(charts, dep):
    data = charts
    limit = max(data.limit, 2)
    x_ticks = [2 ** i for i in range(int(math.log2(limit)) + 1)]
    series, markers = [], []
    for i, c in enumerate(data.steps):
        offset = 0.06 * (i - 1)            # keeps steps that coincide visible
        points = []
        for lo, hi, k in c.schedule:
            points += [(lo, k + offset), (hi, k + offset)]
        series.append((f"alpha {c.alpha:.2f}", points or [(1, offset), (1, offset)], i))
        if c.zero_at is not None:
            markers.append((c.zero_at, 0 + offset, f"off at {c.zero_at}"))
    notes = [f"{dep.model} on {dep.tp} x {dep.gpu}, context {dep.context}; batch sizes up to the "
             f"{data.limit} that fit in memory.", "K = 0: speculation off. Lines drawn 0.06 apart where they coincide."]
    return svg_chart("Best draft length K against batch size", "concurrency B (sequences, log scale)",
                     "best K (0 = off)", x_axis=(1, limit, x_ticks, True), y_axis=(-0.3, K_MAX + 0.3, list(range(K_MAX + 1)), False),
                     series=series, markers=markers, notes=notes)


def render_itl_chart(charts, dep):
    data = charts.itl
    if data is None:
        return svg_chart("Per-token ITL distribution", "ms", "share of tokens", x_axis=(0, 1, [0, 1], False),
                         y_axis=(0, 1, [0, 1], False), series=[], notes=["No concurrency in the grid fits in memory."])
    names = {"plain": "plain", "spec": "spec", "two_pass": "two-pass"}
    series = [(f"{names[n]}: P99 {getattr(data.p99, n):.1f} ms", getattr(data.cdf, n), i) for i, n in enumerate(names)]
    series.append(("share 0.99", [(0.0, 0.99), (data.x_max, 0.99)], 5))
    markers = [(getattr(data.p99, n), 0.99, f"{getattr(data.p99, n):.1f}") for n in names]
    step = nice_step(data.x_max)
    notes = [f"B = {data.concurrency}, alpha {data.alpha:.2f}, K = {data.k}. Per-token ITL: a round's time "
             "split over its tokens. spec: rejection", "sampling as vLLM runs it; two-pass: the lesson's model. "
             "Thin vertical lines: each model's P99."]
    return svg_chart("Per-token inter-token latency, cumulative", "per-token ITL (ms)", "share of tokens at or below",
                     x_axis=(0.0, data.x_max, ticks(0, data.x_max, step), False),
                     y_axis=(0.0, 1.0, ticks(0, 1, 0.1), False), series=series, markers=markers, notes=notes,
                     drops=[(getattr(data.p99, n), i) for i, n in enumerate(names)])


def slo_series(at):
    """The SLO chart's lines: per arm and per bound the SLO names, (requests/s per GPU, P99 over its bound) at each
    rate simulated: the bound that binds is the line that crosses 1 first."""
    return [(arm, key, [(p.rate / at.gpus, p.tail_ms[key] / ms) for p in arm.points])
            for arm in (at.baseline, at.speculative) for key, ms in at.slo]


def render_slo_chart(at, dep):
    """Each P99 the SLO names over its bound against the request rate per GPU, plain and speculative, each point a
    simulated open-loop run; the bound (1) drawn across, and each arm's capacity marked with what stops it."""
    lines = slo_series(at)
    xs = [x for _, _, points in lines for x, _ in points]
    ys = [y for _, _, points in lines for _, y in points]
    x_step = nice_step(max(xs) - min(xs) * 0.9)   # the axis spans the rates run, which sit near the capacities
    x_low, x_high = x_step * math.floor(min(xs) * 0.9 / x_step), x_step * math.ceil(max(xs) * 1.05 / x_step)
    y_top = min(max(ys + [1.0]) * 1.1, 3.0)   # runs far past the SLO are cut at 3x their bound
    y_step = nice_step(y_top)
    y_high = y_step * math.ceil(y_top / y_step)
    series = [(f"{'speculation' if arm.speculative else 'plain'}: P{at.percentile} {key.upper()}",
               [(x, min(y, y_high)) for x, y in points], 2 * arm.speculative + (key != "tpot"))
              for arm, key, points in lines]
    series.append(("the SLO's bound", [(x_low, 1.0), (x_high, 1.0)], 5))
    def binding(arm):   # the bound that stops the arm, where it is one the SLO names, else the nearest to it
        keys = [key for key in arm.stopped_by if key != "queue"] or [key for key, _ in at.slo]
        return max(keys, key=lambda key: arm.best.tail_ms[key] / dict(at.slo)[key])
    markers = [(arm.best.rate / at.gpus, arm.best.tail_ms[binding(arm)] / dict(at.slo)[binding(arm)],
                f"{arm.best.rate / at.gpus:.3g}/s" + (f", {' and '.join(k.upper() if k != 'queue' else 'a queue' for k in arm.stopped_by)} binds"
                                                       if arm.stopped_by else ""))
               for arm in (at.baseline, at.speculative) if arm.best is not None]
    cut = any(y > y_high for y in ys)
    notes = [f"{dep.model} on {dep.tp} x {dep.gpu}; each point a simulated run of {at.prompts:,} requests at one "
             "rate (Poisson arrivals)." if at.burstiness == 1 else f"{dep.model} on {dep.tp} x {dep.gpu}; each "
             f"point a simulated run of {at.prompts:,} requests at one rate.",
             "Marks: each arm's capacity (every bound met, no growing queue) and what stops it"
             + (f"; runs past {y_high:g}x a bound are drawn at {y_high:g}x." if cut else ".")]
    return svg_chart("P99 over its SLO bound against the request rate", "requests/s per GPU",
                     f"P{at.percentile} / its bound", x_axis=(x_low, x_high, ticks(x_low, x_high, x_step), False),
                     y_axis=(0.0, y_high, ticks(0, y_high, y_step), False), series=series, markers=markers, notes=notes)


def render_charts(result, dep):
    """{file name: SVG text} for the charts: three, and the SLO's where there is one."""
    charts = result.charts
    out = {CHART_FILES["speedup"]: render_speedup_chart(charts, dep),
           CHART_FILES["best_k"]: render_best_k_chart(charts, dep),
           CHART_FILES["itl"]: render_itl_chart(charts, dep)}
    if result.at_slo is not None and not result.at_slo.skipped:
        out[CHART_FILES["slo"]] = render_slo_chart(result.at_slo, dep)
    return out
