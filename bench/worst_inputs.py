"""The largest inputs the tool accepts, timed: each case at its limit (records.py and cli.py), in a fresh process,
with its wall time and the peak memory of that process, and last every limit at once. The README's limits quote this.

    python bench/worst_inputs.py > bench/worst_inputs.txt     (about a minute on 2 cores; standard library only)
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

from rollout import cli, goodput, records  # noqa: E402


def timed(label, argv):
    """Run main.py with argv; print its exit status, seconds and the peak resident memory of the child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "code" / "main.py"), *argv], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss   # KiB on Linux: the largest child so far
    last = (proc.stderr.strip().splitlines() or [""])[-1][:90]
    print(f"{label:<66} exit {proc.returncode}  {seconds:6.1f} s  {max(peak, before) / 1024:6.0f} MiB  {last}",
          flush=True)
    return seconds


def bench_file(path, requests, each, **changes):
    """The fixture's baseline result scaled to `requests` requests of `each` output tokens, its numbers one run's."""
    bench = json.loads((ROOT / "tests" / "fixtures" / "bench_baseline.json").read_text())
    bench.update(dict(dict(completed=requests, num_prompts=requests, total_output_tokens=requests * each,
                           total_input_tokens=requests * 128, max_concurrency=1,
                           duration=requests * each / bench["output_throughput"]), **changes))
    path.write_text(json.dumps(bench, separators=(",", ":")))
    return str(path)


