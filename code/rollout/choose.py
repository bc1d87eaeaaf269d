"""Choosing the deployment (--choose): the cheapest way to serve a traffic within an SLO, speculation off or on.

Every candidate (a GPU, its TP and expert layout, an engine, a draft or none; cli.choose_candidates builds and checks
them) is searched as the plan's SLO search searches one (goodput.search: `vllm bench serve --request-rate` runs of
the traffic's workload at rising rates): its capacity, the most requests a second a replica serves within every bound
of the SLO with no growing queue. From it, the replicas the traffic needs (its rate over the capacity), the GPUs, the
cost an hour at the catalog's (or the user's) GPU-hour prices, and the cost per million output tokens; each with its
80% range, the replica's capacity taken as uncertain as the model's held-out error for its class (trust.trust_in: a
mean TPOT's for speculation off, a speculative one's, widened by an assumed acceptance, for on).

A replica is TP GPUs of one node: candidates past a node (pipeline stages) and disaggregated prefill are not
searched; attention data parallel candidates are searched as the plan's own SLO search runs them, one rank for all
(goodput.simulated_point).
"""
from __future__ import annotations

import math
import multiprocessing
import os
import signal
from dataclasses import dataclass, field, replace

from .analysis import plan_input
from .bestk import best_on_k, k_schedule
from .costmodel import FIT
from .deployment import draft_kind, max_concurrency
from .goodput import run_at, search, skip_reason, speculative_arm
from .schedule import KTable
from .priors import plan_acceptance
from .commands import draft_head
from .records import NOT_IN_JSON
from .trust import interval, trust_in, widened

CHOOSE_RUNS_LIMIT = 400  # candidate searches a --choose run simulates at most (cli refuses more: each is a few runs)


@dataclass(frozen=True)
class Demand:
    """The traffic to serve (--request-rate, or --target-concurrency)."""
    request_rate: float = None   #: requests/s over all replicas (None: given as a concurrency)
    concurrency: int = None      #: concurrent requests over all replicas (None: given as a rate)


@dataclass(frozen=True)
class Candidate:
    """One deployment, speculation off or on, at the SLO (evaluate)."""
    gpu: str
    tp: int                  #: GPUs of one replica
    ep: int                  #: expert-parallel GPUs (1: experts split by TP)
    dp_attention: bool
    engine: str              #: engine key
    release: str             #: the engine release its era is, as printed
    weights_dtype: str
    draft: str               #: "off", or the draft kind ("eagle3", "eagle", "mtp", "ngram")
    draft_model: str         #: the head's Hugging Face id (None: off, MTP, n-gram)
    alpha: float             #: per-token alpha the speculative arm assumes (None: off)
    request_alpha: float     #: the mean per-token alpha of its simulated requests (None: off)
    request_spread: float    #: their s.d. (None: off)
    k_schedule: list         #: [first B, last B, K] rows the server runs (None: off)
    capacity: float          #: requests/s one replica serves within the SLO (its open-loop rate)
    concurrency: float       #: requests in a replica at that rate (Little's law: the rate x the mean E2EL)
    k: int                   #: the K most steps of its run there ran (0: off)
    tails_ms: dict           #: that run's P99 of each key the SLO names, ms
    per_gpu: float           #: output tokens/s a GPU serves at its capacity: the capacity x the mean answer / TP
    per_gpu_interval: list   #: its 80% range
    price: float             #: USD a GPU-hour
    replicas: int            #: replicas the traffic needs
    replicas_interval: list  #: [fewest, most] at the ends of the throughput's range
    gpus: int                #: replicas x tp
    cost_per_hour: float     #: USD an hour for the traffic: gpus x price
    cost_per_hour_interval: list
    tokens_per_hour: float   #: output tokens an hour the traffic asks of them
    cost_per_million: float  #: USD per million output tokens served: cost_per_hour / tokens_per_hour x 1e6
    cost_per_million_interval: list
    dep: object = field(default=None, metadata=NOT_IN_JSON)   #: the Deployment itself
    served: object = None    #: what its server ran: a KTable (rows, and the K past them; no rows: one K), 0: off


@dataclass(frozen=True)
class Unserved:
    """A candidate with no replica that meets the SLO, or that cannot run: what it is and why."""
    gpu: str
    tp: int
    ep: int
    dp_attention: bool
    engine: str
    draft: str
    why: str
    searched: bool = True    #: False: left out by the bound on cost, never simulated (choose)


