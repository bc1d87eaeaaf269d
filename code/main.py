"""EAGLE-3 rollout simulator: should speculative decoding be on for this deployment?

The lesson's toy decode loop, done right. For a grid of per-token acceptance alpha, draft
length K, verify overhead eps and concurrency B it prints the verdict first (turn it on or
not, at which K by batch size, the gain with its 80% range), then the lesson's speedup
(1 + K*alpha)/(1 + eps) beside the exact tau/(1 + eps), the break-even alpha both ways, the
best K per batch size, and what `vllm bench serve` would measure (throughput, P99 TPOT,
ITL) from simulated requests whose alphas spread around the mean, with eps from a cost
model of the deployment calibrated on published measurements. It reads vLLM's /metrics and
`vllm bench serve` results to measure acceptance and gate the rollout, and writes a staged
plan with charts to outputs/.

    $ python code/main.py                                  # default grid and deployment
    $ python code/main.py --model llama-3.1-8b --tp 1 --weights-dtype bf16 --ks 3 --no-write
    $ python code/main.py --metrics after.prom --metrics-before before.prom --gate
    $ python code/main.py --exercises                      # the lesson's five exercises, answered
    $ python code/main.py --engine sglang                  # the plan's commands for SGLang (or trtllm)
    $ python code/main.py --predict-bench runs/            # (an existing folder) the files each run should write
    $ python code/main.py --compare base.json,spec.json    # measured files, key by key against their prediction
    $ python code/main.py --slo ttft:2000,tpot:50          # the most each GPU serves within an SLO, off and on

This file is the lesson: the constants to edit, the grid's evaluation, the tables and main().
The machinery it stands on is the package beside it, code/rollout/, one module per concern
(its __init__ lists them, bottom to top).

Start here: the eight things a reader of the lesson looks for, and where they are.

    1. tau and the three meanings of alpha     acceptance_length, acceptance_rate, alpha_from_rate
                                               (rollout/acceptance.py, the lesson's mathematics)
    2. the lesson's speedup and the exact one  lesson_speedup, exact_speedup, speedup (the same file)
    3. the break-even, in both units           breakeven_rate (the rate: eps / K), exact_breakeven (alpha)
    4. one round: draft, verify, accept        round_distribution, decode_request (the same file)
    5. what a round costs: eps                 round_ms, eps_decode, eps_seen (rollout/costmodel.py)
    6. every cell of the grid, and the tables  analyse, then evaluate_cell (rollout/analysis.py) for each
                                               cell; render_tables prints them (here)
    7. the P99 tail, and the two-pass model    cell_latency, itl_parts (rollout/simulation.py); at load,
                                               with prefills stalling decodes: serve_run (rollout/serving.py);
                                               at an SLO, goodput as vLLM counts it: at_slo (rollout/goodput.py)
    8. the verdict, the gate and the plan      best_k, plan_choices, gate, verdict (rollout/analysis.py);
                                               render_verdict (rollout/tables.py), render_plan (rollout/plan.py)

Sources: Leviathan et al. 2023, arXiv 2211.17192 (tau, speedup); MagicDec, arXiv
2408.11049 (round cost at batch); EAGLE-3, arXiv 2503.01840 (the draft head); vLLM's
speculative-decoding docs, vllm/config/speculative.py and its spec-decode metrics; SGLang's
server_args.py; TensorRT-LLM's llm_args.py and trtllm-serve.
"""
from __future__ import annotations

import math
import os
import signal
import sys

if __name__ == "__main__":   # Ctrl-C or SIGTERM while the package loads (a third of a second): nothing is written yet
    def _stopped(signum, frame):
        os.write(2, b"main.py: error: interrupted; nothing was written\n")
        os._exit(2)
    for _name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGUSR1", "SIGUSR2"):   # writes.STOP_SIGNALS
        if hasattr(signal, _name):
            signal.signal(getattr(signal, _name), _stopped)
    if os.path.dirname(os.path.abspath(__file__)) not in sys.path:   # python -I, PYTHONSAFEPATH: the package is here
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dataclasses import dataclass, field, replace
from pathlib import Path

