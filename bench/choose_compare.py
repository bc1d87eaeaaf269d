"""--choose beside NVIDIA aiconfigurator's own deployment search, where both answer: Llama 3.1 8B on H200s.

aiconfigurator's picks (bench/aiconfigurator_choose.json, written by bench/aiconfigurator_choose.py from its 0.12.0
database: vLLM 0.24.0 and TensorRT-LLM 1.3.0rc20 on H200) are the aggregated configuration with the most output
tokens/s a GPU on 8 GPUs within TTFT <= 2000 ms and TPOT <= 50 ms, at fixed lengths, without speculation. The same
question is asked of --choose here: one GPU (h200), one engine at a time (at the release aiconfigurator measured),
every answer the same length (--input-spread 0 --output-spread 0, as aiconfigurator's requests are), the traffic
the rate aiconfigurator's pick serves on its 8 GPUs. Printed: each tool's choice with speculation off (TP, replicas,
concurrent requests a replica, output tokens/s a GPU) and this tool's choice with speculation on beside it.

aiconfigurator's TTFT is a request's own prefill (its static estimate); this tool's is the P99 of an open-loop
benchmark at the replica's capacity (Poisson arrivals, 1,000 requests), its concurrency the requests in a replica
there (Little's law) and its tokens a GPU the capacity's.

    python bench/choose_compare.py > bench/choose_compare.txt   # standard library only; about a minute
"""
import io
import json
import contextlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "code"))
import main  # noqa: E402

RELEASES = {"vllm": "0.24.0", "trtllm": "1.3.0rc20"}   # aiconfigurator 0.12.0's H200 databases


def ours(backend, isl, osl, rate):
    """--choose's --json answer for one engine on H200s at aiconfigurator's lengths and traffic."""
    argv = ["--choose", "--model", "llama-3.1-8b", "--gpus", "h200", "--engines", backend, "--engine-version",
            RELEASES[backend], "--input-tokens", str(isl), "--output-tokens", str(osl), "--input-spread", "0",
            "--output-spread", "0", "--slo", "ttft:2000,tpot:50", "--request-rate", f"{rate:.4f}", "--no-write",
            "--json"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main.main(argv)
    assert status == 0, argv
    return json.loads(out.getvalue())["choice"]


def row(tool, tp, replicas, concurrency, per_gpu, speculation="off"):
    return f"{tool:16s} {speculation:14s} {tp:>3} {replicas:>9} {concurrency:>12,.0f} {per_gpu:>10,.0f}"


def main_compare():
    picks = json.loads((HERE / "aiconfigurator_choose.json").read_text())
    print(f"{'':16s} {'speculation':14s} {'TP':>3} {'replicas':>9} {'conc/replica':>12} {'tok/s/GPU':>10}")
    for pick in picks:
        backend, isl, osl = pick["backend"], pick["isl"], pick["osl"]
        rate = pick["tokens_s_gpu"] * 8 / osl   # requests/s its 8 GPUs serve
        choice = ours(backend, isl, osl, rate)
        off = choice["cheapest_off"]
        on = choice["cheapest_on"]
        print(f"-- {backend} (release {RELEASES[backend]}), {isl} in / {osl} out, {rate:.2f} requests/s "
              "(what aiconfigurator's pick serves on 8 GPUs)")
        print(row("aiconfigurator", pick["tp"], pick["replicas"], pick["concurrency_per_replica"],
                  pick["tokens_s_gpu"]))
        for c in (off, on):
            if c is not None:
                speculation = "off" if c["draft"] == "off" else f"{c['draft']} K {c['k']}"
                print(row("--choose", c["tp"], c["replicas"], c["concurrency"], c["per_gpu"], speculation)
                      + f"   P99 TTFT {c['tails_ms']['ttft']:,.0f} ms, TPOT {c['tails_ms']['tpot']:.1f} ms")
        if off is not None:
            print(f"   tok/s/GPU, speculation off: --choose / aiconfigurator = {off['per_gpu'] / pick['tokens_s_gpu']:.2f}"
                  f"; aiconfigurator's TTFT {pick['ttft_ms']:,.0f} ms, TPOT {pick['tpot_ms']:.1f} ms")


if __name__ == "__main__":
    main_compare()
