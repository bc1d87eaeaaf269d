"""A `vllm bench serve` run as the plan writes it and the simulation serves it: its traffic (Workload), its prompts,
the metrics and percentiles it saves, the SLO keys and words of --goodput, and the key that marks a predicted file.
No simulation: the commands, the flags and the simulation all read these.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .releases import accepts


@dataclass(frozen=True)
class Workload:
    """One `vllm bench serve` run's traffic (its flags), for serve_run."""
    num_prompts: int              #: --num-prompts
    max_concurrency: int | None   #: --max-concurrency (None: no client cap)
    request_rate: float           #: --request-rate, requests/s (math.inf: all at once)
    burstiness: float             #: --burstiness: the gamma shape of the gaps (1: Poisson)
    input_tokens: int             #: prompt tokens a request
    output_tokens: int            #: mean output tokens a request
    output_spread: float          #: s.d. of ln(output tokens) over requests (0: every answer the same length)
    output_cap: int | None = None   #: no answer is longer (traffic_workload: answer_cap, a long tail's cut)
    total_output: int | None = None   #: a replayed run's own total: the drawn lengths are scaled to add up to it
    input_spread: float = 0.0     #: s.d. of ln(prompt tokens) over requests (0: every prompt input_tokens long)


REQUEST_WORK = 3   # a request's share of a run's cost, in steps: its draws, its admission and the steps of its decode
                   # stretch that are not taken in one move; each prompt chunk (a step's token budget of it) adds one


