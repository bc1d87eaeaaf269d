"""The sentences several parts of the output share: the verdict in words (its call, its gain, its steps, the command
that confirms it), the trust in a prediction, the SLO's line, a mix's slowest requests, a MoE's experts and a KV
cache's copies."""
from __future__ import annotations

import math

from ..records import wrap
from ..catalog import ENGINES, GIB
from ..acceptance import alpha_from_length
from ..schedule import call_of, paying_ranges
from ..priors import dataset_words
from ..deployment import draft_kind, kv_copies, non_expert_bytes, STATE_COPIES
from ..workload import SLO_KEYS, SLO_PERCENTILE, slo_text
from ..trust import MISS_LINE, span, Z_INTERVAL
from ..commands import bench_lines, can_serve

MOVED = 0.05   # a class's median error that moves the verdict's numbers by this much or more is said ("miss")


GATE_CHECK_WORDS = {"memory": "memory", "acceptance": "acceptance over break-even + margin",
                    "p99_tpot": "the P99 TPOT budget", "throughput": "measured throughput"}   # GateCheck.check


def batch_words(v):
    """The plan's batch and how it was chosen, as the verdict's first line names it."""
    if v.concurrency == v.target:
        return f"B = {v.concurrency} (the plan's batch: {v.target_from})"
    return f"B = {v.concurrency}, the most that fits: the plan's batch, {v.target} ({v.target_from}), does not"


def gain_words(v):
    """What K gives at the plan's batch: the plan's benchmark's output throughput first, then decoding alone."""
    decode = f"{v.decode_speedup:.2f}x" + (f" ({span(v.decode_speedup_interval)})" if v.decode_speedup_interval else "")
    if v.speedup_of == "decode-only":
        return f"{decode} decoding alone (the plan's benchmark is not simulated for this deployment)"
    bench = f"{v.speedup:.2f}x output throughput in the plan's benchmark" + (
        f" ({span(v.speedup_interval)} at {v.level:.0%})" if v.speedup_interval else "")
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
    out = [("call", call)]
    decode_call = call_of(v.decode_speedup_interval) if v.decode_speedup_interval else None
    if v.speedup_of != "decode-only" and v.speedup_interval and decode_call and decode_call != call_of(
            v.speedup_interval):
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
    if v.modelled is not None and (v.model_error.median > MISS_LINE or abs(v.model_error.bias) >= MOVED):
        e = v.model_error
        out.append(("miss", f"Known miss: on {e.n} published runs of this class ({CLASS_WORDS(e)}: "
                            f"{', '.join(e.sources)}), each predicted without its source, the model's speedup was "
                            f"{e.median:.0%} off in the median ({e.worst:.0%} worst), running "
                            f"{'high' if e.bias > 0 else 'low'} by {abs(e.bias):.0%} in the median "
                            f"({e.low:+.0%} to {e.high:+.0%} at the 10th and 90th percentiles). The gain above is "
                            f"the model's divided by those errors (the model alone: {v.modelled['speedup']:.2f}x"
                            + (f", decoding alone {v.modelled['decode_speedup']:.2f}x" if v.speedup_of != "decode-only"
                               else "") + "); the speedups by batch below are the model's; the benchmark decides."))
    out.append(("steps", f"K by batch size (decode-only speedups): {'; '.join(verdict_steps(v))}."))
    if v.at_slo is not None:
        words = slo_sentence(v.at_slo)
        spec = v.at_slo.speculative.best if v.at_slo.speculative is not None else None
        if spec is not None and spec.concurrency >= 1 and b > spec.concurrency + 2 * spec.concurrency ** 0.5:
            words += (f" The plan's B = {b} is more than a replica holds there: send each at most "
                      f"{rate_words(spec.rate)} requests/s to keep the SLO.")
        out.append(("slo", words))
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


def state_text(dep):
    """" and a recurrent state of ... a sequence ..." for a hybrid target (its linear-attention or Mamba layers keep
    a fixed state instead of KV), else ""."""
    net = dep.target
    if not net.state_bytes:
        return ""
    return (f" and a recurrent state of {net.state_bytes / 2**20:,.1f} MiB a sequence in its {net.state_layers} "
            f"recurrent layers, held {STATE_COPIES} times (the running state and one per drafted position at "
            f"K = {STATE_COPIES - 1})")


