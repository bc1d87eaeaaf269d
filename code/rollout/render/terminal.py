"""The report a run prints in the terminal: the verdict, the deployment, the grid's tables by K and eps, the
break-even, the best K by batch size, the mix, the tail and the summary (render_tables), and the line naming what
it wrote."""
from __future__ import annotations

import os

from ..records import eps_label, fmt, pct, wrap
from ..deployment import verify_tokens
from ..schedule import close_call_words, K_MAX, where_it_pays
from ..trust import span
from .tables import (
    column_header, deployment_lines, render_blocks, render_calibration, render_gate, render_measured, render_mix,
    render_summary, render_tail,
)
from .words import ratio_span, render_verdict


GRID_COLUMNS = [("B", 5), ("alpha", 5), ("rate", 4), ("tau", 4), ("eps", 4), ("lesson", 6), ("exact", 5),
                ("sim", 5), ("80% range", 9), ("plain", 5), ("spec", 5), ("2-pass", 6), ("change", 6),
                ("plain", 5), ("token", 5), ("chunk", 5)]
GRID_GROUPS = [("speedup (x)", 5, 8), ("P99 TPOT, steady (ms)", 9, 12), ("P99 ITL (ms)", 13, 15)]


def render_breakeven(result):
    columns = [("K", 3), ("eps@B=1", 7), ("B", 5), ("eps", 6), ("rate r = eps/K", 14), ("per-token alpha", 15)]
    header = column_header(columns, [("break-even", 4, 5)])
    rows = []
    for b in result.breakeven:
        mark = "" if b.feasible else "  (infeasible: the KV cache does not fit)"
        rows.append(f"{b.k:3d} {eps_label(b.verify_overhead):>7s} {b.concurrency:5d} {b.eps_eff:6.3f}"
                    f" {fmt(b.lesson, '14.3f', 'never'):>14s} {fmt(b.exact, '15.3f', 'never'):>15s}{mark}")
    title = ("== Break-even: below it speculation is slower than plain decoding ==\n"
             "The lesson's eps/K is the right break-even for the acceptance rate r, since tau = 1 + K*r;\n"
             "for the per-token alpha it is too low: that one solves tau(alpha, K) = 1 + eps. eps here is the\n"
             "decode eps: the prefill share costs the same per token with speculation or without.")
    return render_blocks(title, header, rows) + [""]


def render_best_k(result):
    """Best K (0 = off) and its speedup for each concurrency and alpha, then the plan's schedule."""
    first = [b for b in result.best_k if b.concurrency == result.best_k[0].concurrency]
    order = lambda b: (b.alpha, b.plan)
    label = "measured" if result.measured is not None else None
    columns = [("B", 5)] + [(label or ("plan " if b.plan else "a=") + f"{b.alpha:.2f} ", 11)
                            for b in sorted(first, key=order)]
    rows = []
    for batch in sorted({b.concurrency for b in result.best_k}):
        cells = [b for b in result.best_k if b.concurrency == batch]
        rows.append((f"{batch:5d} " + " ".join(
            f"{'K=' + str(b.k) + ' ' + format(b.speedup, '.2f') + 'x' + ('?' if b.too_close else ' '):>11s}"
            if b.feasible else f"{'no fit':>11s}" for b in sorted(cells, key=order))).rstrip())
    plan = result.plan
    zero = where_it_pays(plan.schedule)
    title = f"== Best K (0..{K_MAX}, 0 = off) and its speedup over plain decoding, eps from the cost model =="
    close = [b for b in result.best_k if b.too_close]
    note = wrap((f"?: too close to call. The speedup of the K the plan runs there (its best, or where that is off the "
                 f"best with speculation on) has an {result.trust.level:.0%} "
                 f"range ({ratio_span(result.trust.speedup_sd)}) holding 1.0x, so only a benchmark can say "
                 "whether speculation pays there. " if close else "")
                + f"At alpha {plan.alpha:.2f} the model predicts {zero}"
                + (f"; {close_call_words(plan.close_calls)}" if plan.close_calls else "")
                + f". K by batch size, as vLLM's num_speculative_tokens_per_batch_size [start, end, K]: "
                f"{plan.schedule}", 100, "")
    return render_blocks(title, [line.rstrip() for line in column_header(columns, [])], rows) + note + [""]


def grid_row(c, dep, max_fit):
    """One line of the grid table; infeasible cells say so instead of showing numbers."""
    if not c.feasible:
        return (f"{c.concurrency:5d} {c.alpha:5.2f}  infeasible: the KV cache of {c.concurrency} x "
                f"{dep.context} tokens does not fit (at most {max_fit} sequences)")
    return (f"{c.concurrency:5d} {c.alpha:5.2f} {c.acceptance_rate:4.2f} {c.acceptance_length:4.2f}"
            f" {c.eps_eff:4.2f} {c.speedup_lesson:6.2f} {c.speedup_exact:5.2f} {c.speedup_mc:5.2f}"
            f" {span(c.speedup_interval):>9s} {c.tpot_plain_p99_ms:5.1f} {c.tpot_spec_p99_ms:5.1f}"
            f" {c.tpot_spec_two_pass_p99_ms:6.1f} {pct(c.tpot_p99_change):>6s} {c.itl_plain_p99_ms:5.1f}"
            f" {c.itl_spec_p99_ms:5.1f} {c.round_itl_spec_p99_ms:5.1f}")


def render_tables(result, dep, grid):
    """The printed report: the verdict, then the grid cells, break-even, best K, the tail, and a summary."""
    lines = render_verdict(result.verdict, dep) + deployment_lines(dep, result) + [""]
    if result.calibration is not None:
        lines += render_calibration(result.calibration)
    if result.measured is not None:
        lines += render_measured(result) + render_gate(result.gate)
    lines += list(result.lesson or [])   # main.py's walk of the lesson, before the grid
    header = column_header(GRID_COLUMNS, GRID_GROUPS)
    for k in grid.ks:
        for eps_b1 in grid.overheads:
            rows = [grid_row(c, dep, result.facts.max_concurrency) for c in result.cells
                    if c.k == k and c.verify_overhead == eps_b1]
            eps1 = result.eps_b1[k, eps_b1]
            source = ("from the cost model" if eps_b1 == "auto" else "given" if eps1 <= eps_b1 + 5e-5 else
                      f"given {eps_b1:.2f}, raised: the verify pass over {verify_tokens(dep, k)} tokens alone costs "
                      "that much over a plain step")
            title = f"== K = {k}, decode eps = {eps1:.2f} at B=1 ({source}), growing with B as the cost model says =="
            title = "\n".join(wrap(title, 100, "   "))
            lines += render_blocks(title, header, rows) + [""]
    lines += render_breakeven(result)
    lines += render_best_k(result)
    if result.mix:
        lines += render_mix(result.mix, dep)
    lines += render_tail(result)
    lines += render_summary(result, grid, dep)
    return "\n".join(lines) + "\n"



def wrote_line(plan, charts, benches, folder):
    """The report's last line: the plan, its charts and how many predicted benchmark files in which folder, each path
    relative to the working folder where it is inside it."""
    def shown_path(path):
        relative = os.path.relpath(path)
        return relative if not relative.startswith(os.pardir) else str(path)

    named = ([shown_path(plan)] if plan is not None else []) + [shown_path(path) for path in charts]
    if benches:
        where = shown_path(folder)
        named.append(f"{benches} predicted benchmark file{'s' if benches > 1 else ''} in "
                     + ("the working folder" if where == os.curdir else where))
    return "Wrote " + ", ".join(named) + "."
