"""The cost model beside NVIDIA aiconfigurator's measured kernels, on a grid of plain decode steps.

aiconfigurator (Apache-2.0) estimates a step from a database of kernel times measured per GPU and engine
release (GEMM, attention, MoE, all-reduce); it has no host or scheduler time and no AMD GPU. This script prints,
for each shape, its per-kernel sum beside this model's terms, so the two can be read part by part: where the
kernels agree, a difference in the total is this model's fixed and per-sequence host time, which aiconfigurator
leaves out. A development-time tool: code/main.py never needs it. Install it apart (about a minute, 850 MB):

    python -m venv /tmp/aic && /tmp/aic/bin/pip install aiconfigurator==0.12.0
    /tmp/aic/bin/python bench/aiconfigurator_compare.py > bench/aiconfigurator_compare.txt

aiconfigurator 0.12.0 reads its bundled model configs and database offline (vLLM 0.24.0 is its "current" slot on
H100 and H200). Its generation estimate: cli_estimate(mode="static_gen", osl=2), per-op times from
summary.get_generation_latency_dict(), in ms.
"""
import logging
import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
from aiconfigurator.cli.api import cli_estimate  # noqa: E402  (installed apart: see the docstring)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "code"))   # rollout imports by name from code/
from rollout import catalog, costmodel
from main import SETTINGS  # noqa: E402  (main.py's constants: the reference deployment)

BACKEND = "vllm"
# (label, aiconfigurator model, its system, ours: model, gpu, tp, dtype, aiconfigurator's extra arguments)
SHAPES = [
    ("8B bf16 TP1", "meta-llama/Meta-Llama-3.1-8B", "h100_sxm", "llama-3.1-8b", "h100-sxm", 1, "bf16", {}),
    ("8B bf16 TP1", "meta-llama/Meta-Llama-3.1-8B", "h200_sxm", "llama-3.1-8b", "h200", 1, "bf16", {}),
    ("70B fp8 TP4", "nvidia/Llama-3.1-70B-Instruct-FP8", "h100_sxm", "llama-3.3-70b", "h100-sxm", 4, "fp8",
     {"gemm_quant_mode": "fp8", "kvcache_quant_mode": "bfloat16", "fmha_quant_mode": "bfloat16"}),
    ("Qwen3-30B-A3B bf16 TP1", "Qwen/Qwen3-30B-A3B", "h200_sxm", "qwen3-30b-a3b", "h200", 1, "bf16",
     {"moe_tp_size": 1, "moe_ep_size": 1}),
]
BATCHES = {"8B bf16 TP1": (1, 8, 32, 64, 128, 256), "70B fp8 TP4": (1, 8, 64), "Qwen3-30B-A3B bf16 TP1": (1, 8, 32)}
CONTEXTS = (1024, 4096)


def bucket(op):
    """aiconfigurator's op name -> the part it belongs to."""
    o = op.lower()
    if any(s in o for s in ("_ar", "allreduce", "all_reduce", "p2p", "a2a", "dispatch", "combine", "allgather")):
        return "comm"
    if "moe" in o or "expert" in o:
        return "moe"
    if "attention" in o or "attn" in o:
        return "attention"
    return "gemm" if "gemm" in o else "other"


def theirs(model, system, tp, batch, context, extra):
    """aiconfigurator's decode step at this shape, by part (ms)."""
    result = cli_estimate(model, system, mode="static_gen", backend_name=BACKEND, isl=context, osl=2,
                          batch_size=batch, tp_size=tp, stride=1, **extra)
    parts = dict.fromkeys(("gemm", "moe", "attention", "comm", "other"), 0.0)
    for op, ms in result.summary.get_generation_latency_dict().items():
        parts[bucket(op)] += float(ms)
    return parts, result.backend_version


def ours(model, gpu, tp, dtype, batch, context):
    """This model's plain decode step on vLLM at this shape, by the same parts (ms): its weight read and compute
    are the GEMMs (and, for a MoE target, the experts), fixed and engine the host time aiconfigurator has none of."""
    dep = SETTINGS.deployment.build(model, gpu, tp, weights_dtype=dtype, kv_dtype="bf16", context=context, draft="ngram", engine="vllm")
    p = costmodel.target_parts(dep, batch, 1)
    return dict(gemm=p["weights"] + p["compute"], attention=p["attention"], comm=p["communication"],
                host=p["fixed"] + p["engine"])


