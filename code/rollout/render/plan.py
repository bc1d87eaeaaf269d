"""Rendering: the staged rollout plan (Markdown), from stage 0's measurements to the rollout.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from ..records import fmt, k_words, pct, pct1
from ..catalog import EAGLE3_HEADS, EAGLE_DRAFTS, era_releases, GIB, release_text
from ..acceptance import acceptance_length, acceptance_rate, LESSON_RULE
from ..deployment import draft_kind, static_bytes, verify_tokens
from ..sizing import settings_sentence
from ..releases import (
    accepts, bench_records_acceptance, checked, FEATURES, per_request_acceptance, release, scrape_counts_acceptance,
)
from ..trust import interval, INTERVAL_LEVEL, span, too_close
from ..schedule import K_MAX, paying_ranges, where_it_pays
from ..commands import (
    bench_lines, can_serve, catalog_name, GOODPUT_CLIENT, draft_head, ENGINE_PLANS, legacy_client_words, serve_lines,
    SHAREGPT_URL, shell_lines, tool_words,
)
from ..workload import SLO_KEYS
from .words import per_gpu, slo_sentence
from ..workload import goodput_key, goodput_words, SLO_PERCENTILE, slo_text
from .tables import calibration_findings, calibration_headline, mix_blend_sentence, mix_tail_sentence
from .words import copies_text, state_text, trained_draft, trust_sentence, verdict_command, verdict_parts, verdict_steps
from .charts import ALL_CHARTS, CHART_FILES
from .choice import render_choice_markdown
from ..commands import predicts_gate_pair


# outputs/skill-eagle3-rollout.md: front matter, the stages, K by batch size, the tail watch, the dashboard.
# Engine-specific parts come from commands.ENGINE_PLANS; every number from the run.

MD_ESCAPED = {"\\": "\\\\", "|": "\\|", "<": "&lt;", ">": "&gt;", "`": "\\`", "&": "&amp;", "[": "\\[", "]": "\\]",
              "*": "\\*", "~": "\\~", "@": "\\@"}
AUTOLINKED = re.compile(r"(?i)(www)\.|:(?=//)")   # GFM's extended autolinks: www.x, scheme://x (and x@y.z: @ above)
EMPHASIS = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")   # an underscore that can open or close emphasis; one
                                                                  # inside a word (sharegpt_spec_c8) cannot


def md(text):
    """Text from a file, a flag or a path, safe in the plan's Markdown: no table cell split (|), no HTML, no code
    span (a backtick escaped, so a name shows as it is), no emphasis or strikethrough, and no link, image or autolink (brackets, @, the dot of www. and the colon
    of :// backslash-escaped, which Markdown shows as the character itself). It never begins a line of the plan,
    so a leading # or - is text."""
    escaped = EMPHASIS.sub(r"\\_", "".join(MD_ESCAPED.get(c, c) for c in text))
    return AUTOLINKED.sub(lambda m: m.group(1) + "\\." if m.group(1) else "\\:", escaped)


def code_cell(text):
    """Text from a file or a path as a code span in a table cell: shown as it is (a code span takes no escapes, and
    links nothing) but for a backtick, which would end it, and a pipe, which GFM splits cells at even there."""
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def plan_mix(mix, dep):
    """The traffic-mix section: naive against correct blend, and what to do about the weak domain."""
    out = [f"## Traffic mix (at B={mix.concurrency}, K={mix.k})", ""]
    out += ["An example mix (TRAFFIC_MIX); give your traffic's own domains with `--mix`.", ""] if mix.assumed else []
    out += [
           "| domain | share of tokens | per-token alpha | tau | speedup alone | share of decode time |",
           "|---|---|---|---|---|---|"]
    out += [f"| {md(d.name)} | {d.share:.2f} | {d.alpha:.2f} | {d.tau:.2f} | {d.speedup:.2f}x | "
            f"{d.time_share * 100:.1f}% |" for d in mix.domains]
    weak = next(d for d in mix.domains if d.name == mix.weak)
    out += ["", md(mix_blend_sentence(mix)), "",
            f"{md(mix.weak)} pulls the blend down: its tokens take {weak.time_share * 100:.1f}% of decode time "
            f"for {weak.share * 100:.0f}% of the tokens. What each remedy would give the whole mix:", ""]
    trained = trained_draft(dep)
    out += [f"- {trained} on {md(mix.weak)} traffic, reaching alpha {mix.trained_alpha:.2f}: "
            f"{mix.trained_speedup:.3f}x;"] if trained else []
    out += [
            f"- routing {md(mix.weak)} to replicas without speculation: {mix.routed_speedup:.3f}x;",
            f"- one K for all traffic: K={k_words(mix.best_k)} is best for this mix, {mix.best_k_speedup:.3f}x.", "",
            md(mix_tail_sentence(mix))]
    return out


def lesson_rule_sentence(plan):
    """Compare the lesson's rule with this run's break-even, reading its number in each unit."""
    k, gate_a, gate_r = plan.k, plan.even.gate_alpha, plan.even.gate_rate
    as_alpha = "above" if LESSON_RULE > gate_a else "below"
    as_rate = "above" if LESSON_RULE > gate_r else "below"
    return (f"Read as a per-token alpha, {LESSON_RULE} is {as_alpha} this run's break-even alpha {gate_a:.3f} (at K={k} it "
            f"shows as a rate of {plan.even.lesson_gate_as_rate:.3f}); read as the acceptance rate, it is {as_rate} the "
            f"break-even rate {gate_r:.3f} (and stands for a per-token alpha of {plan.even.lesson_gate_as_alpha:.3f}). "
            "Gate on the computed break-even, in a named unit, at the K you run.")


def plan_when_not(plan):
    """Bullets for 'when not to use': the break-even alpha, by concurrency, at the K the plan runs there (its K, and
    the schedule's K at that batch where it differs)."""
    out = []
    for row in plan.even.break_evens:
        k, b, alpha = row.k, row.concurrency, row.alpha
        mark = " (the plan's K)" if k == plan.k else " (the K the plan runs there)"
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
    if kind in era.hides_for:
        return (f"asynchronous rounds take the verify pass's host cost per token off the critical path and hide a "
                f"round's bookkeeping and its draft steps' fixed costs whole: {era.hidden_basis}")
    if era.hides_for:
        what = {"model": "a draft model", "ngram": "n-gram drafting"}.get(kind, kind)
        return (f"rounds of {what} keep the fitted costs, unhidden (this era hides them for "
                f"{', '.join(era.hides_for[:-1])} and {era.hides_for[-1]} rounds only)")
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


def plan_verdict(v, dep):
    """The plan's first section: the verdict (tables.verdict_parts) and the one benchmark that settles it."""
    parts = verdict_parts(v, dep)   # each sentence tagged with what it says
    lead = [text for kind, text in parts if kind in ("differ", "measured", "basis", "miss")]
    out = ["## Verdict", "", f"**{md(parts[0][1])}**" + "".join(f" {md(x)}" for x in lead), ""]
    if v.by_batch:
        out += ["K by batch size:", ""] + [f"- {step}" for step in verdict_steps(v)] + [""]
    out += [line for kind, text in parts[1:] if kind not in ("differ", "measured", "basis", "miss", "steps")
            for line in (md(text), "")]
    words, command = verdict_command(v, dep)
    for sentence in words:
        out += [md(sentence), "", "```"] + command + ["```", ""]
    return out


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
        k_line += ": too close to call (the verdict above)"
    return [
        "---",
        "name: eagle3-rollout",
        f"description: Staged rollout of {md(dep.draft)} speculative decoding on {engine} for {md(dep.model)} "
        f"({dep.weights_dtype}) on {dep.tp} x {dep.gpu} at concurrency {batch}, gated on measured acceptance.",
        f"tags: [speculative-decoding, eagle3, {dep.engine.key}, rollout, p99]",
        "---",
        "",
        f"# Speculative decoding rollout: {md(dep.model)} on {dep.tp} x {dep.gpu}, {engine}, draft {md(dep.draft)}",
        "",
        "Written by `python code/main.py`. Every number here comes from that run's cost model and simulated",
        "requests; change the deployment constants or flags and run it again.",
        "",
        *(render_choice_markdown(result.choice) if result.choice is not None else []),
        *plan_verdict(result.verdict, dep),
        "## The deployment this plan is for",
        "",
        "| | this run |",
        "|---|---|",
        f"| engine | {engine} {release_text(release(dep))}"
        f"{checked(dep) or ': its commands as that release takes them'} |",
        f"| engine release | {era_releases(dep.engine, dep.era)}: {dep.era.what}; {era_account(dep)} |",
        f"| target | {md(dep.model)}, {dep.target.held_params / 1e9:.2f} B parameters"
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
        f"| draft | {md(dep.draft)}: {draft_params / 1e9:.3f} B parameters"
        + (f", `{draft_head(dep)[0]}`" if draft_head(dep)[0] else "") + " |",
        f"| settings | {md(settings_sentence(dep.settings).removeprefix('Settings: '))} |",
        f"| the plan's batch | {plan.target}, {md(result.verdict.target_from)}" + ("" if plan.feasible else
                                                     f" (does not fit in memory: this plan is for {batch}, the most "
                                                     "that fits)") + " |",
        f"| plain decode step | {plan.plain_ms_b1:.2f} ms at B=1, {plan.plain_ms_shown:.2f} ms at "
        f"B={plan.shown_batch} |",
        (f"| measured per-token alpha | {alpha:.3f} (from {md(result.measured.source)}) |" if plan.measured
         else f"| assumed per-token alpha | {alpha:.2f} until measured (stage 2)"
         + (", from published acceptance for the traffic's domains (the verdict)" if result.verdict.acceptance else "")
         + " |"),
        f"| spread over requests | alpha s.d. {result.alpha_spread:g}, ln(output tokens) s.d. "
        f"{result.output_spread:g}, ln(prompt tokens) s.d. {result.input_spread:g} in the ShareGPT runs "
        "(assumed; `--alpha-spread`, `--output-spread`, `--input-spread`) |",
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
        return [f"**No head to serve yet.** No public {md(dep.draft)} head for {md(dep.model)} that {engine} loads is known "
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
    if not bench_records_acceptance(dep) or dep.topk > 1:
        return []
    return [(k, b, f"spec_k{k}_c{b}.json") for k in [plan.k] + [k for k in calibration_ks(plan.k) if k != plan.k]
            for b in spec_batches(plan.shown_batch)]


def plan_stage0(dep, plan):
    batch = plan.shown_batch
    others = [b for b in calibration_batches(batch) if b != batch]
    fits = ("" if plan.feasible else f"Concurrency {plan.target} does not fit in memory: every command below runs "
            f"at {batch}, the most that fits. ")
    out = ["## Stage 0: baseline, speculation off", "",
           fits + f"Two kinds of run, each at your traffic's temperature ({dep.temperature:g} here: acceptance depends on "
           "it) through the chat endpoint:", "",
           f"- **calibration runs** at concurrency {', '.join(map(str, others))} and {batch}: random prompts of "
           f"exactly {dep.input_tokens} tokens and {dep.output_tokens}-token answers, the lengths this plan models, "
           "so that stage 3 can fit the cost model to your deployment;",
           f"- **the gate's baseline** at {batch}: ShareGPT's prompts with answers of at most {dep.output_tokens} "
           "tokens, real text as acceptance needs it (a sample of your own traffic is better still).", ""]
    if legacy_client_words(dep):   # Markdown of its own: no value from input in it
        out += [legacy_client_words(dep), ""]
    out += ["```", f"wget {SHAREGPT_URL}"] + serve_lines(dep, batch)
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
               if bench_records_acceptance(dep) else
               f". {engine.name} {release_text(release(dep))}'s benchmark writes no run's acceptance (vLLM's from "
               f"{release_text(FEATURES[dep.engine.releases_of, 'bench spec_decode keys'].first)}), so speculative runs cannot "
               "calibrate the round's cost here: stage 3 fits on the baselines." if engine.bench_records_acceptance
               else f". The benchmark records a run's acceptance from vLLM's own counters, which "
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
           f"{base.workload.max_concurrency} at a time, prompts log-normal around {dep.input_tokens} tokens with an "
           f"s.d. of {base.workload.input_spread:g} in log (`--input-spread`), answers log-normal "
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
    close = (" The model cannot tell whether it pays at B = "
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
        out += [f"Dividing accepted tokens by K gives r, not alpha: at K = {k}, r = {plan.bar.rate_at_alpha:.2f} is what "
                f"a per-token alpha of {plan.alpha:.2f} shows.", ""]
    if plan.measured:
        ms = result.measured
        out += [f"Measured ({md(ms.source)}): K = {ms.k}, acceptance rate {ms.acceptance_rate:.3f}, "
                f"acceptance length {ms.acceptance_length:.3f}, per-token alpha {ms.alpha:.3f}"
                + (", conditional alpha by position " + ", ".join(f"{a:.3f}" for a in ms.per_position_alpha)
                   if ms.per_position_alpha else "") + ".", ""]
        out += [f"- {md(note)}" for note in ms.notes] + ([""] if ms.notes else [])
    return out


def off_past(dep):
    """How the plan switches speculation off past a batch size: the engine's own switch (Engine.off_past) where its
    release has it, else another replica."""
    # vLLM drops the table under data parallelism (vllm/config/vllm.py, _maybe_disable_dynamic_sd_for_data_parallel).
    if (accepts(dep, "num_speculative_tokens_per_batch_size") and accepts(dep, "max_concurrency")
            and not dep.dp_attention):
        return dep.engine.off_past
    return "route the batch sizes past it to a replica without speculation"


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
    words += [f"--gate-margin {plan.bar.margin:g}", f"--p99-budget {plan.p99_budget:g}"]   # always: see tool_words
    words += [f"--served-model={shlex.quote(plan.served_model)}"] if plan.served_model else []   # a name may begin with -
    if predicts_gate_pair(dep, plan):   # each key of the pair against the prediction of its own run (gate_runs)
        words.append(f"--compare sharegpt_baseline_c{batch}.json,sharegpt_spec_c{batch}.json")
    if scrape_counts_acceptance(dep):
        words += ["--metrics after.prom"] + ([] if engine.acceptance_gauges else ["--metrics-before before.prom"])
        words += [] if engine.counts_drafts else [f"--ks {plan.k}"]
    else:   # no scrape this program reads at this release: the acceptance length stage 2 says how to take
        words += ["--acceptance-length TAU_FROM_STAGE_2", f"--ks {plan.k}"]
    return ["```"] + shell_lines(words + ["--gate"]) + ["```", ""]


def plan_calibration(cal):
    """The plan's account of the fit on your runs."""
    out = [f"{calibration_headline(cal)}.", "", *(f"{md(x)}" for x in calibration_findings(cal)), "",
           "| run | B | K | tau | measured TPOT | fitted | error | held out |", "|---|---|---|---|---|---|---|---|"]
    for r in cal.runs:
        out.append(f"| {code_cell(Path(r.path).name)} | {r.batch} | {fmt(r.k, 'd')} | {fmt(r.tau, '.2f')} | "
                   f"{r.measured_tpot_ms:.2f} ms | {r.fitted_tpot_ms:.2f} ms | {pct1(r.error)} | "
                   f"{pct1(r.held_out_error)} |")
    return out + [""] + [f"- {md(note)}" for note in cal.notes] + ([""] if cal.notes else [])


def plan_stage3(result, dep, plan):
    k, batch = plan.k, plan.shown_batch
    gate_a, gate_r = plan.even.gate_alpha, plan.even.gate_rate
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
        f"Go on only if the measured rate is at least {plan.bar.required_rate:.3f} "
        f"(break-even + {plan.bar.margin:.2f}), per-token alpha {plan.bar.required_alpha:.3f}."
        + (f" The round's cost is the model's, and at {INTERVAL_LEVEL:.0%} the break-even rate lies anywhere in "
           f"{plan.gate_rate_interval[0]:.3f}-{plan.gate_rate_interval[1]:.3f}: a rate under "
           f"{plan.gate_rate_interval[1] + plan.bar.margin:.3f} needs stage 1's benchmark pair to decide, and without it "
           "the gate answers too close to call." if plan.gate_rate_interval else "")
        if plan.bar.required_rate is not None else
        f"Break-even + {plan.bar.margin:.2f} is a rate above 1: no measurement can pass the gate here.",
        "",
        f"The lesson's rule \"alpha >= {LESSON_RULE}\" names no unit. " + lesson_rule_sentence(plan),
        ""]


def stage4_tpot(t, plan, runs):
    """Stage 4's expected p99_tpot_ms at the plan's batch: the plan's benchmark pair as stage 1 predicts it (one run
    for both), else the steady state of the tail's requests, labelled so."""
    if runs:
        base, spec = (pb.result for pb in runs)
        (b_lo, b_hi), (s_lo, s_hi) = (pb.intervals["mean_tpot_ms"] for pb in runs)
        return (f"- expected `p99_tpot_ms` at B={plan.shown_batch}, in stage 1's runs (`{runs[0].name}`, "
                f"`{runs[1].name}`, as predicted there): {base['p99_tpot_ms']:.2f} ms plain, {spec['p99_tpot_ms']:.2f} "
                f"ms with speculation ({pct(spec['p99_tpot_ms'] / base['p99_tpot_ms'] - 1)}), mean TPOT "
                f"{base['mean_tpot_ms']:.2f} ({b_lo:.1f}-{b_hi:.1f}) -> {spec['mean_tpot_ms']:.2f} ({s_lo:.1f}-{s_hi:.1f}) "
                f"ms at {INTERVAL_LEVEL:.0%}; in steady state (every slot decoding, no prompt waiting) "
                f"{t.tpot_plain_p99_ms:.2f} -> {t.tpot_spec_p99_ms:.2f} ms"
                + (f" ({t.tpot_spec_p99_alike_ms:.2f} ms if every request accepted alike)"
                   if t.tpot_spec_p99_alike_ms else "") + ";")
    return (f"- expected `p99_tpot_ms` at B={plan.shown_batch}, in steady state (every slot decoding, no prompt "
            f"waiting; the benchmark is not simulated here): {t.tpot_plain_p99_ms:.2f} ms plain, "
            f"{t.tpot_spec_p99_ms:.2f} ms with speculation ({pct(t.tpot_p99_change)}), mean TPOT "
            f"{t.tpot_plain_mean_ms:.2f} ({span(t.tpot_plain_mean_interval_ms, 1)}) -> {t.tpot_spec_mean_ms:.2f} "
            f"({span(t.tpot_spec_mean_interval_ms, 1)}) ms at {INTERVAL_LEVEL:.0%}, if requests' alpha spreads by "
            f"s.d. {t.alpha_spread:g} around {plan.request_alpha:.2f}"
            + (f" ({t.tpot_spec_p99_alike_ms:.2f} ms if every request accepted alike)"
               if t.tpot_spec_p99_alike_ms else "") + ";")


def plan_stage4(dep, plan, runs=None):
    t = {row.concurrency: row for row in plan.tail}.get(plan.shown_batch)
    if t is None:
        return []
    return [
        "## Stage 4: watch the tail", "",
        "Three latencies, easy to confuse. `p99_tpot_ms` is across requests, each request's decode time over",
        "its tokens: it rises when some requests accept badly, whatever the mean does. The benchmark's ITL is",
        "per streamed chunk, and a round's accepted tokens arrive in one chunk, so `p99_itl_ms` is a round's",
        "time. Per-token ITL (a round's time split over its tokens) is what the rounds themselves look like.",
        "",
        stage4_tpot(t, plan, runs),
        f"- the requests at P99 TPOT accept at alpha {t.slow_alpha:.2f} on average: find them "
        + ("with stage 2's per-request acceptance" if per_request_acceptance(dep)
           else "by measuring acceptance per route")
        + ", and route or retrain for them, not for the mean;",
        f"- in steady state, `p99_itl_ms` (per chunk, one round): {t.round_itl_spec_p99_ms:.2f} ms against "
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
        f"- the batch size where the measured alpha meets the break-even table above: {off_past(dep)}.",
        ""]


def plan_slo_section(at, dep, plan):
    """The plan's "Serving at the SLO" section: both arms by request rate, the capacity each serves per GPU within
    the SLO, the chart, and the two open-loop benchmarks with --goodput that check it."""
    if at is None:
        return []
    if at.skipped:
        return ["## Serving at the SLO", "", md(slo_sentence(at)), ""]
    shown = [key for key in SLO_KEYS if key in dict(at.slo) or key == "tpot"]   # the SLO's, and the chart's TPOT

    def row(p, arm):
        return " | ".join([f"| {'on' if arm.speculative else 'off'}", f"{p.rate:.3g}", f"{per_gpu(at, p):.3g}",
                           str(p.k) if arm.speculative else "-", f"{p.concurrency:.0f}",
                           *(f"{p.tail_ms[key]:,.{1 if key == 'tpot' else 0}f}" for key in shown),
                           f"{p.request_goodput / at.gpus:.3g}", "yes" if p.growing else "no",
                           "yes" if p.within else "no"]) + " |"
    out = ["## Serving at the SLO", "",
           f"The SLO: {slo_text(at.slo)} (`--slo`, vLLM's `--goodput` keys). Each row is a `vllm bench serve "
           f"--request-rate` run simulated step by step: {at.prompts:,} requests sent at random "
           f"({'Poisson' if at.burstiness == 1 else f'gamma gaps of shape {at.burstiness:g}'} arrivals, "
           "`--num-prompts`, `--burstiness`), the traffic's lengths, speculation off and on "
           + ("at the plan's K by batch size as the server runs it (K: the one most steps ran)" if at.speculative.served.rows
              else "at one K") + f", around alpha {at.alpha:.2f}. A rate is served when every P{SLO_PERCENTILE} the "
           "SLO names is within its bound and the queue does not grow: the last tenth of the requests sent waits for "
           "admission at most twice as long as the middle tenth (at the median), and the "
           "requests the rate keeps in the replica (in: the rate times the mean E2EL, Little's law) fit its "
           f"running cap ({at.baseline.cap:,} off, {at.speculative.cap:,} on). Rates and goodput are per GPU of the "
           f"{at.gpus}-GPU replica where the column says so.", "",
           "| arm | req/s a replica | req/s per GPU | K | in | "
           + " | ".join(f"P{SLO_PERCENTILE} {key.upper()} (ms)" for key in shown)
           + " | goodput per GPU | queue grows | within |",
           "|---|---|---|---|---|" + "---|" * (len(shown) + 3)]
    for arm in (at.baseline, at.speculative):
        out += [row(p, arm) for p in arm.points]
    out += ["", md(slo_sentence(at)), "",
            f"![Each P99 over its bound against requests/s per GPU, plain and speculative]({CHART_FILES['slo']})", ""]
    base, spec = at.baseline.best, at.speculative.best
    if base is None and spec is None:
        return out + ["Neither arm meets the SLO at the least rate tried: no rate to check.", ""]
    client = ("" if dep.engine.bench_tool == GOODPUT_CLIENT else
              f" {dep.engine.name}'s own client is not checked for `--goodput` at its releases, so these run vLLM's "
              f"(`{GOODPUT_CLIENT}`, 0.9.2 or newer: older ones save the key as `request_goodput:`) against the same "
              "OpenAI endpoint.")
    out += [f"Check it with `--goodput` at each capacity: each file's `{goodput_key(dep)}` over its "
            "`request_throughput` is the share of requests within the SLO, and each P99 the SLO names should be within "
            "its bound; 10% more traffic should miss it." + client, ""]
    if base is not None:
        out += ["Plain decoding, against stage 0's server:", "", "```"]
        out += bench_lines(dep, None, f"sharegpt_baseline_slo_r{base.rate:g}.json", realistic=True,
                           prompts=base.prompts, goodput=goodput_words(at.slo), rate=base.rate,
                           burstiness=at.burstiness) + ["```", ""]
    if spec is not None and spec.k:
        table = bool(at.speculative.served.rows)
        restart = not table and spec.k != plan.k and can_serve(dep)
        out += (["Speculation, against the server of the K-by-batch section (its table):", "", "```"] if table else
                [f"Speculation, against a server started as stage 1's but at K = {spec.k}, the one K "
                 f"{dep.engine.name} runs for this load (the table's near the {spec.concurrency:.0f} requests a "
                 "replica holds at this rate):", "", "```"]
                + serve_lines(dep, plan.shown_batch, spec.k) if restart else
                [f"Speculation, against stage 1's server (K = {spec.k}):", "", "```"])
        out += bench_lines(dep, None, f"sharegpt_spec_slo_r{spec.rate:g}.json", realistic=True,
                           prompts=spec.prompts, goodput=goodput_words(at.slo), rate=spec.rate,
                           burstiness=at.burstiness) + ["```", ""]
    return out


def without_charts(lines):
    """The plan's lines less its chart images (each a paragraph of its own) and the blank line after each: the plan
    as --out - prints it, its charts unwritten."""
    images = {f"]({name})" for name in ALL_CHARTS}
    out = []
    for line in lines:
        if out and out[-1] is None:   # the blank line after an image
            out.pop()
            if not line:
                continue
        if line.startswith("![") and any(line.endswith(tail) for tail in images):
            out.append(None)
            continue
        out.append(line)
    return [line for line in out if line is not None]


def render_plan(result, dep, charts=True):
    """outputs/skill-eagle3-rollout.md: the staged rollout plan, every number from this run; charts: whether it links
    its charts (written beside it), or leaves them out (--out -: the plan to standard output alone)."""
    return "\n".join(plan_lines(result, dep) if charts else without_charts(plan_lines(result, dep)))


def plan_lines(result, dep):
    """The plan's lines (render_plan)."""
    plan = result.plan
    if result.facts.max_concurrency < 1:
        return plan_front(result, dep, plan) + [
            "## Nothing fits", "",
            f"The weights ({static_bytes(dep) / GIB:.0f} GiB with the draft's) and the KV cache of one sequence of "
            f"{dep.context} tokens{state_text(dep)} do not fit in the {result.facts.memory_budget_bytes / GIB:.0f} GiB "
            f"{dep.engine.name} gives them ({memory_setting(dep)}), so no command here could run. More "
            "GPUs (`--tp`), smaller weights (`--weights-dtype fp8` or `fp4`), an fp8 KV cache (`--kv-dtype fp8`) or a "
            "larger memory share would: run this program again with them.", ""]
    out = (plan_front(result, dep, plan) + plan_stage0(dep, plan) + plan_stage1(dep, plan)
           + plan_predicted_runs(result, dep) + plan_k_by_batch(plan, dep) + plan_slo_section(result.at_slo, dep, plan))
    if can_serve(dep):   # stages 2 to 4 measure a server that stage 1 started
        out += plan_stage2(result, dep, plan) + plan_stage3(result, dep, plan)
        out += plan_stage4(dep, plan, result.gate_runs) + plan_dashboard(dep, plan)
    else:
        out += ["## Stages 2 to 4", "", "Measuring acceptance, the gate and the tail watch need the server of stage 1: "
                "run this program again once it has a head to serve.", ""]
    out += ["## When not to use speculation here", ""] + plan_when_not(plan)
    if result.mix:
        out += [""] + plan_mix(result.mix, dep)
    out += [""] + plan_next(dep, plan)
    return out
