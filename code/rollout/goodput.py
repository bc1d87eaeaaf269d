"""Serving at an SLO: the most traffic a replica serves with every percentile the SLO names within its bound, with
speculation off and on as the engine release runs it, found as `vllm bench serve --request-rate R --goodput ...`
would find it: runs of --num-prompts requests sent at gamma gaps of shape --burstiness (1: Poisson), each simulated
step by step (serving.serve_run), at rising rates. Traffic arrives as an open loop; a closed loop's first wave of
prompts queues at once, which production traffic never sends.

A rate is served when every P99 the SLO names is within its bound and the server keeps up: the queue does not grow
within the run (growing), and the requests the rate keeps in the server (Little's law: the rate times the mean E2EL)
fit its running cap, as they must for a longer run not to queue (a run whose last request leaves before its first
ones end shows no queue yet). Past the capacity the queue grows with every request sent, so that a longer run would
miss any bound; below it, the requests sent last see the steady state the middle ones do. Its goodput is vLLM's (--goodput:
serving.good_requests).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace


from .acceptance import round_moments
from .costmodel import FIT
from .deployment import max_concurrency, running_cap, step_budget
from .releases import accepts, offers
from .schedule import KTable
from .simulation import NORMAL
from .records import percentile
from .serving import chunk_cost, good_requests, serve_run, step_costs
from .workload import SLO_KEYS, SLO_PERCENTILE, traffic_workload

RATE_RESOLUTION = 0.05   # the search settles a capacity to 5%: a run past the SLO at most 5% above the best within
                         # (a rate 10% above the best is past it, one 5% below within, where P99s rise with the rate)
RATE_DIGITS = 3          # rates tried are rounded to 3 significant digits: what a user types into --request-rate
ROUNDING = 1.01          # a bracket within the resolution but for that rounding (1.05 between 7.93 and 8.33) ends
SLOW_Z = NORMAL.inv_cdf(SLO_PERCENTILE / 100)   # the slowest 1% of requests accept this many s.d.s below the mean
SEARCH_RUNS = 10         # runs an arm makes at most
MIN_RATE = 1e-3          # requests/s: the least rate the search tries
GROWTH = 2.0             # the last tenth's median wait for admission past this many times the middle tenth's: a queue
WAIT_FLOOR = 0.05        # s: and past this, a step's wait (a server whose requests reach it at once waits for none)
SLO_OUTPUT_LIMIT = 16_384   # answers longer than this are not searched: each run costs a step per round of its
                            # longest answer, and a search a dozen runs


@dataclass(frozen=True)
class LoadPoint:
    """One simulated open-loop run of the search at one request rate."""
    rate: float              #: --request-rate, requests/s sent
    k: int                   #: the K most of its decode steps ran (0: speculation off)
    prompts: int             #: --num-prompts
    tail_ms: dict            #: {"ttft", "tpot", "e2el": its P99 in ms}
    request_throughput: float   #: requests/s the replica completed (vLLM's: the drain at the run's end included)
    output_throughput: float    #: output tokens/s
    request_goodput: float   #: requests/s that met every bound (vLLM's request_goodput)
    concurrency: float       #: requests in the server on average: the rate x the mean E2EL (Little's law)
    growing: bool            #: whether its queue grows (the module's note)
    within: bool             #: whether every P99 the SLO names is within its bound and the queue does not grow
    past: tuple = ()         #: the keys whose P99 is past its bound, and "queue" where it grows


@dataclass(frozen=True)
class Arm:
    """Speculation off or on: the runs the search simulated, by rate, and the best within the SLO."""
    speculative: bool
    points: tuple            #: LoadPoint, by rate
    best: LoadPoint = None   #: the highest rate within the SLO (None: not even the least rate tried)
    cap: int = 0             #: the server's running cap (running_cap)
    stopped_by: tuple = ()   #: the keys past their bound at the least rate past the best: what stops it
    served: KTable = None    #: what the speculative server ran: a K-by-batch table, or one K (no rows); None: off


@dataclass(frozen=True)
class AtSlo:
    """Both arms at the SLO, per GPU of the replica."""
    slo: tuple               #: ((key, ms), ...) in SLO_KEYS' order
    percentile: int          #: SLO_PERCENTILE
    gpus: int                #: GPUs of one replica (rates are divided by it)
    alpha: float             #: per-token alpha the speculative runs centre on
    prompts: int = None      #: --num-prompts of each run
    burstiness: float = None   #: --burstiness of each run
    baseline: Arm = None     #: None where the search is skipped
    speculative: Arm = None
    gain: float = None       #: speculative over baseline capacity (None: either has none); decide corrects it as the
                             #: verdict's speedup (trust.corrected)
    gain_interval: list = None   #: its [low, high] at the trust level (decide)
    modelled_gain: float = None   #: the simulated ratio, where the class's known error corrected gain (None: not)
    cap_from: str = None     #: where the server's running cap comes from, where the plan's command sets it (else None)
    skipped: str = None      #: why the SLO was not searched (search_slo), in words; None: it was


RUN_MEMO = {}   # run_at's inputs -> its LoadPoint: a process that plans the same deployment again (main.main called
                # twice, the tests) simulates it once


def run_at(dep, ks, alpha, spread, rate, slo, traffic, fit, *, plan_batch=None):
    """One open-loop run at `rate`: its LoadPoint, simulated once for each set of inputs (RUN_MEMO; without
    speculation alpha and its spread draw nothing in serve_run, so they are not part of the key)."""
    if isinstance(ks, KTable) and ks.ks() == (0,):   # a server that never drafts runs as one without a draft
        ks = 0
    key = (dep.physics, ks, alpha if ks else 0.0, spread if ks else 0.0, rate, slo, traffic, fit, plan_batch)
    if key not in RUN_MEMO:
        if len(RUN_MEMO) > 4096:
            RUN_MEMO.clear()
        RUN_MEMO[key] = simulated_point(dep, ks, alpha, spread, rate, slo, traffic, fit, plan_batch=plan_batch)
    return RUN_MEMO[key]


def growing(run):
    """Whether a run's queue grows: its last tenth of requests (in the order sent) waits in the server's queue (from
    its send to its admission: the hop to the scheduler, the step it arrives in and any queue) more than GROWTH times
    as long as its middle tenth (40-50% in, past the ramp-up), at the median. Without a queue a request waits out a
    step or two, and a step slows by less than half while the batch fills; a growing queue's wait is, by the end,
    all it has gathered, past WAIT_FLOOR. (False for runs of fewer than 10 requests.) A batch that would outgrow the
    server's cap in a longer run is the Little's-law test's (simulated_point)."""
    tenth = len(run.start) // 10
    if tenth < 1:
        return False
    wait = [a - s for s, a in zip(run.start, run.admitted)]
    last, middle = len(wait) - tenth, 4 * tenth
    late = statistics.median(wait[last:last + tenth])
    return late > GROWTH * statistics.median(wait[middle:middle + tenth]) and late > WAIT_FLOOR


