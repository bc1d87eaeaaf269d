"""The reference deployment and traffic: what the package's functions fall back on when a caller names none
(tests, bench/, a notebook). A run of code/main.py passes main.py's editable constants instead (flags.Settings),
which start at these values; edit those, not these.
"""
from __future__ import annotations


# The traffic and the gate.
EXPECTED_ALPHA = 0.70   # per-token alpha the plan assumes until measured: mid of the lesson's 0.6-0.8 for chat
                        # (vLLM's CI tau of 2.81 at K=3 on MT-bench at temperature 0 is a per-token 0.77:
                        # examples/offline_inference/spec_decode.py and its CI expectation)
GATE_MARGIN = 0.10      # acceptance-rate margin the gate demands above break-even
P99_BUDGET = 0.10       # largest rise of P99 TPOT over baseline the gate accepts (with benchmark files)
TRAFFIC_MIX = (("chat", 0.70, 0.70), ("code", 0.30, 0.40))   # (domain, share of generated tokens, per-token
                        # alpha[, mean output tokens: default OUTPUT_TOKENS; a request share is token share / length])
CHART_ALPHAS = (0.5, 0.7, 0.8)   # per-token alphas of the best-K chart
ALPHA_SPREAD = 0.11     # s.d. of a request's per-token alpha around the mean: per head, alpha's s.d. across
                        # SpecBundle's 7 datasets is 0.07-0.17, median 0.11 (bench/specbundle_h200_bs8.json, K=3)
OUTPUT_SPREAD = 0.8     # s.d. of ln(output tokens) over requests: an assumption, set it from your traffic
                        # (0: every request OUTPUT_TOKENS long, as `vllm bench serve --dataset-name random` makes them:
                        # its --random-range-ratio defaults to 0.0, benchmarks/benchmark_serving.py, now vllm/benchmarks)
INPUT_SPREAD = 0.8      # s.d. of ln(prompt tokens) over the plan's ShareGPT-like runs: an assumption, as OUTPUT_SPREAD
SEED = 0                # seeds every simulated request: same seed, same bytes

MODEL = "llama-3.3-70b"        # catalog name of the target model
GPU = "h100-sxm"               # catalog name of the GPU
TP = 4                         # tensor-parallel degree (GPUs per replica)
EP = 1                         # expert-parallel GPUs of a MoE target: 1 (experts split by TP) or TP (whole experts
                               # per GPU; vLLM --enable-expert-parallel, SGLang --ep-size, TensorRT-LLM --ep_size)
DP_ATTENTION = False           # with EP: attention data parallel, each GPU its own share of the sequences and a
                               # whole copy of the weights that are not routed experts (--dp-attention)
WEIGHTS_DTYPE = "fp8"          # target weights: "bf16", "fp8" or "fp4" (MXFP4, as gpt-oss ships its experts)
KV_DTYPE = "bf16"              # KV cache element type: "bf16" or "fp8"
INPUT_TOKENS = 1024            # mean prompt length of the traffic, tokens
OUTPUT_TOKENS = 1024           # mean generated length, tokens: 1k in / 1k out, a common serving-benchmark shape
CONTEXT = None                 # mean decode context, tokens; None: INPUT_TOKENS + OUTPUT_TOKENS / 2
DRAFT = "eagle3"               # "eagle3", "eagle", "mtp", "ngram", or a catalog model as a draft model ("model" with
                               # --draft-config: any draft model)
DRAFT_MODEL = None             # Hugging Face id of the draft head or model; None: the catalog's for this engine
ENGINE = "vllm"                # engine the plan is written for: "vllm", "sglang" or "trtllm" (catalog.ENGINES)
TEMPERATURE = 0.7              # sampling temperature of the plan's benchmark runs: use your traffic's own
