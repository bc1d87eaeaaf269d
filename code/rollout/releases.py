"""What each engine release accepts: the flags, config keys and values the plan's commands use that arrived (or left)
at a known release, and the combinations a release refuses at start-up, each with the source it was checked in.

A deployment's release is its --engine-version (Deployment.release), or the newest checked here (NEWEST). A feature
the plan would use and the release lacks is left out, or the deployment is refused, naming the first release that
has it (commands.py and cli.py ask accepts, missing and refusal). Checked against each release's own package: the
vLLM and SGLang wheels on the package index (vllm 0.8.0-0.34.0 with the sdists' benchmarks/ for 0.8.0-0.9.2, sglang
0.4.10-0.5.23, their sources compared release by release), and TensorRT-LLM's llm_args.py, serve.py and release notes (its wheels are too large to fetch here: release
notes and versioned docs date its changes).
"""
from __future__ import annotations

from dataclasses import dataclass

from .catalog import release_at, release_text
from .deployment import draft_kind, verify_tokens

# The newest release each engine's facts were checked at (2026-12): vLLM 0.34.0 (2026-11-16), SGLang 0.5.23
# (2026-10-30), TensorRT-LLM 1.4.0rc4 (its newest pre-release; 1.2.1 is its newest stable release). A newer release
# is taken as this one: what it removed is unknown here.
NEWEST = {"vllm": (0, 34, 0), "sglang": (0, 5, 23), "trtllm": (1, 4, 0)}
# The oldest release whose parsers were read: below it the commands are this one's, and the plan says so.
OLDEST = {"vllm": (0, 8, 0), "sglang": (0, 4, 10), "trtllm": (1, 0, 0)}


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
    Feature("vllm", "--speculative-config", (0, 8, 2), "vllm/engine/arg_utils.py:783 of 0.8.2; 0.8.0 and 0.8.1 "
            "take --speculative-model and --num-speculative-tokens instead"),
    Feature("vllm", "method eagle3", (0, 8, 5), "PR #16937, EAGLE-3 in V1: vllm/config.py:2377 of 0.8.5 compares the "
            "method with 'eagle3', which its SpeculativeMethod Literal, a type hint, lists only from 0.9.1"),
    Feature("vllm", "bench request_goodput key", (0, 9, 2), "vllm/benchmarks/serve.py: 0.8.0 to 0.9.1 save it as "
            "\"request_goodput:\" (a typo); --goodput itself is in every release from 0.8.0"),
    Feature("vllm", "speculators-format heads", (0, 10, 1), "PR #21345, vllm/transformers_utils/configs/speculators; "
            "absent from 0.10.0"),
    Feature("vllm", "method mtp", (0, 11, 0), "PR #25232, one method name for MTP; before it deepseek_mtp, whose "
            "rounds past K = 1 asserted FlashAttention's metadata on an MLA model, v1/spec_decode/eagle.py"),
    Feature("vllm", "method draft_model", (0, 15, 0), "PR #24322, draft models in the V1 engine; before it, "
            "\"not supported yet\""),
    Feature("vllm", "draft_sample_method probabilistic", (0, 22, 0), "vllm/config/speculative.py; 0.21 offered "
            "greedy or gumbel"),
    Feature("vllm", "num_speculative_tokens_per_batch_size", (0, 24, 0), "PR #32374, dynamic speculative decoding"),
    Feature("vllm", "draft slots off the step budget", (0, 17, 0), "vllm/config/vllm.py _set_max_num_scheduled_tokens: "
            "the scheduler's budget is max_num_batched_tokens less max_num_new_slots_for_drafting x max_num_seqs, one "
            "slot a request for method draft_model (vllm/config/speculative.py), none for EAGLE/MTP chains; absent from "
            "0.16.0; from 0.28.0 the budget is max_num_batched_tokens whole (the slots only checked against it)",
            until=(0, 28, 0)),
    Feature("vllm", "VLLM_USE_V2_MODEL_RUNNER=0", (0, 12, 0), "vllm/envs.py, PR #25266; from 0.34 Model Runner V1 "
            "is gone and the variable at 0 stops the server: vllm/platforms/interface.py, validate_environ",
            until=(0, 34, 0)),
    Feature("vllm", "per-batch K on Model Runner V2", (0, 32, 0), "V2's model runner picks each step's K from "
            "0.32, vllm/v1/worker/gpu/model_runner.py; it runs n-gram and draft models there too, "
            "vllm/config/vllm.py"),
    Feature("vllm", "eagle3 for Qwen", (0, 10, 1), "vllm/config.py: 0.10.0 raises \"Eagle3 is only supported for "
            "Llama models\", 0.10.1 allows qwen"),
    Feature("vllm", "eagle3 for gpt-oss", (0, 11, 0), "vllm/config/speculative.py lists gpt_oss from 0.11"),
    Feature("vllm", "eagle3 for Qwen MoE", (0, 11, 1), "vllm/model_executor/models/qwen3_moe.py: SupportsEagle3 "
            "from 0.11.1"),
    Feature("vllm", "eagle3 beyond Llama", (0, 15, 0), "other targets' EAGLE-3 support is not dated here; 0.15 is "
            "the oldest release read that has it for every target the catalog names"),
    Feature("vllm", "table off under data parallelism", (0, 26, 0), "vllm/config/vllm.py, "
            "_maybe_disable_dynamic_sd_for_data_parallel; absent in 0.24"),
    Feature("vllm", "--per-request-spec-decode-metrics", (0, 29, 0), "PR #48915, vllm/config/observability.py"),
    Feature("vllm", "bench spec_decode keys", (0, 14, 0), "vllm/benchmarks/serve.py writes spec_decode_* keys; none "
            "in 0.12 or 0.13"),
    Feature("vllm", "bench --backend openai-chat", (0, 11, 0), "vllm/benchmarks/serve.py: --backend picks the "
            "request type from 0.11, --endpoint-type before"),
    Feature("vllm", "bench --endpoint-type openai-chat", (0, 9, 1), "vllm/benchmarks/serve.py; before 0.9.1 the "
            "benchmark sent random prompts to the completions endpoint only", until=(0, 11, 0)),
    # Before 0.9.2 the plan benchmarks with the source tree's benchmarks/benchmark_serving.py (commands.bench_tool):
    # 0.8.0-0.9.0's `vllm bench serve` sends completions only, at temperature 0.0 (vllm/benchmarks/
    # endpoint_request_func.py:73), and 0.9.1's defines --endpoint-type (serve.py:547) but reads args.backend
    # whenever a sampling flag is given (serve.py:1033): AttributeError. 0.9.2 defines --backend (serve.py:635).
    Feature("vllm", "vllm bench serve samples through the chat endpoint", (0, 9, 2),
            "vllm/benchmarks/serve.py: --backend from 0.9.2 (line 635); 0.9.1 reads args.backend (line 1033), which "
            "it never defines, when a sampling flag is given"),
    Feature("vllm", "benchmark_serving.py --temperature", (0, 8, 4), "benchmarks/benchmark_serving.py of the source "
            "tree: --temperature, --top-p, --top-k and --min-p from 0.8.4 (line 1054 there); 0.8.0-0.8.3 send "
            "temperature 0.0 (benchmarks/backend_request_func.py:354 in 0.8.0)"),
    # SGLang (python/sglang/srt/server_args.py, speculative_hook.py from 0.5.13, arg_groups/fields from 0.5.20).
    Feature("sglang", "--speculative-algorithm STANDALONE", (0, 5, 2), "PR #10090"),
    Feature("sglang", "--speculative-algorithm NGRAM", (0, 5, 3), "server_args.py; renamed from LOOKAHEAD on main "
            "by PR #11010, before any release"),
    Feature("sglang", "--speculative-draft-model-quantization", (0, 5, 7), "server_args.py"),
    Feature("sglang", "--speculative-adaptive", (0, 5, 12), "PR #23336; PR #21599 brought it in 0.5.11, "
            "but off under spec v2, that release's default"),
    Feature("sglang", "spec_accept_rate over drafted tokens", (0, 5, 11), "PR #23530, "
            "observability/scheduler_metrics_mixin.py:531-543 of 0.5.11: accepted drafts over the tokens a round "
            "drafts, (tau - 1) / (N - 1); before it the rate counted the bonus token (sglang_rate)"),
    Feature("sglang", "sglang:spec_accept_rate", (0, 5, 4), "metrics/collector.py:229 of 0.5.4; 0.4.10 and "
            "0.5.1-0.5.3 export sglang:spec_accept_length alone (0.5.3 metrics/collector.py:218)"),
    Feature("sglang", "spec_accept_rate over --speculative-num-draft-tokens", (0, 5, 6), "PR #13212, "
            "managers/scheduler_metrics_mixin.py:279-290 of 0.5.6: tau / N, where 0.5.4-0.5.5 divide by the steps "
            "plus one (0.5.4 scheduler_metrics_mixin.py:258-266), n-gram's unset steps making it tau / 1"),
    Feature("sglang", "adaptive tiers by batch size", (0, 5, 20), "speculative/adaptive_spec_params.py, "
            "DEFAULT_ADAPTIVE_CONFIG: one flat candidate list in 0.5.12, tiers from 0.5.13, these from 0.5.20"),
    Feature("sglang", "--enable-dp-attention", (0, 4, 0), "server_args.py; deprecated for --attn-dp-size from 0.5.22",
            until=(0, 5, 22)),
    Feature("sglang", "--attn-dp-size", (0, 5, 22), "arg_groups/fields/parallel.py: --dp-size N --enable-dp-attention "
            "is rewritten to it, with a warning"),
    # TensorRT-LLM (tensorrt_llm/llmapi/llm_args.py, tensorrt_llm/commands/serve.py, release notes).
    Feature("trtllm", "decoding_type Eagle3", (1, 3, 0), "PR #10124; 1.2.1's from_dict table has no Eagle3, and "
            "decoding_type Eagle runs EAGLE-3 heads on the PyTorch backend before it"),
    Feature("trtllm", "decoding_type Eagle", (1, 0, 0), "llm_args.py, EagleDecodingConfig", until=(1, 3, 0)),
    Feature("trtllm", "decoding_type Draft_Target", (1, 3, 0), "llm_args.py: a discriminated union on the class's "
            "Literal Draft_Target, where from_dict's table before it took DraftTarget"),
    Feature("trtllm", "speculative_model", (1, 2, 0), "PR #10099, which also fetches a Hugging Face id; before it "
            "speculative_model_dir took a local path only"),
    Feature("trtllm", "speculative_model_dir", (1, 0, 0), "llm_args.py, DecodingBaseConfig", until=(1, 2, 0)),
    Feature("trtllm", "MTP max_draft_len", (1, 3, 0), "PR #12341: max_draft_len sets MTP's depth; before it "
            "MTPDecodingConfig took it from num_nextn_predict_layers, default 1, whatever max_draft_len said"),
    Feature("trtllm", "use_dynamic_tree", (1, 3, 0), "PR #13081, the PyTorch backend's dynamic tree for EAGLE-3; "
            "before it Eagle3DecodingConfig took use_dynamic_tree and ran a chain"),
    Feature("trtllm", "max_concurrency", (1, 1, 0), "PR #6676, speculative_config.max_concurrency"),
    Feature("trtllm", "draft_len_schedule", (1, 2, 0), "llm_args.py, DecodingBaseConfig.draft_len_schedule"),
    Feature("trtllm", "acceptance_window", (1, 2, 0), "PR #7283: acceptance_window, acceptance_length_threshold, "
            "applied by the two-model drafter only; read in 1.2.1's llm_args.py, 1.1's unread", until=(1, 3, 0)),
    Feature("trtllm", "acceptance_rate_window_size", (1, 3, 0), "PR #12905: acceptance_rate_window_size, "
            "acceptance_rate_threshold, on the one-model path only; the older pair is refused"),
    Feature("trtllm", "/prometheus/metrics spec counters", (1, 3, 0), "PR #12545, tensorrt_llm/metrics/collector.py; "
            "the endpoint itself from 1.1, PR #5785"),
)}


