"""Rendering --choose: the choice in a sentence, the ranked table, the prices used, and the chart of cost per million
tokens against the traffic a GPU serves (one point per candidate, with its range).
"""
from __future__ import annotations

from ..catalog import ENGINES
from ..records import wrap
from .charts import CHART_MARK, CHOICE_CHART, xml_escape

SHOWN = 5   # the ranked table's rows: the cheapest five, and the cheapest off and on below them (--json: every one)
DRAFT_NAMES = {"off": "off", "eagle3": "EAGLE-3", "eagle": "EAGLE", "mtp": "MTP", "ngram": "n-gram"}


def deployment_words(c):
    """A candidate's deployment in a few words: "2 x h100-sxm (TP 2), vLLM 0.34.0"; a MoE's expert layout after it."""
    layout = (" with experts and attention data parallel" if c.dp_attention else " with experts parallel"
              if c.ep > 1 else "")
    return f"{c.tp} x {c.gpu}{f' (TP {c.tp})' if c.tp > 1 else ''}{layout}, {ENGINES[c.engine].name} {c.release}"


def speculation_words(c):
    """"speculation off", or the draft and the K it runs at the replica's concurrency: "EAGLE-3 at K 3"; K 0 where
    its schedule turns speculation off at that load."""
    if c.draft == "off":
        return "speculation off"
    return f"{DRAFT_NAMES.get(c.draft, c.draft)} at K {c.k}" + (" (off at this load)" if not c.k else "")


def money(x):
    """USD as printed: cents below 100, whole dollars past it."""
    return f"${x:,.2f}" if x < 100 else f"${x:,.0f}"


def money_range(bounds):
    return money(bounds[0]) if money(bounds[0]) == money(bounds[1]) else f"{money(bounds[0])}-{money(bounds[1])}"


def demand_words(demand):
    return (f"{demand.request_rate:g} requests/s" if demand.request_rate is not None else
            f"{demand.concurrency:,} concurrent requests")


def slo_words(slo):
    return ", ".join(f"P99 {key.upper()} <= {ms:g} ms" for key, ms in slo)


def choice_sentence(choice):
    """The answer first: what to deploy, what it costs, what speculation saves there, and whether it is too close to
    call against the runner-up."""
    c = choice.chosen
    if c is None:
        return [f"No candidate serves {demand_words(choice.demand)} within {slo_words(choice.slo)}: each misses it "
                "even at one request at a time, or holds no sequence (below)."]
    words = (f"Choose {deployment_words(c)}, {speculation_words(c)}: {c.replicas} replica"
             f"{'s' if c.replicas > 1 else ''} ({c.gpus} GPU{'s' if c.gpus > 1 else ''}) serve {demand_words(choice.demand)} within "
             f"{slo_words(choice.slo)} for {money(c.cost_per_hour)} an hour (80%: {money_range(c.cost_per_hour_interval)}),"
             f" {money(c.cost_per_million)} per million output tokens.")
    if choice.saving is not None and abs(choice.saving) < 0.005:
        words += " Speculation changes nothing of the cost there: as many replicas either way"
        if choice.at_traffic:
            off_ms, on_ms, rate = choice.at_traffic["off"], choice.at_traffic["on"], choice.at_traffic["rate"]
            words += (f"; at the traffic's {rate:.3g} requests/s a replica it takes P99 TPOT from {off_ms['tpot']:,.1f} "
                      f"to {on_ms['tpot']:,.1f} ms and P99 E2EL from {off_ms['e2el'] / 1e3:,.1f} to "
                      f"{on_ms['e2el'] / 1e3:,.1f} s")
        words += "."
    elif choice.saving is not None:
        words += (f" Speculation {'saves' if choice.saving > 0 else 'adds'} {abs(choice.saving) * 100:.0f}% of the "
                  "cost there.")
    off, on = choice.cheapest_off, choice.cheapest_on
    if off is not None and on is not None:
        words += (f" Cheapest without speculation: {deployment_words(off)}, {money(off.cost_per_hour)} an hour; "
                  f"with it: {deployment_words(on)}, {speculation_words(on)}, {money(on.cost_per_hour)} an hour.")
    if choice.too_close:
        runner = choice.runner_up
        words += (f" Too close to call against {deployment_words(runner)}, {speculation_words(runner)} "
                  f"({money_range(runner.cost_per_hour_interval)} an hour): the two ranges overlap; benchmark both.")
    return wrap(words, 100, "")


