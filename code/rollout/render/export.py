"""Rendering: --json, the benchmark files --predict-bench writes, and --compare's table.
"""
from __future__ import annotations

import json
import math
from dataclasses import fields

from ..records import finite_number, wrap
from ..catalog import era_releases, release_text
from ..deployment import token_cost_hidden
from ..deployment import draft_kind, kv_copies, step_budget, verify_tokens
from ..releases import release
from ..records import percentile
from ..workload import PREDICTION_KEY
from ..trust import ERROR_CLASS, INTERVAL_LEVEL
from ..commands import draft_head
from .tables import summary_facts
from .plan import memory_setting


def clean(value):
    """JSON-safe value: a record as a dict of its fields in order (less NOT_IN_JSON ones, and OPTIONAL or shown_with
    ones that hold nothing), floats rounded, inf/NaN as null."""
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    if hasattr(value, "__dataclass_fields__"):
        out = {}
        for f in fields(value):
            if f.metadata.get("inline"):   # a part shown as the record's own fields (a Cell's)
                part = getattr(value, f.name)
                out.update(clean(part) if part is not None else missing(f.metadata["inline"]))
            elif shown_in_json(value, f):
                out[f.name] = clean(getattr(value, f.name))
        return out
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def missing(record):
    """The fields --json shows for a part that is missing: null where a record of Nones would show them."""
    return {f.name: None for f in fields(record)
            if f.metadata.get("json", True) and not f.metadata.get("optional") and "shown_with" not in f.metadata}


def shown_in_json(record, f):
    """Whether --json shows the record's field f (its metadata: NOT_IN_JSON, OPTIONAL, shown_with)."""
    meta = f.metadata
    if not meta.get("json", True):
        return False
    if meta.get("optional") and getattr(record, f.name) is None:
        return False
    return "shown_with" not in meta or getattr(record, meta["shown_with"]) is not None


def render_json(result, dep, grid):
    """--json: the deployment, then the run's records as clean() shows them, then the summary's sentences."""
    deployment = dict(engine=dep.engine.key, model=dep.model, gpu=dep.gpu, tp=dep.tp, ep=dep.ep,
                      weights_dtype=dep.weights_dtype,
                      kv_dtype=dep.kv_dtype, settings=list(dep.settings), context=dep.context, draft=dep.draft, draft_model=draft_head(dep)[0],
                      draft_trained_context=draft_head(dep)[1],
                      gpu_memory_gib=dep.memory_gib, gpu_memory_utilization=dep.memory_fraction,
                      gpu_memory_utilization_of=("memory free after the weights"
                                                 if dep.engine.memory_of_free else "all memory"),
                      memory_setting=memory_setting(dep), memory_budget_bytes=result.facts.memory_budget_bytes,
                      gpu_bandwidth_tbs=dep.bandwidth_tbs,
                      gpu_tflops=dep.target.tflops,
                      target_params=dep.target.held_params, active_params=dep.target.active_params,
                      experts=dep.target.experts or None, experts_per_token=dep.target.experts_per_token or None,
                      routing_exponent=dep.target.routing_exponent if dep.target.experts else None,
                      draft_topk=dep.topk, verify_tokens=dep.verify_tokens,
                      draft_params=dep.drafter.held_params,
                      weight_bytes=dep.target.held_bytes,
                      draft_weight_bytes=dep.drafter.held_bytes,
                      kv_bytes_per_token=dep.target.kv_bytes_per_token, kv_copies=kv_copies(dep.target, dep),
                      dp_attention=dep.dp_attention,
                      max_concurrency=result.facts.max_concurrency, input_tokens=dep.input_tokens,
                      output_tokens=dep.output_tokens, engine_release=release_text(release(dep)), engine_era=dep.era.key,
                      engine_releases=era_releases(dep.engine, dep.era),
                      era_saving_ms=dep.era.saving_ms(draft_kind(dep.draft), dep.topk),
                      era_hides_round_fixed=draft_kind(dep.draft) in dep.era.hides_for,
                      era_hides_token_cost=dict(plain=token_cost_hidden(dep, 1),
                                                verify=token_cost_hidden(dep, verify_tokens(dep, 1))),
                      plain_step_b1=result.facts.plain_b1,
                      plain_step_ms_b1=result.plan.plain_ms_b1)
    verdict = clean(result.verdict)
    error = result.verdict.model_error
    if error is not None:   # {class, median, worst, n}: the class as error_class names it
        verdict["model_error"] = dict({"class": {key: getattr(error, key) for key in ERROR_CLASS}},
                                      **{key: clean(getattr(error, key)) for key in ("median", "worst", "bias", "low",
                                                                                     "high", "n", "sources")})
    data = dict(verdict=verdict, deployment=deployment, interval_level=result.trust.level, trust=result.trust,
                cells=result.cells,
                breakeven=result.breakeven, best_k=result.best_k, plan=result.plan, mix=result.mix)
    if result.choice is not None:   # --choose: the search across deployments first, every candidate
        data = dict(choice=result.choice, **data)
    for key in ("at_slo", "measured", "gate", "exercises", "calibration"):   # the JSON's keys, in order, where there is one
        if getattr(result, key) is not None:
            data[key] = getattr(result, key)
    if result.benches:
        data["predicted_benches"] = [dict(name=pb.name, k=pb.k, alpha=pb.alpha, running_cap=pb.cap,
                                          interval_sd_log=pb.sd, result=pb.result, intervals=pb.intervals)
                                     for pb in result.benches]
    if result.comparisons:
        data["compare"] = [dict(path=str(path), k=pb.k, alpha=pb.alpha, notes=notes,
                                keys=[dict(key=key, predicted=value, interval=bounds, measured=seen, error=error,
                                           inside=bounds[0] <= seen <= bounds[1])
                                      for key, value, bounds, seen, error in rows])
                           for path, pb, rows, notes in result.comparisons]
    data["summary"] = summary_facts(result, grid, dep)
    return json.dumps(clean(data), indent=1) + "\n"


