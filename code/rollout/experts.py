"""Which experts a pass of a mixture-of-experts layer reads: the distinct experts its tokens touch under a router's
measured skew, and under expert parallelism the busiest GPU's share, which the layer waits for.
"""
from __future__ import annotations

import functools
import itertools
import math


# Routing skew. A router trained to balance its load still sends more tokens to some experts
# than to others, and a batch's tokens then touch fewer distinct experts than uniform routing
# would have them touch. Modelled as a power law over the experts' popularity ranks (expert i
# of E drawn with weight (i + 1)^-s, each token taking k distinct ones), its exponent s set by
# a measured ratio of the hottest expert's load to the mean load (routing_exponent); s = 0 is
# uniform routing, E (1 - (1 - k/E)^n). Measured: DeepSeek-R1 served by TensorRT-LLM on 32
# GB200 (expert parallel, no load balancer), the hottest expert slot of a layer carries 1 +
# 10.948 times the mean slot's tokens, per layer and iteration (NVIDIA/TensorRT-LLM
# docs/source/blogs/tech_blog/blog4_Scaling_Expert_Parallelism_in_TensorRT-LLM.md, Table 1).
# Kimi-K2 is DeepSeek-V3's architecture and router kind (sigmoid gates with a balancing bias)
# with 384 experts: it borrows the ratio. No source here measures Qwen3's, gpt-oss's or Llama
# 4's routing: they route uniformly, the upper end of their expert reads.
HOT_EXPERT_LOAD = {"deepseek": 1 + 10.948}
ROUTING_OF_MODEL_TYPE = {"deepseek_v3": "deepseek", "kimi_k2": "deepseek"}   # config.json model_type -> routing


@functools.lru_cache(maxsize=256)
def expert_shares(experts, k, exponent):
    """Each expert's chance to be among a token's k, under power-law popularity (weight (i + 1)^-exponent),
    hottest first; summing to k. A share cannot pass 1 (a token takes an expert once): the excess of a capped
    expert goes to the others in proportion. A tuple, computed once per (E, k, exponent).
    >>> [round(q, 4) for q in expert_shares(4, 2, 0.0)], round(sum(expert_shares(256, 8, 0.6)), 9)
    ([0.5, 0.5, 0.5, 0.5], 8.0)
    """
    weights = [(i + 1) ** -exponent for i in range(experts)]
    capped, shares = 0, []
    while True:                     # the hottest are capped first: weights fall with i
        rest = sum(weights[capped:])
        shares = [1.0] * capped + [(k - capped) * w / rest for w in weights[capped:]]
        if capped == experts or shares[capped] <= 1.0:
            return tuple(shares)
        capped += 1


@functools.lru_cache(maxsize=64)
def routing_exponent(experts, k, hot_load):
    """The power-law exponent whose hottest expert carries `hot_load` times the mean expert's load (mean: k/E a
    token), by bisection; 0 for a load of 1 or less, and the exponent at which the hottest share reaches 1 for a
    load of E/k or more (a token takes an expert at most once)."""
    if hot_load <= 1.0:
        return 0.0
    low, high = 0.0, 8.0
    for _ in range(60):
        mid = (low + high) / 2
        if expert_shares(experts, k, mid)[0] * experts / k < hot_load:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def expected_experts(experts, k, tokens, exponent=0.0):
    """Distinct experts that `tokens` routings of k of E experts touch: with uniform routing (exponent 0)
    E (1 - (1 - k/E)^n), under skew the sum over experts of 1 - (1 - q_i)^n (expert_shares q).

    Each token's picks are drawn independently of the other tokens'; a sequence's consecutive tokens, as a verify
    pass carries them, reuse experts and touch fewer (independent_tokens says how many independent tokens they count
    as). A dense model has none.
    >>> round(expected_experts(128, 8, 1), 3), round(expected_experts(128, 8, 32), 1), expected_experts(0, 0, 5)
    (8.0, 111.8, 0.0)
    """
    if experts == 0 or tokens <= 0:
        return 0.0
    if exponent == 0.0:
        return experts * (1.0 - (1.0 - k / experts) ** tokens)
    return sum(1.0 - (1.0 - q) ** tokens for q in expert_shares(experts, k, exponent))


def independent_tokens(batch, tokens_per_seq, affinity):
    """The independent routings that touch as many distinct experts as `batch` sequences' tokens_per_seq
    consecutive tokens each: a sequence's next token keeps a share `affinity` of its previous token's experts and
    routes the rest afresh, so its T tokens count as 1 + (T - 1)(1 - affinity) independent ones (Fit.expert_affinity,
    0: independent); sequences route independently of one another. A tree's verify tokens are siblings as well as
    a chain's successors: they share their sequence's prefix, and are counted as a chain of as many.
    >>> independent_tokens(4, 1, 0.4), independent_tokens(4, 4, 0.0), round(independent_tokens(2, 4, 0.4), 6)
    (4, 16, 5.6)
    """
    if tokens_per_seq <= 1 or not affinity:
        return batch * tokens_per_seq
    return batch * (1.0 + (tokens_per_seq - 1) * (1.0 - affinity))


def touched_experts(net, dep, tokens):
    """Expert reads of one MoE layer of a pass, in experts the replica reads at its slowest GPU's pace.

    Split by tensor parallelism (ep 1), every GPU reads its share of each touched expert: the
    distinct experts (expected_experts). Expert parallel (ep = tp), each GPU reads the whole
    experts it holds that the pass touches, and the layer waits for the busiest GPU:
    ep x busiest_rank_experts.
    """
    if dep.ep == 1 or not net.experts:   # a dense network (an EAGLE head of a MoE target) reads no experts
        return expected_experts(net.experts, net.experts_per_token, tokens, net.routing_exponent)
    return dep.ep * busiest_at(net.experts, net.experts_per_token, tokens, net.routing_exponent, dep.ep)


