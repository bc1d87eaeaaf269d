"""What each engine release accepts: the flags, config keys and values the plan's commands use that arrived (or left)
at a known release, and the combinations a release refuses at start-up, each with the source it was checked in.

A deployment's release is its --engine-version (Deployment.release), or the newest checked here (NEWEST). A feature
the plan would use and the release lacks is left out, or the deployment is refused, naming the first release that
has it (commands.py and cli.py ask accepts, missing and refusal). Checked against each release's own package: the
vLLM and SGLang wheels on the package index (vllm 0.8.0-0.34.0, sglang 0.5.1-0.5.23, their sources compared release by
release), and TensorRT-LLM's llm_args.py, serve.py and release notes (its wheels are too large to fetch here: release
notes and versioned docs date its changes).
"""
from __future__ import annotations

from dataclasses import dataclass

from .catalog import release_at, release_text
from .costmodel import draft_kind

# The newest release each engine's facts were checked at (2026-12): vLLM 0.34.0 (2026-11-16), SGLang 0.5.23
# (2026-10-30), TensorRT-LLM 1.4.0rc4 (its newest pre-release; 1.2.1 is its newest stable release). A newer release
# is taken as this one: what it removed is unknown here.
NEWEST = {"vllm": (0, 34, 0), "sglang": (0, 5, 23), "trtllm": (1, 4, 0)}


@dataclass(frozen=True)
class Feature:
    """A flag, config key or value the plan prints, accepted from release `first` until release `until`."""
    engine: str
    key: str          #: how the plan's code names it
    first: tuple      #: the first release that accepts it
    source: str       #: the PR or file that added it, as checked
    until: tuple = None   #: the first release that no longer accepts it (None: accepted at NEWEST)


