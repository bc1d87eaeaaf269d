"""A traffic mix: each domain's share of tokens at its own alpha, the speedup of the blend weighted by rounds (not by
averaging alpha first), and the tail of the mix's simulated requests: which domains the slowest 1% come from."""
from __future__ import annotations

from dataclasses import dataclass

from .records import fields_of
from .acceptance import acceptance_length
from .costmodel import decode_step_ms, eps_decode, eps_seen, FIT, plain_step_ms, prefill_share_ms, round_ms, tpot_speedup
from .simulation import cell_latency
from .bestk import round_costs

@dataclass(frozen=True)
class Domain:
    """One domain of a traffic mix at the mix's K and B (traffic_blend)."""
    name: str                #: the domain's name
    share: float             #: its share of generated tokens
    alpha: float             #: its per-token alpha
    tau: float               #: its acceptance length at K
    speedup: float           #: the speedup were all traffic this domain
    time_share: float        #: its share of the decode time


@dataclass(frozen=True)
class Blend:
    """A traffic mix's speedup, blended right (rounds per token summed) and naively (alpha averaged first)."""
    k: int                   #: draft length K
    concurrency: int         #: batch size B
    eps: float               #: decode eps at (B, K)
    prefill_share: float     #: a plain step's prefill share over its decode step
    domains: list            #: Domain rows
    naive_alpha: float       #: token-weighted mean alpha
    naive_speedup: float     #: the speedup that alpha promises
    blended_speedup: float   #: the speedup of the mix: each domain's tau over one shared round time
    naive_error: float       #: naive over blended, minus 1
    weak: str                #: the domain with the lowest tau
    routed_speedup: float    #: the mix's speedup with the weak domain decoded without speculation
    trained_speedup: float   #: ... with a draft as good on the weak domain as on the best
    trained_alpha: float     #: the best domain's alpha
    best_k: int              #: the mix's best single K (0: off)
    best_k_speedup: float    #: its speedup


def traffic_blend(mix, dep, k, batch, fit=FIT):
    """Speedup of a traffic mix: each domain's tau over one shared round time, weighted by tokens.

    A domain with share s of generated tokens and acceptance length tau needs s/tau rounds
    per token, so the mix runs sum(s/tau) rounds per token: a harmonic blend of tau, not an
    average of alphas or of speedups. A token costs its rounds plus the prefill share, the same
    with speculation or without (spec_tpot_ms).
    """
    eps = eps_decode(dep, batch, k, fit)
    q = prefill_share_ms(dep, batch, fit) / decode_step_ms(dep, batch, fit)
    rounds = round_costs(dep, batch, fit)

    def mix_speedup(rounds_per_token, plain_tokens=0.0, kk=k):
        round_cost = rounds[kk] if kk in rounds else round_ms(dep, batch, kk, fit)   # a measured K past K_MAX
        return tpot_speedup(dep, batch, rounds_per_token, round_cost, fit, plain_tokens)

    taus = [acceptance_length(alpha, k) for _, _, alpha, *_ in mix]
    rounds_per_token = sum(share / tau for (_, share, *_), tau in zip(mix, taus))
    domains = [Domain(name=name, share=share, alpha=alpha, tau=tau, speedup=mix_speedup(1.0 / tau),
                      time_share=share / tau / rounds_per_token) for (name, share, alpha, *_), tau in zip(mix, taus)]
    naive_alpha = sum(d.share * d.alpha for d in domains)
    weak = min(domains, key=lambda d: d.tau)
    others = rounds_per_token - weak.share / weak.tau
    best_alpha = max(d.alpha for d in domains)
    # The mix's best single K over the Ks best_k tries, K = 0 (plain decoding) included, ties to the smaller.
    blend_at = {0: 1.0, **{kk: mix_speedup(sum(d.share / acceptance_length(d.alpha, kk) for d in domains), kk=kk)
                           for kk in rounds}}
    mix_k = max(blend_at, key=lambda kk: (blend_at[kk], -kk))
    blended, naive = mix_speedup(rounds_per_token), mix_speedup(1.0 / acceptance_length(naive_alpha, k))
    return Blend(k=k, concurrency=batch, eps=eps, prefill_share=q, domains=domains, naive_alpha=naive_alpha,
                 naive_speedup=naive, blended_speedup=blended, naive_error=naive / blended - 1.0, weak=weak.name,
                 # What-ifs for the weak domain: decoded without speculation (1 plain step a token),
                 # or given a head as good as the best domain's.
                 routed_speedup=mix_speedup(others, weak.share),
                 trained_speedup=mix_speedup(others + weak.share / acceptance_length(best_alpha, k)),
                 trained_alpha=best_alpha, best_k=mix_k, best_k_speedup=blend_at[mix_k])


