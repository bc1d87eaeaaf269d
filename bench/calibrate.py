"""Fit the cost model's free constants to published measurements: `python bench/calibrate.py`.

Reads bench/published.json and bench/plain_step.json (the team's published measurements, copied
here), predicts every timed point with code/rollout/costmodel.py's cost model, fits costmodel.Fit by a
deterministic pattern search on squared log errors, and prints the error by source,
tensor-parallel degree and dtype, for the constants now in costmodel.FIT and for the fit. Paste the
printed Fit into FIT in code/rollout/costmodel.py. Standard library only.

Which points set which constant:
- plain steps of TensorRT-LLM (NIM at fixed concurrency; TensorRT-LLM 0.9 static batches):
  the bandwidth share of each GPU family, fp8_eff, attn_ns (batch 1 at growing
  context), ar_us and ar_tp_us (TP 1-8), flop_eff (large batches),
  pass_fixed_ms_trtllm; the closed-loop NIM runs also the prefill share and, against the
  static batches (predicted without it), seq_us_trtllm: a served step's cost per sequence;
- vLLM's plain TPOT and K sweep (Llama 3.1 8B, batch 1): pass_fixed_ms_vllm, draft_fixed_ms_vllm, round_fixed_ms_vllm;
- the forced-alpha sweeps (served B: Qwen3 on an A100, vLLM of 2025-08, synchronous steps): token_us_vllm, the cost
  per verified token where the scheduler waits for it (vLLM's async era hides it: deployment.token_cost_hidden), with
  the A100's bandwidth share; the 2026 served pairs (served A) the async era's round;
- SGLang's plain step, batch sweeps and batch-1 points (Llama 3.1 8B, H100): pass_fixed_ms_sglang,
  draft_fixed_ms_sglang, round_fixed_ms_sglang and token_us_sglang (the batch sweep's growth with the tokens a
  verify pass carries)
The SpecBundle runs (SGLang, H200, batch 8, dense and mixture-of-experts targets, chains
and trees) are predicted, not fitted, and reported apart: their baselines are not the
physics of the other sources (Llama 3.1 8B's plain step there is 44 ms, eight times what
an H200 needs), and fitting them pulls every physical constant off the plain steps. They
test the MoE verify reads (costmodel.expected_experts) out of sample.
Each source enters the loss as the mean of its points, so 191 plain steps do not drown
the 20-odd speculative points. Last, each source is left out in turn, the rest fitted, and
the left-out source predicted: the error out of sample (about a minute and a half; the whole script two).
"""
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "code"))   # main.py's package, rollout, imports by name from code/
sys.path.insert(0, str(HERE))                   # served_runs, beside this file
from rollout import calibration, catalog, costmodel
from main import SETTINGS  # noqa: E402  (main.py's constants: the reference deployment)
import served_runs  # noqa: E402  (bench/served_runs.py: bench/served_runs.json's runs as the tool reads runs)

# MT-bench, every timed speculative source here: prompts of ~100-700 tokens (turn 2 carries
# turn 1) and answers of a few hundred, so a sequence decodes at about 512 tokens of context.
MT_BENCH_CONTEXT = 512

# A GEMM's transition from its weight read to its math (Fit.overlap), Hopper's share of peak FLOP/s (flop_eff) and the
# A100's over it (flop_ampere) are fitted on measured kernels, not here: `python bench/gemm_kernels.py` (aiconfigurator's
# bf16 GEMMs, m = 1-8192). Fitted on whole passes they trade against the read and the fixed costs (a first joint fit
# put flop_eff at 0.45 and the A100's share at twice the H100's, where its kernels say 0.95).
GEMM_OVERLAP, GEMM_FLOP_EFF, GEMM_FLOP_AMPERE = 2.5, 0.83, 0.95

