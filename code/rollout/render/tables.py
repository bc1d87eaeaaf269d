"""Rendering: the verdict in words, the printed tables' parts, the deployment lines and the summary, and the
exercises' answers.
"""
from __future__ import annotations

import math
from pathlib import Path

from ..records import eps_label, fmt, k_words, OWN_TERMS, pct, pct1, wrap
from ..catalog import ENGINES, GIB, GPU_FAMILY
from ..acceptance import acceptance_length, alpha_from_length, profile_from_lengths
from ..deployment import draft_kind, fitted_family, kv_copies, non_expert_bytes
from ..trust import INTERVAL_LEVEL, MISS_LINE, span, too_close, Z_INTERVAL
from ..schedule import call_of, paying_ranges, where_it_pays
from ..sizing import settings_sentence
from ..priors import dataset_words, KIND_WORDS
from ..commands import bench_lines, can_serve
from ..workload import SLO_KEYS, SLO_PERCENTILE, slo_text


# ---------------------------------------------------------------- the verdict, first
GATE_CHECK_WORDS = {"memory": "memory", "acceptance": "acceptance over break-even + margin",
                    "p99_tpot": "the P99 TPOT budget", "throughput": "measured throughput"}   # GateCheck.check


def batch_words(v):
    """The plan's batch and how it was chosen, as the verdict's first line names it."""
    if v.concurrency == v.target:
        return f"B = {v.concurrency} (the plan's batch: {v.target_from})"
    return f"B = {v.concurrency}, the most that fits: the plan's batch, {v.target} ({v.target_from}), does not"


def gain_words(v):
    """What K gives at the plan's batch: the plan's benchmark's output throughput first, then decoding alone."""
    decode = f"{v.speedup:.2f}x" + (f" ({span(v.speedup_interval)})" if v.speedup_interval else "")
    if v.throughput_ratio is None:
        return f"{decode} decoding alone (the plan's benchmark is not simulated for this deployment)"
    bench = f"{v.throughput_ratio:.2f}x output throughput in the plan's benchmark" + (
        f" ({span(v.throughput_interval)} at {v.level:.0%})" if v.throughput_interval else "")
    return f"{bench}; decoding alone, {decode}"


def subtract(ranges, holes):
    """The batches of `ranges` ([(first, last)]) outside every hole, as ranges.

    >>> subtract([(1, 125)], [(57, 1170)])
    [(1, 56)]
    """
    out = []
    for lo, hi in ranges:
        for h_lo, h_hi in sorted(holes):
            if h_hi < lo or h_lo > hi:
                continue
            if h_lo > lo:
                out.append((lo, h_lo - 1))
            lo = h_hi + 1
        if lo <= hi:
            out.append((lo, hi))
    return out


def ranges_words(ranges):
    return ", ".join(f"{lo}-{hi}" if lo < hi else f"{lo}" for lo, hi in ranges)


def verdict_sentences(v, dep):
    """The verdict's sentences in order (verdict_parts)."""
    return [text for _, text in verdict_parts(v, dep)]


