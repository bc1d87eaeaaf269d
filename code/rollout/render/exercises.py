"""The lesson's five exercises, answered on the deployment (--exercises), as the terminal prints them."""
from __future__ import annotations

from ..records import fmt, k_words, pct, pct1, wrap
from ..catalog import GIB
from ..priors import KIND_WORDS
from ..schedule import where_it_pays
from .tables import column_header


def render_exercise_1(t):
    """The alpha for 2x and 3x, by eps."""
    lines = [f"== Exercise 1: the per-token alpha K = {t.k} needs for 2x and 3x ==",
             "alpha solves tau(alpha, K) = S * (1 + eps); the lesson's (S(1+eps) - 1)/K is the same target",
             "read as vLLM's acceptance rate. eps is the decode eps: these are decode speedups, without the",
             "prefill share that dilutes a closed-loop benchmark's (the grid's speedups include it).",
             ""]
    lines += column_header([("eps", 6), ("from", 12), ("2x alpha", 9), ("as rate", 8), ("3x alpha", 9),
                            ("as rate", 8)], [])
    for r in t.rows:
        lines.append(f"{r.eps:6.3f} {r.source:>12s} {fmt(r.alpha_2x, '9.3f', 'never'):>9s} "
                     f"{fmt(r.lesson_2x if r.alpha_2x is not None else None, '8.3f', '-'):>8s} "
                     f"{fmt(r.alpha_3x, '9.3f', 'never'):>9s} "
                     f"{fmt(r.lesson_3x if r.alpha_3x is not None else None, '8.3f', '-'):>8s}")
    given = [r for r in t.rows if r.source == "given"]
    first, last = given[0], given[-1]
    lines += wrap(f"From eps {first.eps:.2f} to {last.eps:.2f} the alpha for 2x moves "
                  f"{first.alpha_2x:.3f} -> {fmt(last.alpha_2x, '.3f', 'never')}, for 3x "
                  f"{fmt(first.alpha_3x, '.3f', 'never')} -> {fmt(last.alpha_3x, '.3f', 'never')}: near the "
                  "top of the curve every bit of overhead costs a lot of alpha.", 100, "")
    return lines


def render_exercise_2(mixes, published=None):
    """The traffic mix (the lesson's is 70/30 chat/code) at B = 1 and at the target, and what published acceptance
    says of code against chat (priors.Contrast)."""
    domains = mixes[0].domains
    lines = ["", f"== Exercise 2: a {'/'.join(format(d.share * 100, '.0f') for d in domains)} "
                 f"{'/'.join(d.name for d in domains)} mix =="]
    for mix in mixes:
        verdict = "pays" if mix.blended_speedup > 1 else "does not pay"
        lines += wrap(f"B = {mix.concurrency}, K = {mix.k}: naive blended alpha {mix.naive_alpha:.3f} promises "
                      f"{mix.naive_speedup:.3f}x; the token-weighted blend is {mix.blended_speedup:.3f}x, so "
                      f"speculation {verdict} ({' / '.join(d.name + ' ' + format(d.speedup, '.2f') + 'x' for d in mix.domains)} "
                      f"alone; best K for the mix {k_words(mix.best_k)}: {mix.best_k_speedup:.3f}x).", 100, "  ")
    code = next((d for d in domains if d.name == "code"), None)
    if published is not None and code is not None:
        c = published
        below = (f"the mix's {code.alpha:.2f} for code is below every one of them" if code.alpha < c.first_range[0]
                 else f"the mix's {code.alpha:.2f} for code is within their range")
        lines += wrap(f"Published acceptance does not bear out a weak code domain: of {c.heads} "
                      f"{KIND_WORDS.get(c.draft, c.draft)} measured on both, {c.higher} accept more on code than on "
                      f"chat (per-token alpha {c.first_range[0]:.2f}-{c.first_range[1]:.2f} on code, "
                      f"{c.second_range[0]:.2f}-{c.second_range[1]:.2f} on chat; acceptance_table.json), and "
                      f"{below}. A run without --exercises takes each domain's alpha from those rows.", 100, "  ")
    return lines


def render_exercise_3(m, dep):
    """vLLM's speculative methods on this target: cost, memory, config."""
    lines = ["", f"== Exercise 3: vLLM's speculative methods on {dep.model}, K = {m.k} (eps from the cost model) ==",
              ""]
    lines += column_header([("draft", 13), ("method", 11), ("params", 8), ("weights", 8), ("KV/token", 9),
                            ("step ms", 8), ("eps B=1", 8), (f"eps B={m.concurrency}", 9), ("max B", 6)], [])
    for r in m.rows:
        lines.append(f"{r.draft:>13s} {r.method:>11s} {r.params / 1e9:7.3f}B {r.weight_bytes / GIB:5.2f}GiB"
                     f" {r.kv_bytes_per_token:9,d} {r.draft_step_ms:8.2f} {r.eps_b1:8.2f} "
                     f"{r.eps_target:9.2f} {r.max_concurrency:6d}")
    lines.append("Configs (--speculative-config), one per draft:")
    for r in m.rows:
        lines += wrap(r.config, 100, "    ")
    lines.append("Which features each combines with depends on the vLLM version: check its compatibility matrix.")
    return lines


