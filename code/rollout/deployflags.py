"""The deployment's flags: parse_deployment, one Deployment from the flags, every rule between them checked; and
--choose's candidates (parse_choose), each a Deployment built the same way for one GPU, TP, layout, engine and draft.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from pathlib import Path

from .records import CONCURRENCY_LIMIT, GPU_RANGES, shown, TOKENS_LIMIT, TP_LIMIT, UsageError
from .catalog import (
    BYTES_PER, DRAFTS, EAGLE3_HEADS, EAGLE_DRAFTS, EAGLE_HEADS, ENGINES, era_of, GPU_FAMILY, GPU_PRICES, GPUS, MODELS,
    newest_era, release_of, release_text,
)
from .deployment import draft_kind, draft_problem, gpu_spec, make_deployment, max_concurrency, running_cap
from .sizing import beyond_node, KV_DTYPE as SIZING_KV_DTYPE, NODE_GPUS, Setting, shipped_dtype, smallest_tp, \
    tp_candidates, tp_reason
from .releases import missing as release_lacks, refusal as release_refuses, release as release_of_dep
from .hfconfig import checked_name, head_from_config, shape_from_config
from .flags import _choice, _finite, parse_list, parse_one, parse_slo

MIN_RATE = 1e-3               # requests/s: slower, a run of --num-prompts would last days, and its times lose digits

def parse_deployment(args, settings, plan_batch):
    """The deployment flags -> Deployment, refusing what cannot run; a setting neither given nor in main.py's row for
    the model is derived for it (sizing.py), TP to hold plan_batch sequences."""
    if args.model and args.model_config:
        raise UsageError("--model and --model-config: name the target one way only")
    if args.model_config:
        shape = shape_from_config(args.model_config)
        model = shape["hf"] or checked_name(Path(args.model_config).stem, "--model-config: the file's name (the config "
                                                                          "has no _name_or_path)")
    else:
        model = _choice("--model", args.model or settings.model, list(MODELS))
        shape = MODELS[model]
    gpu = args.gpu or settings.gpu
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
    # The model's own settings: a flag, else main.py's row for this model and GPU (MODEL_SETTINGS), else derived
    # (sizing.py).
    row = {} if args.model_config else model_row(settings.model_settings, model, gpu)
    weights = _choice("--weights-dtype", args.weights_dtype or row.get("weights_dtype") or shipped_dtype(shape),
                      list(BYTES_PER))
    kv = _choice("--kv-dtype", args.kv_dtype or row.get("kv_dtype") or SIZING_KV_DTYPE, ["bf16", "fp8"])
    tp = parse_one("--tp", args.tp, int, f"an integer from 1 to {TP_LIMIT}", lambda t: 1 <= t <= TP_LIMIT) \
        if args.tp is not None else row.get("tp")
    if tp is None and args.ep is not None:   # whole experts per GPU run across the TP GPUs: --ep N is TP N
        tp = parse_one("--ep", args.ep, int, f"an integer from 1 to {TP_LIMIT}", lambda t: 1 <= t <= TP_LIMIT)
        tp = tp if tp > 1 else None
    derive_tp = tp is None
    tp_flag = ("--tp" if args.tp is not None else f"--ep {tp} (TP {tp})" if args.ep is not None else
               "MODEL_SETTINGS' tp in main.py")   # where a TP that does not split the heads came from
    sources = [setting_source("weights_dtype", weights, args.weights_dtype, row, model, shape),
               setting_source("kv_dtype", kv, args.kv_dtype, row, model, shape)]
    tokens = lambda least: (f"an integer from {least} to {TOKENS_LIMIT:,} (tokens)",
                            lambda n: least <= n <= TOKENS_LIMIT)
    context = parse_one("--context", args.context, int, *tokens(1)) if args.context is not None else settings.context
    lengths = {}
    for flag, text, default, least in (("--input-tokens", args.input_tokens, settings.input_tokens, 1),
                                       ("--output-tokens", args.output_tokens, settings.output_tokens, 2)):   # TPOT needs 2
        lengths[flag] = parse_one(flag, text, int, *tokens(least)) if text is not None else default
    if context is not None and context < lengths["--input-tokens"]:
        raise UsageError(f"--context: a request decodes after its prompt, so the mean decode context is at least "
                         f"--input-tokens {lengths['--input-tokens']}; got {context}")
    if sum(lengths.values()) > TOKENS_LIMIT:
        raise UsageError(f"--input-tokens and --output-tokens: a request of {sum(lengths.values()):,} tokens is past "
                         f"the {TOKENS_LIMIT:,} this tool models")
    draft = _choice("--draft", args.draft or settings.draft, list(DRAFTS) + list(MODELS))
    m = shape
    if not derive_tp and m["heads"] % tp:
        raise UsageError(f"{tp_flag}: {tp} does not divide the {m['heads']} attention heads of {model}")
    if not derive_tp and not m.get("mla") and m["kv_heads"] % tp and tp % m["kv_heads"]:   # vLLM's attention layers assert one of them
        raise UsageError(f"{tp_flag}: {tp} GPUs can neither split nor copy evenly the {m['kv_heads']} KV heads of "
                         f"{model} (one must divide the other)")
    if draft == "model" and not args.draft_config:
        raise UsageError("--draft: 'model' is a draft model read from its config.json: give --draft-config PATH")
    draft_shape = shape_from_config(args.draft_config, "--draft-config") if draft == "model" else None
    if draft in MODELS or draft == "model":
        d = draft_shape or MODELS[draft]
        problem = draft_problem(d, m)
        if problem:
            raise UsageError(f"--draft: {draft} cannot draft for {model}: {problem}")
        if not derive_tp and d["heads"] % tp:
            raise UsageError(f"{tp_flag}: {tp} does not divide the {d['heads']} attention heads of the draft {draft}")
    engine = ENGINES[_choice("--engine", args.engine or settings.engine, list(ENGINES))]
    if engine.nvidia_only and gpu in GPU_FAMILY and GPU_FAMILY[gpu] == "cdna":
        others = " or ".join(e.key for e in ENGINES.values() if not e.nvidia_only)
        raise UsageError(f"--engine: {engine.name} runs on NVIDIA GPUs; {gpu} is AMD's (serve it with {others})")
    era = parse_era(engine, args.engine_version if args.engine_version is not None else settings.engine_version)
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
    draft_hf = args.draft_model if args.draft_model is not None else settings.draft_model
    if draft_hf is not None:
        checked_name(draft_hf, "--draft-model")
    if draft_hf is not None and draft == "mtp":
        raise UsageError("--draft-model: MTP runs the target's own MTP module; drop --draft-model or pick another "
                         "--draft")
    if draft_hf is not None and draft == "ngram":
        raise UsageError("--draft-model: n-gram drafting runs no model; drop --draft-model or pick another --draft")
    ep_value = args.ep if args.ep is not None else settings.ep
    ep = parse_ep(ep_value, tp, m, model) if not derive_tp else 1
    dp_attention = args.dp_attention or settings.dp_attention
    if dp_attention and not m.get("experts"):
        raise UsageError(f"--dp-attention: runs attention data parallel beside expert-parallel experts; {model} is "
                         "dense (serve more replicas instead)")
    if dp_attention and (ep == 1 or tp == 1):
        raise UsageError("--dp-attention: runs attention data parallel beside expert-parallel experts, as the engines "
                         f"offer it: give --ep {tp} with --tp {tp} > 1" if tp and tp > 1 else
                         "--dp-attention: needs several GPUs (--tp) and --ep equal to it")
    spec = gpu_spec(gpu, weights_dtype=weights, **numbers)

    def build(degree, experts=ep):
        return make_deployment(model, gpu, degree, weights_dtype=weights, kv_dtype=kv, context=context, draft=draft, spec=spec, engine=engine.key, draft_hf=draft_hf,
                               input_tokens=lengths["--input-tokens"], output_tokens=lengths["--output-tokens"], shape=m, topk=topk, verify_tokens=verify, draft_shape=draft_shape, era=era,
                               ep=experts, dp_attention=dp_attention, temperature=settings.temperature)

    if derive_tp:   # the smallest TP that holds the plan's batch (sizing.smallest_tp); EP, if set to more than 1, is TP
        spread = ep_value not in (1, "1")
        candidates = [t for t in tp_candidates(m, draft_shape if draft == "model" else MODELS.get(draft))
                      if not spread or (t > 1 and m.get("experts") and m["experts"] % t == 0)]
        tp, dep, fits = smallest_tp(lambda t: build(t, t if spread else 1), candidates, plan_batch)
        if tp is None:
            raise UsageError(f"--tp: no tensor-parallel degree up to {NODE_GPUS} splits the heads of {model}"
                             + (f" and of the draft {draft}" if draft in MODELS or draft == "model" else "")
                             + " evenly: give --tp")
        ep = tp if spread else 1
        held = max_concurrency(dep)
        cut = ("" if tp == NODE_GPUS or fits else
               f"the draft {draft}'s {(draft_shape or MODELS[draft])['heads']} heads split no further"
               if (draft in MODELS or draft == "model") and NODE_GPUS in tp_candidates(m) else "")
        past = None if fits or cut or (draft in MODELS or draft == "model") else beyond_node(
            lambda t: build(t, t if spread else 1) if m["heads"] % t == 0 else None, plan_batch)
        sources.insert(0, Setting("tp", tp, "derived", tp_reason(tp, plan_batch, dep.context, gpu, fits, held,
                                                                  past, cut)))
    else:
        dep = build(tp)
        sources.insert(0, Setting("tp", tp, "given" if args.tp is not None or args.ep is not None else "model settings",
                                  "given" if args.tp is not None else f"--ep {tp}" if args.ep is not None else
                                  f"MODEL_SETTINGS' row for {model} on this GPU in main.py"))
    version = args.engine_version if args.engine_version is not None else settings.engine_version
    dep = replace(dep, configs=(args.model_config, args.draft_config),
                  release=release_of(version) if version is not None else None, settings=tuple(sources))
    lacking = release_lacks(dep)
    if lacking:
        raise UsageError(f"--engine-version: {lacking}")
    refused = release_refuses(dep)
    if refused:
        raise UsageError(f"--dp-attention: {refused}; serve it without --dp-attention, or with another --draft")
    return dep


def model_row(rows, model, gpu):
    """main.py's MODEL_SETTINGS row for the model on the GPU ({} where there is none), its values checked: a constant
    edited wrong is named as such, not as a flag the user did not give."""
    row = rows.get((model, gpu), {})
    for key, value in row.items():
        ok = {"tp": lambda v: type(v) is int and 1 <= v <= TP_LIMIT, "weights_dtype": lambda v: v in BYTES_PER,
              "kv_dtype": lambda v: v in ("bf16", "fp8")}.get(key, lambda v: False)(value)
        if not ok:
            raise UsageError(f"MODEL_SETTINGS in main.py: ({model!r}, {gpu!r}) sets {key} to {shown(value)}; a row sets "
                             f"tp (an integer from 1 to {TP_LIMIT}), weights_dtype ({', '.join(BYTES_PER)}) and "
                             "kv_dtype (bf16 or fp8)")
    return row


def setting_source(name, value, flag_value, row, model, shape):
    """Where a dtype setting came from (Setting): its flag, main.py's row for the model, or derived."""
    if flag_value is not None:
        return Setting(name, value, "given", "given")
    if name in row:
        return Setting(name, value, "model settings", f"MODEL_SETTINGS' row for {model} on this GPU in main.py")
    if name == "kv_dtype":
        return Setting(name, value, "derived", "derived: the engines' default")
    if shape.get("hf") is None:   # a --model-config without _name_or_path: the dtype is its own config's
        return Setting(name, value, "derived", "derived: the dtype its config.json gives (quantization_config, else "
                                               "bf16)")
    return Setting(name, value, "derived", f"derived: the dtype {shape['hf']} ships in")


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
        raise UsageError(f"--engine-version: a release as {engine.name} publishes it, such as 0.14, 0.5.11, "
                         f"0.5.10.post1 or 1.2.0rc1; got {shown(version)}") from None
    if era is None:
        raise UsageError(f"--engine-version: {engine.name} releases before {release_text(engine.eras[0].first)} "
                         "are not modelled: "
                         f"{engine.eras[0].before}; got {shown(version)}")
    return era