def scrape(path, lines, k, labels=0, scale=1):
    """A /metrics page of `lines` lines: the three counters of the fixture's model at K = k, each on its own engine
    label, with `labels` more empty labels on each line."""
    model = 'model_name="meta-llama/Llama-3.3-70B-Instruct"' + "".join(f',l{j}=""' for j in range(labels))
    rows = [f'vllm:spec_decode_num_{name}_total{{{model},engine="{i}"}} {value * scale}'
            for i in range(lines // 3) for name, value in (("drafts", 100), ("draft_tokens", 100 * k),
                                                            ("accepted_tokens", 50 * k))]
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def main():
    work, request = cli.SIMULATED_WORK_LIMIT, cli.REQUEST_WORK
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        runs = tmp / "runs"
        runs.mkdir()
        # --predict-bench at its work limit (workload.run_work): two runs (speculation off and on) at concurrency 1,
        # where every step is one request's; 64-token answers (the slowest a request: a decode stretch too short to
        # take in one move), then 1,024; 120,000-token prompts (15 chunks each); the most requests: 2-token answers,
        # 20 concurrencies, 3 files each.
        chunk = 8192   # the step budget on an H100 or H200 (costmodel.step_budget)
        for output, prompt in ((64, 1024), (1024, 1024), (64, 120_000)):
            prompts = min(cli.MAX_BENCH_PROMPTS, work // (2 * (request - (-prompt // chunk))))
            predict = ["--slo", "none", "--predict-bench", str(runs), "--num-prompts", str(prompts), "--concurrency",
                       "1", "--ks", "3", "--alphas", "0.7", "--output-tokens", str(output), "--input-tokens", str(prompt),
                       "--context", str(prompt + output)]
            timed(f"--predict-bench, {prompts:,} prompts of {prompt:,} x {output:,} tokens x 2 runs, C = 1",
                  predict + ["--no-write"])
        short = work // (60 * (request + 1))
        timed(f"--predict-bench, {short:,} prompts x 2 tokens x 60 runs",
              ["--predict-bench", str(runs), "--num-prompts", str(short), "--output-tokens", "2", "--input-tokens",
               "1", "--concurrency", ",".join(map(str, range(1, 21))), "--ks", "1,2", "--no-write"])
        # A normal sweep with the plan's prompts: six concurrencies, off and K = 3.
        timed("--predict-bench, the plan's prompts at concurrency 1-256, off and K = 3",
              ["--predict-bench", str(runs), "--concurrency", "1,8,32,64,128,256", "--ks", "3", "--no-write"])
        # --compare at its limits, at concurrency 1 (the slowest replay): the most requests, and the most tokens.
        cases = ((cli.COMPARE_REQUESTS_LIMIT, cli.COMPARE_TOKENS_LIMIT // cli.COMPARE_REQUESTS_LIMIT),
                 (cli.COMPARE_TOKENS_LIMIT // 8192, 8192))
        for requests, each in cases:
            big = bench_file(tmp / f"big-{requests}.json", requests, each)
            timed(f"--compare, one run of {requests:,} requests x {each:,} tokens, C = 1",
                  ["--compare", big, "--no-write", "--ks", "3", "--alphas", "0.7"])
        opened = bench_file(tmp / "open.json", *cases[1], max_concurrency=None, request_rate=50.0)
        timed(f"--compare, an open-loop run of {cases[1][0]:,} requests x 8,192 tokens",
              ["--compare", opened, "--no-write", "--ks", "3", "--alphas", "0.7"])
        # The benchmark results one run reads: padded (--save-detailed's per-request lists) to their total.
        each_bytes = records.BENCH_LIMIT_BYTES - (1 << 16)
        padded = []
        for i in range(records.BENCH_TOTAL_BYTES // each_bytes):
            path = Path(bench_file(tmp / f"padded-{i}.json", 300, 155, max_concurrency=8 + i))
            text = path.read_text()
            path.write_text(text[:-1] + ',"itls":[' + ",".join(["0"] * ((each_bytes - len(text)) // 2)) + "]}")
            padded.append(str(path))
        timed(f"--compare of {len(padded)} results of {each_bytes >> 20} MiB each",
              ["--compare", ",".join(padded), "--no-write", "--ks", "3", "--alphas", "0.7"])
        # --calibrate at its file limit: each run left out and refitted.
        calibration = [bench_file(tmp / f"cal-{c}.json", 200, 1024, max_concurrency=c, mean_tpot_ms=30 + c / 8)
                       for c in range(1, records.CALIBRATION_FILE_LIMIT + 1)]
        timed(f"--calibrate of {records.CALIBRATION_FILE_LIMIT} runs", ["--calibrate", ",".join(calibration),
                                                                        "--no-write", "--ks", "3", "--alphas", "0.7"])
        # Two scrapes at the line limit, and one at the byte limit in lines at their own limit.
        k = records.K_LIMIT
        after = scrape(tmp / "after.prom", records.SCRAPE_LINE_LIMIT - 3, k, scale=2)
        before = scrape(tmp / "before.prom", records.SCRAPE_LINE_LIMIT - 3, k)
        timed(f"--metrics and --metrics-before at {records.SCRAPE_LINE_LIMIT:,} lines each",
              ["--metrics", after, "--metrics-before", before, "--ks", str(k), "--no-write"])
        longest = (records.LINE_LIMIT_BYTES - 200) // 6   # ',lNNN=""' is 8 bytes: well under the line limit
        widest = scrape(tmp / "wide.prom", 3 * (records.SCRAPE_LIMIT_BYTES // (3 * records.LINE_LIMIT_BYTES)), k,
                        labels=longest // 2)
        timed(f"--metrics of {records.SCRAPE_LIMIT_BYTES >> 20} MiB in lines of {records.LINE_LIMIT_BYTES >> 10} KiB",
              ["--metrics", widest, "--ks", str(k), "--no-write"])
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
        wide = tmp / "wide.json"
        wide.write_text(json.dumps(config))
        timed(f"the same on {records.TP_LIMIT:,} GPUs (--ep {records.TP_LIMIT}), --predict-bench at 5 rates",
              ["--model-config", str(wide), "--tp", str(records.TP_LIMIT), "--ep", str(records.TP_LIMIT), "--gpu",
               "h200", "--predict-bench", str(runs), "--request-rate", "1,2,4,8,16", "--num-prompts", "350",
               "--no-write"])
        # The grid at its limits: every (acceptance, K) pair is simulated; short answers and high acceptance are
        # the slowest to simulate, long drafts weigh more.
        alphas = ",".join(f"{0.3 + 0.015 * i:.3f}" for i in range(records.GRID_PAIR_LIMIT // 5))
        timed(f"the grid at {records.GRID_PAIR_LIMIT} (alpha, K) pairs, K 1-5", ["--alphas", alphas, "--ks", "1,2,3,4,5",
                                                                               "--no-write"])
        count = int(records.GRID_WORK_LIMIT // (1 + (records.K_LIMIT / 8) ** 2))
        rates = ",".join(f"{0.9 + i * 0.0005:.4f}" for i in range(count))
        grid = ["--acceptance-rates", rates, "--ks", str(records.K_LIMIT), "--output-tokens", "64"]
        timed(f"the grid at {count} pairs of K = {records.K_LIMIT}, 64-token answers",
              grid + ["--concurrency", "1", "--verify-overheads", "0", "--no-write"])
        # The SLO's search at its widest: the most requests a run sends, on a server of thousands of slots (a small
        # model on 8 GPUs: the highest rates), the longest answers it searches, and attention data parallelism (two
        # runs a rate).
        timed(f"--slo, --num-prompts {cli.SLO_PROMPTS_LIMIT:,} (8B on 8 x B200, SGLang, 64 in / 64 out)",
              ["--slo", "ttft:1e7,tpot:1e5", "--engine", "sglang", "--model", "llama-3.1-8b", "--gpu", "b200", "--tp",
               "8", "--input-tokens", "64", "--output-tokens", "64", "--num-prompts", str(cli.SLO_PROMPTS_LIMIT),
               "--no-write"])
        timed(f"--slo with {goodput.SLO_OUTPUT_LIMIT:,}-token answers, loose bounds (the cap binds)",
              ["--slo", "ttft:1e7,tpot:1e5", "--output-tokens", str(goodput.SLO_OUTPUT_LIMIT), "--no-write"])
        timed("--slo, DeepSeek-V3 on 8 x H200, SGLang, MTP, attention data parallel",
              ["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--engine", "sglang", "--draft", "mtp", "--ep",
               "8", "--dp-attention", "--no-write"])
        # Every limit at once: the longest grid; predictions and comparisons sharing their work limit (the results
        # read at theirs); the calibration; both scrapes.
        shared = ["--slo", "none", "--predict-bench", str(runs), "--num-prompts", str(work // 2 // (2 * (request + 1))),
                  "--compare", ",".join(padded[:-1] + [bench_file(tmp / "half.json", 2000, 900)])]
        timed("all of them at once (but the experts)",
              grid + ["--concurrency", "1", "--verify-overheads", "0"] + shared
              + ["--calibrate", ",".join(calibration), "--metrics", after, "--metrics-before", before, "--no-write"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
