"""Simulation over requests: requests whose alphas and lengths spread around the mean, decoded round by round
(acceptance.decode_request, or its renewal limit for long ones), and TPOT and ITL as `vllm bench serve` measures
them, with the lesson's two-pass model beside the real one.
"""
from __future__ import annotations

import bisect
import heapq
import itertools
import math
import random
import statistics
from collections import namedtuple
from dataclasses import dataclass

from .acceptance import acceptance_length, decode_request, JITTER_MU, round_distribution, ROUND_JITTER, round_moments
from .records import percentile


# `vllm bench serve` measures requests: a request's TPOT is its decode time over its tokens
# after the first, and P99 TPOT is np.percentile over requests (vllm/benchmarks/serve.py,
# calculate_metrics). Each simulated request has its own per-token alpha (the cell's, or its
# traffic-mix domain's, plus ALPHA_SPREAD x z) and output length (the mean times a lognormal
# of s.d. OUTPUT_SPREAD in log space). One of at most LOOP_TOKENS decode tokens runs
# decode_request; a longer one draws its rounds n, full rounds F and jitter sum from their
# joint normal limit (renewal theory: n ~ N/tau + overshoot, variance N var(T) / tau^3;
# F from the renewal-reward theorem), a handful of numbers instead of hundreds of rounds.
#
# All sequences of a batch share each round's time, so a request's TPOT is round_ms x its
# jitter sum / N: no draw depends on eps or B, and every (eps, B) cell of one (alpha, K)
# rescales the same requests. Per-token and per-chunk ITL follow in closed form from the
# rounds per token that accept A drafts (round_mix) and the lognormal jitter.
#
# Sample size: independent replicates of REPLICATE_REQUESTS requests, each stratified (a Latin
# hypercube over z, length and domain). Their number starts at 8 and grows by half until every
# P99 TPOT is within PRECISION at 95% confidence (Student's t over the replicates' P99s,
# replicated Latin hypercube sampling) or MAX_REPLICATES; the pooled requests give the figures.

REPLICATE_REQUESTS = 128  # requests in one replicate
MAX_REPLICATES = 64       # where the growth stops: 8,192 requests
PRECISION = 0.02          # target half-width of P99 TPOT at 95% confidence, relative
PRECISION_MARGIN = 1.15   # stop at PRECISION / this: the replicates' estimate runs low where the growth stops
                          # (python bench/check_precision.py: at alpha 0.8, K 5 over 60 seeds the real half-width
                          # is 2.4% without it, 1.9% with it)
LOOP_TOKENS = 64          # requests of at most this many decode tokens run decode_request round by round
NORMAL = statistics.NormalDist()
Z_NODES = [NORMAL.inv_cdf((i + 0.5) / 64) for i in range(64)]   # midpoint quadrature over a request's z
JITTER_SD = math.sqrt(math.exp(ROUND_JITTER ** 2) - 1.0)          # s.d. of one round's jitter (mean 1)
JITTER_P50 = math.exp(JITTER_MU)                                       # its median
JITTER_P99 = math.exp(JITTER_MU + ROUND_JITTER * NORMAL.inv_cdf(0.99))   # its 99th percentile

# Draws and Requests are columns over requests, tuples on purpose: run_requests unpacks a replicate's draws row by
# row (zip(*draws)) and builds Requests from its rows (zip(*rows)), in the order of their fields.
Draws = namedtuple("Draws", "z length domain g seeds")
# One replicate's randomness: z and a length multiplier (mean 1) per request, a uniform that
# picks its domain, four standard normals (rounds, full rounds, spec and plain jitter) and a
# seed for decode_request; shared by every (alpha, K).
Requests = namedtuple("Requests", "alpha tokens rounds full spec plain domain spec_n rounds_n full_n plain_n")
# One replicate's decoded requests, a list over requests in each field: per-token alpha,
# decode tokens N (after the first), rounds, rounds that accepted all K, spec and plain time
# (in rounds and in plain steps, jitter included), domain index; the _n fields per decode token.


