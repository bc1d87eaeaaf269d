"""Analysis: one grid cell's closed forms beside its simulated requests (evaluate_cell), the best K at each batch
size, the traffic mix, the plan's choices, the verdict and the gate on measurements, the deployment's facts and the
charts' data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from .defaults import CHART_ALPHAS, EXPECTED_ALPHA, P99_BUDGET
from .records import fields_of, NOT_IN_JSON, OPTIONAL, shown_with
from .acceptance import (
    _increasing_root, acceptance_length, acceptance_rate, alpha_from_length, alpha_from_rate, breakeven_rate,
    exact_breakeven, exact_speedup, LESSON_RULE, lesson_speedup, profile_length, required_rate, speedup, tau_for,
)
from .costmodel import (
    decode_step_ms, eps_decode, eps_growth, eps_seen, EpsGrowth, FIT, memoised, moe_verify, MoeVerify, plain_step_ms,
    plain_step_parts, prefill_share_ms, round_ms, tpot_speedup,
)
from .experts import expected_experts, touched_experts
from .deployment import at_lengths, max_concurrency, memory_budget_bytes, shown_batch as shown_batch_of
from .simulation import (
    cell_latency, clip01, draw_requests, itl_parts, ItlMixtures, mixture_quantile, mixture_share, REPLICATE_REQUESTS,
    simulate_requests, Z_NODES,
)
from .readers import length_note, Measurement
from .priors import K_REFERENCE, Mixture
from .trust import breakeven_alpha_range, breakeven_range, interval, INTERVAL_LEVEL, MISS_LINE, too_close, Z_INTERVAL
from .schedule import call_of, K_MAX, k_zero_at


# ---------------------------------------------------------------- the grid
# Every (acceptance, K, eps, B) cell: the closed forms beside the simulated requests.


def per_token_alpha(kind, value, k):
    """The per-token alpha an acceptance figure of the given kind stands for at K: a "profile" (conditional alphas
    by position, from acceptance lengths measured at K = 1..n) stands for the alpha of its own tau at K."""
    if kind == "rate":
        return alpha_from_rate(value, k)
    if kind == "length":
        return alpha_from_length(value, k)
    if kind == "profile":
        return alpha_from_length(min(profile_length(value, k), k + 1.0), k)
    return value


def grid_alphas(grid):
    """Per-token alphas for K-independent questions (best K); rates and lengths read at the first K."""
    return sorted({per_token_alpha(grid.kind, v, grid.ks[0]) for v in grid.acceptance})


@dataclass(frozen=True)
class Cell:
    """One (alpha, K, eps, B) of the grid, or a row of the plan's tail (evaluate_cell): the closed forms beside the
    simulated requests. An infeasible cell (its KV cache does not fit) keeps its coordinates and no number."""
    alpha: float                     #: mean per-token acceptance alpha of the requests
    k: int                           #: draft length K
    verify_overhead: object          #: the grid's eps at B=1 ("auto": the cost model's)
    concurrency: int                 #: batch size B
    feasible: bool                   #: whether B sequences' KV cache fits beside the weights
    eps_eff: float = None            #: eps with the prefill share a round of the batch's tau carries (eps_seen)
    eps_decode: float = None         #: eps of decoding alone: a round over a plain step, minus 1
    acceptance_length: float = None  #: tau(alpha, K), bonus token included
    acceptance_rate: float = None    #: vLLM's rate at that alpha and K: (tau - 1) / K
    alpha_spread: float = None       #: s.d. of the requests' alphas around alpha
    acceptance_length_requests: float = None   #: tau the batch sees over the spread requests, 1/E[1/tau]
    speedup_lesson: float = None     #: (1 + K alpha) / (1 + eps_eff), the lesson's formula
    speedup_exact: float = None      #: tau / (1 + eps_eff)
    speedup_requests: float = None   #: acceptance_length_requests / (1 + eps_eff)
    speedup_mc: float = None         #: over the simulated requests (Latency)
    speedup_mc_se: float = None      #: its standard error
    speedup_two_pass_mc: float = None   #: the same under the lesson's two-pass model
    breakeven_alpha_lesson: float = None   #: eps / K: the break-even rate, which the lesson calls alpha
    breakeven_alpha_exact: float = None    #: the per-token alpha with tau = 1 + eps (decode eps)
    plain_step_ms: float = None      #: a plain step, its prefill share included
    round_ms: float = None           #: a round as the benchmark sees it, its tau steps of prefill included
    tpot_plain_mean_ms: float = None   #: the Latency fields, in order
    tpot_plain_p99_ms: float = None
    tpot_spec_mean_ms: float = None
    tpot_spec_p50_ms: float = None
    tpot_spec_p99_ms: float = None
    tpot_spec_two_pass_mean_ms: float = None
    tpot_spec_two_pass_p99_ms: float = None
    tpot_p99_change: float = None    #: P99 TPOT with speculation over plain, minus 1 (across requests)
    tpot_p99_change_two_pass: float = None
    itl_plain_mean_ms: float = None
    itl_plain_p50_ms: float = None
    itl_plain_p99_ms: float = None
    itl_spec_mean_ms: float = None
    itl_spec_p50_ms: float = None
    itl_spec_p99_ms: float = None
    itl_spec_two_pass_mean_ms: float = None
    itl_spec_two_pass_p50_ms: float = None
    itl_spec_two_pass_p99_ms: float = None
    round_itl_spec_p99_ms: float = None
    round_itl_two_pass_p99_ms: float = None
    p99_change: float = None         #: P99 per-token ITL with speculation over plain, minus 1 (not per chunk)
    p99_change_two_pass: float = None
    zero_accept_token_share: float = None   #: share of tokens from rounds that accepted nothing (one a round)
    slow_alpha: float = None         #: mean alpha of the requests at or above P99 TPOT
    simulated_requests: int = None   #: requests simulated
    tpot_p99_halfwidth: float = None   #: achieved relative half-width of P99 TPOT at 95% confidence
    tpot_spec_p99_alike_ms: float = field(default=None, metadata=OPTIONAL)   #: P99 TPOT were every request at alpha
    speedup_interval: list = None    #: [low, high] of speedup_mc at INTERVAL_LEVEL (with_intervals)
    tpot_plain_mean_interval_ms: list = None   #: [low, high] of tpot_plain_mean_ms
    tpot_spec_mean_interval_ms: list = None    #: [low, high] of tpot_spec_mean_ms


def evaluate_cell(alpha, k, eps, batch, dep, dec, fit, verify_overhead="auto"):
    """Closed forms and the simulated requests for one (alpha, K, decode eps, B): a Cell.

    alpha is the mean of the requests' per-token alphas; dec, their simulation (simulate_requests).
    eps_eff adds the prefill share a round carries for the tau tokens the batch delivers per
    round (eps_seen); the speedups divide by it; the break-even uses the decode eps.
    """
    tau = acceptance_length(alpha, k)
    plain_ms, cell_eps = plain_step_ms(dep, batch, fit), eps_seen(eps, dec.tau, dep, batch, fit)
    spec_ms = (1.0 + cell_eps) * plain_ms   # a round as the benchmark sees it
    lat = cell_latency(dec, plain_ms, spec_ms, batch)
    return Cell(
        alpha=alpha, k=k, verify_overhead=verify_overhead, concurrency=batch, feasible=True,
        eps_eff=cell_eps, eps_decode=eps, acceptance_length=tau, acceptance_rate=acceptance_rate(alpha, k),
        alpha_spread=dec.spread, acceptance_length_requests=dec.tau,
        speedup_lesson=lesson_speedup(alpha, k, cell_eps), speedup_exact=exact_speedup(alpha, k, cell_eps),
        speedup_requests=speedup(dec.tau, cell_eps),
        breakeven_alpha_lesson=breakeven_rate(k, eps), breakeven_alpha_exact=exact_breakeven(k, eps),
        plain_step_ms=plain_ms, round_ms=spec_ms, **fields_of(lat),
        tpot_p99_change=lat.tpot_spec_p99_ms / lat.tpot_plain_p99_ms - 1.0,
        tpot_p99_change_two_pass=lat.tpot_spec_two_pass_p99_ms / lat.tpot_plain_p99_ms - 1.0,
        p99_change=lat.itl_spec_p99_ms / lat.itl_plain_p99_ms - 1.0,
        p99_change_two_pass=lat.itl_spec_two_pass_p99_ms / lat.itl_plain_p99_ms - 1.0,
        zero_accept_token_share=dec.by_accepted[0],   # tokens from rounds that accepted nothing: one a round
        slow_alpha=dec.slow_alpha, simulated_requests=dec.requests, tpot_p99_halfwidth=dec.precision)


DECODE_MEMO = {}   # (seed, output spread, domains, K, alpha spread) -> Decode: the same requests are the same Decode


def decoder(seed, spread, output_spread, output_tokens):
    """decode(alpha or domains, K, spread) -> Decode, memoised (across runs in one process too: a Decode is a pure
    function of its key); each replicate's draws are made once."""
    draws = {}

    def draws_for(replicate):
        if replicate not in draws:
            draws[replicate] = draw_requests(REPLICATE_REQUESTS, seed, replicate, output_spread)
        return draws[replicate]

    def decode(acceptance, k, spread=spread):
        domains = acceptance if isinstance(acceptance, tuple) else ((1.0, acceptance, output_tokens),)
        key = (seed, output_spread, domains, k, spread)
        if key not in DECODE_MEMO:
            if len(DECODE_MEMO) > 256:
                DECODE_MEMO.clear()
            DECODE_MEMO[key] = simulate_requests(domains, k, spread, draws_for)
        return DECODE_MEMO[key]

    return decode


