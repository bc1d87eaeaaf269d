"""`vllm bench serve --save-result` files read and checked at the boundary: the summary keys, their agreement with
each other (completed against sent, throughput against tokens over time), the acceptance in their spec_decode_*
keys, the runs --calibrate fits on and the pair --bench-baseline / --bench-spec compare. A bad file raises UsageError.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

from .records import (
    BENCH_LIMIT_BYTES, CALIBRATION_FILE_LIMIT, CONCURRENCY_LIMIT, COUNT_LIMIT, finite_number, K_LIMIT, shown,
    TOKENS_LIMIT, UsageError,
)
from .workload import PREDICTION_KEY
from .bounded import parse_json, read_text
from .readers import COUNT_SLACK, Counters, decoding_batch, measured_acceptance, one_average_draft, OWN_LENGTHS, RUN_NOISE


LATENCY_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")


WORKLOAD_KEYS = ("model_id", "backend", "num_prompts", "request_rate", "max_concurrency", "multi_turn_concurrency")


def bench_object(path, flag):
    """The result object of a benchmark file, and a note when it is one of several."""
    text = read_text(path, flag, BENCH_LIMIT_BYTES, " (saved with --save-detailed? this tool reads the summary "
                                                    "keys only: save it without)")
    try:
        return parse_json(text, flag, path), None
    except UsageError as not_json:
        # `--append-result` writes one JSON object a line: the last is the newest run, the only one parsed (a file
        # of millions of small lines would take gigabytes parsed whole).
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) < 2:
            raise
        try:
            last = parse_json(lines[-1], flag, path)
        except UsageError:
            raise not_json from None
    return last, f"{path} holds {len(lines)} results (--append-result); the last is used"


def json_whole(data, key, where, least=0, most=COUNT_LIMIT):
    """data[key] as a whole number from least to most, or None when it is missing or null."""
    value = data.get(key)
    if value is None:
        return None
    if type(value) is not int or not least <= value <= most:   # type(): a JSON true is no count
        raise UsageError(f"{where}: {key} must be a whole number from {least:,} to {most:,.0f}; got {shown(value)}")
    return value


AMOUNT_RANGE = (1e-3, 1e9)   # a latency in ms or a throughput in tokens/s, when not 0: ratios of two stay finite


def json_amount(data, key, where, least=AMOUNT_RANGE[0]):
    """data[key] as 0 or a number in [least, 1e9], or None when it is missing, null or NaN (vllm bench writes NaN
    for a statistic with no sample)."""
    value = data.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if not finite_number(value) or not (value == 0 or least <= value <= AMOUNT_RANGE[1]):
        raise UsageError(f"{where}: {key} must be 0 or a number from {least:g} to {AMOUNT_RANGE[1]:g}; got "
                         f"{shown(value)}")
    return value


@dataclass(frozen=True)
class Bench:
    """What this tool uses of a `vllm bench serve --save-result` JSON, each value checked (read_bench)."""
    path: str
    flag: str                #: the flag that named it
    latency: dict            #: its latency keys (mean_tpot_ms, p99_itl_ms, ...) with a value
    output_throughput: float   #: output tokens per second
    max_concurrency: int     #: max_concurrency (or multi_turn_concurrency); None: open loop or unknown
    open_loop: bool          #: whether it recorded no concurrency
    completed: int           #: completed requests
    total_input_tokens: int
    total_output_tokens: int
    spec: dict               #: its spec_decode_* keys
    workload: dict           #: its WORKLOAD_KEYS, which a pair must share
    model_id: str
    notes: list              #: what the reading noticed
    others: dict = field(default_factory=dict)   #: its other numbers --compare checks (BENCH_OTHERS)
    raw_burstiness: object = None   #: its burstiness as written (checked where it is used, by --compare)
    goodput: float = None    #: request_goodput (vLLM before 0.9.2: "request_goodput:"), None without --goodput


BENCH_OTHERS = ("duration", "request_throughput", "total_token_throughput", "max_output_tokens_per_s")


def read_bench(path, flag):
    """The numbers of a `vllm bench serve --save-result` JSON that the comparison uses, each checked."""
    data, note = bench_object(path, flag)
    where = f"{flag}: {path}"
    if isinstance(data, list):
        raise UsageError(f"{where} is a list of {len(data)} runs, as `vllm bench sweep` writes its "
                         "summary.json: pass one run's own result file")
    if not isinstance(data, dict):
        raise UsageError(f"{where} is not a benchmark result object")
    if PREDICTION_KEY in data:
        raise UsageError(f"{where} is a prediction this tool wrote (--predict-bench), not a measurement: pass the "
                         "file the benchmark saved")
    if json_whole(data, "completed", where) == 0:
        raise UsageError(f"{where} has completed 0: every request failed, nothing was measured")
    for key in ("duration", "output_throughput", "request_throughput", "total_token_throughput"):
        value = data.get(key)   # NaN is vllm bench's mark of a latency without a sample; a run always has these
        if (isinstance(value, float) and math.isnan(value)) or (key == "duration" and value == 0):
            raise UsageError(f"{where}: {key} is {value}, not a usable {key}: a run that completed requests "
                             "measured it; not one run's numbers")
    latency = {key: json_amount(data, key, where, 0.0 if key.startswith("std_") else AMOUNT_RANGE[0])
               for key in data if LATENCY_KEY.match(key)}
    latency = {key: value for key, value in latency.items() if value is not None}
    if not latency:
        raise UsageError(f"{where} has none of the latency keys (mean_tpot_ms, p99_itl_ms, ...)")
    for key in WORKLOAD_KEYS:
        if not isinstance(data.get(key), (str, int, float, type(None))):
            raise UsageError(f"{where}: {key} must be a single value; got {shown(data[key])}")
    concurrency = [json_whole(data, key, where, 1, CONCURRENCY_LIMIT)
                   for key in ("max_concurrency", "multi_turn_concurrency")]
    concurrency = concurrency[0] or concurrency[1]
    notes = [note] if note else []
    if concurrency is None and "max_concurrency" not in data:
        notes.append(f"{path} records no max_concurrency (files before mid-2024 do not): the concurrency it ran at "
                     "is unknown")
    spec = {key: data[key] for key in data if key.startswith("spec_decode_")}
    bench = Bench(path=str(path), flag=flag, latency=latency,
                  output_throughput=json_amount(data, "output_throughput", where), max_concurrency=concurrency,
                  open_loop=concurrency is None, completed=json_whole(data, "completed", where),
                  total_input_tokens=json_whole(data, "total_input_tokens", where),
                  total_output_tokens=json_whole(data, "total_output_tokens", where), spec=spec,
                  workload={key: data.get(key) for key in WORKLOAD_KEYS}, model_id=data.get("model_id"), notes=notes,
                  others={key: value for key in BENCH_OTHERS if (value := json_amount(data, key, where)) is not None},
                  raw_burstiness=data.get("burstiness"),
                  goodput=data.get("request_goodput", data.get("request_goodput:")))
    return consistent(bench, where, data.get("failed"))


THROUGHPUT_SLACK = 0.05   # vllm bench serve writes output_throughput as total_output_tokens / duration exactly;
                          # 5% leaves room for files other tools write in its format, not for another run's numbers


def consistent(bench, where, failed=None):
    """bench, or UsageError naming the contradiction when its own numbers cannot be one run's: more requests
    completed than sent, no output token at all, or an output throughput that is not its tokens over its time."""
    sent, completed, tokens = bench.workload.get("num_prompts"), bench.completed, bench.total_output_tokens
    for key, value, least in (("num_prompts", sent, 1), ("failed", failed, 0)):   # counts of requests
        if value is not None and not (type(value) is int and value >= least):
            raise UsageError(f"{where}: {key} must be a whole number of requests, at least {least}; got {shown(value)}")
    if sent is not None and completed is not None and completed + (failed or 0) > sent:
        ended = f"completed {completed:,}" + (f" and failed {failed:,}" if failed else "")
        raise UsageError(f"{where} {ended} requests of its num_prompts {sent:,}: a run ends no more requests than it "
                         "sends")
    if sent is not None and completed is not None and failed is not None and completed + failed != sent:
        # vllm/benchmarks/serve.py: every prompt sent ends completed or failed before the result is saved
        raise UsageError(f"{where} completed {completed:,} and failed {failed:,} requests of its num_prompts "
                         f"{sent:,}: a finished run ends every request it sends, so they must add up to it")
    goodput, throughput = bench.goodput, bench.others.get("request_throughput")
    if goodput is not None and not (finite_number(goodput) and 0.0 <= goodput
                                    and (throughput is None or goodput <= throughput * (1 + 1e-9))):
        raise UsageError(f"{where}: request_goodput is the requests a second that met the run's --goodput bounds, "
                         f"from 0 to its request_throughput{f' {throughput:,.6g}' if throughput is not None else ''}; "
                         f"got {shown(goodput)}")
    burstiness = bench.raw_burstiness
    if burstiness is not None and not (finite_number(burstiness) and 0.01 <= burstiness <= 100):
        raise UsageError(f"{where}: burstiness must be a number from 0.01 to 100; got {shown(burstiness)}")
    if tokens == 0:
        raise UsageError(f"{where} has total_output_tokens 0: its requests decoded no output tokens, so nothing of "
                         "decoding was measured")
    rate = bench.workload.get("request_rate")
    if not (rate is None or rate == "inf" or (type(rate) in (int, float) and rate > 0)):   # NaN fails rate > 0
        raise UsageError(f"{where}: request_rate must be \"inf\" or a rate above 0; got {shown(rate)}")
    for metric in ("ttft", "tpot", "itl", "e2el"):   # percentiles only rise: p50 <= p90 <= p99
        ranked = sorted((50.0 if m.group(1) == "median" else float(m.group(1)[1:]), value, key)
                        for key, value in bench.latency.items()
                        if (m := LATENCY_KEY.match(key)) and m.group(2) == metric and m.group(1) not in ("mean", "std"))
        mean = bench.latency.get(f"mean_{metric}_ms")
        if mean == 0 and any(value > 0 for _, value, _ in ranked):
            raise UsageError(f"{where}: mean_{metric}_ms is 0 while its percentiles are not: not one run's numbers")
        for (p0, v0, k0), (p1, v1, k1) in zip(ranked, ranked[1:]):
            if p1 > p0 and v1 < v0 * (1 - 1e-9):
                raise UsageError(f"{where}: {k1} {v1:,.6g} is below its {k0} {v0:,.6g}: a higher percentile is never "
                                 "lower; not one run's numbers")
    duration, throughput = bench.others.get("duration"), bench.output_throughput
    if tokens is not None and duration and throughput:
        implied = tokens / duration
        if abs(implied / throughput - 1) > THROUGHPUT_SLACK:
            raise UsageError(f"{where}: output_throughput {throughput:,.6g} tok/s is not its total_output_tokens "
                             f"{tokens:,} over its duration {duration:,.6g} s ({implied:,.6g} tok/s): not one run's "
                             "numbers")
    return bench


def workload_value(value):
    """A workload key's value as compared: a rate of "inf" and a JSON Infinity are one rate, and NaN is NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"
    return value