def others_of(run, ranks):
    """(chance, tokens) of one rank's run (serving.ServedRun) for its second run (serving.simulate_run's others):
    the chance that one of the other ranks prefills in a step, 1 - (1 - p)^(ranks - 1) with p this rank's share of
    steps that prefilled, and their mean chunk; None where none prefilled."""
    if not run.prefill_steps or ranks < 2:
        return None
    share = run.prefill_steps / run.steps
    return round(1 - (1 - share) ** (ranks - 1), 3), round(run.prefilled / run.prefill_steps)


def dp_ranks(dep):
    """The schedulers a replica runs: one, or under attention data parallelism one a rank (its TP GPUs)."""
    return dep.tp if dep.dp_attention else 1


def run_tails(run):
    """What the search reads of a run, as serving.bench_result computes it (the same numbers, without the keys the
    search does not read): the P99 of each SLO key, the mean E2EL (ms), duration, and request and output
    throughputs."""
    duration = max(run.end)
    per = {"ttft": [f - s for s, f in zip(run.start, run.first)], "e2el": [e - s for s, e in zip(run.start, run.end)],
           "tpot": [(e - f) / (n - 1) for f, e, n in zip(run.first, run.end, run.output_tokens) if n > 1]}
    out = {f"p{SLO_PERCENTILE}_{key}_ms": percentile(sorted(values) or [0.0], SLO_PERCENTILE / 100) * 1e3
           for key, values in per.items()}
    return dict(out, mean_e2el_ms=math.fsum(per["e2el"]) / len(per["e2el"]) * 1e3, duration=duration,
                request_throughput=len(run.start) / duration, output_throughput=sum(run.output_tokens) / duration)


