"""The Deployment: one replica as the cost model sees it (hardware, target and drafter networks, engine, traffic
lengths), built from catalog names (make_deployment) or a config.json's shape; the networks' parameters and bytes;
what fits in memory (max_concurrency) and the engine's step budget. What a step of it costs is costmodel's.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, fields, replace

from .records import CONCURRENCY_LIMIT
from .catalog import (
    BYTES_PER, DRAFT_WEIGHT_BYTES, EAGLE3_DRAFT_VOCAB, EAGLE_DRAFTS, Engine, ENGINES, Era, GIB, GPU_FAMILY, GPUS,
    MODELS, newest_era,
)
from .experts import model_routing_exponent
from .priors import K_REFERENCE


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
    state_layers: int = 0    #: recurrent layers (linear attention, Mamba): a fixed state per sequence, no KV cache
    state_bytes: float = 0.0   #: that state per sequence over all of them, bytes (recurrent_state_bytes)
    routing_exponent: float = 0.0   #: its router's popularity skew (model_routing_exponent; 0: uniform)
    kv_groups: int = 1       #: KV heads its cache splits into across TP GPUs: kv_heads, 1 for MLA's one latent
    query_heads: int = 0     #: attention's query heads (0: MLA's, whose one latent every head shares; kv_reads)
    prompt_attn_width: int = None   #: attention's width per token in a prefill chunk where it differs (MLA)
    mlp_width: float = 0.0   #: MLP activations per token per layer, elements: the dense width, or k experts' and the
                             #: shared experts' in a MoE layer, averaged over layers (elementwise's traffic)


NO_MODEL = Net(active_params=0, weight_bytes=0, kv_bytes_per_token=0, attn_width=0, layers=0, hidden=0, tflops=0,
               held_params=0, held_bytes=0, fp8=False)


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
    configs: tuple = (None, None)   #: the --model-config and --draft-config paths (None: not given), so the
                                    #: plan's commands can name them again
    era: Era = None          #: the engine's release era (Engine.eras): what a round's host work costs there
    release: tuple = None    #: the --engine-version release as (major, minor, patch, stage[, as typed]) (catalog.release_of), which the
                             #: plan's commands are written for; None: the newest (releases.py)
    ep: int = field(kw_only=True)   #: expert-parallel GPUs: 1 (every expert split across the TP GPUs) or tp (whole
                                    #: experts)
    dp_attention: bool = field(kw_only=True)   #: attention data parallel across the tp GPUs (with ep = tp): see pass_parts
    temperature: float = field(kw_only=True)   #: sampling temperature of the plan's benchmark runs (the traffic's own)
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
    """One layer's attention: q, k, v and o projections (MLA's low-rank ones for DeepSeek), biases, sinks, and
    Qwen3-Next's output gate (its q_proj is twice as wide: queries and a gate per head, and q and k norms)."""
    h, n = m["hidden"], m["heads"]
    a = m.get("mla")
    if a:
        q_width = n * (a["nope"] + a["rope"])
        q = h * a["q_lora_rank"] + a["q_lora_rank"] + a["q_lora_rank"] * q_width if a["q_lora_rank"] else h * q_width
        kv = h * (a["kv_lora_rank"] + a["rope"]) + a["kv_lora_rank"] + a["kv_lora_rank"] * n * (a["nope"] + a["v_head_dim"])
        return q + kv + n * a["v_head_dim"] * h
    qkv = m["head_dim"] * (n * (2 if m.get("attn_gate") else 1) + 2 * m["kv_heads"])
    params = h * qkv + n * m["head_dim"] * h + (2 * m["head_dim"] if m.get("attn_gate") else 0)
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


# Recurrent layers. A hybrid model mixes attention layers with layers that keep a fixed state per sequence in
# place of a KV cache that grows: Gated DeltaNet's linear attention (Qwen3-Next: transformers'
# models/qwen3_next/modeling_qwen3_next.py, Qwen3NextGatedDeltaNet) and Mamba's selective state space (Jamba:
# models/jamba/modeling_jamba.py, JambaMambaMixer). Each such layer holds, per sequence, a convolution's last
# conv - 1 inputs and a recurrent state; both engines keep them in the model's dtype unless the config asks for
# fp32 (vLLM: MambaStateDtypeCalculator in vllm/model_executor/layers/mamba/mamba_utils.py, the
# mamba_ssm_cache_dtype setting; SGLang: its MambaPool, mem_cache/memory_pool.py).

