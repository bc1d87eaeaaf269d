"""The command line: flags parsed and checked (parse_args), the settings a run falls back on (Settings), the
benchmark files --compare replays, and a long run's progress on stderr.
"""
from __future__ import annotations

import itertools
import math
import os
import re
import shlex
import stat
from dataclasses import dataclass, replace
from pathlib import Path

from .records import (
    BENCH_LIMIT_BYTES, BENCH_TOTAL_BYTES, CONCURRENCY_LIMIT, finite_number, same_model, shown, UsageError,
)
from .catalog import served_model
from .acceptance import profile_length
from .deployment import at_lengths, shown_batch, step_budget
from .releases import sglang_rate_kind
from .workload import Traffic
from .workload import BENCH_METRICS, BENCH_PERCENTILES, bench_prompts, REQUEST_WORK, run_work, Workload
from .deployment import running_cap, simulated_layout
from .readers import (
    Counters, counters_window, is_sglang, measured_acceptance, one_average_draft, pick_model, profile_problem,
    read_metrics,
)
from .benchfiles import (
    bench_acceptance, bench_comparison, distinct_files, read_bench, read_calibration_runs, run_totals, same_workload,
)
from .report import Evidence, Inputs, Replay
from .workload import bench_names, bench_tags, length_spread, MIN_PROMPTS, PLAN_KS, SAME_LENGTHS
from .render.charts import ALL_CHARTS
from .writes import bench_folder, check_out_owned, out_path
from .records import STANDARD_OUTPUT
from .flags import (
    _finite, build_parser, check_values, file_list, mix_setting, parse_grid, parse_list, parse_mix, parse_one,
    parse_slo,
)
from .deployflags import argparse_copy, MIN_RATE, parse_choose, parse_deployment


def given_acceptance(grid):
    """A measurement typed on the command line: one acceptance length or rate at one K, else None.

    That is what a dashboard shows (SGLang and TensorRT-LLM report acceptance as a length or
    a rate, not as vLLM's counters), so the plan then runs on it instead of EXPECTED_ALPHA.
    """
    if grid.kind == "profile":   # a sweep at K = 1..n: its positions' shares as one average draft of K = n
        profile, k = list(grid.acceptance[0]), grid.ks[-1]
        shares = list(itertools.accumulate(profile, lambda a, b: a * b))
        counts = Counters(drafts=1.0, draft_tokens=float(k), accepted=sum(shares),
                          per_position=dict(enumerate(shares)), drafted_per_position=dict.fromkeys(range(k), 1.0))
        lengths = ", ".join(f"{profile_length(profile, i):.3g}" for i in grid.ks)
        guess = (f"past K = {k} the sweep measured nothing: the best-K search takes position {k}'s conditional "
                 f"alpha ({profile[-1]:.3f}) to repeat, a guess")
        return measured_acceptance(counts, f"--acceptance-length {lengths} at K = 1..{k}", notes=[guess],
                                   counted=False)
    if grid.kind == "alpha" or len(grid.ks) != 1 or len(grid.acceptance) != 1:
        return None
    k, value = grid.ks[0], grid.acceptance[0]
    tau = value if grid.kind == "length" else 1.0 + k * value
    flag = "--acceptance-length" if grid.kind == "length" else "--acceptance-rates"
    return measured_acceptance(one_average_draft(tau, k), f"{flag} {value:g} at K={k}", counted=False)


def read_scrapes(args, k_given, width=None, rate_kind="drafted"):
    """--metrics, minus --metrics-before when given -> (the model it measures, measured acceptance); width: a
    tree's tokens drafted a round, rate_kind: what SGLang's rate gauge divides by at the release (measured_acceptance,
    releases.sglang_rate_kind)."""
    model, later = pick_model(read_metrics(args.metrics, "--metrics"), args.served_model, "--metrics", args.metrics)
    source, notes, counts = f"--metrics {args.metrics}", [], later
    if args.metrics_before:
        before = read_metrics(args.metrics_before, "--metrics-before")
        if model not in before:
            raise UsageError(f"--metrics-before: {args.metrics_before} has no speculative metrics of {model!r}: "
                             "not the same server")
        counts = counters_window(later, before[model], ("--metrics", "--metrics-before"))
        source = f"--metrics {args.metrics} minus --metrics-before {args.metrics_before}"
        if is_sglang(later):
            notes.append("a gauge holds a value, not a count: the later scrape's is used")
    # The later scrape's own per-position counts are checked as well as the window's.
    k_known = None
    if later.per_position and None not in (later.drafts, later.draft_tokens, later.accepted):
        problem = profile_problem(later, max(later.per_position) + 1)
        if problem and counts.per_position:
            notes.append(f"per-position counters dropped (in --metrics, {problem}); the acceptance rate and length "
                         "are used")
            k_known = max(counts.per_position) + 1
            counts = replace(counts, per_position={}, drafted_per_position={})
    return model, measured_acceptance(counts, source, k_given, notes, k_known, width=width, rate_kind=rate_kind)


