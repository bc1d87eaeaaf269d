"""Reading acceptance: vLLM's, SGLang's and TensorRT-LLM's /metrics scrapes (Prometheus text, read bounded:
bounded.py), the counters of a window between two scrapes, and what they measure (measured_acceptance). Checked at
the boundary; a bad scrape raises UsageError. Benchmark result files are benchfiles.py's; a config.json hfconfig.py's.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from .records import COUNT_LIMIT, K_LIMIT, NOT_IN_JSON, shown, UsageError
from .acceptance import alpha_from_length, profile_length
from .bounded import text_lines


# vLLM's Prometheus counters, SGLang's gauges and `vllm bench serve --save-result` JSON
# (vllm/v1/spec_decode/metrics.py, vllm/benchmarks/serve.py). Files are checked here, at the boundary; a bad one raises
# UsageError. What real files look like, by vLLM version: V0 (removed in v0.10.0) had
# draft and accepted token counters and two gauges; V1 from PR #15151 the two counters;
# from PR #16665 (~v0.8.5) also num_drafts and accepted tokens per position; from PR
# #24049 an `engine` label per data-parallel engine; newer builds also drafted tokens per
# position. prometheus_client writes X_total beside X_created, in exponent notation.
COUNT_SLACK = 1e-4   # relative slack between counts that must agree: exponent notation keeps six digits
                     # (1.7644e+09), and counters scraped a moment apart can drift a little further
K_SHORTFALL = 0.02   # draft tokens a round may fall short of K on average and K still count as fixed: a
                     # request's last rounds near its length limit, or draft tokens a grammar rejected
                     # (vLLM's num_invalid_spec_tokens), draft fewer; at most that share of drafts missed a
                     # position, so its true rate is at most K_SHORTFALL / (1 - K_SHORTFALL) above the shown

@dataclass(frozen=True)
class Measurement:
    """Acceptance as measured (measured_acceptance, from /metrics counters or gauges, a benchmark file's spec_decode_*
    keys, or a length or rate typed on the command line): the three meanings of alpha (acceptance.py)."""
    k: int                   #: the K in use (the highest position counted, plus one), or the most a round drafts
    k_mean: float            #: draft tokens per draft: K, or less when K varied
    varying_k: bool          #: whether rounds drafted different lengths (a K-by-batch table, n-gram misses)
    drafts: float            #: drafts (rounds) counted; None when the source holds no counts
    acceptance_rate: float   #: accepted over drafted tokens (vLLM's rate r)
    acceptance_length: float   #: tau: tokens a round delivers, bonus included
    per_position_rates: list   #: accepted at position i over drafts reaching it
    per_position_alpha: list   #: conditional alpha at each position (empty when not clean)
    alpha: float             #: the per-token alpha (a chain of K giving tau, or position 0's rate when K varied)
    profile: list = field(metadata=NOT_IN_JSON)   #: conditional alphas by position best K runs on
    source: str              #: where it was read, as flags and paths
    notes: list              #: what the reading noticed, in words


# Bounds on a calibration run (calibration.py's fit): here, below calibration, because the readers and trust use
# them too.
RUN_NOISE = 0.01      # least run-to-run spread of a closed-loop run's mean TPOT (fraction): ten prompts a slot
OWN_LENGTHS = 0.25    # runs one calibration fits may differ in mean prompt or output length by at most this


def decoding_batch(concurrency, output_tokens, tpot_ms, ttft_ms, completed):
    """Sequences a closed-loop run at max_concurrency C decodes on average, as its requests see it.

    A request holds its slot for its time to first token and then decodes: the share of a slot spent decoding is
    (O - 1) TPOT / (TTFT + (O - 1) TPOT) (Little's law). And the last C of N requests drain the batch, each seeing
    about C/2 on average: C (1 - C / 2N) over the requests.
    >>> decoding_batch(16, 101, 10.0, 0.0, 160), round(decoding_batch(64, 301, 20.0, 600.0, 1280), 3)
    (15.2, 56.727)
    """
    decoding = (output_tokens - 1) * tpot_ms
    share = decoding / (decoding + ttft_ms) if ttft_ms else 1.0
    drain = 1.0 - min(concurrency, completed) / (2.0 * completed)
    return max(1.0, concurrency * share * drain)


SGLANG_GAUGE_STEPS = 40   # decode steps SGLang's acceptance gauges average over (python/sglang/srt/metrics/collector.py)


SPEC_COUNTERS = {   # vllm/v1/spec_decode/metrics.py; the emitted-tokens counter is V0's (vllm/engine/metrics.py)
    "vllm:spec_decode_num_drafts_total": "drafts",
    "vllm:spec_decode_num_draft_tokens_total": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens_total": "accepted",
    "vllm:spec_decode_num_emitted_tokens_total": "emitted",
    # TensorRT-LLM's /prometheus/metrics (tensorrt_llm/metrics/collector.py): draft and accepted tokens summed over
    # its iteration stats; it counts no drafts (rounds), so --ks completes the measurement.
    "trtllm_spec_decode_num_draft_tokens_total": "draft_tokens",
    "trtllm_spec_decode_num_accepted_tokens_total": "accepted",
}
PER_POSITION_COUNTERS = {   # label position="i"
    "vllm:spec_decode_num_accepted_tokens_per_pos_total": "accepted",
    "vllm:spec_decode_num_draft_tokens_per_pos_total": "drafted",
}
SPEC_GAUGES = {
    "vllm:spec_decode_draft_acceptance_rate": "v0_rate",        # V0: accepted / draft tokens, a fraction
    "vllm:spec_decode_efficiency": "v0_efficiency",             # V0: emitted / the most a round could emit
    "sglang:spec_accept_length": "sglang_length",               # SGLang: tau over the last SGLANG_GAUGE_STEPS steps
    "sglang:spec_accept_rate": "sglang_rate",                   # (python/sglang/srt/metrics/collector.py)
}
# name{labels} value [timestamp] [# exemplar]: the Prometheus text format and OpenMetrics
# (whose timestamps are float seconds).
SAMPLE_LINE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?'
                         r'\s+(\S+)(?:\s+-?[0-9.]+(?:[eE][-+]?[0-9]+)?)?(?:\s+#.*)?$')
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
LABEL_SET = re.compile(r'\{\s*(?:[A-Za-z_][A-Za-z0-9_]*\s*=\s*"(?:[^"\\]|\\.)*"\s*(?:,\s*(?=[A-Za-z_}])|(?=\})))*\}')
MODEL_LIMIT = 1000   # models one scrape may hold speculative metrics for (a federated scrape of many servers)

@dataclass(frozen=True)
class Counters:
    """A scrape's speculative-decoding metrics for one model (read_metrics), or a window between two scrapes.
    Counts are sums over the other labels (data-parallel engines); None where the scrape has no such counter (a
    missing counter is not zero)."""
    drafts: float            #: drafts (rounds)
    draft_tokens: float      #: drafted tokens
    accepted: float          #: accepted draft tokens
    per_position: dict = field(default_factory=dict)   #: {position: accepted tokens}
    drafted_per_position: dict = field(default_factory=dict)   #: {position: drafted tokens}
    gauges: dict = field(default_factory=dict)   #: {SPEC_GAUGES value: mean over the label sets that report one, an
                                                 #: SGLang rank with no speculative step (0) left out}
    emitted: float = None    #: vLLM V0's emitted tokens
    engine: str = "vllm"     #: whose metrics: "vllm", or "trtllm" (SGLang's gauges tell themselves apart, is_sglang)


def one_average_draft(tau, k):
    """Counters of one average draft of K tokens: a measurement that gives tau at K but no counts
    (a gauge, a bench file's rate and length, a value typed on the command line)."""
    return Counters(drafts=1.0, draft_tokens=float(k), accepted=tau - 1.0)


ESCAPE = re.compile(r"\\(.)")


def label_values(labels):
    """{name: value} of a sample's labels, escapes undone (\\, \", \n)."""
    return {k: ESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), v) for k, v in LABEL.findall(labels or "")}