# ---------------------------------------------------------------- best K
# The K (0 = off) with the most tokens a second at each batch size, and vLLM's K-by-batch table.

K_TIE = 0.01   # speedups within 1% of the best are a tie, won by the smallest K: the cost model cannot tell them apart
               # (its error is several times that), and a shorter draft loses less when acceptance falls


def best_k(dep, acceptance, batch, fit=FIT):
    """(K, speedup): the K in 0..K_MAX with the most tokens per second, K = 0 being plain decoding; the smallest K
    within K_TIE of the best wins, so speculation must gain more than 1% to be turned on at all.

    acceptance: a per-token alpha, or conditional alphas by position (see tau_for).

    Leviathan section 3.5: maximise tau(a, K) / T_round(B, K); the draft's cost is in T_round,
    and a round of tau tokens carries tau steps' prefill share q: tau (D + q) / (R + tau q).
    """
    rounds = round_costs(dep, batch, fit)
    speedups = {0: 1.0, **{k: tpot_speedup(dep, batch, 1.0 / tau_for(acceptance, k), rounds[k], fit)
                           for k in rounds}}
    top = max(speedups.values())
    k = min(k for k, speedup in speedups.items() if speedup >= top / (1.0 + K_TIE))
    return k, speedups[k]


def round_costs(dep, batch, fit=FIT):
    """{K: round_ms} at one batch for the K best_k tries (a tree: its measured K only), computed once.

    The best-K tables and schedules ask for the same batches at several alphas.
    """
    ks = [dep.tree_steps] if dep.tree_steps else range(1, K_MAX + 1)
    return memoised("rounds", dep, batch, fit, lambda: {k: round_ms(dep, batch, k, fit) for k in ks})


def k_schedule(dep, acceptance, fit=FIT):
    """[start, end, K] rows for B = 1..max_concurrency, vLLM's num_speculative_tokens_per_batch_size (PR #32374).

    Best K is found at batches 25% apart, and each change of K is then located to the batch
    by bisection, so every row holds its batches' best K while costing a few dozen best-K searches.
    """
    return piecewise(max_concurrency(dep), lambda batch: best_k(dep, acceptance, batch, fit)[0])


def piecewise(limit, value_at):
    """[start, end, value] rows covering batches 1..limit where value_at(batch) is constant: value_at is probed at
    batches 25% apart and each change located by bisection (k_schedule, close_calls)."""
    if limit < 1:
        return []
    known = {}

    def k_at(batch):
        if batch not in known:
            known[batch] = value_at(batch)
        return known[batch]

    probes, batch = [], 1
    while batch < limit:
        probes.append(batch)
        batch = max(batch + 1, int(batch * 1.25))
    probes.append(limit)
    rows, start, current, last_same = [], 1, k_at(1), 1
    for probe in probes:
        while k_at(probe) != current:
            lo, hi = last_same, probe          # k_at(lo) == current != k_at(hi)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if k_at(mid) == current else (lo, mid)
            rows.append([start, hi - 1, current])
            start, current, last_same = hi, k_at(hi), hi
        last_same = probe
    rows.append([start, limit, current])
    return rows


def best_on_k(dep, acceptance, batch, fit=FIT):
    """(K, speedup) of the best K with speculation on (1..K_MAX) at a batch; the first K wins a tie."""
    rounds = round_costs(dep, batch, fit)
    return max(((k, tpot_speedup(dep, batch, 1.0 / tau_for(acceptance, k), rounds[k], fit)) for k in rounds),
               key=lambda pair: pair[1])


def run_k(dep, acceptance, batch, fit=FIT):
    """(K, speedup) the plan runs at a batch: the schedule's best K where it is on, else the best K with speculation
    on (what "off" gives up, and what the plan's K is at a batch where the best is off: plan_choices)."""
    k, gain = best_k(dep, acceptance, batch, fit)
    return (k, gain) if k else best_on_k(dep, acceptance, batch, fit)


def close_calls(dep, acceptance, sd, fit=FIT):
    """[(first, last batch)] where the speedup of the K the plan runs there (run_k) has an interval (s.d. sd of its
    log) that holds 1.0: there the model cannot say whether speculation pays, and a benchmark must."""
    spread = math.exp(Z_INTERVAL * sd)
    rows = piecewise(max_concurrency(dep), lambda b: 1.0 / spread < run_k(dep, acceptance, b, fit)[1] < spread)
    return [(lo, hi) for lo, hi, close in rows if close]


@dataclass(frozen=True)
class BestK:
    """The best K at one concurrency and alpha, and its speedup (best_k_table)."""
    concurrency: int         #: batch size B
    alpha: float             #: the per-token alpha shown
    feasible: bool = field(metadata=NOT_IN_JSON)   #: whether B sequences fit in memory
    k: int = None            #: best K in 0..K_MAX (0: speculation off); None when B does not fit
    speedup: float = None    #: its speedup over plain decoding
    speedup_interval: list = None   #: [low, high] of it at INTERVAL_LEVEL (None: K = 0, plain decoding itself)
    too_close: bool = None   #: whether the speedup of the K the plan runs here (run_k) has an interval holding 1.0
    plan: bool = False       #: whether this is the plan's own acceptance (its schedule's column)