def verdict_parts(v, dep):
    """The verdict (analysis.verdict) in words a serving lead acts on, each sentence tagged with what it says, so the
    plan can lay them out (plan.plan_verdict): "call" at the plan's batch (named, with how it was chosen) and its gain
    in the plan's benchmark with the decode-only speedup beside it; "differ" where the two call differently;
    "measured", the user's own pair beside it; "basis", the alpha it rests on and where that comes from; "miss", the
    model's known misses for this class; "steps", K by batch size; then "slo", "best" (a better K there), "pays"
    (smaller batches that pay), "close" (close calls) and "nohead". Plain text: the plan escapes it."""
    if v.call == "no fit":
        derived = next((x.why for x in dep.settings if x.setting == "tp" and x.source == "derived"), None)
        return [("call", f"Nothing fits: the weights and one sequence's KV cache of {dep.context} tokens do not fit in "
                         f"memory on {dep.tp} x {dep.gpu}, so no K can run"
                         + (f" (TP {dep.tp} {derived})." if derived else "."))]
    b, k = v.concurrency, v.k
    where, gives = batch_words(v), gain_words(v)
    if v.gate is not None:
        failed = ", ".join(GATE_CHECK_WORDS.get(c, c) for c in v.gate_failed)
        call = {"on": f"Turn it on at {where} with K = {k}: the gate passes on your measurements, and the model "
                      f"predicts {gives}.",
                "off": f"Leave it off at {where} with K = {k}: the gate fails ({failed}).",
                "benchmark first": f"Too close to call at {where} with K = {k}: the gate cannot decide from the "
                                   f"scrapes alone ({failed}); benchmark it and gate again."}[v.call]
    else:
        best = "" if v.k_best else ", the best K with speculation on there,"
        call = {"on": f"Turn it on at {where}: K = {k} gives {gives}.",
                "off": f"Leave it off at {where}: K = {k}{best} gives {gives}"
                       + ("; no K gains there." if not v.k_best else "."),
                "benchmark first": f"Too close to call at {where}: K = {k}{best} gives {gives}; the range holds "
                                   "1.0x. Benchmark it before turning it on."}[v.call]
        if v.miss_interval and call_of(v.miss_interval) != call_of(v.throughput_interval or v.speedup_interval):
            call = call.replace("the range holds 1.0x", f"widened by this class's known miss (below), the range, "
                                f"{span(v.miss_interval)}, holds 1.0x")
    out = [("call", call)]
    decode_call = call_of(v.speedup_interval) if v.speedup_interval else None
    if v.throughput_interval and decode_call and decode_call != call_of(v.throughput_interval):
        out.append(("differ", "The two differ: the benchmark's time holds every prompt's prefill and the run's first "
                              "wave and drain, which speculation does not speed up; the benchmark is what you will "
                              "measure."))
    if v.measured_ratio is not None and v.measured_predicted is not None:
        predicted, low, high = v.measured_predicted
        inside = low <= v.measured_ratio <= high
        out.append(("measured", f"Your own benchmark pair measured {v.measured_ratio:.2f}x output throughput, where the "
                                f"model replaying that run (its own lengths and load) gives {predicted:.2f}x "
                                f"({span([low, high])}): " + ("inside its range." if inside else
                                "outside its range, so your measurement is the better guide; --calibrate on your runs "
                                "fits the model to them.")))
    out.append(("basis", acceptance_sentence(v)))
    if v.model_error is not None and v.model_error.median > MISS_LINE:
        e = v.model_error
        out.append(("miss", f"Known miss: on {e.n} published runs of this class ({CLASS_WORDS(e)}: "
                            f"{', '.join(e.sources)}), each predicted without its source, the model's speedup was "
                            f"{e.median:.0%} off in the median ({e.worst:.0%} worst, running "
                            f"{'high' if e.bias > 0 else 'low'}): the call allows for it, and the benchmark decides."))
    out.append(("steps", f"K by batch size (decode-only speedups): {'; '.join(verdict_steps(v))}."))
    if v.at_slo is not None:
        out.append(("slo", slo_sentence(v.at_slo, b)))
    if v.k_best and v.k_best != k:
        out.append(("best", f"At B = {b} the best K would be {v.k_best} ({v.speedup_best:.2f}x); the plan runs "
                            f"K = {k}."))
    paying = subtract(paying_ranges([row[:3] for row in v.by_batch]), v.close_calls)
    if v.call == "off" and paying:
        out.append(("pays", f"By the decode-only model it pays at B = {ranges_words(paying)}, at the K by batch size "
                            "above."))
    if v.close_calls:
        out.append(("close", f"Decoding alone is too close to call at B = {ranges_words(v.close_calls)}: there its range "
                             "holds 1.0x, and only a benchmark can say whether speculation pays."))
    if v.call != "off" and not can_serve(dep):
        out.append(("nohead", f"No {dep.draft} head for {dep.model} on {dep.engine.name} is known to this tool: give "
                              "--draft-model (the plan's stage 1 says how to get one); --draft ngram needs no model."))
    return out


def CLASS_WORDS(e):
    """A held-out class in words: "MTP on a MoE target, SGLang, Hopper GPUs"."""
    return (f"{DRAFT_WORDS.get(e.draft, e.draft)} on a {'MoE' if e.target == 'moe' else 'dense'} target, "
            f"{ENGINES[e.engine].name}, {e.family.capitalize()} GPUs")