from rollout.records import eps_label, fmt, NOT_IN_JSON, pct, UsageError, wrap
from rollout.acceptance import breakeven_rate, exact_breakeven
from rollout.costmodel import eps_grown, FIT
from rollout.deployment import draft_kind, max_concurrency, verify_tokens
from rollout.commands import draft_head
from rollout.simulation import Traffic
from rollout.trust import interval, model_error, span, Trust, trust_in, widened, with_intervals
from rollout.analysis import (
    best_k_table, Cell, chart_data, Charts, decoder, deployment_facts, evaluate_cell, Evidence, Facts, gate, Gate,
    Measured, measured_predictions, Mix, mix_result, per_token_alpha, Plan, plan_choices, plan_input, Verdict,
    verdict,
)
from rollout.schedule import close_call_words, K_MAX, where_it_pays
from rollout.exercises import Exercises, LESSON_MIX, solve_exercises
from rollout.priors import plan_acceptance
from rollout.goodput import AtSlo, search_slo
from rollout.calibration import (
    calibrate_on_runs, Calibration, OWN_HELD_OUT, OWN_WORST, plan_benchmark, predicted_benches, replay_pair,
)
from rollout.tables import (
    column_header, deployment_head, deployment_lines, ratio_span, render_blocks, render_calibration, render_exercises, render_gate,
    render_measured, render_mix, render_summary, render_tail, render_verdict,
)
from rollout.charts import render_charts
from rollout.plan import predicts_gate_pair, render_plan
from rollout.export import render_bench_file, render_benches, render_compare, render_json
from rollout.cli import compare_files, mix_setting, parse_args, progress_meter, Settings
from rollout.writes import finish, printable, STANDARD_OUTPUT


# ---------------------------------------------------------------- the grid (edit me)
ALPHAS = (0.30, 0.40, 0.50, 0.60, 0.70, 0.80)  # per-token acceptance probability a
KS = (3, 5)                                     # draft length K: tokens drafted per round
VERIFY_OVERHEADS = (0.10, "auto")               # eps at B=1, fraction of a plain step; "auto": from the cost model
CONCURRENCIES = (1, 32, 128, 256)               # decode batch size B: sequences decoding together
TARGET_CONCURRENCY = None   # the plan's batch, the one B the verdict, the plan and the gate answer at; None: a
                            # --bench-spec run's max_concurrency, else the grid's largest (the most that fit, if fewer)
EXPECTED_ALPHA = None   # per-token alpha the plan assumes until measured; None: the published acceptance of the
                        # head (or its target, family, kind) in each domain of TRAFFIC_MIX (rollout/priors.py)
GATE_MARGIN = 0.10      # acceptance-rate margin the gate demands above break-even
P99_BUDGET = 0.10       # largest rise of P99 TPOT over baseline the gate accepts (with benchmark files)
TRAFFIC_MIX = (("chat", 0.70), ("code", 0.30))   # (domain, share of generated tokens[, per-token alpha[, mean output
                        # tokens]]): the lesson's shares; an alpha left out is the published one for the head in that
                        # domain (chat, code, math, reasoning, other); tokens default OUTPUT_TOKENS
CHART_ALPHAS = (0.5, 0.7, 0.8)   # per-token alphas of the best-K chart
ALPHA_SPREAD = 0.11     # s.d. of a request's per-token alpha around the mean: per head, alpha's s.d. across
                        # SpecBundle's 7 datasets is 0.07-0.17, median 0.11 (bench/specbundle_h200_bs8.json, K=3)
OUTPUT_SPREAD = 0.8     # s.d. of ln(output tokens) over requests: an assumption, set it from your traffic
                        # (0: every request OUTPUT_TOKENS long, as `vllm bench serve --dataset-name random` makes them:
                        # its --random-range-ratio defaults to 0.0, benchmarks/benchmark_serving.py, now vllm/benchmarks)
INPUT_SPREAD = 0.8      # s.d. of ln(prompt tokens) over requests in the plan's ShareGPT runs and the SLO's search: an
                        # assumption as OUTPUT_SPREAD is (random prompts, as the calibration runs send them: 0)
