"""The cost model: what a plain step, a draft step, a verify pass and a prefill chunk cost on a deployment
(weights, KV cache, compute, communication and fixed terms), the fit of its constants (FIT) on published
measurements, and eps, a round over a plain step.
"""
from __future__ import annotations

import functools
import math
from collections import namedtuple
from dataclasses import dataclass, field, fields, replace

from .defaults import (
    CONTEXT, DP_ATTENTION, DRAFT, DRAFT_MODEL, ENGINE, EP, GPU, INPUT_TOKENS, KV_DTYPE, MODEL, OUTPUT_TOKENS,
    TEMPERATURE, TP, WEIGHTS_DTYPE,
)
from .records import CONCURRENCY_LIMIT
from .experts import expected_experts, independent_tokens, model_routing_exponent, touched_experts
from .catalog import (
    BYTES_PER, DRAFT_WEIGHT_BYTES, EAGLE3_DRAFT_VOCAB, EAGLE_DRAFTS, Engine, ENGINES, Era, GIB, GPU_FAMILY, GPUS,
    MODELS, newest_era,
)


# A round is K draft steps plus one verify pass over K+1 tokens per sequence; a plain
# step is one target pass over 1 token per sequence (MagicDec eq. 1). Each pass has these terms: streaming
# the weights, reading the KV history, compute (2 FLOPs per parameter per token plus attention over the context),
# two all-reduces per layer under tensor parallelism, a fixed cost per pass that belongs to the engine, and the
# engine's cost per token it samples (where its scheduler waits for it: token_cost_hidden). A GEMM's weight read
# and its math overlap (overlapped): neither their sum, which charged a verify pass of B (K + 1) tokens its whole math on top of the read (EAGLE-3 at batch 16-64
# came out up to 1.5x too dear on 2026 vLLM, bench/served_runs.json), nor a hard max, which would keep eps flat
# below the ridge while SGLang's batch sweep shows it rising from B = 2 (EAGLE-3 paper Table 4 / SGLang PR #4247, in
# bench/published.json): a smooth transition whose sharpness (Fit.overlap) is fitted on measured GEMMs
# (bench/gemm_kernels.py). A verify pass may read the KV history more than once (kv_reads). In a closed-loop
# benchmark every step also carries the prefill of the requests that keep arriving (chunked prefill mixes it into
# decode batches): prefill_tokens below.

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
                 activations="own_token", engine="own_token")   # pass_parts' term -> the Fit factor that scales it in a target pass;
                                       # communication keeps the published fit's (no factor)

