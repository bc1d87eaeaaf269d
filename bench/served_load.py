"""Whole benchmark runs under load, predicted and measured: mean and median TTFT, P99 TPOT and output throughput of
every served run in served_runs.json that reports them, as `--calibrate` then `--predict-bench` would give them.

The protocol is a user's: for each deployment in a source (a target, GPU, parallelism, engine and draft), the
tool is calibrated on five of its runs (calibration.calibrate_on_runs on their mean TPOTs, spread over K and
concurrency), and every other run of it is simulated step by step (serving.serve_run, bench_result) at its own
lengths, concurrency, request rate and acceptance. Only those held-out runs are scored. The constant of the load
model (costmodel.Fit's request_ms: a request's time around its steps, the client and the API server) is the same for
every source; --loso refits it with each source left out in turn and scores that source at the value fitted on the
others (A), on their median TTFTs (a run's few slow first requests move its mean, not its median). As
--calibrate does, B refits it on each deployment's five runs' median TTFTs too.

Sources (each with its own caveats in served_runs.json's `sources`):
  llama70b   tomasruizt/vllm-scripts: Llama 3.3 70B bf16 TP 2 on vLLM of 2026-01 (0.14), the GPUs taken as H100 PCIe
             without P2P (served_runs.py: LLAMA_GPU), EAGLE-3 and Llama 3.2 1B drafts and baselines, C 1-64 at
             request rate C (Poisson), InstructCoder lengths (mean 170 in, 147 out; their spread taken as the
             tool's default OUTPUT_SPREAD in log for both).
  scaling    vllm-project/speculators research/scaling: Qwen3 0.6B-32B on one GPU taken as an A100 80GB, vLLM 0.10,
             forced per-token alpha (no spread), 512 in (measured mean) / 128 out, GuideLLM: synchronous, 128 at
             once, and constant-rate points (rate = the measured request throughput, gaps near constant).
  inferencex InferenceX DeepSeek-R1-0528 fp8/fp4 on SGLang and TensorRT-LLM (8 x H200/B200/MI300X/MI355X, 4 x B200/
             MI355X), max_concurrency C with 10 C prompts, lengths uniform on [0.8 L, L] (its --random-range-ratio
             0.8: mean 0.9 L, s.d. 6% of it). MTP's acceptance is not in the files: a per-token alpha of 0.75
             (within the 0.6-0.9 published for DeepSeek's MTP module: bench/moe_load.py) is assumed, and
             calibration absorbs the rest. The servers are started as their launch scripts start them
             (inferencex_server). DP-attention runs (the product does not simulate them: deployment.simulated_layout;
             bench/moe_load.py does, as one scheduler) and the ATOM engine are left out.

    python bench/served_load.py            # the errors at FIT, by source, band and engine (a few minutes)
    python bench/served_load.py --loso     # refit request_ms without each source in turn (about 20 minutes)
"""
import dataclasses
import json
import math
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "code"))
sys.path.insert(0, str(HERE))

from rollout import benchfiles, calibration, catalog, cli, costmodel, deployflags, deployment, readers, serving, workload  # noqa: E402,F401
from rollout.acceptance import alpha_from_length, acceptance_length  # noqa: E402
from main import SETTINGS  # noqa: E402  (main.py's constants: the reference deployment)
import served_runs  # noqa: E402

POINTS = json.loads((HERE / "served_runs.json").read_text())["points"]
VLLM_DEFAULT_SHARE = 0.9   # vLLM's gpu_memory_utilization before 0.20 (vllm/config/cache.py): both vLLM sources left it


def vllm_default_share(dep):
    """The deployment as a vLLM server of 2025-2026 started with its default memory share."""
    return dataclasses.replace(dep, memory_fraction=VLLM_DEFAULT_SHARE)
CALIBRATION_RUNS = 5
MTP_ALPHA = 0.75
GUIDELLM_CONSTANT = 1000.0   # gamma shape of a constant-rate sweep's gaps: nearly even, as GuideLLM sends them
RANGE = 0.8                  # InferenceX's --random-range-ratio: lengths uniform on [0.8 L, L]
UNIFORM_SPREAD = (1 - RANGE) / math.sqrt(12) / ((1 + RANGE) / 2)   # that uniform's s.d. over its mean


@dataclasses.dataclass
class Case:
    source: str
    group: tuple
    point: dict
    dep: object
    work: workload.Workload
    k: int
    alpha: float
    spread: float
    tpot_ms: float        # measured mean TPOT (median where the file has no mean)
    engine: str
    concurrency: float