# Search box for each constant: (low, high).
BOUNDS = dict(bw_hopper=(0.4, 0.95), bw_ampere=(0.4, 0.95), bw_ada=(0.3, 0.95),
              fp8_eff=(0.4, 1.0), fp8_kv_eff=(0.3, 1.0), attn_ns=(0.0, 30.0), layer_us=(0.0, 40.0),
              ar_us=(2.0, 80.0), ar_tp_us=(0.0, 30.0), link_eff=(0.05, 1.0), pass_fixed_ms_vllm=(0.0, 3.0),
              pass_fixed_ms_sglang=(0.0, 3.0), pass_fixed_ms_trtllm=(0.0, 3.0), draft_fixed_ms_vllm=(0.0, 2.0),
              draft_fixed_ms_sglang=(0.0, 2.0), round_fixed_ms_vllm=(0.0, 3.0), round_fixed_ms_sglang=(0.0, 3.0),
              token_us_vllm=(0.0, 60.0), token_us_sglang=(0.0, 60.0),
              seq_us_trtllm=(0.0, 60.0), bw_cdna=(0.3, 0.95), flop_cdna=(0.1, 1.0))
START = costmodel.Fit(bw_hopper=0.8, bw_ampere=0.8, bw_ada=0.8, flop_eff=GEMM_FLOP_EFF, fp8_eff=0.8, fp8_kv_eff=0.8, attn_ns=8.0,
                 layer_us=5.0, ar_us=15.0, ar_tp_us=3.0, link_eff=0.7, pass_fixed_ms_vllm=1.0,
                 pass_fixed_ms_sglang=1.0, pass_fixed_ms_trtllm=1.0, draft_fixed_ms_vllm=0.7,
                 draft_fixed_ms_sglang=0.7, round_fixed_ms_vllm=1.0, round_fixed_ms_sglang=1.0, token_us_vllm=10.0,
                 seq_us_trtllm=5.0, bw_cdna=0.82, flop_cdna=1.0,
                 flop_ampere=GEMM_FLOP_AMPERE, token_us_sglang=10.0,
                 overlap=GEMM_OVERLAP,
                 # set elsewhere and held here: routing reuse from published counts, a MoE layer's fixed costs fitted on
                 # InferenceX's MoE runs (bench/moe_load.py); no point here is a MoE's, so neither could be fitted here
                 expert_affinity=costmodel.FIT.expert_affinity, mlp_fixed_share=costmodel.FIT.mlp_fixed_share,
                 mlp_fixed_share_cdna=costmodel.FIT.mlp_fixed_share_cdna)


def spec_point(source, what, engine, draft, k, batch, tau, published, model="llama-3.1-8b", gpu="h100-sxm", tp=1,
               dtype="bf16", context=MT_BENCH_CONTEXT, topk=1, verify=None):
    dep = SETTINGS.deployment.build(model, gpu, tp, weights_dtype=dtype, kv_dtype="bf16", context=context, draft=draft, engine=engine, topk=topk,
                               verify_tokens=verify, era=catalog.fitted_era(engine))
    return dict(source=source, what=what, kind="speedup", dep=dep, k=k, batch=batch, tau=tau, published=published,
                tp=tp, dtype=dtype, engine=engine, moe=bool(dep.target.experts))


