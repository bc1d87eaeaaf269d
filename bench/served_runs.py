"""Today's model (costmodel.FIT) against two sets of served runs in served_runs.json, none of them in its fit.

served_runs.json is a byte copy of the team's collection of published served runs (`sources` says what holds within
a source, with its caveats; `points`, what varies). Two of its sources are asked here:

A. tomasruizt/vllm-scripts online-throughput: Llama 3.3 70B bf16 at TP 2 on vLLM main of 2026-01 (taken as
   --engine-version 0.14), on unnamed 80 GB GPUs without peer-to-peer (LLAMA_GPU: H100 PCIe, which the baselines'
   own TPOTs identify; the report gives the H100 SXM reading too), an EAGLE-3 head or Llama 3.2 1B as a draft
   model at K 3-8 and max_concurrency 1-64, each run paired with the baseline (K 0) at its concurrency. Measured
   speedup = baseline mean TPOT / spec mean TPOT; predicted = run_tpot_ms(baseline) / run_tpot_ms(spec), each run
   at its own mean prompt and output lengths, its measured acceptance length and the batch it decoded on average
   (readers.decoding_batch, as benchfiles.read_calibration_runs calls it).
B. vllm-project/speculators research/scaling: vLLM V1 patched to force a per-token acceptance alpha
   (FIXED_ACCEPTANCE_RATE), an EAGLE-style head ("method": "eagle"), Qwen3 0.6B-32B on one GPU (timings of an
   A100 80GB: a100-sxm-80gb), data of 2025-08 (taken as 0.10), 512/128 tokens, K 1-10, GuideLLM sweeps. For each
   (model, alpha, load) the ratio of mean TPOT at K to mean TPOT at K = 1, measured and predicted (tau = the
   alpha's implied acceptance length). A load is a closed-loop run (synchronous C = 1, throughput C = 128; decoding
   batch from decoding_batch) or the i-th constant-rate point of the file's sweep (decoding batch = its measured
   mean concurrency; its rate differs by K, each side is predicted at its own concurrency).

Error = predicted / measured - 1. Nothing is fitted here.

    python bench/served_runs.py > bench/served_runs.txt     (under a second; standard library only)
"""
import dataclasses
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "code"))   # main.py's package, rollout, imports by name from code/

from rollout import benchfiles, calibration, catalog, cli, costmodel, deployflags, hfconfig, readers
from main import SETTINGS  # noqa: E402  (main.py's constants: the reference deployment)

POINTS = json.loads((HERE / "served_runs.json").read_text())["points"]
LLAMA = "tomasruizt-vllm-scripts-online-throughput-llama70b-tp2"
SCALING = "speculators-researchScaling"
VLLM = catalog.ENGINES["vllm"]
# A's GPUs: "2x unknown NVIDIA 80GB-class GPUs (TP=2, Shadeform cloud, no P2P/custom allreduce)", the source says.
# Its seven baselines' mean TPOTs (43 ms at concurrency 1) are what the model gives an H100 PCIe pair (2.0 TB/s, PCIe)
# within a few percent at every concurrency, and 1.5x what it gives an H100 SXM pair: report_gpus prints both.
LLAMA_GPU = "h100-pcie"
LLAMA_GPUS = ("h100-pcie", "h100-sxm", "a100-sxm-80gb")
# "No P2P": NCCL's all-reduce between the two GPUs goes through host memory (its SHM transport), so each byte crosses
# the PCIe link twice, down from one GPU and up to the other: half the link's one-way bandwidth, at most.
NO_P2P_LINK = 0.5


def llama_deployment(draft, era, gpu=LLAMA_GPU):
    """A's deployment as the model sees it: Llama 3.3 70B bf16 at TP 2 on `gpu`, its link halved on a PCIe GPU."""
    dep = SETTINGS.deployment.build("llama-3.3-70b", gpu, 2, weights_dtype="bf16", kv_dtype="bf16", draft=draft, engine="vllm",
                                    era=era)
    return dataclasses.replace(dep, link_gbs=dep.link_gbs * NO_P2P_LINK) if gpu == "h100-pcie" else dep


def qwen3(name, hidden, inter, layers, heads, tied):
    """A dense Qwen3 config.json's shape fields (every size: 8 KV heads of 128, vocab 151936, 40960 positions)."""
    return {"_name_or_path": name, "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": hidden,
            "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": tied,
            "max_position_embeddings": 40960, "torch_dtype": "bfloat16"}


