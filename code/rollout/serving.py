"""A `vllm bench serve` run simulated step by step: the client's sends and semaphore, the server's cap on running
sequences, decodes first and prompts in chunks from each step's token budget, and TTFT, TPOT, ITL and E2EL as the
benchmark computes them.
"""
from __future__ import annotations

import bisect
import collections
import heapq
import itertools
import math
import random
from dataclasses import dataclass

from .catalog import served_model
from .acceptance import JITTER_MU, ROUND_JITTER, round_moments
from .schedule import KTable
from .costmodel import decode_step_ms, FIT, fixed_ms, pass_ms, round_ms, target_pass_ms
from .deployment import draft_kind, runs_a_draft_model, server_seqs, step_budget, verify_tokens
from .releases import accepts
from .simulation import clip01, LOOP_TOKENS, NORMAL, renewal_draw
from .records import percentile
from .deployment import rank_cap, running_cap, schedules_ahead
from .workload import BENCH_METRICS, BENCH_PERCENTILES, GOODPUT_KEY, SLO_KEYS, stratified_lengths


# What `vllm bench serve` would print for one run, step by step as the engine serves it. The
# client (vllm/benchmarks/serve.py) sends N requests: all at once (--request-rate inf) or at
# gamma-distributed gaps of shape burstiness (1: Poisson) rescaled so the last is sent at
# N / rate; --max-concurrency holds them in a semaphore (the client's queue, outside TTFT).
# The server admits a request while its running sequences are below its cap (max_num_seqs or
# the KV cache's sequences, whichever is less: with speculation the draft's weights and KV
# leave fewer) and runs steps: each running decode advances one plain step or one round, and
# the step's token budget left after the decodes' tokens prefills waiting prompts in chunks,
# first come first served (Engine.mixes_prefill; SGLang by default runs a prefill batch alone,
# the decodes waiting). A step costs the cost model's pass for its decodes and prompt tokens,
# times a lognormal jitter. A request's TTFT ends with the step that prefills its last prompt
# chunk; each later step streams its A + 1 tokens as one chunk, an ITL entry (the client appends
# a gap per streamed chunk: vllm/benchmarks/lib/endpoint_request_func.py). TPOT, ITL, E2EL and
# throughput are then computed exactly as calculate_metrics computes them.


def scheduled_budget(dep, k, plan_batch=None):
    """Tokens the scheduler puts in one step, a decode's K + 1 among them: the step's budget (step_budget), less,
    for a draft model on vLLM 0.17 to 0.27, one slot a running sequence the server may hold (server_seqs), which the
    draft pass adds to the batch (releases.py: "draft slots off the step budget").
    >>> from dataclasses import replace
    >>> from rollout.catalog import release_of
    >>> d = example("llama-3.1-8b", "h100-sxm", 1, draft="llama-3.2-1b")
    >>> [scheduled_budget(replace(d, release=release_of(v)), 3) for v in ("0.16", "0.20", "0.28")]
    [8192, 7168, 8192]
    >>> scheduled_budget(replace(d, release=release_of("0.20")), 0)   # speculation off: no draft pass
    8192
    """
    budget = step_budget(dep)
    if k and draft_kind(dep.draft) == "model" and accepts(dep, "draft slots off the step budget"):
        budget -= server_seqs(dep, plan_batch)
    return budget


def step_cost(dep, decodes, k, prompt, fit):
    """One step's time in ms without jitter: `decodes` sequences each decoding a token (k = 0) or a round of K
    drafts, with `prompt` prompt tokens prefilled in the same pass (the verify pass's and the draft's marginal
    cost of them, times own_prefill). A step of prompt tokens alone is a pass over none but them.
    >>> d = example("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16")
    >>> step_cost(d, 4, 0, 0, FIT) == decode_step_ms(d, 4), step_cost(d, 0, 0, 0, FIT)
    (True, 0.0)
    """
    tokens = verify_tokens(dep, k) if k else 1
    if decodes:
        base = round_ms(dep, decodes, k, fit) if k else decode_step_ms(dep, decodes, fit)
    else:
        base = target_pass_ms(dep, 0, tokens, fit) if prompt else 0.0
    if not prompt:
        return base
    extra = target_pass_ms(dep, decodes, tokens, fit, prompt) - target_pass_ms(dep, decodes, tokens, fit)
    if k and runs_a_draft_model(dep):
        fixed = fixed_ms(dep, "draft", fit)
        extra += pass_ms(dep.drafter, dep, decodes, 1, fixed, fit, prompt) - pass_ms(dep.drafter, dep, decodes, 1,
                                                                                      fixed, fit)
    return base + fit.own_prefill * extra


CHUNKS_EXACT = 128  # prompt tokens: a step's cost is computed exactly below this many, and between two multiples of
CHUNK_GRAIN = 64    # CHUNK_GRAIN below WIDE_CHUNKS (of WIDE_GRAIN past it) interpolated (prompts of spread length make
WIDE_CHUNKS = 512   # a chunk of a new size nearly every step): over dense, MoE and MTP deployments at 0-128 decoders,
WIDE_GRAIN = 256    # within 0.24% of the exact step at the 99th percentile, 0.5% at worst (a prefill alone of 155
                    # tokens); the small chunks, where a MoE's expert reads bend most, are exact