def read_benches(args):
    """--bench-baseline and --bench-spec -> (baseline or None, spec run or None), checked as a pair."""
    if args.bench_baseline and not args.bench_spec:
        raise UsageError("--bench-baseline: needs --bench-spec: give both, the same workload with speculation off "
                         "and on")
    if args.bench_baseline and os.path.realpath(args.bench_baseline) == os.path.realpath(args.bench_spec):
        raise UsageError("--bench-baseline: is the --bench-spec file itself: give the run with speculation off")
    base = read_bench(args.bench_baseline, "--bench-baseline") if args.bench_baseline else None
    spec = read_bench(args.bench_spec, "--bench-spec") if args.bench_spec else None
    if base:
        drafted = [key for key in ("spec_decode_num_drafts", "spec_decode_draft_tokens") if base.spec.get(key)]
        if drafted:
            raise UsageError(f"--bench-baseline: {base.path} has {drafted[0]} {shown(base.spec[drafted[0]])}: "
                             "a run with speculation on, not a baseline")
        same_workload(base, spec)
    if args.gate and base:
        for run in (base, spec):
            if not run.latency.get("p99_tpot_ms"):
                raise UsageError(f"--gate: {run.flag} {run.path} has no usable p99_tpot_ms (missing, null, NaN "
                                 f"or 0): run the benchmark with --percentile-metrics {','.join(BENCH_METRICS)} "
                                 f"--metric-percentiles {','.join(map(str, BENCH_PERCENTILES))}")
            if not run.output_throughput:
                raise UsageError(f"--gate: {run.flag} {run.path} has no usable output_throughput (missing, null, "
                                 "NaN or 0): save the whole result (--save-result), not an excerpt")
    return base, spec


GATE_MIN_DRAFTS = 100   # counted drafts a gate needs: a rate over n drafts has a standard error up to 0.5 / sqrt(n),
                        # 0.05 at 100, half the gate's default margin


def noted(measured, *notes):
    """The measurement with notes added."""
    return replace(measured, notes=list(measured.notes) + list(notes))


def check_model(name, dep, flag, served):
    """Refuse a measurement of another model than the deployment's (its catalog or config name, or the checkpoint
    the plan serves), unless --served-model confirms the name as this deployment's alias."""
    ours = [dep.shape["hf"], served_model(dep)] if dep.shape.get("hf") else []
    if name and ours and not any(same_model(name, n) for n in ours) and not (served and same_model(name, served)):
        raise UsageError(f"{flag}: measures the model {shown(name)}, not this deployment's {ours[0]!r}: check --model "
                         f"or --model-config, or confirm an alias (--served-model-name) with {served_model_words(name)}")


SERVED_NAME = re.compile(r"[\x21-\x7e]{1,256}", re.ASCII)   # a served name the refusal can offer whole: printable, no
                                                           # space or control character, as a server names a model


def served_model_words(name):
    """The --served-model words that confirm a measured model's name, whole and shell-quoted so they can be copied;
    a name no server gives (spaces, control characters, over 256 characters) is shown cut, not offered."""
    if isinstance(name, str) and SERVED_NAME.fullmatch(name):
        return f"--served-model={shlex.quote(name)}"   # the = form: a name may begin with -
    return f"--served-model and the name the server gives ({shown(name)} is not one)"


def parse_target(args, settings, grid, spec=None):
    """The plan's batch, the one batch every part of the run answers at, and how it was chosen: --target-concurrency,
    else TARGET_CONCURRENCY in main.py, else the --bench-spec run's max_concurrency, else the grid's largest
    concurrency (a batch that does not fit runs at the most that fit: Plan.shown_batch)."""
    if args.target_concurrency is not None:
        return parse_one("--target-concurrency", args.target_concurrency, int, f"an integer from 1 to "
                         f"{CONCURRENCY_LIMIT:,}", lambda b: 1 <= b <= CONCURRENCY_LIMIT), "--target-concurrency"
    if settings.target_concurrency is not None:
        value = settings.target_concurrency
        if not (type(value) is int and 1 <= value <= CONCURRENCY_LIMIT):
            raise UsageError(f"TARGET_CONCURRENCY in main.py: an integer from 1 to {CONCURRENCY_LIMIT:,}, or None for "
                             f"the grid's largest concurrency; got {shown(value)}")
        return value, "TARGET_CONCURRENCY in main.py; --target-concurrency sets it"
    if spec is not None and spec.max_concurrency:
        return int(spec.max_concurrency), "the --bench-spec run's max_concurrency; --target-concurrency sets it"
    return max(grid.concurrencies), "the grid's largest concurrency; --target-concurrency sets it"