def simulated_point(dep, ks, alpha, spread, rate, slo, traffic, fit, *, plan_batch=None):
    """One open-loop run at `rate`, simulated: the traffic's workload (traffic_workload) sent at that rate. Under
    attention data parallelism each rank schedules its own requests: one rank is simulated at its share of the rate
    (the router spreads requests over the ranks), its steps priced with every rank as busy (serving.simulate_run's
    ranks) and, on a second run, paced by the others' prefills as often as the first run prefilled (others_of), for
    as many requests as the run sends, whose percentiles are the replica's (its ranks alike) and whose throughputs,
    times the ranks, the replica's (bench/dp_attention.py checks it on InferenceX's 58 DP-attention runs)."""
    ranks = dp_ranks(dep)
    work = traffic_workload(dep, traffic, rate=rate / ranks)
    run = serve_run(dep, work, ks, alpha, spread, traffic.seed, fit, plan_batch, ranks=ranks)
    if ranks > 1:   # the ranks step together: a step waits for another's prefill, as often as the first run says
        run = serve_run(dep, work, ks, alpha, spread, traffic.seed, fit, plan_batch, ranks=ranks,
                        others=others_of(run, ranks))
    result = run_tails(run)
    tail = {key: result[f"p{SLO_PERCENTILE}_{key}_ms"] for key in SLO_KEYS}
    held = rate * result["mean_e2el_ms"] / 1e3   # Little's law: the requests the rate keeps in the server
    # A rate that keeps more requests in the server than its cap queues them in any longer run, though a run too short
    # to reach that state (its last request sent before the first ones end) shows no queue yet. (Short of the cap the
    # requests' spread reaches it now and then: the run's own queue and P99s say whether that costs the SLO; the
    # steering takes the cap less that spread, holds, as where a queue starts.)
    grows = growing(run) or held > ranks * run.cap
    past = tuple(key for key, ms in slo if tail[key] > ms) + (("queue",) if grows else ())
    return LoadPoint(rate=rate, k=run.k, prompts=work.num_prompts, tail_ms=tail,
                     request_throughput=ranks * result["request_throughput"],
                     output_throughput=ranks * result["output_throughput"],
                     request_goodput=ranks * good_requests(run, dict(slo)) / result["duration"],
                     concurrency=held, growing=grows, within=not past, past=past)


def estimated_tails(dep, k, alpha, spread, rate, traffic, fit, *, plan_batch=None, held_scale=1.0):
    """{"ttft", "tpot", "e2el": ms} and the concurrency an open-loop run at `rate` shows, by closed forms: what the
    search starts from and steers by (search), never what it reports. The requests in the server are the rate times
    their E2EL (Little's law, solved by iteration); each step carries their decodes and the prompts of the requests
    that arrive meanwhile; the P99 request accepts at alpha 2.33 s.d.s below the mean (`spread`) and its prompt is
    the P99 prompt. Past what the server can hold, every tail is infinite."""
    tau = round_moments(alpha, k)[0] if k else 1.0
    slow = round_moments(max(0.0, alpha - SLOW_Z * spread), k)[0] if k else 1.0
    answer, prompt = dep.output_tokens, dep.input_tokens
    longest = prompt * math.exp(SLOW_Z * traffic.input_spread - traffic.input_spread ** 2 / 2)
    ranks = dp_ranks(dep)   # each rank its own budget and a share of the prompts
    budget, cap = step_budget(dep) * ranks, max(1, running_cap(dep, bool(k), plan_batch))
    c, step, ttft, costs = 1.0, 0.0, 0.0, step_costs(dep, k, fit)   # the simulation's own table of step costs
    for _ in range(30):   # to 1%: the concurrency its own step implies
        share = rate * prompt * step / 1e3   # prompt tokens arriving in one step
        step = chunk_cost(costs, dep, max(1, round(c)), k, round(min(share, budget) / ranks), fit)
        if not dep.engine.mixes_prefill:   # prompts prefilled alone: the decodes wait out their share of prefill steps
            step += share / budget * chunk_cost(costs, dep, 0, k, round(min(budget, max(1.0, share))), fit)
        ttft = fit.request_ms + math.ceil(longest / budget) * step
        settled = rate * (ttft + (answer - 1) * step / tau) / 1e3
        # More than the server holds (holds) or prefills in a step.
        if settled * held_scale > holds(cap) or rate * prompt * step / 1e3 > budget:
            return {"ttft": math.inf, "tpot": math.inf, "e2el": math.inf}, settled
        if abs(settled - c) <= 0.01 * c:
            break
        c = (c + settled) / 2
    return {"ttft": ttft, "tpot": step / slow, "e2el": ttft + (answer - 1) * step / tau}, settled


