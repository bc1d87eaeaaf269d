"""Engine commands: the server and benchmark lines the plan prints for vLLM, SGLang and TensorRT-LLM, one table of
rows per engine (ENGINE_PLANS), each flag checked against the engine's source at its release.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from .records import same_model
from .catalog import (
    EAGLE3_EAGLE_FORMAT, EAGLE3_HEADS, EAGLE_DRAFTS, EAGLE_HEADS, ENGINES, GPUS, MODELS, quantize_at_start, release_text,
    served_model, speculators_format,
)
from .releases import accepts, exports_acceptance_counters, FEATURES, one_model, release, since, sglang_rate
from .acceptance import acceptance_length, acceptance_rate
from .deployment import (
    draft_kind, peak_tflops, prefill_chunk, running_cap, runs_a_draft_model, simulated_layout, verify_tokens,
)
from .workload import BENCH_METRICS, BENCH_PERCENTILES, bench_prompts
from .readers import SGLANG_GAUGE_STEPS
from .schedule import paying_ranges, where_it_pays


# What the plan tells each engine to run. Every flag and config field below was checked
# against the engine's own parser or config class, cited beside it; the README names the
# versions.

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
    if dep.draft in EAGLE_DRAFTS:
        heads = EAGLE3_HEADS if dep.draft == "eagle3" else EAGLE_HEADS
        head, context = heads.get((dep.engine.key, catalog_name(dep)), (None, None))
        if head and speculators_format(head) and not accepts(dep, "speculators-format heads"):
            head, context = EAGLE3_EAGLE_FORMAT.get(catalog_name(dep), (None, None))   # the release loads these
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


def speculative_config(dep, k, schedule=None):
    """vLLM's --speculative-config JSON (SpeculativeConfig in vllm/config/speculative.py).

    draft_sample_method: "greedy" (the default) proposes the draft's argmax; at temperature
    > 0, "probabilistic" samples the draft as rejection sampling assumes, so the acceptance
    measured is what sampled traffic gets. Both keep the target's distribution.
    num_speculative_tokens_per_batch_size: inclusive [start, end, K] rows, K = 0 allowed,
    num_speculative_tokens their maximum (PR #32374). Each only from the release that has it (releases.py).
    """
    if dep.draft == "ngram":
        # prompt_lookup_max 4 as in vLLM's docs (features/speculative_decoding/n_gram); tune it to your prompts.
        config = {"method": "ngram", "num_speculative_tokens": k, "prompt_lookup_max": 4}
    elif dep.draft == "mtp":
        # method "mtp": the target's own MTP weights, no model to name (vllm/config/speculative.py; from 0.11,
        # releases.py).
        config = {"method": "mtp", "num_speculative_tokens": k}
    else:
        method = dep.draft if dep.draft in EAGLE_DRAFTS else "draft_model"
        config = {"method": method, "model": head_or_placeholder(dep), "num_speculative_tokens": k}
        if dep.temperature > 0 and accepts(dep, "draft_sample_method probabilistic"):
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
    # Attention data parallel across the TP GPUs: attention TP = tp / dp = 1 (docs/basic_usage/deepseek_v3.md);
    # from 0.5.22 its own flag (--enable-dp-attention with --dp-size is rewritten to it, with a warning).
    if dep.dp_attention:
        words += ([f"--attn-dp-size {dep.tp}"] if accepts(dep, "--attn-dp-size")
                  else ["--enable-dp-attention", f"--dp-size {dep.tp}"])
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
            # (from 0.5.7; before it the draft runs in fp8 beside an fp8 target).
            words += (["--speculative-draft-model-quantization unquant"]
                      if quantize_at_start(dep) and accepts(dep, "--speculative-draft-model-quantization") else [])
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
        decoding = TRTLLM_DECODING[kind]
        if kind == "eagle3" and not accepts(dep, "decoding_type Eagle3"):
            decoding = "Eagle"   # EagleDecodingConfig ran EAGLE-3 heads (its one-model path) before PR #10124
        if kind == "model" and accepts(dep, "decoding_type Draft_Target"):
            decoding = "Draft_Target"   # the union's tag; from_dict's table took DraftTarget before
        lines += ["speculative_config:", f"  decoding_type: {decoding}"]
        if kind == "mtp" and not accepts(dep, "MTP max_draft_len"):
            lines.append(f"  num_nextn_predict_layers: {k}")   # it sets max_draft_len there (MTPDecodingConfig)
        else:
            lines.append(f"  max_draft_len: {k}")
        if kind in ("eagle3", "model"):
            if accepts(dep, "speculative_model"):   # a Hugging Face id or a path
                lines.append(f"  speculative_model: {json.dumps(head_or_placeholder(dep))}")   # quoted: ~, null are names
            else:   # a local path only: trtllm_serve downloads the draft there first
                lines.append(f"  speculative_model_dir: {json.dumps(TRTLLM_DRAFT_DIR)}")
        if dep.topk > 1:   # Eagle3DecodingConfig's dynamic tree: verify width max_total_draft_tokens + 1
            lines += ["  use_dynamic_tree: true", f"  dynamic_tree_max_topK: {dep.topk}",
                      f"  max_total_draft_tokens: {verify_tokens(dep, k) - 1}"]
    return lines + ["YAML"]


# decoding_type of TensorRT-LLM's speculative_config by draft_kind (llm_args.py: Eagle3DecodingConfig,
# MTPDecodingConfig, NGramDecodingConfig, DraftTargetDecodingConfig; MTP's depth is max_draft_len from 1.4,
# num_nextn_predict_layers before: releases.py).
TRTLLM_DECODING = {"eagle3": "Eagle3", "mtp": "MTP", "ngram": "NGram", "model": "DraftTarget"}


def trtllm_command(dep, batch, config_name):
    """`trtllm-serve` flags: tensorrt_llm/commands/serve.py (underscores, PyTorch backend by default)."""
    # --ep_size sets moe_expert_parallel_size (tensorrt_llm/commands/serve.py); 1: experts split by TP.
    return shell_lines(["trtllm-serve", shlex.quote(served_model(dep)), "--backend pytorch", f"--tp_size {dep.tp}",
                        *([f"--ep_size {dep.ep}"] if dep.ep > 1 else []), f"--max_batch_size {batch}",
                        f"{dep.engine.memory_flag} {dep.memory_fraction:g}",
                        f"--extra_llm_api_options {config_name}"])


TRTLLM_DRAFT_DIR = "./draft"   # where a release before PR #10099 reads the draft from (a local path only)


def trtllm_serve(dep, batch, k=None, schedule=None):
    """TensorRT-LLM's YAML and server, speculation off or on; trtllm_k_by_batch gives the table's switches. Before
    PR #10099 the draft's weights must be on disk: the Hugging Face CLI fetches them first."""
    name = "spec.yaml" if k else "baseline.yaml"
    fetch = []
    if k and draft_kind(dep.draft) in ("eagle3", "model") and not accepts(dep, "speculative_model"):
        fetch = shell_lines(["huggingface-cli download", shlex.quote(head_or_placeholder(dep)),
                             f"--local-dir {TRTLLM_DRAFT_DIR}"])
    return fetch + trtllm_yaml(dep, name, k) + trtllm_command(dep, batch, name)


GOODPUT_CLIENT = "vllm bench serve"   # the client a --goodput run uses whatever the engine (bench_lines)
LEGACY_CLIENT = "python benchmarks/benchmark_serving.py"   # vLLM before 0.9.2: its source tree's benchmark script


def bench_tool(dep):
    """The closed-loop benchmark the plan runs against the deployment: its engine's (Engine.bench_tool), except on
    vLLM releases whose `vllm bench serve` cannot sample through the chat endpoint (before 0.9.2: releases.py), where
    it is the release's own benchmarks/benchmark_serving.py, run from that release's source tree."""
    if dep.engine.bench_tool == GOODPUT_CLIENT and dep.engine.releases_of == "vllm" and not accepts(
            dep, "vllm bench serve samples through the chat endpoint"):
        return LEGACY_CLIENT
    return dep.engine.bench_tool


def legacy_client_words(dep):
    """What the plan says (Markdown) where it benchmarks with the source tree's script (bench_tool), else ""."""
    if bench_tool(dep) != LEGACY_CLIENT:
        return ""
    at = release_text(release(dep))
    first = release_text(FEATURES["vllm", "vllm bench serve samples through the chat endpoint"].first)
    words = (f"vLLM {at}'s `vllm bench serve` cannot sample through the chat endpoint, which it does from {first} "
             "(0.9.1 reads `args.backend`, which it never defines, when a sampling flag is given, "
             "vllm/benchmarks/serve.py:1033; earlier releases send completions at temperature 0). The benchmarks "
             f"below run `{LEGACY_CLIENT}` from vLLM {at}'s source tree (`git clone --branch v{at} "
             "https://github.com/vllm-project/vllm`), with that script's own flags.")
    if not accepts(dep, "benchmark_serving.py --temperature"):
        sampling = release_text(FEATURES["vllm", "benchmark_serving.py --temperature"].first)
        words += (f" Before {sampling} that script has no sampling flags either (it sends temperature 0.0, "
                  "benchmarks/backend_request_func.py): these runs decode greedily, so their acceptance and speedup "
                  f"are temperature 0's, not your traffic's {dep.temperature:g}.")
    return words


def bench_lines(dep, batch, filename, realistic=False, width=100, prompts=None, goodput=None, *, rate=None,
                burstiness=None):
    """A closed-loop benchmark at `batch` concurrency through the chat endpoint, saved as JSON; given `rate`, an open
    loop instead: --request-rate (and --burstiness, where given and not 1), no --max-concurrency (vllm/benchmarks/serve.py:
    both flags in every release from 0.8.0, gamma gaps of shape burstiness, Poisson at 1).

    vLLM and SGLang: `vllm bench serve` (vllm/benchmarks/serve.py, datasets/datasets.py). TensorRT-LLM: its own
    copy, tensorrt_llm/serve/scripts/benchmark_serving.py, with the same flags and result keys. EAGLE heads are
    trained on chat-formatted prompts, hence openai-chat. A calibration run has the deployment's lengths exactly:
    random prompts of --random-input-len tokens and --random-output-len outputs (--random-range-ratio is 0 by
    default, and --ignore-eos keeps an answer from ending early); TensorRT-LLM's random dataset cuts real
    ShareGPT text to those lengths given --dataset-path (benchmark_dataset.py, RandomDataset). A realistic run
    has ShareGPT's prompts and answers capped at the deployment's output length (--sharegpt-output-len), ended
    by EOS as real ones are: its acceptance is real text's. A cap above it would empty the run: vLLM's ShareGPT
    sampler skips a sample whose prompt and output lengths add up past 2,048 tokens (datasets.py,
    is_valid_sequence, max_total_len; 0.9.2 to 0.34.0 read), so its answers average less than the simulated runs'
    (workload.traffic_workload), and --compare replays the file's own lengths. prompts: --num-prompts (default bench_prompts);
    goodput: --goodput's KEY:MS words (workload.goodput_words), which `vllm bench serve` has taken in every release
    from 0.8.0 (vllm/benchmarks/serve.py: nargs="+", "KEY:VALUE" in ms, keys ttft, tpot, e2el). TensorRT-LLM's copy
    has it at the commits read, but no release of it was checked: against TensorRT-LLM the run is vLLM's newest
    client, as SGLang's plan runs it (GOODPUT_CLIENT).
    """
    engine = dep.engine
    if realistic:
        data = ["--dataset-name sharegpt", f"--dataset-path {SHAREGPT_FILE}", f"--sharegpt-output-len {dep.output_tokens}"]
    else:
        data = (["--dataset-name random"] + ([f"--dataset-path {SHAREGPT_FILE}"] if engine.bench_random_text else [])
                + [f"--random-input-len {dep.input_tokens}", f"--random-output-len {dep.output_tokens}", "--ignore-eos"])
    # vLLM's client picked the chat request type with --endpoint-type before 0.11 (releases.py); SGLang's plan runs
    # vLLM's newest client against its server.
    chat = "--backend openai-chat" if accepts(dep, "bench --backend openai-chat") else "--endpoint-type openai-chat"
    tool = bench_tool(dep)
    if tool == LEGACY_CLIENT:   # the source tree's script: --backend openai-chat from 0.8.0, sampling from 0.8.4
        chat = "--backend openai-chat"
    if goodput and tool not in (GOODPUT_CLIENT, LEGACY_CLIENT):
        tool, chat = GOODPUT_CLIENT, "--backend openai-chat"
    samples = tool != LEGACY_CLIENT or accepts(dep, "benchmark_serving.py --temperature")
    return shell_lines([tool, chat, "--endpoint /v1/chat/completions",
                        f"--port {engine.port}", f"--model {shlex.quote(served_model(dep))}", *data,
                        f"--num-prompts {prompts or bench_prompts(batch)}",
                        *([f"--request-rate {rate:g}"] + ([f"--burstiness {burstiness:g}"]
                                                          if burstiness not in (None, 1) else [])
                          if rate else [f"--max-concurrency {batch}"]),
                        *([f"--temperature {dep.temperature:g}"] if samples else []),
                        f"--percentile-metrics {','.join(BENCH_METRICS)}",
                        f"--metric-percentiles {','.join(map(str, BENCH_PERCENTILES))}",
                        *([f"--goodput {goodput}"] if goodput else []), "--save-result",
                        f"--result-filename {filename}"], width)


def path_word(flag, path):
    """A flag and its path for a shell line: quoted, and joined by = when the path starts with - (a flag's look)."""
    return f"{flag}={shlex.quote(path)}" if path.startswith("-") else f"{flag} {shlex.quote(path)}"


def tool_words(dep):
    """This program's own flags for the deployment, so a later run gates the same one: the deployment's every
    setting a flag carries, and what changed it from the catalog's (configs, GPU numbers, a tree, the draft's id)."""
    model_config, draft_config = dep.configs
    model = path_word("--model-config", model_config) if model_config else f"--model {dep.model}"
    words = ["python code/main.py", f"--engine {dep.engine.key}", model, f"--gpu {dep.gpu}",
             f"--tp {dep.tp}", f"--weights-dtype {dep.weights_dtype}", f"--kv-dtype {dep.kv_dtype}",
             f"--input-tokens {dep.input_tokens}", f"--output-tokens {dep.output_tokens}"]
    # Every value a flag can carry is written, even at its default: a rerun falls back on main.py's constants,
    # which the user may have edited since (--dp-attention, a switch, can only say on).
    words += [f"--ep {dep.ep}"] + (["--dp-attention"] if dep.dp_attention else [])
    words.insert(2, f"--engine-version {release_text(release(dep))}")   # the release the commands are for
    words.append(f"--context {dep.context}")
    words.append(f"--draft {dep.draft}")
    words += [path_word("--draft-config", draft_config)] if draft_config else []
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
    parallel > 1. On V2 the drafter ignores the table's K altogether before 0.34 (issue #51510; PRs #51575, #57053),
    and from 0.34 V2 is the only runner and runs it (releases.py).
    """
    schedule = plan.schedule
    table = json.dumps(schedule)
    if not accepts(dep, "num_speculative_tokens_per_batch_size"):
        return [f"vLLM {release_text(release(dep))} has no K-by-batch table: `num_speculative_tokens_per_batch_size` "
                f"arrived in {since(dep, 'num_speculative_tokens_per_batch_size')}. Keep stage 1's fixed K "
                f"{plan.k}, and send the batch sizes where this table's K differs, {table}, to replicas started with "
                "that K (or upgrade).", ""]
    if dep.dp_attention and accepts(dep, "table off under data parallelism"):   # the plan runs --data-parallel-size
        return [f"vLLM ignores `num_speculative_tokens_per_batch_size` with `--data-parallel-size` above 1 "
                "(vllm/config/vllm.py), and this deployment runs attention data parallel: keep stage 1's fixed K "
                f"{plan.k}, and send the batch sizes where the table's K differs, {table}, to "
                "replicas started with that K.", ""]
    method = json.loads(speculative_config(dep, plan.k))["method"]
    # Before 0.32 Model Runner V2's drafter ignores the table, so it needs V1, chosen by VLLM_USE_V2_MODEL_RUNNER=0
    # (0.12-0.33); from 0.32 V2 runs it, and from 0.34 V2 is the only runner.
    v2 = (method in V2_METHODS and not accepts(dep, "per-batch K on Model Runner V2")
          and accepts(dep, "VLLM_USE_V2_MODEL_RUNNER=0"))
    zero = " (a row with K = 0 switches speculation off at its batch sizes)" if any(row[2] == 0 for row in schedule) else ""
    if can_serve(dep):
        out = [f"vLLM's dynamic speculative decoding takes this table as it stands{zero}:", "", "```"] + vllm_command(
            dep, speculative_config(dep, plan.k, schedule), ["VLLM_USE_V2_MODEL_RUNNER=0"] if v2 else []) + ["```", ""]
    else:
        out = [f"vLLM's dynamic speculative decoding takes this table as `num_speculative_tokens_per_batch_size` "
               f"{table} in `--speculative-config`{zero}, once stage 1 has a head to serve.", ""]
    if v2:
        out += [f"The table needs the V1 model runner. vLLM runs `{method}` on Model Runner V2 by default (from "
                "0.29; from 0.22 for some architectures), and V2's drafter ignores the table before 0.32: every round "
                "drafts `num_speculative_tokens`, K = 0 rows included (issue #51510). "
                "`VLLM_USE_V2_MODEL_RUNNER=0` selects V1, which then "
                "captures CUDA graphs in PIECEWISE mode only. Benchmark it against the fixed K of stage 1 on the "
                "default runner at the batch sizes where K changes:", ""]
    elif accepts(dep, "per-batch K on Model Runner V2"):
        out += [f"vLLM {release_text(release(dep))} runs the table on Model Runner V2, its default runner, which "
                "picks each step's K from the table and captures a CUDA graph for each K (from 0.32; V2 is the only "
                "runner from 0.34). Benchmark it against the fixed K of stage 1 at the batch sizes where K changes:",
                ""]
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
    if not accepts(dep, "--speculative-adaptive"):
        return [f"SGLang {release_text(release(dep))} has no adaptive step count: `--speculative-adaptive` works from "
                f"{since(dep, '--speculative-adaptive')}. Run the fixed K of stage 1." + route, ""]
    if dep.topk > 1:
        return ["`--speculative-adaptive` adapts chains only (topk 1; with a tree SGLang warns and keeps its static "
                "parameters, adaptive_spec_params.py): keep the tree of stage 1 where it pays." + route, ""]
    if dep.draft not in EAGLE_DRAFTS + ("mtp",):
        what = "n-gram lookup" if dep.draft == "ngram" else "a draft model"
        return [f"SGLang's adaptive step count works for EAGLE heads and MTP only (EAGLE and EAGLE3): with {what}, "
                "run the fixed K of stage 1." + route, ""]
    if dep.dp_attention:   # speculative/adaptive_spec_params.py, adaptive_unsupported_reason: a warning, not a refusal
        return ["SGLang turns `--speculative-adaptive` off under attention data parallelism, whose ranks would not "
                "agree on the steps (adaptive_unsupported_reason, adaptive_spec_params.py), and falls back to static "
                "steps: run the fixed K of stage 1." + route, ""]
    if not accepts(dep, "adaptive tiers by batch size"):
        return [f"SGLang has no table to paste. `--speculative-adaptive` (EAGLE and EAGLE3 with topk 1) picks the step "
                "count at run time among the candidates of its tuning file (`--speculative-adaptive-config`), moving "
                f"with the acceptance it measures; {release_text(release(dep))}'s built-in candidates and the file's "
                "keys are in your build's `adaptive_spec_params.py` (they changed from release to release). Give it "
                "the Ks of this table, or keep the fixed K of stage 1." + route, ""]
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
    if plan.k_zero_at and accepts(dep, "max_concurrency"):
        out += ["The simple switch: `max_concurrency` in `speculative_config` turns speculation off above a batch "
                "size:", "", "```yaml", f"  max_concurrency: {plan.k_zero_at - 1}", "```", ""]
    elif plan.k_zero_at:
        out += [f"TensorRT-LLM {release_text(release(dep))} cannot switch speculation off by batch size "
                f"(`max_concurrency` in `speculative_config` arrived in {since(dep, 'max_concurrency')}). Serve "
                f"batch sizes from {plan.k_zero_at} on from a replica without speculation.", ""]
    if monotone and len(on) > 1 and dep.draft == "eagle3" and accepts(dep, "draft_len_schedule"):
        out += [("Or, instead (the two exclude each other), the whole table: " if plan.k_zero_at else
                 "The whole table is ") + f"`draft_len_schedule: {upper}` (with `max_draft_len: {on[0][2]}`) in "
                "newer releases, whose keys are each tier's last batch size and which run it in the one-model "
                "Eagle3 mode (the default). Older releases read the keys as each tier's first batch size, the "
                "earliest ran it for two-model drafters only, and some one-model builds refuse a 0: read "
                "`draft_len_schedule` in your installed `tensorrt_llm/llmapi/llm_args.py` before pasting it.", ""]
    elif monotone and len(on) > 1 and dep.draft == "eagle3":
        out += [f"TensorRT-LLM {release_text(release(dep))} takes no K-by-batch table: `draft_len_schedule` arrived in "
                f"{since(dep, 'draft_len_schedule')}. Keep stage 1's fixed K where it pays.", ""]
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
        *(["Per request, the lesson's metric has a real counterpart since vLLM PR #48915 (0.29.0): with",
           "`--per-request-spec-decode-metrics summary` each response carries `metrics.speculative_decoding`,",
           "with an `acceptance_histogram`."]
          if accepts(dep, "--per-request-spec-decode-metrics") else
          [f"Per request, vLLM {release_text(release(dep))} reports no acceptance. From 0.29.0 (PR #48915),",
           "`--per-request-spec-decode-metrics summary` makes each response carry `metrics.speculative_decoding`,",
           "with an `acceptance_histogram`."]),
        f"Its share of steps that accepted nothing is what the per-token tail needs: at alpha {plan.alpha:.2f} "
        f"it should be {1 - plan.alpha:.2f}. Each request's histogram also gives that request's own alpha; "
        f"their standard deviation across requests, less the sampling noise of each estimate (about "
        f"sqrt(a(1-a)/drafts)), is what `--alpha-spread` takes ({spread:g} assumed here), and it sets P99 TPOT.",
        "",
        "```", f"curl -s {page} > before.prom     # ... a window of production traffic ...",
        f"curl -s {page} > after.prom", "```", ""]


def sglang_rate_words(dep, k, tau):
    """What SGLang's rate gauge reads at tau on this release and draft (releases.sglang_rate), in words; "" where the
    release exports no rate gauge."""
    rate = sglang_rate(dep, k)
    if rate is None:
        return ""
    bonus, divisor = rate
    value = (tau if bonus else tau - 1) / divisor
    if not bonus:   # PR #23530: accepted drafts over the tokens a round drafts
        return (f"At tau {tau:.2f} the rate gauge, accepted drafts over the {divisor} tokens a round drafts, reads "
                f"(tau - 1) / {divisor} = {value:.2f}" + (" (a tree drafts more tokens than its depth)."
                                                          if dep.topk > 1 else "."))
    over = ("1 (n-gram sets no steps, and it divides by the steps plus one)"
            if divisor == 1 and draft_kind(dep.draft) == "ngram" else
            f"{divisor} (the steps plus one)" if not accepts(dep, "spec_accept_rate over --speculative-num-draft-tokens")
            else f"{divisor} (the tokens a round verifies, --speculative-num-draft-tokens)")
    return (f"SGLang {release_text(release(dep))}'s rate gauge counts the bonus token: at tau {tau:.2f} it reads "
            f"tau / {over} = {value:.2f}, where this program reads a rate over the drafted tokens (from "
            f"{release_text(FEATURES['sglang', 'spec_accept_rate over drafted tokens'].first)}).")


def sglang_measure(result, dep, plan):
    """SGLang's acceptance gauges, averaged over time: the length always, the rate where the release exports it, and
    what the rate reads at this release and draft (releases.sglang_rate)."""
    k, engine = plan.k, dep.engine
    tau = result.measured.acceptance_length if plan.measured else acceptance_length(plan.alpha, k)
    rate = sglang_rate(dep, k)
    gauges = ("`sglang:spec_accept_length` (tau, bonus token included) and `sglang:spec_accept_rate`, each"
              if rate is not None else
              f"`sglang:spec_accept_length` (tau, bonus token included; SGLang {release_text(release(dep))} has no "
              f"rate gauge, which came in {release_text(FEATURES['sglang', 'sglang:spec_accept_rate'].first)}),")
    out = [f"SGLang (with `--enable-metrics`) exports gauges, not counters: {gauges} recomputed over the last "
           f"{SGLANG_GAUGE_STEPS} decode steps. Average them over time (never `rate()` of a gauge):", "",
           "```promql", "avg by (model_name) (avg_over_time(sglang:spec_accept_length[30m]))", "```", ""]
    if rate is not None and not rate[0]:
        out += [sglang_rate_words(dep, k, tau),
                f"For this program, save a scrape taken under traffic: it reads both gauges (their mean over the TP "
                f"ranks) and takes the steps from `--ks {k}`.", "",
                "```", f"curl -s localhost:{engine.port}{engine.metrics_path} > after.prom     # under production "
                "traffic", "```", ""]
    else:
        out += ([sglang_rate_words(dep, k, tau)] if rate is not None else []) + [
            f"Give this program the accept length's average instead: `--acceptance-length TAU --ks {k}`.", ""]
    return out


def trtllm_measure(result, dep, plan):
    """TensorRT-LLM's Prometheus counters of draft and accepted tokens (from 1.3), or before them its per-iteration
    JSON, whose acceptance length this program takes as --acceptance-length."""
    k, engine = plan.k, dep.engine
    if not accepts(dep, "/prometheus/metrics spec counters"):
        return [
            f"TensorRT-LLM {release_text(release(dep))} exports no speculative counters on "
            f"`{engine.metrics_path}`: they arrived in {since(dep, '/prometheus/metrics spec counters')}. With "
            "`enable_iter_perf_stats: true` in its YAML (stage 0), GET `/metrics` returns recent iterations as JSON, "
            "each with `specDecodingStats` (`numDraftTokens`, `numAcceptedTokens`, `numRequestsWithDraftTokens`, "
            "`acceptanceLength`). Under traffic, sum each field over the iterations: the rate is accepted / drafted "
            "tokens, and tau = 1 + accepted tokens / requests with draft tokens (one draft each). Give this program "
            f"`--acceptance-length TAU --ks {k}`.", "",
            "```", f"curl -s localhost:{engine.port}/metrics > iterations.json     # under production traffic", "```", ""]
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
    k, batch, gate_a = plan.k, plan.shown_batch, plan.even.gate_alpha
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
    k, batch, gate_a = plan.k, plan.shown_batch, plan.even.gate_alpha
    out = []
    length = "avg by (model_name) (avg_over_time(sglang:spec_accept_length[5m]))"
    rate = sglang_rate(dep, k)
    out += ["SGLang's acceptance gauges, averaged over time:" if rate is not None else
            f"SGLang's accept length, averaged over time (SGLang {release_text(release(dep))} exports no rate gauge):",
            "", "```promql", length]
    out += (["avg by (model_name) (avg_over_time(sglang:spec_accept_rate[5m]))"] if rate is not None else []) + ["```", ""]
    if rate is not None and rate[0]:
        out += [f"The rate gauge counts the bonus token at this release: it reads tau / {rate[1]}, not a rate over "
                "the drafted tokens (stage 2).", ""]
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
    k, batch, gate_a = plan.k, plan.shown_batch, plan.even.gate_alpha
    out = []
    rate = ("sum(rate(trtllm_spec_decode_num_accepted_tokens_total[5m]))\n"
            "  / sum(rate(trtllm_spec_decode_num_draft_tokens_total[5m]))")
    if exports_acceptance_counters(dep):
        out += [f"Acceptance rate over a 5-minute window, from `{dep.engine.metrics_path}` (stage 2):", "", "```promql",
                rate, "```", ""]
    else:
        out += [f"TensorRT-LLM {release_text(release(dep))} exports no acceptance counters to graph or alert on: "
                "watch the acceptance length of stage 2's iteration statistics, and let the built-in switch below "
                "act on it where the release has one.", ""]
    # The switch's fields: DecodingBaseConfig in tensorrt_llm/llmapi/llm_args.py. acceptance_rate_window_size counts
    # speculation-enabled decoding iterations (each a round of the batch), acceptance_rate_threshold is a rate in
    # [0, 1], and the executor's SpeculationGate turns speculation off for good once the rolling mean falls under
    # it. Older releases had acceptance_window (completed requests) and acceptance_length_threshold (in tau).
    t = {row.concurrency: row for row in plan.tail}.get(plan.shown_batch)
    # The switch a release has, on the path it runs: the rate switch (1.3 on) in the one-model path, the older
    # window (1.1-1.2) in the two-model drafter (releases.py).
    rate_switch = accepts(dep, "acceptance_rate_window_size") and one_model(dep)
    window_switch = accepts(dep, "acceptance_window") and not one_model(dep)
    if gate_a is not None and t is not None and rate_switch:
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
                f"  acceptance_rate_threshold: {threshold:.3f}", "```", ""]
    elif gate_a is not None and t is not None and window_switch:
        # Before the rate fields: a rolling mean of tau over the last N completed requests (llm_args.py of 1.1-1.2).
        tau = acceptance_length(plan.alpha, k) if dep.topk == 1 else 1 + plan.eps
        lifetime_ms = dep.output_tokens / max(tau, 1.0) * t.round_ms
        window = max(100, round(TRTLLM_GATE_MINUTES * 60_000 * plan.shown_batch / lifetime_ms, -2))
        out += [f"Kill switch, built in: at B={batch} a round breaks even at an acceptance length of "
                f"{1 + plan.eps:.3f} (1 + eps). TensorRT-LLM {release_text(release(dep))} averages the acceptance "
                "length of the last N completed requests and turns speculation off for good once the average falls "
                f"under the threshold. At B={plan.shown_batch} a request of {dep.output_tokens} tokens completes in "
                f"about {lifetime_ms / 1000:.1f} s, so {window:,.0f} requests span about {TRTLLM_GATE_MINUTES} minutes "
                "of traffic (the minutes are a choice). Add to `speculative_config`:", "", "```yaml",
                f"  acceptance_window: {window:.0f}", f"  acceptance_length_threshold: {1 + plan.eps:.3f}", "```", ""]
    elif gate_a is not None:
        path = "one-model" if one_model(dep) else "two-model"
        out += [f"TensorRT-LLM {release_text(release(dep))} has no built-in kill switch for a {path} draft (its "
                "acceptance switch runs in the two-model drafter in 1.1-1.2 and in the one-model path from 1.3, "
                f"PRs #7283 and #12905). Turn speculation off by hand when stage 2's acceptance length falls under "
                f"{1 + plan.eps:.3f} (1 + eps).", ""]
    if gate_a is not None and dep.topk == 1 and rate_switch:
        rates = [(kk, acceptance_rate(plan.alpha, kk)) for kk in sorted({row[2] for row in plan.schedule})
                 if kk > 0]
        low = [(kk, r) for kk, r in rates if r < plan.even.gate_rate]
        if low:
            out += ["The rate depends on K: use this switch with the fixed K of stage 1 only. Under "
                    "`draft_len_schedule` it would fire where a longer K runs well: at alpha "
                    f"{plan.alpha:.2f}, " + ", ".join(f"K = {kk} shows a rate of {r:.3f}" for kk, r in low) +
                    f", under {plan.even.gate_rate:.3f}.", ""]
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


def predicts_gate_pair(dep, plan):
    """Whether the plan predicts the gate's benchmark pair: a chain (a tree's rounds are measured, not drawn) that
    stage 1 serves, on one scheduler (simulated_layout)."""
    return (bool(plan.k) and simulated_layout(dep) and can_serve(dep)
            and running_cap(dep, True, plan.shown_batch) >= 1)