Fit = namedtuple("Fit", "bw_hopper bw_ampere bw_ada flop_eff fp8_eff fp8_kv_eff attn_ns layer_us ar_us ar_tp_us "
                        "link_eff pass_fixed_ms_vllm pass_fixed_ms_sglang pass_fixed_ms_trtllm draft_fixed_ms_vllm "
                        "draft_fixed_ms_sglang round_fixed_ms_vllm round_fixed_ms_sglang token_us_vllm seq_us_trtllm "
                        "bw_cdna flop_cdna flop_ampere token_us_sglang "
                        "overlap "
                        + " ".join(OWN_TERMS) + " request_ms expert_affinity mlp_fixed_share",
          defaults=(1.0,) * (1 + len(OWN_TERMS)) + (0.0,) * 3)
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
# preparation), each a fixed cost, not a pass's time (pass_ms, round_ms); token_us_<engine>
# (Engine.token_cost_of names it): the engine's cost per token a target pass decodes or verifies (sampling, logits, the verify's masks and bookkeeping,
# kernels run outside the CUDA graph), apart from its kernels' read and math (a draft step samples on the GPU inside
# the proposer's loop: none; a prefill chunk's prompt tokens are not sampled: none); flop_ampere: an A100's share of
# peak over the Hopper GPUs' (flop_eff is Hopper's);
# bw_cdna, flop_cdna: an AMD CDNA GPU's achieved share of bandwidth, and its share of flop_eff (its
# GEMMs' achieved share of peak against NVIDIA's), fitted on the one MI300X source
# (bench/oracle_mi300x_405b.json, a batch sweep at 1 to 256: batch 1 sets the first, the growth the second);
# seq_us_<engine> (Engine.seq_cost names it): a served step's host cost per running sequence
# (scheduling, paged-KV tables, streaming), measured for TensorRT-LLM only, where NIM's served closed loop and
# TensorRT-LLM 0.9's static batches of the same shapes tell it apart from the cost per token (no
# source separates it for vLLM or SGLang, whose async schedulers overlap it: none).
# Fitted together by bench/calibrate.py (its output says which points set
# which constant), against bench/published.json, bench/plain_step.json and the served runs of
# bench/served_runs.json (calibrate.load_served_pairs, load_forced_alpha).
# Fit is a namedtuple, not a dataclass like the results: a vector of constants that the fitters (--calibrate,
# bench/calibrate.py) iterate and replace by field name (Fit._fields, _replace).
# overlap: the sharpness of a GEMM's transition from its weight read to its math (overlapped; 1 would add them, as
# fits before the served runs did);
# own_<term>: your deployment's factor on one term of the time (OWN_TERMS says which), 1 in
# the published fit; --calibrate fits them to your runs (calibrate_on_runs).
# request_ms: what a served request costs around the steps the simulation runs (serving.serve_run), fitted by
# bench/served_load.py on the served runs' TTFTs: the client's and API server's time from a send to the scheduler,
# with the first token's way back folded in (HTTP, tokenising, detokenising, the hop between processes); the
# simulation adds it once, on the way in. --calibrate refits it on your runs' mean TTFTs (calibration.fit_request_ms).
# 20 ms is the least loss (mean over the three sources of the median |log error| of mean TTFT) on a 5 ms grid, with
# or without InferenceX's MoE runs; without the forced-alpha runs it is 80 ms, and NIM's whole TTFT at concurrency 1
# is as little as 9 ms on an H100 (bench/served_load.txt, bench/nim_serving.txt): clients differ, so calibrate.
# expert_affinity: the share of a token's routed experts the same sequence's next token keeps, so a verify pass's K + 1
# tokens of a sequence route like 1 + K (1 - affinity) independent tokens (experts.independent_tokens). Set from
# published routing, not fitted: a K = 3 verify of a 128-expert top-8 MoE touches 20.4 distinct experts where 29.1
# would be independent (Cohere's blog post "Why MoE models get more from speculative decoding", 2026, read as quoted
# in a public summary, not at first hand: 0.44), OLMoE-1B-7B's windows of 4 and 8 generated tokens touch 0.77 and 0.73
# of the independent count (0.38, 0.45; github.com/Techburst36/Swarm, cross_request_seed42_v2/
# routing_correlation_report.txt), and Mixtral's consecutive tokens repeat their first expert at twice chance in its
# middle layers (arXiv 2401.04088, Table 5): 0.4. InferenceX's DeepSeek-R1 MTP runs cannot tell 0 from 0.4
# (bench/moe_load.py); the SpecBundle MoE runs move 13.3% to 12.0% with it.
# mlp_fixed_share: the share of a layer's fixed cost (layer_us, fitted on dense models) that a MoE layer does not pay:
# its dense MLP's kernels, which the fused MoE kernel (Engine.moe_layer_us, its own latency measured in kernel sweeps)
# replaces. Fitted on InferenceX's plain runs (bench/moe_load.py: 0.75 on every GPU, 0.5-1 with one left out); a
# batch-1 step of Qwen3-30B-A3B bf16 on two H100s (SGLang, sgl-project/SpecForge#339) measures 4.49 ms, against 4.78
# modelled at 0.75 and 5.79 at 0 at 128 tokens in and 256 out (tests/test_moe_load.py holds it within 10%).
FIT = Fit(bw_hopper=0.9049, bw_ampere=0.7296, bw_ada=0.7856, flop_eff=0.83, fp8_eff=0.9348, fp8_kv_eff=0.7911,
          attn_ns=8.1758, layer_us=28.0859, ar_us=15.0, ar_tp_us=2.7949, link_eff=0.4421, pass_fixed_ms_vllm=0.6953,
          pass_fixed_ms_sglang=0.0, pass_fixed_ms_trtllm=0.9443, draft_fixed_ms_vllm=0.6395,
          draft_fixed_ms_sglang=0.45, round_fixed_ms_vllm=1.4307, round_fixed_ms_sglang=2.0518,
          token_us_vllm=17.1484, seq_us_trtllm=46.7773, bw_cdna=0.6575, flop_cdna=0.2942, flop_ampere=0.95,
          token_us_sglang=17.2656, overlap=2.5, request_ms=20.0, expert_affinity=0.4,
          mlp_fixed_share=0.75)
