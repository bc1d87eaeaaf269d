"""The catalog: GPUs, target models, engines with their release eras, draft heads and draft models, as rows of
data with their sources in comments.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


# GPUs, dense (no sparsity). Memory in GiB: the marketed "80 GB" of an H100 is taken as 80 GiB =
# 85.9e9 bytes. Bandwidth TB/s, peak TFLOP/s per dtype; fp8 None
# = no fp8 tensor cores (fp8 weights then run as W8A16 at the bf16 rate). link: GB/s one
# way between two GPUs, what an all-reduce's bytes cross (NVLink 4: 450, NVLink 3: 300,
# NVLink 5: 900, PCIe Gen5 x16: 64, Gen4 x16: 32, MI300X's seven Infinity Fabric links: 448; the
# vendors' figures, halved where they quote both directions; aiconfigurator's
# h100_sxm.yaml uses 450e9 intra-node).
GPUS = {
    "a100-sxm-80gb": dict(memory_gib=80,  bandwidth_tbs=2.039, bf16=312,  fp8=None, family="ampere",    link=300),  # NVIDIA datasheet, via ai-dynamo/aiconfigurator a100_sxm.yaml
    "h100-sxm":      dict(memory_gib=80,  bandwidth_tbs=3.35,  bf16=989,  fp8=1979, family="hopper",    link=450),  # aiconfigurator h100_sxm.yaml
    "h100-pcie":     dict(memory_gib=80,  bandwidth_tbs=2.0,   bf16=756,  fp8=1513, family="hopper",    link=64),   # aiconfigurator h100_pcie.yaml
    "h100-nvl":      dict(memory_gib=94,  bandwidth_tbs=3.9,   bf16=835,  fp8=1671, family="hopper",    link=300),  # NVIDIA H100 datasheet, H100 NVL column (94 GB HBM3, 3.9 TB/s; BF16 1,671 and FP8 3,341 TFLOPS with sparsity, halved here; NVLink bridge 600 GB/s both ways, one GPU pair)
    "h200":          dict(memory_gib=141, bandwidth_tbs=4.8,   bf16=989,  fp8=1979, family="hopper",    link=450,
                          bw_rel=0.916),  # aiconfigurator h200_sxm.yaml; bw_rel below
    "b200":          dict(memory_gib=180, bandwidth_tbs=8.0,   bf16=2250, fp8=4500, fp4=9000, family="blackwell", link=900,
                          bw_rel=0.807),  # aiconfigurator b200_sxm.yaml (sources give 7.7-8 TB/s); bw_rel below
    "l40s":          dict(memory_gib=48,  bandwidth_tbs=0.864, bf16=362,  fp8=733,  family="ada",       link=32),   # NVIDIA L40S datasheet
    "rtx-4090":      dict(memory_gib=24,  bandwidth_tbs=1.008, bf16=165,  fp8=330,  family="ada",       link=32),   # spec table, fp32 accumulate
    "mi300x":        dict(memory_gib=192, bandwidth_tbs=5.3,   bf16=1307, fp8=2615, family="cdna",      link=448,
                          mla_splits=16),  # AMD specs; 8 GPUs fully connected by 7 Infinity Fabric links of 64 GB/s each way
    # The GPUs of the 2026 published runs (bench/published_moe_2026.json). None has a measured point
    # here: each reads at its family's fitted share (GH200 and H20: the H100's; B300: the B200's bw_rel, the same
    # eight HBM3e stacks; MI325X and MI355X: the MI300X's, fitted on 2024's ROCm, CDNA 4 included).
    "gh200":         dict(memory_gib=96,  bandwidth_tbs=4.0,   bf16=989,  fp8=1979, family="hopper",    link=450),  # NVIDIA GH200 datasheet (HBM3); NVLink between GPUs in NVL2/NVL32 builds only
    "gh200-144gb":   dict(memory_gib=144, bandwidth_tbs=4.9,   bf16=989,  fp8=1979, family="hopper",    link=450),  # the same datasheet, HBM3e
    "h20":           dict(memory_gib=96,  bandwidth_tbs=4.0,   bf16=148,  fp8=296,  family="hopper",    link=450),  # aiconfigurator h20_sxm.yaml (commit e9fbc0a5)
    "b300":          dict(memory_gib=288, bandwidth_tbs=7.75,  bf16=2250, fp8=4500, fp4=13500, family="blackwell", link=900,
                          bw_rel=0.807),  # aiconfigurator b300_sxm.yaml (Blackwell Ultra datasheet); fp4: DGX B300's 108 PF dense over 8 (the YAML: 14,000)
    "mi325x":        dict(memory_gib=256, bandwidth_tbs=6.0,   bf16=1307, fp8=2615, family="cdna",      link=448,
                          mla_splits=16),  # AMD Instinct MI325X product page
    "mi355x":        dict(memory_gib=288, bandwidth_tbs=8.0,   bf16=2500, fp8=5000, fp4=10100, family="cdna", link=537.6),  # AMD Instinct MI355X product page; 7 Infinity Fabric links of 76.8 GB/s each way
}
# mla_splits: the most parts an MLA decode kernel cuts one sequence's latent cache into on this GPU, where that is
# fixed (costmodel.splits_a_sequence). The MI300X and MI325X are gfx942, for which aiter's persistent MLA metadata
# returns 16 splits a sequence whatever its length (ROCm/aiter csrc/kernels/mla/metadata/v1_0_device.cuh,
# get_local_splits: "#if defined(__gfx942__) return 16;", from aiter PR #1472, 2025-12; SGLang 0.5.12's aiter backend
# takes that path for an fp8 KV cache, python/sglang/srt/layers/attention/aiter_backend.py), and its non-persistent
# path picks 1-16 (aiter/mla.py, get_meta_param); gfx950 (MI355X) grows them with the context, one per 196 tokens.
# The cost model reads only that the count is fixed: such a GPU pays the dense models' fitted floor (Fit.attn_ns),
# not one scaled by the count, which no measurement here separates.
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

# On-demand list prices, USD a GPU-hour (--choose; --gpu-price NAME=USD replaces one): (price, source, date). One
# provider for all, so that the ranking compares GPUs and not providers: Oracle Cloud's bare-metal shapes, each
# shape's price over its GPUs (8; the L40S shape 4), as SkyPilot's catalog of OCI generates it from Oracle's public
# price list (skypilot-org/skypilot-catalog catalogs/v8/oci/vms.csv at 0588751183820cf2dab5c8a89447e8aac9f73fd5,
# "Price" column, region af-casablanca-1; PR #194 of 2026-09-18 quotes the same shape prices). OCI names the H100
# shape's GPU "H100": the SXM part of its 8-GPU HGX shape. Neoclouds list lower (Lambda's catalog in the same
# repository: H100 SXM 3.99 a GPU-hour in its 8-GPU shape, B200 6.69): the ranking holds where every GPU moves alike.
GPU_PRICES = {
    "a100-sxm-80gb": (32 / 8, "OCI BM.GPU.A100-v2.8 at $32/h", "2026-09"),
    "h100-sxm":      (80 / 8, "OCI BM.GPU.H100.8 at $80/h", "2026-09"),
    "h200":          (80 / 8, "OCI BM.GPU.H200.8 at $80/h", "2026-09"),
    "b200":          (112 / 8, "OCI BM.GPU.B200.8 at $112/h", "2026-09"),
    "b300":          (120 / 8, "OCI BM.GPU.B300.8 at $120/h", "2026-09"),
    "l40s":          (14 / 4, "OCI BM.GPU.L40S.4 at $14/h", "2026-09"),
    "mi300x":        (48 / 8, "OCI BM.GPU.MI300X.8 at $48/h", "2026-09"),
    "mi355x":        (68.8 / 8, "OCI BM.GPU.MI355X.8 at $68.8/h", "2026-09"),
}

# Target models: the shapes in each HF config.json (the publishers' model cards for the totals; the MoE
# rows from the stored copies in ai-dynamo/aiconfigurator model_configs and its forks).
# Keys: hidden, layers, heads, kv_heads, head_dim, vocab, tied (embeddings shared with the
# lm_head), inter (a dense layer's MLP width). Mixture of experts: experts routed per
# layer, experts_per_token (k), moe_inter (one expert's MLP width), shared_inter (the
# shared experts' width, 0 if none), moe_layers (how many layers route; the rest are
# dense). mla: DeepSeek's latent attention (kv_lora_rank, rope, q_lora_rank, nope,
# v_head_dim). window, window_layers: sliding-window attention on that many layers.
# attn_bias, sinks, expert_bias, router_bias: gpt-oss's biases and attention sinks.
# family: the family the published acceptance is grouped by (priors.py, bench/acceptance_table.py's TARGETS).
# nextn: MTP modules (num_nextn_predict_layers). checkpoint: the dtype the published checkpoint ships its weights
# in, when not bf16 (gpt-oss: MXFP4 experts, its model cards; DeepSeek-V3 and Kimi-K2: block fp8, their READMEs).
# head_inter, head_heads, head_kv_heads:
# the EAGLE-3 head's MLP width and attention shape where its published config differs from
# the target (SpecForge configs/*-eagle3.json); else the target's (head_shape).
MODELS = {
    "llama-3.2-1b":   dict(hidden=2048,  inter=8192,  layers=16,  heads=32,  kv_heads=8, head_dim=64,  vocab=128256, tied=True,  family="llama-3", hf="meta-llama/Llama-3.2-1B-Instruct"),   # 1.236 B
    "llama-2-70b":    dict(hidden=8192,  inter=28672, layers=80,  heads=64,  kv_heads=8, head_dim=128, vocab=32000,  tied=False, family="llama-2", hf="meta-llama/Llama-2-70b-chat-hf"),    # 68.98 B; the calibration's TensorRT-LLM 0.9 runs
    "llama-3.1-8b":   dict(hidden=4096,  inter=14336, layers=32,  heads=32,  kv_heads=8, head_dim=128, vocab=128256, tied=False, family="llama-3", hf="meta-llama/Llama-3.1-8B-Instruct"),   # 8.030 B
    "llama-3.3-70b":  dict(hidden=8192,  inter=28672, layers=80,  heads=64,  kv_heads=8, head_dim=128, vocab=128256, tied=False, family="llama-3", hf="meta-llama/Llama-3.3-70B-Instruct"),  # 70.554 B
    "llama-3.1-405b": dict(hidden=16384, inter=53248, layers=126, heads=128, kv_heads=8, head_dim=128, vocab=128256, tied=False, family="llama-3", hf="meta-llama/Llama-3.1-405B-Instruct"), # 405.853 B
    "qwen3-32b":      dict(hidden=5120,  inter=25600, layers=64,  heads=64,  kv_heads=8, head_dim=128, vocab=151936, tied=False, family="qwen3", hf="Qwen/Qwen3-32B"),                     # 32.76 B; heads*head_dim != hidden
    # Mixture of experts. Qwen3 (qwen3_moe): every layer routes (decoder_sparse_step 1, no mlp_only_layers).
    "qwen3-30b-a3b":   dict(hidden=2048, inter=6144, layers=48, heads=32, kv_heads=4, head_dim=128, vocab=151936, tied=False,
                            experts=128, experts_per_token=8, moe_inter=768, moe_layers=48, head_inter=12288,
                            family="qwen3-moe", hf="Qwen/Qwen3-30B-A3B"),                     # 30.53 B, 3.35 B active
    "qwen3-235b-a22b": dict(hidden=4096, inter=12288, layers=94, heads=64, kv_heads=4, head_dim=128, vocab=151936, tied=False,
                            experts=128, experts_per_token=8, moe_inter=1536, moe_layers=94, head_inter=24576,
                            family="qwen3-moe", hf="Qwen/Qwen3-235B-A22B-Instruct-2507"),     # 235.1 B, 22.2 B active
    "qwen3-coder-480b": dict(hidden=6144, inter=8192, layers=62, heads=96, kv_heads=8, head_dim=128, vocab=151936, tied=False,
                             experts=160, experts_per_token=8, moe_inter=2560, moe_layers=62,
                             family="qwen3-moe", hf="Qwen/Qwen3-Coder-480B-A35B-Instruct"),   # 480.2 B, 35.5 B active
    # gpt-oss: every layer routes (the expert is intermediate_size wide); layers alternate
    # 128-token sliding windows and full attention; biases and sinks; MXFP4 experts.
    "gpt-oss-20b":  dict(hidden=2880, inter=2880, layers=24, heads=64, kv_heads=8, head_dim=64, vocab=201088, tied=False,
                         experts=32, experts_per_token=4, moe_inter=2880, moe_layers=24, window=128, window_layers=12,
                         attn_bias=True, sinks=True, expert_bias=True, router_bias=True, head_inter=17280,
                         checkpoint="fp4", family="gpt-oss", hf="openai/gpt-oss-20b"),                        # 20.9 B, 3.6 B active
    "gpt-oss-120b": dict(hidden=2880, inter=2880, layers=36, heads=64, kv_heads=8, head_dim=64, vocab=201088, tied=False,
                         experts=128, experts_per_token=4, moe_inter=2880, moe_layers=36, window=128, window_layers=18,
                         attn_bias=True, sinks=True, expert_bias=True, router_bias=True, head_inter=16384,
                         checkpoint="fp4", family="gpt-oss", hf="openai/gpt-oss-120b"),                       # 116.8 B, 5.1 B active
    # Llama 4 (llama4_text): a shared expert beside one routed expert per token; Maverick
    # routes every second layer (interleave_moe_layer_step 2), its dense layers 16,384 wide.
    "llama-4-scout":    dict(hidden=5120, inter=16384, layers=48, heads=40, kv_heads=8, head_dim=128, vocab=202048, tied=False,
                             experts=16, experts_per_token=1, moe_inter=8192, shared_inter=8192, moe_layers=48,
                             head_inter=32768, family="llama-4", hf="meta-llama/Llama-4-Scout-17B-16E-Instruct"),      # 107.8 B text (108.6 B with vision), 17.2 B active
    "llama-4-maverick": dict(hidden=5120, inter=16384, layers=48, heads=40, kv_heads=8, head_dim=128, vocab=202048, tied=False,
                             experts=128, experts_per_token=1, moe_inter=8192, shared_inter=8192, moe_layers=24,
                             family="llama-4", hf="meta-llama/Llama-4-Maverick-17B-128E-Instruct"),                    # 401.6 B, 17.2 B active
    # DeepSeek-V3 (deepseek_v3): MLA; the first 3 layers dense (first_k_dense_replace 3:
    # deepseek-ai/DeepSeek-V3 config.json and its report, arXiv 2412.19437; a trimmed stored copy says 1), one shared expert, an MTP module.
    "deepseek-v3": dict(hidden=7168, inter=18432, layers=61, heads=128, kv_heads=128, head_dim=192, vocab=129280, tied=False,
                        experts=256, experts_per_token=8, moe_inter=2048, shared_inter=2048, moe_layers=58,
                        mla=dict(kv_lora_rank=512, rope=64, q_lora_rank=1536, nope=128, v_head_dim=128), nextn=1,
                        head_inter=40960, head_heads=56, head_kv_heads=8, head_head_dim=128, checkpoint="fp8",
                        routing="deepseek", family="deepseek", hf="deepseek-ai/DeepSeek-V3"),                    # 671.0 B + 11.6 B MTP, 37.6 B active
    # Hybrids: layers that keep a recurrent state in place of a KV cache (deployment.recurrent_state_bytes).
    # Qwen3-Next (qwen3_next): full attention every 4th layer (full_attention_interval 4: 12 of 48), Gated DeltaNet
    # linear attention in the rest, an output gate on full attention, 512 experts and a shared one in every layer,
    # one MTP layer (mtp_num_hidden_layers); transformers' configuration_qwen3_next.py, whose defaults are this
    # model's. Its EAGLE-3 head: SpecForge configs/qwen3-next-80b-a3b-eagle3.json (16,384 wide).
    "qwen3-next-80b-a3b": dict(hidden=2048, inter=5632, layers=48, heads=16, kv_heads=2, head_dim=256, vocab=151936,
                               tied=False, experts=512, experts_per_token=10, moe_inter=512, shared_inter=512,
                               moe_layers=48, attn_gate=True, linear_layers=36,
                               linear=dict(key_heads=16, value_heads=32, key_dim=128, value_dim=128, conv=4), nextn=1,
                               head_inter=16384, family="qwen3-next", hf="Qwen/Qwen3-Next-80B-A3B-Instruct"),   # 79.7 B + 1.7 B MTP, 3.9 B active
    # Jamba (jamba): attention in 1 layer of 8 (attn_layer_period 8, offset 4), Mamba-1 in the rest (d_state 16,
    # d_conv 4, expand 2, dt_rank hidden / 16), 16 experts top-2 in every second layer; transformers'
    # configuration_jamba.py, whose defaults are Jamba-v0.1's. No MTP module, no published EAGLE-3 head.
    "jamba-v0.1": dict(hidden=4096, inter=14336, layers=32, heads=32, kv_heads=8, head_dim=128, vocab=65536, tied=False,
                       experts=16, experts_per_token=2, moe_inter=14336, moe_layers=16, mamba_layers=28,
                       mamba=dict(inner=8192, state=16, conv=4, dt_rank=256), hf="ai21labs/Jamba-v0.1"),   # 51.6 B, 12.1 B active
    "kimi-k2": dict(hidden=7168, inter=18432, layers=61, heads=64, kv_heads=64, head_dim=192, vocab=163840, tied=False,
                    experts=384, experts_per_token=8, moe_inter=2048, shared_inter=2048, moe_layers=60,
                    mla=dict(kv_lora_rank=512, rope=64, q_lora_rank=1536, nope=128, v_head_dim=128),
                    head_inter=18432, head_head_dim=128, checkpoint="fp8", routing="deepseek",
                    family="kimi-k2", hf="moonshotai/Kimi-K2-Instruct"),   # 1,026 B, 32.9 B active
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
    published changes (savings) take off it. A plain pass keeps its fitted fixed cost in every era (no source in
    reach times a plain step's host time before and after these changes); only its cost per token goes where the
    era's steps are asynchronous (async_steps)."""
    key: str                 #: a short name, as --json gives it
    first: tuple             #: the era's first release, (major, minor[, patch])
    what: str                #: what runs a round in this era, as the plan says it
    fitted: bool             #: the published fit's speculative points were measured in this era
    savings: tuple = ()      #: RoundSaving rows since the fitted era
    before: str = ""         #: on an engine's first era: why releases before it are refused
    hides_for: tuple = ()    #: draft kinds (draft_kind) whose rounds' fixed host costs it hides whole (costmodel.hidden_ms)
    hidden_basis: str = ""   #: what that rests on, as the plan says it
    async_steps: bool = False   #: its scheduler prepares the next step while the GPU runs this one, so a pass's
                                #: per-token host work is off the critical path: a server's plain steps, and the
                                #: verify passes of the draft kinds in hides_for (deployment.token_cost_hidden);
                                #: vLLM from 0.14, SGLang's overlap scheduler
    ahead_for: tuple = ()    #: what its scheduler plans one step ahead of the GPU: "" for plain decoding, and draft
                             #: kinds (draft_kind) whose rounds it plans so. A request that reaches the server while a
                             #: step runs missed the step already planned: it joins the one after (serving.simulate_run,
                             #: deployment.schedules_ahead)

    def saving_ms(self, draft, topk=1):
        """Host time a round of this draft kind (draft_kind) no longer waits for against the fitted era, ms: each
        saving that runs for it, added."""
        return sum(s.saved_ms for s in self.savings if s.runs_for(draft, topk))


