"""Serving at an SLO: how much traffic each GPU serves with every percentile the SLO names within its bound, with
speculation off and at the plan's K, found by simulating `vllm bench serve` runs (serving.serve_run) at rising
concurrency. Its goodput is vLLM's (--goodput: serving.good_requests).
"""
from __future__ import annotations

from dataclasses import dataclass


from .acceptance import round_moments
from .costmodel import FIT
from .deployment import max_concurrency, step_budget
from .simulation import NORMAL
from .serving import bench_result, good_requests, serve_run, step_cost
from .workload import SLO_KEYS, Workload
from .deployment import running_cap, simulated_layout
from .workload import SLO_PERCENTILE, slo_prompts

RESOLUTION = 10       # the search settles the best concurrency to a tenth of it (resolution): finer than a run's own
                      # noise moves its P99s (ten prompts a slot)
SLOW_Z = NORMAL.inv_cdf(SLO_PERCENTILE / 100)   # the slowest 1% of requests accept this many s.d.s below the mean
SEARCH_RUNS = 8       # runs an arm at most: the closed forms are rarely off by enough to need more than four
SLO_CONCURRENCY_LIMIT = 1024   # the most concurrent requests the search tries: ten prompts a slot past it take seconds
SLO_OUTPUT_LIMIT = 16_384   # answers longer than this are not searched: a run costs a step per token of its slowest
                            # slot, so ten answers a slot at each of ~15 concurrencies take seconds each past it


@dataclass(frozen=True)
class LoadPoint:
    """One simulated closed-loop run of the search at one concurrency."""
    concurrency: int         #: --max-concurrency
    k: int                   #: K the server ran (0: speculation off)
    prompts: int             #: --num-prompts (slo_prompts)
    tail_ms: dict            #: {"ttft", "tpot", "e2el": its P99 in ms}
    request_throughput: float   #: requests/s the replica completed
    output_throughput: float    #: output tokens/s
    request_goodput: float   #: requests/s that met every bound (vLLM's request_goodput)
    within: bool             #: whether every P99 the SLO names is within its bound
    past: tuple = ()         #: the keys whose P99 is past its bound


@dataclass(frozen=True)
class Arm:
    """Speculation off or on at the plan's K by batch size: the runs the search simulated, by concurrency, and the best
    within the SLO."""
    speculative: bool
    points: tuple            #: LoadPoint, by concurrency
    best: LoadPoint = None   #: the highest concurrency within the SLO (None: not even one request at a time)
    cap: int = 0             #: the server's running cap (running_cap)
    top: int = 0             #: the most the search tried: the cap, or SLO_CONCURRENCY_LIMIT below it
    stopped_by: tuple = ()   #: the keys past their bound at the least concurrency past the best: what stops it


@dataclass(frozen=True)
class AtSlo:
    """Both arms at the SLO, per GPU of the replica."""
    slo: tuple               #: ((key, ms), ...) in SLO_KEYS' order
    percentile: int          #: SLO_PERCENTILE
    gpus: int                #: GPUs of one replica (throughputs are divided by it)
    alpha: float             #: per-token alpha the speculative runs centre on
    baseline: Arm = None     #: None where the search is skipped
    speculative: Arm = None
    gain: float = None       #: speculative over baseline requests/s per GPU at their best (None: either has none)
    skipped: str = None      #: why the SLO was not searched (plan_at_slo), in words; None: it was


RUN_MEMO = {}   # run_at's inputs -> its LoadPoint: both arms run K = 0 alike at their lower concurrencies, and a
                # process that plans the same deployment again (main.main called twice, the tests) simulates it once


def run_at(dep, k, alpha, spread, concurrency, slo, traffic, fit):
    """One closed-loop run at `concurrency`: its LoadPoint, simulated once for each set of inputs (RUN_MEMO; without
    speculation alpha and its spread draw nothing in serve_run, so they are not part of the key)."""
    key = (dep.physics, k, alpha if k else 0.0, spread if k else 0.0, concurrency, slo, traffic.seed,
           traffic.output_spread, traffic.input_spread, fit)
    if key not in RUN_MEMO:
        if len(RUN_MEMO) > 4096:
            RUN_MEMO.clear()
        RUN_MEMO[key] = simulated_point(dep, k, alpha, spread, concurrency, slo, traffic, fit)
    return RUN_MEMO[key]