def load_speculative(path=HERE / "published.json"):
    """Timed speculative points and the two plain 8B anchors of published.json.

    The EAGLE-1 batch sweep is fitted and shown but kept out of the bound: its acceptance
    comes from another engine.
    """
    entries = {e["id"]: e for e in json.loads(Path(path).read_text())["entries"]}
    points = []
    sweep = entries["vllm-issue-20780-eagle3-k-sweep"]
    for p in sweep["points"]:
        points.append(spec_point("vLLM K sweep", f"vLLM 8B K={p['k']} B=1", "vllm", "eagle3", p["k"], 1,
                                 p["acceptance_length"], sweep["plain_tpot_ms"] / p["tpot_ms"]))
    sglang = entries["eagle3-paper-table3-sglang-batch-sweep"]
    ci_tau = entries["vllm-ci-eagle3-k3"]["points"][0]["acceptance_length"]   # the sweep reports none
    for batch, ratio in sglang["throughput_ratio_by_batch"].items():
        points.append(spec_point("SGLang batch sweep", f"SGLang 8B K=3 B={batch}", "sglang", "eagle3", 3,
                                 int(batch), ci_tau, ratio))
    eagle1_tau = next(p["acceptance_length"] for p in entries["vllm-issue-20780-eagle1-acceptance"]["points"]
                      if p["k"] == 3)
    for batch, ratio in sglang["eagle1_throughput_ratio_by_batch"].items():
        points.append(spec_point("SGLang EAGLE-1 sweep (not in the bound)", f"SGLang 8B EAGLE-1 K=3 B={batch}",
                                 "sglang", "eagle", 3, int(batch), eagle1_tau, ratio))
    batch1 = entries["sglang-batch1-h100"]
    for p in batch1["points"]:
        steps = int(p["draft_shape"].split()[1])   # "tree, 5 steps": modelled as a chain of K = steps
        points.append(spec_point("SGLang batch 1", f"SGLang 8B tree {steps} steps B=1", "sglang", "eagle3", steps,
                                 1, p["acceptance_length"], p["tokens_per_s"] / batch1["plain_tokens_per_s"]))
    for engine, what, ms in (("vllm", "vLLM 8B plain TPOT B=1", sweep["plain_tpot_ms"]),
                             ("sglang", "SGLang 8B plain step B=1", 1000.0 / batch1["plain_tokens_per_s"])):
        dep = SETTINGS.deployment.build("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", kv_dtype="bf16", context=MT_BENCH_CONTEXT, draft="ngram",
                                   engine=engine, era=catalog.fitted_era(engine))
        points.append(dict(source=f"{'vLLM' if engine == 'vllm' else 'SGLang'} plain anchor", what=what,
                           kind="decode", dep=dep, batch=1, published=ms, tp=1, dtype="bf16", engine=engine, moe=False))
    return points


# SpecBundle's targets this model knows, with the tensor-parallel degree assumed (the data
# do not say): the smallest power of two whose H200s (141 GiB) hold the weights with room
# for KV (Qwen3-Next-80B's fp8 checkpoint: one, with 50 GiB to spare). Ling-flash-2.0 (no config stored) is left
# out. Kimi-K2 ships fp8 weights, the others bf16.
SPECBUNDLE_TARGETS = {
    "Llama-3.1-8B-Instruct": ("llama-3.1-8b", 1, "bf16"),
    "Llama-4-Scout-17B-16E-Instruct": ("llama-4-scout", 2, "bf16"),
    "Qwen3-235B-A22B-Instruct-2507": ("qwen3-235b-a22b", 4, "bf16"),
    "Qwen3-Coder-480B-A35B-Instruct": ("qwen3-coder-480b", 8, "bf16"),
    "Kimi-K2-Instruct": ("kimi-k2", 8, "fp8"),
    "Qwen3-Next-80B-A3B-Instruct-FP8": ("qwen3-next-80b-a3b", 1, "fp8"),   # a hybrid: 36 linear-attention layers
}
SPECBUNDLE_CONTEXT = 1024   # GSM8K to GPQA: short prompts, answers of a few hundred to a few thousand tokens


def load_specbundle(path=HERE / "specbundle_h200_bs8.json"):
    """SGLang EAGLE-3 runs at batch 8 on H200: each head's throughput over the run without speculation,
    with its measured acceptance length, for chains (topk 1) and trees."""
    data = json.loads(Path(path).read_text())
    points = []
    for name, datasets in data["models"].items():
        if name not in SPECBUNDLE_TARGETS:
            continue
        model, tp, dtype = SPECBUNDLE_TARGETS[name]
        for dataset, bench in datasets.items():
            for r in bench["results"]:
                base = next(x["output_throughput"] for x in r["metrics"] if x["accept_length"] == 1.0)
                for x in r["metrics"]:
                    if x["accept_length"] == 1.0:
                        continue
                    shape = "chain" if r["topk"] == 1 else f"tree top-{r['topk']}"
                    points.append(spec_point(
                        f"SpecBundle {model}", f"{model} {dataset} {shape} K={r['steps']}/{r['num_draft_tokens']}",
                        "sglang", "eagle3", r["steps"], r["batch_size"], x["accept_length"],
                        x["output_throughput"] / base, model, "h200", tp, dtype, SPECBUNDLE_CONTEXT,
                        r["topk"], r["num_draft_tokens"] if r["topk"] > 1 else None))
    return points