# Qwen/Qwen3-*/config.json, from public copies:
# - 4B, 8B, 14B, 32B: citsjtu2020/LLM-Prof sglang/Model_Config.md @8434c8d19c39 (the four configs verbatim, torch_dtype
#   bfloat16, transformers 4.51.0/4.51.2); 8B also sanjithudupa/compute-aware-arch-search Qwen3-8B/config.json
#   @38147a2fa897 (re-saved by transformers 4.57.1, same shape fields).
# - 1.7B: mephisto1484/Neko-LoRA-Build-Your-AI-Catgirl Qwen3-1.7B/config.json @1d5d0234975c (re-saved, dtype float16
#   there; its shape fields are Qwen's: torchtune's qwen3_1_7b_instruct below agrees).
# - 0.6B: no config.json copy in a named repository was found; its fields are pytorch/torchtune
#   torchtune/models/qwen3/_model_builders.py @010412e0a1b8 qwen3_0_6b_instruct ("from https://huggingface.co/Qwen/
#   Qwen3-0.6B": vocab 151936, 28 layers, 16/8 heads, 1024/3072, max_seq_len 40960, tie_word_embeddings=True) and
#   Lightning-AI/litgpt litgpt/config.py @0006c973aa7d ("Qwen3-0.6B", head_size 128).
# - 32B is the catalog's qwen3-32b row; its config is kept here to check that this path gives the same shape.
QWEN3 = {"Qwen/Qwen3-0.6B": qwen3("Qwen/Qwen3-0.6B", 1024, 3072, 28, 16, True),
         "Qwen/Qwen3-1.7B": qwen3("Qwen/Qwen3-1.7B", 2048, 6144, 28, 16, True),
         "Qwen/Qwen3-4B": qwen3("Qwen/Qwen3-4B", 2560, 9728, 36, 32, True),
         "Qwen/Qwen3-8B": qwen3("Qwen/Qwen3-8B", 4096, 12288, 36, 32, False),
         "Qwen/Qwen3-14B": qwen3("Qwen/Qwen3-14B", 5120, 17408, 40, 40, False),
         "Qwen/Qwen3-32B": qwen3("Qwen/Qwen3-32B", 5120, 25600, 64, 64, False)}


def shapes():
    """Each Qwen3 config through hfconfig.shape_from_config (it reads a file: each is written to a scratch one)."""
    out = {}
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "config.json"
        for name, config in QWEN3.items():
            path.write_text(json.dumps(config))
            out[name] = hfconfig.shape_from_config(path)
    assert out["Qwen/Qwen3-32B"] == catalog.MODELS["qwen3-32b"], "the 32B config and the catalog row disagree"
    return out


def pct(x):
    return f"{x * 100:+6.1f}%"


def summary(errors):
    """n, median |error|, worst |error|, mean signed error, as one line's columns."""
    size = sorted(abs(e) for e in errors)
    return (f"{len(errors):>4}  {statistics.median(size) * 100:6.1f}%  {size[-1] * 100:6.1f}%  "
            f"{pct(statistics.fmean(errors))}")


def llama_run(point, k, tau, decoding=True):
    m, output = point["metrics"], round(point["output_tokens"])
    batch = point["concurrency"]
    return benchfiles.Run(batch=batch, k=k, tau=tau, input_tokens=round(point["input_tokens"]), output_tokens=output,
                       decoding=readers.decoding_batch(batch, output, m["mean_tpot_ms"], m["mean_ttft_ms"],
                                                       m["completed"]) if decoding else None)


def report_gpus():
    """A's baselines: the plain TPOT the model gives each candidate GPU over the measured one, by concurrency."""
    base = sorted((p for p in POINTS if p["source"] == LLAMA and p["baseline"]), key=lambda p: p["concurrency"])
    era = deployflags.parse_era(VLLM, "0.14")
    print("A's GPUs: the baselines' mean TPOT, predicted / measured, at C = "
          + ", ".join(str(p["concurrency"]) for p in base))
    for gpu in LLAMA_GPUS:
        dep = llama_deployment("ngram", era, gpu)
        ratios = [calibration.run_tpot_ms(dep, llama_run(p, None, None), costmodel.FIT) / p["metrics"]["mean_tpot_ms"]
                  for p in base]
        print(f"   {gpu:<14}" + " ".join(f"{r:5.2f}" for r in ratios) + ("   <- taken" if gpu == LLAMA_GPU else ""))
    print()