# A sample's value as the exposition format writes it: ASCII digits (float() would also take "1_000" or Arabic
# digits), exponent notation, +Inf, -Inf, NaN.
PROM_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?Inf|NaN", re.IGNORECASE)


def sample_value(text, flag, path, number, counter=True):
    """A sample's value: a number, and for a counter a finite one from 0 to COUNT_LIMIT."""
    if not PROM_NUMBER.fullmatch(text):
        raise UsageError(f"{flag}: {path}, line {number}: counter value {shown(text)} is not a number")
    value = float(text)
    if counter and not 0 <= value <= COUNT_LIMIT:
        raise UsageError(f"{flag}: {path}, line {number}: a counter must be finite, >= 0 and at most {COUNT_LIMIT:g} "
                         f"(the limit of a real count); got {text!r}")
    return value


def read_metrics(path, flag):
    """{model_name: Counters} of a /metrics scrape's speculative-decoding metrics, in one streaming pass.

    Counters are summed over every other label (data-parallel engines); models are kept
    apart, since a router's or a federated scrape mixes servers.
    """
    models, samples, lines, sglang_seen, eof, seen = {}, 0, 0, False, False, set()

    def unreadable(number, line):   # before any sample: not a scrape at all; after: a broken one
        if samples == 0:
            return UsageError(f"{flag}: {path} is not the Prometheus exposition format (line {number}: "
                              f"{line[:40]!r}); save the page itself: curl -s http://HOST:PORT/metrics > FILE")
        return UsageError(f"{flag}: {path}, line {number}, is truncated or malformed: {line[:60]!r}")

    for number, line in text_lines(path, flag):
        lines += 1
        line = line.strip()
        if eof and line:
            raise UsageError(f"{flag}: {path}, line {number}: text after '# EOF': two scrapes in one file? Save each "
                             "scrape to its own file")
        if line == "# EOF":          # OpenMetrics ends here
            eof = True
        if not line or line.startswith("#"):
            continue
        match = SAMPLE_LINE.match(line)
        if not match:
            raise unreadable(number, line)
        name, labels, text = match.groups()
        if name not in SPEC_COUNTERS and name not in PER_POSITION_COUNTERS and name not in SPEC_GAUGES:
            try:
                float(text)
            except ValueError:   # a header such as the web UI table's "Element Value"
                raise unreadable(number, line) from None
        samples += 1
        sglang_seen = sglang_seen or name.startswith("sglang:")
        kind = SPEC_COUNTERS.get(name) or PER_POSITION_COUNTERS.get(name) or SPEC_GAUGES.get(name)
        if kind is None:
            continue
        if labels and (not LABEL_SET.fullmatch(labels) or len(LABEL.findall(labels)) != len(label_values(labels))):
            raise UsageError(f"{flag}: {path}, line {number}: {name} has a malformed label set {shown(labels)} "
                             '(name="value" pairs, each name once)')
        series = (name, tuple(sorted(label_values(labels).items())))   # one series however its labels are ordered
        if series in seen:
            raise UsageError(f"{flag}: {path}, line {number}: {name}{shown(labels or '')} appears twice: two scrapes "
                             "in one file (curl >>)? Save each scrape to its own file")
        seen.add(series)
        label = dict(series[1])
        if label.get("model_name", "") not in models and len(models) >= MODEL_LIMIT:
            raise UsageError(f"{flag}: {path} holds speculative metrics of more than {MODEL_LIMIT} models: scrape "
                             "one server")
        entry = models.setdefault(label.get("model_name", ""), dict(totals={}, accepted={}, drafted={}, gauges={},
                                                                    trtllm=False))
        entry["trtllm"] = entry["trtllm"] or name.startswith("trtllm_")
        if name in SPEC_GAUGES:
            value = sample_value(text, flag, path, number, counter=False)
            top = K_LIMIT + 1.0 if kind.endswith("length") else 1.0   # a tau, else a fraction
            if (kind.startswith("sglang") or math.isfinite(value)) and not 0.0 <= value <= top:
                what = "a fraction from 0 to 1" if top == 1.0 else f"a number from 0 to {top:g}"
                raise UsageError(f"{flag}: {path}, line {number}: {name} must be {what}; got {shown(text)}")
            if math.isfinite(value):
                entry["gauges"].setdefault(kind, [])
                if not kind.startswith("sglang") or value > 0:   # 0: that rank ran no speculative step
                    entry["gauges"][kind].append(value)
            continue
        value = sample_value(text, flag, path, number)
        if name in PER_POSITION_COUNTERS:
            position = label.get("position", "")
            if not re.fullmatch(r"[0-9]{1,4}", position) or int(position) >= K_LIMIT:
                raise UsageError(f"{flag}: {path}, line {number}: {name} needs a position label from 0 to "
                                 f"{K_LIMIT - 1} (a draft position; K is at most {K_LIMIT}); got {labels[:80]!r}")
            entry[kind][int(position)] = entry[kind].get(int(position), 0.0) + value
        else:
            entry["totals"][kind] = entry["totals"].get(kind, 0.0) + value
    if lines == 0:
        raise UsageError(f"{flag}: {path} is empty")
    if not models:
        if sglang_seen:
            raise UsageError(f"{flag}: {path} is an SGLang scrape without sglang:spec_accept_length: is "
                             "speculation on, and the server started with --enable-metrics?")
        raise UsageError(f"{flag}: {path} has no speculative-decoding counters (vllm:spec_decode_*, "
                         "trtllm_spec_decode_*): is speculative decoding on?")
    return {model: Counters(drafts=e["totals"].get("drafts"), draft_tokens=e["totals"].get("draft_tokens"),
                            accepted=e["totals"].get("accepted"), per_position=e["accepted"],
                            drafted_per_position=e["drafted"],
                            gauges={k: sum(v) / len(v) if v else 0.0 for k, v in e["gauges"].items()},
                            emitted=e["totals"].get("emitted"), engine="trtllm" if e["trtllm"] else "vllm")
            for model, e in models.items()}


