"""Settings derived for the model asked about: the weights dtype its checkpoint ships in, the KV cache's dtype, and
the smallest tensor-parallel degree that holds the plan's batch, each with the reason the deployment lines print.

A run about another model than the one main.py's MODEL_SETTINGS row describes must not inherit that row: Llama 3.3
70B's TP 4 and fp8 are not Qwen3-32B's. A value given (a flag, or the model's own row) always wins; a value not
given is derived here, by the one memory function the cost model uses everywhere (deployment.max_concurrency).
"""
from __future__ import annotations

from dataclasses import dataclass

from .deployment import max_concurrency

NODE_GPUS = 8   # GPUs one node holds: HGX and DGX H100, H200 and B200, and AMD's MI300X platform carry eight, each GPU
                # linked to the others (a tensor-parallel group beyond a node crosses the network; not modelled)
KV_DTYPE = "bf16"   # the KV cache's dtype when none is given: the engines' default ("auto": the model's dtype, which an
                    # fp8 checkpoint keeps at bf16 for activations: vLLM's --kv-cache-dtype auto, SGLang's likewise)


@dataclass(frozen=True)
class Setting:
    """Where one deployment setting came from, as the deployment lines and --json say it."""
    setting: str             #: "tp", "weights_dtype" or "kv_dtype"
    value: object            #: its value
    source: str              #: "given" (a flag), "model settings" (main.py's row for this model) or "derived"
    why: str                 #: where it came from, in words

    @property
    def what(self):
        """The setting in words: "TP 2", "bf16 weights", "fp8 KV cache"."""
        return {"tp": f"TP {self.value}", "weights_dtype": f"{self.value} weights"}.get(self.setting,
                                                                                      f"{self.value} KV cache")

    @property
    def flag(self):
        return "--" + self.setting.replace("_", "-")


def settings_sentence(settings):
    """The deployment line on where TP and the dtypes came from, settings of one source together.

    >>> settings_sentence([Setting("tp", 4, "model settings", "the row"), Setting("kv_dtype", "bf16", "model settings",
    ...                    "the row")])
    'Settings: TP 4 and bf16 KV cache from the row (--tp and --kv-dtype set them).'
    """
    groups = {}
    for x in settings:
        groups.setdefault(x.why, []).append(x)
    def joined(words):
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    parts = [joined([x.what for x in group]) + (", given" if why == "given" else ", " + why if why.startswith("derived")
                                                else " from " + why) for why, group in groups.items()]
    flags = [x.flag for x in settings if x.source != "given"]
    return ("Settings: " + "; ".join(parts) + (f" ({joined(flags)} {'sets it' if len(flags) == 1 else 'set them'})"
                                               if flags else "") + ".")


def shipped_dtype(shape):
    """The dtype a checkpoint ships its weights in: the catalog's (or config.json's quantization_config) "checkpoint",
    else bf16, as every bf16/fp16 checkpoint is served (2 bytes a weight)."""
    return shape.get("checkpoint", "bf16")


def tp_candidates(shape, draft_shape=None, most=NODE_GPUS):
    """The tensor-parallel degrees up to `most` that split the attention heads evenly and split or copy the KV heads
    evenly (vLLM's attention layers assert one), a draft model's heads too.

    >>> tp_candidates(dict(heads=64, kv_heads=8)), tp_candidates(dict(heads=40, kv_heads=8))
    ([1, 2, 4, 8], [1, 2, 4, 8])
    """
    def splits(m, tp):
        return m["heads"] % tp == 0 and (m.get("mla") or m["kv_heads"] % tp == 0 or tp % m["kv_heads"] == 0)
    return [tp for tp in range(1, most + 1) if splits(shape, tp) and (draft_shape is None or splits(draft_shape, tp))]


def smallest_tp(build, candidates, batch):
    """(tp, deployment, fits): the smallest candidate whose deployment (build(tp)) holds `batch` sequences at its mean
    context beside the weights; where none does, the one that holds the most, the largest on a tie (fits False)."""
    best = None
    for tp in candidates:
        dep = build(tp)
        held = max_concurrency(dep)
        if held >= batch:
            return tp, dep, True
        if best is None or held >= best[2]:
            best = (tp, dep, held)
    return (best[0], best[1], False) if best else (None, None, False)


def beyond_node(build, batch, most=64):
    """The smallest power-of-two TP past a node (16, 32, ...) whose deployment holds one sequence, and whether it holds
    `batch`: what a user whose model does not fit one node can give --tp (pipeline stages are not modelled); None where
    none up to `most` does."""
    tp = NODE_GPUS * 2
    while tp <= most:
        dep = build(tp)
        if dep is not None and max_concurrency(dep) >= 1:
            return tp, max_concurrency(dep) >= batch
        tp *= 2
    return None


def plural(n, word):
    """n and its noun: "1 sequence", "256 sequences"."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def tp_reason(tp, batch, context, gpu, fits, held, past=None, cut=""):
    """Why TP is what it is, when derived. past: (TP past a node that would hold a sequence, and whether the batch)
    (beyond_node); cut: why the candidates stop short of a node, in words ("" where they do not).

    >>> tp_reason(2, 256, 1536, "h200", True, 300)
    "derived: the smallest that holds the plan's 256 sequences of 1,536 tokens on h200"
    >>> tp_reason(8, 256, 1536, "h100-sxm", False, 0, past=(16, True)).split("; ")[1]
    "--tp 16 across nodes would hold the plan's batch"
    """
    if fits:
        return f"derived: the smallest that holds the plan's {plural(batch, 'sequence')} of {context:,} tokens on {gpu}"
    where = f"{tp} x {gpu}" + (", a node," if not cut else f" ({cut})")
    if held < 1:
        words = f"derived: even {where} does not hold the weights and one sequence"
    else:
        words = (f"derived: the most {tp} x {gpu} holds{' ' + cut if cut else ''}, {plural(held, 'sequence')} of "
                 f"{context:,} tokens, short of the plan's {batch:,}")
    if past is not None:
        words += (f"; --tp {past[0]} across nodes would hold " + ("the plan's batch" if past[1] else "a sequence"))
    return words
