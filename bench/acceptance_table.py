"""Measured acceptance by draft kind and head, target family and traffic domain, from the published data in bench/.

    python bench/acceptance_table.py [OUTPUT]      (default: code/rollout/acceptance_table.json; standard library only)

One row per measured point: the acceptance length tau at the chain's draft length K (or vLLM's acceptance rate
r = (tau - 1) / K), and the per-token alpha a of a chain that gives it, tau = 1 + a + ... + a^K
(rollout.acceptance.alpha_from_length, alpha_from_rate). Sources: SpecBundle's SGLang EAGLE-3 runs per dataset
(specbundle_h200_bs8.json, and acceptance_sources.json for the three targets that copy leaves out), published.json,
published_moe_2026.json's rows with an acceptance, and served_runs.json's measured acceptance. Left out: tree drafts
(top-k > 1: no chain alpha stands for them), random-token prompts (no traffic domain), the speculators runs (alpha
forced, not measured), aimosprite's gpt-oss-120b rows (per-position rates of a tree run, applied to chains) and
rows without an acceptance. acceptance_sources.json's temperature pairs are passed through as "temperature_pairs".
tests/test_acceptance_table.py checks the table against its source files value by value.
"""
import json
import re
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "code"))
from rollout.acceptance import alpha_from_length, alpha_from_rate  # noqa: E402

OUT = BENCH.parent / "code" / "rollout" / "acceptance_table.json"

# Traffic domain of each dataset, as its source spells it (one line a dataset).
DOMAINS = {
    "mtbench": "chat",                                     # SpecBundle
    "MT-bench": "chat",                                    # published.json
    "MT-Bench": "chat",                                    # Dogacel's gpt-oss-120b card
    "SPEED-Bench qualitative": "chat",
    "Magpie-Llama-3.1-Pro-MT-300K-Filtered, 2nd turn only": "chat",
    "humaneval": "code",
    "livecodebench": "code",
    "likaixin/InstructCoder": "code",
    "sglang.test.send_one (single prompt)": "code",        # its default prompt asks for a FastAPI server in Python
    "gsm8k": "math",
    "math500": "math",
    "gpqa": "reasoning",
    "financeqa": "other",
    "not stated": "other",
}
# Temperatures the rows do not carry, from the tools that ran them.
DATASET_TEMPERATURE = {"sglang.test.send_one (single prompt)": 0.0}   # sglang/test/send_one.py: temperature 0.0
SPECBUNDLE_TEMPERATURE = 0.0   # SpecForge benchmarks/benchmarker/base.py: run_batch(temperature=0) from 2025-11-23 to
                               # the dashboard's commit d9952d16 (2025-12-23); bench_eagle3.py passes no other

# Target as its source spells it: (Hugging Face id, family, mixture of experts).
TARGETS = {
    "llama-3.1-8b": ("meta-llama/Llama-3.1-8B-Instruct", "llama-3", False),
    "Llama-3.1-8B-Instruct": ("meta-llama/Llama-3.1-8B-Instruct", "llama-3", False),
    "Llama-3.3-70B-Instruct": ("meta-llama/Llama-3.3-70B-Instruct", "llama-3", False),
    "meta-llama/Llama-3.3-70B-Instruct (bf16)": ("meta-llama/Llama-3.3-70B-Instruct", "llama-3", False),
    "Llama-4-Scout-17B-16E-Instruct": ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama-4", True),
    "meta-llama/Llama-4-Scout-17B-16E (FP8)": ("meta-llama/Llama-4-Scout-17B-16E", "llama-4", True),
    "Qwen/Qwen3-32B-FP8": ("Qwen/Qwen3-32B-FP8", "qwen3", False),
    "Qwen3-30B-A3B-Instruct-2507": ("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-moe", True),
    "Qwen3-Coder-30B-A3B-Instruct": ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3-moe", True),
    "Qwen3-235B-A22B-Instruct-2507": ("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3-moe", True),
    "Qwen3-Coder-480B-A35B-Instruct": ("Qwen/Qwen3-Coder-480B-A35B-Instruct", "qwen3-moe", True),
    "Qwen3-Next-80B-A3B-Instruct-FP8": ("Qwen/Qwen3-Next-80B-A3B-Instruct-FP8", "qwen3-next", True),
    "Qwen/Qwen3-Next-80B-A3B-Instruct": ("Qwen/Qwen3-Next-80B-A3B-Instruct", "qwen3-next", True),
    "deepseek-ai/DeepSeek-V3": ("deepseek-ai/DeepSeek-V3", "deepseek", True),
    "deepseek-ai/DeepSeek-R1": ("deepseek-ai/DeepSeek-R1", "deepseek", True),
    "Kimi-K2-Instruct": ("moonshotai/Kimi-K2-Instruct", "kimi-k2", True),
    "Ling-flash-2.0": ("inclusionAI/Ling-flash-2.0", "ling", True),
    "openai/gpt-oss-120b": ("openai/gpt-oss-120b", "gpt-oss", True),
}
ENGINES = {"vLLM": "vllm", "SGLang": "sglang", "SGLang (ROCm fork)": "sglang", "TensorRT-LLM": "trtllm"}