DECODER_GRAIN = 8   # decoding sequences past DECODERS_EXACT: likewise between two multiples of this (a batch a request
DECODERS_EXACT = 32   # larger or smaller at every event); up to 32 exact, where a MoE's expert reads bend most
                      # (bench/serving_check.py: the 20 runs' statistics within their simulation error)


def chunk_cost(costs, dep, decoders, k, chunk, fit):
    """step_cost of a step with `chunk` prompt tokens beside `decoders` decodes, through the cache `costs`
    ({(decoders, chunk): ms}): exact below CHUNKS_EXACT and at multiples of the grain (CHUNK_GRAIN, WIDE_GRAIN past
    WIDE_CHUNKS) and of DECODER_GRAIN (and up to DECODERS_EXACT), linear in each between two of them."""
    low_d = decoders - decoders % DECODER_GRAIN if decoders > DECODERS_EXACT else decoders
    if low_d != decoders:
        a, b = (chunk_cost(costs, dep, d, k, chunk, fit) for d in (low_d, low_d + DECODER_GRAIN))
        return a + (b - a) * (decoders - low_d) / DECODER_GRAIN
    grain = CHUNK_GRAIN if chunk < WIDE_CHUNKS else WIDE_GRAIN
    low = chunk - chunk % grain
    if chunk < CHUNKS_EXACT or low == chunk:
        if (decoders, chunk) not in costs:
            costs[decoders, chunk] = step_cost(dep, decoders, k, chunk, fit)
        return costs[decoders, chunk]
    ends = []
    for end in (low, low + grain):
        if (decoders, end) not in costs:
            costs[decoders, end] = step_cost(dep, decoders, k, end, fit)
        ends.append(costs[decoders, end])
    return ends[0] + (ends[1] - ends[0]) * (chunk - low) / grain


def send_times(work, rng):
    """When the client would send each request without --max-concurrency (get_request): all at 0 at an infinite
    rate; else cumulative gamma gaps of shape burstiness and mean 1 / rate, rescaled so the last is at N / rate."""
    n = work.num_prompts
    if math.isinf(work.request_rate):
        return [0.0] * n
    shape = work.burstiness
    gaps = [rng.gammavariate(shape, 1.0 / (work.request_rate * shape)) for _ in range(n)]
    times = list(itertools.accumulate(gaps))
    scale = n / work.request_rate / times[-1] if times[-1] > 0 else 1.0
    return [t * scale for t in times]


ITL_TICKS_PER_S = 1_000_000   # an ITL is counted in whole us (rounded): equal gaps share one count, and a
                              # percentile moves by less than a printed digit (0.01 ms)
JITTER_LEVELS = 4096   # a step's jitter is one of this many equally likely lognormal quantiles: a draw is one uniform
STEP_JITTER = [math.exp(JITTER_MU + ROUND_JITTER * NORMAL.inv_cdf((i + 0.5) / JITTER_LEVELS))
               for i in range(JITTER_LEVELS)]


AGGREGATE_STEPS = 8   # decode-only steps of one cost from which a stretch is taken in one move (aggregate_steps)
JITTER_BINS = 256   # equally likely quantiles of a step's jitter its ITLs are spread over, in a stretch taken in one move


def jitter_moments(jitter):
    """What aggregate_steps needs of a step's jitter levels (equally likely, ascending: STEP_JITTER): their mean and
    s.d., and for each power of two m up to JITTER_BINS their m equally likely quantiles {m: [levels]}. Read from
    the levels themselves, so a run at constant steps (levels all 1) takes its stretches exactly; computed once for
    each list of levels."""
    held = JITTER_MOMENTS.get(id(jitter))
    if held is not None and held[0] is jitter:
        return held[1]
    n = len(jitter)
    mean = math.fsum(jitter) / n
    sd = math.sqrt(math.fsum((j - mean) ** 2 for j in jitter) / n)
    bins, m = {}, 1
    while m <= JITTER_BINS:
        bins[m] = [jitter[int((i + 0.5) * n / m)] for i in range(m)]
        m *= 2
    JITTER_MOMENTS[id(jitter)] = (jitter, (mean, sd, bins))   # the list is held: its id is not reused
    return mean, sd, bins


JITTER_MOMENTS = {}   # id(levels) -> (levels, jitter_moments(levels))


WHOLE_SECONDS = 1000   # whole seconds of one stretch whose steps PeakPerSecond counts (the rest repeat their pattern)