def render_exercise_4(d):
    """The lesson's symptom (mean ITL down, P99 up): per token, as TPOT over requests, and the remedies."""
    mean, p99 = d.symptom
    lines = ["", f"== Exercise 4: mean ITL {pct(mean)} but P99 ITL {pct(p99)} =="]
    lines += wrap(f"Read per token, at B = 1: K = {d.k}, eps = {d.eps:.3f} and one per-token alpha "
                  f"{d.alpha:.3f} for every request (tau {d.tau:.2f}) give mean per-token ITL "
                  f"{pct1(d.mean_change)} and P99 {pct1(d.p99_change)}. Every round costs 1 + eps plain steps and "
                  f"{d.zero_accept_token_share * 100:.0f}% of tokens come from rounds that accepted nothing, "
                  f"so P99 follows eps while the mean follows tau/(1+eps). The ITL `vllm bench serve` reports is per "
                  f"chunk, one round: its mean rises by eps ({pct1(d.round_mean_change)}) too, so the {pct(mean)} must "
                  "be a per-token figure (TPOT).", 100, "  ")
    t = d.tpot
    if t:
        lines += wrap(f"Read as TPOT across requests, at B = 1 where the model's eps is "
                      f"{t.eps:.2f} (K = {t.k}): mean TPOT {pct1(t.mean_change)} and P99 TPOT "
                      f"{pct1(t.p99_change)} need requests whose alpha spreads by s.d. {t.spread:.3f} around "
                      f"{t.alpha:.3f} (tau over requests {t.tau:.2f}). The requests at P99 accept at alpha "
                      f"{t.slow_alpha:.2f} on average: {t.slow_tau:.2f} tokens a round for {1 + t.eps:.2f} "
                      f"plain steps, {(1 + t.eps) / t.slow_tau:.2f}x a plain step per token, while the rest carry "
                      "the mean.", 100, "  ")
    else:
        lines += wrap("Read as TPOT across requests at B = 1, no spread of alpha gives both figures at the model's "
                      "eps.", 100, "  ")
    lines.append(f"Remedies: the same requests at B = {d.concurrency} (eps from the cost model):")
    for r in d.remedies:
        parts = [f"K = {r.k}: eps {r.eps:.2f}"]
        if r.token is not None:
            parts.append(f"one alpha: {r.token.speedup:.2f}x, per-token P99 {pct1(r.token.p99_change)}")
        if r.tpot is not None:
            parts.append(f"spread: {r.tpot.speedup:.2f}x, P99 TPOT {pct1(r.tpot.tpot_p99_change)}")
        lines.append("  " + "; ".join(parts))
    lines += wrap(f"  K by batch size (num_speculative_tokens_per_batch_size): {d.schedule}; "
                  + where_it_pays(d.schedule) + "."
                  + " A shorter K shortens every round; the slow requests gain only by skipping speculation "
                    "(routing) or by a head that drafts them better.", 100, "  ")
    return lines


def render_exercise_5(mem, dep):
    """Draft memory: an EAGLE-3 head against a draft model."""
    lines = ["", f"== Exercise 5: draft memory on {dep.model} at {mem.concurrency} x {mem.context} tokens =="]
    for r in mem.rows:
        lines.append(f"  {r.draft:>13s}: {r.params / 1e9:.3f} B parameters = {r.weight_bytes / GIB:.2f} GiB "
                     f"bf16; own KV {r.kv_bytes_per_token:,} B/token")
        lines.append(f"  {'':>13s}  = {r.kv_bytes_at_target / GIB:.2f} GiB at this load; {r.max_concurrency} "
                     "sequences fit")
    lines.append(f"  without a draft model's weights or KV: {mem.max_concurrency_without_draft} sequences fit.")
    return lines


def render_exercises(ex, dep):
    """The five exercises with the model's answers."""
    return (render_exercise_1(ex.speedup_targets) + render_exercise_2(ex.traffic_mix, ex.published)
            + render_exercise_3(ex.methods, dep) + render_exercise_4(ex.tail_diagnosis)
            + render_exercise_5(ex.draft_memory, dep) + [""])