FEATURES = {(f.engine, f.key): f for f in (
    # vLLM (vllm/config/speculative.py, vllm/engine/arg_utils.py, vllm/benchmarks/serve.py of each release).
    Feature("vllm", "method eagle3", (0, 8, 5), "PR #16937, EAGLE-3 in V1"),
    Feature("vllm", "method mtp", (0, 11, 0), "PR #25232, one method name for MTP; before it, deepseek_mtp"),
    Feature("vllm", "method draft_model", (0, 15, 0), "PR #24322, draft models in the V1 engine; before it, "
            "\"not supported yet\""),
    Feature("vllm", "draft_sample_method probabilistic", (0, 22, 0), "vllm/config/speculative.py; 0.21 offered "
            "greedy or gumbel"),
    Feature("vllm", "num_speculative_tokens_per_batch_size", (0, 24, 0), "PR #32374, dynamic speculative decoding"),
    Feature("vllm", "VLLM_USE_V2_MODEL_RUNNER=0", (0, 12, 0), "vllm/envs.py, PR #25266; from 0.34 Model Runner V1 "
            "is gone and the variable at 0 stops the server: vllm/platforms/interface.py, validate_environ",
            until=(0, 34, 0)),
    Feature("vllm", "per-batch K on Model Runner V2", (0, 34, 0), "the scheduler's dynamic_sd_lookup, "
            "vllm/v1/core/sched/scheduler.py, and V2's graphs per K, v1/worker/gpu/spec_decode/autoregressive"),
    Feature("vllm", "Model Runner V2 drafts ngram and draft_model", (0, 34, 0),
            "vllm/v1/worker/gpu/spec_decode/ngram and standalone_ar; before 0.34 they fall back to V1"),
    Feature("vllm", "--per-request-spec-decode-metrics", (0, 29, 0), "PR #48915, vllm/config/observability.py"),
    Feature("vllm", "bench --backend openai-chat", (0, 11, 0), "vllm/benchmarks/serve.py: --backend picks the "
            "request type from 0.11, --endpoint-type before"),
    Feature("vllm", "bench --endpoint-type openai-chat", (0, 9, 1), "vllm/benchmarks/serve.py; before 0.9.1 the "
            "benchmark sent random prompts to the completions endpoint only", until=(0, 11, 0)),
    # SGLang (python/sglang/srt/server_args.py, speculative_hook.py from 0.5.13, arg_groups/fields from 0.5.20).
    Feature("sglang", "--speculative-algorithm STANDALONE", (0, 5, 2), "PR #10090"),
    Feature("sglang", "--speculative-algorithm NGRAM", (0, 5, 3), "server_args.py; renamed from LOOKAHEAD on main "
            "by PR #11010, before any release"),
    Feature("sglang", "--speculative-draft-model-quantization", (0, 5, 7), "server_args.py"),
    Feature("sglang", "--speculative-adaptive", (0, 5, 12), "PR #21599 in 0.5.11, which turned it off under "
            "spec v2, its default; PR #23336 runs it there"),
    Feature("sglang", "--enable-dp-attention", (0, 4, 0), "server_args.py; deprecated for --attn-dp-size from 0.5.22",
            until=(0, 5, 22)),
    Feature("sglang", "--attn-dp-size", (0, 5, 22), "arg_groups/fields/parallel.py: --dp-size N --enable-dp-attention "
            "is rewritten to it, with a warning"),
    # TensorRT-LLM (tensorrt_llm/llmapi/llm_args.py, tensorrt_llm/commands/serve.py, release notes).
    Feature("trtllm", "decoding_type Eagle3", (1, 2, 0), "PR #10124; before it, decoding_type Eagle ran EAGLE-3 "
            "heads on the PyTorch backend"),
    Feature("trtllm", "decoding_type Eagle", (1, 0, 0), "llm_args.py, EagleDecodingConfig", until=(1, 2, 0)),
    Feature("trtllm", "speculative_model", (1, 2, 0), "PR #10099; speculative_model_dir before, kept as an alias"),
    Feature("trtllm", "speculative_model_dir", (1, 0, 0), "llm_args.py, DecodingBaseConfig", until=(1, 2, 0)),
    Feature("trtllm", "MTP max_draft_len", (1, 4, 0), "PR #12341: max_draft_len sets MTP's depth; before it "
            "MTPDecodingConfig took it from num_nextn_predict_layers, default 1, whatever max_draft_len said"),
    Feature("trtllm", "use_dynamic_tree", (1, 3, 0), "PR #13081, the PyTorch backend's dynamic tree for EAGLE-3; "
            "before it Eagle3DecodingConfig took use_dynamic_tree and ran a chain"),
    Feature("trtllm", "max_concurrency", (1, 1, 0), "PR #6676, speculative_config.max_concurrency"),
    Feature("trtllm", "draft_len_schedule", (1, 2, 0), "llm_args.py, DecodingBaseConfig.draft_len_schedule"),
    Feature("trtllm", "acceptance_window", (1, 1, 0), "llm_args.py, DecodingBaseConfig: acceptance_window, "
            "acceptance_length_threshold", until=(1, 3, 0)),
    Feature("trtllm", "acceptance_rate_window_size", (1, 3, 0), "llm_args.py: acceptance_rate_window_size, "
            "acceptance_rate_threshold; the older pair is refused"),
    Feature("trtllm", "/prometheus/metrics spec counters", (1, 3, 0), "PR #12545, tensorrt_llm/metrics/collector.py; "
            "the endpoint itself from 1.1, PR #5785"),
)}


def release(dep):
    """The release the plan's commands are written for: the deployment's --engine-version, else NEWEST."""
    return dep.release or NEWEST[dep.engine.releases_of]


def accepts(dep, key):
    """Whether the deployment's release accepts a feature: a FEATURES entry of its engine (Engine.releases_of) within
    its span; a key its engine has no entry for is not gated by release, and is accepted."""
    feature, at = FEATURES.get((dep.engine.releases_of, key)), release(dep)
    return feature is None or (release_at(feature.first) <= at
                               and (feature.until is None or at < release_at(feature.until)))