def linear_attention_params(m):
    """One Gated DeltaNet layer: in_proj_qkvz (q, k of the key heads, v and the gate z of the value heads),
    in_proj_ba (two per value head), the depthwise convolution over q, k and v, A_log and dt_bias, the gated norm
    and out_proj. Qwen3-Next-80B's: 33.7 M.
    >>> linear_attention_params(MODELS["qwen3-next-80b-a3b"])
    33718464
    """
    g, h = m["linear"], m["hidden"]
    keys, values = g["key_heads"] * g["key_dim"], g["value_heads"] * g["value_dim"]
    conv_width = 2 * keys + values
    return (h * (2 * keys + 2 * values) + h * 2 * g["value_heads"] + conv_width * g["conv"]
            + 2 * g["value_heads"] + g["value_dim"] + values * h)


def mamba_params(m):
    """One Mamba-1 mixer (Jamba's): in_proj to x and the gate (2 x inner), the depthwise convolution with its bias,
    x_proj to dt, B and C, dt_proj with its bias, A_log, D, Jamba's dt, B and C norms, and out_proj."""
    s, h = m["mamba"], m["hidden"]
    inner, state, rank = s["inner"], s["state"], s["dt_rank"]
    return (h * 2 * inner + inner * s["conv"] + inner + inner * (rank + 2 * state) + rank * inner + inner
            + inner * state + inner + rank + 2 * state + inner * h)


def recurrent_state_elements(m):
    """(convolution, recurrent) state elements per sequence of one linear-attention and one Mamba layer:
    ((conv, state) of a Gated DeltaNet layer, (conv, state) of a Mamba layer), (0, 0) where it has none.
    Gated DeltaNet: (2 keys + values) channels x (conv - 1), and a key_dim x value_dim matrix per value head;
    Mamba-1: inner x (conv - 1), and inner x state.
    >>> recurrent_state_elements(MODELS["qwen3-next-80b-a3b"])
    ((24576, 524288), (0, 0))
    """
    g, s = m.get("linear"), m.get("mamba")
    linear = ((2 * g["key_heads"] * g["key_dim"] + g["value_heads"] * g["value_dim"]) * (g["conv"] - 1),
              g["value_heads"] * g["key_dim"] * g["value_dim"]) if g else (0, 0)
    mamba = (s["inner"] * (s["conv"] - 1), s["inner"] * s["state"]) if s else (0, 0)
    return linear, mamba


def recurrent_state_bytes(m):
    """Bytes of recurrent state one sequence holds over the model's linear-attention and Mamba layers: the
    convolution's in bf16, the recurrent state at state_bytes a element (2: the model's bf16; 4 where the config
    keeps it in fp32, mamba_ssm_dtype). Qwen3-Next-80B's 36
    Gated DeltaNet layers: 36 x (24,576 + 524,288) x 2 B = 39.5 MB, whatever the context.
    >>> recurrent_state_bytes(MODELS["qwen3-next-80b-a3b"])
    39518208
    """
    (linear_conv, linear_state), (mamba_conv, mamba_state) = recurrent_state_elements(m)
    width = m.get("state_bytes", 2)
    return (m.get("linear_layers", 0) * (2 * linear_conv + width * linear_state)
            + m.get("mamba_layers", 0) * (2 * mamba_conv + width * mamba_state))


def state_layers(m):
    """Layers whose mixer keeps a recurrent state, not a KV cache."""
    return m.get("linear_layers", 0) + m.get("mamba_layers", 0)