DRAFT_WORDS = {"eagle3": "EAGLE-3", "eagle": "EAGLE", "mtp": "MTP", "ngram": "n-gram", "model": "a draft model"}


def acceptance_sentence(v):
    """Where the alpha the verdict rests on comes from: measured, or the published acceptance of each traffic domain
    for this head (priors.PlanAcceptance), and where its temperature differs from the traffic's."""
    if v.measured:
        return f"This rests on the measured per-token alpha {v.alpha:.2f}."
    words = f"This assumes per-token alpha {v.alpha:.2f} until your server measures it (stage 2)"
    pa = v.acceptance
    if pa is None:
        return words + "."
    if all(prior is None for _, _, _, prior in pa.domains):
        return words.replace(f"alpha {v.alpha:.2f}", f"alpha {v.alpha:.2f} (as --mix gives it)") + "."
    parts = []
    for name, share, alpha, prior in pa.domains:
        head = f"{name} ({share:.0%} of tokens) {alpha:.2f}"
        if prior is None:
            parts.append(head + " as given")
            continue
        spread = f", s.d. {prior.spread:.2f}" if prior.n > 1 else ""
        widened = ", widening the range" if prior.widened and prior.spread else ""
        parts.append(f"{head}, {prior.what} ({dataset_words(prior.datasets)}: {prior.n} measured{spread}, "
                     f"temperature {prior.temperature}{widened})")
    words += ", from published acceptance: " + "; ".join(parts) + "."
    apart = [(name, prior) for name, _, _, prior in pa.domains
             if prior and prior.temperatures and pa.temperature not in prior.temperatures]
    if pa.temperature_pairs and apart:
        losses = sorted(alpha_from_length(t0, k) - alpha_from_length(t1, k) for t0, t1, k, _ in pa.temperature_pairs)
        rows = "; ".join(f"{name}'s at {prior.temperature}" for name, prior in apart)
        words += (f" Your traffic samples at {pa.temperature:g}, not as the rows did ({rows}): {len(losses)} "
                  f"published pairs lose {losses[0]:.2f}-{losses[-1]:.2f} of per-token alpha from 0 to 1.")
    return words


def verdict_steps(v):
    """K by batch size, one phrase a schedule row: "B = 9-34: K = 3, 1.84x to 1.50x" ("off" where K is 0)."""
    return [(f"B = {lo}-{hi}: " if lo < hi else f"B = {lo}: ")
            + (f"K = {k}, {first:.2f}x" + (f" to {last:.2f}x" if f"{first:.2f}" != f"{last:.2f}" else "") if k
               else "off")
            for lo, hi, k, first, last in v.by_batch]


def verdict_command(v, dep, width=100):
    """(words, shell lines of at most width columns): the one benchmark run that settles or confirms the call at its
    batch, against stage 0's run with speculation off; ([], []) where there is none to run (speculation off, nothing
    fits, no head to serve)."""
    if v.call in ("off", "no fit") or not can_serve(dep):
        return [], []
    b = v.concurrency
    words = (f"{'Settle' if v.call == 'benchmark first' else 'Confirm'} it at B = {b} with one benchmark against the "
             f"plan's stage-1 server (speculation on, K = {v.k}), beside stage 0's sharegpt_baseline_c{b}.json "
             "(speculation off):")
    return [words], bench_lines(dep, b, f"sharegpt_spec_c{b}.json", realistic=True, width=width)