class PeakPerSecond:
    """The most chunks streamed in one one-second bucket from the run's first send (max_output_tokens_per_s), counted
    as the run goes: the simulation's times only move forward, so a bucket is complete once a later one is counted,
    and only the one open is held (a long run at one request at a time spans millions of seconds)."""
    __slots__ = ("begin", "second", "count", "peak")

    def __init__(self, begin):
        self.begin, self.second, self.count, self.peak = begin, 0, 0.0, 0.0

    def add(self, t, chunks):
        """`chunks` streamed at time t."""
        self.add_to(int(t - self.begin), chunks)

    def add_to(self, second, chunks):
        if second != self.second:
            self.peak = max(self.peak, self.count)
            self.second, self.count = second, 0.0
        self.count += chunks

    def spread(self, t, span, steps, decoders):
        """`steps` steps of `decoders` chunks each, evenly spaced over (t, t + span]: each second it covers takes
        the steps that end in it (the two it ends in, their share of the time), a whole number in a whole second:
        the peak of a long stretch is where that number rounds up. Whole seconds past WHOLE_SECONDS in one stretch
        repeat the counts before them."""
        start, end = t - self.begin, t + span - self.begin
        first, last = int(start), int(end)
        chunks = steps * decoders
        if first == last:
            self.add_to(first, chunks)
            return
        self.add_to(first, chunks * (first + 1 - start) / span)
        rate, most = steps / span, 0
        for second in range(first + 1, min(last, first + 1 + WHOLE_SECONDS)):   # steps ending in each whole second
            most = max(most, math.floor((second + 1 - start) * rate) - math.floor((second - start) * rate))
        if most:
            self.add_to(last - 1, decoders * most)
        self.add_to(last, chunks * (end - last) / span)

    def result(self):
        return max(self.peak, self.count)


def aggregate_steps(n, cost, decoders, t, stretches, tally, rng, moments):
    """n decode-only steps of `cost` seconds each with `decoders` sequences, from time t, taken in one move: their
    total time drawn from the normal limit of n jitters (n mean + sqrt(n) sd z, jitter_moments), their n x decoders
    ITLs spread over as many equally likely quantiles of one step's jitter as there are steps (to JITTER_BINS: the
    distribution each is drawn from), counted in `stretches` ({(cost, quantiles): ITLs}, spread into the histogram
    once at the run's end: spread_stretches), and their chunks over the seconds they span in proportion to time.
    Returns the time at the last step's end.

    A long stretch of steps without an event is where a run spends its loop: a request of a thousand tokens at
    concurrency 1 is a thousand steps, and one move here (bench/serving_check.py: the 20 runs' statistics keep
    within their simulation error)."""
    mean, sd, by_size = moments
    span = cost * max(n * mean + math.sqrt(n) * sd * rng.gauss(0.0, 1.0), 0.5 * n * mean)
    stretches[cost, min(JITTER_BINS, 1 << (n.bit_length() - 1))] += n * decoders   # as many quantiles as steps
    tally.spread(t, span, n, decoders)   # the chunks of each second it covers
    return t + span


def spread_stretches(stretches, itl, moments):
    """The ITLs of the stretches aggregate_steps took ({(cost s, quantiles m): ITLs}) into the histogram itl (ticks ->
    ITLs): each (cost, m)'s ITLs in whole counts over its m quantiles of a step's jitter, as evenly as whole counts
    go (the remainder one more each at evenly spaced quantiles).
    >>> itl = collections.defaultdict(int)
    >>> spread_stretches({(0.01, 2): 5}, itl, (1.0, 0.0, {2: [0.9, 1.1]}))
    >>> sorted(itl.items())
    [(9000, 2), (11000, 3)]
    """
    by_size = moments[2]
    for (cost, size), count in sorted(stretches.items()):
        base, extra = divmod(count, size)
        more = {int((i + 0.5) * size / extra) for i in range(extra)}
        for j, q in enumerate(by_size[size]):
            itl[int(cost * q * ITL_TICKS_PER_S + 0.5)] += base + (j in more)


def whole_lengths(draws, total=None):
    """Answer lengths of at least 1 token from real-valued draws: each rounded, or, given their total, the largest
    remainders rounded up so that they add up to it exactly.
    >>> whole_lengths([1.4, 2.4, 3.2]), whole_lengths([1.4, 2.4, 3.2], 8)
    ([1, 2, 3], [2, 3, 3])
    """
    if total is None:
        return [max(1, round(d)) for d in draws]
    floors = [max(1, math.floor(d)) for d in draws]
    short = total - sum(floors)
    order = sorted(range(len(draws)), key=lambda i: floors[i] - draws[i])   # the largest remainders first
    for i in order[:max(0, short)]:
        floors[i] += 1
    return floors


def request_rounds(alpha, k, tokens, rng):
    """Rounds a request needs for `tokens` tokens after its first at per-token alpha: a short one round by round
    (decode_request's count, each round's accepted drafts drawn by inversion: P(A >= a) = alpha^a, capped at K),
    a long one from renewal_draw's normal limit (as run_requests draws them).
    >>> import random
    >>> request_rounds(1.0, 3, 10, random.Random(0)), request_rounds(0.0, 3, 10, random.Random(0))
    (3, 10)
    """
    if tokens <= 0:
        return 0
    if tokens <= LOOP_TOKENS:
        if alpha <= 0.0 or alpha >= 1.0:
            return tokens if alpha <= 0.0 else math.ceil(tokens / (k + 1))
        log_alpha, draw, rounds, emitted = math.log(alpha), rng.random, 0, 0
        while emitted < tokens:
            accepted = int(math.log(1.0 - draw()) / log_alpha)
            emitted += (accepted if accepted < k else k) + 1
            rounds += 1
        return rounds
    rounds, _ = renewal_draw(alpha, k, tokens, rng.gauss(0.0, 1.0), 0.0)
    return min(tokens, max(math.ceil(tokens / (k + 1)), round(rounds)))