def rounded(rate):
    """A rate at RATE_DIGITS significant digits."""
    return float(f"{rate:.{RATE_DIGITS}g}")


def between(low, high, slo, held=math.inf):
    """The rate between two runs (LoadPoint) where every tail, linear in the rate between them, is within its bound,
    and the requests in the server (LoadPoint.concurrency) within `held`: the first run's within and the second's
    past (a growing queue alone, short of `held`: the middle)."""
    reaches = [(ms - low.tail_ms[key]) / (high.tail_ms[key] - low.tail_ms[key])
               for key, ms in slo if high.tail_ms[key] > ms and high.tail_ms[key] > low.tail_ms[key]]
    if high.concurrency > held > low.concurrency:
        reaches.append((held - low.concurrency) / (high.concurrency - low.concurrency))
    return low.rate + min(reaches, default=0.5) * (high.rate - low.rate)


def holds(cap):
    """The requests a server of `cap` slots holds on average before it turns some away: about Poisson around their
    mean, the cap less two s.d.s."""
    return cap - 2 * math.sqrt(cap)


def bracket(run, start, resolution, runs, guide, slo, held=math.inf):
    """{rate: LoadPoint} of runs (run(rate) -> LoadPoint) from `start` until one within the SLO and one past it at most
    `resolution` above it bracket the edge (or `runs` runs, or the least rate past it); held: the requests the
    server holds before a queue forms (holds).

    One side only: below the edge, where guide(point) -> rate puts it from the best run (the closed forms, tails and
    requests in the server, scaled to it), at least a step beyond it: 1 + resolution, squared after each run on the same side (1.05, 1.10, 1.22, 1.48),
    so that a guide that keeps falling short cannot creep; past it, a step below the least run, for a run past the
    edge by a queue says little of how far (its TTFT leaps at the cap). Bracketed: where the two runs' tails, linear
    between them, meet the bounds; while the bracket is wide, kept within its middle half (in log), so that it narrows
    by a quarter at least, or after two runs on the same side of it (the tails bend, as a queue's TTFT does at the
    cap) its middle; once narrow, a step from the end the estimate lies nearer, which ends the search if it is right."""
    points, side, rate = {}, 0, rounded(start)
    while len(points) < runs:
        points[rate] = point = run(rate)
        best = max((r for r, p in points.items() if p.within), default=0.0)
        high = min((r for r, p in points.items() if not p.within and r > best), default=math.inf)
        if high <= best * (1 + resolution) * ROUNDING or (not best and high <= MIN_RATE):
            break
        same = 1 if point.within else -1
        side = side + same if side * same > 0 else same
        step = (1 + resolution) ** (2 ** (abs(side) - 1))
        if best and math.isfinite(high):
            guess = between(points[best], points[high], slo, held)
            span, near = math.log(high / best), math.log(1 + resolution)
            if span > 4 * near:   # wide: inside the middle half, or its middle where the tails bend
                guess = (min(max(guess, best * math.exp(span / 4)), best * math.exp(3 * span / 4))
                         if abs(side) < 2 else math.sqrt(best * high))
            else:   # narrow: a run a step from either end ends the search on the side the estimate expects
                low_end, high_end = best * (1 + resolution), high / (1 + resolution)
                guess = (high_end if guess >= high_end else low_end if guess <= low_end
                         else guess) if low_end < high_end else (high_end if guess > math.sqrt(best * high)
                                                                  else low_end)
        else:
            guess = min(max(guide(points[best]), best * step), best * 4) if best else max(high / step, MIN_RATE)
        rate = rounded(guess)
        if rate in points:   # rounding lands on a rate run: one digit finer
            rate = float(f"{guess:.{RATE_DIGITS + 2}g}")
            if rate in points:
                break
    return points