def release(dep):
    """The release the plan's commands are written for: the deployment's --engine-version, else NEWEST."""
    return release_at(dep.release or NEWEST[dep.engine.releases_of])


KEYS = {key for _, key in FEATURES}


def accepts(dep, key):
    """Whether the deployment's release accepts a feature: a FEATURES entry of its engine (Engine.releases_of) within
    its span; a key only other engines have is not gated for this one, and is accepted. A key no engine has is a
    caller's typo: KeyError."""
    if key not in KEYS:
        raise KeyError(key)
    feature, at = FEATURES.get((dep.engine.releases_of, key)), release(dep)
    return feature is None or (release_at(feature.first) <= at
                               and (feature.until is None or at < release_at(feature.until)))


def offers(dep, key):
    """Whether the deployment's engine has a feature at all (a FEATURES entry of its own) and its release accepts it:
    accepts() less the keys only other engines have."""
    return (dep.engine.releases_of, key) in FEATURES and accepts(dep, key)


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
    "mtp": ("method mtp",),
    "model": ("method draft_model", "--speculative-algorithm STANDALONE"),
    "ngram": ("--speculative-algorithm NGRAM",),
}


def checked(dep):
    """Where the deployment's release sits against the releases whose parsers were read: "" inside them, else the
    words the plan adds after the release (its commands are then the nearest checked release's)."""
    at, engine = release(dep), dep.engine.releases_of
    if at > release_at(NEWEST[engine]):
        newest = release_text(NEWEST[engine])
        return f", newer than {newest}, the newest checked: its commands are {newest}'s"
    if at < release_at(OLDEST[engine]):
        oldest = release_text(OLDEST[engine])
        return (f", older than {oldest}, the oldest checked: its commands are written as {oldest}'s parsers take "
                "them; check each against your build")
    return ""


