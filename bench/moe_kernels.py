"""Each engine's fixed cost of a fused-MoE layer, from published kernel sweeps: `python bench/moe_kernels.py`.

Reads bench/moe_kernels.json (one MoE layer on one tensor-parallel rank, timed by tokens in the
pass, uniform routing) and predicts each point with rollout/costmodel.py's read and compute: the distinct
experts uniform routing touches (experts.expected_experts) times one expert's bytes on the rank, at the
GPU's achieved bandwidth (costmodel.bandwidth_share, fp8_eff for quantized weights), plus the FLOPs at
flop_eff. What is left over, measured minus predicted, is the kernel's own latency per layer: routing,
sorting tokens by expert, launches inside the graph, small tiles. Its median over the points of up to
64 tokens (where a pass of decode or verify tokens lives) is the engine's Engine.moe_layer_us; past
that, groups of more than a few tokens per expert run below peak and the left-over grows (printed, not
fitted). tests/test_engines.py checks that catalog.MOE_KERNEL_US carries these medians. Standard library only.
"""
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "code"))   # main.py's package, rollout, imports by name from code/

from rollout import catalog, costmodel, deployment, experts  # noqa: E402
from main import SETTINGS  # noqa: E402  (main.py's constants: the reference deployment)
DECODE_TOKENS = 64   # the points whose left-over sets the fixed cost


def predicted_us(sweep, tokens, fit=costmodel.FIT):
    """The model's time of the sweep's MoE layer at `tokens` tokens, fixed cost left out, in us."""
    dep = SETTINGS.deployment.build("llama-3.1-8b", sweep["gpu"], sweep["tp"])   # the GPU's bandwidth share only
    bytes_per_us = catalog.GPUS[sweep["gpu"]]["bandwidth_tbs"] * 1e6 * costmodel.bandwidth_share(dep, fit)
    bytes_per_us *= fit.fp8_eff if sweep["quantized"] else 1.0
    expert = 3 * sweep["hidden"] * sweep["moe_inter"] * sweep["weight_bytes"] / sweep["tp"]
    read = experts.expected_experts(sweep["experts"], sweep["k"], tokens) * expert / bytes_per_us
    spec = catalog.GPUS[sweep["gpu"]]
    peak = deployment.peak_tflops(spec, "fp4" if sweep["weight_bytes"] < 1 else "fp8" if sweep["quantized"] else "bf16")
    flops = tokens * sweep["k"] * 2 * 3 * sweep["hidden"] * sweep["moe_inter"] / sweep["tp"]
    return read + flops / (peak * 1e6 * fit.flop_eff)


def left_over(sweep):
    """{tokens: measured - predicted us} for one sweep."""
    return {int(n): us - predicted_us(sweep, int(n)) for n, us in sweep["us_by_tokens"].items()}


def engine_fixed_us(sweeps):
    """{engine: median left-over over its sweeps' points of up to DECODE_TOKENS tokens}, rounded to 0.1 us."""
    by_engine = {}
    for sweep in sweeps:
        by_engine.setdefault(sweep["engine"], []).extend(
            v for n, v in left_over(sweep).items() if n <= DECODE_TOKENS)
    return {engine: round(statistics.median(v), 1) for engine, v in sorted(by_engine.items())}


def load(path=HERE / "moe_kernels.json"):
    return json.loads(Path(path).read_text())["sweeps"]


if __name__ == "__main__":
    sweeps = load()
    for sweep in sweeps:
        print(f"\n{sweep['engine']}: {sweep['model']} on {sweep['gpu']} TP{sweep['tp']} ({sweep['kernel']})")
        print(f"  {'tokens':>6s} {'measured':>9s} {'read+math':>9s} {'left-over':>9s}")
        for n, us in sweep["us_by_tokens"].items():
            p = predicted_us(sweep, int(n))
            print(f"  {n:>6s} {us:9.1f} {p:9.1f} {us - p:9.1f}")
    fixed = engine_fixed_us(sweeps)
    print("\nmedian left-over per MoE layer, points of up to", DECODE_TOKENS, "tokens (Engine.moe_layer_us):")
    for engine, us in fixed.items():
        print(f"  {engine:8s} {us:5.1f} us")
