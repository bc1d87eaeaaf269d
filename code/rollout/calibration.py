"""Calibrating on your runs (fit the cost model's own_* factors on `vllm bench serve` files, with held-out error)
and the benchmark files each run should write (--predict-bench).
"""
from __future__ import annotations

import itertools
import math
import re
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

from .records import NOT_IN_JSON, OPTIONAL, pct1, same_model, shown
from .catalog import served_model
from .acceptance import acceptance_length, alpha_from_length
from .costmodel import (
    draft_ms, Fit, FIT, fixed_ms, OWN_PARTS, plain_step_ms, prefill_parts, round_ms, spec_tpot_ms, target_parts,
)
from .records import OWN_TERMS
from .deployment import at_lengths, draft_kind, max_concurrency, runs_a_draft_model, verify_tokens
from .releases import bench_records_acceptance
from .serving import bench_result, serve_run
from .workload import Workload
from .deployment import running_cap, simulated_layout
from .readers import RUN_NOISE
from .benchfiles import length_note
from .trust import interval
from .analysis import center_requests
from .schedule import K_MAX, KTable
from .workload import bench_names, bench_tags, PLAN_KS, traffic_workload


# ---------------------------------------------------------------- calibrating on your runs
# `vllm bench serve` results of your own deployment (--calibrate) correct the published fit
# where your engine, kernels or GPU differ from it. Each run's predicted mean TPOT is a sum
# of terms (run_terms): a pass's fixed cost, the weight read, the context, the cost per
# token, the prefill share, and for a speculative run a round's bookkeeping, the verify
# pass's extra tokens and the draft steps. The fit finds one factor for each (costmodel.Fit's own_*,
# records.OWN_TERMS) by least squares on log error, each run weighted by its noise (at least
# readers.RUN_NOISE), with the
# published fit as a prior: a penalty (log factor / OWN_PRIOR_SD)^2 pulls a factor the runs
# do not inform back to 1, where hard bounds would pin it at an edge. A closed-loop run at
# max_concurrency C decodes fewer than C sequences on average (readers.decoding_batch): the fit
# uses that batch, the physics the run measured; the tables' B stays the decode batch.

OWN_PRIOR_SD = dict(   # s.d. of each own_* factor's log before your runs: how well the published fit knows it
    own_pass=0.5,      # a pass's fixed cost differs by engine and version: 0.26 to 1.82 ms across the fit's engines
    own_weights=0.15,  # the bandwidth share varies 0.71 to 0.92 across GPU families in the published fit
    own_context=0.4,   # attention kernels differ by engine and context length
    own_token=0.4,     # the engine's cost per token and small-GEMM efficiency
    own_prefill=0.4,   # chunked-prefill scheduling differs by engine
    own_round=0.7,     # a round's bookkeeping changed most across engine versions (rejection sampler, async)
    own_verify=0.4,
    own_draft=0.5)     # draft heads run in CUDA graphs on some engines and not others
OWN_WORST = 0.25      # a fit whose worst run is further off than this says the files disagree
OWN_HELD_OUT = 0.5    # and so does a run the others predict more than x1.5 (or /1.5) off when it is left out: the
                      # fit reaches it in sample only by bending a factor (one run 2.5x slower than its neighbours)
OWN_OUTLIER = 3.0     # a run further from the fit than this many times its noise is named as disagreeing


def run_tpot_ms(dep, run, fit):
    """The mean TPOT the model gives for one benchmark run (a Run), at the batch it decoded."""
    d, b = at_lengths(dep, run.input_tokens, run.output_tokens), run.decoding or run.batch
    if run.k is None:
        return plain_step_ms(d, b, fit)
    return spec_tpot_ms(d, b, 1.0 / run.tau, round_ms(d, b, run.k, fit), fit)