SEED = 0                # seeds every simulated request: same seed, same bytes
EXPECTED_FALLBACK = 0.70   # the lesson's mid-range alpha for chat, where the published table has no row of the draft
OUT_PATH = Path(__file__).resolve().parent.parent / "outputs" / "skill-eagle3-rollout.md"
CALIBRATION_FILES = ()  # your `vllm bench serve` result files to fit the cost model on (--calibrate; stage 0/1 of the plan)

# ---------------------------------------------------------------- the deployment (edit me)
MODEL = "llama-3.3-70b"        # catalog name of the target model
GPU = "h100-sxm"               # catalog name of the GPU
MODEL_SETTINGS = {             # a model's own TP (GPUs per replica), weights and KV cache dtypes ("bf16", "fp8", or
                               # "fp4" for weights: MXFP4, as gpt-oss ships its experts) on one GPU. A (model, GPU)
                               # without a row, or a setting its row leaves out, is derived for it (rollout/sizing.py):
                               # the dtype its checkpoint ships in, a bf16 KV cache, the smallest TP that holds the batch
    ("llama-3.3-70b", "h100-sxm"): dict(tp=4, weights_dtype="fp8", kv_dtype="bf16"),   # the example: fp8 on 4 x H100
}
EP = 1                         # expert-parallel GPUs of a MoE target: 1 (experts split by TP) or TP (whole experts
                               # per GPU; vLLM --enable-expert-parallel, SGLang --ep-size, TensorRT-LLM --ep_size)
DP_ATTENTION = False           # with EP: attention data parallel, each GPU its own share of the sequences and a
                               # whole copy of the weights that are not routed experts (--dp-attention)
INPUT_TOKENS = 1024            # mean prompt length of the traffic, tokens
OUTPUT_TOKENS = 1024           # mean generated length, tokens: 1k in / 1k out, a common serving-benchmark shape
CONTEXT = None                 # mean decode context, tokens; None: INPUT_TOKENS + OUTPUT_TOKENS / 2
DRAFT = "eagle3"               # "eagle3", "eagle", "mtp", "ngram", or a catalog model as a draft model ("model" with
                               # --draft-config: any draft model)
DRAFT_MODEL = None             # Hugging Face id of the draft head or model; None: the catalog's for this engine
ENGINE = "vllm"                # engine the plan is written for: "vllm", "sglang" or "trtllm" (rollout.catalog.ENGINES)
ENGINE_VERSION = None          # ENGINE's release, e.g. "0.13" (numbering per engine): its commands and era; None: newest
TEMPERATURE = 0.7              # sampling temperature of the plan's benchmark runs: use your traffic's own
SLO = "ttft:2000,tpot:50"      # the service level you serve at: a bound in ms on the P99 of each of TTFT, TPOT and
                               # E2EL it names (vllm bench serve's --goodput keys); "none": no SLO. An example: set yours


# ---------------------------------------------------------------- the lesson's mathematics
# For a chain of K drafts each kept with probability a (the per-token alpha) until the first rejection, a round
# emits tau = 1 + a + a^2 + ... + a^K tokens (acceptance_length) for 1 + eps plain steps of time, so speculation
# runs tau / (1 + eps) times as fast (exact_speedup). The lesson writes 1 + K*a for tau (lesson_speedup): exact
# only when a is vLLM's acceptance rate r = (tau - 1) / K, not the per-token alpha. Break-even is eps / K as a
# rate (breakeven_rate), and the alpha with tau(a, K) = 1 + eps as a per-token alpha (exact_breakeven). One
# round accepts A drafts with P(A = j) = a^j (1 - a) below K and a^K at K (round_distribution); decode_request
# loops draft, verify, accept for one request. They live in rollout/acceptance.py because every layer of the
# package uses them; eps comes from rollout/costmodel.py. Below, every cell of the grid puts them side by side.

# ---------------------------------------------------------------- every cell of the grid
@dataclass(frozen=True)
class BreakEven:
    """One row of the break-even table: where speculation stops paying at (K, eps at B=1, B)."""
    k: int                   #: draft length K
    verify_overhead: object  #: the grid's eps at B=1, or "auto"
    concurrency: int         #: batch size B
    feasible: bool           #: whether B sequences fit in memory
    eps_eff: float           #: decode eps at B
    lesson: float            #: break-even acceptance rate eps / K (the lesson's "alpha"); None: none below 1
    exact: float             #: break-even per-token alpha, tau(alpha, K) = 1 + eps; None: none


