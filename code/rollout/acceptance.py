"""The lesson's mathematics: tau and the three meanings of alpha, the lesson's and the exact speedups, the
break-even in both units, one round's distribution and the decode loop (draft, verify, accept).

Symbols: a (alpha), per-token acceptance, P(draft i accepted | drafts before it accepted); K, draft length;
tau, tokens a round emits, bonus token included; r, vLLM's acceptance rate (accepted / drafted); eps, a
round's extra cost over one plain target step. Leviathan et al. 2023, arXiv 2211.17192.
"""
from __future__ import annotations


# ---------------------------------------------------------------- acceptance mathematics

def acceptance_length(alpha, k):
    """tau = 1 + a + a^2 + ... + a^K (Leviathan et al., eq. 1).

    >>> round(acceptance_length(0.7, 5), 3)
    2.941
    >>> acceptance_length(1.0, 5), acceptance_length(0.0, 5)
    (6.0, 1.0)
    """
    if alpha == 1.0:
        return k + 1.0
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def acceptance_rate(alpha, k):
    """r = (tau - 1) / K: the share of drafted tokens that are accepted.

    >>> round(acceptance_rate(0.7, 5), 3), acceptance_rate(1.0, 3)
    (0.388, 1.0)
    """
    return (acceptance_length(alpha, k) - 1.0) / k


def _increasing_root(f, target, lo=0.0, hi=1.0, steps=60):
    """x in [lo, hi] with f(x) = target, for f increasing (bisection)."""
    for _ in range(steps):
        mid = (lo + hi) / 2
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def alpha_from_length(tau, k):
    """Per-token alpha whose chain of K drafts gives acceptance length tau.

    >>> round(alpha_from_length(2.811, 3), 3)
    0.768
    """
    assert 1.0 <= tau <= k + 1.0
    return _increasing_root(lambda a: acceptance_length(a, k), tau)


def alpha_from_rate(rate, k):
    """Per-token alpha that vLLM's acceptance rate r at K stands for.

    >>> round(alpha_from_rate(0.55, 3), 3), round(alpha_from_rate(0.55, 5), 3)
    (0.73, 0.807)
    """
    return alpha_from_length(1.0 + k * rate, k)


def profile_length(profile, k):
    """tau for conditional per-position alphas: 1 + a0 + a0*a1 + ...; the last alpha repeats past the end.

    >>> round(profile_length([0.8, 0.5], 3), 6)   # 1 + 0.8 + 0.4 + 0.2
    2.4
    """
    tau, survive = 1.0, 1.0
    for i in range(k):
        survive *= profile[min(i, len(profile) - 1)]
        tau += survive
    return tau


def tau_for(acceptance, k):
    """tau for a per-token alpha, a list of conditional alphas by position, or a traffic mix's blend (anything with
    its own tau(k): priors.Mixture)."""
    if isinstance(acceptance, (list, tuple)):
        return profile_length(acceptance, k)
    if hasattr(acceptance, "tau"):
        return acceptance.tau(k)
    return acceptance_length(acceptance, k)


def lesson_speedup(alpha, k, eps):
    """The lesson's S = (1 + K*alpha) / (1 + eps): exact only if alpha is the rate r.

    >>> round(lesson_speedup(0.7, 5, 0.1), 2)
    4.09
    """
    return (1.0 + k * alpha) / (1.0 + eps)


def speedup(tau, eps):
    """S = tau / (1 + eps): tau tokens a round for a round of 1 + eps plain steps (Leviathan Thm 3.8 with K*c + 1
    written as 1 + eps). With eps_seen, what a closed-loop benchmark measures.

    >>> round(speedup(2.941, 0.1), 2), speedup(4.0, 0.0)
    (2.67, 4.0)
    """
    return tau / (1.0 + eps)


def exact_speedup(alpha, k, eps):
    """S = tau(alpha, K) / (1 + eps): the exact counterpart of the lesson's formula.

    >>> round(exact_speedup(0.7, 5, 0.1), 2), exact_speedup(1.0, 3, 0.0)
    (2.67, 4.0)
    """
    return speedup(acceptance_length(alpha, k), eps)


LESSON_RULE = 0.55   # the lesson's rule of thumb, "alpha >= 0.55", which names no unit
LESSON_SYMPTOM = (-0.25, 0.15)   # exercise 4's report: mean ITL -25%, P99 ITL +15%


def breakeven_rate(k, eps):
    """vLLM's acceptance rate at break-even, eps / K (tau = 1 + K*r); None when no rate below 1 pays.

    It is the lesson's break-even "alpha = eps / K": right for the rate, too low for the per-token alpha.
    >>> breakeven_rate(5, 0.15), breakeven_rate(3, 3.0)
    (0.03, None)
    """
    return round(eps / k, 12) if eps < k else None


def required_rate(k, eps, margin):
    """The acceptance rate a gate demands: break-even plus margin; None when that cannot be reached (above 1).

    >>> required_rate(5, 0.15, 0.1), required_rate(3, 2.9, 0.1)
    (0.13, None)
    """
    rate = breakeven_rate(k, eps)
    return None if rate is None or rate + margin > 1.0 else round(rate + margin, 12)


def exact_breakeven(k, eps):
    """Per-token alpha where tau(a, K) = 1 + eps; None when even a = 1 cannot pay.

    >>> round(exact_breakeven(5, 0.15), 4), exact_breakeven(3, 3.0)
    (0.1304, None)
    """
    if k <= eps:
        return None
    return _increasing_root(lambda a: acceptance_length(a, k), 1.0 + eps)