def parse_evidence(args, grid, dep, settings, target, target_from, benches=(None, None)):
    """The measurement flags -> Evidence: reads and checks every file named, for the deployment dep; target: the
    plan's batch and how it was chosen (parse_target)."""
    if args.metrics_before and not args.metrics:
        raise UsageError("--metrics-before: needs --metrics, the later scrape")
    if args.served_model is not None and not (args.metrics or args.bench_spec or args.compare or args.calibrate):
        raise UsageError("--served-model: names the served model of a --metrics scrape or of measured runs "
                         "(--bench-spec, --compare, --calibrate); give one")
    k_given = grid.ks[0] if args.ks is not None and len(grid.ks) == 1 else None
    typed = given_acceptance(grid)   # one length or rate at one K is a measurement
    measured = comparison = model = None
    if args.metrics:
        model, measured = read_scrapes(args, k_given, dep.verify_tokens - 1 if dep.topk > 1 else None,
                                       sglang_rate_kind(dep) if dep.engine.key == "sglang" else "drafted")
        check_model(model, dep, "--metrics", args.served_model)
    if typed and measured:
        raise UsageError(f"{typed.source.split()[0]}: {measured.source} measures acceptance already: give the "
                         "measurement one way")
    base, spec = benches   # read_benches, before the deployment was parsed
    if spec:
        if model and spec.model_id and not same_model(model, spec.model_id):
            if args.served_model is None:
                raise UsageError(f"--bench-spec: model_id {spec.model_id!r} is not the scrape's model_name "
                                 f"{model!r}: the files come from different servers (if the server runs with "
                                 "--served-model-name, confirm the pair with --served-model NAME)")
            measured = noted(measured, f"the scrape's model {model!r} is taken to be the benchmark's "
                                       f"{spec.model_id!r} (--served-model)")
        check_model(spec.model_id, dep, "--bench-spec", args.served_model)
        own = bench_acceptance(spec, "--bench-spec")
        if typed and own:
            raise UsageError(f"{typed.source.split()[0]}: {own.source} measures acceptance "
                             "already: give the measurement one way")
        if measured and own:
            measured = noted(measured, f"acceptance from {measured.source}; the benchmark's own counts "
                                       f"(rate {own.acceptance_rate:.3f}) were not used")
        measured = measured or own or typed
        if measured is None:
            raise UsageError(f"--bench-spec: {args.bench_spec} has no spec_decode_* keys; give --metrics, or the "
                             "acceptance your engine reports as --acceptance-length or --acceptance-rates with one --ks")
        measured = noted(measured, *spec.notes, *(base.notes if base else []))
    pair_workload = None
    if base:
        comparison = bench_comparison(base, spec)
        try:   # the model beside the pair is the pair's own run, replayed (as --compare replays a file)
            pair_workload = replay_workload(spec, "--bench-spec", spec.path, settings.output_spread,
                                            step_tokens=step_budget(dep))[0]
        except UsageError as why:
            measured = noted(measured, f"the benchmark pair is not replayed ({why}): the model beside it is the "
                                       "steady state at its concurrency and lengths")
    measured = measured or typed
    if args.gate and measured is None:
        raise UsageError("--gate: needs a measurement: --metrics, --bench-spec, or one --acceptance-length or "
                         "--acceptance-rates value at one --ks")
    if args.gate and measured.drafts is not None and measured.drafts < GATE_MIN_DRAFTS:
        raise UsageError(f"--gate: {measured.source} counts {measured.drafts:g} drafts, fewer than the "
                         f"{GATE_MIN_DRAFTS} a gate needs: measure over more traffic")
    if comparison and comparison.tpot_speedup and comparison.tpot_speedup > 1.1 * (measured.k + 1):
        raise UsageError(f"--bench-spec: a {comparison.tpot_speedup:.1f}x mean-TPOT speedup at K = "
                         f"{measured.k} is more than K + 1 tokens a round can give: not one deployment's pair of "
                         "runs")
    if spec and spec.open_loop:
        measured = noted(measured, "the benchmark's concurrency is not known (an open-loop request-rate run, or a "
                                   f"file without max_concurrency): the gate is for B = {target}, from {target_from}")
    margin = parse_one("--gate-margin", args.gate_margin, _finite, "a number in [0, 1)", lambda x: 0 <= x < 1) \
        if args.gate_margin is not None else settings.gate_margin
    budget = parse_one("--p99-budget", args.p99_budget, _finite, "a number from 0 to 100 (a fraction)",
                       lambda x: 0 <= x <= 100) \
        if args.p99_budget is not None else settings.p99_budget
    mix = parse_mix(args.mix) if args.mix is not None else mix_setting(settings.traffic_mix)
    return Evidence(measured=measured, comparison=comparison, pair_workload=pair_workload, target_concurrency=target,
                    target_from=target_from, mix=mix,
                    margin=margin, budget=budget, served_model=args.served_model, mix_assumed=args.mix is None,
                    expected_alpha=settings.expected_alpha)


