"""A `vllm bench serve` run as the plan writes it and the simulation serves it: its traffic (Workload), its prompts,
the metrics and percentiles it saves, the SLO keys and words of --goodput, and the key that marks a predicted file.
No simulation: the commands, the flags and the simulation all read these.
"""
from __future__ import annotations

import math
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
    output_cap: int | None = None   #: max_tokens: no answer is longer (ShareGPT's answers, --sharegpt-output-len)
    total_output: int | None = None   #: a replayed run's own total: the drawn lengths are scaled to add up to it
    input_spread: float = 0.0     #: s.d. of ln(prompt tokens) over requests (0: every prompt input_tokens long)


REQUEST_WORK = 3   # a request's share of a run's cost, in steps: its draws, its admission and the steps of its decode
                   # stretch that are not taken in one move; each prompt chunk (a step's token budget of it) adds one


def run_work(requests, input_tokens, budget):
    """What simulate_run costs for `requests` requests of `input_tokens`-token prompts, in steps' work (REQUEST_WORK
    a request and one a prompt chunk of the step's `budget`): about 10 us a unit on 2 cores, whatever the answers'
    length (bench/worst_inputs.py), since a stretch of decode-only steps is one move."""
    return requests * (REQUEST_WORK + -(-input_tokens // budget))


BENCH_PERCENTILES = (50, 99)   # the plan's --metric-percentiles


BENCH_METRICS = ("ttft", "tpot", "itl", "e2el")   # the plan's --percentile-metrics, in the order vLLM writes them


GOODPUT_KEY = "request_goodput"   # vLLM before 0.9.2 saves it with a colon after it (releases.py)


SLO_KEYS = ("ttft", "tpot", "e2el")   # vllm bench serve --goodput's keys, each in ms (vllm/benchmarks/serve.py)


def bench_prompts(batch):
    """Prompts per benchmark run: ten per concurrent slot, so ramp-up and drain stay a small share."""
    return max(200, 10 * batch)


SLO_PERCENTILE = 99   # the percentile of each metric an SLO bounds: "P99 TPOT under 50 ms" (the plan's runs write p99)


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


PREDICTION_KEY = "eagle3_rollout_prediction"   # the key that marks a file as this tool's prediction, not a run


@dataclass(frozen=True)
class Traffic:
    """What the simulated requests are drawn from."""
    seed: int                #: seeds every simulated request
    alpha_spread: float      #: s.d. of a request's per-token alpha around the mean
    output_spread: float     #: s.d. of ln(output tokens) over requests
    input_spread: float      #: s.d. of ln(prompt tokens) over the plan's ShareGPT-like runs' requests
    slo: tuple               #: the SLO they are served at: ((key, ms), ...), keys as --goodput's (() none)


BENCH_OPEN_PROMPTS = 1000   # vllm bench serve's default --num-prompts (vllm/benchmarks/serve.py): an open loop's


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


def bench_names(ks, tag):
    """The files of one tag: the baseline, then one a K (the plan's names: baseline_c32.json, spec_k3_c32.json)."""
    return [f"baseline_{tag}.json"] + [f"spec_k{k}_{tag}.json" for k in ks]