@dataclass(frozen=True)
class ChooseAsk:
    """What --choose asked (parse_choose): the candidates built and checked, the traffic, the prices."""
    options: tuple           #: (Deployment, speculative, release text), or choose.Unserved where one cannot run
    demand: object           #: choose.Demand
    prices: dict             #: {gpu: (USD a GPU-hour, source, date)}


CHOOSE_TPS = 2   # TP degrees a GPU is searched at: the smallest that holds a sequence with the draft, and the next
                 # (a MoE's expert-parallel layouts at the smallest only: a larger one spreads the same experts thinner)


def parse_prices(text):
    """--gpu-price NAME=USD,... -> {gpu: USD a GPU-hour}."""
    prices = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        name = name.strip()
        _choice("--gpu-price", name, list(GPUS))
        if name in prices:
            raise UsageError(f"--gpu-price: {name} priced twice")
        prices[name] = parse_one("--gpu-price", value.strip(), _finite, "NAME=USD with USD from 0.01 to 1,000 a "
                                 "GPU-hour", lambda usd: 0.01 <= usd <= 1000)
    return prices


def choose_drafts(args, shape, engine):
    """The draft kinds a candidate on `engine` runs: --draft's alone when given, else every kind the engine serves
    for this target with a model to name (an EAGLE-3 head in the catalog, else an EAGLE-1 one; the target's MTP
    module), else n-gram (prompt lookup pays on traffic that repeats its prompt, which a chat mix rarely does: ask for
    it with --draft ngram)."""
    if args.draft is not None:
        return [args.draft] if draft_kind(args.draft) in engine.drafts else []
    heads = {"eagle3": EAGLE3_HEADS, "eagle": EAGLE_HEADS}
    kinds = [kind for kind in ("eagle3", "eagle", "mtp") if kind in engine.drafts and (
        shape.get("nextn") if kind == "mtp" else heads[kind].get((engine.key, args.model)) is not None)]
    if "eagle3" in kinds and "eagle" in kinds:   # EAGLE-3's head drafts further than EAGLE-1's on the same target
        kinds.remove("eagle")
    return kinds or (["ngram"] if "ngram" in engine.drafts else [])