@dataclass(frozen=True)
class Decode:
    """The simulated requests of one (alpha or traffic mix, K, spread), pooled over replicates (simulate_requests):
    what every (eps, B) cell of that pair rescales, since no draw depends on eps or B."""
    k: int                   #: draft length K
    spread: float            #: s.d. of the requests' alphas
    tau: float               #: tokens per round the batch sees, 1/E[1/tau] over requests (round_mix)
    by_accepted: list        #: rounds per token that accepted A = 0..K
    full_share: float        #: share of rounds that accepted all K
    itl_p50: float           #: per-token ITL median, in rounds
    itl_p99: float           #: per-token ITL P99, in rounds
    requests: int            #: requests simulated
    tokens: float            #: decode tokens, summed over requests
    spec: float              #: speculative time in rounds (jitter included), summed
    plain: float             #: plain time in plain steps (jitter included), summed
    rounds: float            #: rounds, summed
    full: float              #: rounds that accepted all K, summed
    per_token: tuple         #: (spec_n, rounds_n, full_n): per request, per decode token
    heavy: list              #: the slowest requests' (spec_n, rounds_n, full_n) (cell_latency's two-pass shortcut)
    rest_max: tuple          #: the largest spec_n and rounds_n among the others
    tpot_spec: list          #: spec_n sorted
    tpot_plain: list         #: plain_n sorted
    means: list              #: means of spec_n, rounds_n, full_n and plain_n
    speedup_ratio: float     #: sum(plain) / sum(spec)
    speedup_ratio_se: float  #: its standard error over the replicates
    precision: float         #: achieved relative half-width of P99 TPOT at 95% confidence
    slow_alpha: float        #: mean alpha of the requests at or above P99 TPOT
    slow_domains: list       #: share by domain of those requests


def clip01(x):
    return 0.0 if x < 0.0 else 1.0 if x > 1.0 else x


def round_mix(domains, k, spread):
    """(tau the batch sees, rounds per token that accept A = 0..K) over requests spread around each domain.

    domains: (share of requests, mean alpha, mean output tokens). A domain delivering a share s of
    the tokens runs s E[P(A)/tau] rounds per token that accept A, E over its requests' alphas;
    tau is one over the sum: a harmonic blend, as in traffic_blend.
    >>> round_mix(((1.0, 0.5, 100),), 1, 0.0)     # tau 1.5: a third of a round per token accepts 0, a third 1
    (1.5, [0.3333333333333333, 0.3333333333333333])
    """
    token_total = sum(share * tokens for share, _, tokens in domains)
    nodes = Z_NODES if spread > 0 else (0.0,)
    per_token = [0.0] * (k + 1)
    for share, alpha, tokens in domains:
        weight = share * tokens / token_total / len(nodes)
        for z in nodes:
            a = clip01(alpha + spread * z)
            rounds = weight / acceptance_length(a, k)      # this node's rounds per token
            for accepted, p in enumerate(round_distribution(a, k)):
                per_token[accepted] += rounds * p
    return 1.0 / sum(per_token), per_token


def mixture_quantile(q, parts):
    """x with a share q at or below it, for a mixture of scale x jitter; parts: (scale, weight).

    >>> round(mixture_quantile(0.99, [(2.0, 1.0)]) / (2.0 * JITTER_P99), 9)
    1.0
    """
    s = ROUND_JITTER
    parts = [(math.log(scale) + JITTER_MU, w) for scale, w in parts if w > 0]
    total = sum(w for _, w in parts)
    lo, hi = min(mu for mu, _ in parts) - 9 * s, max(mu for mu, _ in parts) + 9 * s
    y = (lo + hi) / 2
    for _ in range(100):                # Newton on log x, kept inside a shrinking bisection bracket
        share = density = 0.0
        for mu, w in parts:
            t = (y - mu) / s
            share += w * 0.5 * math.erfc(-t / math.sqrt(2.0))
            density += w * math.exp(-t * t / 2) / (s * math.sqrt(2 * math.pi))
        gap = share / total - q
        lo, hi = (lo, y) if gap > 0 else (y, hi)
        step = gap * total / density if density > 0 else hi - lo
        if abs(step) < 1e-12 or hi - lo < 1e-12:
            break
        y = y - step if lo < y - step < hi else (lo + hi) / 2
    return math.exp(y)