def model_params(m, active=False):
    """Parameters from a config's shape; active: those one token uses (k experts, embeddings and lm_head counted).

    >>> round(model_params(MODELS["llama-3.1-8b"]) / 1e9, 3), round(model_params(MODELS["llama-3.3-70b"]) / 1e9, 3)
    (8.03, 70.554)
    >>> round(model_params(MODELS["qwen3-30b-a3b"]) / 1e9, 2), round(model_params(MODELS["qwen3-30b-a3b"], active=True) / 1e9, 2)
    (30.53, 3.35)
    """
    moe_layers = m.get("moe_layers", 0)
    mixers = ((m["layers"] - state_layers(m)) * attention_params(m)
              + (m.get("linear_layers", 0) * linear_attention_params(m) if m.get("linear") else 0)
              + (m.get("mamba_layers", 0) * mamba_params(m) if m.get("mamba") else 0))
    mlp = (m["layers"] - moe_layers) * mlp_params(m, False, active)
    if moe_layers:
        mlp += moe_layers * mlp_params(m, True, active)
    return mixers + m["layers"] * 2 * m["hidden"] + mlp + embedding_params(m) + m["hidden"]


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
    """KV bytes per token of context over the full-attention layers (sliding-window layers: window_kv_bytes;
    recurrent layers hold a state instead: recurrent_state_bytes).

    >>> kv_bytes_per_token(MODELS["llama-3.1-8b"], "bf16"), kv_bytes_per_token(MODELS["llama-3.3-70b"], "bf16")
    (131072, 327680)
    >>> kv_bytes_per_token(MODELS["deepseek-v3"], "bf16")   # 61 x (512 + 64) x 2
    70272
    """
    return (m["layers"] - m.get("window_layers", 0) - state_layers(m)) * kv_bytes_per_layer(m, kv_dtype)


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


def gpu_spec(gpu, memory_gib=None, bandwidth_tbs=None, tflops=None, *, weights_dtype):
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
               prompt_attn_width=prompt_attention_width(m), mlp_width=mlp_width(m), state_layers=state_layers(m),
               state_bytes=recurrent_state_bytes(m))


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


def make_deployment(model, gpu, tp, *, weights_dtype, kv_dtype, context, draft, engine, draft_hf, input_tokens,
                    output_tokens, ep, dp_attention, temperature, spec=None, shape=None, topk=1, verify_tokens=None,
                    draft_shape=None, era=None):
    """Resolve catalog names (and an optional GPU spec from gpu_spec) into cost-model numbers. Every setting is
    the caller's (main.py's constants reach here through flags.DeploymentSettings.build or the flags).

    shape: a model's shape read from its config.json, instead of the catalog's row for `model`.
    context None: the prompt plus half the output, as a request decodes from input to input + output tokens of
    context. era: one of the engine's eras (None: its newest).
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


def kv_copies(net, dep):
    """How many times over the replica holds (and each step reads) a network's KV cache: each TP GPU keeps
    max(1, groups / tp) of its KV heads, so past tp = groups the heads are copied, and MLA's one latent is on every
    GPU (vllm/model_executor/models/deepseek_v2.py, DeepseekAttention: "Number of KV heads is less than TP
    size, so we replicate the KV heads"; vllm/distributed/kv_transfer/kv_connector/utils.py: the MLA cache is
    [blocks, block_size, 1, kv_lora_rank + rope] on each GPU). Under attention data parallelism each GPU
    holds its own sequences' whole cache: one copy.
    >>> d = example("deepseek-v3", "h200", 8, weights_dtype="fp8", draft="mtp")
    >>> kv_copies(d.target, d), kv_copies(example().target, example())
    (8.0, 1.0)
    """
    if dep.dp_attention:   # each GPU holds its own sequences' whole cache
        return 1.0
    groups = net.kv_groups or 1
    return dep.tp * math.ceil(groups / dep.tp) / groups


def kv_bytes_per_sequence(dep):
    """KV cache of one sequence at the mean context across the replica, target and draft, copies included
    (kv_copies); sliding-window layers keep their window; recurrent layers their state, once for the running
    sequence and once for each drafted position a round may roll back to (STATE_COPIES)."""
    window = min(dep.context, dep.target.window) if dep.target.window else 0
    return (dep.context * (dep.target.kv_bytes_per_token * kv_copies(dep.target, dep)
                           + dep.drafter.kv_bytes_per_token * kv_copies(dep.drafter, dep))
            + window * dep.target.window_kv_bytes * kv_copies(dep.target, dep)
            + dep.target.state_bytes * STATE_COPIES)


# A hybrid's state a sequence holds with speculation on: the running state and one per drafted position, so that
# a round that rejects at position j resumes from the state after j. vLLM allocates num_speculative_blocks =
# num_speculative_tokens state blocks beside the running one (MambaSpec in vllm/v1/kv_cache_interface.py; its
# GDN and Mamba2 metadata builders index them, vllm/v1/attention/backends/gdn_attn.py); SGLang keeps a verify's
# intermediate states per draft token (MambaPool's intermediate_ssm_state_cache, mem_cache/memory_pool.py).
# Counted at the reference K (priors.K_REFERENCE, 3): the memory table is one number for all K.
STATE_COPIES = 1 + K_REFERENCE


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


def verify_tokens(dep, k):
    """Tokens a sequence carries into the verify pass: K + 1 for a chain, the tree's own count for a tree."""
    return dep.verify_tokens or k + 1