MAX_BENCH_PROMPTS = 100_000   # a predicted or replayed run's prompts: each is simulated
SLO_PROMPTS_LIMIT = 5_000     # --num-prompts with an SLO: each of the search's runs sends them (about a second's work
CHOOSE_SLOWER = 5             # a thousand a run for the default deployment); --choose searches every candidate so, and
                              # takes a fifth as many (bench/worst_inputs.py)
SLO_RUN_WORK_LIMIT = 100_000  # steps' work (workload.run_work) of one run of the SLO search with --num-prompts given:
                              # about ten runs an arm at half a second each at the limit
SIMULATED_WORK_LIMIT = 600_000   # what one run simulates over every predicted and replayed file, in steps' work
                                 # (workload.run_work: a request counts REQUEST_WORK, a prompt chunk one): 3-5 s
                                 # on 2 cores at the limit (bench/worst_inputs.py); past it the run is refused
MAX_COMPARE_FILES = 64        # --compare's files, duplicates collapsed: each is replayed
COMPARE_TOKENS_LIMIT = 3_000_000   # output tokens --compare replays over all its files: a replay draws each request's
COMPARE_REQUESTS_LIMIT = 20_000    # acceptance and lengths, so it costs per request too (bench/worst_inputs.py)


@dataclass(frozen=True)
class BenchFlags:
    """The benchmark-file flags (parse_bench_flags)."""
    folder: Path = None      #: --predict-bench
    prompts: int = None      #: --num-prompts (None: the plan's)
    rates: tuple = ()        #: --request-rate: open-loop runs instead of closed-loop ones
    ks: tuple = ()           #: the Ks of the speculative runs (PLAN_KS: the plan's K by batch size, --ks plan)
    compare: tuple = ()      #: --compare paths
    spec_path: str = None    #: the real path of --bench-spec: a --compare file without spec_decode_* keys that is
                             #: this one is replayed at the acceptance the scrapes measured
    simulated: int = 0       #: the --predict-bench runs' work, in SIMULATED_WORK_LIMIT's units
    slo: tuple = ()          #: --slo as given on the command line: the bounds a --compare file's request_goodput is
                             #: predicted at (its file does not record them)