def simulated_point(dep, k, alpha, spread, concurrency, slo, traffic, fit):
    """One closed-loop run at `concurrency`, simulated. Answers log-normal with the traffic's spread and none past
    the deployment's output length, as the plan's ShareGPT runs (gate_runs)."""
    work = Workload(num_prompts=slo_prompts(concurrency), max_concurrency=concurrency, request_rate=float("inf"),
                    burstiness=1.0, input_tokens=dep.input_tokens, output_tokens=dep.output_tokens,
                    output_spread=traffic.output_spread, output_cap=dep.output_tokens,
                    input_spread=traffic.input_spread)
    run = serve_run(dep, work, k, alpha, spread, traffic.seed, fit, concurrency)
    result = bench_result(run, work, dep, dict(slo))
    tail = {key: result[f"p{SLO_PERCENTILE}_{key}_ms"] for key in SLO_KEYS}
    return LoadPoint(concurrency=concurrency, k=k, prompts=work.num_prompts, tail_ms=tail,
                     request_throughput=result["request_throughput"], output_throughput=result["output_throughput"],
                     request_goodput=good_requests(run, dict(slo)) / result["duration"],
                     within=all(tail[key] <= ms for key, ms in slo),
                     past=tuple(key for key, ms in slo if tail[key] > ms))


def mean_answer(dep, spread):
    """Mean output tokens of the search's answers: log-normal of mean output_tokens and s.d. `spread` in log, capped at
    output_tokens (E min(X, L) = 2 L Phi(-s / 2) for X of mean L)."""
    return dep.output_tokens * 2.0 * NORMAL.cdf(-spread / 2.0) if spread else float(dep.output_tokens)


def estimated_tails(dep, k, alpha, spread, concurrency, traffic, fit):
    """{"ttft", "tpot", "e2el": ms} a closed-loop run at `concurrency` shows at its P99, by closed forms: what the
    search starts from and steers by (search), never what it reports.

    TTFT: every slot sends at once, so the P99 of ten requests a slot is the first wave's 0.9 c-th prompt, after
    0.9 c prompts' tokens are prefilled in chunks of the step's budget. TPOT: the steady state, c sequences each
    decoding a round a step, the step carrying the prompts of the requests that replace the finished ones (c I
    tokens every request's rounds); the P99 request accepts at alpha 2.33 s.d.s below the mean (`spread`), so its
    round delivers tau there (acceptance.round_moments). E2EL: the two added over an answer.
    """
    c, prompt = concurrency, dep.input_tokens
    tau = round_moments(alpha, k)[0] if k else 1.0
    slow = round_moments(max(0.0, alpha - SLOW_Z * spread), k)[0] if k else 1.0
    answer = mean_answer(dep, traffic.output_spread)
    rounds = max(1.0, (answer - 1.0) / tau)
    budget = step_budget(dep)
    share = c * prompt / rounds   # prompt tokens a step, on average
    if dep.engine.mixes_prefill:
        step = step_cost(dep, c, k, round(min(share, budget)), fit)
    else:   # prompts prefilled alone: the decodes wait out their share of prefill steps
        step = step_cost(dep, c, k, 0, fit) + share / budget * step_cost(dep, 0, k, round(min(budget, c * prompt)), fit)
    tpot = step / slow
    wave = max(1.0, 0.9 * c) * prompt
    ttft = fit.request_ms + max(1.0, wave / budget) * step_cost(dep, 0, k, round(min(wave, budget)), fit)
    return {"ttft": ttft, "tpot": tpot, "e2el": ttft + (dep.output_tokens - 1) * step / tau}


def between(low, high, slo):
    """The concurrency between two runs (LoadPoint) where every tail, linear in concurrency between them, is within
    its bound: the first run's within and the second's past."""
    reach = min((ms - low.tail_ms[key]) / (high.tail_ms[key] - low.tail_ms[key])
                for key, ms in slo if high.tail_ms[key] > ms and high.tail_ms[key] > low.tail_ms[key])
    return low.concurrency + int(reach * (high.concurrency - low.concurrency))


