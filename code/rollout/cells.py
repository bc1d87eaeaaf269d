"""A cell of the grid: at (alpha, K, eps, B), the lesson's speedup beside the exact one, the simulated requests' speedup
and their P99 TPOT and ITL (evaluate_cell); the simulated requests of each (alpha, K), shared by every part of a run
(decoder); an acceptance figure of any kind as a per-token alpha."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from .records import OPTIONAL, inline
from .acceptance import (
    acceptance_length, acceptance_rate, alpha_from_length, alpha_from_rate, breakeven_rate, exact_breakeven,
    exact_speedup, lesson_speedup, profile_length, speedup,
)
from .costmodel import eps_seen, plain_step_ms
from .trust import interval
from .simulation import cell_latency, draw_requests, Latency, REPLICATE_REQUESTS, simulate_requests

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
class ClosedForm:
    """A cell's closed forms: eps, tau and alpha's three readings, the speedups and the break-even."""
    eps_eff: float                   #: eps with the prefill share a round of the batch's tau carries (eps_seen)
    eps_decode: float                #: eps of decoding alone: a round over a plain step, minus 1
    acceptance_length: float         #: tau(alpha, K), bonus token included
    acceptance_rate: float           #: vLLM's rate at that alpha and K: (tau - 1) / K
    alpha_spread: float              #: s.d. of the requests' alphas around alpha
    acceptance_length_requests: float   #: tau the batch sees over the spread requests, 1/E[1/tau]
    speedup_lesson: float            #: (1 + K alpha) / (1 + eps_eff), the lesson's formula
    speedup_exact: float             #: tau / (1 + eps_eff)
    speedup_requests: float          #: acceptance_length_requests / (1 + eps_eff)
    breakeven_alpha_lesson: float    #: eps / K: the break-even rate, which the lesson calls alpha
    breakeven_alpha_exact: float     #: the per-token alpha with tau = 1 + eps (decode eps)
    plain_step_ms: float             #: a plain step, its prefill share included
    round_ms: float                  #: a round as the benchmark sees it, its tau steps of prefill included


@dataclass(frozen=True)
class TailReading:
    """What a cell's simulated requests say beyond their Latency: how the tail moves, and where it comes from."""
    tpot_p99_change: float           #: P99 TPOT with speculation over plain, minus 1 (across requests)
    tpot_p99_change_two_pass: float
    p99_change: float                #: P99 per-token ITL with speculation over plain, minus 1 (not per chunk)
    p99_change_two_pass: float
    zero_accept_token_share: float   #: share of tokens from rounds that accepted nothing (one a round)
    slow_alpha: float                #: mean alpha of the requests at or above P99 TPOT
    simulated_requests: int          #: requests simulated
    tpot_p99_halfwidth: float        #: achieved relative half-width of P99 TPOT at 95% confidence
    tpot_spec_p99_alike_ms: float = field(default=None, metadata=OPTIONAL)   #: P99 TPOT were every request at alpha


@dataclass(frozen=True)
class CellIntervals:
    """A cell's predictions as ranges at INTERVAL_LEVEL (cells.with_intervals)."""
    speedup_interval: list = None    #: [low, high] of speedup_mc
    tpot_plain_mean_interval_ms: list = None   #: [low, high] of tpot_plain_mean_ms
    tpot_spec_mean_interval_ms: list = None    #: [low, high] of tpot_spec_mean_ms


CELL_PARTS = ("closed", "latency", "tail", "intervals")


@dataclass(frozen=True)
class Cell:
    """One (alpha, K, eps, B) of the grid, or a row of the plan's tail (evaluate_cell): the closed forms beside the
    simulated requests, in four parts (CELL_PARTS), each field read through the cell as if it were its own
    (cell.speedup_mc is cell.latency.speedup_mc), and shown flat by --json. An infeasible cell (its KV cache does not
    fit) keeps its coordinates and no part."""
    alpha: float                     #: mean per-token acceptance alpha of the requests
    k: int                           #: draft length K
    verify_overhead: object          #: the grid's eps at B=1 ("auto": the cost model's)
    concurrency: int                 #: batch size B
    feasible: bool                   #: whether B sequences' KV cache fits beside the weights
    closed: ClosedForm = field(default=None, metadata=inline(ClosedForm))   #: the closed forms
    latency: Latency = field(default=None, metadata=inline(Latency))     #: TPOT and ITL over the simulated requests
    tail: TailReading = field(default=None, metadata=inline(TailReading))       #: how the tail moves, and where it comes from
    intervals: CellIntervals = field(default=None, metadata=inline(CellIntervals))   #: the ranges of its predictions

    def __getattr__(self, name):   # a part's field, read through the cell: None where the part is missing
        if name.startswith("__") or name in CELL_PARTS:
            raise AttributeError(name)
        for part, record in zip(CELL_PARTS, (ClosedForm, Latency, TailReading, CellIntervals)):
            if name in record.__dataclass_fields__:
                value = self.__dict__.get(part)
                return None if value is None else getattr(value, name)
        raise AttributeError(f"Cell has no field {name!r}")


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
    closed = ClosedForm(
        eps_eff=cell_eps, eps_decode=eps, acceptance_length=tau, acceptance_rate=acceptance_rate(alpha, k),
        alpha_spread=dec.spread, acceptance_length_requests=dec.tau,
        speedup_lesson=lesson_speedup(alpha, k, cell_eps), speedup_exact=exact_speedup(alpha, k, cell_eps),
        speedup_requests=speedup(dec.tau, cell_eps),
        breakeven_alpha_lesson=breakeven_rate(k, eps), breakeven_alpha_exact=exact_breakeven(k, eps),
        plain_step_ms=plain_ms, round_ms=spec_ms)
    tail = TailReading(
        tpot_p99_change=lat.tpot_spec_p99_ms / lat.tpot_plain_p99_ms - 1.0,
        tpot_p99_change_two_pass=lat.tpot_spec_two_pass_p99_ms / lat.tpot_plain_p99_ms - 1.0,
        p99_change=lat.itl_spec_p99_ms / lat.itl_plain_p99_ms - 1.0,
        p99_change_two_pass=lat.itl_spec_two_pass_p99_ms / lat.itl_plain_p99_ms - 1.0,
        zero_accept_token_share=dec.by_accepted[0],   # tokens from rounds that accepted nothing: one a round
        slow_alpha=dec.slow_alpha, simulated_requests=dec.requests, tpot_p99_halfwidth=dec.precision)
    return Cell(alpha=alpha, k=k, verify_overhead=verify_overhead, concurrency=batch, feasible=True, closed=closed,
                latency=lat, tail=tail)


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


def with_intervals(cell, trust):
    """A grid cell with the intervals of its predicted speedup and mean TPOTs (Trust)."""
    if not cell.feasible:
        return cell
    return replace(cell, intervals=CellIntervals(
        speedup_interval=interval(cell.speedup_mc, trust.speedup_sd),
        tpot_plain_mean_interval_ms=interval(cell.tpot_plain_mean_ms, trust.tpot_sd),
        tpot_spec_mean_interval_ms=interval(cell.tpot_spec_mean_ms, trust.spec_tpot_sd)))