def bench_records_acceptance(dep):
    """Whether the engine's benchmark writes each run's acceptance (Engine.bench_records_acceptance), from the release
    that has it."""
    return dep.engine.bench_records_acceptance and accepts(dep, "bench spec_decode keys")


def exports_acceptance_counters(dep):
    """Whether the server's Prometheus page counts drafted and accepted tokens at the deployment's release."""
    return accepts(dep, "/prometheus/metrics spec counters")


def scrape_counts_acceptance(dep):
    """Whether a scrape of the server gives this program the acceptance as it reads it: the counters at the release
    (exports_acceptance_counters), and SGLang's rate gauge over drafted tokens (before PR #23530 it counted the
    bonus token, and the K this program infers from the gauges would disagree with the plan's)."""
    return exports_acceptance_counters(dep) and accepts(dep, "spec_accept_rate over drafted tokens")


def sglang_rate_kind(dep):
    """What SGLang's sglang:spec_accept_rate gauge divides by at the deployment's release and draft, with the plan's
    server flags (--speculative-num-steps K for a chain or tree, --speculative-num-draft-tokens N always): "drafted"
    ((tau - 1) / (N - 1), from 0.5.11), "verified" (tau / N, or tau / (steps + 1) before 0.5.6: K + 1 for a chain),
    "tau" (n-gram before 0.5.6, whose unset steps make it tau / 1), or None before the release exports it (0.5.4)."""
    if not accepts(dep, "sglang:spec_accept_rate"):
        return None
    if accepts(dep, "spec_accept_rate over drafted tokens"):
        return "drafted"
    if draft_kind(dep.draft) == "ngram" and not accepts(dep, "spec_accept_rate over --speculative-num-draft-tokens"):
        return "tau"
    return "verified"