def load_plain(path=HERE / "plain_step.json"):
    """TensorRT-LLM plain decode steps. NIM's closed-loop runs carry the prefill of arriving
    requests in their TPOT; TensorRT-LLM 0.9's static batches prefill once, before decoding."""
    points = []
    for p in json.loads(Path(path).read_text())["points"]:
        model = "llama-2-70b" if p["model"].startswith("llama-2-70b") else p["model"]
        dep = SETTINGS.deployment.build(model, p["gpu"], p["tp"], weights_dtype=p["weights"], kv_dtype=p["kv"], context=round(p["mean_context_tokens"]),
                                   draft="ngram", engine="trtllm", input_tokens=p["input_len"], output_tokens=p["output_len"],
                                   era=catalog.fitted_era("trtllm"))
        static = "static batch" in p["metric"]
        points.append(dict(source="TensorRT-LLM 0.9 static batch" if static else "NIM closed loop",
                           what=f"{model} {p['gpu']} TP{p['tp']} {p['weights']} B={p['batch']} "
                                f"{p['input_len']}/{p['output_len']}",
                           kind="decode" if static else "tpot", dep=dep, batch=p["batch"], static=static,
                           published=p["measured_ms"], tp=p["tp"], dtype=p["weights"], engine="trtllm", moe=False))
    return points + context_slopes(points)


def context_slopes(points):
    """NIM's batch-1 runs of one deployment at four prompt lengths, as differences from its shortest: what a
    token of context adds to a step, free of every fixed cost. The same measurements as their NIM points, a view
    that the loss weighs as one more source (view) so that the attention floor is set by the slope it is
    measured by, not traded against the per-layer and per-pass fixed costs the static batches' one context
    cannot tell it from; left out with NIM, reported apart, and not an error class of bench/intervals.py."""
    groups = defaultdict(list)
    for p in points:
        if p["source"] == "NIM closed loop" and p["batch"] == 1:
            d = p["dep"]
            groups[(d.model, d.gpu, d.tp, d.weights_dtype, d.kv_dtype)].append(p)
    slopes = []
    for group in groups.values():
        base, *longer = sorted(group, key=lambda p: p["dep"].context)
        for p in longer:
            slopes.append(dict(p, kind="slope", view="NIM batch-1 context slopes", base=base,
                               what=f"{p['what']} minus {base['dep'].context} tokens of context",
                               published=p["published"] - base["published"]))
    return slopes


def predict(point, fit):
    """The model's value for a point: a speedup, a decode step, a closed-loop TPOT, the difference of two
    TPOTs (context_slopes), a static batch's whole latency (load_latency), in ms, or a served point's ratio of two
    runs' mean TPOTs (calibration.run_tpot_ms)."""
    if point["kind"] == "served":
        return (calibration.run_tpot_ms(point["dep"], point["numerator"], fit)
                / calibration.run_tpot_ms(point["dep"], point["denominator"], fit))
    if point["kind"] == "latency":   # one pass over every prompt, then the decode steps, no server
        dep, batch = point["dep"], point["batch"]   # the prompts as one prefill pass: not sampled, no history read
        return (costmodel.target_pass_ms(dep, 0, 1, fit, prefill=batch * dep.input_tokens)
                + (dep.output_tokens - 1) * costmodel.decode_step_ms(dep, batch, fit))
    if point["kind"] == "slope":
        return predict(dict(point, kind="tpot"), fit) - predict(point["base"], fit)
    dep, batch = point["dep"], point["batch"]
    if point.get("static") and point["dep"].engine.seq_cost:   # a static batch: no server, no per-sequence work
        fit = fit._replace(**{point["dep"].engine.seq_cost: 0.0})
    if point["kind"] == "decode":
        return costmodel.decode_step_ms(dep, batch, fit)
    if point["kind"] == "tpot":
        return costmodel.plain_step_ms(dep, batch, fit)
    eps = costmodel.eps_grown("auto", dep, batch, point["k"], fit)
    return point["tau"] / (1.0 + eps)