# vLLM. The fitted constants are issue #20780's K sweep (2025-07) and the speculators forced-alpha sweeps (vLLM V1 of
# 2025-08; bench/served_runs.json): V1 with synchronous rounds. Async scheduling with EAGLE/MTP became the default in
# v0.14.0 (PR #31998, merged 2026-01-08; release notes "Now also works with speculative decoding"): it overlaps the
# CPU's preparation of the next round with the GPU's work on this one, for EAGLE and MTP rounds (other methods stay
# synchronous). Fitted with constants of its own on the served runs of that era (Llama 3.3 70B bf16 TP 2 on vLLM main
# of 2026-01-26, between v0.14 and v0.15, an EAGLE-3 head at K 3-8 and concurrency 1-64, each paired with its
# baseline: tomasruizt/vllm-scripts online-throughput, in bench/served_runs.json), an EAGLE round's bookkeeping and
# its draft steps' fixed costs both came out at 0 ms, and the same runs' draft-model rounds kept the synchronous
# costs (bench/FIT.md). So the era hides those fixed costs whole, a rule that needs no constant (costmodel.hidden_ms),
# not a fitted number only those runs could set. Model Runner V2 (a default for some architectures from 0.22, for
# all from 0.29, the only runner from 0.34: releases.py) is not told apart: no round of it in reach is timed
# against V1's.
VLLM_ASYNC_RUNS = ("fitted free on served runs of vLLM main of 2026-01 (Llama 3.3 70B TP 2 with an EAGLE-3 head, "
                   "K 3-8, concurrency 1-64, each beside its baseline), both came out at 0 ms")