def run_work(requests, input_tokens, budget):
    """What simulate_run costs for `requests` requests of `input_tokens`-token prompts, in steps' work (REQUEST_WORK
    a request and one a prompt chunk of the step's `budget`): about 10 us a unit on 2 cores, whatever the answers'
    length (bench/worst_inputs.py), since a stretch of decode-only steps is one move."""
    return requests * (REQUEST_WORK + -(-input_tokens // budget))


# One workload per flag set: --output-tokens and --input-tokens are the means of what every simulated run sends (the
# SLO search, the plan's benchmark pair, --predict-bench, --choose), after any cap. A spread draws each request's
# length log-normal, one from each of n equally likely strata in random order, so that 50 requests average what
# 1,000 do; an answer is cut at ANSWER_CAP means (a long tail, not a wall at the mean), and the log-normal's own mean
# is raised so that the cut answers still average the mean asked. (The plan's ShareGPT runs cap max_tokens at the mean
# itself, --sharegpt-output-len: vLLM's sampler drops prompt + output past 2,048 tokens; commands.bench_lines.)
ANSWER_CAP = 4   # the longest answer a run with spread lengths sends, in means: P(cut) = 1.7% at spread 0.8
NORMAL = statistics.NormalDist()


def answer_cap(output_tokens):
    """max_tokens of a run whose answers average `output_tokens`: ANSWER_CAP of them."""
    return ANSWER_CAP * output_tokens


def capped_mean(mean, spread, cap):
    """E min(X, cap) for X log-normal of mean `mean` and s.d. `spread` in log.
    >>> round(capped_mean(100.0, 0.8, 1e9), 6), round(capped_mean(100.0, 0.0, 50.0), 6)
    (100.0, 50.0)
    """
    if spread <= 0:
        return min(mean, cap)
    edge = math.log(cap / mean)
    return (mean * NORMAL.cdf((edge - spread * spread / 2) / spread)
            + cap * (1.0 - NORMAL.cdf((edge + spread * spread / 2) / spread)))


def uncut_mean(mean, spread, cap):
    """The mean a log-normal of s.d. `spread` in log needs for its draws cut at `cap` to average `mean` (< cap):
    capped_mean solved by bisection (it rises with the mean).
    >>> m = uncut_mean(1024.0, 0.8, 4096.0)
    >>> round(capped_mean(m, 0.8, 4096.0), 6), m > 1024
    (1024.0, True)
    """
    low, high = mean, mean
    while capped_mean(high, spread, cap) < mean:
        high *= 2.0
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if capped_mean(middle, spread, cap) < mean else (low, middle)
    return (low + high) / 2


def stratified_lengths(n, mean, spread, rng, cap=None):
    """n lengths of at least 1, log-normal of s.d. `spread` in log, cut at `cap`, averaging `mean` (to a rounding):
    one draw from each of n equally likely strata, in an order `rng` shuffles, scaled so their sum is n x mean.
    >>> import random
    >>> lengths = stratified_lengths(50, 1024, 0.8, random.Random(0), cap=4096)
    >>> abs(sum(lengths) / 50 - 1024) < 1, max(lengths) <= 4096, len(set(lengths)) > 40
    (True, True, True)
    """
    if not spread or n < 1:
        return [max(1, round(mean))] * n
    centre = uncut_mean(mean, spread, cap) if cap else mean
    order = list(range(n))
    rng.shuffle(order)
    draws = [centre * math.exp(spread * NORMAL.inv_cdf(min(max((i + rng.random()) / n, 1e-12), 1 - 1e-12))
                               - spread * spread / 2) for i in order]
    if cap:
        draws = [min(d, cap) for d in draws]
    scale = n * mean / math.fsum(draws)   # within a percent of 1: the strata's draws average their mean
    return [max(1, min(round(d * scale), cap or math.inf)) for d in draws]


BENCH_PERCENTILES = (50, 99)   # the plan's --metric-percentiles


BENCH_METRICS = ("ttft", "tpot", "itl", "e2el")   # the plan's --percentile-metrics, in the order vLLM writes them


GOODPUT_KEY = "request_goodput"   # vLLM before 0.9.2 saves it with a colon after it (releases.py)


SLO_KEYS = ("ttft", "tpot", "e2el")   # vllm bench serve --goodput's keys, each in ms (vllm/benchmarks/serve.py)


def bench_prompts(batch):
    """Prompts per benchmark run: ten per concurrent slot, so ramp-up and drain stay a small share."""
    return max(200, 10 * batch)


SLO_PERCENTILE = 99   # the percentile of each metric an SLO bounds: "P99 TPOT under 50 ms" (the plan's runs write p99)


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


PREDICTION_KEY = "eagle3_rollout_prediction"   # the key that marks a file as this tool's prediction, not a run


@dataclass(frozen=True)
class Traffic:
    """What the simulated requests are drawn from."""
    seed: int                #: seeds every simulated request
    alpha_spread: float      #: s.d. of a request's per-token alpha around the mean
    output_spread: float     #: s.d. of ln(output tokens) over requests
    input_spread: float      #: s.d. of ln(prompt tokens) over the plan's ShareGPT-like runs' requests
    slo: tuple               #: the SLO they are served at: ((key, ms), ...), keys as --goodput's (() none)
    num_prompts: int         #: requests of each open-loop run (the SLO search's, --predict-bench's at a rate)
    burstiness: float        #: the gamma shape of an open loop's gaps (1: Poisson)


def traffic_workload(dep, traffic, *, concurrency=None, rate=math.inf, prompts=None):
    """The one Workload every simulation of the traffic sends (the SLO search, the plan's benchmark pair,
    --predict-bench, --choose): lengths averaging the deployment's input and output tokens with the traffic's
    spreads, answers cut at answer_cap where they spread; closed loop at `concurrency` (bench_prompts of them) or
    open loop at `rate` (the traffic's --num-prompts and --burstiness). prompts: --num-prompts given."""
    return Workload(num_prompts=prompts or (bench_prompts(concurrency) if concurrency else traffic.num_prompts),
                    max_concurrency=concurrency, request_rate=rate,
                    burstiness=1.0 if concurrency else traffic.burstiness, input_tokens=dep.input_tokens,
                    output_tokens=dep.output_tokens, output_spread=traffic.output_spread,
                    output_cap=answer_cap(dep.output_tokens) if traffic.output_spread else None,
                    input_spread=traffic.input_spread)


SAME_LENGTHS = 0.05   # a spread of ln(output tokens) below this, read from a file, is taken as equal answers: a TPOT
                     # that varies a few % between requests gives about as much


def length_spread(latency):
    """The s.d. of ln(output tokens) a run's own spreads imply, or None when it gives no E2EL spread.

    A request's decode time E2EL - TTFT is (L - 1) TPOT. Its coefficient of variation is
    sqrt(var E2EL - var TTFT) / (mean E2EL - mean TTFT), taking the two as independent; as
    log-normals, ln(1 + cv^2) of the decode time is the lengths' s^2 plus the TPOTs' (their own
    std_tpot_ms over mean_tpot_ms: with speculation requests accept differently).

    >>> round(length_spread({"mean_e2el_ms": 1100.0, "std_e2el_ms": 700.0, "mean_ttft_ms": 100.0,
    ...                      "std_ttft_ms": 0.0}), 4) == round(math.sqrt(math.log(1 + 0.7 ** 2)), 4)
    True
    >>> length_spread({"mean_e2el_ms": 1100.0, "std_e2el_ms": 100.0, "mean_tpot_ms": 10.0, "std_tpot_ms": 1.0})
    0.0
    """
    e2el, ttft = latency.get("mean_e2el_ms"), latency.get("mean_ttft_ms", 0.0)
    sd_e2el, sd_ttft = latency.get("std_e2el_ms"), latency.get("std_ttft_ms", 0.0)
    if not e2el or sd_e2el is None or e2el <= ttft:
        return None
    decode = math.sqrt(max(0.0, sd_e2el ** 2 - sd_ttft ** 2)) / (e2el - ttft)
    tpot = latency.get("std_tpot_ms", 0.0) / latency["mean_tpot_ms"] if latency.get("mean_tpot_ms") else 0.0
    return min(2.0, math.sqrt(max(0.0, math.log1p(decode * decode) - math.log1p(tpot * tpot))))


def bench_tags(concurrencies, rates):
    """(batch, rate, tag) of each predicted run: the closed-loop concurrencies, or, given rates, open loop at each."""
    if rates:
        return [(None, rate, f"r{rate:g}") for rate in rates]
    return [(batch, math.inf, f"c{batch}") for batch in concurrencies]


PLAN_KS = "plan"   # --ks plan: the predicted speculative run at the plan's K by batch size, as its server runs it
MIN_PROMPTS = 10   # the fewest requests a run sends: a tenth of them is one request (goodput.growing)


def bench_names(ks, tag):
    """The files of one tag: the baseline, then one a K (the plan's names: baseline_c32.json, spec_k3_c32.json;
    spec_kplan_r6.json at the plan's K by batch size).
    >>> bench_names([3, PLAN_KS], "r6")
    ['baseline_r6.json', 'spec_k3_r6.json', 'spec_kplan_r6.json']
    """
    return [f"baseline_{tag}.json"] + [f"spec_k{k}_{tag}.json" for k in ks]