def analyse(grid, dep, decode, fit=FIT, progress=None):
    """Every grid cell and the break-even table, as the tables print them: (cells, break-evens, {(K, eps at B=1):
    decode eps at B=1}).

    decode: decoder(...), shared with the plan so that every part sees the same requests;
    progress, if given, is called with (pairs simulated, pairs) as each (alpha, K) is simulated.
    """
    pairs = [(per_token_alpha(grid.kind, value, k), k) for k in grid.ks for value in grid.acceptance]
    for done, (alpha, k) in enumerate(pairs, 1):
        decode(alpha, k)
        if progress:
            progress(done, len(pairs))
    batch_limit = max_concurrency(dep)
    cells, breakeven = [], []
    for k in grid.ks:
        for eps_b1 in grid.overheads:
            for batch in grid.concurrencies:
                feasible = batch <= batch_limit
                eps = eps_grown(eps_b1, dep, batch, k, fit)
                breakeven.append(BreakEven(k=k, verify_overhead=eps_b1, concurrency=batch, feasible=feasible,
                                           eps_eff=eps, lesson=breakeven_rate(k, eps), exact=exact_breakeven(k, eps)))
                for value in grid.acceptance:
                    alpha = per_token_alpha(grid.kind, value, k)
                    # An infeasible cell keeps its coordinates but shows no number: it cannot run.
                    cells.append(evaluate_cell(alpha, k, eps, batch, dep, decode(alpha, k), fit, eps_b1) if feasible
                                 else Cell(alpha=alpha, k=k, verify_overhead=eps_b1, concurrency=batch, feasible=False))
    return cells, breakeven, {(k, e): eps_grown(e, dep, 1, k, fit) for k in grid.ks for e in grid.overheads}


# ---------------------------------------------------------------- the printed tables
GRID_COLUMNS = [("B", 5), ("alpha", 5), ("rate", 4), ("tau", 4), ("eps", 4), ("lesson", 6), ("exact", 5),
                ("sim", 5), ("80% range", 9), ("plain", 5), ("spec", 5), ("2-pass", 6), ("change", 6),
                ("plain", 5), ("token", 5), ("chunk", 5)]
GRID_GROUPS = [("speedup (x)", 5, 8), ("P99 TPOT, steady (ms)", 9, 12), ("P99 ITL (ms)", 13, 15)]


def render_breakeven(result):
    columns = [("K", 3), ("eps@B=1", 7), ("B", 5), ("eps", 6), ("rate r = eps/K", 14), ("per-token alpha", 15)]
    header = column_header(columns, [("break-even", 4, 5)])
    rows = []
    for b in result.breakeven:
        mark = "" if b.feasible else "  (infeasible: the KV cache does not fit)"
        rows.append(f"{b.k:3d} {eps_label(b.verify_overhead):>7s} {b.concurrency:5d} {b.eps_eff:6.3f}"
                    f" {fmt(b.lesson, '14.3f', 'never'):>14s} {fmt(b.exact, '15.3f', 'never'):>15s}{mark}")
    title = ("== Break-even: below it speculation is slower than plain decoding ==\n"
             "The lesson's eps/K is the right break-even for the acceptance rate r, since tau = 1 + K*r;\n"
             "for the per-token alpha it is too low: that one solves tau(alpha, K) = 1 + eps. eps here is the\n"
             "decode eps: the prefill share costs the same per token with speculation or without.")
    return render_blocks(title, header, rows) + [""]