def prompt_lengths(work, seed):
    """Each request's prompt tokens: all input_tokens, or log-normal around that mean with s.d. input_spread in log
    (stratified_lengths: they average input_tokens), drawn from a stream of their own (the answers' and the send
    times' draws stay as they were without a spread)."""
    return stratified_lengths(work.num_prompts, work.input_tokens, work.input_spread,
                              random.Random(f"serve:{seed}:prompts"))


def answer_lengths(work, rng):
    """Each request's output tokens: a replayed file's, log-normal around its mean and scaled to add up to its total;
    else stratified_lengths, averaging output_tokens after the cut at output_cap."""
    if not work.total_output:
        return stratified_lengths(work.num_prompts, work.output_tokens, work.output_spread, rng, work.output_cap)
    draws = [work.output_tokens * math.exp(work.output_spread * rng.gauss(0.0, 1.0) - work.output_spread ** 2 / 2)
             for _ in range(work.num_prompts)]
    if work.output_cap:
        draws = [min(d, work.output_cap) for d in draws]
    drawn = sum(draws)
    return whole_lengths([d * work.total_output / drawn for d in draws], work.total_output)


@dataclass(frozen=True)
class ServedRun:
    """What serve_run simulated: per request (in the order sent, seconds from the run's start) and per step."""
    arrival: tuple        #: when the client would have sent each request (its semaphore aside)
    start: tuple          #: when each request was sent, after the client's semaphore
    first: tuple          #: when its first token came (the step that prefilled its last prompt chunk)
    end: tuple            #: when its last token came
    output_tokens: tuple  #: tokens each generated
    input_tokens: tuple   #: each one's prompt tokens
    itl: tuple            #: (gap s, how many streamed chunks had it): every chunk after a request's first token
    peak_per_second: float   #: the most chunks streamed in a one-second bucket, first tokens included
                             #: (max_output_tokens_per_s)
    k: int                #: draft length (0: speculation off); at K by batch size, the K most decode steps ran
    drafts: float         #: rounds drafted, summed over sequences
    accepted_at: tuple    #: expected accepted drafts at positions 0..K-1, summed over those rounds
    cap: int              #: sequences the server ran at most (running_cap)
    steps: int            #: scheduler steps
    peak_running: int     #: most sequences running at once
    admitted: tuple = ()  #: when the scheduler took each request in (its wait in the server's queue ends)
    draft_tokens: float = None   #: tokens drafted, summed (None: drafts x k, one K throughout)
    k_steps: tuple = ()   #: ((K, decode steps at it), ...) of a run at K by batch size (a KTable), ascending K
    prefill_steps: int = 0   #: steps that prefilled prompt tokens
    prefilled: int = 0    #: prompt tokens they prefilled


class KSwitch:
    """A run at K by batch size (KTable): each decoding request's last round moved when the step's K changes.

    A request drew its rounds at the table's largest K (request_rounds), and carries that draw's luck, the drawn
    rounds over the rounds its tokens need on average at its alpha (N / tau), through every K it decodes at. When
    the K changes at a step, its tokens left are (rounds left) x tau at the old K over its luck, and its rounds left
    those tokens x its luck over tau at the new K (plain steps at K = 0: one a token), rounded up or down at random
    by the fraction. A round at K drafts K tokens and accepts position p with the request's alpha^(p + 1), counted
    as its rounds at each K end."""

    def __init__(self, table, alphas, needed, lengths, rng, accepted_at):
        self.table, self.alphas, self.rng, self.accepted_at = table, alphas, rng, accepted_at
        self.drawn = max(table.ks())
        self.luck = [rounds * round_moments(a, self.drawn)[0] / (length - 1) if length > 1 else 1.0
                     for rounds, a, length in zip(needed, alphas, lengths)]
        self.needed, self.begun = needed, {}
        self.k, self.drafts, self.draft_tokens = None, 0.0, 0.0
        self.steps = collections.Counter()

    def tokens_per_round(self, i, k):
        """A round's tokens at K over request i's luck (1 at K = 0: a plain step, one token)."""
        return round_moments(self.alphas[i], k)[0] / self.luck[i] if k else 1.0

    def rounds(self, i, now):
        """Request i's rounds at the current K, from its first decode step `now`."""
        self.begun[i] = now
        return self.whole(self.needed[i] * self.tokens_per_round(i, self.drawn) / self.tokens_per_round(i, self.k))

    def whole(self, rounds):
        """At least one round: the fraction up with its own chance."""
        low = int(rounds)
        return max(1, low + (self.rng.random() < rounds - low))

    def count(self, i, rounds, k):
        """Request i's rounds at K: its drafts and accepted positions."""
        if k and rounds > 0:
            a = self.alphas[i]
            self.drafts += rounds
            self.draft_tokens += rounds * k
            for position in range(k):
                self.accepted_at[position] += rounds * a ** (position + 1)

    def ended(self, i, now):
        if i in self.begun:
            self.count(i, now - self.begun.pop(i), self.k)

    def to(self, k, decoding, now):
        """Switch to K at decode step `now`: every decoding request's last round (the heap `decoding`, rebuilt in
        place) moved to the new K. Returns K."""
        moved = []
        for last, i in decoding:
            self.count(i, now - self.begun[i], self.k)
            self.begun[i] = now
            left = (last - now) * self.tokens_per_round(i, self.k)
            moved.append((now + self.whole(left / self.tokens_per_round(i, k)), i))
        decoding[:] = moved
        heapq.heapify(decoding)
        self.k = k
        return k

    def most_run(self):
        """The K most decode steps ran (the current K where none did)."""
        return max(self.steps.items(), key=lambda item: (item[1], item[0]))[0] if self.steps else self.k


