"""Rendering: the verdict in words, the printed tables' parts, the deployment lines and the summary, and the
exercises' answers.
"""
from __future__ import annotations

from pathlib import Path

from ..records import eps_label, fmt, k_words, OWN_TERMS, pct, pct1, wrap
from ..catalog import GIB, GPU_FAMILY
from ..acceptance import acceptance_length, profile_from_lengths
from ..deployment import fitted_family
from ..trust import INTERVAL_LEVEL, span, too_close
from ..sizing import settings_sentence
from .words import copies_text, expert_sentence, state_text, sim_error_sentence, slow_domains, trained_draft, trust_sentence


# ---------------------------------------------------------------- the verdict, first


# ---------------------------------------------------------------- tables, the summary and the exercises
def render_blocks(title, header_lines, rows, block=24):
    """A titled table split into blocks of at most `block` rows, header repeated."""
    out = [title]
    for start in range(0, len(rows), block):
        out += [""] + header_lines + rows[start:start + block]
    return out


def column_header(columns, groups):
    """Two header lines: group labels centred over their column spans, then column names.

    columns: (name, width); groups: (label, first column, last column).
    """
    names = " ".join(f"{name:>{width}}" for name, width in columns)
    if not groups:
        return [names]
    starts = [sum(w + 1 for _, w in columns[:i]) for i in range(len(columns))]
    top = [" "] * len(names)
    for label, first, last in groups:
        lo, hi = starts[first], starts[last] + columns[last][1]
        at = lo + max(0, (hi - lo - len(label)) // 2)
        top[at:at + len(label)] = label
    return ["".join(top).rstrip(), names]


def render_measured(result):
    """What the counters and benchmark files say, beside what the model predicts from them."""
    ms = result.measured
    k = ms.k
    lines = wrap(f"== Measured acceptance, from {ms.source} ==", 100, "   ")
    drafts = f" over {ms.drafts:,.0f} drafts" if ms.drafts is not None else ""
    lines += wrap(f"K {'up to' if ms.varying_k else 'in use'} {k} ({ms.k_mean:.2f} draft tokens per draft{drafts}); "
                  f"acceptance rate {ms.acceptance_rate:.3f}; acceptance length {ms.acceptance_length:.3f}; "
                  f"per-token alpha {ms.alpha:.3f}" + ("." if ms.varying_k else
                                                          f" (the one alpha whose chain of {k} gives that length)."),
                  100, "")
    for note in ms.notes:
        lines += wrap(f"- {note}", 100, "  ")
    if ms.per_position_rates:
        columns = [("draft position", 15)] + [(str(i), 6) for i in range(len(ms.per_position_rates))]
        lines += ["", column_header(columns, [])[0],
                  f"{'rate':>15s} " + " ".join(f"{r:6.3f}" for r in ms.per_position_rates)]
        lines.append(f"{'cond. alpha':>15s} " + " ".join(f"{a:6.3f}" for a in ms.per_position_alpha)
                     if ms.per_position_alpha else
                     "(past position 0 the rates mix rounds that drafted fewer tokens: no conditional alpha)")
    if ms.prediction is not None:
        pred = ms.prediction
        rows = [("TPOT speedup (mean TPOT ratio)", ms.tpot_speedup, pred.speedup, "x"),
                ("output throughput ratio", ms.throughput_speedup, pred.throughput_speedup or pred.speedup, "x"),
                ("P99 TPOT change", ms.p99_tpot_change, pred.p99_tpot_change, "%"),
                ("P99 ITL change (per chunk: a round)", ms.p99_itl_change, pred.p99_itl_change, "%")]
        show = lambda v, unit: "-" if v is None else (f"{v:.2f}x" if unit == "x" else pct1(v))
        diff = lambda a, b, unit: "-" if a is None or b is None else (
            f"{a - b:+.2f}x" if unit == "x" else f"{(a - b) * 100:+.1f} pts")
        load = (f"request rate {pred.request_rate:g}/s (open loop)" if pred.request_rate else
                f"max_concurrency {pred.concurrency}")
        lines += [""] + wrap(f"Benchmarks at {load}, against the model at K={k}"
                             + (" (the pair's own runs, replayed: their prompts, lengths and load)"
                                if pred.simulated else " (in steady state at their concurrency and lengths)")
                             + (f" (the speedups from rounds of the mean {ms.k_mean:.2f} drafted tokens, the "
                                f"P99 rows from rounds of K={k})" if ms.varying_k else "") + ":", 100, "")
        lines += [f"{'':38s}{'measured':>10s}{'model':>10s}{'difference':>12s}"]
        lines += [f"{name:38s}{show(v, u):>10s}{show(p, u):>10s}{diff(v, p, u):>12s}" for name, v, p, u in rows]
        lines += wrap(f"(the model's P99 TPOT is over requests whose alpha spreads by s.d. {pred.requests_spread:.3g} "
                      f"around {pred.requests_alpha:.3f}, so that together they deliver the measured tau "
                      f"{ms.acceptance_length:.3f}; its per-token ITL P99 moves "
                      f"{pct1(pred.p99_token_itl_change)})", 100, " ")
    lines += ["", f"Speedup the measured acceptance predicts at K={k}, and the best K for the measured profile:"]
    best = {b.concurrency: b for b in result.best_k}
    columns = [("B", 5), ("eps", 6), (f"at K={k}", 8), ("best K", 7), ("speedup", 8)]
    lines += column_header(columns, [])
    for row in ms.by_concurrency:
        b = best[row.concurrency]
        lines.append(f"{row.concurrency:5d} {row.eps:6.2f} " + (
            f"{row.speedup:7.2f}x {b.k:7d} {b.speedup:7.2f}x" if row.feasible else "  does not fit in memory"))
    return lines + [""]


def calibration_headline(cal):
    return (f"Calibrated on {len(cal.runs)} of your runs: each run fitted on the others errs "
            f"{cal.held_out_median * 100:.1f}% median, {cal.held_out_worst * 100:.1f}% worst (what to expect of a "
            f"run not fitted); in sample {cal.median_error * 100:.1f}% median, {cal.worst_error * 100:.1f}% worst")


def calibration_findings(cal):
    """What the fit moved and what the runs could not tell apart, as sentences."""
    moved = ", ".join(f"{OWN_TERMS[name]} x{cal.after[name]:.3g}" for name in cal.fitted_fields)
    out = [f"Your runs moved {moved or 'nothing'} (factors on the published fit's terms); the rest stays "
           "the published fit's." if moved else "Your runs moved no term beyond its prior: the published fit stands."]
    for sep in cal.unseparated:
        pair = f"{OWN_TERMS[sep.terms[0]]} and {OWN_TERMS[sep.terms[1]]}"
        out.append(f"The runs could not separate {pair} (correlation {sep.correlation:+.2f}): "
                   + (f"{sep.run} would (their spread {sep.spread_now:.2f} -> {sep.spread_after:.2f} in log)."
                      if sep.run else "no benchmark run would, and every prediction at these lengths adds them up "
                      "alike."))
    return out


def render_calibration(cal):
    """Your runs against the model before and after fitting it on them."""
    lines = wrap(f"== {calibration_headline(cal)} ==", 100, "   ")
    for sentence in calibration_findings(cal):
        lines += wrap(sentence, 100, "  ")
    columns = [("run", 30), ("B", 5), ("K", 3), ("tau", 5), ("measured", 9), ("published", 9), ("fitted", 8),
               ("error", 7), ("held out", 9)]
    lines += [""] + column_header(columns, [])
    for r in cal.runs:
        lines.append(f"{Path(r.path).name[-30:]:>30s} {r.batch:5d} {fmt(r.k, '3d'):>3s} "
                     f"{fmt(r.tau, '5.2f'):>5s} {r.measured_tpot_ms:9.2f} {r.published_fit_tpot_ms:9.2f} "
                     f"{r.fitted_tpot_ms:8.2f} {pct1(r.error):>7s} {pct1(r.held_out_error):>9s}")
    lines += wrap("(mean TPOT in ms: measured, the published fit's, the fit on your runs'; error: the fit's, in "
                  "sample; held out: fitted on the other runs. A closed-loop run decodes fewer sequences than its "
                  "max_concurrency B: the fit uses the batch its time to first token and drain leave, from "
                  + ", ".join(f"{r.decoding_batch:.3g}" for r in cal.runs) + ")", 100, " ")
    if cal.request_ms is not None:
        errors = cal.ttft_errors
        lines += wrap(f"A request costs {cal.request_ms:.1f} ms around its steps (the client, the API server), fitted "
                      f"on the runs' median TTFTs (means where a file has none): at that cost their simulated TTFTs "
                      f"are {pct1(min(errors))} to {pct1(max(errors))} off." + (
                          f" They disagree beyond {TTFT_SPREAD:.0%}: this deployment's TTFT, and the SLO's answer, "
                          "are less sure than its TPOT (runs of another deployment, or a queue the simulation leaves "
                          "out)." if max(map(abs, errors)) > TTFT_SPREAD else ""), 100, " ")
    for note in cal.notes:
        lines += wrap(f"- {note}", 100, "  ")
    return lines + [""]


TTFT_SPREAD = 0.5   # calibration runs whose TTFTs one request cost misses by more than this are said to disagree


def render_gate(g):
    lines = [f"== Gate at B = {g.concurrency}, K = {g.k}: {g.verdict.upper()} =="]
    for r in g.reasons:
        lines += wrap(f"- {'pass' if r.passed else 'FAIL'} {r.check}: {r.detail}", 100, "  ")
    return lines + [""]


def render_mix(mix, dep):
    columns = [("domain", 10), ("share", 6), ("alpha", 6), ("tau", 6), ("speedup", 8), ("time", 6)]
    lines = [f"== Traffic mix at B = {mix.concurrency}, K = {mix.k}: shares of generated tokens ==", ""]
    lines += column_header(columns, [])
    for d in mix.domains:
        lines.append(f"{d.name:>10s} {d.share:6.2f} {d.alpha:6.2f} {d.tau:6.2f} {d.speedup:7.2f}x"
                     f" {d.time_share * 100:5.1f}%")
    lines.append("")
    lines += wrap(mix_blend_sentence(mix) + f" {mix.weak} pulls it down: decoded without speculation "
                  f"the mix runs {mix.routed_speedup:.3f}x; "
                  + (f"with {trained_draft(dep)} as good as alpha {mix.trained_alpha:.2f}, "
                     f"{mix.trained_speedup:.3f}x; " if trained_draft(dep) else "") + "the best single K for the mix is "
                  f"{k_words(mix.best_k)} ({mix.best_k_speedup:.3f}x).", 100, "")
    lines += wrap(mix_tail_sentence(mix), 100, "")
    return lines + [""]


def mix_blend_sentence(mix):
    """The mix's naive blend (alpha averaged first) against the correct one (rounds per token summed)."""
    close = too_close(mix.blended_speedup_interval)
    return (f"Averaging alpha first ({mix.naive_alpha:.3f}) promises {mix.naive_speedup:.3f}x; weighting "
            f"each domain's rounds by its tokens gives {mix.blended_speedup:.3f}x "
            + (f"({span(mix.blended_speedup_interval)} at {INTERVAL_LEVEL:.0%}{': too close to call' if close else ''}"
               f"; the naive blend is {pct1(mix.naive_error)} off)." if mix.blended_speedup_interval else
               f"({pct1(mix.naive_error)} off)."))


def mix_tail_sentence(mix):
    """The mix's simulated requests: their speedup, P99 against mean TPOT, and who the slowest 1% are."""
    return (f"Over the mix's simulated requests ({mix_requests(mix)}, alpha spread within each domain): "
            f"{mix.speedup_mc:.3f}x; P99 TPOT in steady state {mix.tpot_plain_p99_ms:.2f} -> {mix.tpot_spec_p99_ms:.2f} ms "
            f"({pct(mix.tpot_p99_change)}) while mean TPOT moves "
            f"{pct(mix.tpot_spec_mean_ms / mix.tpot_plain_mean_ms - 1)}; the slowest 1% of requests accept "
            f"at alpha {mix.slow_alpha:.2f} on average and are {slow_domains(mix)}.")


def mix_requests(mix):
    """'chat 70%, code 30% of requests'."""
    return ", ".join(f"{name} {share * 100:.0f}%" for name, share in mix.request_shares.items()) + " of requests"


def render_tail(result):
    """TPOT across requests at the plan's alpha and K, by concurrency, in steady state: B sequences always decoding,
    no prompt waiting (the plan's benchmark, with its first wave and drain, is simulated apart: plan_benchmark)."""
    plan = result.plan
    columns = [("B", 5), ("mean", 6), ("P99", 6), ("mean", 6), ("P50", 6), ("P99", 6), ("alike", 6), ("mean", 6),
               ("P99", 6), ("token", 6), ("chunk", 6), ("alpha", 6)]
    groups = [("plain", 1, 2), ("speculation", 3, 6), ("two-pass", 7, 8), ("P99 ITL, spec", 9, 10),
              ("slow 1%", 11, 11)]
    rows = [f"{t.concurrency:5d} {t.tpot_plain_mean_ms:6.2f} {t.tpot_plain_p99_ms:6.2f}"
            f" {t.tpot_spec_mean_ms:6.2f} {t.tpot_spec_p50_ms:6.2f} {t.tpot_spec_p99_ms:6.2f}"
            f" {fmt(t.tpot_spec_p99_alike_ms, '6.2f'):>6s}"
            f" {t.tpot_spec_two_pass_mean_ms:6.2f} {t.tpot_spec_two_pass_p99_ms:6.2f}"
            f" {t.itl_spec_p99_ms:6.2f} {t.round_itl_spec_p99_ms:6.2f} {t.slow_alpha:6.2f}"
            for t in plan.tail]
    spread = plan.request_spread
    title = (f"== TPOT across requests (ms), steady state, requests' mean alpha {plan.request_alpha:.2f} (s.d. "
             f"{spread:.3g}), K = {plan.k} ==\n"
             "Steady state: B sequences always decoding, no prompt waiting (the verdict's benchmark has both).\n"
             "TPOT: a request's decode time over its tokens after the first; P50 and P99 across requests.\n"
             "alike: P99 with every request at the mean alpha. slow 1%: the mean per-token alpha of the\n"
             "requests at or above P99 TPOT with speculation: the requests the head drafts badly for.")
    return render_blocks(title, column_header(columns, groups), rows) + [""]


def facts_lesson(result):
    """The lesson's formula against the exact one, over the grid's cells."""
    facts = []
    cells = [c for c in result.cells if c.feasible]
    if cells:
        gap = max(cells, key=lambda c: c.speedup_lesson - c.speedup_exact)
        facts.append(
            f"The lesson's 1 + K*alpha counts {1 + gap.k * gap.alpha:.2f} tokens per round at alpha "
            f"{gap.alpha:.2f}, K = {gap.k}; a per-token alpha gives tau = {gap.acceptance_length:.2f}. "
            f"1 + K*alpha is exact only when alpha is vLLM's rate r (here {gap.acceptance_rate:.2f}), "
            f"so its speedup {gap.speedup_lesson:.2f}x is really {gap.speedup_exact:.2f}x.")
        wrong = [c for c in cells if c.speedup_lesson > 1.0 > c.speedup_exact]
        if wrong:
            w = min(wrong, key=lambda c: c.speedup_exact)
            facts.append(
                f"{len(wrong)} of {len(cells)} cells look profitable by the lesson's formula but are slower than "
                f"plain decoding: worst at alpha {w.alpha:.2f}, K = {w.k}, B = {w.concurrency} "
                f"({w.speedup_lesson:.2f}x claimed, {w.speedup_exact:.2f}x exact).")
    return facts


def facts_eps(result, grid):
    """How eps and the break-even move with batch, and the term that moves them."""
    facts = []
    moves = []
    for k in grid.ks:
        for eps_b1 in grid.overheads:
            rows = [b for b in result.breakeven if b.k == k and b.verify_overhead == eps_b1 and b.feasible]
            if rows:
                first, last = rows[0], rows[-1]
                moves.append(
                    f"K = {k}, eps {eps_label(eps_b1)}: eps {first.eps_eff:.2f} -> {last.eps_eff:.2f}, "
                    f"alpha {fmt(first.exact, '.2f', 'never')} -> {fmt(last.exact, '.2f', 'never')} "
                    f"(rate {fmt(first.lesson, '.3f', 'never')} -> {fmt(last.lesson, '.3f', 'never')})")
    if moves:
        g = result.facts.eps_growth
        direction = "rises" if g.eps_b1 > g.eps_b0 else "falls"
        facts.append(
            f"From B = {g.b0} to B = {g.b1} the decode eps {direction} (K = {g.k}: {g.eps_b0:.2f} -> "
            f"{g.eps_b1:.2f}). The term of a round that moves it most is {g.term}: a round spends "
            f"{g.extra_b0:.2f} ms more on it than a {g.plain_b0:.2f} ms plain step at B = {g.b0}, and "
            f"{g.extra_b1:.2f} ms more than a {g.plain_b1:.2f} ms step at B = {g.b1} "
            f"({g.change * 100:+.0f} points of eps). By K and overhead: " + "; ".join(moves) + ".")
    return facts


def facts_moe(result, dep):
    """Why a mixture-of-experts target's verify pass costs more than a dense one's."""
    facts = []
    if result.facts.moe is not None:
        e = result.facts.moe
        facts.append(
            f"{dep.model} routes each token to {e.experts_per_token} of {e.experts} experts per MoE layer. "
            f"At B = {e.batch} a plain step's {e.batch} token{'s' if e.batch != 1 else ''} touch"
            f"{'' if e.batch != 1 else 'es'} {e.plain_experts:.1f} experts a layer, "
            f"the verify pass's {e.batch * e.verify_tokens} tokens "
            f"{e.verify_experts:.1f}" + (
                f" (a sequence's tokens reuse experts: they route like {e.verify_routed:.1f} independent ones)"
                if e.verify_routed < e.batch * e.verify_tokens else "") + (
                f" (expert parallel, at the busiest GPU's pace: {e.plain_read:.1f} and {e.verify_read:.1f})"
                if dep.ep > 1 else "") +
            f": the round reads {e.verify_read / e.plain_read:.1f}x the expert "
            f"weights of a plain step, so eps is {e.eps:.2f} at K = {e.k}, where a dense model of the same active "
            f"size would have {e.eps_dense:.2f}" + (" and speculation cannot pay at any acceptance."
                                                      if e.eps >= e.k else "."))
    return facts


def facts_tail(result):
    """P99 TPOT over requests, the per-token and per-chunk tails, and what spread costs."""
    facts = []
    plan = result.plan
    tail = {t.concurrency: t for t in plan.tail}
    if plan.shown_batch in tail:
        t = tail[plan.shown_batch]
        slow_tau = acceptance_length(t.slow_alpha, plan.k)
        facts.append(
            f"P99 TPOT at B = {plan.shown_batch} in steady state (K = {plan.k}, requests' alpha {plan.request_alpha:.2f} + "
            f"{t.alpha_spread:.3g} z): {t.tpot_plain_p99_ms:.2f} -> {t.tpot_spec_p99_ms:.2f} ms "
            f"({pct(t.tpot_p99_change)}) while mean TPOT moves "
            f"{pct(t.tpot_spec_mean_ms / t.tpot_plain_mean_ms - 1)}"
            + (f". The slowest 1% of requests accept at alpha {t.slow_alpha:.2f} on average, where a round "
               f"delivers {slow_tau:.2f} tokens for {1 + t.eps_eff:.2f} plain steps. Were every request at alpha "
               f"{plan.request_alpha:.2f}, P99 TPOT would move "
               f"{pct(t.tpot_spec_p99_alike_ms / t.tpot_plain_p99_ms - 1)}"
               + (": the tail is the requests the head drafts badly for"
                  if t.tpot_spec_p99_ms > t.tpot_spec_p99_alike_ms else "")
               if t.tpot_spec_p99_alike_ms is not None else
               ". With one alpha for every request, the slowest differ only by round-to-round luck, which "
               "weighs most in short requests") + ".")
        facts.append(
            f"Per token the tail is different: P99 per-token ITL moves {pct(t.p99_change)}, because "
            f"{t.zero_accept_token_share * 100:.1f}% of tokens come from rounds that accepted nothing and carry "
            "a whole round alone" + ("; that is more than the 1% P99 looks at." if t.zero_accept_token_share > 0.01
                                     else "; that is under the 1% P99 looks at.")
            + f" Per chunk (vLLM's ITL, one round) every round costs {1 + t.eps_eff:.2f} plain steps. The lesson's "
              f"two-pass model adds a plain step to every round with a rejection anywhere in the batch: P99 TPOT "
              f"{pct(t.tpot_p99_change_two_pass)}. vLLM and SGLang run no second pass: rejection sampling "
              "resamples from the verify pass.")   # vllm/v1/sample/rejection_sampler.py; SGLang's EAGLE verify
        if t.alpha_spread > 0 and not plan.measured:
            lower = t.acceptance_length_requests < t.acceptance_length
            facts.append(
                f"Spread {'costs' if lower else 'changes'} throughput too: the simulated requests run "
                f"{t.speedup_mc:.3f}x (±{t.speedup_mc_se:.3f}) against {t.speedup_exact:.3f}x at the mean "
                f"alpha. A batch slot spends its rounds on each request in proportion to its tokens over its tau, so "
                f"the batch sees tau = 1/E[1/tau] = {t.acceptance_length_requests:.3f} over requests, not "
                f"tau(mean alpha) = {t.acceptance_length:.3f}: {t.speedup_requests:.3f}x"
                + ("." if lower else " (clipping alphas at 0 raises it here)."))
    return facts


def facts_mix(result):
    """The traffic mix: naive against correct blend, and its tail."""
    facts = []
    mix = result.mix
    if mix:
        facts.append(f"Traffic mix at B = {mix.concurrency}, K = {mix.k}. " + mix_blend_sentence(mix)
                     + f" {mix.weak} pulls it down. " + mix_tail_sentence(mix))
    return facts


def facts_gate(result):
    """The gate's verdict and its reasons."""
    facts = []
    if result.gate is not None:
        g = result.gate
        facts.append(f"Gate at B = {g.concurrency}, K = {g.k}: {g.verdict.upper()} ("
                     + "; ".join(f"{r.check} {'passed' if r.passed else 'FAILED'}" for r in g.reasons) + ").")
    return facts


def summary_facts(result, grid, dep, mix=True):
    """Sentences the summary holds, each built from computed numbers; mix: with the traffic mix's (the printed
    summary leaves it out: the mix's own block, just above it, says it)."""
    return (facts_lesson(result) + facts_eps(result, grid) + facts_moe(result, dep) + facts_mtp(result, grid, dep)
            + facts_tail(result) + (facts_mix(result) if mix else []) + facts_gate(result))


# A published sweep of one MTP module reused K deep: DeepSeek-R1 (one module, num_nextn_predict_layers 1) on
# TensorRT-LLM, 8 x B200, batch 1, "MTP Eagle" (the module reused), acceptance length at K = 1..5
# (NVIDIA/TensorRT-LLM docs/source/blogs/tech_blog/blog1_Pushing_Latency_Boundaries_Optimizing_DeepSeek-R1_
# Performance_on_NVIDIA_B200_GPUs.md).
MTP_DEPTH_SWEEP = (1.92, 2.58, 2.82, 2.99, 3.01)


def facts_mtp(result, grid, dep):
    """Why one alpha overstates an MTP module reused past its own depth, from the published sweep; nothing when
    the acceptance is measured by position (a scrape's counters, a typed sweep) or K stays within the depth."""
    depth = dep.shape.get("nextn", 0)
    measured = result.measured is not None and bool(result.measured.per_position_alpha)
    if dep.draft != "mtp" or max(grid.ks) <= depth or measured or grid.kind == "profile":
        return []
    profile = profile_from_lengths(MTP_DEPTH_SWEEP)
    first = profile[0]
    ks = range(1, len(MTP_DEPTH_SWEEP) + 1)
    return [f"{dep.model} ships {depth} MTP module{'s' if depth != 1 else ''}; K = {max(grid.ks)} reuses it "
            f"{max(grid.ks)} deep, and a reused module accepts less at each later position. DeepSeek-R1's sweep on "
            "TensorRT-LLM (tech blog 1) measured acceptance lengths "
            + ", ".join(f"{t:g}" for t in MTP_DEPTH_SWEEP) + f" at K = 1..{len(ks)}: conditional alphas "
            + ", ".join(f"{a:.2f}" for a in profile) + f" by position, where one alpha of {first:.2f} would give "
            + ", ".join(f"{acceptance_length(first, k):.2f}" for k in ks) + ". The grid's one alpha per cell "
            "overstates the deeper positions: measure tau at each K and give them as `--acceptance-length "
            "T1,...,Tn --ks 1,...,n`."]


def render_summary(result, grid, dep):
    lines = ["== Summary =="]
    for i, fact in enumerate(summary_facts(result, grid, dep, mix=False)):
        lines += ([""] if i else []) + wrap("- " + fact, 100, "  ")
    return lines


def deployment_head(dep):
    """The deployment in two lines, and where its TP and dtypes came from (the exercises print these alone)."""
    return [
        f"Deployment: {dep.model}, {dep.weights_dtype} weights ({dep.target.held_bytes / GIB:.1f} GiB), "
        f"{dep.tp} x {dep.gpu}, {dep.kv_dtype} KV cache, {dep.engine.name},",
        f"mean context {dep.context} tokens, draft {dep.draft} ({dep.drafter.held_bytes / GIB:.2f} GiB).",
    ] + wrap(settings_sentence(dep.settings), 100, "  ") * bool(dep.settings)


def deployment_lines(dep, result):
    return deployment_head(dep) + wrap(
        f"KV cache {dep.target.kv_bytes_per_token:,} B/token{copies_text(dep)}{state_text(dep)}: "
             f"{result.facts.max_concurrency} "
             f"sequences fit in {result.facts.memory_budget_bytes / GIB:.0f} GiB. Traffic {dep.input_tokens} tokens "
             f"in, {dep.output_tokens} out.", 100, "  ") + wrap(expert_sentence(dep, result.facts), 100, "  ") + wrap(f"Plain step at B=1, {sum(result.facts.plain_b1.values()):.2f} ms = "
             + " + ".join(f"{name} {ms:.2f}" for name, ms in result.facts.plain_b1.items()
                          if ms >= 0.005)   # a term that would print as 0.00 is left out
             + " (ms; a closed-loop benchmark's mean TPOT).", 100, "  ") + (
        wrap(f"No calibration point on {GPU_FAMILY.get(dep.gpu, 'custom')} GPUs: their bandwidth share is "
             "Hopper's, an assumption; calibrate on your own runs.", 100, "  ") if not fitted_family(dep) else []) + [
        "alpha: per-token acceptance; rate: accepted/drafted; tau: tokens per round (bonus included).",
        "eps: a round's cost over a plain step, minus 1, with the prefill a round of tau tokens carries.",
        "lesson: (1+K*alpha)/(1+eps); exact: tau/(1+eps) at alpha; sim: simulated requests, their alphas",
        f"alpha + {result.alpha_spread:g} z clipped to [0, 1] (z standard normal); 80% range: of sim (below).",
        "P99 TPOT: across requests (decode time over tokens), in steady state; change: spec vs plain.",
        "2-pass: the lesson's reroll model, a plain step added to every round with a rejection in the batch.",
        "P99 ITL: plain, a plain step; token, a round's time split over its tokens; chunk, a round (vLLM's).",
    ] + wrap(trust_sentence(result.trust) + sim_error_sentence(result), 100, "  ")