def same_workload(base, spec):
    """Refuse a pair that did not run the same workload (model, backend, prompts, rate, concurrency)."""
    for key in WORKLOAD_KEYS:
        if workload_value(base.workload[key]) != workload_value(spec.workload[key]):
            raise UsageError(f"--bench-spec: {key} {spec.workload[key]!r} differs from --bench-baseline's "
                             f"{base.workload[key]!r}: not the same workload")


def bench_acceptance(bench, flag):
    """Acceptance from a spec run's spec_decode_* keys, or None when it has none.

    The six spec_decode_* keys came with vLLM PR #31739 (vllm/benchmarks/serve.py). The counts
    give everything; a file with only the rate (a percentage) and the length gives
    K = (length - 1) / rate. The per-position rates are fractions; a list that is not
    K numbers in [0, 1] is dropped with a note.
    """
    spec, source = bench.spec, f"{flag} {bench.path}"
    counts = ("spec_decode_num_drafts", "spec_decode_draft_tokens", "spec_decode_accepted_tokens")
    present = [key for key in counts if key in spec]
    for key in present + [k for k in ("spec_decode_acceptance_rate", "spec_decode_acceptance_length") if k in spec]:
        if not finite_number(spec[key]) or not 0 <= spec[key] <= COUNT_LIMIT:
            raise UsageError(f"{source}: {key} must be a number from 0 to {COUNT_LIMIT:g}; got {shown(spec[key])}")
    if len(present) < len(counts):
        rate, tau = spec.get("spec_decode_acceptance_rate"), spec.get("spec_decode_acceptance_length")
        if present or not rate or tau is None:
            return None
        if rate > 100.0 or tau < 1.0:
            raise UsageError(f"{source}: spec_decode_acceptance_rate is a percentage of drafted tokens, at most 100, "
                             f"and spec_decode_acceptance_length at least 1; got {rate:g}% and {tau:g}")
        k = (tau - 1.0) * 100.0 / rate   # not / (rate / 100): a tiny rate would underflow to 0
        if not 0.5 <= k < K_LIMIT + 0.5 or abs(k - round(k)) > 0.01 * k:
            raise UsageError(f"{source}: spec_decode_acceptance_length {tau:g} and spec_decode_acceptance_rate "
                             f"{rate:g}% give K = {k:.3g}, not a whole number from 1 to {K_LIMIT}: not one chain's "
                             "figures")
        return measured_acceptance(one_average_draft(tau, round(k)), source, counted=False,
                                   notes=[f"from the file's acceptance rate and length only: K = {round(k)}"])
    drafts, draft_tokens, accepted = (float(spec[key]) for key in counts)
    notes = []
    rate, tau = spec.get("spec_decode_acceptance_rate"), spec.get("spec_decode_acceptance_length")
    if rate is not None and draft_tokens > 0 and abs(rate - 100.0 * accepted / draft_tokens) > 0.5:
        raise UsageError(f"{source}: spec_decode_acceptance_rate {rate:g}% disagrees with its counts "
                         f"({100.0 * accepted / draft_tokens:.1f}%)")
    # vllm/benchmarks/serve.py: acceptance_length = 1 + accepted / drafts, the bonus token included
    if tau is not None and drafts > 0 and abs(tau - (1.0 + accepted / drafts)) > LENGTH_AGREES * max(1.0, tau):
        raise UsageError(f"{source}: spec_decode_acceptance_length {tau:g} disagrees with its counts (1 + accepted "
                         f"/ drafts = {1.0 + accepted / drafts:.3f})")
    rates = spec.get("spec_decode_per_position_acceptance_rates") or []
    k_mean = draft_tokens / drafts if drafts > 0 else 0.0
    if rates and (not isinstance(rates, list) or len(rates) > K_LIMIT or len(rates) < k_mean * (1 - COUNT_SLACK)
                  or not all(finite_number(r) and 0 <= r <= 1 for r in rates)):
        notes.append("spec_decode_per_position_acceptance_rates dropped (not one fraction per draft position)")
        rates = []
    return measured_acceptance(Counters(drafts=drafts, draft_tokens=draft_tokens, accepted=accepted,
                                        per_position={i: r * drafts for i, r in enumerate(rates)}), source, notes=notes)