BUSIEST_GRID = 1.02   # past 64 tokens, busiest_rank_experts is counted on a 2% geometric grid of token counts and
                      # interpolated: the count is smooth and concave in tokens (off by under 2e-5 for DeepSeek,
                      # Qwen3 and Kimi shapes at 65-4,096 tokens), and a plan's passes, each a new token count
                      # (B (K + 1) verify tokens, prompt chunks), then share a few hundred counts: a run of thousands
                      # of distinct passes on 1,024 GPUs takes seconds, not minutes


def busiest_at(experts, k, tokens, exponent, ranks):
    """busiest_rank_experts, counted exactly up to 64 tokens, else interpolated between the two grid points around
    tokens."""
    if tokens <= 64:
        return busiest_rank_experts(experts, k, tokens, exponent, ranks)
    step = math.log(tokens) / math.log(BUSIEST_GRID)
    low = math.floor(step)
    if low == step:
        return busiest_rank_experts(experts, k, BUSIEST_GRID ** low, exponent, ranks)
    t0, t1 = BUSIEST_GRID ** low, BUSIEST_GRID ** (low + 1)
    b0, b1 = (busiest_rank_experts(experts, k, t, exponent, ranks) for t in (t0, t1))
    return b0 + (b1 - b0) * (tokens - t0) / (t1 - t0)


@functools.lru_cache(maxsize=65536)
def busiest_rank_experts(experts, k, tokens, exponent, ranks):
    """Expected touched experts on the busiest of `ranks` GPUs holding experts / ranks whole experts each.

    Experts are dealt to the GPUs hottest first, round-robin (the placement a load balancer
    makes without copies), so what is left is the spread of one pass's picks. Expert i is
    touched with chance t_i = 1 - (1 - q_i)^n (expert_shares q), taken independently of the
    others; a GPU's count is then a sum of Bernoulli draws whose distribution is counted
    exactly, and E[max] = sum over x of P(max > x) = 1 - prod over GPUs of P(count <= x).
    Without a balancer hot experts can share a GPU and its load is worse: TensorRT-LLM
    measured DeepSeek-R1's busiest GPU at 2.56x the mean at EP 32 with none, 1.11x with
    EPLB (tech blog 4, Table 1).
    >>> round(busiest_rank_experts(8, 2, 64, 0.0, 1), 6) == round(expected_experts(8, 2, 64), 6)
    True
    """
    if tokens == 1 and not exponent:   # one token under uniform routing: its k picks' spread counted exactly
        return one_token_busiest(experts, k, ranks)
    shares = expert_shares(experts, k, exponent)   # k / E each for exponent 0
    touched = [1.0 - (1.0 - q) ** tokens for q in shares] if tokens > 0 else [0.0] * experts
    below = [1.0] * (experts // ranks + 1)          # prod over GPUs of P(count <= x), x = 0 .. experts/ranks
    for rank in range(ranks):
        pmf = [1.0]
        for t in touched[rank::ranks]:
            pmf = [a * (1.0 - t) + b * t for a, b in zip(pmf + [0.0], [0.0] + pmf)]
        cdf = list(itertools.accumulate(pmf))
        below = [a * min(1.0, c) for a, c in zip(below, cdf)]
    return sum(1.0 - b for b in below)


def one_token_busiest(experts, k, ranks):
    """Expected picks on the busiest GPU when one token takes k distinct of E experts uniformly, E / ranks on each
    GPU: P(max <= x) is the share of the C(E, k) choices that put at most x on every GPU (a product of
    polynomials, coefficient of t^k). Independent draws (busiest_rank_experts) miss this most for few picks:
    one pick of Llama 4's 16 experts on 4 GPUs is on one GPU for certain, not on 0.73 of one.
    >>> one_token_busiest(16, 1, 4), round(one_token_busiest(256, 8, 8), 3)
    (1.0, 2.564)
    """
    per = experts // ranks
    expected = 0.0
    for x in range(k):
        row = [math.comb(per, c) for c in range(min(x, per) + 1)]   # one GPU: ways to take c <= x of its experts
        ways = power_upto(row, ranks, k)                            # every GPU: the product, by squaring
        expected += 1.0 - (ways[k] if k < len(ways) else 0) / math.comb(experts, k)
    return expected


def power_upto(poly, n, degree):
    """The coefficients of poly ** n up to `degree` (exact integers), by repeated squaring: log n products."""
    def times(a, b):
        return [sum(a[j] * b[i - j] for j in range(max(0, i - len(b) + 1), min(i, len(a) - 1) + 1))
                for i in range(min(degree, len(a) + len(b) - 2) + 1)]
    result, base = [1], poly[:degree + 1]
    while n:
        if n & 1:
            result = times(result, base)
        n >>= 1
        if n:
            base = times(base, base)
    return result


def model_routing_exponent(m):
    """The routing exponent of model shape m: from its family's measured hottest-expert load, else 0 (uniform)."""
    family = m.get("routing")
    if not m.get("experts") or family not in HOT_EXPERT_LOAD:
        return 0.0
    return routing_exponent(m["experts"], m["experts_per_token"], HOT_EXPERT_LOAD[family])