def parse_choose(args, settings, plan_batch):
    """--choose and its flags -> ChooseAsk: for every GPU and engine asked, the layouts a target runs (TP; a MoE's
    experts across the TP GPUs, with and without attention data parallel, where the engine and release serve it),
    at the CHOOSE_TPS smallest TPs that hold a sequence beside the weights and the draft, each with speculation off
    and with every draft kind (choose_drafts). Every candidate passes parse_deployment's rules; one that cannot run is
    kept with the refusal as its reason."""
    from .choose import CHOOSE_RUNS_LIMIT, Demand, Unserved
    for flag, value in (("--gpu", args.gpu), ("--engine", args.engine), ("--model-config", args.model_config),
                        ("--draft-config", args.draft_config), ("--calibrate", args.calibrate),
                        ("--predict-bench", args.predict_bench), ("--compare", args.compare),
                        ("--metrics", args.metrics), ("--metrics-before", args.metrics_before),
                        ("--bench-baseline", args.bench_baseline), ("--bench-spec", args.bench_spec),
                        ("--gate", args.gate or None), ("--gpu-bandwidth", args.gpu_bandwidth),
                        ("--gpu-tflops", args.gpu_tflops), ("--gpu-memory", args.gpu_memory)):
        if value is not None:
            raise UsageError(f"--choose: searches deployments of a catalog --model; {flag} is for one deployment "
                             + ("(give --gpus)" if flag == "--gpu" else "(give --engines)" if flag == "--engine"
                                else "(run it on the chosen deployment after)"))
    if args.request_rate is not None and args.target_concurrency is not None:
        raise UsageError("--choose: give the traffic one way: --request-rate or --target-concurrency")
    if args.request_rate is not None:
        demand = Demand(request_rate=parse_one("--request-rate", args.request_rate, _finite,
                                               f"one rate from {MIN_RATE:g} to {CONCURRENCY_LIMIT:,} requests/s",
                                               lambda r: MIN_RATE <= r <= CONCURRENCY_LIMIT))
    elif args.target_concurrency is not None:
        demand = Demand(concurrency=plan_batch)
    else:
        raise UsageError("--choose: give the traffic to serve: --request-rate R (requests/s) or "
                         "--target-concurrency C (concurrent requests)")
    slo = parse_slo(args.slo if args.slo is not None else settings.slo)
    if not slo:
        raise UsageError("--choose: the cheapest deployment within an SLO needs one: give --slo ttft:MS,tpot:MS")
    given = parse_prices(args.gpu_price) if args.gpu_price is not None else {}
    prices = {gpu: (usd, source, date) for gpu, (usd, source, date) in GPU_PRICES.items()}
    prices.update({gpu: (usd, "--gpu-price", "given") for gpu, usd in given.items()})
    gpus = (parse_list("--gpus", args.gpus, str, f"GPUs from {', '.join(GPUS)}", lambda g: g in GPUS)
            if args.gpus is not None else [gpu for gpu in GPUS if gpu in prices])
    unpriced = [gpu for gpu in gpus if gpu not in prices]
    if unpriced:
        raise UsageError(f"--gpus: no price for {', '.join(unpriced)} in the catalog: give --gpu-price "
                         f"{unpriced[0]}=USD")
    engines = (parse_list("--engines", args.engines, str, f"engines from {', '.join(ENGINES)}",
                          lambda e: e in ENGINES) if args.engines is not None else list(ENGINES))
    if args.engine_version is not None and len(engines) > 1:
        raise UsageError("--engine-version: names one engine's release; with --choose give one engine (--engines)")
    model = _choice("--model", args.model or settings.deployment.model, list(MODELS))
    shape = MODELS[model]
    tps = ([parse_one("--tp", args.tp, int, f"an integer from 1 to {TP_LIMIT}", lambda t: 1 <= t <= TP_LIMIT)]
           if args.tp is not None else tp_candidates(shape))
    options = []
    for gpu in gpus:
        for key in engines:
            engine = ENGINES[key]
            if engine.nvidia_only and GPU_FAMILY.get(gpu) == "cdna":
                options.append(Unserved(gpu=gpu, tp=None, ep=None, dp_attention=None, engine=key, draft=None,
                                        why=f"{engine.name} runs on NVIDIA GPUs; {gpu} is AMD's"))
                continue
            drafts = choose_drafts(argparse_copy(args, model=model), shape, engine)
            layouts = [(1, False)]
            if shape.get("experts") and args.ep in (None, "1", 1) and not args.dp_attention:
                layouts += [("tp", False), ("tp", True)]
            elif shape.get("experts") and (args.ep not in (None, "1", 1) or args.dp_attention):
                layouts = [("tp", bool(args.dp_attention))]
            for ep, dp in layouts:
                held = 0
                for tp in tps:
                    if held >= (CHOOSE_TPS if ep == 1 else 1):   # experts across GPUs: the smallest TP that holds them
                        break
                    experts = tp if ep == "tp" else 1
                    if ep == "tp" and (tp == 1 or shape["experts"] % tp):
                        continue
                    built = []
                    for draft in drafts or [None]:
                        given_args = argparse_copy(args, model=model, gpu=gpu, engine=key, tp=str(tp),
                                                   ep=str(experts), dp_attention=dp, draft=draft or "ngram",
                                                   weights_dtype=args.weights_dtype or shipped_dtype(shape))
                        try:
                            dep = parse_deployment(given_args, settings.deployment, plan_batch)
                        except UsageError as refused:
                            options.append(Unserved(gpu=gpu, tp=tp, ep=experts, dp_attention=dp, engine=key,
                                                    draft=draft or "off", why=str(refused)))
                            continue
                        if running_cap(dep, True) >= 1 and max_concurrency(dep) >= 1:
                            built.append((dep, draft is not None))
                    if not built:
                        continue
                    held += 1
                    text = release_text(release_of_dep(built[0][0]))
                    options.append((built[0][0], False, text))   # speculation off: the server without a draft
                    options.extend((dep, True, text) for dep, speculative in built if speculative)
    searched = sum(1 for option in options if not isinstance(option, Unserved))
    if searched > CHOOSE_RUNS_LIMIT:
        raise UsageError(f"--choose: {searched} candidates would each be searched at the SLO, more than the "
                         f"{CHOOSE_RUNS_LIMIT} a run searches: give fewer --gpus or --engines, a --tp or a --draft")
    if not searched:
        raise UsageError("--choose: no candidate holds one sequence beside the weights on the GPUs and engines asked")
    return ChooseAsk(options=tuple(options), demand=demand, prices={gpu: prices[gpu] for gpu in gpus})


def argparse_copy(args, **changes):
    """A copy of the parsed flags with some changed (parse_choose's candidates through parse_deployment)."""
    copy = argparse.Namespace(**vars(args))
    for name, value in changes.items():
        setattr(copy, name, value)
    return copy