def pick_model(scrape, served, flag, path):
    """(model name, Counters) of the one model the scrape measures, or the one --served-model names."""
    names = sorted(scrape)
    if served is not None:
        if served not in scrape:
            raise UsageError(f"{flag}: {path} has no speculative metrics for --served-model {served!r}; "
                             f"it has: {shown(names, 200)}")
        return served, scrape[served]
    if len(names) > 1:
        raise UsageError(f"{flag}: {path} holds speculative metrics of several models ({shown(names, 200)}): "
                         "pick one with --served-model")
    return names[0], scrape[names[0]]


def is_sglang(c):
    return "sglang_length" in c.gauges and c.drafts is None and c.draft_tokens is None


def counters_window(after, before, flags):
    """Counters over the window between two scrapes; a counter that fell means a restart (or swapped files)."""
    restart = "the server restarted between the scrapes, or the files are swapped"
    for name in ("drafts", "draft_tokens", "accepted", "emitted"):
        a, b = getattr(after, name), getattr(before, name)
        if (a is None) != (b is None):
            raise UsageError(f"{flags[0]}: {name} is in one scrape and not the other: not the same server version")
        if a is not None and a < b:
            raise UsageError(f"{flags[0]}: {name} fell from {b:g} in {flags[1]} to {a:g}: {restart}")
    per = {}
    for name in ("per_position", "drafted_per_position"):
        per[name] = {}
        for position, value in getattr(after, name).items():
            earlier = getattr(before, name).get(position, 0.0)
            if value < earlier:
                raise UsageError(f"{flags[0]}: tokens at position {position} fell between the scrapes: {restart}")
            per[name][position] = value - earlier
    difference = lambda name: None if getattr(after, name) is None else getattr(after, name) - getattr(before, name)
    # Gauges hold a value, not a count: the window is the later scrape's.
    return Counters(drafts=difference("drafts"), draft_tokens=difference("draft_tokens"),
                    accepted=difference("accepted"), per_position=per["per_position"],
                    drafted_per_position=per["drafted_per_position"], gauges=after.gauges,
                    emitted=difference("emitted"), engine=after.engine)