COST_TABLES = {}   # (Deployment.physics, K, fit) -> {(decoders, prompt tokens): a step's ms}: the runs of one deployment and K
                  # (the SLO search's concurrencies, a benchmark pair) meet the same steps, each computed once


def step_costs(dep, k, fit, ranks=1, others=None):
    """The step-cost table simulate_run fills and reads ({(decoders, prompt tokens): ms}), one per (deployment, K,
    fit) in a process: a step's cost is a pure function of its key. ranks, others: a rank's table under attention
    data parallelism, keyed by the rank's own decoders and prompt tokens (simulate_run)."""
    key = (dep.physics, k, fit) + ((ranks, others) if ranks > 1 or others else ())
    if key not in COST_TABLES:
        if len(COST_TABLES) > 64:
            COST_TABLES.clear()
        COST_TABLES[key] = {}
    return COST_TABLES[key]


MEMO_PROMPTS = 10_240   # the largest run the plan prints in several places: ten prompts a slot at 1,024 concurrent
RUN_MEMO = {}   # serve_run's inputs -> its ServedRun: one run the plan prints in several places (the verdict's
                # headline, stage 1's predicted files, stage 4's expectations, the SLO search) is one computation


def serve_run(dep, work, k, alpha, spread, seed, fit=FIT, plan_batch=None, *, ranks=1, others=None):
    """simulate_run, once for each set of inputs in a process (RUN_MEMO; without speculation alpha and its spread draw
    nothing, so they are not part of the key). A ServedRun is frozen: every caller reads the same one."""
    key = (dep.physics, work, k, alpha if k else 0.0, spread if k else 0.0, seed, fit, plan_batch, ranks, others)
    if key in RUN_MEMO:
        return RUN_MEMO[key]
    run = simulate_run(dep, work, k, alpha, spread, seed, fit, plan_batch, ranks=ranks, others=others)
    if work.num_prompts <= MEMO_PROMPTS:   # a larger run is a file of its own (--predict-bench): not held after it
        if len(RUN_MEMO) > 64:
            RUN_MEMO.clear()
        RUN_MEMO[key] = run
    return run