# SGLang. The fitted constants are the EAGLE-3 paper's batch sweep (SGLang v0.4.4) and PR #4247: rounds without the
# overlap scheduler (EAGLE disabled it before spec v2). Spec v2 overlaps draft and verify with the next round's
# scheduling: beta in PR #11398 (2025-10-09), the default from PR #21062 (merged 2026-04-29, first in v0.5.11).
# Measured by PR #11398 (Llama 3.1 8B, EAGLE head, 5 steps, topk 1, batch 1): 246.80 tokens/s at acceptance 2.99
# before, 273.43 at 3.01 after.
SGLANG_SPEC_V2 = RoundSaving(
    change="spec v2 overlaps draft and verify with the next round's scheduling, the default since PR #21062",
    source="measured by PR #11398: Llama 3.1 8B, EAGLE head, 5 steps, batch 1, 246.80 -> 273.43 tokens/s at tau 2.99 -> 3.01",
    before_ms=1000 / 246.80, after_ms=1000 / 273.43, tau_before=2.99, tau_after=3.01,
    # the EAGLE worker's, and a draft model's from 0.5.8 (StandaloneWorkerV2, PR #12625; n-gram never runs spec v2:
    # speculative/spec_info.py create_worker); PR #12113: topk 1 only
    drafts=("eagle3", "eagle", "mtp", "model"), chains_only=True)