def render_verdict(v, dep):
    """The printed report's first block: the verdict and the benchmark that settles it."""
    title = f"== Verdict: speculative decoding ({dep.draft}) for {dep.model} on {dep.tp} x {dep.gpu}, {dep.engine.name} =="
    lines = ["\n".join(wrap(title, 100, "   "))]
    for sentence in verdict_sentences(v, dep):
        lines += wrap(sentence, 100, "  ")
    words, command = verdict_command(v, dep, width=98)   # indented by two below
    for sentence in words:
        lines += wrap(sentence, 100, "")
    lines += ["  " + line for line in command]
    return lines + [""]


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
                      f"on the runs' mean TTFTs: at that cost their simulated mean TTFTs are {pct1(min(errors))} to "
                      f"{pct1(max(errors))} off." + (
                          f" They disagree beyond {TTFT_SPREAD:.0%}: this deployment's TTFT, and the SLO's answer, "
                          "are less sure than its TPOT (runs of another deployment, or a queue the simulation leaves "
                          "out)." if max(map(abs, errors)) > TTFT_SPREAD else ""), 100, " ")
    for note in cal.notes:
        lines += wrap(f"- {note}", 100, "  ")
    return lines + [""]


TTFT_SPREAD = 0.5   # calibration runs whose mean TTFTs one request cost misses by more than this are said to disagree


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


def expert_sentence(dep, facts):
    """How a MoE target's experts are read: the routing assumed and, expert parallel, the busiest GPU's load
    (facts.busiest_share); "" for a dense target."""
    t = dep.target
    if not t.experts:
        return ""
    routing = (f"routing skewed as its family's measured hottest expert says (power-law exponent "
               f"{t.routing_exponent:.2f}; HOT_EXPERT_LOAD)" if t.routing_exponent else
               "routing taken as uniform (no measurement of its router's skew here: the upper end of its reads)")
    text = f"Experts: {t.experts_per_token} of {t.experts} a token, {routing}; "
    if dep.ep == 1:
        return text + (f"each split across the {dep.tp} GPUs (tensor parallel)." if dep.tp > 1 else "on one GPU.")
    share = facts.busiest_share
    return text + (f"whole experts on each of {dep.ep} GPUs (expert parallel): at B=1 the busiest GPU reads "
                   f"{share:.2f}x its even share, and a MoE layer waits for it." + (
                       f" Attention data parallel: each GPU runs attention for its own 1/{dep.tp} of the sequences "
                       f"and holds a whole copy of the {non_expert_bytes(t) / GIB:.1f} GiB that are not routed "
                       "experts, read every step." if dep.dp_attention else ""))


def copies_text(dep):
    """" (x8: ...)" when the TP GPUs each hold a copy of the target's KV heads (kv_copies), else ""."""
    copies = kv_copies(dep.target, dep)
    if copies == 1:
        return ""
    what = "MLA's one latent" if dep.target.kv_groups == 1 else f"its {dep.target.kv_groups} KV heads"
    return f" (x{copies:g}: {what} copied across the {dep.tp} GPUs)"


def deployment_head(dep):
    """The deployment in two lines, and where its TP and dtypes came from (the exercises print these alone)."""
    return [
        f"Deployment: {dep.model}, {dep.weights_dtype} weights ({dep.target.held_bytes / GIB:.1f} GiB), "
        f"{dep.tp} x {dep.gpu}, {dep.kv_dtype} KV cache, {dep.engine.name},",
        f"mean context {dep.context} tokens, draft {dep.draft} ({dep.drafter.held_bytes / GIB:.2f} GiB).",
    ] + wrap(settings_sentence(dep.settings), 100, "  ") * bool(dep.settings)