def simulate_run(dep, work, k, alpha, spread, seed, fit=FIT, plan_batch=None, *, ranks=1, others=None):
    """Simulate one benchmark run of `work` on `dep`, speculation off (k = 0) or at K with per-token alpha around
    `alpha` (s.d. `spread` over requests), the server started as the plan starts it for plan_batch: a ServedRun.

    ranks: one rank of attention data parallelism (dep.dp_attention), its share of the traffic in `work`: it admits
    to its own cap (deployment.rank_cap) and budget
    (step_budget, a rank's), and every step of it costs the replica's pass with each rank as busy as this one (the
    MoE layers run over all ranks' tokens in step: costmodel prices the attention and host work of the busiest
    rank), a mean field of identical ranks. others: (chance, tokens), the chance that another rank prefills in a
    step and its chunk, which then paces the step (the ranks step together): each step costs its own pass and, with
    that chance, the pass with that chunk where it is the larger (goodput.others_of measures them on a first run).

    Every running decode advances at every step that decodes, so a request's chunks are the decode steps from
    its first token to its last: it needs its own count of rounds (request_rounds; L - 1 plain steps), drawn
    before the run, and the loop is over steps, not tokens.
    """
    # The workload's draws (answer lengths, send times) are the seed's alone, so the baseline and every K serve the
    # same requests; acceptance and jitter come from a stream of each K's own (a table's: of its rows).
    table = k if isinstance(k, KTable) else None
    if table is not None and len(table.ks()) == 1:   # one K at every batch: a fixed K
        k, table = table.ks()[0], None
    workload_rng = random.Random(f"serve:{seed}")
    rng = random.Random(f"serve:{seed}:{k}" if table is None else f"serve:{seed}:{table.rows}:{table.fallback}")
    n = work.num_prompts
    speculative = bool(k) if table is None else True
    cap = max(1, rank_cap(dep, speculative, plan_batch)) if ranks > 1 else running_cap(dep, speculative, plan_batch)
    assert cap >= 1, "the caller checks that a sequence fits (parse_bench_flags, compare_file, predicts_gate_pair)"
    budget = scheduled_budget(dep, max(table.ks()) if table else k, plan_batch)
    mixes, recv = dep.engine.mixes_prefill, dep.engine.recv_interval
    # A server that plans a step while the GPU runs the one before (schedules_ahead) admits a request only at a step
    # boundary whose previous step began after the request reached it, or at once when it is idle.
    ahead = schedules_ahead(dep, speculative)
    lengths = answer_lengths(work, workload_rng)
    prompts = prompt_lengths(work, seed)
    drawn_k = max(table.ks()) if table else k   # a table's requests draw their rounds at its largest K (KSwitch)
    needed, alphas, accepted_at = [], [], [0.0] * drawn_k
    for length in lengths:
        if not drawn_k:
            needed.append(length - 1)
            continue
        a = clip01(alpha + spread * rng.gauss(0.0, 1.0))
        rounds = request_rounds(a, drawn_k, length - 1, rng)
        needed.append(rounds)
        alphas.append(a)
        if table is None:
            for position in range(k):   # a round accepts position p when its first p + 1 drafts are kept
                accepted_at[position] += rounds * a ** (position + 1)
    switch = KSwitch(table, alphas, needed, lengths, rng, accepted_at) if table else None
    if switch:
        k = switch.k = table.at(1)
    per_decode = verify_tokens(dep, k) if k else 1
    arrivals = send_times(work, workload_rng)
    begin = arrivals[0]   # the first send: vLLM's one-second buckets start there
    limit = min(work.max_concurrency or n, n)
    start, first, end, taken = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    delay = fit.request_ms / 1e3   # a request reaches the scheduler this long after the client sends it
    sends = [(arrivals[i] + delay, i) for i in range(limit)]   # the client's next sends reaching the server, by time
    heapq.heapify(sends)
    held = limit                                       # the next request the semaphore holds
    waiting = collections.deque()                      # sent, not admitted
    prefilling = {}                                    # admitted -> prompt tokens left, first come first served
    decoding = []                                      # (decode step of its last token, request), soonest first
    newcomers = []                                     # first token since the last decode step
    itl = collections.defaultdict(int)          # ITL ticks -> chunks
    tally = PeakPerSecond(begin)   # chunks a second
    stretches = collections.defaultdict(int)    # (step cost, jitter quantiles) -> ITLs of stretches taken in one move
    # A step's cost from the deployment's grid of passes (chunk_cost on `grid`), at the replica's decoders; the run's
    # own cache by its steps' keys (`costs`): one table on one scheduler, two where a rank stands for all of them.
    costs, grid, jitter = step_costs(dep, k, fit, ranks, others), step_costs(dep, k, fit), STEP_JITTER
    chance, theirs = others or (0.0, 0)

    def priced(decoders, chunk):   # a step of this rank, the others' prefill with its chance
        own = chunk_cost(grid, dep, decoders * ranks, k, chunk, fit)
        if not chance or theirs <= chunk:
            return own
        return (1 - chance) * own + chance * chunk_cost(grid, dep, decoders * ranks, k, theirs, fit)
    moments = jitter_moments(jitter)
    t, done, steps, decode_steps, last_decode, peak, launched = 0.0, 0, 0, 0, 0.0, 0, -math.inf
    prefill_steps, prefilled_tokens = 0, 0
    # the loop's names bound locally: it runs a few times a request, millions of times a test suite
    inf, ceil, push, pop, tick, levels, tally_add = (math.inf, math.ceil, heapq.heappush, heapq.heappop,
                                                     ITL_TICKS_PER_S, JITTER_LEVELS, tally.add)
    while done < n:
        while sends and sends[0][0] <= t:
            at, i = pop(sends)
            start[i] = at - delay
            waiting.append(i)
        busy = bool(prefilling or decoding)
        polled = steps % recv == 0 or not busy   # the scheduler sees sent requests on its polls
        while polled and waiting and len(prefilling) + len(decoding) < cap and not (
                ahead and busy and start[waiting[0]] + delay > launched):
            admitted = waiting.popleft()
            prefilling[admitted] = prompts[admitted]
            taken[admitted] = t
        if not prefilling and not decoding:
            t = sends[0][0]
            continue
        # The table's K at this step's batch: the requests the scheduler holds, prefilling or decoding (an assumption:
        # which count vLLM's proposer keys num_speculative_tokens_per_batch_size on was not read in its source).
        if switch and switch.table.at(len(prefilling) + len(decoding)) != k:
            k = switch.to(switch.table.at(len(prefilling) + len(decoding)), decoding, decode_steps)
            costs, grid, per_decode = (step_costs(dep, k, fit, ranks, others), step_costs(dep, k, fit),
                                       verify_tokens(dep, k) if k else 1)
        if not prefilling and not newcomers:
            # Only decodes until the next request ends or (with room for it) the next is sent: the same step over
            # and over, each with its own jitter. The general step below runs the one that ends a request.
            decoders = len(decoding)
            key = (decoders, -1)   # a decode-only step, interpolated as chunk_cost's are
            if key not in costs:
                costs[key] = priced(decoders, 0)
            cost, until = costs[key] / 1e3, sends[0][0] if sends and decoders < cap else inf
            after = 1 if ahead and waiting and start[waiting[0]] + delay > launched else 0   # planned without it
            poll = steps + after + (-(steps + after)) % recv if waiting and decoders < cap else inf   # the next poll that admits
            # as many steps as stay short of the next request's last token and of the next poll, while t < until:
            # the hottest loop of the simulation, its names bound locally
            limit, ran, draw = min(decoding[0][0] - 1 - decode_steps, poll - steps), 0, rng.random
            if until != inf:   # about as many steps as reach the next send
                limit = min(limit, max(1, ceil((until - t) / cost)))
            while ran < limit and t < until and (ran == 0 or limit - ran < AGGREGATE_STEPS):
                launched = t
                t += cost * jitter[int(draw() * levels)]
                itl[int((t - last_decode) * tick + 0.5)] += decoders
                tally_add(t, decoders)
                last_decode = t
                ran += 1
            if ran < limit and t < until:   # the rest of a long stretch in one move (aggregate_steps)
                t = aggregate_steps(limit - ran, cost, decoders, t, stretches, tally, rng, moments)
                # its last step began about a mean step before its end: the stretch is drawn as a sum, not step by step
                last_decode, ran, launched = t, limit, t - cost
            steps += ran
            decode_steps += ran
            if switch:
                switch.steps[k] += ran
            if t >= until or steps >= poll:
                continue
        prefill_only = bool(prefilling) and not mixes
        decoders = 0 if prefill_only else len(decoding)
        room, chunk, prefilled = budget - decoders * per_decode, 0, []
        for i in prefilling:
            if room <= 0:
                break
            take = min(prefilling[i], room)
            prefilling[i] -= take
            room -= take
            chunk += take
            if not prefilling[i]:
                prefilled.append(i)
        key = (decoders, chunk)
        if key not in costs:
            costs[key] = priced(decoders, chunk)
        launched = t
        t += costs[key] * jitter[int(rng.random() * levels)] / 1e3
        steps += 1
        if chunk:
            prefill_steps, prefilled_tokens = prefill_steps + 1, prefilled_tokens + chunk
        peak = max(peak, len(prefilling) + len(decoding))
        ended = []
        if decoders:
            decode_steps += 1
            if switch:
                switch.steps[k] += 1
            continuing = decoders - len(newcomers)
            if continuing:
                itl[int((t - last_decode) * tick + 0.5)] += continuing
            for i in newcomers:   # a first decode chunk follows the request's own first token
                itl[int((t - first[i]) * tick + 0.5)] += 1
            newcomers, last_decode = [], t
            tally_add(t, decoders)
            while decoding and decoding[0][0] == decode_steps:
                ended.append(pop(decoding)[1])
        for i in prefilled:
            del prefilling[i]
            first[i] = t
            tally_add(t, 1)
            if needed[i]:
                push(decoding, (decode_steps + (switch.rounds(i, decode_steps) if switch else needed[i]), i))
                newcomers.append(i)
            else:
                ended.append(i)
        for i in ended:
            if switch:
                switch.ended(i, decode_steps)
            end[i] = t
            done += 1
            if held < n:
                push(sends, (max(t, arrivals[held]) + delay, held))
                held += 1
    spread_stretches(stretches, itl, moments)
    return ServedRun(arrival=tuple(arrivals), start=tuple(start), first=tuple(first), end=tuple(end),
                     output_tokens=tuple(lengths), input_tokens=tuple(prompts),
                     itl=tuple((gap / ITL_TICKS_PER_S, count) for gap, count in sorted(itl.items())),
                     peak_per_second=tally.result(), k=switch.most_run() if switch else k,
                     drafts=switch.drafts if switch else float(sum(needed)) if k else 0.0,
                     accepted_at=tuple(accepted_at), cap=cap, steps=steps, peak_running=peak,
                     admitted=tuple(taken), draft_tokens=switch.draft_tokens if switch else None,
                     k_steps=tuple(sorted(switch.steps.items())) if switch else (), prefill_steps=prefill_steps,
                     prefilled=prefilled_tokens)


