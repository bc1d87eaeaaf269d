"""decide(inputs, grid_cells) -> Report: everything a run decides from what it was asked, before any text.

The calibration fits on the user's runs (refused when the runs disagree beyond what one deployment explains), how far
to believe the model (trust), the acceptance assumed until measured, the grid's cells (by main.py's own loop, handed
in as grid_cells), the best K by batch size and the plan's choices, the traffic mix, the gate, the SLO search, the
plan's benchmark pair and the verdict, the exercises, the predicted benchmark files and the --compare replays.
"""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from .records import finite_number, UsageError
from .deployment import at_lengths, draft_kind
from .trust import corrected, interval, known, model_error, trust_in, widened
from .cells import with_intervals
from .analysis import (
    center_requests, chart_data, deployment_facts, gate, measured_predictions, plan_choices, plan_input, verdict,
)
from .mix import mix_result
from .bestk import best_k_table
from .cells import decoder
from .priors import plan_acceptance
from .goodput import search_slo, served_k
from .workload import PLAN_KS
from .commands import draft_head, predicts_gate_pair
from .exercises import LESSON_MIX, solve_exercises
from .calibration import (
    calibrate_on_runs, OWN_HELD_OUT, OWN_WORST, plan_benchmark, predict_bench, predicted_benches, replay_pair,
)
from .choose import choose, plan_deployment
from .report import Report


def assumed_acceptance(dep, evidence, traffic):
    """The published acceptance of the traffic's domains for this head (priors.plan_acceptance): what the plan assumes
    until measured, unless an expected alpha is set."""
    return plan_acceptance(evidence.mix, draft_kind(dep.draft), draft_head(dep)[0], dep.shape.get("hf"),
                           dep.shape.get("family"), traffic.alpha_spread, dep.temperature)


def mix_rows(mix, prior):
    """The traffic mix's rows with the published alpha where the row gives none: (name, share, alpha[, tokens])."""
    alphas = {name: alpha for name, _, alpha, _ in prior.domains} if prior else {}
    return tuple((name, share, alpha if alpha is not None else alphas[name], *rest)
                 for name, share, alpha, *rest in mix)


def run_model(grid, dep, *, grid_cells, evidence, traffic, fit, settings, progress=None, charts=True, trust=None,
              prior=None):
    """Everything the tables, the plan and --json show (a Report without the calibration, exercises and files), each
    part from its own function, on shared requests.

    grid_cells: main.py's loop over the grid (main.grid_cells); charts: whether to compute what only the plan's files
    show too (the charts' data, the gate pair); trust: how far to believe the model (default: the published data's
    error for this deployment); prior: the acceptance assumed (default: assumed_acceptance).
    """
    trust = trust or trust_in(dep)
    prior = prior or assumed_acceptance(dep, evidence, traffic)
    if prior is not None and not evidence.measured and evidence.expected_alpha is None and prior.acceptance_sd:
        trust = widened(trust, prior.acceptance_sd)   # a prior no closer than a family: its spread joins the range
    decode = decoder(traffic.seed, traffic.alpha_spread, traffic.output_spread, dep.output_tokens)
    cells = grid_cells(grid, dep, decode, fit, progress)
    facts = deployment_facts(grid, dep, fit)
    measured = evidence.measured
    target_concurrency = evidence.target_concurrency or max(grid.concurrencies)
    inputs = plan_input(measured, grid, traffic.alpha_spread, evidence.expected_alpha or settings.expected_fallback,
                        prior if evidence.expected_alpha is None else None)
    batches = sorted(set(grid.concurrencies) | {target_concurrency})
    best = best_k_table(dep, inputs.sources, batches, fit, trust.speedup_sd, (inputs.alpha, inputs.acceptance))
    plan = plan_choices(grid, dep, decode, fit=fit, acceptance=inputs.acceptance, alpha=inputs.alpha, target_concurrency=target_concurrency,
                        margin=evidence.margin, k_in_use=inputs.k_in_use, measured=measured is not None, requests=inputs.requests, p99_budget=evidence.budget,
                        served=evidence.served_model, sd=trust.speedup_sd)
    plan = replace(plan, tail=[with_intervals(c, trust) for c in plan.tail])
    mix = mix_result(mix_rows(evidence.mix, prior), dep, plan.k, plan.shown_batch, decode, fit,
                     assumed=evidence.mix_assumed) if evidence.mix else None
    if mix is not None:
        mix = replace(mix, blended_speedup_interval=interval(mix.blended_speedup, trust.speedup_sd))
    checked = gate(measured, evidence.comparison, dep, plan, evidence.budget) if measured else None
    served = search_slo(dep, plan, traffic, fit)
    error = model_error(dep)
    drafts = served is not None and served.speculative is not None and served.speculative.served.ks() != (0,)
    if drafts and served.gain is not None:   # the capacity ratio is a speedup: its range and correction
        gain, bounds = corrected(served.gain, interval(served.gain, trust.speedup_sd), error)
        served = replace(served, gain=gain, gain_interval=bounds, modelled_gain=served.gain if known(error) else None)
    # The plan's benchmark at its batch and K: the verdict's headline, stage 1's predicted pair and stage 4's tail.
    pair = plan_benchmark(dep, plan.shown_batch, plan.k, plan.request_alpha, plan.request_spread, trust, traffic, fit)
    replayed = (replay_pair(dep, evidence.pair_workload, measured.k, inputs.requests, trust, traffic.seed, fit)
                if measured and evidence.comparison and evidence.pair_workload and not measured.varying_k
                else None)   # the measured pair's own run, replayed (it runs one K)
    called = verdict(dep, plan, inputs.acceptance, level=trust.level, fit=fit, measured_gate=checked, pair=pair,
                     target_from=evidence.target_from, error=error,
                     prior=prior if not measured and evidence.expected_alpha is None else None,
                     measured_pair=(evidence.comparison, replayed) if evidence.comparison else None)
    return Report(cells=[with_intervals(c, trust) for c in cells.cells], breakeven=cells.breakeven,
                  eps_b1=cells.eps_b1, facts=facts, alpha_spread=traffic.alpha_spread,
                  output_spread=traffic.output_spread, input_spread=traffic.input_spread, best_k=best, plan=plan,
                  mix=mix, charts=chart_data(grid, dep, plan, decode, fit, settings.chart_alphas) if charts else None,
                  measured=measured_predictions(measured, evidence.comparison, dep, batches=batches, target_concurrency=target_concurrency,
                                                decode=decode, fit=fit, requests=inputs.requests, replayed=replayed) if measured else None,
                  gate=checked, trust=trust, gate_runs=pair if charts and predicts_gate_pair(dep, plan) else None,
                  verdict=replace(called, at_slo=served), at_slo=served)