def round_distribution(alpha, k):
    """P(A = a) for a = 0..K: the drafts one round accepts. The target keeps each draft of the chain with
    probability alpha until the first rejection: P(A = a) = alpha^a (1 - alpha) below K, alpha^K at K.

    This is the one round process: decode_request draws from it draft by draft, round_moments gives its moments
    (the renewal shortcut of long requests, renewal_draw, runs on them), and round_mix averages it over requests
    (the ITL mixtures and the tail's per-token quantiles).
    >>> round_distribution(0.5, 2), round_distribution(1.0, 2), round_distribution(0.0, 2)
    ([0.5, 0.25, 0.25], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0])
    """
    probs, survive = [], 1.0
    for _ in range(k):
        probs.append(survive * (1.0 - alpha))
        survive *= alpha
    return probs + [survive]


def round_moments(alpha, k):
    """Tokens T = A + 1 one round delivers (round_distribution): (E[T] = tau, E[T^2], P(all K accepted)).

    P(T >= t) = a^(t-1) for t = 1..K+1, so E[T^2] = sum (2t - 1) a^(t-1), summed in closed form (a request's
    rounds need it once each: the sum over the distribution would cost K + 1 terms).
    >>> round_moments(0.5, 1), round_moments(1.0, 3), round_moments(0.0, 2)
    ((1.5, 2.5, 0.5), (4.0, 16.0, 1.0), (1.0, 1.0, 0.0))
    """
    if alpha >= 1.0:
        return k + 1.0, (k + 1.0) ** 2, 1.0
    full = alpha ** k
    top = full * alpha                                  # a^(K+1)
    tau = (1.0 - top) / (1.0 - alpha)
    weighted = (1.0 - (k + 2) * top + (k + 1) * top * alpha) / (1.0 - alpha) ** 2   # sum t a^(t-1)
    return tau, 2.0 * weighted - tau, full


# ---------------------------------------------------------------- the decode loop
# One request decodes round by round, the way gpt-fast's speculative_decode runs on a GPU,
# each round accepting A drafts with round_distribution's probabilities. The simulation over
# requests (simulation.run_requests) runs this loop as it is for requests of at most simulation.LOOP_TOKENS
# decode tokens; a longer one, most requests of a run, draws what the loop would return from
# its normal limit (renewal_draw: renewal theory on round_moments), and tests/test_simulation.py
# checks those draws, and the P99s built on them, against this loop.
ROUND_JITTER = 0.03   # relative s.d. of one round's duration (launch and kernel noise), lognormal; > 0
JITTER_MU = -ROUND_JITTER ** 2 / 2   # log-mean of a round's lognormal jitter: its mean is 1


def decode_request(alpha, k, tokens, rng):
    """Decode `tokens` tokens of one request with a chain of K drafts: (drafts accepted each round, time in rounds).

    Every round costs one draft and one verify pass whatever it accepts: the caller multiplies
    the time by round_ms. alpha = 1 gives K + 1 tokens a round, alpha = 0 one. run_requests runs
    it for requests of at most simulation.LOOP_TOKENS tokens (a few in a run: their lengths spread around
    the deployment's output_tokens) and draws longer ones from renewal_draw, which tests check against this loop.
    >>> import random
    >>> decode_request(1.0, 3, 10, random.Random(0))[0], decode_request(0.0, 3, 3, random.Random(0))[0]
    ([3, 3, 3], [0, 0, 0])
    """
    accepted_per_round, time_in_rounds, emitted = [], 0.0, 0
    while emitted < tokens:
        # 1. draft: the head proposes K tokens, one small forward pass each; all K are paid for,
        #    whatever the target makes of them.
        # 2. verify: one target pass scores the K drafts and the position after them. Draft and
        #    verify are one round, round_ms, varied a little by launches and kernels (jitter).
        time_in_rounds += rng.lognormvariate(JITTER_MU, ROUND_JITTER)
        #    Along the chain the target keeps each draft with probability alpha; the first
        #    rejection ends it, and the drafts after it are wasted.
        accepted = 0
        while accepted < k and rng.random() < alpha:
            accepted += 1
        # 3. accept: the A kept drafts and one token the verify pass sampled (the correction at
        #    the first rejection, or the bonus after K): A + 1 tokens and no second target pass.
        #    The lesson's two-pass model adds a plain step here when any sequence in the batch
        #    rejected. Tokens past the request's end are discarded, as max_tokens does.
        accepted_per_round.append(accepted)
        emitted += accepted + 1
    return accepted_per_round, time_in_rounds


def profile_from_lengths(lengths):
    """Conditional alphas by position from acceptance lengths measured at K = 1, 2, ..., n: position i accepts in
    tau_(i+1) - tau_i of rounds (1 + the shares reaching each position is tau), so its alpha given the one before
    is that share over the one before (vLLM's per-position counters are unconditional the same way). None if a share rises or leaves [0, 1].
    >>> [round(a, 4) for a in profile_from_lengths([1.8, 2.44, 2.952])]
    [0.8, 0.8, 0.8]
    >>> [round(a, 4) for a in profile_from_lengths([1.7, 2.0, 2.35])]   # 0.35 after 0.3: noise, read as 0.3
    [0.7, 0.4286, 1.0]
    """
    shares = [b - a for a, b in zip([1.0] + list(lengths), lengths)]
    slack = SWEEP_SLACK + 1e-9   # 2.35 - 2.0 is 0.35000000000000009 in floating point
    if any(not -slack <= x <= 1.0 + slack for x in shares) or any(b > a + slack for a, b in zip(shares, shares[1:])):
        return None
    shares = [min(1.0, max(0.0, x)) for x in shares]
    return [min(1.0, x / prev) if prev > 0 else 0.0 for x, prev in zip(shares, [1.0] + shares)]


# Separate benchmark runs at K = 1..n each carry their own noise: a position's share may come out this much above
# the one before it (or below 0) and be read as equal to it (as 0) rather than refused.
SWEEP_SLACK = 0.05