def best_k_table(dep, sources, batches, fit=FIT, sd=None, plan_acceptance=None):
    """Best K and its speedup at each concurrency, for each (alpha shown, acceptance) source, and for plan_acceptance
    (the plan's own: a source equal to it is marked as the plan's, else a column of its own); with sd (the s.d. of
    a speedup's log error) its interval and whether it is too close to call."""
    limit = max_concurrency(dep)
    sources = list(sources)
    if plan_acceptance is not None and all(acc != plan_acceptance[1] for _, acc in sources):
        sources.append(plan_acceptance)
    rows = []
    for b in batches:
        for a, acc in sources:
            mine = plan_acceptance is not None and acc == plan_acceptance[1]
            if b > limit:
                rows.append(BestK(concurrency=b, alpha=a, feasible=False, plan=mine))
                continue
            k, speedup = best_k(dep, acc, b, fit)
            rows.append(BestK(concurrency=b, alpha=a, feasible=True, k=k, speedup=speedup, plan=mine,
                              speedup_interval=interval(speedup, sd) if sd is not None and k else None,
                              too_close=too_close(interval(run_k(dep, acc, b, fit)[1], sd)) if sd is not None else None))
    return rows


# ---------------------------------------------------------------- the traffic mix
# Domains of different alpha share one round time: their tau blends harmonically.

@dataclass(frozen=True)
class Domain:
    """One domain of a traffic mix at the mix's K and B (traffic_blend)."""
    name: str                #: the domain's name
    share: float             #: its share of generated tokens
    alpha: float             #: its per-token alpha
    tau: float               #: its acceptance length at K
    speedup: float           #: the speedup were all traffic this domain
    time_share: float        #: its share of the decode time


@dataclass(frozen=True)
class Blend:
    """A traffic mix's speedup, blended right (rounds per token summed) and naively (alpha averaged first)."""
    k: int                   #: draft length K
    concurrency: int         #: batch size B
    eps: float               #: decode eps at (B, K)
    prefill_share: float     #: a plain step's prefill share over its decode step
    domains: list            #: Domain rows
    naive_alpha: float       #: token-weighted mean alpha
    naive_speedup: float     #: the speedup that alpha promises
    blended_speedup: float   #: the speedup of the mix: each domain's tau over one shared round time
    naive_error: float       #: naive over blended, minus 1
    weak: str                #: the domain with the lowest tau
    routed_speedup: float    #: the mix's speedup with the weak domain decoded without speculation
    trained_speedup: float   #: ... with a draft as good on the weak domain as on the best
    trained_alpha: float     #: the best domain's alpha
    best_k: int              #: the mix's best single K (0: off)
    best_k_speedup: float    #: its speedup


def traffic_blend(mix, dep, k, batch, fit=FIT):
    """Speedup of a traffic mix: each domain's tau over one shared round time, weighted by tokens.

    A domain with share s of generated tokens and acceptance length tau needs s/tau rounds
    per token, so the mix runs sum(s/tau) rounds per token: a harmonic blend of tau, not an
    average of alphas or of speedups. A token costs its rounds plus the prefill share, the same
    with speculation or without (spec_tpot_ms).
    """
    eps = eps_decode(dep, batch, k, fit)
    q = prefill_share_ms(dep, batch, fit) / decode_step_ms(dep, batch, fit)
    rounds = round_costs(dep, batch, fit)

    def mix_speedup(rounds_per_token, plain_tokens=0.0, kk=k):
        round_cost = rounds[kk] if kk in rounds else round_ms(dep, batch, kk, fit)   # a measured K past K_MAX
        return tpot_speedup(dep, batch, rounds_per_token, round_cost, fit, plain_tokens)

    taus = [acceptance_length(alpha, k) for _, _, alpha, *_ in mix]
    rounds_per_token = sum(share / tau for (_, share, *_), tau in zip(mix, taus))
    domains = [Domain(name=name, share=share, alpha=alpha, tau=tau, speedup=mix_speedup(1.0 / tau),
                      time_share=share / tau / rounds_per_token) for (name, share, alpha, *_), tau in zip(mix, taus)]
    naive_alpha = sum(d.share * d.alpha for d in domains)
    weak = min(domains, key=lambda d: d.tau)
    others = rounds_per_token - weak.share / weak.tau
    best_alpha = max(d.alpha for d in domains)
    # The mix's best single K over the Ks best_k tries, K = 0 (plain decoding) included, ties to the smaller.
    blend_at = {0: 1.0, **{kk: mix_speedup(sum(d.share / acceptance_length(d.alpha, kk) for d in domains), kk=kk)
                           for kk in rounds}}
    mix_k = max(blend_at, key=lambda kk: (blend_at[kk], -kk))
    blended, naive = mix_speedup(rounds_per_token), mix_speedup(1.0 / acceptance_length(naive_alpha, k))
    return Blend(k=k, concurrency=batch, eps=eps, prefill_share=q, domains=domains, naive_alpha=naive_alpha,
                 naive_speedup=naive, blended_speedup=blended, naive_error=naive / blended - 1.0, weak=weak.name,
                 # What-ifs for the weak domain: decoded without speculation (1 plain step a token),
                 # or given a head as good as the best domain's.
                 routed_speedup=mix_speedup(others, weak.share),
                 trained_speedup=mix_speedup(others + weak.share / acceptance_length(best_alpha, k)),
                 trained_alpha=best_alpha, best_k=mix_k, best_k_speedup=blend_at[mix_k])


def mix_domains(mix, output_tokens):
    """Traffic-mix rows -> (share of requests, alpha, output tokens); a token share over a length is a request share.

    >>> mix_domains((("chat", 0.5, 0.7, 300), ("code", 0.5, 0.4, 100)), 1024)
    ((0.25, 0.7, 300), (0.75, 0.4, 100))
    """
    lengths = [row[3] if len(row) > 3 else output_tokens for row in mix]
    rows = [(row[1] / tokens, row[2], tokens) for row, tokens in zip(mix, lengths)]
    total = sum(r for r, _, _ in rows)
    return tuple((r / total, alpha, tokens) for r, alpha, tokens in rows)


@dataclass(frozen=True)
class MixTail:
    """TPOT over a traffic mix's simulated requests, each domain's around its own alpha (mix_tail)."""
    request_shares: dict     #: {domain: share of requests}
    tau: float               #: tau the batch sees over the mix's requests
    speedup_mc: float        #: speedup over the simulated requests
    tpot_plain_p99_ms: float   #: P99 TPOT over requests, plain
    tpot_spec_p99_ms: float  #: P99 TPOT with speculation
    tpot_spec_mean_ms: float   #: mean TPOT with speculation
    tpot_plain_mean_ms: float  #: mean TPOT, plain
    tpot_p99_change: float   #: P99 TPOT with speculation over plain, minus 1
    slow_alpha: float        #: mean alpha of the requests at or above P99 TPOT
    slow_domains: dict       #: {domain: share of those requests}