@dataclass(frozen=True)
class RunTerms:
    """One run's mean TPOT as the terms own_* scale, at own_* = 1 (run_terms): {own field, or "" for none: ms}."""
    decode: dict             #: a plain decode step's terms
    prefill: dict            #: the prefill share's, before own_prefill
    verify: dict             #: what the verify pass's extra tokens add, before own_verify ({} for a baseline)
    round_ms: float          #: a round's bookkeeping, before own_round
    draft_ms: float          #: a round's draft steps, before own_draft
    tau: float               #: tokens a round (None: a baseline)
    saving_ms: float = 0.0   #: the era's host time a round no longer waits for (Era.saving_ms), before the cap
    draft_fixed_ms: float = 0.0   #: the K draft steps' fixed costs, before own_draft (what saving_ms may take)


def run_terms(dep, run, fit=FIT):
    """A run's predicted TPOT split into the terms the calibration scales (terms_tpot_ms sums them back)."""
    base = fit._replace(**dict.fromkeys(OWN_TERMS, 1.0))
    d, b = at_lengths(dep, run.input_tokens, run.output_tokens), run.decoding or run.batch

    def grouped(parts):
        out = dict.fromkeys(["", *OWN_PARTS.values()], 0.0)
        for term, ms in parts.items():
            out[OWN_PARTS.get(term, "")] += ms
        return out

    plain = grouped(target_parts(d, b, 1, base))
    prefill = grouped(prefill_parts(d, b, base))
    if run.k is None:
        return RunTerms(decode=plain, prefill=prefill, verify={}, round_ms=0.0, draft_ms=0.0, tau=None)
    verify = grouped(target_parts(d, b, verify_tokens(d, run.k), base))
    return RunTerms(decode=plain, prefill=prefill, verify={key: verify[key] - plain[key] for key in plain},
                    round_ms=fixed_ms(d, "round", base), draft_ms=draft_ms(d, b, run.k, base), tau=run.tau,
                    saving_ms=(math.inf if draft_kind(d.draft) in d.era.hides_for   # hidden whole (hidden_ms)
                               else d.era.saving_ms(draft_kind(d.draft), d.topk)),
                    draft_fixed_ms=run.k * fixed_ms(d, "draft", base) if runs_a_draft_model(d) else 0.0)


def terms_tpot_ms(terms, own):
    """The mean TPOT of RunTerms at the factors own ({own field: factor}): run_tpot_ms at those factors, summed in
    closed form so that a fit can try thousands of factors."""
    def total(part):
        return sum(ms * own.get(key, 1.0) for key, ms in part.items())
    step, share = total(terms.decode), own["own_prefill"] * total(terms.prefill)
    if terms.tau is None:
        return step + share
    fixed = own["own_round"] * terms.round_ms + own["own_draft"] * terms.draft_fixed_ms
    rounds = (own["own_round"] * terms.round_ms + own["own_draft"] * terms.draft_ms + step
              + own["own_verify"] * total(terms.verify) - min(terms.saving_ms, fixed))   # hidden_ms, closed form
    return rounds / terms.tau + share