def bench_stats(values):
    """(mean, median, population s.d., sorted values) as numpy gives them to calculate_metrics; [] is taken as [0]."""
    values = sorted(values) or [0.0]
    mean = math.fsum(values) / len(values)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    return mean, percentile(values, 0.5), std, values


def weighted_percentile(pairs, total, q, ends=None):
    """percentile(q) of the values that pairs (value, count), sorted by value, stand for: numpy's linear one of the
    list with each value repeated count times, total values in all. ends: the counts' running totals, when the
    caller asks for several percentiles of the same pairs.

    >>> weighted_percentile([(1.0, 2), (3.0, 1), (5.0, 1)], 4, 0.5) == percentile([1.0, 1.0, 3.0, 5.0], 0.5)
    True
    """
    ends = ends or list(itertools.accumulate(count for _, count in pairs))
    at = q * (total - 1)
    low, share = int(at), at - int(at)
    below = pairs[bisect.bisect_right(ends, low)][0]   # the value at rank low: the first pair whose total passes it
    if share == 0:
        return below
    return below + share * (pairs[min(bisect.bisect_right(ends, low + 1), len(pairs) - 1)][0] - below)


def itl_stats(pairs):
    """(mean, median, population s.d., {p: percentile}) of the ITLs that pairs (gap, chunks) stand for."""
    ends = list(itertools.accumulate(count for _, count in pairs))
    total = ends[-1] if ends else 0
    if not total:
        return 0.0, 0.0, 0.0, {p: 0.0 for p in BENCH_PERCENTILES}
    mean = math.fsum(gap * count for gap, count in pairs) / total
    std = math.sqrt(math.fsum(count * (gap - mean) ** 2 for gap, count in pairs) / total)
    return (mean, weighted_percentile(pairs, total, 0.5, ends), std,
            {p: weighted_percentile(pairs, total, p / 100, ends) for p in BENCH_PERCENTILES})