def render_best_k(result):
    """Best K (0 = off) and its speedup for each concurrency and alpha, then the plan's schedule."""
    first = [b for b in result.best_k if b.concurrency == result.best_k[0].concurrency]
    order = lambda b: (b.alpha, b.plan)
    label = "measured" if result.measured is not None else None
    columns = [("B", 5)] + [(label or ("plan " if b.plan else "a=") + f"{b.alpha:.2f} ", 11)
                            for b in sorted(first, key=order)]
    rows = []
    for batch in sorted({b.concurrency for b in result.best_k}):
        cells = [b for b in result.best_k if b.concurrency == batch]
        rows.append((f"{batch:5d} " + " ".join(
            f"{'K=' + str(b.k) + ' ' + format(b.speedup, '.2f') + 'x' + ('?' if b.too_close else ' '):>11s}"
            if b.feasible else f"{'no fit':>11s}" for b in sorted(cells, key=order))).rstrip())
    plan = result.plan
    zero = where_it_pays(plan.schedule)
    title = f"== Best K (0..{K_MAX}, 0 = off) and its speedup over plain decoding, eps from the cost model =="
    close = [b for b in result.best_k if b.too_close]
    note = wrap((f"?: too close to call. The speedup of the K the plan runs there (its best, or where that is off the "
                 f"best with speculation on) has an {result.trust.level:.0%} "
                 f"range ({ratio_span(result.trust.speedup_sd)}) holding 1.0x, so only a benchmark can say "
                 "whether speculation pays there. " if close else "")
                + f"At alpha {plan.alpha:.2f} the model predicts {zero}"
                + (f"; {close_call_words(plan.close_calls)}" if plan.close_calls else "")
                + f". K by batch size, as vLLM's num_speculative_tokens_per_batch_size [start, end, K]: "
                f"{plan.schedule}", 100, "")
    return render_blocks(title, [line.rstrip() for line in column_header(columns, [])], rows) + note + [""]


def grid_row(c, dep, max_fit):
    """One line of the grid table; infeasible cells say so instead of showing numbers."""
    if not c.feasible:
        return (f"{c.concurrency:5d} {c.alpha:5.2f}  infeasible: the KV cache of {c.concurrency} x "
                f"{dep.context} tokens does not fit (at most {max_fit} sequences)")
    return (f"{c.concurrency:5d} {c.alpha:5.2f} {c.acceptance_rate:4.2f} {c.acceptance_length:4.2f}"
            f" {c.eps_eff:4.2f} {c.speedup_lesson:6.2f} {c.speedup_exact:5.2f} {c.speedup_mc:5.2f}"
            f" {span(c.speedup_interval):>9s} {c.tpot_plain_p99_ms:5.1f} {c.tpot_spec_p99_ms:5.1f}"
            f" {c.tpot_spec_two_pass_p99_ms:6.1f} {pct(c.tpot_p99_change):>6s} {c.itl_plain_p99_ms:5.1f}"
            f" {c.itl_spec_p99_ms:5.1f} {c.round_itl_spec_p99_ms:5.1f}")


def render_tables(result, dep, grid):
    """The printed report: the verdict, then the grid cells, break-even, best K, the tail, and a summary."""
    lines = render_verdict(result.verdict, dep) + deployment_lines(dep, result) + [""]
    if result.calibration is not None:
        lines += render_calibration(result.calibration)
    if result.measured is not None:
        lines += render_measured(result) + render_gate(result.gate)
    header = column_header(GRID_COLUMNS, GRID_GROUPS)
    for k in grid.ks:
        for eps_b1 in grid.overheads:
            rows = [grid_row(c, dep, result.facts.max_concurrency) for c in result.cells
                    if c.k == k and c.verify_overhead == eps_b1]
            eps1 = result.eps_b1[k, eps_b1]
            source = ("from the cost model" if eps_b1 == "auto" else "given" if eps1 <= eps_b1 + 5e-5 else
                      f"given {eps_b1:.2f}, raised: the verify pass over {verify_tokens(dep, k)} tokens alone costs "
                      "that much over a plain step")
            title = f"== K = {k}, decode eps = {eps1:.2f} at B=1 ({source}), growing with B as the cost model says =="
            title = "\n".join(wrap(title, 100, "   "))
            lines += render_blocks(title, header, rows) + [""]
    lines += render_breakeven(result)
    lines += render_best_k(result)
    if result.mix:
        lines += render_mix(result.mix, dep)
    lines += render_tail(result)
    lines += render_summary(result, grid, dep)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- one run: the model, then what it prints and writes
