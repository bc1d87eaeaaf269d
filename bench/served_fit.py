"""The published fit and the served runs fitted together: how far today's terms can reach the round on today's
engines. `python bench/served_fit.py [--loso]` (a fit takes about two minutes; --loso adds one per left-out source).

bench/calibrate.py fits costmodel.Fit on the published points (bench/published.json, bench/plain_step.json, the
MI300X sweep). Here the served runs of bench/served_runs.py join them, each a ratio no GPU constant sets alone:

- A: the 2026 vLLM pairs, Llama 3.3 70B bf16 TP2 (EAGLE-3 and a 1B draft model, K 3-8, C 1-64): TPOT speedup over
  the baseline at the same concurrency; one source per draft kind.
- B: the forced-alpha sweeps (Qwen3 0.6B-32B, vLLM V1 of 2025-08, one A100-class GPU): TPOT at K over TPOT at K = 1,
  at alphas 0.6, 0.8 and 1.0 and four loads (C = 1, C = 128 and the sweeps' third and sixth constant rates), a
  subset that keeps a fit near two minutes; one source per model size.

Fit.overlap, the read-and-math transition of a GEMM (costmodel.overlapped: 1 adds them, as costmodel.FIT does), is
searched with the rest (1 to 6). The report gives each source's error in sample for costmodel.FIT and for the
joint fit, then with --loso each served source predicted by a fit without it. Nothing here changes costmodel.FIT:
it says what the joint fit would cost the published sources, and what is left for terms the model lacks.

    python bench/served_fit.py > bench/served_fit.txt
"""
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import calibrate  # noqa: E402  (the published points, the search and its bounds; puts code/ on the path)
import served_runs  # noqa: E402  (the served runs as Runs)
from rollout import calibration, cli, costmodel  # noqa: E402

B_ALPHAS = (0.6, 0.8, 1.0)
B_LOADS = ("C = 1", "C = 128", "rate #3", "rate #6")
OVERLAP_BOUNDS = (1.0, 6.0)


def llama_points():
    """A's spec runs, each a TPOT speedup over its concurrency's baseline."""
    points = [p for p in served_runs.POINTS if p["source"] == served_runs.LLAMA]
    baselines = {p["source_file"]: p for p in points if p["baseline"]}
    era = cli.parse_era(served_runs.VLLM, "0.14")
    out = []
    for p in points:
        if p["baseline"]:
            continue
        base = baselines[p["baseline_ref"]]
        draft = "eagle3" if p["draft"].startswith("eagle3") else "llama-3.2-1b"
        dep = costmodel.make_deployment("llama-3.3-70b", "h100-sxm", 2, "bf16", kv_dtype="bf16", draft=draft,
                                        engine="vllm", era=era)
        out.append(dict(source=f"served A: Llama 3.3 70B TP2, {draft}", what=f"{draft} K={p['K']} C={p['concurrency']}",
                        kind="served", dep=dep, numerator=served_runs.llama_run(base, None, None),
                        denominator=served_runs.llama_run(p, p["K"], p["acceptance"]["acceptance_length"]),
                        published=base["metrics"]["mean_tpot_ms"] / p["metrics"]["mean_tpot_ms"],
                        tp=2, dtype="bf16", engine="vllm", moe=False))
    return out


def scaling_points():
    """B's runs at K > 1, each its TPOT over the same model, alpha and load at K = 1."""
    era = cli.parse_era(served_runs.VLLM, "0.10")
    deps = {name: costmodel.make_deployment(shape["hf"], "a100-sxm-80gb", 1, "bf16", kv_dtype="bf16",
                                            draft="eagle", engine="vllm", era=era, shape=shape)
            for name, shape in served_runs.shapes().items()}
    by_key, rates = {}, defaultdict(int)
    for p in (p for p in served_runs.POINTS if p["source"] == served_runs.SCALING):
        if p["concurrency"] is None:
            rates[p["source_file"]] += 1
            load = f"rate #{rates[p['source_file']]}"
        else:
            load = f"C = {p['concurrency']}"
        by_key[p["model"], p["acceptance"]["value"], load, p["K"]] = p
    out = []
    for (model, alpha, load, k), p in sorted(by_key.items()):
        one = by_key.get((model, alpha, load, 1))
        if k == 1 or one is None or alpha not in B_ALPHAS or load not in B_LOADS:
            continue
        out.append(dict(source=f"served B: {model.split('/')[1]}", what=f"alpha {alpha} {load} K={k}", kind="served",
                        dep=deps[model], numerator=served_runs.scaling_run(p),
                        denominator=served_runs.scaling_run(one),
                        published=p["metrics"]["mean_tpot_ms"] / one["metrics"]["mean_tpot_ms"],
                        tp=1, dtype="bf16", engine="vllm", moe=False))
    return out


PUBLISHED_PREDICT = calibrate.predict


def predict(point, fit):
    """calibrate.predict, and a served point's ratio of two runs' mean TPOTs (calibration.run_tpot_ms)."""
    if point["kind"] == "served":
        return (calibration.run_tpot_ms(point["dep"], point["numerator"], fit)
                / calibration.run_tpot_ms(point["dep"], point["denominator"], fit))
    return PUBLISHED_PREDICT(point, fit)


def by_source(fit, points):
    """{source (or its view, as calibrate's loss groups them): (n, median |error|, worst |error|, mean signed)}."""
    groups = defaultdict(list)
    for r in calibrate.errors(fit, points):
        groups[r.get("view", r["source"])].append(r["error"])
    return {s: (len(e), statistics.median(map(abs, e)), max(map(abs, e)), statistics.fmean(e))
            for s, e in sorted(groups.items())}


def show(title, rows):
    print(title)
    print(f"  {'source':48s} {'n':>4s} {'median':>7s} {'worst':>7s} {'signed':>7s}")
    for source, (n, median, worst, signed) in rows.items():
        print(f"  {source:48s} {n:4d} {median * 100:6.1f}% {worst * 100:6.1f}% {signed * 100:+6.1f}%")


def main(argv):
    calibrate.predict = predict   # the search, its loss and its errors all call calibrate.predict
    calibrate.BOUNDS["overlap"] = OVERLAP_BOUNDS
    published, served = calibrate.all_points(), llama_points() + scaling_points()
    points = published + served
    print(f"{len(published)} published points, {len(served)} served; error = predicted / measured - 1\n")
    show("costmodel.FIT (overlap 1: read and math added), in sample for the published points:", by_source(
        costmodel.FIT, points))
    fitted = calibrate.fit_constants(points)
    print(f"\njoint fit:\n{fitted}")
    show("in sample:", by_source(fitted, points))
    if "--loso" in argv:
        print("\neach served source left out (fit on the others, predict it):")
        for source in sorted({p["source"] for p in served}):
            held = calibrate.fit_constants([p for p in points if p["source"] != source])
            (n, median, worst, signed), = by_source(held, [p for p in points if p["source"] == source]).values()
            print(f"  {source:48s} {n:4d} {median * 100:6.1f}% {worst * 100:6.1f}% {signed * 100:+6.1f}%",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