# What the fit says (bench/calibrate.py prints it): an fp8 weight read keeps 0.93 of the
# bandwidth, an fp8 KV cache 0.79 (the attention kernel dequantises it); one sequence's
# attention costs 8.2 ns per layer per token of context on an H100 (0.26 ms per 1k tokens on 8B),
# set by NIM's batch-1 context slopes; an all-reduce costs 15 us at TP 2 and 2.8 us more
# per further GPU; a served TensorRT-LLM step (NIM) costs 47 us more per running sequence than its static-batch
# benchmark (seq_us_trtllm); a pass pays 28 us a layer (launches, the kernels' floors); an engine's cost per token
# decoded or verified is 17 us where a synchronous scheduler pays it (vLLM before 0.14, set by the forced-alpha sweeps,
# whose eight servers shared one host; vLLM's async steps hide it: token_cost_hidden) and on TensorRT-LLM, and a
# verify pass's token costs 17 us on SGLang 0.4.4
# (whose batch sweep's speedup falls from 1.81x at batch 2 to 1.32x at 32 as a verify pass's tokens grow: its EAGLE
# worker ran without the overlap scheduler); fixed costs per pass, per draft step and per round differ by engine
# (vLLM's async rounds hide the last two whole: catalog.VLLM_ASYNC_RUNS); an MI300X under 2024's ROCm vLLM reads at
# 0.66 of its 5.3 TB/s and reaches 0.29 of the NVIDIA GEMMs' share of peak (bw_cdna, flop_cdna). overlap, flop_eff
# and flop_ampere are not fitted here but on measured GEMMs (bench/gemm_kernels.py: a transition of sharpness 2.5,
# 0.83 of peak on Hopper, 0.95 of that on an A100).
BW_FAMILY = {"hopper": "bw_hopper", "ampere": "bw_ampere", "ada": "bw_ada",
             "blackwell": "bw_hopper",   # no Blackwell point to fit: taken as Hopper's share (an assumption)
             "cdna": "bw_cdna"}          # MI300X (CDNA 3): fitted on its one source, with flop_cdna
ATTN_FLOOR_TBS = 3.35   # Fit.attn_ns is one sequence's attention floor on an H100's 3.35 TB/s: a sequence's KV is
                        # read by few SMs, so the floor scales with the GPU's bandwidth (times its bw_rel: the H200's
                        # larger stack is not read proportionally faster), and an fp8 KV cache's runs
                        # at fp8_kv_eff of it (dequantising). NIM's batch-1 TPOT over 4 contexts (plain_step.json),
                        # slope per layer per token: 7.9-8.5 ns on H100 and 12.0-12.2 on A100 (7.3-7.4 at 3.35
                        # TB/s) with a bf16 cache; 9.7-10.3 on H100 with an fp8 cache


def flop_share(fit, family):
    """A GPU family's share of Fit.flop_eff: AMD CDNA's GEMMs reach flop_cdna of NVIDIA's share of peak, an A100
    (Ampere) flop_ampere of the Hopper GPUs' (a smaller peak, more nearly reached); 1 for the rest."""
    return {"cdna": fit.flop_cdna, "ampere": fit.flop_ampere}.get(family, 1.0)


# Elements of a token's activations the elementwise kernels of a layer read and write, bf16 (ACTIVATION_BYTES each):
# vLLM's fused_add_rms_norm runs twice a layer, each reading the hidden state and the residual and writing both (4
# hidden-wide), and silu_and_mul reads the gate and up projections and writes their product (3 MLP-wide)
# (vllm/model_executor/layers/layernorm.py, activation.py). Against aiconfigurator's measured "other" kernels
# (bench/aiconfigurator_compare.txt: norms and activations, vLLM 0.24), per token of batch: Llama 3.1 8B on an H100
# 1.8 us (these counts: 1.7 at the fitted share), on an H200 1.25 (1.3), 70B fp8 at TP 4 5.2 (4.9).
ELEMENTWISE_HIDDEN = 8
ELEMENTWISE_MLP = 3
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
    query_heads: int = 0     #: attention's query heads (0: MLA's, whose one latent every head shares; kv_reads)
    prompt_attn_width: int = None   #: attention's width per token in a prefill chunk where it differs (MLA)
    mlp_width: float = 0.0   #: MLP activations per token per layer, elements: the dense width, or k experts' and the
                             #: shared experts' in a MoE layer, averaged over layers (elementwise's traffic)


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
    release: tuple = None    #: the --engine-version release as (major, minor, patch, stage[, as typed]) (catalog.release_of), which the
                             #: plan's commands are written for; None: the newest (releases.py)
    ep: int = 1              #: expert-parallel GPUs: 1 (every expert split across the TP GPUs) or tp (whole experts)
    dp_attention: bool = False   #: attention data parallel across the tp GPUs (with ep = tp): see pass_parts
    temperature: float = TEMPERATURE   #: sampling temperature of the plan's benchmark runs (the traffic's own)
    settings: tuple = field(default=(), hash=False, compare=False)   #: sizing.Setting per TP and dtype: where each
                                                                      #: came from (given, the model's row, derived)

    def __post_init__(self):   # compared once: the cost model's memo looks deployments up millions of times a run
        values = tuple(getattr(self, f.name) for f in fields(self) if f.compare)   # as the generated __eq__ compares
        hashed = hash(tuple(getattr(self, f.name) for f in fields(self) if f.hash is not False))
        alike = DEPLOYMENTS.setdefault(hashed, [])
        token = next((token for seen, token in alike if seen == values), None)
        if token is None:   # the first deployment of these values: the next token
            token = len(DEPLOYMENT_TOKENS)
            DEPLOYMENT_TOKENS.append(hashed)
            alike.append((values, token))
        object.__setattr__(self, "_hash", hashed)
        object.__setattr__(self, "_token", token)   # equal deployments hold one token, whichever object they are
        # What its costs are a function of: every field but the release its commands are written for (the release
        # reaches the costs through `era` alone), so the memos of costs and simulated runs serve every release of
        # an era once (physics).
        physics = tuple(value for f, value in zip((f for f in fields(self) if f.compare), values) if f.name != "release")
        alike = PHYSICS.setdefault(hash(tuple(getattr(self, f.name) for f in fields(self)
                                              if f.hash is not False and f.name != "release")), [])
        same = next((key for seen, key in alike if seen == physics), None)
        if same is None:
            same = ("physics", len(PHYSICS_KEYS))
            PHYSICS_KEYS.append(same)
            alike.append((physics, same))
        object.__setattr__(self, "physics", same)

    def __hash__(self):
        return self._hash

    def __eq__(self, other):   # by value, through the token: two numbers, not two deployments' every field
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._token == other._token