# published.json's entries with acceptance lengths at a chain's K: (draft, head, dataset, temperature, engine, batch).
# EAGLE-1's head is not in the entry: yuhuili's is the one vLLM's EAGLE benchmarks of the time ran (vLLM PR #16937).
PUBLISHED = {
    "vllm-issue-20780-eagle3-k-sweep": ("eagle3", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "MT-bench", 0.0, "vllm", 1),
    "vllm-issue-20780-eagle1-acceptance": ("eagle", "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "MT-bench", 0.0, "vllm",
                                           None),
    "vllm-ci-eagle3-k3": ("eagle3", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "MT-bench", 0.0, "vllm", None),
}
# served_runs.json's sources with a measured acceptance (their "sources" entries): (dataset, temperature, engine).
SERVED = {
    "tomasruizt-vllm-scripts-online-throughput-llama70b-tp2": ("likaixin/InstructCoder", 0.0, "vllm"),
    "tomasruizt-vllm-scripts-adaptive_k-qwen3-32b-fp8-tp2": ("SPEED-Bench qualitative", 1.0, "vllm"),
    "Dogacel-specdrift-gpt-oss-120b-eagle3-card": ("MT-Bench", 0.7, "sglang"),
}
MOE_DRAFTS = (("EAGLE-3", "eagle3"), ("MTP", "mtp"), ("n-gram", "ngram"), ("draft model", "model"))

ABOUT = (
    "Generated by bench/acceptance_table.py from bench/specbundle_h200_bs8.json, bench/published.json, "
    "bench/published_moe_2026.json, bench/served_runs.json and bench/acceptance_sources.json; do not edit by hand "
    "(python bench/acceptance_table.py). One row per measured point: tau is the acceptance length with the bonus "
    "token at the chain's draft length k, rate vLLM's acceptance rate (tau - 1) / k, alpha the per-token acceptance "
    "of a chain that gives them (tau = 1 + a + ... + a^k), from tau where the source gives it; batch is the batch "
    "or concurrency of the run where stated. Left out: tree drafts (top-k > 1: SpecBundle's topk 3 and 4 runs, "
    "the EAGLE papers' tables, SGLang's batch-1 trees, the Llama 4 figures of the SpecForge blog), since a tree's "
    "tau has no chain alpha; random-token prompts (no traffic domain); the speculators runs in served_runs.json, "
    "whose alpha was forced, not measured; aimosprite's gpt-oss-120b rows (per-position rates of a tree run); "
    "InferenceX and every row without an acceptance. Identical rows of one source are kept once. Temperature is "
    "null where the source does not state it; SpecBundle's 0 is what SpecForge's benchmark scripts pass "
    "(benchmarks/benchmarker/base.py), sglang.test.send_one's 0 its default. Caveats: "
    "SpecBundle runs once per configuration and some of its speedups exceed tau (noise; single rows deserve care); "
    "its Llama 3.1 8B rows ran at batch 1, not 8; vLLM drafts greedily at any temperature (PR #16899), so its "
    "temperature-1 rows sit below what proper draft sampling gives. temperature_pairs: published tau at "
    "temperature 0 and 1 for one head and dataset, from bench/acceptance_sources.json."
)


def row(draft, head, target, dataset, k, tau, rate, temperature, engine, batch, source, file):
    """One table row; alpha from tau where given, else from the rate."""
    hf, family, moe = TARGETS[target]
    alpha = alpha_from_length(tau, k) if tau is not None else alpha_from_rate(rate, k)
    return {"draft": draft, "head": head, "target": hf, "family": family, "moe": moe, "dataset": dataset,
            "domain": DOMAINS[dataset], "k": k, "tau": tau, "rate": rate, "alpha": round(alpha, 4),
            "temperature": temperature, "engine": engine, "batch": batch, "source": source, "file": file}