def llama_cases():
    era = deployflags.parse_era(served_runs.VLLM, "0.14")
    deps = {d: served_runs.llama_deployment(d, era) for d in ("eagle3", "llama-3.2-1b")}
    for p in (p for p in POINTS if p["source"] == served_runs.LLAMA):
        m, c = p["metrics"], p["concurrency"]
        draft = "llama-3.2-1b" if (p["draft"] or "").startswith("draft_model") else "eagle3"
        dep = vllm_default_share(deployment.at_lengths(deps[draft], round(p["input_tokens"]), round(p["output_tokens"])))
        k = p["K"] or 0
        alpha = alpha_from_length(p["acceptance"]["acceptance_length"], k) if k else 0.0
        work = workload.Workload(num_prompts=round(m["completed"]), max_concurrency=c, request_rate=float(c),
                                burstiness=1.0, input_tokens=round(p["input_tokens"]),
                                output_tokens=round(p["output_tokens"]), output_spread=SETTINGS.output_spread,
                                input_spread=SETTINGS.output_spread)
        yield Case("llama70b", ("llama70b", draft if k else "eagle3"), p, dep, work, k, alpha, 0.11,
                   m["mean_tpot_ms"], "vllm", c)


def scaling_cases():
    era = deployflags.parse_era(served_runs.VLLM, "0.10")
    deps = served_runs.scaling_deployments(era)
    for p in (p for p in POINTS if p["source"] == served_runs.SCALING):
        m = p["metrics"]
        inp, out = round(p["input_tokens_measured_mean"]), p["output_tokens"]
        dep = vllm_default_share(deployment.at_lengths(deps[p["model"]], inp, out))
        if p["concurrency"] is None:
            rate, cap, burst, c = m["request_throughput"], None, GUIDELLM_CONSTANT, p["concurrency_measured_mean"]
        else:
            rate, cap, burst, c = math.inf, p["concurrency"], 1.0, p["concurrency"]
        work = workload.Workload(num_prompts=m["n_requests"], max_concurrency=cap, request_rate=rate, burstiness=burst,
                                input_tokens=inp, output_tokens=out, output_spread=0.0)
        yield Case("scaling", ("scaling", p["model"]), p, dep, work, p["K"], p["acceptance"]["value"], 0.0,
                   m["mean_tpot_ms"], "vllm", c)


GPU = re.compile(r"(\d+)x (\S+) \(TP=(\d+), EP=(\d+), DP-attention=(True|False)\)")
GPUS = {"H200": "h200", "B200": "b200", "MI300X": "mi300x", "MI355X": "mi355x"}
ENGINES = {"sglang": "sglang", "trt": "trtllm"}
VERSION = re.compile(r":v?(\d+\.\d+\.\d+)")


INFERENCEX = "InferenceX-dsr1-single-node"


def inferencex_runs():
    """(point, engine, dtype, deployment, workload) of every InferenceX run on SGLang or TensorRT-LLM whose weights
    fit, as the model sees it: the server as its launch script starts it (inferencex_server), 10 C prompts at
    concurrency C, lengths uniform on [0.8 L, L]."""
    for p in (p for p in POINTS if p["source"] == INFERENCEX):
        if p["engine"] not in ENGINES or p["K"] is None or "output_throughput" not in p["metrics"]:
            continue
        count, gpu, tp, ep, dp = GPU.fullmatch(p["gpu"]).groups()
        engine = ENGINES[p["engine"]]
        version = VERSION.search(p["engine_version"])
        era = deployflags.parse_era(catalog.ENGINES[engine], version.group(1) if version else None)
        dtype = "fp4" if "(fp4)" in p["model"] else "fp8"
        inp, out = round(p["input_tokens"] * (1 + RANGE) / 2), round(p["output_tokens"] * (1 + RANGE) / 2)
        dep = SETTINGS.deployment.build("deepseek-v3", GPUS[gpu], int(tp), weights_dtype=dtype, kv_dtype=inferencex_kv(engine, GPUS[gpu]),
                                        draft="mtp", engine=engine, era=era, ep=int(ep), dp_attention=dp == "True",
                                        input_tokens=inp, output_tokens=out)
        if dep.target.weight_bytes / dep.tp > dep.memory_gib * 2 ** 30 * 0.9:
            continue
        c = p["concurrency"]
        work = workload.Workload(num_prompts=10 * c, max_concurrency=c, request_rate=math.inf, burstiness=1.0,
                                input_tokens=inp, output_tokens=out, output_spread=UNIFORM_SPREAD,
                                input_spread=UNIFORM_SPREAD)
        yield p, engine, dtype, inferencex_server(dep, p, c), work