def by_memory(dep, tiers):
    """An engine default that steps with the GPU's memory: the value of the first (least GiB, value) tier the GPU
    reaches, or the smallest on a GPU the engine keeps at its smallest defaults (Engine.prefill_budget_small)."""
    if dep.gpu in dep.engine.prefill_budget_small:
        return tiers[-1][1]
    return next(value for least, value in tiers if dep.memory_gib >= least)


def step_budget(dep):
    """Tokens one scheduler step carries at most by default, decodes' included: the engine's budget for the GPU's
    memory (Engine.prefill_budget), a rank's where attention data parallelism divides it.
    >>> step_budget(example(gpu="h100-sxm")), step_budget(example(gpu="b200"))
    (8192, 16384)
    """
    budget = by_memory(dep, dep.engine.prefill_budget)
    if dep.dp_attention and dep.engine.prefill_budget_per_dp:
        budget //= dep.tp
    return budget


def prefill_chunk(dep):
    """Prompt tokens one step prefills: a whole prompt, at most the step's budget (step_budget); the budget's decode
    tokens are a few against it and left out.
    >>> prefill_chunk(example(gpu="h100-sxm", input_tokens=20000)), prefill_chunk(example(input_tokens=500))
    (8192, 500)
    """
    return min(dep.input_tokens, step_budget(dep))


def runs_a_draft_model(dep):
    """Whether drafting runs a network: not for n-gram lookup (NO_MODEL, no layers)."""
    return dep.drafter.layers > 0


@functools.lru_cache(maxsize=4096)
def at_lengths(dep, input_tokens, output_tokens):
    """The deployment at a run's own prompt and output lengths (its totals over completed requests). Cached: a fit
    asks for the same runs' deployments thousands of times, and one frozen Deployment serves every asker."""
    return replace(dep, input_tokens=input_tokens, output_tokens=output_tokens,
                   context=mean_context(input_tokens, output_tokens))


BW_FAMILY = {"hopper": "bw_hopper", "ampere": "bw_ampere", "ada": "bw_ada",
             "blackwell": "bw_hopper",   # no Blackwell point to fit: taken as Hopper's share (an assumption)
             "cdna": "bw_cdna"}          # MI300X (CDNA 3): fitted on its one source, with flop_cdna


def simulated_layout(dep):
    """Whether serve_run simulates this deployment: a chain (a tree's rounds are measured, not drawn) on one
    scheduler. Attention data parallelism runs a scheduler, a token budget and a cap on every rank, which it does not."""
    return dep.topk == 1 and not dep.dp_attention


def shown_batch(dep, target):
    """The one batch the plan, its verdict and its gate answer at: the target concurrency, or the most sequences that
    fit if it does not (at least 1: a plan that fits none still names a batch)."""
    return min(target, max(max_concurrency(dep), 1))


def server_seqs(dep, plan_batch=None):
    """The server's cap on running sequences as it starts: the engine's default for the GPU's memory
    (Engine.running_limit, vLLM's max_num_seqs), or the batch the plan's command sets it to."""
    if dep.engine.plan_sets_running and plan_batch:
        return plan_batch
    return by_memory(dep, dep.engine.running_limit)


def running_cap(dep, speculative, plan_batch=None):
    """Sequences the server runs at once: the engine's default cap for the GPU's memory (Engine.running_limit), or
    the batch the plan's command sets it to, and at most the sequences whose KV cache fits beside the weights (at
    the mean context, or where the engine reserves it, at prompt plus answer): with speculation the draft's
    weights and KV take their share, so fewer fit.
    >>> short = example("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", input_tokens=64, output_tokens=64)
    >>> long = example("llama-3.1-8b", "h100-sxm", 1, weights_dtype="bf16", draft="eagle3")
    >>> running_cap(short, False), running_cap(long, False), running_cap(long, True)
    (1024, 301, 287)
    """
    return max(0, min(server_seqs(dep, plan_batch), seats(dep, speculative)))