@dataclass(frozen=True)
class Mix(MixTail, Blend):
    """The traffic mix at the plan's K and batch: the Blend fields, then the MixTail fields (dataclasses gather the
    bases' fields from the last base up), then whether it is the example mix and the blend's interval."""
    assumed: bool            #: whether the mix is TRAFFIC_MIX's example, not the user's --mix
    blended_speedup_interval: list = None   #: [low, high] of blended_speedup at INTERVAL_LEVEL


def mix_tail(mix, dep, k, batch, decode, fit=FIT):
    """TPOT over the mix's requests at B: each domain's requests around its own alpha."""
    domains = mix_domains(mix, dep.output_tokens)
    dec = decode(domains, k)
    plain_ms = plain_step_ms(dep, batch, fit)
    spec_ms = (1.0 + eps_seen(eps_decode(dep, batch, k, fit), dec.tau, dep, batch, fit)) * plain_ms
    lat = cell_latency(dec, plain_ms, spec_ms, batch)
    return MixTail(request_shares={row[0]: d[0] for row, d in zip(mix, domains)}, tau=dec.tau,
                   speedup_mc=lat.speedup_mc, tpot_plain_p99_ms=lat.tpot_plain_p99_ms,
                   tpot_spec_p99_ms=lat.tpot_spec_p99_ms, tpot_spec_mean_ms=lat.tpot_spec_mean_ms,
                   tpot_plain_mean_ms=lat.tpot_plain_mean_ms,
                   tpot_p99_change=lat.tpot_spec_p99_ms / lat.tpot_plain_p99_ms - 1.0, slow_alpha=dec.slow_alpha,
                   slow_domains={row[0]: share for row, share in zip(mix, dec.slow_domains)})


def mix_result(mix, dep, k, batch, decode, fit=FIT, assumed=False):
    """The traffic mix at the plan's K: the closed-form blend and the simulated requests' tail; assumed: whether
    the mix is TRAFFIC_MIX's example."""
    return Mix(**fields_of(traffic_blend(mix, dep, k, batch, fit)), **fields_of(mix_tail(mix, dep, k, batch, decode, fit)),
               assumed=assumed)


# ---------------------------------------------------------------- measurements, the plan and the gate
# What the plan runs on (measured or assumed), its choices, the verdict and the gate.

@dataclass(frozen=True)
class MeasuredSpeedup:
    """The speedup the measured acceptance gives at one batch size."""
    concurrency: int
    feasible: bool           #: whether B sequences fit in memory
    eps: float               #: eps with the prefill share
    speedup: float           #: tau / (1 + eps); None when B does not fit


@dataclass(frozen=True)
class Prediction:
    """The model beside a pair of benchmark runs, at their concurrency and lengths."""
    concurrency: int         #: the benchmark's max_concurrency (or the target)
    speedup: float           #: mean-TPOT speedup: of the pair's own run replayed (simulated), else from the measured
                             #: tau and the rounds' mean drafted length in steady state
    p99_tpot_change: float   #: P99 TPOT over plain, minus 1, over requests spread to give the measured tau: in the
                             #: replayed run where simulated, else in steady state
    requests_alpha: float    #: those requests' mean alpha
    requests_spread: float   #: their spread
    p99_itl_change: float    #: P99 ITL per chunk (one round, as the benchmark measures ITL) over plain, minus 1
    p99_token_itl_change: float   #: P99 per-token ITL over plain, minus 1 (steady state)
    throughput_speedup: float = None   #: output throughput, speculative over baseline (the replayed run; None: not
                                       #: simulated, and the speedup stands for it)
    simulated: bool = False  #: whether the pair's own run was replayed (serving.serve_run), not the steady state
    request_rate: float = None   #: the pair's request rate where it ran open loop (its replay's), else None
    steady_speedup: float = None   #: the steady state's speedup, where the replay's is shown above
    steady_p99_itl_change: float = None   #: the steady state's P99 ITL change (per chunk: 1 + eps, a round)


@dataclass(frozen=True)
class BenchmarkPair:
    """The latencies of a pair of benchmark runs as their files give them (Comparison's, for --json)."""
    baseline: dict           #: the baseline's latency keys (mean_tpot_ms, p99_itl_ms, ...)
    spec: dict               #: the speculative run's
    changes: dict            #: spec over baseline, minus 1, for each key both have
    max_concurrency: int     #: the runs' max_concurrency (None: open loop)


@dataclass(frozen=True)
class Measured(Measurement):
    """The measurement (its Measurement fields), what the model predicts from it at each batch size, and beside a
    pair of benchmark runs what they measured and what the model predicts there (measured_predictions)."""
    by_concurrency: list     #: MeasuredSpeedup at each batch of the grid and the target
    tpot_speedup: float = field(default=None, metadata=shown_with("benchmark"))   #: measured mean-TPOT speedup
    throughput_speedup: float = field(default=None, metadata=shown_with("benchmark"))   #: measured throughput ratio
    p99_tpot_change: float = field(default=None, metadata=shown_with("benchmark"))   #: measured P99 TPOT change
    p99_itl_change: float = field(default=None, metadata=shown_with("benchmark"))    #: measured P99 ITL change
    benchmark: BenchmarkPair = field(default=None, metadata=OPTIONAL)
    prediction: Prediction = field(default=None, metadata=OPTIONAL)


def center_requests(tau, k, spread):
    """(mean alpha, spread) of requests whose rounds deliver tau in aggregate, as a measured tau is.

    Counters add up all rounds (vLLM's spec_decode_num_* totals, vllm/v1/spec_decode/metrics.py; SGLang's
    accept-length gauge over recent steps, python/sglang/srt/metrics/collector.py), so a measured tau is
    round_mix's, not tau(mean alpha). Near alpha 1 (or 0) clipping caps what spread requests can reach: the spread then
    narrows until they reproduce tau, at mean alpha 1 (or 0).
    >>> alpha, s = center_requests(acceptance_length(0.7, 3), 3, 0.0); round(alpha, 6), s
    (0.7, 0.0)
    >>> from rollout.simulation import round_mix
    >>> alpha, s = center_requests(2.0, 3, 0.1); round(round_mix(((1.0, alpha, 1),), k=3, spread=s)[0], 6), s
    (2.0, 0.1)
    >>> alpha, s = center_requests(3.9, 3, 0.11); round(alpha, 9), round(round_mix(((1.0, alpha, 1),), 3, s)[0], 6)
    (1.0, 3.9)
    """
    def tau_at(alpha, s):   # round_mix's tau for one domain: 1 over the mean of 1 / tau over its requests' alphas
        nodes = Z_NODES if s > 0 else (0.0,)
        return len(nodes) / sum(1.0 / acceptance_length(clip01(alpha + s * z), k) for z in nodes)

    if tau > tau_at(1.0, spread):                   # above what the spread allows: narrow it, alpha 1
        spread *= 1.0 - _increasing_root(lambda x: tau_at(1.0, spread * (1.0 - x)), tau)
    elif tau < tau_at(0.0, spread):                 # below: narrow it, alpha 0
        spread *= 1.0 - _increasing_root(lambda x: -tau_at(0.0, spread * (1.0 - x)), -tau)
    return _increasing_root(lambda a: tau_at(a, spread), tau), spread


@dataclass(frozen=True)
class PlanInput:
    """What the plan runs on (plan_input)."""
    sources: list            #: (alpha shown, acceptance) pairs for the best-K table
    acceptance: object       #: what best K runs on: a per-token alpha, or conditional alphas by position
    alpha: float             #: the single per-token alpha of the plan
    k_in_use: int            #: the K a measurement was taken at (None: the plan's own best)
    requests: tuple          #: (mean alpha, spread) of the simulated requests behind the tail


