"""The lesson's five exercises, answered for this deployment.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from .records import fields_of, OPTIONAL
from .catalog import MODELS
from .acceptance import _increasing_root, acceptance_length, alpha_from_length, LESSON_SYMPTOM, speedup
from .priors import Contrast, contrast
from .costmodel import draft_step_ms, eps_decode, eps_seen, FIT
from .deployment import draft_kind, max_concurrency, with_draft
from .simulation import JITTER_P99, mixture_quantile, round_mix, token_itl_parts
from .mix import traffic_blend
from .bestk import k_schedule
from .cells import decoder, evaluate_cell
from .schedule import k_zero_at
from .commands import speculative_config
from .deployment import draft_problem

LESSON_MIX = (("chat", 0.70, 0.70), ("code", 0.30, 0.40))   # the lesson's exercise 2: 70% chat at alpha 0.70, 30% code
                                                            # at 0.40 (shares of generated tokens)


# The five exercises, answered by the model.

def alpha_for_speedup(speedup, k, eps):
    """Per-token alpha with tau(a, K) / (1 + eps) = speedup; None when even a = 1 falls short.

    >>> round(alpha_for_speedup(2.0, 5, 0.1), 3), alpha_for_speedup(3.0, 1, 0.0)
    (0.559, None)
    """
    need = speedup * (1.0 + eps)
    return alpha_from_length(need, k) if need <= k + 1 else None


@dataclass(frozen=True)
class ItlDiagnosis:
    """The eps and alpha under which per-token ITL moves as a report says, at B = 1 (diagnose_tail)."""
    eps: float               #: decode eps
    alpha: float             #: one per-token alpha for every request
    tau: float               #: its acceptance length at K
    k: int                   #: draft length K
    p99_change: float        #: P99 per-token ITL over plain, minus 1
    mean_change: float       #: mean per-token ITL over plain, minus 1
    zero_accept_token_share: float   #: share of tokens from rounds that accepted nothing
    round_mean_change: float   #: mean ITL per chunk (one round) over plain, minus 1: eps


def diagnose_tail(mean_change, p99_change, k):
    """The eps (and alpha) under which per-token ITL shows the given mean and P99 changes, at B = 1.

    Mean per-token ITL changes by (1 + eps)/tau - 1, which fixes tau for each eps; its P99 then
    rises with eps, so bisection finds the eps that matches. One alpha for every request: the
    per-token view needs no spread.
    """
    def p99(eps):
        tau = (1 + eps) / (1 + mean_change)
        alpha = alpha_from_length(tau, k)
        _, per_token = round_mix(((1.0, alpha, 1),), k, 0.0)
        unit = token_itl_parts(per_token, 1.0)
        return (1 + eps) * mixture_quantile(0.99, unit) / JITTER_P99 - 1.0, alpha, tau, per_token

    lo, hi = 0.0, min(1.0, (k + 1) * (1 + mean_change) - 1)
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if p99(mid)[0] < p99_change else (lo, mid)
    eps = (lo + hi) / 2
    change, alpha, tau, per_token = p99(eps)
    return ItlDiagnosis(eps=eps, alpha=alpha, tau=tau, k=k, p99_change=change, mean_change=(1 + eps) / tau - 1.0,
                        zero_accept_token_share=per_token[0],
                        round_mean_change=eps)   # per chunk (vllm bench's ITL), every round costs 1 + eps


@dataclass(frozen=True)
class TpotDiagnosis:
    """The spread of alpha over requests under which TPOT moves as a report says (diagnose_tpot)."""
    spread: float            #: s.d. of the requests' alphas
    alpha: float             #: their mean alpha
    tau: float               #: tau the batch sees over them
    eps: float               #: eps with the prefill share
    k: int                   #: draft length K
    p99_change: float        #: P99 TPOT over plain, minus 1
    mean_change: float       #: mean TPOT over plain, minus 1
    slow_alpha: float        #: mean alpha of the requests at or above P99 TPOT
    slow_tau: float          #: their acceptance length


def diagnose_tpot(mean_change, p99_change, k, batch, dep, decode, fit=FIT):
    """The spread of alpha over requests under which mean TPOT moves mean_change and P99 TPOT p99_change at B.

    For a spread s, the mean alpha follows from the mean: mean TPOT over plain is one over the
    speedup over requests, round_mix's tau over 1 + eps. P99 TPOT then rises with s, so bisection
    finds s. None when no alpha gives the mean, or no spread that keeps the mean reaches the P99.
    """
    eps = eps_decode(dep, batch, k, fit)

    def speedup_at(alpha, spread):
        tau = round_mix(((1.0, alpha, 1),), k, spread)[0]
        return speedup(tau, eps_seen(eps, tau, dep, batch, fit))

    def tail(spread):
        alpha = _increasing_root(lambda a: speedup_at(a, spread), need)
        return alpha, evaluate_cell(alpha, k, eps, batch, dep, decode(alpha, k, spread), fit)

    need = 1.0 / (1.0 + mean_change)
    if speedup_at(1.0, 0.0) < need:
        return None
    # A wider spread lowers the best speedup (alpha 1 on average): search only the spreads that reach the mean.
    hi = 0.5 if speedup_at(1.0, 0.5) >= need else 1.0 - _increasing_root(lambda u: speedup_at(1.0, 1.0 - u), need,
                                                                         0.5, 1.0)
    lo = 0.0
    if tail(hi)[1].tpot_p99_change < p99_change:
        return None
    for _ in range(12):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tail(mid)[1].tpot_p99_change < p99_change else (lo, mid)
    alpha, cell = tail(hi)
    return TpotDiagnosis(spread=hi, alpha=alpha, tau=cell.acceptance_length_requests, eps=cell.eps_eff, k=k,
                         p99_change=cell.tpot_p99_change,
                         mean_change=cell.tpot_spec_mean_ms / cell.tpot_plain_mean_ms - 1.0,
                         slow_alpha=cell.slow_alpha, slow_tau=acceptance_length(cell.slow_alpha, k))


@dataclass(frozen=True)
class SpeedupTarget:
    """The per-token alpha a speedup of 2x and 3x needs at one eps (exercise 1)."""
    eps: float               #: decode eps
    source: str              #: "given", or the cost model's at a batch
    alpha_2x: float          #: per-token alpha for 2x (None: none reaches it)
    alpha_3x: float          #: for 3x
    lesson_2x: float         #: the lesson's (2 (1 + eps) - 1) / K: the rate for 2x
    lesson_3x: float         #: for 3x


@dataclass(frozen=True)
class SpeedupTargets:
    """Exercise 1 at K."""
    k: int                   #: draft length K
    rows: list               #: SpeedupTarget by eps


def exercise_speedup_targets(dep, batch, fit=FIT, k=5):
    """Exercise 1: the per-token alpha K = 5 (the lesson's) needs for 2x and 3x, given eps and from the model."""
    eps_rows = [(e, "given") for e in (0.0, 0.05, 0.10, 0.15, 0.25, 0.50)]
    eps_rows += [(eps_decode(dep, 1, k, fit), "model, B=1"), (eps_decode(dep, batch, k, fit), f"model, B={batch}")]
    return SpeedupTargets(k=k, rows=[SpeedupTarget(eps=e, source=src, alpha_2x=alpha_for_speedup(2, k, e),
                                                   alpha_3x=alpha_for_speedup(3, k, e), lesson_2x=(2 * (1 + e) - 1) / k,
                                                   lesson_3x=(3 * (1 + e) - 1) / k) for e, src in eps_rows])


def smaller_drafts(dep, drafts):
    """The drafts of the list that can serve this target: a draft model must be smaller than it and share its
    tokenizer (draft_problem)."""
    return [d for d in drafts if d not in MODELS or draft_problem(MODELS[d], dep.shape) is None]


@dataclass(frozen=True)
class Method:
    """One of vLLM's speculative methods on this target (exercise 3)."""
    draft: str               #: the --draft value
    method: str              #: vLLM's method name in --speculative-config
    params: float            #: the draft's parameters held in memory
    weight_bytes: float      #: its weights, bytes
    kv_bytes_per_token: float   #: its own KV cache per token of context, bytes
    draft_step_ms: float     #: one draft step at B = 1, ms
    eps_b1: float            #: decode eps at B = 1
    eps_target: float        #: decode eps at the exercise's batch
    max_concurrency: int     #: the most sequences that fit beside it
    config: str              #: its --speculative-config JSON


@dataclass(frozen=True)
class Methods:
    """Exercise 3 at K and one batch."""
    k: int
    concurrency: int
    rows: list               #: Method rows


def exercise_methods(dep, batch, fit=FIT, k=3):
    """Exercise 3: vLLM's speculative methods on this target, what each costs and holds."""
    rows = []
    for draft in smaller_drafts(dep, ("llama-3.2-1b", "eagle", "eagle3", "ngram")):
        d = with_draft(dep, draft)
        rows.append(Method(draft=draft, method=json.loads(speculative_config(d, k))["method"],
                           params=d.drafter.held_params, weight_bytes=d.drafter.held_bytes,
                           kv_bytes_per_token=d.drafter.kv_bytes_per_token,
                           draft_step_ms=draft_step_ms(d, 1, 1, fit), eps_b1=eps_decode(d, 1, k, fit),
                           eps_target=eps_decode(d, batch, k, fit), max_concurrency=max_concurrency(d),
                           config=speculative_config(d, k)))
    return Methods(k=k, concurrency=batch, rows=rows)


@dataclass(frozen=True)
class RemedyCell:
    """The symptom's requests at another K and the exercise's batch."""
    eps: float               #: eps with the prefill share
    speedup: float           #: over the simulated requests
    p99_change: float        #: P99 per-token ITL over plain, minus 1
    tpot_p99_change: float   #: P99 TPOT over plain, minus 1


@dataclass(frozen=True)
class Remedy:
    """A shorter K for the symptom, read per token (one alpha) and as TPOT (spread alphas)."""
    k: int
    eps: float               #: decode eps
    token: RemedyCell = field(default=None, metadata=OPTIONAL)   #: with one alpha for every request
    tpot: RemedyCell = field(default=None, metadata=OPTIONAL)    #: with the spread diagnose_tpot found


@dataclass(frozen=True)
class TailExercise(ItlDiagnosis):
    """Exercise 4: the lesson's symptom read per token (the ItlDiagnosis fields) and as TPOT, and the remedies."""
    remedies: list           #: Remedy by K
    concurrency: int         #: the batch the remedies are at
    schedule: list           #: [start, end, K] rows at the diagnosed alpha
    tpot: TpotDiagnosis      #: None when no spread gives both figures
    symptom: tuple           #: LESSON_SYMPTOM: (mean change, P99 change)
    k_zero_at: int           #: where the schedule turns speculation off for good, or None


def exercise_tail(dep, batch, decode, fit=FIT):
    """Exercise 4: LESSON_SYMPTOM read per token and as TPOT over requests, and the remedies."""
    tail = diagnose_tail(*LESSON_SYMPTOM, 3)
    tpot = diagnose_tpot(*LESSON_SYMPTOM, 3, 1, dep, decode, fit)
    remedies = []
    for kk in (1, 2, 3):
        eps = eps_decode(dep, batch, kk, fit)
        reads = {}
        for name, alpha, s in (("token", tail.alpha, 0.0), ("tpot", tpot and tpot.alpha, tpot and tpot.spread)):
            if alpha is not None:
                cell = evaluate_cell(alpha, kk, eps, batch, dep, decode(alpha, kk, s), fit)
                reads[name] = RemedyCell(eps=cell.eps_eff, speedup=cell.speedup_mc, p99_change=cell.p99_change,
                                         tpot_p99_change=cell.tpot_p99_change)
        remedies.append(Remedy(k=kk, eps=eps, **reads))
    schedule = k_schedule(dep, tail.alpha, fit)
    return TailExercise(**fields_of(tail), remedies=remedies, concurrency=batch, schedule=schedule, tpot=tpot,
                        symptom=LESSON_SYMPTOM, k_zero_at=k_zero_at(schedule))


@dataclass(frozen=True)
class DraftMemoryRow:
    """What one draft holds at the exercise's load (exercise 5)."""
    draft: str               #: the --draft value
    params: float            #: parameters held
    weight_bytes: float      #: weights, bytes
    kv_bytes_per_token: float   #: its own KV cache per token of context, bytes
    kv_bytes_at_target: float   #: that KV cache at the exercise's batch and context, bytes
    max_concurrency: int     #: the most sequences that fit beside it


@dataclass(frozen=True)
class DraftMemory:
    """Exercise 5: an EAGLE-3 head's memory against a draft model's."""
    concurrency: int
    context: int             #: mean decode context, tokens
    rows: list               #: DraftMemoryRow by draft
    max_concurrency_without_draft: int   #: the most sequences that fit with no draft weights or KV


def exercise_draft_memory(dep, batch):
    """Exercise 5: an EAGLE-3 head's memory against a draft model's, at the target load."""
    rows = []
    for draft in smaller_drafts(dep, ("eagle3", "llama-3.2-1b")):
        d = with_draft(dep, draft)
        rows.append(DraftMemoryRow(draft=draft, params=d.drafter.held_params, weight_bytes=d.drafter.held_bytes,
                                   kv_bytes_per_token=d.drafter.kv_bytes_per_token,
                                   kv_bytes_at_target=d.drafter.kv_bytes_per_token * dep.context * batch,
                                   max_concurrency=max_concurrency(d)))
    return DraftMemory(concurrency=batch, context=dep.context, rows=rows,
                       max_concurrency_without_draft=max_concurrency(with_draft(dep, "ngram")))


@dataclass(frozen=True)
class Exercises:
    """The lesson's five exercises, answered (solve_exercises)."""
    speedup_targets: SpeedupTargets
    traffic_mix: list        #: Blend at B = 1 and the exercises' batch (exercise 2)
    methods: Methods
    tail_diagnosis: TailExercise
    draft_memory: DraftMemory
    published: Contrast = None   #: what published rows say of code against chat for this draft kind (exercise 2)


def solve_exercises(dep, grid, mix, *, seed, fit, spread, output_spread):
    """The lesson's five exercises, answered by the model at the grid's largest concurrency, or at the largest batch
    that fits when it does not."""
    batch = min(max(grid.concurrencies), max(max_concurrency(dep), 1))
    decode = decoder(seed, spread, output_spread, dep.output_tokens)
    return Exercises(speedup_targets=exercise_speedup_targets(dep, batch, fit),
                     traffic_mix=[traffic_blend(mix, dep, 5, b, fit) for b in sorted({1, batch})],   # exercise 2
                     methods=exercise_methods(dep, batch, fit),
                     tail_diagnosis=exercise_tail(dep, batch, decode, fit),
                     draft_memory=exercise_draft_memory(dep, batch),
                     published=contrast(draft_kind(dep.draft)))