def check_calibration(calibration):
    """Refuse runs that disagree beyond what one deployment explains (UsageError): the worst in sample past
    OWN_WORST, or one left out past OWN_HELD_OUT (the fit reached it only by bending a factor)."""
    if calibration.worst_error > OWN_WORST:
        worst = next(r for r in calibration.runs if r.path == calibration.disagreeing)
        raise UsageError(f"--calibrate: the files disagree beyond what the model can fit: {worst.path} is "
                         f"{worst.held_out_error * 100:+.0f}% off what the others predict; check they are one "
                         "deployment and one workload, and rerun that one")
    far = max(calibration.runs, key=lambda r: abs(math.log1p(r.held_out_error)))
    if abs(math.log1p(far.held_out_error)) > math.log1p(OWN_HELD_OUT):
        raise UsageError(f"--calibrate: the files disagree: {far.path} is {far.held_out_error * 100:+.0f}% off what "
                         "the other runs predict when it is left out (the fit reaches it only by bending a factor); "
                         "check it is the same deployment and workload, and rerun it")


def compare_rows(predicted, measured):
    """(key, predicted, interval, measured, relative error) for every key the two files both give a number for."""
    rows = []
    for key, value in predicted.result.items():
        seen = measured.get(key)
        if key in predicted.intervals and finite_number(seen) and finite_number(value) and seen > 0:
            rows.append((key, value, predicted.intervals[key], float(seen), value / seen - 1.0))
    return rows


