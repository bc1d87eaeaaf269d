"""The best K by batch size: the K (0 = off) with the most tokens a second at each batch (best_k), vLLM's K-by-batch
table found by probing and bisection (k_schedule), the batches too close to call, and the best-K table's rows."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .records import NOT_IN_JSON
from .acceptance import tau_for
from .schedule import K_MAX
from .deployment import max_concurrency
from .costmodel import FIT, memoised, round_ms, tpot_speedup
from .trust import interval, too_close, Z_INTERVAL

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