def since(dep, key):
    """A feature's first release and source, as a sentence's end: "0.24.0 (PR #32374, ...)"."""
    feature = FEATURES[dep.engine.releases_of, key]
    return f"{release_text(feature.first)} ({feature.source})"


@dataclass(frozen=True)
class Refusal:
    """A combination a release refuses at start-up, in its own words."""
    engine: str
    applies: object      #: (dep) -> bool: the deployment asks for the combination
    what: str            #: the combination, as this tool's flags name it
    message: str         #: the engine's own error
    source: str          #: where the check is
    first: tuple = (0, 0, 0)   #: the first release that refuses it
    until: tuple = None   #: the first release that no longer refuses it (None: still refused at NEWEST)


REFUSALS = (
    Refusal("sglang", lambda dep: dep.dp_attention and draft_kind(dep.draft) == "ngram", "--draft ngram with --dp-attention",
            "Currently ngram speculative decoding does not support dp attention.",
            "server_args.py, and speculative_hook.py's _handle_ngram from 0.5.13; PR #28616, which lifts it, is unmerged",
            first=(0, 5, 3)),
    Refusal("sglang", lambda dep: dep.dp_attention and draft_kind(dep.draft) == "model", "a draft model with --dp-attention",
            "Currently standalone speculative decoding does not support dp attention.",
            "server_args.py, and speculative_hook.py's _handle_eagle_family from 0.5.13; an assert in 0.5.2",
            first=(0, 5, 2)),
)


def refusal(dep):
    """The engine's own refusal of the deployment at its release, as one line; None when it starts."""
    at = release(dep)
    for r in REFUSALS:
        if (r.engine == dep.engine.releases_of and release_at(r.first) <= at
                and (r.until is None or at < release_at(r.until)) and r.applies(dep)):
            return (f"{dep.engine.name} {release_text(at)} refuses {r.what} at start-up: \"{r.message}\" "
                    f"({r.source})")
    return None


# What a draft kind needs from a release: the FEATURES keys, of whichever engine has them.
NEEDED_BY_DRAFT = {
    "eagle3": ("method eagle3",),
    "model": ("method draft_model", "--speculative-algorithm STANDALONE"),
    "ngram": ("--speculative-algorithm NGRAM",),
}


def per_request_acceptance(dep):
    """Whether the deployment's server can report each request's acceptance (Engine.per_request_acceptance, from the
    release that has it)."""
    return dep.engine.per_request_acceptance and accepts(dep, "--per-request-spec-decode-metrics")


def missing(dep):
    """What the plan would need that the deployment's release lacks, as one line; None when nothing is."""
    name, at = dep.engine.name, release_text(release(dep))
    for key in NEEDED_BY_DRAFT.get(draft_kind(dep.draft), ()):
        if not accepts(dep, key):
            return f"{name} {at} cannot run --draft {dep.draft}: it needs {since(dep, key)}"
    if dep.topk > 1 and not accepts(dep, "use_dynamic_tree"):
        return f"{name} {at} would draft a chain, not the tree asked for: its trees run from {since(dep, 'use_dynamic_tree')}"
    # Before one MTP method name, vLLM's was the architecture's: the plan knows DeepSeek's (deepseek_mtp, an MLA model).
    if draft_kind(dep.draft) == "mtp" and not accepts(dep, "method mtp") and not dep.shape.get("mla"):
        return (f"{name} {at} names MTP by architecture (deepseek_mtp for DeepSeek's); the plan names it 'mtp', from "
                f"{since(dep, 'method mtp')}")
    if not (accepts(dep, "bench --backend openai-chat") or accepts(dep, "bench --endpoint-type openai-chat")):
        return (f"{name} {at}'s benchmark sends random prompts to the completions endpoint only; the plan "
                f"benchmarks through the chat endpoint, from {since(dep, 'bench --endpoint-type openai-chat')}")
    return None
