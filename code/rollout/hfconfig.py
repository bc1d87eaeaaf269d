"""A Hugging Face config.json as this tool's model shape (catalog.MODELS' keys): the target's with --model-config, a
draft model's or an EAGLE head's with --draft-config. Each field is checked at this boundary; a missing, mistyped or
out-of-range one raises UsageError naming it. The MoE and attention variants read are those of the catalog's MoE rows
(their config.json files, as catalog.MODELS cites them).
"""
from __future__ import annotations

import re

from .records import (
    CONFIG_LIMIT_BYTES, EXPERT_LIMIT, EXPERTS_PER_TOKEN_LIMIT, LAYER_LIMIT, shown, SIZE_LIMIT, TOKENS_LIMIT, UsageError,
)
from .priors import family_entry
from .experts import ROUTING_OF_MODEL_TYPE
from .bounded import parse_json, read_text


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

    Reads dense Llama-style configs and the MoE and attention variants of the catalog's MoE rows
    (their config.json files, as catalog.MODELS cites them): Qwen3 MoE (decoder_sparse_step, mlp_only_layers), Llama 4 (text_config,
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
    layer_types = hybrid_layer_types(t, cfg, kind, layers, where)
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
    if experts > EXPERT_LIMIT:
        raise UsageError(f"{where}: {experts:,} routed experts; this tool models at most {EXPERT_LIMIT:,}")
    m["inter"] = size("intermediate_size_mlp", "intermediate_size")
    if experts:
        per_token = size("num_experts_per_tok", "experts_per_token")
        if per_token > EXPERTS_PER_TOKEN_LIMIT:
            raise UsageError(f"{where}: num_experts_per_tok {per_token:,}; this tool models at most "
                             f"{EXPERTS_PER_TOKEN_LIMIT} experts a token")
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
        if kind == "jamba" or t.get("expert_layer_period") is not None:
            # JambaConfig.layers_num_experts: experts where i % expert_layer_period == expert_layer_offset
            # (its defaults 2 and 1)
            step = size("expert_layer_period", most=LAYER_LIMIT, default=2)
            offset = size("expert_layer_offset", least=0, most=step - 1, default=1 if step > 1 else 0)
        else:   # Qwen's decoder_sparse_step, Llama 4's interleave_moe_layer_step: every step-th layer
            step = size("interleave_moe_layer_step", "decoder_sparse_step", "moe_layer_freq", most=LAYER_LIMIT,
                        default=1)
            offset = step - 1
        only_dense = config_typed(t, "mlp_only_layers", where, list, [])
        if any(type(i) is not int or not 0 <= i < layers for i in only_dense):
            raise UsageError(f"{where}: mlp_only_layers must list layer numbers from 0 to {layers - 1}; got "
                             f"{shown(only_dense)}")
        only_dense = set(only_dense)
        m["moe_layers"] = sum(1 for i in range(layers)
                              if i >= dense_first and i % step == offset and i not in only_dense)
    if layer_types:
        m["window_layers"] = sum(1 for lt in layer_types if lt == "sliding_attention")
        if m["window_layers"]:
            m["window"] = size("sliding_window", most=TOKENS_LIMIT)
        m.update(recurrent_layers(t, kind, layer_types, where))
    gated = config_typed(t, "attn_output_gate", where, bool, False)
    if kind == "qwen3_next" or gated:
        m["attn_gate"] = True   # Qwen3NextAttention: queries and an output gate per head from one q_proj
    state_dtype = config_typed(t, "mamba_ssm_dtype", where, str, None)
    if state_dtype is not None:
        if state_dtype not in STATE_DTYPE_BYTES:
            raise UsageError(f"{where}: mamba_ssm_dtype {shown(state_dtype)} is not one of "
                             f"{', '.join(STATE_DTYPE_BYTES)}")
        if STATE_DTYPE_BYTES[state_dtype] != 2:
            m["state_bytes"] = STATE_DTYPE_BYTES[state_dtype]   # the recurrent state in fp32 (Qwen3.5's configs)
    if kind == "gpt_oss":   # GptOssForCausalLM: biased attention, experts and router, and attention sinks
        m.update(attn_bias=True, sinks=True, expert_bias=True, router_bias=True)
    elif config_typed(t, "attention_bias", where, bool, False):
        m["attn_bias"] = True
    if experts and kind in ROUTING_OF_MODEL_TYPE:
        m["routing"] = ROUTING_OF_MODEL_TYPE[kind]
    nextn = size("num_nextn_predict_layers", "mtp_num_hidden_layers", least=0, most=LAYER_LIMIT, default=0)
    if nextn:
        m["nextn"] = nextn
    m.update(family_entry(kind, m["vocab"]))   # the family its published acceptance is grouped by (priors.py)
    method = config_typed(config_typed(cfg, "quantization_config", where, dict, {}), "quant_method", where, str, "")
    if method in SHIPPED_DTYPE:
        m["checkpoint"] = SHIPPED_DTYPE[method]
    return m


STATE_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}   # mamba_ssm_dtype -> bytes per state element