DEPLOYMENTS = {}         # hash of a Deployment's fields -> [(its compared fields, its token)]: Deployment.__eq__
DEPLOYMENT_TOKENS = []   # token -> hash: the tokens handed out, in order
PHYSICS = {}             # the same without the release -> [(fields, its key)]: Deployment.physics
PHYSICS_KEYS = []


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

    Quantised checkpoints keep embeddings and lm_head in bf16 (vLLM's fp8 quantizes linear layers only:
    vllm/model_executor/layers/quantization/fp8.py) and
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
               routing_exponent=model_routing_exponent(m), kv_groups=kv_groups(m), query_heads=query_heads(m),
               prompt_attn_width=prompt_attention_width(m), mlp_width=mlp_width(m))


def mlp_width(m, layers=None):
    """MLP activations per token per layer (Net.mlp_width): a dense layer's intermediate width, a MoE layer's k routed
    experts' and its shared experts' (each expert's own width), averaged over the model's layers.
    >>> mlp_width(MODELS["llama-3.1-8b"]), mlp_width(MODELS["qwen3-30b-a3b"])
    (14336.0, 6144.0)
    """
    moe = m.get("moe_layers", 0)
    dense = m["layers"] - moe
    routed = m.get("experts_per_token", 0) * m.get("moe_inter", 0) + m.get("shared_inter", 0)
    return (dense * m.get("inter", 0) + moe * routed) / m["layers"]


def mean_context(input_tokens, output_tokens):
    """The mean decode context: a request decodes from input to input + output tokens of context."""
    return int(input_tokens + output_tokens / 2)


def make_deployment(model=MODEL, gpu=GPU, tp=TP, weights_dtype=WEIGHTS_DTYPE, kv_dtype=KV_DTYPE, context=CONTEXT,
                    draft=DRAFT, spec=None, engine=ENGINE, draft_hf=DRAFT_MODEL, input_tokens=INPUT_TOKENS,
                    output_tokens=OUTPUT_TOKENS, shape=None, topk=1, verify_tokens=None, draft_shape=None,
                    era=None, ep=EP, dp_attention=DP_ATTENTION, temperature=TEMPERATURE):
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
                     dp_attention=dp_attention, temperature=temperature)
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
                      held_bytes=head * DRAFT_WEIGHT_BYTES, fp8=False, kv_groups=kv_groups(s),
                      query_heads=query_heads(s), mlp_width=s["inter"])
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
                      query_heads=query_heads(m), prompt_attn_width=prompt_attention_width(m),
                      mlp_width=(m["experts_per_token"] * m["moe_inter"] + m.get("shared_inter", 0)) if moe else m["inter"])
    elif draft == "ngram":
        drafter = NO_MODEL
    else:
        d = dep.draft_shape if draft == "model" else MODELS[draft]
        d_params = model_params(d)
        drafter = Net(active_params=d_params, weight_bytes=d_params * DRAFT_WEIGHT_BYTES,
                      kv_bytes_per_token=kv_bytes_per_token(d, dep.kv_dtype), attn_width=attention_width(d),
                      layers=d["layers"], hidden=d["hidden"], tflops=dep.draft_tflops, held_params=d_params,
                      held_bytes=d_params * DRAFT_WEIGHT_BYTES, fp8=False, kv_groups=kv_groups(d),
                      query_heads=query_heads(d), mlp_width=mlp_width(d))
    return replace(dep, draft=draft, drafter=drafter)