def search(dep, ks, alpha, spread, slo, traffic, fit, plan_batch=None):
    """The arm's runs, the server at `ks` (a KTable, or 0: off): the highest rate within the SLO with a run of
    --num-prompts requests past it at most RATE_RESOLUTION above (or none when the least rate tried is past it).

    Each run is a simulated benchmark (run_at); the closed forms (estimated_tails) only choose where to run (bracket):
    the first run is where they put the SLO's edge; while every run is on one side of it, each bound's estimate is
    scaled by what the nearest run simulated against what they said there, and the next run is where the scaled
    estimates put the edge."""
    speculative = isinstance(ks, KTable)
    table = ks if isinstance(ks, KTable) else KTable((), 0)
    cap = running_cap(dep, table.ks() != (0,), plan_batch)   # a server that never drafts holds no draft

    def estimate(rate, held_scale=1.0):
        """(tails, requests in the server) by the closed forms, those requests scaled by held_scale."""
        k = table.at(1)
        for _ in range(2 if speculative else 1):   # the table's K at the concurrency that K runs at
            tails, c = estimated_tails(dep, k, alpha, spread if k else 0.0, rate, traffic, fit, plan_batch=plan_batch,
                                       held_scale=held_scale)
            k = table.at(max(1, round(c))) if math.isfinite(c) else k
        return tails, c

    def guide(near):
        estimated, held = estimate(near.rate)
        scale = {key: near.tail_ms[key] / estimated[key] if 0 < estimated[key] < math.inf else 1.0 for key, _ in slo}
        held_scale = near.concurrency / held if 0 < held < math.inf and near.concurrency else 1.0
        return highest_within(lambda rate: estimate(rate, held_scale)[0], slo, scale)
    points = bracket(lambda rate: run_at(dep, ks, alpha, spread, rate, slo, traffic, fit, plan_batch=plan_batch),
                     highest_within(lambda rate: estimate(rate)[0], slo, {key: 1.0 for key, _ in slo}),
                     RATE_RESOLUTION, SEARCH_RUNS, guide, slo, holds(cap))
    ordered = tuple(points[r] for r in sorted(points))
    best = max((p for p in ordered if p.within), key=lambda p: p.rate, default=None)
    after = [p for p in ordered if best is None or p.rate > best.rate]
    return Arm(speculative=speculative, points=ordered, best=best, cap=cap, stopped_by=after[0].past if after else (),
               served=table if speculative else None)


def runs_table(dep):
    """Whether the server runs the plan's K-by-batch table step by step: vLLM from 0.24
    (num_speculative_tokens_per_batch_size, PR #32374; commands.vllm_k_by_batch writes it), unless it runs attention
    data parallel, where 0.26 and later ignore the table (vllm/config/vllm.py). SGLang's --speculative-adaptive moves
    its step count with the acceptance it measures and TensorRT-LLM's draft_len_schedule is pasted by hand (the plan
    says how): neither is simulated, and such a server runs one K (speculative_arm)."""
    return offers(dep, "num_speculative_tokens_per_batch_size") and not (
        dep.dp_attention and accepts(dep, "table off under data parallelism"))


def served_k(dep, schedule, k):
    """What the speculative server runs without an SLO search to say which K: the table where the release runs it
    (runs_table), else the plan's one K."""
    return KTable.of(schedule, k) if runs_table(dep) else KTable((), k)


