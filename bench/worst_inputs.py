"""The largest inputs the tool accepts, timed: each case at its limit (records.py and cli.py), in a fresh process,
with its wall time and the peak memory of that process. The README's limits quote this.

    python bench/worst_inputs.py          (about a minute on 2 cores; standard library only)
"""
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "code"))

from rollout import cli, records  # noqa: E402


def timed(label, argv):
    """Run main.py with argv; print its exit status, seconds and the peak resident memory of the child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "code" / "main.py"), *argv], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss   # KiB on Linux: the largest child so far
    last = (proc.stderr.strip().splitlines() or [""])[-1][:90]
    print(f"{label:<58} exit {proc.returncode}  {seconds:6.1f} s  {max(peak, before) / 1024:6.0f} MiB  {last}")
    return seconds


def main():
    tokens = cli.SIMULATED_TOKENS_LIMIT
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # --predict-bench at its token limit: two runs (speculation off and on) at concurrency 1, 1,024 tokens each.
        prompts = tokens // (2 * 1024)
        timed(f"--predict-bench, {prompts:,} prompts x 1,024 tokens x 2 runs, C = 1",
              ["--predict-bench", str(tmp), "--num-prompts", str(prompts), "--concurrency", "1", "--ks", "3",
               "--alphas", "0.7", "--no-write"])
        # --compare at its limits, at concurrency 1 (the slowest replay): the most requests, and the most tokens.
        bench = json.loads((ROOT / "tests" / "fixtures" / "bench_baseline.json").read_text())
        for requests, each in ((cli.COMPARE_REQUESTS_LIMIT, cli.COMPARE_TOKENS_LIMIT // cli.COMPARE_REQUESTS_LIMIT),
                               (cli.COMPARE_TOKENS_LIMIT // 8192, 8192)):
            bench.update(completed=requests, num_prompts=requests, total_output_tokens=requests * each,
                         total_input_tokens=requests * 128, max_concurrency=1,
                         duration=requests * each / bench["output_throughput"])   # one run's own numbers
            big = tmp / f"big-{requests}.json"
            big.write_text(json.dumps(bench))
            timed(f"--compare, one run of {requests:,} requests x {each:,} tokens, C = 1",
                  ["--compare", str(big), "--no-write", "--ks", "3", "--alphas", "0.7"])
        bench.update(max_concurrency=None, request_rate=50.0)   # open loop: the requests arrive by themselves
        big.write_text(json.dumps(bench))
        timed(f"--compare, an open-loop run of {bench['completed']:,} requests x 8,192 tokens",
              ["--compare", str(big), "--no-write", "--ks", "3", "--alphas", "0.7"])
        # A mixture of experts at the expert limit, experts placed whole on 4 GPUs (the busiest rank's count).
        config = json.loads((ROOT / "tests" / "fixtures" / "configs" / "qwen3-30b-a3b-fp8.config.json").read_text())
        config["num_experts"], config["num_experts_per_tok"] = records.EXPERT_LIMIT, records.EXPERTS_PER_TOKEN_LIMIT
        moe = tmp / "moe.json"
        moe.write_text(json.dumps(config))
        timed(f"--model-config with {records.EXPERT_LIMIT:,} experts, {records.EXPERTS_PER_TOKEN_LIMIT} a token, --ep 4",
              ["--model-config", str(moe), "--tp", "4", "--ep", "4", "--gpu", "h200", "--draft", "ngram", "--no-write"])
        # The same experts on the most GPUs (every GPU its own 4), predicted at five request rates: thousands of
        # distinct passes, each counting the busiest of 1,024 GPUs.
        config.update(num_attention_heads=records.TP_LIMIT, num_key_value_heads=records.TP_LIMIT, hidden_size=8192,
                      head_dim=128)
        moe.write_text(json.dumps(config))
        runs = tmp / "runs"
        runs.mkdir()
        timed(f"the same on {records.TP_LIMIT:,} GPUs (--ep {records.TP_LIMIT}), --predict-bench at 5 rates",
              ["--model-config", str(moe), "--tp", str(records.TP_LIMIT), "--ep", str(records.TP_LIMIT), "--gpu",
               "h200", "--predict-bench", str(runs), "--request-rate", "1,2,4,8,16", "--num-prompts", "700",
               "--no-write"])
        # The grid at its pair limit: every (acceptance, K) pair is simulated.
        alphas = ",".join(f"{0.3 + 0.015 * i:.3f}" for i in range(records.GRID_PAIR_LIMIT // 5))
        timed(f"the grid at {records.GRID_PAIR_LIMIT} (alpha, K) pairs", ["--alphas", alphas, "--ks", "1,2,3,4,5",
                                                                        "--no-write"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