LENGTH_AGREES = 0.005   # a file's acceptance length and its counts agree to rounding (vLLM writes both from the counts)


@dataclass(frozen=True)
class Run:
    """One benchmark run as the calibration fits it, or a probe of run_tpot_ms."""
    batch: int               #: max_concurrency B
    k: int                   #: K of a speculative run (None: a baseline)
    tau: float               #: its acceptance length (None: a baseline)
    input_tokens: int        #: mean prompt tokens (its totals over completed requests)
    output_tokens: int       #: mean output tokens
    tpot_ms: float = None    #: its measured mean TPOT, ms
    path: str = None         #: the file
    model_id: str = None     #: the model it names
    decoding: float = None   #: sequences it decoded on average (decoding_batch); None: batch
    noise: float = RUN_NOISE   #: its mean TPOT's own noise, fraction: the least run-to-run spread, or more
    ttft_ms: float = None    #: its measured mean TTFT, ms (None: not in the file)
    median_ttft_ms: float = None   #: its measured median TTFT, ms (None: not in the file)
    requests: int = None     #: requests it completed
    rate: float = math.inf   #: its request rate (math.inf: all at once, held by max_concurrency)
    burstiness: float = 1.0  #: the gamma shape of its sends' gaps
    total_output: int = None   #: output tokens over its requests