def parse_bench_flags(args, grid, dep, out, read_paths, traffic, ks):
    """--predict-bench, --num-prompts, --request-rate and --compare, checked before anything runs; traffic: what
    the predicted runs send (its lengths, spreads, --num-prompts and --burstiness); ks: their Ks (PLAN_KS: the plan's
    K by batch size)."""
    asked = args.predict_bench is not None or args.compare is not None
    if args.request_rate is not None and args.predict_bench is None:
        raise UsageError("--request-rate: the rates of the runs --predict-bench writes (with --choose, the traffic's "
                         "rate); give --predict-bench DIR too")
    if asked and not simulated_layout(dep):
        raise UsageError("--predict-bench, --compare: " + ("a tree's rounds are not a chain's: predict chains only"
                         if dep.topk > 1 else "attention data parallelism runs a scheduler on every rank; the SLO "
                         "search simulates one rank for all, a whole run's file is not predicted: predict without "
                         "--dp-attention"))
    prompts = traffic.num_prompts if args.num_prompts is not None else None
    rates = parse_list("--request-rate", args.request_rate, _finite,
                       f"a rate from {MIN_RATE:g} to {CONCURRENCY_LIMIT:,} requests/s",
                       lambda r: MIN_RATE <= r <= CONCURRENCY_LIMIT) if args.request_rate is not None else ()
    names = {}
    for r in rates:   # two rates, one file name
        if f"{r:g}" in names:
            raise UsageError(f"--request-rate: {names[f'{r:g}']:.15g} and {r:.15g} would both write "
                             f"baseline_r{r:g}.json: give rates apart in their first 6 digits")
        names[f"{r:g}"] = r
    compare = ()
    if args.compare is not None:
        compare = tuple(file_list("--compare", args.compare))
        if len(compare) > MAX_COMPARE_FILES:
            raise UsageError(f"--compare: {len(compare):,} files; this tool replays at most {MAX_COMPARE_FILES}")
    if args.predict_bench is not None and min(running_cap(dep, False), running_cap(dep, True)) < 1:
        held = (f"{dep.input_tokens} + {dep.output_tokens} tokens" if dep.engine.reserves_whole_request
                else f"a mean context of {dep.context:,} tokens")   # what running_cap holds a sequence's KV for
        raise UsageError(f"--predict-bench: not one sequence of {held} fits beside the weights on {dep.tp} x "
                         f"{dep.gpu}: no run to predict")
    if args.predict_bench is not None and not rates and prompts is None:
        most = max(bench_prompts(b) for b in grid.concurrencies)
        if most > MAX_BENCH_PROMPTS:
            raise UsageError(f"--predict-bench: the plan's runs at concurrency {max(grid.concurrencies):,} send "
                             f"{most:,} prompts, more than the {MAX_BENCH_PROMPTS:,} this tool simulates: give "
                             "--num-prompts")
    if args.predict_bench is not None:   # every file it writes is simulated: bounded in steps' work
        budget, simulated, runs, most = step_budget(dep), 0, 0, 0
        for batch, rate, tag in bench_tags(grid.concurrencies, rates):
            sent = prompts or (bench_prompts(batch) if batch else traffic.num_prompts)
            files = len(bench_names(ks, tag))
            simulated += files * run_work(sent, dep.input_tokens, budget)
            runs, most = runs + files, max(most, sent)
        if simulated > SIMULATED_WORK_LIMIT:
            raise UsageError(f"--predict-bench: {runs} runs of up to {most:,} prompts of {dep.input_tokens:,} tokens "
                             f"would simulate {simulated:,} steps' work (a request counts as {REQUEST_WORK}, each "
                             f"{budget:,}-token chunk of its prompt as one more), more than the "
                             f"{SIMULATED_WORK_LIMIT:,} a run simulates: give fewer --num-prompts, Ks or concurrencies")
    reads = compare + tuple(read_paths) + tuple(getattr(args, flag) for flag in (
        "metrics", "metrics_before", "bench_baseline", "bench_spec", "model_config", "draft_config"))
    folder = bench_folder(args.predict_bench, [name for _, _, tag in bench_tags(grid.concurrencies, rates)
                                               for name in bench_names(ks, tag)],
                          reads, out) if args.predict_bench is not None else None
    return BenchFlags(folder=folder, prompts=prompts, rates=rates, ks=tuple(ks), compare=compare,
                      slo=parse_slo(args.slo) if args.slo is not None and args.compare is not None else (),
                      simulated=simulated if args.predict_bench is not None else 0,
                      spec_path=os.path.realpath(args.bench_spec) if args.bench_spec
                      else None)


def check_bench_bytes(paths):
    """All the benchmark results one run reads, within BENCH_TOTAL_BYTES (reading JSON costs about 60 ms a MiB
    here); a pipe, whose size is not known before it is read, counts as the most one file may be."""
    total = 0
    for path in paths:
        try:
            info = os.stat(path)
            total += info.st_size if stat.S_ISREG(info.st_mode) else BENCH_LIMIT_BYTES
        except (OSError, ValueError):   # missing: its reader says so
            continue
    if total > BENCH_TOTAL_BYTES:
        raise UsageError(f"the benchmark results this run reads (--compare, --calibrate, --bench-baseline, --bench-spec) "
                         f"are {total / (1 << 20):,.0f} MiB together, more than the {BENCH_TOTAL_BYTES >> 20} MiB "
                         "one run reads (a pipe counts as 16): pass fewer files, or results saved without "
                         "--save-detailed")