def resolution(concurrency):
    """How close the search settles the best concurrency: a run past the SLO at most this far above it."""
    return max(1, concurrency // RESOLUTION)


def search(dep, ks, alpha, spread, slo, traffic, fit):
    """The arm's runs, K = ks(concurrency) at each (0: off), up to the server's cap (past it requests only queue in
    the server) or SLO_CONCURRENCY_LIMIT: the best concurrency within the SLO with a run past it at most
    resolution(best) above (or the best at the top, or none when one request at a time is past it).

    Each run is a simulated benchmark (run_at); the closed forms (estimated_tails) only choose where to run. The
    first run is where they put the SLO's edge; after each run every bound's estimate is scaled by what that run
    simulated against what they said there, and the next run is where the scaled estimates put the edge, a
    resolution beyond the last run within. Once runs within and past bracket the edge, the next is where their
    tails, linear between them, meet the bounds. Three or four runs an arm where a ladder and bisections took
    seven."""
    speculative = ks is not off
    # the server's cap, and what fits in memory with the draft loaded, for both arms: every command of the plan stays
    # within it, so off and on are compared on the same slots (stage 0's server alone would fit a few more)
    cap = min(running_cap(dep, speculative), max_concurrency(dep))
    top = min(cap, SLO_CONCURRENCY_LIMIT)
    keys = [key for key, _ in slo]

    def estimate(c):
        k = ks(c)
        return estimated_tails(dep, k, alpha if k else 0.0, spread if k else 0.0, c, traffic, fit)

    def edge(scale, low, high):
        """The largest concurrency in [low, high] whose scaled estimates are within every bound (low - 1: none)."""
        def fits(c):
            tails = estimate(c)
            return all(tails[key] * scale[key] <= ms for key, ms in slo)
        if not fits(low):
            return low - 1
        while low < high:   # the estimates rise with concurrency: bisect on them
            middle = (low + high + 1) // 2
            low, high = (middle, high) if fits(middle) else (low, middle - 1)
        return low

    points = {}
    c = max(1, edge({key: 1.0 for key in keys}, 1, top))
    while True:
        points[c] = run_at(dep, ks(c), alpha, spread, c, slo, traffic, fit)
        best = max((q for q, p in points.items() if p.within), default=0)
        high = min((q for q, p in points.items() if not p.within and q > best), default=top + 1)
        if best >= top or high == 1 or high - best <= resolution(best) or len(points) >= SEARCH_RUNS:
            break
        if best and high <= top:   # bracketed: where the two runs' tails, linear between them, meet the bounds
            c = between(points[best], points[high], slo)
            c = min(max(c, best + resolution(best)), max(best + resolution(best), high - resolution(best)))
        else:   # one side only: where the estimates, scaled to the nearest run, put the edge, a step beyond it
            near = points[best] if best else points[high]
            estimated = estimate(near.concurrency)
            scale = {key: near.tail_ms[key] / estimated[key] if estimated[key] > 0 else 1.0 for key in keys}
            guess = edge(scale, 1, top)
            c = min(max(guess, best + resolution(best)), top) if best else max(1, min(guess, high - resolution(high)))
        if c in points:
            break
    ordered = tuple(points[c] for c in sorted(points))
    best = max((p for p in ordered if p.within), key=lambda p: p.concurrency, default=None)
    after = [p for p in ordered if best is None or p.concurrency > best.concurrency]
    return Arm(speculative=speculative, points=ordered, best=best, cap=cap, top=top,
               stopped_by=after[0].past if after else ())


def off(concurrency):
    """The baseline arm's K at every concurrency: speculation off."""
    return 0


def schedule_k(schedule, fallback):
    """K at a concurrency from the plan's K by batch size ((first B, last B, K) rows); past its rows, `fallback`."""
    def ks(concurrency):
        return next((k for lo, hi, k in schedule if lo <= concurrency <= hi), fallback)
    return ks


def at_slo(dep, ks, alpha, spread, slo, traffic, fit=FIT):
    """Both arms at the SLO (AtSlo), speculation at K = ks(concurrency) around per-token `alpha`."""
    base = search(dep, off, 0.0, 0.0, slo, traffic, fit)
    spec = search(dep, ks, alpha, spread, slo, traffic, fit)
    gain = (spec.best.request_throughput / base.best.request_throughput
            if base.best is not None and spec.best is not None else None)
    return AtSlo(slo=slo, percentile=SLO_PERCENTILE, gpus=dep.tp, alpha=alpha, baseline=base, speculative=spec,
                 gain=gain)


def search_slo(dep, plan, traffic, fit=FIT):
    """The plan's K by batch size at the traffic's SLO (at_slo): None without an SLO; an AtSlo that says why it is
    skipped where the simulation cannot run it (a tree or attention data parallelism: simulated_layout; answers past
    SLO_OUTPUT_LIMIT; no sequence fits)."""
    if not traffic.slo:
        return None
    skipped = ("a tree's rounds are measured, not simulated" if dep.topk > 1 else
               "attention data parallelism runs a scheduler on every rank, which the simulation does not"
               if not simulated_layout(dep) else
               f"answers of {dep.output_tokens:,} tokens take too long to simulate at every concurrency (the search "
               f"runs up to {SLO_OUTPUT_LIMIT:,}): run the --goodput benchmark at your concurrency instead"
               if dep.output_tokens > SLO_OUTPUT_LIMIT else
               "not one sequence fits beside the weights" if min(running_cap(dep, False), running_cap(dep, True)) < 1
               else None)
    if skipped:
        return AtSlo(slo=traffic.slo, percentile=SLO_PERCENTILE, gpus=dep.tp, alpha=plan.request_alpha,
                     skipped=skipped)
    return at_slo(dep, schedule_k(plan.schedule, plan.k), plan.request_alpha, plan.request_spread, traffic.slo,
                  traffic, fit)