def compared(replay, dep, trust, traffic, fit):
    """A --compare file beside the prediction of its own run (its lengths, concurrency or rate, prompts and
    acceptance): (path, PredictedBench, rows, notes)."""
    bench, work, acceptance, notes = replay.bench, replay.workload, replay.acceptance, list(replay.notes)
    k, alpha, spread = 0, 0.0, traffic.alpha_spread
    if acceptance is not None:
        # Requests centred so that their rounds deliver the measured tau in aggregate, as counters add them up.
        k = acceptance.k
        alpha, spread = center_requests(acceptance.acceptance_length, k, traffic.alpha_spread)
        notes.append(f"acceptance from {'its own spec_decode_* keys' if bench.spec else acceptance.source}: K = {k}, "
                     f"tau {acceptance.acceptance_length:.3f}, requests around alpha {alpha:.3f} (s.d. {spread:.2f})")
    else:
        notes.append("no spec_decode_* keys: replayed with speculation off")
    here = at_lengths(dep, work.input_tokens, work.output_tokens)
    if bench.goodput is not None and not replay.slo:
        notes.append(f"its request_goodput ({bench.goodput:.6g}) is not compared: the file does not record the "
                     "--goodput bounds it was counted at; give them as --slo to compare it")
    pb = predict_bench(here, Path(replay.path).name, work, k=k, alpha=alpha, trust=trust, seed=traffic.seed, fit=fit, spread=spread,
                       plan_batch=replay.server_cap, slo=replay.slo)
    measured_keys = dict(bench.latency, **bench.others, output_throughput=bench.output_throughput)
    if replay.slo:
        measured_keys["request_goodput"] = bench.goodput
    rows = compare_rows(pb, measured_keys)
    missing = [key for key in pb.intervals if key not in {row[0] for row in rows}]
    if missing:   # absent, null, NaN (vllm bench's mark of a statistic without a sample) or 0
        notes.append(f"not compared, the file gives no value above 0: {', '.join(missing)}")
    return replay.path, pb, rows, notes


def decide(inputs, grid_cells, fit, progress=None):
    """Everything a run decides (a Report): the calibration on the user's runs (refused where they disagree), then
    run_model with main.py's grid loop (grid_cells) at the fitted constants (`fit`, refitted on the runs), the
    exercises, the predicted benchmark files and the --compare replays. progress: called as the grid's (alpha, K)
    pairs are simulated."""
    choice = None
    if inputs.choose is not None:   # --choose: the cheapest deployment first, then its plan as for any deployment
        ask = inputs.choose
        choice = choose(ask.options, ask.demand, inputs.traffic.slo, ask.prices, evidence=inputs.evidence,
                        traffic=inputs.traffic, settings=inputs.settings, grid=inputs.grid, fit=fit)
        if choice.chosen is not None:   # the plan's batch: what a replica holds at its capacity, and their spread
            held = choice.chosen.concurrency
            inputs = replace(inputs, dep=plan_deployment(choice),
                             evidence=replace(inputs.evidence, target_concurrency=max(1, math.ceil(held + 2 * math.sqrt(held))),
                                              target_from="the requests a replica of the chosen deployment holds at "
                                                          "its capacity, with room for two s.d.s more (--choose)"))
    grid, dep, evidence, traffic, settings = inputs.grid, inputs.dep, inputs.evidence, inputs.traffic, inputs.settings
    prior = assumed_acceptance(dep, evidence, traffic)
    assumed = evidence.expected_alpha or (prior.alpha if prior else settings.expected_fallback)
    fit, calibration = (calibrate_on_runs(dep, inputs.runs, fit, assumed, seed=traffic.seed, spread=traffic.alpha_spread)
                        if inputs.runs else (fit, None))
    if calibration:
        check_calibration(calibration)
    trust = trust_in(dep, calibration)
    report = run_model(grid, dep, grid_cells=grid_cells, evidence=evidence, traffic=traffic, fit=fit,
                       settings=settings, progress=progress, charts=inputs.out is not None, trust=trust, prior=prior)
    exercises = (solve_exercises(dep, grid, mix_rows(evidence.mix, prior) if not evidence.mix_assumed else LESSON_MIX,
                                 seed=traffic.seed, fit=fit, spread=traffic.alpha_spread,
                                 output_spread=traffic.output_spread)
                 if inputs.exercises else None)
    bench, plan = inputs.bench, report.plan
    at = report.at_slo   # the plan's K as the SLO search found the server runs it, else as the release runs it
    served = (at.speculative.served if at is not None and at.speculative is not None and at.speculative.served
              else served_k(dep, plan.schedule, plan.k))
    ks = [served if k == PLAN_KS else k for k in bench.ks]
    benches = predicted_benches(dep, ks, plan.request_alpha, trust=trust, traffic=traffic, fit=fit,
                                spread=plan.request_spread, concurrencies=grid.concurrencies, rates=bench.rates,
                                prompts=bench.prompts, plan_batch=plan.shown_batch) if bench.folder else None
    comparisons = [compared(replay, dep, trust, traffic, fit) for replay in inputs.replays]
    return replace(report, inputs=inputs, calibration=calibration, exercises=exercises, benches=benches,
                   comparisons=comparisons or None, choice=choice)
