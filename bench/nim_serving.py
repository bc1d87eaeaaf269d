"""Whole closed-loop runs predicted against NVIDIA NIM's genai-perf measurements (nim_genai_perf.json).

Each of the 787 runs (Llama 3 8B and 70B on A100 and H100, TP 1-8, fp16/fp8, 200-7,000 prompt
tokens, 200-2,000 output tokens, concurrency 1-250; NIM is TensorRT-LLM underneath) is simulated
step by step by rollout/serving.py's serve_run on its TensorRT-LLM engine row, the server capped at the
run's concurrency and the sequences its KV cache holds, and its steady state is read as genai-perf
reads it: the requests sent after the first 2C and before the last 2C of N = 12 C + 200.

What is held out: plain_step.json fits the ITL averages of 95 of these runs, at concurrency 1-100.
Their TTFTs, P95 ITLs (genai-perf's ITL is a request's TPOT, so its P95 is over requests), request
latencies and throughputs, and every run at 150-250, are in no fit. The
errors are printed by quantity and by concurrency, and as one summary line per quantity.

    python bench/nim_serving.py > bench/nim_serving.txt     (about a minute; standard library only)
"""
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "code"))   # main.py's package, rollout, imports by name from code/

from rollout import catalog, deployment as deployments, serving, workload  # noqa: E402
from main import SETTINGS  # noqa: E402  (main.py's constants: the reference deployment)
DATA = json.loads((HERE / "nim_genai_perf.json").read_text())
MODELS = {"meta-llama3-8b-instruct": "llama-3.1-8b", "meta-llama3-70b-instruct": "llama-3.3-70b"}
GPUS = {"A100-SXM4-80GB": "a100-sxm-80gb", "H100_80GB_HBM3": "h100-sxm"}
QUANTITIES = (("TTFT avg", "ttft_avg_ms"), ("ITL avg (mean TPOT)", "itl_avg_ms"), ("ITL p95 (P95 TPOT)", "itl_p95_ms"),
              ("request latency avg", "request_latency_avg_ms"), ("output tok/s", "output_token_throughput"))


def deployment(row):
    """The row's deployment, as bench/calibrate.py builds NIM's (fp8 rows with an fp8 KV cache)."""
    dtype = "fp8" if row["precision"] == "fp8" else "bf16"
    i, o = row["input_config_tokens"], row["input_config_output"]
    return SETTINGS.deployment.build(MODELS[row["model"]], GPUS[row["gpu"]], row["gpus"], weights_dtype=dtype, kv_dtype=dtype,
                                context=deployments.mean_context(i, o), draft="ngram", engine="trtllm", input_tokens=i, output_tokens=o,
                                era=catalog.fitted_era("trtllm"))


def steady(run, batch):
    """genai-perf's view of a run: mean TTFT, ITL (its (latency - TTFT) / (output - 1)), latency, throughputs over
    the requests sent in its steady state."""
    n = len(run.start)
    window = range(2 * batch, n - 2 * batch)
    ttft = [run.first[i] - run.start[i] for i in window]
    latency = [run.end[i] - run.start[i] for i in window]
    tpot = [(run.end[i] - run.first[i]) / (run.output_tokens[i] - 1) for i in window]
    span = run.end[window[-1]] - run.start[window[0]]
    tokens = sum(run.output_tokens[i] for i in window)
    return {"ttft_avg_ms": statistics.fmean(ttft) * 1e3, "itl_avg_ms": statistics.fmean(tpot) * 1e3,
            "itl_p95_ms": statistics.quantiles(tpot, n=20, method="inclusive")[18] * 1e3,
            "request_latency_avg_ms": statistics.fmean(latency) * 1e3,
            "output_token_throughput": tokens / span if span > 0 else float("nan")}


def predict(row):
    dep = deployment(row)
    c = row["concurrency"]
    work = workload.Workload(num_prompts=12 * c + 200, max_concurrency=c, request_rate=float("inf"), burstiness=1.0,
                         input_tokens=dep.input_tokens, output_tokens=dep.output_tokens, output_spread=0.0)
    run = serving.serve_run(dep, work, 0, 0.0, SETTINGS.alpha_spread, SETTINGS.seed, plan_batch=c)
    return steady(run, c), run.cap


def main():
    groups = defaultdict(list)   # repeated runs of one setup: their measured means, predicted once
    for row in DATA["rows"]:
        key = (row["model"], row["gpu"], row["gpus"], row["precision"], row["input_config_tokens"],
               row["input_config_output"], row["concurrency"])
        groups[key].append(row)
    errors = defaultdict(list)   # (quantity, concurrency band) -> log errors
    for key in sorted(groups):
        rows = groups[key]
        predicted, cap = predict(rows[0])
        c = key[-1]
        band = "1-100 (ITL fitted)" if c <= 100 else "150-250"
        for _, field in QUANTITIES:
            measured = statistics.fmean(r[field] for r in rows)
            errors[field, band].append(predicted[field] / measured - 1)
            errors[field, "all"].append(predicted[field] / measured - 1)
        print(f"{key[0].split('-')[1]:>3} {key[1][:4]} TP{key[2]} {key[3]:>4} {key[4]:>4}/{key[5]:<4} C={c:<3} "
              f"cap {cap:>4}  " + "  ".join(
                  f"{label.split(' (')[0]} {predicted[field]:9.1f} vs {statistics.fmean(r[field] for r in rows):9.1f}"
                  for label, field in QUANTITIES))
    print()
    print("predicted / measured - 1, by quantity and concurrency (setups; repeats averaged):")
    for label, field in QUANTITIES:
        for band in ("1-100 (ITL fitted)", "150-250", "all"):
            e = sorted(abs(x) for x in errors[field, band])
            signed = statistics.median(errors[field, band])
            print(f"  {label:<22} C {band:<19} n={len(e):>3}  median |error| {statistics.median(e) * 100:5.1f}%  "
                  f"worst {e[-1] * 100:6.1f}%  median signed {signed * 100:+6.1f}%")


if __name__ == "__main__":
    main()