def deployment_lines(dep, result):
    return deployment_head(dep) + wrap(
        f"KV cache {dep.target.kv_bytes_per_token:,} B/token{copies_text(dep)}: {result.facts.max_concurrency} "
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


OUTSIDE_WORDS = dict(target="a target of its kind", engine="its engine", draft="its draft method",
                     family="its GPU family", era="a round timed in its engine release",
                     layout="its expert-parallel layout")   # Trust.outside, in words


def ratio_span(sd):
    """The interval as factors on a prediction: "x0.81-1.23"."""
    spread = math.exp(Z_INTERVAL * sd)
    return f"x{1 / spread:.2f}-{spread:.2f}"


def trust_sentence(trust):
    """How far to believe this run's numbers, in one sentence."""
    outside = ""
    if trust.outside:
        outside = (" No published measurement has " + " or ".join(OUTSIDE_WORDS[name] for name in trust.outside)
                   + ": the range is wider for it.")
    return (f"Trust: {trust.level:.0%} of measurements should fall within a predicted speedup {ratio_span(trust.speedup_sd)}, "
            f"a mean TPOT {ratio_span(trust.tpot_sd)} (speculation on {ratio_span(trust.spec_tpot_sd)}); "
            f"from {trust.basis}.{outside}"
            + ("" if trust.calibrated else " --calibrate on your own runs narrows it."))


def sim_error_sentence(result):
    """The simulation's own error, beside the model's: the largest standard error of sim."""
    errors = [c.speedup_mc_se for c in result.cells if c.feasible]
    return f" sim's simulation error is at most {max(errors):.3f} (s.e.)." if errors else ""


def render_exercise_1(t):
    """The alpha for 2x and 3x, by eps."""
    lines = [f"== Exercise 1: the per-token alpha K = {t.k} needs for 2x and 3x ==",
             "alpha solves tau(alpha, K) = S * (1 + eps); the lesson's (S(1+eps) - 1)/K is the same target",
             "read as vLLM's acceptance rate. eps is the decode eps: these are decode speedups, without the",
             "prefill share that dilutes a closed-loop benchmark's (the grid's speedups include it).",
             ""]
    lines += column_header([("eps", 6), ("from", 12), ("2x alpha", 9), ("as rate", 8), ("3x alpha", 9),
                            ("as rate", 8)], [])
    for r in t.rows:
        lines.append(f"{r.eps:6.3f} {r.source:>12s} {fmt(r.alpha_2x, '9.3f', 'never'):>9s} "
                     f"{fmt(r.lesson_2x if r.alpha_2x is not None else None, '8.3f', '-'):>8s} "
                     f"{fmt(r.alpha_3x, '9.3f', 'never'):>9s} "
                     f"{fmt(r.lesson_3x if r.alpha_3x is not None else None, '8.3f', '-'):>8s}")
    given = [r for r in t.rows if r.source == "given"]
    first, last = given[0], given[-1]
    lines += wrap(f"From eps {first.eps:.2f} to {last.eps:.2f} the alpha for 2x moves "
                  f"{first.alpha_2x:.3f} -> {fmt(last.alpha_2x, '.3f', 'never')}, for 3x "
                  f"{fmt(first.alpha_3x, '.3f', 'never')} -> {fmt(last.alpha_3x, '.3f', 'never')}: near the "
                  "top of the curve every bit of overhead costs a lot of alpha.", 100, "")
    return lines


def render_exercise_2(mixes, published=None):
    """The traffic mix (the lesson's is 70/30 chat/code) at B = 1 and at the target, and what published acceptance
    says of code against chat (priors.Contrast)."""
    domains = mixes[0].domains
    lines = ["", f"== Exercise 2: a {'/'.join(format(d.share * 100, '.0f') for d in domains)} "
                 f"{'/'.join(d.name for d in domains)} mix =="]
    for mix in mixes:
        verdict = "pays" if mix.blended_speedup > 1 else "does not pay"
        lines += wrap(f"B = {mix.concurrency}, K = {mix.k}: naive blended alpha {mix.naive_alpha:.3f} promises "
                      f"{mix.naive_speedup:.3f}x; the token-weighted blend is {mix.blended_speedup:.3f}x, so "
                      f"speculation {verdict} ({' / '.join(d.name + ' ' + format(d.speedup, '.2f') + 'x' for d in mix.domains)} "
                      f"alone; best K for the mix {k_words(mix.best_k)}: {mix.best_k_speedup:.3f}x).", 100, "  ")
    code = next((d for d in domains if d.name == "code"), None)
    if published is not None and code is not None:
        c = published
        below = (f"the mix's {code.alpha:.2f} for code is below every one of them" if code.alpha < c.first_range[0]
                 else f"the mix's {code.alpha:.2f} for code is within their range")
        lines += wrap(f"Published acceptance does not bear out a weak code domain: of {c.heads} "
                      f"{KIND_WORDS.get(c.draft, c.draft)} measured on both, {c.higher} accept more on code than on "
                      f"chat (per-token alpha {c.first_range[0]:.2f}-{c.first_range[1]:.2f} on code, "
                      f"{c.second_range[0]:.2f}-{c.second_range[1]:.2f} on chat; acceptance_table.json), and "
                      f"{below}. A run without --exercises takes each domain's alpha from those rows.", 100, "  ")
    return lines


def render_exercise_3(m, dep):
    """vLLM's speculative methods on this target: cost, memory, config."""
    lines = ["", f"== Exercise 3: vLLM's speculative methods on {dep.model}, K = {m.k} (eps from the cost model) ==",
              ""]
    lines += column_header([("draft", 13), ("method", 11), ("params", 8), ("weights", 8), ("KV/token", 9),
                            ("step ms", 8), ("eps B=1", 8), (f"eps B={m.concurrency}", 9), ("max B", 6)], [])
    for r in m.rows:
        lines.append(f"{r.draft:>13s} {r.method:>11s} {r.params / 1e9:7.3f}B {r.weight_bytes / GIB:5.2f}GiB"
                     f" {r.kv_bytes_per_token:9,d} {r.draft_step_ms:8.2f} {r.eps_b1:8.2f} "
                     f"{r.eps_target:9.2f} {r.max_concurrency:6d}")
    lines.append("Configs (--speculative-config), one per draft:")
    for r in m.rows:
        lines += wrap(r.config, 100, "    ")
    lines.append("Which features each combines with depends on the vLLM version: check its compatibility matrix.")
    return lines


def render_exercise_4(d):
    """The lesson's symptom (mean ITL down, P99 up): per token, as TPOT over requests, and the remedies."""
    mean, p99 = d.symptom
    lines = ["", f"== Exercise 4: mean ITL {pct(mean)} but P99 ITL {pct(p99)} =="]
    lines += wrap(f"Read per token, at B = 1: K = {d.k}, eps = {d.eps:.3f} and one per-token alpha "
                  f"{d.alpha:.3f} for every request (tau {d.tau:.2f}) give mean per-token ITL "
                  f"{pct1(d.mean_change)} and P99 {pct1(d.p99_change)}. Every round costs 1 + eps plain steps and "
                  f"{d.zero_accept_token_share * 100:.0f}% of tokens come from rounds that accepted nothing, "
                  f"so P99 follows eps while the mean follows tau/(1+eps). The ITL `vllm bench serve` reports is per "
                  f"chunk, one round: its mean rises by eps ({pct1(d.round_mean_change)}) too, so the {pct(mean)} must "
                  "be a per-token figure (TPOT).", 100, "  ")
    t = d.tpot
    if t:
        lines += wrap(f"Read as TPOT across requests, at B = 1 where the model's eps is "
                      f"{t.eps:.2f} (K = {t.k}): mean TPOT {pct1(t.mean_change)} and P99 TPOT "
                      f"{pct1(t.p99_change)} need requests whose alpha spreads by s.d. {t.spread:.3f} around "
                      f"{t.alpha:.3f} (tau over requests {t.tau:.2f}). The requests at P99 accept at alpha "
                      f"{t.slow_alpha:.2f} on average: {t.slow_tau:.2f} tokens a round for {1 + t.eps:.2f} "
                      f"plain steps, {(1 + t.eps) / t.slow_tau:.2f}x a plain step per token, while the rest carry "
                      "the mean.", 100, "  ")
    else:
        lines += wrap("Read as TPOT across requests at B = 1, no spread of alpha gives both figures at the model's "
                      "eps.", 100, "  ")
    lines.append(f"Remedies: the same requests at B = {d.concurrency} (eps from the cost model):")
    for r in d.remedies:
        parts = [f"K = {r.k}: eps {r.eps:.2f}"]
        if r.token is not None:
            parts.append(f"one alpha: {r.token.speedup:.2f}x, per-token P99 {pct1(r.token.p99_change)}")
        if r.tpot is not None:
            parts.append(f"spread: {r.tpot.speedup:.2f}x, P99 TPOT {pct1(r.tpot.tpot_p99_change)}")
        lines.append("  " + "; ".join(parts))
    lines += wrap(f"  K by batch size (num_speculative_tokens_per_batch_size): {d.schedule}; "
                  + where_it_pays(d.schedule) + "."
                  + " A shorter K shortens every round; the slow requests gain only by skipping speculation "
                    "(routing) or by a head that drafts them better.", 100, "  ")
    return lines


def render_exercise_5(mem, dep):
    """Draft memory: an EAGLE-3 head against a draft model."""
    lines = ["", f"== Exercise 5: draft memory on {dep.model} at {mem.concurrency} x {mem.context} tokens =="]
    for r in mem.rows:
        lines.append(f"  {r.draft:>13s}: {r.params / 1e9:.3f} B parameters = {r.weight_bytes / GIB:.2f} GiB "
                     f"bf16; own KV {r.kv_bytes_per_token:,} B/token")
        lines.append(f"  {'':>13s}  = {r.kv_bytes_at_target / GIB:.2f} GiB at this load; {r.max_concurrency} "
                     "sequences fit")
    lines.append(f"  without a draft model's weights or KV: {mem.max_concurrency_without_draft} sequences fit.")
    return lines


def render_exercises(ex, dep):
    """The five exercises with the model's answers."""
    return (render_exercise_1(ex.speedup_targets) + render_exercise_2(ex.traffic_mix, ex.published)
            + render_exercise_3(ex.methods, dep) + render_exercise_4(ex.tail_diagnosis)
            + render_exercise_5(ex.draft_memory, dep) + [""])


def trained_draft(dep):
    """What could be trained for a weak traffic domain: a head, a draft model, the MTP module; nothing for n-gram."""
    return {"ngram": None, "mtp": "the MTP module fine-tuned", "model": "a draft model tuned"}.get(
        draft_kind(dep.draft), "a head trained")


def slow_domains(mix):
    """'code 100%' style: which domains the slowest 1% of the mix's requests come from."""
    return ", ".join(f"{share * 100:.0f}% {name}" for name, share in mix.slow_domains.items() if share > 0)


def per_gpu(at, point):
    """A point's requests/s per GPU of the replica."""
    return point.request_throughput / at.gpus


def slo_sentence(at, batch=None):
    """The verdict's line on the SLO: what each arm serves per GPU within it, which bound stops it, the gain, and
    whether the plan's batch is past it (plain text)."""
    if at.skipped:
        return f"The SLO ({slo_text(at.slo)}) is not searched: {at.skipped}."
    def arm(a, name):
        if a.best is None:
            return f"{name} meets it at no concurrency, not even one request at a time"
        capped = (", the server's cap" if a.best.concurrency >= a.cap else
                  ", the most the search tries: it may serve more" if a.best.concurrency >= a.top else "")
        return (f"{name} serves {per_gpu(at, a.best):.3g} requests/s per GPU within it "
                f"(at most {a.best.concurrency} concurrent{capped})")
    spec = at.speculative.best
    name = ("speculation" if spec is None else f"speculation (K = {spec.k} there, the plan's K by batch size)"
            if spec.k else "the plan's K by batch size (speculation off there)")
    words = f"At the SLO ({slo_text(at.slo)}): " + arm(at.speculative, name) + "; " + arm(at.baseline,
                                                                                          "plain decoding")
    if at.gain is not None:
        words += f": {at.gain:.2f}x the traffic per GPU with speculation"
    words += "."
    stopped = [a for a in (at.speculative, at.baseline) if a.stopped_by]
    if stopped:
        stops = sorted({key for a in stopped for key in a.stopped_by}, key=SLO_KEYS.index)
        which = "it" if len(stopped) == 1 else "both"
        words += (f" The bound that stops {which} is P{SLO_PERCENTILE} {stops[0].upper()}" if len(stops) == 1 else
                  f" The bounds that stop them are P{SLO_PERCENTILE} {' and '.join(k.upper() for k in stops)}")
        words += "."
    spec = at.speculative
    if batch is not None and spec.best is not None and batch > spec.best.concurrency and spec.stopped_by:
        words += (f" At the plan's B = {batch} speculation misses it: to keep it, run each replica at most "
                  f"{spec.best.concurrency} concurrent (its max-concurrency or running cap).")
    return words + (" These are the benchmark's numbers, a closed loop whose first wave of prompts queues at once."
                    if "ttft" in dict(at.slo) else "")