@dataclass(frozen=True)
class Result:
    """Everything the tables, the plan and --json show (run_model; compute adds the calibration and exercises)."""
    cells: list              #: Cell per grid cell
    breakeven: list          #: BreakEven rows
    eps_b1: dict = field(metadata=NOT_IN_JSON)   #: {(K, the grid's eps at B=1): decode eps at B=1}
    facts: Facts = None      #: what the deployment lines and the summary say about the deployment
    alpha_spread: float = ALPHA_SPREAD   #: the simulated requests' spread of alpha
    output_spread: float = OUTPUT_SPREAD   #: their spread of ln(output tokens)
    input_spread: float = INPUT_SPREAD     #: the ShareGPT-like runs' spread of ln(prompt tokens)
    best_k: list = None      #: BestK rows
    plan: Plan = None
    mix: Mix = None          #: None when no mix is given
    charts: Charts = None    #: None unless the plan's files are written
    measured: Measured = None
    gate: Gate = None
    calibration: Calibration = None
    exercises: Exercises = None
    trust: Trust = None      #: how far to believe the predictions: the intervals' s.d. and their basis
    benches: list = None     #: PredictedBench per file --predict-bench writes
    gate_runs: list = None   #: stage 1's pair of runs at the plan's batch and K, predicted (plan_benchmark): only
                             #: when the plan is written
    comparisons: list = None   #: (path, PredictedBench, rows, notes) per --compare file
    verdict: Verdict = None  #: the answer first: on or off, at which K by batch size, the gain and its range
    at_slo: AtSlo = None     #: both arms at the SLO (--slo): the most each GPU serves within it, off and at the K


def assumed_acceptance(dep, evidence, traffic):
    """The published acceptance of the traffic's domains for this head (priors.plan_acceptance): what the plan assumes
    until measured, unless EXPECTED_ALPHA is set."""
    return plan_acceptance(evidence.mix or mix_setting(TRAFFIC_MIX), draft_kind(dep.draft), draft_head(dep)[0],
                           dep.shape.get("hf"), dep.shape.get("family"), traffic.alpha_spread, dep.temperature)


def mix_rows(mix, prior):
    """The traffic mix's rows with the published alpha where the row gives none: (name, share, alpha[, tokens])."""
    alphas = {name: alpha for name, _, alpha, _ in prior.domains} if prior else {}
    return tuple((name, share, alpha if alpha is not None else alphas[name], *rest)
                 for name, share, alpha, *rest in mix)


