"""Whether a change to the serving simulation keeps its statistics: 20 runs spread over engines, batches, K and load,
each simulated with several seeds, their keys' means and spreads across seeds written as JSON, and two such files
compared key by key against the simulation's own error.

    python bench/serving_check.py record OUT.json [SEEDS]      # SEEDS default 6 (16 for the baseline): seconds
    python bench/serving_check.py compare OLD.json NEW.json     # every key: |new - old| against their seeds' spread

bench/serving_baseline.json is the record of main d3d6fe0 with 16 seeds: the simulation as it was before decode-only
stretches were taken in one move and step costs interpolated (serving.aggregate_steps, serving.chunk_cost). A change
to the simulation is checked by recording it with 16 seeds and comparing against that file:

    python bench/serving_check.py record /tmp/new.json 16 && python bench/serving_check.py compare \
        bench/serving_baseline.json /tmp/new.json

A key agrees when the two means differ by at most 3 standard errors of their difference (the seeds' s.d. over
sqrt(seeds) from each side, in quadrature), or by at most 0.5% (keys a seed barely moves). The summary line says how
many of how many agree, and the compare step exits 1 when one does not. Standard library only.
"""
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "code"))

from rollout import serving, workload
from main import SETTINGS  # noqa: E402  (main.py's constants: the reference deployment)

KEYS = ("output_throughput", "request_throughput", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms", "mean_itl_ms",
        "median_itl_ms", "p99_itl_ms", "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_e2el_ms", "p99_e2el_ms",
        "max_output_tokens_per_s")


def cases():
    """(name, deployment, workload, K, alpha, plan batch): closed loop at 1-256 and open loop, three engines, dense and
    MoE, speculation off and at K 1-5, fixed and spread lengths."""
    def closed(dep, batch, prompts, output_spread=0.8, input_spread=0.8, cap=True):
        return workload.Workload(num_prompts=prompts, max_concurrency=batch, request_rate=math.inf, burstiness=1.0,
                                input_tokens=dep.input_tokens, output_tokens=dep.output_tokens,
                                output_spread=output_spread, input_spread=input_spread,
                                output_cap=dep.output_tokens if cap else None)

    def open_loop(dep, rate, prompts):
        return workload.Workload(num_prompts=prompts, max_concurrency=None, request_rate=rate, burstiness=1.0,
                                input_tokens=dep.input_tokens, output_tokens=dep.output_tokens, output_spread=0.8)

    d70 = SETTINGS.deployment.build()
    d8 = SETTINGS.deployment.build("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", input_tokens=512, output_tokens=256)
    sg = SETTINGS.deployment.build("llama-3.1-8b", "h200", 1, weights_dtype="bf16", engine="sglang")
    trt = SETTINGS.deployment.build("llama-3.3-70b", "h200", 4, weights_dtype="fp8", engine="trtllm", input_tokens=2048,
                                    output_tokens=512)
    moe = SETTINGS.deployment.build("qwen3-30b-a3b", "h100-sxm", 2, weights_dtype="bf16", input_tokens=1024, output_tokens=512)
    out = []
    for dep, name in ((d70, "70b vllm"), (d8, "8b vllm"), (sg, "8b sglang"), (trt, "70b trtllm"), (moe, "moe vllm")):
        for batch, k in ((1, 0), (16, 3), (64, 0), (64, 2)):
            out.append((f"{name} c{batch} k{k}", dep, closed(dep, batch, max(50, 10 * batch)), k, 0.75, batch))
    out = out[:16]
    out.append(("70b vllm c256 k2", d70, closed(d70, 256, 2560), 2, 0.78, 256))
    out.append(("8b vllm c32 k4 fixed", d8, closed(d8, 32, 320, 0.0, 0.0, cap=False), 4, 0.7, 32))
    out.append(("8b vllm open 8/s k3", d8, open_loop(d8, 8.0, 400), 3, 0.7, 64))
    out.append(("moe vllm c128 k1", moe, closed(moe, 128, 1280), 1, 0.8, 128))
    return out


def record(path, seeds=6):
    data = {}
    for name, dep, work, k, alpha, batch in cases():
        runs = [serving.bench_result(serving.simulate_run(dep, work, k, alpha, 0.11, seed, plan_batch=batch), work, dep)
                for seed in range(seeds)]
        data[name] = {key: [r[key] for r in runs] for key in KEYS}
        print(f"{name:24s} " + " ".join(f"{key.split('_')[0][:4]}:{statistics.fmean(data[name][key]):.4g}"
                                         for key in ("output_throughput", "p99_tpot_ms", "p99_itl_ms", "p99_ttft_ms")))
    Path(path).write_text(json.dumps(data, indent=1) + "\n")
    return 0


def compare(old_path, new_path):
    old, new = json.loads(Path(old_path).read_text()), json.loads(Path(new_path).read_text())
    agree = total = 0
    for name in old:
        for key in KEYS:
            a, b = old[name][key], new[name][key]
            diff = statistics.fmean(b) - statistics.fmean(a)
            se = math.sqrt(statistics.variance(a) / len(a) + statistics.variance(b) / len(b))
            ok = abs(diff) <= 3 * se or abs(diff) <= 0.005 * abs(statistics.fmean(a))
            agree += ok
            total += 1
            if not ok:
                print(f"{name:24s} {key:24s} {statistics.fmean(a):10.4g} -> {statistics.fmean(b):10.4g} "
                      f"({diff / statistics.fmean(a):+.2%}; {abs(diff) / se if se else math.inf:.1f} s.e.)")
    print(f"{agree} of {total} keys agree within 3 standard errors (or 0.5%)")
    return 0 if agree == total else 1


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "record":
        sys.exit(record(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 6))
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