def inferencex_cases():
    for p, engine, dtype, dep, work in inferencex_runs():
        if dep.dp_attention:   # the product does not simulate it (deployment.simulated_layout)
            continue
        m, k = p["metrics"], p["K"]
        group = ("inferencex", engine, p["gpu"], dtype, bool(k))
        yield Case("inferencex", group, p, dep, work, k, MTP_ALPHA if k else 0.0, 0.05,
                   m.get("mean_tpot_ms") or m["median_tpot_ms"], engine, p["concurrency"])


def inferencex_kv(engine, gpu):
    """The KV cache's dtype InferenceX's launch scripts give: fp8 (TensorRT-LLM's kv_cache_config dtype fp8 in every
    script; SGLang's --kv-cache-dtype fp8_e4m3 on B200, MI300X and MI355X), except SGLang on H200, which sets none."""
    return "bf16" if (engine, gpu) == ("sglang", "h200") else "fp8"


def padded(tokens):
    """The TensorRT-LLM scripts' $(( (X + 64 + 63) / 64 * 64 )): X plus 64, rounded up to a multiple of 64."""
    return (tokens + 127) // 64 * 64


def inferencex_server(dep, point, concurrency):
    """The server as InferenceX's launch scripts start it (SemiAnalysisAI/InferenceX, benchmarks/dsr1_*.sh and
    benchmarks/single_node/fixed_seq_len/ at 8eec0d4; 1fc5d73 and 6c5e4c5 where they are the same), with the
    nominal prompt length L (1,024 or 8,192):
      TensorRT-LLM (--extra_llm_api_options): kv_cache_config free_gpu_memory_fraction 0.8 on B200 (0.7 for fp8 with MTP
        and DP attention at 8eec0d4, 0.75 for 8k/1k at TP 4 without MTP), 0.75 on H200. Without MTP max_num_tokens =
        max(padded(C + L), 8192) and the default max_batch_size; with MTP (num_nextn_predict_layers K)
        max_batch_size C, under DP attention a rank's: C / 8 from 8 (fp8 on B200), C / 4 from 4 (fp4 on B200), C / TP
        on H200, and max_num_tokens = padded((K + 1) x max_batch_size + L); both are each rank's.
      SGLang: dsr1_fp8_b200(_mtp).sh: TP 8 --max-running-requests 128 (512 with MTP), --chunked-prefill-size 32768
        (16384 with MTP), --mem-fraction-static 0.82, --scheduler-recv-interval 30 from concurrency 16, else 10; TP 4
        32, 8192, 0.95, 10. dsr1_fp4_b200(_mtp).sh: 256 (512 with MTP), 16384, 0.85, the same receive interval.
        dsr1_fp8_h200.sh (and fixed_seq_len/dsr1_fp8_h200_mtp.sh at f89cdfe): 512 at 1k/1k else 256, 32768, 0.82.
        dsr1_fp8_mi355x.sh, fixed_seq_len/dsr1_fp8_mi355x_mtp.sh at f89cdfe and dsr1_fp4_mi355x.sh:
        --chunked-prefill-size 196608 (32768 for fp4 8k/1k past concurrency 32), 0.8, --num-continuous-decode-steps
        8 (fp8) or 4 (fp4), which admits new requests every that many steps, as a receive interval does; with MTP
        --max-running-requests C. dsr1_fp8_mi300x.sh: 131072, 0.8, 4."""
    engine, gpu, mtp = dep.engine, dep.gpu, bool(point["K"])
    nominal = point["input_tokens"]
    if engine.key == "trtllm":
        # Each rank of attention data parallelism has its own budget and batch; the simulation runs one scheduler over
        # the replica, so it takes the ranks' sum.
        ranks = dep.tp if dep.dp_attention else 1
        if mtp:
            batch = concurrency
            if dep.dp_attention:   # each rank's max_batch_size, as each script computes it
                share_of = 8 if dep.weights_dtype == "fp8" else 4
                batch = (concurrency if concurrency < share_of else concurrency // share_of) if gpu == "b200" else \
                    max(1, concurrency // dep.tp)
            budget = ranks * padded((point["K"] + 1) * batch + nominal)
            running = ((0, ranks * batch),)
        else:
            budget, running = ranks * max(padded(concurrency + nominal), 8192), engine.running_limit
        share = 0.75 if gpu == "h200" else \
            0.7 if mtp and dep.dp_attention and dep.weights_dtype == "fp8" else \
            0.75 if nominal == 8192 and dep.tp == 4 and not mtp else 0.8
        engine = dataclasses.replace(engine, running_limit=running, prefill_budget=((0, budget),),
                                     prefill_budget_small=())
        return dataclasses.replace(dep, engine=engine, memory_fraction=share)
    if gpu == "b200":
        recv = 30 if concurrency >= 16 else 10
        if dep.weights_dtype == "fp8":
            running, chunk, share = ((512 if mtp else 128), (16384 if mtp else 32768), 0.82) if dep.tp == 8 else \
                (32, 8192, 0.95)
            recv = recv if dep.tp == 8 else 10
        else:
            running, chunk, share = (512 if mtp else 256), 16384, 0.85
    elif gpu == "h200":
        recv, running, chunk, share = 1, (512 if point["output_tokens"] == nominal == 1024 else 256), 32768, 0.82
    elif gpu == "mi355x":
        fp8 = dep.weights_dtype == "fp8"
        chunk = 32768 if not fp8 and nominal == 8192 and concurrency > 32 else 196608
        recv, running, share = (8 if fp8 else 4), (concurrency if mtp else None), 0.8
    else:   # mi300x
        recv, running, chunk, share = 4, None, 131072, 0.8
    engine = dataclasses.replace(engine, recv_interval=recv,
                                 running_limit=((0, running),) if running else engine.running_limit,
                                 prefill_budget=((0, chunk),), prefill_budget_small=())
    return dataclasses.replace(dep, engine=engine, memory_fraction=share)


def band(c):
    return "1" if c <= 1.5 else "2-16" if c <= 16 else "17-64" if c <= 64 else "65-256" if c <= 256 else "257+"


def as_run(case):
    """The case as a calibration Run (benchfiles.Run), at the batch it decoded on average."""
    m, w = case.point["metrics"], case.work
    ttft = m.get("mean_ttft_ms") or m.get("median_ttft_ms") or 0.0
    decoding = (readers.decoding_batch(w.max_concurrency, w.output_tokens, case.tpot_ms, ttft, w.num_prompts)
                if w.max_concurrency else max(1.0, case.concurrency))
    tau = acceptance_length(case.alpha, case.k) if case.k else None
    return benchfiles.Run(batch=w.max_concurrency or max(1, round(case.concurrency)), k=case.k or None, tau=tau,
                       input_tokens=w.input_tokens, output_tokens=w.output_tokens, tpot_ms=case.tpot_ms,
                       path=case.point["source_file"], decoding=decoding, ttft_ms=m.get("mean_ttft_ms"),
                       median_ttft_ms=m.get("median_ttft_ms"),
                       requests=w.num_prompts, rate=w.request_rate, burstiness=w.burstiness)


def calibrated(cases, base=costmodel.FIT):
    """{group: (Fit, calibration runs' ids)}: five runs of each group spread over its (K, concurrency) order, their
    mean TPOTs fitting own_* and their median TTFTs request_ms (calibration.calibrate_on_runs), from `base`."""
    groups = defaultdict(list)
    for case in cases:
        groups[case.group].append(case)
    out = {}
    for group, members in groups.items():
        members.sort(key=lambda c: (c.k, c.concurrency, c.work.input_tokens, c.work.output_tokens))
        if len(members) <= CALIBRATION_RUNS:
            continue
        step = (len(members) - 1) / (CALIBRATION_RUNS - 1)
        chosen = [members[round(i * step)] for i in range(CALIBRATION_RUNS)]
        fit, _ = calibration.calibrate_on_runs(chosen[0].dep, [as_run(c) for c in chosen], base,
                                               SETTINGS.expected_fallback, seed=0, spread=SETTINGS.alpha_spread)
        out[group] = (fit, {id(c.point) for c in chosen})
    return out


SERVE_FIELDS = ("request_ms",)   # the Fit fields this script fits


def predicted(case, fit, serve=None):
    """The case's simulated run, as vLLM writes it; serve: {SERVE_FIELDS: value} in place of the fit's."""
    fit = fit._replace(**serve) if serve else fit
    run = serving.serve_run(case.dep, case.work, case.k, case.alpha, case.spread, 0, fit, case.work.max_concurrency)
    return serving.bench_result(run, case.work, case.dep)


METRICS = (("mean TTFT", "mean_ttft_ms"), ("median TTFT", "median_ttft_ms"), ("P99 TPOT", "p99_tpot_ms"),
           ("output throughput", "output_throughput"))


def scored(cases, fits, serve=None):
    """[(case, {metric: error})] of every held-out case: predicted / measured - 1."""
    out = []
    for case in cases:
        if case.group not in fits or id(case.point) in fits[case.group][1]:
            continue
        result = predicted(case, fits[case.group][0], serve)
        errors = {key: result[key] / case.point["metrics"][key] - 1
                  for _, key in METRICS if case.point["metrics"].get(key)}
        out.append((case, errors))
    return out


def line(name, errors):
    cells = []
    for _, key in METRICS:
        e = [x[key] for x in errors if key in x]
        cells.append(f"{len(e):>5} {statistics.median(abs(v) for v in e) * 100:6.1f}% {statistics.fmean(e) * 100:+6.1f}%"
                     if e else f"{'-':>5} {'':>7} {'':>7}")
    return f"   {name:<34}" + "  ".join(cells)


def report(results, title):
    print(title)
    print(f"   {'':<34}" + "  ".join(f"{label + ': n, median |e|, mean':<29}" for label, _ in METRICS))
    keys = defaultdict(list)
    for case, errors in results:
        keys[case.source].append(errors)
        keys[f"{case.source}  C {band(case.concurrency)}"].append(errors)
        keys[f"engine {case.engine}{'  spec' if case.k else '  plain'}"].append(errors)
    for key in sorted(keys):
        print(line(key, keys[key]))
    print()


def all_cases():
    return [*llama_cases(), *scaling_cases(), *inferencex_cases()]


SOURCES = ("llama70b", "scaling", "inferencex")
FIT_CASES = 45   # held-out runs of each source request_ms is fitted on (every n-th: a fold takes minutes, not hours)


def fit_sample(cases, fits, sources):
    out = []
    for source in sources:
        mine = [c for c in cases if c.source == source and c.group in fits and id(c.point) not in fits[c.group][1]
                and c.point["metrics"].get("median_ttft_ms")]
        step = max(1, len(mine) // FIT_CASES)
        out += mine[::step]
    return out


def loss(sample, fits, serve):
    """The mean over sources of the median |log error| of median TTFT: a request's fixed cost moves every TTFT alike,
    and a median is not moved by a run's few slow first requests (calibration.fitted_ttft)."""
    by = defaultdict(list)
    for case in sample:
        result = predicted(case, fits[case.group][0], serve)
        by[case.source].append(abs(math.log(result["median_ttft_ms"] / case.point["metrics"]["median_ttft_ms"])))
    return statistics.fmean(statistics.median(v) for v in by.values())


REQUEST_GRID = (0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0, 80.0, 100.0)   # ms


def fit_serve(sample, fits):
    """request_ms at the least loss over REQUEST_GRID (the loss is flat near its minimum: a grid says how flat)."""
    scores = {ms: loss(sample, fits, {"request_ms": ms}) for ms in REQUEST_GRID}
    best = min(scores, key=scores.get)
    return {"request_ms": best}, scores[best]


def main():
    """The held-out runs' errors: TTFT at FIT's request_ms (A), and at the request_ms each deployment's five
    calibration runs give (B, as --calibrate does); with --loso, FIT's request_ms refitted without each source."""
    cases = all_cases()
    fits = calibrated(cases)   # own_* from the five runs' TPOTs, and request_ms from their TTFTs
    if "--loso" in sys.argv:
        print("# python bench/served_load.py --loso > bench/served_load.txt   (about 20 minutes on 2 cores)")
        folds = {}
        for left in (None, *SOURCES):
            serve, score = fit_serve(fit_sample(cases, fits, [s for s in SOURCES if s != left]), fits)
            folds[left] = serve
            print(f"fitted without {left or 'none'}: " + ", ".join(f"{k} {v:.4g}" for k, v in serve.items())
                  + f" (loss {score:.3f})", flush=True)
        results = [r for left in SOURCES for r in scored([c for c in cases if c.source == left], fits, folds[left])]
        report(results, "A. Each source at the request_ms fitted on the others (leave one source out), "
                        "its TPOT calibrated on five runs")
        results = []
        for left in SOURCES:
            mine = [c for c in cases if c.source == left]
            results += scored(mine, fits)   # request_ms from each deployment's own five runs: no fold's constant
        report(results, "B. The same, request_ms calibrated too, on the same five runs' median TTFTs (as --calibrate)")
        return
    global_serve = {name: getattr(costmodel.FIT, name) for name in SERVE_FIELDS}
    report(scored(cases, fits, global_serve), "A. Held-out runs at costmodel.FIT's " + ", ".join(
        f"{name} {value:g}" for name, value in global_serve.items()) + ", TPOT calibrated on five runs")
    report(scored(cases, fits), "B. The same, request_ms calibrated too, on the five runs' median TTFTs")


if __name__ == "__main__":
    main()