def parse_args(argv, settings):
    """Flags -> Inputs (parse). Raises UsageError."""
    args = build_parser(settings).parse_args(argv)   # a flag given twice: the last wins, as in every argparse and
                                                     # getopt tool, so a wrapper's defaults can be overridden
    check_values(args)
    if args.out == STANDARD_OUTPUT and not args.no_write and (args.json or args.exercises):
        raise UsageError(f"--out -: writes the plan to standard output, where {'--json' if args.json else '--exercises'} "
                         "writes its own: give one, or --out a file")
    out = (None if args.no_write else STANDARD_OUTPUT if args.out == STANDARD_OUTPUT else
           out_path(args.out) if args.out is not None else settings.out_path)
    plan_ks = (args.ks or "").strip().lower() == PLAN_KS
    if PLAN_KS in [k.strip().lower() for k in (args.ks or "").split(",")] and not plan_ks:
        raise UsageError(f"--ks {PLAN_KS}: stands alone (the plan's K by batch size); got {args.ks!r}")
    if plan_ks and args.acceptance_length is not None:
        raise UsageError(f"--ks {PLAN_KS}: an acceptance length is measured at one K: give --ks K with "
                         "--acceptance-length")
    if plan_ks and args.predict_bench is None:
        raise UsageError(f"--ks {PLAN_KS}: the speculative runs --predict-bench writes at the plan's K by batch size; "
                         "give --predict-bench DIR too")
    if plan_ks:
        args = argparse_copy(args, ks=None)   # the grid at main.py's Ks; the predicted runs at the plan's table
    grid = parse_grid(args, settings)
    benches = read_benches(args)   # read once: a pipe cannot be read again
    target, target_from = parse_target(args, settings, grid, benches[1])
    for flag, value in (("--gpus", args.gpus), ("--engines", args.engines), ("--gpu-price", args.gpu_price)):
        if value is not None and not args.choose:
            raise UsageError(f"{flag}: sets what --choose searches; give --choose too")
    ask = parse_choose(args, settings, target) if args.choose else None
    if ask is not None:
        args = argparse_copy(args, request_rate=None)   # the traffic --choose serves, not --predict-bench's runs
    dep = parse_deployment(args, settings.deployment, target)
    if dep.topk > 1 and ((grid.kind != "length" and not args.metrics) or len(grid.ks) != 1):
        raise UsageError("--draft-topk: a tree's acceptance length is measured, not the chain formula: give "
                         "--acceptance-length TAU, or a --metrics scrape, at its one --ks (the steps)")
    if dep.topk == 1 and dep.verify_tokens is not None and (len(grid.ks) != 1 or dep.verify_tokens != grid.ks[0] + 1):
        raise UsageError(f"--verify-tokens: a chain verifies K + 1 tokens; got {dep.verify_tokens} for --ks "
                         f"{','.join(map(str, grid.ks))}")
    if dep.topk > 1:
        steps = grid.ks[0]
        # A round accepts at most one path, steps deep, and no more tokens than it verified.
        engine = dep.engine
        least, most = engine.tree_tokens(dep.topk, steps)
        if not least <= dep.verify_tokens <= most:
            raise UsageError(f"--verify-tokens: {engine.name}'s tree of top-{dep.topk} over {steps} steps verifies "
                             f"{least} to {most} tokens a sequence ({engine.tree_limit_why}); got {dep.verify_tokens}")
        if grid.kind == "length" and grid.acceptance[0] > dep.verify_tokens:
            raise UsageError(f"--acceptance-length: a round accepts at most the {dep.verify_tokens} tokens it "
                             f"verifies; got {grid.acceptance[0]:g}")
        dep = replace(dep, tree_steps=steps)
    evidence = parse_evidence(args, grid, dep, settings, target, target_from, benches)
    if dep.topk > 1 and grid.kind != "length":   # a tree measured by a scrape: its grid is the length measured
        tau = evidence.measured.acceptance_length
        if tau > dep.verify_tokens:
            raise UsageError(f"--metrics: the scrape's acceptance length {tau:.3f} is more than the {dep.verify_tokens} "
                             "tokens the tree verifies: not this tree's server")
        grid = replace(grid, acceptance=(round(tau, 6),), kind="length")
    seed = parse_one("--seed", args.seed, int, "an integer of at most 18 digits",
                     lambda n: abs(n) < 10 ** 18) if args.seed is not None else settings.seed
    spread = parse_one("--alpha-spread", args.alpha_spread, _finite, "a number in [0, 0.5]",
                       lambda s: 0.0 <= s <= 0.5) if args.alpha_spread is not None else settings.alpha_spread
    output_spread = parse_one("--output-spread", args.output_spread, _finite, "a number in [0, 2]",
                              lambda s: 0.0 <= s <= 2.0) if args.output_spread is not None else settings.output_spread
    input_spread = parse_one("--input-spread", args.input_spread, _finite, "a number in [0, 2]",
                             lambda s: 0.0 <= s <= 2.0) if args.input_spread is not None else settings.input_spread
    prompts = parse_one("--num-prompts", args.num_prompts, int, f"an integer from {MIN_PROMPTS} to "
                        f"{MAX_BENCH_PROMPTS:,}", lambda n: MIN_PROMPTS <= n <= MAX_BENCH_PROMPTS
                        ) if args.num_prompts is not None else settings.num_prompts
    burstiness = parse_one("--burstiness", args.burstiness, _finite, "a number from 0.01 to 100",
                           lambda b: 0.01 <= b <= 100) if args.burstiness is not None else settings.burstiness
    traffic = Traffic(seed=seed, alpha_spread=spread, output_spread=output_spread, input_spread=input_spread,
                      slo=parse_slo(args.slo if args.slo is not None else settings.slo), num_prompts=prompts,
                      burstiness=burstiness)
    most = SLO_PROMPTS_LIMIT // (CHOOSE_SLOWER if ask is not None else 1)
    if traffic.slo and prompts > most:   # every run of the SLO search sends them: bounded as a run's time is
        raise UsageError(f"--num-prompts: the SLO search simulates about ten runs of {prompts:,} requests an arm"
                         f"{' for every candidate' if ask is not None else ''}; at most {most:,} here (with --slo "
                         "none, --predict-bench writes larger runs)")
    # A rank under attention data parallelism prefills in its own budget, and is simulated twice a rate.
    per_run = run_work(prompts, dep.input_tokens, step_budget(dep)) * (2 if dep.dp_attention else 1)
    if traffic.slo and args.num_prompts is not None and ask is None and per_run > SLO_RUN_WORK_LIMIT:
        raise UsageError(f"--num-prompts: each run of the SLO search would simulate {per_run:,} steps' work "
                         f"({prompts:,} requests of {dep.input_tokens:,}-token prompts), more than the "
                         f"{SLO_RUN_WORK_LIMIT:,} a run of it may: give fewer")
    paths = file_list("--calibrate", args.calibrate) if args.calibrate is not None else list(settings.calibration_files)
    runs = read_calibration_runs(paths) if paths else None
    for r in runs or ():   # runs of another model would bend the fit to fit them: refused, as --compare refuses them
        check_model(r.model_id, dep, f"--calibrate: {shown(r.path)}", args.served_model)
    if isinstance(out, Path):
        written = {os.path.realpath(out.parent / name) for name in [out.name, *ALL_CHARTS]}
        for flag, path in [("--metrics", args.metrics), ("--metrics-before", args.metrics_before),
                           ("--bench-baseline", args.bench_baseline), ("--bench-spec", args.bench_spec),
                           ("--model-config", args.model_config), ("--draft-config", args.draft_config),
                           *(("--calibrate", path) for path in paths)]:
            if path and os.path.realpath(path) in written:
                raise UsageError(f"--out: would overwrite {path}, which {flag} reads: write the plan elsewhere")
        check_out_owned(out)
    bench = parse_bench_flags(args, grid, dep, out if isinstance(out, Path) else None, paths, traffic,
                              (PLAN_KS,) if plan_ks else grid.ks)
    check_bench_bytes(distinct_files([*bench.compare, *paths, *(p for p in (args.bench_baseline, args.bench_spec) if p)]))
    target = evidence.target_concurrency or max(grid.concurrencies)
    compared = replays(bench.compare, dep, traffic, served=evidence.served_model, scraped=evidence.measured, spec_path=bench.spec_path,
                       plan_batch=shown_batch(dep, target), simulated=bench.simulated, slo=bench.slo)
    return Inputs(grid=grid, dep=dep, evidence=evidence, traffic=traffic, settings=settings, out=out,
                  as_json=args.json, as_gate=args.gate, exercises=args.exercises, runs=runs, bench=bench,
                  replays=compared, choose=ask)