OUTSIDE_WORDS = dict(target="a target of its kind", engine="its engine", draft="its draft method",
                     family="its GPU family", era="a round timed in its engine release",
                     layout="its expert-parallel layout",
                     gpu="its GPU (the family's constants stand in for it)")   # Trust.outside, in words


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


def trained_draft(dep):
    """What could be trained for a weak traffic domain: a head, a draft model, the MTP module; nothing for n-gram."""
    return {"ngram": None, "mtp": "the MTP module fine-tuned", "model": "a draft model tuned"}.get(
        draft_kind(dep.draft), "a head trained")


def slow_domains(mix):
    """'code 100%' style: which domains the slowest 1% of the mix's requests come from."""
    return ", ".join(f"{share * 100:.0f}% {name}" for name, share in mix.slow_domains.items() if share > 0)


def per_gpu(at, point):
    """A point's request rate per GPU of the replica."""
    return point.rate / at.gpus


def rate_words(rate):
    """A rate as printed: 3 significant digits, whole numbers with separators past 1,000."""
    return f"{rate:,.0f}" if rate >= 1000 else f"{rate:.3g}"


def stop_words(keys):
    """What stops an arm, in words: "P99 TTFT", "P99 TPOT and a growing queue"."""
    words = [f"P{SLO_PERCENTILE} {key.upper()}" for key in SLO_KEYS if key in keys]
    return " and ".join(words + (["a growing queue"] if "queue" in keys else []))


def slo_sentence(at):
    """The verdict's line on the SLO: the capacity of each arm per GPU as traffic arrives (an open loop), the
    requests in a replica there, the gain, and what binds (plain text)."""
    if at.skipped:
        return f"The SLO ({slo_text(at.slo)}) is not searched: {at.skipped}."
    def arm(a, name):
        if a.best is None:
            return f"{name} meets it at no rate, not even {a.points[0].rate:g} requests/s a replica"
        return (f"{name} serves {rate_words(per_gpu(at, a.best))} requests/s per GPU ({rate_words(a.best.rate)} a "
                f"replica, about {a.best.concurrency:.2g} in it)" if a.best.concurrency < 10 else
                f"{name} serves {rate_words(per_gpu(at, a.best))} requests/s per GPU ({rate_words(a.best.rate)} a "
                f"replica, about {a.best.concurrency:,.0f} in it)")
    spec = at.speculative
    name = ("speculation" if spec.best is None else
            f"speculation (the plan's K by batch size, K = {spec.best.k} on most steps)" if spec.served.rows else
            f"speculation (one K, the table's at that load: K = {spec.best.k})" if spec.best.k else
            "the table's K at that load (0: speculation off)")
    arrivals = "Poisson" if at.burstiness == 1 else f"gamma gaps of shape {at.burstiness:g}"
    words = (f"At the SLO ({slo_text(at.slo)}), requests arriving at random ({arrivals}, runs of {at.prompts:,}): "
             + arm(spec, name) + "; " + arm(at.baseline, "plain decoding"))
    if at.gain is not None:
        words += f": {at.gain:.2f}x the traffic per GPU with speculation"
        words += f" ({span(at.gain_interval)} at 80%" if at.gain_interval else ""
        moved = at.modelled_gain and abs(at.modelled_gain / at.gain - 1) >= MOVED
        words += (f"; the simulated capacities give {at.modelled_gain:.2f}x, corrected by this class's known miss)"
                  if moved else ")" if at.gain_interval else "")
    words += "."
    stopped = [a for a in (at.speculative, at.baseline) if a.stopped_by]
    if stopped:
        stops = {key for a in stopped for key in a.stopped_by}
        which = "it" if len(stopped) == 1 else "both"
        words += f" What stops {which}: {stop_words(stops)}."
    if at.cap_from or "queue" in {key for a in stopped for key in a.stopped_by}:   # where a queue forms, and why
        words += (f" The server runs at most {at.baseline.cap:,} request{'s' if at.baseline.cap != 1 else ''} at once"
                  + (f" ({at.cap_from})" if at.cap_from else "") + ".")
    return words