def loss(fit, points):
    """Mean squared log error of each source, summed over sources."""
    by_source = defaultdict(list)
    for p in points:
        by_source[p.get("view", p["source"])].append(math.log(max(predict(p, fit), 1e-9) / p["published"]) ** 2)
    return sum(sum(v) / len(v) for v in by_source.values())


def coordinate_search(loss, start, bounds, rounds):
    """The values (a dict, in start's order) that minimise loss inside bounds: each in turn stepped up and down,
    every step halved after a round with no gain (Hooke-Jeeves style; deterministic).
    """
    best, best_loss = dict(start), loss(start)
    steps = {n: (bounds[n][1] - bounds[n][0]) / 4 for n in best}
    for _ in range(rounds):
        improved = False
        for n in steps:
            for direction in (1, -1):
                trial = dict(best, **{n: min(bounds[n][1], max(bounds[n][0], best[n] + direction * steps[n]))})
                trial_loss = loss(trial)
                if trial_loss < best_loss - 1e-12:
                    best, best_loss, improved = trial, trial_loss, True
        if not improved:
            steps = {n: s / 2 for n, s in steps.items()}
    return best


def depends_on(point):
    """The constants in BOUNDS a point's prediction moves with: each tried at five values across its bounds, from
    the search's start and from the published fit, every other constant held. A constant that moves none of the
    trials is one the point's model does not read (an engine's or a GPU family's constant, fp8 shares for bf16)."""
    names = []
    for n, (low, high) in BOUNDS.items():
        for base in (START, costmodel.FIT):
            seen = {predict(point, base._replace(**{n: low + (high - low) * x / 4})) for x in range(5)}
            if len(seen) > 1:
                names.append(n)
                break
    return tuple(names)


def cached_loss(points):
    """loss(fit, points) for a search that moves one constant at a time: each point's prediction is kept by the
    values of the constants it moves with (depends_on), so a trial recomputes only the points its constant moves.
    The same numbers as loss, in the same order of summation."""
    reads = [depends_on(p) for p in points]
    kept = [{} for _ in points]

    def value(values):
        fit = START._replace(**values)   # a constant outside BOUNDS keeps its start
        by_source = defaultdict(list)
        for p, names, memo in zip(points, reads, kept):
            key = tuple(values[n] for n in names)
            if key not in memo:
                if len(memo) > 8:
                    memo.clear()
                memo[key] = predict(p, fit)
            by_source[p.get("view", p["source"])].append(math.log(max(memo[key], 1e-9) / p["published"]) ** 2)
        return sum(sum(v) / len(v) for v in by_source.values())
    return value


def pattern_search(points, start, rounds=80):
    """coordinate_search over every constant inside BOUNDS; deterministic."""
    best = coordinate_search(cached_loss(points), {n: getattr(start, n) for n in BOUNDS}, BOUNDS, rounds)
    return start._replace(**{n: round(v, 4) for n, v in best.items()})


def fit_constants(points):
    """The fit, always from the same start so that it is reproducible."""
    return pattern_search(points, START)


def errors(fit, points):
    """Each point with its prediction and relative error."""
    return [dict(p, predicted=predict(p, fit), error=predict(p, fit) / p["published"] - 1) for p in points]


def summary(rows, key):
    """{group: (n, median |error|, worst |error|)}."""
    groups = defaultdict(list)
    for r in rows:
        groups[key(r)].append(abs(r["error"]))
    return {g: (len(v), statistics.median(v), max(v)) for g, v in sorted(groups.items(), key=lambda kv: str(kv[0]))}


def in_bound(row):
    """The timed speculative points the bound is stated on: all but the EAGLE-1 sweep (another engine's acceptance)."""
    return row["kind"] == "speedup" and "not in the bound" not in row["source"]