def parse(argv, settings):
    """The command line and the files it names, against `settings` (main.py's constants) where a flag is not given:
    an Inputs, every rule checked once. Raises UsageError, with one line that names the flag."""
    return parse_args(argv, settings)


def replays(paths, dep, traffic, *, served, scraped=None, spec_path=None, plan_batch=None, simulated=0, slo=()):
    """--compare's files, read and checked (Replay each), within COMPARE_TOKENS_LIMIT output tokens and
    COMPARE_REQUESTS_LIMIT requests replayed over them all, and SIMULATED_WORK_LIMIT with the --predict-bench runs'
    work (simulated); scraped: the acceptance --metrics measured, for the --bench-spec run's file (spec_path), which
    records none; plan_batch: an open loop's server cap, as the plan's command sets it; slo: --slo's bounds, given on
    the command line, which a file's request_goodput is predicted at (a file records no bounds)."""
    budget, out, flag = (COMPARE_TOKENS_LIMIT, COMPARE_REQUESTS_LIMIT, SIMULATED_WORK_LIMIT - simulated), [], "--compare"
    for path in paths:
        bench = read_bench(path, flag)
        check_model(bench.model_id, dep, flag, served)
        work, notes = replay_workload(bench, flag, path, traffic.output_spread, budget, step_budget(dep))
        acceptance = (bench_acceptance(bench, flag) if bench.spec else
                      scraped if os.path.realpath(path) == spec_path else None)
        if bench.spec and acceptance is None:
            raise UsageError(f"{flag}: {path} is a speculative run without its K and acceptance in its spec_decode_* "
                             "keys: this tool cannot replay it")
        here = at_lengths(dep, work.input_tokens, work.output_tokens)
        cap = work.max_concurrency or plan_batch
        if running_cap(here, acceptance is not None, cap) < 1:
            raise UsageError(f"{flag}: {path}: not one sequence of its {work.input_tokens} + {work.output_tokens} "
                             f"tokens fits beside the weights on {dep.tp} x {dep.gpu}")
        out.append(Replay(path=path, bench=bench, workload=work, acceptance=acceptance,
                          slo=slo if bench.goodput is not None else (), server_cap=cap, notes=tuple(notes)))
        budget = (budget[0] - work.total_output, budget[1] - work.num_prompts,
                  budget[2] - run_work(work.num_prompts, work.input_tokens, step_budget(dep)))
    return tuple(out)