def memory_budget_bytes(dep):
    """Bytes the engine may fill with weights and KV cache across the replica's GPUs.

    vLLM and SGLang give a share of all GPU memory to weights plus KV cache; TensorRT-LLM
    gives a share of the memory left free once the weights are loaded to the KV cache.
    """
    total = dep.tp * dep.memory_gib * GIB
    if dep.engine.memory_of_free:
        return min(total, static_bytes(dep) + dep.memory_fraction * max(0.0, total - static_bytes(dep)))
    return max(0.0, total * dep.memory_fraction - runtime_reserve_bytes(dep))


RUNTIME_OTHER_GIB = 1.0   # per GPU: the CUDA context, CUDA graphs and NCCL's buffers, which torch does not count
ACTIVATION_HIDDEN = 4     # hidden-state copies a layer holds at its peak (residual, norm output, attention in and out)


def runtime_reserve_bytes(dep):
    """What vLLM keeps out of its memory share for the runtime, across the replica: at start-up it runs a forward
    pass of max_num_batched_tokens dummy tokens and the sampler over max_num_seqs requests and gives the KV cache
    the share less the weights, that peak and the memory torch does not see (vllm/v1/worker/gpu_worker.py,
    determine_available_memory). Per GPU: the budget's tokens times a layer's peak activations (ACTIVATION_HIDDEN
    hidden states and the MLP's gate and up outputs of this GPU's share, 2 bytes each), fp32 logits of the running
    cap's requests, and RUNTIME_OTHER_GIB. Llama 3.3 70B at TP 2 on 80 GB GPUs: 2.4 GiB a GPU; vLLM logged 2.05 GiB
    of KV cache beside 67.35 GiB of weights at its default share of 0.9 (bench/served_runs.json, tomasruizt's runs),
    a reserve of 2.2-2.6 GiB as the GPU's 80 GB are read. 0 for engines whose share leaves the runtime its rest."""
    if not dep.engine.reserves_runtime:
        return 0.0
    m = dep.shape
    tokens = by_memory(dep, dep.engine.prefill_budget)
    activations = tokens * (ACTIVATION_HIDDEN * m["hidden"] + 2 * mlp_width(m) / dep.tp) * 2
    logits = by_memory(dep, dep.engine.running_limit) * m["vocab"] * 4
    return dep.tp * (activations + logits + RUNTIME_OTHER_GIB * GIB)


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


def query_heads(m):
    """Attention's query heads, or 0 for MLA, whose one latent every head reads together (kv_reads)."""
    return 0 if m.get("mla") else m["heads"]


def kv_reads(net, dep, tokens_per_seq):
    """How many times a pass reads each sequence's KV cache: once, or once per query head of a KV head's group where
    the engine's attention kernel gives every query head its own thread block when a sequence brings more than one
    query token (Engine.unshared_kv_families: vLLM's FlashAttention 2, which packs a group's heads into one block only
    at one query token, vllm-project/flash-attention csrc/flash_attn/flash_api.cpp, mha_varlen_fwd:
    seqlenq_ngroups_swapped = max_seqlen_q == 1 && num_heads > num_heads_k ...). A verify pass carries K + 1. vLLM
    runs FlashAttention on an fp8 cache or a model with attention sinks only at version 3
    (vllm/v1/attention/backends/fa_utils.py: flash_attn_supports_fp8, flash_attn_supports_sinks), so those take
    another kernel: once. Each GPU holds heads / tp query heads against max(1, kv_heads / tp) KV heads; under
    attention data parallelism all of both. Not counted: a plain step that carries a prompt chunk brings more than
    one query token too (prefill_parts charges the chunk at a plain step's margin).
    >>> dep = make_deployment("llama-3.1-8b", "a100-sxm-80gb", 1, "bf16", draft="eagle3")
    >>> kv_reads(dep.target, dep, 1), kv_reads(dep.target, dep, 4), kv_reads(dep.target, make_deployment(), 4)
    (1.0, 4.0, 1.0)
    """
    if (tokens_per_seq <= 1 or not net.query_heads or gpu_family(dep) not in dep.engine.unshared_kv_families
            or dep.kv_dtype == "fp8" or dep.shape.get("sinks")):
        return 1.0
    return max(1.0, net.query_heads / max(net.kv_groups, 1 if dep.dp_attention else dep.tp))


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


@functools.lru_cache(maxsize=1024)
def bw_rel(dep):
    """The GPU's own bw_rel (GPUS): 1 for custom hardware, and for a catalog GPU whose bandwidth --gpu-bandwidth
    replaced (the number given is the user's, not the datasheet's). Cached by deployment: every pass asks."""
    spec = GPUS.get(dep.gpu)
    return spec.get("bw_rel", 1.0) if spec and dep.bandwidth_tbs == spec["bandwidth_tbs"] else 1.0