def run_totals(bench, flag, path, runs, least_output):
    """(completed, total prompt tokens, total output tokens) of a benchmark file, its mean lengths checked."""
    completed, prompts, outputs = bench.completed, bench.total_input_tokens, bench.total_output_tokens
    if not completed or prompts is None or outputs is None:
        raise UsageError(f"{flag}: {path} needs completed, total_input_tokens and total_output_tokens to know "
                         "its prompt and output lengths")
    for what, total, least in (("prompt tokens", prompts, 1), ("output tokens", outputs, least_output)):
        if not least <= total / completed <= TOKENS_LIMIT:
            raise UsageError(f"{flag}: {path}: its requests average {total / completed:.3g} {what} "
                             f"(total over completed); {runs} have {least} to {TOKENS_LIMIT:,}")
    return completed, prompts, outputs


def distinct_files(paths):
    """paths with each file once, however spelled (a, ./a, d/../a, a link or a hard link to a): the first kept."""
    seen = {}
    for path in paths:
        try:
            info = os.stat(path)
            key = (info.st_dev, info.st_ino)
        except (OSError, ValueError):   # missing or unreadable: the reader names it
            key = os.path.realpath(path)
        seen.setdefault(key, path)
    return list(seen.values())


def run_rate(bench):
    """A file's request_rate as a number: math.inf for "inf" or none (read_bench checked that it is a rate)."""
    rate = bench.workload.get("request_rate")
    return math.inf if rate in (None, "inf") or not isinstance(rate, (int, float)) or math.isinf(rate) else float(rate)