@dataclass(frozen=True)
class Choice:
    """The search across deployments (choose)."""
    demand: Demand
    slo: tuple               #: ((key, ms), ...)
    prices: tuple            #: (gpu, USD a GPU-hour, source, date) of every GPU searched
    candidates: tuple        #: Candidate, cheapest first (cost_per_hour, then cost_per_million, then fewer GPUs)
    unserved: tuple          #: Unserved
    chosen: Candidate = None    #: the cheapest (None: no candidate serves the traffic)
    cheapest_off: Candidate = None   #: the cheapest with speculation off
    cheapest_on: Candidate = None    #: the cheapest with speculation on
    saving: float = None     #: 1 - the chosen deployment's cost with speculation over its cost without (None: either
                             #: arm misses the SLO there, or the chosen runs none)
    runner_up: Candidate = None   #: the cheapest candidate on another deployment than the chosen
    too_close: bool = None   #: whether the runner-up's cost range overlaps the chosen's: the model cannot rank them
    at_traffic: dict = None  #: where off and on need as many replicas at the chosen deployment, what speculation buys
                             #: there: {"rate": the traffic's rate a replica, "off", "on": {key: P99 ms} at it}


def replicas_for(demand, capacity, concurrency):
    """Replicas a traffic needs of one that serves `capacity` requests/s within the SLO, `concurrency` requests in it.

    >>> replicas_for(Demand(request_rate=20.0), 8.0, 64), replicas_for(Demand(concurrency=100), 8.0, 64)
    (3, 2)
    """
    if demand.request_rate is not None:
        return max(1, math.ceil(demand.request_rate / capacity - 1e-9))
    return max(1, math.ceil(demand.concurrency / concurrency - 1e-9))


def demand_tokens_per_hour(demand, output_tokens, best):
    """Output tokens an hour the traffic asks for: its rate's requests at the mean answer (every simulation's answers
    average it: workload.traffic_workload), one number for every candidate; a concurrency's, as many replicas' worth
    of the run at the SLO (`best`, a LoadPoint) as the concurrency is of the run's."""
    if demand.request_rate is not None:
        return demand.request_rate * output_tokens * 3600.0
    return demand.concurrency / best.concurrency * best.rate * output_tokens * 3600.0


def priced(demand, best, dep, price, sd):
    """(replicas, [fewest, most], gpus, cost an hour, its range, tokens an hour, cost per million, its range) of a
    replica whose run at the SLO is `best`, its capacity uncertain by s.d. `sd` in log."""
    replicas = replicas_for(demand, best.rate, best.concurrency)
    low, high = interval(best.rate, sd)
    most = replicas_for(demand, low, best.concurrency * low / best.rate)
    fewest = replicas_for(demand, high, best.concurrency * high / best.rate)
    tokens = demand_tokens_per_hour(demand, dep.output_tokens, best)
    tp = dep.tp
    hourly = replicas * tp * price
    return (replicas, [fewest, most], replicas * tp, hourly, [fewest * tp * price, most * tp * price], tokens,
            hourly / tokens * 1e6, [fewest * tp * price / tokens * 1e6, most * tp * price / tokens * 1e6])


def arm_of(dep, speculative, evidence, traffic, settings, grid, fit):
    """(Arm, alpha, (requests' alpha, spread), schedule, s.d. of the capacity's log, what the server ran) of a
    deployment at the traffic's SLO: speculation off, or on as the engine runs the plan's K by batch size
    (goodput.speculative_arm of bestk.k_schedule) on the acceptance the plan assumes (priors.plan_acceptance of the
    traffic's mix for this head, else the expected alpha)."""
    trust = trust_in(dep)
    if not speculative:
        return search(dep, 0, 0.0, 0.0, traffic.slo, traffic, fit), None, (None, None), None, trust.tpot_sd, 0
    prior = plan_acceptance(evidence.mix, draft_kind(dep.draft), draft_head(dep)[0], dep.shape.get("hf"),
                            dep.shape.get("family"), traffic.alpha_spread, dep.temperature)
    if prior is not None and evidence.expected_alpha is None and prior.acceptance_sd:
        trust = widened(trust, prior.acceptance_sd)
    inputs = plan_input(None, grid, traffic.alpha_spread, evidence.expected_alpha or settings.expected_fallback,
                        prior if evidence.expected_alpha is None else None)
    schedule = k_schedule(dep, inputs.acceptance, fit)
    fallback = best_on_k(dep, inputs.acceptance, max(1, max_concurrency(dep)), fit)[0]
    alpha, spread = inputs.requests
    arm = speculative_arm(dep, KTable.of(schedule, fallback), alpha, spread, traffic.slo, traffic, fit)
    return arm, inputs.alpha, (alpha, spread), schedule, trust.spec_tpot_sd, arm.served


