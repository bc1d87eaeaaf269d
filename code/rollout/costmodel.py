"""The cost model: what a plain step, a draft step, a verify pass and a prefill chunk cost on a deployment
(weights, KV cache, compute, communication and fixed terms), the fit of its constants (FIT) on published
measurements, and eps, a round over a plain step.
"""
from __future__ import annotations

import functools
import math
from collections import namedtuple
from dataclasses import dataclass, replace

from .experts import expected_experts, independent_tokens, touched_experts
from .catalog import GPUS
from .deployment import (
    BW_FAMILY, draft_kind, gpu_family, kv_copies, prefill_chunk, runs_a_draft_model, verify_tokens,
)
from .deployment import token_cost_hidden
from .records import OWN_TERMS


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

OWN_PARTS = dict(fixed="own_pass", weights="own_weights", attention="own_context", compute="own_token",
                 activations="own_token", engine="own_token")   # pass_parts' term -> the Fit factor that scales it in a target pass;
                                       # communication keeps the published fit's (no factor)

Fit = namedtuple("Fit", "bw_hopper bw_ampere bw_ada flop_eff fp8_eff fp8_kv_eff attn_ns layer_us ar_us ar_tp_us "
                        "link_eff pass_fixed_ms_vllm pass_fixed_ms_sglang pass_fixed_ms_trtllm draft_fixed_ms_vllm "
                        "draft_fixed_ms_sglang round_fixed_ms_vllm round_fixed_ms_sglang token_us_vllm seq_us_trtllm "
                        "bw_cdna flop_cdna flop_ampere token_us_sglang "
                        "overlap "
                        + " ".join(OWN_TERMS) + " request_ms expert_affinity mlp_fixed_share mlp_fixed_share_cdna",
          defaults=(1.0,) * (1 + len(OWN_TERMS)) + (0.0,) * 4)
# bw_<family>: achieved share of datasheet bandwidth streaming weights and KV, by GPU
# family (GPUS' "family"; families without calibration data borrow one, BW_FAMILY);
# flop_eff: achieved share of peak FLOP/s; fp8_eff: the share of that bandwidth an fp8
# weight read keeps (block scales, dequantisation and activation quantisation: an fp8 step
# is not half a bf16 one); fp8_kv_eff: likewise for an fp8 KV cache (the attention kernel
# dequantises it); attn_ns: ns per layer per token of context that one sequence's attention
# takes however few bytes it reads (a decode attention kernel spreads one sequence over
# few SMs), the floor of the KV time at small batch (the fit's 8 ns is 0.26 ms per 1k tokens
# on the 32-layer 8B, several times its KV read; MLA's split kernels pay none, but on the MI300X:
# splits_a_sequence);
# layer_us: fixed cost per layer per pass (kernel launches, norms, rotary); ar_us, ar_tp_us: one all-reduce's
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
# simulation adds it once, on the way in. --calibrate refits it on your runs' median TTFTs (calibration.fit_request_ms).
# 15 ms is the least loss (mean over the three sources of the median |log error| of median TTFT: a run's few slow first
# requests move its mean, not its median) on a 5 ms grid; 5-20 ms with any one source left out, and NIM's whole TTFT
# at concurrency 1 is as little as 9 ms on an H100 (bench/served_load.txt, bench/nim_serving.txt): clients differ,
# so calibrate.
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
# replaces. Fitted on InferenceX's plain runs on NVIDIA GPUs (bench/moe_load.py: 0.75 on the H200 and B200 runs, 0.5
# or 0.75 with one left out); a batch-1 step of Qwen3-30B-A3B bf16 on two H100s (SGLang, sgl-project/SpecForge#339)
# measures 4.49 ms, against 4.78 modelled at 0.75 and 5.79 at 0 at 128 tokens in and 256 out (tests/test_moe_load.py
# holds it within 10%). mlp_fixed_share_cdna: the same on an AMD CDNA GPU (moe_fixed_share), where SGLang runs
# aiter's fused-MoE kernels, not those the sweeps timed: fitted on the MI300X and MI355X runs apart, 0 (0 or 0.25
# with one left out). Fitted together, the MI300X's runs, slower than the model for reasons of their own (bench/FIT.md),
# pulled NVIDIA's share down to 0.5, and to 0 with the B200 left out, where the B200's plain TPOT missed by 13.1%.
FIT = Fit(bw_hopper=0.9049, bw_ampere=0.7296, bw_ada=0.7856, flop_eff=0.83, fp8_eff=0.9348, fp8_kv_eff=0.7911,
          attn_ns=8.1758, layer_us=28.0859, ar_us=15.0, ar_tp_us=2.7949, link_eff=0.4421, pass_fixed_ms_vllm=0.6953,
          pass_fixed_ms_sglang=0.0, pass_fixed_ms_trtllm=0.9443, draft_fixed_ms_vllm=0.6395,
          draft_fixed_ms_sglang=0.45, round_fixed_ms_vllm=1.4307, round_fixed_ms_sglang=2.0518,
          token_us_vllm=17.1484, seq_us_trtllm=46.7773, bw_cdna=0.6575, flop_cdna=0.2942, flop_ampere=0.95,
          token_us_sglang=17.2656, overlap=2.5, request_ms=15.0, expert_affinity=0.4,
          mlp_fixed_share=0.75, mlp_fixed_share_cdna=0.0)
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