def run_model(grid, dep, evidence=Evidence(), traffic=Traffic(), fit=FIT, progress=None, charts=True, trust=None,
              prior=None):
    """Everything the tables, the plan and --json show, each part from its own function, on shared requests.

    charts: whether to compute what only the plan's files show too (the charts' data, the gate pair predicted
    by gate_runs); trust: how far to believe the model (trust_in; default: the published data's error for this
    deployment).
    """
    trust = trust or trust_in(dep)
    prior = prior or assumed_acceptance(dep, evidence, traffic)
    if prior is not None and not evidence.measured and evidence.expected_alpha is None and prior.acceptance_sd:
        trust = widened(trust, prior.acceptance_sd)   # a prior no closer than a family: its spread joins the range
    decode = decoder(traffic.seed, traffic.alpha_spread, traffic.output_spread, dep.output_tokens)
    cells, breakeven, eps_b1 = analyse(grid, dep, decode, fit, progress)
    cells = [with_intervals(c, trust) for c in cells]
    facts = deployment_facts(grid, dep, fit)
    measured = evidence.measured
    target_concurrency = evidence.target_concurrency or max(grid.concurrencies)
    inputs = plan_input(measured, grid, traffic.alpha_spread, evidence.expected_alpha or EXPECTED_FALLBACK,
                        prior if evidence.expected_alpha is None else None)
    batches = sorted(set(grid.concurrencies) | {target_concurrency})
    best = best_k_table(dep, inputs.sources, batches, fit, trust.speedup_sd, (inputs.alpha, inputs.acceptance))
    plan = plan_choices(grid, dep, decode, fit, inputs.acceptance, inputs.alpha, target_concurrency,
                        evidence.margin, inputs.k_in_use, measured is not None, inputs.requests, evidence.budget,
                        evidence.served_model, trust.speedup_sd)
    plan = replace(plan, tail=[with_intervals(c, trust) for c in plan.tail])
    mix = mix_result(mix_rows(evidence.mix, prior), dep, plan.k, plan.shown_batch, decode, fit,
                     assumed=evidence.mix_assumed) if evidence.mix else None
    if mix is not None:
        mix = replace(mix, blended_speedup_interval=interval(mix.blended_speedup, trust.speedup_sd))
    checked = gate(measured, evidence.comparison, dep, plan, evidence.budget) if measured else None
    served = search_slo(dep, plan, traffic, fit)
    # The plan's benchmark at its batch and K: the verdict's headline, stage 1's predicted pair and stage 4's tail.
    pair = plan_benchmark(dep, plan.shown_batch, plan.k, plan.request_alpha, plan.request_spread, trust, traffic, fit)
    replayed = (replay_pair(dep, evidence.pair_workload, measured.k, inputs.requests, trust, traffic.seed, fit)
                if measured and evidence.comparison and evidence.pair_workload and not measured.varying_k
                else None)   # the measured pair's own run, replayed (it runs one K)
    called = verdict(dep, plan, inputs.acceptance, trust.level, fit, checked, pair=pair,
                     target_from=evidence.target_from, error=model_error(dep),
                     prior=prior if not measured and evidence.expected_alpha is None else None,
                     measured_pair=(evidence.comparison, replayed) if evidence.comparison else None)
    return Result(cells=cells, breakeven=breakeven, eps_b1=eps_b1, facts=facts, alpha_spread=traffic.alpha_spread,
                  output_spread=traffic.output_spread, input_spread=traffic.input_spread, best_k=best, plan=plan, mix=mix,
                  charts=chart_data(grid, dep, plan, decode, fit, CHART_ALPHAS) if charts else None,
                  measured=measured_predictions(measured, evidence.comparison, dep, batches, target_concurrency,
                                                decode, fit, inputs.requests, replayed)
                  if measured else None,
                  gate=checked, trust=trust, gate_runs=pair if charts and predicts_gate_pair(dep, plan) else None, verdict=replace(called, at_slo=served), at_slo=served)


def compute(argv):
    """Everything a run prints and writes, computed before anything is written: (exit status, report, files)."""
    grid, dep, evidence, traffic, out, as_json, as_gate, exercises, runs, bench = parse_args(argv, SETTINGS)
    prior = assumed_acceptance(dep, evidence, traffic)
    assumed = evidence.expected_alpha or (prior.alpha if prior else EXPECTED_FALLBACK)
    fit, calibration = calibrate_on_runs(dep, runs, FIT, assumed) if runs else (FIT, None)
    trust = trust_in(dep, calibration)
    if calibration and calibration.worst_error > OWN_WORST:
        worst = next(r for r in calibration.runs if r.path == calibration.disagreeing)
        raise UsageError(f"--calibrate: the files disagree beyond what the model can fit: {worst.path} is "
                         f"{worst.held_out_error * 100:+.0f}% off what the others predict; check they are one "
                         "deployment and one workload, and rerun that one")
    far = calibration and max(calibration.runs, key=lambda r: abs(math.log1p(r.held_out_error)))
    if calibration and abs(math.log1p(far.held_out_error)) > math.log1p(OWN_HELD_OUT):
        raise UsageError(f"--calibrate: the files disagree: {far.path} is {far.held_out_error * 100:+.0f}% off what "
                         "the other runs predict when it is left out (the fit reaches it only by bending a factor); "
                         "check it is the same deployment and workload, and rerun it")
    result = run_model(grid, dep, evidence, traffic, fit, progress_meter(grid, sys.stderr), charts=out is not None,
                       trust=trust, prior=prior)
    result = replace(result, calibration=calibration, exercises=solve_exercises(
        dep, grid, mix_rows(evidence.mix, prior) if not evidence.mix_assumed else LESSON_MIX, traffic.seed, fit,
        traffic.alpha_spread, traffic.output_spread)
        if exercises else None)
    benches = predicted_benches(dep, grid.ks, result.plan.request_alpha, trust, grid.concurrencies, bench.rates,
                                bench.prompts, bench.burstiness, traffic.seed, fit, result.plan.request_spread,
                                bench.output_spread, result.plan.shown_batch, traffic.slo) if bench.folder else None
    comparisons = compare_files(bench.compare, dep, trust, traffic, fit, evidence.served_model, evidence.measured,
                                bench.spec_path, result.plan.shown_batch, bench.simulated, bench.slo)
    result = replace(result, benches=benches, comparisons=comparisons or None)
    if as_json:
        report = render_json(result, dep, grid)
    elif exercises:
        report = "\n".join(deployment_head(dep) + [""] + render_exercises(result.exercises, dep)
                           + (render_gate(result.gate) if as_gate else [])) + "\n"
    else:
        report = render_tables(result, dep, grid)
        if benches:
            report += "\n".join(render_benches(benches, bench.folder)) + "\n"
        if comparisons:
            report += "\n".join(render_compare(comparisons)) + "\n"
    to_stdout = out == STANDARD_OUTPUT   # --out -: the plan alone is the report
    if to_stdout:
        report = render_plan(result, dep, charts=False) + "\n"
    charts = ({out.parent / name: svg for name, svg in render_charts(result, dep).items()}
              if out is not None and not to_stdout else {})
    files = dict(charts)
    if out is not None and not to_stdout:
        files[out] = render_plan(result, dep)
    for pb in benches or ():
        files[bench.folder / pb.name] = render_bench_file(pb, dep)
    if files and not as_json and not to_stdout:   # the run ends by naming what it wrote (once it has written it)
        report += "\n" + wrote_line(out, list(charts), len(benches or ()), bench.folder) + "\n"
    status = (0 if result.gate.verdict == "pass" else 1) if as_gate else 0
    return status, printable(report), {path: printable(text) for path, text in files.items()}