CHOICE_COLUMNS = ("#", "GPUs x TP, layout, engine", "draft, K", "conc", "req/s", "tok/s/GPU", "GPUs", "$/h",
                  "$/h 80%", "$/Mtok")


def short_deployment(c):
    """A candidate's deployment in a table cell: "2x h100-sxm EP+DP vLLM 0.34.0"."""
    layout = " EP+DP" if c.dp_attention else " EP" if c.ep > 1 else ""
    return f"{c.tp}x {c.gpu}{layout} {ENGINES[c.engine].name} {c.release}"


def short_speculation(c):
    """"off", or the draft and the K it runs at the replica's concurrency: "EAGLE-3 K 3"."""
    return "off" if c.draft == "off" else f"{DRAFT_NAMES.get(c.draft, c.draft)} K {c.k}"


def choice_rows(candidates):
    """The ranked table's rows: each candidate's deployment, its speculation, the requests a replica holds at its
    capacity and that capacity, output tokens a second a GPU there, GPUs for the traffic, and its cost an hour
    (range) and per million tokens."""
    return [(str(i), short_deployment(c), short_speculation(c), f"{c.concurrency:,.0f}", f"{c.capacity:.3g}",
             f"{c.per_gpu:,.0f}", f"{c.gpus:,}", money(c.cost_per_hour), money_range(c.cost_per_hour_interval),
             money(c.cost_per_million))
            for i, c in enumerate(candidates, 1)]


def table(rows, columns=CHOICE_COLUMNS):
    """Columns padded to their widest cell, text left and numbers right."""
    widths = [max(len(columns[j]), *(len(r[j]) for r in rows)) for j in range(len(columns))]
    left = {1, 2}

    def line(cells):
        return " ".join(cell.ljust(w) if j in left else cell.rjust(w) for j, (cell, w) in
                         enumerate(zip(cells, widths))).rstrip()
    return [line(columns), line(["-" * w for w in widths])] + [line(r) for r in rows]


def shown_candidates(choice):
    """The table's candidates: the SHOWN cheapest, then the cheapest off and on if they rank below them."""
    shown = list(choice.candidates[:SHOWN])
    for extra in (choice.cheapest_off, choice.cheapest_on):
        if extra is not None and extra not in shown:
            shown.append(extra)
    return shown


def price_lines(choice):
    return [f"  {gpu}: {money(usd)} a GPU-hour ({source}, {date})" for gpu, usd, source, date in choice.prices]


def render_choice(choice):
    """The printed part of --choose: the sentence, the ranked table, what was not served, the prices."""
    lines = ["== Choosing the deployment (--choose) =="] + choice_sentence(choice) + [""]
    if choice.candidates:
        ranked = shown_candidates(choice)
        lines += table([row for row, c in zip(choice_rows(choice.candidates), choice.candidates) if c in ranked])
        lines += wrap(f"{len(choice.candidates)} candidates serve the traffic (--json lists every one). req/s: a "
                      "replica's capacity, the most requests a second it serves within the SLO with no growing queue "
                      "(Poisson arrivals); conc, the requests in it at that rate (Little's law); tok/s/GPU, its output "
                      "tokens a second a GPU there; GPUs, $/h and $/Mtok: for the whole traffic.", 100, "")
    skipped = sum(1 for u in choice.unserved if not u.searched)
    if choice.unserved:
        lines += wrap(f"Not listed ({len(choice.unserved)}, --json says why): {skipped} not searched, one replica "
                      "dearer than the dear end of the cheapest range found; "
                      f"{len(choice.unserved) - skipped} that cannot run or meet the SLO, or whose server would draft "
                      "nothing at its capacity (the off row).", 100, "")
    lines += ["Prices (on-demand list prices, catalog.GPU_PRICES; --gpu-price NAME=USD replaces one):"]
    lines += price_lines(choice) + [""]
    return lines