def plan_input(measured, grid, spread, expected_alpha=EXPECTED_ALPHA, prior=None):
    """What the plan runs on: the measurement when there is one (its per-position profile), else the published
    acceptance of the traffic's domains (prior: priors.PlanAcceptance; a mix's requests centred on its blended tau at
    the reference K, spread within and between domains), else expected_alpha."""
    if not measured and prior is not None:
        acceptance = prior.acceptance
        requests = ((acceptance, prior.spread) if not isinstance(acceptance, Mixture) else
                    center_requests(acceptance.tau(K_REFERENCE), K_REFERENCE, prior.spread))
        return PlanInput(sources=[(a, a) for a in grid_alphas(grid)], acceptance=acceptance, alpha=prior.alpha,
                         k_in_use=None, requests=requests)
    if not measured:
        return PlanInput(sources=[(a, a) for a in grid_alphas(grid)], acceptance=expected_alpha, alpha=expected_alpha,
                         k_in_use=None, requests=(expected_alpha, spread))
    tau = profile_length(measured.profile, measured.k)   # the K-token rounds the plan runs, as measured_predictions
    return PlanInput(sources=[(measured.alpha, measured.profile)], acceptance=measured.profile, alpha=measured.alpha,
                     k_in_use=None if measured.varying_k else measured.k,   # varying: the plan's own best K
                     requests=center_requests(tau, measured.k, spread))


def measured_predictions(measured, comparison, dep, batches, target_concurrency, decode, fit=FIT, requests=None,
                         replayed=None):
    """What the model predicts from the measured acceptance, beside what the benchmarks measured: Measured. replayed:
    the pair's own runs simulated ([baseline, speculative] PredictedBench), whose numbers the model's column shows; else
    the steady state at the pair's concurrency and lengths."""
    k, profile = measured.k, measured.profile
    limit = max_concurrency(dep)
    by_batch = []
    tau = profile_length(profile, k)
    for b in batches:
        eps = eps_seen(eps_decode(dep, b, k, fit), tau, dep, b, fit)
        by_batch.append(MeasuredSpeedup(concurrency=b, feasible=b <= limit, eps=eps,
                                        speedup=speedup(tau, eps) if b <= limit else None))
    if not comparison:
        return Measured(**fields_of(measured), by_concurrency=by_batch)
    batch = comparison.max_concurrency or target_concurrency
    notes = measured.notes
    if comparison.lengths:   # the model beside a benchmark is set at the benchmark's own lengths
        note = length_note("the benchmark", comparison.lengths, dep)
        notes = notes + [note] if note else notes
        dep = at_lengths(dep, *comparison.lengths)
    eps = eps_decode(dep, batch, k, fit)
    alpha, spread = requests or (measured.alpha, 0.0)
    cell = evaluate_cell(alpha, k, eps, batch, dep, decode(alpha, k, spread), fit)
    # The benchmark's rounds drafted k_mean tokens on average: its tau goes with their cost, not K's.
    seen = eps_seen(eps_decode(dep, batch, measured.k_mean, fit), measured.acceptance_length, dep, batch, fit)
    prediction = Prediction(concurrency=batch, speedup=speedup(measured.acceptance_length, seen),
                            p99_tpot_change=cell.tpot_p99_change, requests_alpha=alpha, requests_spread=spread,
                            p99_itl_change=cell.round_itl_spec_p99_ms / cell.itl_plain_p99_ms - 1.0,
                            p99_token_itl_change=cell.p99_change)
    if replayed:
        base, spec = (pb.result for pb in replayed)
        rate = replayed[0].workload.request_rate
        prediction = replace(prediction, request_rate=rate if rate != math.inf else None,
                             steady_speedup=prediction.speedup,
                             steady_p99_itl_change=prediction.p99_itl_change,
                             speedup=base["mean_tpot_ms"] / spec["mean_tpot_ms"],
                             throughput_speedup=spec["output_throughput"] / base["output_throughput"],
                             p99_tpot_change=spec["p99_tpot_ms"] / base["p99_tpot_ms"] - 1.0,
                             p99_itl_change=spec["p99_itl_ms"] / base["p99_itl_ms"] - 1.0, simulated=True)
    return Measured(**fields_of(replace(measured, notes=notes)), by_concurrency=by_batch,
                    tpot_speedup=comparison.tpot_speedup, throughput_speedup=comparison.throughput_speedup,
                    p99_tpot_change=comparison.p99_tpot_change, p99_itl_change=comparison.p99_itl_change,
                    benchmark=BenchmarkPair(baseline=comparison.baseline, spec=comparison.spec,
                                            changes=comparison.changes, max_concurrency=comparison.max_concurrency),
                    prediction=prediction)


@dataclass(frozen=True)
class BreakEvenAt:
    """The per-token alpha below which speculation is slower than plain decoding, at one (K, B)."""
    k: int                   #: draft length K
    concurrency: int         #: batch size B
    alpha: float             #: break-even per-token alpha (None: no acceptance pays)
    alpha_interval: list = None   #: [low, high] of it at INTERVAL_LEVEL, a round's cost uncertain (high None: above 1)


@dataclass(frozen=True)
class Plan:
    """The rollout plan's choices (plan_choices): its K, K-by-batch schedule, gate and expected tail, at the batch
    its commands run (shown_batch: the target concurrency, or the most that fits)."""
    target: int              #: the concurrency asked for (--target-concurrency, a benchmark's, or the grid's largest)
    feasible: bool           #: whether the target fits in memory
    alpha: float             #: the per-token alpha the plan assumes or measured
    request_alpha: float     #: mean alpha of the simulated requests behind the tail
    request_spread: float    #: their spread (s.d.)
    measured: bool           #: whether alpha was measured
    k: int                   #: the K the plan runs where speculation is on
    rate_at_alpha: float     #: vLLM's acceptance rate that alpha shows at K
    margin: float            #: the gate's margin over the break-even rate
    required_rate: float     #: break-even rate + margin (None: above 1, no measurement can pass)
    required_alpha: float    #: the per-token alpha with that rate at K
    plain_ms_b1: float       #: a plain step at B = 1, ms (prefill share included)
    shown_batch: int         #: the batch the plan's commands and numbers are for
    plain_ms_shown: float    #: a plain step at shown_batch, ms
    k_target: int            #: best K at shown_batch (0: speculation off)
    speedup_target: float    #: its speedup over plain decoding
    schedule: list           #: [start, end, K] rows for B = 1..max_concurrency (k_schedule)
    schedule_speedups: list = field(metadata=NOT_IN_JSON)   #: (speedup at start, at end) of each schedule row
    k_zero_at: int = None    #: the batch from which the schedule keeps speculation off to its end
    eps: float = None        #: decode eps at shown_batch and K
    gate_alpha: float = None   #: break-even per-token alpha there (None: none)
    gate_rate: float = None  #: break-even acceptance rate there, eps / K (None: none below 1)
    break_evens: list = None   #: BreakEvenAt at each concurrency that fits, at the plan's K and the schedule's
    lesson_gate_as_rate: float = None    #: the lesson's "alpha >= 0.55" read as a per-token alpha, shown as a rate
    lesson_gate_as_alpha: float = None   #: the same read as a rate, shown as a per-token alpha
    tail: list = field(default=None, metadata=NOT_IN_JSON)   #: Cells at the grid's concurrencies and shown_batch
    speedup_target_interval: list = None   #: [low, high] of speedup_target at INTERVAL_LEVEL (None: K = 0)
    too_close: bool = None   #: whether the interval of the plan's K's speedup at shown_batch (run_k) holds 1.0
    close_calls: list = None   #: [first, last] batch stretches where it does: there only a benchmark can decide
    gate_rate_interval: list = None   #: [low, high] of gate_rate, a round's cost across its INTERVAL_LEVEL range
    speedup_sd: float = None   #: s.d. of a speedup's log error behind these intervals (Trust)
    p99_budget: float = P99_BUDGET   #: largest P99 TPOT rise the gate accepts (for the plan's gate command)
    served_model: str = None   #: --served-model, repeated by the plan's gate command


