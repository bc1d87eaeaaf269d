"""What NVIDIA aiconfigurator's own deployment search picks for Llama-3.1-8B on 8 H200s, aggregated serving.

For each traffic shape (ISL/OSL 1024/1024, 8192/1024, 1024/8192) and each backend whose H200 database covers the
model (vLLM, TensorRT-LLM), this asks aiconfigurator's "default" search (aggregated vs disaggregated, here only the
aggregated winner is kept) for the configuration with the most tokens/s/GPU under TTFT <= 2000 ms and TPOT <= 50 ms,
and writes its pick (TP, PP, attention DP, replicas, batch, predicted tokens/s/GPU, tokens/s/user, TTFT, TPOT,
whether speculative decoding/MTP was in the search) to bench/aiconfigurator_choose.json, with a small table on
stdout. A development-time tool: nothing imports it. Install aiconfigurator apart (about a minute, 850 MB):

    python -m venv /tmp/aic && /tmp/aic/bin/pip install aiconfigurator==0.12.0
    /tmp/aic/bin/python bench/aiconfigurator_choose.py

aiconfigurator 0.12.0 reads its bundled model configs and database offline. The call is the programmatic form of
`aiconfigurator cli default`: aiconfigurator.cli.api.cli_default(model, total_gpus, system, backend=..., isl=...,
osl=..., ttft=..., tpot=...), which leaves MTP off (nextn=0) unless asked. Each call takes about 40 s. Its agg rows
are per replica; the replicas on the 8 GPUs are total_gpus // gpus-per-replica, as its own report counts them.
"""
import importlib.metadata
import json
import logging
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
from aiconfigurator.cli.api import cli_default, cli_support  # noqa: E402  (installed apart: see the docstring)
from aiconfigurator.sdk.errors import NoFeasibleConfigError  # noqa: E402

OUT = Path(__file__).resolve().parent / "aiconfigurator_choose.json"
MODEL, SYSTEM, TOTAL_GPUS = "meta-llama/Meta-Llama-3.1-8B", "h200_sxm", 8
TTFT_MS, TPOT_MS = 2000.0, 50.0
BACKENDS = ("vllm", "trtllm")
SHAPES = ((1024, 1024), (8192, 1024), (1024, 8192))
VERSION = importlib.metadata.version("aiconfigurator")


def call_text(kwargs):
    """The exact call, as it could be pasted into Python."""
    named = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return f"aiconfigurator.cli.api.cli_default({MODEL!r}, {TOTAL_GPUS}, {SYSTEM!r}, {named})"


def choose(backend, isl, osl):
    """aiconfigurator's best aggregated configuration for one shape and backend, as a JSON row."""
    kwargs = {"backend": backend, "isl": isl, "osl": osl, "ttft": TTFT_MS, "tpot": TPOT_MS, "top_n": 5}
    row = {"backend": backend, "isl": isl, "osl": osl, "aiconfigurator_version": VERSION, "call": call_text(kwargs)}
    try:
        result = cli_default(MODEL, TOTAL_GPUS, SYSTEM, **kwargs)
    except NoFeasibleConfigError as err:
        return {**row, "error": f"no feasible configuration: {err}"}
    agg = result.best_configs.get("agg")
    task = result.tasks["agg"]
    row.update({"database_backend_version": task.backend_version, "database_mode": task.database_mode,
                "speculative_decoding_considered": bool(task.nextn), "nextn": task.nextn,
                "aic_chosen_mode": result.chosen_exp,
                "best_tokens_s_gpu_by_mode": {k: round(v, 1) for k, v in result.best_throughputs.items()}})
    if agg is None or agg.empty:
        return {**row, "error": "no aggregated configuration met the SLO"}
    best = agg.iloc[0]
    gpus_per_replica = int(best["num_total_gpus"])
    replicas = TOTAL_GPUS // gpus_per_replica
    row.update({
        "database_backend_version": str(best["version"]),
        "tp": int(best["tp"]), "pp": int(best["pp"]), "attention_dp": int(best["dp"]),
        "gpus_per_replica": gpus_per_replica, "replicas": replicas,
        "batch_size_per_replica": int(best["bs"]), "concurrency_per_replica": int(best["concurrency"]),
        "concurrency_total": int(best["concurrency"]) * replicas,
        "tokens_s_gpu": round(float(best["tokens/s/gpu_cluster"]), 1),
        "tokens_s_user": round(float(best["tokens/s/user"]), 2),
        "ttft_ms": round(float(best["ttft"]), 1), "tpot_ms": round(float(best["tpot"]), 2),
        "request_latency_ms": round(float(best["request_latency"]), 0),
        "memory_gb_per_gpu": round(float(best["memory"]), 1),
        "quant": {k: str(best[k]) for k in ("gemm", "kvcache", "fmha")},
        "slo_met": bool(best["ttft"] <= TTFT_MS and best["tpot"] <= TPOT_MS),
        "runners_up": [f"tp{int(r.tp)} bs{int(r.bs)}: {float(r['tokens/s/gpu_cluster']):.0f} tok/s/gpu, "
                       f"tpot {float(r.tpot):.1f} ms" for _, r in agg.iloc[1:].iterrows()],
    })
    return row


def main():
    rows = []
    for backend in BACKENDS:
        support = cli_support(MODEL, SYSTEM, backend=backend)
        if not support.agg_supported:
            rows.append({"backend": backend, "aiconfigurator_version": VERSION,
                         "error": f"cli_support says {SYSTEM} {backend} does not cover {MODEL} (agg)"})
            continue
        for isl, osl in SHAPES:
            rows.append(choose(backend, isl, osl))
    OUT.write_text(json.dumps(rows, indent=1) + "\n")

    head = ("backend", "version", "ISL/OSL", "TP", "PP", "DP", "repl", "bs", "tok/s/gpu", "tok/s/user", "TTFT",
            "TPOT", "MTP", "aic picks")
    print(f"aiconfigurator {VERSION}: {MODEL} on {TOTAL_GPUS}x {SYSTEM}, TTFT<={TTFT_MS:.0f} ms, TPOT<={TPOT_MS:.0f} ms,"
          " best aggregated configuration")
    print(" ".join(f"{h:>10}" for h in head))
    for r in rows:
        shape = f"{r.get('isl', '-')}/{r.get('osl', '-')}"
        if "error" in r:
            print(f"{r['backend']:>10} {'':>10} {shape:>10}  {r['error']}")
            continue
        cells = (r["backend"], r["database_backend_version"], shape, r["tp"], r["pp"], r["attention_dp"],
                 r["replicas"], r["batch_size_per_replica"], r["tokens_s_gpu"], r["tokens_s_user"], r["ttft_ms"],
                 r["tpot_ms"], "yes" if r["speculative_decoding_considered"] else "no", r["aic_chosen_mode"])
        print(" ".join(f"{c:>10}" for c in cells))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