# The drafter of n-gram lookup: proposals come from matching the context, so it holds no
# weights, no KV cache, and runs no draft steps (draft_step_ms).


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
    >>> dep = example("llama-3.1-8b", "a100-sxm-80gb", 1, weights_dtype="bf16", draft="eagle3")
    >>> kv_reads(dep.target, dep, 1), kv_reads(dep.target, dep, 4), kv_reads(dep.target, example(), 4)
    (1.0, 4.0, 1.0)
    """
    if (tokens_per_seq <= 1 or not net.query_heads or gpu_family(dep) not in dep.engine.unshared_kv_families
            or dep.kv_dtype == "fp8" or dep.shape.get("sinks")):
        return 1.0
    return max(1.0, net.query_heads / max(net.kv_groups, 1 if dep.dp_attention else dep.tp))


@functools.lru_cache(maxsize=1024)
def bw_rel(dep):
    """The GPU's own bw_rel (GPUS): 1 for custom hardware, and for a catalog GPU whose bandwidth --gpu-bandwidth
    replaced (the number given is the user's, not the datasheet's). Cached by deployment: every pass asks."""
    spec = GPUS.get(dep.gpu)
    return spec.get("bw_rel", 1.0) if spec and dep.bandwidth_tbs == spec["bandwidth_tbs"] else 1.0


def moe_share_field(dep):
    """The Fit field of the share of a layer's fixed cost a MoE layer does not pay on this GPU: NVIDIA's
    (mlp_fixed_share), or on an AMD CDNA GPU, whose fused-MoE kernels are ROCm's and unmeasured here, its own."""
    return "mlp_fixed_share_cdna" if gpu_family(dep) == "cdna" else "mlp_fixed_share"


def moe_fixed_share(dep, fit=FIT):
    """The share of a layer's fixed cost a MoE layer does not pay on this GPU (moe_share_field)."""
    return getattr(fit, moe_share_field(dep))


def bandwidth_share(dep, fit=FIT):
    """The achieved share of datasheet bandwidth: the GPU family's fitted share, times the GPU's own bw_rel."""
    return getattr(fit, BW_FAMILY[gpu_family(dep)]) * bw_rel(dep)


def allreduce_ms(dep, message_bytes, fit=FIT):
    """One all-reduce across the TP GPUs: a latency that grows with the GPU count, plus a ring's
    2(G-1)/G of the message over one link (the published plain steps, bench/plain_step.json, imply 18-29 us
    at small batch).

    >>> dep = example(gpu="h100-sxm", tp=4)
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
    return (net.layers - net.window_layers - net.state_layers) * context + net.window_layers * window


def splits_a_sequence(net, dep):
    """Whether the engines' decode attention kernels for this network spread one sequence's KV over every SM, so that
    a sequence pays no floor of its own (Fit.attn_ns) past its bytes: MLA's. Its decode kernels plan the batch's KV
    blocks as one list cut evenly across the SMs, a long sequence split into as many parts as it needs (FlashMLA's
    tile scheduler, deepseek-ai/FlashMLA csrc/kernels/get_mla_metadata.cu: num_sm_parts, num_splits; vLLM's and
    SGLang's MLA backends on Hopper call it; AMD's aiter MLA plans num_splits per sequence the same way on gfx950,
    csrc/kernels/mla/metadata; Blackwell's CUTLASS MLA takes a split_kv). GQA's decode kernels give a sequence a
    thread block per KV head, and NIM's batch-1 context slopes (plain_step.json) show the floor they pay; so does
    MLA on a GPU whose kernels cut a sequence into a fixed few parts (catalog.GPUS' mla_splits: the gfx942 MI300X
    and MI325X, 16 of 304 CUs), where a long sequence is walked by those few, however short the batch.

    >>> [splits_a_sequence(d.target, d) for d in (example("deepseek-v3", "h200", 8, weights_dtype="fp8"),
    ...  example("deepseek-v3", "mi300x", 8, weights_dtype="fp8"), example("llama-3.1-8b", "h100-sxm", 1))]
    [True, False, False]
    """
    return net.query_heads == 0 and net.kv_groups == 1 and not GPUS.get(dep.gpu, {}).get("mla_splits")


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
    one_sequence = 0.0 if splits_a_sequence(net, dep) else (
        attended(net, dep.context) * fit.attn_ns / 1e6 * ATTN_FLOOR_TBS / (dep.bandwidth_tbs * bw_rel(dep))
        / (fit.fp8_kv_eff if dep.kv_dtype == "fp8" else 1.0))   # the kernel dequantises each token
    # A recurrent layer reads each sequence's state once a pass and writes it back after every token it keeps
    # a state for: once in a decode, K + 1 times in a verify (a rejection resumes from any position: STATE_COPIES).
    states = mine * dp * net.state_bytes * (1 + tokens_per_seq) / bytes_per_ms
    attention = (max(history, one_sequence) + states
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
                       + net.moe_layers * (dep.engine.moe_layer_us - moe_fixed_share(dep, fit) * fit.layer_us) / 1e3),
                engine=(mine * tokens_per_seq * getattr(fit, f"token_us_{dep.engine.token_cost_of}") / 1e3
                        if host and not token_cost_hidden(dep, tokens_per_seq) else 0.0))


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
    >>> prefill_tokens(example(input_tokens=5000, output_tokens=500), 25)
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