def render_choice_markdown(choice):
    """The plan's section on the choice: the sentence, the ranked table, the prices, the chart."""
    def md(text):   # a dollar sign escaped, lest a renderer read "$1-$2" as mathematics; a bar, lest it end a cell
        return text.replace("$", "\\$").replace("|", "\\|")
    rows = [row for row, c in zip(choice_rows(choice.candidates), choice.candidates) if c in shown_candidates(choice)]
    lines = ["## Choosing the deployment", "", md(" ".join(choice_sentence(choice))), ""]
    if rows:
        lines += ["| " + " | ".join(md(x) for x in CHOICE_COLUMNS) + " |", "|" + "---|" * len(CHOICE_COLUMNS)]
        lines += ["| " + " | ".join(md(x) for x in row) + " |" for row in rows]
        lines += ["", f"![cost per million output tokens against output tokens a second a GPU]({CHOICE_CHART})", ""]
    lines += ["Prices used (on-demand list prices, `catalog.GPU_PRICES`; `--gpu-price NAME=USD` replaces one):", ""]
    lines += [f"- {md(line.strip())}" for line in price_lines(choice)] + [""]
    return lines


def render_choice_chart(choice):
    """SVG: cost per million output tokens (y) against output tokens a second a GPU at the SLO (x), a point per
    candidate, its range as bars both ways; speculation off hollow, on filled; the chosen one named."""
    points = choice.candidates
    width, height, left, bottom, top, right = 720, 440, 70, 50, 30, 20
    xs = [x for c in points for x in c.per_gpu_interval]
    ys = [y for c in points for y in c.cost_per_million_interval]
    x_max, y_max = max(xs) * 1.05, max(ys) * 1.05

    def px(x):
        return left + x / x_max * (width - left - right)

    def py(y):
        return height - bottom - y / y_max * (height - top - bottom)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           f'font-size="12">', CHART_MARK, f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="18">Cost per million output tokens against traffic a GPU serves within the SLO'
           '</text>',
           f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="black"/>',
           f'<text x="{(left + width) / 2:.0f}" y="{height - 12}" text-anchor="middle">output tokens/s a GPU</text>',
           f'<text x="16" y="{(top + height) / 2:.0f}" transform="rotate(-90 16 {(top + height) / 2:.0f})" '
           'text-anchor="middle">USD per million output tokens</text>']
    for i in range(5):
        x, y = x_max * i / 4, y_max * i / 4
        out += [f'<text x="{px(x):.1f}" y="{height - bottom + 16}" text-anchor="middle">{x:,.0f}</text>',
                f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>']
    for c in points:
        x, y = px(c.per_gpu), py(c.cost_per_million)
        colour = "#1f77b4" if c.draft != "off" else "#d62728"
        out += [f'<line x1="{px(c.per_gpu_interval[0]):.1f}" y1="{y:.1f}" x2="{px(c.per_gpu_interval[1]):.1f}" '
                f'y2="{y:.1f}" stroke="{colour}" stroke-opacity="0.5"/>',
                f'<line x1="{x:.1f}" y1="{py(c.cost_per_million_interval[0]):.1f}" x2="{x:.1f}" '
                f'y2="{py(c.cost_per_million_interval[1]):.1f}" stroke="{colour}" stroke-opacity="0.5"/>',
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" stroke="{colour}" '
                f'fill="{colour if c.draft != "off" else "white"}"><title>{xml_escape(deployment_words(c))}, '
                f'{xml_escape(speculation_words(c))}</title></circle>']
    if choice.chosen is not None:
        c = choice.chosen
        x, anchor = (px(c.per_gpu) + 8, "start") if px(c.per_gpu) < width / 2 else (px(c.per_gpu) - 8, "end")
        out.append(f'<text x="{x:.1f}" y="{py(c.cost_per_million) - 8:.1f}" text-anchor="{anchor}">chosen: '
                   f'{xml_escape(deployment_words(c))}, {xml_escape(speculation_words(c))}</text>')
    out += [f'<circle cx="{width - 190}" cy="{top + 6}" r="4" stroke="#d62728" fill="white"/>',
            f'<text x="{width - 180}" y="{top + 10}">speculation off</text>',
            f'<circle cx="{width - 190}" cy="{top + 24}" r="4" stroke="#1f77b4" fill="#1f77b4"/>',
            f'<text x="{width - 180}" y="{top + 28}">speculation on</text>', "</svg>"]
    return "\n".join(out) + "\n"