def mixture_share(x, parts):
    """The share of the mixture at or below x (its CDF), parts as in mixture_quantile."""
    s = ROUND_JITTER
    total = sum(w for _, w in parts)
    return sum(w * 0.5 * math.erfc(-(math.log(x / scale) - JITTER_MU) / (s * math.sqrt(2.0)))
               for scale, w in parts if w > 0) / total if x > 0 else 0.0


def draw_requests(n, seed, replicate, output_spread):
    """One replicate's randomness for n requests, stratified in z, length and domain (a Latin hypercube)."""
    rng = random.Random(f"{seed}:{replicate}")

    def stratified():
        order = list(range(n))
        rng.shuffle(order)
        return [min(max((i + rng.random()) / n, 1e-12), 1.0 - 1e-12) for i in order]

    z = [NORMAL.inv_cdf(u) for u in stratified()]
    length = [math.exp(output_spread * NORMAL.inv_cdf(u) - output_spread ** 2 / 2) for u in stratified()]
    domain = stratified()
    g = [(rng.gauss(0.0, 1.0), rng.gauss(0.0, 1.0), rng.gauss(0.0, 1.0), rng.gauss(0.0, 1.0)) for _ in range(n)]
    return Draws(z=z, length=length, domain=domain, g=g, seeds=[rng.getrandbits(32) for _ in range(n)])


def renewal_draw(alpha, k, tokens, g_rounds, g_full):
    """(rounds, rounds that accepted all K) of a request of `tokens` decode tokens, from their joint normal limit
    given two standard normals: what decode_request would return, without its hundreds of rounds.

    Rounds: N / tau plus the last round's overshoot, variance N var(T) / tau^3 (renewal theory, T = A + 1 of
    round_distribution). Full rounds: p_full per round (Wald); their variance and covariance with the rounds from the
    renewal-reward CLT, with Cov(T, 1{A = K}) = p_full (K + 1 - tau).
    """
    tau, square, p_full = round_moments(alpha, k)
    var = square - tau * tau if square > tau * tau else 0.0          # var(T), tokens a round
    mean_rounds = tokens / tau + (square - tau) / (2 * tau * tau)   # the last round overshoots N
    sd_rounds = math.sqrt(tokens * var / tau) / tau
    rounds = mean_rounds + sd_rounds * g_rounds
    rounds = tokens / (k + 1) if rounds < tokens / (k + 1) else tokens if rounds > tokens else rounds
    cov_tf = p_full * (k + 1 - tau)
    var_full = tokens * (p_full * (1 - p_full) - 2 * p_full / tau * cov_tf + (p_full / tau) ** 2 * var) / tau
    # slope: their covariance over sd(rounds), the part of F that moves with the rounds; rest: the variance of F
    # left over.
    slope = tokens * (p_full * var / tau - cov_tf) / (tau * tau * sd_rounds) if sd_rounds > 0 else 0.0
    rest = var_full - slope * slope
    full = p_full * mean_rounds + slope * g_rounds + (math.sqrt(rest) * g_full if rest > 0 else 0.0)
    return rounds, 0.0 if full < 0.0 else rounds if full > rounds else full