def read_calibration_runs(paths, flag="--calibrate"):
    """Your `vllm bench serve` results for --calibrate: one deployment, one workload, baselines at several
    concurrencies and optionally speculative runs (their K and tau from their spec_decode_* keys)."""
    runs = []
    paths = distinct_files(paths)   # a file given twice counts once
    if len(paths) > CALIBRATION_FILE_LIMIT:
        raise UsageError(f"{flag}: {len(paths):,} files; this tool fits at most {CALIBRATION_FILE_LIMIT} (each is left "
                         "out and refitted)")
    for path in paths:
        bench = read_bench(path, flag)
        if bench.max_concurrency is None:
            raise UsageError(f"{flag}: {path} records no max_concurrency: calibration needs closed-loop runs "
                             "(vllm bench serve --max-concurrency B)")
        if not bench.latency.get("mean_tpot_ms"):
            raise UsageError(f"{flag}: {path} has no mean_tpot_ms above 0 (it is missing, NaN or 0: a TPOT needs "
                             "requests of two or more output tokens)")
        completed, prompts, outputs = run_totals(bench, flag, path, "the runs this tool fits", least_output=2)
        k = tau = None
        if bench.spec:
            measured = bench_acceptance(bench, flag)
            if measured is None or measured.varying_k:
                raise UsageError(f"{flag}: {path} is a speculative run without one K and its acceptance in its "
                                 "spec_decode_* keys: run it on vLLM with a fixed num_speculative_tokens")
            k, tau = measured.k, measured.acceptance_length
        tpot, output_tokens = bench.latency["mean_tpot_ms"], round(outputs / completed)
        # the TTFT a slot holds before it decodes: the mean, a median standing in where a file gives only that
        slot_ttft = bench.latency.get("mean_ttft_ms") or bench.latency.get("median_ttft_ms") or 0.0
        sampling = bench.latency.get("std_tpot_ms", 0.0) / math.sqrt(completed) / tpot   # s.e. of the mean
        runs.append(Run(batch=bench.max_concurrency, k=k, tau=tau, input_tokens=round(prompts / completed),
                        output_tokens=output_tokens, tpot_ms=tpot, path=str(path), model_id=bench.model_id,
                        decoding=decoding_batch(bench.max_concurrency, output_tokens, tpot, slot_ttft,
                                                completed),
                        noise=max(RUN_NOISE, sampling), ttft_ms=bench.latency.get("mean_ttft_ms"),
                        median_ttft_ms=bench.latency.get("median_ttft_ms"), requests=completed,
                        rate=run_rate(bench), burstiness=1.0 if bench.raw_burstiness is None else bench.raw_burstiness,
                        total_output=outputs))
    models = {r.model_id for r in runs}
    if len(models) > 1:
        raise UsageError(f"{flag}: the files are of different models ({', '.join(sorted(map(repr, models)))}): "
                         "calibrate on one deployment")
    lengths = [(r.input_tokens, r.output_tokens) for r in runs]
    for i, o in lengths:
        if abs(i / lengths[0][0] - 1) > OWN_LENGTHS or abs(o / lengths[0][1] - 1) > OWN_LENGTHS:
            raise UsageError(f"{flag}: the runs differ in prompt or output length by more than {OWN_LENGTHS:.0%} "
                             f"({lengths[0][0]}/{lengths[0][1]} against {i}/{o} tokens): one workload shape, please")
    baselines = sorted({r.batch for r in runs if r.k is None})
    if len(runs) < 2 or len(baselines) < 2:
        have = f"baselines at {', '.join(map(str, baselines))}" if baselines else "no baseline"
        raise UsageError(f"{flag}: too little to fit ({len(runs)} file(s), {have}): run speculation off at three "
                         "concurrencies (e.g. 1, 16 and your target) and on at one of them")
    return runs


