"""Attention data parallelism, simulated both ways, against InferenceX's 58 DP-attention runs (served_runs.json:
DeepSeek-R1-0528 on TensorRT-LLM, 8 x B200 and 8 x H200, with and without MTP), predicted without calibration:

  one   one scheduler over the replica (its budget and batch the ranks' sum), each pass priced per rank: what
        bench/moe_load.py scored these runs with before per-rank schedulers
  ranks one rank simulated at its share of the load (serving.simulate_run's ranks: its own cap and budget, every step
        the replica's pass with each rank as busy), its throughput times the ranks that hold requests
  coupled  the same, on a second run paced by the other ranks' prefills as often as the first run prefilled
        (goodput.others_of): what the SLO search and --choose run (goodput.simulated_point)

A closed loop of C concurrent requests (10 C prompts, as InferenceX sends them) keeps min(C, ranks) ranks busy,
C / that many each. MTP's acceptance is served_load's assumed per-token alpha (0.75). Each run's servers are as
InferenceX's launch scripts start them (served_load.inferencex_server), a rank's cap and budget the scripts' per-rank
ones. Errors are predicted / measured - 1; medians of |error| by GPU and MTP, and over all.

    python bench/dp_attention.py > bench/dp_attention.txt    # about a minute on 2 cores
"""
import dataclasses
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "code"))
sys.path.insert(0, str(HERE))

from rollout import costmodel, goodput, serving  # noqa: E402
import served_load  # noqa: E402

METRICS = (("output tok/s", "output_throughput"), ("mean TPOT", "mean_tpot_ms"), ("median TTFT", "median_ttft_ms"))


def per_rank(dep, ranks):
    """The deployment as one rank's scheduler sees it: TensorRT-LLM's budget and max_batch_size are each rank's, as
    the launch scripts set them (served_load summed the ranks' for the one-scheduler simulation)."""
    (least, budget), = dep.engine.prefill_budget
    running = tuple((gib, seqs // ranks) for gib, seqs in dep.engine.running_limit)
    return dataclasses.replace(dep, engine=dataclasses.replace(dep.engine, prefill_budget=((least, budget // ranks),),
                                                               running_limit=running))


def predicted(p, dep, work, how):
    """The run's result, simulated one way (`how`: "one" or "ranks")."""
    k = p["K"] or 0
    alpha = served_load.MTP_ALPHA if k else 0.0
    if how == "one":
        run = serving.serve_run(dep, work, k, alpha, 0.05, 0, costmodel.FIT, work.max_concurrency)
        return serving.bench_result(run, work, dep)
    ranks = dep.tp
    busy = min(ranks, work.max_concurrency)
    share = dataclasses.replace(work, max_concurrency=max(1, round(work.max_concurrency / busy)),
                                num_prompts=max(10, round(work.num_prompts / busy)))
    rank = per_rank(dep, ranks)
    run = serving.serve_run(rank, share, k, alpha, 0.05, 0, costmodel.FIT, None, ranks=ranks)
    if how == "coupled":
        others = goodput.others_of(run, busy)
        run = serving.serve_run(rank, share, k, alpha, 0.05, 0, costmodel.FIT, None, ranks=ranks, others=others)
    result = serving.bench_result(run, share, rank)
    return dict(result, output_throughput=busy * result["output_throughput"])


def main():
    errors = defaultdict(lambda: defaultdict(list))
    runs = [r for r in served_load.inferencex_runs() if r[3].dp_attention]
    print(f"# python bench/dp_attention.py > bench/dp_attention.txt   ({len(runs)} DP-attention runs)")
    for p, engine, dtype, dep, work in runs:
        group = (engine, dep.gpu, "MTP" if p["K"] else "plain")
        for how in ("one", "ranks", "coupled"):
            result = predicted(p, dep, work, how)
            for name, key in METRICS:
                seen = p["metrics"].get(key) or (p["metrics"].get("median_tpot_ms") if key == "mean_tpot_ms" else None)
                if seen:
                    e = result[key] / seen - 1
                    errors[(how, group)][name].append(e)
                    errors[(how, ("all",))][name].append(e)
    print(f"{'':30}" + "".join(f"{name:>26}" for name, _ in METRICS))
    print(f"{'':30}" + "".join(f"{'n  median |e|  mean':>26}" for _ in METRICS))
    for how in ("one", "ranks", "coupled"):
        for group in sorted({g for h, g in errors if h == how}, key=lambda g: (g != ("all",), g)):
            cells = errors[(how, group)]
            line = f"{how:8}{' '.join(group):22}"
            for name, _ in METRICS:
                e = cells.get(name, [])
                line += (f"{len(e):>7} {statistics.median(map(abs, e)) * 100:7.1f}% {statistics.fmean(e) * 100:+7.1f}%"
                         if e else f"{'-':>26}")
            print(line)


if __name__ == "__main__":
    main()