def report_llama(gpu=LLAMA_GPU):
    points = [p for p in POINTS if p["source"] == LLAMA]
    baselines = {p["source_file"]: p for p in points if p["baseline"]}
    era = deployflags.parse_era(VLLM, "0.14")
    deps = {draft: llama_deployment(draft, era, gpu) for draft in ("eagle3", "llama-3.2-1b")}
    errors, plain = defaultdict(list), []   # plain: every batch taken as C (no decoding_batch), a sensitivity check
    for p in points:
        if p["baseline"]:
            continue
        base, k, tau = baselines[p["baseline_ref"]], p["K"], p["acceptance"]["acceptance_length"]
        draft = "eagle3" if p["draft"].startswith("eagle3") else "llama-3.2-1b"
        assert draft == "eagle3" or p["draft"].startswith("draft_model (meta-llama/Llama-3.2-1B"), p["draft"]
        assert base["concurrency"] == p["concurrency"]
        measured = base["metrics"]["mean_tpot_ms"] / p["metrics"]["mean_tpot_ms"]

        def speedup(decoding):
            return (calibration.run_tpot_ms(deps[draft], llama_run(base, None, None, decoding), costmodel.FIT)
                    / calibration.run_tpot_ms(deps[draft], llama_run(p, k, tau, decoding), costmodel.FIT))
        error = speedup(True) / measured - 1
        for key in ((draft, k), (draft, "all"), (draft, k, p["concurrency"]), "all"):
            errors[key].append(error)
        plain.append(speedup(False) / measured - 1)
    print(f"A. {LLAMA}:")
    print(f"   Llama 3.3 70B bf16 TP 2, {gpu}, vLLM 0.14 (era {era.key}); TPOT speedup of "
          f"{len(errors['all'])} spec runs,")
    print(f"   each over the K = 0 run at its concurrency ({len(baselines)} baselines, C = 1-64)")
    print(f"   {'draft':<14}{'K':>4}  {'n':>4}  {'median':>7}  {'worst':>7}  {'mean signed':>7}")
    for draft in ("eagle3", "llama-3.2-1b"):
        for k in (*range(3, 9), "all"):
            print(f"   {draft:<14}{k:>4}  {summary(errors[draft, k])}")
    size = sorted(abs(e) for e in errors["all"])
    print(f"   overall: {len(size)} points, median |error| {statistics.median(size) * 100:.1f}%, "
          f"worst {size[-1] * 100:.1f}%")
    concurrencies = sorted({key[2] for key in errors if isinstance(key, tuple) and len(key) == 3})
    print("   signed error of each point, by K and concurrency C:")
    print(f"   {'draft':<14}{'K':>4}" + "".join(f"{'C=' + str(c):>8}" for c in concurrencies))
    for draft in ("eagle3", "llama-3.2-1b"):
        for k in range(3, 9):
            print(f"   {draft:<14}{k:>4}" + "".join(f"{pct(errors[draft, k, c][0]):>8}" for c in concurrencies))
    size = sorted(abs(e) for e in plain)
    print(f"   sensitivity, decoding batch = C (no decoding_batch): median |error| "
          f"{statistics.median(size) * 100:.1f}%, worst {size[-1] * 100:.1f}%")


def scaling_run(point):
    """A speculators point as a Run: closed loop with decoding_batch (GuideLLM's requests are its completed), a
    constant-rate point at its measured mean concurrency."""
    m, c = point["metrics"], point["concurrency"]
    tau = point["acceptance"]["implied_acceptance_length"]
    if c is not None:
        decoding = readers.decoding_batch(c, point["output_tokens"], m["mean_tpot_ms"], m["mean_ttft_ms"],
                                          m["n_requests"])
    else:
        decoding = max(1.0, point["concurrency_measured_mean"])
        c = max(1, round(decoding))
    return benchfiles.Run(batch=c, k=point["K"], tau=tau, input_tokens=round(point["input_tokens_measured_mean"]),
                       output_tokens=point["output_tokens"], decoding=decoding)