@dataclass(frozen=True)
class Comparison:
    """A speculative benchmark run against its baseline (bench_comparison): ratios and changes are fractions, None
    where a file lacks the key."""
    tpot_speedup: float      #: baseline mean TPOT over the speculative run's
    throughput_speedup: float   #: speculative output throughput over the baseline's
    p99_tpot_change: float   #: P99 TPOT, speculative over baseline, minus 1
    p99_itl_change: float    #: P99 ITL (per chunk), speculative over baseline, minus 1
    changes: dict            #: every latency key both files have: speculative over baseline, minus 1
    baseline: dict           #: the baseline's latency keys
    spec: dict               #: the speculative run's
    max_concurrency: int     #: the baseline's max_concurrency (None: open loop)
    lengths: tuple           #: the speculative run's (mean prompt, mean output) tokens, or None


def bench_comparison(base, spec):
    """Measured speedups and P99 changes of the spec run against the baseline (fractions)."""
    def ratio(a, b):   # None unless both were measured above 0 (a 0 mean TPOT measured nothing)
        return a / b if a and b and math.isfinite(a / b) else None
    lat_b, lat_s = base.latency, spec.latency
    change = lambda key: None if ratio(lat_s.get(key), lat_b.get(key)) is None else ratio(lat_s[key], lat_b[key]) - 1.0
    keys = sorted(set(lat_b) & set(lat_s))
    return Comparison(tpot_speedup=ratio(lat_b.get("mean_tpot_ms"), lat_s.get("mean_tpot_ms")),
                      throughput_speedup=ratio(spec.output_throughput, base.output_throughput),
                      p99_tpot_change=change("p99_tpot_ms"), p99_itl_change=change("p99_itl_ms"),
                      changes={key: change(key) for key in keys}, baseline=lat_b, spec=lat_s,
                      max_concurrency=base.max_concurrency, lengths=run_lengths(spec))


def run_lengths(bench):
    """(mean prompt, mean output tokens) of a benchmark run, from its totals over completed requests; None when the
    file lacks them."""
    done, prompts, outputs = bench.completed, bench.total_input_tokens, bench.total_output_tokens
    return (round(prompts / done), round(outputs / done)) if done and prompts and outputs else None


def length_note(what, lengths, dep):
    """A note when a run's lengths differ from the deployment's by more than LENGTH_SLACK, else None."""
    i, o = lengths
    if abs(i / dep.input_tokens - 1) <= LENGTH_SLACK and abs(o / dep.output_tokens - 1) <= LENGTH_SLACK:
        return None
    return (f"{what} ran {i} prompt and {o} output tokens a request (its totals over completed requests), the "
            f"deployment {dep.input_tokens} and {dep.output_tokens}: the model is set at the run's own lengths beside "
            "it, and the plan's other numbers at the deployment's")


LENGTH_SLACK = 0.10   # a run whose mean lengths differ from the deployment's by more than this gets a note