LAYER_KINDS = {"full_attention": "attention", "attention": "attention", "sliding_attention": "window",
               "linear_attention": "linear", "mamba": "mamba"}   # a config's name of a layer's mixer -> its kind here


def hybrid_layer_types(t, top, kind, layers, where):
    """Each layer's mixer as a config names it: layer_types (gpt-oss's windows, Qwen3-Next's linear attention),
    else Qwen3-Next's full_attention_interval (full attention in every n-th layer, linear in the rest, as
    Qwen3NextConfig builds layer_types) or Jamba's attn_layer_period and attn_layer_offset (attention where
    i % period == offset, Mamba elsewhere: JambaConfig.layers_block_type, whose defaults are 8 and 4); [] for a
    model of one kind. Nemotron-H's hybrid_override_pattern (Mamba-2 and MLP-only blocks), in the text config or
    beside it (`top`), is refused: its blocks are not a mixer and an MLP each."""
    if t.get("hybrid_override_pattern") is not None or top.get("hybrid_override_pattern") is not None:
        raise UsageError(f"{where}: hybrid_override_pattern (Nemotron-H's Mamba-2, attention and MLP-only blocks) is "
                         "not modelled; this tool reads hybrids whose every layer is a mixer and an MLP (Qwen3-Next, "
                         "Jamba)")
    layer_types = config_typed(t, "layer_types", where, list, [])
    odd = [lt for lt in layer_types if type(lt) is not str]
    if odd:
        raise UsageError(f"{where}: layer_types must list each layer's kind as text; got {shown(odd[0])}")
    if not layer_types and (kind == "qwen3_next" or t.get("full_attention_interval") is not None):
        every = config_size(t, ("full_attention_interval",), where, most=layers, default=4)   # Qwen3NextConfig's 4
        layer_types = ["full_attention" if (i + 1) % every == 0 else "linear_attention" for i in range(layers)]
    elif not layer_types and (kind == "jamba" or t.get("attn_layer_period") is not None):
        period = config_size(t, ("attn_layer_period",), where, most=layers, default=8 if kind == "jamba" else REQUIRED)
        offset = config_size(t, ("attn_layer_offset",), where, least=0, most=period - 1,
                             default=min(4, period - 1) if kind == "jamba" else 0)
        layer_types = ["attention" if i % period == offset else "mamba" for i in range(layers)]
    unknown = sorted({str(lt) for lt in layer_types if lt not in LAYER_KINDS})
    if unknown:
        raise UsageError(f"{where}: layer_types {shown(unknown)} include a kind of layer this model does not know "
                         f"(only {', '.join(LAYER_KINDS)})")
    if layer_types and len(layer_types) != layers:
        raise UsageError(f"{where}: layer_types names {len(layer_types)} layers, not num_hidden_layers {layers}")
    return layer_types


def recurrent_layers(t, kind, layer_types, where):
    """The shape's recurrent layers (catalog.MODELS' linear_layers and linear, mamba_layers and mamba) from the
    config's Gated DeltaNet fields (linear_num_key_heads, linear_num_value_heads, linear_key_head_dim,
    linear_value_head_dim, linear_conv_kernel_dim) or Mamba's (mamba_d_state, mamba_d_conv, mamba_expand,
    mamba_dt_rank: "auto" or missing is hidden / 16, rounded up). Qwen3NextConfig's and JambaConfig's defaults
    stand in for a missing field of those model types only: another model with such layers must give them."""
    kinds = [LAYER_KINDS[lt] for lt in layer_types]
    out = {}
    if "linear" in kinds:
        size = lambda name, default: config_size(t, (name,), where, default=default if kind == "qwen3_next"
                                                  else REQUIRED)
        key_heads, value_heads = size("linear_num_key_heads", 16), size("linear_num_value_heads", 32)
        if value_heads % key_heads:   # Gated DeltaNet groups value heads over key heads, as GQA does
            raise UsageError(f"{where}: linear_num_value_heads {value_heads} is not a multiple of "
                             f"linear_num_key_heads {key_heads}")
        out.update(linear_layers=kinds.count("linear"),
                   linear=dict(key_heads=key_heads, value_heads=value_heads,
                               key_dim=size("linear_key_head_dim", 128), value_dim=size("linear_value_head_dim", 128),
                               conv=size("linear_conv_kernel_dim", 4)))
    if "mamba" in kinds:
        size = lambda name, default: config_size(t, (name,), where, default=default if kind == "jamba" else REQUIRED)
        hidden = t["hidden_size"]
        rank = t.get("mamba_dt_rank")
        out.update(mamba_layers=kinds.count("mamba"),
                   mamba=dict(inner=size("mamba_expand", 2) * hidden, state=size("mamba_d_state", 16),
                              conv=size("mamba_d_conv", 4),
                              dt_rank=-(-hidden // 16) if rank in (None, "auto") else size("mamba_dt_rank", None)))
    return out


SHIPPED_DTYPE = {"fp8": "fp8", "mxfp4": "fp4"}   # quant_method -> weights' dtype: DeepSeek-V3's fp8, gpt-oss's MXFP4


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