def unserved(dep, speculative, why, searched=True):
    """An Unserved of a deployment, speculation off or on."""
    return Unserved(gpu=dep.gpu, tp=dep.tp, ep=dep.ep, dp_attention=dep.dp_attention, engine=dep.engine.key,
                    draft=draft_kind(dep.draft) if speculative else "off", why=why, searched=searched)


def evaluate(dep, speculative, demand, price, *, evidence, traffic, settings, grid, release, fit=FIT):
    """A Candidate of one deployment with speculation off or on, or an Unserved where no replica meets the SLO, the
    plan's SLO search cannot run it (goodput.skip_reason), or its server runs K 0 at that load (the off row)."""
    skipped = skip_reason(dep)
    if skipped:
        return unserved(dep, speculative, f"not ranked: {skipped}")
    arm, alpha, requests, schedule, sd, ks = arm_of(dep, speculative, evidence, traffic, settings, grid, fit)
    if arm.best is None:
        past = ", ".join(f"P99 {key.upper()}" if key != "queue" else "a growing queue"
                         for key in arm.points[0].past) if arm.points else "every bound"
        return unserved(dep, speculative, f"even {arm.points[0].rate:g} requests/s is past the SLO ({past})"
                        if arm.points else "past the SLO at every rate")
    best = arm.best
    if speculative and not best.k:
        return unserved(dep, speculative, "its server runs K 0 at its capacity: the off candidate's row")
    replicas, replica_range, gpus, hourly, hourly_range, tokens, per_million, per_million_range = priced(
        demand, best, dep, price, sd)
    per_gpu = best.rate * dep.output_tokens / dep.tp
    return Candidate(gpu=dep.gpu, tp=dep.tp, ep=dep.ep, dp_attention=dep.dp_attention, engine=dep.engine.key,
                     release=release, weights_dtype=dep.weights_dtype, draft=draft_kind(dep.draft) if speculative
                     else "off", draft_model=draft_head(dep)[0] if speculative else None, alpha=alpha,
                     request_alpha=requests[0], request_spread=requests[1], k_schedule=schedule,
                     capacity=best.rate, concurrency=best.concurrency, k=best.k, tails_ms=dict(best.tail_ms),
                     per_gpu=per_gpu, per_gpu_interval=interval(per_gpu, sd),
                     price=price, replicas=replicas, replicas_interval=replica_range, gpus=gpus, cost_per_hour=hourly,
                     cost_per_hour_interval=hourly_range, tokens_per_hour=tokens, cost_per_million=per_million,
                     cost_per_million_interval=per_million_range, dep=dep, served=ks)


ROUND = 16          # candidates searched between two moves of the bound (choose)
PARALLEL_FROM = 8   # candidates from which the searches run on every core (CHOOSE_WORKERS at most), in forked workers
CHOOSE_WORKERS = 4
JOBS = []           # the candidates being searched, read by index in the forked workers (a Deployment is not pickled)


def evaluate_job(index):
    """evaluate() of JOBS[index], without its Deployment (choose puts it back): what a worker sends back."""
    (dep, speculative, release), demand, price, evidence, traffic, settings, grid, fit = JOBS[index]
    result = evaluate(dep, speculative, demand, price, evidence=evidence, traffic=traffic, settings=settings, grid=grid,
                      release=release, fit=fit)
    return replace(result, dep=None) if isinstance(result, Candidate) else result