def solve(matrix, vector):
    """x with matrix x = vector (Gaussian elimination with partial pivoting; matrix square, well conditioned)."""
    n = len(vector)
    a = [list(row) + [v] for row, v in zip(matrix, vector)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            f = a[r][col] / a[col][col]
            a[r] = [x - f * y for x, y in zip(a[r], a[col])]
    x = [0.0] * n
    for r in reversed(range(n)):
        x[r] = (a[r][n] - sum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
    return x


def inverse(matrix):
    """The inverse of a small square matrix, column by column (solve)."""
    n = len(matrix)
    columns = [solve(matrix, [1.0 if i == j else 0.0 for i in range(n)]) for j in range(n)]
    return [[columns[j][i] for j in range(n)] for i in range(n)]


def log_errors(terms, runs, theta):
    """Each run's log(predicted / measured) at log factors theta (in OWN_TERMS' order)."""
    own = {name: math.exp(t) for name, t in zip(OWN_TERMS, theta)}
    return [math.log(terms_tpot_ms(t, own) / r.tpot_ms) for t, r in zip(terms, runs)]


def jacobian(terms, theta):
    """d log(predicted TPOT) / d log factor for each run's terms (central differences on the closed form)."""
    step, rows = 1e-6, []
    for t in terms:
        row = []
        for j in range(len(theta)):
            up, down = list(theta), list(theta)
            up[j] += step
            down[j] -= step
            own_up = {name: math.exp(v) for name, v in zip(OWN_TERMS, up)}
            own_down = {name: math.exp(v) for name, v in zip(OWN_TERMS, down)}
            row.append((math.log(terms_tpot_ms(t, own_up)) - math.log(terms_tpot_ms(t, own_down))) / (2 * step))
        rows.append(row)
    return rows


def normal_matrix(rows, noises):
    """J'WJ plus the prior's precision: the curvature of the fit's loss, whose inverse is the factors' covariance."""
    sd = list(OWN_PRIOR_SD.values())
    n = len(sd)
    return [[sum(r[i] * r[j] / s ** 2 for r, s in zip(rows, noises)) + (1.0 / sd[i] ** 2 if i == j else 0.0)
             for j in range(n)] for i in range(n)]


def fit_factors(terms, runs):
    """The log factors (OWN_TERMS' order) that minimise sum (log error / noise)^2 + sum (log factor / prior s.d.)^2:
    Gauss-Newton with Levenberg's damping, from the published fit (all 0); deterministic."""
    sd, noises = list(OWN_PRIOR_SD.values()), [r.noise for r in runs]
    theta, damping = [0.0] * len(sd), 1e-3

    def loss(th):
        return (sum((e / s) ** 2 for e, s in zip(log_errors(terms, runs, th), noises))
                + sum((t / p) ** 2 for t, p in zip(th, sd)))

    current = loss(theta)
    for _ in range(100):
        rows, errors = jacobian(terms, theta), log_errors(terms, runs, theta)
        matrix = normal_matrix(rows, noises)
        gradient = [sum(r[i] * e / s ** 2 for r, e, s in zip(rows, errors, noises)) + theta[i] / sd[i] ** 2
                    for i in range(len(sd))]
        while True:
            damped = [[v * (1.0 + damping) if i == j else v for j, v in enumerate(row)] for i, row in enumerate(matrix)]
            trial = [t - d for t, d in zip(theta, solve(damped, gradient))]
            trial_loss = loss(trial)
            if trial_loss <= current or damping > 1e8:
                break
            damping *= 10.0
        if trial_loss > current:
            break
        done = current - trial_loss < 1e-12 * (1.0 + current)
        theta, current, damping = trial, trial_loss, max(damping / 10.0, 1e-9)
        if done:
            break
    return theta


def fitted_with(fit, theta):
    """The Fit with own_* set to the factors exp(theta), rounded to 4 significant digits as printed."""
    return fit._replace(**{name: float(f"{math.exp(t):.4g}") for name, t in zip(OWN_TERMS, theta)})


@dataclass(frozen=True)
class CalibrationRun:
    """One of your runs against the model, before and after fitting it on them."""
    path: str
    kind: str                #: "baseline" or "speculative"
    batch: int               #: max_concurrency B
    k: int                   #: K of a speculative run (None: a baseline)
    tau: float               #: its acceptance length
    measured_tpot_ms: float  #: mean TPOT the run measured
    published_fit_tpot_ms: float   #: the published fit's
    fitted_tpot_ms: float    #: the fit on your runs'
    error: float             #: fitted over measured, minus 1 (in sample: the run was fitted)
    decoding_batch: float = field(default=None, metadata=OPTIONAL)   #: sequences it decoded on average (decoding_batch)
    held_out_error: float = field(default=None, metadata=OPTIONAL)   #: fitted on the other runs, over measured, minus 1
    noise: float = field(default=None, metadata=OPTIONAL)            #: the run's own noise, fraction (Run.noise)
    measured_speedup: float = field(default=None, metadata=OPTIONAL)   #: over the baseline at its B, measured
    fitted_speedup: float = field(default=None, metadata=OPTIONAL)     #: likewise, fitted


@dataclass(frozen=True)
class Separation:
    """Two factors the runs moved together, and the run that would tell them apart (unseparated)."""
    terms: tuple             #: the two own_* fields
    correlation: float       #: of their log factors after the fit
    run: str                 #: the run that would separate them, in words (None: no run would)
    spread_now: float        #: s.d. of the two log factors, summed, after the fit
    spread_after: float      #: the same with that run added


@dataclass(frozen=True)
class Calibration:
    """The fit of the cost model on your runs (calibrate_on_runs)."""
    files: list              #: the files fitted
    fitted_fields: list      #: the Fit fields the runs moved (own_*)
    kept: list               #: the Fit fields kept at the published fit
    before: dict             #: {Fit field: published value}
    after: dict              #: {Fit field: fitted value}
    runs: list               #: CalibrationRun rows
    median_error: float      #: median |error| over the runs, in sample
    worst_error: float       #: largest |error|, in sample
    notes: list              #: what the fit noticed about the files
    held_out_median: float = field(default=None, metadata=OPTIONAL)   #: median |held_out_error|: what to believe
    held_out_worst: float = field(default=None, metadata=OPTIONAL)    #: largest |held_out_error|
    held_out_sd: float = field(default=None, metadata=OPTIONAL)       #: RMS log held-out error: the intervals' s.d.
    informed: dict = field(default_factory=dict, metadata=OPTIONAL)   #: {own field: posterior s.d. / prior s.d.}
    unseparated: list = field(default_factory=list, metadata=OPTIONAL)   #: Separation rows
    disagreeing: str = field(default=None, metadata=NOT_IN_JSON)   #: the run whose leaving out lets the rest fit best
    request_ms: float = field(default=None, metadata=OPTIONAL)   #: a request's cost around its steps, from the runs'
                                                                 #: TTFTs (fit_request_ms; None: none given)
    ttft_errors: list = field(default_factory=list, metadata=OPTIONAL)   #: TTFT at request_ms over measured (median,
                                                                          #: else mean: fitted_ttft),
                                                                          #: minus 1, per run that gives one


INFORMED = 0.7       # a factor whose s.d. the runs shrank below this share of its prior's is informed by them
TOGETHER = -0.8      # two factors, one informed, whose log factors correlate below this moved together
SEPARATES = 0.7      # a run separates two factors if it shrinks their summed s.d. below this share


def candidate_runs(dep, runs, expected_alpha):
    """Runs the user could add, as Runs: baselines and speculative runs (at the runs' acceptance) at each batch
    from 1 to the most that fits, and a baseline at twice the prompt length at the runs' largest batch."""
    first = runs[0]
    spec = [r for r in runs if r.k is not None]
    alpha = statistics.median(alpha_from_length(r.tau, r.k) for r in spec) if spec else expected_alpha
    top = max(1, min(max_concurrency(dep), max(r.batch for r in runs) * 4))
    batches = sorted({2 ** i for i in range(12) if 2 ** i <= top} | {r.batch for r in runs})
    out = []
    for b in batches:
        out.append((f"a baseline at concurrency {b}",
                    replace(first, batch=b, k=None, tau=None, decoding=None, tpot_ms=None)))
        if dep.drafter is not None and any(r.k is not None for r in runs):
            for k in range(1, K_MAX + 1):
                out.append((f"a speculative run at K = {k}, concurrency {b}",
                            replace(first, batch=b, k=k, tau=acceptance_length(alpha, k), decoding=None, tpot_ms=None)))
    widest = max(r.batch for r in runs)
    out.append((f"a baseline at concurrency {widest} with prompts of {2 * first.input_tokens} tokens",
                replace(first, batch=widest, input_tokens=2 * first.input_tokens, k=None, tau=None, decoding=None,
                        tpot_ms=None)))
    return out


def unseparated(dep, runs, theta, covariance, informed, expected_alpha):
    """Pairs of factors the runs moved together (one of them informed), each with the candidate run that best tells
    them apart (run None when none does: then they add up alike in every prediction at these lengths)."""
    names = list(OWN_TERMS)
    pairs = []
    for i, j in itertools.combinations(range(len(names)), 2):
        if names[i] in informed or names[j] in informed:
            corr = covariance[i][j] / math.sqrt(covariance[i][i] * covariance[j][j])
            if corr < TOGETHER:
                pairs.append((i, j, corr))
    if not pairs:
        return []
    candidates = [(words, jacobian([run_terms(dep, probe)], theta)[0]) for words, probe in candidate_runs(dep, runs, expected_alpha)]
    out = []
    for i, j, corr in pairs:
        now = covariance[i][i] + covariance[j][j]

        def after(row):   # the covariance with one more run of noise RUN_NOISE (a rank-one update)
            c_row = [sum(covariance[a][b] * row[b] for b in range(len(row))) for a in range(len(row))]
            scale = RUN_NOISE ** 2 + sum(r * c for r, c in zip(row, c_row))
            return now - (c_row[i] ** 2 + c_row[j] ** 2) / scale
        words, best = min(((w, after(row)) for w, row in candidates), key=lambda c: c[1])
        out.append(Separation(terms=(names[i], names[j]), correlation=corr,
                              run=words if best < (SEPARATES * math.sqrt(now)) ** 2 else None,
                              spread_now=math.sqrt(now), spread_after=math.sqrt(max(best, 0.0))))
    return out


def calibrate_on_runs(dep, runs, fit, expected_alpha, *, seed, spread):
    """Fit own_* on your runs (fit_factors), refit without each run in turn to measure the error a user should
    believe (held-out), and say what the runs could not separate. Returns the fitted Fit and a Calibration."""
    terms = [run_terms(dep, r, fit) for r in runs]
    theta = fit_factors(terms, runs)
    fitted = fitted_with(fit, theta)
    covariance = inverse(normal_matrix(jacobian(terms, theta), [r.noise for r in runs]))
    informed = {name: math.sqrt(covariance[i][i]) / OWN_PRIOR_SD[name] for i, name in enumerate(OWN_TERMS)}
    held_out, rest_worst, rest_loss = [], [], []
    for i, r in enumerate(runs):
        others = runs[:i] + runs[i + 1:]
        rest = fit_factors(terms[:i] + terms[i + 1:], others)
        held_out.append(terms_tpot_ms(terms[i], {n: math.exp(t) for n, t in zip(OWN_TERMS, rest)}) / r.tpot_ms - 1.0)
        errors = log_errors(terms[:i] + terms[i + 1:], others, rest)
        rest_worst.append(max(abs(e) for e in errors))
        rest_loss.append(sum((e / o.noise) ** 2 for e, o in zip(errors, others))
                         + sum((t / sd) ** 2 for t, sd in zip(rest, OWN_PRIOR_SD.values())))
    rows = []
    for r, out in zip(runs, held_out):
        fitted_ms = run_tpot_ms(dep, r, fitted)
        base = next((b for b in runs if b.k is None and b.batch == r.batch), None)
        speedups = {}
        if r.k is not None and base is not None:   # a speculative run's speedup over the baseline at its batch
            speedups = dict(measured_speedup=base.tpot_ms / r.tpot_ms,
                            fitted_speedup=run_tpot_ms(dep, base, fitted) / fitted_ms)
        rows.append(CalibrationRun(path=r.path, kind="speculative" if r.k else "baseline", batch=r.batch, k=r.k,
                                   tau=r.tau, measured_tpot_ms=r.tpot_ms, published_fit_tpot_ms=run_tpot_ms(dep, r, fit),
                                   fitted_tpot_ms=fitted_ms, error=fitted_ms / r.tpot_ms - 1.0,
                                   decoding_batch=r.decoding, held_out_error=out, noise=r.noise, **speedups))
    errors = [abs(row.error) for row in rows]
    ours = [name for name in (dep.shape.get("hf"), served_model(dep)) if dep.shape.get("hf")]
    others = sorted({r.model_id for r in runs if r.model_id is not None
                     and ours and not any(same_model(r.model_id, name) for name in ours)}, key=str)
    notes = [f"the runs' model_id {shown(name)} is not this deployment's {ours[0]!r}: a --served-model-name alias, "
             "or runs of another model?" for name in others]
    notes += [note for note in (length_note(Path(r.path).name, (r.input_tokens, r.output_tokens), dep) for r in runs)
              if note]
    # The run that disagrees: the one whose leaving out lets the others fit best, prior included (its own residual
    # need not be the largest, since the fit splits the difference).
    disagreeing = min(range(len(runs)), key=lambda i: rest_loss[i])
    if any(abs(row.error) > OWN_OUTLIER * row.noise for row in rows):
        row = rows[disagreeing]
        notes.append(f"the fit cannot follow the runs (up to {max(errors):.1%} "
                     f"after fitting, against their noise of {min(r.noise for r in runs):.1%}); the one that disagrees "
                     f"is {Path(row.path).name}: without it the others fit within {rest_worst[disagreeing]:.1%}, and "
                     f"their prediction misses it by {pct1(row.held_out_error)}. The model's form misses something it "
                     "measures, or the run is off: rerun it")
    moved = [name for name in OWN_TERMS if informed[name] < INFORMED]
    request, ttft_errors = fit_request_ms(dep, runs, fitted, seed=seed, spread=spread)
    if request is not None:
        fitted = fitted._replace(request_ms=request)
    return fitted, Calibration(
        files=[r.path for r in runs], fitted_fields=moved, kept=sorted(set(Fit._fields) - set(moved)),
        before={name: getattr(fit, name) for name in moved}, after={name: getattr(fitted, name) for name in moved},
        runs=rows, median_error=statistics.median(errors), worst_error=max(errors), notes=notes,
        held_out_median=statistics.median(abs(e) for e in held_out), held_out_worst=max(abs(e) for e in held_out),
        held_out_sd=max(RUN_NOISE, math.sqrt(statistics.fmean(math.log1p(e) ** 2 for e in held_out))),
        informed=informed, unseparated=unseparated(dep, runs, theta, covariance, set(moved), expected_alpha),
        disagreeing=runs[disagreeing].path, request_ms=request, ttft_errors=ttft_errors)


TTFT_REPLAY_STEPS = 100_000   # a run replayed to fit request_ms: its first requests, as many as take about this many
                              # decode steps (answers / concurrency), and at least two waves of its concurrency. A
                              # run cut short weighs its first wave (every slot's prompt at once) more than the
                              # measured mean does, which pulls request_ms down: only past 100,000 steps


def replayed_ttfts_ms(dep, r, fit, *, seed, spread):
    """A calibration run's TTFTs as serve_run gives them, ms, replaying its first requests (TTFT_REPLAY_STEPS) at its
    concurrency, rate, lengths and acceptance (requests centred on its tau, as --compare centres them)."""
    n = min(r.requests, max(2 * r.batch, TTFT_REPLAY_STEPS * r.batch // max(1, r.output_tokens)))
    work = Workload(num_prompts=n, max_concurrency=r.batch, request_rate=r.rate, burstiness=r.burstiness,
                    input_tokens=r.input_tokens, output_tokens=r.output_tokens, output_spread=0.0,
                    total_output=round(r.total_output * n / r.requests) if r.total_output else None)
    k, alpha, spread = (r.k, *center_requests(r.tau, r.k, spread)) if r.k else (0, 0.0, 0.0)
    run = serve_run(at_lengths(dep, r.input_tokens, r.output_tokens), work, k, alpha, spread, seed, fit, r.batch)
    return [1e3 * (f - s) for s, f in zip(run.start, run.first)]


def fitted_ttft(r):
    """(measured ms, statistic) of the TTFT a run's request cost is fitted on: its median where the file gives one,
    else its mean. A fixed cost moves every request's TTFT alike, so either tells it; but a few slow requests move a
    mean and not a median, and a server's first requests can take seconds (shapes compiled on first use: InferenceX's
    DeepSeek-R1 runs' mean TTFTs are 1.1-3.3 times their medians, where the vLLM sources' are 1.02-1.03, and their
    P99s 4-23 times, bench/FIT.md), which no steady state holds."""
    return (r.median_ttft_ms, statistics.median) if r.median_ttft_ms else (r.ttft_ms, statistics.fmean)


REQUEST_STEPS = 3   # corrections of request_ms after the first guess (each replays every run once)


def fit_request_ms(dep, runs, fit, *, seed, spread):
    """What a request costs your deployment around its steps (Fit.request_ms: the client, the API server, the hop
    to the engine), from the runs' TTFTs (fitted_ttft: their medians, else means): a request's TTFT grows by about
    its cost whatever the queue ahead, so from none, each step adds the median of measured minus simulated,
    REQUEST_STEPS times (the cost also delays the next request of a closed loop, which moves the queue a little).
    At least 0. Returns (ms, [TTFT at that cost over measured, minus 1, per run]), or (None, []) where no run gives
    a TTFT."""
    given = [(r, *fitted_ttft(r)) for r in runs if fitted_ttft(r)[0] and r.requests]   # (run, measured, statistic)
    if not given:
        return None, []

    def simulated(request):
        return [statistic(replayed_ttfts_ms(dep, r, fit._replace(request_ms=request), seed=seed, spread=spread))
                for r, _, statistic in given]

    request = 0.0
    for _ in range(REQUEST_STEPS + 1):
        at = simulated(request)
        step = statistics.median(measured - ms for (_, measured, _), ms in zip(given, at))
        if abs(step) < 0.01 or (request == 0.0 and step < 0):
            break
        request = max(0.0, request + step)
    else:
        at = simulated(request)
    return request, [ms / measured - 1.0 for (_, measured, _), ms in zip(given, at)]


# ---------------------------------------------------------------- predicted benchmark files
# The files a benchmark run would write (serve_run, bench_result), each number with its interval: the
# model's mean-TPOT error (Trust) for every time and, inverted, every throughput. No published source
# here holds out a TTFT or a throughput under load, so their intervals are a step's, not their own.

BENCH_TIMES = re.compile(r"^(duration|(mean|median|std|p\d+)_(ttft|tpot|itl|e2el)_ms)$")
BENCH_RATES = ("request_throughput", "output_throughput", "total_token_throughput", "max_output_tokens_per_s",
               "request_goodput")


@dataclass(frozen=True)
class PredictedBench:
    """One predicted benchmark file (predict_bench)."""
    name: str                #: the file's name, as the plan names its runs
    k: int                   #: draft length (0: speculation off)
    alpha: float             #: the per-token alpha its requests centre on (0 without speculation)
    workload: Workload
    cap: int                 #: sequences the server runs at once (running_cap)
    peak_running: int        #: the most it ran at once in the simulated run
    steps: int               #: scheduler steps the run took
    result: dict             #: the file's keys, as vllm bench serve writes them
    intervals: dict = field(default_factory=dict)   #: key -> [low, high] at the trust level
    sd: float = 0.0          #: the s.d. in log behind the intervals
    k_rows: tuple = ()       #: a run at K by batch size: its table's rows (k: the K most of its steps ran)


def predict_bench(dep, name, work, *, k, alpha, trust, seed, fit, spread, plan_batch=None, slo=()):
    """One run's predicted file with its intervals: PredictedBench. plan_batch: the batch the server's command
    caps it at (a closed loop's concurrency, unless given); slo: the --goodput bounds its request_goodput counts."""
    run = serve_run(dep, work, k, alpha, spread, seed, fit, plan_batch or work.max_concurrency)
    result = bench_result(run, work, dep, dict(slo) if slo else None)
    if k and not bench_records_acceptance(dep):   # its benchmark reads no vllm:spec_decode_* counters
        result = {key: value for key, value in result.items() if not key.startswith("spec_decode_")}
    sd = trust.spec_tpot_sd if k else trust.tpot_sd
    # exp(+-z sd) around a time, and so around its inverse, a throughput
    intervals = {key: interval(value, sd) for key, value in result.items()
                 if value is not None and (BENCH_TIMES.match(key) or key in BENCH_RATES)}
    return PredictedBench(name=name, k=run.k, alpha=alpha if k else 0.0, workload=work, cap=run.cap,
                          peak_running=run.peak_running, steps=run.steps, result=result, intervals=intervals, sd=sd,
                          k_rows=k.rows if isinstance(k, KTable) else ())


def plan_benchmark(dep, batch, k, alpha, spread, trust, traffic, fit=FIT):
    """The benchmark the plan asks for at its batch, predicted: the ShareGPT pair sharegpt_baseline_cB.json and
    sharegpt_spec_cB.json (the traffic's workload: prompts and answers log-normal around the deployment's lengths
    with the traffic's spreads, answers cut at answer_cap), speculation off and at K, requests
    around per-token `alpha` (s.d. `spread`): [baseline, speculative], or None where the simulation cannot run it (a
    tree, attention data parallelism, K = 0, no sequence fits). One computation wherever it is printed: the verdict's
    headline, stage 1's files and stage 4's expectations (serving.RUN_MEMO)."""
    if not (k and simulated_layout(dep) and running_cap(dep, True, batch) >= 1):
        return None
    work = traffic_workload(dep, traffic, concurrency=batch)
    return [predict_bench(dep, name, work, k=kk, alpha=alpha, trust=trust, seed=traffic.seed, fit=fit, spread=spread)
            for name, kk in ((f"sharegpt_baseline_c{batch}.json", 0), (f"sharegpt_spec_c{batch}.json", k))]


def replay_pair(dep, work, k, requests, trust, seed, fit):
    """A measured benchmark pair's own runs (work: its workload as read, cli.replay_workload), simulated at its lengths,
    speculation off and at K with requests around (alpha, spread) that deliver the measured tau: [baseline,
    speculative], or None where the simulation cannot run it (a tree, attention data parallelism, no sequence fits)."""
    here = at_lengths(dep, work.input_tokens, work.output_tokens)
    if not (work and k and simulated_layout(dep) and running_cap(here, True, work.max_concurrency) >= 1):
        return None
    alpha, spread = requests
    return [predict_bench(here, name, work, k=kk, alpha=alpha, trust=trust, seed=seed, fit=fit, spread=spread, plan_batch=work.max_concurrency)
            for name, kk in (("--bench-baseline", 0), ("--bench-spec", k))]


def predicted_benches(dep, ks, alpha, *, trust, traffic, fit, spread, concurrencies=(), rates=(), prompts=None,
                      plan_batch=None):
    """The files --predict-bench writes: per concurrency (closed loop) or, given rates, per request rate (open
    loop), a baseline and one run a K (an int, or a KTable named PLAN_KS: the plan's K by batch size), named as the
    plan names its runs (bench_names; _r2.5 for a rate), each sending the traffic's workload (traffic_workload).
    An open loop's server is the plan's, capped at plan_batch where its command sets a cap; their --goodput bounds
    are the traffic's SLO."""
    out = []
    names = [k if isinstance(k, int) else PLAN_KS for k in ks]
    for batch, rate, tag in bench_tags(concurrencies, rates):
        work = traffic_workload(dep, traffic, concurrency=batch, rate=rate, prompts=prompts)
        for name, k in zip(bench_names(names, tag), (0,) + tuple(ks)):
            out.append(predict_bench(dep, name, work, k=k, alpha=alpha, trust=trust, seed=traffic.seed, fit=fit,
                                     spread=spread, plan_batch=batch or plan_batch, slo=traffic.slo))
    return out