def profile_problem(c, k):
    """Why the per-position counts cannot be trusted, or None (they must cover positions 0..K-1, sum to the
    accepted total, and never rise with position: position i is accepted only where i-1 was)."""
    positions = c.per_position
    missing = [i for i in range(k) if i not in positions]
    if missing:
        return f"positions {', '.join(map(str, missing))} of 0..{k - 1} are missing"
    slack = max(1.0, COUNT_SLACK * c.accepted)
    total = sum(positions[i] for i in range(k))
    if abs(total - c.accepted) > slack:
        return f"they sum to {total:g}, not to the {c.accepted:g} accepted tokens"
    if positions[0] > c.drafts + slack:
        return f"position 0 accepted {positions[0]:g} tokens in {c.drafts:g} drafts"
    for i in range(1, k):
        if positions[i] > positions[i - 1] + slack:
            return f"position {i} accepted more ({positions[i]:g}) than position {i - 1} ({positions[i - 1]:g})"
    drafted = c.drafted_per_position
    if drafted:
        if abs(drafted.get(0, 0.0) - c.drafts) > max(1.0, COUNT_SLACK * c.drafts):
            return f"position 0 was drafted {drafted.get(0, 0.0):g} times in {c.drafts:g} drafts"
        if abs(sum(drafted.values()) - c.draft_tokens) > max(1.0, COUNT_SLACK * c.draft_tokens):
            return f"drafted tokens by position sum to {sum(drafted.values()):g}, not {c.draft_tokens:g}"
        for i in sorted(drafted)[1:]:
            if drafted[i] > drafted.get(i - 1, 0.0) + slack:
                return f"position {i} was drafted more often than position {i - 1}"
        for i, count in drafted.items():
            if positions.get(i, 0.0) > count + slack:
                return f"position {i} accepted {positions[i]:g} of {count:g} drafted"
    return None