def quiet_worker():
    """A worker leaves a stop signal to the run, which ends the pool (writes.py: nothing is written)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C reaches the group: the run ends the pool, by SIGTERM
    for name in ("SIGTERM", "SIGHUP", "SIGQUIT"):   # left at their defaults: pool.terminate() ends a worker so
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)


def evaluated(jobs):
    """evaluate() of each job, in order: on every core (forked workers, each search a pure function of its inputs, so
    the results are those of one process) when there are PARALLEL_FROM jobs or more and the platform forks, else
    here; a worker process (a test runner's pool) cannot start workers of its own, so it runs them here too."""
    JOBS[:] = jobs
    try:
        cores = min(os.cpu_count() or 1, CHOOSE_WORKERS)
        if (len(jobs) < PARALLEL_FROM or cores < 2 or multiprocessing.current_process().daemon
                or "fork" not in multiprocessing.get_all_start_methods()):
            return [evaluate_job(i) for i in range(len(jobs))]
        pool = multiprocessing.get_context("fork").Pool(cores, initializer=quiet_worker)
        try:
            results = pool.map(evaluate_job, range(len(jobs)), chunksize=1)
            pool.close()   # the workers end, and the pool's threads with them: a later fork copies no lock they hold
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()
        return results
    finally:
        JOBS.clear()


def layout(c):
    """A candidate's deployment without its draft: what speculation off and on share."""
    return (c.gpu, c.tp, c.ep, c.dp_attention, c.engine)


def rank_key(c):
    """Cheapest first: the cost an hour for the traffic; on a tie (as many GPUs of one price) the dear end of its range
    (the fewer replicas it may need past the prediction), then the most traffic a GPU serves (the most headroom), then
    speculation off before on (the simpler server), then by name for a stable order."""
    return (round(c.cost_per_hour, 6), round(c.cost_per_hour_interval[1], 6), -round(c.per_gpu, 6), c.draft != "off",
            c.gpu, c.tp, c.ep, c.dp_attention, c.engine, c.draft)


def choose(options, demand, slo, prices, *, evidence, traffic, settings, grid, fit=FIT):
    """The Choice over `options` ((deployment, speculative, release text) for every candidate cli built; a
    deployment that cannot run is an Unserved already): each evaluated, ranked, the verdict's comparisons made."""
    unserved_list = [option for option in options if isinstance(option, Unserved)]
    jobs = [(option, demand, prices[option[0].gpu][0], evidence, traffic, settings, grid, fit)
            for option in options if not isinstance(option, Unserved)]
    # Branch and bound: the cheapest replica first (a candidate costs at least one replica, TP GPUs at their price);
    # one whose single replica costs more than the dear end of the cheapest range found cannot rank, nor be too
    # close to call, and is not searched. The bound moves after each ROUND of candidates, a fixed number, so the
    # candidates searched do not depend on the cores that search them.
    jobs.sort(key=lambda job: job[0][0].tp * job[2])
    candidates, bound = [], math.inf
    for start in range(0, len(jobs), ROUND):
        batch = jobs[start:start + ROUND]
        live = [job for job in batch if job[0][0].tp * job[2] <= bound]
        for (dep, speculative, _), *_ in (job for job in batch if job[0][0].tp * job[2] > bound):
            unserved_list.append(unserved(dep, speculative, f"not searched: one replica costs "
                                          f"${dep.tp * prices[dep.gpu][0]:,.2f} an hour, more than the dear end of "
                                          f"the cheapest found (${bound:,.2f})", searched=False))
        for (option, *_), result in zip(live, evaluated(live)):
            if isinstance(result, Candidate):
                candidates.append(replace(result, dep=option[0]))
                bound = min(bound, result.cost_per_hour_interval[1])
            else:
                unserved_list.append(result)
    candidates.sort(key=rank_key)
    chosen = candidates[0] if candidates else None
    cheapest_off = next((c for c in candidates if c.draft == "off"), None)
    cheapest_on = next((c for c in candidates if c.draft != "off"), None)
    saving, at_traffic = None, None
    if chosen is not None:
        here = [c for c in candidates if layout(c) == layout(chosen)]
        base = next((c for c in here if c.draft == "off"), None)
        spec = next((c for c in here if c.draft != "off"), None)
        if base is not None and spec is not None:
            saving = 1.0 - spec.cost_per_hour / base.cost_per_hour
            if base.replicas == spec.replicas and demand.request_rate is not None:   # what speculation buys there
                rate = demand.request_rate / base.replicas
                at_traffic = dict(rate=rate, **{arm: dict(run_at(c.dep, c.served, c.request_alpha or 0.0,
                                                                 c.request_spread or 0.0, rate, slo, traffic, fit).tail_ms)
                                                for arm, c in (("off", base), ("on", spec))})
    # The runner-up is the cheapest other deployment: speculation off and on at the chosen one are weighed by saving.
    runner = next((c for c in candidates[1:] if layout(c) != layout(chosen)), None) if chosen else None
    too_close = runner is not None and runner.cost_per_hour_interval[0] <= chosen.cost_per_hour_interval[1]
    return Choice(demand=demand, slo=slo,
                  prices=tuple((gpu, *prices[gpu]) for gpu in sorted({o[0].gpu if not isinstance(o, Unserved)
                                                                       else o.gpu for o in options})),
                  candidates=tuple(candidates), unserved=tuple(unserved_list), chosen=chosen,
                  cheapest_off=cheapest_off, cheapest_on=cheapest_on, saving=saving, runner_up=runner,
                  too_close=too_close if chosen else None, at_traffic=at_traffic)


def plan_deployment(choice):
    """The deployment the plan is written for: the chosen one; where it runs no draft, the same GPUs, layout and
    engine with the draft of its cheapest speculative candidate (the plan weighs turning it on), if one serves."""
    chosen = choice.chosen
    if chosen.draft != "off":
        return chosen.dep
    return next((c.dep for c in choice.candidates if c.draft != "off" and layout(c) == layout(chosen)), chosen.dep)