def report(fit, points, title, detail=True):
    """Print the errors by source, TP and dtype (and each point with detail); return the rows."""
    rows = errors(fit, points)
    print(f"\n{title}:\n{fit}")
    if detail:
        print(f"{'point':52s} {'model':>9s} {'published':>9s} {'error':>7s}")
        for r in rows:
            print(f"{r['what'][:52]:52s} {r['predicted']:9.3f} {r['published']:9.3f} {r['error'] * 100:+6.1f}%")
    plain = [r for r in rows if r["kind"] in ("decode", "tpot", "latency")]
    for name, key in (("source", lambda r: r.get("view", r["source"])), ("TP (plain steps)", lambda r: f"TP{r['tp']}"),
                      ("dtype (plain steps)", lambda r: r["dtype"])):
        chosen = rows if name == "source" else plain
        print(f"by {name}:")
        for group, (n, med, worst) in summary(chosen, key).items():
            print(f"  {group:44s} n={n:3d}  median {med * 100:5.1f}%  worst {worst * 100:5.1f}%")
    print("by engine era (the release span each source was measured in: catalog.Engine.eras):")
    for group, (n, med, worst) in summary(rows, lambda r: f"{r['engine']} {r['dep'].era.key}").items():
        print(f"  {group:44s} n={n:3d}  median {med * 100:5.1f}%  worst {worst * 100:5.1f}%")
    timed = [r for r in rows if in_bound(r)]
    print("speculative points by engine:")
    for group, (n, med, worst) in summary(timed, lambda r: r["engine"]).items():
        print(f"  {group:44s} n={n:3d}  median {med * 100:5.1f}%  worst {worst * 100:5.1f}%")
    spec = [abs(r["error"]) for r in timed]
    steps = [abs(r["error"]) for r in plain]
    print(f"speculative points in the bound: median {statistics.median(spec) * 100:.1f}%, worst "
          f"{max(spec) * 100:.1f}% (bound: 10% median, 20% worst)")
    print(f"plain steps: median {statistics.median(steps) * 100:.1f}%, worst {max(steps) * 100:.1f}% "
          "(goal: 10% median, 25% worst)")
    return rows


def load_latency(path=HERE / "oracle_mi300x_405b.json"):
    """Llama 3.1 405B fp8 on 8 x MI300X, vLLM's offline benchmark_latency at batch 1-256: the only AMD source,
    so it alone sets bw_cdna (batch 1) and flop_cdna (how much of flop_eff an MI300X's GEMMs reach: the growth
    with batch); the KV cache taken as bf16 (not stated)."""
    data = json.loads(Path(path).read_text())
    dep = SETTINGS.deployment.build("llama-3.1-405b", "mi300x", 8, weights_dtype="fp8", kv_dtype="bf16", context=None, draft="ngram", engine="vllm",
                               input_tokens=data["input_tokens"], output_tokens=data["output_tokens"],
                               era=catalog.fitted_era("vllm"))
    return [dict(source="vLLM MI300X batch sweep (Oracle)", what=f"llama-3.1-405b mi300x TP8 fp8 B={batch}",
                 kind="latency", dep=dep, batch=int(batch), published=seconds * 1000.0, static=True, tp=8,
                 dtype="fp8", engine="vllm", moe=False) for batch, seconds in data["latency_s_by_batch"].items()]


SERVED_B_ALPHAS = (0.6, 0.8, 1.0)                             # of 0.5-1.0
SERVED_B_LOADS = ("C = 1", "C = 128", "rate #3", "rate #6")   # of C 1 and 128 and ten constant rates


