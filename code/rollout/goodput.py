"""Serving at an SLO: how much traffic each GPU serves with every percentile the SLO names within its bound, with
speculation off and at the plan's K, found by simulating `vllm bench serve` runs (serving.serve_run) at rising
concurrency. Its goodput is vLLM's (--goodput: serving.good_requests).
"""
from __future__ import annotations

from dataclasses import dataclass

from .costmodel import FIT, max_concurrency
from .releases import accepts
from .serving import (
    bench_result, GOODPUT_KEY, good_requests, running_cap, serve_run, simulated_layout, SLO_KEYS, Workload,
)

SLO_PERCENTILE = 99   # the percentile of each metric an SLO bounds: "P99 TPOT under 50 ms" (the plan's runs write p99)
LADDER = 4            # the search's concurrencies before it refines: 4, 16, 64, ... (a run each; 1 where 4 is past it)
REFINE_STEPS = 4      # bisections between the last concurrency within the SLO and the first past it
SLO_CONCURRENCY_LIMIT = 1024   # the most concurrent requests the search tries: ten prompts a slot past it take seconds
SLO_OUTPUT_LIMIT = 16_384   # answers longer than this are not searched: a run costs a step per token of its slowest
                            # slot, so ten answers a slot at each of ~15 concurrencies take seconds each past it


def slo_prompts(concurrency):
    """Prompts of one run of the search, and of the plan's --goodput command: ten per concurrent slot, at least 50
    (a P99 over fewer is the worst request or two)."""
    return max(50, 10 * concurrency)


def ms_text(ms):
    """A bound in ms as typed, without rounding it: 2000.0 -> "2000", 12.3456789 -> "12.3456789"."""
    return f"{ms:.15g}"


def slo_text(slo):
    """The SLO in words: "P99 TTFT at most 2000 ms, P99 TPOT at most 50 ms"."""
    return ", ".join(f"P{SLO_PERCENTILE} {key.upper()} at most {ms_text(ms)} ms" for key, ms in slo)


def goodput_key(dep):
    """The key the plan's benchmark client saves goodput under (vLLM before 0.9.2: with a colon)."""
    return GOODPUT_KEY if accepts(dep, "bench request_goodput key") else GOODPUT_KEY + ":"


def goodput_words(slo):
    """vllm bench serve's --goodput value for the SLO: "ttft:2000 tpot:50" (KEY:VALUE pairs in ms, space apart)."""
    return " ".join(f"{key}:{ms_text(ms)}" for key, ms in slo)


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
    key = (dep, k, alpha if k else 0.0, spread if k else 0.0, concurrency, slo, traffic.seed, traffic.output_spread,
           traffic.input_spread, fit)
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


def search(dep, ks, alpha, spread, slo, traffic, fit):
    """The arm's runs, K = ks(concurrency) at each (0: off): concurrency 4, 16, 64, ... (LADDER) up to the server's
    cap (past it requests only queue in the server) or SLO_CONCURRENCY_LIMIT until one is past the SLO (1 too where
    4 is past it), then REFINE_STEPS bisections between the last within it and that one."""
    speculative = ks is not off
    # the server's cap, and what fits in memory with the draft loaded, for both arms: every command of the plan stays
    # within it, so off and on are compared on the same slots (stage 0's server alone would fit a few more)
    cap = min(running_cap(dep, speculative), max_concurrency(dep))
    top = min(cap, SLO_CONCURRENCY_LIMIT)
    points, c = {}, min(LADDER, top)
    while True:
        points[c] = run_at(dep, ks(c), alpha, spread, c, slo, traffic, fit)
        if not points[c].within or c >= top:
            break
        c = min(LADDER * c, top)
    if not points[c].within and c == min(LADDER, top) and c > 1:   # past it at the first rung: one at a time?
        points[1] = run_at(dep, ks(1), alpha, spread, 1, slo, traffic, fit)
    within = [p.concurrency for p in points.values() if p.within]
    if within and not points[max(points)].within:
        low, high = max(within), max(points)
        for _ in range(REFINE_STEPS):
            if high - low <= 1:
                break
            middle = (low + high) // 2
            points[middle] = run_at(dep, ks(middle), alpha, spread, middle, slo, traffic, fit)
            low, high = (middle, high) if points[middle].within else (low, middle)
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