def good_requests(run, slo):
    """Requests that meet every bound of `slo` ({"ttft"|"tpot"|"e2el": ms}) as calculate_metrics counts them for
    --goodput (vllm/benchmarks/serve.py): a request is good when each of its TTFT, TPOT and E2EL the SLO names is at
    most the bound; a request of one output token has a TPOT of 0 there.
    >>> run = ServedRun(arrival=(0, 0), start=(0.0, 0.0), first=(0.1, 0.3), end=(1.1, 0.3), output_tokens=(11, 1),
    ...                 input_tokens=(5, 5), itl=(), peak_per_second=1.0, k=0, drafts=0.0, accepted_at=(), cap=2, steps=1,
    ...                 peak_running=2)
    >>> good_requests(run, {"tpot": 100.0}), good_requests(run, {"ttft": 200.0}), good_requests(run, {"e2el": 1000.0})
    (2, 1, 1)
    """
    ttft, tpot, e2el = (slo[key] / 1e3 if key in slo else math.inf for key in SLO_KEYS)   # s; no bound: none
    good = 0
    for s, f, e, tokens in zip(run.start, run.first, run.end, run.output_tokens):
        good += f - s <= ttft and ((e - f) / (tokens - 1) if tokens > 1 else 0.0) <= tpot and e - s <= e2el
    return good


def bench_result(run, work, dep, slo=None):
    """The run as `vllm bench serve --save-result` writes it (vllm/benchmarks/serve.py: main's result_json, then
    benchmark's result and calculate_metrics' keys), without --save-detailed's per-request lists and without the
    date it ran. slo: the --goodput bounds ({key: ms}) the run is given: request_goodput, else None as vLLM
    writes it without --goodput."""
    n, duration = len(run.start), max(run.end)
    total_out = sum(run.output_tokens)
    total_in = sum(run.input_tokens)
    # Peak chunks in a one-second bucket from the first send (vLLM stamps a token time per streamed chunk:
    # serve_run counts them) and peak concurrency over half-open [start, end): a request sent at the instant
    # another ended does not overlap it.
    events = sorted([(t, 1) for t in run.start] + [(t, -1) for t in run.end])
    served = served_model(dep)
    result = {"endpoint_type": "openai-chat", "backend": "openai-chat", "label": None, "model_id": served,
              "tokenizer_id": served, "num_prompts": work.num_prompts,
              "request_rate": "inf" if math.isinf(work.request_rate) else work.request_rate,
              "burstiness": work.burstiness, "max_concurrency": work.max_concurrency,
              "duration": duration, "completed": n, "failed": 0, "total_input_tokens": total_in,
              "total_output_tokens": total_out, "request_throughput": n / duration,
              GOODPUT_KEY if accepts(dep, "bench request_goodput key") else GOODPUT_KEY + ":":
              good_requests(run, slo) / duration if slo else None,
              "output_throughput": total_out / duration, "total_token_throughput": (total_in + total_out) / duration,
              # the per-request lists vLLM keeps without --save-detailed, in s: latency and time in the semaphore
              "latencies": [e - s for s, e in zip(run.start, run.end)],
              "queue_times": [s - a for a, s in zip(run.arrival, run.start)],
              "max_output_tokens_per_s": float(run.peak_per_second),
              "max_concurrent_requests": max(itertools.accumulate(delta for _, delta in events)), "rtfx": 0.0}
    drafts, accepted = round(run.drafts), round(sum(run.accepted_at))
    drafted = drafts * run.k if run.draft_tokens is None else round(run.draft_tokens)
    if drafted and drafts:   # vLLM writes them only when drafts were counted, from the integer counts
        result.update({"spec_decode_acceptance_rate": 100.0 * accepted / drafted,
                       "spec_decode_acceptance_length": 1.0 + accepted / drafts,
                       "spec_decode_num_drafts": drafts, "spec_decode_draft_tokens": drafted,
                       "spec_decode_accepted_tokens": accepted,
                       "spec_decode_per_position_acceptance_rates": [round(a) / drafts for a in run.accepted_at]})
    per = {"ttft": [f - s for s, f in zip(run.start, run.first)], "e2el": [e - s for s, e in zip(run.start, run.end)],
           "tpot": [(e - f) / (tokens - 1) for f, e, tokens in zip(run.first, run.end, run.output_tokens)
                    if tokens > 1]}
    for name in BENCH_METRICS:
        if name == "itl":
            mean, median, std, at = itl_stats(run.itl)
        else:
            mean, median, std, values = bench_stats(per[name])
            at = {p: percentile(values, p / 100) for p in BENCH_PERCENTILES}
        result.update({f"mean_{name}_ms": mean * 1e3, f"median_{name}_ms": median * 1e3, f"std_{name}_ms": std * 1e3})
        result.update({f"p{p}_{name}_ms": at[p] * 1e3 for p in BENCH_PERCENTILES})
    return result