def mix_domains(mix, output_tokens):
    """Traffic-mix rows -> (share of requests, alpha, output tokens); a token share over a length is a request share.

    >>> mix_domains((("chat", 0.5, 0.7, 300), ("code", 0.5, 0.4, 100)), 1024)
    ((0.25, 0.7, 300), (0.75, 0.4, 100))
    """
    lengths = [row[3] if len(row) > 3 else output_tokens for row in mix]
    rows = [(row[1] / tokens, row[2], tokens) for row, tokens in zip(mix, lengths)]
    total = sum(r for r, _, _ in rows)
    return tuple((r / total, alpha, tokens) for r, alpha, tokens in rows)


@dataclass(frozen=True)
class MixTail:
    """TPOT over a traffic mix's simulated requests, each domain's around its own alpha (mix_tail)."""
    request_shares: dict     #: {domain: share of requests}
    tau: float               #: tau the batch sees over the mix's requests
    speedup_mc: float        #: speedup over the simulated requests
    tpot_plain_p99_ms: float   #: P99 TPOT over requests, plain
    tpot_spec_p99_ms: float  #: P99 TPOT with speculation
    tpot_spec_mean_ms: float   #: mean TPOT with speculation
    tpot_plain_mean_ms: float  #: mean TPOT, plain
    tpot_p99_change: float   #: P99 TPOT with speculation over plain, minus 1
    slow_alpha: float        #: mean alpha of the requests at or above P99 TPOT
    slow_domains: dict       #: {domain: share of those requests}


@dataclass(frozen=True)
class Mix(MixTail, Blend):
    """The traffic mix at the plan's K and batch: the Blend fields, then the MixTail fields (dataclasses gather the
    bases' fields from the last base up), then whether it is the example mix and the blend's interval."""
    assumed: bool            #: whether the mix is TRAFFIC_MIX's example, not the user's --mix
    blended_speedup_interval: list = None   #: [low, high] of blended_speedup at INTERVAL_LEVEL


def mix_tail(mix, dep, k, batch, decode, fit=FIT):
    """TPOT over the mix's requests at B: each domain's requests around its own alpha."""
    domains = mix_domains(mix, dep.output_tokens)
    dec = decode(domains, k)
    plain_ms = plain_step_ms(dep, batch, fit)
    spec_ms = (1.0 + eps_seen(eps_decode(dep, batch, k, fit), dec.tau, dep, batch, fit)) * plain_ms
    lat = cell_latency(dec, plain_ms, spec_ms, batch)
    return MixTail(request_shares={row[0]: d[0] for row, d in zip(mix, domains)}, tau=dec.tau,
                   speedup_mc=lat.speedup_mc, tpot_plain_p99_ms=lat.tpot_plain_p99_ms,
                   tpot_spec_p99_ms=lat.tpot_spec_p99_ms, tpot_spec_mean_ms=lat.tpot_spec_mean_ms,
                   tpot_plain_mean_ms=lat.tpot_plain_mean_ms,
                   tpot_p99_change=lat.tpot_spec_p99_ms / lat.tpot_plain_p99_ms - 1.0, slow_alpha=dec.slow_alpha,
                   slow_domains={row[0]: share for row, share in zip(mix, dec.slow_domains)})


def mix_result(mix, dep, k, batch, decode, fit=FIT, assumed=False):
    """The traffic mix at the plan's K: the closed-form blend and the simulated requests' tail; assumed: whether
    the mix is TRAFFIC_MIX's example."""
    return Mix(**fields_of(traffic_blend(mix, dep, k, batch, fit)), **fields_of(mix_tail(mix, dep, k, batch, decode, fit)),
               assumed=assumed)