def plan_choices(grid, dep, decode, fit, acceptance, alpha, target_concurrency, margin, k_in_use=None,
                 measured=False, requests=None, p99_budget=P99_BUDGET, served=None, sd=None):
    """The rollout plan's K, schedule, gate and tail expectations at the target concurrency: a Plan.

    acceptance drives best K (a per-token alpha or a measured profile); alpha is the single
    per-token alpha; requests, the (mean alpha, spread) of the simulated requests behind the tail
    (a measured alpha is an aggregate: see center_requests); k_in_use, when measured at one K, is
    the K the gate checks; measured says whether alpha was measured at all; p99_budget and served, what the
    plan's gate command repeats; sd, the s.d. of a speedup's log error (Trust), which decides what is too close to
    call.
    """
    limit = max_concurrency(dep)
    schedule = k_schedule(dep, acceptance, fit)
    shown_batch = shown_batch_of(dep, target_concurrency)
    k_target, speedup_target = best_k(dep, acceptance, shown_batch, fit)
    # The K to run where speculation is on: the one measured, else the target's best, else (speculation off there)
    # the best K with speculation on at the target: what the verdict weighs and stage 1's server starts with.
    k = k_in_use or k_target or (best_on_k(dep, acceptance, shown_batch, fit)[0] if limit >= 1 else 1)
    eps = eps_decode(dep, shown_batch, k, fit)   # every figure of the plan is at the batch its commands run
    request_alpha, request_spread = requests or (alpha, 0.0)
    dec = decode(request_alpha, k, request_spread)
    alike = decode(request_alpha, k, 0.0) if dec.spread > 0 else None   # every request at the mean alpha
    tail = []
    for b in sorted(set(grid.concurrencies) | {shown_batch}):
        if b <= limit:
            eps_b = eps_decode(dep, b, k, fit)
            cell = evaluate_cell(request_alpha, k, eps_b, b, dep, dec, fit)
            if alike:
                cell = replace(cell, tpot_spec_p99_alike_ms=evaluate_cell(request_alpha, k, eps_b, b, dep, alike,
                                                                          fit).tpot_spec_p99_ms)
            tail.append(cell)
    required = required_rate(k, eps, margin)
    # Break-even alpha at each of the grid's concurrencies that fits, at the K the plan runs there: its K, and the
    # schedule's where that differs (eps from the model).
    def ks_at(b):
        return sorted({k} | {kk for lo, hi, kk in schedule if lo <= b <= hi and kk})

    break_evens = [BreakEvenAt(k=kk, concurrency=b, alpha=exact_breakeven(kk, eps_decode(dep, b, kk, fit)),
                               alpha_interval=breakeven_alpha_range(kk, eps_decode(dep, b, kk, fit), sd))
                   for b in sorted(set(grid.concurrencies) | {shown_batch}) if b <= limit for kk in ks_at(b)]
    return Plan(target=target_concurrency, feasible=target_concurrency <= limit, alpha=alpha,
                request_alpha=request_alpha, request_spread=request_spread, measured=measured, k=k, rate_at_alpha=acceptance_rate(alpha, k),
                margin=margin, required_rate=required,
                required_alpha=None if required is None else alpha_from_rate(required, k),
                plain_ms_b1=plain_step_ms(dep, 1, fit), shown_batch=shown_batch,
                plain_ms_shown=plain_step_ms(dep, shown_batch, fit), k_target=k_target, speedup_target=speedup_target,
                schedule=schedule,
                schedule_speedups=[(best_k(dep, acceptance, lo, fit)[1], best_k(dep, acceptance, hi, fit)[1])
                                   for lo, hi, _ in schedule],
                k_zero_at=k_zero_at(schedule), eps=eps, gate_alpha=exact_breakeven(k, eps),
                gate_rate=breakeven_rate(k, eps), break_evens=break_evens,
                lesson_gate_as_rate=acceptance_rate(LESSON_RULE, k),
                lesson_gate_as_alpha=alpha_from_rate(LESSON_RULE, k), tail=tail, p99_budget=p99_budget,
                served_model=served,
                speedup_target_interval=interval(speedup_target, sd) if sd is not None and k_target else None,
                too_close=(sd is not None and shown_batch <= limit
                           and too_close(interval(run_k(dep, acceptance, shown_batch, fit)[1], sd))),
                close_calls=[list(r) for r in close_calls(dep, acceptance, sd, fit)] if sd is not None else None,
                gate_rate_interval=breakeven_range(k, eps, sd) if sd is not None else None, speedup_sd=sd)


@dataclass(frozen=True)
class Verdict:
    """The answer first (verdict): turn speculation on or not at the plan's batch, the gain in what the plan's
    benchmark will measure (its output throughput, speculation on over off) with its range and the decode-only speedup
    beside it, K by batch size, and where only a benchmark can tell. call: "on" (the range clears 1.0x), "off" (it
    stays below), "benchmark first" (it holds 1.0x) or "no fit" (nothing fits); with a gate, the gate's."""
    call: str                #: "on", "off", "benchmark first" or "no fit"
    concurrency: int         #: the batch the call is for: the target, or the most that fits (Plan.shown_batch)
    target: int              #: the plan's batch asked for
    target_from: str         #: how it was chosen: --target-concurrency, TARGET_CONCURRENCY, a benchmark's, the grid's
    alpha: float             #: per-token alpha the call rests on
    measured: bool           #: whether that alpha was measured (else assumed until stage 2 measures it)
    k: int                   #: the K the call is for: the plan's (Plan.k; where the best at this batch is off, the best
                             #: K with speculation on here: what "off" gives up)
    speedup: float           #: decode-only speedup at that K and batch: steady-state mean TPOT, plain over speculative
                             #: (None: no fit)
    speedup_interval: list   #: [low, high] at level (None: no interval, or no fit)
    level: float             #: the share of outcomes the interval holds
    k_best: int              #: the best K at that batch (0: speculation off), where it is not k
    speedup_best: float      #: its speedup
    by_batch: list           #: [first B, last B, K, speedup at first, speedup at last] per schedule row (K 0: off)
    close_calls: list        #: [first B, last B] stretches where the range holds 1.0x
    throughput_ratio: float = None   #: the plan's benchmark, speculative over baseline output throughput (None: not
                                     #: simulated: a tree, attention data parallelism, nothing fits)
    throughput_interval: list = None   #: [low, high] of it at level
    benchmark: dict = None   #: the plan's benchmark pair: files, prompts, concurrency, each run's throughput and P99 TPOT
    gate: str = None         #: the gate's verdict when measurements were given ("pass", "fail", "too close to call")
    gate_failed: list = None   #: the checks the gate failed (GateCheck.check), in its order
    acceptance: object = None   #: the published acceptance the assumed alpha comes from (priors.PlanAcceptance)
    model_error: object = None   #: the model's held-out error for this class of deployment (trust.ModelError)
    miss_interval: list = None   #: [low, high] the call was made on where the class's held-out error is past
                                 #: trust.MISS_LINE: the range widened by that error (None: not widened)
    measured_ratio: float = None   #: the user's benchmark pair's measured output-throughput ratio
    measured_predicted: list = None   #: [ratio, low, high]: the model's for that pair's own run, replayed (None: not
                                      #: replayed)
    at_slo: object = field(default=None, metadata=NOT_IN_JSON)   #: goodput.AtSlo where an SLO is given (--json: at_slo)


