"""The cost model against the 2026 large and MoE runs: `python bench/moe_published.py` (seconds).

Reads bench/published_moe_2026.json (the team's published MoE runs, copied here: 89
published results, each with its source, metric and provenance) and predicts the rows this model
can ask, with the published fit (costmodel.FIT): nothing here is fitted on them, so every error is
out of sample. Most rows lack what a speedup needs (acceptance, K, GPU, batch); the file's own
caveats say such rows test the physics only as the shape of a sweep within one source. So:

- a sweep that prints its acceptance per point (LMSYS's Llama 4 K sweeps) is predicted point by
  point, tau / (1 + eps), and its best K against the measured best;
- a sweep without acceptance (SGLang's DeepSeek-V3 MTP at batch 1 and 32; AMD's Kimi-K2.5 EAGLE-3
  at concurrency 4-64) is predicted as its shape: the acceptance is set so that the model meets
  the sweep's first point, and the rest are predicted from it;
- the rest are counted by why they cannot be asked (a model the catalog lacks, no batch or K,
  a metric that is not a decode speedup).

Each case states its assumptions (GPU, TP, K) where the source does not. Errors are printed by
case, model family and engine. Standard library only; `python bench/moe_published.py > bench/moe_published.txt`
refreshes the committed output.
"""
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "code"))   # main.py's package, rollout, imports by name from code/
sys.path.insert(0, str(HERE))

from rollout import catalog, costmodel
from main import SETTINGS  # noqa: E402  (main.py's constants: the reference deployment)
import calibrate  # noqa: E402  (bench/calibrate.py: MT_BENCH_CONTEXT)
ROWS = json.loads((HERE / "published_moe_2026.json").read_text())["points"]
for _row in ROWS:   # "meta-llama/Llama-4-Scout-...": the name after the organisation
    _row["name"] = _row["model"].split("/")[-1]


def speedup(dep, batch, k, tau):
    """The model's speedup at acceptance length tau: plain step over a token's share of rounds, prefill included."""
    return costmodel.tpot_speedup(dep, batch, 1.0 / tau, costmodel.round_ms(dep, batch, k))


def tau_for(dep, batch, k, measured):
    """The acceptance length at which the model's speedup is `measured` (bisection in [1, K + 1])."""
    low, high = 1.0, k + 1.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if speedup(dep, batch, k, mid) < measured else (low, mid)
    return (low + high) / 2


USED = set()   # ids of the rows a case predicts (or sets its acceptance on)


def used(rows):
    """The rows, marked as asked."""
    USED.update(id(r) for r in rows)
    return rows


def llama4_sweeps():
    """LMSYS SpecForge's Llama 4 EAGLE-3 K sweeps on SGLang, acceptance per point. Not stated: GPU, TP, batch;
    assumed 8 x H200 at batch 1 in bf16 (the blog's bench_speculative runs), SGLang's era then (0.4.9: spec-v1)."""
    out = []
    for family, model in (("Llama-4-Maverick", "llama-4-maverick"), ("Llama-4-Scout", "llama-4-scout")):
        rows = used([r for r in ROWS if r["name"].startswith(family) and r["engine"] == "SGLang"
                     and r["acceptance_length"] and r["metric"].startswith("speedup")])
        dep = SETTINGS.deployment.build(model, "h200", 8, weights_dtype="bf16", kv_dtype="bf16", context=None, draft="eagle3", engine="sglang",
                                   era=catalog.fitted_era("sglang"))
        points = [dict(case=f"{family} K sweep (SGLang, LMSYS)", family="Llama 4", engine="sglang",
                       what=f"K={r['k_num_spec_tokens_or_steps']} tau={r['acceptance_length']}",
                       measured=r["speedup"], k=r["k_num_spec_tokens_or_steps"],
                       predicted=speedup(dep, 1, r["k_num_spec_tokens_or_steps"], r["acceptance_length"]))
                  for r in rows]
        best = lambda key: max(points, key=lambda p: p[key])["k"]
        out.append((points, f"best K: predicted {best('predicted')}, measured {best('measured')}"))
    return out