def band(concurrency):
    c = round(concurrency)
    return "1" if c <= 1 else "2-16" if c <= 16 else "17-64" if c <= 64 else "65+"


def scaling_deployments(era):
    """B's deployments by model: each Qwen3 size from its config.json's shape on one A100, an EAGLE-style head."""
    return {name: SETTINGS.deployment.build(shape["hf"], "a100-sxm-80gb", 1, weights_dtype="bf16", kv_dtype="bf16", draft="eagle",
                                            engine="vllm", era=era, shape=shape)
            for name, shape in shapes().items()}


def scaling_points():
    """B's points by (model, alpha, load, K); a load is "C = c" for a closed loop, "rate #i" for a sweep's i-th
    constant-rate point."""
    points, rates = {}, defaultdict(int)   # a file's constant-rate points so far
    for p in (p for p in POINTS if p["source"] == SCALING):
        if p["concurrency"] is None:
            rates[p["source_file"]] += 1
            load = f"rate #{rates[p['source_file']]}"
        else:
            load = f"C = {p['concurrency']}"
        key = (p["model"], p["acceptance"]["value"], load, p["K"])
        assert key not in points, key
        points[key] = p
    return points


def report_scaling():
    era = deployflags.parse_era(VLLM, "0.10")
    deps = scaling_deployments(era)
    deps["Qwen/Qwen3-32B"] = SETTINGS.deployment.build("qwen3-32b", "a100-sxm-80gb", 1, weights_dtype="bf16", kv_dtype="bf16",
                                                       draft="eagle", engine="vllm", era=era)
    points = scaling_points()
    errors = defaultdict(list)
    for (model, alpha, load, k), p in sorted(points.items()):
        one = points.get((model, alpha, load, 1))
        if k == 1 or one is None:
            continue
        dep = deps[model]
        predicted = (calibration.run_tpot_ms(dep, scaling_run(p), costmodel.FIT)
                     / calibration.run_tpot_ms(dep, scaling_run(one), costmodel.FIT))
        error = predicted / (p["metrics"]["mean_tpot_ms"] / one["metrics"]["mean_tpot_ms"]) - 1
        concurrency = p["concurrency"] or p["concurrency_measured_mean"]
        for key in ("all", model, band(concurrency), ("K", k), ("mode", load.split()[0])):
            errors[key].append(error)
        if model == "Qwen/Qwen3-32B" and p["concurrency"] == 128:
            errors["32B starved"].append(error)
    groups = {key[:3] for key in points}
    lacking = sum(1 for g in groups if (*g, 1) not in points)
    print(f"B. {SCALING}:")
    print(f"   Qwen3 bf16 TP 1, a100-sxm-80gb, vLLM 0.10 (era {era.key}), draft \"eagle\"; TPOT(K) / TPOT(K = 1)")
    print(f"   in {len(groups)} (model, alpha, load) groups of {len(points)} points, {lacking} without K = 1; K = 1 "
          "not scored;")
    print("   a load: C = 1 or 128 (closed loop), or a sweep's i-th constant-rate point; band: the K run's C")
    print(f"   {'':<24}{'n':>4}  {'median':>7}  {'worst':>7}  {'mean signed':>7}")
    for model in QWEN3:
        print(f"   {model:<24}{summary(errors[model])}")
    for name in ("1", "2-16", "17-64", "65+"):
        print(f"   {'concurrency ' + name:<24}{summary(errors[name])}")
    print(f"   {'closed loop (C 1, 128)':<24}{summary(errors['mode', 'C'])}")
    print(f"   {'constant rate':<24}{summary(errors['mode', 'rate'])}")
    print(f"   {'32B C=128 (KV-starved)':<24}{summary(errors['32B starved'])}")
    print(f"   {'overall':<24}{summary(errors['all'])}")
    ks = sorted({k for _, _, _, k in points} - {1})
    print("   mean signed error by K: " + " ".join(f"{k}:{pct(statistics.fmean(errors['K', k]))}" for k in ks))


def main():
    print("served_runs.json vs costmodel.FIT: A TPOT speedup over K=0, B TPOT(K)/TPOT(K=1); error pred/meas - 1")
    print()
    report_gpus()
    report_llama()
    print()
    report_llama("h100-sxm")   # as the issue asks it: --gpu h100-sxm
    print()
    report_scaling()


if __name__ == "__main__":
    main()