GATE_CALLS = {"pass": "on", "fail": "off", "too close to call": "benchmark first"}   # Gate.verdict -> Verdict.call


def replayed_ratio(replayed, sd):
    """[ratio, low, high] of a replayed pair's output throughput, speculative over baseline (None without a replay)."""
    if not replayed:
        return None
    base, spec = (pb.result["output_throughput"] for pb in replayed)
    return [spec / base] + (interval(spec / base, sd) if sd is not None else [spec / base] * 2)


def verdict(dep, plan, acceptance, level, fit=FIT, measured_gate=None, pair=None, target_from="",
            prior=None, error=None, measured_pair=None):
    """The call at the plan's batch: the gate's when there is one (measured_gate), else where the range of the plan's
    benchmark lies (pair: calibration.plan_benchmark's [baseline, speculative] at the plan's K), else the range of the
    decode-only speedup; the schedule with its speedups; the acceptance prior and the class's held-out error: a
    Verdict. acceptance is what best K ran on (plan_input); error, the class's held-out error (trust.ModelError):
    past trust.MISS_LINE the call is made on the range widened by it; measured_pair: the user's benchmark pair
    (readers.Comparison, and its own run replayed: calibration.replay_pair, or None), whose measured ratio the
    verdict sets beside the model's for that run."""
    batch = plan.shown_batch
    common = dict(target=plan.target, target_from=target_from, alpha=plan.alpha, measured=plan.measured, level=level,
                  acceptance=prior, model_error=error)
    if max_concurrency(dep) < 1:
        return Verdict(call="no fit", concurrency=None, k=0, speedup=None, speedup_interval=None, k_best=0,
                       speedup_best=None, by_batch=[], close_calls=[], **common)
    k = plan.k
    rounds = round_costs(dep, batch, fit)
    gain = tpot_speedup(dep, batch, 1.0 / tau_for(acceptance, k), rounds[k] if k in rounds
                        else round_ms(dep, batch, k, fit), fit)
    bounds = interval(gain, plan.speedup_sd) if plan.speedup_sd is not None else None
    ratio = ratio_bounds = benchmark = None
    if pair:
        base, spec = pair
        ratio = spec.result["output_throughput"] / base.result["output_throughput"]
        ratio_bounds = interval(ratio, plan.speedup_sd) if plan.speedup_sd is not None else None
        benchmark = dict(files=[base.name, spec.name], prompts=base.workload.num_prompts, concurrency=batch, k=spec.k,
                         **{f"{name}_{key}": pb.result[key] for name, pb in (("baseline", base), ("spec", spec))
                            for key in ("output_throughput", "mean_tpot_ms", "p99_tpot_ms")})
    bounds_called = ratio_bounds or bounds or ((ratio or gain),) * 2
    widened = None
    if error is not None and error.median > MISS_LINE and (ratio_bounds or bounds):   # a known miss: widen by it
        widened = [bounds_called[0] / (1 + error.median), bounds_called[1] * (1 + error.median)]
    call = call_of(widened or bounds_called)
    if measured_gate is not None:
        call = GATE_CALLS[measured_gate.verdict]
    return Verdict(call=call, concurrency=batch, k=k, speedup=gain, speedup_interval=bounds, k_best=plan.k_target,
                   speedup_best=plan.speedup_target,
                   by_batch=[[lo, hi, kk, first, last] for (lo, hi, kk), (first, last)
                             in zip(plan.schedule, plan.schedule_speedups)],
                   close_calls=plan.close_calls or [], throughput_ratio=ratio, throughput_interval=ratio_bounds,
                   benchmark=benchmark, miss_interval=widened,
                   measured_ratio=measured_pair[0].throughput_speedup if measured_pair else None,
                   measured_predicted=replayed_ratio(measured_pair[1], plan.speedup_sd) if measured_pair else None,
                   gate=measured_gate.verdict if measured_gate else None,
                   gate_failed=[c.check for c in measured_gate.reasons if not c.passed] if measured_gate else None,
                   **common)


@dataclass(frozen=True)
class GateCheck:
    """One check of the gate."""
    check: str               #: "memory", "acceptance", "p99_tpot" or "throughput"
    passed: bool
    detail: str              #: what was compared with what


@dataclass(frozen=True)
class Gate:
    """The gate's verdict at the plan's batch and K (gate)."""
    verdict: str             #: "pass", "fail", or "too close to call" (the model's range cannot decide; exit 1)
    reasons: list            #: GateCheck rows
    concurrency: int         #: the batch it is for
    k: int                   #: the K it is for
    eps: float               #: decode eps there
    breakeven_rate: float    #: eps / K (None: none below 1)
    required_rate: float     #: break-even + margin (None: above 1)
    required_alpha: float    #: the per-token alpha of that rate at K
    margin: float            #: the margin over break-even
    p99_budget: float        #: largest P99 TPOT rise accepted, fraction