# Decode GEMMs (n, k) of one layer, q/k/v, o, gate+up and down: Llama 3.1 8B at TP 1, Llama 3 70B at TP 1 to 8.
def layer_gemms(hidden, inter, heads, kv_heads, head_dim, tp):
    return [((heads + 2 * kv_heads) * head_dim // tp, hidden), (hidden, heads * head_dim // tp),
            (2 * inter // tp, hidden), (hidden, inter // tp)]


DECODE_GEMMS = layer_gemms(4096, 14336, 32, 8, 128, 1) + [g for tp in (1, 2, 4, 8)
                                                          for g in layer_gemms(8192, 28672, 64, 8, 128, tp)]
SHARE_SYSTEMS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200", "a100_sxm": "a100-sxm-80gb"}


def gemm_shares():
    """Achieved share of datasheet bandwidth (catalog.GPUS) of aiconfigurator's measured bf16 decode GEMMs (m = 1, 2,
    4, 8 rows; the shapes on its grid), bytes over time: {our GPU name: share}."""
    import pandas as pd
    import aiconfigurator_core
    data = Path(aiconfigurator_core.__file__).parent / "systems" / "data"
    shares = {}
    for system, gpu in SHARE_SYSTEMS.items():
        (folder,) = sorted((data / system / "gemm" / BACKEND).iterdir())[-1:]
        table = pd.read_parquet(folder / "gemm_perf.parquet")
        table = table[table.gemm_dtype == "bfloat16"]
        read = seconds = 0.0
        for n, k in DECODE_GEMMS:
            for m in (1, 2, 4, 8):
                row = table[(table.m == m) & (table.n == n) & (table.k == k)]
                if len(row):
                    read, seconds = read + n * k * 2, seconds + float(row.latency.iloc[0]) * 1e-3
        shares[gpu] = read / seconds / (catalog.GPUS[gpu]["bandwidth_tbs"] * 1e12)
        print(f"  {gpu:14s} ({system}, {BACKEND} {folder.name}): bf16 decode GEMMs read at {shares[gpu]:.3f} of "
              f"{catalog.GPUS[gpu]['bandwidth_tbs']:g} TB/s, x{shares[gpu] / shares.get('h100-sxm', shares[gpu]):.3f} "
              "of the H100's share")
    return shares


def main_cli():
    print(f"{'shape':24s} {'gpu':9s} {'ctx':>5s} {'B':>4s} | {'aic gemm':>8s} {'attn':>6s} {'comm':>6s} {'other':>6s}"
          f" {'total':>6s} | {'ours gemm':>9s} {'attn':>6s} {'comm':>6s} {'host':>6s} {'total':>6s} | "
          f"{'kernels':>7s} {'total':>6s}")
    rows = []
    for label, model, system, our_model, gpu, tp, dtype, extra in SHAPES:
        for context in CONTEXTS:
            for batch in BATCHES[label]:
                a, version = theirs(model, system, tp, batch, context, extra)
                o = ours(our_model, gpu, tp, dtype, batch, context)
                a_gemm = a["gemm"] + a["moe"]
                a_total = sum(a.values())
                o_kernels = o["gemm"] + o["attention"] + o["comm"]
                o_total = o_kernels + o["host"]
                rows.append((label, o_kernels / (a_total - a["other"]), o_total / a_total))
                print(f"{label:24s} {system:9s} {context:5d} {batch:4d} | {a_gemm:8.2f} {a['attention']:6.2f} "
                      f"{a['comm']:6.2f} {a['other']:6.2f} {a_total:6.2f} | {o['gemm']:9.2f} {o['attention']:6.2f} "
                      f"{o['comm']:6.2f} {o['host']:6.2f} {o_total:6.2f} | {rows[-1][1]:7.2f} {rows[-1][2]:6.2f}")
    print(f"\naiconfigurator {BACKEND} database {version}. kernels: our GEMM + attention + communication over its "
          "(other: norms and activations, a launch floor); total: our step over its.")
    for label in BATCHES:
        k = sorted(r[1] for r in rows if r[0] == label)
        t = sorted(r[2] for r in rows if r[0] == label)
        print(f"  {label:24s} kernels x{k[0]:.2f}-{k[-1]:.2f} (median {k[len(k) // 2]:.2f}), "
              f"total x{t[0]:.2f}-{t[-1]:.2f} (median {t[len(t) // 2]:.2f})")


if __name__ == "__main__":
    print("Achieved bandwidth of measured decode GEMMs (catalog.GPUS' bw_rel is each GPU's share over its family's "
          "fitted GPU's):")
    gemm_shares()
    print()
    main_cli()