# A release as the engines publish theirs on the package index (pip index versions vllm, sglang, tensorrt-llm):
# X.Y[.Z[.W]] (vLLM's 0.9.0.1 and 0.10.1.1 follow their X.Y.Z), then a pre-release (SGLang's 0.5.10rc0, TensorRT-LLM's
# 1.2.0rc1, rc.post forms such as 1.2.0rc6.post3, a source build's 0.14.0.dev3), a .postN (0.5.10.post1), and a local
# build's +tags (a git hash, setuptools-scm's date, a CUDA, ROCm or CPU wheel's tag: 0.11.1.dev0+g1234abc.d20260101,
# 0.9.2+cu126). Anything else is refused: 0.5.x is not a release, and +www.example is not a build tag.
ERA_VERSION = re.compile(r"v?(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})(?:\.(0|[1-9]\d{0,3}))?(?:\.(0|[1-9]\d{0,3}))?"
                         r"(?:[.-]?(dev|a|alpha|b|beta|rc|c|pre|preview)[.-]?(\d{1,9})?)?"
                         r"((?:[.-]?post[.-]?\d{0,9})?(?:[.-]?dev[.-]?\d{0,9})?)"
                         r"((?:\+(?:g[0-9a-f]{4,40}|d\d{8}|cu\d{2,4}|cpu|rocm\d+(?:\.\d+)*|xpu|tpu|hpu|neuron|precompiled)"
                         r"(?:\.(?:g[0-9a-f]{4,40}|d\d{8}|cu\d{2,4}|cpu|rocm\d+(?:\.\d+)*|xpu|tpu|hpu|neuron|precompiled))*)?)",
                         re.ASCII | re.IGNORECASE)