def specbundle_rows(models, source, file):
    """SpecBundle: every chain (topk 1) result of every head, one row per (head, target, dataset, K)."""
    for target, datasets in models.items():
        for dataset, bench in datasets.items():
            for result in bench["results"]:
                if result["topk"] != 1:
                    continue
                for metric in result["metrics"]:
                    if metric["Name"] != "Wihtout EAGLE3":   # (sic) the baseline
                        yield row("eagle3", metric["Name"], target, dataset, result["steps"], metric["accept_length"],
                                  None, SPECBUNDLE_TEMPERATURE, "sglang", result["batch_size"], source, file)


def specbundle_more_rows(block, file):
    """acceptance_sources.json's SpecBundle targets: accept_length[target][head][dataset][K], batch 8."""
    for target, heads in block["accept_length"].items():
        for head, datasets in heads.items():
            for dataset, by_k in datasets.items():
                for k, tau in by_k.items():
                    yield row("eagle3", head, target, dataset, int(k), tau, None, SPECBUNDLE_TEMPERATURE, "sglang",
                              8, block["source"], file)


def published_rows(entries, file):
    for entry in entries:
        if entry["id"] in PUBLISHED:
            draft, head, dataset, temperature, engine, batch = PUBLISHED[entry["id"]]
            for p in entry["points"]:
                yield row(draft, head, entry["target"], dataset, p["k"], p["acceptance_length"], None, temperature,
                          engine, batch, entry["source"], file)


def moe_rows(points, file):
    """published_moe_2026.json: rows with an acceptance, chains only (topk null or 1), real datasets."""
    for p in points:
        if p["acceptance_length"] is None and p["acceptance_rate"] is None:
            continue
        dataset = p["dataset"] or "not stated"
        if (p["tree_topk"] or 1) > 1 or dataset.startswith("random"):
            continue
        draft = next(kind for prefix, kind in MOE_DRAFTS if p["draft_method"].startswith(prefix))
        k = p["k_num_spec_tokens_or_steps"] or p["num_draft_tokens"] - 1   # a chain verifies K + 1 tokens
        yield row(draft, p["draft_model"] if draft in ("eagle3", "model") else None, p["model"], dataset, k,
                  p["acceptance_length"], p["acceptance_rate"], DATASET_TEMPERATURE.get(dataset),
                  ENGINES[p["engine"]], p["batch_size"], p["source_detail"], file)


def served_rows(data, file):
    """served_runs.json: the measured acceptance of the sources in SERVED, one row per run."""
    for p in data["points"]:
        acc = p.get("acceptance")
        if p["source"] not in SERVED or not acc or "acceptance_length" not in acc:
            continue
        dataset, temperature, engine = SERVED[p["source"]]
        head = re.search(r"[\w.-]+/[\w.-]+", p["draft"]).group()
        draft = "model" if p["draft"].startswith("draft_model") else "eagle3"
        rate = acc.get("acceptance_rate_pct(vLLM draft-token acceptance rate)")
        source = p.get("source_file") or data["sources"][p["source"]]["source_file"]
        yield row(draft, head, p["model"], dataset, p["K"], acc["acceptance_length"],
                  None if rate is None else round(rate / 100, 6), temperature, engine, p["concurrency"], source, file)


def sort_key(r):
    return (r["draft"], r["family"], r["target"], r["head"] or "", r["dataset"], r["k"],
            -1 if r["batch"] is None else r["batch"], r["file"], r["source"], r["tau"] or 0.0, r["rate"] or 0.0)


def build():
    load = lambda name: json.loads((BENCH / name).read_text())   # noqa: E731
    bundle, extra = load("specbundle_h200_bs8.json"), load("acceptance_sources.json")
    rows = [*specbundle_rows(bundle["models"], bundle["source"], "bench/specbundle_h200_bs8.json"),
            *specbundle_more_rows(extra["specbundle_more"], "bench/acceptance_sources.json"),
            *published_rows(load("published.json")["entries"], "bench/published.json"),
            *moe_rows(load("published_moe_2026.json")["points"], "bench/published_moe_2026.json"),
            *served_rows(load("served_runs.json"), "bench/served_runs.json")]
    unique = {json.dumps(r, sort_keys=True): r for r in rows}          # identical rows of one source: once
    domains = {d: sorted(name for name, dom in DOMAINS.items() if dom == d)
               for d in ("chat", "code", "math", "reasoning", "other")}
    return {"about": ABOUT, "domains": domains, "rows": sorted(unique.values(), key=sort_key),
            "temperature_pairs": extra["temperature_pairs"]}


def main(argv):
    out = Path(argv[1]) if len(argv) > 1 else OUT
    out.write_text(json.dumps(build(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv)
