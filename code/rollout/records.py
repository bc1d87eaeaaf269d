"""Records and text shared by every layer: field metadata for --json, the one domain error (UsageError), how a
value from a file is echoed, and the bounds on what is read and asked.
"""
from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import fields


# Results are frozen dataclasses whose fields carry a unit or a meaning (#: comments); --json shows them as they
# are (clean), leaving out the fields marked NOT_IN_JSON, and OPTIONAL ones while they are None.
NOT_IN_JSON = {"json": False}   # a field for the tables and the plan only
OPTIONAL = {"optional": True}   # a field --json shows only when it holds a value


def inline(record):
    """Metadata of a part (a record of type `record`) --json shows as the holder's own fields, in its place; a
    missing part shows its fields as null (less its OPTIONAL and shown_with ones), as a record of Nones would."""
    return {"inline": record}


def shown_with(name):
    """Metadata of a field --json shows only when the record's field `name` holds a value (None or not itself)."""
    return {"shown_with": name}


def fields_of(record):
    """A record's fields as keywords for another record that repeats them (shallow: values are not copied)."""
    return {f.name: getattr(record, f.name) for f in fields(record)}


def eps_label(eps_b1):
    return "auto" if eps_b1 == "auto" else f"{eps_b1:.2f}"


def fmt(value, spec, missing="-"):
    """Format a number, or show a dash for a value that does not exist."""
    return missing if value is None else format(value, spec)


def pct(x):
    return f"{x * 100:+.0f}%"


def k_words(k):
    """A K for a sentence: 0 is speculation off."""
    return "0 (speculation off)" if k == 0 else str(k)


def pct1(x):
    return f"{x * 100:+.1f}%"


def wrap(text, width, indent):
    """Greedy word wrap (textwrap would do; this keeps the hanging indent explicit)."""
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = indent + word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line]


K_LIMIT = 32   # the largest K the flags and the readers accept: a sanity bound, not an engine's


# Bounds on what is read and asked: far past any real deployment, and small enough that nothing sized by
# them can hang or exhaust memory. A value past one is refused with the bound named.
SCRAPE_LIMIT_BYTES = 8 << 20    # a /metrics scrape, read a line at a time (a server's page is under 1 MiB): 3-4 s
SCRAPE_LINE_LIMIT = 40_000      # lines of one scrape (a server's page has a few thousand): 2 s to read
LINE_LIMIT_BYTES = 8 << 10      # one line of a scrape: a sample with its labels is well under 1 KiB
BENCH_LIMIT_BYTES = 16 << 20    # a `vllm bench serve` result (a few kB; --save-detailed adds per-request lists)
BENCH_TOTAL_BYTES = 64 << 20    # all the results one run reads (--compare, --calibrate, the gate's pair): 4 s
CONFIG_LIMIT_BYTES = 4 << 20    # a config.json (tens of kB); parsed JSON takes up to ~20 times its file
COUNT_LIMIT = 1e18              # a counter's value: a million years of a server making 30,000 tokens a second
LAYER_LIMIT = 1024              # layers in a config.json (the largest released models have 126)
SIZE_LIMIT = 1 << 22            # any other size in a config.json: widths, heads, vocabulary
EXPERT_LIMIT = 1024             # routed experts in a config.json (the largest released MoE has 512); the routing
                                # skew's search and the busiest rank's count grow with them
EXPERTS_PER_TOKEN_LIMIT = 64    # experts a token routes to (released models route to 1-10): the busiest rank's count
                                # grows with them and the experts
CALIBRATION_FILE_LIMIT = 32     # --calibrate's files: each is left out and refitted (the plan asks for seven)
CONCURRENCY_LIMIT = 100_000     # a batch size or a benchmark's concurrency
TOKENS_LIMIT = 10_000_000       # a prompt, output or context length (Llama 4 Scout's context is 10M tokens)
TP_LIMIT = 1024                 # GPUs in one tensor-parallel group
EPS_LIMIT = 100.0               # a given verify overhead: a round as long as 101 plain steps
GRID_PAIR_LIMIT = 200           # (acceptance, K) pairs in one run's grid, each simulated: 1 to 15 s on 2 cores
GRID_WORK_LIMIT = 300           # the same pairs weighted by their K (1 + (K/8)^2 each: a long draft simulates
                                # longer), so 200 pairs at K 1-5 fit and 17 at K = 32 (bench/worst_inputs.py)
GRID_CELL_LIMIT = 5_000         # cells in one run's grid (pairs x overheads x concurrencies): about 2 s too
GPU_RANGES = dict(memory_gib=(1, 100_000), bandwidth_tbs=(0.01, 1_000), tflops=(1, 1_000_000))   # GiB, TB/s, TFLOP/s


class UsageError(ValueError):
    """Bad input, a flag or a file: the message names it, what it allows and what it got."""


def shown(value, width=60):
    """A value from a file, as an error message echoes it: its repr, cut to a width."""
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def same_model(a, b):
    """Whether two model names from different files name the same model (case, spaces and a trailing / aside)."""
    return str(a).strip().rstrip("/").lower() == str(b).strip().rstrip("/").lower()


def finite_number(value):
    """True for an int or float that is finite (JSON's NaN and Infinity, null and strings are not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def percentile(values, q):
    """The q-quantile of sorted values, interpolated linearly (numpy's default, which vllm bench uses).

    >>> percentile([1.0, 2.0, 3.0, 5.0], 0.5), percentile([1.0, 2.0, 3.0, 5.0], 1.0)
    (2.5, 5.0)
    """
    at = q * (len(values) - 1)
    i = int(at)
    if i + 1 >= len(values):
        return values[-1]
    return values[i] + (at - i) * (values[i + 1] - values[i])


UNPRINTABLE = {"Cc", "Cf", "Cs", "Zl", "Zp"}   # Unicode categories: controls (C0, C1, NEL), format characters
                                              # (bidi overrides), surrogates (bytes that are not UTF-8), line breaks


STANDARD_OUTPUT = "-"   # --out -: the plan to standard output, as - means by convention, its charts not written


ASCII_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f]")   # ASCII's control characters (category Cc), less "\n"


def printable(text):
    """text with any control, format or line-separator character but the newline shown as its escape: names and
    labels read from files reach the tables, the plan and error lines, and must not drive a terminal. ASCII text
    without a control character but the newline (nearly every report) is returned as it is: its other characters
    are all printable."""
    if text.isascii() and not ASCII_CONTROL.search(text):
        return text
    return "".join(c if c == "\n" or unicodedata.category(c) not in UNPRINTABLE else ascii(c)[1:-1] for c in text)


# The terms of the time your benchmark runs can tell apart, each a factor own_<term> in Fit (1: the published
# fit): what a closed-loop run at another concurrency, K or length moves differently from the rest.
OWN_TERMS = dict(
    own_pass="a target pass's fixed cost",             # launches, scheduler, sampler, per-layer fixed costs
    own_weights="the weight read",
    own_context="the context's cost per sequence",     # KV read and attention
    own_token="the cost per token",                    # compute and the engine's cost per token
    own_prefill="the prefill share",                   # the prompts a closed-loop step carries
    own_round="a round's bookkeeping",
    own_verify="the verify pass's extra tokens",       # what they add to a plain step
    own_draft="the draft steps")