PRE_RELEASE = {"dev": -4, "a": -3, "alpha": -3, "b": -2, "beta": -2, "rc": -1, "c": -1, "pre": -1, "preview": -1}


# A fused-MoE layer's own latency on one GPU, beyond reading the experts its tokens touch and their math:
# routing, sorting tokens by expert, the kernels inside the CUDA graph, small tiles. The median, over
# published kernel sweeps at up to 64 tokens, of measured minus this model's read and math, per engine's
# kernel (`python bench/moe_kernels.py`; its data, bench/moe_kernels.json, cites each sweep): vLLM's Triton
# fused_moe on H100 (PR #24700: Qwen3-30B-A3B fp8, Mixtral bf16 TP 2), SGLang's Triton kernel on H200 and
# B200 (PR #11730: Qwen3-235B fp8 TP 8; PR #11816: DeepSeek-R1 fp8 TP 8), TensorRT-LLM's TRTLLM-Gen on
# B200 (tech blog 24: DeepSeek-V3 NVFP4 TP 8, router GEMM included). The read's slope matches the sweeps
# to within a few us a point up to 64 tokens; past that, groups of many tokens per expert run below peak.
MOE_KERNEL_US = {"vllm": 31.6, "sglang": 37.4, "trtllm": 24.2}
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
    functions of commands.ENGINE_PLANS. Adding an engine is a row here, a row in commands.ENGINE_PLANS and their
    tests, plus what the model needs to know of it: its public heads in EAGLE3_HEADS, and either its own fixed
    costs in costmodel.Fit (pass_fixed_ms_<key>, draft_fixed_ms_<key>, round_fixed_ms_<key>, fitted in bench/calibrate.py) or an
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
    token_cost_of: str       #: the engine whose fitted cost per token it uses (Fit's token_us_<engine>)
    releases_of: str         #: the engine whose release facts it follows (releases.py: NEWEST, FEATURES, REFUSALS)
    unshared_kv_families: tuple   #: GPU families whose default attention kernel reads a sequence's KV once per query
                                  #: head, not per KV head, in a pass of more than one query token a sequence
                                  #: (costmodel.kv_reads)
    moe_layer_us: float      #: its fused-MoE kernel's own latency per MoE layer and pass, us (MOE_KERNEL_US)
    prefill_budget: tuple    #: prompt tokens a scheduler step prefills at most by default: ((least GiB, tokens), ...)
    prefill_budget_small: tuple   #: GPUs it keeps at its smallest defaults whatever their memory (budget, running cap)
    prefill_budget_per_dp: bool   #: under attention data parallelism each rank's budget and running cap are the
                                  #: server's over the DP size (else each rank has the server's: deployment.rank_cap)
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
    reserves_runtime: bool = False   #: its memory share also holds the runtime's own memory, measured at start-up
                                     #: (activations, CUDA graphs, the CUDA context): deployment.runtime_reserve_bytes
    recv_interval: int = 1   #: steps between the scheduler's polls for new requests (SGLang's
                             #: --scheduler-recv-interval, default 1: every step; a benchmark may set more)