def v0_drafts(c, source, k_given, notes, ask):
    """Counts without num_drafts (V0, V1 before 0.8.5): the drafts, from V0's emitted tokens or --ks.

    V0 emits the accepted tokens plus one per sequence a step, so drafts = emitted - accepted,
    and its efficiency gauge is emitted / ((K + 1) x drafts): when both agree the scrape
    fixes K and a different --ks is refused (vllm/engine/metrics.py, spec_decode metrics).
    """
    rate = c.accepted / c.draft_tokens
    if c.emitted is not None and c.emitted > c.accepted:
        drafts = c.emitted - c.accepted
        k = c.draft_tokens / drafts
        efficiency = c.gauges.get("v0_efficiency")
        agrees = efficiency is None or abs(c.emitted / ((round(k) + 1) * drafts) - efficiency) <= 0.02 * efficiency
        if abs(k - round(k)) <= COUNT_SLACK * k and agrees:
            if k_given is not None and k_given != round(k):
                raise UsageError(f"{source}: --ks {k_given} disagrees with the scrape: vLLM V0's counters give "
                                 f"{drafts:g} drafts (emitted - accepted) of {round(k)} tokens")
            notes.append(f"vLLM V0: drafts = emitted - accepted tokens = {drafts:g}, so K = {round(k)}"
                         + (" (its efficiency gauge agrees)" if efficiency is not None else ""))
            return replace(c, drafts=drafts), round(k)
    if k_given is None:
        raise UsageError(f"{source}: has no vllm:spec_decode_num_drafts_total: vLLM V0 and V1 before 0.8.5 do not "
                         f"export it (PR #16665). Its acceptance rate is {rate:.3f}; {ask}, the server's "
                         "num_speculative_tokens, to complete the measurement")
    notes.append(f"no num_drafts counter (vLLM before 0.8.5): drafts = draft tokens / K, with K = {k_given} "
                 "from --ks")
    return replace(c, drafts=c.draft_tokens / k_given, per_position={}, drafted_per_position={}), k_given