def bandwidth_share(dep, fit=FIT):
    """The achieved share of datasheet bandwidth: the GPU family's fitted share, times the GPU's own bw_rel."""
    return getattr(fit, BW_FAMILY[gpu_family(dep)]) * bw_rel(dep)


def allreduce_ms(dep, message_bytes, fit=FIT):
    """One all-reduce across the TP GPUs: a latency that grows with the GPU count, plus a ring's
    2(G-1)/G of the message over one link (the published plain steps, bench/plain_step.json, imply 18-29 us
    at small batch).

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


def pass_parts(net, dep, batch, tokens_per_seq, fixed_cost, fit=FIT, prefill=0.0, host=True):
    """The terms of one forward pass, in ms: weights, attention, compute, activations, communication, fixed, engine.

    tokens_per_seq new tokens for each of `batch` sequences at the mean context, plus
    `prefill` prompt tokens mixed into the same pass (their own attention averages half
    the prompt). The engine's cost per token (Fit.token_us_<engine>: sampling, logits, bookkeeping) is a target
    pass's decoded or verified token's (host=True), where its scheduler does not overlap it with the GPU
    (token_cost_hidden); a draft step (host=False) samples on the GPU inside the proposer's loop. The
    weight read and the GEMMs' math overlap (overlapped, Fit.overlap), the KV read and attention's math likewise,
    and elementwise kernels stream each token's activations apart (ELEMENTWISE_HIDDEN, ELEMENTWISE_MLP).
    All K+1 query tokens of a sequence share its reads of its KV history (kv_reads). A MoE
    layer reads the experts its tokens touch (expected_experts): a verify pass's B*(K+1)
    tokens touch more than a plain step's B, though fewer than as many independent tokens, for a sequence's
    consecutive tokens reuse experts (independent_tokens, Fit.expert_affinity; a prefill chunk's tokens are taken as
    independent: at hundreds of tokens they touch every expert either way); its fused kernel adds a latency of its
    own (Engine.moe_layer_us) to the pass's fixed cost in place of the dense MLP's share of it (Fit.mlp_fixed_share).
    """
    tokens = batch * tokens_per_seq + prefill
    bytes_per_ms = dep.tp * dep.bandwidth_tbs * 1e9 * bandwidth_share(dep, fit)
    routings = independent_tokens(batch, tokens_per_seq, fit.expert_affinity) + prefill
    experts = net.moe_layers * touched_experts(net, dep, routings) * net.expert_bytes
    # Attention data parallel: every GPU reads a whole copy of what is not a routed expert, holds ceil(B / tp) of
    # the sequences (their KV and per-token host work, no copies), and one collective a MoE layer gathers its
    # tokens for the experts and scatters them back, where TP runs two all-reduces a layer.
    dp = dep.tp if dep.dp_attention else 1
    weights = (net.weight_bytes * dp + experts) / (bytes_per_ms * (fit.fp8_eff if net.fp8 else 1.0))
    mine = rank_sequences(dep, batch)   # the sequences the busiest GPU attends to: the replica's pace is dp x them
    kv_per_ms = bytes_per_ms * (fit.fp8_kv_eff if dep.kv_dtype == "fp8" else 1.0)
    window = min(dep.context, net.window) if net.window else 0
    copies = kv_copies(net, dep)   # each GPU reads its own copy of heads it shares with others
    history = (mine * dp * copies * kv_reads(net, dep, tokens_per_seq)
               * (dep.context * net.kv_bytes_per_token + window * net.window_kv_bytes) / kv_per_ms)
    one_sequence = (attended(net, dep.context) * fit.attn_ns / 1e6 * ATTN_FLOOR_TBS
                    / (dep.bandwidth_tbs * bw_rel(dep))
                    / (fit.fp8_kv_eff if dep.kv_dtype == "fp8" else 1.0))   # the kernel dequantises each token
    attention = (max(history, one_sequence)
                 + tokens * copies * (net.kv_bytes_per_token + net.window_kv_bytes) / kv_per_ms)
    # FLOPs: 2 a parameter a token in the GEMMs, 4 per query-key width per token of context attended to.
    decode_attention = batch * tokens_per_seq * 4 * net.attn_width * attended(net, dep.context)
    prompt_attention = prefill * 4 * (net.prompt_attn_width or net.attn_width) * attended(net, dep.input_tokens / 2)
    gemm = (batch * tokens_per_seq + prefill) * 2 * net.active_params
    if dep.dp_attention and prefill:   # one rank prefills a prompt: all but its routed experts' math on one GPU
        routed = net.moe_layers * net.experts_per_token * net.expert_bytes
        gemm += (dep.tp - 1) * prefill * 2 * net.active_params * net.weight_bytes / (net.weight_bytes + routed)
        prompt_attention *= dep.tp
    rate = dep.tp * net.tflops * 1e9 * fit.flop_eff * flop_share(fit, gpu_family(dep))
    gemm_math, attention_math = gemm / rate, (decode_attention + prompt_attention) / rate
    # What the math adds to the read it overlaps: a GEMM's to the weights' (overlapped), attention's to the KV's.
    compute = (overlapped(weights, gemm_math, fit.overlap) - weights
               + overlapped(attention, attention_math, fit.overlap) - attention)
    # Elementwise kernels stream each token's activations, apart from the GEMMs (ELEMENTWISE): under TP every GPU
    # normalises every token's hidden state and holds 1 / tp of the MLP's; under attention DP a rank its own tokens'.
    hidden_copies = 1 if dep.dp_attention else dep.tp
    activations = (tokens * net.layers * ACTIVATION_BYTES
                   * (ELEMENTWISE_HIDDEN * net.hidden * hidden_copies + ELEMENTWISE_MLP * net.mlp_width) / bytes_per_ms)
    collectives = net.moe_layers if dep.dp_attention else 2 * net.layers
    communication = collectives * allreduce_ms(dep, tokens * net.hidden * ACTIVATION_BYTES, fit)
    return dict(weights=weights, attention=attention, compute=compute, activations=activations,
                communication=communication,
                fixed=(fixed_cost + net.layers * fit.layer_us / 1e3
                       + net.moe_layers * (dep.engine.moe_layer_us - fit.mlp_fixed_share * fit.layer_us) / 1e3),
                engine=(mine * tokens_per_seq * getattr(fit, f"token_us_{dep.engine.token_cost_of}") / 1e3
                        if host and not token_cost_hidden(dep, tokens_per_seq) else 0.0))


def token_cost_hidden(dep, tokens_per_seq):
    """Whether a target pass's cost per token (Fit.token_us_<engine>) is off the critical path: the scheduler works on
    the next step while the GPU runs this one. A plain step (one token a sequence) in an era of asynchronous steps
    (Era.async_steps: SGLang's overlap scheduler, vLLM from 0.14); a verify pass in such an era for the draft kinds
    whose rounds it runs asynchronously (Era.hides_for: vLLM's EAGLE and MTP from 0.14, draft models too from 0.28;
    none on SGLang).
    >>> from rollout.catalog import era_of
    >>> sync = make_deployment(draft="eagle3", era=era_of("vllm", "0.10"))
    >>> [token_cost_hidden(d, n) for d in (sync, make_deployment(draft="eagle3")) for n in (1, 4)]
    [False, False, True, True]
    >>> model = make_deployment(draft="llama-3.2-1b", era=era_of("vllm", "0.27"))
    >>> newer = make_deployment(draft="llama-3.2-1b", era=era_of("vllm", "0.28"))
    >>> token_cost_hidden(model, 4), token_cost_hidden(model, 1), token_cost_hidden(newer, 4)
    (False, True, True)
    """
    return dep.era.async_steps and (tokens_per_seq <= 1 or draft_kind(dep.draft) in dep.era.hides_for)


def overlapped(read, math_ms, p):
    """A GEMM's time from its weight read and its math, each alone: (read^p + math^p)^(1/p). p = 1 adds them (no
    overlap); a large p tends to the roofline's max; between, the smooth transition measured kernels show near the
    ridge, where neither term is hidden whole (Fit.overlap, fitted).

    >>> overlapped(3.0, 4.0, 1.0), overlapped(3.0, 4.0, 2.0), round(overlapped(3.0, 4.0, 50.0), 3)
    (7.0, 5.0, 4.0)
    """
    if not read or not math_ms:
        return read + math_ms
    top = max(read, math_ms)
    return top * ((read / top) ** p + (math_ms / top) ** p) ** (1.0 / p)


def pass_ms(net, dep, batch, tokens_per_seq, fixed_cost, fit=FIT, prefill=0.0, host=True):
    """Time of one forward pass (pass_parts, summed); fixed_cost: the engine's fixed cost of it (fixed_ms)."""
    return sum(pass_parts(net, dep, batch, tokens_per_seq, fixed_cost, fit, prefill, host).values())