def run_requests(domains, k, spread, draws):
    """Decode one replicate's requests (draw_requests) around each domain's alpha: Requests."""
    ends = list(itertools.accumulate(share for share, _, _ in domains))
    out = []
    for z, scale, u, (g_rounds, g_full, g_spec, g_plain), seed in zip(*draws):
        domain = min(bisect.bisect_right(ends, u), len(domains) - 1)
        _, mean_alpha, mean_tokens = domains[domain]
        alpha = clip01(mean_alpha + spread * z)
        tokens = round(mean_tokens * scale) - 1                # TPOT counts the tokens after the first
        tokens = tokens if tokens > 1 else 1
        if tokens <= LOOP_TOKENS:
            accepted, spec = decode_request(alpha, k, tokens, random.Random(seed))
            rounds, full = len(accepted), accepted.count(k)
        else:
            rounds, full = renewal_draw(alpha, k, tokens, g_rounds, g_full)
            spec = rounds + JITTER_SD * math.sqrt(rounds) * g_spec
        plain = tokens + JITTER_SD * math.sqrt(tokens) * g_plain
        out.append((alpha, tokens, rounds, full, spec, plain, domain,
                    spec / tokens, rounds / tokens, full / tokens, plain / tokens))
    return Requests(*zip(*out))


def replicate_p99s(requests):
    """P99 TPOT over one replicate's Requests, in rounds or steps per token: with speculation, plain
    decoding, and two-pass with a second pass every round (the most it can add)."""
    return (percentile_top(requests.spec_n, 0.99), percentile_top(requests.plain_n, 0.99),
            percentile_top([s + n for s, n in zip(requests.spec_n, requests.rounds_n)], 0.99))