def wrote_line(plan, charts, benches, folder):
    """The report's last line: the plan, its charts and how many predicted benchmark files in which folder, each path
    relative to the working folder where it is inside it."""
    def shown_path(path):
        relative = os.path.relpath(path)
        return relative if not relative.startswith(os.pardir) else str(path)

    named = ([shown_path(plan)] if plan is not None else []) + [shown_path(path) for path in charts]
    if benches:
        where = shown_path(folder)
        named.append(f"{benches} predicted benchmark file{'s' if benches > 1 else ''} in "
                     + ("the working folder" if where == os.curdir else where))
    return "Wrote " + ", ".join(named) + "."


# ---------------------------------------------------------------- main
SETTINGS = Settings(   # what a run falls back on where no flag is given: the constants at the top
    alphas=ALPHAS, ks=KS, verify_overheads=VERIFY_OVERHEADS, concurrencies=CONCURRENCIES, expected_alpha=EXPECTED_ALPHA,
    gate_margin=GATE_MARGIN, p99_budget=P99_BUDGET, traffic_mix=TRAFFIC_MIX, alpha_spread=ALPHA_SPREAD,
    output_spread=OUTPUT_SPREAD, input_spread=INPUT_SPREAD, seed=SEED, out_path=OUT_PATH, calibration_files=CALIBRATION_FILES, model=MODEL, gpu=GPU,
    model_settings=MODEL_SETTINGS, ep=EP, dp_attention=DP_ATTENTION, input_tokens=INPUT_TOKENS,
    output_tokens=OUTPUT_TOKENS, context=CONTEXT, draft=DRAFT, draft_model=DRAFT_MODEL, engine=ENGINE,
    engine_version=ENGINE_VERSION, temperature=TEMPERATURE, slo=SLO, target_concurrency=TARGET_CONCURRENCY)


def main(argv=None):
    """Run the grid, print tables (or JSON), write the rollout plan. Returns the exit status: 2 for bad input, a
    failed write or a signal, with one line on stderr that says what is on disk; with --gate, 0 if the gate passes
    and 1 if it fails (1 means nothing else). The writing, the signals and the streams: rollout/writes.py."""
    return finish(compute, sys.argv[1:] if argv is None else argv, whole_process=argv is None)


if __name__ == "__main__":
    sys.exit(main())