ENGINES = {
    # vLLM: gpu_memory_utilization, a share of all memory, default 0.92 in vllm/config/cache.py from v0.20 (0.9
    # before; from 0.34 unset, 1.0 with its extensible KV cache), so the plan sets it; vllm/engine/arg_utils.py for
    # the flags; vllm/v1/spec_decode/metrics.py for the counters.
    "vllm": Engine(
        key="vllm", name="vLLM", port=8000, memory_fraction=0.92, memory_of_free=False, reserves_runtime=True,
        memory_flag="--gpu-memory-utilization", memory_note=", set by the plan: vLLM's default in 0.20-0.33",
        drafts=("eagle3", "eagle", "mtp", "ngram", "model"), drafts_why="every kind of draft",
        trees=(), trees_why="vLLM removed tree attention, PR #42121",
        nvidia_only=False, quantizes_at_start=True, pass_cost_of="vllm", draft_costs_of="vllm", seq_cost="", token_cost_of="vllm",
        releases_of="vllm",
        # FlashAttention 3 on Hopper, 4 on Blackwell where installed, else 2 (vllm/v1/attention/backends/fa_utils.py,
        # get_flash_attn_version; vllm/attention/utils/fa_utils.py before about v0.11: 3 on Hopper, else 2). FA2
        # shares a KV head's read among its query heads only at one query token (costmodel.kv_reads); FA3 packs them
        # at any (pack_gqa).
        unshared_kv_families=("ampere", "ada"),
        moe_layer_us=MOE_KERNEL_US["vllm"],
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
              Era(key="v1-async", first=(0, 14), fitted=True, hidden_basis=VLLM_ASYNC_RUNS,
                  hides_for=("eagle3", "eagle", "mtp"),   # PR #31998: async rounds with EAGLE/MTP, not other methods
                  # The engine core schedules step n + 1 as soon as it has launched step n ("fulfilling the batch
                  # queue has a higher priority than getting model outputs": vllm/v1/engine/core.py,
                  # step_with_batch_queue, two batches in flight under async scheduling, whose scheduler is
                  # vllm/v1/core/sched/async_scheduler.py), so a request that arrives while n runs is first
                  # scheduled into n + 2 (tomasruizt's server logs of this era: "Asynchronous scheduling is enabled.").
                  ahead_for=("", "eagle3", "eagle", "mtp"),
                  # Async scheduling on by default for plain decoding (PR #27614, issue #27679's plan), with EAGLE/MTP
                  # from PR #31998; "disabled implicitly for non-EAGLE/MTP types", so a draft-model server steps
                  # synchronously.
                  async_steps=True,
                  what="the V1 engine with async scheduling on for plain decoding and EAGLE/MTP (Model Runner "
                       "V2's own gains: no round timing in reach)"),
              # PR #48341 (first in 0.28.0: vllm/config/vllm.py of 0.27 and 0.28) turns async scheduling on for
              # draft models too; n-gram on the CPU (method ngram) stays synchronous (ngram_gpu was async from its
              # start, PR #29184, but the plan drafts n-grams with method ngram).
              Era(key="v1-async-drafts", first=(0, 28), fitted=False, hidden_basis=VLLM_ASYNC_RUNS,
                  hides_for=("eagle3", "eagle", "mtp", "model"), async_steps=True,
                  ahead_for=("", "eagle3", "eagle", "mtp", "model"),
                  what="the V1 engine with async scheduling on for plain decoding, EAGLE/MTP and, from PR #48341, "
                       "draft models, whose rounds' host work is taken as hidden as EAGLE's, not measured"))),
    # SGLang: --mem-fraction-static, a share of all memory for weights and the KV pool, computed at start-up when
    # omitted, so the plan passes it and the model uses the same (our choice: 0.85 leaves ~12 GiB of an 80 GiB GPU
    # for activations and CUDA graphs); python/sglang/srt/server_args.py; metrics/collector.py for the gauges.
    "sglang": Engine(
        key="sglang", name="SGLang", port=30000, memory_fraction=0.85, memory_of_free=False,
        memory_flag="--mem-fraction-static", memory_note="",
        drafts=("eagle3", "eagle", "mtp", "ngram", "model"), drafts_why="every kind of draft",
        trees=("eagle3", "eagle", "mtp"), trees_why="its EAGLE worker drafts trees of EAGLE heads and MTP",
        nvidia_only=False, quantizes_at_start=True, pass_cost_of="sglang", draft_costs_of="sglang", seq_cost="",
        token_cost_of="sglang", releases_of="sglang",
        unshared_kv_families=(),   # its attention backends are not FlashAttention 2's varlen kernel (kv_reads)
        moe_layer_us=MOE_KERNEL_US["sglang"],
        prefill_budget=PREFILL_BUDGET["sglang"], prefill_budget_small=(),
        prefill_budget_per_dp=True,   # server_args.py _handle_data_parallelism: chunked_prefill_size //= dp_size;
                                      # model_runner.py: max_running_requests // dp_size under DP attention
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
        # Both eras step asynchronously: the overlap scheduler runs a decode batch's host work beside the GPU's
        # (managers/scheduler.py, event_loop_overlap). Speculative rounds ran without it before spec v2 ("Speculative
        # Decoding V2 (Overlap Scheduler)", docs/advanced_features/speculative_decoding.md), and spec v2's saving is
        # measured, not a rule: no draft kind's rounds are hidden (hides_for), so a verify pass pays its tokens.
        # The overlap loop receives requests, schedules and launches batch n + 1, then waits for batch n's result
        # (event_loop_overlap): a request that arrives while n runs is received after n's result, into n + 2.
        eras=(Era(key="spec-v1", first=(0, 4), fitted=True, async_steps=True, ahead_for=("",),
                  before="no published measurement here times their rounds",
                  what="EAGLE worker v1, no overlap scheduler (the published fit's batch sweep, SGLang v0.4.4)"),
              Era(key="spec-v2", first=(0, 5, 11), fitted=False, savings=(SGLANG_SPEC_V2,), async_steps=True,
                  ahead_for=("", "eagle3", "eagle", "mtp"),
                  what="spec v2, draft and verify overlapped with scheduling"))),
    # TensorRT-LLM: kv_cache_config free_gpu_memory_fraction, a share of the memory left free after loading the
    # weights, default 0.9 (tensorrt_llm/llmapi/llm_args.py KvCacheConfig); tensorrt_llm/commands/serve.py for the
    # flags; tensorrt_llm/metrics/collector.py for the counters. No speculative point to fit: a draft step and a
    # round's bookkeeping take vLLM's fitted costs. llm_args.py: the PyTorch backend converts an Eagle config to
    # Eagle3 (EAGLE-1 heads do not fit it). Its draft-model config takes decoding_type DraftTarget (from_dict's
    # table in 1.0-1.1, the docs' value after; the class's own Literal is Draft_Target, which the parser records as
    # an alias).
    "trtllm": Engine(
        key="trtllm", name="TensorRT-LLM", port=8000, memory_fraction=0.90, memory_of_free=True,
        memory_flag="--kv_cache_free_gpu_memory_fraction", memory_note=" of the memory the weights leave",
        drafts=("eagle3", "mtp", "ngram", "model"),
        drafts_why="its PyTorch backend runs EAGLE-3 heads, MTP, n-gram and draft models (DraftTargetDecodingConfig); "
                   "no EAGLE-1 head (llm_args.py converts an Eagle config to EAGLE-3's)",
        # MTPDecodingConfig has use_dynamic_tree only from the 1.4 pre-releases (PR #15582: single-layer MTP-Eagle,
        # greedy), and its docs keep dynamic trees off MLA models such as DeepSeek's, the catalog's MTP model.
        trees=("eagle3",), trees_why="its dynamic trees run EAGLE-3 heads; MTP's came in the 1.4 pre-releases "
                                     "(PR #15582), greedy only and not for MLA models such as DeepSeek's",
        nvidia_only=True, quantizes_at_start=False,   # docs/source/features/quantization.md
        # Its cost per token is vLLM's: NIM's closed loop and the static batches, its only plain steps, have one
        # token a sequence, so they cannot tell a cost per token from its served cost per sequence (seq_us_trtllm).
        pass_cost_of="trtllm", draft_costs_of="vllm", seq_cost="seq_us_trtllm", token_cost_of="vllm",
        releases_of="trtllm",
        unshared_kv_families=(),   # its own attention kernels, not FlashAttention 2 (kv_reads)
        moe_layer_us=MOE_KERNEL_US["trtllm"],
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
        # Its overlap scheduler, on by default, launches step n + 1 before it handles step n's results ("it introduces
        # one extra decoding step into the pipeline", docs/source/developer-guide/overview.md, Overlap Scheduler), and
        # MTP's draft and verify run inside the one forward it launches (docs/source/blogs/tech_blog/
        # blog2_DeepSeek_R1_MTP_Implementation_and_Optimization.md, "compatible with ... overlap scheduler").
        eras=(Era(key="pytorch", first=(1, 0), fitted=True, ahead_for=("", "mtp"),
                  # PyTorch became trtllm-serve's default backend in 1.0 (PR #5717); --backend pytorch ran it from
                  # 0.17, but with the KV cache's dtype a top-level kv_cache_dtype and no return_perf_metrics (PR
                  # #5497), both of which 1.0 brought ("Unify KvCacheConfig", its release notes).
                  before="the plan's YAML sets the KV cache's dtype in kv_cache_config and return_perf_metrics, "
                         "both from 1.0 (before it, --backend pytorch took other keys)",
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


def fitted_era_before(engine, era):
    """The newest fitted era at or before `era`: what an unfitted era's rules and savings are taken against."""
    return [e for e in ENGINES[engine].eras if e.fitted and e.first <= era.first][-1]


def release_of(version):
    """A published release string (ERA_VERSION) as a tuple that orders as the engines order their releases: (major,
    minor, patch, stage), where stage is the fourth number of a four-part release (vLLM's 0.9.0.1), 0 for X.Y.Z
    itself, or below 0 for its pre-releases (dev, a, b, rc: each before the next, all before X.Y.Z), then the
    string as typed after X.Y.Z for release_text (a post-release or a build's tags sort after their release).
    0.14 is 0.14.0; ValueError for what no engine publishes.

    >>> release_of("0.14"), release_of("0.9.0.1"), release_of("1.2.0rc1")
    ((0, 14, 0, 0), (0, 9, 0, 1), (1, 2, 0, -1, 'rc1'))
    >>> release_of("1.2.0rc1") < release_of("1.2.0") < release_of("1.2.0.post1") < release_of("1.2.1.dev0")
    True
    """
    match = ERA_VERSION.fullmatch(version.strip())
    if not match:
        raise ValueError(version)
    major, minor, patch, fourth, pre, pre_number, post_dev, local = match.groups()
    release = (int(major), int(minor), int(patch or 0))
    stage = int(fourth or 0)
    if pre:
        stage = PRE_RELEASE[pre.lower()]
    elif "dev" in post_dev.lower() and "post" not in post_dev.lower():
        stage = PRE_RELEASE["dev"]
    shown = version.strip().lstrip("vV")[len(".".join(map(str, release))) if patch is not None
                                         else len(f"{major}.{minor}"):]
    if fourth is not None:
        shown = shown[len(fourth) + 1:]
    return release + (stage,) + ((shown,) if shown else ())


def release_at(release):
    """A release tuple of any length as (major, minor, patch, stage[, as typed]): (0, 14) is (0, 14, 0, 0)."""
    release = tuple(release)
    return release + (0,) * (4 - len(release)) if len(release) < 4 else release


def era_of(engine, version):
    """The era of a release string (release_of); None before the first era."""
    release = release_of(version)
    eras = [e for e in ENGINES[engine].eras if release_at(e.first) <= release]
    return eras[-1] if eras else None


def release_text(release):
    """A release tuple as the engine writes it: (0, 5, 11) -> "0.5.11"; (0, 9, 0, 1) -> "0.9.0.1"; a pre-release, post
    or local build as typed after X.Y.Z: (1, 2, 0, -1, "rc1") -> "1.2.0rc1".

    >>> release_text((0, 5, 11)), release_text(release_of("0.9.0.1")), release_text(release_of("v0.15.0.dev3"))
    ('0.5.11', '0.9.0.1', '0.15.0.dev3')
    """
    if len(release) <= 3:   # a catalog release as written there: (0, 8) is "0.8"
        return ".".join(map(str, release))
    major, minor, patch, stage, *shown = release_at(release)
    text = f"{major}.{minor}.{patch}" + (f".{stage}" if stage > 0 else "")
    return text + (shown[0] if shown else "")


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
    # SpecForge's head for Qwen3-Next's fp8 checkpoint, which SpecBundle's runs serve on SGLang
    # (bench/specbundle_h200_bs8.json); no head for it that vLLM or TensorRT-LLM loads is published.
    ("sglang", "qwen3-next-80b-a3b"): ("lmsys/SGLang-EAGLE3-Qwen3-Next-80B-A3B-Instruct-FP8-SpecForge", None),
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

# The same EAGLE-3 heads in the EAGLE format, for vLLM releases that cannot load the speculators format of the
# RedHatAI heads above (releases.py, "speculators-format heads"): vLLM's own EAGLE-3 example served yuhuili's.
EAGLE3_EAGLE_FORMAT = {
    "llama-3.1-8b": ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", 2048),
    "llama-3.3-70b": ("yuhuili/EAGLE3-LLaMA3.3-Instruct-70B", 2048),
}


def speculators_format(head):
    """Whether a head's id names one in vLLM's speculators format (RedHatAI's "...-speculator.eagle3")."""
    return "-speculator." in head


# Public EAGLE-1 heads (--draft eagle), by engine and target: (Hugging Face id, trained context or None). vLLM's own
# example serves yuhuili's Llama 3.1 head with --method eagle (examples/offline_inference/spec_decode.py); SGLang's
# docs serve lmsys's copy in its EAGLE format (docs/advanced_features/speculative_decoding.md, FR-Spec section),
# trained on Llama 3 8B Instruct, the docs' target, and paired with Llama 3.1 8B Instruct in its tests' model map.
# TensorRT-LLM's PyTorch backend runs no EAGLE-1 head (its drafts).
EAGLE_HEADS = {
    ("vllm", "llama-3.1-8b"): ("yuhuili/EAGLE-LLaMA3.1-Instruct-8B", None),
    ("sglang", "llama-3.1-8b"): ("lmsys/sglang-EAGLE-LLaMA3-Instruct-8B", None),
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