def seats(dep, speculative):
    """The sequences whose KV cache fits beside the weights across the replica, the draft's with speculation: at the
    mean context, or where the engine reserves it, at prompt plus answer (running_cap, rank_cap)."""
    if dep.engine.reserves_whole_request:   # each running request holds KV for its prompt and its whole answer
        dep = replace(dep, context=dep.input_tokens + dep.output_tokens)
    return max_concurrency(dep if speculative else replace(dep, drafter=NO_MODEL))


def rank_cap(dep, speculative, plan_batch=None):
    """Sequences one rank of attention data parallelism runs at once: its share of what fits beside the weights, and
    the server's cap, each rank's own (vLLM's max_num_seqs per engine core, TensorRT-LLM's max_batch_size per rank),
    or the server's over the ranks where the engine divides it (Engine.prefill_budget_per_dp: SGLang divides
    max_running_requests by dp_size under DP attention: model_runner.py, "server_args.max_running_requests //
    (self.dp_size)"; tp_worker.py in older releases; as it does chunked_prefill_size).
    One scheduler's cap (running_cap) without attention data parallelism."""
    if not dep.dp_attention:
        return running_cap(dep, speculative, plan_batch)
    limit = server_seqs(dep, plan_batch)
    return max(0, min(limit // dep.tp if dep.engine.prefill_budget_per_dp else limit, seats(dep, speculative) // dep.tp))


def token_cost_hidden(dep, tokens_per_seq):
    """Whether a target pass's cost per token (Fit.token_us_<engine>) is off the critical path: the scheduler works on
    the next step while the GPU runs this one. A plain step (one token a sequence) in an era of asynchronous steps
    (Era.async_steps: SGLang's overlap scheduler, vLLM from 0.14); a verify pass in such an era for the draft kinds
    whose rounds it runs asynchronously (Era.hides_for: vLLM's EAGLE and MTP from 0.14, draft models too from 0.28;
    none on SGLang).
    >>> from rollout.catalog import era_of
    >>> sync = example(draft="eagle3", era=era_of("vllm", "0.10"))
    >>> [token_cost_hidden(d, n) for d in (sync, example(draft="eagle3")) for n in (1, 4)]
    [False, False, True, True]
    >>> model = example(draft="llama-3.2-1b", era=era_of("vllm", "0.27"))
    >>> newer = example(draft="llama-3.2-1b", era=era_of("vllm", "0.28"))
    >>> token_cost_hidden(model, 4), token_cost_hidden(model, 1), token_cost_hidden(newer, 4)
    (False, True, True)
    """
    return dep.era.async_steps and (tokens_per_seq <= 1 or draft_kind(dep.draft) in dep.era.hides_for)


def schedules_ahead(dep, speculative):
    """Whether the server plans each step while the GPU runs the one before (Era.ahead_for): plain decoding, or this
    deployment's draft kind with speculation on. A request that arrives mid-step then waits for that step and the
    one already planned before it is first scheduled: its TTFT holds one more step than under a synchronous loop."""
    return (draft_kind(dep.draft) if speculative else "") in dep.era.ahead_for


VOCAB_PADDING = 256   # tokens: vocabularies are padded to a multiple of 64 to 256 for the GPU's matrix shapes


def draft_problem(draft, target):
    """Why a draft model (a shape) cannot draft for a target, or None. Its tokens must be the target's: the same
    tokenizer, whose vocabulary size may differ by padding only (Qwen2.5 pads one tokenizer to 151,936 in its small
    models and to 152,064 from 7B up: 128 tokens), here up to VOCAB_PADDING tokens (Llama 3's 128,256 and DeepSeek
    V3's 129,280 are two tokenizers, 1,024 apart); and it must be smaller, or drafting saves nothing."""
    if abs(draft["vocab"] - target["vocab"]) > VOCAB_PADDING:
        return (f"its vocabulary ({draft['vocab']:,} tokens) is not the target's ({target['vocab']:,}): a draft model "
                "must share the target's tokenizer")
    if model_params(draft) >= model_params(target):
        return (f"it ({model_params(draft) / 1e9:.2f} B parameters) is not smaller than the target "
                f"({model_params(target) / 1e9:.2f} B)")
    return None