def gate(measured, comparison, dep, plan, budget):
    """Pass only if acceptance clears break-even + margin at the target and, with benchmarks, the tail holds; too
    close to call when, without benchmarks to measure the speedup, the rate clears the model's break-even but not
    the top of its range (Plan.gate_rate_interval).

    The break-even, margin and required rate are the plan's, at its batch and its K. The rate
    compared is the one the measured per-token alpha gives at that K: at a fixed K, accepted over
    drafted tokens; when the rounds drafted varying lengths, whose overall rate mixes Ks, the
    rate of K-token rounds.
    """
    k, batch, margin = plan.k, plan.shown_batch, plan.margin
    rate = acceptance_rate(measured.alpha, k)   # at a fixed K exactly accepted / drafted tokens
    eps, even, need, need_alpha = plan.eps, plan.gate_rate, plan.required_rate, plan.required_alpha
    reasons = []
    if not plan.feasible:
        reasons.append(GateCheck(check="memory", passed=False,
                                 detail=f"{plan.target} sequences of {dep.context} tokens do not fit "
                                        f"(at most {max_concurrency(dep)}, where the rest is checked)"))
    reasons.append(GateCheck(
        check="acceptance", passed=need is not None and rate >= need,
        detail=("the per-token alpha, taken for every position, gives an " if measured.varying_k else "") +
               f"acceptance rate {rate:.3f} at K={k} against break-even "
               + (f"{even:.3f} + margin {margin:.2f} = {need:.3f} at B={batch}; as per-token alpha "
                  f"{measured.alpha:.3f} against {need_alpha:.3f}" if need is not None else
                  f"{even:.3f} + margin {margin:.2f}, more than 1 at B={batch}: it cannot pass" if even is not None else
                  f"a break-even above 1 at B={batch} (a round costs more than K + 1 tokens give): it cannot pass")))
    if comparison:
        change, speedup = comparison.p99_tpot_change, comparison.throughput_speedup
        reasons.append(GateCheck(check="p99_tpot", passed=change is not None and change <= budget,
                                 detail="p99_tpot_ms missing from a benchmark file" if change is None else
                                 f"P99 TPOT {change * 100:+.1f}% against baseline; budget +{budget * 100:.0f}%"))
        reasons.append(GateCheck(check="throughput", passed=speedup is not None and speedup >= 1.0,
                                 detail="output_throughput missing from a benchmark file" if speedup is None else
                                 f"output throughput {speedup:.3f}x baseline (must not be lower)"))
    band = plan.gate_rate_interval
    verdict = "pass" if all(r.passed for r in reasons) else "fail"
    if verdict == "pass" and comparison is None and band is not None and rate < band[1] + margin:
        verdict = "too close to call"
        reasons.append(GateCheck(
            check="model range", passed=False,
            detail=f"the rate {rate:.3f} clears break-even + margin at the model's round cost, but the break-even "
                   f"lies anywhere in {band[0]:.3f}-{band[1]:.3f} at {INTERVAL_LEVEL:.0%}: benchmark speculation on "
                   f"against off at B={batch} (stage 1's sharegpt files, --bench-baseline and --bench-spec), and a "
                   "measured throughput settles it"))
    return Gate(verdict=verdict, reasons=reasons,
                concurrency=batch, k=k, eps=eps, breakeven_rate=even, required_rate=need,
                required_alpha=need_alpha, margin=margin, p99_budget=budget)


# ---------------------------------------------------------------- facts and chart data
@dataclass(frozen=True)
class Facts:
    """What the deployment lines and the summary say about the deployment itself (deployment_facts)."""
    max_concurrency: int     #: the most sequences whose KV cache fits beside the weights
    memory_budget_bytes: float   #: bytes the engine gives weights and KV cache
    plain_b1: dict           #: a plain step at B = 1, ms by term (pass_parts' names, and "prefill share")
    eps_growth: EpsGrowth = None   #: what moves eps across the grid's batch sizes that fit (None: none fit)
    moe: MoeVerify = None    #: the verify pass of a mixture of experts (None: dense, or nothing fits)
    busiest_share: float = None   #: expert parallel: the experts the busiest GPU reads at B = 1 over its even share
                                  #: (touched_experts over expected_experts); None otherwise


def deployment_facts(grid, dep, fit=FIT):
    """What the deployment lines and the summary say about the deployment itself."""
    limit = max_concurrency(dep)
    feasible = [b for b in sorted(grid.concurrencies) if b <= limit]
    return Facts(max_concurrency=limit, memory_budget_bytes=memory_budget_bytes(dep),
                 plain_b1=plain_step_parts(dep, 1, fit),
                 eps_growth=eps_growth(dep, grid.ks[0], feasible[0], feasible[-1], fit) if feasible else None,
                 moe=moe_verify(dep, grid.ks[0], feasible[0], fit) if feasible and dep.target.moe_layers else None,
                 busiest_share=(touched_experts(t, dep, 1) / expected_experts(t.experts, t.experts_per_token, 1,
                                                                             t.routing_exponent)
                                if (t := dep.target).experts and dep.ep > 1 else None))


@dataclass(frozen=True)
class SpeedupCurve:
    """Speedup against per-token alpha at one batch size (the speedup chart)."""
    concurrency: int         #: batch size B
    eps: float               #: decode eps at B
    breakeven: float         #: break-even per-token alpha (None: none)
    points: list             #: (alpha, speedup) for alpha 0 to 1


@dataclass(frozen=True)
class StepCurve:
    """Best K against batch size at one alpha (the best-K chart)."""
    alpha: float             #: per-token alpha
    schedule: list           #: [start, end, K] rows (k_schedule)
    zero_at: int             #: the batch from which K stays 0, or None


@dataclass(frozen=True)
class ItlCurves:
    """Per-token ITL distributions at the plan's batch, alpha and K (the ITL chart)."""
    concurrency: int         #: batch size B
    alpha: float             #: the requests' mean alpha
    k: int                   #: draft length K
    x_max: float             #: the chart's right edge, ms
    cdf: ItlMixtures         #: each way's (ms, share of tokens at or below) points
    p99: ItlMixtures         #: each way's P99, ms


@dataclass(frozen=True)
class Charts:
    """The numbers the three charts draw (chart_data)."""
    k: int                   #: the K of the speedup chart (the grid's first)
    curves: list             #: SpeedupCurve per batch size that fits
    left_out: list           #: batch sizes of the grid that do not fit
    limit: int               #: the most sequences that fit
    steps: list              #: StepCurve per CHART_ALPHAS
    itl: ItlCurves           #: None when nothing fits
    speedup_sd: float = None   #: s.d. of a speedup's log error: the speedup chart's bands (Trust)


def chart_data(grid, dep, plan, decode, fit=FIT, chart_alphas=CHART_ALPHAS):
    """The numbers the three charts draw: speedup curves, best-K steps and ITL distributions."""
    limit = max_concurrency(dep)
    k = grid.ks[0]
    alphas = [i / 100 for i in range(101)]
    curves, left_out = [], []
    for batch in grid.concurrencies:
        if batch > limit:
            left_out.append(batch)
            continue
        eps = eps_decode(dep, batch, k, fit)
        curves.append(SpeedupCurve(
            concurrency=batch, eps=eps, breakeven=exact_breakeven(k, eps),
            points=[(a, exact_speedup(a, k, eps_seen(eps, acceptance_length(a, k), dep, batch, fit)))
                    for a in alphas]))
    steps = []
    for a in chart_alphas:
        schedule = k_schedule(dep, a, fit)
        steps.append(StepCurve(alpha=a, schedule=schedule, zero_at=k_zero_at(schedule)))
    itl = None
    if limit >= 1:
        batch, alpha, kk = plan.shown_batch, plan.request_alpha, plan.k
        dec = decode(alpha, kk, plan.request_spread)
        plain_ms = plain_step_ms(dep, batch, fit)
        spec_ms = (1.0 + eps_seen(eps_decode(dep, batch, kk, fit), dec.tau, dep, batch, fit)) * plain_ms
        mixtures = fields_of(itl_parts(dec, plain_ms, spec_ms, batch))
        x_max = 1.05 * max(mixture_quantile(0.999, parts) for parts in mixtures.values())
        xs = [x_max * i / 240 for i in range(241)]
        itl = ItlCurves(concurrency=batch, alpha=alpha, k=kk, x_max=x_max,
                        cdf=ItlMixtures(**{name: [(x, mixture_share(x, parts)) for x in xs]
                                           for name, parts in mixtures.items()}),
                        p99=ItlMixtures(**{name: mixture_quantile(0.99, parts) for name, parts in mixtures.items()}))
    return Charts(k=k, curves=curves, left_out=left_out, limit=limit, steps=steps, itl=itl,
                  speedup_sd=plan.speedup_sd)