def replay_workload(bench, flag, path, output_spread,
                    budget=(COMPARE_TOKENS_LIMIT, COMPARE_REQUESTS_LIMIT, SIMULATED_WORK_LIMIT), step_tokens=8192):
    """A measured run's own workload, to replay it (its completed requests, lengths and their spread, concurrency or
    rate and burstiness) and the notes on how it was read: (Workload, notes). Refused (UsageError) past the budget of
    (output tokens, requests, simulated work) left, or when the run cannot be replayed. output_spread: the answers'
    spread in log where the file gives none (--output-spread); step_tokens: the server's step budget (a prompt's
    chunks count in the work, workload.run_work)."""
    completed, prompts, outputs = run_totals(bench, flag, path, "the runs this tool replays", least_output=1)
    rate = bench.workload.get("request_rate")
    rate = math.inf if rate in (None, "inf") or (isinstance(rate, float) and math.isinf(rate)) else rate
    if rate != math.inf and not (finite_number(rate) and MIN_RATE <= rate <= CONCURRENCY_LIMIT):
        raise UsageError(f"{flag}: {path}: request_rate must be \"inf\" or a rate from {MIN_RATE:g} to "
                         f"{CONCURRENCY_LIMIT:,} requests/s; got {shown(rate)}")
    burstiness = 1.0 if bench.raw_burstiness is None else bench.raw_burstiness   # read_bench checked it; files
                                                                                  # before --burstiness: Poisson
    if completed > MAX_BENCH_PROMPTS:
        raise UsageError(f"{flag}: {path} completed {completed:,} requests; this tool replays at most "
                         f"{MAX_BENCH_PROMPTS:,}")
    if outputs > budget[0] or completed > budget[1]:
        raise UsageError(f"{flag}: {path} holds {completed:,} requests and {outputs:,} output tokens to replay, past "
                         f"the {COMPARE_REQUESTS_LIMIT:,} requests and {COMPARE_TOKENS_LIMIT:,} tokens --compare "
                         "replays over all its files: compare fewer or smaller runs")
    if run_work(completed, round(prompts / completed), step_tokens) > budget[2]:
        raise UsageError(f"{flag}: {path}'s {completed:,} requests to replay, with --predict-bench's runs and the files "
                         f"before it, pass the {SIMULATED_WORK_LIMIT:,} steps' work one run simulates (a request "
                         f"counts as {REQUEST_WORK}, each chunk of its prompt as one more): compare or predict fewer "
                         "runs")
    if bench.max_concurrency is None and rate == math.inf:
        raise UsageError(f"{flag}: {path} records neither max_concurrency nor a request rate: its run cannot be "
                         "replayed")
    n = bench.workload.get("num_prompts")
    n = n if type(n) is int and 1 <= n <= MAX_BENCH_PROMPTS else completed   # read_bench: never below completed
    notes = list(bench.notes)
    spread = length_spread(bench.latency)
    if spread is None:   # no spreads to read: equal answers if the total divides evenly, else --output-spread's
        spread = 0.0 if outputs % completed == 0 else output_spread
        notes.append(f"the file gives no E2EL and TTFT spreads: answers drawn with an s.d. of {spread:g} in log")
    elif spread < SAME_LENGTHS:
        spread = 0.0   # random prompts with --ignore-eos: every answer as long
    else:
        notes.append(f"its answers differ in length: drawn log-normal with an s.d. of {spread:.2f} in log, as its "
                     "E2EL and TTFT spreads imply")
    if n != completed:
        notes.append(f"{n - completed} of its {n} requests failed: replayed with the {completed} that completed")
    work = Workload(num_prompts=completed, max_concurrency=bench.max_concurrency,
                    request_rate=rate, burstiness=burstiness, input_tokens=round(prompts / completed),
                    output_tokens=round(outputs / completed), output_spread=spread, total_output=outputs)
    return work, notes



