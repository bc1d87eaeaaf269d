"""EAGLE-3 rollout simulator: should speculative decoding be on for this deployment?

The lesson's toy decode loop, done right. For a grid of per-token acceptance alpha,
draft length K, verify overhead eps and concurrency B it prints the lesson's speedup
(1 + K*alpha)/(1 + eps) beside the exact tau/(1 + eps), the break-even alpha both
ways, the best K per batch size, and what `vllm bench serve` would measure (throughput,
P99 TPOT across requests, ITL per token and per chunk) from simulated requests whose
alphas spread around the mean, with eps from a cost model of the deployment (each pass a
sum of weight, KV, compute, communication and fixed terms) calibrated on published
measurements. It reads vLLM's /metrics and `vllm bench serve` results to measure
acceptance and gate the rollout, and writes a staged plan with charts to outputs/.

    $ python code/main.py                                  # default grid and deployment
    $ python code/main.py --model llama-3.1-8b --tp 1 --weights-dtype bf16 --ks 3 --no-write
    $ python code/main.py --metrics after.prom --metrics-before before.prom --gate
    $ python code/main.py --exercises                      # the lesson's five exercises, answered
    $ python code/main.py --engine sglang                  # the plan's commands for SGLang (or trtllm)
    $ python code/main.py --predict-bench runs/            # the `vllm bench serve` files each run should write
    $ python code/main.py --compare base.json,spec.json    # measured files, key by key against their prediction

Start here: the eight things a reader of the lesson looks for, and where they are.

    1. tau and the three meanings of alpha   acceptance_length, acceptance_rate, alpha_from_rate (acceptance
                                             mathematics; REFERENCE.md section 1)
    2. the lesson's speedup and the exact one  lesson_speedup, speedup, exact_speedup
    3. the break-even, in both units         breakeven_rate (the rate: eps / K), exact_breakeven (per-token alpha)
    4. one round: draft, verify, accept      round_distribution, decode_request (the decode loop)
    5. what a round costs: eps               round_ms, eps_decode, eps_seen (cost model)
    6. the best K at each batch size         best_k, k_schedule (analysis: best K)
    7. the P99 tail, and the two-pass model  cell_latency, itl_parts (simulation over requests); at load, with
                                             prefills stalling decodes: serve_run (a benchmark run, step by step)
    8. the gate and the rollout plan         gate, plan_choices, render_plan

Sections, in order: the grid and the deployment (constants to edit); helpers (records and
text); catalog (GPUs, models, engines, heads); acceptance mathematics; the decode loop; cost
model (a pass's terms, eps); simulation over requests (TPOT and ITL as vllm bench measures
them); simulation of a benchmark run (the server's steps, prefill beside decodes, queueing);
analysis (the grid, best K, the traffic mix, measurements with the plan and the gate,
facts and chart data, the exercises, calibrating on your runs, how far to trust a number,
predicted benchmark files); rendering (tables and exercises, engine commands, the rollout
plan, JSON, benchmark files, SVG charts); reading measurements
(/metrics, bench JSON, config.json); CLI (run_model puts the parts together, main runs
them). Results are frozen dataclasses; each engine is a row of ENGINES and of ENGINE_PLANS.

Sources: Leviathan et al. 2023, arXiv 2211.17192 (tau, speedup); MagicDec, arXiv
2408.11049 (round cost at batch); EAGLE-3, arXiv 2503.01840 (the draft head); vLLM's
speculative-decoding docs, vllm/config/speculative.py and its spec-decode metrics; SGLang's
server_args.py; TensorRT-LLM's llm_args.py and trtllm-serve.
"""
from __future__ import annotations

import argparse
import bisect
import collections
import functools
import heapq
import io
import itertools
import json
import math
import os
import random
import re
import shlex
import shutil
import stat
import statistics
import sys
import unicodedata
from collections import namedtuple
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

__all__ = [   # the main public functions and records, by section: where tests, bench/ and a notebook start
    # acceptance mathematics and the decode loop
    "acceptance_length", "acceptance_rate", "alpha_from_length", "alpha_from_rate", "profile_length",
    "lesson_speedup", "speedup", "exact_speedup", "breakeven_rate", "required_rate", "exact_breakeven",
    "round_distribution", "round_moments", "decode_request",
    # the cost model
    "Fit", "FIT", "Net", "Deployment", "Engine", "ENGINES", "make_deployment", "with_draft", "max_concurrency",
    "pass_parts", "round_ms", "decode_step_ms", "plain_step_ms", "prefill_share_ms", "spec_tpot_ms", "tpot_speedup",
    "eps_decode", "eps_seen", "eps_grown",
    # simulation and analysis
    "decoder", "cell_latency", "itl_parts", "Latency", "Workload", "serve_run", "bench_result", "predict_bench",
    "Grid", "Cell", "analyse", "best_k", "k_schedule",
    "traffic_blend", "Blend", "Mix", "plan_choices", "Plan", "gate", "Gate", "Measurement", "Measured",
    "solve_exercises", "calibrate_on_runs", "Calibration", "run_model", "Result", "Evidence", "Traffic",
    # reading measurements and the CLI
    "read_metrics", "measured_acceptance", "read_bench", "bench_comparison", "read_calibration_runs",
    "shape_from_config", "UsageError", "render_tables", "render_plan", "render_json", "compute", "main",
]

# ---------------------------------------------------------------- the grid (edit me)
ALPHAS = (0.30, 0.40, 0.50, 0.60, 0.70, 0.80)  # per-token acceptance probability a
KS = (3, 5)                                     # draft length K: tokens drafted per round
VERIFY_OVERHEADS = (0.10, "auto")               # eps at B=1, fraction of a plain step; "auto": from the cost model
CONCURRENCIES = (1, 32, 128, 256)               # decode batch size B: sequences decoding together
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
SEED = 0                # seeds every simulated request: same seed, same bytes
ROUND_JITTER = 0.03     # relative s.d. of one round's duration (launch and kernel noise), lognormal; > 0
OUT_PATH = Path(__file__).resolve().parent.parent / "outputs" / "skill-eagle3-rollout.md"
CALIBRATION_FILES = ()  # your `vllm bench serve` result files to fit the cost model on (--calibrate; stage 0/1 of the plan)

# ---------------------------------------------------------------- the deployment (edit me)
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
ENGINE = "vllm"                # engine the plan is written for: "vllm", "sglang" or "trtllm" (ENGINES below)
ENGINE_VERSION = None          # ENGINE's release, e.g. "0.13" (numbering is per engine); None: its newest era (Engine.eras)
TEMPERATURE = 0.7              # sampling temperature of the plan's benchmark runs: use your traffic's own

# ---------------------------------------------------------------- helpers: records and text
# Results are frozen dataclasses whose fields carry a unit or a meaning (#: comments); --json shows them as they
# are (clean), leaving out the fields marked NOT_IN_JSON, and OPTIONAL ones while they are None.
NOT_IN_JSON = {"json": False}   # a field for the tables and the plan only
OPTIONAL = {"optional": True}   # a field --json shows only when it holds a value


def shown_with(name):
    """Metadata of a field --json shows only when the record's field `name` holds a value (None or not itself)."""
    return {"shown_with": name}


def fields_of(record):
    """A record's fields as keywords for another record that repeats them (shallow: values are not copied)."""
    return {f.name: getattr(record, f.name) for f in fields(record)}


def eps_label(eps_b1):
    return "auto" if eps_b1 == "auto" else f"{eps_b1:.2f}"


def fmt(value, spec, missing="-"):
    """Format a number, or show a dash for a value that does not exist."""
    return missing if value is None else format(value, spec)


def pct(x):
    return f"{x * 100:+.0f}%"


def k_words(k):
    """A K for a sentence: 0 is speculation off."""
    return "0 (speculation off)" if k == 0 else str(k)


def pct1(x):
    return f"{x * 100:+.1f}%"


def wrap(text, width, indent):
    """Greedy word wrap (textwrap would do; this keeps the hanging indent explicit)."""
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = indent + word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line]


# ---------------------------------------------------------------- catalog
# GPUs, dense (no sparsity). Memory in GiB: the marketed "80 GB" of an H100 is 80 GiB =
# 85.9e9 bytes (REFERENCE.md section 3). Bandwidth TB/s, peak TFLOP/s per dtype; fp8 None
# = no fp8 tensor cores (fp8 weights then run as W8A16 at the bf16 rate). link: GB/s one
# way between two GPUs, what an all-reduce's bytes cross (NVLink 4: 450, NVLink 3: 300,
# NVLink 5: 900, PCIe Gen5 x16: 64, Gen4 x16: 32, MI300X's seven Infinity Fabric links: 448; the
# vendors' figures, halved where they quote both directions; aiconfigurator's
# h100_sxm.yaml uses 450e9 intra-node).
GPUS = {
    "a100-sxm-80gb": dict(memory_gib=80,  bandwidth_tbs=2.039, bf16=312,  fp8=None, family="ampere",    link=300),  # NVIDIA datasheet, via ai-dynamo/aiconfigurator a100_sxm.yaml
    "h100-sxm":      dict(memory_gib=80,  bandwidth_tbs=3.35,  bf16=989,  fp8=1979, family="hopper",    link=450),  # aiconfigurator h100_sxm.yaml
    "h100-pcie":     dict(memory_gib=80,  bandwidth_tbs=2.0,   bf16=756,  fp8=1513, family="hopper",    link=64),   # aiconfigurator h100_pcie.yaml
    "h200":          dict(memory_gib=141, bandwidth_tbs=4.8,   bf16=989,  fp8=1979, family="hopper",    link=450,
                          bw_rel=0.916),  # aiconfigurator h200_sxm.yaml; bw_rel below
    "b200":          dict(memory_gib=180, bandwidth_tbs=8.0,   bf16=2250, fp8=4500, fp4=9000, family="blackwell", link=900,
                          bw_rel=0.807),  # aiconfigurator b200_sxm.yaml (sources give 7.7-8 TB/s); bw_rel below
    "l40s":          dict(memory_gib=48,  bandwidth_tbs=0.864, bf16=362,  fp8=733,  family="ada",       link=32),   # NVIDIA L40S datasheet
    "rtx-4090":      dict(memory_gib=24,  bandwidth_tbs=1.008, bf16=165,  fp8=330,  family="ada",       link=32),   # spec table, fp32 accumulate
    "mi300x":        dict(memory_gib=192, bandwidth_tbs=5.3,   bf16=1307, fp8=2615, family="cdna",      link=448),  # AMD specs; 8 GPUs fully connected by 7 Infinity Fabric links of 64 GB/s each way
    # The GPUs of the 2026 published runs (shared/calibration/published_moe_2026.json). None has a measured point
    # here: each reads at its family's fitted share (GH200 and H20: the H100's; B300: the B200's bw_rel, the same
    # eight HBM3e stacks; MI325X and MI355X: the MI300X's, fitted on 2024's ROCm, CDNA 4 included).
    "gh200":         dict(memory_gib=96,  bandwidth_tbs=4.0,   bf16=989,  fp8=1979, family="hopper",    link=450),  # NVIDIA GH200 datasheet (HBM3); NVLink between GPUs in NVL2/NVL32 builds only
    "gh200-144gb":   dict(memory_gib=144, bandwidth_tbs=4.9,   bf16=989,  fp8=1979, family="hopper",    link=450),  # the same datasheet, HBM3e
    "h20":           dict(memory_gib=96,  bandwidth_tbs=4.0,   bf16=148,  fp8=296,  family="hopper",    link=450),  # aiconfigurator h20_sxm.yaml (commit e9fbc0a5)
    "b300":          dict(memory_gib=288, bandwidth_tbs=7.75,  bf16=2250, fp8=4500, fp4=13500, family="blackwell", link=900,
                          bw_rel=0.807),  # aiconfigurator b300_sxm.yaml (Blackwell Ultra datasheet); fp4: DGX B300's 108 PF dense over 8 (the YAML: 14,000)
    "mi325x":        dict(memory_gib=256, bandwidth_tbs=6.0,   bf16=1307, fp8=2615, family="cdna",      link=448),  # AMD Instinct MI325X product page
    "mi355x":        dict(memory_gib=288, bandwidth_tbs=8.0,   bf16=2500, fp8=5000, fp4=10100, family="cdna", link=537.6),  # AMD Instinct MI355X product page; 7 Infinity Fabric links of 76.8 GB/s each way
}
# bw_rel: the GPU's achieved share of its datasheet bandwidth over the share of the GPU its family's constant is fitted
# on (H100 for Hopper and for Blackwell, which has no fitted point): measured decode GEMMs, bf16, m = 1-8, of Llama 3
# 8B and 70B layers, from aiconfigurator's vLLM 0.24 kernel database (`python bench/aiconfigurator_compare.py`:
# H100 0.775 of 3.35 TB/s, H200 0.710 of 4.8, B200 0.625 of 8). A larger HBM stack is not read proportionally
# faster by the same kernels. 1 where not given. (The A100's, 0.860 of the H100's, agrees within 4% with the
# published fit's own bw_ampere over bw_hopper, fitted on other data: a check of the method.) The MI300X has its
# own fitted share (Fit.bw_cdna); aiconfigurator does not measure it, and one roofline tool run on it and on an
# H200 (RRZE-HPC/gpu-benches gpu-roofline/mi300x.txt, 4073 GB/s of 5.3 TB/s; h200.txt, 3780 of 4.8) puts its
# stream share at 0.976 of the H200's, a check on the fitted one.
GPU_FAMILY = {name: spec["family"] for name, spec in GPUS.items()}

# Target models: the shapes in each HF config.json (REFERENCE.md sections 4 and 7; the MoE
# rows from the stored copies in ai-dynamo/aiconfigurator model_configs and its forks).
# Keys: hidden, layers, heads, kv_heads, head_dim, vocab, tied (embeddings shared with the
# lm_head), inter (a dense layer's MLP width). Mixture of experts: experts routed per
# layer, experts_per_token (k), moe_inter (one expert's MLP width), shared_inter (the
# shared experts' width, 0 if none), moe_layers (how many layers route; the rest are
# dense). mla: DeepSeek's latent attention (kv_lora_rank, rope, q_lora_rank, nope,
# v_head_dim). window, window_layers: sliding-window attention on that many layers.
# attn_bias, sinks, expert_bias, router_bias: gpt-oss's biases and attention sinks.
# nextn: MTP modules (num_nextn_predict_layers). checkpoint: the dtype the published checkpoint ships its weights
# in, when not bf16 (gpt-oss: MXFP4 experts, its model cards; DeepSeek-V3 and Kimi-K2: block fp8, their READMEs).
# head_inter, head_heads, head_kv_heads:
# the EAGLE-3 head's MLP width and attention shape where its published config differs from
# the target (SpecForge configs/*-eagle3.json); else the target's (head_shape).
MODELS = {
    "llama-3.2-1b":   dict(hidden=2048,  inter=8192,  layers=16,  heads=32,  kv_heads=8, head_dim=64,  vocab=128256, tied=True,  hf="meta-llama/Llama-3.2-1B-Instruct"),   # 1.236 B
    "llama-2-70b":    dict(hidden=8192,  inter=28672, layers=80,  heads=64,  kv_heads=8, head_dim=128, vocab=32000,  tied=False, hf="meta-llama/Llama-2-70b-chat-hf"),    # 68.98 B; the calibration's TensorRT-LLM 0.9 runs
    "llama-3.1-8b":   dict(hidden=4096,  inter=14336, layers=32,  heads=32,  kv_heads=8, head_dim=128, vocab=128256, tied=False, hf="meta-llama/Llama-3.1-8B-Instruct"),   # 8.030 B
    "llama-3.3-70b":  dict(hidden=8192,  inter=28672, layers=80,  heads=64,  kv_heads=8, head_dim=128, vocab=128256, tied=False, hf="meta-llama/Llama-3.3-70B-Instruct"),  # 70.554 B
    "llama-3.1-405b": dict(hidden=16384, inter=53248, layers=126, heads=128, kv_heads=8, head_dim=128, vocab=128256, tied=False, hf="meta-llama/Llama-3.1-405B-Instruct"), # 405.853 B
    "qwen3-32b":      dict(hidden=5120,  inter=25600, layers=64,  heads=64,  kv_heads=8, head_dim=128, vocab=151936, tied=False, hf="Qwen/Qwen3-32B"),                     # 32.76 B; heads*head_dim != hidden
    # Mixture of experts. Qwen3 (qwen3_moe): every layer routes (decoder_sparse_step 1, no mlp_only_layers).
    "qwen3-30b-a3b":   dict(hidden=2048, inter=6144, layers=48, heads=32, kv_heads=4, head_dim=128, vocab=151936, tied=False,
                            experts=128, experts_per_token=8, moe_inter=768, moe_layers=48, head_inter=12288,
                            hf="Qwen/Qwen3-30B-A3B"),                     # 30.53 B, 3.35 B active
    "qwen3-235b-a22b": dict(hidden=4096, inter=12288, layers=94, heads=64, kv_heads=4, head_dim=128, vocab=151936, tied=False,
                            experts=128, experts_per_token=8, moe_inter=1536, moe_layers=94, head_inter=24576,
                            hf="Qwen/Qwen3-235B-A22B-Instruct-2507"),     # 235.1 B, 22.2 B active
    "qwen3-coder-480b": dict(hidden=6144, inter=8192, layers=62, heads=96, kv_heads=8, head_dim=128, vocab=151936, tied=False,
                             experts=160, experts_per_token=8, moe_inter=2560, moe_layers=62,
                             hf="Qwen/Qwen3-Coder-480B-A35B-Instruct"),   # 480.2 B, 35.5 B active
    # gpt-oss: every layer routes (the expert is intermediate_size wide); layers alternate
    # 128-token sliding windows and full attention; biases and sinks; MXFP4 experts.
    "gpt-oss-20b":  dict(hidden=2880, inter=2880, layers=24, heads=64, kv_heads=8, head_dim=64, vocab=201088, tied=False,
                         experts=32, experts_per_token=4, moe_inter=2880, moe_layers=24, window=128, window_layers=12,
                         attn_bias=True, sinks=True, expert_bias=True, router_bias=True, head_inter=17280,
                         checkpoint="fp4", hf="openai/gpt-oss-20b"),                        # 20.9 B, 3.6 B active
    "gpt-oss-120b": dict(hidden=2880, inter=2880, layers=36, heads=64, kv_heads=8, head_dim=64, vocab=201088, tied=False,
                         experts=128, experts_per_token=4, moe_inter=2880, moe_layers=36, window=128, window_layers=18,
                         attn_bias=True, sinks=True, expert_bias=True, router_bias=True, head_inter=16384,
                         checkpoint="fp4", hf="openai/gpt-oss-120b"),                       # 116.8 B, 5.1 B active
    # Llama 4 (llama4_text): a shared expert beside one routed expert per token; Maverick
    # routes every second layer (interleave_moe_layer_step 2), its dense layers 16,384 wide.
    "llama-4-scout":    dict(hidden=5120, inter=16384, layers=48, heads=40, kv_heads=8, head_dim=128, vocab=202048, tied=False,
                             experts=16, experts_per_token=1, moe_inter=8192, shared_inter=8192, moe_layers=48,
                             head_inter=32768, hf="meta-llama/Llama-4-Scout-17B-16E-Instruct"),      # 107.8 B text (108.6 B with vision), 17.2 B active
    "llama-4-maverick": dict(hidden=5120, inter=16384, layers=48, heads=40, kv_heads=8, head_dim=128, vocab=202048, tied=False,
                             experts=128, experts_per_token=1, moe_inter=8192, shared_inter=8192, moe_layers=24,
                             hf="meta-llama/Llama-4-Maverick-17B-128E-Instruct"),                    # 401.6 B, 17.2 B active
    # DeepSeek-V3 (deepseek_v3): MLA; the first 3 layers dense (first_k_dense_replace 3:
    # REFERENCE.md section 7; a trimmed stored copy says 1), one shared expert, an MTP module.
    "deepseek-v3": dict(hidden=7168, inter=18432, layers=61, heads=128, kv_heads=128, head_dim=192, vocab=129280, tied=False,
                        experts=256, experts_per_token=8, moe_inter=2048, shared_inter=2048, moe_layers=58,
                        mla=dict(kv_lora_rank=512, rope=64, q_lora_rank=1536, nope=128, v_head_dim=128), nextn=1,
                        head_inter=40960, head_heads=56, head_kv_heads=8, head_head_dim=128, checkpoint="fp8",
                        routing="deepseek", hf="deepseek-ai/DeepSeek-V3"),                    # 671.0 B + 11.6 B MTP, 37.6 B active
    "kimi-k2": dict(hidden=7168, inter=18432, layers=61, heads=64, kv_heads=64, head_dim=192, vocab=163840, tied=False,
                    experts=384, experts_per_token=8, moe_inter=2048, shared_inter=2048, moe_layers=60,
                    mla=dict(kv_lora_rank=512, rope=64, q_lora_rank=1536, nope=128, v_head_dim=128),
                    head_inter=18432, head_head_dim=128, checkpoint="fp8", routing="deepseek",
                    hf="moonshotai/Kimi-K2-Instruct"),   # 1,026 B, 32.9 B active
}

GIB = 2 ** 30

# Drafts that are not a catalog model (a catalog model name means a classic draft model):
# eagle3, an EAGLE-3 head (one decoder layer on fused low/mid/high target features, its own
# 32k-vocabulary lm_head); eagle, an EAGLE-1/2 head (one decoder layer on the last target
# feature, reading the target's lm_head every step); ngram, prompt lookup (no model: proposals
# are n-gram matches in the context); mtp, the target's own next-token-prediction module
# (DeepSeek-V3: one decoder layer, reused each step).
EAGLE_DRAFTS = ("eagle3", "eagle")   # heads that read the target's hidden states
DRAFTS = EAGLE_DRAFTS + ("ngram", "mtp", "model")   # model: a draft model read from --draft-config


@dataclass(frozen=True)
class RoundSaving:
    """A published before/after measurement of one engine change at batch 1: what it took off a round, in ms.
    Both sides decode the same requests with the same head, so the acceptance is the same and the saving is the
    round time's difference: per generated token (TPOT) times the tokens a round makes (tau), or a round's time
    from tokens per second and tau."""
    change: str              #: what changed, as the plan says it
    source: str              #: where it was measured (PR or issue), and on what
    before_ms: float         #: TPOT before (or ms per token from tokens/s: 1000 / tokens per s)
    after_ms: float          #: likewise after
    tau_before: float        #: tokens a round makes, before
    tau_after: float         #: likewise after (the same where the source gives one)
    drafts: tuple            #: the draft kinds (draft_kind) the change runs for
    chains_only: bool        #: it runs for chains only (topk 1), not trees

    def runs_for(self, draft, topk=1):
        """Whether the change runs for rounds of this draft kind (draft_kind) and tree width."""
        return draft in self.drafts and (topk == 1 or not self.chains_only)

    @property
    def saved_ms(self):
        """Round time before minus after: ms per token times tokens per round, on each side."""
        return self.before_ms * self.tau_before - self.after_ms * self.tau_after


@dataclass(frozen=True)
class Era:
    """A span of an engine's releases in which its speculative round costs the same (Engine.eras): the published fit's
    constants were measured in one era per engine (fitted); a later era runs the same round with host work the
    published changes (savings) take off it. The plain pass keeps the fitted cost in every era: no source in
    reach measures a plain step's host time before and after these changes."""
    key: str                 #: a short name, as --json gives it
    first: tuple             #: the era's first release, (major, minor[, patch])
    what: str                #: what runs a round in this era, as the plan says it
    fitted: bool             #: the published fit's speculative points were measured in this era
    savings: tuple = ()      #: RoundSaving rows since the fitted era
    before: str = ""         #: on an engine's first era: why releases before it are refused

    def saving_ms(self, draft, topk=1):
        """Host time a round of this draft kind (draft_kind) no longer waits for against the fitted era, ms: each
        saving that runs for it, added."""
        return sum(s.saved_ms for s in self.savings if s.runs_for(draft, topk))


# vLLM. The fitted constants are issue #20780's K sweep (2025-07, V1 engine, synchronous rounds). Async
# scheduling with EAGLE/MTP became the default in v0.14.0 (PR #31998, merged 2026-01-08; release notes
# "Now also works with speculative decoding"); it overlaps the CPU's preparation of the next round with the GPU's
# work on this one. Measured by PR #25872 (Llama 3.1 8B, yuhuili EAGLE-3 head, K = 4, MT-bench, concurrency 1, L20):
# TPOT 9.91 -> 9.57 ms; its tau is not printed, so issue #20780's K = 4 tau for the same head on MT-bench (3.08,
# bench/published.json) is used. Left out, with reasons: v0.19's zero-bubble async (PR #32951: DeepSeek-V3.2 MTP
# TPOT 9.19 -> 8.90 ms) against issue #39940 (Llama 3.1 8B EAGLE-3 at TP 4: v0.19's speculative TPOT slower than
# v0.18's, plain the same): the two disagree in sign; Model Runner V2 (default for Llama dense in v0.23, PR #43458;
# its blog's -6.3% TPOT with GLM-4.7 MTP gives no ms). Before V1 (v0.8, the V0 engine) no source here times a round.
VLLM_ASYNC_ROUNDS = RoundSaving(
    change="async scheduling overlaps a round's CPU preparation with the GPU, the default with EAGLE/MTP since "
           "PR #31998",
    source="measured by PR #25872: Llama 3.1 8B, EAGLE-3 K = 4, MT-bench, concurrency 1, TPOT 9.91 -> 9.57 ms",
    before_ms=9.91, after_ms=9.57, tau_before=3.08, tau_after=3.08,
    drafts=("eagle3", "eagle", "mtp"), chains_only=False)   # #31998: off for other methods (n-gram, draft models)
# SGLang. The fitted constants are the EAGLE-3 paper's batch sweep (SGLang v0.4.4) and PR #4247: rounds without the
# overlap scheduler (EAGLE disabled it before spec v2). Spec v2 overlaps draft and verify with the next round's
# scheduling: beta in PR #11398 (2025-10-09), the default from PR #21062 (merged 2026-04-29, first in v0.5.11).
# Measured by PR #11398 (Llama 3.1 8B, EAGLE head, 5 steps, topk 1, batch 1): 246.80 tokens/s at acceptance 2.99
# before, 273.43 at 3.01 after.
SGLANG_SPEC_V2 = RoundSaving(
    change="spec v2 overlaps draft and verify with the next round's scheduling, the default since PR #21062",
    source="measured by PR #11398: Llama 3.1 8B, EAGLE head, 5 steps, batch 1, 246.80 -> 273.43 tokens/s at tau 2.99 -> 3.01",
    before_ms=1000 / 246.80, after_ms=1000 / 273.43, tau_before=2.99, tau_after=3.01,
    drafts=("eagle3", "eagle", "mtp"), chains_only=True)   # the EAGLE worker's; PR #12113: topk 1 only
ERA_VERSION = re.compile(r"v?(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})(?:\.(0|[1-9]\d{0,3}))?"
                         r"([.+-]?[A-Za-z][A-Za-z0-9.+-]{0,39})?", re.ASCII)
# 0.5.10.post1 and v0.14.0rc1 are their release; a .dev build (0.14.0.dev3, 0.11.1.dev0+g1234) comes before it


# A fused-MoE layer's own latency on one GPU, beyond reading the experts its tokens touch and their math:
# routing, sorting tokens by expert, the kernels inside the CUDA graph, small tiles. The median, over
# published kernel sweeps at up to 64 tokens, of measured minus this model's read and math, per engine's
# kernel (`python bench/moe_kernels.py`; its data, bench/moe_kernels.json, cites each sweep): vLLM's Triton
# fused_moe on H100 (PR #24700: Qwen3-30B-A3B fp8, Mixtral bf16 TP 2), SGLang's Triton kernel on H200 and
# B200 (PR #11730: Qwen3-235B fp8 TP 8; PR #11816: DeepSeek-R1 fp8 TP 8), TensorRT-LLM's TRTLLM-Gen on
# B200 (tech blog 24: DeepSeek-V3 NVFP4 TP 8, router GEMM included). The read's slope matches the sweeps
# to within a few us a point up to 64 tokens; past that, groups of many tokens per expert run below peak.
MOE_KERNEL_US = {"vllm": 30.9, "sglang": 36.1, "trtllm": 22.1}
# Prompt tokens one scheduler step prefills at most, by default, by a GPU's memory: (least GiB, tokens), largest
# first. vLLM (`vllm serve`, chunked prefill on): max_num_batched_tokens 2048 below 70 GiB and on any A100, 8192
# from 70 GiB, 16384 from 160 GiB since v0.28 (vllm/engine/arg_utils.py; PRs #17073, #17885, #51726). SGLang:
# chunked_prefill_size 2048 below 35 GiB, 4096 below 60, 8192 below 160, 16384 from 160
# (python/sglang/srt/server_args.py, _handle_gpu_memory_settings). TensorRT-LLM: max_num_tokens 8192 on any GPU
# (tensorrt_llm/llmapi/llm_args.py); its chunked prefill is off by default, so a longer prompt is refused unless
# enable_chunked_prefill is set.
PREFILL_BUDGET = {"vllm": ((160, 16384), (70, 8192), (0, 2048)),
                  "sglang": ((160, 16384), (60, 8192), (35, 4096), (0, 2048)),
                  "trtllm": ((0, 8192),)}
PREFILL_BUDGET_SMALL = {"vllm": ("a100-sxm-80gb",)}   # GPUs an engine keeps at its smallest budget


@dataclass(frozen=True)
class Engine:
    """A serving engine as the plan and the model know it: one row per engine in ENGINES, each fact
    checked against the engine's own source, cited in the row. The commands themselves are built by the
    functions of ENGINE_PLANS (rendering). Adding an engine is a row here, a row there and their tests, plus
    what the model needs to know of it: its public heads in EAGLE3_HEADS, and either its own fixed costs in
    Fit (pass_fixed_ms_<key>, draft_fixed_ms_<key>, round_fixed_ms_<key>, fitted in bench/calibrate.py) or an
    engine's to borrow (pass_cost_of, draft_costs_of)."""
    key: str                 #: the --engine value
    name: str                #: as sentences print it
    port: int                #: where its server listens by default
    memory_fraction: float   #: share of GPU memory for weights and KV cache the plan sets (fraction)
    memory_of_free: bool     #: True: memory_fraction is a share of the memory the weights leave, else of all memory
    memory_flag: str         #: the flag that sets memory_fraction
    memory_note: str         #: what the plan says after the flag and its value
    drafts: tuple            #: the draft kinds (draft_kind) its plan covers
    drafts_why: str          #: why those
    trees: tuple             #: the draft kinds it drafts trees of (--draft-topk > 1)
    trees_why: str           #: why those
    nvidia_only: bool        #: runs on NVIDIA GPUs only
    quantizes_at_start: bool  #: quantizes a bf16 checkpoint to fp8 at start-up (--quantization fp8)
    pass_cost_of: str        #: the engine whose fitted fixed cost of a pass it uses (Fit's pass_fixed_ms_<engine>)
    draft_costs_of: str      #: the engine whose fitted draft-step and round costs it uses (its own, or a borrowed one)
    seq_cost: str            #: the Fit field of a served step's host cost per running sequence ("" where none is measured)
    moe_layer_us: float      #: its fused-MoE kernel's own latency per MoE layer and pass, us (MOE_KERNEL_US)
    prefill_budget: tuple    #: prompt tokens a scheduler step prefills at most by default: ((least GiB, tokens), ...)
    prefill_budget_small: tuple   #: GPUs it keeps at its smallest defaults whatever their memory (budget, running cap)
    prefill_budget_per_dp: bool   #: under attention data parallelism each rank's budget is the budget over the DP size
    running_limit: tuple     #: sequences it runs at once by default: ((least GiB, sequences), ...), like prefill_budget
    plan_sets_running: bool  #: the plan's server command sets that cap to the batch it benchmarks (serve_lines)
    mixes_prefill: bool      #: a step carries prompt chunks beside the decodes (else a prefill batch runs alone first)
    reserves_whole_request: bool   #: admits a request only with KV for its prompt and whole answer held for it
    bench_tool: str          #: the closed-loop benchmark the plan runs against it
    bench_random_text: bool  #: its benchmark's random dataset cuts real text, so it needs --dataset-path
    bench_records_acceptance: bool   #: a speculative benchmark run records its K and acceptance (spec_decode_*)
    metrics_path: str        #: where its Prometheus text is served
    acceptance_gauges: bool  #: acceptance is read from gauges over recent steps (one scrape), not from counters
    counts_drafts: bool      #: its metrics count drafts (rounds), so a scrape gives K; else --ks completes it
    per_position_why: str    #: why this tool reads no per-position acceptance from it ("" when it does)
    per_request_acceptance: bool   #: responses can carry each request's acceptance (the tail's slow requests)
    opt_in: str              #: what turns speculation on, as the plan says it
    off_past: str            #: how the plan switches speculation off past a batch size
    tree_tokens: object      #: (topk, steps) -> (least, most) tokens a tree's verify pass carries; None: no trees
    tree_limit_why: str      #: the rule tree_tokens follows
    tree_needs_plain_attention: bool  #: its trees do not run MLA or sliding-window attention
    eras: tuple              #: its release eras, oldest first (Era): the published fit's is the one fitted


ENGINES = {
    # vLLM: gpu_memory_utilization, a share of all memory, default 0.92 in vllm/config/cache.py (0.9 before about
    # v0.25); vllm/engine/arg_utils.py for the flags; vllm/v1/spec_decode/metrics.py for the counters.
    "vllm": Engine(
        key="vllm", name="vLLM", port=8000, memory_fraction=0.92, memory_of_free=False,
        memory_flag="--gpu-memory-utilization", memory_note=", vLLM's default",
        drafts=("eagle3", "eagle", "mtp", "ngram", "model"), drafts_why="every kind of draft",
        trees=(), trees_why="vLLM removed tree attention, PR #42121",
        nvidia_only=False, quantizes_at_start=True, pass_cost_of="vllm", draft_costs_of="vllm", seq_cost="", moe_layer_us=MOE_KERNEL_US["vllm"],
        prefill_budget=PREFILL_BUDGET["vllm"], prefill_budget_small=PREFILL_BUDGET_SMALL["vllm"],
        prefill_budget_per_dp=False,
        # max_num_seqs 1024 from 70 GiB (not on an A100), else 256 (vllm/engine/arg_utils.py, _set_default_args); the
        # V1 scheduler runs the running requests first, each with its draft tokens, then prefills waiting ones from
        # the same max_num_batched_tokens (vllm/v1/core/sched/scheduler.py, schedule).
        running_limit=((70, 1024), (0, 256)), plan_sets_running=False, mixes_prefill=True,
        reserves_whole_request=False,   # KV blocks as the sequence grows, preempting when they run out
        bench_tool="vllm bench serve", bench_random_text=False, bench_records_acceptance=True,
        metrics_path="/metrics", acceptance_gauges=False, counts_drafts=True, per_position_why="",
        per_request_acceptance=True,   # --per-request-spec-decode-metrics, PR #48915
        opt_in="nothing changes without `--speculative-config`",
        off_past="switch speculation off past it with a final `[start, end, 0]` row of "
                 "`num_speculative_tokens_per_batch_size`",
        tree_tokens=None, tree_limit_why="", tree_needs_plain_attention=False,
        eras=(Era(key="v1-sync", first=(0, 8), fitted=True,
                  before="they ran the V0 engine, whose speculative rounds no published measurement here times",
                  what="the V1 engine, rounds scheduled synchronously (the published fit's K sweep, issue #20780)"),
              Era(key="v1-async", first=(0, 14), fitted=False, savings=(VLLM_ASYNC_ROUNDS,),
                  what="the V1 engine with async scheduling on for EAGLE/MTP (Model Runner V2's own gains: no "
                       "round timing in reach)"))),
    # SGLang: --mem-fraction-static, a share of all memory for weights and the KV pool, computed at start-up when
    # omitted, so the plan passes it and the model uses the same (our choice: 0.85 leaves ~12 GiB of an 80 GiB GPU
    # for activations and CUDA graphs); python/sglang/srt/server_args.py; metrics/collector.py for the gauges.
    "sglang": Engine(
        key="sglang", name="SGLang", port=30000, memory_fraction=0.85, memory_of_free=False,
        memory_flag="--mem-fraction-static", memory_note="",
        drafts=("eagle3", "eagle", "mtp", "ngram", "model"), drafts_why="every kind of draft",
        trees=("eagle3", "eagle", "mtp"), trees_why="its EAGLE worker drafts trees of EAGLE heads and MTP",
        nvidia_only=False, quantizes_at_start=True, pass_cost_of="sglang", draft_costs_of="sglang", seq_cost="", moe_layer_us=MOE_KERNEL_US["sglang"],
        prefill_budget=PREFILL_BUDGET["sglang"], prefill_budget_small=(),
        prefill_budget_per_dp=True,   # server_args.py _handle_data_parallelism: chunked_prefill_size //= dp_size
        # max_running_requests: the plan sets it (speculation resets an unset one to 48,
        # arg_groups/speculative_hook.py); unset, at most the request pool's 4,096
        # (model_runner_kv_cache_mixin.py). The scheduler runs a waiting prefill batch before decoding ("Run
        # prefill first if possible", managers/scheduler.py get_next_batch_to_run); --enable-mixed-chunk is off
        # by default, and speculation forces it off.
        running_limit=((0, 4096),), plan_sets_running=True, mixes_prefill=False, reserves_whole_request=False,
        bench_tool="vllm bench serve", bench_random_text=False, bench_records_acceptance=False,
        metrics_path="/metrics", acceptance_gauges=True, counts_drafts=False,
        per_position_why="this engine exports no per-position rates", per_request_acceptance=False,
        opt_in="nothing changes without `--speculative-algorithm`",
        off_past="route the batch sizes past it to a replica without speculation",
        # python/sglang/srt/speculative/eagle_utils.py, organize_draft_results: the root and the
        # num_draft_tokens - 1 best of the topk first-step and topk^2 later-step candidates
        tree_tokens=lambda topk, steps: (2, 1 + topk + (steps - 1) * topk ** 2),
        tree_limit_why="the root and the best of its topk + (steps - 1) x topk^2 candidates",
        tree_needs_plain_attention=False,
        eras=(Era(key="spec-v1", first=(0, 4), fitted=True,
                  before="no published measurement here times their rounds",
                  what="EAGLE worker v1, no overlap scheduler (the published fit's batch sweep, SGLang v0.4.4)"),
              Era(key="spec-v2", first=(0, 5, 11), fitted=False, savings=(SGLANG_SPEC_V2,),
                  what="spec v2, draft and verify overlapped with scheduling"))),
    # TensorRT-LLM: kv_cache_config free_gpu_memory_fraction, a share of the memory left free after loading the
    # weights, default 0.9 (tensorrt_llm/llmapi/llm_args.py KvCacheConfig); tensorrt_llm/commands/serve.py for the
    # flags; tensorrt_llm/metrics/collector.py for the counters. No speculative point to fit: a draft step and a
    # round's bookkeeping take vLLM's fitted costs. llm_args.py: the PyTorch backend converts an Eagle config to
    # Eagle3 (EAGLE-1 heads do not fit it), and its draft-model config is "Draft_Target" in the code but
    # "DraftTarget" in the docs: unchecked, so left out.
    "trtllm": Engine(
        key="trtllm", name="TensorRT-LLM", port=8000, memory_fraction=0.90, memory_of_free=True,
        memory_flag="--kv_cache_free_gpu_memory_fraction", memory_note=" of the memory the weights leave",
        drafts=("eagle3", "mtp", "ngram"),
        drafts_why="its PyTorch backend runs EAGLE-3 heads, MTP and n-gram; EAGLE-1 heads and draft models are not "
                   "covered here",
        trees=("eagle3",), trees_why="Eagle3DecodingConfig's use_dynamic_tree is for EAGLE-3 heads",
        nvidia_only=True, quantizes_at_start=False,   # docs/source/features/quantization.md
        pass_cost_of="trtllm", draft_costs_of="vllm", seq_cost="seq_us_trtllm", moe_layer_us=MOE_KERNEL_US["trtllm"],
        prefill_budget=PREFILL_BUDGET["trtllm"], prefill_budget_small=(),
        prefill_budget_per_dp=False,
        # max_batch_size 2048 by default, which the plan sets; in-flight batching schedules generation requests
        # first and context requests in the same iteration, draft tokens counted in max_num_tokens
        # (tensorrt_llm/_torch/pyexecutor/scheduler/scheduler.py; docs/source/torch/scheduler.md). Its default
        # capacity policy, GUARANTEED_NO_EVICT, starts a request only when the KV cache holds its prompt and its
        # whole answer (docs/source/performance/performance-tuning-guide/useful-runtime-flags.md; SchedulerConfig).
        running_limit=((0, 2048),), plan_sets_running=True, mixes_prefill=True, reserves_whole_request=True,
        bench_tool="python -m tensorrt_llm.serve.scripts.benchmark_serving", bench_random_text=True,
        bench_records_acceptance=False, metrics_path="/prometheus/metrics", acceptance_gauges=False,
        counts_drafts=False,
        per_position_why="its per-position counters are per request, which this tool does not read",
        per_request_acceptance=False,
        opt_in="nothing changes without a `speculative_config` in the YAML",
        off_past="switch speculation off past it with `max_concurrency` in `speculative_config`",
        tree_tokens=lambda topk, steps: (steps + 1, topk * steps + 1),
        tree_limit_why="max_total_draft_tokens from max_draft_len to dynamic_tree_max_topK x max_draft_len, "
                       "llm_args.py",
        tree_needs_plain_attention=True,   # its speculative-decoding docs
        # One era: its plain steps are fitted on the C++ runtime (0.9) and NIM; its rounds borrow vLLM's fitted
        # costs (no speculative point of its own), so no before/after measurement would have a round to change.
        eras=(Era(key="pytorch", first=(1, 0), fitted=True,
                  # PyTorch became trtllm-serve's default backend after the 0.21 branch (PRs #5717, #5312): 1.0
                  before="the plan's trtllm-serve commands run the PyTorch backend, the default from 1.0 (before it, "
                         "a built TensorRT engine)",
                  what="the PyTorch backend, whose commands the plan gives; its pass costs were fitted on the C++ "
                       "runtime (TensorRT-LLM 0.9 and NIM) and its rounds take vLLM's (no TensorRT-LLM round is "
                       "measured here)"),)),
}


def newest_era(engine):
    """The current era of the engine (an ENGINES key): what --engine-version defaults to."""
    return ENGINES[engine].eras[-1]


def fitted_era(engine):
    """The era the published fit's points for this engine were measured in (bench/calibrate.py builds them there)."""
    return next(e for e in ENGINES[engine].eras if e.fitted)


def era_of(engine, version):
    """The era of a release "X.Y" or "X.Y.Z" (a suffix such as rc1 or .post1 ignored); None before the first era."""
    match = ERA_VERSION.fullmatch(version)
    if not match:
        raise ValueError(version)
    *numbers, suffix = match.groups()
    release = tuple(int(x or 0) for x in numbers)   # (major, minor, patch): 0.14 is 0.14.0
    before = suffix is not None and "dev" in suffix.lower()
    def starts(era):
        return (era.first + (0,))[:3]   # (0, 14) is 0.14.0
    eras = [e for e in ENGINES[engine].eras if (starts(e) < release if before else starts(e) <= release)]
    return eras[-1] if eras else None


def release_text(release):
    """A release tuple as engines write it: (0, 5, 11) -> "0.5.11"."""
    return ".".join(map(str, release))


def era_releases(engine, era):
    """The era's releases as the plan names them: "0.14 or later", "0.8 until 0.14"."""
    later = [e for e in engine.eras if e.first > era.first]
    first = release_text(era.first)
    return f"{first} until {release_text(later[0].first)}" if later else f"{first} or later"


EAGLE3_DRAFT_VOCAB = 32_000   # EAGLE-3's reduced draft vocabulary (SafeAILab/EAGLE eagle/model/cnets.py)
DRAFT_WEIGHT_BYTES = 2        # draft heads and draft models are served in bf16

# Public EAGLE-3 heads, one per engine and target: (Hugging Face id, context it was trained
# at in tokens, or None where no checked source gives it). A head drafts worse past its
# trained context: SGLang issue #6783 (a 2k-trained Llama 3.3 70B head slower than plain
# decoding past 2k tokens), speculators PR #684 (an EAGLE-3 head for Qwen3-8B: acceptance
# length 2.30 at 2k, 1.69 at 8k). vLLM builds without PR #49343 crash on prompts past the
# head's max_position_embeddings (issue #48894, the 2048-token yuhuili 8B head).
EAGLE3_HEADS = {
    # vLLM's docs (docs/features/speculative_decoding/eagle.md) use the RedHatAI speculators,
    # made for vLLM; their training context is not in a source we could check.
    ("vllm", "llama-3.1-8b"):    ("RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3", None),
    ("vllm", "llama-3.3-70b"):   ("RedHatAI/Llama-3.3-70B-Instruct-speculator.eagle3", None),
    # SGLang's docs example (docs/advanced_features/speculative_decoding.md): a copy of
    # yuhuili's 8B head, max_position_embeddings 2048 (vLLM PR #49343's test). The 70B head
    # is SpecForge's; its card gives no training length (SpecForge's example configs use 2048
    # in older and 4096 in newer scripts).
    ("sglang", "llama-3.1-8b"):  ("jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-8B", 2048),
    ("sglang", "llama-3.3-70b"): ("lmsys/SGLang-EAGLE3-Llama-3.3-70B-Instruct-SpecForge", None),
    # TensorRT-LLM's docs (docs/source/features/speculative-decoding.md) point to the EAGLE-3
    # authors' heads; its 70B accuracy test pairs the FP8 target with this one. 8B: 2048 in
    # its config (vLLM PR #49343's test). 70B: 2048 in its SGLang copy
    # lmsys/sglang-EAGLE3-LLaMA3.3-Instruct-70B (SGLang issue #6783) and in EAGLE-3's
    # training script (max_len 2048); its own config.json we could not read.
    ("trtllm", "llama-3.1-8b"):  ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", 2048),
    ("trtllm", "llama-3.3-70b"): ("yuhuili/EAGLE3-LLaMA3.3-Instruct-70B", 2048),
    # Beyond Llama 3 (checked 2026-12; training context not given by any source checked). vLLM loads heads in
    # both the speculators format (RedHatAI's, vLLM PR #20436) and the EAGLE/SpecForge format; SGLang and
    # TensorRT-LLM are given EAGLE/SpecForge-format heads. Sources: the speculators README and
    # docs/user_guide/algorithms/eagle3.md (RedHatAI); SafeAILab/EAGLE's README table of EAGLE-3 heads; SpecForge's
    # SpecBundle page (lmsys, zhuyksir, AQ-MedAI); TensorRT-LLM's speculative-decoding docs (nvidia Maverick head).
    **{(engine, "qwen3-32b"): ("AngelSlim/Qwen3-32B_eagle3", None) for engine in ("vllm", "sglang", "trtllm")},
    **{(engine, "qwen3-30b-a3b"): ("AngelSlim/Qwen3-a3B_eagle3", None) for engine in ("vllm", "sglang", "trtllm")},
    ("vllm", "qwen3-235b-a22b"): ("RedHatAI/Qwen3-235B-A22B-Instruct-2507-speculator.eagle3", None),
    **{(engine, "qwen3-235b-a22b"): ("lmsys/SGLang-EAGLE3-Qwen3-235B-A22B-Instruct-2507-SpecForge-Meituan", None)
       for engine in ("sglang", "trtllm")},
    **{(engine, "qwen3-coder-480b"): ("lmsys/SGLang-EAGLE3-Qwen3-Coder-480B-A35B-Instruct-SpecForge-EigenAI", None)
       for engine in ("vllm", "sglang", "trtllm")},
    ("vllm", "gpt-oss-20b"): ("RedHatAI/gpt-oss-20b-speculator.eagle3", None),
    **{(engine, "gpt-oss-20b"): ("zhuyksir/EAGLE3-gpt-oss-20b-bf16", None) for engine in ("sglang", "trtllm")},
    ("vllm", "gpt-oss-120b"): ("RedHatAI/gpt-oss-120b-speculator.eagle3", None),
    ("sglang", "gpt-oss-120b"): ("lmsys/EAGLE3-gpt-oss-120b-bf16", None),
    ("trtllm", "gpt-oss-120b"): ("nvidia/gpt-oss-120b-Eagle3", None),
    **{(engine, "llama-4-scout"): ("lmsys/SGLang-EAGLE3-Llama-4-Scout-17B-16E-Instruct-SpecForge", None)
       for engine in ("vllm", "sglang", "trtllm")},
    ("vllm", "llama-4-maverick"): ("RedHatAI/Llama-4-Maverick-17B-128E-Instruct-speculator.eagle3", None),
    ("sglang", "llama-4-maverick"): ("lmsys/sglang-EAGLE3-Llama-4-Maverick-17B-128E-Instruct-v1", None),
    ("trtllm", "llama-4-maverick"): ("nvidia/Llama-4-Maverick-17B-128E-Eagle3", None),
    **{(engine, "kimi-k2"): ("AQ-MedAI/Kimi-K2-Instruct-eagle3", None) for engine in ("vllm", "sglang", "trtllm")},
}

# TensorRT-LLM quantizes no weights at start-up: fp8 means a pre-quantized checkpoint
# (docs/source/features/quantization.md; its Llama 3.3 70B deployment guide serves this one).
FP8_CHECKPOINTS = {
    "llama-3.1-8b":  "nvidia/Llama-3.1-8B-Instruct-FP8",
    "llama-3.3-70b": "nvidia/Llama-3.3-70B-Instruct-FP8",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B-FP8",   # Qwen's own (tests/fixtures/configs: its stored config.json)
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8",   # Qwen's own; served so by vllm-openai:v0.12.0
                                                                    # and SGLang runs in stored public scripts
}

BYTES_PER = {"bf16": 2, "fp8": 1, "fp4": 0.53125}   # fp4: MXFP4, 4 bits + an 8-bit scale per 32 weights

# ---------------------------------------------------------------- acceptance mathematics
# a: per-token alpha, P(draft i accepted | drafts before it accepted); K: draft length;
# tau: tokens per round, bonus token included; r: vLLM's acceptance rate (accepted /
# drafted); eps: a round's extra cost over one plain target step. REFERENCE.md section 1.

def acceptance_length(alpha, k):
    """tau = 1 + a + a^2 + ... + a^K (Leviathan et al., eq. 1).

    >>> round(acceptance_length(0.7, 5), 3)
    2.941
    >>> acceptance_length(1.0, 5), acceptance_length(0.0, 5)
    (6.0, 1.0)
    """
    if alpha == 1.0:
        return k + 1.0
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def acceptance_rate(alpha, k):
    """r = (tau - 1) / K: the share of drafted tokens that are accepted.

    >>> round(acceptance_rate(0.7, 5), 3), acceptance_rate(1.0, 3)
    (0.388, 1.0)
    """
    return (acceptance_length(alpha, k) - 1.0) / k


def _increasing_root(f, target, lo=0.0, hi=1.0, steps=60):
    """x in [lo, hi] with f(x) = target, for f increasing (bisection)."""
    for _ in range(steps):
        mid = (lo + hi) / 2
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def alpha_from_length(tau, k):
    """Per-token alpha whose chain of K drafts gives acceptance length tau.

    >>> round(alpha_from_length(2.811, 3), 3)
    0.768
    """
    assert 1.0 <= tau <= k + 1.0
    return _increasing_root(lambda a: acceptance_length(a, k), tau)


def alpha_from_rate(rate, k):
    """Per-token alpha that vLLM's acceptance rate r at K stands for.

    >>> round(alpha_from_rate(0.55, 3), 3), round(alpha_from_rate(0.55, 5), 3)
    (0.73, 0.807)
    """
    return alpha_from_length(1.0 + k * rate, k)


def profile_length(profile, k):
    """tau for conditional per-position alphas: 1 + a0 + a0*a1 + ...; the last alpha repeats past the end.

    >>> round(profile_length([0.8, 0.5], 3), 6)   # 1 + 0.8 + 0.4 + 0.2
    2.4
    """
    tau, survive = 1.0, 1.0
    for i in range(k):
        survive *= profile[min(i, len(profile) - 1)]
        tau += survive
    return tau


def tau_for(acceptance, k):
    """tau for a per-token alpha, or for a list of conditional alphas by position."""
    if isinstance(acceptance, (list, tuple)):
        return profile_length(acceptance, k)
    return acceptance_length(acceptance, k)


def lesson_speedup(alpha, k, eps):
    """The lesson's S = (1 + K*alpha) / (1 + eps): exact only if alpha is the rate r.

    >>> round(lesson_speedup(0.7, 5, 0.1), 2)
    4.09
    """
    return (1.0 + k * alpha) / (1.0 + eps)


def speedup(tau, eps):
    """S = tau / (1 + eps): tau tokens a round for a round of 1 + eps plain steps (Leviathan Thm 3.8 with K*c + 1
    written as 1 + eps). With eps_seen, what a closed-loop benchmark measures.

    >>> round(speedup(2.941, 0.1), 2), speedup(4.0, 0.0)
    (2.67, 4.0)
    """
    return tau / (1.0 + eps)


def exact_speedup(alpha, k, eps):
    """S = tau(alpha, K) / (1 + eps): the exact counterpart of the lesson's formula.

    >>> round(exact_speedup(0.7, 5, 0.1), 2), exact_speedup(1.0, 3, 0.0)
    (2.67, 4.0)
    """
    return speedup(acceptance_length(alpha, k), eps)


LESSON_RULE = 0.55   # the lesson's rule of thumb, "alpha >= 0.55", which names no unit
LESSON_SYMPTOM = (-0.25, 0.15)   # exercise 4's report: mean ITL -25%, P99 ITL +15%


def breakeven_rate(k, eps):
    """vLLM's acceptance rate at break-even, eps / K (tau = 1 + K*r); None when no rate below 1 pays.

    It is the lesson's break-even "alpha = eps / K": right for the rate, too low for the per-token alpha.
    >>> breakeven_rate(5, 0.15), breakeven_rate(3, 3.0)
    (0.03, None)
    """
    return round(eps / k, 12) if eps < k else None


def required_rate(k, eps, margin):
    """The acceptance rate a gate demands: break-even plus margin; None when that cannot be reached (above 1).

    >>> required_rate(5, 0.15, 0.1), required_rate(3, 2.9, 0.1)
    (0.13, None)
    """
    rate = breakeven_rate(k, eps)
    return None if rate is None or rate + margin > 1.0 else round(rate + margin, 12)


def exact_breakeven(k, eps):
    """Per-token alpha where tau(a, K) = 1 + eps; None when even a = 1 cannot pay.

    >>> round(exact_breakeven(5, 0.15), 4), exact_breakeven(3, 3.0)
    (0.1304, None)
    """
    if k <= eps:
        return None
    return _increasing_root(lambda a: acceptance_length(a, k), 1.0 + eps)


def round_distribution(alpha, k):
    """P(A = a) for a = 0..K: the drafts one round accepts. The target keeps each draft of the chain with
    probability alpha until the first rejection: P(A = a) = alpha^a (1 - alpha) below K, alpha^K at K.

    This is the one round process: decode_request draws from it draft by draft, round_moments gives its moments
    (the renewal shortcut of long requests, renewal_draw, runs on them), and round_mix averages it over requests
    (the ITL mixtures and the tail's per-token quantiles).
    >>> round_distribution(0.5, 2), round_distribution(1.0, 2), round_distribution(0.0, 2)
    ([0.5, 0.25, 0.25], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0])
    """
    probs, survive = [], 1.0
    for _ in range(k):
        probs.append(survive * (1.0 - alpha))
        survive *= alpha
    return probs + [survive]


def round_moments(alpha, k):
    """Tokens T = A + 1 one round delivers (round_distribution): (E[T] = tau, E[T^2], P(all K accepted)).

    P(T >= t) = a^(t-1) for t = 1..K+1, so E[T^2] = sum (2t - 1) a^(t-1), summed in closed form (a request's
    rounds need it once each: the sum over the distribution would cost K + 1 terms).
    >>> round_moments(0.5, 1), round_moments(1.0, 3), round_moments(0.0, 2)
    ((1.5, 2.5, 0.5), (4.0, 16.0, 1.0), (1.0, 1.0, 0.0))
    """
    if alpha >= 1.0:
        return k + 1.0, (k + 1.0) ** 2, 1.0
    full = alpha ** k
    top = full * alpha                                  # a^(K+1)
    tau = (1.0 - top) / (1.0 - alpha)
    weighted = (1.0 - (k + 2) * top + (k + 1) * top * alpha) / (1.0 - alpha) ** 2   # sum t a^(t-1)
    return tau, 2.0 * weighted - tau, full


# ---------------------------------------------------------------- the decode loop
# One request decodes round by round, the way gpt-fast's speculative_decode runs on a GPU,
# each round accepting A drafts with round_distribution's probabilities. The simulation over
# requests (below the cost model) runs this loop as it is for requests of at most LOOP_TOKENS
# decode tokens; a longer one, most requests of a run, draws what the loop would return from
# its normal limit (renewal_draw: renewal theory on round_moments), and tests/test_simulation.py
# checks those draws, and the P99s built on them, against this loop.
JITTER_MU = -ROUND_JITTER ** 2 / 2   # log-mean of a round's lognormal jitter: its mean is 1


def decode_request(alpha, k, tokens, rng):
    """Decode `tokens` tokens of one request with a chain of K drafts: (drafts accepted each round, time in rounds).

    Every round costs one draft and one verify pass whatever it accepts: the caller multiplies
    the time by round_ms. alpha = 1 gives K + 1 tokens a round, alpha = 0 one. run_requests runs
    it for requests of at most LOOP_TOKENS tokens (a few in a run: their lengths spread around
    OUTPUT_TOKENS) and draws longer ones from renewal_draw, which tests check against this loop.
    >>> decode_request(1.0, 3, 10, random.Random(0))[0], decode_request(0.0, 3, 3, random.Random(0))[0]
    ([3, 3, 3], [0, 0, 0])
    """
    accepted_per_round, time_in_rounds, emitted = [], 0.0, 0
    while emitted < tokens:
        # 1. draft: the head proposes K tokens, one small forward pass each; all K are paid for,
        #    whatever the target makes of them.
        # 2. verify: one target pass scores the K drafts and the position after them. Draft and
        #    verify are one round, round_ms, varied a little by launches and kernels (jitter).
        time_in_rounds += rng.lognormvariate(JITTER_MU, ROUND_JITTER)
        #    Along the chain the target keeps each draft with probability alpha; the first
        #    rejection ends it, and the drafts after it are wasted.
        accepted = 0
        while accepted < k and rng.random() < alpha:
            accepted += 1
        # 3. accept: the A kept drafts and one token the verify pass sampled (the correction at
        #    the first rejection, or the bonus after K): A + 1 tokens and no second target pass.
        #    The lesson's two-pass model adds a plain step here when any sequence in the batch
        #    rejected. Tokens past the request's end are discarded, as max_tokens does.
        accepted_per_round.append(accepted)
        emitted += accepted + 1
    return accepted_per_round, time_in_rounds


# ---------------------------------------------------------------- cost model
# A round is K draft steps plus one verify pass over K+1 tokens per sequence; a plain
# step is one target pass over 1 token per sequence (MagicDec eq. 1). Each pass is a sum
# of terms (REFERENCE.md section 3): streaming the weights, reading the KV history,
# compute (2 FLOPs per parameter per token plus attention over the context), two
# all-reduces per layer under tensor parallelism, a fixed cost per pass that belongs to
# the engine, and an engine cost per token. Memory and compute time are added, not
# overlapped: with a hard max eps would stay flat below the ridge, but SGLang's batch
# sweep shows it rising from B = 2 (EAGLE-3 paper Table 4 / SGLang PR #4247, in
# bench/published.json). In a closed-loop benchmark every step also carries the prefill
# of the requests that keep arriving (chunked prefill mixes it into decode batches):
# prefill_tokens below.

# The terms of the time your benchmark runs can tell apart, each a factor own_<term> in Fit (1: the published
# fit): what a closed-loop run at another concurrency, K or length moves differently from the rest.
OWN_TERMS = dict(
    own_pass="a target pass's fixed cost",             # launches, scheduler, sampler, per-layer fixed costs
    own_weights="the weight read",
    own_context="the context's cost per sequence",     # KV read and attention
    own_token="the cost per token",                    # compute and the engine's cost per token
    own_prefill="the prefill share",                   # the prompts a closed-loop step carries
    own_round="a round's bookkeeping",
    own_verify="the verify pass's extra tokens",       # what they add to a plain step
    own_draft="the draft steps")
OWN_PARTS = dict(fixed="own_pass", weights="own_weights", attention="own_context", compute="own_token",
                 engine="own_token")   # pass_parts' term -> the Fit factor that scales it in a target pass;
                                       # communication keeps the published fit's (no factor)

Fit = namedtuple("Fit", "bw_hopper bw_ampere bw_ada flop_eff fp8_eff fp8_kv_eff attn_ns layer_us ar_us ar_tp_us "
                        "link_eff pass_fixed_ms_vllm pass_fixed_ms_sglang pass_fixed_ms_trtllm draft_fixed_ms_vllm "
                        "draft_fixed_ms_sglang round_fixed_ms_vllm round_fixed_ms_sglang token_us seq_us_trtllm "
                        "bw_cdna flop_cdna " + " ".join(OWN_TERMS),
          defaults=(1.0,) * len(OWN_TERMS))
# bw_<family>: achieved share of datasheet bandwidth streaming weights and KV, by GPU
# family (GPUS' "family"; families without calibration data borrow one, BW_FAMILY);
# flop_eff: achieved share of peak FLOP/s; fp8_eff: the share of that bandwidth an fp8
# weight read keeps (block scales, dequantisation and activation quantisation: an fp8 step
# is not half a bf16 one); fp8_kv_eff: likewise for an fp8 KV cache (the attention kernel
# dequantises it); attn_ns: ns per layer per token of context that one sequence's attention
# takes however few bytes it reads (a decode attention kernel spreads one sequence over
# few SMs), the floor of the KV time at small batch (the fit's 8 ns is 0.26 ms per 1k tokens
# on the 32-layer 8B, several times its KV read); layer_us: fixed cost per
# layer per pass (kernel launches, norms, rotary); ar_us, ar_tp_us: one all-reduce's
# latency at TP 2 and its growth per further GPU; link_eff: achieved share of the link
# bandwidth in an all-reduce;
# pass_fixed_ms_<engine>: fixed cost of one forward pass in that engine, ms (graph launch,
# scheduler, sampler); draft_fixed_ms_<engine>: fixed cost of one draft step;
# round_fixed_ms_<engine>: per-round speculation bookkeeping (rejection sampler, input
# preparation), each a fixed cost, not a pass's time (pass_ms, round_ms); token_us: engine
# cost per token a pass decodes (sampling, logits; a prefill chunk's prompt tokens have none);
# bw_cdna, flop_cdna: an AMD CDNA GPU's achieved share of bandwidth, and its share of flop_eff (its
# GEMMs' achieved share of peak against NVIDIA's), fitted on the one MI300X source
# (bench/oracle_mi300x_405b.json, a batch sweep at 1 to 256: batch 1 sets the first, the growth the second);
# seq_us_<engine> (Engine.seq_cost names it): a served step's host cost per running sequence
# (scheduling, paged-KV tables, streaming), measured for TensorRT-LLM only, where NIM's served closed loop and
# TensorRT-LLM 0.9's static batches of the same shapes tell it apart from token_us (no
# source separates it for vLLM or SGLang, whose async schedulers overlap it: none).
# Fitted together by bench/calibrate.py (its output says which points set
# which constant), against bench/published.json and bench/plain_step.json.
# Fit is a namedtuple, not a dataclass like the results: a vector of constants that the fitters (--calibrate,
# bench/calibrate.py) iterate and replace by field name (Fit._fields, _replace).
# own_<term>: your deployment's factor on one term of the time (OWN_TERMS says which), 1 in
# the published fit; --calibrate fits them to your runs (calibrate_on_runs).
FIT = Fit(bw_hopper=0.8974, bw_ampere=0.756, bw_ada=0.7754, flop_eff=0.93, fp8_eff=0.9213, fp8_kv_eff=0.7918,
          attn_ns=8.1758, layer_us=4.1016, ar_us=17.4375, ar_tp_us=3.6738, link_eff=0.5117,
          pass_fixed_ms_vllm=1.4307, pass_fixed_ms_sglang=0.6631, pass_fixed_ms_trtllm=1.6328,
          draft_fixed_ms_vllm=0.7, draft_fixed_ms_sglang=0.5027, round_fixed_ms_vllm=1.1963,
          round_fixed_ms_sglang=1.6709, token_us=12.0508, seq_us_trtllm=40.332, bw_cdna=0.6886, flop_cdna=0.3048)
# What the fit says (bench/calibrate.py prints it): an fp8 weight read keeps 0.92 of the
# bandwidth, an fp8 KV cache 0.79 (the attention kernel dequantises it); one sequence's
# attention costs 8.2 ns per layer per token of context on an H100 (0.26 ms per 1k tokens on 8B),
# set by NIM's batch-1 context slopes; an all-reduce costs 17 us at TP 2 and 3.7 us more
# per further GPU (25 us at TP 4, 39 at TP 8); a served TensorRT-LLM step (NIM) costs 40 us
# more per running sequence than its static-batch benchmark (seq_us_trtllm), which had made
# the closed loop look costlier per token; fixed costs per pass, per draft step (0.70 ms vLLM,
# 0.50 ms SGLang) and per round differ by engine; an MI300X under 2024's ROCm vLLM reads at
# 0.69 of its 5.3 TB/s and reaches 0.30 of the NVIDIA GEMMs' share of peak (bw_cdna, flop_cdna).
# flop_eff sits on its upper bound, the best measured GEMM's share of peak (bench/calibrate.py
# says why).
BW_FAMILY = {"hopper": "bw_hopper", "ampere": "bw_ampere", "ada": "bw_ada",
             "blackwell": "bw_hopper",   # no Blackwell point to fit: taken as Hopper's share (an assumption)
             "cdna": "bw_cdna"}          # MI300X (CDNA 3): fitted on its one source, with flop_cdna
ATTN_FLOOR_TBS = 3.35   # Fit.attn_ns is one sequence's attention floor on an H100's 3.35 TB/s: a sequence's KV is
                        # read by few SMs, so the floor scales with the GPU's bandwidth (times its bw_rel: the H200's
                        # larger stack is not read proportionally faster), and an fp8 KV cache's runs
                        # at fp8_kv_eff of it (dequantising). NIM's batch-1 TPOT over 4 contexts (plain_step.json),
                        # slope per layer per token: 7.9-8.5 ns on H100 and 12.0-12.2 on A100 (7.3-7.4 at 3.35
                        # TB/s) with a bf16 cache; 9.7-10.3 on H100 with an fp8 cache
ACTIVATION_BYTES = 2                     # all-reduce messages are bf16 activations, hidden wide per token

@dataclass(frozen=True)
class Net:
    """One network a pass runs: the target, or the drafter. Its memory (held_*) and what a pass reads differ for
    drafts that read the target's lm_head without a copy (EAGLE-1/2, MTP)."""
    active_params: float     #: parameters one token uses (k experts of a MoE; embeddings and lm_head counted)
    weight_bytes: float      #: bytes every pass reads: all weights but the routed experts
    kv_bytes_per_token: float   #: KV bytes per token of context over the full-attention layers
    attn_width: int          #: attention's query-key width per token: heads x head_dim, or MLA's latent width
    layers: int
    hidden: int              #: hidden size: an all-reduce's message per token is hidden x ACTIVATION_BYTES
    tflops: float            #: peak TFLOP/s per GPU for its weights' dtype
    held_params: float       #: parameters it holds in memory
    held_bytes: float        #: bytes it holds in memory
    fp8: bool                #: whether its weights are quantised (fp8 or fp4): reads keep Fit.fp8_eff of bandwidth
    expert_bytes: float = 0.0   #: one routed expert of one layer, bytes (0: dense)
    moe_layers: int = 0      #: layers that route to experts
    experts: int = 0         #: routed experts per layer
    experts_per_token: int = 0   #: experts each token is routed to (k)
    window: int = None       #: sliding-window attention's window, tokens (None: none)
    window_layers: int = 0   #: layers with sliding-window attention
    window_kv_bytes: float = 0   #: KV bytes per token over the sliding-window layers
    routing_exponent: float = 0.0   #: its router's popularity skew (model_routing_exponent; 0: uniform)
    kv_groups: int = 1       #: KV heads its cache splits into across TP GPUs: kv_heads, 1 for MLA's one latent
    prompt_attn_width: int = None   #: attention's width per token in a prefill chunk where it differs (MLA)


NO_MODEL = Net(active_params=0, weight_bytes=0, kv_bytes_per_token=0, attn_width=0, layers=0, hidden=0, tflops=0,
               held_params=0, held_bytes=0, fp8=False)
# The drafter of n-gram lookup: proposals come from matching the context, so it holds no
# weights, no KV cache, and runs no draft steps (draft_step_ms).


@dataclass(frozen=True)
class Deployment:
    """One replica as the cost model sees it: hardware, target and drafter networks, engine, traffic lengths.
    make_deployment builds it from catalog names; parse_deployment from the flags. Hashable by value: the cost
    model's memo (COST_MEMO) is keyed by it."""
    model: str               #: catalog name of the target, or the name its --model-config gives
    gpu: str                 #: catalog name of the GPU, or "custom"
    tp: int                  #: tensor-parallel degree: GPUs in the replica
    weights_dtype: str       #: the target's weights: "bf16", "fp8" or "fp4"
    kv_dtype: str            #: KV cache elements: "bf16" or "fp8"
    context: int             #: mean decode context, tokens
    draft: str               #: the --draft value: a kind (DRAFTS) or a catalog model's name
    memory_gib: float        #: memory per GPU, GiB
    bandwidth_tbs: float     #: memory bandwidth per GPU, TB/s
    link_gbs: float          #: one-way GPU-to-GPU bandwidth the all-reduces cross, GB/s
    draft_tflops: float      #: peak bf16 TFLOP/s per GPU: drafts run in bf16
    target: Net              #: the target network
    drafter: Net             #: the draft network (NO_MODEL for n-gram lookup)
    engine: Engine           #: the serving engine (an ENGINES row)
    memory_fraction: float   #: the engine's share of memory for weights and KV cache (Engine.memory_fraction)
    draft_hf: str            #: Hugging Face id or path of the draft (None: the catalog's choice)
    input_tokens: int        #: mean prompt length, tokens
    output_tokens: int       #: mean output length, tokens
    shape: dict = field(hash=False)   #: the target's shape: a MODELS row, or one read from --model-config
    topk: int = 1            #: tokens each draft step expands per sequence (1: a chain)
    verify_tokens: int = None   #: tokens per sequence in a tree's verify pass (None: K + 1, a chain)
    tree_steps: int = None   #: a tree's steps: the one K its measured acceptance holds for
    draft_shape: dict = field(default=None, hash=False)   #: a draft model's shape from its config.json, else None
    model_config: str = None   #: the --model-config path, so the plan's commands can name it again
    draft_config: str = None   #: the --draft-config path, likewise
    era: Era = None          #: the engine's release era (Engine.eras): what a round's host work costs there
    ep: int = 1              #: expert-parallel GPUs: 1 (every expert split across the TP GPUs) or tp (whole experts)
    dp_attention: bool = False   #: attention data parallel across the tp GPUs (with ep = tp): see pass_parts

    def __post_init__(self):   # hashed once: the cost model's memo looks deployments up thousands of times a run
        object.__setattr__(self, "_hash", hash(tuple(getattr(self, f.name) for f in fields(self) if f.hash is not False)))

    def __hash__(self):
        return self._hash


def attention_params(m):
    """One layer's attention: q, k, v and o projections (MLA's low-rank ones for DeepSeek), biases, sinks."""
    h, n = m["hidden"], m["heads"]
    a = m.get("mla")
    if a:
        q_width = n * (a["nope"] + a["rope"])
        q = h * a["q_lora_rank"] + a["q_lora_rank"] + a["q_lora_rank"] * q_width if a["q_lora_rank"] else h * q_width
        kv = h * (a["kv_lora_rank"] + a["rope"]) + a["kv_lora_rank"] + a["kv_lora_rank"] * n * (a["nope"] + a["v_head_dim"])
        return q + kv + n * a["v_head_dim"] * h
    qkv = m["head_dim"] * (n + 2 * m["kv_heads"])
    params = h * qkv + n * m["head_dim"] * h
    if m.get("attn_bias"):
        params += qkv + h
    return params + (n if m.get("sinks") else 0)


def expert_params(m):
    """One routed expert of one layer: gate, up and down projections (and gpt-oss's biases)."""
    return 3 * m["hidden"] * m["moe_inter"] + (2 * m["moe_inter"] + m["hidden"] if m.get("expert_bias") else 0)


def mlp_params(m, moe, active):
    """One layer's MLP: dense, or the routed experts (all, or the k a token uses), shared experts and router."""
    if not moe:
        return 3 * m["hidden"] * m["inter"]
    routed = m["experts_per_token"] if active else m["experts"]
    router = m["hidden"] * m["experts"] + (m["experts"] if m.get("router_bias") else 0)
    return routed * expert_params(m) + 3 * m["hidden"] * m.get("shared_inter", 0) + router


def embedding_params(m):
    return m["vocab"] * m["hidden"] * (1 if m["tied"] else 2)


def model_params(m, active=False):
    """Parameters from a config's shape; active: those one token uses (k experts, embeddings and lm_head counted).

    >>> round(model_params(MODELS["llama-3.1-8b"]) / 1e9, 3), round(model_params(MODELS["llama-3.3-70b"]) / 1e9, 3)
    (8.03, 70.554)
    >>> round(model_params(MODELS["qwen3-30b-a3b"]) / 1e9, 2), round(model_params(MODELS["qwen3-30b-a3b"], active=True) / 1e9, 2)
    (30.53, 3.35)
    """
    moe_layers = m.get("moe_layers", 0)
    per_layer = attention_params(m) + 2 * m["hidden"]
    mlp = (m["layers"] - moe_layers) * mlp_params(m, False, active)
    if moe_layers:
        mlp += moe_layers * mlp_params(m, True, active)
    return m["layers"] * per_layer + mlp + embedding_params(m) + m["hidden"]


def mtp_params(m):
    """One MTP module (DeepSeek-V3): a decoder layer of the target's kind, the 2h -> h projection and its norms.

    >>> round(mtp_params(MODELS["deepseek-v3"]) / 1e9, 1)
    11.6
    """
    moe = m.get("moe_layers", 0) > 0
    return attention_params(m) + mlp_params(m, moe, False) + 2 * m["hidden"] * m["hidden"] + 5 * m["hidden"]


def draft_kind(draft):
    """The kind of a --draft value: a draft model for a catalog model's name, else the value itself."""
    return "model" if draft in MODELS else draft


def head_shape(m):
    """The one dense decoder layer of an EAGLE head for target m: the target's attention shape and MLP
    width, or where the head's published config differs (MoE and MLA targets), that config's."""
    mla = m.get("mla")
    return dict(hidden=m["hidden"], inter=m.get("head_inter", m["inter"]), layers=1,
                heads=m.get("head_heads", m["heads"]), kv_heads=m.get("head_kv_heads", m["kv_heads"]),
                head_dim=m.get("head_head_dim", m["head_dim"] if not mla else 128), vocab=m["vocab"], tied=False)


def eagle_head_params(m, version):
    """Parameters of an EAGLE head for target shape m, embeddings (shared) excluded.

    EAGLE-3: q/k/v read 2*hidden (token embedding + fused features), fc fuses three
    target layers (3h -> h), own lm_head over a 32k draft vocabulary. EAGLE-1/2: a plain
    decoder layer, fc 2h -> h, no lm_head (SafeAILab/EAGLE cnets.py, cnets1.py).
    >>> round(eagle_head_params(MODELS["llama-3.1-8b"], 3) / 1e9, 3), round(eagle_head_params(MODELS["llama-3.3-70b"], 3) / 1e9, 2)
    (0.425, 1.4)
    >>> round(eagle_head_params(MODELS["llama-3.1-8b"], 1) / 1e9, 2), round(eagle_head_params(MODELS["llama-3.3-70b"], 1) / 1e9, 2)
    (0.25, 0.99)
    """
    s = head_shape(m)
    h, hd = s["hidden"], s["head_dim"]
    q_in = 2 * h if version == 3 else h
    attention = q_in * hd * (s["heads"] + 2 * s["kv_heads"]) + s["heads"] * hd * h
    mlp = 3 * h * s["inter"]
    if version == 3:
        return attention + mlp + 3 * h * h + m.get("draft_vocab", EAGLE3_DRAFT_VOCAB) * h + 4 * h
    return attention + mlp + 2 * h * h + 2 * h


def kv_bytes_per_layer(m, kv_dtype):
    """KV bytes per token per layer: K and V of each KV head, or MLA's one latent vector
    (kv_lora_rank + rope), vllm/v1/kv_cache_interface.py (coefficient 2, or 1 for MLA)."""
    a = m.get("mla")
    if a:
        return (a["kv_lora_rank"] + a["rope"]) * BYTES_PER[kv_dtype]
    return 2 * m["kv_heads"] * m["head_dim"] * BYTES_PER[kv_dtype]


def kv_bytes_per_token(m, kv_dtype):
    """KV bytes per token of context over the full-attention layers (sliding-window layers: window_kv_bytes).

    >>> kv_bytes_per_token(MODELS["llama-3.1-8b"], "bf16"), kv_bytes_per_token(MODELS["llama-3.3-70b"], "bf16")
    (131072, 327680)
    >>> kv_bytes_per_token(MODELS["deepseek-v3"], "bf16")   # 61 x (512 + 64) x 2
    70272
    """
    return (m["layers"] - m.get("window_layers", 0)) * kv_bytes_per_layer(m, kv_dtype)


def weight_split(m, dtype):
    """(bytes of everything but the routed experts, bytes of one routed expert of one layer, all bytes).

    Quantised checkpoints keep embeddings and lm_head in bf16 (REFERENCE.md section 3) and
    store every other weight at the dtype's width; fp4 is MXFP4, 4 bits plus an 8-bit scale
    per 32 (gpt-oss ships its experts so; NVFP4's 16-element blocks are 4.5 bits).
    >>> round(weight_split(MODELS["llama-3.3-70b"], "fp8")[2] / 1e9, 2), round(weight_split(MODELS["llama-3.3-70b"], "bf16")[2] / 1e9, 2)
    (72.66, 141.11)
    """
    embeddings = embedding_params(m)
    width = BYTES_PER[dtype]
    total = (model_params(m) - embeddings) * width + embeddings * BYTES_PER["bf16"]
    expert = expert_params(m) * width if m.get("moe_layers") else 0.0
    return total - m.get("moe_layers", 0) * m.get("experts", 0) * expert, expert, total


# Routing skew. A router trained to balance its load still sends more tokens to some experts
# than to others, and a batch's tokens then touch fewer distinct experts than uniform routing
# would have them touch. Modelled as a power law over the experts' popularity ranks (expert i
# of E drawn with weight (i + 1)^-s, each token taking k distinct ones), its exponent s set by
# a measured ratio of the hottest expert's load to the mean load (routing_exponent); s = 0 is
# uniform routing, E (1 - (1 - k/E)^n). Measured: DeepSeek-R1 served by TensorRT-LLM on 32
# GB200 (expert parallel, no load balancer), the hottest expert slot of a layer carries 1 +
# 10.948 times the mean slot's tokens, per layer and iteration (NVIDIA/TensorRT-LLM
# docs/source/blogs/tech_blog/blog4_Scaling_Expert_Parallelism_in_TensorRT-LLM.md, Table 1).
# Kimi-K2 is DeepSeek-V3's architecture and router kind (sigmoid gates with a balancing bias)
# with 384 experts: it borrows the ratio. No source here measures Qwen3's, gpt-oss's or Llama
# 4's routing: they route uniformly, the upper end of their expert reads.
HOT_EXPERT_LOAD = {"deepseek": 1 + 10.948}
ROUTING_OF_MODEL_TYPE = {"deepseek_v3": "deepseek", "kimi_k2": "deepseek"}   # config.json model_type -> routing


@functools.lru_cache(maxsize=256)
def expert_shares(experts, k, exponent):
    """Each expert's chance to be among a token's k, under power-law popularity (weight (i + 1)^-exponent),
    hottest first; summing to k. A share cannot pass 1 (a token takes an expert once): the excess of a capped
    expert goes to the others in proportion. A tuple, computed once per (E, k, exponent).
    >>> [round(q, 4) for q in expert_shares(4, 2, 0.0)], round(sum(expert_shares(256, 8, 0.6)), 9)
    ([0.5, 0.5, 0.5, 0.5], 8.0)
    """
    weights = [(i + 1) ** -exponent for i in range(experts)]
    capped, shares = 0, []
    while True:                     # the hottest are capped first: weights fall with i
        rest = sum(weights[capped:])
        shares = [1.0] * capped + [(k - capped) * w / rest for w in weights[capped:]]
        if capped == experts or shares[capped] <= 1.0:
            return tuple(shares)
        capped += 1


@functools.lru_cache(maxsize=64)
def routing_exponent(experts, k, hot_load):
    """The power-law exponent whose hottest expert carries `hot_load` times the mean expert's load (mean: k/E a
    token), by bisection; 0 for a load of 1 or less, and the exponent at which the hottest share reaches 1 for a
    load of E/k or more (a token takes an expert at most once)."""
    if hot_load <= 1.0:
        return 0.0
    low, high = 0.0, 8.0
    for _ in range(60):
        mid = (low + high) / 2
        if expert_shares(experts, k, mid)[0] * experts / k < hot_load:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def expected_experts(experts, k, tokens, exponent=0.0):
    """Distinct experts that `tokens` routings of k of E experts touch: with uniform routing (exponent 0)
    E (1 - (1 - k/E)^n), under skew the sum over experts of 1 - (1 - q_i)^n (expert_shares q).

    Each token's picks are drawn independently of the other tokens'; what makes real batches touch fewer still
    (a sequence's consecutive tokens, as a verify pass carries them, reusing experts) is not measured here.
    A dense model has none.
    >>> round(expected_experts(128, 8, 1), 3), round(expected_experts(128, 8, 32), 1), expected_experts(0, 0, 5)
    (8.0, 111.8, 0.0)
    """
    if experts == 0 or tokens <= 0:
        return 0.0
    if exponent == 0.0:
        return experts * (1.0 - (1.0 - k / experts) ** tokens)
    return sum(1.0 - (1.0 - q) ** tokens for q in expert_shares(experts, k, exponent))


def touched_experts(net, dep, tokens):
    """Expert reads of one MoE layer of a pass, in experts the replica reads at its slowest GPU's pace.

    Split by tensor parallelism (ep 1), every GPU reads its share of each touched expert: the
    distinct experts (expected_experts). Expert parallel (ep = tp), each GPU reads the whole
    experts it holds that the pass touches, and the layer waits for the busiest GPU:
    ep x busiest_rank_experts.
    """
    if dep.ep == 1 or not net.experts:   # a dense network (an EAGLE head of a MoE target) reads no experts
        return expected_experts(net.experts, net.experts_per_token, tokens, net.routing_exponent)
    return dep.ep * busiest_rank_experts(net.experts, net.experts_per_token, tokens, net.routing_exponent, dep.ep)


@functools.lru_cache(maxsize=65536)
def busiest_rank_experts(experts, k, tokens, exponent, ranks):
    """Expected touched experts on the busiest of `ranks` GPUs holding experts / ranks whole experts each.

    Experts are dealt to the GPUs hottest first, round-robin (the placement a load balancer
    makes without copies), so what is left is the spread of one pass's picks. Expert i is
    touched with chance t_i = 1 - (1 - q_i)^n (expert_shares q), taken independently of the
    others; a GPU's count is then a sum of Bernoulli draws whose distribution is counted
    exactly, and E[max] = sum over x of P(max > x) = 1 - prod over GPUs of P(count <= x).
    Without a balancer hot experts can share a GPU and its load is worse: TensorRT-LLM
    measured DeepSeek-R1's busiest GPU at 2.56x the mean at EP 32 with none, 1.11x with
    EPLB (tech blog 4, Table 1).
    >>> round(busiest_rank_experts(8, 2, 64, 0.0, 1), 6) == round(expected_experts(8, 2, 64), 6)
    True
    """
    if tokens == 1 and not exponent:   # one token under uniform routing: its k picks' spread counted exactly
        return one_token_busiest(experts, k, ranks)
    shares = expert_shares(experts, k, exponent)   # k / E each for exponent 0
    touched = [1.0 - (1.0 - q) ** tokens for q in shares] if tokens > 0 else [0.0] * experts
    below = [1.0] * (experts // ranks + 1)          # prod over GPUs of P(count <= x), x = 0 .. experts/ranks
    for rank in range(ranks):
        pmf = [1.0]
        for t in touched[rank::ranks]:
            pmf = [a * (1.0 - t) + b * t for a, b in zip(pmf + [0.0], [0.0] + pmf)]
        cdf = list(itertools.accumulate(pmf))
        below = [a * min(1.0, c) for a, c in zip(below, cdf)]
    return sum(1.0 - b for b in below)


def one_token_busiest(experts, k, ranks):
    """Expected picks on the busiest GPU when one token takes k distinct of E experts uniformly, E / ranks on each
    GPU: P(max <= x) is the share of the C(E, k) choices that put at most x on every GPU (a product of
    polynomials, coefficient of t^k). Independent draws (busiest_rank_experts) miss this most for few picks:
    one pick of Llama 4's 16 experts on 4 GPUs is on one GPU for certain, not on 0.73 of one.
    >>> one_token_busiest(16, 1, 4), round(one_token_busiest(256, 8, 8), 3)
    (1.0, 2.564)
    """
    per = experts // ranks
    expected = 0.0
    for x in range(k):
        ways = [1]
        for _ in range(ranks):
            row = [math.comb(per, c) for c in range(min(x, per) + 1)]
            ways = [sum(ways[i - c] * row[c] for c in range(len(row)) if 0 <= i - c < len(ways))
                    for i in range(min(k, len(ways) + len(row) - 2) + 1)]
        expected += 1.0 - (ways[k] if k < len(ways) else 0) / math.comb(experts, k)
    return expected


def model_routing_exponent(m):
    """The routing exponent of model shape m: from its family's measured hottest-expert load, else 0 (uniform)."""
    family = m.get("routing")
    if not m.get("experts") or family not in HOT_EXPERT_LOAD:
        return 0.0
    return routing_exponent(m["experts"], m["experts_per_token"], HOT_EXPERT_LOAD[family])


def peak_tflops(spec, dtype):
    """Dense peak for a weights dtype; without tensor cores for it, fp4 runs at the fp8 rate and fp8 at bf16's."""
    if dtype == "fp4" and spec.get("fp4"):
        return spec["fp4"]
    return (spec.get("fp8") or spec["bf16"]) if dtype in ("fp4", "fp8") else spec["bf16"]


def gpu_spec(gpu, memory_gib=None, bandwidth_tbs=None, tflops=None, weights_dtype=WEIGHTS_DTYPE):
    """A catalog GPU with any of its numbers replaced, or "custom" hardware from all three.

    tflops is the dense rate for the weights dtype. For custom hardware the draft's bf16
    rate is taken as half an fp8 figure, as on every fp8-capable GPU in the catalog.
    """
    spec = dict(GPUS.get(gpu, dict(memory_gib=None, bandwidth_tbs=None, bf16=None, fp8=None,
                                   link=450)))   # custom hardware: NVLink 4 assumed (its family: gpu_family)
    if memory_gib is not None:
        spec["memory_gib"] = memory_gib
    if bandwidth_tbs is not None:
        spec["bandwidth_tbs"] = bandwidth_tbs
    if tflops is not None:
        spec[weights_dtype] = tflops
        if gpu not in GPUS:
            spec["bf16"] = tflops if weights_dtype == "bf16" else tflops / 2
    return spec


def attention_width(m):
    """Query-key width of attention per token: heads x head_dim, or MLA's absorbed latent (kv_lora_rank + rope)."""
    a = m.get("mla")
    return m["heads"] * (a["kv_lora_rank"] + a["rope"]) if a else m["heads"] * m["head_dim"]


def prompt_attention_width(m):
    """Attention's width per token in a prefill chunk: MLA prefills without the latent absorption (vLLM's
    vllm/attention/backends/mla/common.py: the compute-friendly path for prefill), with queries and keys of
    nope + rope and values of v_head_dim per head, so 4 x width counts 2 x heads x (nope + rope + v) FLOPs per
    token of context; None (attention_width) for other attention."""
    a = m.get("mla")
    return m["heads"] * (a["nope"] + a["rope"] + a["v_head_dim"]) // 2 if a else None


def target_net(m, weights_dtype, kv_dtype, tflops):
    """The target network of shape m: active parameters, the bytes each pass reads, experts, windows."""
    every_pass, expert, total = weight_split(m, weights_dtype)
    window_layers = m.get("window_layers", 0)
    return Net(active_params=model_params(m, active=True), weight_bytes=every_pass,
               kv_bytes_per_token=kv_bytes_per_token(m, kv_dtype), attn_width=attention_width(m), layers=m["layers"],
               hidden=m["hidden"], tflops=tflops, held_params=model_params(m), held_bytes=total,
               fp8=weights_dtype != "bf16", expert_bytes=expert, moe_layers=m.get("moe_layers", 0),
               experts=m.get("experts", 0), experts_per_token=m.get("experts_per_token", 0), window=m.get("window"),
               window_layers=window_layers, window_kv_bytes=window_layers * kv_bytes_per_layer(m, kv_dtype),
               routing_exponent=model_routing_exponent(m), kv_groups=kv_groups(m),
               prompt_attn_width=prompt_attention_width(m))


def mean_context(input_tokens, output_tokens):
    """The mean decode context: a request decodes from input to input + output tokens of context."""
    return int(input_tokens + output_tokens / 2)


def make_deployment(model=MODEL, gpu=GPU, tp=TP, weights_dtype=WEIGHTS_DTYPE, kv_dtype=KV_DTYPE, context=CONTEXT,
                    draft=DRAFT, spec=None, engine=ENGINE, draft_hf=DRAFT_MODEL, input_tokens=INPUT_TOKENS,
                    output_tokens=OUTPUT_TOKENS, shape=None, topk=1, verify_tokens=None, draft_shape=None,
                    era=None, ep=EP, dp_attention=DP_ATTENTION):
    """Resolve catalog names (and an optional GPU spec from gpu_spec) into cost-model numbers.

    shape: a model's shape read from its config.json, instead of the catalog's row for `model`.
    The mean decode context defaults to the prompt plus half the output: a request decodes
    from input to input + output tokens of context. era: one of the engine's eras (default: its newest).
    ep: expert-parallel GPUs, 1 or tp; dp_attention: with ep = tp (parse_deployment checks both).
    """
    spec = spec or GPUS[gpu]
    m = shape or MODELS[model]
    target = target_net(m, weights_dtype, kv_dtype, peak_tflops(spec, weights_dtype))
    context = context if context is not None else mean_context(input_tokens, output_tokens)
    dep = Deployment(model=model, gpu=gpu, tp=tp, weights_dtype=weights_dtype, kv_dtype=kv_dtype, context=context,
                     draft=draft, memory_gib=spec["memory_gib"], bandwidth_tbs=spec["bandwidth_tbs"],
                     link_gbs=spec["link"], draft_tflops=peak_tflops(spec, "bf16"), target=target, drafter=NO_MODEL,
                     engine=ENGINES[engine], memory_fraction=ENGINES[engine].memory_fraction, draft_hf=draft_hf,
                     input_tokens=input_tokens, output_tokens=output_tokens, shape=m, topk=topk,
                     verify_tokens=verify_tokens, draft_shape=draft_shape, era=era or newest_era(engine), ep=ep,
                     dp_attention=dp_attention)
    return with_draft(dep, draft)


def with_draft(dep, draft):
    """The same deployment with another draft: an EAGLE head, the model's MTP module, n-gram lookup or a
    draft model. Heads and draft models are bf16; an MTP module has the target's dtype."""
    m = dep.shape
    lm_head = m["vocab"] * m["hidden"]      # the target's own lm_head, read every draft step by EAGLE-1/2 and
    if draft in EAGLE_DRAFTS:               # MTP (bf16 even under fp8: weight_split)
        head, s = eagle_head_params(m, 3 if draft == "eagle3" else 1), head_shape(m)
        read = head + (lm_head if draft == "eagle" else 0)
        drafter = Net(active_params=read, weight_bytes=read * DRAFT_WEIGHT_BYTES,
                      kv_bytes_per_token=kv_bytes_per_token(s, dep.kv_dtype), attn_width=attention_width(s), layers=1,
                      hidden=m["hidden"], tflops=dep.draft_tflops, held_params=head,
                      held_bytes=head * DRAFT_WEIGHT_BYTES, fp8=False, kv_groups=kv_groups(s))
    elif draft == "mtp":
        width, moe = BYTES_PER[dep.weights_dtype], m.get("moe_layers", 0) > 0
        held = mtp_params(m)
        expert = expert_params(m) * width if moe else 0.0
        every_pass = (held - (m["experts"] * expert_params(m) if moe else 0)) * width + lm_head * BYTES_PER["bf16"]
        active = held - (m["experts"] - m["experts_per_token"]) * expert_params(m) if moe else held
        drafter = Net(active_params=active + lm_head, weight_bytes=every_pass,
                      kv_bytes_per_token=kv_bytes_per_layer(m, dep.kv_dtype), attn_width=attention_width(m), layers=1,
                      hidden=m["hidden"], tflops=dep.target.tflops, held_params=held, held_bytes=held * width,
                      fp8=dep.weights_dtype != "bf16", expert_bytes=expert, moe_layers=1 if moe else 0,
                      experts=m.get("experts", 0), experts_per_token=m.get("experts_per_token", 0),
                      routing_exponent=model_routing_exponent(m), kv_groups=kv_groups(m),
                      prompt_attn_width=prompt_attention_width(m))
    elif draft == "ngram":
        drafter = NO_MODEL
    else:
        d = dep.draft_shape if draft == "model" else MODELS[draft]
        d_params = model_params(d)
        drafter = Net(active_params=d_params, weight_bytes=d_params * DRAFT_WEIGHT_BYTES,
                      kv_bytes_per_token=kv_bytes_per_token(d, dep.kv_dtype), attn_width=attention_width(d),
                      layers=d["layers"], hidden=d["hidden"], tflops=dep.draft_tflops, held_params=d_params,
                      held_bytes=d_params * DRAFT_WEIGHT_BYTES, fp8=False, kv_groups=kv_groups(d))
    return replace(dep, draft=draft, drafter=drafter)


def memory_budget_bytes(dep):
    """Bytes the engine may fill with weights and KV cache across the replica's GPUs.

    vLLM and SGLang give a share of all GPU memory to weights plus KV cache; TensorRT-LLM
    gives a share of the memory left free once the weights are loaded to the KV cache.
    """
    total = dep.tp * dep.memory_gib * GIB
    if dep.engine.memory_of_free:
        return min(total, static_bytes(dep) + dep.memory_fraction * max(0.0, total - static_bytes(dep)))
    return total * dep.memory_fraction


def static_bytes(dep):
    """Target plus draft weights; under attention data parallelism every GPU holds its own copy of what is not a
    routed expert (non_expert_bytes)."""
    copies = dep.tp - 1 if dep.dp_attention else 0
    return (dep.target.held_bytes + dep.drafter.held_bytes
            + copies * (non_expert_bytes(dep.target) + non_expert_bytes(dep.drafter)))


def non_expert_bytes(net):
    """The bytes a network holds outside its routed experts."""
    return net.held_bytes - net.moe_layers * net.experts * net.expert_bytes


def kv_groups(m):
    """KV heads a model's cache splits into across tensor-parallel GPUs: its KV heads, or 1 for MLA's latent."""
    return 1 if m.get("mla") else m["kv_heads"]


def kv_copies(net, dep):
    """How many times over the replica holds (and each step reads) a network's KV cache: each TP GPU keeps
    max(1, groups / tp) of its KV heads, so past tp = groups the heads are copied, and MLA's one latent is on every
    GPU (vllm/model_executor/models/deepseek_v2.py, DeepseekAttention: "Number of KV heads is less than TP
    size, so we replicate the KV heads"; vllm/distributed/kv_transfer/kv_connector/utils.py: the MLA cache is
    [blocks, block_size, 1, kv_lora_rank + rope] on each GPU). Under attention data parallelism each GPU
    holds its own sequences' whole cache: one copy.
    >>> d = make_deployment("deepseek-v3", "h200", 8, "fp8", draft="mtp")
    >>> kv_copies(d.target, d), kv_copies(make_deployment().target, make_deployment())
    (8.0, 1.0)
    """
    if dep.dp_attention:   # each GPU holds its own sequences' whole cache
        return 1.0
    groups = net.kv_groups or 1
    return dep.tp * math.ceil(groups / dep.tp) / groups


def kv_bytes_per_sequence(dep):
    """KV cache of one sequence at the mean context across the replica, target and draft, copies included
    (kv_copies); sliding-window layers keep their window."""
    window = min(dep.context, dep.target.window) if dep.target.window else 0
    return (dep.context * (dep.target.kv_bytes_per_token * kv_copies(dep.target, dep)
                           + dep.drafter.kv_bytes_per_token * kv_copies(dep.drafter, dep))
            + window * dep.target.window_kv_bytes * kv_copies(dep.target, dep))


def max_concurrency(dep):
    """Largest batch whose KV cache fits beside the weights (0: the weights alone do not fit), at most
    CONCURRENCY_LIMIT: past it no engine schedules a batch."""
    free = memory_budget_bytes(dep) - static_bytes(dep)
    return max(0, min(CONCURRENCY_LIMIT, int(free // kv_bytes_per_sequence(dep))))


def gpu_family(dep):
    """The GPU's family; a --gpu custom one is taken as Hopper, an assumption the tables state."""
    return GPU_FAMILY.get(dep.gpu, "hopper")


def fitted_family(dep):
    """Whether the GPU's family has calibration points of its own (else it borrows another's bandwidth share)."""
    return dep.gpu in GPU_FAMILY and BW_FAMILY[gpu_family(dep)] == f"bw_{gpu_family(dep)}"


def bw_rel(dep):
    """The GPU's own bw_rel (GPUS): 1 for custom hardware, and for a catalog GPU whose bandwidth --gpu-bandwidth
    replaced (the number given is the user's, not the datasheet's)."""
    spec = GPUS.get(dep.gpu)
    return spec.get("bw_rel", 1.0) if spec and dep.bandwidth_tbs == spec["bandwidth_tbs"] else 1.0


def bandwidth_share(dep, fit=FIT):
    """The achieved share of datasheet bandwidth: the GPU family's fitted share, times the GPU's own bw_rel."""
    return getattr(fit, BW_FAMILY[gpu_family(dep)]) * bw_rel(dep)


def allreduce_ms(dep, message_bytes, fit=FIT):
    """One all-reduce across the TP GPUs: a latency that grows with the GPU count, plus a ring's
    2(G-1)/G of the message over one link (REFERENCE.md section 3: 18-29 us at small batch).

    >>> dep = make_deployment(gpu="h100-sxm", tp=4)
    >>> round(allreduce_ms(dep, 0.0, FIT._replace(ar_us=18.0, ar_tp_us=5.0)) * 1e3, 3)   # 18 + 2 x 5 us
    28.0
    """
    if dep.tp == 1:
        return 0.0
    latency_ms = (fit.ar_us + fit.ar_tp_us * (dep.tp - 2)) / 1e3
    return latency_ms + 2 * (dep.tp - 1) / dep.tp * message_bytes / (dep.link_gbs * 1e6 * fit.link_eff)


def attended(net, context):
    """Layer-tokens of KV one query attends to: every full layer reads the context, a sliding layer its window."""
    window = min(context, net.window) if net.window else 0
    return (net.layers - net.window_layers) * context + net.window_layers * window


def rank_sequences(dep, batch):
    """The sequences one GPU's attention and host work serve: all B, or under attention data parallelism the busiest
    rank's ceil(B / tp)."""
    return math.ceil(batch / dep.tp) if dep.dp_attention else batch


def pass_parts(net, dep, batch, tokens_per_seq, fixed_cost, fit=FIT, prefill=0.0):
    """The terms of one forward pass, in ms: weights, attention, compute, communication, fixed, engine.

    tokens_per_seq new tokens for each of `batch` sequences at the mean context, plus
    `prefill` prompt tokens mixed into the same pass (their own attention averages half
    the prompt). The engine's cost per token (Fit.token_us: sampling, logits, per-token
    bookkeeping) is a decoded token's: a prompt token in a prefill chunk is not sampled.
    All K+1 query tokens of a sequence share one read of its KV history. A MoE
    layer reads the experts its tokens touch (expected_experts): a verify pass's B*(K+1)
    tokens touch more than a plain step's B; its fused kernel adds a latency of its own
    (Engine.moe_layer_us) to the pass's fixed cost.
    """
    tokens = batch * tokens_per_seq + prefill
    bytes_per_ms = dep.tp * dep.bandwidth_tbs * 1e9 * bandwidth_share(dep, fit)
    experts = net.moe_layers * touched_experts(net, dep, tokens) * net.expert_bytes
    # Attention data parallel: every GPU reads a whole copy of what is not a routed expert, holds ceil(B / tp) of
    # the sequences (their KV and per-token host work, no copies), and one collective a MoE layer gathers its
    # tokens for the experts and scatters them back, where TP runs two all-reduces a layer.
    dp = dep.tp if dep.dp_attention else 1
    weights = (net.weight_bytes * dp + experts) / (bytes_per_ms * (fit.fp8_eff if net.fp8 else 1.0))
    mine = rank_sequences(dep, batch)   # the sequences the busiest GPU attends to: the replica's pace is dp x them
    kv_per_ms = bytes_per_ms * (fit.fp8_kv_eff if dep.kv_dtype == "fp8" else 1.0)
    window = min(dep.context, net.window) if net.window else 0
    copies = kv_copies(net, dep)   # each GPU reads its own copy of heads it shares with others
    history = mine * dp * copies * (dep.context * net.kv_bytes_per_token + window * net.window_kv_bytes) / kv_per_ms
    one_sequence = (attended(net, dep.context) * fit.attn_ns / 1e6 * ATTN_FLOOR_TBS
                    / (dep.bandwidth_tbs * bw_rel(dep))
                    / (fit.fp8_kv_eff if dep.kv_dtype == "fp8" else 1.0))   # the kernel dequantises each token
    attention = (max(history, one_sequence)
                 + tokens * copies * (net.kv_bytes_per_token + net.window_kv_bytes) / kv_per_ms)
    flops = batch * tokens_per_seq * (2 * net.active_params + 4 * net.attn_width * attended(net, dep.context))
    prompt = prefill * (2 * net.active_params
                        + 4 * (net.prompt_attn_width or net.attn_width) * attended(net, dep.input_tokens / 2))
    if dep.dp_attention and prefill:   # one rank prefills a prompt: all but its routed experts' math on one GPU
        routed = net.moe_layers * net.experts_per_token * net.expert_bytes
        alone = prompt - prefill * 2 * net.active_params * routed / (net.weight_bytes + routed)
        flops, prompt = flops + prompt - alone, alone * dep.tp
    efficiency = fit.flop_eff * (fit.flop_cdna if gpu_family(dep) == "cdna" else 1.0)   # AMD's own share of it
    compute = (flops + prompt) / (dep.tp * net.tflops * 1e9 * efficiency)
    collectives = net.moe_layers if dep.dp_attention else 2 * net.layers
    communication = collectives * allreduce_ms(dep, tokens * net.hidden * ACTIVATION_BYTES, fit)
    return dict(weights=weights, attention=attention, compute=compute, communication=communication,
                fixed=fixed_cost + net.layers * fit.layer_us / 1e3 + net.moe_layers * dep.engine.moe_layer_us / 1e3,
                engine=mine * tokens_per_seq * fit.token_us / 1e3)


def pass_ms(net, dep, batch, tokens_per_seq, fixed_cost, fit=FIT, prefill=0.0):
    """Time of one forward pass (pass_parts, summed); fixed_cost: the engine's fixed cost of it (fixed_ms)."""
    return sum(pass_parts(net, dep, batch, tokens_per_seq, fixed_cost, fit, prefill).values())


def target_parts(dep, batch, tokens_per_seq, fit=FIT, prefill=0.0):
    """The terms of one target pass (pass_parts) with the engine's fixed cost of a pass, each times its own_*
    factor (OWN_PARTS: 1 in the published fit)."""
    parts = pass_parts(dep.target, dep, batch, tokens_per_seq, fixed_ms(dep, "pass", fit), fit, prefill)
    if dep.engine.seq_cost:   # a served step's host work per running sequence, where it is measured
        parts["engine"] += rank_sequences(dep, batch) * getattr(fit, dep.engine.seq_cost) / 1e3
    return {term: ms * (getattr(fit, OWN_PARTS[term]) if term in OWN_PARTS else 1.0) for term, ms in parts.items()}


def target_pass_ms(dep, batch, tokens_per_seq, fit=FIT, prefill=0.0):
    """Time of one target pass: a plain step over 1 token a sequence, a verify pass over K + 1."""
    return sum(target_parts(dep, batch, tokens_per_seq, fit, prefill).values())


def verify_tokens(dep, k):
    """Tokens a sequence carries into the verify pass: K + 1 for a chain, the tree's own count for a tree."""
    return dep.verify_tokens or k + 1


def fixed_field(dep, what):
    """The Fit field of the engine's fixed cost of a target pass ("pass"), a draft step ("draft") or a round's
    bookkeeping ("round"); an engine without speculative points to fit borrows another's (Engine.draft_costs_of)."""
    engine = dep.engine
    return f"{what}_fixed_ms_{engine.pass_cost_of if what == 'pass' else engine.draft_costs_of}"


def fixed_ms(dep, what, fit=FIT):
    """The engine's fixed cost of a target pass, a draft step or a round's bookkeeping, in ms (fixed_field)."""
    return getattr(fit, fixed_field(dep, what))


def prefill_tokens(dep, batch):
    """Prompt tokens a request's decode steps carry in a closed loop at concurrency B, on average.

    Each request leaves after OUTPUT tokens and is replaced by one with INPUT prompt tokens,
    so the server prefills B * I / O prompt tokens a step (steady state, chunked prefill on;
    REFERENCE.md section 3). A request's TPOT sees only the prompts of the other B - 1: its
    own is prefilled before its first token (TTFT), and its successor arrives after its
    last. So (B - 1) * I / O: none at concurrency 1, where NIM's batch-1 runs at 2,000-7,000
    prompt tokens showed the B * I / O charge 10-26% too dear in the context slope.
    >>> prefill_tokens(make_deployment(input_tokens=5000, output_tokens=500), 25)
    240.0
    """
    return max(batch - 1, 0) * dep.input_tokens / dep.output_tokens


COST_MEMO = {}   # (what, deployment, fit, batch) -> ms: Deployment and Fit are frozen and hashed by value


def memoised(what, dep, batch, fit, compute):
    """compute() once per deployment, fit and batch: the tables ask for the same passes many times."""
    key = (what, dep, fit, batch)
    if key not in COST_MEMO:
        if len(COST_MEMO) > 65536:
            COST_MEMO.clear()
        COST_MEMO[key] = compute()
    return COST_MEMO[key]


def decode_step_ms(dep, batch, fit=FIT):
    """One decode step without speculation and without any prefill: a target pass over one token per sequence."""
    return memoised("decode", dep, batch, fit, lambda: target_pass_ms(dep, batch, 1, fit))


def dense_equivalent(dep):
    """The deployment with a dense target of the same active size: every pass reads k experts, no more."""
    t = dep.target
    dense = replace(t, weight_bytes=t.weight_bytes + t.moe_layers * t.experts_per_token * t.expert_bytes,
                       moe_layers=0, experts=0, experts_per_token=0, expert_bytes=0.0)
    return replace(dep, target=dense)


@dataclass(frozen=True)
class MoeVerify:
    """What a verify pass reads of a mixture of experts against a plain step (moe_verify)."""
    k: int                   #: draft length K
    batch: int               #: batch size B
    verify_tokens: int       #: tokens a sequence carries into the verify pass
    experts: int             #: routed experts per layer
    experts_per_token: int   #: experts a token is routed to
    plain_experts: float     #: distinct experts a plain step's B tokens touch per layer
    verify_experts: float    #: distinct experts the verify pass's tokens touch per layer
    plain_read: float        #: experts a plain step reads per layer at the replica's pace (touched_experts)
    verify_read: float       #: likewise for the verify pass: under expert parallelism, ep x the busiest GPU's
    eps: float               #: decode eps of the round
    eps_dense: float         #: decode eps of a dense model of the same active size


def moe_verify(dep, k, batch, fit=FIT):
    """Experts a plain step and a verify pass touch per MoE layer, and eps beside a dense model's of the same active size."""
    t = dep.target
    verify = verify_tokens(dep, k)
    return MoeVerify(k=k, batch=batch, verify_tokens=verify, experts=t.experts, experts_per_token=t.experts_per_token,
                     plain_experts=expected_experts(t.experts, t.experts_per_token, batch, t.routing_exponent),
                     verify_experts=expected_experts(t.experts, t.experts_per_token, batch * verify,
                                                     t.routing_exponent),
                     plain_read=touched_experts(t, dep, batch), verify_read=touched_experts(t, dep, batch * verify),
                     eps=eps_decode(dep, batch, k, fit),
                     eps_dense=eps_decode(dense_equivalent(dep), batch, k, fit))


def plain_step_parts(dep, batch, fit=FIT):
    """A plain step's terms in ms (pass_parts), with its prefill share as a term of its own."""
    parts = target_parts(dep, batch, 1, fit)
    parts["prefill share"] = prefill_share_ms(dep, batch, fit)
    return parts


@dataclass(frozen=True)
class EpsGrowth:
    """The term of a round that moves eps most between two batch sizes (eps_growth)."""
    k: int                   #: draft length K
    b0: int                  #: the smaller batch
    b1: int                  #: the larger batch
    term: str                #: the term, in words
    change: float            #: its change in eps from b0 to b1 (a fraction of a plain step)
    extra_b0: float          #: what it adds to a round over a plain step at b0, ms
    extra_b1: float          #: likewise at b1, ms
    plain_b0: float          #: a plain decode step at b0, ms
    plain_b1: float          #: likewise at b1, ms
    eps_b0: float            #: decode eps at b0
    eps_b1: float            #: decode eps at b1


def eps_growth(dep, k, b0, b1, fit=FIT):
    """The term of a round (against a plain step, decode only) that moves eps most from batch b0 to b1."""
    def extra(batch):
        plain = target_parts(dep, batch, 1, fit)
        verify = target_parts(dep, batch, verify_tokens(dep, k), fit)
        terms = {f"the verify pass's {t}": fit.own_verify * (verify[t] - plain[t]) for t in plain}
        terms["the draft steps and bookkeeping"] = round_ms(dep, batch, k, fit) - verify_pass_ms(dep, batch, k, fit)
        return terms, sum(plain.values())
    (e0, p0), (e1, p1) = extra(b0), extra(b1)
    change = {t: e1[t] / p1 - e0[t] / p0 for t in e0}
    term = max(change, key=lambda t: abs(change[t]))
    return EpsGrowth(k=k, b0=b0, b1=b1, term=term, change=change[term], extra_b0=e0[term], extra_b1=e1[term],
                     plain_b0=p0, plain_b1=p1, eps_b0=eps_decode(dep, b0, k, fit),
                     eps_b1=eps_decode(dep, b1, k, fit))


def plain_step_ms(dep, batch, fit=FIT):
    """A plain step as a closed-loop benchmark's mean TPOT sees it: decode plus its share of prefill."""
    return decode_step_ms(dep, batch, fit) + prefill_share_ms(dep, batch, fit)


def prefill_share_ms(dep, batch, fit=FIT):
    """What the prompts a request's decode steps carry add to a step, on average (prefill_parts), times own_prefill;
    the same in a plain step and, per token, in a round."""
    return memoised("prefill", dep, batch, fit, lambda: fit.own_prefill * sum(prefill_parts(dep, batch, fit).values()))


def by_memory(dep, tiers):
    """An engine default that steps with the GPU's memory: the value of the first (least GiB, value) tier the GPU
    reaches, or the smallest on a GPU the engine keeps at its smallest defaults (Engine.prefill_budget_small)."""
    if dep.gpu in dep.engine.prefill_budget_small:
        return tiers[-1][1]
    return next(value for least, value in tiers if dep.memory_gib >= least)


def step_budget(dep):
    """Tokens one scheduler step carries at most by default, decodes' included: the engine's budget for the GPU's
    memory (Engine.prefill_budget), a rank's where attention data parallelism divides it.
    >>> step_budget(make_deployment(gpu="h100-sxm")), step_budget(make_deployment(gpu="b200"))
    (8192, 16384)
    """
    budget = by_memory(dep, dep.engine.prefill_budget)
    if dep.dp_attention and dep.engine.prefill_budget_per_dp:
        budget //= dep.tp
    return budget


def prefill_chunk(dep):
    """Prompt tokens one step prefills: a whole prompt, at most the step's budget (step_budget); the budget's decode
    tokens are a few against it and left out.
    >>> prefill_chunk(make_deployment(gpu="h100-sxm", input_tokens=20000)), prefill_chunk(make_deployment(input_tokens=500))
    (8192, 500)
    """
    return min(dep.input_tokens, step_budget(dep))


def prefill_parts(dep, batch, fit=FIT):
    """The prefill share by term (target_parts' names): a request's decode shares P / C steps a step with a prefill
    chunk of C prompt tokens (P = prefill_tokens, C = prefill_chunk), each costing what C prompt tokens add to a
    pass of B decodes. Not a flat charge per prompt token: for a dense model the two agree (every term is linear in
    the prompt tokens), but a MoE chunk touches each expert once however many of its tokens route there, so
    spreading its tokens over every step (P a step) would read the experts P / C times over."""
    prompts = prefill_tokens(dep, batch)
    if prompts <= 0:
        return {}
    chunk = prefill_chunk(dep)
    plain, mixed = target_parts(dep, batch, 1, fit), target_parts(dep, batch, 1, fit, chunk)
    return {term: prompts / chunk * (mixed[term] - plain[term]) for term in plain}


def runs_a_draft_model(dep):
    """Whether drafting runs a network: not for n-gram lookup (NO_MODEL, no layers)."""
    return dep.drafter.layers > 0


def draft_step_ms(dep, batch, tokens_per_seq, fit=FIT):
    """One draft step over tokens_per_seq tokens a sequence; a drafter with no layers (NO_MODEL) runs none."""
    if not runs_a_draft_model(dep):
        return 0.0
    return pass_ms(dep.drafter, dep, batch, tokens_per_seq, fixed_ms(dep, "draft", fit), fit)


def round_ms(dep, batch, k, fit=FIT):
    """One speculative round without prefill: K draft steps, then one verify pass over K+1 tokens a sequence.

    A tree draft expands topk tokens a sequence at each step after the first and verifies
    dep.verify_tokens a sequence (SGLang's --speculative-num-draft-tokens).
    """
    return (fit.own_round * fixed_ms(dep, "round", fit) + fit.own_draft * draft_ms(dep, batch, k, fit)
            + verify_pass_ms(dep, batch, k, fit) - hidden_ms(dep, k, fit))


def hidden_ms(dep, k, fit=FIT):
    """The host time of a round its engine era no longer waits for (Era.saving_ms), at most the round's fixed costs:
    its bookkeeping and its K draft steps' fixed costs (a kernel's own time is never hidden)."""
    fixed = fit.own_round * fixed_ms(dep, "round", fit)
    if runs_a_draft_model(dep):
        fixed += fit.own_draft * k * fixed_ms(dep, "draft", fit)
    return min(dep.era.saving_ms(draft_kind(dep.draft), dep.topk), fixed)


def draft_ms(dep, batch, k, fit=FIT):
    """A round's K draft steps (before own_draft): a chain's are alike; a tree's steps after the first expand topk
    tokens a sequence."""
    first = draft_step_ms(dep, batch, 1, fit)
    return first + (k - 1) * (first if dep.topk == 1 else draft_step_ms(dep, batch, dep.topk, fit))


def verify_pass_ms(dep, batch, k, fit=FIT):
    """The verify pass: a plain decode step plus what its extra tokens add (times own_verify)."""
    plain = decode_step_ms(dep, batch, fit)
    return plain + fit.own_verify * (target_pass_ms(dep, batch, verify_tokens(dep, k), fit) - plain)


# eps, a round's cost over a plain step's minus one, has two meanings, each a function: eps_decode, the decode
# step's alone, which sets the break-even (tau = 1 + eps); and eps_seen, a round with the prefill its tau tokens
# bring in a closed loop, which a benchmark's speedup divides by. Both come from the same cost, spec_tpot_ms.

def eps_decode(dep, batch, k, fit=FIT):
    """eps of decoding: a round's time over a plain decode step's, minus one, prefill left out.

    The break-even does not depend on the prefill share: a round of tau tokens carries tau steps' prefill, so per
    token both sides pay the same (eps_seen). K may be a mean, for rounds that drafted different lengths (K varied
    with the batch, a K-by-batch table): a round's cost is close to linear in K (K draft steps, a verify pass over
    K + 1 tokens), so it is interpolated between the two whole Ks around it. Below 1, K = 1's: newer vLLM leaves
    draft tokens a grammar rejected out of the count (scheduler.py, make_spec_decoding_stats,
    num_invalid_spec_tokens), so a round can count fewer tokens than it drafted and paid for.
    """
    whole = max(1, math.floor(k))
    share = k - whole
    if share > 0.0:
        return (1.0 - share) * eps_decode(dep, batch, whole, fit) + share * eps_decode(dep, batch, whole + 1, fit)
    return round_ms(dep, batch, whole, fit) / decode_step_ms(dep, batch, fit) - 1.0


def spec_tpot_ms(dep, batch, rounds_per_token, round_cost, fit=FIT, plain_tokens=0.0):
    """Mean TPOT in a closed loop, prefill included: what one generated token costs.

    A token costs its share of rounds (1/tau of a round at one alpha; a traffic mix sums
    share/tau over its domains), any plain steps, and one plain step's prefill share q: the
    prompts arriving per generated token are the same with speculation or without
    (prefill_tokens). Every speedup with the prefill share is plain_step_ms over this (tpot_speedup).
    """
    return (rounds_per_token * round_cost + plain_tokens * decode_step_ms(dep, batch, fit)
            + prefill_share_ms(dep, batch, fit))


def tpot_speedup(dep, batch, rounds_per_token, round_cost, fit=FIT, plain_tokens=0.0):
    """The speedup of tokens that cost spec_tpot_ms over plain decoding's: for one tau, speedup(tau, eps_seen)."""
    return plain_step_ms(dep, batch, fit) / spec_tpot_ms(dep, batch, rounds_per_token, round_cost, fit, plain_tokens)


def eps_seen(eps, tau, dep, batch, fit=FIT):
    """eps with the prefill share: ((1 + eps) D + tau q) / (D + q) - 1 for decode eps, decode step D and prefill
    share q.

    A round delivers tau tokens a sequence, so in a closed loop it carries tau steps' worth
    of arriving prompts; the speedup tau / (1 + this) is diluted towards 1, the break-even
    (tau = 1 + eps) is unchanged.
    """
    seen_round = tau * spec_tpot_ms(dep, batch, 1.0 / tau, (1.0 + eps) * decode_step_ms(dep, batch, fit), fit)
    return seen_round / plain_step_ms(dep, batch, fit) - 1.0


def eps_grown(eps_b1, dep, batch, k, fit=FIT):
    """The grid's decode eps at batch B: a given eps at B=1 ("auto" = the model's) grown as the model's own grows.

    1 + eps(B) = (1 + eps(1)) * [(1 + eps_decode(B)) / (1 + eps_decode(1))], so "auto" is
    exactly the cost model and a given eps keeps its value at B=1. It never falls below
    what the verify pass alone costs over a plain step (no draft can make a round cheaper).
    """
    at_one = eps_decode(dep, 1, k, fit)
    base = at_one if eps_b1 == "auto" else eps_b1
    scaled = (1.0 + base) * (1.0 + eps_decode(dep, batch, k, fit)) / (1.0 + at_one) - 1.0
    verify_only = verify_pass_ms(dep, batch, k, fit) / decode_step_ms(dep, batch, fit) - 1.0
    return max(scaled, verify_only, 0.0)


# ---------------------------------------------------------------- simulation over requests
# `vllm bench serve` measures requests: a request's TPOT is its decode time over its tokens
# after the first, and P99 TPOT is np.percentile over requests (vllm/benchmarks/serve.py,
# calculate_metrics). Each simulated request has its own per-token alpha (the cell's, or its
# traffic-mix domain's, plus ALPHA_SPREAD x z) and output length (the mean times a lognormal
# of s.d. OUTPUT_SPREAD in log space). One of at most LOOP_TOKENS decode tokens runs
# decode_request; a longer one draws its rounds n, full rounds F and jitter sum from their
# joint normal limit (renewal theory: n ~ N/tau + overshoot, variance N var(T) / tau^3;
# F from the renewal-reward theorem), a handful of numbers instead of hundreds of rounds.
#
# All sequences of a batch share each round's time, so a request's TPOT is round_ms x its
# jitter sum / N: no draw depends on eps or B, and every (eps, B) cell of one (alpha, K)
# rescales the same requests. Per-token and per-chunk ITL follow in closed form from the
# rounds per token that accept A drafts (round_mix) and the lognormal jitter.
#
# Sample size: independent replicates of REPLICATE_REQUESTS requests, each stratified (a Latin
# hypercube over z, length and domain). Their number starts at 8 and grows by half until every
# P99 TPOT is within PRECISION at 95% confidence (Student's t over the replicates' P99s,
# replicated Latin hypercube sampling) or MAX_REPLICATES; the pooled requests give the figures.

REPLICATE_REQUESTS = 128  # requests in one replicate
MAX_REPLICATES = 64       # where the growth stops: 8,192 requests
PRECISION = 0.02          # target half-width of P99 TPOT at 95% confidence, relative
PRECISION_MARGIN = 1.15   # stop at PRECISION / this: the replicates' estimate runs low where the growth stops
                          # (python bench/check_precision.py: at alpha 0.8, K 5 over 60 seeds the real half-width
                          # is 2.4% without it, 1.9% with it)
LOOP_TOKENS = 64          # requests of at most this many decode tokens run decode_request round by round
NORMAL = statistics.NormalDist()
Z_NODES = [NORMAL.inv_cdf((i + 0.5) / 64) for i in range(64)]   # midpoint quadrature over a request's z
JITTER_SD = math.sqrt(math.exp(ROUND_JITTER ** 2) - 1.0)          # s.d. of one round's jitter (mean 1)
JITTER_P50 = math.exp(JITTER_MU)                                       # its median
JITTER_P99 = math.exp(JITTER_MU + ROUND_JITTER * NORMAL.inv_cdf(0.99))   # its 99th percentile

# Draws and Requests are columns over requests, tuples on purpose: run_requests unpacks a replicate's draws row by
# row (zip(*draws)) and builds Requests from its rows (zip(*rows)), in the order of their fields.
Draws = namedtuple("Draws", "z length domain g seeds")
# One replicate's randomness: z and a length multiplier (mean 1) per request, a uniform that
# picks its domain, four standard normals (rounds, full rounds, spec and plain jitter) and a
# seed for decode_request; shared by every (alpha, K).
Requests = namedtuple("Requests", "alpha tokens rounds full spec plain domain spec_n rounds_n full_n plain_n")
# One replicate's decoded requests, a list over requests in each field: per-token alpha,
# decode tokens N (after the first), rounds, rounds that accepted all K, spec and plain time
# (in rounds and in plain steps, jitter included), domain index; the _n fields per decode token.


@dataclass(frozen=True)
class Decode:
    """The simulated requests of one (alpha or traffic mix, K, spread), pooled over replicates (simulate_requests):
    what every (eps, B) cell of that pair rescales, since no draw depends on eps or B."""
    k: int                   #: draft length K
    spread: float            #: s.d. of the requests' alphas
    tau: float               #: tokens per round the batch sees, 1/E[1/tau] over requests (round_mix)
    by_accepted: list        #: rounds per token that accepted A = 0..K
    full_share: float        #: share of rounds that accepted all K
    itl_p50: float           #: per-token ITL median, in rounds
    itl_p99: float           #: per-token ITL P99, in rounds
    requests: int            #: requests simulated
    tokens: float            #: decode tokens, summed over requests
    spec: float              #: speculative time in rounds (jitter included), summed
    plain: float             #: plain time in plain steps (jitter included), summed
    rounds: float            #: rounds, summed
    full: float              #: rounds that accepted all K, summed
    per_token: tuple         #: (spec_n, rounds_n, full_n): per request, per decode token
    heavy: list              #: the slowest requests' (spec_n, rounds_n, full_n) (cell_latency's two-pass shortcut)
    rest_max: tuple          #: the largest spec_n and rounds_n among the others
    tpot_spec: list          #: spec_n sorted
    tpot_plain: list         #: plain_n sorted
    means: list              #: means of spec_n, rounds_n, full_n and plain_n
    speedup_ratio: float     #: sum(plain) / sum(spec)
    speedup_ratio_se: float  #: its standard error over the replicates
    precision: float         #: achieved relative half-width of P99 TPOT at 95% confidence
    slow_alpha: float        #: mean alpha of the requests at or above P99 TPOT
    slow_domains: list       #: share by domain of those requests


def clip01(x):
    return 0.0 if x < 0.0 else 1.0 if x > 1.0 else x


def percentile(values, q):
    """The q-quantile of sorted values, interpolated linearly (numpy's default, which vllm bench uses).

    >>> percentile([1.0, 2.0, 3.0, 5.0], 0.5), percentile([1.0, 2.0, 3.0, 5.0], 1.0)
    (2.5, 5.0)
    """
    at = q * (len(values) - 1)
    i = int(at)
    if i + 1 >= len(values):
        return values[-1]
    return values[i] + (at - i) * (values[i + 1] - values[i])


def round_mix(domains, k, spread):
    """(tau the batch sees, rounds per token that accept A = 0..K) over requests spread around each domain.

    domains: (share of requests, mean alpha, mean output tokens). A domain delivering a share s of
    the tokens runs s E[P(A)/tau] rounds per token that accept A, E over its requests' alphas;
    tau is one over the sum: a harmonic blend, as in traffic_blend.
    >>> round_mix(((1.0, 0.5, 100),), 1, 0.0)     # tau 1.5: a third of a round per token accepts 0, a third 1
    (1.5, [0.3333333333333333, 0.3333333333333333])
    """
    token_total = sum(share * tokens for share, _, tokens in domains)
    nodes = Z_NODES if spread > 0 else (0.0,)
    per_token = [0.0] * (k + 1)
    for share, alpha, tokens in domains:
        weight = share * tokens / token_total / len(nodes)
        for z in nodes:
            a = clip01(alpha + spread * z)
            rounds = weight / acceptance_length(a, k)      # this node's rounds per token
            for accepted, p in enumerate(round_distribution(a, k)):
                per_token[accepted] += rounds * p
    return 1.0 / sum(per_token), per_token


def mixture_quantile(q, parts):
    """x with a share q at or below it, for a mixture of scale x jitter; parts: (scale, weight).

    >>> round(mixture_quantile(0.99, [(2.0, 1.0)]) / (2.0 * JITTER_P99), 9)
    1.0
    """
    s = ROUND_JITTER
    parts = [(math.log(scale) + JITTER_MU, w) for scale, w in parts if w > 0]
    total = sum(w for _, w in parts)
    lo, hi = min(mu for mu, _ in parts) - 9 * s, max(mu for mu, _ in parts) + 9 * s
    y = (lo + hi) / 2
    for _ in range(100):                # Newton on log x, kept inside a shrinking bisection bracket
        share = density = 0.0
        for mu, w in parts:
            t = (y - mu) / s
            share += w * 0.5 * math.erfc(-t / math.sqrt(2.0))
            density += w * math.exp(-t * t / 2) / (s * math.sqrt(2 * math.pi))
        gap = share / total - q
        lo, hi = (lo, y) if gap > 0 else (y, hi)
        step = gap * total / density if density > 0 else hi - lo
        if abs(step) < 1e-12 or hi - lo < 1e-12:
            break
        y = y - step if lo < y - step < hi else (lo + hi) / 2
    return math.exp(y)


def mixture_share(x, parts):
    """The share of the mixture at or below x (its CDF), parts as in mixture_quantile."""
    s = ROUND_JITTER
    total = sum(w for _, w in parts)
    return sum(w * 0.5 * math.erfc(-(math.log(x / scale) - JITTER_MU) / (s * math.sqrt(2.0)))
               for scale, w in parts if w > 0) / total if x > 0 else 0.0


def draw_requests(n, seed, replicate, output_spread):
    """One replicate's randomness for n requests, stratified in z, length and domain (a Latin hypercube)."""
    rng = random.Random(f"{seed}:{replicate}")

    def stratified():
        order = list(range(n))
        rng.shuffle(order)
        return [min(max((i + rng.random()) / n, 1e-12), 1.0 - 1e-12) for i in order]

    z = [NORMAL.inv_cdf(u) for u in stratified()]
    length = [math.exp(output_spread * NORMAL.inv_cdf(u) - output_spread ** 2 / 2) for u in stratified()]
    domain = stratified()
    g = [(rng.gauss(0.0, 1.0), rng.gauss(0.0, 1.0), rng.gauss(0.0, 1.0), rng.gauss(0.0, 1.0)) for _ in range(n)]
    return Draws(z=z, length=length, domain=domain, g=g, seeds=[rng.getrandbits(32) for _ in range(n)])


def renewal_draw(alpha, k, tokens, g_rounds, g_full):
    """(rounds, rounds that accepted all K) of a request of `tokens` decode tokens, from their joint normal limit
    given two standard normals: what decode_request would return, without its hundreds of rounds.

    Rounds: N / tau plus the last round's overshoot, variance N var(T) / tau^3 (renewal theory, T = A + 1 of
    round_distribution). Full rounds: p_full per round (Wald); their variance and covariance with the rounds from the
    renewal-reward CLT, with Cov(T, 1{A = K}) = p_full (K + 1 - tau).
    """
    tau, square, p_full = round_moments(alpha, k)
    var = square - tau * tau if square > tau * tau else 0.0          # var(T), tokens a round
    mean_rounds = tokens / tau + (square - tau) / (2 * tau * tau)   # the last round overshoots N
    sd_rounds = math.sqrt(tokens * var / tau) / tau
    rounds = mean_rounds + sd_rounds * g_rounds
    rounds = tokens / (k + 1) if rounds < tokens / (k + 1) else tokens if rounds > tokens else rounds
    cov_tf = p_full * (k + 1 - tau)
    var_full = tokens * (p_full * (1 - p_full) - 2 * p_full / tau * cov_tf + (p_full / tau) ** 2 * var) / tau
    # slope: their covariance over sd(rounds), the part of F that moves with the rounds; rest: the variance of F
    # left over.
    slope = tokens * (p_full * var / tau - cov_tf) / (tau * tau * sd_rounds) if sd_rounds > 0 else 0.0
    rest = var_full - slope * slope
    full = p_full * mean_rounds + slope * g_rounds + (math.sqrt(rest) * g_full if rest > 0 else 0.0)
    return rounds, 0.0 if full < 0.0 else rounds if full > rounds else full


def run_requests(domains, k, spread, draws):
    """Decode one replicate's requests (draw_requests) around each domain's alpha: Requests."""
    ends = list(itertools.accumulate(share for share, _, _ in domains))
    out = []
    for z, scale, u, (g_rounds, g_full, g_spec, g_plain), seed in zip(*draws):
        domain = min(bisect.bisect_right(ends, u), len(domains) - 1)
        _, mean_alpha, mean_tokens = domains[domain]
        alpha = clip01(mean_alpha + spread * z)
        tokens = round(mean_tokens * scale) - 1                # TPOT counts the tokens after the first
        tokens = tokens if tokens > 1 else 1
        if tokens <= LOOP_TOKENS:
            accepted, spec = decode_request(alpha, k, tokens, random.Random(seed))
            rounds, full = len(accepted), accepted.count(k)
        else:
            rounds, full = renewal_draw(alpha, k, tokens, g_rounds, g_full)
            spec = rounds + JITTER_SD * math.sqrt(rounds) * g_spec
        plain = tokens + JITTER_SD * math.sqrt(tokens) * g_plain
        out.append((alpha, tokens, rounds, full, spec, plain, domain,
                    spec / tokens, rounds / tokens, full / tokens, plain / tokens))
    return Requests(*zip(*out))


def replicate_p99s(requests):
    """P99 TPOT over one replicate's Requests, in rounds or steps per token: with speculation, plain
    decoding, and two-pass with a second pass every round (the most it can add)."""
    return (percentile_top(requests.spec_n, 0.99), percentile_top(requests.plain_n, 0.99),
            percentile_top([s + n for s, n in zip(requests.spec_n, requests.rounds_n)], 0.99))


def student_t975(df):
    """Student's t at 0.975 (two-sided 95%) for df degrees of freedom: Abramowitz & Stegun 26.7.5.

    >>> round(student_t975(7), 3), round(student_t975(30), 3)
    (2.365, 2.042)
    """
    z = NORMAL.inv_cdf(0.975)
    terms = [(z ** 3 + z) / 4, (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96,
             (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384,
             (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160]
    return z + sum(g / df ** (i + 1) for i, g in enumerate(terms))


def stdev(values):
    """Sample standard deviation in floats (statistics.stdev computes it exactly, in fractions: slowly).

    >>> stdev([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) == statistics.stdev([2, 4, 4, 4, 5, 5, 7, 9])
    True
    """
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def halfwidth(values):
    """Relative half-width at 95% confidence of the mean of independent replicates' values (Student's t)."""
    n = len(values)
    return student_t975(n - 1) * stdev(values) / math.sqrt(n) / statistics.fmean(values)


def simulate_requests(domains, k, spread, draws_for):
    """Requests of one (alpha or traffic mix, K), replicated until their P99 TPOTs are precise: a Decode."""
    tau, by_accepted = round_mix(domains, k, spread)
    replicates, p99s = [], []
    while True:
        for r in range(len(replicates), min(MAX_REPLICATES, max(8, len(replicates) * 3 // 2))):
            replicates.append(run_requests(domains, k, spread, draws_for(r)))
            p99s.append(replicate_p99s(replicates[-1]))
        precision = max(halfwidth(column) for column in zip(*p99s))
        if precision <= PRECISION / PRECISION_MARGIN or len(replicates) >= MAX_REPLICATES:
            break
    ratios = [sum(rep.plain) / sum(rep.spec) for rep in replicates]
    alpha, tokens, rounds, full, spec, plain, domain, spec_n, rounds_n, full_n, plain_n = (
        list(itertools.chain.from_iterable(column)) for column in zip(*replicates))
    tpot_spec = sorted(spec_n)
    threshold = percentile(tpot_spec, 0.99)
    slow = [i for i, v in enumerate(spec_n) if v >= threshold]
    # The slowest requests hold the two-pass P99 of every cell too (cell_latency checks that they do).
    heavy = heapq.nlargest(max(64, 4 * top_needed(len(spec_n), 0.99)), zip(spec_n, rounds_n, full_n))
    unit = token_itl_parts(by_accepted, 1.0)
    return Decode(k=k, spread=spread, tau=tau, by_accepted=by_accepted, full_share=by_accepted[k] / sum(by_accepted),
                  itl_p50=mixture_quantile(0.50, unit), itl_p99=mixture_quantile(0.99, unit),
                  requests=len(spec_n), tokens=sum(tokens), spec=sum(spec), plain=sum(plain), rounds=sum(rounds),
                  full=sum(full), per_token=(spec_n, rounds_n, full_n), heavy=heavy,
                  rest_max=(heavy[-1][0], max(n for s, n in zip(spec_n, rounds_n) if s <= heavy[-1][0])),
                  tpot_spec=tpot_spec, tpot_plain=sorted(plain_n),
                  means=[statistics.fmean(column) for column in (spec_n, rounds_n, full_n, plain_n)],
                  speedup_ratio=sum(plain) / sum(spec), speedup_ratio_se=stdev(ratios) / math.sqrt(len(ratios)),
                  precision=precision, slow_alpha=statistics.fmean(alpha[i] for i in slow),
                  slow_domains=[sum(domain[i] == d for i in slow) / len(slow) for d in range(len(domains))])


def top_needed(n, q):
    """How many of n values, from the largest down, percentile(q) reads."""
    return n - int(q * (n - 1))


def percentile_of_top(top, n, q):
    """percentile(q) of n values from their top_needed(n, q) largest, in descending order."""
    at = q * (n - 1)
    return top[-1] + (at - int(at)) * (top[-2] - top[-1]) if len(top) > 1 else top[-1]


def percentile_top(values, q):
    """percentile() of unsorted values for q near 1, sorting only the top ones (heapq.nlargest)."""
    return percentile_of_top(heapq.nlargest(top_needed(len(values), q), values), len(values), q)


def token_itl_parts(by_accepted, round_cost_ms):
    """Per-token ITL as mixture_quantile parts: a round that accepted A drafts gives each of its A + 1
    tokens round_cost_ms x jitter / (A + 1), so it enters with weight A + 1."""
    return [(round_cost_ms / (a + 1), w * (a + 1)) for a, w in enumerate(by_accepted)]


def other_rejects(dec, batch):
    """P(another of the B sequences rejects a draft this round) = 1 - f^(B-1), f the share of full rounds."""
    return 1.0 - dec.full_share ** (batch - 1)


@dataclass(frozen=True)
class ItlMixtures:
    """Per-token ITL of the three ways to decode, each as mixture_quantile parts: [(scale in ms, weight)]."""
    plain: list      #: plain decoding: one plain step a token
    spec: list       #: speculative decoding as vLLM and SGLang run it (rejection sampling in the verify pass)
    two_pass: list   #: the lesson's two-pass model: a plain step more for a round with a rejection in the batch


def itl_parts(dec, plain_ms, spec_ms, batch):
    """Per-token ITL of plain decoding, speculative decoding (rejection sampling) and two-pass: ItlMixtures.

    Two-pass (the lesson's model) adds a plain step to a round that rejected, or whose batch did.
    """
    k, w, p_other = dec.k, dec.by_accepted, other_rejects(dec, batch)
    return ItlMixtures(plain=[(plain_ms, 1.0)], spec=token_itl_parts(w, spec_ms),
                       two_pass=token_itl_parts(w[:k] + [w[k] * p_other], spec_ms + plain_ms)
                       + [(spec_ms / (k + 1), w[k] * (k + 1) * (1 - p_other))])


@dataclass(frozen=True)
class Latency:
    """What `vllm bench serve` would report for one cell (cell_latency): TPOT over requests, ITL per token and per
    chunk, and the speedup over the simulated requests. Two-pass: the lesson's model (itl_parts)."""
    tpot_plain_mean_ms: float         #: mean TPOT over requests, plain decoding
    tpot_plain_p99_ms: float          #: P99 TPOT over requests, plain decoding
    tpot_spec_mean_ms: float          #: mean TPOT with speculation
    tpot_spec_p50_ms: float           #: median TPOT with speculation
    tpot_spec_p99_ms: float           #: P99 TPOT with speculation
    tpot_spec_two_pass_mean_ms: float   #: mean TPOT under the two-pass model
    tpot_spec_two_pass_p99_ms: float  #: P99 TPOT under the two-pass model
    itl_plain_mean_ms: float          #: per-token ITL, plain: mean, P50, P99
    itl_plain_p50_ms: float
    itl_plain_p99_ms: float
    itl_spec_mean_ms: float           #: per-token ITL with speculation (a round's time over its tokens)
    itl_spec_p50_ms: float
    itl_spec_p99_ms: float
    itl_spec_two_pass_mean_ms: float  #: per-token ITL under the two-pass model
    itl_spec_two_pass_p50_ms: float
    itl_spec_two_pass_p99_ms: float
    round_itl_spec_p99_ms: float      #: P99 ITL per streamed chunk (one round), as vLLM's benchmark measures ITL
    round_itl_two_pass_p99_ms: float  #: the same under the two-pass model
    speedup_mc: float                 #: plain over speculative decode time, summed over the simulated requests
    speedup_mc_se: float              #: its standard error over the replicates
    speedup_two_pass_mc: float        #: the same speedup under the two-pass model


def cell_latency(dec, plain_ms, spec_ms, batch):
    """What `vllm bench serve` would report for one cell: TPOT over requests, ITL per token and per chunk."""
    p_other = other_rejects(dec, batch)
    skip = plain_ms * (1.0 - p_other)                    # a full round with no rejection in the batch skips it

    def two_pass(spec, rounds, full):                    # two-pass time of spec jitter, rounds and full rounds
        return spec_ms * spec + plain_ms * rounds - skip * full

    # Two-pass TPOT of the slowest requests; the others are at most spec_ms s + plain_ms n. When the
    # top ones P99 reads all come from the slowest, the P99 over them is the P99 over all.
    top = top_needed(dec.requests, 0.99)
    heavy = heapq.nlargest(top, [two_pass(*row) for row in dec.heavy])
    if len(heavy) == top and heavy[-1] >= two_pass(*dec.rest_max, 0.0):
        two_pass_p99 = percentile_of_top(heavy, dec.requests, 0.99)
    else:
        two_pass_p99 = percentile_top([two_pass(*row) for row in zip(*dec.per_token)], 0.99)
    two_pass_time = two_pass(dec.spec, dec.rounds, dec.full)
    mean_s, mean_n, mean_f, mean_plain = dec.means
    token_two_pass = itl_parts(dec, plain_ms, spec_ms, batch).two_pass
    second = 1.0 - (1.0 - p_other) * dec.full_share            # share of rounds with a second pass
    return Latency(
        tpot_plain_mean_ms=plain_ms * mean_plain, tpot_plain_p99_ms=plain_ms * percentile(dec.tpot_plain, 0.99),
        tpot_spec_mean_ms=spec_ms * mean_s, tpot_spec_p50_ms=spec_ms * percentile(dec.tpot_spec, 0.50),
        tpot_spec_p99_ms=spec_ms * percentile(dec.tpot_spec, 0.99),
        tpot_spec_two_pass_mean_ms=two_pass(mean_s, mean_n, mean_f), tpot_spec_two_pass_p99_ms=two_pass_p99,
        itl_plain_mean_ms=plain_ms * dec.plain / dec.tokens, itl_plain_p50_ms=plain_ms * JITTER_P50,
        itl_plain_p99_ms=plain_ms * JITTER_P99,
        itl_spec_mean_ms=spec_ms * dec.spec / dec.tokens, itl_spec_p50_ms=spec_ms * dec.itl_p50,
        itl_spec_p99_ms=spec_ms * dec.itl_p99,
        itl_spec_two_pass_mean_ms=two_pass_time / dec.tokens,
        itl_spec_two_pass_p50_ms=mixture_quantile(0.50, token_two_pass),
        itl_spec_two_pass_p99_ms=mixture_quantile(0.99, token_two_pass),
        round_itl_spec_p99_ms=spec_ms * JITTER_P99,
        round_itl_two_pass_p99_ms=mixture_quantile(0.99, [(spec_ms, 1.0 - second), (spec_ms + plain_ms, second)]),
        speedup_mc=dec.speedup_ratio * plain_ms / spec_ms, speedup_mc_se=dec.speedup_ratio_se * plain_ms / spec_ms,
        speedup_two_pass_mc=plain_ms * dec.plain / two_pass_time)

# ---------------------------------------------------------------- simulation of a benchmark run
# What `vllm bench serve` would print for one run, step by step as the engine serves it. The
# client (vllm/benchmarks/serve.py) sends N requests: all at once (--request-rate inf) or at
# gamma-distributed gaps of shape burstiness (1: Poisson) rescaled so the last is sent at
# N / rate; --max-concurrency holds them in a semaphore (the client's queue, outside TTFT).
# The server admits a request while its running sequences are below its cap (max_num_seqs or
# the KV cache's sequences, whichever is less: with speculation the draft's weights and KV
# leave fewer) and runs steps: each running decode advances one plain step or one round, and
# the step's token budget left after the decodes' tokens prefills waiting prompts in chunks,
# first come first served (Engine.mixes_prefill; SGLang by default runs a prefill batch alone,
# the decodes waiting). A step costs the cost model's pass for its decodes and prompt tokens,
# times a lognormal jitter. A request's TTFT ends with the step that prefills its last prompt
# chunk; each later step streams its A + 1 tokens as one chunk, an ITL entry (the client appends
# a gap per streamed chunk: vllm/benchmarks/lib/endpoint_request_func.py). TPOT, ITL, E2EL and
# throughput are then computed exactly as calculate_metrics computes them.

@dataclass(frozen=True)
class Workload:
    """One `vllm bench serve` run's traffic (its flags), for serve_run."""
    num_prompts: int              #: --num-prompts
    max_concurrency: int | None   #: --max-concurrency (None: no client cap)
    request_rate: float           #: --request-rate, requests/s (math.inf: all at once)
    burstiness: float             #: --burstiness: the gamma shape of the gaps (1: Poisson)
    input_tokens: int             #: prompt tokens a request
    output_tokens: int            #: mean output tokens a request
    output_spread: float          #: s.d. of ln(output tokens) over requests (0: every answer the same length)
    output_cap: int | None = None   #: max_tokens: no answer is longer (ShareGPT's answers, --sharegpt-output-len)
    total_output: int | None = None   #: a replayed run's own total: the drawn lengths are scaled to add up to it


def simulated_layout(dep):
    """Whether serve_run simulates this deployment: a chain (a tree's rounds are measured, not drawn) on one
    scheduler. Attention data parallelism runs a scheduler, a token budget and a cap on every rank, which it does not."""
    return dep.topk == 1 and not dep.dp_attention


def running_cap(dep, speculative, plan_batch=None):
    """Sequences the server runs at once: the engine's default cap for the GPU's memory (Engine.running_limit), or
    the batch the plan's command sets it to, and at most the sequences whose KV cache fits beside the weights (at
    the mean context, or where the engine reserves it, at prompt plus answer): with speculation the draft's
    weights and KV take their share, so fewer fit.
    >>> short = make_deployment("llama-3.1-8b", "h100-sxm", 1, "bf16", input_tokens=64, output_tokens=64)
    >>> long = make_deployment("llama-3.1-8b", "h100-sxm", 1, "bf16", draft="eagle3")
    >>> running_cap(short, False), running_cap(long, False), running_cap(long, True)
    (1024, 312, 299)
    """
    engine = dep.engine
    limit = by_memory(dep, engine.running_limit)
    if engine.plan_sets_running and plan_batch:
        limit = plan_batch
    if engine.reserves_whole_request:   # each running request holds KV for its prompt and its whole answer
        dep = replace(dep, context=dep.input_tokens + dep.output_tokens)
    fits = max_concurrency(dep if speculative else replace(dep, drafter=NO_MODEL))
    return max(0, min(limit, fits))


def step_cost(dep, decodes, k, prompt, fit):
    """One step's time in ms without jitter: `decodes` sequences each decoding a token (k = 0) or a round of K
    drafts, with `prompt` prompt tokens prefilled in the same pass (the verify pass's and the draft's marginal
    cost of them, times own_prefill). A step of prompt tokens alone is a pass over none but them.
    >>> d = make_deployment("llama-3.1-8b", "h100-sxm", 1, "bf16")
    >>> step_cost(d, 4, 0, 0, FIT) == decode_step_ms(d, 4), step_cost(d, 0, 0, 0, FIT)
    (True, 0.0)
    """
    tokens = verify_tokens(dep, k) if k else 1
    if decodes:
        base = round_ms(dep, decodes, k, fit) if k else decode_step_ms(dep, decodes, fit)
    else:
        base = target_pass_ms(dep, 0, tokens, fit) if prompt else 0.0
    if not prompt:
        return base
    extra = target_pass_ms(dep, decodes, tokens, fit, prompt) - target_pass_ms(dep, decodes, tokens, fit)
    if k and runs_a_draft_model(dep):
        fixed = fixed_ms(dep, "draft", fit)
        extra += pass_ms(dep.drafter, dep, decodes, 1, fixed, fit, prompt) - pass_ms(dep.drafter, dep, decodes, 1,
                                                                                      fixed, fit)
    return base + fit.own_prefill * extra


def send_times(work, rng):
    """When the client would send each request without --max-concurrency (get_request): all at 0 at an infinite
    rate; else cumulative gamma gaps of shape burstiness and mean 1 / rate, rescaled so the last is at N / rate."""
    n = work.num_prompts
    if math.isinf(work.request_rate):
        return [0.0] * n
    shape = work.burstiness
    gaps = [rng.gammavariate(shape, 1.0 / (work.request_rate * shape)) for _ in range(n)]
    times = list(itertools.accumulate(gaps))
    scale = n / work.request_rate / times[-1] if times[-1] > 0 else 1.0
    return [t * scale for t in times]


ITL_TICKS_PER_S = 1_000_000   # an ITL is counted in whole us (rounded): equal gaps share one count, and a
                              # percentile moves by less than a printed digit (0.01 ms)
JITTER_LEVELS = 4096   # a step's jitter is one of this many equally likely lognormal quantiles: a draw is one uniform
STEP_JITTER = [math.exp(JITTER_MU + ROUND_JITTER * NORMAL.inv_cdf((i + 0.5) / JITTER_LEVELS))
               for i in range(JITTER_LEVELS)]


def whole_lengths(draws, total=None):
    """Answer lengths of at least 1 token from real-valued draws: each rounded, or, given their total, the largest
    remainders rounded up so that they add up to it exactly.
    >>> whole_lengths([1.4, 2.4, 3.2]), whole_lengths([1.4, 2.4, 3.2], 8)
    ([1, 2, 3], [2, 3, 3])
    """
    if total is None:
        return [max(1, round(d)) for d in draws]
    floors = [max(1, math.floor(d)) for d in draws]
    short = total - sum(floors)
    order = sorted(range(len(draws)), key=lambda i: floors[i] - draws[i])   # the largest remainders first
    for i in order[:max(0, short)]:
        floors[i] += 1
    return floors


def request_rounds(alpha, k, tokens, rng):
    """Rounds a request needs for `tokens` tokens after its first at per-token alpha: decode_request's count for a
    short one, renewal_draw's for a long one (as run_requests draws them)."""
    if tokens <= 0:
        return 0
    if tokens <= LOOP_TOKENS:
        return len(decode_request(alpha, k, tokens, rng)[0])
    rounds, _ = renewal_draw(alpha, k, tokens, rng.gauss(0.0, 1.0), 0.0)
    return min(tokens, max(math.ceil(tokens / (k + 1)), round(rounds)))


@dataclass(frozen=True)
class ServedRun:
    """What serve_run simulated: per request (in the order sent, seconds from the run's start) and per step."""
    arrival: tuple        #: when the client would have sent each request (its semaphore aside)
    start: tuple          #: when each request was sent, after the client's semaphore
    first: tuple          #: when its first token came (the step that prefilled its last prompt chunk)
    end: tuple            #: when its last token came
    output_tokens: tuple  #: tokens each generated
    itl: tuple            #: (gap s, how many streamed chunks had it): every chunk after a request's first token
    per_second: tuple     #: (second, chunks streamed in it), first tokens included: max_output_tokens_per_s
    k: int                #: draft length (0: speculation off)
    drafts: float         #: rounds drafted, summed over sequences
    accepted_at: tuple    #: expected accepted drafts at positions 0..K-1, summed over those rounds
    cap: int              #: sequences the server ran at most (running_cap)
    steps: int            #: scheduler steps
    peak_running: int     #: most sequences running at once


def serve_run(dep, work, k=0, alpha=0.0, spread=ALPHA_SPREAD, seed=SEED, fit=FIT, plan_batch=None):
    """Simulate one benchmark run of `work` on `dep`, speculation off (k = 0) or at K with per-token alpha around
    `alpha` (s.d. `spread` over requests), the server started as the plan starts it for plan_batch: a ServedRun.

    Every running decode advances at every step that decodes, so a request's chunks are the decode steps from
    its first token to its last: it needs its own count of rounds (request_rounds; L - 1 plain steps), drawn
    before the run, and the loop is over steps, not tokens.
    """
    # The workload's draws (answer lengths, send times) are the seed's alone, so the baseline and every K serve the
    # same requests; acceptance and jitter come from a stream of each K's own.
    workload_rng, rng = random.Random(f"serve:{seed}"), random.Random(f"serve:{seed}:{k}")
    n = work.num_prompts
    cap = running_cap(dep, k > 0, plan_batch)
    assert cap >= 1, "the caller checks that a sequence fits (parse_bench_flags, compare_file, predicts_gate_pair)"
    budget, mixes = step_budget(dep), dep.engine.mixes_prefill
    per_decode = verify_tokens(dep, k) if k else 1
    draws = [work.output_tokens * math.exp(work.output_spread * workload_rng.gauss(0.0, 1.0)
                                           - work.output_spread ** 2 / 2) for _ in range(n)]
    if work.output_cap:
        draws = [min(d, work.output_cap) for d in draws]
    if work.total_output:   # the replayed file's own total
        draws = [d * work.total_output / sum(draws) for d in draws]
    lengths = whole_lengths(draws, work.total_output)
    needed, accepted_at = [], [0.0] * k
    for length in lengths:
        if not k:
            needed.append(length - 1)
            continue
        a = clip01(alpha + spread * rng.gauss(0.0, 1.0))
        rounds = request_rounds(a, k, length - 1, rng)
        needed.append(rounds)
        for position in range(k):   # a round accepts position p when its first p + 1 drafts are kept
            accepted_at[position] += rounds * a ** (position + 1)
    arrivals = send_times(work, workload_rng)
    begin = arrivals[0]   # the first send: vLLM's one-second buckets start there
    limit = min(work.max_concurrency or n, n)
    start, first, end = [0.0] * n, [0.0] * n, [0.0] * n
    sends = [(arrivals[i], i) for i in range(limit)]   # the client's next sends, by time
    heapq.heapify(sends)
    held = limit                                       # the next request the semaphore holds
    waiting = collections.deque()                      # sent, not admitted
    prefilling = {}                                    # admitted -> prompt tokens left, first come first served
    decoding = []                                      # (decode step of its last token, request), soonest first
    newcomers = []                                     # first token since the last decode step
    itl, per_second = collections.Counter(), collections.Counter()   # ITL ticks -> chunks; second -> chunks
    costs, jitter = {}, STEP_JITTER
    t, done, steps, decode_steps, last_decode, peak = 0.0, 0, 0, 0, 0.0, 0
    while done < n:
        while sends and sends[0][0] <= t:
            at, i = heapq.heappop(sends)
            start[i] = at
            waiting.append(i)
        while waiting and len(prefilling) + len(decoding) < cap:
            prefilling[waiting.popleft()] = work.input_tokens
        if not prefilling and not decoding:
            t = sends[0][0]
            continue
        if not prefilling and not newcomers:
            # Only decodes until the next request ends or (with room for it) the next is sent: the same step over
            # and over, each with its own jitter. The general step below runs the one that ends a request.
            decoders = len(decoding)
            key = (decoders, 0)
            if key not in costs:
                costs[key] = step_cost(dep, decoders, k, 0, fit)
            cost, until = costs[key] / 1e3, sends[0][0] if sends and decoders < cap else math.inf
            while decode_steps + 1 < decoding[0][0] and t < until:
                t += cost * jitter[int(rng.random() * JITTER_LEVELS)]
                itl[int((t - last_decode) * ITL_TICKS_PER_S + 0.5)] += decoders
                per_second[int(t - begin)] += decoders
                last_decode = t
                steps += 1
                decode_steps += 1
            if t >= until:
                continue
        prefill_only = bool(prefilling) and not mixes
        decoders = 0 if prefill_only else len(decoding)
        room, chunk, prefilled = budget - decoders * per_decode, 0, []
        for i in prefilling:
            if room <= 0:
                break
            take = min(prefilling[i], room)
            prefilling[i] -= take
            room -= take
            chunk += take
            if not prefilling[i]:
                prefilled.append(i)
        key = (decoders, chunk)
        if key not in costs:
            costs[key] = step_cost(dep, decoders, k, chunk, fit)
        t += costs[key] * jitter[int(rng.random() * JITTER_LEVELS)] / 1e3
        steps += 1
        peak = max(peak, len(prefilling) + len(decoding))
        ended = []
        if decoders:
            decode_steps += 1
            continuing = decoders - len(newcomers)
            if continuing:
                itl[int((t - last_decode) * ITL_TICKS_PER_S + 0.5)] += continuing
            for i in newcomers:   # a first decode chunk follows the request's own first token
                itl[int((t - first[i]) * ITL_TICKS_PER_S + 0.5)] += 1
            newcomers, last_decode = [], t
            per_second[int(t - begin)] += decoders
            while decoding and decoding[0][0] == decode_steps:
                ended.append(heapq.heappop(decoding)[1])
        for i in prefilled:
            del prefilling[i]
            first[i] = t
            per_second[int(t - begin)] += 1
            if needed[i]:
                heapq.heappush(decoding, (decode_steps + needed[i], i))
                newcomers.append(i)
            else:
                ended.append(i)
        for i in ended:
            end[i] = t
            done += 1
            if held < n:
                heapq.heappush(sends, (max(t, arrivals[held]), held))
                held += 1
    return ServedRun(arrival=tuple(arrivals), start=tuple(start), first=tuple(first), end=tuple(end),
                     output_tokens=tuple(lengths),
                     itl=tuple((gap / ITL_TICKS_PER_S, count) for gap, count in sorted(itl.items())),
                     per_second=tuple(sorted(per_second.items())), k=k, drafts=float(sum(needed)) if k else 0.0,
                     accepted_at=tuple(accepted_at), cap=cap, steps=steps, peak_running=peak)


BENCH_PERCENTILES = (50, 99)   # the plan's --metric-percentiles
BENCH_METRICS = ("ttft", "tpot", "itl", "e2el")   # the plan's --percentile-metrics, in the order vLLM writes them


def bench_stats(values):
    """(mean, median, population s.d., sorted values) as numpy gives them to calculate_metrics; [] is taken as [0]."""
    values = sorted(values) or [0.0]
    mean = math.fsum(values) / len(values)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    return mean, percentile(values, 0.5), std, values


def weighted_percentile(pairs, total, q):
    """percentile(q) of the values that pairs (value, count), sorted by value, stand for: numpy's linear one of the
    list with each value repeated count times, total values in all.

    >>> weighted_percentile([(1.0, 2), (3.0, 1), (5.0, 1)], 4, 0.5) == percentile([1.0, 1.0, 3.0, 5.0], 0.5)
    True
    """
    at = q * (total - 1)
    low, share = int(at), at - int(at)
    seen, below = 0, None
    for value, count in pairs:
        if below is None and seen + count > low:
            below = value
        if seen + count > low + 1 or (share == 0 and below is not None):
            return below + share * (value - below)
        seen += count
    return pairs[-1][0]


def itl_stats(pairs):
    """(mean, median, population s.d., {p: percentile}) of the ITLs that pairs (gap, chunks) stand for."""
    total = sum(count for _, count in pairs)
    if not total:
        return 0.0, 0.0, 0.0, {p: 0.0 for p in BENCH_PERCENTILES}
    mean = math.fsum(gap * count for gap, count in pairs) / total
    std = math.sqrt(math.fsum(count * (gap - mean) ** 2 for gap, count in pairs) / total)
    return (mean, weighted_percentile(pairs, total, 0.5), std,
            {p: weighted_percentile(pairs, total, p / 100) for p in BENCH_PERCENTILES})


def bench_result(run, work, dep):
    """The run as `vllm bench serve --save-result` writes it (vllm/benchmarks/serve.py: main's result_json, then
    benchmark's result and calculate_metrics' keys), without --save-detailed's per-request lists and without the
    date it ran."""
    n, duration = len(run.start), max(run.end)
    total_out = sum(run.output_tokens)
    total_in = work.input_tokens * n
    # Peak chunks in a one-second bucket from the first send (vLLM stamps a token time per streamed chunk:
    # serve_run counts them) and peak concurrency over half-open [start, end): a request sent at the instant
    # another ended does not overlap it.
    events = sorted([(t, 1) for t in run.start] + [(t, -1) for t in run.end])
    served = served_model(dep)
    result = {"endpoint_type": "openai-chat", "backend": "openai-chat", "label": None, "model_id": served,
              "tokenizer_id": served, "num_prompts": work.num_prompts,
              "request_rate": "inf" if math.isinf(work.request_rate) else work.request_rate,
              "burstiness": work.burstiness, "max_concurrency": work.max_concurrency,
              "duration": duration, "completed": n, "failed": 0, "total_input_tokens": total_in,
              "total_output_tokens": total_out, "request_throughput": n / duration, "request_goodput": None,
              "output_throughput": total_out / duration, "total_token_throughput": (total_in + total_out) / duration,
              # the per-request lists vLLM keeps without --save-detailed, in s: latency and time in the semaphore
              "latencies": [e - s for s, e in zip(run.start, run.end)],
              "queue_times": [s - a for a, s in zip(run.arrival, run.start)],
              "max_output_tokens_per_s": float(max(chunks for _, chunks in run.per_second)),
              "max_concurrent_requests": max(itertools.accumulate(delta for _, delta in events)), "rtfx": 0.0}
    drafts, accepted = round(run.drafts), round(sum(run.accepted_at))
    if run.k and drafts:   # vLLM writes them only when drafts were counted, from the integer counts
        result.update({"spec_decode_acceptance_rate": 100.0 * accepted / (drafts * run.k),
                       "spec_decode_acceptance_length": 1.0 + accepted / drafts,
                       "spec_decode_num_drafts": drafts, "spec_decode_draft_tokens": drafts * run.k,
                       "spec_decode_accepted_tokens": accepted,
                       "spec_decode_per_position_acceptance_rates": [round(a) / drafts for a in run.accepted_at]})
    per = {"ttft": [f - s for s, f in zip(run.start, run.first)], "e2el": [e - s for s, e in zip(run.start, run.end)],
           "tpot": [(e - f) / (tokens - 1) for f, e, tokens in zip(run.first, run.end, run.output_tokens)
                    if tokens > 1]}
    for name in BENCH_METRICS:
        if name == "itl":
            mean, median, std, at = itl_stats(run.itl)
        else:
            mean, median, std, values = bench_stats(per[name])
            at = {p: percentile(values, p / 100) for p in BENCH_PERCENTILES}
        result.update({f"mean_{name}_ms": mean * 1e3, f"median_{name}_ms": median * 1e3, f"std_{name}_ms": std * 1e3})
        result.update({f"p{p}_{name}_ms": at[p] * 1e3 for p in BENCH_PERCENTILES})
    return result


# ---------------------------------------------------------------- analysis: the grid
# Every (acceptance, K, eps, B) cell: the closed forms beside the simulated requests.

@dataclass(frozen=True)
class Grid:
    """The grid the tables sweep: every acceptance value at every K, eps at B=1 and concurrency B."""
    acceptance: tuple        #: acceptance values of one kind (below)
    ks: tuple                #: draft lengths K
    overheads: tuple         #: eps at B=1, a fraction of a plain step, or "auto" (the cost model's)
    concurrencies: tuple     #: batch sizes B
    kind: str = "alpha"      #: "alpha" (per-token), "rate" (vLLM's accepted/drafted, read as measured at each K) or
                             #: "length" (tau, measured at the single K of ks)


K_MAX = 8   # the best-K search tries K = 0 (speculation off) .. K_MAX


K_LIMIT = 32   # the largest K the flags and the readers accept: a sanity bound, not an engine's


def per_token_alpha(kind, value, k):
    """The per-token alpha an acceptance figure of the given kind stands for at K: a "profile" (conditional alphas
    by position, from acceptance lengths measured at K = 1..n) stands for the alpha of its own tau at K."""
    if kind == "rate":
        return alpha_from_rate(value, k)
    if kind == "length":
        return alpha_from_length(value, k)
    if kind == "profile":
        return alpha_from_length(min(profile_length(value, k), k + 1.0), k)
    return value


def profile_from_lengths(lengths):
    """Conditional alphas by position from acceptance lengths measured at K = 1, 2, ..., n: position i accepts in
    tau_(i+1) - tau_i of rounds (1 + the shares reaching each position is tau), so its alpha given the one before
    is that share over the one before (REFERENCE.md section 1). None if a share rises or leaves [0, 1].
    >>> [round(a, 4) for a in profile_from_lengths([1.8, 2.44, 2.952])]
    [0.8, 0.8, 0.8]
    >>> [round(a, 4) for a in profile_from_lengths([1.7, 2.0, 2.35])]   # 0.35 after 0.3: noise, read as 0.3
    [0.7, 0.4286, 1.0]
    """
    shares = [b - a for a, b in zip([1.0] + list(lengths), lengths)]
    slack = SWEEP_SLACK + 1e-9   # 2.35 - 2.0 is 0.35000000000000009 in floating point
    if any(not -slack <= x <= 1.0 + slack for x in shares) or any(b > a + slack for a, b in zip(shares, shares[1:])):
        return None
    shares = [min(1.0, max(0.0, x)) for x in shares]
    return [min(1.0, x / prev) if prev > 0 else 0.0 for x, prev in zip(shares, [1.0] + shares)]


# Separate benchmark runs at K = 1..n each carry their own noise: a position's share may come out this much above
# the one before it (or below 0) and be read as equal to it (as 0) rather than refused.
SWEEP_SLACK = 0.05


def grid_alphas(grid):
    """Per-token alphas for K-independent questions (best K); rates and lengths read at the first K."""
    return sorted({per_token_alpha(grid.kind, v, grid.ks[0]) for v in grid.acceptance})


@dataclass(frozen=True)
class Cell:
    """One (alpha, K, eps, B) of the grid, or a row of the plan's tail (evaluate_cell): the closed forms beside the
    simulated requests. An infeasible cell (its KV cache does not fit) keeps its coordinates and no number."""
    alpha: float                     #: mean per-token acceptance alpha of the requests
    k: int                           #: draft length K
    verify_overhead: object          #: the grid's eps at B=1 ("auto": the cost model's)
    concurrency: int                 #: batch size B
    feasible: bool                   #: whether B sequences' KV cache fits beside the weights
    eps_eff: float = None            #: eps with the prefill share a round of the batch's tau carries (eps_seen)
    eps_decode: float = None         #: eps of decoding alone: a round over a plain step, minus 1
    acceptance_length: float = None  #: tau(alpha, K), bonus token included
    acceptance_rate: float = None    #: vLLM's rate at that alpha and K: (tau - 1) / K
    alpha_spread: float = None       #: s.d. of the requests' alphas around alpha
    acceptance_length_requests: float = None   #: tau the batch sees over the spread requests, 1/E[1/tau]
    speedup_lesson: float = None     #: (1 + K alpha) / (1 + eps_eff), the lesson's formula
    speedup_exact: float = None      #: tau / (1 + eps_eff)
    speedup_requests: float = None   #: acceptance_length_requests / (1 + eps_eff)
    speedup_mc: float = None         #: over the simulated requests (Latency)
    speedup_mc_se: float = None      #: its standard error
    speedup_two_pass_mc: float = None   #: the same under the lesson's two-pass model
    breakeven_alpha_lesson: float = None   #: eps / K: the break-even rate, which the lesson calls alpha
    breakeven_alpha_exact: float = None    #: the per-token alpha with tau = 1 + eps (decode eps)
    plain_step_ms: float = None      #: a plain step, its prefill share included
    round_ms: float = None           #: a round as the benchmark sees it, its tau steps of prefill included
    tpot_plain_mean_ms: float = None   #: the Latency fields, in order
    tpot_plain_p99_ms: float = None
    tpot_spec_mean_ms: float = None
    tpot_spec_p50_ms: float = None
    tpot_spec_p99_ms: float = None
    tpot_spec_two_pass_mean_ms: float = None
    tpot_spec_two_pass_p99_ms: float = None
    tpot_p99_change: float = None    #: P99 TPOT with speculation over plain, minus 1 (across requests)
    tpot_p99_change_two_pass: float = None
    itl_plain_mean_ms: float = None
    itl_plain_p50_ms: float = None
    itl_plain_p99_ms: float = None
    itl_spec_mean_ms: float = None
    itl_spec_p50_ms: float = None
    itl_spec_p99_ms: float = None
    itl_spec_two_pass_mean_ms: float = None
    itl_spec_two_pass_p50_ms: float = None
    itl_spec_two_pass_p99_ms: float = None
    round_itl_spec_p99_ms: float = None
    round_itl_two_pass_p99_ms: float = None
    p99_change: float = None         #: P99 per-token ITL with speculation over plain, minus 1 (not per chunk)
    p99_change_two_pass: float = None
    zero_accept_token_share: float = None   #: share of tokens from rounds that accepted nothing (one a round)
    slow_alpha: float = None         #: mean alpha of the requests at or above P99 TPOT
    simulated_requests: int = None   #: requests simulated
    tpot_p99_halfwidth: float = None   #: achieved relative half-width of P99 TPOT at 95% confidence
    tpot_spec_p99_alike_ms: float = field(default=None, metadata=OPTIONAL)   #: P99 TPOT were every request at alpha
    speedup_interval: list = None    #: [low, high] of speedup_mc at INTERVAL_LEVEL (with_intervals)
    tpot_plain_mean_interval_ms: list = None   #: [low, high] of tpot_plain_mean_ms
    tpot_spec_mean_interval_ms: list = None    #: [low, high] of tpot_spec_mean_ms


def evaluate_cell(alpha, k, eps, batch, dep, dec, fit, verify_overhead="auto"):
    """Closed forms and the simulated requests for one (alpha, K, decode eps, B): a Cell.

    alpha is the mean of the requests' per-token alphas; dec, their simulation (simulate_requests).
    eps_eff adds the prefill share a round carries for the tau tokens the batch delivers per
    round (eps_seen); the speedups divide by it; the break-even uses the decode eps.
    """
    tau = acceptance_length(alpha, k)
    plain_ms, cell_eps = plain_step_ms(dep, batch, fit), eps_seen(eps, dec.tau, dep, batch, fit)
    spec_ms = (1.0 + cell_eps) * plain_ms   # a round as the benchmark sees it
    lat = cell_latency(dec, plain_ms, spec_ms, batch)
    return Cell(
        alpha=alpha, k=k, verify_overhead=verify_overhead, concurrency=batch, feasible=True,
        eps_eff=cell_eps, eps_decode=eps, acceptance_length=tau, acceptance_rate=acceptance_rate(alpha, k),
        alpha_spread=dec.spread, acceptance_length_requests=dec.tau,
        speedup_lesson=lesson_speedup(alpha, k, cell_eps), speedup_exact=exact_speedup(alpha, k, cell_eps),
        speedup_requests=speedup(dec.tau, cell_eps),
        breakeven_alpha_lesson=breakeven_rate(k, eps), breakeven_alpha_exact=exact_breakeven(k, eps),
        plain_step_ms=plain_ms, round_ms=spec_ms, **fields_of(lat),
        tpot_p99_change=lat.tpot_spec_p99_ms / lat.tpot_plain_p99_ms - 1.0,
        tpot_p99_change_two_pass=lat.tpot_spec_two_pass_p99_ms / lat.tpot_plain_p99_ms - 1.0,
        p99_change=lat.itl_spec_p99_ms / lat.itl_plain_p99_ms - 1.0,
        p99_change_two_pass=lat.itl_spec_two_pass_p99_ms / lat.itl_plain_p99_ms - 1.0,
        zero_accept_token_share=dec.by_accepted[0],   # tokens from rounds that accepted nothing: one a round
        slow_alpha=dec.slow_alpha, simulated_requests=dec.requests, tpot_p99_halfwidth=dec.precision)


@dataclass(frozen=True)
class BreakEven:
    """One row of the break-even table: where speculation stops paying at (K, eps at B=1, B)."""
    k: int                   #: draft length K
    verify_overhead: object  #: the grid's eps at B=1, or "auto"
    concurrency: int         #: batch size B
    feasible: bool           #: whether B sequences fit in memory
    eps_eff: float           #: decode eps at B
    lesson: float            #: break-even acceptance rate eps / K (the lesson's "alpha"); None: none below 1
    exact: float             #: break-even per-token alpha, tau(alpha, K) = 1 + eps; None: none


DECODE_MEMO = {}   # (seed, output spread, domains, K, alpha spread) -> Decode: the same requests are the same Decode


def decoder(seed, spread, output_spread, output_tokens):
    """decode(alpha or domains, K, spread) -> Decode, memoised (across runs in one process too: a Decode is a pure
    function of its key); each replicate's draws are made once."""
    draws = {}

    def draws_for(replicate):
        if replicate not in draws:
            draws[replicate] = draw_requests(REPLICATE_REQUESTS, seed, replicate, output_spread)
        return draws[replicate]

    def decode(acceptance, k, spread=spread):
        domains = acceptance if isinstance(acceptance, tuple) else ((1.0, acceptance, output_tokens),)
        key = (seed, output_spread, domains, k, spread)
        if key not in DECODE_MEMO:
            if len(DECODE_MEMO) > 256:
                DECODE_MEMO.clear()
            DECODE_MEMO[key] = simulate_requests(domains, k, spread, draws_for)
        return DECODE_MEMO[key]

    return decode


def analyse(grid, dep, decode, fit=FIT, progress=None):
    """Every grid cell and the break-even table, as the tables print them: (cells, break-evens, {(K, eps at B=1):
    decode eps at B=1}).

    decode: decoder(...), shared with the plan so that every part sees the same requests;
    progress, if given, is called with (pairs simulated, pairs) as each (alpha, K) is simulated.
    """
    pairs = [(per_token_alpha(grid.kind, value, k), k) for k in grid.ks for value in grid.acceptance]
    for done, (alpha, k) in enumerate(pairs, 1):
        decode(alpha, k)
        if progress:
            progress(done, len(pairs))
    batch_limit = max_concurrency(dep)
    cells, breakeven = [], []
    for k in grid.ks:
        for eps_b1 in grid.overheads:
            for batch in grid.concurrencies:
                feasible = batch <= batch_limit
                eps = eps_grown(eps_b1, dep, batch, k, fit)
                breakeven.append(BreakEven(k=k, verify_overhead=eps_b1, concurrency=batch, feasible=feasible,
                                           eps_eff=eps, lesson=breakeven_rate(k, eps), exact=exact_breakeven(k, eps)))
                for value in grid.acceptance:
                    alpha = per_token_alpha(grid.kind, value, k)
                    # An infeasible cell keeps its coordinates but shows no number: it cannot run.
                    cells.append(evaluate_cell(alpha, k, eps, batch, dep, decode(alpha, k), fit, eps_b1) if feasible
                                 else Cell(alpha=alpha, k=k, verify_overhead=eps_b1, concurrency=batch, feasible=False))
    return cells, breakeven, {(k, e): eps_grown(e, dep, 1, k, fit) for k in grid.ks for e in grid.overheads}


# ---------------------------------------------------------------- analysis: best K
# The K (0 = off) with the most tokens a second at each batch size, and vLLM's K-by-batch table.

K_TIE = 0.01   # speedups within 1% of the best are a tie, won by the smallest K: the cost model cannot tell them apart
               # (its error is several times that), and a shorter draft loses less when acceptance falls


def best_k(dep, acceptance, batch, fit=FIT):
    """(K, speedup): the K in 0..K_MAX with the most tokens per second, K = 0 being plain decoding; the smallest K
    within K_TIE of the best wins, so speculation must gain more than 1% to be turned on at all.

    acceptance: a per-token alpha, or conditional alphas by position (see tau_for).

    Leviathan section 3.5: maximise tau(a, K) / T_round(B, K); the draft's cost is in T_round,
    and a round of tau tokens carries tau steps' prefill share q: tau (D + q) / (R + tau q).
    """
    rounds = round_costs(dep, batch, fit)
    speedups = {0: 1.0, **{k: tpot_speedup(dep, batch, 1.0 / tau_for(acceptance, k), rounds[k], fit)
                           for k in rounds}}
    top = max(speedups.values())
    k = min(k for k, speedup in speedups.items() if speedup >= top / (1.0 + K_TIE))
    return k, speedups[k]


def round_costs(dep, batch, fit=FIT):
    """{K: round_ms} at one batch for the K best_k tries (a tree: its measured K only), computed once.

    The best-K tables and schedules ask for the same batches at several alphas.
    """
    ks = [dep.tree_steps] if dep.tree_steps else range(1, K_MAX + 1)
    return memoised("rounds", dep, batch, fit, lambda: {k: round_ms(dep, batch, k, fit) for k in ks})


def k_zero_at(schedule):
    """The batch from which a K-by-batch schedule keeps speculation off (K = 0) to its end, or None."""
    return schedule[-1][0] if schedule and schedule[-1][2] == 0 else None


def paying_ranges(schedule):
    """[(first, last batch)] of the stretches where a K-by-batch schedule speculates (K > 0)."""
    ranges = []
    for lo, hi, k in schedule:
        if k > 0 and ranges and ranges[-1][1] == lo - 1:
            ranges[-1] = (ranges[-1][0], hi)
        elif k > 0:
            ranges.append((lo, hi))
    return ranges


def close_call_words(stretches):
    """Where the model cannot tell whether speculation pays, in words.

    >>> close_call_words([[92, 472]])
    'too close to call at B = 92-472'
    """
    return "too close to call at B = " + ", ".join(f"{lo}-{hi}" if lo < hi else str(lo) for lo, hi in stretches)


def where_it_pays(schedule):
    """Where speculation pays, in words, from a K-by-batch schedule (batches 1 to its last row's end).

    >>> where_it_pays([[1, 11, 0], [12, 40, 2], [41, 245, 3]])
    'speculation pays from B = 12 to 245 (the most that fit) and is off below'
    """
    ranges, limit = paying_ranges(schedule), schedule[-1][1] if schedule else 0
    if not ranges:
        return "speculation pays at no batch size that fits"
    if ranges == [(1, limit)]:
        return f"speculation pays at every batch size that fits (up to {limit})"
    if len(ranges) == 1 and ranges[0][0] == 1:
        return f"speculation stops paying at B = {ranges[0][1] + 1}"
    if len(ranges) == 1 and ranges[0][1] == limit:
        return f"speculation pays from B = {ranges[0][0]} to {limit} (the most that fit) and is off below"
    return ("speculation pays at B = " + ", ".join(f"{lo}-{hi}" if lo < hi else str(lo) for lo, hi in ranges)
            + " and is off at the others")


def k_schedule(dep, acceptance, fit=FIT):
    """[start, end, K] rows for B = 1..max_concurrency, vLLM's num_speculative_tokens_per_batch_size (PR #32374).

    Best K is found at batches 25% apart, and each change of K is then located to the batch
    by bisection, so every row holds its batches' best K while costing a few dozen best-K searches.
    """
    return piecewise(max_concurrency(dep), lambda batch: best_k(dep, acceptance, batch, fit)[0])


def piecewise(limit, value_at):
    """[start, end, value] rows covering batches 1..limit where value_at(batch) is constant: value_at is probed at
    batches 25% apart and each change located by bisection (k_schedule, close_calls)."""
    if limit < 1:
        return []
    known = {}

    def k_at(batch):
        if batch not in known:
            known[batch] = value_at(batch)
        return known[batch]

    probes, batch = [], 1
    while batch < limit:
        probes.append(batch)
        batch = max(batch + 1, int(batch * 1.25))
    probes.append(limit)
    rows, start, current, last_same = [], 1, k_at(1), 1
    for probe in probes:
        while k_at(probe) != current:
            lo, hi = last_same, probe          # k_at(lo) == current != k_at(hi)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if k_at(mid) == current else (lo, mid)
            rows.append([start, hi - 1, current])
            start, current, last_same = hi, k_at(hi), hi
        last_same = probe
    rows.append([start, limit, current])
    return rows


def best_on(dep, acceptance, batch, fit=FIT):
    """The best speedup with speculation on (K = 1..K_MAX) at a batch: what "off" gives up."""
    rounds = round_costs(dep, batch, fit)
    return max(tpot_speedup(dep, batch, 1.0 / tau_for(acceptance, k), rounds[k], fit) for k in rounds)


def close_calls(dep, acceptance, sd, fit=FIT):
    """[(first, last batch)] where the best speedup with speculation on has an interval (s.d. sd of its log) that
    holds 1.0: there the model cannot say whether speculation pays, and a benchmark must."""
    spread = math.exp(Z_INTERVAL * sd)
    rows = piecewise(max_concurrency(dep), lambda b: 1.0 / spread < best_on(dep, acceptance, b, fit) < spread)
    return [(lo, hi) for lo, hi, close in rows if close]


@dataclass(frozen=True)
class BestK:
    """The best K at one concurrency and alpha, and its speedup (best_k_table)."""
    concurrency: int         #: batch size B
    alpha: float             #: the per-token alpha shown
    feasible: bool = field(metadata=NOT_IN_JSON)   #: whether B sequences fit in memory
    k: int = None            #: best K in 0..K_MAX (0: speculation off); None when B does not fit
    speedup: float = None    #: its speedup over plain decoding
    speedup_interval: list = None   #: [low, high] of it at INTERVAL_LEVEL (None: K = 0, plain decoding itself)
    too_close: bool = None   #: whether the best speedup with speculation on has an interval holding 1.0


def best_k_table(dep, sources, batches, fit=FIT, sd=None):
    """Best K and its speedup at each concurrency, for each (alpha shown, acceptance) source; with sd (the s.d. of
    a speedup's log error) its interval and whether it is too close to call."""
    limit = max_concurrency(dep)
    rows = []
    for b in batches:
        for a, acc in sources:
            if b > limit:
                rows.append(BestK(concurrency=b, alpha=a, feasible=False))
                continue
            k, speedup = best_k(dep, acc, b, fit)
            rows.append(BestK(concurrency=b, alpha=a, feasible=True, k=k, speedup=speedup,
                              speedup_interval=interval(speedup, sd) if sd is not None and k else None,
                              too_close=too_close(interval(best_on(dep, acc, b, fit), sd)) if sd is not None else None))
    return rows


# ---------------------------------------------------------------- analysis: the traffic mix
# Domains of different alpha share one round time: their tau blends harmonically.

@dataclass(frozen=True)
class Domain:
    """One domain of a traffic mix at the mix's K and B (traffic_blend)."""
    name: str                #: the domain's name
    share: float             #: its share of generated tokens
    alpha: float             #: its per-token alpha
    tau: float               #: its acceptance length at K
    speedup: float           #: the speedup were all traffic this domain
    time_share: float        #: its share of the decode time


@dataclass(frozen=True)
class Blend:
    """A traffic mix's speedup, blended right (rounds per token summed) and naively (alpha averaged first)."""
    k: int                   #: draft length K
    concurrency: int         #: batch size B
    eps: float               #: decode eps at (B, K)
    prefill_share: float     #: a plain step's prefill share over its decode step
    domains: list            #: Domain rows
    naive_alpha: float       #: token-weighted mean alpha
    naive_speedup: float     #: the speedup that alpha promises
    blended_speedup: float   #: the speedup of the mix: each domain's tau over one shared round time
    naive_error: float       #: naive over blended, minus 1
    weak: str                #: the domain with the lowest tau
    routed_speedup: float    #: the mix's speedup with the weak domain decoded without speculation
    trained_speedup: float   #: ... with a draft as good on the weak domain as on the best
    trained_alpha: float     #: the best domain's alpha
    best_k: int              #: the mix's best single K (0: off)
    best_k_speedup: float    #: its speedup


def traffic_blend(mix, dep, k, batch, fit=FIT):
    """Speedup of a traffic mix: each domain's tau over one shared round time, weighted by tokens.

    A domain with share s of generated tokens and acceptance length tau needs s/tau rounds
    per token, so the mix runs sum(s/tau) rounds per token: a harmonic blend of tau, not an
    average of alphas or of speedups. A token costs its rounds plus the prefill share, the same
    with speculation or without (spec_tpot_ms).
    """
    eps = eps_decode(dep, batch, k, fit)
    q = prefill_share_ms(dep, batch, fit) / decode_step_ms(dep, batch, fit)
    rounds = round_costs(dep, batch, fit)

    def mix_speedup(rounds_per_token, plain_tokens=0.0, kk=k):
        round_cost = rounds[kk] if kk in rounds else round_ms(dep, batch, kk, fit)   # a measured K past K_MAX
        return tpot_speedup(dep, batch, rounds_per_token, round_cost, fit, plain_tokens)

    taus = [acceptance_length(alpha, k) for _, _, alpha, *_ in mix]
    rounds_per_token = sum(share / tau for (_, share, *_), tau in zip(mix, taus))
    domains = [Domain(name=name, share=share, alpha=alpha, tau=tau, speedup=mix_speedup(1.0 / tau),
                      time_share=share / tau / rounds_per_token) for (name, share, alpha, *_), tau in zip(mix, taus)]
    naive_alpha = sum(d.share * d.alpha for d in domains)
    weak = min(domains, key=lambda d: d.tau)
    others = rounds_per_token - weak.share / weak.tau
    best_alpha = max(d.alpha for d in domains)
    # The mix's best single K over the Ks best_k tries, K = 0 (plain decoding) included, ties to the smaller.
    blend_at = {0: 1.0, **{kk: mix_speedup(sum(d.share / acceptance_length(d.alpha, kk) for d in domains), kk=kk)
                           for kk in rounds}}
    mix_k = max(blend_at, key=lambda kk: (blend_at[kk], -kk))
    blended, naive = mix_speedup(rounds_per_token), mix_speedup(1.0 / acceptance_length(naive_alpha, k))
    return Blend(k=k, concurrency=batch, eps=eps, prefill_share=q, domains=domains, naive_alpha=naive_alpha,
                 naive_speedup=naive, blended_speedup=blended, naive_error=naive / blended - 1.0, weak=weak.name,
                 # What-ifs for the weak domain: decoded without speculation (1 plain step a token),
                 # or given a head as good as the best domain's.
                 routed_speedup=mix_speedup(others, weak.share),
                 trained_speedup=mix_speedup(others + weak.share / acceptance_length(best_alpha, k)),
                 trained_alpha=best_alpha, best_k=mix_k, best_k_speedup=blend_at[mix_k])


def mix_domains(mix, output_tokens):
    """Traffic-mix rows -> (share of requests, alpha, output tokens); a token share over a length is a request share.

    >>> mix_domains((("chat", 0.5, 0.7, 300), ("code", 0.5, 0.4, 100)), 1024)
    ((0.25, 0.7, 300), (0.75, 0.4, 100))
    """
    lengths = [row[3] if len(row) > 3 else output_tokens for row in mix]
    rows = [(row[1] / tokens, row[2], tokens) for row, tokens in zip(mix, lengths)]
    total = sum(r for r, _, _ in rows)
    return tuple((r / total, alpha, tokens) for r, alpha, tokens in rows)


@dataclass(frozen=True)
class MixTail:
    """TPOT over a traffic mix's simulated requests, each domain's around its own alpha (mix_tail)."""
    request_shares: dict     #: {domain: share of requests}
    tau: float               #: tau the batch sees over the mix's requests
    speedup_mc: float        #: speedup over the simulated requests
    tpot_plain_p99_ms: float   #: P99 TPOT over requests, plain
    tpot_spec_p99_ms: float  #: P99 TPOT with speculation
    tpot_spec_mean_ms: float   #: mean TPOT with speculation
    tpot_plain_mean_ms: float  #: mean TPOT, plain
    tpot_p99_change: float   #: P99 TPOT with speculation over plain, minus 1
    slow_alpha: float        #: mean alpha of the requests at or above P99 TPOT
    slow_domains: dict       #: {domain: share of those requests}


@dataclass(frozen=True)
class Mix(MixTail, Blend):
    """The traffic mix at the plan's K and batch: the Blend fields, then the MixTail fields (dataclasses gather the
    bases' fields from the last base up), then whether it is the example mix and the blend's interval."""
    assumed: bool            #: whether the mix is TRAFFIC_MIX's example, not the user's --mix
    blended_speedup_interval: list = None   #: [low, high] of blended_speedup at INTERVAL_LEVEL


def mix_tail(mix, dep, k, batch, decode, fit=FIT):
    """TPOT over the mix's requests at B: each domain's requests around its own alpha."""
    domains = mix_domains(mix, dep.output_tokens)
    dec = decode(domains, k)
    plain_ms = plain_step_ms(dep, batch, fit)
    spec_ms = (1.0 + eps_seen(eps_decode(dep, batch, k, fit), dec.tau, dep, batch, fit)) * plain_ms
    lat = cell_latency(dec, plain_ms, spec_ms, batch)
    return MixTail(request_shares={row[0]: d[0] for row, d in zip(mix, domains)}, tau=dec.tau,
                   speedup_mc=lat.speedup_mc, tpot_plain_p99_ms=lat.tpot_plain_p99_ms,
                   tpot_spec_p99_ms=lat.tpot_spec_p99_ms, tpot_spec_mean_ms=lat.tpot_spec_mean_ms,
                   tpot_plain_mean_ms=lat.tpot_plain_mean_ms,
                   tpot_p99_change=lat.tpot_spec_p99_ms / lat.tpot_plain_p99_ms - 1.0, slow_alpha=dec.slow_alpha,
                   slow_domains={row[0]: share for row, share in zip(mix, dec.slow_domains)})


def mix_result(mix, dep, k, batch, decode, fit=FIT, assumed=False):
    """The traffic mix at the plan's K: the closed-form blend and the simulated requests' tail; assumed: whether
    the mix is TRAFFIC_MIX's example."""
    return Mix(**fields_of(traffic_blend(mix, dep, k, batch, fit)), **fields_of(mix_tail(mix, dep, k, batch, decode, fit)),
               assumed=assumed)


# ---------------------------------------------------------------- analysis: measurements, the plan and the gate
# What the plan runs on (measured or assumed), its choices, the gate, and the charts' numbers.

@dataclass(frozen=True)
class Measurement:
    """Acceptance as measured (measured_acceptance, from /metrics counters or gauges, a benchmark file's spec_decode_*
    keys, or a length or rate typed on the command line): the three meanings of alpha, REFERENCE.md section 1."""
    k: int                   #: the K in use (the highest position counted, plus one), or the most a round drafts
    k_mean: float            #: draft tokens per draft: K, or less when K varied
    varying_k: bool          #: whether rounds drafted different lengths (a K-by-batch table, n-gram misses)
    drafts: float            #: drafts (rounds) counted; None when the source holds no counts
    acceptance_rate: float   #: accepted over drafted tokens (vLLM's rate r)
    acceptance_length: float   #: tau: tokens a round delivers, bonus included
    per_position_rates: list   #: accepted at position i over drafts reaching it
    per_position_alpha: list   #: conditional alpha at each position (empty when not clean)
    alpha: float             #: the per-token alpha (a chain of K giving tau, or position 0's rate when K varied)
    profile: list = field(metadata=NOT_IN_JSON)   #: conditional alphas by position best K runs on
    source: str              #: where it was read, as flags and paths
    notes: list              #: what the reading noticed, in words


@dataclass(frozen=True)
class MeasuredSpeedup:
    """The speedup the measured acceptance gives at one batch size."""
    concurrency: int
    feasible: bool           #: whether B sequences fit in memory
    eps: float               #: eps with the prefill share
    speedup: float           #: tau / (1 + eps); None when B does not fit


@dataclass(frozen=True)
class Prediction:
    """The model beside a pair of benchmark runs, at their concurrency and lengths."""
    concurrency: int         #: the benchmark's max_concurrency (or the target)
    speedup: float           #: mean-TPOT speedup from the measured tau and the rounds' mean drafted length
    p99_tpot_change: float   #: P99 TPOT over plain, minus 1, over requests spread to give the measured tau
    requests_alpha: float    #: those requests' mean alpha
    requests_spread: float   #: their spread
    p99_itl_change: float    #: P99 ITL per chunk (one round, as the benchmark measures ITL) over plain, minus 1
    p99_token_itl_change: float   #: P99 per-token ITL over plain, minus 1


@dataclass(frozen=True)
class BenchmarkPair:
    """The latencies of a pair of benchmark runs as their files give them (Comparison's, for --json)."""
    baseline: dict           #: the baseline's latency keys (mean_tpot_ms, p99_itl_ms, ...)
    spec: dict               #: the speculative run's
    changes: dict            #: spec over baseline, minus 1, for each key both have
    max_concurrency: int     #: the runs' max_concurrency (None: open loop)


@dataclass(frozen=True)
class Measured(Measurement):
    """The measurement (its Measurement fields), what the model predicts from it at each batch size, and beside a
    pair of benchmark runs what they measured and what the model predicts there (measured_predictions)."""
    by_concurrency: list     #: MeasuredSpeedup at each batch of the grid and the target
    tpot_speedup: float = field(default=None, metadata=shown_with("benchmark"))   #: measured mean-TPOT speedup
    throughput_speedup: float = field(default=None, metadata=shown_with("benchmark"))   #: measured throughput ratio
    p99_tpot_change: float = field(default=None, metadata=shown_with("benchmark"))   #: measured P99 TPOT change
    p99_itl_change: float = field(default=None, metadata=shown_with("benchmark"))    #: measured P99 ITL change
    benchmark: BenchmarkPair = field(default=None, metadata=OPTIONAL)
    prediction: Prediction = field(default=None, metadata=OPTIONAL)


def center_requests(tau, k, spread):
    """(mean alpha, spread) of requests whose rounds deliver tau in aggregate, as a measured tau is.

    Counters add up all rounds (vLLM's spec_decode_num_* totals, vllm/v1/spec_decode/metrics.py; SGLang's
    accept-length gauge over recent steps, python/sglang/srt/metrics/collector.py), so a measured tau is
    round_mix's, not tau(mean alpha). Near alpha 1 (or 0) clipping caps what spread requests can reach: the spread then
    narrows until they reproduce tau, at mean alpha 1 (or 0).
    >>> alpha, s = center_requests(acceptance_length(0.7, 3), 3, 0.0); round(alpha, 6), s
    (0.7, 0.0)
    >>> alpha, s = center_requests(2.0, 3, 0.1); round(round_mix(((1.0, alpha, 1),), k=3, spread=s)[0], 6), s
    (2.0, 0.1)
    >>> alpha, s = center_requests(3.9, 3, 0.11); round(alpha, 9), round(round_mix(((1.0, alpha, 1),), 3, s)[0], 6)
    (1.0, 3.9)
    """
    def tau_at(alpha, s):
        return round_mix(((1.0, alpha, 1),), k, s)[0]

    if tau > tau_at(1.0, spread):                   # above what the spread allows: narrow it, alpha 1
        spread *= 1.0 - _increasing_root(lambda x: tau_at(1.0, spread * (1.0 - x)), tau)
    elif tau < tau_at(0.0, spread):                 # below: narrow it, alpha 0
        spread *= 1.0 - _increasing_root(lambda x: -tau_at(0.0, spread * (1.0 - x)), -tau)
    return _increasing_root(lambda a: tau_at(a, spread), tau), spread


@dataclass(frozen=True)
class PlanInput:
    """What the plan runs on (plan_input)."""
    sources: list            #: (alpha shown, acceptance) pairs for the best-K table
    acceptance: object       #: what best K runs on: a per-token alpha, or conditional alphas by position
    alpha: float             #: the single per-token alpha of the plan
    k_in_use: int            #: the K a measurement was taken at (None: the plan's own best)
    requests: tuple          #: (mean alpha, spread) of the simulated requests behind the tail


def plan_input(measured, grid, spread):
    """What the plan runs on: the measurement when there is one (its per-position profile), else EXPECTED_ALPHA."""
    if not measured:
        return PlanInput(sources=[(a, a) for a in grid_alphas(grid)], acceptance=EXPECTED_ALPHA, alpha=EXPECTED_ALPHA,
                         k_in_use=None, requests=(EXPECTED_ALPHA, spread))
    tau = profile_length(measured.profile, measured.k)   # the K-token rounds the plan runs, as measured_predictions
    return PlanInput(sources=[(measured.alpha, measured.profile)], acceptance=measured.profile, alpha=measured.alpha,
                     k_in_use=None if measured.varying_k else measured.k,   # varying: the plan's own best K
                     requests=center_requests(tau, measured.k, spread))


def measured_predictions(measured, comparison, dep, batches, target_concurrency, decode, fit=FIT, requests=None):
    """What the model predicts from the measured acceptance, beside what the benchmarks measured: Measured."""
    k, profile = measured.k, measured.profile
    limit = max_concurrency(dep)
    by_batch = []
    tau = profile_length(profile, k)
    for b in batches:
        eps = eps_seen(eps_decode(dep, b, k, fit), tau, dep, b, fit)
        by_batch.append(MeasuredSpeedup(concurrency=b, feasible=b <= limit, eps=eps,
                                        speedup=speedup(tau, eps) if b <= limit else None))
    if not comparison:
        return Measured(**fields_of(measured), by_concurrency=by_batch)
    batch = comparison.max_concurrency or target_concurrency
    notes = measured.notes
    if comparison.lengths:   # the model beside a benchmark is set at the benchmark's own lengths
        note = length_note("the benchmark", comparison.lengths, dep)
        notes = notes + [note] if note else notes
        dep = at_lengths(dep, *comparison.lengths)
    eps = eps_decode(dep, batch, k, fit)
    alpha, spread = requests or (measured.alpha, 0.0)
    cell = evaluate_cell(alpha, k, eps, batch, dep, decode(alpha, k, spread), fit)
    # The benchmark's rounds drafted k_mean tokens on average: its tau goes with their cost, not K's.
    seen = eps_seen(eps_decode(dep, batch, measured.k_mean, fit), measured.acceptance_length, dep, batch, fit)
    prediction = Prediction(concurrency=batch, speedup=speedup(measured.acceptance_length, seen),
                            p99_tpot_change=cell.tpot_p99_change, requests_alpha=alpha, requests_spread=spread,
                            p99_itl_change=cell.round_itl_spec_p99_ms / cell.itl_plain_p99_ms - 1.0,
                            p99_token_itl_change=cell.p99_change)
    return Measured(**fields_of(replace(measured, notes=notes)), by_concurrency=by_batch,
                    tpot_speedup=comparison.tpot_speedup, throughput_speedup=comparison.throughput_speedup,
                    p99_tpot_change=comparison.p99_tpot_change, p99_itl_change=comparison.p99_itl_change,
                    benchmark=BenchmarkPair(baseline=comparison.baseline, spec=comparison.spec,
                                            changes=comparison.changes, max_concurrency=comparison.max_concurrency),
                    prediction=prediction)


@dataclass(frozen=True)
class BreakEvenAt:
    """The per-token alpha below which speculation is slower than plain decoding, at one (K, B)."""
    k: int                   #: draft length K
    concurrency: int         #: batch size B
    alpha: float             #: break-even per-token alpha (None: no acceptance pays)
    alpha_interval: list = None   #: [low, high] of it at INTERVAL_LEVEL, a round's cost uncertain (high None: above 1)


@dataclass(frozen=True)
class Plan:
    """The rollout plan's choices (plan_choices): its K, K-by-batch schedule, gate and expected tail, at the batch
    its commands run (shown_batch: the target concurrency, or the most that fits)."""
    target: int              #: the concurrency asked for (--target-concurrency, a benchmark's, or the grid's largest)
    feasible: bool           #: whether the target fits in memory
    alpha: float             #: the per-token alpha the plan assumes or measured
    request_alpha: float     #: mean alpha of the simulated requests behind the tail
    request_spread: float    #: their spread (s.d.)
    measured: bool           #: whether alpha was measured
    k: int                   #: the K the plan runs where speculation is on
    rate_at_alpha: float     #: vLLM's acceptance rate that alpha shows at K
    margin: float            #: the gate's margin over the break-even rate
    required_rate: float     #: break-even rate + margin (None: above 1, no measurement can pass)
    required_alpha: float    #: the per-token alpha with that rate at K
    plain_ms_b1: float       #: a plain step at B = 1, ms (prefill share included)
    shown_batch: int         #: the batch the plan's commands and numbers are for
    plain_ms_shown: float    #: a plain step at shown_batch, ms
    k_target: int            #: best K at shown_batch (0: speculation off)
    speedup_target: float    #: its speedup over plain decoding
    schedule: list           #: [start, end, K] rows for B = 1..max_concurrency (k_schedule)
    schedule_speedups: list = field(metadata=NOT_IN_JSON)   #: (speedup at start, at end) of each schedule row
    k_zero_at: int = None    #: the batch from which the schedule keeps speculation off to its end
    eps: float = None        #: decode eps at shown_batch and K
    gate_alpha: float = None   #: break-even per-token alpha there (None: none)
    gate_rate: float = None  #: break-even acceptance rate there, eps / K (None: none below 1)
    break_evens: list = None   #: BreakEvenAt at the plan's K and the grid's, each concurrency that fits
    lesson_gate_as_rate: float = None    #: the lesson's "alpha >= 0.55" read as a per-token alpha, shown as a rate
    lesson_gate_as_alpha: float = None   #: the same read as a rate, shown as a per-token alpha
    tail: list = field(default=None, metadata=NOT_IN_JSON)   #: Cells at the grid's concurrencies and shown_batch
    speedup_target_interval: list = None   #: [low, high] of speedup_target at INTERVAL_LEVEL (None: K = 0)
    too_close: bool = None   #: whether the interval of the best speedup with speculation on at shown_batch holds 1.0
    close_calls: list = None   #: [first, last] batch stretches where it does: there only a benchmark can decide
    gate_rate_interval: list = None   #: [low, high] of gate_rate, a round's cost across its INTERVAL_LEVEL range
    speedup_sd: float = None   #: s.d. of a speedup's log error behind these intervals (Trust)
    p99_budget: float = P99_BUDGET   #: largest P99 TPOT rise the gate accepts (for the plan's gate command)
    served_model: str = None   #: --served-model, repeated by the plan's gate command


def plan_choices(grid, dep, decode, fit, acceptance, alpha, target_concurrency, margin, k_in_use=None,
                 measured=False, requests=None, p99_budget=P99_BUDGET, served=None, sd=None):
    """The rollout plan's K, schedule, gate and tail expectations at the target concurrency: a Plan.

    acceptance drives best K (a per-token alpha or a measured profile); alpha is the single
    per-token alpha; requests, the (mean alpha, spread) of the simulated requests behind the tail
    (a measured alpha is an aggregate: see center_requests); k_in_use, when measured at one K, is
    the K the gate checks; measured says whether alpha was measured at all; p99_budget and served, what the
    plan's gate command repeats; sd, the s.d. of a speedup's log error (Trust), which decides what is too close to
    call.
    """
    limit = max_concurrency(dep)
    schedule = k_schedule(dep, acceptance, fit)
    shown_batch = min(target_concurrency, max(limit, 1))   # the target, or the largest batch that fits if it does not
    k_target, speedup_target = best_k(dep, acceptance, shown_batch, fit)
    # The K to run where speculation is on: the one measured, else the target's best, else
    # the largest K in the schedule.
    k = k_in_use or k_target or max([row[2] for row in schedule] + [1])
    eps = eps_decode(dep, shown_batch, k, fit)   # every figure of the plan is at the batch its commands run
    request_alpha, request_spread = requests or (alpha, 0.0)
    dec = decode(request_alpha, k, request_spread)
    alike = decode(request_alpha, k, 0.0) if dec.spread > 0 else None   # every request at the mean alpha
    tail = []
    for b in sorted(set(grid.concurrencies) | {shown_batch}):
        if b <= limit:
            eps_b = eps_decode(dep, b, k, fit)
            cell = evaluate_cell(request_alpha, k, eps_b, b, dep, dec, fit)
            if alike:
                cell = replace(cell, tpot_spec_p99_alike_ms=evaluate_cell(request_alpha, k, eps_b, b, dep, alike,
                                                                          fit).tpot_spec_p99_ms)
            tail.append(cell)
    required = required_rate(k, eps, margin)
    # Break-even alpha at the plan's K and the grid's, at each concurrency that fits (eps from the model).
    break_evens = [BreakEvenAt(k=kk, concurrency=b, alpha=exact_breakeven(kk, eps_decode(dep, b, kk, fit)),
                               alpha_interval=breakeven_alpha_range(kk, eps_decode(dep, b, kk, fit), sd))
                   for kk in sorted({k} | set(grid.ks)) for b in sorted(set(grid.concurrencies) | {shown_batch})
                   if b <= limit]
    return Plan(target=target_concurrency, feasible=target_concurrency <= limit, alpha=alpha,
                request_alpha=request_alpha, request_spread=request_spread, measured=measured, k=k, rate_at_alpha=acceptance_rate(alpha, k),
                margin=margin, required_rate=required,
                required_alpha=None if required is None else alpha_from_rate(required, k),
                plain_ms_b1=plain_step_ms(dep, 1, fit), shown_batch=shown_batch,
                plain_ms_shown=plain_step_ms(dep, shown_batch, fit), k_target=k_target, speedup_target=speedup_target,
                schedule=schedule,
                schedule_speedups=[(best_k(dep, acceptance, lo, fit)[1], best_k(dep, acceptance, hi, fit)[1])
                                   for lo, hi, _ in schedule],
                k_zero_at=k_zero_at(schedule), eps=eps, gate_alpha=exact_breakeven(k, eps),
                gate_rate=breakeven_rate(k, eps), break_evens=break_evens,
                lesson_gate_as_rate=acceptance_rate(LESSON_RULE, k),
                lesson_gate_as_alpha=alpha_from_rate(LESSON_RULE, k), tail=tail, p99_budget=p99_budget,
                served_model=served,
                speedup_target_interval=interval(speedup_target, sd) if sd is not None and k_target else None,
                too_close=(sd is not None and shown_batch <= limit
                           and too_close(interval(best_on(dep, acceptance, shown_batch, fit), sd))),
                close_calls=[list(r) for r in close_calls(dep, acceptance, sd, fit)] if sd is not None else None,
                gate_rate_interval=breakeven_range(k, eps, sd) if sd is not None else None, speedup_sd=sd)


@dataclass(frozen=True)
class GateCheck:
    """One check of the gate."""
    check: str               #: "memory", "acceptance", "p99_tpot" or "throughput"
    passed: bool
    detail: str              #: what was compared with what


@dataclass(frozen=True)
class Gate:
    """The gate's verdict at the plan's batch and K (gate)."""
    verdict: str             #: "pass", "fail", or "too close to call" (the model's range cannot decide; exit 1)
    reasons: list            #: GateCheck rows
    concurrency: int         #: the batch it is for
    k: int                   #: the K it is for
    eps: float               #: decode eps there
    breakeven_rate: float    #: eps / K (None: none below 1)
    required_rate: float     #: break-even + margin (None: above 1)
    required_alpha: float    #: the per-token alpha of that rate at K
    margin: float            #: the margin over break-even
    p99_budget: float        #: largest P99 TPOT rise accepted, fraction


def gate(measured, comparison, dep, plan, budget):
    """Pass only if acceptance clears break-even + margin at the target and, with benchmarks, the tail holds; too
    close to call when, without benchmarks to measure the speedup, the rate clears the model's break-even but not
    the top of its range (Plan.gate_rate_interval).

    The break-even, margin and required rate are the plan's, at its batch and its K. The rate
    compared is the one the measured per-token alpha gives at that K: at a fixed K, accepted over
    drafted tokens; when the rounds drafted varying lengths, whose overall rate mixes Ks, the
    rate of K-token rounds.
    """
    k, batch, margin = plan.k, plan.shown_batch, plan.margin
    rate = acceptance_rate(measured.alpha, k)   # at a fixed K exactly accepted / drafted tokens
    eps, even, need, need_alpha = plan.eps, plan.gate_rate, plan.required_rate, plan.required_alpha
    reasons = []
    if not plan.feasible:
        reasons.append(GateCheck(check="memory", passed=False,
                                 detail=f"{plan.target} sequences of {dep.context} tokens do not fit "
                                        f"(at most {max_concurrency(dep)}, where the rest is checked)"))
    reasons.append(GateCheck(
        check="acceptance", passed=need is not None and rate >= need,
        detail=("the per-token alpha, taken for every position, gives an " if measured.varying_k else "") +
               f"acceptance rate {rate:.3f} at K={k} against break-even "
               + (f"{even:.3f} + margin {margin:.2f} = {need:.3f} at B={batch}; as per-token alpha "
                  f"{measured.alpha:.3f} against {need_alpha:.3f}" if need is not None else
                  f"{even:.3f} + margin {margin:.2f}, more than 1 at B={batch}: it cannot pass" if even is not None else
                  f"a break-even above 1 at B={batch} (a round costs more than K + 1 tokens give): it cannot pass")))
    if comparison:
        change, speedup = comparison.p99_tpot_change, comparison.throughput_speedup
        reasons.append(GateCheck(check="p99_tpot", passed=change is not None and change <= budget,
                                 detail="p99_tpot_ms missing from a benchmark file" if change is None else
                                 f"P99 TPOT {change * 100:+.1f}% against baseline; budget +{budget * 100:.0f}%"))
        reasons.append(GateCheck(check="throughput", passed=speedup is not None and speedup >= 1.0,
                                 detail="output_throughput missing from a benchmark file" if speedup is None else
                                 f"output throughput {speedup:.3f}x baseline (must not be lower)"))
    band = plan.gate_rate_interval
    verdict = "pass" if all(r.passed for r in reasons) else "fail"
    if verdict == "pass" and comparison is None and band is not None and rate < band[1] + margin:
        verdict = "too close to call"
        reasons.append(GateCheck(
            check="model range", passed=False,
            detail=f"the rate {rate:.3f} clears break-even + margin at the model's round cost, but the break-even "
                   f"lies anywhere in {band[0]:.3f}-{band[1]:.3f} at {INTERVAL_LEVEL:.0%}: benchmark speculation on "
                   f"against off at B={batch} (stage 1's sharegpt files, --bench-baseline and --bench-spec), and a "
                   "measured throughput settles it"))
    return Gate(verdict=verdict, reasons=reasons,
                concurrency=batch, k=k, eps=eps, breakeven_rate=even, required_rate=need,
                required_alpha=need_alpha, margin=margin, p99_budget=budget)


@dataclass(frozen=True)
class Evidence:
    """What was measured, and what the gate and the plan are for (parse_evidence)."""
    measured: Measurement = None      #: or None
    comparison: Comparison = None     #: of two benchmark runs, or None
    target_concurrency: int = None   #: the concurrency the gate and the plan are for (None: the grid's largest)
    mix: tuple = TRAFFIC_MIX     #: traffic-mix rows (name, share of tokens, alpha[, output tokens])
    margin: float = GATE_MARGIN  #: the gate's margin over the break-even rate
    budget: float = P99_BUDGET   #: largest P99 TPOT rise the gate accepts, fraction
    served_model: str = None     #: --served-model: the name the measured server served (the gate command repeats it)


# ---------------------------------------------------------------- analysis: facts and chart data
@dataclass(frozen=True)
class Facts:
    """What the deployment lines and the summary say about the deployment itself (deployment_facts)."""
    max_concurrency: int     #: the most sequences whose KV cache fits beside the weights
    memory_budget_bytes: float   #: bytes the engine gives weights and KV cache
    plain_b1: dict           #: a plain step at B = 1, ms by term (pass_parts' names, and "prefill share")
    eps_growth: EpsGrowth = None   #: what moves eps across the grid's batch sizes that fit (None: none fit)
    moe: MoeVerify = None    #: the verify pass of a mixture of experts (None: dense, or nothing fits)


def deployment_facts(grid, dep, fit=FIT):
    """What the deployment lines and the summary say about the deployment itself."""
    limit = max_concurrency(dep)
    feasible = [b for b in sorted(grid.concurrencies) if b <= limit]
    return Facts(max_concurrency=limit, memory_budget_bytes=memory_budget_bytes(dep),
                 plain_b1=plain_step_parts(dep, 1, fit),
                 eps_growth=eps_growth(dep, grid.ks[0], feasible[0], feasible[-1], fit) if feasible else None,
                 moe=moe_verify(dep, grid.ks[0], feasible[0], fit) if feasible and dep.target.moe_layers else None)


@dataclass(frozen=True)
class SpeedupCurve:
    """Speedup against per-token alpha at one batch size (the speedup chart)."""
    concurrency: int         #: batch size B
    eps: float               #: decode eps at B
    breakeven: float         #: break-even per-token alpha (None: none)
    points: list             #: (alpha, speedup) for alpha 0 to 1


@dataclass(frozen=True)
class StepCurve:
    """Best K against batch size at one alpha (the best-K chart)."""
    alpha: float             #: per-token alpha
    schedule: list           #: [start, end, K] rows (k_schedule)
    zero_at: int             #: the batch from which K stays 0, or None


@dataclass(frozen=True)
class ItlCurves:
    """Per-token ITL distributions at the plan's batch, alpha and K (the ITL chart)."""
    concurrency: int         #: batch size B
    alpha: float             #: the requests' mean alpha
    k: int                   #: draft length K
    x_max: float             #: the chart's right edge, ms
    cdf: ItlMixtures         #: each way's (ms, share of tokens at or below) points
    p99: ItlMixtures         #: each way's P99, ms


@dataclass(frozen=True)
class Charts:
    """The numbers the three charts draw (chart_data)."""
    k: int                   #: the K of the speedup chart (the grid's first)
    curves: list             #: SpeedupCurve per batch size that fits
    left_out: list           #: batch sizes of the grid that do not fit
    limit: int               #: the most sequences that fit
    steps: list              #: StepCurve per CHART_ALPHAS
    itl: ItlCurves           #: None when nothing fits
    speedup_sd: float = None   #: s.d. of a speedup's log error: the speedup chart's bands (Trust)


def chart_data(grid, dep, plan, decode, fit=FIT):
    """The numbers the three charts draw: speedup curves, best-K steps and ITL distributions."""
    limit = max_concurrency(dep)
    k = grid.ks[0]
    alphas = [i / 100 for i in range(101)]
    curves, left_out = [], []
    for batch in grid.concurrencies:
        if batch > limit:
            left_out.append(batch)
            continue
        eps = eps_decode(dep, batch, k, fit)
        curves.append(SpeedupCurve(
            concurrency=batch, eps=eps, breakeven=exact_breakeven(k, eps),
            points=[(a, exact_speedup(a, k, eps_seen(eps, acceptance_length(a, k), dep, batch, fit)))
                    for a in alphas]))
    steps = []
    for a in CHART_ALPHAS:
        schedule = k_schedule(dep, a, fit)
        steps.append(StepCurve(alpha=a, schedule=schedule, zero_at=k_zero_at(schedule)))
    itl = None
    if limit >= 1:
        batch, alpha, kk = plan.shown_batch, plan.request_alpha, plan.k
        dec = decode(alpha, kk, plan.request_spread)
        plain_ms = plain_step_ms(dep, batch, fit)
        spec_ms = (1.0 + eps_seen(eps_decode(dep, batch, kk, fit), dec.tau, dep, batch, fit)) * plain_ms
        mixtures = fields_of(itl_parts(dec, plain_ms, spec_ms, batch))
        x_max = 1.05 * max(mixture_quantile(0.999, parts) for parts in mixtures.values())
        xs = [x_max * i / 240 for i in range(241)]
        itl = ItlCurves(concurrency=batch, alpha=alpha, k=kk, x_max=x_max,
                        cdf=ItlMixtures(**{name: [(x, mixture_share(x, parts)) for x in xs]
                                           for name, parts in mixtures.items()}),
                        p99=ItlMixtures(**{name: mixture_quantile(0.99, parts) for name, parts in mixtures.items()}))
    return Charts(k=k, curves=curves, left_out=left_out, limit=limit, steps=steps, itl=itl,
                  speedup_sd=plan.speedup_sd)


# ---------------------------------------------------------------- analysis: the lesson's exercises
# The five exercises, answered by the model.

def alpha_for_speedup(speedup, k, eps):
    """Per-token alpha with tau(a, K) / (1 + eps) = speedup; None when even a = 1 falls short.

    >>> round(alpha_for_speedup(2.0, 5, 0.1), 3), alpha_for_speedup(3.0, 1, 0.0)
    (0.559, None)
    """
    need = speedup * (1.0 + eps)
    return alpha_from_length(need, k) if need <= k + 1 else None


@dataclass(frozen=True)
class ItlDiagnosis:
    """The eps and alpha under which per-token ITL moves as a report says, at B = 1 (diagnose_tail)."""
    eps: float               #: decode eps
    alpha: float             #: one per-token alpha for every request
    tau: float               #: its acceptance length at K
    k: int                   #: draft length K
    p99_change: float        #: P99 per-token ITL over plain, minus 1
    mean_change: float       #: mean per-token ITL over plain, minus 1
    zero_accept_token_share: float   #: share of tokens from rounds that accepted nothing
    round_mean_change: float   #: mean ITL per chunk (one round) over plain, minus 1: eps


def diagnose_tail(mean_change, p99_change, k):
    """The eps (and alpha) under which per-token ITL shows the given mean and P99 changes, at B = 1.

    Mean per-token ITL changes by (1 + eps)/tau - 1, which fixes tau for each eps; its P99 then
    rises with eps, so bisection finds the eps that matches. One alpha for every request: the
    per-token view needs no spread.
    """
    def p99(eps):
        tau = (1 + eps) / (1 + mean_change)
        alpha = alpha_from_length(tau, k)
        _, per_token = round_mix(((1.0, alpha, 1),), k, 0.0)
        unit = token_itl_parts(per_token, 1.0)
        return (1 + eps) * mixture_quantile(0.99, unit) / JITTER_P99 - 1.0, alpha, tau, per_token

    lo, hi = 0.0, min(1.0, (k + 1) * (1 + mean_change) - 1)
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if p99(mid)[0] < p99_change else (lo, mid)
    eps = (lo + hi) / 2
    change, alpha, tau, per_token = p99(eps)
    return ItlDiagnosis(eps=eps, alpha=alpha, tau=tau, k=k, p99_change=change, mean_change=(1 + eps) / tau - 1.0,
                        zero_accept_token_share=per_token[0],
                        round_mean_change=eps)   # per chunk (vllm bench's ITL), every round costs 1 + eps


@dataclass(frozen=True)
class TpotDiagnosis:
    """The spread of alpha over requests under which TPOT moves as a report says (diagnose_tpot)."""
    spread: float            #: s.d. of the requests' alphas
    alpha: float             #: their mean alpha
    tau: float               #: tau the batch sees over them
    eps: float               #: eps with the prefill share
    k: int                   #: draft length K
    p99_change: float        #: P99 TPOT over plain, minus 1
    mean_change: float       #: mean TPOT over plain, minus 1
    slow_alpha: float        #: mean alpha of the requests at or above P99 TPOT
    slow_tau: float          #: their acceptance length


def diagnose_tpot(mean_change, p99_change, k, batch, dep, decode, fit=FIT):
    """The spread of alpha over requests under which mean TPOT moves mean_change and P99 TPOT p99_change at B.

    For a spread s, the mean alpha follows from the mean: mean TPOT over plain is one over the
    speedup over requests, round_mix's tau over 1 + eps. P99 TPOT then rises with s, so bisection
    finds s. None when no alpha gives the mean, or no spread that keeps the mean reaches the P99.
    """
    eps = eps_decode(dep, batch, k, fit)

    def speedup_at(alpha, spread):
        tau = round_mix(((1.0, alpha, 1),), k, spread)[0]
        return speedup(tau, eps_seen(eps, tau, dep, batch, fit))

    def tail(spread):
        alpha = _increasing_root(lambda a: speedup_at(a, spread), need)
        return alpha, evaluate_cell(alpha, k, eps, batch, dep, decode(alpha, k, spread), fit)

    need = 1.0 / (1.0 + mean_change)
    if speedup_at(1.0, 0.0) < need:
        return None
    # A wider spread lowers the best speedup (alpha 1 on average): search only the spreads that reach the mean.
    hi = 0.5 if speedup_at(1.0, 0.5) >= need else 1.0 - _increasing_root(lambda u: speedup_at(1.0, 1.0 - u), need,
                                                                         0.5, 1.0)
    lo = 0.0
    if tail(hi)[1].tpot_p99_change < p99_change:
        return None
    for _ in range(12):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tail(mid)[1].tpot_p99_change < p99_change else (lo, mid)
    alpha, cell = tail(hi)
    return TpotDiagnosis(spread=hi, alpha=alpha, tau=cell.acceptance_length_requests, eps=cell.eps_eff, k=k,
                         p99_change=cell.tpot_p99_change,
                         mean_change=cell.tpot_spec_mean_ms / cell.tpot_plain_mean_ms - 1.0,
                         slow_alpha=cell.slow_alpha, slow_tau=acceptance_length(cell.slow_alpha, k))


@dataclass(frozen=True)
class SpeedupTarget:
    """The per-token alpha a speedup of 2x and 3x needs at one eps (exercise 1)."""
    eps: float               #: decode eps
    source: str              #: "given", or the cost model's at a batch
    alpha_2x: float          #: per-token alpha for 2x (None: none reaches it)
    alpha_3x: float          #: for 3x
    lesson_2x: float         #: the lesson's (2 (1 + eps) - 1) / K: the rate for 2x
    lesson_3x: float         #: for 3x


@dataclass(frozen=True)
class SpeedupTargets:
    """Exercise 1 at K."""
    k: int                   #: draft length K
    rows: list               #: SpeedupTarget by eps


def exercise_speedup_targets(dep, batch, fit=FIT, k=5):
    """Exercise 1: the per-token alpha K = 5 (the lesson's) needs for 2x and 3x, given eps and from the model."""
    eps_rows = [(e, "given") for e in (0.0, 0.05, 0.10, 0.15, 0.25, 0.50)]
    eps_rows += [(eps_decode(dep, 1, k, fit), "model, B=1"), (eps_decode(dep, batch, k, fit), f"model, B={batch}")]
    return SpeedupTargets(k=k, rows=[SpeedupTarget(eps=e, source=src, alpha_2x=alpha_for_speedup(2, k, e),
                                                   alpha_3x=alpha_for_speedup(3, k, e), lesson_2x=(2 * (1 + e) - 1) / k,
                                                   lesson_3x=(3 * (1 + e) - 1) / k) for e, src in eps_rows])


def smaller_drafts(dep, drafts):
    """The drafts of the list that can serve this target: a draft model must be smaller than it and share its
    tokenizer (draft_problem)."""
    return [d for d in drafts if d not in MODELS or draft_problem(MODELS[d], dep.shape) is None]


def draft_problem(draft, target):
    """Why a draft model (a shape) cannot draft for a target, or None. Its tokens must be the target's: the same
    tokenizer, whose vocabulary size may differ by padding only (Qwen2.5 pads one tokenizer to 151,936 in its small
    models and to 152,064 from 7B up), here up to 1%; and it must be smaller, or drafting saves nothing."""
    if abs(draft["vocab"] / target["vocab"] - 1.0) > 0.01:
        return (f"its vocabulary ({draft['vocab']:,} tokens) is not the target's ({target['vocab']:,}): a draft model "
                "must share the target's tokenizer")
    if model_params(draft) >= model_params(target):
        return (f"it ({model_params(draft) / 1e9:.2f} B parameters) is not smaller than the target "
                f"({model_params(target) / 1e9:.2f} B)")
    return None


@dataclass(frozen=True)
class Method:
    """One of vLLM's speculative methods on this target (exercise 3)."""
    draft: str               #: the --draft value
    method: str              #: vLLM's method name in --speculative-config
    params: float            #: the draft's parameters held in memory
    weight_bytes: float      #: its weights, bytes
    kv_bytes_per_token: float   #: its own KV cache per token of context, bytes
    draft_step_ms: float     #: one draft step at B = 1, ms
    eps_b1: float            #: decode eps at B = 1
    eps_target: float        #: decode eps at the exercise's batch
    max_concurrency: int     #: the most sequences that fit beside it
    config: str              #: its --speculative-config JSON


@dataclass(frozen=True)
class Methods:
    """Exercise 3 at K and one batch."""
    k: int
    concurrency: int
    rows: list               #: Method rows


def exercise_methods(dep, batch, fit=FIT, k=3):
    """Exercise 3: vLLM's speculative methods on this target, what each costs and holds."""
    rows = []
    for draft in smaller_drafts(dep, ("llama-3.2-1b", "eagle", "eagle3", "ngram")):
        d = with_draft(dep, draft)
        rows.append(Method(draft=draft, method=json.loads(speculative_config(d, k))["method"],
                           params=d.drafter.held_params, weight_bytes=d.drafter.held_bytes,
                           kv_bytes_per_token=d.drafter.kv_bytes_per_token,
                           draft_step_ms=draft_step_ms(d, 1, 1, fit), eps_b1=eps_decode(d, 1, k, fit),
                           eps_target=eps_decode(d, batch, k, fit), max_concurrency=max_concurrency(d),
                           config=speculative_config(d, k)))
    return Methods(k=k, concurrency=batch, rows=rows)


@dataclass(frozen=True)
class RemedyCell:
    """The symptom's requests at another K and the exercise's batch."""
    eps: float               #: eps with the prefill share
    speedup: float           #: over the simulated requests
    p99_change: float        #: P99 per-token ITL over plain, minus 1
    tpot_p99_change: float   #: P99 TPOT over plain, minus 1


@dataclass(frozen=True)
class Remedy:
    """A shorter K for the symptom, read per token (one alpha) and as TPOT (spread alphas)."""
    k: int
    eps: float               #: decode eps
    token: RemedyCell = field(default=None, metadata=OPTIONAL)   #: with one alpha for every request
    tpot: RemedyCell = field(default=None, metadata=OPTIONAL)    #: with the spread diagnose_tpot found


@dataclass(frozen=True)
class TailExercise(ItlDiagnosis):
    """Exercise 4: the lesson's symptom read per token (the ItlDiagnosis fields) and as TPOT, and the remedies."""
    remedies: list           #: Remedy by K
    concurrency: int         #: the batch the remedies are at
    schedule: list           #: [start, end, K] rows at the diagnosed alpha
    tpot: TpotDiagnosis      #: None when no spread gives both figures
    symptom: tuple           #: LESSON_SYMPTOM: (mean change, P99 change)
    k_zero_at: int           #: where the schedule turns speculation off for good, or None


def exercise_tail(dep, batch, decode, fit=FIT):
    """Exercise 4: LESSON_SYMPTOM read per token and as TPOT over requests, and the remedies."""
    tail = diagnose_tail(*LESSON_SYMPTOM, 3)
    tpot = diagnose_tpot(*LESSON_SYMPTOM, 3, 1, dep, decode, fit)
    remedies = []
    for kk in (1, 2, 3):
        eps = eps_decode(dep, batch, kk, fit)
        reads = {}
        for name, alpha, s in (("token", tail.alpha, 0.0), ("tpot", tpot and tpot.alpha, tpot and tpot.spread)):
            if alpha is not None:
                cell = evaluate_cell(alpha, kk, eps, batch, dep, decode(alpha, kk, s), fit)
                reads[name] = RemedyCell(eps=cell.eps_eff, speedup=cell.speedup_mc, p99_change=cell.p99_change,
                                         tpot_p99_change=cell.tpot_p99_change)
        remedies.append(Remedy(k=kk, eps=eps, **reads))
    schedule = k_schedule(dep, tail.alpha, fit)
    return TailExercise(**fields_of(tail), remedies=remedies, concurrency=batch, schedule=schedule, tpot=tpot,
                        symptom=LESSON_SYMPTOM, k_zero_at=k_zero_at(schedule))


@dataclass(frozen=True)
class DraftMemoryRow:
    """What one draft holds at the exercise's load (exercise 5)."""
    draft: str               #: the --draft value
    params: float            #: parameters held
    weight_bytes: float      #: weights, bytes
    kv_bytes_per_token: float   #: its own KV cache per token of context, bytes
    kv_bytes_at_target: float   #: that KV cache at the exercise's batch and context, bytes
    max_concurrency: int     #: the most sequences that fit beside it


@dataclass(frozen=True)
class DraftMemory:
    """Exercise 5: an EAGLE-3 head's memory against a draft model's."""
    concurrency: int
    context: int             #: mean decode context, tokens
    rows: list               #: DraftMemoryRow by draft
    max_concurrency_without_draft: int   #: the most sequences that fit with no draft weights or KV


def exercise_draft_memory(dep, batch):
    """Exercise 5: an EAGLE-3 head's memory against a draft model's, at the target load."""
    rows = []
    for draft in smaller_drafts(dep, ("eagle3", "llama-3.2-1b")):
        d = with_draft(dep, draft)
        rows.append(DraftMemoryRow(draft=draft, params=d.drafter.held_params, weight_bytes=d.drafter.held_bytes,
                                   kv_bytes_per_token=d.drafter.kv_bytes_per_token,
                                   kv_bytes_at_target=d.drafter.kv_bytes_per_token * dep.context * batch,
                                   max_concurrency=max_concurrency(d)))
    return DraftMemory(concurrency=batch, context=dep.context, rows=rows,
                       max_concurrency_without_draft=max_concurrency(with_draft(dep, "ngram")))


@dataclass(frozen=True)
class Exercises:
    """The lesson's five exercises, answered (solve_exercises)."""
    speedup_targets: SpeedupTargets
    traffic_mix: list        #: Blend at B = 1 and the exercises' batch (exercise 2)
    methods: Methods
    tail_diagnosis: TailExercise
    draft_memory: DraftMemory


def solve_exercises(dep, grid, mix, seed=SEED, fit=FIT, spread=ALPHA_SPREAD, output_spread=OUTPUT_SPREAD):
    """The lesson's five exercises, answered by the model at the grid's largest concurrency, or at the largest batch
    that fits when it does not."""
    batch = min(max(grid.concurrencies), max(max_concurrency(dep), 1))
    decode = decoder(seed, spread, output_spread, dep.output_tokens)
    return Exercises(speedup_targets=exercise_speedup_targets(dep, batch, fit),
                     traffic_mix=[traffic_blend(mix, dep, 5, b, fit) for b in sorted({1, batch})],   # exercise 2
                     methods=exercise_methods(dep, batch, fit),
                     tail_diagnosis=exercise_tail(dep, batch, decode, fit),
                     draft_memory=exercise_draft_memory(dep, batch))


# ---------------------------------------------------------------- analysis: calibrating on your runs
# `vllm bench serve` results of your own deployment (--calibrate) correct the published fit
# where your engine, kernels or GPU differ from it. Each run's predicted mean TPOT is a sum
# of terms (run_terms): a pass's fixed cost, the weight read, the context, the cost per
# token, the prefill share, and for a speculative run a round's bookkeeping, the verify
# pass's extra tokens and the draft steps. The fit finds one factor for each (Fit's own_*,
# OWN_TERMS) by least squares on log error, each run weighted by its noise, with the
# published fit as a prior: a penalty (log factor / OWN_PRIOR_SD)^2 pulls a factor the runs
# do not inform back to 1, where hard bounds would pin it at an edge. A closed-loop run at
# max_concurrency C decodes fewer than C sequences on average (decoding_batch): the fit
# uses that batch, the physics the run measured; the tables' B stays the decode batch.

OWN_PRIOR_SD = dict(   # s.d. of each own_* factor's log before your runs: how well the published fit knows it
    own_pass=0.5,      # a pass's fixed cost differs by engine and version: 0.26 to 1.82 ms across the fit's engines
    own_weights=0.15,  # the bandwidth share varies 0.71 to 0.92 across GPU families in the published fit
    own_context=0.4,   # attention kernels differ by engine and context length
    own_token=0.4,     # the engine's cost per token and small-GEMM efficiency
    own_prefill=0.4,   # chunked-prefill scheduling differs by engine
    own_round=0.7,     # a round's bookkeeping changed most across engine versions (rejection sampler, async)
    own_verify=0.4,
    own_draft=0.5)     # draft heads run in CUDA graphs on some engines and not others
RUN_NOISE = 0.01      # least run-to-run spread of a closed-loop run's mean TPOT (fraction): ten prompts a slot
OWN_WORST = 0.25      # a fit whose worst run is further off than this says the files disagree
OWN_HELD_OUT = 0.5    # and so does a run the others predict more than x1.5 (or /1.5) off when it is left out: the
                      # fit reaches it in sample only by bending a factor (one run 2.5x slower than its neighbours)
OWN_LENGTHS = 0.25    # runs one calibration fits may differ in mean prompt or output length by at most this
OWN_OUTLIER = 3.0     # a run further from the fit than this many times its noise is named as disagreeing


def at_lengths(dep, input_tokens, output_tokens):
    """The deployment at a run's own prompt and output lengths (its totals over completed requests)."""
    return replace(dep, input_tokens=input_tokens, output_tokens=output_tokens,
                   context=mean_context(input_tokens, output_tokens))


def decoding_batch(concurrency, output_tokens, tpot_ms, ttft_ms, completed):
    """Sequences a closed-loop run at max_concurrency C decodes on average, as its requests see it.

    A request holds its slot for its time to first token and then decodes: the share of a slot spent decoding is
    (O - 1) TPOT / (TTFT + (O - 1) TPOT) (Little's law). And the last C of N requests drain the batch, each seeing
    about C/2 on average: C (1 - C / 2N) over the requests.
    >>> decoding_batch(16, 101, 10.0, 0.0, 160), round(decoding_batch(64, 301, 20.0, 600.0, 1280), 3)
    (15.2, 56.727)
    """
    decoding = (output_tokens - 1) * tpot_ms
    share = decoding / (decoding + ttft_ms) if ttft_ms else 1.0
    drain = 1.0 - min(concurrency, completed) / (2.0 * completed)
    return max(1.0, concurrency * share * drain)


def run_tpot_ms(dep, run, fit):
    """The mean TPOT the model gives for one benchmark run (a Run), at the batch it decoded."""
    d, b = at_lengths(dep, run.input_tokens, run.output_tokens), run.decoding or run.batch
    if run.k is None:
        return plain_step_ms(d, b, fit)
    return spec_tpot_ms(d, b, 1.0 / run.tau, round_ms(d, b, run.k, fit), fit)


@dataclass(frozen=True)
class RunTerms:
    """One run's mean TPOT as the terms own_* scale, at own_* = 1 (run_terms): {own field, or "" for none: ms}."""
    decode: dict             #: a plain decode step's terms
    prefill: dict            #: the prefill share's, before own_prefill
    verify: dict             #: what the verify pass's extra tokens add, before own_verify ({} for a baseline)
    round_ms: float          #: a round's bookkeeping, before own_round
    draft_ms: float          #: a round's draft steps, before own_draft
    tau: float               #: tokens a round (None: a baseline)
    saving_ms: float = 0.0   #: the era's host time a round no longer waits for (Era.saving_ms), before the cap
    draft_fixed_ms: float = 0.0   #: the K draft steps' fixed costs, before own_draft (what saving_ms may take)


def run_terms(dep, run, fit=FIT):
    """A run's predicted TPOT split into the terms the calibration scales (terms_tpot_ms sums them back)."""
    base = fit._replace(**dict.fromkeys(OWN_TERMS, 1.0))
    d, b = at_lengths(dep, run.input_tokens, run.output_tokens), run.decoding or run.batch

    def grouped(parts):
        out = dict.fromkeys(["", *OWN_PARTS.values()], 0.0)
        for term, ms in parts.items():
            out[OWN_PARTS.get(term, "")] += ms
        return out

    plain = grouped(target_parts(d, b, 1, base))
    prefill = grouped(prefill_parts(d, b, base))
    if run.k is None:
        return RunTerms(decode=plain, prefill=prefill, verify={}, round_ms=0.0, draft_ms=0.0, tau=None)
    verify = grouped(target_parts(d, b, verify_tokens(d, run.k), base))
    return RunTerms(decode=plain, prefill=prefill, verify={key: verify[key] - plain[key] for key in plain},
                    round_ms=fixed_ms(d, "round", base), draft_ms=draft_ms(d, b, run.k, base), tau=run.tau,
                    saving_ms=d.era.saving_ms(draft_kind(d.draft), d.topk),
                    draft_fixed_ms=run.k * fixed_ms(d, "draft", base) if runs_a_draft_model(d) else 0.0)


def terms_tpot_ms(terms, own):
    """The mean TPOT of RunTerms at the factors own ({own field: factor}): run_tpot_ms at those factors, summed in
    closed form so that a fit can try thousands of factors."""
    def total(part):
        return sum(ms * own.get(key, 1.0) for key, ms in part.items())
    step, share = total(terms.decode), own["own_prefill"] * total(terms.prefill)
    if terms.tau is None:
        return step + share
    fixed = own["own_round"] * terms.round_ms + own["own_draft"] * terms.draft_fixed_ms
    rounds = (own["own_round"] * terms.round_ms + own["own_draft"] * terms.draft_ms + step
              + own["own_verify"] * total(terms.verify) - min(terms.saving_ms, fixed))   # hidden_ms, closed form
    return rounds / terms.tau + share


def solve(matrix, vector):
    """x with matrix x = vector (Gaussian elimination with partial pivoting; matrix square, well conditioned)."""
    n = len(vector)
    a = [list(row) + [v] for row, v in zip(matrix, vector)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            f = a[r][col] / a[col][col]
            a[r] = [x - f * y for x, y in zip(a[r], a[col])]
    x = [0.0] * n
    for r in reversed(range(n)):
        x[r] = (a[r][n] - sum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
    return x


def inverse(matrix):
    """The inverse of a small square matrix, column by column (solve)."""
    n = len(matrix)
    columns = [solve(matrix, [1.0 if i == j else 0.0 for i in range(n)]) for j in range(n)]
    return [[columns[j][i] for j in range(n)] for i in range(n)]


def log_errors(terms, runs, theta):
    """Each run's log(predicted / measured) at log factors theta (in OWN_TERMS' order)."""
    own = {name: math.exp(t) for name, t in zip(OWN_TERMS, theta)}
    return [math.log(terms_tpot_ms(t, own) / r.tpot_ms) for t, r in zip(terms, runs)]


def jacobian(terms, theta):
    """d log(predicted TPOT) / d log factor for each run's terms (central differences on the closed form)."""
    step, rows = 1e-6, []
    for t in terms:
        row = []
        for j in range(len(theta)):
            up, down = list(theta), list(theta)
            up[j] += step
            down[j] -= step
            own_up = {name: math.exp(v) for name, v in zip(OWN_TERMS, up)}
            own_down = {name: math.exp(v) for name, v in zip(OWN_TERMS, down)}
            row.append((math.log(terms_tpot_ms(t, own_up)) - math.log(terms_tpot_ms(t, own_down))) / (2 * step))
        rows.append(row)
    return rows


def normal_matrix(rows, noises):
    """J'WJ plus the prior's precision: the curvature of the fit's loss, whose inverse is the factors' covariance."""
    sd = list(OWN_PRIOR_SD.values())
    n = len(sd)
    return [[sum(r[i] * r[j] / s ** 2 for r, s in zip(rows, noises)) + (1.0 / sd[i] ** 2 if i == j else 0.0)
             for j in range(n)] for i in range(n)]


def fit_factors(terms, runs):
    """The log factors (OWN_TERMS' order) that minimise sum (log error / noise)^2 + sum (log factor / prior s.d.)^2:
    Gauss-Newton with Levenberg's damping, from the published fit (all 0); deterministic."""
    sd, noises = list(OWN_PRIOR_SD.values()), [r.noise for r in runs]
    theta, damping = [0.0] * len(sd), 1e-3

    def loss(th):
        return (sum((e / s) ** 2 for e, s in zip(log_errors(terms, runs, th), noises))
                + sum((t / p) ** 2 for t, p in zip(th, sd)))

    current = loss(theta)
    for _ in range(100):
        rows, errors = jacobian(terms, theta), log_errors(terms, runs, theta)
        matrix = normal_matrix(rows, noises)
        gradient = [sum(r[i] * e / s ** 2 for r, e, s in zip(rows, errors, noises)) + theta[i] / sd[i] ** 2
                    for i in range(len(sd))]
        while True:
            damped = [[v * (1.0 + damping) if i == j else v for j, v in enumerate(row)] for i, row in enumerate(matrix)]
            trial = [t - d for t, d in zip(theta, solve(damped, gradient))]
            trial_loss = loss(trial)
            if trial_loss <= current or damping > 1e8:
                break
            damping *= 10.0
        if trial_loss > current:
            break
        done = current - trial_loss < 1e-12 * (1.0 + current)
        theta, current, damping = trial, trial_loss, max(damping / 10.0, 1e-9)
        if done:
            break
    return theta


def fitted_with(fit, theta):
    """The Fit with own_* set to the factors exp(theta), rounded to 4 significant digits as printed."""
    return fit._replace(**{name: float(f"{math.exp(t):.4g}") for name, t in zip(OWN_TERMS, theta)})


@dataclass(frozen=True)
class CalibrationRun:
    """One of your runs against the model, before and after fitting it on them."""
    path: str
    kind: str                #: "baseline" or "speculative"
    batch: int               #: max_concurrency B
    k: int                   #: K of a speculative run (None: a baseline)
    tau: float               #: its acceptance length
    measured_tpot_ms: float  #: mean TPOT the run measured
    published_fit_tpot_ms: float   #: the published fit's
    fitted_tpot_ms: float    #: the fit on your runs'
    error: float             #: fitted over measured, minus 1 (in sample: the run was fitted)
    decoding_batch: float = field(default=None, metadata=OPTIONAL)   #: sequences it decoded on average (decoding_batch)
    held_out_error: float = field(default=None, metadata=OPTIONAL)   #: fitted on the other runs, over measured, minus 1
    noise: float = field(default=None, metadata=OPTIONAL)            #: the run's own noise, fraction (Run.noise)
    measured_speedup: float = field(default=None, metadata=OPTIONAL)   #: over the baseline at its B, measured
    fitted_speedup: float = field(default=None, metadata=OPTIONAL)     #: likewise, fitted


@dataclass(frozen=True)
class Separation:
    """Two factors the runs moved together, and the run that would tell them apart (unseparated)."""
    terms: tuple             #: the two own_* fields
    correlation: float       #: of their log factors after the fit
    run: str                 #: the run that would separate them, in words (None: no run would)
    spread_now: float        #: s.d. of the two log factors, summed, after the fit
    spread_after: float      #: the same with that run added


@dataclass(frozen=True)
class Calibration:
    """The fit of the cost model on your runs (calibrate_on_runs)."""
    files: list              #: the files fitted
    fitted_fields: list      #: the Fit fields the runs moved (own_*)
    kept: list               #: the Fit fields kept at the published fit
    before: dict             #: {Fit field: published value}
    after: dict              #: {Fit field: fitted value}
    runs: list               #: CalibrationRun rows
    median_error: float      #: median |error| over the runs, in sample
    worst_error: float       #: largest |error|, in sample
    notes: list              #: what the fit noticed about the files
    held_out_median: float = field(default=None, metadata=OPTIONAL)   #: median |held_out_error|: what to believe
    held_out_worst: float = field(default=None, metadata=OPTIONAL)    #: largest |held_out_error|
    held_out_sd: float = field(default=None, metadata=OPTIONAL)       #: RMS log held-out error: the intervals' s.d.
    informed: dict = field(default_factory=dict, metadata=OPTIONAL)   #: {own field: posterior s.d. / prior s.d.}
    unseparated: list = field(default_factory=list, metadata=OPTIONAL)   #: Separation rows
    disagreeing: str = field(default=None, metadata=NOT_IN_JSON)   #: the run whose leaving out lets the rest fit best


INFORMED = 0.7       # a factor whose s.d. the runs shrank below this share of its prior's is informed by them
TOGETHER = -0.8      # two factors, one informed, whose log factors correlate below this moved together
SEPARATES = 0.7      # a run separates two factors if it shrinks their summed s.d. below this share


def candidate_runs(dep, runs):
    """Runs the user could add, as Runs: baselines and speculative runs (at the runs' acceptance) at each batch
    from 1 to the most that fits, and a baseline at twice the prompt length at the runs' largest batch."""
    first = runs[0]
    spec = [r for r in runs if r.k is not None]
    alpha = statistics.median(alpha_from_length(r.tau, r.k) for r in spec) if spec else EXPECTED_ALPHA
    top = max(1, min(max_concurrency(dep), max(r.batch for r in runs) * 4))
    batches = sorted({2 ** i for i in range(12) if 2 ** i <= top} | {r.batch for r in runs})
    out = []
    for b in batches:
        out.append((f"a baseline at concurrency {b}",
                    replace(first, batch=b, k=None, tau=None, decoding=None, tpot_ms=None)))
        if dep.drafter is not None and any(r.k is not None for r in runs):
            for k in range(1, K_MAX + 1):
                out.append((f"a speculative run at K = {k}, concurrency {b}",
                            replace(first, batch=b, k=k, tau=acceptance_length(alpha, k), decoding=None, tpot_ms=None)))
    widest = max(r.batch for r in runs)
    out.append((f"a baseline at concurrency {widest} with prompts of {2 * first.input_tokens} tokens",
                replace(first, batch=widest, input_tokens=2 * first.input_tokens, k=None, tau=None, decoding=None,
                        tpot_ms=None)))
    return out


def unseparated(dep, runs, theta, covariance, informed):
    """Pairs of factors the runs moved together (one of them informed), each with the candidate run that best tells
    them apart (run None when none does: then they add up alike in every prediction at these lengths)."""
    names = list(OWN_TERMS)
    pairs = []
    for i, j in itertools.combinations(range(len(names)), 2):
        if names[i] in informed or names[j] in informed:
            corr = covariance[i][j] / math.sqrt(covariance[i][i] * covariance[j][j])
            if corr < TOGETHER:
                pairs.append((i, j, corr))
    if not pairs:
        return []
    candidates = [(words, jacobian([run_terms(dep, probe)], theta)[0]) for words, probe in candidate_runs(dep, runs)]
    out = []
    for i, j, corr in pairs:
        now = covariance[i][i] + covariance[j][j]

        def after(row):   # the covariance with one more run of noise RUN_NOISE (a rank-one update)
            c_row = [sum(covariance[a][b] * row[b] for b in range(len(row))) for a in range(len(row))]
            scale = RUN_NOISE ** 2 + sum(r * c for r, c in zip(row, c_row))
            return now - (c_row[i] ** 2 + c_row[j] ** 2) / scale
        words, best = min(((w, after(row)) for w, row in candidates), key=lambda c: c[1])
        out.append(Separation(terms=(names[i], names[j]), correlation=corr,
                              run=words if best < (SEPARATES * math.sqrt(now)) ** 2 else None,
                              spread_now=math.sqrt(now), spread_after=math.sqrt(max(best, 0.0))))
    return out


def calibrate_on_runs(dep, runs, fit=FIT):
    """Fit own_* on your runs (fit_factors), refit without each run in turn to measure the error a user should
    believe (held-out), and say what the runs could not separate. Returns the fitted Fit and a Calibration."""
    terms = [run_terms(dep, r, fit) for r in runs]
    theta = fit_factors(terms, runs)
    fitted = fitted_with(fit, theta)
    covariance = inverse(normal_matrix(jacobian(terms, theta), [r.noise for r in runs]))
    informed = {name: math.sqrt(covariance[i][i]) / OWN_PRIOR_SD[name] for i, name in enumerate(OWN_TERMS)}
    held_out, rest_worst, rest_loss = [], [], []
    for i, r in enumerate(runs):
        others = runs[:i] + runs[i + 1:]
        rest = fit_factors(terms[:i] + terms[i + 1:], others)
        held_out.append(terms_tpot_ms(terms[i], {n: math.exp(t) for n, t in zip(OWN_TERMS, rest)}) / r.tpot_ms - 1.0)
        errors = log_errors(terms[:i] + terms[i + 1:], others, rest)
        rest_worst.append(max(abs(e) for e in errors))
        rest_loss.append(sum((e / o.noise) ** 2 for e, o in zip(errors, others))
                         + sum((t / sd) ** 2 for t, sd in zip(rest, OWN_PRIOR_SD.values())))
    rows = []
    for r, out in zip(runs, held_out):
        fitted_ms = run_tpot_ms(dep, r, fitted)
        base = next((b for b in runs if b.k is None and b.batch == r.batch), None)
        speedups = {}
        if r.k is not None and base is not None:   # a speculative run's speedup over the baseline at its batch
            speedups = dict(measured_speedup=base.tpot_ms / r.tpot_ms,
                            fitted_speedup=run_tpot_ms(dep, base, fitted) / fitted_ms)
        rows.append(CalibrationRun(path=r.path, kind="speculative" if r.k else "baseline", batch=r.batch, k=r.k,
                                   tau=r.tau, measured_tpot_ms=r.tpot_ms, published_fit_tpot_ms=run_tpot_ms(dep, r, fit),
                                   fitted_tpot_ms=fitted_ms, error=fitted_ms / r.tpot_ms - 1.0,
                                   decoding_batch=r.decoding, held_out_error=out, noise=r.noise, **speedups))
    errors = [abs(row.error) for row in rows]
    ours = [name for name in (dep.shape.get("hf"), served_model(dep)) if dep.shape.get("hf")]
    others = sorted({r.model_id for r in runs if r.model_id is not None
                     and ours and not any(same_model(r.model_id, name) for name in ours)}, key=str)
    notes = [f"the runs' model_id {shown(name)} is not this deployment's {ours[0]!r}: a --served-model-name alias, "
             "or runs of another model?" for name in others]
    notes += [note for note in (length_note(Path(r.path).name, (r.input_tokens, r.output_tokens), dep) for r in runs)
              if note]
    # The run that disagrees: the one whose leaving out lets the others fit best, prior included (its own residual
    # need not be the largest, since the fit splits the difference).
    disagreeing = min(range(len(runs)), key=lambda i: rest_loss[i])
    if any(abs(row.error) > OWN_OUTLIER * row.noise for row in rows):
        row = rows[disagreeing]
        notes.append(f"the fit cannot follow the runs (up to {max(errors):.1%} "
                     f"after fitting, against their noise of {min(r.noise for r in runs):.1%}); the one that disagrees "
                     f"is {Path(row.path).name}: without it the others fit within {rest_worst[disagreeing]:.1%}, and "
                     f"their prediction misses it by {pct1(row.held_out_error)}. The model's form misses something it "
                     "measures, or the run is off: rerun it")
    moved = [name for name in OWN_TERMS if informed[name] < INFORMED]
    return fitted, Calibration(
        files=[r.path for r in runs], fitted_fields=moved, kept=sorted(set(Fit._fields) - set(moved)),
        before={name: getattr(fit, name) for name in moved}, after={name: getattr(fitted, name) for name in moved},
        runs=rows, median_error=statistics.median(errors), worst_error=max(errors), notes=notes,
        held_out_median=statistics.median(abs(e) for e in held_out), held_out_worst=max(abs(e) for e in held_out),
        held_out_sd=max(RUN_NOISE, math.sqrt(statistics.fmean(math.log1p(e) ** 2 for e in held_out))),
        informed=informed, unseparated=unseparated(dep, runs, theta, covariance, set(moved)),
        disagreeing=runs[disagreeing].path)


# ---------------------------------------------------------------- analysis: how far to trust a number
# Every predicted speedup and TPOT carries an interval at INTERVAL_LEVEL. Before calibration its
# width is the model's own error out of sample on published deployments like this one
# (MODEL_ERROR, from bench/intervals.py: each point predicted by a fit that did not see its
# source), widened for each way this deployment lies outside those data; after --calibrate, it
# is the held-out error of your own runs.

INTERVAL_LEVEL = 0.8   # share of measurements an interval should hold
ERROR_CLASS = ("what", "target", "engine", "draft", "family")   # what sets the model's error, most telling first


Z_INTERVAL = NORMAL.inv_cdf(0.5 + INTERVAL_LEVEL / 2)   # 1.28: an interval is the prediction times exp(+-z sd)
# The model's error out of sample by class, (what, target, engine, draft, family) -> (points, sources, within,
# between): within, the RMS of a source's log errors around the source's own mean; between, the RMS of the sources'
# means. Printed by bench/intervals.py from bench/held_out_errors.json (error_table); tests/test_intervals.py checks
# the two agree. A TPOT's class has no draft: a plain step runs none.
MODEL_ERROR = {
    ('speedup', 'dense', 'sglang', 'eagle', 'hopper'): (9, 1, 0.1112, 0.0652),
    ('speedup', 'dense', 'sglang', 'eagle3', 'hopper'): (81, 3, 0.0499, 0.1856),
    ('speedup', 'dense', 'vllm', 'eagle3', 'hopper'): (6, 1, 0.0136, 0.0154),
    ('speedup', 'moe', 'sglang', 'eagle3', 'hopper'): (185, 4, 0.1808, 0.3797),
    ('tpot', 'dense', 'sglang', '', 'hopper'): (1, 1, 0.0, 0.0517),
    ('tpot', 'dense', 'trtllm', '', 'ada'): (18, 1, 0.0991, 0.0121),
    ('tpot', 'dense', 'trtllm', '', 'ampere'): (49, 2, 0.1278, 0.0344),
    ('tpot', 'dense', 'trtllm', '', 'hopper'): (124, 2, 0.1305, 0.0686),
    ('tpot', 'dense', 'vllm', '', 'cdna'): (9, 1, 0.1306, 0.229),
    ('tpot', 'dense', 'vllm', '', 'hopper'): (1, 1, 0.0, 0.0017),
}


def error_class(what, dep):
    """A prediction's class for MODEL_ERROR: what it predicts ("speedup" or "tpot") and the deployment's kind."""
    return dict(what=what, target="moe" if dep.target.experts else "dense", engine=dep.engine.key,
                draft=draft_kind(dep.draft) if what == "speedup" else "", family=gpu_family(dep),
                layout="ep+dp" if dep.dp_attention else "ep" if dep.ep > 1 else "tp")


def error_table(rows):
    """MODEL_ERROR from held-out rows (dicts with the ERROR_CLASS keys, "source" and "log_error")."""
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r[key] for key in ERROR_CLASS), {}).setdefault(r["source"], []).append(r["log_error"])
    table = {}
    for key, sources in sorted(groups.items()):
        means = {name: statistics.fmean(errors) for name, errors in sources.items()}
        points = sum(len(errors) for errors in sources.values())
        within = math.sqrt(sum((e - means[name]) ** 2 for name, errors in sources.items() for e in errors) / points)
        between = math.sqrt(statistics.fmean(m * m for m in means.values()))
        table[key] = (points, len(sources), round(within, 4), round(between, 4))
    return table


@dataclass(frozen=True)
class ClassError:
    """How far the model errs for a class of deployment (class_error): s.d. of log(measured / predicted)."""
    sd: float                #: the whole s.d.: within, between and outside added in quadrature
    within: float            #: the spread of a source's points around its own mean, same kind of target
    between: float           #: the spread between sources of the same target kind: a new deployment is a new source
    outside: tuple           #: the attributes (target, engine, draft, family) with no data, each adding the spread
                             #: between all sources once more


def class_error(cls, table=MODEL_ERROR):
    """The model's error for a prediction of class `cls` (error_class): the spreads within and between the sources
    of the same kind of target, and the spread between all sources once more for each attribute (engine, draft,
    GPU family, or the target's kind itself) that no source shares. Pooled by target, not matched on every
    attribute: few classes hold more than one source, and one source says nothing of the next."""
    rows = {key: value for key, value in table.items() if key[0] == cls["what"]}
    order = ERROR_CLASS[1:]
    alike = [value for key, value in rows.items() if key[1] == cls["target"]] or list(rows.values())
    within = sum(v[0] * v[2] ** 2 for v in alike) / sum(v[0] for v in alike)

    def between_of(values):
        return sum(v[1] * v[3] ** 2 for v in values) / sum(v[1] for v in values)
    outside = tuple(name for name in order if not any(key[order.index(name) + 1] == cls[name] for key in rows))
    # Every published source ran tensor parallel: an expert-parallel layout is one more attribute none shares.
    outside += ("layout",) if cls.get("layout", "tp") != "tp" else ()
    squared = within + between_of(alike) + len(outside) * between_of(rows.values())
    return ClassError(sd=math.sqrt(squared), within=math.sqrt(within), between=math.sqrt(between_of(alike)),
                      outside=outside)


def interval_coverage(rows, level=INTERVAL_LEVEL):
    """Cross-validated coverage of the intervals: each source's points against the table of all the other sources,
    each source's share of points inside weighted alike (a new deployment is a new source)."""
    z = NORMAL.inv_cdf(0.5 + level / 2)
    shares = []
    for source in sorted({r["source"] for r in rows}):
        table = error_table([r for r in rows if r["source"] != source])
        mine = [r for r in rows if r["source"] == source]
        inside = [abs(r["log_error"]) <= z * class_error({k: r[k] for k in ERROR_CLASS}, table).sd for r in mine]
        shares.append(sum(inside) / len(inside))
    return statistics.fmean(shares)


@dataclass(frozen=True)
class Trust:
    """How far to believe this run's predictions (trust): the s.d. of log(measured / predicted) for a speedup and
    a mean TPOT, and where it comes from."""
    level: float             #: share of measurements an interval holds
    speedup_sd: float        #: s.d. of a predicted speedup's log error
    tpot_sd: float           #: s.d. of a predicted mean TPOT's log error, speculation off
    spec_tpot_sd: float      #: likewise with speculation on
    calibrated: bool         #: from your runs' held-out errors (else the published data's)
    outside: tuple           #: attributes of this deployment no published data share (uncalibrated)
    basis: str               #: in words


def trust_in(dep, calibration=None, table=MODEL_ERROR):
    """The model's error here: after --calibrate your runs' held-out errors (baselines for a TPOT; a speedup is a
    ratio of two TPOTs, so both kinds add), before it the published data's for this class of deployment."""
    speedup, tpot = class_error(error_class("speedup", dep), table), class_error(error_class("tpot", dep), table)
    if calibration is None:
        outside = tuple(dict.fromkeys(speedup.outside + tpot.outside))
        era = era_sd(dep)
        outside += ("era",) if era else ()
        speedup_sd = math.hypot(speedup.sd, era)
        return Trust(level=INTERVAL_LEVEL, speedup_sd=speedup_sd, tpot_sd=tpot.sd,
                     spec_tpot_sd=math.hypot(speedup_sd, tpot.sd), calibrated=False, outside=outside,
                     basis="the model's error on published deployments like this one, each predicted by a fit that "
                           "did not see it" + (f", plus an s.d. of {era:.2f} in log for the engine release, as large "
                                               "as the round's derived saving (taken off rounds only: had the plain "
                                               "step's host time shrunk too, the speedup would be lower)"
                                               if era else ""))

    def rms(errors):
        return math.sqrt(statistics.fmean(math.log1p(e) ** 2 for e in errors)) if errors else None
    base = rms([r.held_out_error for r in calibration.runs if r.k is None])
    spec = rms([r.held_out_error for r in calibration.runs if r.k is not None])
    base = max(RUN_NOISE, base)
    speedup_sd = math.hypot(base, max(RUN_NOISE, spec)) if spec is not None else speedup.sd
    return Trust(level=INTERVAL_LEVEL, speedup_sd=speedup_sd, tpot_sd=base,
                 spec_tpot_sd=max(RUN_NOISE, spec) if spec is not None else math.hypot(base, speedup_sd),
                 calibrated=True, outside=(),
                 basis="your runs, each predicted by a fit on the others"
                       + ("" if spec is not None else "; no speculative run: a speedup keeps the published data's error"))


ERA_REFERENCE = (1, 3)   # (B, K) where an era's saving is sized for the interval: batch 1, where fixed costs weigh most


def era_sd(dep, fit=FIT):
    """The s.d. (of a speedup's log) the engine era adds: the log of the fitted era's round over this era's at
    ERA_REFERENCE, i.e. the saving's own size. No published point times a round in an era that is not fitted, so
    the saving is taken to be uncertain by as much as it moves the round (0 for a fitted era)."""
    if dep.era.fitted or not dep.era.saving_ms(draft_kind(dep.draft), dep.topk):
        return 0.0
    fitted = replace(dep, era=fitted_era(dep.engine.key))
    batch, k = ERA_REFERENCE
    return math.log(round_ms(fitted, batch, k, fit) / round_ms(dep, batch, k, fit))


def interval(value, sd):
    """[low, high] around a prediction: value times exp(-+ Z_INTERVAL sd), the INTERVAL_LEVEL share of outcomes."""
    if value is None:
        return None
    spread = math.exp(Z_INTERVAL * sd)
    return [value / spread, value * spread]


def span(bounds, digits=2):
    """An interval as printed: "0.93-1.22"."""
    return f"{bounds[0]:.{digits}f}-{bounds[1]:.{digits}f}"


def too_close(bounds, line=1.0):
    """Whether an interval straddles a line (1.0 for a speedup): the prediction cannot tell the side."""
    return bounds is not None and bounds[0] < line < bounds[1]


def breakeven_range(k, eps, sd):
    """[low, high] of the break-even rate eps / K when a round's cost over a plain step, 1 + eps, is uncertain by
    the s.d. sd of a speedup's log (the speedup is tau over it): None when even the low end is above 1.

    >>> [round(x, 4) for x in breakeven_range(2, 0.5, 0.0)]
    [0.25, 0.25]
    """
    spread = math.exp(Z_INTERVAL * sd)
    low, high = max(0.0, ((1.0 + eps) / spread - 1.0) / k), ((1.0 + eps) * spread - 1.0) / k
    return None if low > 1.0 else [low, min(high, 1.0)]


def breakeven_alpha_range(k, eps, sd):
    """[low, high] of the break-even per-token alpha when 1 + eps is uncertain by sd (breakeven_range); None
    without sd, and high None where the dear end of the range has no break-even below 1."""
    if sd is None:
        return None
    spread = math.exp(Z_INTERVAL * sd)
    low = exact_breakeven(k, max(0.0, (1.0 + eps) / spread - 1.0))
    return None if low is None else [low, exact_breakeven(k, (1.0 + eps) * spread - 1.0)]


def with_intervals(cell, trust):
    """A grid cell with the intervals of its predicted speedup and mean TPOTs (Trust)."""
    if not cell.feasible:
        return cell
    return replace(cell, speedup_interval=interval(cell.speedup_mc, trust.speedup_sd),
                   tpot_plain_mean_interval_ms=interval(cell.tpot_plain_mean_ms, trust.tpot_sd),
                   tpot_spec_mean_interval_ms=interval(cell.tpot_spec_mean_ms, trust.spec_tpot_sd))


# ---------------------------------------------------------------- analysis: predicted benchmark files
# The files a benchmark run would write (serve_run, bench_result), each number with its interval: the
# model's mean-TPOT error (Trust) for every time and, inverted, every throughput. No published source
# here holds out a TTFT or a throughput under load, so their intervals are a step's, not their own.

BENCH_OPEN_PROMPTS = 1000   # vllm bench serve's default --num-prompts (vllm/benchmarks/serve.py): an open loop's
BENCH_TIMES = re.compile(r"^(duration|(mean|median|std|p\d+)_(ttft|tpot|itl|e2el)_ms)$")
BENCH_RATES = ("request_throughput", "output_throughput", "total_token_throughput", "max_output_tokens_per_s")


@dataclass(frozen=True)
class PredictedBench:
    """One predicted benchmark file (predict_bench)."""
    name: str                #: the file's name, as the plan names its runs
    k: int                   #: draft length (0: speculation off)
    alpha: float             #: the per-token alpha its requests centre on (0 without speculation)
    workload: Workload
    cap: int                 #: sequences the server runs at once (running_cap)
    peak_running: int        #: the most it ran at once in the simulated run
    steps: int               #: scheduler steps the run took
    result: dict             #: the file's keys, as vllm bench serve writes them
    intervals: dict = field(default_factory=dict)   #: key -> [low, high] at the trust level
    sd: float = 0.0          #: the s.d. in log behind the intervals


SAME_LENGTHS = 0.05   # a spread of ln(output tokens) below this, read from a file, is taken as equal answers: a TPOT
                     # that varies a few % between requests gives about as much


def length_spread(latency):
    """The s.d. of ln(output tokens) a run's own spreads imply, or None when it gives no E2EL spread.

    A request's decode time E2EL - TTFT is (L - 1) TPOT. Its coefficient of variation is
    sqrt(var E2EL - var TTFT) / (mean E2EL - mean TTFT), taking the two as independent; as
    log-normals, ln(1 + cv^2) of the decode time is the lengths' s^2 plus the TPOTs' (their own
    std_tpot_ms over mean_tpot_ms: with speculation requests accept differently).

    >>> round(length_spread({"mean_e2el_ms": 1100.0, "std_e2el_ms": 700.0, "mean_ttft_ms": 100.0,
    ...                      "std_ttft_ms": 0.0}), 4) == round(math.sqrt(math.log(1 + 0.7 ** 2)), 4)
    True
    >>> length_spread({"mean_e2el_ms": 1100.0, "std_e2el_ms": 100.0, "mean_tpot_ms": 10.0, "std_tpot_ms": 1.0})
    0.0
    """
    e2el, ttft = latency.get("mean_e2el_ms"), latency.get("mean_ttft_ms", 0.0)
    sd_e2el, sd_ttft = latency.get("std_e2el_ms"), latency.get("std_ttft_ms", 0.0)
    if not e2el or sd_e2el is None or e2el <= ttft:
        return None
    decode = math.sqrt(max(0.0, sd_e2el ** 2 - sd_ttft ** 2)) / (e2el - ttft)
    tpot = latency.get("std_tpot_ms", 0.0) / latency["mean_tpot_ms"] if latency.get("mean_tpot_ms") else 0.0
    return min(2.0, math.sqrt(max(0.0, math.log1p(decode * decode) - math.log1p(tpot * tpot))))


def bench_workload(dep, batch=None, rate=math.inf, prompts=None, burstiness=1.0, output_spread=0.0, output_cap=None):
    """A run's Workload: closed loop at `batch` (the plan's --num-prompts, bench_prompts) or open loop at `rate`."""
    prompts = prompts or (bench_prompts(batch) if batch else BENCH_OPEN_PROMPTS)
    return Workload(num_prompts=prompts, max_concurrency=batch, request_rate=rate, burstiness=burstiness,
                    input_tokens=dep.input_tokens, output_tokens=dep.output_tokens, output_spread=output_spread,
                    output_cap=output_cap)


def predict_bench(dep, name, work, k, alpha, trust, seed=SEED, fit=FIT, spread=ALPHA_SPREAD, plan_batch=None):
    """One run's predicted file with its intervals: PredictedBench. plan_batch: the batch the server's command
    caps it at (a closed loop's concurrency, unless given)."""
    run = serve_run(dep, work, k, alpha, spread, seed, fit, plan_batch or work.max_concurrency)
    result = bench_result(run, work, dep)
    if k and not dep.engine.bench_records_acceptance:   # its benchmark reads no vllm:spec_decode_* counters
        result = {key: value for key, value in result.items() if not key.startswith("spec_decode_")}
    sd = trust.spec_tpot_sd if k else trust.tpot_sd
    # exp(+-z sd) around a time, and so around its inverse, a throughput
    intervals = {key: interval(value, sd) for key, value in result.items()
                 if BENCH_TIMES.match(key) or key in BENCH_RATES}
    return PredictedBench(name=name, k=k, alpha=alpha if k else 0.0, workload=work, cap=run.cap,
                          peak_running=run.peak_running, steps=run.steps, result=result, intervals=intervals, sd=sd)


def predicted_benches(dep, ks, alpha, trust, concurrencies=(), rates=(), prompts=None, burstiness=1.0, seed=SEED,
                      fit=FIT, spread=ALPHA_SPREAD, output_spread=0.0, plan_batch=None):
    """The files --predict-bench writes: per concurrency (closed loop) or, given rates, per request rate (open
    loop), a baseline and one run a K, named as the plan names its runs (bench_names; _r2.5 for a rate). An open
    loop's server is the plan's, capped at plan_batch where its command sets a cap."""
    out = []
    for batch, rate, tag in bench_tags(concurrencies, rates):
        work = bench_workload(dep, batch, rate, prompts, burstiness, output_spread)
        for name, k in zip(bench_names(ks, tag), (0,) + tuple(ks)):
            out.append(predict_bench(dep, name, work, k, alpha, trust, seed, fit, spread, batch or plan_batch))
    return out


def bench_tags(concurrencies, rates):
    """(batch, rate, tag) of each predicted run: the closed-loop concurrencies, or, given rates, open loop at each."""
    if rates:
        return [(None, rate, f"r{rate:g}") for rate in rates]
    return [(batch, math.inf, f"c{batch}") for batch in concurrencies]


def bench_names(ks, tag):
    """The files of one tag: the baseline, then one a K (the plan's names: baseline_c32.json, spec_k3_c32.json)."""
    return [f"baseline_{tag}.json"] + [f"spec_k{k}_{tag}.json" for k in ks]


# ---------------------------------------------------------------- rendering: tables and exercises
def render_blocks(title, header_lines, rows, block=24):
    """A titled table split into blocks of at most `block` rows, header repeated."""
    out = [title]
    for start in range(0, len(rows), block):
        out += [""] + header_lines + rows[start:start + block]
    return out


def column_header(columns, groups):
    """Two header lines: group labels centred over their column spans, then column names.

    columns: (name, width); groups: (label, first column, last column).
    """
    names = " ".join(f"{name:>{width}}" for name, width in columns)
    if not groups:
        return [names]
    starts = [sum(w + 1 for _, w in columns[:i]) for i in range(len(columns))]
    top = [" "] * len(names)
    for label, first, last in groups:
        lo, hi = starts[first], starts[last] + columns[last][1]
        at = lo + max(0, (hi - lo - len(label)) // 2)
        top[at:at + len(label)] = label
    return ["".join(top).rstrip(), names]


GRID_COLUMNS = [("B", 5), ("alpha", 5), ("rate", 4), ("tau", 4), ("eps", 4), ("lesson", 6), ("exact", 5),
                ("sim", 5), ("80% range", 9), ("plain", 5), ("spec", 5), ("2-pass", 6), ("change", 6),
                ("plain", 5), ("token", 5), ("chunk", 5)]
GRID_GROUPS = [("speedup (x)", 5, 8), ("P99 TPOT (ms)", 9, 12), ("P99 ITL (ms)", 13, 15)]


def render_breakeven(result):
    columns = [("K", 3), ("eps@B=1", 7), ("B", 5), ("eps", 6), ("rate r = eps/K", 14), ("per-token alpha", 15)]
    header = column_header(columns, [("break-even", 4, 5)])
    rows = []
    for b in result.breakeven:
        mark = "" if b.feasible else "  (infeasible: the KV cache does not fit)"
        rows.append(f"{b.k:3d} {eps_label(b.verify_overhead):>7s} {b.concurrency:5d} {b.eps_eff:6.3f}"
                    f" {fmt(b.lesson, '14.3f', 'never'):>14s} {fmt(b.exact, '15.3f', 'never'):>15s}{mark}")
    title = ("== Break-even: below it speculation is slower than plain decoding ==\n"
             "The lesson's eps/K is the right break-even for the acceptance rate r, since tau = 1 + K*r;\n"
             "for the per-token alpha it is too low: that one solves tau(alpha, K) = 1 + eps. eps here is the\n"
             "decode eps: the prefill share costs the same per token with speculation or without.")
    return render_blocks(title, header, rows) + [""]


def render_best_k(result):
    """Best K (0 = off) and its speedup for each concurrency and alpha, then the plan's schedule."""
    alphas = sorted({b.alpha for b in result.best_k})
    label = "measured" if result.measured is not None else None
    columns = [("B", 5)] + [(label or f"a={a:.2f} ", 11) for a in alphas]
    rows = []
    for batch in sorted({b.concurrency for b in result.best_k}):
        cells = [b for b in result.best_k if b.concurrency == batch]
        rows.append((f"{batch:5d} " + " ".join(
            f"{'K=' + str(b.k) + ' ' + format(b.speedup, '.2f') + 'x' + ('?' if b.too_close else ' '):>11s}"
            if b.feasible else f"{'no fit':>11s}" for b in sorted(cells, key=lambda b: b.alpha))).rstrip())
    plan = result.plan
    zero = where_it_pays(plan.schedule)
    title = f"== Best K (0..{K_MAX}, 0 = off) and its speedup over plain decoding, eps from the cost model =="
    close = [b for b in result.best_k if b.too_close]
    note = wrap((f"?: too close to call. The best speedup with speculation on has an {result.trust.level:.0%} "
                 f"range ({ratio_span(result.trust.speedup_sd)}) holding 1.0x, so only a benchmark can say "
                 "whether speculation pays there. " if close else "")
                + f"At alpha {plan.alpha:.2f} the model predicts {zero}"
                + (f"; {close_call_words(plan.close_calls)}" if plan.close_calls else "")
                + f". K by batch size, as vLLM's num_speculative_tokens_per_batch_size [start, end, K]: "
                f"{plan.schedule}", 100, "")
    return render_blocks(title, [line.rstrip() for line in column_header(columns, [])], rows) + note + [""]


def render_measured(result):
    """What the counters and benchmark files say, beside what the model predicts from them."""
    ms = result.measured
    k = ms.k
    lines = wrap(f"== Measured acceptance, from {ms.source} ==", 100, "   ")
    drafts = f" over {ms.drafts:,.0f} drafts" if ms.drafts is not None else ""
    lines += wrap(f"K {'up to' if ms.varying_k else 'in use'} {k} ({ms.k_mean:.2f} draft tokens per draft{drafts}); "
                  f"acceptance rate {ms.acceptance_rate:.3f}; acceptance length {ms.acceptance_length:.3f}; "
                  f"per-token alpha {ms.alpha:.3f}" + ("." if ms.varying_k else
                                                          f" (the one alpha whose chain of {k} gives that length)."),
                  100, "")
    for note in ms.notes:
        lines += wrap(f"- {note}", 100, "  ")
    if ms.per_position_rates:
        columns = [("draft position", 15)] + [(str(i), 6) for i in range(len(ms.per_position_rates))]
        lines += ["", column_header(columns, [])[0],
                  f"{'rate':>15s} " + " ".join(f"{r:6.3f}" for r in ms.per_position_rates)]
        lines.append(f"{'cond. alpha':>15s} " + " ".join(f"{a:6.3f}" for a in ms.per_position_alpha)
                     if ms.per_position_alpha else
                     "(past position 0 the rates mix rounds that drafted fewer tokens: no conditional alpha)")
    if ms.prediction is not None:
        pred = ms.prediction
        rows = [("TPOT speedup (mean TPOT ratio)", ms.tpot_speedup, pred.speedup, "x"),
                ("output throughput ratio", ms.throughput_speedup, pred.speedup, "x"),
                ("P99 TPOT change", ms.p99_tpot_change, pred.p99_tpot_change, "%"),
                ("P99 ITL change (per chunk: a round)", ms.p99_itl_change, pred.p99_itl_change, "%")]
        show = lambda v, unit: "-" if v is None else (f"{v:.2f}x" if unit == "x" else pct1(v))
        diff = lambda a, b, unit: "-" if a is None or b is None else (
            f"{a - b:+.2f}x" if unit == "x" else f"{(a - b) * 100:+.1f} pts")
        lines += [""] + wrap(f"Benchmarks at max_concurrency {pred.concurrency}, against the model at K={k}"
                             + (f" (the speedups from rounds of the mean {ms.k_mean:.2f} drafted tokens, the "
                                f"P99 rows from rounds of K={k})" if ms.varying_k else "") + ":", 100, "")
        lines += [f"{'':38s}{'measured':>10s}{'model':>10s}{'difference':>12s}"]
        lines += [f"{name:38s}{show(v, u):>10s}{show(p, u):>10s}{diff(v, p, u):>12s}" for name, v, p, u in rows]
        lines += wrap(f"(the model's P99 TPOT is over requests whose alpha spreads by s.d. {pred.requests_spread:.3g} "
                      f"around {pred.requests_alpha:.3f}, so that together they deliver the measured tau "
                      f"{ms.acceptance_length:.3f}; its per-token ITL P99 moves "
                      f"{pct1(pred.p99_token_itl_change)})", 100, " ")
    lines += ["", f"Speedup the measured acceptance predicts at K={k}, and the best K for the measured profile:"]
    best = {b.concurrency: b for b in result.best_k}
    columns = [("B", 5), ("eps", 6), (f"at K={k}", 8), ("best K", 7), ("speedup", 8)]
    lines += column_header(columns, [])
    for row in ms.by_concurrency:
        b = best[row.concurrency]
        lines.append(f"{row.concurrency:5d} {row.eps:6.2f} " + (
            f"{row.speedup:7.2f}x {b.k:7d} {b.speedup:7.2f}x" if row.feasible else "  does not fit in memory"))
    return lines + [""]


def calibration_headline(cal):
    return (f"Calibrated on {len(cal.runs)} of your runs: each run fitted on the others errs "
            f"{cal.held_out_median * 100:.1f}% median, {cal.held_out_worst * 100:.1f}% worst (what to expect of a "
            f"run not fitted); in sample {cal.median_error * 100:.1f}% median, {cal.worst_error * 100:.1f}% worst")


def calibration_findings(cal):
    """What the fit moved and what the runs could not tell apart, as sentences."""
    moved = ", ".join(f"{OWN_TERMS[name]} x{cal.after[name]:.3g}" for name in cal.fitted_fields)
    out = [f"Your runs moved {moved or 'nothing'} (factors on the published fit's terms); the rest stays "
           "the published fit's." if moved else "Your runs moved no term beyond its prior: the published fit stands."]
    for sep in cal.unseparated:
        pair = f"{OWN_TERMS[sep.terms[0]]} and {OWN_TERMS[sep.terms[1]]}"
        out.append(f"The runs could not separate {pair} (correlation {sep.correlation:+.2f}): "
                   + (f"{sep.run} would (their spread {sep.spread_now:.2f} -> {sep.spread_after:.2f} in log)."
                      if sep.run else "no benchmark run would, and every prediction at these lengths adds them up "
                      "alike."))
    return out


def render_calibration(cal):
    """Your runs against the model before and after fitting it on them."""
    lines = wrap(f"== {calibration_headline(cal)} ==", 100, "   ")
    for sentence in calibration_findings(cal):
        lines += wrap(sentence, 100, "  ")
    columns = [("run", 30), ("B", 5), ("K", 3), ("tau", 5), ("measured", 9), ("published", 9), ("fitted", 8),
               ("error", 7), ("held out", 9)]
    lines += [""] + column_header(columns, [])
    for r in cal.runs:
        lines.append(f"{Path(r.path).name[-30:]:>30s} {r.batch:5d} {fmt(r.k, '3d'):>3s} "
                     f"{fmt(r.tau, '5.2f'):>5s} {r.measured_tpot_ms:9.2f} {r.published_fit_tpot_ms:9.2f} "
                     f"{r.fitted_tpot_ms:8.2f} {pct1(r.error):>7s} {pct1(r.held_out_error):>9s}")
    lines += wrap("(mean TPOT in ms: measured, the published fit's, the fit on your runs'; error: the fit's, in "
                  "sample; held out: fitted on the other runs. A closed-loop run decodes fewer sequences than its "
                  "max_concurrency B: the fit uses the batch its time to first token and drain leave, from "
                  + ", ".join(f"{r.decoding_batch:.3g}" for r in cal.runs) + ")", 100, " ")
    for note in cal.notes:
        lines += wrap(f"- {note}", 100, "  ")
    return lines + [""]


def render_gate(g):
    lines = [f"== Gate at B = {g.concurrency}, K = {g.k}: {g.verdict.upper()} =="]
    for r in g.reasons:
        lines += wrap(f"- {'pass' if r.passed else 'FAIL'} {r.check}: {r.detail}", 100, "  ")
    return lines + [""]


def render_mix(mix, dep):
    columns = [("domain", 10), ("share", 6), ("alpha", 6), ("tau", 6), ("speedup", 8), ("time", 6)]
    lines = [f"== Traffic mix at B = {mix.concurrency}, K = {mix.k}: shares of generated tokens ==", ""]
    lines += column_header(columns, [])
    for d in mix.domains:
        lines.append(f"{d.name:>10s} {d.share:6.2f} {d.alpha:6.2f} {d.tau:6.2f} {d.speedup:7.2f}x"
                     f" {d.time_share * 100:5.1f}%")
    lines.append("")
    lines += wrap(mix_blend_sentence(mix) + f" {mix.weak} pulls it down: decoded without speculation "
                  f"the mix runs {mix.routed_speedup:.3f}x; "
                  + (f"with {trained_draft(dep)} as good as alpha {mix.trained_alpha:.2f}, "
                     f"{mix.trained_speedup:.3f}x; " if trained_draft(dep) else "") + "the best single K for the mix is "
                  f"{k_words(mix.best_k)} ({mix.best_k_speedup:.3f}x).", 100, "")
    lines += wrap(mix_tail_sentence(mix), 100, "")
    return lines + [""]


def mix_blend_sentence(mix):
    """The mix's naive blend (alpha averaged first) against the correct one (rounds per token summed)."""
    close = too_close(mix.blended_speedup_interval)
    return (f"Averaging alpha first ({mix.naive_alpha:.3f}) promises {mix.naive_speedup:.3f}x; weighting "
            f"each domain's rounds by its tokens gives {mix.blended_speedup:.3f}x "
            + (f"({span(mix.blended_speedup_interval)} at {INTERVAL_LEVEL:.0%}{': too close to call' if close else ''}"
               f"; the naive blend is {pct1(mix.naive_error)} off)." if mix.blended_speedup_interval else
               f"({pct1(mix.naive_error)} off)."))


def mix_tail_sentence(mix):
    """The mix's simulated requests: their speedup, P99 against mean TPOT, and who the slowest 1% are."""
    return (f"Over the mix's simulated requests ({mix_requests(mix)}, alpha spread within each domain): "
            f"{mix.speedup_mc:.3f}x; P99 TPOT {mix.tpot_plain_p99_ms:.2f} -> {mix.tpot_spec_p99_ms:.2f} ms "
            f"({pct(mix.tpot_p99_change)}) while mean TPOT moves "
            f"{pct(mix.tpot_spec_mean_ms / mix.tpot_plain_mean_ms - 1)}; the slowest 1% of requests accept "
            f"at alpha {mix.slow_alpha:.2f} on average and are {slow_domains(mix)}.")


def mix_requests(mix):
    """'chat 70%, code 30% of requests'."""
    return ", ".join(f"{name} {share * 100:.0f}%" for name, share in mix.request_shares.items()) + " of requests"


def slow_domains(mix):
    """'code 100%' style: which domains the slowest 1% of the mix's requests come from."""
    return ", ".join(f"{share * 100:.0f}% {name}" for name, share in mix.slow_domains.items() if share > 0)


def render_tail(result):
    """TPOT across requests at the plan's alpha and K, by concurrency: what `vllm bench serve` would report."""
    plan = result.plan
    columns = [("B", 5), ("mean", 6), ("P99", 6), ("mean", 6), ("P50", 6), ("P99", 6), ("alike", 6), ("mean", 6),
               ("P99", 6), ("token", 6), ("chunk", 6), ("alpha", 6)]
    groups = [("plain", 1, 2), ("speculation", 3, 6), ("two-pass", 7, 8), ("P99 ITL, spec", 9, 10),
              ("slow 1%", 11, 11)]
    rows = [f"{t.concurrency:5d} {t.tpot_plain_mean_ms:6.2f} {t.tpot_plain_p99_ms:6.2f}"
            f" {t.tpot_spec_mean_ms:6.2f} {t.tpot_spec_p50_ms:6.2f} {t.tpot_spec_p99_ms:6.2f}"
            f" {fmt(t.tpot_spec_p99_alike_ms, '6.2f'):>6s}"
            f" {t.tpot_spec_two_pass_mean_ms:6.2f} {t.tpot_spec_two_pass_p99_ms:6.2f}"
            f" {t.itl_spec_p99_ms:6.2f} {t.round_itl_spec_p99_ms:6.2f} {t.slow_alpha:6.2f}"
            for t in plan.tail]
    spread = result.alpha_spread
    title = (f"== TPOT across requests (ms) at mean alpha {plan.request_alpha:.2f} (s.d. {spread:g} across "
             f"requests), K = {plan.k} ==\n"
             "TPOT: a request's decode time over its tokens after the first; P50 and P99 across requests.\n"
             "alike: P99 with every request at the mean alpha. slow 1%: the mean per-token alpha of the\n"
             "requests at or above P99 TPOT with speculation: the requests the head drafts badly for.")
    return render_blocks(title, column_header(columns, groups), rows) + [""]


def facts_lesson(result):
    """The lesson's formula against the exact one, over the grid's cells."""
    facts = []
    cells = [c for c in result.cells if c.feasible]
    if cells:
        gap = max(cells, key=lambda c: c.speedup_lesson - c.speedup_exact)
        facts.append(
            f"The lesson's 1 + K*alpha counts {1 + gap.k * gap.alpha:.2f} tokens per round at alpha "
            f"{gap.alpha:.2f}, K = {gap.k}; a per-token alpha gives tau = {gap.acceptance_length:.2f}. "
            f"1 + K*alpha is exact only when alpha is vLLM's rate r (here {gap.acceptance_rate:.2f}), "
            f"so its speedup {gap.speedup_lesson:.2f}x is really {gap.speedup_exact:.2f}x.")
        wrong = [c for c in cells if c.speedup_lesson > 1.0 > c.speedup_exact]
        if wrong:
            w = min(wrong, key=lambda c: c.speedup_exact)
            facts.append(
                f"{len(wrong)} of {len(cells)} cells look profitable by the lesson's formula but are slower than "
                f"plain decoding: worst at alpha {w.alpha:.2f}, K = {w.k}, B = {w.concurrency} "
                f"({w.speedup_lesson:.2f}x claimed, {w.speedup_exact:.2f}x exact).")
    return facts


def facts_eps(result, grid):
    """How eps and the break-even move with batch, and the term that moves them."""
    facts = []
    moves = []
    for k in grid.ks:
        for eps_b1 in grid.overheads:
            rows = [b for b in result.breakeven if b.k == k and b.verify_overhead == eps_b1 and b.feasible]
            if rows:
                first, last = rows[0], rows[-1]
                moves.append(
                    f"K = {k}, eps {eps_label(eps_b1)}: eps {first.eps_eff:.2f} -> {last.eps_eff:.2f}, "
                    f"alpha {fmt(first.exact, '.2f', 'never')} -> {fmt(last.exact, '.2f', 'never')} "
                    f"(rate {fmt(first.lesson, '.3f', 'never')} -> {fmt(last.lesson, '.3f', 'never')})")
    if moves:
        g = result.facts.eps_growth
        direction = "rises" if g.eps_b1 > g.eps_b0 else "falls"
        facts.append(
            f"From B = {g.b0} to B = {g.b1} the decode eps {direction} (K = {g.k}: {g.eps_b0:.2f} -> "
            f"{g.eps_b1:.2f}). The term of a round that moves it most is {g.term}: a round spends "
            f"{g.extra_b0:.2f} ms more on it than a {g.plain_b0:.2f} ms plain step at B = {g.b0}, and "
            f"{g.extra_b1:.2f} ms more than a {g.plain_b1:.2f} ms step at B = {g.b1} "
            f"({g.change * 100:+.0f} points of eps). By K and overhead: " + "; ".join(moves) + ".")
    return facts


def facts_moe(result, dep):
    """Why a mixture-of-experts target's verify pass costs more than a dense one's."""
    facts = []
    if result.facts.moe is not None:
        e = result.facts.moe
        facts.append(
            f"{dep.model} routes each token to {e.experts_per_token} of {e.experts} experts per MoE layer. "
            f"At B = {e.batch} a plain step's {e.batch} token{'s' if e.batch != 1 else ''} touch"
            f"{'' if e.batch != 1 else 'es'} {e.plain_experts:.1f} experts a layer, "
            f"the verify pass's {e.batch * e.verify_tokens} tokens "
            f"{e.verify_experts:.1f}" + (
                f" (expert parallel, at the busiest GPU's pace: {e.plain_read:.1f} and {e.verify_read:.1f})"
                if dep.ep > 1 else "") +
            f": the round reads {e.verify_read / e.plain_read:.1f}x the expert "
            f"weights of a plain step, so eps is {e.eps:.2f} at K = {e.k}, where a dense model of the same active "
            f"size would have {e.eps_dense:.2f}" + (" and speculation cannot pay at any acceptance."
                                                      if e.eps >= e.k else "."))
    return facts


def facts_tail(result):
    """P99 TPOT over requests, the per-token and per-chunk tails, and what spread costs."""
    facts = []
    plan = result.plan
    tail = {t.concurrency: t for t in plan.tail}
    if plan.shown_batch in tail:
        t = tail[plan.shown_batch]
        slow_tau = acceptance_length(t.slow_alpha, plan.k)
        facts.append(
            f"P99 TPOT at B = {plan.shown_batch} (K = {plan.k}, requests' alpha {plan.request_alpha:.2f} + "
            f"{t.alpha_spread:.3g} z): {t.tpot_plain_p99_ms:.2f} -> {t.tpot_spec_p99_ms:.2f} ms "
            f"({pct(t.tpot_p99_change)}) while mean TPOT moves "
            f"{pct(t.tpot_spec_mean_ms / t.tpot_plain_mean_ms - 1)}"
            + (f". The slowest 1% of requests accept at alpha {t.slow_alpha:.2f} on average, where a round "
               f"delivers {slow_tau:.2f} tokens for {1 + t.eps_eff:.2f} plain steps. Were every request at alpha "
               f"{plan.request_alpha:.2f}, P99 TPOT would move "
               f"{pct(t.tpot_spec_p99_alike_ms / t.tpot_plain_p99_ms - 1)}"
               + (": the tail is the requests the head drafts badly for"
                  if t.tpot_spec_p99_ms > t.tpot_spec_p99_alike_ms else "")
               if t.tpot_spec_p99_alike_ms is not None else
               ". With one alpha for every request, the slowest differ only by round-to-round luck, which "
               "weighs most in short requests") + ".")
        facts.append(
            f"Per token the tail is different: P99 per-token ITL moves {pct(t.p99_change)}, because "
            f"{t.zero_accept_token_share * 100:.1f}% of tokens come from rounds that accepted nothing and carry "
            "a whole round alone" + ("; that is more than the 1% P99 looks at." if t.zero_accept_token_share > 0.01
                                     else "; that is under the 1% P99 looks at.")
            + f" Per chunk (vLLM's ITL, one round) every round costs {1 + t.eps_eff:.2f} plain steps. The lesson's "
              f"two-pass model adds a plain step to every round with a rejection anywhere in the batch: P99 TPOT "
              f"{pct(t.tpot_p99_change_two_pass)}. vLLM and SGLang run no second pass: rejection sampling "
              "resamples from the verify pass.")   # vllm/v1/sample/rejection_sampler.py; SGLang's EAGLE verify
        if t.alpha_spread > 0 and not plan.measured:
            lower = t.acceptance_length_requests < t.acceptance_length
            facts.append(
                f"Spread {'costs' if lower else 'changes'} throughput too: the simulated requests run "
                f"{t.speedup_mc:.3f}x (±{t.speedup_mc_se:.3f}) against {t.speedup_exact:.3f}x at the mean "
                f"alpha. A batch slot spends its rounds on each request in proportion to its tokens over its tau, so "
                f"the batch sees tau = 1/E[1/tau] = {t.acceptance_length_requests:.3f} over requests, not "
                f"tau(mean alpha) = {t.acceptance_length:.3f}: {t.speedup_requests:.3f}x"
                + ("." if lower else " (clipping alphas at 0 raises it here)."))
    return facts


def facts_mix(result):
    """The traffic mix: naive against correct blend, and its tail."""
    facts = []
    mix = result.mix
    if mix:
        facts.append(f"Traffic mix at B = {mix.concurrency}, K = {mix.k}. " + mix_blend_sentence(mix)
                     + f" {mix.weak} pulls it down. " + mix_tail_sentence(mix))
    return facts


def facts_gate(result):
    """The gate's verdict and its reasons."""
    facts = []
    if result.gate is not None:
        g = result.gate
        facts.append(f"Gate at B = {g.concurrency}, K = {g.k}: {g.verdict.upper()} ("
                     + "; ".join(f"{r.check} {'passed' if r.passed else 'FAILED'}" for r in g.reasons) + ").")
    return facts


def summary_facts(result, grid, dep):
    """Sentences the summary prints, each built from computed numbers."""
    return (facts_lesson(result) + facts_eps(result, grid) + facts_moe(result, dep) + facts_mtp(result, grid, dep)
            + facts_tail(result) + facts_mix(result) + facts_gate(result))


# A published sweep of one MTP module reused K deep: DeepSeek-R1 (one module, num_nextn_predict_layers 1) on
# TensorRT-LLM, 8 x B200, batch 1, "MTP Eagle" (the module reused), acceptance length at K = 1..5
# (NVIDIA/TensorRT-LLM docs/source/blogs/tech_blog/blog1_Pushing_Latency_Boundaries_Optimizing_DeepSeek-R1_
# Performance_on_NVIDIA_B200_GPUs.md).
MTP_DEPTH_SWEEP = (1.92, 2.58, 2.82, 2.99, 3.01)


def facts_mtp(result, grid, dep):
    """Why one alpha overstates an MTP module reused past its own depth, from the published sweep; nothing when
    the acceptance is measured by position (a scrape's counters, a typed sweep) or K stays within the depth."""
    depth = dep.shape.get("nextn", 0)
    measured = result.measured is not None and bool(result.measured.per_position_alpha)
    if dep.draft != "mtp" or max(grid.ks) <= depth or measured or grid.kind == "profile":
        return []
    profile = profile_from_lengths(MTP_DEPTH_SWEEP)
    first = profile[0]
    ks = range(1, len(MTP_DEPTH_SWEEP) + 1)
    return [f"{dep.model} ships {depth} MTP module{'s' if depth != 1 else ''}; K = {max(grid.ks)} reuses it "
            f"{max(grid.ks)} deep, and a reused module accepts less at each later position. DeepSeek-R1's sweep on "
            "TensorRT-LLM (tech blog 1) measured acceptance lengths "
            + ", ".join(f"{t:g}" for t in MTP_DEPTH_SWEEP) + f" at K = 1..{len(ks)}: conditional alphas "
            + ", ".join(f"{a:.2f}" for a in profile) + f" by position, where one alpha of {first:.2f} would give "
            + ", ".join(f"{acceptance_length(first, k):.2f}" for k in ks) + ". The grid's one alpha per cell "
            "overstates the deeper positions: measure tau at each K and give them as `--acceptance-length "
            "T1,...,Tn --ks 1,...,n`."]


def render_summary(result, grid, dep):
    lines = ["== Summary =="]
    for i, fact in enumerate(summary_facts(result, grid, dep)):
        lines += ([""] if i else []) + wrap("- " + fact, 100, "  ")
    return lines


def expert_sentence(dep):
    """How a MoE target's experts are read: the routing assumed and, expert parallel, the busiest GPU's load
    (touched_experts); "" for a dense target."""
    t = dep.target
    if not t.experts:
        return ""
    routing = (f"routing skewed as its family's measured hottest expert says (power-law exponent "
               f"{t.routing_exponent:.2f}; HOT_EXPERT_LOAD)" if t.routing_exponent else
               "routing taken as uniform (no measurement of its router's skew here: the upper end of its reads)")
    text = f"Experts: {t.experts_per_token} of {t.experts} a token, {routing}; "
    if dep.ep == 1:
        return text + (f"each split across the {dep.tp} GPUs (tensor parallel)." if dep.tp > 1 else "on one GPU.")
    share = touched_experts(t, dep, 1) / expected_experts(t.experts, t.experts_per_token, 1, t.routing_exponent)
    return text + (f"whole experts on each of {dep.ep} GPUs (expert parallel): at B=1 the busiest GPU reads "
                   f"{share:.2f}x its even share, and a MoE layer waits for it." + (
                       f" Attention data parallel: each GPU runs attention for its own 1/{dep.tp} of the sequences "
                       f"and holds a whole copy of the {non_expert_bytes(t) / GIB:.1f} GiB that are not routed "
                       "experts, read every step." if dep.dp_attention else ""))


def copies_text(dep):
    """" (x8: ...)" when the TP GPUs each hold a copy of the target's KV heads (kv_copies), else ""."""
    copies = kv_copies(dep.target, dep)
    if copies == 1:
        return ""
    what = "MLA's one latent" if dep.target.kv_groups == 1 else f"its {dep.target.kv_groups} KV heads"
    return f" (x{copies:g}: {what} copied across the {dep.tp} GPUs)"


def deployment_lines(dep, result):
    draft_gib = dep.drafter.held_bytes / GIB
    return [
        f"Deployment: {dep.model}, {dep.weights_dtype} weights ({dep.target.held_bytes / GIB:.1f} GiB), "
        f"{dep.tp} x {dep.gpu}, {dep.kv_dtype} KV cache, {dep.engine.name},",
        f"mean context {dep.context} tokens, draft {dep.draft} ({draft_gib:.2f} GiB).",
    ] + wrap(f"KV cache {dep.target.kv_bytes_per_token:,} B/token{copies_text(dep)}: {result.facts.max_concurrency} "
             f"sequences fit in {result.facts.memory_budget_bytes / GIB:.0f} GiB. Traffic {dep.input_tokens} tokens "
             f"in, {dep.output_tokens} out.", 100, "  ") + wrap(expert_sentence(dep), 100, "  ") + wrap(f"Plain step at B=1, {sum(result.facts.plain_b1.values()):.2f} ms = "
             + " + ".join(f"{name} {ms:.2f}" for name, ms in result.facts.plain_b1.items() if ms > 0.0005)
             + " (ms; a closed-loop benchmark's mean TPOT).", 100, "  ") + (
        wrap(f"No calibration point on {GPU_FAMILY.get(dep.gpu, 'custom')} GPUs: their bandwidth share is "
             "Hopper's, an assumption; calibrate on your own runs.", 100, "  ") if not fitted_family(dep) else []) + [
        "alpha: per-token acceptance; rate: accepted/drafted; tau: tokens per round (bonus included).",
        "eps: a round's cost over a plain step, minus 1, with the prefill a round of tau tokens carries.",
        "lesson: (1+K*alpha)/(1+eps); exact: tau/(1+eps) at alpha; sim: simulated requests, their alphas",
        f"alpha + {result.alpha_spread:g} z clipped to [0, 1] (z standard normal); 80% range: of sim (below).",
        "P99 TPOT: across requests (decode time over tokens, as `vllm bench serve`); change: spec vs plain.",
        "2-pass: the lesson's reroll model, a plain step added to every round with a rejection in the batch.",
        "P99 ITL: plain, a plain step; token, a round's time split over its tokens; chunk, a round (vLLM's).",
    ] + wrap(trust_sentence(result.trust) + sim_error_sentence(result), 100, "  ")


OUTSIDE_WORDS = dict(target="a target of its kind", engine="its engine", draft="its draft method",
                     family="its GPU family", era="a round timed in its engine release",
                     layout="its expert-parallel layout")   # Trust.outside, in words


def ratio_span(sd):
    """The interval as factors on a prediction: "x0.81-1.23"."""
    spread = math.exp(Z_INTERVAL * sd)
    return f"x{1 / spread:.2f}-{spread:.2f}"


def trust_sentence(trust):
    """How far to believe this run's numbers, in one sentence."""
    outside = ""
    if trust.outside:
        outside = (" No published measurement has " + " or ".join(OUTSIDE_WORDS[name] for name in trust.outside)
                   + ": the range is wider for it.")
    return (f"Trust: {trust.level:.0%} of measurements should fall within a predicted speedup {ratio_span(trust.speedup_sd)}, "
            f"a mean TPOT {ratio_span(trust.tpot_sd)} (speculation on {ratio_span(trust.spec_tpot_sd)}); "
            f"from {trust.basis}.{outside}"
            + ("" if trust.calibrated else " --calibrate on your own runs narrows it."))


def sim_error_sentence(result):
    """The simulation's own error, beside the model's: the largest standard error of sim."""
    errors = [c.speedup_mc_se for c in result.cells if c.feasible]
    return f" sim's simulation error is at most {max(errors):.3f} (s.e.)." if errors else ""


def grid_row(c, dep, max_fit):
    """One line of the grid table; infeasible cells say so instead of showing numbers."""
    if not c.feasible:
        return (f"{c.concurrency:5d} {c.alpha:5.2f}  infeasible: the KV cache of {c.concurrency} x "
                f"{dep.context} tokens does not fit (at most {max_fit} sequences)")
    return (f"{c.concurrency:5d} {c.alpha:5.2f} {c.acceptance_rate:4.2f} {c.acceptance_length:4.2f}"
            f" {c.eps_eff:4.2f} {c.speedup_lesson:6.2f} {c.speedup_exact:5.2f} {c.speedup_mc:5.2f}"
            f" {span(c.speedup_interval):>9s} {c.tpot_plain_p99_ms:5.1f} {c.tpot_spec_p99_ms:5.1f}"
            f" {c.tpot_spec_two_pass_p99_ms:6.1f} {pct(c.tpot_p99_change):>6s} {c.itl_plain_p99_ms:5.1f}"
            f" {c.itl_spec_p99_ms:5.1f} {c.round_itl_spec_p99_ms:5.1f}")


def render_tables(result, dep, grid):
    """The printed report: grid cells, break-even, the tail, and a summary."""
    lines = deployment_lines(dep, result) + [""]
    if result.calibration is not None:
        lines += render_calibration(result.calibration)
    if result.measured is not None:
        lines += render_measured(result) + render_gate(result.gate)
    header = column_header(GRID_COLUMNS, GRID_GROUPS)
    for k in grid.ks:
        for eps_b1 in grid.overheads:
            rows = [grid_row(c, dep, result.facts.max_concurrency) for c in result.cells
                    if c.k == k and c.verify_overhead == eps_b1]
            eps1 = result.eps_b1[k, eps_b1]
            source = ("from the cost model" if eps_b1 == "auto" else "given" if eps1 <= eps_b1 + 5e-5 else
                      f"given {eps_b1:.2f}, raised: the verify pass over {verify_tokens(dep, k)} tokens alone costs "
                      "that much over a plain step")
            title = f"== K = {k}, decode eps = {eps1:.2f} at B=1 ({source}), growing with B as the cost model says =="
            title = "\n".join(wrap(title, 100, "   "))
            lines += render_blocks(title, header, rows) + [""]
    lines += render_breakeven(result)
    lines += render_best_k(result)
    if result.mix:
        lines += render_mix(result.mix, dep)
    lines += render_tail(result)
    lines += render_summary(result, grid, dep)
    return "\n".join(lines) + "\n"


def render_exercise_1(t):
    """The alpha for 2x and 3x, by eps."""
    lines = [f"== Exercise 1: the per-token alpha K = {t.k} needs for 2x and 3x ==",
             "alpha solves tau(alpha, K) = S * (1 + eps); the lesson's (S(1+eps) - 1)/K is the same target",
             "read as vLLM's acceptance rate. eps is the decode eps: these are decode speedups, without the",
             "prefill share that dilutes a closed-loop benchmark's (the grid's speedups include it).",
             ""]
    lines += column_header([("eps", 6), ("from", 12), ("2x alpha", 9), ("as rate", 8), ("3x alpha", 9),
                            ("as rate", 8)], [])
    for r in t.rows:
        lines.append(f"{r.eps:6.3f} {r.source:>12s} {fmt(r.alpha_2x, '9.3f', 'never'):>9s} "
                     f"{fmt(r.lesson_2x if r.alpha_2x is not None else None, '8.3f', '-'):>8s} "
                     f"{fmt(r.alpha_3x, '9.3f', 'never'):>9s} "
                     f"{fmt(r.lesson_3x if r.alpha_3x is not None else None, '8.3f', '-'):>8s}")
    given = [r for r in t.rows if r.source == "given"]
    first, last = given[0], given[-1]
    lines += wrap(f"From eps {first.eps:.2f} to {last.eps:.2f} the alpha for 2x moves "
                  f"{first.alpha_2x:.3f} -> {fmt(last.alpha_2x, '.3f', 'never')}, for 3x "
                  f"{fmt(first.alpha_3x, '.3f', 'never')} -> {fmt(last.alpha_3x, '.3f', 'never')}: near the "
                  "top of the curve every bit of overhead costs a lot of alpha.", 100, "")
    return lines


def render_exercise_2(mixes):
    """The traffic mix (the lesson's is 70/30 chat/code) at B = 1 and at the target."""
    domains = mixes[0].domains
    lines = ["", f"== Exercise 2: a {'/'.join(format(d.share * 100, '.0f') for d in domains)} "
                 f"{'/'.join(d.name for d in domains)} mix =="]
    for mix in mixes:
        verdict = "pays" if mix.blended_speedup > 1 else "does not pay"
        lines += wrap(f"B = {mix.concurrency}, K = {mix.k}: naive blended alpha {mix.naive_alpha:.3f} promises "
                      f"{mix.naive_speedup:.3f}x; the token-weighted blend is {mix.blended_speedup:.3f}x, so "
                      f"speculation {verdict} ({' / '.join(d.name + ' ' + format(d.speedup, '.2f') + 'x' for d in mix.domains)} "
                      f"alone; best K for the mix {k_words(mix.best_k)}: {mix.best_k_speedup:.3f}x).", 100, "  ")
    return lines


def render_exercise_3(m, dep):
    """vLLM's speculative methods on this target: cost, memory, config."""
    lines = ["", f"== Exercise 3: vLLM's speculative methods on {dep.model}, K = {m.k} (eps from the cost model) ==",
              ""]
    lines += column_header([("draft", 13), ("method", 11), ("params", 8), ("weights", 8), ("KV/token", 9),
                            ("step ms", 8), ("eps B=1", 8), (f"eps B={m.concurrency}", 9), ("max B", 6)], [])
    for r in m.rows:
        lines.append(f"{r.draft:>13s} {r.method:>11s} {r.params / 1e9:7.3f}B {r.weight_bytes / GIB:5.2f}GiB"
                     f" {r.kv_bytes_per_token:9,d} {r.draft_step_ms:8.2f} {r.eps_b1:8.2f} "
                     f"{r.eps_target:9.2f} {r.max_concurrency:6d}")
    lines.append("Configs (--speculative-config), one per draft:")
    for r in m.rows:
        lines += wrap(r.config, 100, "    ")
    lines.append("Which features each combines with depends on the vLLM version: check its compatibility matrix.")
    return lines


def render_exercise_4(d):
    """The lesson's symptom (mean ITL down, P99 up): per token, as TPOT over requests, and the remedies."""
    mean, p99 = d.symptom
    lines = ["", f"== Exercise 4: mean ITL {pct(mean)} but P99 ITL {pct(p99)} =="]
    lines += wrap(f"Read per token, at B = 1: K = {d.k}, eps = {d.eps:.3f} and one per-token alpha "
                  f"{d.alpha:.3f} for every request (tau {d.tau:.2f}) give mean per-token ITL "
                  f"{pct1(d.mean_change)} and P99 {pct1(d.p99_change)}. Every round costs 1 + eps plain steps and "
                  f"{d.zero_accept_token_share * 100:.0f}% of tokens come from rounds that accepted nothing, "
                  f"so P99 follows eps while the mean follows tau/(1+eps). The ITL `vllm bench serve` reports is per "
                  f"chunk, one round: its mean rises by eps ({pct1(d.round_mean_change)}) too, so the {pct(mean)} must "
                  "be a per-token figure (TPOT).", 100, "  ")
    t = d.tpot
    if t:
        lines += wrap(f"Read as TPOT across requests, at B = 1 where the model's eps is "
                      f"{t.eps:.2f} (K = {t.k}): mean TPOT {pct1(t.mean_change)} and P99 TPOT "
                      f"{pct1(t.p99_change)} need requests whose alpha spreads by s.d. {t.spread:.3f} around "
                      f"{t.alpha:.3f} (tau over requests {t.tau:.2f}). The requests at P99 accept at alpha "
                      f"{t.slow_alpha:.2f} on average: {t.slow_tau:.2f} tokens a round for {1 + t.eps:.2f} "
                      f"plain steps, {(1 + t.eps) / t.slow_tau:.2f}x a plain step per token, while the rest carry "
                      "the mean.", 100, "  ")
    else:
        lines += wrap("Read as TPOT across requests at B = 1, no spread of alpha gives both figures at the model's "
                      "eps.", 100, "  ")
    lines.append(f"Remedies: the same requests at B = {d.concurrency} (eps from the cost model):")
    for r in d.remedies:
        parts = [f"K = {r.k}: eps {r.eps:.2f}"]
        if r.token is not None:
            parts.append(f"one alpha: {r.token.speedup:.2f}x, per-token P99 {pct1(r.token.p99_change)}")
        if r.tpot is not None:
            parts.append(f"spread: {r.tpot.speedup:.2f}x, P99 TPOT {pct1(r.tpot.tpot_p99_change)}")
        lines.append("  " + "; ".join(parts))
    lines += wrap(f"  K by batch size (num_speculative_tokens_per_batch_size): {d.schedule}; "
                  + where_it_pays(d.schedule) + "."
                  + " A shorter K shortens every round; the slow requests gain only by skipping speculation "
                    "(routing) or by a head that drafts them better.", 100, "  ")
    return lines


def render_exercise_5(mem, dep):
    """Draft memory: an EAGLE-3 head against a draft model."""
    lines = ["", f"== Exercise 5: draft memory on {dep.model} at {mem.concurrency} x {mem.context} tokens =="]
    for r in mem.rows:
        lines.append(f"  {r.draft:>13s}: {r.params / 1e9:.3f} B parameters = {r.weight_bytes / GIB:.2f} GiB "
                     f"bf16; own KV {r.kv_bytes_per_token:,} B/token")
        lines.append(f"  {'':>13s}  = {r.kv_bytes_at_target / GIB:.2f} GiB at this load; {r.max_concurrency} "
                     "sequences fit")
    lines.append(f"  without a draft model's weights or KV: {mem.max_concurrency_without_draft} sequences fit.")
    return lines


def render_exercises(ex, dep):
    """The five exercises with the model's answers."""
    return (render_exercise_1(ex.speedup_targets) + render_exercise_2(ex.traffic_mix)
            + render_exercise_3(ex.methods, dep) + render_exercise_4(ex.tail_diagnosis)
            + render_exercise_5(ex.draft_memory, dep) + [""])


# ---------------------------------------------------------------- rendering: engine commands
# What the plan tells each engine to run. Every flag and config field below was checked
# against the engine's own parser or config class, cited beside it; the README names the
# versions. A fact here that differs from REFERENCE.md was re-checked in the source.

SHAREGPT_FILE = "ShareGPT_V3_unfiltered_cleaned_split.json"


SHAREGPT_URL = ("https://huggingface.co/datasets/anon8231489123/ShareGPT_Vicuna_unfiltered/resolve/main/"
                + SHAREGPT_FILE)   # the file vLLM's benchmark scripts download


TRTLLM_GATE_MINUTES = 10   # how long the built-in kill switch of TensorRT-LLM averages acceptance over (a choice)


def shell_lines(words, width=100):
    """One shell command over lines of at most `width` characters, continued with ' \\'."""
    lines, line = [], ""
    for word in words:
        if line and len(line) + len(word) + 3 > width:
            lines.append(line + " \\")
            line = "  " + word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line]


def catalog_name(dep):
    """The catalog's name of the target, also for a --model-config whose _name_or_path is a catalog model's."""
    return dep.model if dep.model in MODELS else next(
        (name for name, row in MODELS.items() if same_model(row["hf"], dep.shape.get("hf") or "")), None)


def draft_head(dep):
    """(Hugging Face id, trained context) of the draft the plan serves; None for what is not known."""
    trained = dep.shape.get("head_context")      # from --draft-config, when given
    if dep.draft_hf:
        return dep.draft_hf, trained
    if dep.draft == "eagle3":
        head, context = EAGLE3_HEADS.get((dep.engine.key, catalog_name(dep)), (None, None))
        return head, trained or context
    if dep.draft in MODELS:
        return MODELS[dep.draft]["hf"], None
    if dep.draft == "model":
        return dep.draft_shape.get("hf"), None           # the config's _name_or_path, when it has one
    return None, None


def can_serve(dep):
    """Whether the plan can print the speculative server's command: the draft needs no model to name (MTP, n-gram)
    or its model is known (the catalog's head, --draft-model, a draft model's _name_or_path)."""
    return dep.draft in ("mtp", "ngram") or draft_head(dep)[0] is not None


def head_or_placeholder(dep):
    """The head's id, or a placeholder that is safe in a shell line (no < or >) and plainly not a path."""
    return draft_head(dep)[0] or f"YOUR-{dep.draft.upper()}-HEAD-FOR-{dep.model.upper()}"


def served_model(dep):
    """The checkpoint the server loads: the model's own when it ships the weights' dtype, or when the engine
    quantizes it to fp8 at start-up (quantize_at_start); otherwise a published fp8 checkpoint (FP8_CHECKPOINTS),
    else a placeholder: no engine here quantizes to fp4 at start-up."""
    if dep.weights_dtype == dep.shape.get("checkpoint", "bf16") or quantize_at_start(dep):
        # A --model-config without _name_or_path names no checkpoint (hf None): say so rather than guess.
        return dep.shape.get("hf") or f"YOUR-CHECKPOINT-OF-{dep.model.upper()}"
    if dep.weights_dtype == "fp8" and dep.model in FP8_CHECKPOINTS:
        return FP8_CHECKPOINTS[dep.model]
    return f"YOUR-{dep.weights_dtype.upper()}-CHECKPOINT-OF-{dep.model.upper()}"


def quantize_at_start(dep):
    """Whether the server quantizes a bf16 checkpoint to fp8 at start-up (--quantization fp8): vLLM and SGLang do,
    TensorRT-LLM quantizes nothing at start-up (docs/source/features/quantization.md)."""
    return (dep.weights_dtype == "fp8" and dep.shape.get("checkpoint", "bf16") == "bf16"
            and dep.engine.quantizes_at_start)


def speculative_config(dep, k, schedule=None):
    """vLLM's --speculative-config JSON (SpeculativeConfig in vllm/config/speculative.py).

    draft_sample_method: "greedy" (the default) proposes the draft's argmax; at temperature
    > 0, "probabilistic" samples the draft as rejection sampling assumes, so the acceptance
    measured is what sampled traffic gets. Both keep the target's distribution.
    num_speculative_tokens_per_batch_size: inclusive [start, end, K] rows, K = 0 allowed,
    num_speculative_tokens their maximum (PR #32374).
    """
    if dep.draft == "ngram":
        # prompt_lookup_max 4 as in vLLM's docs (features/speculative_decoding/n_gram); tune it to your prompts.
        config = {"method": "ngram", "num_speculative_tokens": k, "prompt_lookup_max": 4}
    elif dep.draft == "mtp":
        # method "mtp": the target's own MTP weights, no model to name (vllm/config/speculative.py).
        config = {"method": "mtp", "num_speculative_tokens": k}
    else:
        method = dep.draft if dep.draft in EAGLE_DRAFTS else "draft_model"
        config = {"method": method, "model": head_or_placeholder(dep), "num_speculative_tokens": k}
        if TEMPERATURE > 0:
            config["draft_sample_method"] = "probabilistic"
    if schedule:
        config["num_speculative_tokens"] = max(row[2] for row in schedule)
        config["num_speculative_tokens_per_batch_size"] = schedule
    return json.dumps(config)


def vllm_command(dep, config=None, env=()):
    """`vllm serve` flags: vllm/engine/arg_utils.py; env: variables set for the server."""
    # Attention data parallel is vLLM's data parallelism with expert parallel MoE layers: TP 1 in each of tp DP
    # ranks, EP = TP x DP (vllm/config/parallel.py; docs/serving/data_parallel_deployment.md).
    tp, dp = (1, dep.tp) if dep.dp_attention else (dep.tp, 1)
    words = list(env) + ["vllm serve", shlex.quote(served_model(dep)), f"--tensor-parallel-size {tp}"]
    words += [f"--data-parallel-size {dp}"] if dp > 1 else []
    # Expert parallel: a switch, its size TP x DP (vllm/engine/arg_utils.py, vllm/config/parallel.py).
    words += ["--enable-expert-parallel"] if dep.ep > 1 else []
    words += ["--quantization fp8"] if quantize_at_start(dep) else []
    words += ["--kv-cache-dtype fp8"] if dep.kv_dtype == "fp8" else []
    words.append(f"{dep.engine.memory_flag} {dep.memory_fraction:g}")
    words += [f"--speculative-config {shlex.quote(config)}"] if config else []
    return shell_lines(words)


def vllm_serve(dep, batch, k=None, schedule=None):
    """vLLM's server, speculation off or on (its --speculative-config); batch unused: vLLM sizes its own batches."""
    return vllm_command(dep, speculative_config(dep, k, schedule) if k else None)


SGLANG_GAUGE_STEPS = 40   # decode steps SGLang's acceptance gauges average over (python/sglang/srt/metrics/collector.py)


# SGLang's --speculative-algorithm by draft_kind. python/sglang/srt/arg_groups/speculative_hook.py: NEXTN is an
# alias of EAGLE, and an EAGLE run of a DeepSeek-family model (DeepseekV3ForCausalLM and kin) without a
# --speculative-draft-model-path drafts with the model's own NextN (MTP) weights; NGRAM drafts from the context
# (num_draft_tokens counts the root: cpp_ngram/param.h); STANDALONE runs a draft model.
SGLANG_ALGORITHM = {"eagle3": "EAGLE3", "eagle": "EAGLE", "mtp": "EAGLE", "ngram": "NGRAM", "model": "STANDALONE"}


# --speculative-adaptive's built-in step candidates by batch size (DEFAULT_ADAPTIVE_CONFIG in
# python/sglang/srt/speculative/adaptive_spec_params.py, PR #24055); 0 turns drafting off.
SGLANG_ADAPTIVE_DEFAULT = {1: (1, 3, 5, 7), 8: (0, 1, 3), 32: (0, 1), 64: (0,)}


def sglang_serve(dep, batch, k=None, schedule=None):
    """`python -m sglang.launch_server` flags: python/sglang/srt/server_args.py.

    Steps, topk and draft tokens are given together (omitting steps makes SGLang choose
    all three; for a Llama target it picks a tree of 5 steps, topk 4, 8 tokens). A chain
    is topk 1 with steps + 1 draft tokens. Speculation resets --max-running-requests to
    48 unless it is set, so both runs set it to the batch the plan runs at. It takes no K-by-batch table
    (schedule): sglang_k_by_batch says what it offers instead.
    """
    # A draft whose max_position_embeddings is below the target's context length stops the
    # server unless this is set; the SpecForge 70B head's own card launches with it.
    env = ["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"] if k and dep.draft in EAGLE_DRAFTS else []
    words = env + ["python -m sglang.launch_server", f"--model-path {shlex.quote(served_model(dep))}",
                   f"--tp-size {dep.tp}"]
    # Expert parallel inside the TP group: --ep-size (alias of --expert-parallel-size; python/sglang/srt/server_args.py).
    words += [f"--ep-size {dep.ep}"] if dep.ep > 1 else []
    # Attention data parallel across the TP GPUs: attention TP = tp / dp = 1 (docs/basic_usage/deepseek_v3.md).
    words += ["--enable-dp-attention", f"--dp-size {dep.tp}"] if dep.dp_attention else []
    words += ["--quantization fp8"] if quantize_at_start(dep) else []
    words += ["--kv-cache-dtype fp8_e4m3"] if dep.kv_dtype == "fp8" else []
    words += [f"{dep.engine.memory_flag} {dep.memory_fraction:g}", f"--max-running-requests {batch}",
              "--enable-metrics"]
    if k:
        kind = draft_kind(dep.draft)
        words.append(f"--speculative-algorithm {SGLANG_ALGORITHM[kind]}")
        if runs_a_draft_model(dep) and kind != "mtp":
            words.append(f"--speculative-draft-model-path {shlex.quote(head_or_placeholder(dep))}")
            # The draft follows the target's --quantization unless told otherwise (fp8 here); the cost model
            # runs drafts in bf16 (docs/advanced_features/speculative_decoding.md: "unquant" forces no quantization).
            words += ["--speculative-draft-model-quantization unquant"] if quantize_at_start(dep) else []
        if kind == "ngram":   # NGRAM's topk is its BFS breadth (_handle_ngram): one branch, as the cost model's chain
            words.append("--speculative-ngram-max-bfs-breadth 1")
        else:
            words += [f"--speculative-num-steps {k}", f"--speculative-eagle-topk {dep.topk}"]
        words.append(f"--speculative-num-draft-tokens {verify_tokens(dep, k)}")
    return shell_lines(words)


def trtllm_yaml(dep, name, k=None):
    """The YAML trtllm-serve reads with --extra_llm_api_options (tensorrt_llm/llmapi/llm_args.py).

    enable_iter_perf_stats makes GET /metrics return per-iteration JSON with specDecodingStats
    (numDraftTokens, numAcceptedTokens, numRequestsWithDraftTokens, acceptanceLength: the fields
    TensorRT-LLM's integration test check_spec_decoding_metrics checks, tests/integration/defs).
    """
    # return_perf_metrics mounts /prometheus/metrics (tensorrt_llm/serve/openai_server.py), whose counters
    # trtllm_spec_decode_num_draft_tokens_total and ..._num_accepted_tokens_total come from the iteration stats
    # (tensorrt_llm/metrics/collector.py); both runs carry it, so the baseline pays the same bookkeeping.
    lines = [f"cat > {name} <<'YAML'", "enable_iter_perf_stats: true", "return_perf_metrics: true"]
    lines += ["enable_attention_dp: true"] if dep.dp_attention else []   # llm_args.py: attention data parallel
    if dep.input_tokens > prefill_chunk(dep):   # off by default, and a prompt past max_num_tokens is refused
        lines.append("enable_chunked_prefill: true")   # llm_args.py; the cost model prefills it in chunks
    if dep.kv_dtype == "fp8":
        lines += ["kv_cache_config:", "  dtype: fp8"]
    if k:
        kind = draft_kind(dep.draft)
        lines += ["speculative_config:", f"  decoding_type: {TRTLLM_DECODING[kind]}", f"  max_draft_len: {k}"]
        if kind == "eagle3":
            lines.append(f"  speculative_model: {json.dumps(head_or_placeholder(dep))}")   # quoted: ~, null are names
        if dep.topk > 1:   # Eagle3DecodingConfig's dynamic tree: verify width max_total_draft_tokens + 1
            lines += ["  use_dynamic_tree: true", f"  dynamic_tree_max_topK: {dep.topk}",
                      f"  max_total_draft_tokens: {verify_tokens(dep, k) - 1}"]
    return lines + ["YAML"]


# decoding_type of TensorRT-LLM's speculative_config by draft_kind (llm_args.py: Eagle3DecodingConfig,
# MTPDecodingConfig, NGramDecodingConfig; MTP's depth is max_draft_len now, num_nextn_predict_layers before).
TRTLLM_DECODING = {"eagle3": "Eagle3", "mtp": "MTP", "ngram": "NGram"}


def trtllm_command(dep, batch, config_name):
    """`trtllm-serve` flags: tensorrt_llm/commands/serve.py (underscores, PyTorch backend by default)."""
    # --ep_size sets moe_expert_parallel_size (tensorrt_llm/commands/serve.py); 1: experts split by TP.
    return shell_lines(["trtllm-serve", shlex.quote(served_model(dep)), "--backend pytorch", f"--tp_size {dep.tp}",
                        *([f"--ep_size {dep.ep}"] if dep.ep > 1 else []), f"--max_batch_size {batch}",
                        f"{dep.engine.memory_flag} {dep.memory_fraction:g}",
                        f"--extra_llm_api_options {config_name}"])


def trtllm_serve(dep, batch, k=None, schedule=None):
    """TensorRT-LLM's YAML and server, speculation off or on; trtllm_k_by_batch gives the table's switches."""
    name = "spec.yaml" if k else "baseline.yaml"
    return trtllm_yaml(dep, name, k) + trtllm_command(dep, batch, name)


def bench_prompts(batch):
    """Prompts per benchmark run: ten per concurrent slot, so ramp-up and drain stay a small share."""
    return max(200, 10 * batch)


def bench_lines(dep, batch, filename, realistic=False):
    """A closed-loop benchmark at `batch` concurrency through the chat endpoint, saved as JSON.

    vLLM and SGLang: `vllm bench serve` (vllm/benchmarks/serve.py, datasets/datasets.py). TensorRT-LLM: its own
    copy, tensorrt_llm/serve/scripts/benchmark_serving.py, with the same flags and result keys. EAGLE heads are
    trained on chat-formatted prompts, hence openai-chat. A calibration run has the deployment's lengths exactly:
    random prompts of --random-input-len tokens and --random-output-len outputs (--random-range-ratio is 0 by
    default, and --ignore-eos keeps an answer from ending early); TensorRT-LLM's random dataset cuts real
    ShareGPT text to those lengths given --dataset-path (benchmark_dataset.py, RandomDataset). A realistic run
    has ShareGPT's prompts and answers capped at the deployment's output length (--sharegpt-output-len), ended
    by EOS as real ones are: its acceptance is real text's.
    """
    engine = dep.engine
    if realistic:
        data = ["--dataset-name sharegpt", f"--dataset-path {SHAREGPT_FILE}", f"--sharegpt-output-len {dep.output_tokens}"]
    else:
        data = (["--dataset-name random"] + ([f"--dataset-path {SHAREGPT_FILE}"] if engine.bench_random_text else [])
                + [f"--random-input-len {dep.input_tokens}", f"--random-output-len {dep.output_tokens}", "--ignore-eos"])
    return shell_lines([engine.bench_tool, "--backend openai-chat", "--endpoint /v1/chat/completions",
                        f"--port {engine.port}", f"--model {shlex.quote(served_model(dep))}", *data,
                        f"--num-prompts {bench_prompts(batch)}", f"--max-concurrency {batch}",
                        f"--temperature {TEMPERATURE:g}", f"--percentile-metrics {','.join(BENCH_METRICS)}",
                        f"--metric-percentiles {','.join(map(str, BENCH_PERCENTILES))}", "--save-result",
                        f"--result-filename {filename}"])


def path_word(flag, path):
    """A flag and its path for a shell line: quoted, and joined by = when the path starts with - (a flag's look)."""
    return f"{flag}={shlex.quote(path)}" if path.startswith("-") else f"{flag} {shlex.quote(path)}"


def tool_words(dep):
    """This program's own flags for the deployment, so a later run gates the same one: every flag that
    changed it from the catalog's (configs, GPU numbers, a tree, the draft's id)."""
    model = path_word("--model-config", dep.model_config) if dep.model_config else f"--model {dep.model}"
    words = ["python code/main.py", f"--engine {dep.engine.key}", model, f"--gpu {dep.gpu}",
             f"--tp {dep.tp}", f"--weights-dtype {dep.weights_dtype}", f"--kv-dtype {dep.kv_dtype}",
             f"--input-tokens {dep.input_tokens}", f"--output-tokens {dep.output_tokens}"]
    words += [f"--ep {dep.ep}"] if dep.ep > 1 else []
    words += ["--dp-attention"] if dep.dp_attention else []
    if dep.era != newest_era(dep.engine.key):
        words.insert(2, f"--engine-version {release_text(dep.era.first)}")
    if dep.context != mean_context(dep.input_tokens, dep.output_tokens):
        words.append(f"--context {dep.context}")
    words.append(f"--draft {dep.draft}")
    words += [path_word("--draft-config", dep.draft_config)] if dep.draft_config else []
    words += [f"--draft-model {shlex.quote(dep.draft_hf)}"] if dep.draft_hf else []
    words += [f"--draft-topk {dep.topk}", f"--verify-tokens {dep.verify_tokens}"] if dep.topk > 1 else []
    catalog = GPUS.get(dep.gpu)
    if catalog is None or (dep.memory_gib, dep.bandwidth_tbs, dep.target.tflops) != (
            catalog["memory_gib"], catalog["bandwidth_tbs"], peak_tflops(catalog, dep.weights_dtype)):
        words += [f"--gpu-memory {dep.memory_gib:g}", f"--gpu-bandwidth {dep.bandwidth_tbs:g}",
                  f"--gpu-tflops {dep.target.tflops:g}"]
    return words


def sglang_stage1_notes(dep, k):
    """SGLang's own choices that differ from the plan's: its default tree for Llama heads, n-gram's branching."""
    llama = (catalog_name(dep) or "").startswith("llama-") and not (catalog_name(dep) or "").startswith("llama-4")
    if dep.draft in EAGLE_DRAFTS and dep.topk == 1 and llama:
        return ["SGLang's own default for a Llama target is a tree (5 steps, top-4 per step, 8 draft tokens): its "
                "verify pass carries 8 tokens per sequence where a chain carries K+1. This plan runs a chain "
                "(topk 1): the cost model, the break-even and the gate are for chains, and a tree's acceptance "
                "can only be measured, not computed from alpha.", ""]
    if dep.draft == "ngram":
        return [f"SGLang's n-gram drafter, held to one branch a match (`--speculative-ngram-max-bfs-breadth 1`; its "
                "default of 10 makes a wide tree), drafts up to K tokens from the context's matches and verifies "
                f"K + 1 = {k + 1} tokens a sequence whatever it finds (`--speculative-num-draft-tokens`). Matches that "
                "disagree can still branch: measure its acceptance length rather than trust the chain formula.", ""]
    return []


def no_notes(dep, k):
    """An engine whose stage 1 needs no note of its own."""
    return []


# Model Runner V2 is vLLM's default runner: vllm/config/vllm.py's use_v2_model_runner takes V2 unless
# VLLM_USE_V2_MODEL_RUNNER says otherwise or a feature needs V1. Of the speculative methods V2 runs eagle,
# eagle3 and mtp (and newer ones); for ngram and draft_model it falls back to V1 by itself, and forcing
# VLLM_USE_V2_MODEL_RUNNER=1 with them raises "Model Runner V2 does not yet support: ...".
V2_METHODS = ("eagle", "eagle3", "mtp")


def vllm_k_by_batch(plan, dep):
    """vLLM: num_speculative_tokens_per_batch_size (PR #32374), with its caveats.

    The old batch-size off switch of the config did nothing from v0.10.0 and was removed
    (issue #25112, PR #35060): a row with K = 0 is the off switch now. Open issue #49548 reports throughput
    collapsing at the table's thresholds. vllm/config/vllm.py (_maybe_override_dynamic_sd_cudagraph_mode)
    downgrades CUDA graphs to PIECEWISE for the table on the V1 runner only, and ignores the table when data
    parallel > 1. On V2 the drafter ignores the table's K altogether (issue #51510, open; PRs #51575, #57053).
    """
    schedule = plan.schedule
    if dep.dp_attention:   # the plan's vLLM command runs --data-parallel-size tp: the table would be ignored
        return [f"vLLM ignores `num_speculative_tokens_per_batch_size` with `--data-parallel-size` above 1 "
                "(vllm/config/vllm.py), and this deployment runs attention data parallel: keep stage 1's fixed K "
                f"{plan.k}, and send the batch sizes where the table's K differs, {json.dumps(schedule)}, to "
                "replicas started with that K.", ""]
    method = json.loads(speculative_config(dep, plan.k))["method"]
    v2 = method in V2_METHODS
    table = json.dumps(schedule)
    zero = " (a row with K = 0 switches speculation off at its batch sizes)" if any(row[2] == 0 for row in schedule) else ""
    if can_serve(dep):
        out = [f"vLLM's dynamic speculative decoding takes this table as it stands{zero}:", "", "```"] + vllm_command(
            dep, speculative_config(dep, plan.k, schedule), ["VLLM_USE_V2_MODEL_RUNNER=0"] if v2 else []) + ["```", ""]
    else:
        out = [f"vLLM's dynamic speculative decoding takes this table as `num_speculative_tokens_per_batch_size` "
               f"{table} in `--speculative-config`{zero}, once stage 1 has a head to serve.", ""]
    if v2:
        out += [f"The table needs the V1 model runner. vLLM runs `{method}` on Model Runner V2 by default, and V2's "
                "drafter ignores the table: every round drafts `num_speculative_tokens`, K = 0 rows included "
                "(issue #51510, open at the last check). `VLLM_USE_V2_MODEL_RUNNER=0` selects V1, which then "
                "captures CUDA graphs in PIECEWISE mode only. Benchmark it against the fixed K of stage 1 on the "
                "default runner at the batch sizes where K changes:", ""]
    else:
        out += [f"vLLM runs `{method}` on the V1 model runner (Model Runner V2 does not support it, and vLLM falls "
                "back by itself: never force `VLLM_USE_V2_MODEL_RUNNER=1`, which refuses it). With the table, V1 "
                "captures CUDA graphs in PIECEWISE mode only. Benchmark it against the fixed K of stage 1 at the "
                "batch sizes where K changes:", ""]
    return out + ["- open issue #49548 reports throughput collapsing at the table's thresholds;",
                  "- with `--data-parallel-size` above 1 vLLM ignores the table and runs `num_speculative_tokens` "
                  "throughout.", ""]


def sglang_k_by_batch(plan, dep):
    """SGLang: --speculative-adaptive (PRs #21599, #24055; EAGLE and EAGLE3 with topk 1 only).

    It picks the step count at run time among candidates listed per batch size in its
    tuning file, moving with the acceptance it measures; SGLANG_ADAPTIVE_DEFAULT holds
    its built-in candidates.
    """
    route = (" Route the batch sizes where K is 0 to a replica without speculation."
             if any(row[2] == 0 for row in plan.schedule) else "")
    if dep.topk > 1:
        return ["`--speculative-adaptive` adapts chains only (topk 1; with a tree SGLang warns and keeps its static "
                "parameters, adaptive_spec_params.py): keep the tree of stage 1 where it pays." + route, ""]
    if dep.draft not in EAGLE_DRAFTS + ("mtp",):
        what = "n-gram lookup" if dep.draft == "ngram" else "a draft model"
        return [f"SGLang's adaptive step count works for EAGLE heads and MTP only (EAGLE and EAGLE3): with {what}, "
                "run the fixed K of stage 1." + route, ""]
    ks = sorted({row[2] for row in plan.schedule})
    tried = {k for candidates in SGLANG_ADAPTIVE_DEFAULT.values() for k in candidates}
    untried = [k for k in ks if k not in tried]
    off_from = min((b for b, candidates in SGLANG_ADAPTIVE_DEFAULT.items() if candidates == (0,)), default=None)
    unlike = []
    still_on = [row for row in plan.schedule if row[2] > 0 and row[1] >= (off_from or 0)]
    if off_from is not None and still_on:
        unlike.append(f"they turn speculation off from batch {off_from}, where this table still runs K = "
                      f"{', '.join(str(k) for k in sorted({row[2] for row in still_on}, reverse=True))}")
    if untried:
        unlike.append("they never try K = " + ", ".join(map(str, untried)))
    return ["SGLang has no table to paste. `--speculative-adaptive` (EAGLE and EAGLE3 with topk 1) picks the "
            "step count at run time among candidates its tuning file (`--speculative-adaptive-config`) lists per "
            "batch size, moving with the acceptance it measures. "
            + (f"Its built-in candidates do not follow this table: {'; '.join(unlike)}. " if unlike else "")
            + "Give each batch size of its tuning file the one K above (check the file's keys in your build's "
            "`adaptive_spec_params.py`), or keep the fixed K of stage 1. With it on, the fixed-K alert of the live "
            "dashboard no longer applies.", ""]


def trtllm_k_by_batch(plan, dep):
    """TensorRT-LLM: draft_len_schedule or max_concurrency in speculative_config (llm_args.py).

    The schedule's keys changed meaning between releases: first batch size of a tier in
    older llm_args.py ({1: 4, 4: 2, 8: 0}), last batch size in newer ones ({4: 4, 8: 2, 32:
    1}, larger batches draft nothing). max_concurrency (speculation off above it) is the
    same in both and excludes the schedule.
    """
    schedule = plan.schedule
    on = [row for row in schedule if row[2] > 0]
    upper = "{" + ", ".join(f"{hi}: {k}" for _, hi, k in on) + "}"
    monotone = all(a[2] >= b[2] for a, b in zip(on, on[1:]))
    ranges = paying_ranges(schedule)
    if ranges[0][0] > 1 or len(ranges) > 1:
        return [f"TensorRT-LLM's switches turn speculation off above a batch size, not below or between: here "
                f"{where_it_pays(schedule)}. Serve the batch sizes where it is off from a replica without "
                "speculation, or keep the fixed K of stage 1 where it pays.", ""]
    out = []
    if plan.k_zero_at:
        out += ["The simple switch: `max_concurrency` in `speculative_config` turns speculation off above a batch "
                "size:", "", "```yaml", f"  max_concurrency: {plan.k_zero_at - 1}", "```", ""]
    if monotone and len(on) > 1 and dep.draft == "eagle3":
        out += [("Or, instead (the two exclude each other), the whole table: " if plan.k_zero_at else
                 "The whole table is ") + f"`draft_len_schedule: {upper}` (with `max_draft_len: {on[0][2]}`) in "
                "newer releases, whose keys are each tier's last batch size and which run it in the one-model "
                "Eagle3 mode (the default). Older releases read the keys as each tier's first batch size, the "
                "earliest ran it for two-model drafters only, and some one-model builds refuse a 0: read "
                "`draft_len_schedule` in your installed `tensorrt_llm/llmapi/llm_args.py` before pasting it.", ""]
    return out


def vllm_measure(result, dep, plan):
    """vLLM's spec-decode counters, per position and per request."""
    engine, spread = dep.engine, result.alpha_spread
    page = f"localhost:{engine.port}{engine.metrics_path}"
    return [
        "The lesson's `spec_decode_metrics.accepted_tokens_per_request` was never a vLLM metric. For the",
        f"server as a whole, scrape the Prometheus counters on `{engine.metrics_path}` before and after a window of "
        "traffic",
        "(sums over the `engine` and `model_name` labels):", "",
        "- `vllm:spec_decode_num_drafts_total` (rounds), `vllm:spec_decode_num_draft_tokens_total`,",
        "  `vllm:spec_decode_num_accepted_tokens_total`,",
        "  `vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"i\"}`.",
        "- acceptance rate r = accepted / draft tokens; acceptance length tau = 1 + accepted / drafts;",
        "  per-position rate i = accepted at position i / drafts. Position 0's rate is the first draft's",
        "  per-token alpha whatever K each round used; conditional alpha at i = rate i / rate i-1.", "",
        "Per request, the lesson's metric has a real counterpart since vLLM PR #48915 (after 0.28): with",
        "`--per-request-spec-decode-metrics summary` each response carries `metrics.speculative_decoding`,",
        "with an `acceptance_histogram`.",
        f"Its share of steps that accepted nothing is what the per-token tail needs: at alpha {plan.alpha:.2f} "
        f"it should be {1 - plan.alpha:.2f}. Each request's histogram also gives that request's own alpha; "
        f"their standard deviation across requests, less the sampling noise of each estimate (about "
        f"sqrt(a(1-a)/drafts)), is what `--alpha-spread` takes ({spread:g} assumed here), and it sets P99 TPOT.",
        "",
        "```", f"curl -s {page} > before.prom     # ... a window of production traffic ...",
        f"curl -s {page} > after.prom", "```", ""]


def sglang_measure(result, dep, plan):
    """SGLang's acceptance gauges, averaged over time."""
    k, engine = plan.k, dep.engine
    width = verify_tokens(dep, k) - 1
    tau = result.measured.acceptance_length if plan.measured else acceptance_length(plan.alpha, k)
    return [
        "SGLang (with `--enable-metrics`) exports gauges, not counters: `sglang:spec_accept_length` (tau, bonus",
        "token included) and `sglang:spec_accept_rate`, accepted drafts over rounds x the tokens a round drafts",
        "(`--speculative-num-draft-tokens` - 1, since SGLang PR #23530; before it the bonus token and the",
        f"root counted), each recomputed over the last {SGLANG_GAUGE_STEPS} decode steps. Average them over time "
        "(never `rate()` of a gauge):", "",
        "```promql", "avg by (model_name) (avg_over_time(sglang:spec_accept_length[30m]))", "```", "",
        f"At tau {tau:.2f} the rate gauge reads (tau - 1) / {width} = {(tau - 1) / width:.2f}"
        + (" (a tree drafts more tokens than its depth)." if dep.topk > 1 else "."),
        f"For this program, save a scrape taken under traffic: it reads both gauges (their mean over the TP "
        f"ranks) and takes the steps from `--ks {k}`.", "",
        "```", f"curl -s localhost:{engine.port}{engine.metrics_path} > after.prom     # under production traffic",
        "```", ""]


def trtllm_measure(result, dep, plan):
    """TensorRT-LLM's Prometheus counters of draft and accepted tokens."""
    k, engine = plan.k, dep.engine
    return [
        "trtllm-serve, with `return_perf_metrics: true` in its YAML (stage 0), serves Prometheus text at",
        f"`{engine.metrics_path}`, with the counters `trtllm_spec_decode_num_draft_tokens_total` and",
        "`trtllm_spec_decode_num_accepted_tokens_total` (tensorrt_llm/metrics/collector.py): acceptance rate",
        "r = accepted / draft tokens. It counts no drafts (rounds), so this program takes K from",
        f"`--ks {k}`. Scrape before and after a window of traffic (its JSON `/metrics`, per-iteration",
        "`specDecodingStats`, holds the same counts):", "",
        "```", f"curl -s localhost:{engine.port}{engine.metrics_path} > before.prom     # ... a "
        "window of production traffic ...",
        f"curl -s localhost:{engine.port}{engine.metrics_path} > after.prom", "```", ""]


def vllm_dashboard(dep, plan):
    """vLLM: the acceptance rate, the first position's alpha, and an alert at the break-even alpha."""
    k, batch, gate_a = plan.k, plan.shown_batch, plan.gate_alpha
    out = []
    rate = ("sum(rate(vllm:spec_decode_num_accepted_tokens_total[5m]))\n"
            "  / sum(rate(vllm:spec_decode_num_draft_tokens_total[5m]))")
    alpha0 = ("sum(rate(vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"}[5m]))\n"
              "  / sum(rate(vllm:spec_decode_num_drafts_total[5m]))")
    out += ["Acceptance rate over a 5-minute window (it depends on K, and mixes Ks under a K-by-batch table):",
            "", "```promql", rate, "```", "",
            "Per-token alpha of the first draft position, the same whatever K a round used:", "",
            "```promql", alpha0, "```", ""]
    if gate_a is not None:
        out += [f"Kill switch: at B={batch} and K={k} speculation breaks even at a per-token alpha of "
                f"{gate_a:.3f}. Alert, and turn speculation off, when the first position's alpha stays under it "
                "(10 minutes is a choice, not a computed number). Later positions can accept less than the "
                "first: check the per-position rates when it fires late.", "",
                "```yaml", "- alert: SpecDecodeBelowBreakEven",
                f"  expr: ({alpha0.replace(chr(10) + '  ', ' ')}) < {gate_a:.3f}", "  for: 10m", "```", ""]
    return out


def sglang_dashboard(dep, plan):
    """SGLang: its gauges over time, and an alert at the break-even accept length."""
    k, batch, gate_a = plan.k, plan.shown_batch, plan.gate_alpha
    out = []
    length = "avg by (model_name) (avg_over_time(sglang:spec_accept_length[5m]))"
    out += ["SGLang's acceptance gauges, averaged over time:", "", "```promql", length,
            "avg by (model_name) (avg_over_time(sglang:spec_accept_rate[5m]))", "```", ""]
    if gate_a is not None:
        shape = f"the tree of {k} steps" if dep.topk > 1 else f"the fixed chain of K={k}"
        out += [f"Kill switch: at B={batch} {shape} breaks even at an accept length of "
                f"{1 + plan.eps:.3f} (1 + eps). SGLang exports no per-position figure, so this alert holds "
                "for the fixed K of stage 1 only (not under `--speculative-adaptive`); 10 minutes is a choice.",
                "", "```yaml", "- alert: SpecDecodeBelowBreakEven",
                f"  expr: {length.replace('[5m]', '[10m]')} < {1 + plan.eps:.3f}", "  for: 10m", "```", ""]
    return out


def trtllm_dashboard(dep, plan):
    """TensorRT-LLM: the acceptance rate, and its built-in kill switch at the break-even rate."""
    k, batch, gate_a = plan.k, plan.shown_batch, plan.gate_alpha
    out = []
    rate = ("sum(rate(trtllm_spec_decode_num_accepted_tokens_total[5m]))\n"
            "  / sum(rate(trtllm_spec_decode_num_draft_tokens_total[5m]))")
    out += [f"Acceptance rate over a 5-minute window, from `{dep.engine.metrics_path}` (stage 2):", "", "```promql", rate,
            "```", ""]
    # The switch's fields: DecodingBaseConfig in tensorrt_llm/llmapi/llm_args.py. acceptance_rate_window_size counts
    # speculation-enabled decoding iterations (each a round of the batch), acceptance_rate_threshold is a rate in
    # [0, 1], and the executor's SpeculationGate turns speculation off for good once the rolling mean falls under
    # it. Older releases had acceptance_window (completed requests) and acceptance_length_threshold (in tau).
    t = {row.concurrency: row for row in plan.tail}.get(plan.shown_batch)
    if gate_a is not None and t is not None:
        drafted = verify_tokens(dep, k) - 1   # tokens a round drafts per request: K, or a tree's width
        threshold = plan.eps / drafted
        window = max(100, round(TRTLLM_GATE_MINUTES * 60_000 / t.round_ms, -2))
        out += [f"Kill switch, built in: at B={batch} a round breaks even at an acceptance rate of {threshold:.3f} "
                f"(eps {plan.eps:.3f} over the {drafted} token{'s' if drafted > 1 else ''} a round drafts). TensorRT-LLM averages each "
                "speculation-enabled iteration's rate over a window of iterations and turns speculation off for good "
                f"once the average falls under the threshold. One iteration is one round, about {t.round_ms:.0f} ms "
                f"at B={plan.shown_batch}, so {window:,.0f} iterations span about {TRTLLM_GATE_MINUTES} minutes "
                "of traffic (the minutes are a choice: a short window lets one bad patch switch speculation off for "
                "the server's life). Add to `speculative_config`:", "", "```yaml",
                f"  acceptance_rate_window_size: {window:.0f}",
                f"  acceptance_rate_threshold: {threshold:.3f}", "```", "",
                "These are the field names of current `llm_args.py`; earlier releases had `acceptance_window` "
                "(counted in completed requests) and `acceptance_length_threshold` (in tau: "
                f"{1 + plan.eps:.3f}).", ""]
    if gate_a is not None and dep.topk == 1:
        rates = [(kk, acceptance_rate(plan.alpha, kk)) for kk in sorted({row[2] for row in plan.schedule})
                 if kk > 0]
        low = [(kk, r) for kk, r in rates if r < plan.gate_rate]
        if low:
            out += ["The rate depends on K: use this switch with the fixed K of stage 1 only. Under "
                    "`draft_len_schedule` it would fire where a longer K runs well: at alpha "
                    f"{plan.alpha:.2f}, " + ", ".join(f"K = {kk} shows a rate of {r:.3f}" for kk, r in low) +
                    f", under {plan.gate_rate:.3f}.", ""]
    return out


@dataclass(frozen=True)
class EnginePlan:
    """The functions that write one engine's part of the plan: its row of ENGINE_PLANS, beside its ENGINES row."""
    serve: object         #: (dep, batch, k=None, schedule=None) -> its server's command, speculation off or on
    stage1_notes: object  #: (dep, k) -> what stage 1 says about the engine's own defaults
    k_by_batch: object    #: (plan, dep) -> how the engine can follow the K-by-batch table
    measure: object       #: (result, dep, plan) -> stage 2: where its acceptance is read and how
    dashboard: object     #: (dep, plan) -> what to watch live, and its kill switch
    head_context_note: str   #: what it does when a head's trained context is shorter than the target's


ENGINE_PLANS = {
    "vllm": EnginePlan(
        serve=vllm_serve, stage1_notes=no_notes, k_by_batch=vllm_k_by_batch, measure=vllm_measure,
        dashboard=vllm_dashboard,
        head_context_note=" On vLLM builds without PR #49343, a prompt longer than the head's "
                          "`max_position_embeddings` crashes the server (issue #48894)."),
    "sglang": EnginePlan(
        serve=sglang_serve, stage1_notes=sglang_stage1_notes, k_by_batch=sglang_k_by_batch, measure=sglang_measure,
        dashboard=sglang_dashboard,
        head_context_note=" SGLang refuses to start a head whose `max_position_embeddings` is below the target's "
                          "context length unless `SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1` is set, as the command "
                          "below does (the SpecForge heads' own cards launch so): that check is then yours."),
    "trtllm": EnginePlan(
        serve=trtllm_serve, stage1_notes=no_notes, k_by_batch=trtllm_k_by_batch, measure=trtllm_measure,
        dashboard=trtllm_dashboard, head_context_note=""),
}
assert ENGINE_PLANS.keys() == ENGINES.keys(), "every engine needs its row in both tables"
assert all(key == row.key and bool(row.trees) == (row.tree_tokens is not None) for key, row in ENGINES.items())


def serve_lines(dep, batch, k=None, schedule=None):
    """The server command, speculation off (k None) or on: the engine's own (ENGINE_PLANS)."""
    return ENGINE_PLANS[dep.engine.key].serve(dep, batch, k, schedule)


# ---------------------------------------------------------------- rendering: the rollout plan
# outputs/skill-eagle3-rollout.md: front matter, the stages, K by batch size, the tail watch, the dashboard.
# Engine-specific parts come from ENGINE_PLANS; every number from the run.

def md(text):
    """Text from a file or a path, safe in the plan's Markdown: no table cell split (|), no HTML, no code span."""
    return "".join({"|": "\\|", "<": "&lt;", ">": "&gt;", "`": "'", "&": "&amp;"}.get(c, c) for c in text)


def trained_draft(dep):
    """What could be trained for a weak traffic domain: a head, a draft model, the MTP module; nothing for n-gram."""
    return {"ngram": None, "mtp": "the MTP module fine-tuned", "model": "a draft model tuned"}.get(
        draft_kind(dep.draft), "a head trained")


def plan_mix(mix, dep):
    """The traffic-mix section: naive against correct blend, and what to do about the weak domain."""
    out = [f"## Traffic mix (at B={mix.concurrency}, K={mix.k})", ""]
    out += ["An example mix (TRAFFIC_MIX); give your traffic's own domains with `--mix`.", ""] if mix.assumed else []
    out += [
           "| domain | share of tokens | per-token alpha | tau | speedup alone | share of decode time |",
           "|---|---|---|---|---|---|"]
    out += [f"| {d.name} | {d.share:.2f} | {d.alpha:.2f} | {d.tau:.2f} | {d.speedup:.2f}x | "
            f"{d.time_share * 100:.1f}% |" for d in mix.domains]
    weak = next(d for d in mix.domains if d.name == mix.weak)
    out += ["", mix_blend_sentence(mix), "",
            f"{mix.weak} pulls the blend down: its tokens take {weak.time_share * 100:.1f}% of decode time "
            f"for {weak.share * 100:.0f}% of the tokens. What each remedy would give the whole mix:", ""]
    trained = trained_draft(dep)
    out += [f"- {trained} on {mix.weak} traffic, reaching alpha {mix.trained_alpha:.2f}: "
            f"{mix.trained_speedup:.3f}x;"] if trained else []
    out += [
            f"- routing {mix.weak} to replicas without speculation: {mix.routed_speedup:.3f}x;",
            f"- one K for all traffic: K={k_words(mix.best_k)} is best for this mix, {mix.best_k_speedup:.3f}x.", "",
            mix_tail_sentence(mix)]
    return out


def lesson_rule_sentence(plan):
    """Compare the lesson's rule with this run's break-even, reading its number in each unit."""
    k, gate_a, gate_r = plan.k, plan.gate_alpha, plan.gate_rate
    as_alpha = "above" if LESSON_RULE > gate_a else "below"
    as_rate = "above" if LESSON_RULE > gate_r else "below"
    return (f"Read as a per-token alpha, {LESSON_RULE} is {as_alpha} this run's break-even alpha {gate_a:.3f} (at K={k} it "
            f"shows as a rate of {plan.lesson_gate_as_rate:.3f}); read as the acceptance rate, it is {as_rate} the "
            f"break-even rate {gate_r:.3f} (and stands for a per-token alpha of {plan.lesson_gate_as_alpha:.3f}). "
            "Gate on the computed break-even, in a named unit, at the K you run.")


def plan_when_not(plan):
    """Bullets for 'when not to use': the break-even alpha at the plan's K and the grid's, by concurrency."""
    out = []
    for row in plan.break_evens:
        k, b, alpha = row.k, row.concurrency, row.alpha
        mark = " (the plan's K)" if k == plan.k else ""
        if alpha is None:
            out.append(f"- K={k}{mark} at B={b}: a round costs more than {k + 1} plain steps; no acceptance pays.")
        else:
            bounds = row.alpha_interval
            where = ("" if bounds is None else f"{bounds[0]:.2f}-{bounds[1]:.2f} at {INTERVAL_LEVEL:.0%}; "
                     if bounds[1] is not None else f"{bounds[0]:.2f} to never at {INTERVAL_LEVEL:.0%}; ")
            out.append(f"- K={k}{mark} at B={b}: below per-token alpha {alpha:.2f} ({where}rate "
                       f"{acceptance_rate(alpha, k):.2f}) speculation is slower than plain decoding.")
    return out or ["- (no batch size of the grid fits in memory)"]


def memory_setting(dep):
    """The engine's memory knob and its value, as the plan sets it."""
    engine = dep.engine
    return f"{engine.memory_flag} {dep.memory_fraction:g}{engine.memory_note}"


def era_account(dep):
    """What the era's round costs rest on, for the plan's deployment table."""
    era, kind = dep.era, draft_kind(dep.draft)
    if era.fitted:
        return "the published fit's costs, as fitted"
    if not era.saving_ms(kind, dep.topk):
        what = "trees" if dep.topk > 1 else {"model": "a draft model", "ngram": "n-gram drafting"}.get(kind, kind)
        return f"none of its changes runs for {what}: round costs as fitted"
    served = [s for s in era.savings if s.runs_for(kind, dep.topk)]
    how = "; ".join(f"{s.change}" + (f", {s.saved_ms:.2f} ms" if len(served) > 1 else "") + f" ({s.source})"
                    for s in served)
    return (f"{era.saving_ms(kind, dep.topk):.2f} ms less host time a round than the published fit's era, derived "
            f"from a before/after measurement, not fitted: {how}")


def plan_front(result, dep, plan):
    """Front matter and the deployment table."""
    k, batch, alpha = plan.k, plan.shown_batch, plan.alpha
    engine = dep.engine.name
    draft_params = dep.drafter.held_params
    gain = (f"{plan.speedup_target:.2f}x ({span(plan.speedup_target_interval)} at {result.trust.level:.0%}) over plain "
            "decoding" if plan.speedup_target_interval else "")
    if plan.k_target == k:
        k_line = f"{k}: the best of K = 0..{K_MAX} at B={batch} and alpha {alpha:.2f}, {gain}"
    elif plan.k_target:
        k_line = f"{k}, the K measured; at B={batch} and alpha {alpha:.2f} the best is K = {plan.k_target}, {gain}"
    else:
        k_line = (f"{k} where speculation pays; at B={batch} and alpha {alpha:.2f} no K beats plain decoding "
                  "(see K by batch size)")
    if plan.too_close:
        k_line += (f": too close to call, since the range holds 1.0x. The stage-1 benchmark at B={batch} "
                   f"(`sharegpt_spec_c{batch}.json` against `sharegpt_baseline_c{batch}.json`) settles it")
    return [
        "---",
        "name: eagle3-rollout",
        f"description: Staged rollout of {dep.draft} speculative decoding on {engine} for {dep.model} "
        f"({dep.weights_dtype}) on {dep.tp} x {dep.gpu} at concurrency {batch}, gated on measured acceptance.",
        f"tags: [speculative-decoding, eagle3, {dep.engine.key}, rollout, p99]",
        "---",
        "",
        f"# Speculative decoding rollout: {dep.model} on {dep.tp} x {dep.gpu}, {engine}, draft {dep.draft}",
        "",
        "Written by `python code/main.py`. Every number here comes from that run's cost model and simulated",
        "requests; change the deployment constants or flags and run it again.",
        "",
        "## The deployment this plan is for",
        "",
        "| | this run |",
        "|---|---|",
        f"| engine | {engine}; commands checked against the engine versions the README names |",
        f"| engine release | {era_releases(dep.engine, dep.era)}: {dep.era.what}; {era_account(dep)} |",
        f"| target | {dep.model}, {dep.target.held_params / 1e9:.2f} B parameters"
        + (f" ({dep.target.active_params / 1e9:.2f} B active, {dep.target.experts_per_token} of {dep.target.experts} experts)"
           if dep.target.experts else "") + f", {dep.weights_dtype} weights "
        f"({dep.target.held_bytes / GIB:.1f} GiB with embeddings and lm_head in bf16), tensor parallel {dep.tp}"
        + (f", expert parallel {dep.ep}" if dep.ep > 1 else "")
        + (", attention data parallel" if dep.dp_attention else "") + " |",
        f"| GPUs | {dep.tp} x {dep.gpu}, {dep.memory_gib:g} GiB and {dep.bandwidth_tbs:g} TB/s each; "
        f"{result.facts.memory_budget_bytes / GIB:.0f} GiB for weights and KV cache ({memory_setting(dep)}; "
        "activations and CUDA graphs are not counted, so the sequences that fit are an upper bound) |",
        f"| KV cache | {dep.kv_dtype}, {dep.target.kv_bytes_per_token:,} B per token{copies_text(dep)}; at "
        f"{dep.context} tokens of "
        f"context {result.facts.max_concurrency} sequences fit |",
        f"| draft | {dep.draft}: {draft_params / 1e9:.3f} B parameters"
        + (f", `{draft_head(dep)[0]}`" if draft_head(dep)[0] else "") + " |",
        f"| target concurrency | {plan.target}" + ("" if plan.feasible else
                                                     f" (does not fit in memory: this plan is for {batch}, the most "
                                                     "that fits)") + " |",
        f"| plain decode step | {plan.plain_ms_b1:.2f} ms at B=1, {plan.plain_ms_shown:.2f} ms at "
        f"B={plan.shown_batch} |",
        (f"| measured per-token alpha | {alpha:.3f} (from {md(result.measured.source)}) |" if plan.measured
         else f"| assumed per-token alpha | {alpha:.2f} until measured (stage 2) |"),
        f"| spread over requests | alpha s.d. {result.alpha_spread:g}, ln(output tokens) s.d. "
        f"{result.output_spread:g} (assumed; `--alpha-spread`, `--output-spread`) |",
        f"| K | {k_line} |",
        f"| trust | {md(trust_sentence(result.trust))} |",
        "",
        f"![Speedup against per-token alpha]({CHART_FILES['speedup']})",
        "",
        f"![Best K against batch size]({CHART_FILES['best_k']})",
        "",
        f"![Per-token ITL distribution]({CHART_FILES['itl']})",
        "",
    ]


def head_notes(dep):
    """Where the head comes from, and a warning when the deployment's context is past its training."""
    if dep.draft not in EAGLE_DRAFTS:
        return []
    head, trained = draft_head(dep)
    engine = dep.engine.name
    if head is None:
        eagle3 = EAGLE3_HEADS.get((dep.engine.key, catalog_name(dep)), (None,))[0] if dep.draft == "eagle" else None
        others = ([f"`--draft eagle3` (a public EAGLE-3 head: `{eagle3}`)"] if eagle3 else []) + \
            (["`--draft mtp` (this model has an MTP module)"] if dep.shape.get("nextn") else []) + \
            ["`--draft ngram` (no model at all)"]
        return [f"**No head to serve yet.** No public {dep.draft} head for {dep.model} that {engine} loads is known "
                "to this tool (checked 2026-12), so this stage prints no command that would fail. Train one with "
                "SpecForge (`specforge train`, sgl-project/SpecForge) or vLLM's speculators "
                "(`scripts/train.py`, vllm-project/speculators), then run this program again with "
                "`--draft-model` set to its Hugging Face id or path. Until then: " + " or ".join(others) + ".", ""]
    crash = ENGINE_PLANS[dep.engine.key].head_context_note
    if trained is None:
        return [f"Head: `{head}`. Its training context is not in a source this tool checked: read "
                f"`max_position_embeddings` in its config.json and compare it with this deployment's mean "
                f"decode context of {dep.context} tokens; a head drafts worse past the context it was trained "
                f"at.{crash}", ""]
    if dep.context > trained:
        return [f"**Warning:** `{head}` was trained at {trained} tokens and this deployment decodes at "
                f"{dep.context} tokens of mean context. Past its training context a head accepts less (SGLang "
                "issue #6783 measured a 2k-trained head slower than plain decoding past 2k tokens); measure "
                f"acceptance on long requests before rollout, or use a head trained longer.{crash}", ""]
    return [f"Head: `{head}`, trained at {trained} tokens; the mean decode context ({dep.context}) is within "
            f"it, but requests past {trained} tokens will accept less.{crash}", ""]


def calibration_batches(batch):
    """Concurrencies the plan benchmarks without speculation: 1, the geometric middle and the target (three that
    span it, once it is 3 or more: a pass's fixed cost, the cost per token and the context each show apart)."""
    return sorted({1, min(batch - 1, max(2, round(batch ** 0.5))) if batch > 2 else 1, batch})


def spec_batches(batch):
    """Concurrencies the plan benchmarks with speculation: 1, where the draft's cost shows most, and the target."""
    return sorted({1, batch})


def calibration_ks(k):
    """The Ks the plan benchmarks with speculation: the plan's, and 1 (or 3 when the plan's is 1). Two Ks tell a
    draft step's cost (K of them a round) from a round's bookkeeping (one a round): with one K they move together."""
    return sorted({k, 1 if k > 1 else min(3, K_MAX)})


def spec_files(dep, plan):
    """The speculative calibration runs' files: (K, batch, file name), in the order stage 1 runs them."""
    if not dep.engine.bench_records_acceptance or dep.topk > 1:
        return []
    return [(k, b, f"spec_k{k}_c{b}.json") for k in [plan.k] + [k for k in calibration_ks(plan.k) if k != plan.k]
            for b in spec_batches(plan.shown_batch)]


def plan_stage0(dep, plan):
    batch = plan.shown_batch
    others = [b for b in calibration_batches(batch) if b != batch]
    fits = ("" if plan.feasible else f"Concurrency {plan.target} does not fit in memory: every command below runs "
            f"at {batch}, the most that fits. ")
    out = ["## Stage 0: baseline, speculation off", "",
           fits + f"Two kinds of run, each at your traffic's temperature ({TEMPERATURE:g} here: acceptance depends on "
           "it) through the chat endpoint:", "",
           f"- **calibration runs** at concurrency {', '.join(map(str, others))} and {batch}: random prompts of "
           f"exactly {dep.input_tokens} tokens and {dep.output_tokens}-token answers, the lengths this plan models, "
           "so that stage 3 can fit the cost model to your deployment;",
           f"- **the gate's baseline** at {batch}: ShareGPT's prompts with answers of at most {dep.output_tokens} "
           "tokens, real text as acceptance needs it (a sample of your own traffic is better still).", "",
           "```", f"wget {SHAREGPT_URL}"] + serve_lines(dep, batch)
    for b in calibration_batches(batch):
        out += bench_lines(dep, b, f"baseline_c{b}.json")
    out += bench_lines(dep, batch, f"sharegpt_baseline_c{batch}.json", realistic=True)
    return out + ["```", "", f"Keep the files: `sharegpt_baseline_c{batch}.json`'s `p99_tpot_ms`, `p99_itl_ms` and "
                  "`output_throughput` are what the gate compares, and the calibration runs fit the cost model "
                  "(stage 3). Each file's own lengths (its token totals over completed requests) are what the tool "
                  "reads back, with a note when they differ from the deployment's by more than 10%.", ""]


def plan_stage1(dep, plan):
    k, batch = plan.k, plan.shown_batch
    t = {row.concurrency: row for row in plan.tail}.get(batch)
    engine = dep.engine
    shape = (f"a tree: top-{dep.topk} at each of {k} steps, {dep.verify_tokens} tokens a sequence in the verify pass, "
             "with the acceptance length you measured for it" if dep.topk > 1 else
             f"a chain of K = {k} token{'s' if k > 1 else ''}")
    out = ["## Stage 1: turn on speculation", "", f"Speculation is opt-in in {engine.name}: "
           f"{engine.opt_in}. The draft is {shape}.", ""]
    out += ENGINE_PLANS[dep.engine.key].stage1_notes(dep, k) + head_notes(dep)
    if not can_serve(dep):
        return out   # no head to serve yet: head_notes says how to get one
    out += ["```"] + serve_lines(dep, batch, k)
    calibrating = spec_files(dep, plan)
    for run_k, b, name in calibrating:
        if run_k == k:
            out += bench_lines(dep, b, name)
    out += bench_lines(dep, batch, f"sharegpt_spec_c{batch}.json", realistic=True)
    other = sorted({run_k for run_k, _, _ in calibrating if run_k != k})
    for run_k in other:
        out += ["", f"# then the same server at K = {run_k}, for calibration only"] + serve_lines(dep, batch, run_k)
        out += [line for kk, b, name in calibrating if kk == run_k for line in bench_lines(dep, b, name)]
    out += ["```", ""]
    names = [name for _, _, name in calibrating]
    out += [f"`sharegpt_spec_c{batch}.json` is the gate's speculative run, the same workload as its baseline"
            + (f"; `{'`, `'.join(names)}` calibrate the round's cost (vLLM's benchmark records each run's "
               f"acceptance in its `spec_decode_*` keys): two Ks, because with one a draft step's cost and a "
               "round's bookkeeping cannot be told apart." if calibrating else
               ". A tree's round is not what the calibration's chain formula times: stage 3 fits on the baselines."
               if engine.bench_records_acceptance else
               f". The benchmark records a run's acceptance from vLLM's own counters, which "
               f"{engine.name} does not export, so speculative runs cannot "
               "calibrate the round's cost here: stage 3 fits on the baselines."), ""]
    if t is not None:
        out += [
            f"What the model expects at B={batch} "
            + ("with the measured acceptance" if plan.measured else
               f"if requests accept at alpha {plan.request_alpha:.2f} on average") + ": tau = "
            f"{t.acceptance_length_requests:.2f} tokens per round over requests whose alpha spreads by s.d. "
            f"{t.alpha_spread:.3g}, round overhead eps = {t.eps_eff:.2f} (with the prefill a round of that tau "
            f"carries; stage 3's break-even uses the decode eps alone), speedup {t.speedup_requests:.2f}x "
            f"(simulated: {t.speedup_mc:.2f}x, {span(t.speedup_interval)} at {INTERVAL_LEVEL:.0%}"
            + ("" if plan.measured else f"; at one alpha for all, {t.speedup_exact:.2f}x; the lesson's "
               f"formula would claim {t.speedup_lesson:.2f}x") + ")."
            + (" That range holds 1.0x: the model cannot say whether this pays, and this stage's benchmark pair "
               "must." if too_close(t.speedup_interval) else ""), ""]
    return out


PREDICTED_KEYS = (("output_throughput", "output tok/s", ".0f"), ("mean_tpot_ms", "mean TPOT ms", ".2f"),
                  ("p99_tpot_ms", "P99 TPOT ms", ".2f"), ("p99_itl_ms", "P99 ITL ms", ".2f"),
                  ("mean_ttft_ms", "mean TTFT ms", ".0f"), ("p99_ttft_ms", "P99 TTFT ms", ".0f"))


def plan_predicted_runs(result, dep):
    """What the gate's two runs should print, predicted before they run (gate_runs), and how to hold the
    measured files against it (--compare)."""
    runs = result.gate_runs
    if not runs:
        return []
    base, spec = runs
    out = [f"### What `{base.name}` and `{spec.name}` should print", "",
           f"Predicted by simulating both runs step by step ({base.workload.num_prompts} requests, "
           f"{base.workload.max_concurrency} at a time, prompts of {dep.input_tokens} tokens, answers log-normal "
           f"with an s.d. of {base.workload.output_spread:g} in log (`--output-spread`) and none past "
           f"{dep.output_tokens}, {base.result['total_output_tokens'] / base.result['completed']:.0f} tokens on "
           f"average, requests around alpha {spec.alpha:.2f} at K = {spec.k}), each with its "
           f"{INTERVAL_LEVEL:.0%} range. Answers of spread length make a finite run's end, and so its throughput, "
           "vary from run to run beyond that range:", "",
           "| file | " + " | ".join(label for _, label, _ in PREDICTED_KEYS) + " |",
           "|---|" + "---|" * len(PREDICTED_KEYS)]
    for pb in runs:
        cells = [f"{pb.result[key]:{form}} ({pb.intervals[key][0]:{form}}-{pb.intervals[key][1]:{form}})"
                 for key, _, form in PREDICTED_KEYS]
        out.append(f"| `{pb.name}` | " + " | ".join(cells) + " |")
    return out + ["", "Once they have run, the gate command of stage 3 (its `--compare`) prints each of their keys "
                  "against the prediction of its own run (its lengths, concurrency and measured acceptance), with the "
                  "error and whether it falls in the range.", ""]


def predicts_gate_pair(dep, plan):
    """Whether the plan predicts the gate's benchmark pair: a chain (a tree's rounds are measured, not drawn) that
    stage 1 serves, on one scheduler (simulated_layout)."""
    return (bool(plan.k) and simulated_layout(dep) and can_serve(dep)
            and running_cap(dep, True, plan.shown_batch) >= 1)


def gate_runs(dep, plan, trust, traffic, fit=FIT):
    """The gate's benchmark pair (sharegpt_baseline_cB.json, sharegpt_spec_cB.json at the plan's batch and K),
    predicted: [baseline, speculative], or None where the plan predicts none (predicts_gate_pair)."""
    if not predicts_gate_pair(dep, plan):
        return None
    batch = plan.shown_batch
    # ShareGPT's answers around the deployment's length, none past it: the runs' --sharegpt-output-len is max_tokens
    work = bench_workload(dep, batch, output_spread=traffic.output_spread, output_cap=dep.output_tokens)
    return [predict_bench(dep, name, work, k, plan.request_alpha, trust, traffic.seed, fit, plan.request_spread)
            for name, k in ((f"sharegpt_baseline_c{batch}.json", 0), (f"sharegpt_spec_c{batch}.json", plan.k))]


def plan_k_by_batch(plan, dep):
    """The plan's "K by batch size" section: the table, and how each engine can follow it."""
    schedule, alpha = plan.schedule, plan.alpha
    if not schedule:
        return ["## K by batch size", "", "The weights do not fit in memory: no batch size can run.", ""]
    sd = plan.speedup_sd
    out = ["## K by batch size", "",
           f"The best K (0 = off) at each batch size for alpha {alpha:.2f}, from the cost model, with the "
           f"{INTERVAL_LEVEL:.0%} range of each speedup:", "",
           "| batch sizes | K | speedup over plain |", "|---|---|---|"]
    for (lo, hi, k), (s_lo, s_hi) in zip(schedule, plan.schedule_speedups):
        def shown(value):
            return f"{value:.2f}x" + (f" ({span(interval(value, sd))})" if k and sd is not None else "")
        out.append(f"| {lo}-{hi} | {k} | {shown(s_lo) if lo == hi else f'{shown(s_lo)} at {lo} to {shown(s_hi)} at {hi}'} |")
    out.append("")
    close = (f" The model cannot tell whether it pays at B = "
             + ", ".join(f"{lo}-{hi}" if lo < hi else str(lo) for lo, hi in plan.close_calls)
             + f": its range there holds 1.0x. Benchmark speculation on against off at B = {plan.close_calls[0][0]} "
             "and at the batch you run before relying on the table there." if plan.close_calls else "")
    if not paying_ranges(schedule):
        return out + ["The model predicts speculation pays at no batch size here: leave it off." + close, ""]
    out += [f"At this alpha the model predicts {where_it_pays(schedule)}." + close, ""]
    on = [row for row in schedule if row[2] > 0]
    rise = next((b for a, b in zip(on, on[1:]) if b[2] > a[2]), None)
    if rise and dep.target.experts:
        out += [f"K rises again from B = {rise[0]}: a mixture-of-experts plain step reads more experts as the batch "
                "grows, so the experts a verify pass adds cost relatively less (expected_experts in the cost model; "
                "real routers are skewed, so measure where it matters).", ""]
    return out + ENGINE_PLANS[dep.engine.key].k_by_batch(plan, dep)


def plan_stage2(result, dep, plan):
    """How to measure acceptance on each engine, and how to hand it to this program."""
    k = plan.k
    out = ["## Stage 2: measure acceptance on production traffic", ""]
    out += ENGINE_PLANS[dep.engine.key].measure(result, dep, plan)
    if dep.topk > 1:
        drafted = verify_tokens(dep, k) - 1
        tau = result.measured.acceptance_length if plan.measured else acceptance_length(plan.alpha, k)
        out += [f"A round of this tree drafts {drafted} tokens for {k} steps: accepted over drafted tokens, "
                f"(tau - 1) / {drafted} = {(tau - 1) / drafted:.2f} at tau {tau:.2f}, is neither a per-token alpha "
                "nor a chain's rate.", ""]
    else:
        out += [f"Dividing accepted tokens by K gives r, not alpha: at K = {k}, r = {plan.rate_at_alpha:.2f} is what "
                f"a per-token alpha of {plan.alpha:.2f} shows.", ""]
    if plan.measured:
        ms = result.measured
        out += [f"Measured ({md(ms.source)}): K = {ms.k}, acceptance rate {ms.acceptance_rate:.3f}, "
                f"acceptance length {ms.acceptance_length:.3f}, per-token alpha {ms.alpha:.3f}"
                + (", conditional alpha by position " + ", ".join(f"{a:.3f}" for a in ms.per_position_alpha)
                   if ms.per_position_alpha else "") + ".", ""]
        out += [f"- {md(note)}" for note in ms.notes] + ([""] if ms.notes else [])
    return out


def gate_command(dep, plan):
    """This program's gate run for the files stages 0 to 2 produce, calibrated on the benchmark runs.

    Where the benchmark records the speculative runs' K and acceptance (vLLM's spec_decode_* keys) they calibrate
    too; elsewhere only the baselines do. Acceptance comes from the scrapes of stage 2: gauges need one scrape and
    counters two, and a scrape that counts no drafts needs K (--ks).
    """
    batch = plan.shown_batch
    files = [f"baseline_c{b}.json" for b in calibration_batches(batch)] + [name for _, _, name in spec_files(dep, plan)]
    engine = dep.engine
    words = tool_words(dep) + [f"--bench-baseline sharegpt_baseline_c{batch}.json",
                               f"--bench-spec sharegpt_spec_c{batch}.json", f"--target-concurrency {batch}",
                               "--calibrate " + ",".join(files)]
    words += [f"--gate-margin {plan.margin:g}"] if plan.margin != GATE_MARGIN else []
    words += [f"--p99-budget {plan.p99_budget:g}"] if plan.p99_budget != P99_BUDGET else []
    words += [f"--served-model {shlex.quote(plan.served_model)}"] if plan.served_model else []
    if predicts_gate_pair(dep, plan):   # each key of the pair against the prediction of its own run (gate_runs)
        words.append(f"--compare sharegpt_baseline_c{batch}.json,sharegpt_spec_c{batch}.json")
    words += ["--metrics after.prom"] + ([] if engine.acceptance_gauges else ["--metrics-before before.prom"])
    words += [] if engine.counts_drafts else [f"--ks {plan.k}"]
    return ["```"] + shell_lines(words + ["--gate"]) + ["```", ""]


def plan_calibration(cal):
    """The plan's account of the fit on your runs."""
    out = [f"{calibration_headline(cal)}.", "", *(f"{md(x)}" for x in calibration_findings(cal)), "",
           "| run | B | K | tau | measured TPOT | fitted | error | held out |", "|---|---|---|---|---|---|---|---|"]
    for r in cal.runs:
        out.append(f"| `{md(Path(r.path).name)}` | {r.batch} | {fmt(r.k, 'd')} | {fmt(r.tau, '.2f')} | "
                   f"{r.measured_tpot_ms:.2f} ms | {r.fitted_tpot_ms:.2f} ms | {pct1(r.error)} | "
                   f"{pct1(r.held_out_error)} |")
    return out + [""] + [f"- {md(note)}" for note in cal.notes] + ([""] if cal.notes else [])


def plan_stage3(result, dep, plan):
    k, batch = plan.k, plan.shown_batch
    gate_a, gate_r = plan.gate_alpha, plan.gate_rate
    out = ["## Stage 3: the gate", "", "Run the gate on what stages 0 to 2 wrote (exit 0: pass, 1: fail, 2: bad input). "
           "With `--calibrate` the model first fits your runs, and every number it then prints is your "
           "deployment's:", ""] + gate_command(dep, plan)
    if result.calibration is not None:
        out += plan_calibration(result.calibration)
    if result.gate is not None:
        g = result.gate
        out += [f"**Verdict at B={g.concurrency}, K={g.k}: {g.verdict.upper()}**", ""]
        out += [f"- {'pass' if r.passed else 'FAIL'}, {r.check}: {r.detail}" for r in g.reasons]
        return out + [""]
    if gate_a is None:
        return out + [f"At B={batch} and K={k} the round costs {1 + plan.eps:.2f} plain steps, more than the "
                      f"{k + 1} tokens a round can deliver: no acceptance pays. Do not enable speculation here.", ""]
    return out + [
        f"At B={batch}, K={k}: eps = {plan.eps:.3f}, so speculation pays only when the per-token alpha "
        f"is at least {gate_a:.3f}, that is an acceptance rate of at least {gate_r:.3f} "
        f"(tau >= {1 + plan.eps:.2f}).",
        f"Go on only if the measured rate is at least {plan.required_rate:.3f} "
        f"(break-even + {plan.margin:.2f}), per-token alpha {plan.required_alpha:.3f}."
        + (f" The round's cost is the model's, and at {INTERVAL_LEVEL:.0%} the break-even rate lies anywhere in "
           f"{plan.gate_rate_interval[0]:.3f}-{plan.gate_rate_interval[1]:.3f}: a rate under "
           f"{plan.gate_rate_interval[1] + plan.margin:.3f} needs stage 1's benchmark pair to decide, and without it "
           "the gate answers too close to call." if plan.gate_rate_interval else "")
        if plan.required_rate is not None else
        f"Break-even + {plan.margin:.2f} is a rate above 1: no measurement can pass the gate here.",
        "",
        f"The lesson's rule \"alpha >= {LESSON_RULE}\" names no unit. " + lesson_rule_sentence(plan),
        ""]


def plan_stage4(dep, plan):
    t = {row.concurrency: row for row in plan.tail}.get(plan.shown_batch)
    if t is None:
        return []
    alike = t.tpot_spec_p99_alike_ms
    return [
        "## Stage 4: watch the tail", "",
        "Three latencies, easy to confuse. `p99_tpot_ms` is across requests, each request's decode time over",
        "its tokens: it rises when some requests accept badly, whatever the mean does. The benchmark's ITL is",
        "per streamed chunk, and a round's accepted tokens arrive in one chunk, so `p99_itl_ms` is a round's",
        "time. Per-token ITL (a round's time split over its tokens) is what the rounds themselves look like.",
        "",
        f"- expected `p99_tpot_ms` at B={plan.shown_batch}: {t.tpot_plain_p99_ms:.2f} ms plain, "
        f"{t.tpot_spec_p99_ms:.2f} ms with speculation ({pct(t.tpot_p99_change)}), mean TPOT "
        f"{t.tpot_plain_mean_ms:.2f} ({span(t.tpot_plain_mean_interval_ms, 1)}) -> {t.tpot_spec_mean_ms:.2f} "
        f"({span(t.tpot_spec_mean_interval_ms, 1)}) ms at {INTERVAL_LEVEL:.0%}, if requests' alpha spreads by s.d. "
        f"{t.alpha_spread:g} around {plan.request_alpha:.2f}"
        + (f" ({alike:.2f} ms if every request accepted alike)" if alike else "") + ";",
        f"- the requests at P99 TPOT accept at alpha {t.slow_alpha:.2f} on average: find them "
        + ("with stage 2's per-request acceptance" if dep.engine.per_request_acceptance
           else "by measuring acceptance per route")
        + ", and route or retrain for them, not for the mean;",
        f"- expected `p99_itl_ms` (per chunk, one round): {t.round_itl_spec_p99_ms:.2f} ms against "
        f"{t.itl_plain_p99_ms:.2f} ms plain; per-token ITL P99 {t.itl_spec_p99_ms:.2f} ms "
        f"({pct(t.p99_change)}), from the {t.zero_accept_token_share * 100:.1f}% of tokens whose rounds "
        f"accepted nothing and cost {1 + t.eps_eff:.2f} plain steps each;",
        f"- the lesson's two-pass reroll (P99 TPOT {t.tpot_spec_two_pass_p99_ms:.2f} ms, "
        f"{pct(t.tpot_p99_change_two_pass)}) is not what {dep.engine.name} runs: a rejected draft "
        "ends the round inside the verify pass already run, and the round's last token comes from that pass.",
        "",
        "Kill switch: turn speculation off if acceptance falls below the break-even of the dashboard below, or "
        "`p99_itl_ms` or `p99_tpot_ms` exceeds baseline by more than your latency budget.",
        ""]


def plan_dashboard(dep, plan):
    """What to watch live on each engine, and the kill-switch alert at this run's break-even (ENGINE_PLANS)."""
    return ["## Live dashboard", ""] + ENGINE_PLANS[dep.engine.key].dashboard(dep, plan)


def plan_next(dep, plan):
    k, batch = plan.k, plan.shown_batch
    engine = dep.engine
    if not engine.per_position_why:
        depth = (f"- the per-position rates: if late positions fall off, a K below {k} wastes less;" if k > 1 else
                 "- the per-position rates at K = 2 and 3, to see whether a longer draft would pay at lower load;")
    else:
        others = " and ".join(str(kk) for kk in (k - 1, k + 1) if kk >= 1)
        depth = f"- the acceptance length at K = {others} against K = {k}: {engine.per_position_why}, so a K " \
                "sweep shows whether late " \
                "positions pay;"
    return [
        "## What to measure next", "",
        "- acceptance per traffic domain (chat, code, ...): one weak domain can pull the blend under the gate;",
        depth,
        f"- P99 TPOT and P99 ITL at B={batch} and at the batch sizes you actually run, against baseline;",
        f"- the batch size where the measured alpha meets the break-even table above: {engine.off_past}.",
        ""]


def render_plan(result, dep):
    """outputs/skill-eagle3-rollout.md: the staged rollout plan, every number from this run."""
    plan = result.plan
    if result.facts.max_concurrency < 1:
        return "\n".join(plan_front(result, dep, plan) + [
            "## Nothing fits", "",
            f"The weights ({static_bytes(dep) / GIB:.0f} GiB with the draft's) and the KV cache of one sequence of "
            f"{dep.context} tokens do not fit in the {result.facts.memory_budget_bytes / GIB:.0f} GiB "
            f"{dep.engine.name} gives them ({memory_setting(dep)}), so no command here could run. More "
            "GPUs (`--tp`), smaller weights (`--weights-dtype fp8` or `fp4`), an fp8 KV cache (`--kv-dtype fp8`) or a "
            "larger memory share would: run this program again with them.", ""])
    out = (plan_front(result, dep, plan) + plan_stage0(dep, plan) + plan_stage1(dep, plan)
           + plan_predicted_runs(result, dep) + plan_k_by_batch(plan, dep))
    if can_serve(dep):   # stages 2 to 4 measure a server that stage 1 started
        out += plan_stage2(result, dep, plan) + plan_stage3(result, dep, plan)
        out += plan_stage4(dep, plan) + plan_dashboard(dep, plan)
    else:
        out += ["## Stages 2 to 4", "", "Measuring acceptance, the gate and the tail watch need the server of stage 1: "
                "run this program again once it has a head to serve.", ""]
    out += ["## When not to use speculation here", ""] + plan_when_not(plan)
    if result.mix:
        out += [""] + plan_mix(result.mix, dep)
    out += [""] + plan_next(dep, plan)
    return "\n".join(out)


# ---------------------------------------------------------------- rendering: JSON
def clean(value):
    """JSON-safe value: a record as a dict of its fields in order (less NOT_IN_JSON ones, and OPTIONAL or shown_with
    ones that hold nothing), floats rounded, inf/NaN as null."""
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: clean(getattr(value, f.name)) for f in fields(value) if shown_in_json(value, f)}
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def shown_in_json(record, f):
    """Whether --json shows the record's field f (its metadata: NOT_IN_JSON, OPTIONAL, shown_with)."""
    meta = f.metadata
    if not meta.get("json", True):
        return False
    if meta.get("optional") and getattr(record, f.name) is None:
        return False
    return "shown_with" not in meta or getattr(record, meta["shown_with"]) is not None


def render_json(result, dep, grid):
    """--json: the deployment, then the run's records as clean() shows them, then the summary's sentences."""
    deployment = dict(engine=dep.engine.key, model=dep.model, gpu=dep.gpu, tp=dep.tp, ep=dep.ep,
                      weights_dtype=dep.weights_dtype,
                      kv_dtype=dep.kv_dtype, context=dep.context, draft=dep.draft, draft_model=draft_head(dep)[0],
                      draft_trained_context=draft_head(dep)[1],
                      gpu_memory_gib=dep.memory_gib, gpu_memory_utilization=dep.memory_fraction,
                      gpu_memory_utilization_of=("memory free after the weights"
                                                 if dep.engine.memory_of_free else "all memory"),
                      memory_setting=memory_setting(dep), memory_budget_bytes=result.facts.memory_budget_bytes,
                      gpu_bandwidth_tbs=dep.bandwidth_tbs,
                      gpu_tflops=dep.target.tflops,
                      target_params=dep.target.held_params, active_params=dep.target.active_params,
                      experts=dep.target.experts or None, experts_per_token=dep.target.experts_per_token or None,
                      routing_exponent=dep.target.routing_exponent if dep.target.experts else None,
                      draft_topk=dep.topk, verify_tokens=dep.verify_tokens,
                      draft_params=dep.drafter.held_params,
                      weight_bytes=dep.target.held_bytes,
                      draft_weight_bytes=dep.drafter.held_bytes,
                      kv_bytes_per_token=dep.target.kv_bytes_per_token, kv_copies=kv_copies(dep.target, dep),
                      dp_attention=dep.dp_attention,
                      max_concurrency=result.facts.max_concurrency, input_tokens=dep.input_tokens,
                      output_tokens=dep.output_tokens, engine_era=dep.era.key,
                      engine_releases=era_releases(dep.engine, dep.era),
                      era_saving_ms=dep.era.saving_ms(draft_kind(dep.draft), dep.topk),
                      plain_step_b1=result.facts.plain_b1,
                      plain_step_ms_b1=result.plan.plain_ms_b1)
    data = dict(deployment=deployment, interval_level=result.trust.level, trust=result.trust, cells=result.cells,
                breakeven=result.breakeven, best_k=result.best_k, plan=result.plan, mix=result.mix)
    for key in ("measured", "gate", "exercises", "calibration"):   # the JSON's keys, in order, where there is one
        if getattr(result, key) is not None:
            data[key] = getattr(result, key)
    if result.benches:
        data["predicted_benches"] = [dict(name=pb.name, k=pb.k, alpha=pb.alpha, running_cap=pb.cap,
                                          interval_sd_log=pb.sd, result=pb.result, intervals=pb.intervals)
                                     for pb in result.benches]
    if result.comparisons:
        data["compare"] = [dict(path=str(path), k=pb.k, alpha=pb.alpha, notes=notes,
                                keys=[dict(key=key, predicted=value, interval=bounds, measured=seen, error=error,
                                           inside=bounds[0] <= seen <= bounds[1])
                                      for key, value, bounds, seen, error in rows])
                           for path, pb, rows, notes in result.comparisons]
    data["summary"] = summary_facts(result, grid, dep)
    return json.dumps(clean(data), indent=1) + "\n"


# ---------------------------------------------------------------- rendering: benchmark files
PREDICTION_KEY = "eagle3_rollout_prediction"   # the key that marks a file as this tool's prediction, not a run


def render_bench_file(pb, dep):
    """A predicted file's text: vLLM's keys (bench_result), then under PREDICTION_KEY what made it and the
    intervals (vllm bench serve --metadata adds keys alike, so its readers take the file as it is)."""
    note = {"predicted": True, "by": "eagle3-rollout code/main.py", "k": pb.k, "alpha": pb.alpha,
            "running_cap": pb.cap, "peak_running": pb.peak_running, "scheduler_steps": pb.steps,
            "step_token_budget": step_budget(dep), "mixes_prefill": dep.engine.mixes_prefill,
            "output_spread": pb.workload.output_spread, "interval_level": INTERVAL_LEVEL, "interval_sd_log": pb.sd,
            "intervals": pb.intervals}
    return json.dumps({**pb.result, PREDICTION_KEY: note}, indent=1, allow_nan=False) + "\n"


BENCH_COLUMNS = (("file", 22, "s"), ("out tok/s", 9, ".0f"), ("TPOT ms", 8, ".2f"), ("P99", 7, ".2f"),
                 ("TTFT ms", 8, ".0f"), ("P99", 7, ".0f"), ("ITL P99", 8, ".2f"),
                 (f"tok/s {INTERVAL_LEVEL:.0%} range", 16, ""))


def bench_row(pb):
    """One predicted file as a line of render_benches."""
    r = pb.result
    low, high = pb.intervals["output_throughput"]
    cells = [pb.name, r["output_throughput"], r["mean_tpot_ms"], r["p99_tpot_ms"], r["mean_ttft_ms"],
             r["p99_ttft_ms"], r["p99_itl_ms"], f"{low:.0f}-{high:.0f}"]
    return " ".join(f"{value:>{width}{form}}" if form else f"{value:>{width}}"
                    for value, (_, width, form) in zip(cells, BENCH_COLUMNS))


def render_benches(benches, folder):
    """--predict-bench: a line per file written, then what the files assume."""
    header = " ".join(f"{name:>{width}}" for name, width, _ in BENCH_COLUMNS)
    lines = [f"== Predicted `vllm bench serve` files, written to {folder} ==", header, "-" * len(header)]
    lines += [bench_row(pb) for pb in benches]
    caps = sorted({(pb.k > 0, pb.cap) for pb in benches})
    lines += wrap(f"Each file is a simulated run, step by step: the server runs at most "
                  + ", ".join(f"{cap} sequences {'with' if spec else 'without'} speculation" for spec, cap in caps)
                  + "; prompts prefill in chunks beside the decodes or, where the engine runs prefill alone, before "
                  "them; every number carries the interval of a mean TPOT (its s.d. in the file).", 100, "")
    return lines + [""]


def compare_rows(predicted, measured):
    """(key, predicted, interval, measured, relative error) for every key the two files both give a number for."""
    rows = []
    for key, value in predicted.result.items():
        seen = measured.get(key)
        if key in predicted.intervals and finite_number(seen) and finite_number(value) and seen > 0:
            rows.append((key, value, predicted.intervals[key], float(seen), value / seen - 1.0))
    return rows


def render_compare(comparisons):
    """--compare: each measured file's keys beside the prediction of its own run."""
    lines = []
    for path, pb, rows, notes in comparisons:
        lines += [f"== {path}: predicted for its own run (concurrency {pb.workload.max_concurrency or 'open'}, "
                  f"{pb.workload.num_prompts} prompts, {pb.workload.input_tokens}/{pb.workload.output_tokens} "
                  f"tokens, {'K = ' + str(pb.k) if pb.k else 'speculation off'}) ==",
                  f"{'key':<24} {'predicted':>11} {f'{INTERVAL_LEVEL:.0%} range':>21} {'measured':>11} {'error':>8}  "
                  "inside",
                  "-" * 86]
        for key, value, (low, high), seen, error in rows:
            lines.append(f"{key:<24} {value:>11.2f} {low:>10.2f}-{high:<10.2f} {seen:>11.2f} {error * 100:>+7.1f}%  "
                         f"{'yes' if low <= seen <= high else 'no'}")
        errors = sorted(abs(row[4]) for row in rows)
        inside = sum(row[2][0] <= row[3] <= row[2][1] for row in rows)
        lines += [f"median |error| {percentile(errors, 0.5) * 100:.1f}%, worst {errors[-1] * 100:.1f}%; "
                  f"{inside} of {len(rows)} inside their range" if rows else "no key to compare"]
        lines += [line for note in notes for line in wrap("note: " + note, 100, "  ")] + [""]
    return lines


# ---------------------------------------------------------------- rendering: SVG charts
# Hand-written SVG (it is text): fixed size, fixed number formats, so the same run gives
# the same bytes. Lines differ in colour lightness and in dash pattern, so they stay
# apart in greyscale.
CHART_SIZE = (760, 460)                             # width, height in px
PLOT_BOX = (72, 54, 560, 380)                        # left, top, right, bottom of the plot area
LINE_STYLES = [("#111111", ""), ("#d95f02", "9 5"), ("#1f78b4", "2 4"), ("#33a02c", "12 4 3 4"),
               ("#6a3d9a", "6 3"), ("#a6761d", "1 2")]
CHART_FILES = {"speedup": "chart-speedup.svg", "best_k": "chart-best-k.svg", "itl": "chart-itl-cdf.svg"}


def xml_escape(text):
    """Text safe inside an XML element (xml.sax.saxutils.escape, without importing urllib with it)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg_text(x, y, text, size=13, anchor="start", extra=""):
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"{extra}>'
            f"{xml_escape(text)}</text>")


def svg_chart(title, x_label, y_label, x_axis, y_axis, series, markers=(), notes=(), drops=(), bands=()):
    """A line chart. x_axis, y_axis: (low, high, ticks, log?); series: (label, points, style index);
    markers: (x, y, label), labels alternately above and below; drops: (x, style index) vertical lines;
    bands: (low points, high points, style index), shaded between, clipped to the y axis."""
    width, height = CHART_SIZE
    left, top, right, bottom = PLOT_BOX

    def scale(value, axis, lo_px, hi_px):
        low, high, _, log = axis
        if log:
            value, low, high = math.log10(value), math.log10(low), math.log10(high)
        return lo_px + (value - low) / (high - low) * (hi_px - lo_px)

    sx = lambda x: scale(x, x_axis, left, right)
    sy = lambda y: scale(y, y_axis, bottom, top)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           svg_text(width / 2, 28, title, 16, "middle", ' font-weight="bold"')]
    for tick in x_axis[2]:
        x = sx(tick)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#e4e4e4"/>')
        out.append(svg_text(x, bottom + 18, f"{tick:g}", 12, "middle"))
    for tick in y_axis[2]:
        y = sy(tick)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        out.append(svg_text(left - 8, y + 4, f"{tick:g}", 12, "end"))
    out.append(f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" '
               'fill="none" stroke="#444444"/>')
    out.append(svg_text((left + right) / 2, bottom + 42, x_label, 13, "middle"))
    out.append(svg_text(18, (top + bottom) / 2, y_label, 13, "middle",
                        f' transform="rotate(-90 18 {(top + bottom) / 2:.1f})"'))
    for low, high, style in bands:
        colour = LINE_STYLES[style % len(LINE_STYLES)][0]
        clip = lambda y: min(max(y, y_axis[0]), y_axis[1])
        outline = [(x, clip(y)) for x, y in high] + [(x, clip(y)) for x, y in reversed(low)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in outline)
        out.append(f'<polygon class="band" points="{path}" fill="{colour}" fill-opacity="0.10" stroke="none"/>')
    for i, (label, points, style) in enumerate(series):
        colour, dash = LINE_STYLES[style % len(LINE_STYLES)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<polyline class="series" points="{path}" fill="none" stroke="{colour}" '
                   f'stroke-width="2.2"{dash_attr}/>')
        ly = top + 8 + 22 * i
        out.append(f'<line x1="{right + 14}" y1="{ly:.1f}" x2="{right + 50}" y2="{ly:.1f}" stroke="{colour}" '
                   f'stroke-width="2.2"{dash_attr}/>')
        out.append(svg_text(right + 56, ly + 4, label, 12))
    for x, style in drops:
        colour, dash = LINE_STYLES[style % len(LINE_STYLES)]
        out.append(f'<line x1="{sx(x):.1f}" y1="{top}" x2="{sx(x):.1f}" y2="{bottom}" stroke="{colour}" '
                   f'stroke-width="1"' + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
    for i, (x, y, label) in enumerate(markers):
        out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="4" fill="#ffffff" stroke="#111111" '
                   'stroke-width="1.5"/>')
        out.append(svg_text(sx(x) + 6, sy(y) + (-8 if i % 2 == 0 else 17), label, 11))
    for i, note in enumerate(notes):
        out.append(svg_text(left, bottom + 62 + 15 * i, note, 11))
    return "\n".join(out + ["</svg>", ""])


def nice_step(span, target=6):
    """A 1-2-5 tick step giving about `target` ticks over span."""
    raw = span / target
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def ticks(low, high, step):
    return [round(low + i * step, 10) for i in range(int((high - low) / step + 1e-9) + 1)]


def render_speedup_chart(charts, dep):
    data = charts
    top = max([1.5] + [max(y for _, y in c.points) for c in data.curves])
    step = nice_step(top)
    y_high = step * math.ceil(top / step)
    series = [(f"B = {c.concurrency} (eps {c.eps:.2f})", c.points, i) for i, c in enumerate(data.curves)]
    series.append(("speedup 1.0", [(0.0, 1.0), (1.0, 1.0)], 5))
    markers = [(c.breakeven, 1.0, f"{c.breakeven:.2f}") for c in data.curves if c.breakeven is not None]
    notes = [f"{dep.model} on {dep.tp} x {dep.gpu}, draft {dep.draft}; circles: break-even alpha."]
    bands = []
    if data.speedup_sd is not None:
        spread = math.exp(Z_INTERVAL * data.speedup_sd)
        bands = [([(x, y / spread) for x, y in c.points], [(x, y * spread) for x, y in c.points], i)
                 for i, c in enumerate(data.curves)]
        notes.append(f"Shaded: the {INTERVAL_LEVEL:.0%} range of each curve ({ratio_span(data.speedup_sd)}), "
                     "the model's own error.")
    if data.left_out:
        notes.append("Left out, KV cache does not fit: B = " + ", ".join(map(str, data.left_out)) + ".")
    return svg_chart(f"Speedup against per-token alpha, K = {data.k}", "per-token acceptance alpha",
                     "speedup over plain decoding (x)", (0.0, 1.0, ticks(0, 1, 0.1), False),
                     (0.0, y_high, ticks(0, y_high, step), False), series, markers, notes, bands=bands)


def render_best_k_chart(charts, dep):
    data = charts
    limit = max(data.limit, 2)
    x_ticks = [2 ** i for i in range(int(math.log2(limit)) + 1)]
    series, markers = [], []
    for i, c in enumerate(data.steps):
        offset = 0.06 * (i - 1)            # keeps steps that coincide visible
        points = []
        for lo, hi, k in c.schedule:
            points += [(lo, k + offset), (hi, k + offset)]
        series.append((f"alpha {c.alpha:.2f}", points or [(1, offset), (1, offset)], i))
        if c.zero_at is not None:
            markers.append((c.zero_at, 0 + offset, f"off at {c.zero_at}"))
    notes = [f"{dep.model} on {dep.tp} x {dep.gpu}, context {dep.context}; batch sizes up to the "
             f"{data.limit} that fit in memory.", "K = 0: speculation off. Lines drawn 0.06 apart where they coincide."]
    return svg_chart("Best draft length K against batch size", "concurrency B (sequences, log scale)",
                     "best K (0 = off)", (1, limit, x_ticks, True), (-0.3, K_MAX + 0.3, list(range(K_MAX + 1)), False),
                     series, markers, notes)


def render_itl_chart(charts, dep):
    data = charts.itl
    if data is None:
        return svg_chart("Per-token ITL distribution", "ms", "share of tokens", (0, 1, [0, 1], False),
                         (0, 1, [0, 1], False), [], notes=["No concurrency in the grid fits in memory."])
    names = {"plain": "plain", "spec": "spec", "two_pass": "two-pass"}
    series = [(f"{names[n]}: P99 {getattr(data.p99, n):.1f} ms", getattr(data.cdf, n), i) for i, n in enumerate(names)]
    series.append(("share 0.99", [(0.0, 0.99), (data.x_max, 0.99)], 5))
    markers = [(getattr(data.p99, n), 0.99, f"{getattr(data.p99, n):.1f}") for n in names]
    step = nice_step(data.x_max)
    notes = [f"B = {data.concurrency}, alpha {data.alpha:.2f}, K = {data.k}. Per-token ITL: a round's time "
             "split over its tokens. spec: rejection", "sampling as vLLM runs it; two-pass: the lesson's model. "
             "Thin vertical lines: each model's P99."]
    return svg_chart("Per-token inter-token latency, cumulative", "per-token ITL (ms)", "share of tokens at or below",
                     (0.0, data.x_max, ticks(0, data.x_max, step), False),
                     (0.0, 1.0, ticks(0, 1, 0.1), False), series, markers, notes,
                     drops=[(getattr(data.p99, n), i) for i, n in enumerate(names)])


def render_charts(result, dep):
    """{file name: SVG text} for the three charts."""
    charts = result.charts
    return {CHART_FILES["speedup"]: render_speedup_chart(charts, dep),
            CHART_FILES["best_k"]: render_best_k_chart(charts, dep),
            CHART_FILES["itl"]: render_itl_chart(charts, dep)}

# ---------------------------------------------------------------- reading measurements
# vLLM's Prometheus counters, SGLang's gauges and `vllm bench serve --save-result` JSON
# (REFERENCE.md section 5). Files are checked here, at the boundary; a bad one raises
# UsageError. What real files look like, by vLLM version: V0 (removed in v0.10.0) had
# draft and accepted token counters and two gauges; V1 from PR #15151 the two counters;
# from PR #16665 (~v0.8.5) also num_drafts and accepted tokens per position; from PR
# #24049 an `engine` label per data-parallel engine; newer builds also drafted tokens per
# position. prometheus_client writes X_total beside X_created, in exponent notation.
COUNT_SLACK = 1e-4   # relative slack between counts that must agree: exponent notation keeps six digits
                     # (1.7644e+09), and counters scraped a moment apart can drift a little further
K_SHORTFALL = 0.02   # draft tokens a round may fall short of K on average and K still count as fixed: a
                     # request's last rounds near its length limit, or draft tokens a grammar rejected
                     # (vLLM's num_invalid_spec_tokens), draft fewer; at most that share of drafts missed a
                     # position, so its true rate is at most K_SHORTFALL / (1 - K_SHORTFALL) above the shown


# Bounds on what is read and asked: far past any real deployment, and small enough that nothing sized by
# them can hang or exhaust memory. A value past one is refused with the bound named.
SCRAPE_LIMIT_BYTES = 64 << 20   # a /metrics scrape, read a line at a time
SCRAPE_LINE_LIMIT = 500_000     # lines of one scrape (a server's page has a few thousand): a few seconds to read
LINE_LIMIT_BYTES = 64 << 10     # one line of a scrape: a sample with its labels is well under 1 KiB
BENCH_LIMIT_BYTES = 16 << 20    # a `vllm bench serve` result (a few kB; --save-detailed adds per-request lists)
CONFIG_LIMIT_BYTES = 4 << 20    # a config.json (tens of kB); parsed JSON takes up to ~20 times its file
COUNT_LIMIT = 1e18              # a counter's value: a million years of a server making 30,000 tokens a second
LAYER_LIMIT = 1024              # layers in a config.json (the largest released models have 126)
SIZE_LIMIT = 1 << 22            # any other size in a config.json: widths, heads, vocabulary, experts
CONCURRENCY_LIMIT = 100_000     # a batch size or a benchmark's concurrency
TOKENS_LIMIT = 10_000_000       # a prompt, output or context length (Llama 4 Scout's context is 10M tokens)
TP_LIMIT = 1024                 # GPUs in one tensor-parallel group
EPS_LIMIT = 100.0               # a given verify overhead: a round as long as 101 plain steps
GRID_PAIR_LIMIT = 200           # (acceptance, K) pairs in one run's grid, each simulated: 1 to 15 s on 2 cores
GRID_CELL_LIMIT = 5_000         # cells in one run's grid (pairs x overheads x concurrencies): about 2 s too
GPU_RANGES = dict(memory_gib=(1, 100_000), bandwidth_tbs=(0.01, 1_000), tflops=(1, 1_000_000))   # GiB, TB/s, TFLOP/s


class UsageError(ValueError):
    """Bad input, a flag or a file: the message names it, what it allows and what it got."""


SPEC_COUNTERS = {   # vllm/v1/spec_decode/metrics.py; the emitted-tokens counter is V0's (vllm/engine/metrics.py)
    "vllm:spec_decode_num_drafts_total": "drafts",
    "vllm:spec_decode_num_draft_tokens_total": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens_total": "accepted",
    "vllm:spec_decode_num_emitted_tokens_total": "emitted",
    # TensorRT-LLM's /prometheus/metrics (tensorrt_llm/metrics/collector.py): draft and accepted tokens summed over
    # its iteration stats; it counts no drafts (rounds), so --ks completes the measurement.
    "trtllm_spec_decode_num_draft_tokens_total": "draft_tokens",
    "trtllm_spec_decode_num_accepted_tokens_total": "accepted",
}
PER_POSITION_COUNTERS = {   # label position="i"
    "vllm:spec_decode_num_accepted_tokens_per_pos_total": "accepted",
    "vllm:spec_decode_num_draft_tokens_per_pos_total": "drafted",
}
SPEC_GAUGES = {
    "vllm:spec_decode_draft_acceptance_rate": "v0_rate",        # V0: accepted / draft tokens, a fraction
    "vllm:spec_decode_efficiency": "v0_efficiency",             # V0: emitted / the most a round could emit
    "sglang:spec_accept_length": "sglang_length",               # SGLang: tau over the last SGLANG_GAUGE_STEPS steps
    "sglang:spec_accept_rate": "sglang_rate",                   # (python/sglang/srt/metrics/collector.py)
}
# name{labels} value [timestamp] [# exemplar]: the Prometheus text format and OpenMetrics
# (whose timestamps are float seconds).
SAMPLE_LINE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?'
                         r'\s+(\S+)(?:\s+-?[0-9.]+(?:[eE][-+]?[0-9]+)?)?(?:\s+#.*)?$')
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
LABEL_SET = re.compile(r'\{\s*(?:[A-Za-z_][A-Za-z0-9_]*\s*=\s*"(?:[^"\\]|\\.)*"\s*(?:,\s*(?=[A-Za-z_}])|(?=\})))*\}')
MODEL_LIMIT = 1000   # models one scrape may hold speculative metrics for (a federated scrape of many servers)

@dataclass(frozen=True)
class Counters:
    """A scrape's speculative-decoding metrics for one model (read_metrics), or a window between two scrapes.
    Counts are sums over the other labels (data-parallel engines); None where the scrape has no such counter (a
    missing counter is not zero)."""
    drafts: float            #: drafts (rounds)
    draft_tokens: float      #: drafted tokens
    accepted: float          #: accepted draft tokens
    per_position: dict = field(default_factory=dict)   #: {position: accepted tokens}
    drafted_per_position: dict = field(default_factory=dict)   #: {position: drafted tokens}
    gauges: dict = field(default_factory=dict)   #: {SPEC_GAUGES value: mean over the label sets that report one, an
                                                 #: SGLang rank with no speculative step (0) left out}
    emitted: float = None    #: vLLM V0's emitted tokens
    engine: str = "vllm"     #: whose metrics: "vllm", or "trtllm" (SGLang's gauges tell themselves apart, is_sglang)


def one_average_draft(tau, k):
    """Counters of one average draft of K tokens: a measurement that gives tau at K but no counts
    (a gauge, a bench file's rate and length, a value typed on the command line)."""
    return Counters(drafts=1.0, draft_tokens=float(k), accepted=tau - 1.0)


ESCAPE = re.compile(r"\\(.)")


def label_values(labels):
    """{name: value} of a sample's labels, escapes undone (\\, \", \n)."""
    return {k: ESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), v) for k, v in LABEL.findall(labels or "")}


def too_large(flag, path, limit, hint=""):
    return UsageError(f"{flag}: {path} is larger than {limit >> 20} MiB{hint}: not a file this tool reads")


def open_input(path, flag, limit, hint=""):
    """An input file opened for reading bytes: a regular file, or a pipe (/dev/stdin, a process substitution).

    A folder, a device (/dev/zero would never end) or a file over `limit` bytes is refused before anything
    is read. A named pipe is opened without waiting for a writer (none: it reads as empty).
    """
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise UsageError(f"{flag}: {path} is a folder, not a file")
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode)):
            raise UsageError(f"{flag}: {path} is a device, not a file")
        if info.st_size > limit:
            raise too_large(flag, path, limit, hint)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(fd, True)
    except OSError as err:
        raise UsageError(f"{flag}: cannot read {path}: {err.strerror}") from None
    return os.fdopen(fd, "rb")


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")   # PowerShell's `>` writes UTF-16 with its byte-order mark


def not_text(flag, path, where):
    return UsageError(f"{flag}: {path} is not a text file ({where})")


def bad_utf16(flag, path):
    return UsageError(f"{flag}: {path} starts as UTF-16 but does not decode: re-save it as UTF-8 "
                      "(PowerShell: Out-File -Encoding utf8)")


def text_lines(path, flag):
    """Yield (line number, text) one line at a time, never more than LINE_LIMIT_BYTES of one line nor
    SCRAPE_LINE_LIMIT lines: UTF-8 (a byte-order mark is dropped) or UTF-16 with its byte-order mark; binary is
    refused."""
    with open_input(path, flag, SCRAPE_LIMIT_BYTES) as file:
        utf16 = file.peek(2)[:2] in UTF16_BOMS
        text = io.TextIOWrapper(file, encoding="utf-16", newline=None) if utf16 else None
        number = size = 0
        while True:
            try:
                raw = text.readline(LINE_LIMIT_BYTES + 1) if utf16 else file.readline(LINE_LIMIT_BYTES + 1)
            except UnicodeError:
                raise bad_utf16(flag, path) from None
            if not raw:
                return
            number, size = number + 1, size + len(raw)
            if len(raw) > LINE_LIMIT_BYTES:
                raise UsageError(f"{flag}: {path}, line {number}, is longer than {LINE_LIMIT_BYTES >> 10} KiB: not a "
                                 "line of a /metrics scrape")
            if size > SCRAPE_LIMIT_BYTES:
                raise too_large(flag, path, SCRAPE_LIMIT_BYTES)
            if number > SCRAPE_LINE_LIMIT:
                raise UsageError(f"{flag}: {path} has more than {SCRAPE_LINE_LIMIT:,} lines: not one server's "
                                 "/metrics page")
            if utf16:
                yield number, raw
                continue
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if b"\0" in raw:
                raise not_text(flag, path, f"a NUL byte on line {number}")
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError:
                raise not_text(flag, path, f"not UTF-8 or UTF-16, line {number}") from None


def read_text(path, flag, limit, hint=""):
    """A whole input file as text, at most `limit` bytes, read in chunks (a pipe cannot seek): UTF-8 (a
    byte-order mark is dropped) or UTF-16 with its byte-order mark; a NUL byte outside UTF-16 stops it at once."""
    chunks, size = [], 0
    with open_input(path, flag, limit, hint) as file:
        while chunk := file.read(1 << 20):
            size += len(chunk)
            if size > limit:
                raise too_large(flag, path, limit, hint)
            if b"\0" in chunk and (chunks[0] if chunks else chunk)[:2] not in UTF16_BOMS:
                raise not_text(flag, path, "a NUL byte; UTF-16 without a byte-order mark? re-save it as UTF-8")
            chunks.append(chunk)
    raw = b"".join(chunks)
    if raw[:2] in UTF16_BOMS:
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            raise bad_utf16(flag, path) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise not_text(flag, path, f"not UTF-8 or UTF-16, line {line}") from None


def parse_json(text, flag, path):
    """JSON from text; UsageError naming the file when it is not JSON, nests too deep or holds a huge number."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"{flag}: {path} is not JSON ({err.msg}, line {err.lineno})") from None
    except RecursionError:
        raise UsageError(f"{flag}: {path} is JSON nested too deeply to be a result or a config") from None
    except ValueError as err:   # an integer of more digits than Python converts
        raise UsageError(f"{flag}: {path} is not JSON this tool reads ({err})") from None


# A sample's value as the exposition format writes it: ASCII digits (float() would also take "1_000" or Arabic
# digits), exponent notation, +Inf, -Inf, NaN.
PROM_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?Inf|NaN", re.IGNORECASE)


def sample_value(text, flag, path, number, counter=True):
    """A sample's value: a number, and for a counter a finite one from 0 to COUNT_LIMIT."""
    if not PROM_NUMBER.fullmatch(text):
        raise UsageError(f"{flag}: {path}, line {number}: counter value {shown(text)} is not a number")
    value = float(text)
    if counter and not 0 <= value <= COUNT_LIMIT:
        raise UsageError(f"{flag}: {path}, line {number}: a counter must be finite, >= 0 and at most {COUNT_LIMIT:g} "
                         f"(the limit of a real count); got {text!r}")
    return value


def read_metrics(path, flag):
    """{model_name: Counters} of a /metrics scrape's speculative-decoding metrics, in one streaming pass.

    Counters are summed over every other label (data-parallel engines); models are kept
    apart, since a router's or a federated scrape mixes servers.
    """
    models, samples, lines, sglang_seen, eof, seen = {}, 0, 0, False, False, set()

    def unreadable(number, line):   # before any sample: not a scrape at all; after: a broken one
        if samples == 0:
            return UsageError(f"{flag}: {path} is not the Prometheus exposition format (line {number}: "
                              f"{line[:40]!r}); save the page itself: curl -s http://HOST:PORT/metrics > FILE")
        return UsageError(f"{flag}: {path}, line {number}, is truncated or malformed: {line[:60]!r}")

    for number, line in text_lines(path, flag):
        lines += 1
        line = line.strip()
        if eof and line:
            raise UsageError(f"{flag}: {path}, line {number}: text after '# EOF': two scrapes in one file? Save each "
                             "scrape to its own file")
        if line == "# EOF":          # OpenMetrics ends here
            eof = True
        if not line or line.startswith("#"):
            continue
        match = SAMPLE_LINE.match(line)
        if not match:
            raise unreadable(number, line)
        name, labels, text = match.groups()
        if name not in SPEC_COUNTERS and name not in PER_POSITION_COUNTERS and name not in SPEC_GAUGES:
            try:
                float(text)
            except ValueError:   # a header such as the web UI table's "Element Value"
                raise unreadable(number, line) from None
        samples += 1
        sglang_seen = sglang_seen or name.startswith("sglang:")
        kind = SPEC_COUNTERS.get(name) or PER_POSITION_COUNTERS.get(name) or SPEC_GAUGES.get(name)
        if kind is None:
            continue
        if labels and (not LABEL_SET.fullmatch(labels) or len(LABEL.findall(labels)) != len(label_values(labels))):
            raise UsageError(f"{flag}: {path}, line {number}: {name} has a malformed label set {shown(labels)} "
                             '(name="value" pairs, each name once)')
        if (name, labels) in seen:
            raise UsageError(f"{flag}: {path}, line {number}: {name}{shown(labels or '')} appears twice: two scrapes "
                             "in one file (curl >>)? Save each scrape to its own file")
        seen.add((name, labels))
        label = label_values(labels)
        if label.get("model_name", "") not in models and len(models) >= MODEL_LIMIT:
            raise UsageError(f"{flag}: {path} holds speculative metrics of more than {MODEL_LIMIT} models: scrape "
                             "one server")
        entry = models.setdefault(label.get("model_name", ""), dict(totals={}, accepted={}, drafted={}, gauges={},
                                                                    trtllm=False))
        entry["trtllm"] = entry["trtllm"] or name.startswith("trtllm_")
        if name in SPEC_GAUGES:
            value = sample_value(text, flag, path, number, counter=False)
            if math.isfinite(value):
                entry["gauges"].setdefault(kind, [])
                if not kind.startswith("sglang") or value > 0:   # 0: that rank ran no speculative step
                    entry["gauges"][kind].append(value)
            continue
        value = sample_value(text, flag, path, number)
        if name in PER_POSITION_COUNTERS:
            position = label.get("position", "")
            if not re.fullmatch(r"[0-9]{1,4}", position) or int(position) >= K_LIMIT:
                raise UsageError(f"{flag}: {path}, line {number}: {name} needs a position label from 0 to "
                                 f"{K_LIMIT - 1} (a draft position; K is at most {K_LIMIT}); got {labels[:80]!r}")
            entry[kind][int(position)] = entry[kind].get(int(position), 0.0) + value
        else:
            entry["totals"][kind] = entry["totals"].get(kind, 0.0) + value
    if lines == 0:
        raise UsageError(f"{flag}: {path} is empty")
    if not models:
        if sglang_seen:
            raise UsageError(f"{flag}: {path} is an SGLang scrape without sglang:spec_accept_length: is "
                             "speculation on, and the server started with --enable-metrics?")
        raise UsageError(f"{flag}: {path} has no speculative-decoding counters (vllm:spec_decode_*, "
                         "trtllm_spec_decode_*): is speculative decoding on?")
    return {model: Counters(drafts=e["totals"].get("drafts"), draft_tokens=e["totals"].get("draft_tokens"),
                            accepted=e["totals"].get("accepted"), per_position=e["accepted"],
                            drafted_per_position=e["drafted"],
                            gauges={k: sum(v) / len(v) if v else 0.0 for k, v in e["gauges"].items()},
                            emitted=e["totals"].get("emitted"), engine="trtllm" if e["trtllm"] else "vllm")
            for model, e in models.items()}


def pick_model(scrape, served, flag, path):
    """(model name, Counters) of the one model the scrape measures, or the one --served-model names."""
    names = sorted(scrape)
    if served is not None:
        if served not in scrape:
            raise UsageError(f"{flag}: {path} has no speculative metrics for --served-model {served!r}; "
                             f"it has: {shown(names, 200)}")
        return served, scrape[served]
    if len(names) > 1:
        raise UsageError(f"{flag}: {path} holds speculative metrics of several models ({shown(names, 200)}): "
                         "pick one with --served-model")
    return names[0], scrape[names[0]]


def is_sglang(c):
    return "sglang_length" in c.gauges and c.drafts is None and c.draft_tokens is None


def counters_window(after, before, flags):
    """Counters over the window between two scrapes; a counter that fell means a restart (or swapped files)."""
    restart = "the server restarted between the scrapes, or the files are swapped"
    for name in ("drafts", "draft_tokens", "accepted", "emitted"):
        a, b = getattr(after, name), getattr(before, name)
        if (a is None) != (b is None):
            raise UsageError(f"{flags[0]}: {name} is in one scrape and not the other: not the same server version")
        if a is not None and a < b:
            raise UsageError(f"{flags[0]}: {name} fell from {b:g} in {flags[1]} to {a:g}: {restart}")
    per = {}
    for field in ("per_position", "drafted_per_position"):
        per[field] = {}
        for position, value in getattr(after, field).items():
            earlier = getattr(before, field).get(position, 0.0)
            if value < earlier:
                raise UsageError(f"{flags[0]}: tokens at position {position} fell between the scrapes: {restart}")
            per[field][position] = value - earlier
    difference = lambda name: None if getattr(after, name) is None else getattr(after, name) - getattr(before, name)
    # Gauges hold a value, not a count: the window is the later scrape's.
    return Counters(drafts=difference("drafts"), draft_tokens=difference("draft_tokens"),
                    accepted=difference("accepted"), per_position=per["per_position"],
                    drafted_per_position=per["drafted_per_position"], gauges=after.gauges,
                    emitted=difference("emitted"), engine=after.engine)


def profile_problem(c, k):
    """Why the per-position counts cannot be trusted, or None (they must cover positions 0..K-1, sum to the
    accepted total, and never rise with position: position i is accepted only where i-1 was)."""
    positions = c.per_position
    missing = [i for i in range(k) if i not in positions]
    if missing:
        return f"positions {', '.join(map(str, missing))} of 0..{k - 1} are missing"
    slack = max(1.0, COUNT_SLACK * c.accepted)
    total = sum(positions[i] for i in range(k))
    if abs(total - c.accepted) > slack:
        return f"they sum to {total:g}, not to the {c.accepted:g} accepted tokens"
    if positions[0] > c.drafts + slack:
        return f"position 0 accepted {positions[0]:g} tokens in {c.drafts:g} drafts"
    for i in range(1, k):
        if positions[i] > positions[i - 1] + slack:
            return f"position {i} accepted more ({positions[i]:g}) than position {i - 1} ({positions[i - 1]:g})"
    drafted = c.drafted_per_position
    if drafted:
        if abs(drafted.get(0, 0.0) - c.drafts) > max(1.0, COUNT_SLACK * c.drafts):
            return f"position 0 was drafted {drafted.get(0, 0.0):g} times in {c.drafts:g} drafts"
        if abs(sum(drafted.values()) - c.draft_tokens) > max(1.0, COUNT_SLACK * c.draft_tokens):
            return f"drafted tokens by position sum to {sum(drafted.values()):g}, not {c.draft_tokens:g}"
        for i in sorted(drafted)[1:]:
            if drafted[i] > drafted.get(i - 1, 0.0) + slack:
                return f"position {i} was drafted more often than position {i - 1}"
        for i, count in drafted.items():
            if positions.get(i, 0.0) > count + slack:
                return f"position {i} accepted {positions[i]:g} of {count:g} drafted"
    return None


def v0_drafts(c, source, k_given, notes, ask):
    """Counts without num_drafts (V0, V1 before 0.8.5): the drafts, from V0's emitted tokens or --ks.

    V0 emits the accepted tokens plus one per sequence a step, so drafts = emitted - accepted,
    and its efficiency gauge is emitted / ((K + 1) x drafts): when both agree the scrape
    fixes K and a different --ks is refused (vllm/engine/metrics.py, spec_decode metrics).
    """
    rate = c.accepted / c.draft_tokens
    if c.emitted is not None and c.emitted > c.accepted:
        drafts = c.emitted - c.accepted
        k = c.draft_tokens / drafts
        efficiency = c.gauges.get("v0_efficiency")
        agrees = efficiency is None or abs(c.emitted / ((round(k) + 1) * drafts) - efficiency) <= 0.02 * efficiency
        if abs(k - round(k)) <= COUNT_SLACK * k and agrees:
            if k_given is not None and k_given != round(k):
                raise UsageError(f"{source}: --ks {k_given} disagrees with the scrape: vLLM V0's counters give "
                                 f"{drafts:g} drafts (emitted - accepted) of {round(k)} tokens")
            notes.append(f"vLLM V0: drafts = emitted - accepted tokens = {drafts:g}, so K = {round(k)}"
                         + (" (its efficiency gauge agrees)" if efficiency is not None else ""))
            return replace(c, drafts=drafts), round(k)
    if k_given is None:
        raise UsageError(f"{source}: has no vllm:spec_decode_num_drafts_total: vLLM V0 and V1 before 0.8.5 do not "
                         f"export it (PR #16665). Its acceptance rate is {rate:.3f}; {ask}, the server's "
                         "num_speculative_tokens, to complete the measurement")
    notes.append(f"no num_drafts counter (vLLM before 0.8.5): drafts = draft tokens / K, with K = {k_given} "
                 "from --ks")
    return replace(c, drafts=c.draft_tokens / k_given, per_position={}, drafted_per_position={}), k_given


def measured_acceptance(c, source, k_given=None, notes=(), k_known=None, counted=True, width=None):
    """The three alphas, per-position rates and conditional alphas from counts (REFERENCE.md section 1).

    K is the highest position exported plus one (vLLM creates a per-position counter for
    each of num_speculative_tokens positions), not the rounded mean draft length. When the
    mean is more than K_SHORTFALL below K the rounds drafted different lengths: a
    K-by-batch-size table, or an n-gram drafter that found fewer matches. Position i's count
    over all drafts then mixes rounds that drafted i with rounds that could not, so without
    drafted-per-position counts only position 0 measures a clean per-token alpha (every
    round drafts a token).
    k_given: the one --ks value, which completes a scrape that cannot tell K; k_known: the K
    of per-position counters that were dropped before this (read_scrapes); counted: whether c
    holds real counts (else one_average_draft, and the drafts are not known); width: the tokens a tree's round
    drafts per sequence (its verify tokens - 1), None for a chain.
    """
    notes = list(notes)
    ask = "give one --ks value" if k_given is None else None
    if c.drafts is None and "v0_efficiency" in c.gauges:
        notes.append(f"vLLM V0's gauges, lifetime values at the scrape: draft acceptance rate "
                     f"{c.gauges.get('v0_rate', float('nan')):.3f}, system efficiency {c.gauges['v0_efficiency']:.3f}")
    if is_sglang(c):
        tau, rate = c.gauges["sglang_length"], c.gauges.get("sglang_rate", 0.0)
        if rate > 1.0:
            raise UsageError(f"{source}: sglang:spec_accept_rate is {rate:g}, not a fraction in [0, 1]")
        if tau < 1.0:
            raise UsageError(f"{source}: sglang:spec_accept_length is {tau:g} on every rank: no speculative step in "
                             "the gauge's window (an idle server?); scrape under traffic")
        # Both gauges are set together over the same steps: (tau - 1) / rate is the tokens a round drafts (SGLang
        # PR #23530: accepted drafts over rounds x (num_draft_tokens - 1)), K for a chain, the tree's width else.
        implied = (tau - 1.0) / rate if rate > 0 else None
        if width is not None:
            implied = None   # a tree's gauges give its width, not K: the steps come from --ks
        if implied is not None and 0.5 <= implied < K_LIMIT + 0.5 and abs(implied - round(implied)) < 0.05:
            if k_given is not None and k_given != round(implied):
                raise UsageError(f"{source}: --ks {k_given} disagrees with the scrape, whose gauges give K = "
                                 f"(accept length - 1) / accept rate = {implied:.2f}")
            if k_given is None:
                notes.append(f"K = {round(implied)} from the gauges: (accept length - 1) / accept rate")
            k_given = round(implied)
        if k_given is None:
            raise UsageError(f"{source}: an SGLang scrape: sglang:spec_accept_length is {tau:.3f}; {ask} "
                             "(its --speculative-num-steps) to turn it into a per-token alpha")
        if tau > k_given + 1.0 + 1e-9:
            raise UsageError(f"{source}: sglang:spec_accept_length {tau:.3f} is more than K + 1 = {k_given + 1}: "
                             "--ks is not the server's --speculative-num-steps, or the draft is a tree (topk > 1)")
        notes.append(f"sglang:spec_accept_length is a gauge over the last {SGLANG_GAUGE_STEPS} decode steps at the "
                     "scrape; average it over time (avg_over_time) for a steadier figure")
        c, counted = one_average_draft(tau, k_given), False
    if c.draft_tokens is None and c.accepted is None and "v0_rate" in c.gauges:
        rate = c.gauges["v0_rate"]
        if not 0.0 <= rate <= 1.0:
            raise UsageError(f"{source}: vllm:spec_decode_draft_acceptance_rate is {rate:g}, not a fraction in [0, 1]")
        if k_given is None:
            raise UsageError(f"{source}: only vLLM V0's gauges: acceptance rate {rate:.3f}; {ask} "
                             "(num_speculative_tokens) to complete the measurement")
        notes.append("read from vLLM V0's gauge vllm:spec_decode_draft_acceptance_rate, its value at the scrape")
        c, counted = one_average_draft(1.0 + rate * k_given, k_given), False
    for name, counter in (("draft_tokens", "vllm:spec_decode_num_draft_tokens_total"),
                          ("accepted", "vllm:spec_decode_num_accepted_tokens_total")):
        if getattr(c, name) is None:
            raise UsageError(f"{source}: has no {counter} sample; a missing counter is not zero")
    if c.draft_tokens <= 0:
        raise UsageError(f"{source}: no drafts were made (draft tokens = {c.draft_tokens:g}): nothing to measure")
    if c.drafts is None and c.per_position:
        raise UsageError(f"{source}: has per-position counters (vLLM 0.8.5 or later) but no "
                         "vllm:spec_decode_num_drafts_total sample; a missing counter is not zero (a partial scrape?)")
    if c.drafts is None and c.engine == "trtllm":
        if k_given is None:
            raise UsageError(f"{source}: TensorRT-LLM counts draft and accepted tokens but not drafts; {ask} (its "
                             "max_draft_len) to complete the measurement")
        per_round = width or k_given   # tokens each iteration drafts per request: max_draft_len, or the tree's
        notes.append(f"TensorRT-LLM counts no drafts: each round drafted {per_round} tokens a request "
                     f"({'the tree' if width else '--ks'}), so drafts = draft tokens / {per_round}")
        c = replace(c, drafts=c.draft_tokens / per_round)
        if width:   # a tree's tau, as one average draft of its K steps
            tau = 1.0 + c.accepted / c.drafts
            if tau > k_given + 1.0 + 1e-9:
                raise UsageError(f"{source}: the counts give an acceptance length of {tau:.3f} for a tree of "
                                 f"{per_round} drafted tokens, more than its {k_given} steps + 1: --ks is not its "
                                 "max_draft_len, or --verify-tokens not its tree")
            c, counted = one_average_draft(tau, k_given), False
    if c.drafts is None:
        c, k_given = v0_drafts(c, source, k_given, notes, ask)
    if c.drafts < 1 or c.draft_tokens < 1:
        raise UsageError(f"{source}: fewer than one draft was made (drafts = {c.drafts:g}, draft tokens = "
                         f"{c.draft_tokens:g}): nothing to measure")
    k_mean = c.draft_tokens / c.drafts
    whole = -COUNT_SLACK * k_mean <= round(round(k_mean) - k_mean, 9) <= K_SHORTFALL   # 9 places: 3 - 2.98 > 0.02
    if c.per_position:
        k = max(c.per_position) + 1
    elif k_known is not None:
        k = k_known
    elif whole:
        k = round(k_mean)
    else:
        raise UsageError(f"{source}: rounds drafted {k_mean:.3f} tokens on average and the scrape has no "
                         "per-position counters: the K in use cannot be told")
    if not 1 <= k <= K_LIMIT:
        raise UsageError(f"{source}: the counters give K = {k} ({c.draft_tokens:g} draft tokens over {c.drafts:g} "
                         f"drafts); this tool reads K from 1 to {K_LIMIT}")
    if c.accepted > c.draft_tokens or k_mean > k * (1 + COUNT_SLACK):
        raise UsageError(f"{source}: counters are inconsistent: {c.draft_tokens:g} draft tokens over {c.drafts:g} "
                         f"drafts and {c.accepted:g} accepted")
    tau = 1.0 + c.accepted / c.drafts
    shortfall = round(k - k_mean, 9)   # draft tokens a round drafted fewer than K, on average
    varying = shortfall > K_SHORTFALL
    if COUNT_SLACK * k < shortfall <= K_SHORTFALL:
        bound = f"; a position's true rate is at most {shortfall / (1 - shortfall) * 100:.1f}% above the one shown" \
            if c.per_position and not c.drafted_per_position else ""
        notes.append(f"rounds drafted {k_mean:.3f} tokens on average against K = {k}, {shortfall:.3f} short (a "
                     "request's last rounds near its length limit, or draft tokens a grammar rejected): K is taken "
                     "as fixed" + bound)
    problem = profile_problem(c, k) if c.per_position else None
    rates, conditional = [], []
    if c.per_position and problem is None:
        for i in range(k):
            drafted = c.drafted_per_position.get(i, c.drafts) if c.drafted_per_position else c.drafts
            if drafted <= 0:
                break
            rates.append(c.per_position[i] / drafted)
        conditional = [r / prev if prev > 0 else 0.0 for r, prev in zip(rates, [1.0] + rates)]
    elif problem:
        notes.append(f"per-position counters dropped ({problem}); the acceptance rate and length are used")
    clean_profile = bool(conditional) and (not varying or bool(c.drafted_per_position))
    if clean_profile:
        profile = conditional
        # Rates over the drafts that reached each position give the full-K tau; else the measured one.
        full_k = bool(c.drafted_per_position)   # a varying K has them, or its profile is not clean
        alpha = alpha_from_length(profile_length(conditional, k) if full_k else min(tau, k + 1.0), k)
    elif varying and rates:
        alpha, profile = rates[0], [rates[0]]
        notes.append(f"rounds drafted {k_mean:.2f} tokens on average against K = {k}, so K varied: alpha is "
                     "position 0's rate, the same whatever K a round used")
    elif varying:
        raise UsageError(f"{source}: rounds drafted {k_mean:.2f} tokens on average against K = {k} and the "
                         "per-position counters are missing or fail their checks: no per-token alpha can be measured")
    else:
        alpha = alpha_from_length(min(tau, k + 1.0), k)
        profile = [alpha]
    return Measurement(k=k, k_mean=k_mean, varying_k=varying, drafts=c.drafts if counted else None,
                       acceptance_rate=c.accepted / c.draft_tokens, acceptance_length=tau, per_position_rates=rates,
                       per_position_alpha=conditional if clean_profile else [], alpha=alpha, profile=profile,
                       source=source, notes=notes)


LATENCY_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
WORKLOAD_KEYS = ("model_id", "backend", "num_prompts", "request_rate", "max_concurrency", "multi_turn_concurrency")


def bench_object(path, flag):
    """The result object of a benchmark file, and a note when it is one of several."""
    text = read_text(path, flag, BENCH_LIMIT_BYTES, " (saved with --save-detailed? this tool reads the summary "
                                                    "keys only: save it without)")
    try:
        return parse_json(text, flag, path), None
    except UsageError as not_json:
        # `--append-result` writes one JSON object a line: the last is the newest run, the only one parsed (a file
        # of millions of small lines would take gigabytes parsed whole).
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) < 2:
            raise
        try:
            last = parse_json(lines[-1], flag, path)
        except UsageError:
            raise not_json from None
    return last, f"{path} holds {len(lines)} results (--append-result); the last is used"


def shown(value, width=60):
    """A value from a file, as an error message echoes it: its repr, cut to a width."""
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def json_whole(data, key, where, least=0, most=COUNT_LIMIT):
    """data[key] as a whole number from least to most, or None when it is missing or null."""
    value = data.get(key)
    if value is None:
        return None
    if type(value) is not int or not least <= value <= most:   # type(): a JSON true is no count
        raise UsageError(f"{where}: {key} must be a whole number from {least:,} to {most:,.0f}; got {shown(value)}")
    return value


AMOUNT_RANGE = (1e-3, 1e9)   # a latency in ms or a throughput in tokens/s, when not 0: ratios of two stay finite


def json_amount(data, key, where, least=AMOUNT_RANGE[0]):
    """data[key] as 0 or a number in [least, 1e9], or None when it is missing, null or NaN (vllm bench writes NaN
    for a statistic with no sample)."""
    value = data.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if not finite_number(value) or not (value == 0 or least <= value <= AMOUNT_RANGE[1]):
        raise UsageError(f"{where}: {key} must be 0 or a number from {least:g} to {AMOUNT_RANGE[1]:g}; got "
                         f"{shown(value)}")
    return value


@dataclass(frozen=True)
class Bench:
    """What this tool uses of a `vllm bench serve --save-result` JSON, each value checked (read_bench)."""
    path: str
    flag: str                #: the flag that named it
    latency: dict            #: its latency keys (mean_tpot_ms, p99_itl_ms, ...) with a value
    output_throughput: float   #: output tokens per second
    max_concurrency: int     #: max_concurrency (or multi_turn_concurrency); None: open loop or unknown
    open_loop: bool          #: whether it recorded no concurrency
    completed: int           #: completed requests
    total_input_tokens: int
    total_output_tokens: int
    spec: dict               #: its spec_decode_* keys
    workload: dict           #: its WORKLOAD_KEYS, which a pair must share
    model_id: str
    notes: list              #: what the reading noticed
    others: dict = field(default_factory=dict)   #: its other numbers --compare checks (BENCH_OTHERS)
    raw_burstiness: object = None   #: its burstiness as written (checked where it is used, by --compare)


BENCH_OTHERS = ("duration", "request_throughput", "total_token_throughput", "max_output_tokens_per_s")


def read_bench(path, flag):
    """The numbers of a `vllm bench serve --save-result` JSON that the comparison uses, each checked."""
    data, note = bench_object(path, flag)
    where = f"{flag}: {path}"
    if isinstance(data, list):
        raise UsageError(f"{where} is a list of {len(data)} runs, as `vllm bench sweep` writes its "
                         "summary.json: pass one run's own result file")
    if not isinstance(data, dict):
        raise UsageError(f"{where} is not a benchmark result object")
    if PREDICTION_KEY in data:
        raise UsageError(f"{where} is a prediction this tool wrote (--predict-bench), not a measurement: pass the "
                         "file the benchmark saved")
    if json_whole(data, "completed", where) == 0:
        raise UsageError(f"{where} has completed 0: every request failed, nothing was measured")
    latency = {key: json_amount(data, key, where, 0.0 if key.startswith("std_") else AMOUNT_RANGE[0])
               for key in data if LATENCY_KEY.match(key)}
    latency = {key: value for key, value in latency.items() if value is not None}
    if not latency:
        raise UsageError(f"{where} has none of the latency keys (mean_tpot_ms, p99_itl_ms, ...)")
    for key in WORKLOAD_KEYS:
        if not isinstance(data.get(key), (str, int, float, type(None))):
            raise UsageError(f"{where}: {key} must be a single value; got {shown(data[key])}")
    concurrency = [json_whole(data, key, where, 1, CONCURRENCY_LIMIT)
                   for key in ("max_concurrency", "multi_turn_concurrency")]
    concurrency = concurrency[0] or concurrency[1]
    notes = [note] if note else []
    if concurrency is None and "max_concurrency" not in data:
        notes.append(f"{path} records no max_concurrency (files before mid-2024 do not): the concurrency it ran at "
                     "is unknown")
    spec = {key: data[key] for key in data if key.startswith("spec_decode_")}
    return Bench(path=str(path), flag=flag, latency=latency,
                 output_throughput=json_amount(data, "output_throughput", where), max_concurrency=concurrency,
                 open_loop=concurrency is None, completed=json_whole(data, "completed", where),
                 total_input_tokens=json_whole(data, "total_input_tokens", where),
                 total_output_tokens=json_whole(data, "total_output_tokens", where), spec=spec,
                 workload={key: data.get(key) for key in WORKLOAD_KEYS}, model_id=data.get("model_id"), notes=notes,
                 others={key: value for key in BENCH_OTHERS if (value := json_amount(data, key, where)) is not None},
                 raw_burstiness=data.get("burstiness"))


def same_model(a, b):
    """Whether two model names from different files name the same model (case, spaces and a trailing / aside)."""
    return str(a).strip().rstrip("/").lower() == str(b).strip().rstrip("/").lower()


def finite_number(value):
    """True for an int or float that is finite (JSON's NaN and Infinity, null and strings are not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def workload_value(value):
    """A workload key's value as compared: a rate of "inf" and a JSON Infinity are one rate, and NaN is NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"
    return value


def same_workload(base, spec):
    """Refuse a pair that did not run the same workload (model, backend, prompts, rate, concurrency)."""
    for key in WORKLOAD_KEYS:
        if workload_value(base.workload[key]) != workload_value(spec.workload[key]):
            raise UsageError(f"--bench-spec: {key} {spec.workload[key]!r} differs from --bench-baseline's "
                             f"{base.workload[key]!r}: not the same workload")


def bench_acceptance(bench, flag):
    """Acceptance from a spec run's spec_decode_* keys, or None when it has none.

    The six spec_decode_* keys came with vLLM PR #31739 (vllm/benchmarks/serve.py). The counts
    give everything; a file with only the rate (a percentage) and the length gives
    K = (length - 1) / rate. The per-position rates are fractions; a list that is not
    K numbers in [0, 1] is dropped with a note.
    """
    spec, source = bench.spec, f"{flag} {bench.path}"
    counts = ("spec_decode_num_drafts", "spec_decode_draft_tokens", "spec_decode_accepted_tokens")
    present = [key for key in counts if key in spec]
    for key in present + [k for k in ("spec_decode_acceptance_rate", "spec_decode_acceptance_length") if k in spec]:
        if not finite_number(spec[key]) or not 0 <= spec[key] <= COUNT_LIMIT:
            raise UsageError(f"{source}: {key} must be a number from 0 to {COUNT_LIMIT:g}; got {shown(spec[key])}")
    if len(present) < len(counts):
        rate, tau = spec.get("spec_decode_acceptance_rate"), spec.get("spec_decode_acceptance_length")
        if present or not rate or tau is None:
            return None
        k = (tau - 1.0) * 100.0 / rate   # not / (rate / 100): a tiny rate would underflow to 0
        if not 0.5 <= k < K_LIMIT + 0.5 or abs(k - round(k)) > 0.01 * k:
            raise UsageError(f"{source}: spec_decode_acceptance_length {tau:g} and spec_decode_acceptance_rate "
                             f"{rate:g}% give K = {k:.3g}, not a whole number from 1 to {K_LIMIT}: not one chain's "
                             "figures")
        return measured_acceptance(one_average_draft(tau, round(k)), source, counted=False,
                                   notes=[f"from the file's acceptance rate and length only: K = {round(k)}"])
    drafts, draft_tokens, accepted = (float(spec[key]) for key in counts)
    notes = []
    rate = spec.get("spec_decode_acceptance_rate")
    if rate is not None and draft_tokens > 0 and abs(rate - 100.0 * accepted / draft_tokens) > 0.5:
        raise UsageError(f"{source}: spec_decode_acceptance_rate {rate:g}% disagrees with its counts "
                         f"({100.0 * accepted / draft_tokens:.1f}%)")
    rates = spec.get("spec_decode_per_position_acceptance_rates") or []
    k_mean = draft_tokens / drafts if drafts > 0 else 0.0
    if rates and (not isinstance(rates, list) or len(rates) > K_LIMIT or len(rates) < k_mean * (1 - COUNT_SLACK)
                  or not all(finite_number(r) and 0 <= r <= 1 for r in rates)):
        notes.append("spec_decode_per_position_acceptance_rates dropped (not one fraction per draft position)")
        rates = []
    return measured_acceptance(Counters(drafts=drafts, draft_tokens=draft_tokens, accepted=accepted,
                                        per_position={i: r * drafts for i, r in enumerate(rates)}), source, notes=notes)


def read_json(path, flag):
    """A JSON object from a file, or UsageError naming the file."""
    data = parse_json(read_text(path, flag, CONFIG_LIMIT_BYTES), flag, path)
    if not isinstance(data, dict):
        raise UsageError(f"{flag}: {path} is not a config object")
    return data


REQUIRED = object()   # config_size's default for a field the model cannot do without


def config_size(cfg, names, where, least=1, most=SIZE_LIMIT, default=REQUIRED):
    """The first of `names` the config sets, as a whole number from least to most; else default (REQUIRED:
    UsageError naming the fields). A JSON float or true is refused, not truncated."""
    for name in names:
        value = cfg.get(name)
        if value is not None:
            if type(value) is not int:
                raise UsageError(f"{where}: {name} must be a whole number; got {shown(value)}")
            if not least <= value <= most:
                raise UsageError(f"{where}: {name} must be from {least:,} to {most:,}; got {value:,}")
            return value
    if default is REQUIRED:
        raise UsageError(f"{where} has no {' or '.join(names)}, which the model needs")
    return default


def config_typed(cfg, name, where, kind, default=None):
    """cfg[name] when it is of the JSON type `kind` (bool, str, list, dict), default when missing or null."""
    value = cfg.get(name)
    if value is None:
        return default
    if type(value) is not kind:
        words = {bool: "true or false", str: "text", list: "a list", dict: "an object"}[kind]
        raise UsageError(f"{where}: {name} must be {words}; got {shown(value)}")
    return value


# A name the plan prints in shell commands, YAML and Markdown: a Hugging Face id (org/name) or a plain path.
# Letters, digits, spaces and . _ - + @ ~ /, not starting with - (a flag) or a space, at most 256 characters.
NAME = re.compile(r"[A-Za-z0-9_.+@~/](?:[A-Za-z0-9_.+@~/ -]{0,254}[A-Za-z0-9_.+@~/-])?", re.ASCII)


def checked_name(value, where):
    """A model's name as the plan will print it, or UsageError: commands quote it as well (shlex.quote)."""
    if not isinstance(value, str):
        raise UsageError(f"{where} must be text, a Hugging Face id or a path; got {shown(value)}")
    if not NAME.fullmatch(value):
        raise UsageError(f"{where}: {shown(value)} is neither a Hugging Face id nor a plain path (letters, digits, "
                         "spaces and . _ - + @ ~ /, not starting with - or a space, at most 256 characters); the "
                         "plan prints it in shell commands")
    return value


def config_name(cfg, where):
    """The config's _name_or_path, checked (checked_name); None when it has none."""
    name = cfg.get("_name_or_path")
    return None if name == "" or name is None else checked_name(name, f"{where}: _name_or_path")


def config_head_dim(cfg, where, hidden, heads):
    """head_dim as the config gives it, else hidden / heads (Llama-style configs leave it out)."""
    head_dim = config_size(cfg, ("head_dim",), where, default=None)
    if head_dim is None and hidden < heads:
        raise UsageError(f"{where}: hidden_size {hidden} over {heads} attention heads leaves no head_dim; give "
                         "head_dim")
    return head_dim or hidden // heads


def config_kv_heads(cfg, where, heads):
    """num_key_value_heads, which must divide the attention heads (grouped-query attention)."""
    kv_heads = config_size(cfg, ("num_key_value_heads",), where)
    if heads % kv_heads:
        raise UsageError(f"{where}: num_key_value_heads {kv_heads} does not divide num_attention_heads {heads}")
    return kv_heads


def shape_from_config(path, flag="--model-config"):
    """A model's shape (MODELS' keys) from its Hugging Face config.json; a missing, mistyped or out-of-range field
    exits 2 naming it.

    Reads dense Llama-style configs and the MoE and attention variants of REFERENCE.md
    section 7: Qwen3 MoE (decoder_sparse_step, mlp_only_layers), Llama 4 (text_config,
    interleave_moe_layer_step, a shared expert, intermediate_size_mlp for dense layers),
    DeepSeek and Kimi (MLA, first_k_dense_replace, shared experts, MTP), gpt-oss (experts
    intermediate_size wide, biases, sinks, sliding-window layer_types). Missing
    tie_word_embeddings means untied, the default of every model class named here.
    """
    cfg = read_json(path, flag)
    where = f"{flag}: {path}"
    t = config_typed(cfg, "text_config", where, dict, cfg)
    size = lambda *names, **kw: config_size(t, names, where, **kw)
    kind = config_typed(t, "model_type", where, str) or config_typed(cfg, "model_type", where, str, "")
    layers = size("num_hidden_layers", most=LAYER_LIMIT)
    heads, hidden = size("num_attention_heads"), size("hidden_size")
    layer_types = config_typed(t, "layer_types", where, list, [])
    if any(lt not in ("full_attention", "sliding_attention") for lt in layer_types):
        raise UsageError(f"{where}: layer_types {shown(sorted(set(map(str, layer_types))))} include a kind of layer "
                         "this model does not know (only full_attention and sliding_attention)")
    if layer_types and len(layer_types) != layers:
        raise UsageError(f"{where}: layer_types names {len(layer_types)} layers, not num_hidden_layers {layers}")
    tied = config_typed(t, "tie_word_embeddings", where, bool, config_typed(cfg, "tie_word_embeddings", where, bool,
                                                                            False))
    m = dict(hidden=hidden, layers=layers, heads=heads, vocab=size("vocab_size"), tied=tied,
             hf=config_name(cfg, where))
    if t.get("kv_lora_rank") not in (None, 0):
        m["mla"] = dict(kv_lora_rank=size("kv_lora_rank"), rope=size("qk_rope_head_dim"),
                        q_lora_rank=size("q_lora_rank", least=0, default=0),
                        nope=size("qk_nope_head_dim"), v_head_dim=size("v_head_dim"))
        m["kv_heads"] = heads
        m["head_dim"] = m["mla"]["nope"] + m["mla"]["rope"]
    else:
        m["kv_heads"] = config_kv_heads(t, where, heads)
        m["head_dim"] = config_head_dim(t, where, hidden, heads)
    experts = size("num_experts", "num_local_experts", "n_routed_experts", least=0, default=0)
    m["inter"] = size("intermediate_size_mlp", "intermediate_size")
    if experts:
        per_token = size("num_experts_per_tok", "experts_per_token")
        if per_token > experts:
            raise UsageError(f"{where}: num_experts_per_tok {per_token} is more than the {experts} experts")
        m.update(experts=experts, experts_per_token=per_token, moe_inter=size("moe_intermediate_size",
                                                                               "intermediate_size"))
        shared = (size("n_shared_experts", least=0, default=0) * m["moe_inter"]
                  or size("shared_expert_intermediate_size", least=0, default=0)
                  or (m["moe_inter"] if kind.startswith("llama4") else 0))
        if shared:
            m["shared_inter"] = shared
        dense_first = size("first_k_dense_replace", least=0, most=layers, default=0)
        step = size("interleave_moe_layer_step", "decoder_sparse_step", "moe_layer_freq", most=LAYER_LIMIT, default=1)
        only_dense = config_typed(t, "mlp_only_layers", where, list, [])
        if any(type(i) is not int or not 0 <= i < layers for i in only_dense):
            raise UsageError(f"{where}: mlp_only_layers must list layer numbers from 0 to {layers - 1}; got "
                             f"{shown(only_dense)}")
        only_dense = set(only_dense)
        m["moe_layers"] = sum(1 for i in range(layers)
                              if i >= dense_first and (i + 1) % step == 0 and i not in only_dense)
    if layer_types:
        m["window_layers"] = sum(1 for lt in layer_types if lt == "sliding_attention")
        if m["window_layers"]:
            m["window"] = size("sliding_window", most=TOKENS_LIMIT)
    if kind == "gpt_oss":   # GptOssForCausalLM: biased attention, experts and router, and attention sinks
        m.update(attn_bias=True, sinks=True, expert_bias=True, router_bias=True)
    elif config_typed(t, "attention_bias", where, bool, False):
        m["attn_bias"] = True
    if experts and kind in ROUTING_OF_MODEL_TYPE:
        m["routing"] = ROUTING_OF_MODEL_TYPE[kind]
    nextn = size("num_nextn_predict_layers", least=0, most=LAYER_LIMIT, default=0)
    if nextn:
        m["nextn"] = nextn
    # A checkpoint that ships quantized weights says so (DeepSeek-V3's block fp8, gpt-oss's MXFP4 experts).
    method = config_typed(config_typed(cfg, "quantization_config", where, dict, {}), "quant_method", where, str, "")
    if method in SHIPPED_DTYPE:
        m["checkpoint"] = SHIPPED_DTYPE[method]
    return m


SHIPPED_DTYPE = {"fp8": "fp8", "mxfp4": "fp4"}   # quantization_config.quant_method -> the weights' dtype here


def head_from_config(path, m, flag="--draft-config"):
    """An EAGLE head's own config.json laid over target shape m: its MLP width, attention shape, draft
    vocabulary and trained context (max_position_embeddings), each checked as shape_from_config checks."""
    cfg = read_json(path, flag)
    where = f"{flag}: {path}"
    size = lambda *names, **kw: config_size(cfg, names, where, **kw)
    heads, hidden = size("num_attention_heads"), size("hidden_size")
    if hidden != m["hidden"]:
        raise UsageError(f"{where}: hidden_size {hidden} is not the target's {m['hidden']}: not a head for it")
    return dict(m, head_inter=size("intermediate_size"), head_heads=heads,
                head_kv_heads=config_kv_heads(cfg, where, heads),
                head_head_dim=config_head_dim(cfg, where, hidden, heads),
                draft_vocab=size("draft_vocab_size", "vocab_size"),
                head_context=size("max_position_embeddings", least=0, most=TOKENS_LIMIT * 100, default=0) or None)


@dataclass(frozen=True)
class Run:
    """One benchmark run as the calibration fits it, or a probe of run_tpot_ms."""
    batch: int               #: max_concurrency B
    k: int                   #: K of a speculative run (None: a baseline)
    tau: float               #: its acceptance length (None: a baseline)
    input_tokens: int        #: mean prompt tokens (its totals over completed requests)
    output_tokens: int       #: mean output tokens
    tpot_ms: float = None    #: its measured mean TPOT, ms
    path: str = None         #: the file
    model_id: str = None     #: the model it names
    decoding: float = None   #: sequences it decoded on average (decoding_batch); None: batch
    noise: float = RUN_NOISE   #: its mean TPOT's own noise, fraction: the least run-to-run spread, or more


def run_totals(bench, flag, path, runs, least_output):
    """(completed, total prompt tokens, total output tokens) of a benchmark file, its mean lengths checked."""
    completed, prompts, outputs = bench.completed, bench.total_input_tokens, bench.total_output_tokens
    if not completed or prompts is None or outputs is None:
        raise UsageError(f"{flag}: {path} needs completed, total_input_tokens and total_output_tokens to know "
                         "its prompt and output lengths")
    for what, total, least in (("prompt tokens", prompts, 1), ("output tokens", outputs, least_output)):
        if not least <= total / completed <= TOKENS_LIMIT:
            raise UsageError(f"{flag}: {path}: its requests average {total / completed:.3g} {what} "
                             f"(total over completed); {runs} have {least} to {TOKENS_LIMIT:,}")
    return completed, prompts, outputs


def read_calibration_runs(paths, flag="--calibrate"):
    """Your `vllm bench serve` results for --calibrate: one deployment, one workload, baselines at several
    concurrencies and optionally speculative runs (their K and tau from their spec_decode_* keys)."""
    runs = []
    for path in paths:
        bench = read_bench(path, flag)
        if bench.max_concurrency is None:
            raise UsageError(f"{flag}: {path} records no max_concurrency: calibration needs closed-loop runs "
                             "(vllm bench serve --max-concurrency B)")
        if not bench.latency.get("mean_tpot_ms"):
            raise UsageError(f"{flag}: {path} has no mean_tpot_ms above 0 (a TPOT needs requests of two or more "
                             "output tokens)")
        completed, prompts, outputs = run_totals(bench, flag, path, "the runs this tool fits", least_output=2)
        k = tau = None
        if bench.spec:
            measured = bench_acceptance(bench, flag)
            if measured is None or measured.varying_k:
                raise UsageError(f"{flag}: {path} is a speculative run without one K and its acceptance in its "
                                 "spec_decode_* keys: run it on vLLM with a fixed num_speculative_tokens")
            k, tau = measured.k, measured.acceptance_length
        tpot, output_tokens = bench.latency["mean_tpot_ms"], round(outputs / completed)
        sampling = bench.latency.get("std_tpot_ms", 0.0) / math.sqrt(completed) / tpot   # s.e. of the mean
        runs.append(Run(batch=bench.max_concurrency, k=k, tau=tau, input_tokens=round(prompts / completed),
                        output_tokens=output_tokens, tpot_ms=tpot, path=str(path), model_id=bench.model_id,
                        decoding=decoding_batch(bench.max_concurrency, output_tokens, tpot,
                                                bench.latency.get("mean_ttft_ms", 0.0), completed),
                        noise=max(RUN_NOISE, sampling)))
    models = {r.model_id for r in runs}
    if len(models) > 1:
        raise UsageError(f"{flag}: the files are of different models ({', '.join(sorted(map(repr, models)))}): "
                         "calibrate on one deployment")
    lengths = [(r.input_tokens, r.output_tokens) for r in runs]
    for i, o in lengths:
        if abs(i / lengths[0][0] - 1) > OWN_LENGTHS or abs(o / lengths[0][1] - 1) > OWN_LENGTHS:
            raise UsageError(f"{flag}: the runs differ in prompt or output length by more than {OWN_LENGTHS:.0%} "
                             f"({lengths[0][0]}/{lengths[0][1]} against {i}/{o} tokens): one workload shape, please")
    baselines = sorted({r.batch for r in runs if r.k is None})
    if len(runs) < 2 or len(baselines) < 2:
        have = f"baselines at {', '.join(map(str, baselines))}" if baselines else "no baseline"
        raise UsageError(f"{flag}: too little to fit ({len(runs)} file(s), {have}): run speculation off at three "
                         "concurrencies (e.g. 1, 16 and your target) and on at one of them")
    return runs


@dataclass(frozen=True)
class Comparison:
    """A speculative benchmark run against its baseline (bench_comparison): ratios and changes are fractions, None
    where a file lacks the key."""
    tpot_speedup: float      #: baseline mean TPOT over the speculative run's
    throughput_speedup: float   #: speculative output throughput over the baseline's
    p99_tpot_change: float   #: P99 TPOT, speculative over baseline, minus 1
    p99_itl_change: float    #: P99 ITL (per chunk), speculative over baseline, minus 1
    changes: dict            #: every latency key both files have: speculative over baseline, minus 1
    baseline: dict           #: the baseline's latency keys
    spec: dict               #: the speculative run's
    max_concurrency: int     #: the baseline's max_concurrency (None: open loop)
    lengths: tuple           #: the speculative run's (mean prompt, mean output) tokens, or None


def bench_comparison(base, spec):
    """Measured speedups and P99 changes of the spec run against the baseline (fractions)."""
    def ratio(a, b):   # None unless both were measured above 0 (a 0 mean TPOT measured nothing)
        return a / b if a and b and math.isfinite(a / b) else None
    lat_b, lat_s = base.latency, spec.latency
    change = lambda key: None if ratio(lat_s.get(key), lat_b.get(key)) is None else ratio(lat_s[key], lat_b[key]) - 1.0
    keys = sorted(set(lat_b) & set(lat_s))
    return Comparison(tpot_speedup=ratio(lat_b.get("mean_tpot_ms"), lat_s.get("mean_tpot_ms")),
                      throughput_speedup=ratio(spec.output_throughput, base.output_throughput),
                      p99_tpot_change=change("p99_tpot_ms"), p99_itl_change=change("p99_itl_ms"),
                      changes={key: change(key) for key in keys}, baseline=lat_b, spec=lat_s,
                      max_concurrency=base.max_concurrency, lengths=run_lengths(spec))


def run_lengths(bench):
    """(mean prompt, mean output tokens) of a benchmark run, from its totals over completed requests; None when the
    file lacks them."""
    done, prompts, outputs = bench.completed, bench.total_input_tokens, bench.total_output_tokens
    return (round(prompts / done), round(outputs / done)) if done and prompts and outputs else None


def length_note(what, lengths, dep):
    """A note when a run's lengths differ from the deployment's by more than LENGTH_SLACK, else None."""
    i, o = lengths
    if abs(i / dep.input_tokens - 1) <= LENGTH_SLACK and abs(o / dep.output_tokens - 1) <= LENGTH_SLACK:
        return None
    return (f"{what} ran {i} prompt and {o} output tokens a request (its totals over completed requests), the "
            f"deployment {dep.input_tokens} and {dep.output_tokens}: the model is set at the run's own lengths beside "
            "it, and the plan's other numbers at the deployment's")


LENGTH_SLACK = 0.10   # a run whose mean lengths differ from the deployment's by more than this gets a note

# ---------------------------------------------------------------- CLI
class _Parser(argparse.ArgumentParser):
    def __init__(self, **kw):
        super().__init__(**kw)
        # A value that looks like a negative number (-1e5, -0.5, -inf) is the flag's value, refused or not by
        # the flag's own check, never read as an unknown flag (argparse's own pattern misses exponents).
        self._negative_number_matcher = re.compile(r"^-(?:\d|\.\d|inf|nan)", re.IGNORECASE)

    def error(self, message):
        raise UsageError(message)


def ascii_number(text):
    """text, if written with ASCII digits and no underscores (int() and float() take "１２" and "1_000" too)."""
    if not text.isascii() or "_" in text:
        raise ValueError(text)
    return text


def parse_list(flag, text, convert, allowed, check):
    """Parse a comma list, converting each item and checking it against `check`."""
    items = [s.strip() for s in text.split(",")]
    if not text.strip() or any(s == "" for s in items):
        raise UsageError(f"{flag}: expected a comma list of {allowed}; got {text!r}")
    values = []
    for s in items:
        try:
            value = convert(ascii_number(s))
        except ValueError:
            raise UsageError(f"{flag}: each value must be {allowed}; got {s!r}") from None
        if not check(value):
            raise UsageError(f"{flag}: each value must be {allowed}; got {s!r}")
        values.append(value)
    return tuple(values)


def parse_one(flag, text, convert, allowed, check=lambda value: True):
    """One value, converted and checked; else UsageError naming the flag, what it allows and what it got."""
    try:
        value = convert(ascii_number(text))
    except ValueError:
        value = None
    if value is None or not check(value):
        raise UsageError(f"{flag}: expected one value, {allowed}; got {text!r}")
    return value


def _finite(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _overhead(text):
    return "auto" if text == "auto" else _finite(text)


def _choice(flag, value, valid, extra=""):
    if value not in valid:
        raise UsageError(f"{flag}: unknown {value!r}; valid: {', '.join(valid)}{extra}")
    return value


def build_parser():
    p = _Parser(prog="main.py", description=__doc__.split("\n\n")[0])
    grid = p.add_argument_group("grid (defaults: the constants at the top of main.py)")
    grid.add_argument("--alphas", help="per-token acceptance alphas, comma list in [0, 1]")
    grid.add_argument("--acceptance-rates", help="vLLM acceptance rates (accepted/drafted), comma list in [0, 1]")
    grid.add_argument("--acceptance-length", help="measured tau at the single K given by --ks, in [1, K+1]; or one "
                                                  "for each K of --ks 1,...,n (a sweep)")
    grid.add_argument("--ks", help=f"draft lengths K, comma list of integers 1-{K_LIMIT}")
    grid.add_argument("--verify-overheads", help='eps at B=1, comma list of numbers >= 0 or "auto"')
    grid.add_argument("--concurrency", help="batch sizes B, comma list of integers >= 1")
    dep = p.add_argument_group("deployment")
    dep.add_argument("--model", help=f"target model: {', '.join(MODELS)}")
    dep.add_argument("--gpu", help=f"GPU: {', '.join(GPUS)}, or custom (with the three numbers below)")
    dep.add_argument("--tp", help="tensor-parallel degree")
    dep.add_argument("--ep", help="expert-parallel GPUs of a MoE target: 1 (experts split by --tp) or the --tp "
                                  "degree (whole experts per GPU)")
    dep.add_argument("--dp-attention", action="store_true",
                     help="with --ep: attention data parallel, each GPU its own share of the sequences")
    dep.add_argument("--weights-dtype", help="bf16, fp8 or fp4 (sized as MXFP4: 4.25 bits a weight)")
    dep.add_argument("--kv-dtype", help="bf16 or fp8")
    dep.add_argument("--input-tokens", help=f"mean prompt length, tokens (default {INPUT_TOKENS})")
    dep.add_argument("--output-tokens", help=f"mean output length, tokens (default {OUTPUT_TOKENS})")
    dep.add_argument("--context", help="mean decode context in tokens (default: input + output / 2)")
    dep.add_argument("--draft", help=f"draft: {', '.join(DRAFTS)}, or a catalog model")
    dep.add_argument("--draft-model", help="Hugging Face id or path of the draft head (default: the catalog's)")
    dep.add_argument("--model-config", help="a Hugging Face config.json to use as the target (instead of --model)")
    dep.add_argument("--draft-config", help="the EAGLE head's own config.json (its width, vocabulary, trained context), "
                                            "or with --draft model a draft model's")
    dep.add_argument("--draft-topk", help="tokens each draft step expands per sequence: 1 a chain, more a tree")
    dep.add_argument("--verify-tokens", help="tokens per sequence in a tree's verify pass (SGLang's "
                                             "--speculative-num-draft-tokens)")
    dep.add_argument("--engine", help=f"engine the plan is written for: {', '.join(ENGINES)} (default {ENGINE})")
    dep.add_argument("--engine-version", help="the engine's release, e.g. 0.13 or 0.5.10: sets the era a round's "
                                              "host costs are those of (default: the newest era, Engine.eras)")
    dep.add_argument("--gpu-bandwidth", help="memory bandwidth per GPU, TB/s")
    dep.add_argument("--gpu-tflops", help="dense TFLOP/s per GPU for the weights dtype")
    dep.add_argument("--gpu-memory", help="memory per GPU, GiB")
    meas = p.add_argument_group("measurements and the gate")
    meas.add_argument("--metrics", help="a scrape of vLLM's or SGLang's /metrics (Prometheus text)")
    meas.add_argument("--metrics-before", help="an earlier scrape: measure the window between the two")
    meas.add_argument("--served-model", help="the model_name to measure when a scrape holds several")
    meas.add_argument("--bench-baseline", help="`vllm bench serve --save-result` JSON, speculation off")
    meas.add_argument("--bench-spec", help="the same benchmark with speculation on")
    meas.add_argument("--target-concurrency", help="batch size the gate is for (default: the benchmark's)")
    meas.add_argument("--gate-margin", help=f"acceptance-rate margin over break-even (default {GATE_MARGIN})")
    meas.add_argument("--p99-budget", help=f"largest P99 TPOT rise accepted, fraction (default {P99_BUDGET})")
    meas.add_argument("--gate", action="store_true", help="exit 0 if the gate passes, 1 if it fails")
    meas.add_argument("--mix", help="traffic mix name:share:alpha[:tokens],... (shares of generated tokens, sum 1; "
                                    "tokens: the domain's mean output length)")
    meas.add_argument("--calibrate", help="your `vllm bench serve` results, comma list: fit the cost model on them")
    out = p.add_argument_group("output")
    out.add_argument("--exercises", action="store_true", help="print worked answers to the lesson's exercises")
    out.add_argument("--seed", help="seed of the simulated requests (integer)")
    out.add_argument("--alpha-spread", help=f"s.d. of a request's per-token alpha around the mean, in [0, 0.5] "
                                            f"(default {ALPHA_SPREAD})")
    out.add_argument("--output-spread", help=f"s.d. of ln(output tokens) over requests, in [0, 2] "
                                             f"(default {OUTPUT_SPREAD})")
    out.add_argument("--out", help="where to write the rollout plan (default outputs/skill-eagle3-rollout.md)")
    out.add_argument("--no-write", action="store_true", help="do not write the rollout plan")
    out.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    bench = p.add_argument_group("benchmark files: predicted before they are run, and held against the measured")
    bench.add_argument("--predict-bench", metavar="DIR", help="write the `vllm bench serve --save-result` file of "
                       "each run: a baseline and one per --ks at each --concurrency (or --request-rate)")
    bench.add_argument("--num-prompts", help="prompts a predicted run sends (default: the plan's, 10 a concurrent "
                       f"slot and at least 200; {BENCH_OPEN_PROMPTS} in open loop)")
    bench.add_argument("--request-rate", help="open loop instead: requests/s, comma list (vllm bench serve's "
                       "--request-rate)")
    bench.add_argument("--burstiness", help="gamma shape of an open loop's gaps (default 1: Poisson)")
    bench.add_argument("--compare", help="measured `vllm bench serve` results, comma list: each key against the "
                       "prediction of its own run")
    return p


def parse_grid(args):
    """The grid flags -> Grid. One acceptance flag at most; a length needs a single K."""
    ks = parse_list("--ks", args.ks, int, f"an integer from 1 to {K_LIMIT}", lambda k: 1 <= k <= K_LIMIT) \
        if args.ks is not None else KS
    given = [f for f, v in (("--alphas", args.alphas), ("--acceptance-rates", args.acceptance_rates),
                            ("--acceptance-length", args.acceptance_length)) if v is not None]
    if len(given) > 1:
        raise UsageError(f"{given[0]} and {given[1]}: give acceptance one way only")
    if args.acceptance_rates is not None:
        kind, values = "rate", parse_list("--acceptance-rates", args.acceptance_rates, _finite,
                                          "a number in [0, 1]", lambda r: 0.0 <= r <= 1.0)
    elif args.acceptance_length is not None and len(ks) > 1:
        kind, values = "profile", (parse_length_sweep(args.acceptance_length, ks),)
    elif args.acceptance_length is not None:
        kind, values = "length", parse_list("--acceptance-length", args.acceptance_length, _finite,
                                            f"a number in [1, {ks[0] + 1}] (1 to K+1)",
                                            lambda t: 1.0 <= t <= ks[0] + 1)
    else:
        kind, values = "alpha", parse_list("--alphas", args.alphas, _finite, "a number in [0, 1]",
                                           lambda a: 0.0 <= a <= 1.0) if args.alphas is not None else ALPHAS
    overheads = parse_list("--verify-overheads", args.verify_overheads, _overhead,
                           f'a number >= 0 and at most {EPS_LIMIT:g}, or "auto"',
                           lambda e: e == "auto" or 0.0 <= e <= EPS_LIMIT) \
        if args.verify_overheads is not None else VERIFY_OVERHEADS
    concurrencies = parse_list("--concurrency", args.concurrency, int, f"an integer from 1 to {CONCURRENCY_LIMIT:,}",
                               lambda b: 1 <= b <= CONCURRENCY_LIMIT) \
        if args.concurrency is not None else CONCURRENCIES
    pairs = len(set(values)) * len(set(ks))
    if pairs > GRID_PAIR_LIMIT:
        raise UsageError(f"the grid has {pairs:,} (acceptance, K) pairs to simulate ({len(set(values))} acceptance values "
                         f"x {len(set(ks))} Ks), more than {GRID_PAIR_LIMIT}: split it into several runs")
    cells = len(values) * len(ks) * len(overheads) * len(concurrencies)
    if cells > GRID_CELL_LIMIT:
        raise UsageError(f"the grid has {cells:,} cells ({len(values)} acceptance values x {len(ks)} Ks x "
                         f"{len(overheads)} overheads x {len(concurrencies)} concurrencies), more than "
                         f"{GRID_CELL_LIMIT:,}: split it into several runs")
    return Grid(acceptance=values, ks=ks, overheads=overheads, concurrencies=concurrencies, kind=kind)


def parse_length_sweep(text, ks):
    """--acceptance-length TAU1,...,TAUn with --ks 1,...,n: acceptance lengths measured at each K -> the conditional
    alphas by position they imply (profile_from_lengths), as a tuple."""
    if "," not in text:
        raise UsageError(f"--acceptance-length: one length is measured at one K, so --ks must name exactly one; got "
                         f"{','.join(map(str, ks))} (or give one length for each K of --ks 1,...,n)")
    if list(ks) != list(range(1, len(ks) + 1)):
        raise UsageError(f"--acceptance-length: one K takes one length; several lengths are a sweep measured at "
                         f"K = 1, 2, ..., n, so --ks must be 1,...,n; got {','.join(map(str, ks))}")
    lengths = parse_list("--acceptance-length", text, _finite, "a number in [1, K+1] for each K",
                         lambda t: 1.0 <= t <= K_LIMIT + 1)
    if len(lengths) != len(ks):
        raise UsageError(f"--acceptance-length: a sweep gives one length for each of the {len(ks)} --ks; got "
                         f"{len(lengths)}")
    profile = profile_from_lengths(lengths)
    if profile is None:
        raise UsageError("--acceptance-length: a sweep's length can rise from K to K + 1 by at most its rise from "
                         f"K - 1 to K (give or take {SWEEP_SLACK:g}), and by at most 1 at K = 1 (a position accepts "
                         "only if the one before did); got " + ", ".join(f"{t:g}" for t in lengths))
    return tuple(round(a, 9) for a in profile)


def parse_deployment(args):
    """The deployment flags -> Deployment, refusing what cannot run."""
    if args.model and args.model_config:
        raise UsageError("--model and --model-config: name the target one way only")
    if args.model_config:
        shape = shape_from_config(args.model_config)
        model = shape["hf"] or checked_name(Path(args.model_config).stem, "--model-config: the file's name (the config "
                                                                          "has no _name_or_path)")
    else:
        model = _choice("--model", args.model or MODEL, list(MODELS))
        shape = MODELS[model]
    gpu = args.gpu or GPU
    if gpu != "custom":
        _choice("--gpu", gpu, list(GPUS), ", or custom with --gpu-bandwidth, --gpu-tflops and --gpu-memory")
    numbers = {}
    custom_flags = (("--gpu-bandwidth", "bandwidth_tbs", args.gpu_bandwidth),
                    ("--gpu-tflops", "tflops", args.gpu_tflops), ("--gpu-memory", "memory_gib", args.gpu_memory))
    for flag, key, text in custom_flags:
        if text is not None:
            least, most = GPU_RANGES[key]
            numbers[key] = parse_one(flag, text, _finite, f"a number from {least:g} to {most:g}",
                                     lambda x: least <= x <= most)
    missing = [flag for flag, key, _ in custom_flags if key not in numbers]
    if gpu == "custom" and missing:
        raise UsageError(f"--gpu custom: needs --gpu-bandwidth, --gpu-tflops and --gpu-memory; "
                         f"missing {', '.join(missing)}")
    weights = _choice("--weights-dtype", args.weights_dtype or WEIGHTS_DTYPE, list(BYTES_PER))
    kv = _choice("--kv-dtype", args.kv_dtype or KV_DTYPE, ["bf16", "fp8"])
    tp = parse_one("--tp", args.tp, int, f"an integer from 1 to {TP_LIMIT}", lambda t: 1 <= t <= TP_LIMIT) \
        if args.tp is not None else TP
    tokens = lambda least: (f"an integer from {least} to {TOKENS_LIMIT:,} (tokens)",
                            lambda n: least <= n <= TOKENS_LIMIT)
    context = parse_one("--context", args.context, int, *tokens(1)) if args.context is not None else CONTEXT
    lengths = {}
    for flag, text, default, least in (("--input-tokens", args.input_tokens, INPUT_TOKENS, 1),
                                       ("--output-tokens", args.output_tokens, OUTPUT_TOKENS, 2)):   # TPOT needs 2
        lengths[flag] = parse_one(flag, text, int, *tokens(least)) if text is not None else default
    if context is not None and context < lengths["--input-tokens"]:
        raise UsageError(f"--context: a request decodes after its prompt, so the mean decode context is at least "
                         f"--input-tokens {lengths['--input-tokens']}; got {context}")
    if sum(lengths.values()) > TOKENS_LIMIT:
        raise UsageError(f"--input-tokens and --output-tokens: a request of {sum(lengths.values()):,} tokens is past "
                         f"the {TOKENS_LIMIT:,} this tool models")
    draft = _choice("--draft", args.draft or DRAFT, list(DRAFTS) + list(MODELS))
    m = shape
    if m["heads"] % tp:
        raise UsageError(f"--tp: {tp} does not divide the {m['heads']} attention heads of {model}")
    if not m.get("mla") and m["kv_heads"] % tp and tp % m["kv_heads"]:   # vLLM's attention layers assert one of them
        raise UsageError(f"--tp: {tp} GPUs can neither split nor copy evenly the {m['kv_heads']} KV heads of {model} "
                         "(one must divide the other)")
    if draft == "model" and not args.draft_config:
        raise UsageError("--draft: 'model' is a draft model read from its config.json: give --draft-config PATH")
    draft_shape = shape_from_config(args.draft_config, "--draft-config") if draft == "model" else None
    if draft in MODELS or draft == "model":
        d = draft_shape or MODELS[draft]
        problem = draft_problem(d, m)
        if problem:
            raise UsageError(f"--draft: {draft} cannot draft for {model}: {problem}")
        if d["heads"] % tp:
            raise UsageError(f"--tp: {tp} does not divide the {d['heads']} attention heads of the draft {draft}")
    engine = ENGINES[_choice("--engine", args.engine or ENGINE, list(ENGINES))]
    if engine.nvidia_only and gpu in GPU_FAMILY and GPU_FAMILY[gpu] == "cdna":
        others = " or ".join(e.key for e in ENGINES.values() if not e.nvidia_only)
        raise UsageError(f"--engine: {engine.name} runs on NVIDIA GPUs; {gpu} is AMD's (serve it with {others})")
    era = parse_era(engine, args.engine_version if args.engine_version is not None else ENGINE_VERSION)
    if draft_kind(draft) not in engine.drafts:
        raise UsageError(f"--draft: the {engine.name} plan covers {', '.join(engine.drafts)}; "
                         f"got {draft!r} ({engine.drafts_why})")
    if draft == "mtp" and not m.get("nextn"):
        raise UsageError(f"--draft: {model} has no MTP module (num_nextn_predict_layers); got 'mtp'")
    if args.draft_config and draft != "model":
        if draft not in EAGLE_DRAFTS:
            raise UsageError(f"--draft-config: reads an EAGLE head's config, or a draft model's with --draft model; "
                             f"--draft is {draft!r}")
        m = head_from_config(args.draft_config, m)
    topk = parse_one("--draft-topk", args.draft_topk, int, "an integer from 1 to 16", lambda n: 1 <= n <= 16) \
        if args.draft_topk is not None else 1
    verify = parse_one("--verify-tokens", args.verify_tokens, int, "an integer from 2 to 64", lambda n: 2 <= n <= 64) \
        if args.verify_tokens is not None else None
    if topk > 1 and verify is None:
        raise UsageError(f"--draft-topk: a tree of top-{topk} needs --verify-tokens, the tokens its verify pass checks")
    if topk > 1 and draft not in engine.trees:
        where = "; ".join(f"{e.name} for {', '.join(e.trees)}" for e in ENGINES.values() if e.trees)
        raise UsageError(f"--draft-topk: no tree of {draft!r} drafts on {engine.name} "
                         f"({engine.trees_why}); trees run on {where}")
    if topk > 1 and engine.tree_needs_plain_attention and (m.get("mla") or m.get("window_layers")):
        raise UsageError(f"--draft-topk: {engine.name}'s trees do not run models with MLA or sliding-window "
                         f"attention (its speculative-decoding docs), and {model} has "
                         f"{'MLA' if m.get('mla') else 'sliding-window layers'}")
    draft_hf = args.draft_model if args.draft_model is not None else DRAFT_MODEL
    if draft_hf is not None:
        checked_name(draft_hf, "--draft-model")
    if draft_hf is not None and draft == "mtp":
        raise UsageError("--draft-model: MTP runs the target's own MTP module; drop --draft-model or pick another "
                         "--draft")
    if draft_hf is not None and draft == "ngram":
        raise UsageError("--draft-model: n-gram drafting runs no model; drop --draft-model or pick another --draft")
    ep = parse_ep(args.ep if args.ep is not None else EP, tp, m, model)
    dp_attention = args.dp_attention or DP_ATTENTION
    if dp_attention and not m.get("experts"):
        raise UsageError(f"--dp-attention: runs attention data parallel beside expert-parallel experts; {model} is "
                         "dense (serve more replicas instead)")
    if dp_attention and (ep == 1 or tp == 1):
        raise UsageError("--dp-attention: runs attention data parallel beside expert-parallel experts, as the engines "
                         f"offer it: give --ep {tp} with --tp {tp} > 1" if tp > 1 else
                         "--dp-attention: needs several GPUs (--tp) and --ep equal to it")
    spec = gpu_spec(gpu, weights_dtype=weights, **numbers)
    dep = make_deployment(model, gpu, tp, weights, kv, context, draft, spec, engine.key, draft_hf,
                          lengths["--input-tokens"], lengths["--output-tokens"], m, topk, verify, draft_shape, era, ep,
                          dp_attention)
    return replace(dep, model_config=args.model_config, draft_config=args.draft_config)


def parse_ep(value, tp, m, model):
    """--ep (or EP) -> 1 or tp. Each engine places experts inside its tensor-parallel group: vLLM's
    --enable-expert-parallel makes every one of the TP x DP GPUs an expert-parallel rank (here DP 1), and this
    tool asks SGLang (--ep-size) and TensorRT-LLM (--ep_size) for the same, so one --ep runs on all three."""
    ep = parse_one("--ep", str(value), int, f"1 or the --tp degree ({tp})", lambda n: n >= 1)
    if ep == 1:
        return 1
    if not m.get("experts"):
        raise UsageError(f"--ep: expert parallelism places a mixture of experts' experts on GPUs; {model} is dense")
    if ep != tp:
        raise UsageError(f"--ep: 1 or the --tp degree ({tp}): the plan's commands run expert parallel across the "
                         f"tensor-parallel GPUs, as vLLM's --enable-expert-parallel does; got {ep}")
    if m["experts"] % ep:
        raise UsageError(f"--ep: {ep} GPUs do not hold the {m['experts']} experts of {model} evenly")
    return ep


def parse_era(engine, version):
    """--engine-version -> the engine's Era (newest when not given); a release before the first era is refused."""
    if version is None:
        return newest_era(engine.key)
    try:
        era = era_of(engine.key, version)
    except ValueError:
        raise UsageError(f"--engine-version: a release such as 0.14 or 0.5.11; got {shown(version)}") from None
    if era is None:
        raise UsageError(f"--engine-version: {engine.name} releases before {release_text(engine.eras[0].first)} "
                         "are not modelled: "
                         f"{engine.eras[0].before}; got {shown(version)}")
    return era


MIX_NAME = re.compile(r"[A-Za-z0-9_.+-]{1,16}", re.ASCII)   # a traffic domain's name, as tables and the plan show it


def parse_mix(text):
    """--mix chat:0.7:0.7,code:0.3:0.4[:tokens] -> ((name, share, alpha[, output tokens]), ...); shares sum to 1."""
    mix = []
    for item in text.split(","):
        parts = item.strip().split(":")
        try:
            name, share, alpha = parts[0], float(ascii_number(parts[1])), float(ascii_number(parts[2]))
            tokens = int(ascii_number(parts[3])) if len(parts) == 4 else None
        except (IndexError, ValueError):
            raise UsageError(f"--mix: each item must be name:share:alpha or name:share:alpha:tokens; "
                             f"got {item!r}") from None
        if len(parts) not in (3, 4) or not MIX_NAME.fullmatch(name) or not 0.0 < share <= 1.0 \
                or not 0.0 <= alpha <= 1.0 or (tokens is not None and not 2 <= tokens <= TOKENS_LIMIT):
            raise UsageError(f"--mix: each item needs a name (up to 16 letters, digits and . _ + -), a share in "
                             f"(0, 1], an alpha in [0, 1] and optionally a mean output length of 2 to {TOKENS_LIMIT:,} "
                             f"tokens; got {item!r}")
        mix.append((name, share, alpha) if tokens is None else (name, share, alpha, tokens))
    if len({row[0] for row in mix}) != len(mix):
        raise UsageError(f"--mix: domain names must differ; got {text!r}")
    if abs(sum(row[1] for row in mix) - 1.0) > 1e-3:
        raise UsageError(f"--mix: shares must sum to 1; got {sum(row[1] for row in mix):g}")
    return tuple(mix)


def given_acceptance(grid):
    """A measurement typed on the command line: one acceptance length or rate at one K, else None.

    That is what a dashboard shows (SGLang and TensorRT-LLM report acceptance as a length or
    a rate, not as vLLM's counters), so the plan then runs on it instead of EXPECTED_ALPHA.
    """
    if grid.kind == "profile":   # a sweep at K = 1..n: its positions' shares as one average draft of K = n
        profile, k = list(grid.acceptance[0]), grid.ks[-1]
        shares = list(itertools.accumulate(profile, lambda a, b: a * b))
        counts = Counters(drafts=1.0, draft_tokens=float(k), accepted=sum(shares),
                          per_position=dict(enumerate(shares)), drafted_per_position=dict.fromkeys(range(k), 1.0))
        lengths = ", ".join(f"{profile_length(profile, i):.3g}" for i in grid.ks)
        guess = (f"past K = {k} the sweep measured nothing: the best-K search takes position {k}'s conditional "
                 f"alpha ({profile[-1]:.3f}) to repeat, a guess")
        return measured_acceptance(counts, f"--acceptance-length {lengths} at K = 1..{k}", notes=[guess],
                                   counted=False)
    if grid.kind == "alpha" or len(grid.ks) != 1 or len(grid.acceptance) != 1:
        return None
    k, value = grid.ks[0], grid.acceptance[0]
    tau = value if grid.kind == "length" else 1.0 + k * value
    flag = "--acceptance-length" if grid.kind == "length" else "--acceptance-rates"
    return measured_acceptance(one_average_draft(tau, k), f"{flag} {value:g} at K={k}", counted=False)


def read_scrapes(args, k_given, width=None):
    """--metrics, minus --metrics-before when given -> (the model it measures, measured acceptance); width: a
    tree's tokens drafted a round (measured_acceptance)."""
    model, later = pick_model(read_metrics(args.metrics, "--metrics"), args.served_model, "--metrics", args.metrics)
    source, notes, counts = f"--metrics {args.metrics}", [], later
    if args.metrics_before:
        before = read_metrics(args.metrics_before, "--metrics-before")
        if model not in before:
            raise UsageError(f"--metrics-before: {args.metrics_before} has no speculative metrics of {model!r}: "
                             "not the same server")
        counts = counters_window(later, before[model], ("--metrics", "--metrics-before"))
        source = f"--metrics {args.metrics} minus --metrics-before {args.metrics_before}"
        if is_sglang(later):
            notes.append("a gauge holds a value, not a count: the later scrape's is used")
    # The later scrape's own per-position counts are checked as well as the window's.
    k_known = None
    if later.per_position and None not in (later.drafts, later.draft_tokens, later.accepted):
        problem = profile_problem(later, max(later.per_position) + 1)
        if problem and counts.per_position:
            notes.append(f"per-position counters dropped (in --metrics, {problem}); the acceptance rate and length "
                         "are used")
            k_known = max(counts.per_position) + 1
            counts = replace(counts, per_position={}, drafted_per_position={})
    return model, measured_acceptance(counts, source, k_given, notes, k_known, width=width)


def read_benches(args):
    """--bench-baseline and --bench-spec -> (baseline or None, spec run or None), checked as a pair."""
    if args.bench_baseline and not args.bench_spec:
        raise UsageError("--bench-baseline: needs --bench-spec: give both, the same workload with speculation off "
                         "and on")
    if args.bench_baseline and os.path.realpath(args.bench_baseline) == os.path.realpath(args.bench_spec):
        raise UsageError("--bench-baseline: is the --bench-spec file itself: give the run with speculation off")
    base = read_bench(args.bench_baseline, "--bench-baseline") if args.bench_baseline else None
    spec = read_bench(args.bench_spec, "--bench-spec") if args.bench_spec else None
    if base:
        drafted = [key for key in ("spec_decode_num_drafts", "spec_decode_draft_tokens") if base.spec.get(key)]
        if drafted:
            raise UsageError(f"--bench-baseline: {base.path} has {drafted[0]} {shown(base.spec[drafted[0]])}: "
                             "a run with speculation on, not a baseline")
        same_workload(base, spec)
    if args.gate and base:
        for run in (base, spec):
            if not run.latency.get("p99_tpot_ms"):
                raise UsageError(f"--gate: {run.flag} {run.path} has no usable p99_tpot_ms (missing, null, NaN "
                                 f"or 0): run the benchmark with --percentile-metrics {','.join(BENCH_METRICS)} "
                                 f"--metric-percentiles {','.join(map(str, BENCH_PERCENTILES))}")
            if not run.output_throughput:
                raise UsageError(f"--gate: {run.flag} {run.path} has no usable output_throughput (missing, null, "
                                 "NaN or 0): save the whole result (--save-result), not an excerpt")
    return base, spec


GATE_MIN_DRAFTS = 100   # counted drafts a gate needs: a rate over n drafts has a standard error up to 0.5 / sqrt(n),
                        # 0.05 at 100, half the gate's default margin


def noted(measured, *notes):
    """The measurement with notes added."""
    return replace(measured, notes=list(measured.notes) + list(notes))


def check_model(name, dep, flag, served):
    """Refuse a measurement of another model than the deployment's (its catalog or config name, or the checkpoint
    the plan serves), unless --served-model confirms the name as this deployment's alias."""
    ours = [dep.shape["hf"], served_model(dep)] if dep.shape.get("hf") else []
    if name and ours and not any(same_model(name, n) for n in ours) and not (served and same_model(name, served)):
        raise UsageError(f"{flag}: measures the model {shown(name)}, not this deployment's {ours[0]!r}: check --model "
                         f"or --model-config, or confirm an alias (--served-model-name) with --served-model {shown(name)}")


def parse_evidence(args, grid, dep):
    """The measurement flags -> Evidence: reads and checks every file named, for the deployment dep."""
    if args.metrics_before and not args.metrics:
        raise UsageError("--metrics-before: needs --metrics, the later scrape")
    if args.served_model is not None and not (args.metrics or args.bench_spec):
        raise UsageError("--served-model: names the served model of a --metrics scrape or a --bench-spec run; give one")
    k_given = grid.ks[0] if args.ks is not None and len(grid.ks) == 1 else None
    typed = given_acceptance(grid)   # one length or rate at one K is a measurement
    measured = comparison = model = None
    if args.metrics:
        model, measured = read_scrapes(args, k_given, dep.verify_tokens - 1 if dep.topk > 1 else None)
        check_model(model, dep, "--metrics", args.served_model)
    if typed and measured:
        raise UsageError(f"{typed.source.split()[0]}: {measured.source} measures acceptance already: give the "
                         "measurement one way")
    base, spec = read_benches(args)
    if spec:
        if model and spec.model_id and not same_model(model, spec.model_id):
            if args.served_model is None:
                raise UsageError(f"--bench-spec: model_id {spec.model_id!r} is not the scrape's model_name "
                                 f"{model!r}: the files come from different servers (if the server runs with "
                                 "--served-model-name, confirm the pair with --served-model NAME)")
            measured = noted(measured, f"the scrape's model {model!r} is taken to be the benchmark's "
                                       f"{spec.model_id!r} (--served-model)")
        check_model(spec.model_id, dep, "--bench-spec", args.served_model)
        own = bench_acceptance(spec, "--bench-spec")
        if typed and own:
            raise UsageError(f"{typed.source.split()[0]}: {own.source} measures acceptance "
                             "already: give the measurement one way")
        if measured and own:
            measured = noted(measured, f"acceptance from {measured.source}; the benchmark's own counts "
                                       f"(rate {own.acceptance_rate:.3f}) were not used")
        measured = measured or own or typed
        if measured is None:
            raise UsageError(f"--bench-spec: {args.bench_spec} has no spec_decode_* keys; give --metrics, or the "
                             "acceptance your engine reports as --acceptance-length or --acceptance-rates with one --ks")
        measured = noted(measured, *spec.notes, *(base.notes if base else []))
    if base:
        comparison = bench_comparison(base, spec)
    measured = measured or typed
    if args.gate and measured is None:
        raise UsageError("--gate: needs a measurement: --metrics, --bench-spec, or one --acceptance-length or "
                         "--acceptance-rates value at one --ks")
    if args.gate and measured.drafts is not None and measured.drafts < GATE_MIN_DRAFTS:
        raise UsageError(f"--gate: {measured.source} counts {measured.drafts:g} drafts, fewer than the "
                         f"{GATE_MIN_DRAFTS} a gate needs: measure over more traffic")
    if comparison and comparison.tpot_speedup and comparison.tpot_speedup > 1.1 * (measured.k + 1):
        raise UsageError(f"--bench-spec: a {comparison.tpot_speedup:.1f}x mean-TPOT speedup at K = "
                         f"{measured.k} is more than K + 1 tokens a round can give: not one deployment's pair of "
                         "runs")
    target_concurrency = None
    if args.target_concurrency is not None:
        target_concurrency = parse_one("--target-concurrency", args.target_concurrency, int,
                           f"an integer from 1 to {CONCURRENCY_LIMIT:,}", lambda b: 1 <= b <= CONCURRENCY_LIMIT)
    elif spec and spec.max_concurrency:
        target_concurrency = int(spec.max_concurrency)
    if spec and spec.open_loop:
        measured = noted(measured, "the benchmark's concurrency is not known (an open-loop request-rate run, or a "
                                   "file without max_concurrency): the gate is for B = " +
                                   (f"{target_concurrency}, from --target-concurrency" if target_concurrency else
                                    f"{max(grid.concurrencies)}, the grid's largest concurrency"))
    margin = parse_one("--gate-margin", args.gate_margin, _finite, "a number in [0, 1)", lambda x: 0 <= x < 1) \
        if args.gate_margin is not None else GATE_MARGIN
    budget = parse_one("--p99-budget", args.p99_budget, _finite, "a number from 0 to 100 (a fraction)",
                       lambda x: 0 <= x <= 100) \
        if args.p99_budget is not None else P99_BUDGET
    mix = parse_mix(args.mix) if args.mix is not None else TRAFFIC_MIX
    return Evidence(measured=measured, comparison=comparison, target_concurrency=target_concurrency, mix=mix,
                    margin=margin, budget=budget, served_model=args.served_model)


@dataclass(frozen=True)
class Traffic:
    """What the simulated requests are drawn from."""
    seed: int = SEED                     #: seeds every simulated request
    alpha_spread: float = ALPHA_SPREAD   #: s.d. of a request's per-token alpha around the mean
    output_spread: float = OUTPUT_SPREAD   #: s.d. of ln(output tokens) over requests


@dataclass(frozen=True)
class Result:
    """Everything the tables, the plan and --json show (run_model; compute adds the calibration and exercises)."""
    cells: list              #: Cell per grid cell
    breakeven: list          #: BreakEven rows
    eps_b1: dict = field(metadata=NOT_IN_JSON)   #: {(K, the grid's eps at B=1): decode eps at B=1}
    facts: Facts = None      #: what the deployment lines and the summary say about the deployment
    alpha_spread: float = ALPHA_SPREAD   #: the simulated requests' spread of alpha
    output_spread: float = OUTPUT_SPREAD   #: their spread of ln(output tokens)
    best_k: list = None      #: BestK rows
    plan: Plan = None
    mix: Mix = None          #: None when no mix is given
    charts: Charts = None    #: None unless the plan's files are written
    measured: Measured = None
    gate: Gate = None
    calibration: Calibration = None
    exercises: Exercises = None
    trust: Trust = None      #: how far to believe the predictions: the intervals' s.d. and their basis
    benches: list = None     #: PredictedBench per file --predict-bench writes
    gate_runs: list = None   #: the gate's pair of runs, predicted (gate_runs): only when the plan is written
    comparisons: list = None   #: (path, PredictedBench, rows, notes) per --compare file


def run_model(grid, dep, evidence=Evidence(), traffic=Traffic(), fit=FIT, progress=None, charts=True, trust=None):
    """Everything the tables, the plan and --json show, each part from its own function, on shared requests.

    charts: whether to compute what only the plan's files show too (the charts' data, the gate pair predicted
    by gate_runs); trust: how far to believe the model (trust_in; default: the published data's error for this
    deployment).
    """
    trust = trust or trust_in(dep)
    decode = decoder(traffic.seed, traffic.alpha_spread, traffic.output_spread, dep.output_tokens)
    cells, breakeven, eps_b1 = analyse(grid, dep, decode, fit, progress)
    cells = [with_intervals(c, trust) for c in cells]
    facts = deployment_facts(grid, dep, fit)
    measured = evidence.measured
    target_concurrency = evidence.target_concurrency or max(grid.concurrencies)
    inputs = plan_input(measured, grid, traffic.alpha_spread)
    batches = sorted(set(grid.concurrencies) | ({target_concurrency} if measured else set()))
    best = best_k_table(dep, inputs.sources, batches, fit, trust.speedup_sd)
    plan = plan_choices(grid, dep, decode, fit, inputs.acceptance, inputs.alpha, target_concurrency,
                        evidence.margin, inputs.k_in_use, measured is not None, inputs.requests, evidence.budget,
                        evidence.served_model, trust.speedup_sd)
    plan = replace(plan, tail=[with_intervals(c, trust) for c in plan.tail])
    mix = mix_result(evidence.mix, dep, plan.k, plan.shown_batch, decode, fit,
                     assumed=evidence.mix is TRAFFIC_MIX) if evidence.mix else None   # the constant's example
    if mix is not None:
        mix = replace(mix, blended_speedup_interval=interval(mix.blended_speedup, trust.speedup_sd))
    return Result(cells=cells, breakeven=breakeven, eps_b1=eps_b1, facts=facts, alpha_spread=traffic.alpha_spread,
                  output_spread=traffic.output_spread, best_k=best, plan=plan, mix=mix,
                  charts=chart_data(grid, dep, plan, decode, fit) if charts else None,
                  measured=measured_predictions(measured, evidence.comparison, dep, batches, target_concurrency,
                                                decode, fit, inputs.requests) if measured else None,
                  gate=gate(measured, evidence.comparison, dep, plan, evidence.budget) if measured else None,
                  trust=trust, gate_runs=gate_runs(dep, plan, trust, traffic, fit) if charts else None)


MAX_BENCH_PROMPTS = 100_000   # a predicted or replayed run's prompts: each is simulated
MIN_RATE = 1e-3               # requests/s: slower, a run of --num-prompts would last days, and its times lose digits


@dataclass(frozen=True)
class BenchFlags:
    """The benchmark-file flags (parse_bench_flags)."""
    folder: Path = None      #: --predict-bench
    prompts: int = None      #: --num-prompts (None: the plan's)
    rates: tuple = ()        #: --request-rate: open-loop runs instead of closed-loop ones
    burstiness: float = 1.0  #: --burstiness
    compare: tuple = ()      #: --compare paths
    output_spread: float = 0.0   #: the predicted runs' s.d. of ln(output tokens): 0 (random prompts with
                                 #: --ignore-eos, as the plan's calibration runs), or --output-spread when given
    spec_path: str = None    #: the real path of --bench-spec: a --compare file without spec_decode_* keys that is
                             #: this one is replayed at the acceptance the scrapes measured


def parse_bench_flags(args, grid, dep, out, read_paths, output_spread):
    """--predict-bench, --num-prompts, --request-rate, --burstiness and --compare, checked before anything runs;
    output_spread: the predicted runs' (--output-spread if given, else 0: the plan's random-prompt runs)."""
    asked = args.predict_bench is not None or args.compare is not None
    for flag, value in (("--num-prompts", args.num_prompts), ("--request-rate", args.request_rate),
                        ("--burstiness", args.burstiness)):
        if value is not None and args.predict_bench is None:
            raise UsageError(f"{flag}: shapes the runs --predict-bench writes; give --predict-bench DIR too")
    if asked and not simulated_layout(dep):
        raise UsageError("--predict-bench, --compare: " + ("a tree's rounds are not a chain's: predict chains only"
                         if dep.topk > 1 else "attention data parallelism runs a scheduler on every rank, which the "
                         "simulation does not: predict without --dp-attention"))
    prompts = parse_one("--num-prompts", args.num_prompts, int, f"an integer from 1 to {MAX_BENCH_PROMPTS:,}",
                        lambda n: 1 <= n <= MAX_BENCH_PROMPTS) if args.num_prompts is not None else None
    rates = parse_list("--request-rate", args.request_rate, _finite,
                       f"a rate from {MIN_RATE:g} to {CONCURRENCY_LIMIT:,} requests/s",
                       lambda r: MIN_RATE <= r <= CONCURRENCY_LIMIT) if args.request_rate is not None else ()
    if len({f"{r:g}" for r in rates}) < len(rates):   # two rates, one file name
        raise UsageError(f"--request-rate: each rate once; got {args.request_rate!r}")
    burstiness = parse_one("--burstiness", args.burstiness, _finite, "a number from 0.01 to 100",
                           lambda b: 0.01 <= b <= 100) if args.burstiness is not None else 1.0
    compare = ()
    if args.compare is not None:
        compare = tuple(p.strip() for p in args.compare.split(","))
        if any(not p for p in compare):
            raise UsageError(f"--compare: expected a comma list of files; got {args.compare!r}")
    if args.predict_bench is not None and min(running_cap(dep, False), running_cap(dep, True)) < 1:
        raise UsageError(f"--predict-bench: not one sequence of {dep.input_tokens} + {dep.output_tokens} tokens fits "
                         f"beside the weights on {dep.tp} x {dep.gpu}: no run to predict")
    if args.predict_bench is not None and not rates and prompts is None:
        most = max(bench_prompts(b) for b in grid.concurrencies)
        if most > MAX_BENCH_PROMPTS:
            raise UsageError(f"--predict-bench: the plan's runs at concurrency {max(grid.concurrencies):,} send "
                             f"{most:,} prompts, more than the {MAX_BENCH_PROMPTS:,} this tool simulates: give "
                             "--num-prompts")
    reads = compare + tuple(read_paths) + tuple(getattr(args, flag) for flag in (
        "metrics", "metrics_before", "bench_baseline", "bench_spec", "model_config", "draft_config"))
    folder = bench_folder(args.predict_bench, [name for _, _, tag in bench_tags(grid.concurrencies, rates)
                                               for name in bench_names(grid.ks, tag)],
                          reads, out) if args.predict_bench is not None else None
    return BenchFlags(folder=folder, prompts=prompts, rates=rates, burstiness=burstiness, compare=compare,
                      output_spread=output_spread, spec_path=os.path.realpath(args.bench_spec) if args.bench_spec
                      else None)


def bench_folder(text, names, reads, out):
    """--predict-bench's folder: an existing one this program may write in, where no file it would write (names)
    is a link, a folder, a file this run reads or writes, or a file that is not one of its own predictions."""
    folder = Path(text)
    if not folder.is_dir():
        raise UsageError(f"--predict-bench: {text!r} is not an existing folder")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"--predict-bench: cannot write in the folder {text!r}")
    used = {os.path.realpath(p) for p in reads if p}
    if out is not None:
        used |= {os.path.realpath(out.parent / name) for name in [out.name, *CHART_FILES.values()]}
    for name in names:
        check_bench_target(folder / name, used)
    return folder


def check_bench_target(path, taken):
    """Refuse to replace anything at path but a prediction this tool wrote there before, or a path this run reads
    or writes otherwise (taken: real paths)."""
    if os.path.realpath(path) in taken:
        raise UsageError(f"--predict-bench: would overwrite {str(path)!r}, which this run reads or writes: predict "
                         "into another folder")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise UsageError(f"--predict-bench: {str(path)!r} exists and is not a regular file")
    try:
        with open(path, "rb") as f:
            head = f.read(BENCH_LIMIT_BYTES)
        data = json.loads(head.decode("utf-8"))
        mine = isinstance(data, dict) and isinstance(data.get(PREDICTION_KEY), dict)
    except (OSError, ValueError, TypeError, UnicodeDecodeError):
        mine = False
    if not mine:
        raise UsageError(f"--predict-bench: {str(path)!r} exists and is not a prediction this tool wrote (a measured "
                         "run?): predict into another folder")


def parse_args(argv):
    """Flags -> (grid, deployment, evidence, traffic, out path, json?, gate?, exercises?, runs). Raises UsageError."""
    args = build_parser().parse_args(argv)
    check_values(args)
    out = None if args.no_write else (out_path(args.out) if args.out is not None else OUT_PATH)
    grid = parse_grid(args)
    dep = parse_deployment(args)
    if dep.topk > 1 and ((grid.kind != "length" and not args.metrics) or len(grid.ks) != 1):
        raise UsageError("--draft-topk: a tree's acceptance length is measured, not the chain formula: give "
                         "--acceptance-length TAU, or a --metrics scrape, at its one --ks (the steps)")
    if dep.topk == 1 and dep.verify_tokens is not None and (len(grid.ks) != 1 or dep.verify_tokens != grid.ks[0] + 1):
        raise UsageError(f"--verify-tokens: a chain verifies K + 1 tokens; got {dep.verify_tokens} for --ks "
                         f"{','.join(map(str, grid.ks))}")
    if dep.topk > 1:
        steps = grid.ks[0]
        # A round accepts at most one path, steps deep, and no more tokens than it verified.
        engine = dep.engine
        least, most = engine.tree_tokens(dep.topk, steps)
        if not least <= dep.verify_tokens <= most:
            raise UsageError(f"--verify-tokens: {engine.name}'s tree of top-{dep.topk} over {steps} steps verifies "
                             f"{least} to {most} tokens a sequence ({engine.tree_limit_why}); got {dep.verify_tokens}")
        if grid.kind == "length" and grid.acceptance[0] > dep.verify_tokens:
            raise UsageError(f"--acceptance-length: a round accepts at most the {dep.verify_tokens} tokens it "
                             f"verifies; got {grid.acceptance[0]:g}")
        dep = replace(dep, tree_steps=steps)
    evidence = parse_evidence(args, grid, dep)
    if dep.topk > 1 and grid.kind != "length":   # a tree measured by a scrape: its grid is the length measured
        tau = evidence.measured.acceptance_length
        if tau > dep.verify_tokens:
            raise UsageError(f"--metrics: the scrape's acceptance length {tau:.3f} is more than the {dep.verify_tokens} "
                             "tokens the tree verifies: not this tree's server")
        grid = replace(grid, acceptance=(round(tau, 6),), kind="length")
    seed = parse_one("--seed", args.seed, int, "an integer") if args.seed is not None else SEED
    spread = parse_one("--alpha-spread", args.alpha_spread, _finite, "a number in [0, 0.5]",
                       lambda s: 0.0 <= s <= 0.5) if args.alpha_spread is not None else ALPHA_SPREAD
    output_spread = parse_one("--output-spread", args.output_spread, _finite, "a number in [0, 2]",
                              lambda s: 0.0 <= s <= 2.0) if args.output_spread is not None else OUTPUT_SPREAD
    traffic = Traffic(seed=seed, alpha_spread=spread, output_spread=output_spread)
    paths = [p.strip() for p in args.calibrate.split(",")] if args.calibrate is not None else list(CALIBRATION_FILES)
    if any(not p for p in paths):
        raise UsageError(f"--calibrate: expected a comma list of files; got {args.calibrate!r}")
    runs = read_calibration_runs(paths) if paths else None
    if out is not None:
        written = {os.path.realpath(out.parent / name) for name in [out.name, *CHART_FILES.values()]}
        for flag, path in [("--metrics", args.metrics), ("--metrics-before", args.metrics_before),
                           ("--bench-baseline", args.bench_baseline), ("--bench-spec", args.bench_spec),
                           ("--model-config", args.model_config), ("--draft-config", args.draft_config),
                           *(("--calibrate", path) for path in paths)]:
            if path and os.path.realpath(path) in written:
                raise UsageError(f"--out: would overwrite {path}, which {flag} reads: write the plan elsewhere")
    bench = parse_bench_flags(args, grid, dep, out, paths, output_spread if args.output_spread is not None else 0.0)
    return grid, dep, evidence, traffic, out, args.json, args.gate, args.exercises, runs, bench


def compare_file(path, dep, trust, traffic, fit, served, scraped=None, plan_batch=None):
    """--compare: one measured file and the prediction of its own run (its lengths, concurrency or rate, prompts
    and acceptance; scraped: the acceptance --metrics measured, for the --bench-spec run whose file records none;
    plan_batch: an open loop's server cap, as the plan's command sets it): (path, PredictedBench, rows, notes)."""
    flag = "--compare"
    bench = read_bench(path, flag)
    check_model(bench.model_id, dep, flag, served)
    completed, prompts, outputs = run_totals(bench, flag, path, "the runs this tool replays", least_output=1)
    rate = bench.workload.get("request_rate")
    rate = math.inf if rate in (None, "inf") or (isinstance(rate, float) and math.isinf(rate)) else rate
    if rate != math.inf and not (finite_number(rate) and MIN_RATE <= rate <= CONCURRENCY_LIMIT):
        raise UsageError(f"{flag}: {path}: request_rate must be \"inf\" or a rate from {MIN_RATE:g} to "
                         f"{CONCURRENCY_LIMIT:,} requests/s; got {shown(rate)}")
    burstiness = bench.raw_burstiness
    if burstiness is None:
        burstiness = 1.0   # files before --burstiness: Poisson
    elif not (finite_number(burstiness) and 0.01 <= burstiness <= 100):
        raise UsageError(f"{flag}: {path}: burstiness must be a number from 0.01 to 100; got {shown(burstiness)}")
    if completed > MAX_BENCH_PROMPTS:
        raise UsageError(f"{flag}: {path} completed {completed:,} requests; this tool replays at most "
                         f"{MAX_BENCH_PROMPTS:,}")
    n = bench.workload.get("num_prompts")
    n = n if type(n) is int and 1 <= n <= MAX_BENCH_PROMPTS else completed
    if bench.max_concurrency is None and rate == math.inf:
        raise UsageError(f"{flag}: {path} records neither max_concurrency nor a request rate: its run cannot be "
                         "replayed")
    notes = list(bench.notes)
    spread = length_spread(bench.latency)
    if spread is None:   # no spreads to read: equal answers if the total divides evenly, else --output-spread's
        spread = 0.0 if outputs % completed == 0 else traffic.output_spread
        notes.append(f"the file gives no E2EL and TTFT spreads: answers drawn with an s.d. of {spread:g} in log")
    elif spread < SAME_LENGTHS:
        spread = 0.0   # random prompts with --ignore-eos: every answer as long
    else:
        notes.append(f"its answers differ in length: drawn log-normal with an s.d. of {spread:.2f} in log, as its "
                     "E2EL and TTFT spreads imply")
    if n != completed:
        notes.append(f"{n - completed} of its {n} requests failed: replayed with the {completed} that completed")
    work = Workload(num_prompts=completed, max_concurrency=bench.max_concurrency,
                    request_rate=rate, burstiness=burstiness, input_tokens=round(prompts / completed),
                    output_tokens=round(outputs / completed), output_spread=spread, total_output=outputs)
    acceptance = bench_acceptance(bench, flag) if bench.spec else scraped
    if bench.spec and acceptance is None:
        raise UsageError(f"{flag}: {path} is a speculative run without its K and acceptance in its spec_decode_* "
                         "keys: this tool cannot replay it")
    k, alpha, spread = 0, 0.0, traffic.alpha_spread
    if acceptance is not None:
        # Requests centred so that their rounds deliver the measured tau in aggregate, as counters add them up.
        k = acceptance.k
        alpha, spread = center_requests(acceptance.acceptance_length, k, traffic.alpha_spread)
        notes.append(f"acceptance from {'its own spec_decode_* keys' if bench.spec else acceptance.source}: K = {k}, "
                     f"tau {acceptance.acceptance_length:.3f}, requests around alpha {alpha:.3f} (s.d. {spread:.2f})")
    else:
        notes.append("no spec_decode_* keys: replayed with speculation off")
    here = at_lengths(dep, work.input_tokens, work.output_tokens)
    if running_cap(here, k > 0, work.max_concurrency or plan_batch) < 1:
        raise UsageError(f"{flag}: {path}: not one sequence of its {work.input_tokens} + {work.output_tokens} "
                         f"tokens fits beside the weights on {dep.tp} x {dep.gpu}")
    pb = predict_bench(here, Path(path).name, work, k, alpha, trust, traffic.seed, fit, spread,
                       work.max_concurrency or plan_batch)
    measured_keys = dict(bench.latency, **bench.others, output_throughput=bench.output_throughput)
    rows = compare_rows(pb, measured_keys)
    missing = [key for key in pb.intervals if key not in {row[0] for row in rows}]
    if missing:   # absent, null, NaN (vllm bench's mark of a statistic without a sample) or 0
        notes.append(f"not compared, the file gives no value above 0: {', '.join(missing)}")
    return path, pb, rows, notes


UNPRINTABLE = {"Cc", "Cf", "Cs", "Zl", "Zp"}   # Unicode categories: controls (C0, C1, NEL), format characters
                                              # (bidi overrides), surrogates (bytes that are not UTF-8), line breaks


def check_values(args):
    """Refuse a flag given an empty value (it would silently mean the default), or one that holds a character that
    could break a line of the plan or a terminal: a control, a line separator, or bytes that are not UTF-8."""
    for dest, value in vars(args).items():
        if isinstance(value, str):
            flag = "--" + dest.replace("_", "-")
            if not value.strip():
                raise UsageError(f"{flag}: empty value; give one, or leave the flag out for its default")
            if any(unicodedata.category(c) in UNPRINTABLE for c in value):
                raise UsageError(f"{flag}: {ascii(value)} holds a control character, a line separator or bytes "
                                 "that are not UTF-8")


def out_path(text):
    """--out, checked before anything runs: a file's name (not a folder's, not a chart's) in an existing folder
    this program may write in, where the plan and its charts will replace nothing but regular files."""
    path = Path(text)
    if text.endswith(("/", os.sep)) or path.is_dir():
        raise UsageError(f"--out: {text!r} is a folder: name the plan's file in it, e.g. {str(path / 'plan.md')!r}")
    if path.name in CHART_FILES.values():
        raise UsageError(f"--out: {path.name} is the name of a chart the plan links to: name the plan otherwise")
    folder = path.parent
    if not folder.is_dir():
        raise UsageError(f"--out: the folder {str(folder)!r} does not exist")
    try:
        longest = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        longest = 255
    if len(os.fsencode(path.name)) > longest:
        raise UsageError(f"--out: the file's name is too long ({len(os.fsencode(path.name))} bytes; this file system "
                         f"takes {longest})")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"--out: cannot write in the folder {str(folder)!r}")
    for target in [path] + [folder / name for name in CHART_FILES.values()]:
        try:
            mode = os.lstat(target).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            raise UsageError(f"--out: {str(target)!r} exists and is not a regular file (a link, a folder, a pipe or a "
                             "device): the plan would replace it")
    return path


PROGRESS_AFTER = 2.0   # seconds: a run expected to take longer shows its progress on stderr, if a terminal


def progress_meter(grid, stream):
    """A progress callback for analyse when stream is a terminal and the run should take over PROGRESS_AFTER, else None.

    The estimate, 10 ms an (alpha, K) pair plus 2 ms per draft token of its K (a long K at a high alpha needs
    more simulated requests: up to 0.12 s at alpha 0.99, K = 32), and 0.2 ms a cell, is what grids took on a
    2-core machine (22 alphas x 5 Ks x 4 overheads x 8 concurrencies: 3,520 cells in about 1 s).
    """
    pairs = len(grid.ks) * len(grid.acceptance)
    cells = pairs * len(grid.overheads) * len(grid.concurrencies)
    seconds = (0.010 * pairs + 0.002 * sum(grid.ks) * len(grid.acceptance)) + 0.0002 * cells
    if not stream.isatty() or seconds < PROGRESS_AFTER:
        return None

    def show(done, total):
        line = f"simulating requests: {done}/{total} (alpha, K) pairs"
        stream.write("\r" + (line if done < total else " " * len(line) + "\r"))
        stream.flush()

    return show


def write_all(files):
    """Write every file of {path: text} or none. Each is written to a new temporary in its folder, and each file it
    will replace is kept as a backup (a hard link, else a copy); then all are renamed into place, and if a rename
    fails the files placed before it are put back. Only the files, old or new, are left."""
    temporaries, backups, placed = {}, {}, []
    try:
        for number, (path, text) in enumerate(files.items()):
            temporary = path.parent / f".eagle3-rollout-{os.getpid()}-{number}.tmp"   # short: any name that fits
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)      # never someone else's file
            temporaries[path] = temporary
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            if os.path.lexists(path):
                backups[path] = temporary.with_suffix(".bak")
                try:
                    os.link(path, backups[path])
                except OSError:           # a file system without hard links
                    shutil.copy2(path, backups[path])
        for path, temporary in temporaries.items():
            os.replace(temporary, path)
            placed.append(path)
    except BaseException:
        for path in placed:
            if path in backups:
                os.replace(backups[path], path)
            else:
                os.unlink(path)
        raise
    finally:
        for leftover in [*temporaries.values(), *backups.values()]:
            if os.path.lexists(leftover):
                os.unlink(leftover)


def compute(argv):
    """Everything a run prints and writes, computed before anything is written: (exit status, report, files)."""
    grid, dep, evidence, traffic, out, as_json, as_gate, exercises, runs, bench = parse_args(argv)
    fit, calibration = calibrate_on_runs(dep, runs) if runs else (FIT, None)
    trust = trust_in(dep, calibration)
    if calibration and calibration.worst_error > OWN_WORST:
        worst = next(r for r in calibration.runs if r.path == calibration.disagreeing)
        raise UsageError(f"--calibrate: the files disagree beyond what the model can fit: {worst.path} is "
                         f"{worst.held_out_error * 100:+.0f}% off what the others predict; check they are one "
                         "deployment and one workload, and rerun that one")
    far = calibration and max(calibration.runs, key=lambda r: abs(math.log1p(r.held_out_error)))
    if calibration and abs(math.log1p(far.held_out_error)) > math.log1p(OWN_HELD_OUT):
        raise UsageError(f"--calibrate: the files disagree: {far.path} is {far.held_out_error * 100:+.0f}% off what "
                         "the other runs predict when it is left out (the fit reaches it only by bending a factor); "
                         "check it is the same deployment and workload, and rerun it")
    result = run_model(grid, dep, evidence, traffic, fit, progress_meter(grid, sys.stderr), charts=out is not None,
                       trust=trust)
    result = replace(result, calibration=calibration, exercises=solve_exercises(
        dep, grid, evidence.mix or TRAFFIC_MIX, traffic.seed, fit, traffic.alpha_spread, traffic.output_spread)
        if exercises else None)
    benches = predicted_benches(dep, grid.ks, result.plan.request_alpha, trust, grid.concurrencies, bench.rates,
                                bench.prompts, bench.burstiness, traffic.seed, fit, result.plan.request_spread,
                                bench.output_spread, result.plan.shown_batch) if bench.folder else None
    comparisons = [compare_file(path, dep, trust, traffic, fit, evidence.served_model,
                                evidence.measured if os.path.realpath(path) == bench.spec_path else None,
                                result.plan.shown_batch) for path in bench.compare]
    result = replace(result, benches=benches, comparisons=comparisons or None)
    if as_json:
        report = render_json(result, dep, grid)
    elif exercises:
        report = "\n".join(deployment_lines(dep, result)[:3] + [""] + render_exercises(result.exercises, dep)
                           + (render_gate(result.gate) if as_gate else [])) + "\n"
    else:
        report = render_tables(result, dep, grid)
        if benches:
            report += "\n".join(render_benches(benches, bench.folder)) + "\n"
        if comparisons:
            report += "\n".join(render_compare(comparisons)) + "\n"
    files = {}
    if out is not None:
        files = {out.parent / name: svg for name, svg in render_charts(result, dep).items()}
        files[out] = render_plan(result, dep)
    for pb in benches or ():
        files[bench.folder / pb.name] = render_bench_file(pb, dep)
    status = (0 if result.gate.verdict == "pass" else 1) if as_gate else 0
    return status, printable(report), {path: printable(text) for path, text in files.items()}


def printable(text):
    """text with any control, format or line-separator character but the newline shown as its escape: names and
    labels read from files reach the tables, the plan and error lines, and must not drive a terminal."""
    return "".join(c if c == "\n" or unicodedata.category(c) not in UNPRINTABLE else ascii(c)[1:-1] for c in text)


def main(argv=None):
    """Run the grid, print tables (or JSON), write the rollout plan. Returns the exit status:
    2 for bad input, with one line on stderr and nothing written; with --gate, 0 if the gate passes and 1 if it
    fails (1 means nothing else)."""
    def refuse(message):
        print("main.py: error: " + printable(" ".join(message.split())), file=sys.stderr)
        return 2

    files = {}
    try:
        status, report, files = compute(sys.argv[1:] if argv is None else argv)
        write_all(files)
    except UsageError as err:
        return refuse(str(err))
    except OSError as err:   # the checks on --out passed, yet the writing failed: a full disk, a race
        flags = [flag for flag, mine in (("--predict-bench", lambda p: p.suffix == ".json"),
                                         ("--out", lambda p: p.suffix != ".json")) if any(map(mine, files))]
        where = Path(err.filename).parent if err.filename else None   # the folder: the file was a temporary
        folder = shown(str(where)) if where else "its folder"
        return refuse(f"{' and '.join(flags) or '--out'}: cannot write in {folder}: {err.strerror or err}; nothing "
                      "was written")
    except KeyboardInterrupt:
        return refuse("interrupted; nothing was written")
    except Exception as err:   # a case no check foresaw: still one line and exit 2, never a traceback or exit 1
        return refuse(f"internal error on this input ({type(err).__name__}: {err}); nothing was written. Please "
                      "report the command line")
    try:
        sys.stdout.write(report)
        sys.stdout.flush()
    except BrokenPipeError:    # `main.py | head`: the reader left; the exit status still says what the run found
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return status


if __name__ == "__main__":
    sys.exit(main())