def student_t975(df):
    """Student's t at 0.975 (two-sided 95%) for df degrees of freedom: Abramowitz & Stegun 26.7.5.

    >>> round(student_t975(7), 3), round(student_t975(30), 3)
    (2.365, 2.042)
    """
    z = NORMAL.inv_cdf(0.975)
    terms = [(z ** 3 + z) / 4, (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96,
             (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384,
             (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160]
    return z + sum(g / df ** (i + 1) for i, g in enumerate(terms))


def stdev(values):
    """Sample standard deviation in floats (statistics.stdev computes it exactly, in fractions: slowly).

    >>> stdev([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) == statistics.stdev([2, 4, 4, 4, 5, 5, 7, 9])
    True
    """
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def halfwidth(values):
    """Relative half-width at 95% confidence of the mean of independent replicates' values (Student's t)."""
    n = len(values)
    return student_t975(n - 1) * stdev(values) / math.sqrt(n) / statistics.fmean(values)


def simulate_requests(domains, k, spread, draws_for):
    """Requests of one (alpha or traffic mix, K), replicated until their P99 TPOTs are precise: a Decode."""
    tau, by_accepted = round_mix(domains, k, spread)
    replicates, p99s = [], []
    while True:
        for r in range(len(replicates), min(MAX_REPLICATES, max(8, len(replicates) * 3 // 2))):
            replicates.append(run_requests(domains, k, spread, draws_for(r)))
            p99s.append(replicate_p99s(replicates[-1]))
        precision = max(halfwidth(column) for column in zip(*p99s))
        if precision <= PRECISION / PRECISION_MARGIN or len(replicates) >= MAX_REPLICATES:
            break
    ratios = [sum(rep.plain) / sum(rep.spec) for rep in replicates]
    alpha, tokens, rounds, full, spec, plain, domain, spec_n, rounds_n, full_n, plain_n = (
        list(itertools.chain.from_iterable(column)) for column in zip(*replicates))
    tpot_spec = sorted(spec_n)
    threshold = percentile(tpot_spec, 0.99)
    slow = [i for i, v in enumerate(spec_n) if v >= threshold]
    # The slowest requests hold the two-pass P99 of every cell too (cell_latency checks that they do).
    heavy = heapq.nlargest(max(64, 4 * top_needed(len(spec_n), 0.99)), zip(spec_n, rounds_n, full_n))
    unit = token_itl_parts(by_accepted, 1.0)
    return Decode(k=k, spread=spread, tau=tau, by_accepted=by_accepted, full_share=by_accepted[k] / sum(by_accepted),
                  itl_p50=mixture_quantile(0.50, unit), itl_p99=mixture_quantile(0.99, unit),
                  requests=len(spec_n), tokens=sum(tokens), spec=sum(spec), plain=sum(plain), rounds=sum(rounds),
                  full=sum(full), per_token=(spec_n, rounds_n, full_n), heavy=heavy,
                  rest_max=(heavy[-1][0], max(n for s, n in zip(spec_n, rounds_n) if s <= heavy[-1][0])),
                  tpot_spec=tpot_spec, tpot_plain=sorted(plain_n),
                  means=[statistics.fmean(column) for column in (spec_n, rounds_n, full_n, plain_n)],
                  speedup_ratio=sum(plain) / sum(spec), speedup_ratio_se=stdev(ratios) / math.sqrt(len(ratios)),
                  precision=precision, slow_alpha=statistics.fmean(alpha[i] for i in slow),
                  slow_domains=[sum(domain[i] == d for i in slow) / len(slow) for d in range(len(domains))])


def top_needed(n, q):
    """How many of n values, from the largest down, percentile(q) reads."""
    return n - int(q * (n - 1))


def percentile_of_top(top, n, q):
    """percentile(q) of n values from their top_needed(n, q) largest, in descending order."""
    at = q * (n - 1)
    return top[-1] + (at - int(at)) * (top[-2] - top[-1]) if len(top) > 1 else top[-1]


def percentile_top(values, q):
    """percentile() of unsorted values for q near 1, sorting only the top ones (heapq.nlargest)."""
    return percentile_of_top(heapq.nlargest(top_needed(len(values), q), values), len(values), q)


def token_itl_parts(by_accepted, round_cost_ms):
    """Per-token ITL as mixture_quantile parts: a round that accepted A drafts gives each of its A + 1
    tokens round_cost_ms x jitter / (A + 1), so it enters with weight A + 1."""
    return [(round_cost_ms / (a + 1), w * (a + 1)) for a, w in enumerate(by_accepted)]


def other_rejects(dec, batch):
    """P(another of the B sequences rejects a draft this round) = 1 - f^(B-1), f the share of full rounds."""
    return 1.0 - dec.full_share ** (batch - 1)


@dataclass(frozen=True)
class ItlMixtures:
    """Per-token ITL of the three ways to decode, each as mixture_quantile parts: [(scale in ms, weight)]."""
    plain: list      #: plain decoding: one plain step a token
    spec: list       #: speculative decoding as vLLM and SGLang run it (rejection sampling in the verify pass)
    two_pass: list   #: the lesson's two-pass model: a plain step more for a round with a rejection in the batch


def itl_parts(dec, plain_ms, spec_ms, batch):
    """Per-token ITL of plain decoding, speculative decoding (rejection sampling) and two-pass: ItlMixtures.

    Two-pass (the lesson's model) adds a plain step to a round that rejected, or whose batch did.
    """
    k, w, p_other = dec.k, dec.by_accepted, other_rejects(dec, batch)
    return ItlMixtures(plain=[(plain_ms, 1.0)], spec=token_itl_parts(w, spec_ms),
                       two_pass=token_itl_parts(w[:k] + [w[k] * p_other], spec_ms + plain_ms)
                       + [(spec_ms / (k + 1), w[k] * (k + 1) * (1 - p_other))])


@dataclass(frozen=True)
class Latency:
    """What `vllm bench serve` would report for one cell (cell_latency): TPOT over requests, ITL per token and per
    chunk, and the speedup over the simulated requests. Two-pass: the lesson's model (itl_parts)."""
    tpot_plain_mean_ms: float         #: mean TPOT over requests, plain decoding
    tpot_plain_p99_ms: float          #: P99 TPOT over requests, plain decoding
    tpot_spec_mean_ms: float          #: mean TPOT with speculation
    tpot_spec_p50_ms: float           #: median TPOT with speculation
    tpot_spec_p99_ms: float           #: P99 TPOT with speculation
    tpot_spec_two_pass_mean_ms: float   #: mean TPOT under the two-pass model
    tpot_spec_two_pass_p99_ms: float  #: P99 TPOT under the two-pass model
    itl_plain_mean_ms: float          #: per-token ITL, plain: mean, P50, P99
    itl_plain_p50_ms: float
    itl_plain_p99_ms: float
    itl_spec_mean_ms: float           #: per-token ITL with speculation (a round's time over its tokens)
    itl_spec_p50_ms: float
    itl_spec_p99_ms: float
    itl_spec_two_pass_mean_ms: float  #: per-token ITL under the two-pass model
    itl_spec_two_pass_p50_ms: float
    itl_spec_two_pass_p99_ms: float
    round_itl_spec_p99_ms: float      #: P99 ITL per streamed chunk (one round), as vLLM's benchmark measures ITL
    round_itl_two_pass_p99_ms: float  #: the same under the two-pass model
    speedup_mc: float                 #: plain over speculative decode time, summed over the simulated requests
    speedup_mc_se: float              #: its standard error over the replicates
    speedup_two_pass_mc: float        #: the same speedup under the two-pass model


def cell_latency(dec, plain_ms, spec_ms, batch):
    """What `vllm bench serve` would report for one cell: TPOT over requests, ITL per token and per chunk."""
    p_other = other_rejects(dec, batch)
    skip = plain_ms * (1.0 - p_other)                    # a full round with no rejection in the batch skips it

    def two_pass(spec, rounds, full):                    # two-pass time of spec jitter, rounds and full rounds
        return spec_ms * spec + plain_ms * rounds - skip * full

    # Two-pass TPOT of the slowest requests; the others are at most spec_ms s + plain_ms n. When the
    # top ones P99 reads all come from the slowest, the P99 over them is the P99 over all.
    top = top_needed(dec.requests, 0.99)
    heavy = heapq.nlargest(top, [two_pass(*row) for row in dec.heavy])
    if len(heavy) == top and heavy[-1] >= two_pass(*dec.rest_max, 0.0):
        two_pass_p99 = percentile_of_top(heavy, dec.requests, 0.99)
    else:
        two_pass_p99 = percentile_top([two_pass(*row) for row in zip(*dec.per_token)], 0.99)
    two_pass_time = two_pass(dec.spec, dec.rounds, dec.full)
    mean_s, mean_n, mean_f, mean_plain = dec.means
    token_two_pass = itl_parts(dec, plain_ms, spec_ms, batch).two_pass
    second = 1.0 - (1.0 - p_other) * dec.full_share            # share of rounds with a second pass
    return Latency(
        tpot_plain_mean_ms=plain_ms * mean_plain, tpot_plain_p99_ms=plain_ms * percentile(dec.tpot_plain, 0.99),
        tpot_spec_mean_ms=spec_ms * mean_s, tpot_spec_p50_ms=spec_ms * percentile(dec.tpot_spec, 0.50),
        tpot_spec_p99_ms=spec_ms * percentile(dec.tpot_spec, 0.99),
        tpot_spec_two_pass_mean_ms=two_pass(mean_s, mean_n, mean_f), tpot_spec_two_pass_p99_ms=two_pass_p99,
        itl_plain_mean_ms=plain_ms * dec.plain / dec.tokens, itl_plain_p50_ms=plain_ms * JITTER_P50,
        itl_plain_p99_ms=plain_ms * JITTER_P99,
        itl_spec_mean_ms=spec_ms * dec.spec / dec.tokens, itl_spec_p50_ms=spec_ms * dec.itl_p50,
        itl_spec_p99_ms=spec_ms * dec.itl_p99,
        itl_spec_two_pass_mean_ms=two_pass_time / dec.tokens,
        itl_spec_two_pass_p50_ms=mixture_quantile(0.50, token_two_pass),
        itl_spec_two_pass_p99_ms=mixture_quantile(0.99, token_two_pass),
        round_itl_spec_p99_ms=spec_ms * JITTER_P99,
        round_itl_two_pass_p99_ms=mixture_quantile(0.99, [(spec_ms, 1.0 - second), (spec_ms + plain_ms, second)]),
        speedup_mc=dec.speedup_ratio * plain_ms / spec_ms, speedup_mc_se=dec.speedup_ratio_se * plain_ms / spec_ms,
        speedup_two_pass_mc=plain_ms * dec.plain / two_pass_time)