def speculative_arm(dep, table, alpha, spread, slo, traffic, fit, plan_batch=None):
    """The speculative arm (search) as the engine runs the plan's table (a KTable): the table itself where it runs
    one (runs_table); else one K, the one an operator sets for the load: the table's K at the concurrency the closed
    forms put at their capacity, then, where the simulated capacity holds a concurrency the table gives another K,
    that K's search too, the better of the two kept."""
    if runs_table(dep):
        return search(dep, table, alpha, spread, slo, traffic, fit, plan_batch)
    def estimate(rate, k):
        return estimated_tails(dep, k, alpha, spread if k else 0.0, rate, traffic, fit, plan_batch=plan_batch)
    k = table.at(1)
    rate = highest_within(lambda r: estimate(r, k)[0], slo, {key: 1.0 for key, _ in slo})
    c = estimate(rate, k)[1]
    k = table.at(max(1, min(round(c), running_cap(dep, True, plan_batch)))) if math.isfinite(c) else k
    arm = search(dep, KTable((), k), alpha, spread, slo, traffic, fit, plan_batch)
    if arm.best is not None and table.at(max(1, round(arm.best.concurrency))) != k:
        other = search(dep, KTable((), table.at(max(1, round(arm.best.concurrency)))), alpha, spread, slo, traffic,
                       fit, plan_batch)
        if other.best is not None and other.best.rate > arm.best.rate:
            arm = other
    return arm


def highest_within(estimate, slo, scale):
    """The highest rate whose estimated tails (estimate(rate) -> {key: ms}), each times scale[key], are within every
    bound of `slo`: doubling, then bisection in log (the estimates rise with the rate)."""
    def fits(rate):
        tails = estimate(rate)
        return all(tails[key] * scale[key] <= ms for key, ms in slo)
    low, high = MIN_RATE, MIN_RATE
    if not fits(low):
        return low
    while fits(high) and high < 1e6:
        low, high = high, high * 4
    while high > low * 1.01:   # to 1%: the search's runs, not this, settle the edge
        middle = math.sqrt(low * high)
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def at_slo(dep, table, alpha, spread, slo, traffic, fit=FIT, plan_batch=None):
    """Both arms at the SLO (AtSlo), speculation as the engine runs the K-by-batch `table` (speculative_arm) around
    per-token `alpha`."""
    base = search(dep, 0, 0.0, 0.0, slo, traffic, fit, plan_batch)
    spec = speculative_arm(dep, table, alpha, spread, slo, traffic, fit, plan_batch)
    gain = spec.best.rate / base.best.rate if base.best is not None and spec.best is not None else None
    return AtSlo(slo=slo, percentile=SLO_PERCENTILE, gpus=dep.tp, alpha=alpha, prompts=traffic.num_prompts,
                 burstiness=traffic.burstiness, baseline=base, speculative=spec, gain=gain)


def skip_reason(dep):
    """Why the SLO cannot be searched for this deployment, in words, or None."""
    return ("a tree's rounds are measured, not simulated" if dep.topk > 1 else
            f"answers of {dep.output_tokens:,} tokens take too long to simulate at every rate (the search "
            f"runs up to {SLO_OUTPUT_LIMIT:,}): run the --goodput benchmark at your rate instead"
            if dep.output_tokens > SLO_OUTPUT_LIMIT else
            "not one sequence fits beside the weights" if min(running_cap(dep, False), running_cap(dep, True)) < 1
            or max_concurrency(dep) < 1 else None)


def search_slo(dep, plan, traffic, fit=FIT):
    """The traffic's SLO searched (at_slo), speculation as the engine runs the plan: None without an
    SLO; an AtSlo that says why it is skipped where the simulation cannot run it (skip_reason)."""
    if not traffic.slo:
        return None
    skipped = skip_reason(dep)
    if skipped:
        return AtSlo(slo=traffic.slo, percentile=SLO_PERCENTILE, gpus=dep.tp, alpha=plan.request_alpha,
                     prompts=traffic.num_prompts, burstiness=traffic.burstiness, skipped=skipped)
    at = at_slo(dep, KTable.of(plan.schedule, plan.k), plan.request_alpha, plan.request_spread, traffic.slo,
                traffic, fit, plan.shown_batch)
    return replace(at, cap_from=f"the plan's batch B = {plan.shown_batch}, its server's command sets it; "
                                "--target-concurrency moves it" if dep.engine.plan_sets_running else None)