def shape(case, family, engine, dep, k, first, rest):
    """A sweep without acceptance: tau set at its first (batch, measured) point, the rest predicted from it."""
    tau = tau_for(dep, first[0], k, first[1])
    points = [dict(case=case, family=family, engine=engine, what=f"B={b} (tau {tau:.2f} from B={first[0]})",
                   measured=s, k=k, predicted=speedup(dep, b, k, tau)) for b, s in rest]
    return points, f"tau {tau:.2f} at B={first[0]} meets its {first[1]:.2f}x"


def deepseek_sglang():
    """SGLang's DeepSeek-V3 docs: MTP 1.8x at batch 1, 1.5x at 32, on 8 x H200 (fp8). K not stated: the docs'
    example command, one step (K = 1, two draft tokens)."""
    rows = {r["batch_size"]: r["speedup"] for r in used([r for r in ROWS if r["engine"] == "SGLang"
                                                         and r["name"].startswith("DeepSeek-V3 (V3-0324)")])}
    dep = SETTINGS.deployment.build("deepseek-v3", "h200", 8, weights_dtype="fp8", kv_dtype="bf16", context=None, draft="mtp", engine="sglang",
                               era=catalog.fitted_era("sglang"))
    return [shape("DeepSeek-V3 MTP (SGLang docs)", "DeepSeek", "sglang", dep, 1, (1, rows[1]), [(32, rows[32])])]


def kimi_rocm():
    """AMD's ROCm blog: Kimi-K2.5 (the Kimi-K2 shape) MXFP4 on 4 x MI355X, vLLM, EAGLE-3 at concurrency 4-64,
    1k in / 1k out; two vLLM builds, each its own sweep. K not stated: 3 assumed (its recipes' EAGLE-3 depth)."""
    out = []
    for build in ("v0.19.0", "nightly"):
        rows = sorted((r["max_concurrency"], r["speedup"]) for r in used(
            [r for r in ROWS if r["name"].startswith("Kimi-K2.5-MXFP4") and build in (r["engine_version"] or "")]))
        dep = SETTINGS.deployment.build("kimi-k2", "mi355x", 4, weights_dtype="fp4", kv_dtype="bf16", context=None, draft="eagle3", engine="vllm",
                                   input_tokens=1024, output_tokens=1024, draft_hf="AMD Kimi-K2.5 EAGLE-3 head")
        out.append(shape(f"Kimi-K2.5 EAGLE-3 (vLLM {build}, AMD ROCm blog)", "Kimi", "vllm", dep, 3, rows[0],
                         rows[1:]))
    return out


# Published small-batch losses of EAGLE-3 heads on a small MoE (issue 36), from the issue trackers, not in
# published_moe_2026.json: Qwen3-30B-A3B in bf16 on H100s, SGLang driven by SpecForge's bench_eagle3.py, MT-Bench, batch
# 1, tokens/s plain and with speculation at the printed acceptance length (steps, topk, draft tokens as launched).
# sgl-project/SpecForge#339 (2025-12-01): TP 2, head zhuyksir/EAGLE3-Qwen3-30B-A3B-DenseHead, plain 222.47 tokens/s.
# Tencent/AngelSlim#163 (2025-12-08): TP 4, the same harness and author, plain 218.89. SGLang of that month: 0.5.6.
SMALL_BATCH = (  # (source, TP, steps, topk, draft tokens, tau, tokens/s with speculation, plain tokens/s)
    ("SpecForge#339", 2, 3, 1, 4, 1.86, 159.78, 222.47), ("SpecForge#339", 2, 3, 3, 4, 1.99, 207.62, 222.47),
    ("SpecForge#339", 2, 3, 3, 8, 2.20, 172.99, 222.47), ("SpecForge#339", 2, 6, 4, 12, 2.42, 171.54, 222.47),
    ("SpecForge#339", 2, 7, 4, 16, 2.52, 191.90, 222.47), ("SpecForge#339", 2, 8, 8, 60, 3.20, 177.50, 222.47),
    ("AngelSlim#163", 4, 3, 3, 4, 2.017, 170.35, 218.89), ("AngelSlim#163", 4, 3, 2, 8, 2.216, 185.28, 218.89),
    ("AngelSlim#163", 4, 4, 4, 16, 2.542, 185.64, 218.89), ("AngelSlim#163", 4, 7, 10, 64, 3.034, 193.31, 218.89))