def load_served_pairs():
    """bench/served_runs.json's vLLM pairs (source A of bench/served_runs.py): Llama 3.3 70B bf16 TP 2 on vLLM main of
    2026-01 (on H100 PCIe GPUs, served_runs.LLAMA_GPU says why), an EAGLE-3 head or a 1B draft model at K 3-8 and
    concurrency 1-64; each run's TPOT speedup over the
    baseline at its concurrency, both predicted at the batch they decoded (served_runs.llama_run). One source per
    draft kind: the v1-async era's draft-step and round costs rest on them."""
    points = [p for p in served_runs.POINTS if p["source"] == served_runs.LLAMA]
    baselines = {p["source_file"]: p for p in points if p["baseline"]}
    era = catalog.era_of("vllm", "0.14")
    out = []
    for p in points:
        if p["baseline"]:
            continue
        base = baselines[p["baseline_ref"]]
        draft = "eagle3" if p["draft"].startswith("eagle3") else "llama-3.2-1b"
        dep = served_runs.llama_deployment(draft, era)
        out.append(dict(source=f"served A: Llama 3.3 70B TP2, {draft}", what=f"{draft} K={p['K']} C={p['concurrency']}",
                        kind="served", dep=dep, numerator=served_runs.llama_run(base, None, None),
                        denominator=served_runs.llama_run(p, p["K"], p["acceptance"]["acceptance_length"]),
                        published=base["metrics"]["mean_tpot_ms"] / p["metrics"]["mean_tpot_ms"],
                        tp=2, dtype="bf16", engine="vllm", moe=False))
    return out


def load_forced_alpha():
    """bench/served_runs.json's forced-alpha sweeps (source B of bench/served_runs.py): Qwen3 0.6B-32B on one A100-class
    GPU, vLLM V1 of 2025-08; each run at K > 1 as its mean TPOT over the same model, alpha and load at K = 1, at
    SERVED_B_ALPHAS and SERVED_B_LOADS (a subset that keeps a fit near two minutes). One source per model size."""
    deps = served_runs.scaling_deployments(catalog.era_of("vllm", "0.10"))
    by_key = served_runs.scaling_points()
    out = []
    for (model, alpha, load, k), p in sorted(by_key.items()):
        one = by_key.get((model, alpha, load, 1))
        if k == 1 or one is None or alpha not in SERVED_B_ALPHAS or load not in SERVED_B_LOADS:
            continue
        out.append(dict(source=f"served B: {model.split('/')[1]}", what=f"alpha {alpha} {load} K={k}", kind="served",
                        dep=deps[model], numerator=served_runs.scaling_run(p),
                        denominator=served_runs.scaling_run(one),
                        published=p["metrics"]["mean_tpot_ms"] / one["metrics"]["mean_tpot_ms"],
                        tp=1, dtype="bf16", engine="vllm", moe=False))
    return out


def all_points():
    """The points the constants are fitted on: the published measurements and the served runs."""
    return load_speculative() + load_plain() + load_latency() + load_served_pairs() + load_forced_alpha()


def report_specbundle(fit, title="SpecBundle (SGLang, H200, batch 8), predicted, not fitted"):
    """Errors on the SpecBundle runs by target, chain against tree; return the rows."""
    rows = errors(fit, load_specbundle())
    print(f"\n{title}:")
    for name, key in (("target", lambda r: r["source"]), ("draft shape", lambda r: r["what"].split()[2])):
        print(f"by {name}:")
        for group, (n, med, worst) in summary(rows, key).items():
            print(f"  {group:44s} n={n:3d}  median {med * 100:5.1f}%  worst {worst * 100:5.1f}%")
    moe = [abs(r["error"]) for r in rows if r["moe"]]
    signed = statistics.median(r["error"] for r in rows if r["moe"])
    print(f"mixture-of-experts targets: n={len(moe)}, median |error| {statistics.median(moe) * 100:.1f}%, worst "
          f"{max(moe) * 100:.1f}%, median signed {signed * 100:+.1f}% (negative: the model's speedup is lower)")
    return rows


def main_cli(argv=()):
    points = all_points()
    fitted = fit_constants(points)
    report(costmodel.FIT, points, "constants now in rollout/costmodel.py", detail=False)
    report(fitted, points, "fitted", detail="--detail" in argv)
    report_specbundle(fitted)
    print(f"\nPaste into code/rollout/costmodel.py:\nFIT = {fitted!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main_cli(sys.argv[1:]))