def target_parts(dep, batch, tokens_per_seq, fit=FIT, prefill=0.0):
    """The terms of one target pass (pass_parts) with the engine's fixed cost of a pass, each times its own_*
    factor (OWN_PARTS: 1 in the published fit)."""
    parts = pass_parts(dep.target, dep, batch, tokens_per_seq, fixed_ms(dep, "pass", fit), fit, prefill)
    if dep.engine.seq_cost:   # a served step's host work per running sequence, where it is measured
        parts["engine"] += rank_sequences(dep, batch) * getattr(fit, dep.engine.seq_cost) / 1e3
    if fit.own_pass == fit.own_weights == fit.own_context == fit.own_token == 1.0:   # the published fit: no scaling
        return parts
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
    Little's law over the closed loop). A request's TPOT sees only the prompts of the other B - 1: its
    own is prefilled before its first token (TTFT), and its successor arrives after its
    last. So (B - 1) * I / O: none at concurrency 1, where NIM's batch-1 runs at 2,000-7,000
    prompt tokens showed the B * I / O charge 10-26% too dear in the context slope.
    >>> prefill_tokens(make_deployment(input_tokens=5000, output_tokens=500), 25)
    240.0
    """
    return max(batch - 1, 0) * dep.input_tokens / dep.output_tokens


COST_MEMO = {}   # (what, Deployment.physics, fit, batch) -> ms: Deployment and Fit are frozen and hashed by value


def memoised(what, dep, batch, fit, compute):
    """compute() once per deployment, fit and batch: the tables ask for the same passes many times."""
    key = (what, dep.physics, fit, batch)
    if key not in COST_MEMO:
        if len(COST_MEMO) > 65536:
            COST_MEMO.clear()
        COST_MEMO[key] = compute()
    return COST_MEMO[key]


def decode_step_ms(dep, batch, fit=FIT):
    """One decode step without speculation and without any prefill: a target pass over one token per sequence."""
    held = COST_MEMO.get(("decode", dep.physics, fit, batch))   # the tables ask for it a million times a suite: no closure
    return held if held is not None else memoised("decode", dep, batch, fit, lambda: target_pass_ms(dep, batch, 1, fit))


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
    verify_routed: float     #: the independent tokens they route like (independent_tokens: a sequence's reuse experts)
    plain_read: float        #: experts a plain step reads per layer at the replica's pace (touched_experts)
    verify_read: float       #: likewise for the verify pass: under expert parallelism, ep x the busiest GPU's
    eps: float               #: decode eps of the round
    eps_dense: float         #: decode eps of a dense model of the same active size


def moe_verify(dep, k, batch, fit=FIT):
    """Experts a plain step and a verify pass touch per MoE layer, and eps beside a dense model's of the same active size."""
    t = dep.target
    verify = verify_tokens(dep, k)
    routed = independent_tokens(batch, verify, fit.expert_affinity)   # a sequence's tokens share experts
    return MoeVerify(k=k, batch=batch, verify_tokens=verify, experts=t.experts, experts_per_token=t.experts_per_token,
                     plain_experts=expected_experts(t.experts, t.experts_per_token, batch, t.routing_exponent),
                     verify_experts=expected_experts(t.experts, t.experts_per_token, routed, t.routing_exponent),
                     verify_routed=routed,
                     plain_read=touched_experts(t, dep, batch), verify_read=touched_experts(t, dep, routed),
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
    held = COST_MEMO.get(("prefill", dep.physics, fit, batch))
    return held if held is not None else memoised("prefill", dep, batch, fit,
                                                  lambda: fit.own_prefill * sum(prefill_parts(dep, batch, fit).values()))


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
    return pass_ms(dep.drafter, dep, batch, tokens_per_seq, fixed_ms(dep, "draft", fit), fit, host=False)


def round_ms(dep, batch, k, fit=FIT):
    """One speculative round without prefill: K draft steps, then one verify pass over K+1 tokens a sequence.

    A tree draft expands topk tokens a sequence at each step after the first and verifies
    dep.verify_tokens a sequence (SGLang's --speculative-num-draft-tokens).
    """
    return memoised(("round", k), dep, batch, fit, lambda: (
        fit.own_round * fixed_ms(dep, "round", fit) + fit.own_draft * draft_ms(dep, batch, k, fit)
        + verify_pass_ms(dep, batch, k, fit) - hidden_ms(dep, k, fit)))


def hidden_ms(dep, k, fit=FIT):
    """The host time of a round its engine era no longer waits for (Era.saving_ms), at most the round's fixed costs:
    its bookkeeping and its K draft steps' fixed costs (a kernel's own time is never hidden)."""
    fixed = fit.own_round * fixed_ms(dep, "round", fit)
    if runs_a_draft_model(dep):
        fixed += fit.own_draft * k * fixed_ms(dep, "draft", fit)
    if draft_kind(dep.draft) in dep.era.hides_for:   # async rounds: the next is prepared while the GPU runs this one
        return fixed
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


@functools.lru_cache(maxsize=4096)
def at_lengths(dep, input_tokens, output_tokens):
    """The deployment at a run's own prompt and output lengths (its totals over completed requests). Cached: a fit
    asks for the same runs' deployments thousands of times, and one frozen Deployment serves every asker."""
    return replace(dep, input_tokens=input_tokens, output_tokens=output_tokens,
                   context=mean_context(input_tokens, output_tokens))