def small_batch_losses():
    """Each published loss predicted at its own tau, steps and tree (verify tokens = draft tokens), batch 1."""
    points = []
    for source, tp, steps, topk, drafts, tau, spec, plain in SMALL_BATCH:
        dep = SETTINGS.deployment.build("qwen3-30b-a3b", "h100-sxm", tp, weights_dtype="bf16", kv_dtype="bf16", context=calibrate.MT_BENCH_CONTEXT,
                                        draft="eagle3", engine="sglang", era=catalog.era_of("sglang", "0.5.6"), topk=topk,
                                        verify_tokens=drafts if topk > 1 else None)
        points.append(dict(case="Qwen3-30B-A3B EAGLE-3 at batch 1 (SGLang 0.5.6, 2 or 4 x H100, bf16)",
                           family="Qwen3 MoE", engine="sglang", measured=spec / plain, k=steps,
                           what=f"{source} TP{tp} {steps}/{topk}/{drafts} tau {tau:g}",
                           predicted=speedup(dep, 1, steps, tau)))
    right = sum((p["predicted"] < 1.0) == (p["measured"] < 1.0) for p in points)
    return [(points, f"{right} of {len(points)} on the measured side of 1.0x")]


CASES = (llama4_sweeps, deepseek_sglang, kimi_rocm, small_batch_losses)


def not_asked():
    """The rows no case asked (run the cases first), counted by the first reason that stops them."""
    reasons = {}
    for r in ROWS:
        if id(r) in USED:
            continue
        if not any(r["name"].lower().startswith(p) for p in ("llama", "deepseek-v3", "deepseek-r1", "kimi-k2",
                                                              "qwen3-30b", "qwen3-235b", "gpt-oss")):
            why = "a model the catalog has no shape for (DeepSeek-V3.2/V4, Qwen3-Next, GLM, MiniMax, QwQ: --model-config)"
        elif not r["metric"].startswith(("speedup", "tpot", "output_tok", "decode", "e2e")):
            why = "a throughput or per-GPU metric under load, not a decode speedup (admission, queueing: issue 24)"
        elif not (r["batch_size"] or r["max_concurrency"]):
            why = "no batch size or concurrency"
        elif not r["k_num_spec_tokens_or_steps"] and not r["acceptance_length"]:
            why = "neither K nor acceptance"
        elif any(x["speedup"] and x["acceptance_length"] and x["speedup"] > x["acceptance_length"]
                 for x in ROWS if x["source_url"] == r["source_url"]):
            why = "a source with a speedup above its own acceptance length (its AL is not tokens a round)"
        else:
            why = "a setup this model does not ask (a GPU, a TP across nodes, a dtype or an AL definition it lacks)"
        reasons[why] = reasons.get(why, 0) + 1
    return reasons


def main_cli():
    rows = []
    for case in CASES:
        for points, note in case():
            print(f"\n{points[0]['case']}: {note}")
            print(f"  {'point':34s} {'model':>6s} {'measured':>8s} {'error':>7s}")
            for p in points:
                p["error"] = p["predicted"] / p["measured"] - 1
                print(f"  {p['what']:34s} {p['predicted']:6.2f}x {p['measured']:7.2f}x {p['error'] * 100:+6.1f}%")
            rows += points
    print("\nby family and engine (predicted, never fitted):")
    for key in sorted({(p["family"], p["engine"]) for p in rows}):
        errs = [abs(p["error"]) for p in rows if (p["family"], p["engine"]) == key]
        print(f"  {key[0]:10s} {key[1]:7s} n={len(errs):2d}  median {statistics.median(errs) * 100:5.1f}%  "
              f"worst {max(errs) * 100:5.1f}%")
    errs = [abs(p["error"]) for p in rows]
    print(f"  {'all':18s} n={len(errs):2d}  median {statistics.median(errs) * 100:5.1f}%  worst {max(errs) * 100:5.1f}%")
    print(f"\nrows asked: {len(USED)} of {len(ROWS)}; not asked:")
    for why, n in sorted(not_asked().items(), key=lambda kv: -kv[1]):
        print(f"  {n:3d}  {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main_cli())