def render_bench_file(pb, dep):
    """A predicted file's text: vLLM's keys (bench_result), then under PREDICTION_KEY what made it and the
    intervals (vllm bench serve --metadata adds keys alike, so its readers take the file as it is)."""
    note = {"predicted": True, "by": "eagle3-rollout code/main.py", "k": pb.k, "alpha": pb.alpha,
            "running_cap": pb.cap, "peak_running": pb.peak_running, "scheduler_steps": pb.steps,
            "step_token_budget": step_budget(dep), "mixes_prefill": dep.engine.mixes_prefill,
            "output_spread": pb.workload.output_spread, "interval_level": INTERVAL_LEVEL, "interval_sd_log": pb.sd,
            "intervals": pb.intervals}
    return json.dumps({**pb.result, PREDICTION_KEY: note}, indent=1, allow_nan=False) + "\n"


BENCH_COLUMNS = (("file", 22, "s"), ("out tok/s", 9, ".0f"), ("TPOT ms", 8, ".2f"), ("P99", 7, ".2f"),
                 ("TTFT ms", 8, ".0f"), ("P99", 7, ".0f"), ("ITL P99", 8, ".2f"),
                 (f"tok/s {INTERVAL_LEVEL:.0%} range", 16, ""))


def bench_row(pb):
    """One predicted file as a line of render_benches."""
    r = pb.result
    low, high = pb.intervals["output_throughput"]
    cells = [pb.name, r["output_throughput"], r["mean_tpot_ms"], r["p99_tpot_ms"], r["mean_ttft_ms"],
             r["p99_ttft_ms"], r["p99_itl_ms"], f"{low:.0f}-{high:.0f}"]
    return " ".join(f"{value:>{width}{form}}" if form else f"{value:>{width}}"
                    for value, (_, width, form) in zip(cells, BENCH_COLUMNS))


def render_benches(benches, folder):
    """--predict-bench: a line per file written, then what the files assume."""
    header = " ".join(f"{name:>{width}}" for name, width, _ in BENCH_COLUMNS)
    lines = [f"== Predicted `vllm bench serve` files, written to {folder} ==", header, "-" * len(header)]
    lines += [bench_row(pb) for pb in benches]
    caps = sorted({(pb.k > 0, pb.cap) for pb in benches})
    lines += wrap("Each file is a simulated run, step by step: the server runs at most "
                  + ", ".join(f"{cap} sequences {'with' if spec else 'without'} speculation" for spec, cap in caps)
                  + "; prompts prefill in chunks beside the decodes or, where the engine runs prefill alone, before "
                  "them; every number carries the interval of a mean TPOT (its s.d. in the file).", 100, "")
    return lines + [""]


def compare_rows(predicted, measured):
    """(key, predicted, interval, measured, relative error) for every key the two files both give a number for."""
    rows = []
    for key, value in predicted.result.items():
        seen = measured.get(key)
        if key in predicted.intervals and finite_number(seen) and finite_number(value) and seen > 0:
            rows.append((key, value, predicted.intervals[key], float(seen), value / seen - 1.0))
    return rows


def render_compare(comparisons):
    """--compare: each measured file's keys beside the prediction of its own run."""
    lines = []
    for path, pb, rows, notes in comparisons:
        lines += [f"== {path}: predicted for its own run (concurrency {pb.workload.max_concurrency or 'open'}, "
                  f"{pb.workload.num_prompts} prompts, {pb.workload.input_tokens}/{pb.workload.output_tokens} "
                  f"tokens, {'K = ' + str(pb.k) if pb.k else 'speculation off'}) ==",
                  f"{'key':<24} {'predicted':>11} {f'{INTERVAL_LEVEL:.0%} range':>21} {'measured':>11} {'error':>8}  "
                  "inside",
                  "-" * 86]
        for key, value, (low, high), seen, error in rows:
            lines.append(f"{key:<24} {value:>11.2f} {low:>10.2f}-{high:<10.2f} {seen:>11.2f} {error * 100:>+7.1f}%  "
                         f"{'yes' if low <= seen <= high else 'no'}")
        errors = sorted(abs(row[4]) for row in rows)
        inside = sum(row[2][0] <= row[3] <= row[2][1] for row in rows)
        lines += [f"median |error| {percentile(errors, 0.5) * 100:.1f}%, worst {errors[-1] * 100:.1f}%; "
                  f"{inside} of {len(rows)} inside their range" if rows else "no key to compare"]
        lines += [line for note in notes for line in wrap("note: " + note, 100, "  ")] + [""]
    return lines