def sglang_rate(dep, k):
    """(whether the gauge counts the bonus token, its divisor) at K (sglang_rate_kind), so that it reads
    (tau - 1) / divisor or tau / divisor; None where the release exports no rate gauge."""
    kind, n = sglang_rate_kind(dep), verify_tokens(dep, k)
    if kind is None:
        return None
    if kind == "drafted":
        return False, n - 1
    if kind == "tau":
        return True, 1
    by_tokens = accepts(dep, "spec_accept_rate over --speculative-num-draft-tokens")
    return True, n if by_tokens else k + 1


def one_model(dep):
    """Whether TensorRT-LLM runs the draft inside the target's model (EAGLE-3 heads and MTP), not as a drafter."""
    return draft_kind(dep.draft) in ("eagle3", "mtp")


def per_request_acceptance(dep):
    """Whether the deployment's server can report each request's acceptance (Engine.per_request_acceptance, from the
    release that has it)."""
    return dep.engine.per_request_acceptance and accepts(dep, "--per-request-spec-decode-metrics")


def eagle3_target_key(dep):
    """The FEATURES key that dates EAGLE-3 for the deployment's target: none for a dense Llama (every release that
    has EAGLE-3), else by family from its checkpoint's name."""
    hf = str(dep.shape.get("hf", "")).lower()
    moe = bool(dep.shape.get("experts"))
    if "llama" in hf and not moe:
        return None
    if "gpt-oss" in hf:
        return "eagle3 for gpt-oss"
    if "qwen" in hf:
        return "eagle3 for Qwen MoE" if moe else "eagle3 for Qwen"
    return "eagle3 beyond Llama"


def missing(dep):
    """What the plan would need that the deployment's release lacks, as one line; None when nothing is."""
    name, at = dep.engine.name, release_text(release(dep))
    if not accepts(dep, "--speculative-config"):
        return f"{name} {at} takes no --speculative-config, which the plan's servers run with: it came in " + since(
            dep, "--speculative-config")
    for key in NEEDED_BY_DRAFT.get(draft_kind(dep.draft), ()):
        if not accepts(dep, key):
            return f"{name} {at} cannot run --draft {dep.draft}: it needs {since(dep, key)}"
    if dep.topk > 1 and not accepts(dep, "use_dynamic_tree"):
        return f"{name} {at} would draft a chain, not the tree asked for: its trees run from {since(dep, 'use_dynamic_tree')}"
    key = eagle3_target_key(dep) if draft_kind(dep.draft) == "eagle3" else None
    if key and not accepts(dep, key):
        return f"{name} {at} runs no EAGLE-3 head for {dep.model}: from {since(dep, key)}"
    return None
