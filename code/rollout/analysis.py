"""Analysis: one grid cell's closed forms beside its simulated requests (evaluate_cell), the best K at each batch
size, the traffic mix, the plan's choices, the verdict and the gate on measurements, the deployment's facts and the
charts' data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from .records import fields_of, inline, NOT_IN_JSON, OPTIONAL, shown_with
from .acceptance import (
    _increasing_root, acceptance_length, acceptance_rate, alpha_from_rate, breakeven_rate, exact_breakeven,
    exact_speedup, LESSON_RULE, profile_length, required_rate, speedup, tau_for,
)
from .costmodel import (
    eps_decode, eps_growth, eps_seen, EpsGrowth, FIT, moe_verify, MoeVerify, plain_step_ms, plain_step_parts,
    round_ms, tpot_speedup,
)
from .experts import expected_experts, touched_experts
from .deployment import at_lengths, max_concurrency, memory_budget_bytes, shown_batch as shown_batch_of
from .simulation import clip01, itl_parts, ItlMixtures, mixture_quantile, mixture_share, Z_NODES
from .readers import Measurement
from .benchfiles import length_note
from .priors import K_REFERENCE, Mixture
from .trust import breakeven_alpha_range, breakeven_range, corrected, interval, INTERVAL_LEVEL, known, too_close
from .schedule import call_of, k_zero_at
from .cells import evaluate_cell, grid_alphas
from .bestk import best_k, best_on_k, close_calls, k_schedule, round_costs, run_k


# ---------------------------------------------------------------- the grid
# Every (acceptance, K, eps, B) cell: the closed forms beside the simulated requests.


# ---------------------------------------------------------------- best K
# The K (0 = off) with the most tokens a second at each batch size, and vLLM's K-by-batch table.


# ---------------------------------------------------------------- the traffic mix
# Domains of different alpha share one round time: their tau blends harmonically.


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


def plan_input(measured, grid, spread, expected_alpha, prior=None):
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


def measured_predictions(measured, comparison, dep, *, batches, target_concurrency, decode, fit=FIT, requests=None,
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
class GateBar:
    """What a measured acceptance must clear at the plan's K: the gate's bar."""
    rate_at_alpha: float     #: vLLM's acceptance rate the plan's alpha shows at K
    margin: float            #: the gate's margin over the break-even rate
    required_rate: float     #: break-even rate + margin (None: above 1, no measurement can pass)
    required_alpha: float    #: the per-token alpha with that rate at K


@dataclass(frozen=True)
class BreakEvens:
    """Where the plan's K breaks even: at its batch, at every batch that fits, and the lesson's rule beside them."""
    gate_alpha: float = None   #: break-even per-token alpha at the plan's batch (None: none)
    gate_rate: float = None  #: break-even acceptance rate there, eps / K (None: none below 1)
    break_evens: list = None   #: BreakEvenAt at each concurrency that fits, at the plan's K and the schedule's
    lesson_gate_as_rate: float = None    #: the lesson's "alpha >= 0.55" read as a per-token alpha, shown as a rate
    lesson_gate_as_alpha: float = None   #: the same read as a rate, shown as a per-token alpha


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
    bar: GateBar = field(metadata=inline(GateBar))   #: what a measured acceptance must clear at K
    plain_ms_b1: float       #: a plain step at B = 1, ms (prefill share included)
    shown_batch: int         #: the batch the plan's commands and numbers are for
    plain_ms_shown: float    #: a plain step at shown_batch, ms
    k_target: int            #: best K at shown_batch (0: speculation off)
    speedup_target: float    #: its speedup over plain decoding
    schedule: list           #: [start, end, K] rows for B = 1..max_concurrency (k_schedule)
    schedule_speedups: list = field(metadata=NOT_IN_JSON)   #: (speedup at start, at end) of each schedule row
    k_zero_at: int = None    #: the batch from which the schedule keeps speculation off to its end
    eps: float = None        #: decode eps at shown_batch and K
    even: BreakEvens = field(default=None, metadata=inline(BreakEvens))   #: where it breaks even
    tail: list = field(default=None, metadata=NOT_IN_JSON)   #: Cells at the grid's concurrencies and shown_batch
    speedup_target_interval: list = None   #: [low, high] of speedup_target at INTERVAL_LEVEL (None: K = 0)
    too_close: bool = None   #: whether the interval of the plan's K's speedup at shown_batch (run_k) holds 1.0
    close_calls: list = None   #: [first, last] batch stretches where it does: there only a benchmark can decide
    gate_rate_interval: list = None   #: [low, high] of gate_rate, a round's cost across its INTERVAL_LEVEL range
    speedup_sd: float = None   #: s.d. of a speedup's log error behind these intervals (Trust)
    p99_budget: float = None   #: largest P99 TPOT rise the gate accepts (for the plan's gate command)
    served_model: str = None   #: --served-model, repeated by the plan's gate command


def plan_choices(grid, dep, decode, *, fit, acceptance, alpha, target_concurrency, margin, k_in_use=None,
                 measured=False, requests=None, p99_budget, served=None, sd=None):
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
                alike_p99 = evaluate_cell(request_alpha, k, eps_b, b, dep, alike, fit).tpot_spec_p99_ms
                cell = replace(cell, tail=replace(cell.tail, tpot_spec_p99_alike_ms=alike_p99))
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
                request_alpha=request_alpha, request_spread=request_spread, measured=measured, k=k,
                bar=GateBar(rate_at_alpha=acceptance_rate(alpha, k), margin=margin, required_rate=required,
                            required_alpha=None if required is None else alpha_from_rate(required, k)),
                plain_ms_b1=plain_step_ms(dep, 1, fit), shown_batch=shown_batch,
                plain_ms_shown=plain_step_ms(dep, shown_batch, fit), k_target=k_target, speedup_target=speedup_target,
                schedule=schedule,
                schedule_speedups=[(best_k(dep, acceptance, lo, fit)[1], best_k(dep, acceptance, hi, fit)[1])
                                   for lo, hi, _ in schedule],
                k_zero_at=k_zero_at(schedule), eps=eps,
                even=BreakEvens(gate_alpha=exact_breakeven(k, eps), gate_rate=breakeven_rate(k, eps),
                                break_evens=break_evens, lesson_gate_as_rate=acceptance_rate(LESSON_RULE, k),
                                lesson_gate_as_alpha=alpha_from_rate(LESSON_RULE, k)), tail=tail, p99_budget=p99_budget,
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
    speedup: float           #: the headline's gain (speedup_of): the plan's benchmark, speculative over baseline output
                             #: throughput, where simulated, else the decode-only speedup; corrected by the class's
                             #: known error where there is one (trust.corrected; None: no fit)
    speedup_interval: list   #: [low, high] at level (None: no interval, or no fit)
    speedup_of: str          #: what speedup is: "benchmark output throughput" or "decode-only"
    decode_speedup: float    #: decode-only speedup at that K and batch: steady-state mean TPOT, plain over
                             #: speculative, corrected alike (None: no fit)
    decode_speedup_interval: list   #: its [low, high]
    level: float             #: the share of outcomes the interval holds
    k_best: int              #: the best K at that batch (0: speculation off), where it is not k
    speedup_best: float      #: its speedup
    by_batch: list           #: [first B, last B, K, speedup at first, speedup at last] per schedule row (K 0: off)
    close_calls: list        #: [first B, last B] stretches where the range holds 1.0x
    benchmark: dict = None   #: the plan's benchmark pair: files, prompts, concurrency, each run's throughput and P99 TPOT
    gate: str = None         #: the gate's verdict when measurements were given ("pass", "fail", "too close to call")
    gate_failed: list = None   #: the checks the gate failed (GateCheck.check), in its order
    acceptance: object = None   #: the published acceptance the assumed alpha comes from (priors.PlanAcceptance)
    model_error: object = None   #: the model's held-out error for this class of deployment (trust.ModelError)
    modelled: dict = None    #: where the class's errors corrected the numbers: {"speedup", "speedup_interval",
                             #: "decode_speedup", "decode_speedup_interval"} as the model gives them (None: not)
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


def verdict(dep, plan, acceptance, *, level, fit=FIT, measured_gate=None, pair=None, target_from="",
            prior=None, error=None, measured_pair=None):
    """The call at the plan's batch: the gate's when there is one (measured_gate), else where the range of the plan's
    benchmark lies (pair: calibration.plan_benchmark's [baseline, speculative] at the plan's K), else the range of the
    decode-only speedup; the schedule with its speedups; the acceptance prior and the class's held-out error: a
    Verdict. acceptance is what best K ran on (plan_input); error, the class's held-out error (trust.ModelError):
    where it is known (trust.known), the numbers and the call follow it (trust.corrected); measured_pair: the user's benchmark pair
    (benchfiles.Comparison, and its own run replayed: calibration.replay_pair, or None), whose measured ratio the
    verdict sets beside the model's for that run."""
    batch = plan.shown_batch
    common = dict(target=plan.target, target_from=target_from, alpha=plan.alpha, measured=plan.measured, level=level,
                  acceptance=prior, model_error=error)
    if max_concurrency(dep) < 1:
        return Verdict(call="no fit", concurrency=None, k=0, speedup=None, speedup_interval=None, speedup_of=None,
                       decode_speedup=None, decode_speedup_interval=None, k_best=0, speedup_best=None, by_batch=[],
                       close_calls=[], **common)
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
    headline, headline_bounds = (ratio, ratio_bounds) if ratio is not None else (gain, bounds)
    # A class whose held-out errors are known moves the numbers by them: one that ran high is pulled down.
    decode, decode_bounds = corrected(gain, bounds, error)
    said, said_bounds = corrected(headline, headline_bounds, error)
    call = call_of(said_bounds or (said, said))
    if measured_gate is not None:
        call = GATE_CALLS[measured_gate.verdict]
    return Verdict(call=call, concurrency=batch, k=k, speedup=said, speedup_interval=said_bounds,
                   speedup_of="benchmark output throughput" if ratio is not None else "decode-only",
                   decode_speedup=decode, decode_speedup_interval=decode_bounds, k_best=plan.k_target,
                   speedup_best=plan.speedup_target,
                   by_batch=[[lo, hi, kk, first, last] for (lo, hi, kk), (first, last)
                             in zip(plan.schedule, plan.schedule_speedups)],
                   close_calls=plan.close_calls or [], benchmark=benchmark,
                   modelled=dict(speedup=headline, speedup_interval=headline_bounds, decode_speedup=gain,
                                 decode_speedup_interval=bounds) if known(error) else None,
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
    k, batch, margin = plan.k, plan.shown_batch, plan.bar.margin
    rate = acceptance_rate(measured.alpha, k)   # at a fixed K exactly accepted / drafted tokens
    eps, even, need, need_alpha = plan.eps, plan.even.gate_rate, plan.bar.required_rate, plan.bar.required_alpha
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


def chart_data(grid, dep, plan, decode, fit, chart_alphas):
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