def measured_acceptance(c, source, k_given=None, notes=(), k_known=None, counted=True, width=None, rate_kind="drafted"):
    """The three alphas, per-position rates and conditional alphas from counts (acceptance.py: tau = 1 + accepted / drafts,
    r = accepted / draft tokens, and position i's rate = accepted at i / drafts).

    K is the highest position exported plus one (vLLM creates a per-position counter for
    each of num_speculative_tokens positions), not the rounded mean draft length. When the
    mean is more than K_SHORTFALL below K the rounds drafted different lengths: a
    K-by-batch-size table, or an n-gram drafter that found fewer matches. Position i's count
    over all drafts then mixes rounds that drafted i with rounds that could not, so without
    drafted-per-position counts only position 0 measures a clean per-token alpha (every
    round drafts a token).
    k_given: the one --ks value, which completes a scrape that cannot tell K; k_known: the K
    of per-position counters that were dropped before this (read_scrapes); counted: whether c
    holds real counts (else one_average_draft, and the drafts are not known); width: the tokens a tree's round
    drafts per sequence (its verify tokens - 1), None for a chain.
    """
    notes = list(notes)
    ask = "give one --ks value" if k_given is None else None
    if c.drafts is None and "v0_efficiency" in c.gauges:
        notes.append(f"vLLM V0's gauges, lifetime values at the scrape: draft acceptance rate "
                     f"{c.gauges.get('v0_rate', float('nan')):.3f}, system efficiency {c.gauges['v0_efficiency']:.3f}")
    if is_sglang(c):
        tau, rate = c.gauges["sglang_length"], c.gauges.get("sglang_rate", 0.0)
        if rate > 1.0:
            raise UsageError(f"{source}: sglang:spec_accept_rate is {rate:g}, not a fraction in [0, 1]")
        if tau < 1.0:
            raise UsageError(f"{source}: sglang:spec_accept_length is {tau:g} on every rank: no speculative step in "
                             "the gauge's window (an idle server?); scrape under traffic")
        # Both gauges are set together over the same steps: (tau - 1) / rate is the tokens a round drafts (SGLang
        # PR #23530: accepted drafts over rounds x (num_draft_tokens - 1)), K for a chain, the tree's width else;
        # before it tau / rate was the steps plus one (releases.sglang_rate_kind), and n-gram's gauge was tau itself.
        implied = (None if rate <= 0 or rate_kind not in ("drafted", "verified") else
                   (tau - 1.0) / rate if rate_kind == "drafted" else tau / rate - 1.0)
        if width is not None:
            implied = None   # a tree's gauges give its width, not K: the steps come from --ks
        if implied is not None and 0.5 <= implied < K_LIMIT + 0.5 and abs(implied - round(implied)) < 0.05:
            if k_given is not None and k_given != round(implied):
                raise UsageError(f"{source}: --ks {k_given} disagrees with the scrape, whose gauges give K = "
                                 f"(accept length - 1) / accept rate = {implied:.2f}")
            if k_given is None:
                notes.append(f"K = {round(implied)} from the gauges: (accept length - 1) / accept rate")
            k_given = round(implied)
        if k_given is None:
            raise UsageError(f"{source}: an SGLang scrape: sglang:spec_accept_length is {tau:.3f}; {ask} "
                             "(its --speculative-num-steps) to turn it into a per-token alpha")
        if tau > k_given + 1.0 + 1e-9:
            raise UsageError(f"{source}: sglang:spec_accept_length {tau:.3f} is more than K + 1 = {k_given + 1}: "
                             "--ks is not the server's --speculative-num-steps, or the draft is a tree (topk > 1)")
        notes.append(f"sglang:spec_accept_length is a gauge over the last {SGLANG_GAUGE_STEPS} decode steps at the "
                     "scrape; average it over time (avg_over_time) for a steadier figure")
        c, counted = one_average_draft(tau, k_given), False
    if c.draft_tokens is None and c.accepted is None and "v0_rate" in c.gauges:
        rate = c.gauges["v0_rate"]
        if not 0.0 <= rate <= 1.0:
            raise UsageError(f"{source}: vllm:spec_decode_draft_acceptance_rate is {rate:g}, not a fraction in [0, 1]")
        if k_given is None:
            raise UsageError(f"{source}: only vLLM V0's gauges: acceptance rate {rate:.3f}; {ask} "
                             "(num_speculative_tokens) to complete the measurement")
        notes.append("read from vLLM V0's gauge vllm:spec_decode_draft_acceptance_rate, its value at the scrape")
        c, counted = one_average_draft(1.0 + rate * k_given, k_given), False
    for name, counter in (("draft_tokens", "vllm:spec_decode_num_draft_tokens_total"),
                          ("accepted", "vllm:spec_decode_num_accepted_tokens_total")):
        if getattr(c, name) is None:
            raise UsageError(f"{source}: has no {counter} sample; a missing counter is not zero")
    if c.draft_tokens <= 0:
        raise UsageError(f"{source}: no drafts were made (draft tokens = {c.draft_tokens:g}): nothing to measure")
    if c.drafts is None and c.per_position:
        raise UsageError(f"{source}: has per-position counters (vLLM 0.8.5 or later) but no "
                         "vllm:spec_decode_num_drafts_total sample; a missing counter is not zero (a partial scrape?)")
    if c.drafts is None and c.engine == "trtllm":
        if k_given is None:
            raise UsageError(f"{source}: TensorRT-LLM counts draft and accepted tokens but not drafts; {ask} (its "
                             "max_draft_len) to complete the measurement")
        per_round = width or k_given   # tokens each iteration drafts per request: max_draft_len, or the tree's
        notes.append(f"TensorRT-LLM counts no drafts: each round drafted {per_round} tokens a request "
                     f"({'the tree' if width else '--ks'}), so drafts = draft tokens / {per_round}")
        c = replace(c, drafts=c.draft_tokens / per_round)
        if width:   # a tree's tau, as one average draft of its K steps
            tau = 1.0 + c.accepted / c.drafts
            if tau > k_given + 1.0 + 1e-9:
                raise UsageError(f"{source}: the counts give an acceptance length of {tau:.3f} for a tree of "
                                 f"{per_round} drafted tokens, more than its {k_given} steps + 1: --ks is not its "
                                 "max_draft_len, or --verify-tokens not its tree")
            c, counted = one_average_draft(tau, k_given), False
    if c.drafts is None:
        c, k_given = v0_drafts(c, source, k_given, notes, ask)
    if c.drafts < 1 or c.draft_tokens < 1:
        raise UsageError(f"{source}: fewer than one draft was made (drafts = {c.drafts:g}, draft tokens = "
                         f"{c.draft_tokens:g}): nothing to measure")
    k_mean = c.draft_tokens / c.drafts
    whole = -COUNT_SLACK * k_mean <= round(round(k_mean) - k_mean, 9) <= K_SHORTFALL   # 9 places: 3 - 2.98 > 0.02
    if c.per_position:
        k = max(c.per_position) + 1
    elif k_known is not None:
        k = k_known
    elif whole:
        k = round(k_mean)
    else:
        raise UsageError(f"{source}: rounds drafted {k_mean:.3f} tokens on average and the scrape has no "
                         "per-position counters: the K in use cannot be told")
    if not 1 <= k <= K_LIMIT:
        raise UsageError(f"{source}: the counters give K = {k} ({c.draft_tokens:g} draft tokens over {c.drafts:g} "
                         f"drafts); this tool reads K from 1 to {K_LIMIT}")
    if c.accepted > c.draft_tokens or k_mean > k * (1 + COUNT_SLACK):
        raise UsageError(f"{source}: counters are inconsistent: {c.draft_tokens:g} draft tokens over {c.drafts:g} "
                         f"drafts and {c.accepted:g} accepted")
    tau = 1.0 + c.accepted / c.drafts
    shortfall = round(k - k_mean, 9)   # draft tokens a round drafted fewer than K, on average
    varying = shortfall > K_SHORTFALL
    if COUNT_SLACK * k < shortfall <= K_SHORTFALL:
        bound = f"; a position's true rate is at most {shortfall / (1 - shortfall) * 100:.1f}% above the one shown" \
            if c.per_position and not c.drafted_per_position else ""
        notes.append(f"rounds drafted {k_mean:.3f} tokens on average against K = {k}, {shortfall:.3f} short (a "
                     "request's last rounds near its length limit, or draft tokens a grammar rejected): K is taken "
                     "as fixed" + bound)
    problem = profile_problem(c, k) if c.per_position else None
    rates, conditional = [], []
    if c.per_position and problem is None:
        for i in range(k):
            drafted = c.drafted_per_position.get(i, c.drafts) if c.drafted_per_position else c.drafts
            if drafted <= 0:
                break
            rates.append(c.per_position[i] / drafted)
        conditional = [r / prev if prev > 0 else 0.0 for r, prev in zip(rates, [1.0] + rates)]
    elif problem:
        notes.append(f"per-position counters dropped ({problem}); the acceptance rate and length are used")
    clean_profile = bool(conditional) and (not varying or bool(c.drafted_per_position))
    if clean_profile:
        profile = conditional
        # Rates over the drafts that reached each position give the full-K tau; else the measured one.
        full_k = bool(c.drafted_per_position)   # a varying K has them, or its profile is not clean
        alpha = alpha_from_length(profile_length(conditional, k) if full_k else min(tau, k + 1.0), k)
    elif varying and rates:
        alpha, profile = rates[0], [rates[0]]
        notes.append(f"rounds drafted {k_mean:.2f} tokens on average against K = {k}, so K varied: alpha is "
                     "position 0's rate, the same whatever K a round used")
    elif varying:
        raise UsageError(f"{source}: rounds drafted {k_mean:.2f} tokens on average against K = {k} and the "
                         "per-position counters are missing or fail their checks: no per-token alpha can be measured")
    else:
        alpha = alpha_from_length(min(tau, k + 1.0), k)
        profile = [alpha]
    return Measurement(k=k, k_mean=k_mean, varying_k=varying, drafts=c.drafts if counted else None,
                       acceptance_rate=c.accepted / c.draft_tokens, acceptance_length=tau, per_position_rates=rates,
                       per_position_alpha=conditional if clean_profile else [], alpha=alpha, profile=profile,
                       source=source, notes=notes)


