"""Reading measurements: vLLM's, SGLang's and TensorRT-LLM's /metrics scrapes and `vllm bench serve` result files,
every input bounded as it is read (a file, a pipe, standard input). Files are checked here, at the boundary; a bad one
raises UsageError. A config.json is read by hfconfig.py, on this module's bounded reads.
"""
from __future__ import annotations

import io
import json
import math
import os
import re
import select
import stat
import time
from dataclasses import dataclass, field, replace

from .records import (
    BENCH_LIMIT_BYTES, CALIBRATION_FILE_LIMIT, CONCURRENCY_LIMIT, COUNT_LIMIT, finite_number, K_LIMIT,
    LINE_LIMIT_BYTES, NOT_IN_JSON, SCRAPE_LIMIT_BYTES, SCRAPE_LINE_LIMIT, shown, TOKENS_LIMIT, UsageError,
)
from .acceptance import alpha_from_length, profile_length
from .workload import PREDICTION_KEY


# vLLM's Prometheus counters, SGLang's gauges and `vllm bench serve --save-result` JSON
# (vllm/v1/spec_decode/metrics.py, vllm/benchmarks/serve.py). Files are checked here, at the boundary; a bad one raises
# UsageError. What real files look like, by vLLM version: V0 (removed in v0.10.0) had
# draft and accepted token counters and two gauges; V1 from PR #15151 the two counters;
# from PR #16665 (~v0.8.5) also num_drafts and accepted tokens per position; from PR
# #24049 an `engine` label per data-parallel engine; newer builds also drafted tokens per
# position. prometheus_client writes X_total beside X_created, in exponent notation.
COUNT_SLACK = 1e-4   # relative slack between counts that must agree: exponent notation keeps six digits
                     # (1.7644e+09), and counters scraped a moment apart can drift a little further
K_SHORTFALL = 0.02   # draft tokens a round may fall short of K on average and K still count as fixed: a
                     # request's last rounds near its length limit, or draft tokens a grammar rejected
                     # (vLLM's num_invalid_spec_tokens), draft fewer; at most that share of drafts missed a
                     # position, so its true rate is at most K_SHORTFALL / (1 - K_SHORTFALL) above the shown

@dataclass(frozen=True)
class Measurement:
    """Acceptance as measured (measured_acceptance, from /metrics counters or gauges, a benchmark file's spec_decode_*
    keys, or a length or rate typed on the command line): the three meanings of alpha (acceptance.py)."""
    k: int                   #: the K in use (the highest position counted, plus one), or the most a round drafts
    k_mean: float            #: draft tokens per draft: K, or less when K varied
    varying_k: bool          #: whether rounds drafted different lengths (a K-by-batch table, n-gram misses)
    drafts: float            #: drafts (rounds) counted; None when the source holds no counts
    acceptance_rate: float   #: accepted over drafted tokens (vLLM's rate r)
    acceptance_length: float   #: tau: tokens a round delivers, bonus included
    per_position_rates: list   #: accepted at position i over drafts reaching it
    per_position_alpha: list   #: conditional alpha at each position (empty when not clean)
    alpha: float             #: the per-token alpha (a chain of K giving tau, or position 0's rate when K varied)
    profile: list = field(metadata=NOT_IN_JSON)   #: conditional alphas by position best K runs on
    source: str              #: where it was read, as flags and paths
    notes: list              #: what the reading noticed, in words


# Bounds on a calibration run (calibration.py's fit): here, below calibration, because the readers and trust use
# them too.
RUN_NOISE = 0.01      # least run-to-run spread of a closed-loop run's mean TPOT (fraction): ten prompts a slot
OWN_LENGTHS = 0.25    # runs one calibration fits may differ in mean prompt or output length by at most this


def decoding_batch(concurrency, output_tokens, tpot_ms, ttft_ms, completed):
    """Sequences a closed-loop run at max_concurrency C decodes on average, as its requests see it.

    A request holds its slot for its time to first token and then decodes: the share of a slot spent decoding is
    (O - 1) TPOT / (TTFT + (O - 1) TPOT) (Little's law). And the last C of N requests drain the batch, each seeing
    about C/2 on average: C (1 - C / 2N) over the requests.
    >>> decoding_batch(16, 101, 10.0, 0.0, 160), round(decoding_batch(64, 301, 20.0, 600.0, 1280), 3)
    (15.2, 56.727)
    """
    decoding = (output_tokens - 1) * tpot_ms
    share = decoding / (decoding + ttft_ms) if ttft_ms else 1.0
    drain = 1.0 - min(concurrency, completed) / (2.0 * completed)
    return max(1.0, concurrency * share * drain)


SGLANG_GAUGE_STEPS = 40   # decode steps SGLang's acceptance gauges average over (python/sglang/srt/metrics/collector.py)


SPEC_COUNTERS = {   # vllm/v1/spec_decode/metrics.py; the emitted-tokens counter is V0's (vllm/engine/metrics.py)
    "vllm:spec_decode_num_drafts_total": "drafts",
    "vllm:spec_decode_num_draft_tokens_total": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens_total": "accepted",
    "vllm:spec_decode_num_emitted_tokens_total": "emitted",
    # TensorRT-LLM's /prometheus/metrics (tensorrt_llm/metrics/collector.py): draft and accepted tokens summed over
    # its iteration stats; it counts no drafts (rounds), so --ks completes the measurement.
    "trtllm_spec_decode_num_draft_tokens_total": "draft_tokens",
    "trtllm_spec_decode_num_accepted_tokens_total": "accepted",
}
PER_POSITION_COUNTERS = {   # label position="i"
    "vllm:spec_decode_num_accepted_tokens_per_pos_total": "accepted",
    "vllm:spec_decode_num_draft_tokens_per_pos_total": "drafted",
}
SPEC_GAUGES = {
    "vllm:spec_decode_draft_acceptance_rate": "v0_rate",        # V0: accepted / draft tokens, a fraction
    "vllm:spec_decode_efficiency": "v0_efficiency",             # V0: emitted / the most a round could emit
    "sglang:spec_accept_length": "sglang_length",               # SGLang: tau over the last SGLANG_GAUGE_STEPS steps
    "sglang:spec_accept_rate": "sglang_rate",                   # (python/sglang/srt/metrics/collector.py)
}
# name{labels} value [timestamp] [# exemplar]: the Prometheus text format and OpenMetrics
# (whose timestamps are float seconds).
SAMPLE_LINE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?'
                         r'\s+(\S+)(?:\s+-?[0-9.]+(?:[eE][-+]?[0-9]+)?)?(?:\s+#.*)?$')
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
LABEL_SET = re.compile(r'\{\s*(?:[A-Za-z_][A-Za-z0-9_]*\s*=\s*"(?:[^"\\]|\\.)*"\s*(?:,\s*(?=[A-Za-z_}])|(?=\})))*\}')
MODEL_LIMIT = 1000   # models one scrape may hold speculative metrics for (a federated scrape of many servers)

@dataclass(frozen=True)
class Counters:
    """A scrape's speculative-decoding metrics for one model (read_metrics), or a window between two scrapes.
    Counts are sums over the other labels (data-parallel engines); None where the scrape has no such counter (a
    missing counter is not zero)."""
    drafts: float            #: drafts (rounds)
    draft_tokens: float      #: drafted tokens
    accepted: float          #: accepted draft tokens
    per_position: dict = field(default_factory=dict)   #: {position: accepted tokens}
    drafted_per_position: dict = field(default_factory=dict)   #: {position: drafted tokens}
    gauges: dict = field(default_factory=dict)   #: {SPEC_GAUGES value: mean over the label sets that report one, an
                                                 #: SGLang rank with no speculative step (0) left out}
    emitted: float = None    #: vLLM V0's emitted tokens
    engine: str = "vllm"     #: whose metrics: "vllm", or "trtllm" (SGLang's gauges tell themselves apart, is_sglang)


def one_average_draft(tau, k):
    """Counters of one average draft of K tokens: a measurement that gives tau at K but no counts
    (a gauge, a bench file's rate and length, a value typed on the command line)."""
    return Counters(drafts=1.0, draft_tokens=float(k), accepted=tau - 1.0)


ESCAPE = re.compile(r"\\(.)")


def label_values(labels):
    """{name: value} of a sample's labels, escapes undone (\\, \", \n)."""
    return {k: ESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), v) for k, v in LABEL.findall(labels or "")}


def too_large(flag, path, limit, hint=""):
    return UsageError(f"{flag}: {path} is larger than {limit >> 20} MiB{hint}: not a file this tool reads")


def open_input(path, flag, limit, hint=""):
    """An input file opened for reading bytes: a regular file, or a pipe (/dev/stdin, a process substitution).

    A folder, a device (/dev/zero would never end) or a file over `limit` bytes is refused before anything
    is read. A named pipe is opened without waiting for a writer (none: it reads as empty), and read as long as
    it sends (Input). A read that fails is refused in the flag's name, like an open that fails.
    """
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise UsageError(f"{flag}: {path} is a folder, not a file")
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode)):
            raise UsageError(f"{flag}: {path} is a device, not a file")
        if info.st_size > limit:
            raise too_large(flag, path, limit, hint)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        if stat.S_ISREG(info.st_mode):
            os.set_blocking(fd, True)
    except OSError as err:
        raise UsageError(f"{flag}: cannot read {path}: {err.strerror}") from None
    return io.BufferedReader(Input(fd, flag, path, pipe=not stat.S_ISREG(info.st_mode)))


PIPE_IDLE_LIMIT = 10.0   # seconds a pipe may send nothing before its input is refused: a writer that hangs
PIPE_TOTAL_LIMIT = 20.0  # seconds a pipe may take in all: a writer that trickles


class Input(io.RawIOBase):
    """An input file's bytes, read so that a failure is one line in the flag's name (UsageError), never an OSError
    that reads as the output's (an I/O error, /proc/self/mem), and a pipe that stops sending ends the run."""

    def __init__(self, fd, flag, path, pipe):
        super().__init__()
        self.fd, self.flag, self.path, self.pipe = fd, flag, path, pipe
        self.deadline = time.monotonic() + PIPE_TOTAL_LIMIT

    def readable(self):
        return True

    def readinto(self, buffer):
        try:
            while self.pipe:
                if time.monotonic() > self.deadline:
                    raise UsageError(f"{self.flag}: {self.path} is a pipe still sending after {PIPE_TOTAL_LIMIT:g} s: "
                                     "save the input to a file and pass that")
                ready, _, _ = select.select([self.fd], [], [], PIPE_IDLE_LIMIT)
                if not ready:
                    raise UsageError(f"{self.flag}: {self.path} is a pipe that sent nothing for "
                                     f"{PIPE_IDLE_LIMIT:g} s: save the input to a file and pass that")
                try:
                    data = os.read(self.fd, len(buffer))
                except BlockingIOError:   # woken, yet nothing to read: wait again
                    continue
                buffer[:len(data)] = data
                return len(data)
            return os.readv(self.fd, [buffer])
        except OSError as err:
            raise UsageError(f"{self.flag}: cannot read {self.path}: {err.strerror or err}") from None

    def close(self):
        if not self.closed:
            try:
                os.close(self.fd)
            except OSError:
                pass
        super().close()


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")   # PowerShell's `>` writes UTF-16 with its byte-order mark


def not_text(flag, path, where):
    return UsageError(f"{flag}: {path} is not a text file ({where})")


def bad_utf16(flag, path):
    return UsageError(f"{flag}: {path} starts as UTF-16 but does not decode: re-save it as UTF-8 "
                      "(PowerShell: Out-File -Encoding utf8)")


def text_lines(path, flag):
    """Yield (line number, text) one line at a time, never more than LINE_LIMIT_BYTES of one line nor
    SCRAPE_LINE_LIMIT lines: UTF-8 (a byte-order mark is dropped) or UTF-16 with its byte-order mark; binary is
    refused."""
    with open_input(path, flag, SCRAPE_LIMIT_BYTES) as file:
        utf16 = file.peek(2)[:2] in UTF16_BOMS
        text = io.TextIOWrapper(file, encoding="utf-16", newline=None) if utf16 else None
        number = size = 0
        while True:
            try:
                raw = text.readline(LINE_LIMIT_BYTES + 1) if utf16 else file.readline(LINE_LIMIT_BYTES + 1)
            except UnicodeError:
                raise bad_utf16(flag, path) from None
            if not raw:
                return
            number, size = number + 1, size + len(raw)
            if len(raw) > LINE_LIMIT_BYTES:
                raise UsageError(f"{flag}: {path}, line {number}, is longer than {LINE_LIMIT_BYTES >> 10} KiB: not a "
                                 "line of a /metrics scrape")
            if size > SCRAPE_LIMIT_BYTES:
                raise too_large(flag, path, SCRAPE_LIMIT_BYTES)
            if number > SCRAPE_LINE_LIMIT:
                raise UsageError(f"{flag}: {path} has more than {SCRAPE_LINE_LIMIT:,} lines: not one server's "
                                 "/metrics page")
            if utf16:
                yield number, raw
                continue
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if b"\0" in raw:
                raise not_text(flag, path, f"a NUL byte on line {number}")
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError:
                raise not_text(flag, path, f"not UTF-8 or UTF-16, line {number}") from None


def read_text(path, flag, limit, hint=""):
    """A whole input file as text, at most `limit` bytes, read in chunks (a pipe cannot seek): UTF-8 (a
    byte-order mark is dropped) or UTF-16 with its byte-order mark; a NUL byte outside UTF-16 stops it at once."""
    chunks, size = [], 0
    with open_input(path, flag, limit, hint) as file:
        while chunk := file.read(1 << 20):
            size += len(chunk)
            if size > limit:
                raise too_large(flag, path, limit, hint)
            if b"\0" in chunk and (chunks[0] if chunks else chunk)[:2] not in UTF16_BOMS:
                raise not_text(flag, path, "a NUL byte; UTF-16 without a byte-order mark? re-save it as UTF-8")
            chunks.append(chunk)
    raw = b"".join(chunks)
    if raw[:2] in UTF16_BOMS:
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            raise bad_utf16(flag, path) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise not_text(flag, path, f"not UTF-8 or UTF-16, line {line}") from None


def parse_json(text, flag, path):
    """JSON from text; UsageError naming the file when it is not JSON, nests too deep or holds a huge number."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"{flag}: {path} is not JSON ({err.msg}, line {err.lineno})") from None
    except RecursionError:
        raise UsageError(f"{flag}: {path} is JSON nested too deeply to be a result or a config") from None
    except ValueError as err:   # an integer of more digits than Python converts
        raise UsageError(f"{flag}: {path} is not JSON this tool reads ({err})") from None


# A sample's value as the exposition format writes it: ASCII digits (float() would also take "1_000" or Arabic
# digits), exponent notation, +Inf, -Inf, NaN.
PROM_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?Inf|NaN", re.IGNORECASE)


def sample_value(text, flag, path, number, counter=True):
    """A sample's value: a number, and for a counter a finite one from 0 to COUNT_LIMIT."""
    if not PROM_NUMBER.fullmatch(text):
        raise UsageError(f"{flag}: {path}, line {number}: counter value {shown(text)} is not a number")
    value = float(text)
    if counter and not 0 <= value <= COUNT_LIMIT:
        raise UsageError(f"{flag}: {path}, line {number}: a counter must be finite, >= 0 and at most {COUNT_LIMIT:g} "
                         f"(the limit of a real count); got {text!r}")
    return value


def read_metrics(path, flag):
    """{model_name: Counters} of a /metrics scrape's speculative-decoding metrics, in one streaming pass.

    Counters are summed over every other label (data-parallel engines); models are kept
    apart, since a router's or a federated scrape mixes servers.
    """
    models, samples, lines, sglang_seen, eof, seen = {}, 0, 0, False, False, set()

    def unreadable(number, line):   # before any sample: not a scrape at all; after: a broken one
        if samples == 0:
            return UsageError(f"{flag}: {path} is not the Prometheus exposition format (line {number}: "
                              f"{line[:40]!r}); save the page itself: curl -s http://HOST:PORT/metrics > FILE")
        return UsageError(f"{flag}: {path}, line {number}, is truncated or malformed: {line[:60]!r}")

    for number, line in text_lines(path, flag):
        lines += 1
        line = line.strip()
        if eof and line:
            raise UsageError(f"{flag}: {path}, line {number}: text after '# EOF': two scrapes in one file? Save each "
                             "scrape to its own file")
        if line == "# EOF":          # OpenMetrics ends here
            eof = True
        if not line or line.startswith("#"):
            continue
        match = SAMPLE_LINE.match(line)
        if not match:
            raise unreadable(number, line)
        name, labels, text = match.groups()
        if name not in SPEC_COUNTERS and name not in PER_POSITION_COUNTERS and name not in SPEC_GAUGES:
            try:
                float(text)
            except ValueError:   # a header such as the web UI table's "Element Value"
                raise unreadable(number, line) from None
        samples += 1
        sglang_seen = sglang_seen or name.startswith("sglang:")
        kind = SPEC_COUNTERS.get(name) or PER_POSITION_COUNTERS.get(name) or SPEC_GAUGES.get(name)
        if kind is None:
            continue
        if labels and (not LABEL_SET.fullmatch(labels) or len(LABEL.findall(labels)) != len(label_values(labels))):
            raise UsageError(f"{flag}: {path}, line {number}: {name} has a malformed label set {shown(labels)} "
                             '(name="value" pairs, each name once)')
        series = (name, tuple(sorted(label_values(labels).items())))   # one series however its labels are ordered
        if series in seen:
            raise UsageError(f"{flag}: {path}, line {number}: {name}{shown(labels or '')} appears twice: two scrapes "
                             "in one file (curl >>)? Save each scrape to its own file")
        seen.add(series)
        label = dict(series[1])
        if label.get("model_name", "") not in models and len(models) >= MODEL_LIMIT:
            raise UsageError(f"{flag}: {path} holds speculative metrics of more than {MODEL_LIMIT} models: scrape "
                             "one server")
        entry = models.setdefault(label.get("model_name", ""), dict(totals={}, accepted={}, drafted={}, gauges={},
                                                                    trtllm=False))
        entry["trtllm"] = entry["trtllm"] or name.startswith("trtllm_")
        if name in SPEC_GAUGES:
            value = sample_value(text, flag, path, number, counter=False)
            top = K_LIMIT + 1.0 if kind.endswith("length") else 1.0   # a tau, else a fraction
            if (kind.startswith("sglang") or math.isfinite(value)) and not 0.0 <= value <= top:
                what = "a fraction from 0 to 1" if top == 1.0 else f"a number from 0 to {top:g}"
                raise UsageError(f"{flag}: {path}, line {number}: {name} must be {what}; got {shown(text)}")
            if math.isfinite(value):
                entry["gauges"].setdefault(kind, [])
                if not kind.startswith("sglang") or value > 0:   # 0: that rank ran no speculative step
                    entry["gauges"][kind].append(value)
            continue
        value = sample_value(text, flag, path, number)
        if name in PER_POSITION_COUNTERS:
            position = label.get("position", "")
            if not re.fullmatch(r"[0-9]{1,4}", position) or int(position) >= K_LIMIT:
                raise UsageError(f"{flag}: {path}, line {number}: {name} needs a position label from 0 to "
                                 f"{K_LIMIT - 1} (a draft position; K is at most {K_LIMIT}); got {labels[:80]!r}")
            entry[kind][int(position)] = entry[kind].get(int(position), 0.0) + value
        else:
            entry["totals"][kind] = entry["totals"].get(kind, 0.0) + value
    if lines == 0:
        raise UsageError(f"{flag}: {path} is empty")
    if not models:
        if sglang_seen:
            raise UsageError(f"{flag}: {path} is an SGLang scrape without sglang:spec_accept_length: is "
                             "speculation on, and the server started with --enable-metrics?")
        raise UsageError(f"{flag}: {path} has no speculative-decoding counters (vllm:spec_decode_*, "
                         "trtllm_spec_decode_*): is speculative decoding on?")
    return {model: Counters(drafts=e["totals"].get("drafts"), draft_tokens=e["totals"].get("draft_tokens"),
                            accepted=e["totals"].get("accepted"), per_position=e["accepted"],
                            drafted_per_position=e["drafted"],
                            gauges={k: sum(v) / len(v) if v else 0.0 for k, v in e["gauges"].items()},
                            emitted=e["totals"].get("emitted"), engine="trtllm" if e["trtllm"] else "vllm")
            for model, e in models.items()}


def pick_model(scrape, served, flag, path):
    """(model name, Counters) of the one model the scrape measures, or the one --served-model names."""
    names = sorted(scrape)
    if served is not None:
        if served not in scrape:
            raise UsageError(f"{flag}: {path} has no speculative metrics for --served-model {served!r}; "
                             f"it has: {shown(names, 200)}")
        return served, scrape[served]
    if len(names) > 1:
        raise UsageError(f"{flag}: {path} holds speculative metrics of several models ({shown(names, 200)}): "
                         "pick one with --served-model")
    return names[0], scrape[names[0]]


def is_sglang(c):
    return "sglang_length" in c.gauges and c.drafts is None and c.draft_tokens is None


def counters_window(after, before, flags):
    """Counters over the window between two scrapes; a counter that fell means a restart (or swapped files)."""
    restart = "the server restarted between the scrapes, or the files are swapped"
    for name in ("drafts", "draft_tokens", "accepted", "emitted"):
        a, b = getattr(after, name), getattr(before, name)
        if (a is None) != (b is None):
            raise UsageError(f"{flags[0]}: {name} is in one scrape and not the other: not the same server version")
        if a is not None and a < b:
            raise UsageError(f"{flags[0]}: {name} fell from {b:g} in {flags[1]} to {a:g}: {restart}")
    per = {}
    for name in ("per_position", "drafted_per_position"):
        per[name] = {}
        for position, value in getattr(after, name).items():
            earlier = getattr(before, name).get(position, 0.0)
            if value < earlier:
                raise UsageError(f"{flags[0]}: tokens at position {position} fell between the scrapes: {restart}")
            per[name][position] = value - earlier
    difference = lambda name: None if getattr(after, name) is None else getattr(after, name) - getattr(before, name)
    # Gauges hold a value, not a count: the window is the later scrape's.
    return Counters(drafts=difference("drafts"), draft_tokens=difference("draft_tokens"),
                    accepted=difference("accepted"), per_position=per["per_position"],
                    drafted_per_position=per["drafted_per_position"], gauges=after.gauges,
                    emitted=difference("emitted"), engine=after.engine)


def profile_problem(c, k):
    """Why the per-position counts cannot be trusted, or None (they must cover positions 0..K-1, sum to the
    accepted total, and never rise with position: position i is accepted only where i-1 was)."""
    positions = c.per_position
    missing = [i for i in range(k) if i not in positions]
    if missing:
        return f"positions {', '.join(map(str, missing))} of 0..{k - 1} are missing"
    slack = max(1.0, COUNT_SLACK * c.accepted)
    total = sum(positions[i] for i in range(k))
    if abs(total - c.accepted) > slack:
        return f"they sum to {total:g}, not to the {c.accepted:g} accepted tokens"
    if positions[0] > c.drafts + slack:
        return f"position 0 accepted {positions[0]:g} tokens in {c.drafts:g} drafts"
    for i in range(1, k):
        if positions[i] > positions[i - 1] + slack:
            return f"position {i} accepted more ({positions[i]:g}) than position {i - 1} ({positions[i - 1]:g})"
    drafted = c.drafted_per_position
    if drafted:
        if abs(drafted.get(0, 0.0) - c.drafts) > max(1.0, COUNT_SLACK * c.drafts):
            return f"position 0 was drafted {drafted.get(0, 0.0):g} times in {c.drafts:g} drafts"
        if abs(sum(drafted.values()) - c.draft_tokens) > max(1.0, COUNT_SLACK * c.draft_tokens):
            return f"drafted tokens by position sum to {sum(drafted.values()):g}, not {c.draft_tokens:g}"
        for i in sorted(drafted)[1:]:
            if drafted[i] > drafted.get(i - 1, 0.0) + slack:
                return f"position {i} was drafted more often than position {i - 1}"
        for i, count in drafted.items():
            if positions.get(i, 0.0) > count + slack:
                return f"position {i} accepted {positions[i]:g} of {count:g} drafted"
    return None


def v0_drafts(c, source, k_given, notes, ask):
    """Counts without num_drafts (V0, V1 before 0.8.5): the drafts, from V0's emitted tokens or --ks.

    V0 emits the accepted tokens plus one per sequence a step, so drafts = emitted - accepted,
    and its efficiency gauge is emitted / ((K + 1) x drafts): when both agree the scrape
    fixes K and a different --ks is refused (vllm/engine/metrics.py, spec_decode metrics).
    """
    rate = c.accepted / c.draft_tokens
    if c.emitted is not None and c.emitted > c.accepted:
        drafts = c.emitted - c.accepted
        k = c.draft_tokens / drafts
        efficiency = c.gauges.get("v0_efficiency")
        agrees = efficiency is None or abs(c.emitted / ((round(k) + 1) * drafts) - efficiency) <= 0.02 * efficiency
        if abs(k - round(k)) <= COUNT_SLACK * k and agrees:
            if k_given is not None and k_given != round(k):
                raise UsageError(f"{source}: --ks {k_given} disagrees with the scrape: vLLM V0's counters give "
                                 f"{drafts:g} drafts (emitted - accepted) of {round(k)} tokens")
            notes.append(f"vLLM V0: drafts = emitted - accepted tokens = {drafts:g}, so K = {round(k)}"
                         + (" (its efficiency gauge agrees)" if efficiency is not None else ""))
            return replace(c, drafts=drafts), round(k)
    if k_given is None:
        raise UsageError(f"{source}: has no vllm:spec_decode_num_drafts_total: vLLM V0 and V1 before 0.8.5 do not "
                         f"export it (PR #16665). Its acceptance rate is {rate:.3f}; {ask}, the server's "
                         "num_speculative_tokens, to complete the measurement")
    notes.append(f"no num_drafts counter (vLLM before 0.8.5): drafts = draft tokens / K, with K = {k_given} "
                 "from --ks")
    return replace(c, drafts=c.draft_tokens / k_given, per_position={}, drafted_per_position={}), k_given


def measured_acceptance(c, source, k_given=None, notes=(), k_known=None, counted=True, width=None, rate_kind="drafted"):
    """The three alphas, per-position rates and conditional alphas from counts (acceptance.py: tau = 1 + accepted / drafts,
    r = accepted / draft tokens, and position i's rate = accepted at i / drafts).

    K is the highest position exported plus one (vLLM creates a per-position counter for
    each of num_speculative_tokens positions), not the rounded mean draft length. When the
    mean is more than K_SHORTFALL below K the rounds drafted different lengths: a
    K-by-batch-size table, or an n-gram drafter that found fewer matches. Position i's count
    over all drafts then mixes rounds that drafted i with rounds that could not, so without
    drafted-per-position counts only position 0 measures a clean per-token alpha (every
    round drafts a token).
    k_given: the one --ks value, which completes a scrape that cannot tell K; k_known: the K
    of per-position counters that were dropped before this (read_scrapes); counted: whether c
    holds real counts (else one_average_draft, and the drafts are not known); width: the tokens a tree's round
    drafts per sequence (its verify tokens - 1), None for a chain.
    """
    notes = list(notes)
    ask = "give one --ks value" if k_given is None else None
    if c.drafts is None and "v0_efficiency" in c.gauges:
        notes.append(f"vLLM V0's gauges, lifetime values at the scrape: draft acceptance rate "
                     f"{c.gauges.get('v0_rate', float('nan')):.3f}, system efficiency {c.gauges['v0_efficiency']:.3f}")
    if is_sglang(c):
        tau, rate = c.gauges["sglang_length"], c.gauges.get("sglang_rate", 0.0)
        if rate > 1.0:
            raise UsageError(f"{source}: sglang:spec_accept_rate is {rate:g}, not a fraction in [0, 1]")
        if tau < 1.0:
            raise UsageError(f"{source}: sglang:spec_accept_length is {tau:g} on every rank: no speculative step in "
                             "the gauge's window (an idle server?); scrape under traffic")
        # Both gauges are set together over the same steps: (tau - 1) / rate is the tokens a round drafts (SGLang
        # PR #23530: accepted drafts over rounds x (num_draft_tokens - 1)), K for a chain, the tree's width else;
        # before it tau / rate was the steps plus one (releases.sglang_rate_kind), and n-gram's gauge was tau itself.
        implied = (None if rate <= 0 or rate_kind not in ("drafted", "verified") else
                   (tau - 1.0) / rate if rate_kind == "drafted" else tau / rate - 1.0)
        if width is not None:
            implied = None   # a tree's gauges give its width, not K: the steps come from --ks
        if implied is not None and 0.5 <= implied < K_LIMIT + 0.5 and abs(implied - round(implied)) < 0.05:
            if k_given is not None and k_given != round(implied):
                raise UsageError(f"{source}: --ks {k_given} disagrees with the scrape, whose gauges give K = "
                                 f"(accept length - 1) / accept rate = {implied:.2f}")
            if k_given is None:
                notes.append(f"K = {round(implied)} from the gauges: (accept length - 1) / accept rate")
            k_given = round(implied)
        if k_given is None:
            raise UsageError(f"{source}: an SGLang scrape: sglang:spec_accept_length is {tau:.3f}; {ask} "
                             "(its --speculative-num-steps) to turn it into a per-token alpha")
        if tau > k_given + 1.0 + 1e-9:
            raise UsageError(f"{source}: sglang:spec_accept_length {tau:.3f} is more than K + 1 = {k_given + 1}: "
                             "--ks is not the server's --speculative-num-steps, or the draft is a tree (topk > 1)")
        notes.append(f"sglang:spec_accept_length is a gauge over the last {SGLANG_GAUGE_STEPS} decode steps at the "
                     "scrape; average it over time (avg_over_time) for a steadier figure")
        c, counted = one_average_draft(tau, k_given), False
    if c.draft_tokens is None and c.accepted is None and "v0_rate" in c.gauges:
        rate = c.gauges["v0_rate"]
        if not 0.0 <= rate <= 1.0:
            raise UsageError(f"{source}: vllm:spec_decode_draft_acceptance_rate is {rate:g}, not a fraction in [0, 1]")
        if k_given is None:
            raise UsageError(f"{source}: only vLLM V0's gauges: acceptance rate {rate:.3f}; {ask} "
                             "(num_speculative_tokens) to complete the measurement")
        notes.append("read from vLLM V0's gauge vllm:spec_decode_draft_acceptance_rate, its value at the scrape")
        c, counted = one_average_draft(1.0 + rate * k_given, k_given), False
    for name, counter in (("draft_tokens", "vllm:spec_decode_num_draft_tokens_total"),
                          ("accepted", "vllm:spec_decode_num_accepted_tokens_total")):
        if getattr(c, name) is None:
            raise UsageError(f"{source}: has no {counter} sample; a missing counter is not zero")
    if c.draft_tokens <= 0:
        raise UsageError(f"{source}: no drafts were made (draft tokens = {c.draft_tokens:g}): nothing to measure")
    if c.drafts is None and c.per_position:
        raise UsageError(f"{source}: has per-position counters (vLLM 0.8.5 or later) but no "
                         "vllm:spec_decode_num_drafts_total sample; a missing counter is not zero (a partial scrape?)")
    if c.drafts is None and c.engine == "trtllm":
        if k_given is None:
            raise UsageError(f"{source}: TensorRT-LLM counts draft and accepted tokens but not drafts; {ask} (its "
                             "max_draft_len) to complete the measurement")
        per_round = width or k_given   # tokens each iteration drafts per request: max_draft_len, or the tree's
        notes.append(f"TensorRT-LLM counts no drafts: each round drafted {per_round} tokens a request "
                     f"({'the tree' if width else '--ks'}), so drafts = draft tokens / {per_round}")
        c = replace(c, drafts=c.draft_tokens / per_round)
        if width:   # a tree's tau, as one average draft of its K steps
            tau = 1.0 + c.accepted / c.drafts
            if tau > k_given + 1.0 + 1e-9:
                raise UsageError(f"{source}: the counts give an acceptance length of {tau:.3f} for a tree of "
                                 f"{per_round} drafted tokens, more than its {k_given} steps + 1: --ks is not its "
                                 "max_draft_len, or --verify-tokens not its tree")
            c, counted = one_average_draft(tau, k_given), False
    if c.drafts is None:
        c, k_given = v0_drafts(c, source, k_given, notes, ask)
    if c.drafts < 1 or c.draft_tokens < 1:
        raise UsageError(f"{source}: fewer than one draft was made (drafts = {c.drafts:g}, draft tokens = "
                         f"{c.draft_tokens:g}): nothing to measure")
    k_mean = c.draft_tokens / c.drafts
    whole = -COUNT_SLACK * k_mean <= round(round(k_mean) - k_mean, 9) <= K_SHORTFALL   # 9 places: 3 - 2.98 > 0.02
    if c.per_position:
        k = max(c.per_position) + 1
    elif k_known is not None:
        k = k_known
    elif whole:
        k = round(k_mean)
    else:
        raise UsageError(f"{source}: rounds drafted {k_mean:.3f} tokens on average and the scrape has no "
                         "per-position counters: the K in use cannot be told")
    if not 1 <= k <= K_LIMIT:
        raise UsageError(f"{source}: the counters give K = {k} ({c.draft_tokens:g} draft tokens over {c.drafts:g} "
                         f"drafts); this tool reads K from 1 to {K_LIMIT}")
    if c.accepted > c.draft_tokens or k_mean > k * (1 + COUNT_SLACK):
        raise UsageError(f"{source}: counters are inconsistent: {c.draft_tokens:g} draft tokens over {c.drafts:g} "
                         f"drafts and {c.accepted:g} accepted")
    tau = 1.0 + c.accepted / c.drafts
    shortfall = round(k - k_mean, 9)   # draft tokens a round drafted fewer than K, on average
    varying = shortfall > K_SHORTFALL
    if COUNT_SLACK * k < shortfall <= K_SHORTFALL:
        bound = f"; a position's true rate is at most {shortfall / (1 - shortfall) * 100:.1f}% above the one shown" \
            if c.per_position and not c.drafted_per_position else ""
        notes.append(f"rounds drafted {k_mean:.3f} tokens on average against K = {k}, {shortfall:.3f} short (a "
                     "request's last rounds near its length limit, or draft tokens a grammar rejected): K is taken "
                     "as fixed" + bound)
    problem = profile_problem(c, k) if c.per_position else None
    rates, conditional = [], []
    if c.per_position and problem is None:
        for i in range(k):
            drafted = c.drafted_per_position.get(i, c.drafts) if c.drafted_per_position else c.drafts
            if drafted <= 0:
                break
            rates.append(c.per_position[i] / drafted)
        conditional = [r / prev if prev > 0 else 0.0 for r, prev in zip(rates, [1.0] + rates)]
    elif problem:
        notes.append(f"per-position counters dropped ({problem}); the acceptance rate and length are used")
    clean_profile = bool(conditional) and (not varying or bool(c.drafted_per_position))
    if clean_profile:
        profile = conditional
        # Rates over the drafts that reached each position give the full-K tau; else the measured one.
        full_k = bool(c.drafted_per_position)   # a varying K has them, or its profile is not clean
        alpha = alpha_from_length(profile_length(conditional, k) if full_k else min(tau, k + 1.0), k)
    elif varying and rates:
        alpha, profile = rates[0], [rates[0]]
        notes.append(f"rounds drafted {k_mean:.2f} tokens on average against K = {k}, so K varied: alpha is "
                     "position 0's rate, the same whatever K a round used")
    elif varying:
        raise UsageError(f"{source}: rounds drafted {k_mean:.2f} tokens on average against K = {k} and the "
                         "per-position counters are missing or fail their checks: no per-token alpha can be measured")
    else:
        alpha = alpha_from_length(min(tau, k + 1.0), k)
        profile = [alpha]
    return Measurement(k=k, k_mean=k_mean, varying_k=varying, drafts=c.drafts if counted else None,
                       acceptance_rate=c.accepted / c.draft_tokens, acceptance_length=tau, per_position_rates=rates,
                       per_position_alpha=conditional if clean_profile else [], alpha=alpha, profile=profile,
                       source=source, notes=notes)


LATENCY_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
WORKLOAD_KEYS = ("model_id", "backend", "num_prompts", "request_rate", "max_concurrency", "multi_turn_concurrency")


def bench_object(path, flag):
    """The result object of a benchmark file, and a note when it is one of several."""
    text = read_text(path, flag, BENCH_LIMIT_BYTES, " (saved with --save-detailed? this tool reads the summary "
                                                    "keys only: save it without)")
    try:
        return parse_json(text, flag, path), None
    except UsageError as not_json:
        # `--append-result` writes one JSON object a line: the last is the newest run, the only one parsed (a file
        # of millions of small lines would take gigabytes parsed whole).
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) < 2:
            raise
        try:
            last = parse_json(lines[-1], flag, path)
        except UsageError:
            raise not_json from None
    return last, f"{path} holds {len(lines)} results (--append-result); the last is used"


def json_whole(data, key, where, least=0, most=COUNT_LIMIT):
    """data[key] as a whole number from least to most, or None when it is missing or null."""
    value = data.get(key)
    if value is None:
        return None
    if type(value) is not int or not least <= value <= most:   # type(): a JSON true is no count
        raise UsageError(f"{where}: {key} must be a whole number from {least:,} to {most:,.0f}; got {shown(value)}")
    return value


AMOUNT_RANGE = (1e-3, 1e9)   # a latency in ms or a throughput in tokens/s, when not 0: ratios of two stay finite


def json_amount(data, key, where, least=AMOUNT_RANGE[0]):
    """data[key] as 0 or a number in [least, 1e9], or None when it is missing, null or NaN (vllm bench writes NaN
    for a statistic with no sample)."""
    value = data.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if not finite_number(value) or not (value == 0 or least <= value <= AMOUNT_RANGE[1]):
        raise UsageError(f"{where}: {key} must be 0 or a number from {least:g} to {AMOUNT_RANGE[1]:g}; got "
                         f"{shown(value)}")
    return value


@dataclass(frozen=True)
class Bench:
    """What this tool uses of a `vllm bench serve --save-result` JSON, each value checked (read_bench)."""
    path: str
    flag: str                #: the flag that named it
    latency: dict            #: its latency keys (mean_tpot_ms, p99_itl_ms, ...) with a value
    output_throughput: float   #: output tokens per second
    max_concurrency: int     #: max_concurrency (or multi_turn_concurrency); None: open loop or unknown
    open_loop: bool          #: whether it recorded no concurrency
    completed: int           #: completed requests
    total_input_tokens: int
    total_output_tokens: int
    spec: dict               #: its spec_decode_* keys
    workload: dict           #: its WORKLOAD_KEYS, which a pair must share
    model_id: str
    notes: list              #: what the reading noticed
    others: dict = field(default_factory=dict)   #: its other numbers --compare checks (BENCH_OTHERS)
    raw_burstiness: object = None   #: its burstiness as written (checked where it is used, by --compare)
    goodput: float = None    #: request_goodput (vLLM before 0.9.2: "request_goodput:"), None without --goodput


BENCH_OTHERS = ("duration", "request_throughput", "total_token_throughput", "max_output_tokens_per_s")


def read_bench(path, flag):
    """The numbers of a `vllm bench serve --save-result` JSON that the comparison uses, each checked."""
    data, note = bench_object(path, flag)
    where = f"{flag}: {path}"
    if isinstance(data, list):
        raise UsageError(f"{where} is a list of {len(data)} runs, as `vllm bench sweep` writes its "
                         "summary.json: pass one run's own result file")
    if not isinstance(data, dict):
        raise UsageError(f"{where} is not a benchmark result object")
    if PREDICTION_KEY in data:
        raise UsageError(f"{where} is a prediction this tool wrote (--predict-bench), not a measurement: pass the "
                         "file the benchmark saved")
    if json_whole(data, "completed", where) == 0:
        raise UsageError(f"{where} has completed 0: every request failed, nothing was measured")
    for key in ("duration", "output_throughput", "request_throughput", "total_token_throughput"):
        value = data.get(key)   # NaN is vllm bench's mark of a latency without a sample; a run always has these
        if (isinstance(value, float) and math.isnan(value)) or (key == "duration" and value == 0):
            raise UsageError(f"{where}: {key} is {value}, not a usable {key}: a run that completed requests "
                             "measured it; not one run's numbers")
    latency = {key: json_amount(data, key, where, 0.0 if key.startswith("std_") else AMOUNT_RANGE[0])
               for key in data if LATENCY_KEY.match(key)}
    latency = {key: value for key, value in latency.items() if value is not None}
    if not latency:
        raise UsageError(f"{where} has none of the latency keys (mean_tpot_ms, p99_itl_ms, ...)")
    for key in WORKLOAD_KEYS:
        if not isinstance(data.get(key), (str, int, float, type(None))):
            raise UsageError(f"{where}: {key} must be a single value; got {shown(data[key])}")
    concurrency = [json_whole(data, key, where, 1, CONCURRENCY_LIMIT)
                   for key in ("max_concurrency", "multi_turn_concurrency")]
    concurrency = concurrency[0] or concurrency[1]
    notes = [note] if note else []
    if concurrency is None and "max_concurrency" not in data:
        notes.append(f"{path} records no max_concurrency (files before mid-2024 do not): the concurrency it ran at "
                     "is unknown")
    spec = {key: data[key] for key in data if key.startswith("spec_decode_")}
    bench = Bench(path=str(path), flag=flag, latency=latency,
                  output_throughput=json_amount(data, "output_throughput", where), max_concurrency=concurrency,
                  open_loop=concurrency is None, completed=json_whole(data, "completed", where),
                  total_input_tokens=json_whole(data, "total_input_tokens", where),
                  total_output_tokens=json_whole(data, "total_output_tokens", where), spec=spec,
                  workload={key: data.get(key) for key in WORKLOAD_KEYS}, model_id=data.get("model_id"), notes=notes,
                  others={key: value for key in BENCH_OTHERS if (value := json_amount(data, key, where)) is not None},
                  raw_burstiness=data.get("burstiness"),
                  goodput=data.get("request_goodput", data.get("request_goodput:")))
    return consistent(bench, where, data.get("failed"))


THROUGHPUT_SLACK = 0.05   # vllm bench serve writes output_throughput as total_output_tokens / duration exactly;
                          # 5% leaves room for files other tools write in its format, not for another run's numbers


def consistent(bench, where, failed=None):
    """bench, or UsageError naming the contradiction when its own numbers cannot be one run's: more requests
    completed than sent, no output token at all, or an output throughput that is not its tokens over its time."""
    sent, completed, tokens = bench.workload.get("num_prompts"), bench.completed, bench.total_output_tokens
    for key, value, least in (("num_prompts", sent, 1), ("failed", failed, 0)):   # counts of requests
        if value is not None and not (type(value) is int and value >= least):
            raise UsageError(f"{where}: {key} must be a whole number of requests, at least {least}; got {shown(value)}")
    if sent is not None and completed is not None and completed + (failed or 0) > sent:
        ended = f"completed {completed:,}" + (f" and failed {failed:,}" if failed else "")
        raise UsageError(f"{where} {ended} requests of its num_prompts {sent:,}: a run ends no more requests than it "
                         "sends")
    if sent is not None and completed is not None and failed is not None and completed + failed != sent:
        # vllm/benchmarks/serve.py: every prompt sent ends completed or failed before the result is saved
        raise UsageError(f"{where} completed {completed:,} and failed {failed:,} requests of its num_prompts "
                         f"{sent:,}: a finished run ends every request it sends, so they must add up to it")
    goodput, throughput = bench.goodput, bench.others.get("request_throughput")
    if goodput is not None and not (finite_number(goodput) and 0.0 <= goodput
                                    and (throughput is None or goodput <= throughput * (1 + 1e-9))):
        raise UsageError(f"{where}: request_goodput is the requests a second that met the run's --goodput bounds, "
                         f"from 0 to its request_throughput{f' {throughput:,.6g}' if throughput is not None else ''}; "
                         f"got {shown(goodput)}")
    burstiness = bench.raw_burstiness
    if burstiness is not None and not (finite_number(burstiness) and 0.01 <= burstiness <= 100):
        raise UsageError(f"{where}: burstiness must be a number from 0.01 to 100; got {shown(burstiness)}")
    if tokens == 0:
        raise UsageError(f"{where} has total_output_tokens 0: its requests decoded no output tokens, so nothing of "
                         "decoding was measured")
    rate = bench.workload.get("request_rate")
    if not (rate is None or rate == "inf" or (type(rate) in (int, float) and rate > 0)):   # NaN fails rate > 0
        raise UsageError(f"{where}: request_rate must be \"inf\" or a rate above 0; got {shown(rate)}")
    for metric in ("ttft", "tpot", "itl", "e2el"):   # percentiles only rise: p50 <= p90 <= p99
        ranked = sorted((50.0 if m.group(1) == "median" else float(m.group(1)[1:]), value, key)
                        for key, value in bench.latency.items()
                        if (m := LATENCY_KEY.match(key)) and m.group(2) == metric and m.group(1) not in ("mean", "std"))
        mean = bench.latency.get(f"mean_{metric}_ms")
        if mean == 0 and any(value > 0 for _, value, _ in ranked):
            raise UsageError(f"{where}: mean_{metric}_ms is 0 while its percentiles are not: not one run's numbers")
        for (p0, v0, k0), (p1, v1, k1) in zip(ranked, ranked[1:]):
            if p1 > p0 and v1 < v0 * (1 - 1e-9):
                raise UsageError(f"{where}: {k1} {v1:,.6g} is below its {k0} {v0:,.6g}: a higher percentile is never "
                                 "lower; not one run's numbers")
    duration, throughput = bench.others.get("duration"), bench.output_throughput
    if tokens is not None and duration and throughput:
        implied = tokens / duration
        if abs(implied / throughput - 1) > THROUGHPUT_SLACK:
            raise UsageError(f"{where}: output_throughput {throughput:,.6g} tok/s is not its total_output_tokens "
                             f"{tokens:,} over its duration {duration:,.6g} s ({implied:,.6g} tok/s): not one run's "
                             "numbers")
    return bench


def workload_value(value):
    """A workload key's value as compared: a rate of "inf" and a JSON Infinity are one rate, and NaN is NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"
    return value


def same_workload(base, spec):
    """Refuse a pair that did not run the same workload (model, backend, prompts, rate, concurrency)."""
    for key in WORKLOAD_KEYS:
        if workload_value(base.workload[key]) != workload_value(spec.workload[key]):
            raise UsageError(f"--bench-spec: {key} {spec.workload[key]!r} differs from --bench-baseline's "
                             f"{base.workload[key]!r}: not the same workload")


def bench_acceptance(bench, flag):
    """Acceptance from a spec run's spec_decode_* keys, or None when it has none.

    The six spec_decode_* keys came with vLLM PR #31739 (vllm/benchmarks/serve.py). The counts
    give everything; a file with only the rate (a percentage) and the length gives
    K = (length - 1) / rate. The per-position rates are fractions; a list that is not
    K numbers in [0, 1] is dropped with a note.
    """
    spec, source = bench.spec, f"{flag} {bench.path}"
    counts = ("spec_decode_num_drafts", "spec_decode_draft_tokens", "spec_decode_accepted_tokens")
    present = [key for key in counts if key in spec]
    for key in present + [k for k in ("spec_decode_acceptance_rate", "spec_decode_acceptance_length") if k in spec]:
        if not finite_number(spec[key]) or not 0 <= spec[key] <= COUNT_LIMIT:
            raise UsageError(f"{source}: {key} must be a number from 0 to {COUNT_LIMIT:g}; got {shown(spec[key])}")
    if len(present) < len(counts):
        rate, tau = spec.get("spec_decode_acceptance_rate"), spec.get("spec_decode_acceptance_length")
        if present or not rate or tau is None:
            return None
        if rate > 100.0 or tau < 1.0:
            raise UsageError(f"{source}: spec_decode_acceptance_rate is a percentage of drafted tokens, at most 100, "
                             f"and spec_decode_acceptance_length at least 1; got {rate:g}% and {tau:g}")
        k = (tau - 1.0) * 100.0 / rate   # not / (rate / 100): a tiny rate would underflow to 0
        if not 0.5 <= k < K_LIMIT + 0.5 or abs(k - round(k)) > 0.01 * k:
            raise UsageError(f"{source}: spec_decode_acceptance_length {tau:g} and spec_decode_acceptance_rate "
                             f"{rate:g}% give K = {k:.3g}, not a whole number from 1 to {K_LIMIT}: not one chain's "
                             "figures")
        return measured_acceptance(one_average_draft(tau, round(k)), source, counted=False,
                                   notes=[f"from the file's acceptance rate and length only: K = {round(k)}"])
    drafts, draft_tokens, accepted = (float(spec[key]) for key in counts)
    notes = []
    rate, tau = spec.get("spec_decode_acceptance_rate"), spec.get("spec_decode_acceptance_length")
    if rate is not None and draft_tokens > 0 and abs(rate - 100.0 * accepted / draft_tokens) > 0.5:
        raise UsageError(f"{source}: spec_decode_acceptance_rate {rate:g}% disagrees with its counts "
                         f"({100.0 * accepted / draft_tokens:.1f}%)")
    # vllm/benchmarks/serve.py: acceptance_length = 1 + accepted / drafts, the bonus token included
    if tau is not None and drafts > 0 and abs(tau - (1.0 + accepted / drafts)) > LENGTH_AGREES * max(1.0, tau):
        raise UsageError(f"{source}: spec_decode_acceptance_length {tau:g} disagrees with its counts (1 + accepted "
                         f"/ drafts = {1.0 + accepted / drafts:.3f})")
    rates = spec.get("spec_decode_per_position_acceptance_rates") or []
    k_mean = draft_tokens / drafts if drafts > 0 else 0.0
    if rates and (not isinstance(rates, list) or len(rates) > K_LIMIT or len(rates) < k_mean * (1 - COUNT_SLACK)
                  or not all(finite_number(r) and 0 <= r <= 1 for r in rates)):
        notes.append("spec_decode_per_position_acceptance_rates dropped (not one fraction per draft position)")
        rates = []
    return measured_acceptance(Counters(drafts=drafts, draft_tokens=draft_tokens, accepted=accepted,
                                        per_position={i: r * drafts for i, r in enumerate(rates)}), source, notes=notes)


LENGTH_AGREES = 0.005   # a file's acceptance length and its counts agree to rounding (vLLM writes both from the counts)


@dataclass(frozen=True)
class Run:
    """One benchmark run as the calibration fits it, or a probe of run_tpot_ms."""
    batch: int               #: max_concurrency B
    k: int                   #: K of a speculative run (None: a baseline)
    tau: float               #: its acceptance length (None: a baseline)
    input_tokens: int        #: mean prompt tokens (its totals over completed requests)
    output_tokens: int       #: mean output tokens
    tpot_ms: float = None    #: its measured mean TPOT, ms
    path: str = None         #: the file
    model_id: str = None     #: the model it names
    decoding: float = None   #: sequences it decoded on average (decoding_batch); None: batch
    noise: float = RUN_NOISE   #: its mean TPOT's own noise, fraction: the least run-to-run spread, or more
    ttft_ms: float = None    #: its measured mean TTFT, ms (None: not in the file)
    requests: int = None     #: requests it completed
    rate: float = math.inf   #: its request rate (math.inf: all at once, held by max_concurrency)
    burstiness: float = 1.0  #: the gamma shape of its sends' gaps
    total_output: int = None   #: output tokens over its requests


def run_totals(bench, flag, path, runs, least_output):
    """(completed, total prompt tokens, total output tokens) of a benchmark file, its mean lengths checked."""
    completed, prompts, outputs = bench.completed, bench.total_input_tokens, bench.total_output_tokens
    if not completed or prompts is None or outputs is None:
        raise UsageError(f"{flag}: {path} needs completed, total_input_tokens and total_output_tokens to know "
                         "its prompt and output lengths")
    for what, total, least in (("prompt tokens", prompts, 1), ("output tokens", outputs, least_output)):
        if not least <= total / completed <= TOKENS_LIMIT:
            raise UsageError(f"{flag}: {path}: its requests average {total / completed:.3g} {what} "
                             f"(total over completed); {runs} have {least} to {TOKENS_LIMIT:,}")
    return completed, prompts, outputs


def distinct_files(paths):
    """paths with each file once, however spelled (a, ./a, d/../a, a link or a hard link to a): the first kept."""
    seen = {}
    for path in paths:
        try:
            info = os.stat(path)
            key = (info.st_dev, info.st_ino)
        except (OSError, ValueError):   # missing or unreadable: the reader names it
            key = os.path.realpath(path)
        seen.setdefault(key, path)
    return list(seen.values())


def run_rate(bench):
    """A file's request_rate as a number: math.inf for "inf" or none (read_bench checked that it is a rate)."""
    rate = bench.workload.get("request_rate")
    return math.inf if rate in (None, "inf") or not isinstance(rate, (int, float)) or math.isinf(rate) else float(rate)


def read_calibration_runs(paths, flag="--calibrate"):
    """Your `vllm bench serve` results for --calibrate: one deployment, one workload, baselines at several
    concurrencies and optionally speculative runs (their K and tau from their spec_decode_* keys)."""
    runs = []
    paths = distinct_files(paths)   # a file given twice counts once
    if len(paths) > CALIBRATION_FILE_LIMIT:
        raise UsageError(f"{flag}: {len(paths):,} files; this tool fits at most {CALIBRATION_FILE_LIMIT} (each is left "
                         "out and refitted)")
    for path in paths:
        bench = read_bench(path, flag)
        if bench.max_concurrency is None:
            raise UsageError(f"{flag}: {path} records no max_concurrency: calibration needs closed-loop runs "
                             "(vllm bench serve --max-concurrency B)")
        if not bench.latency.get("mean_tpot_ms"):
            raise UsageError(f"{flag}: {path} has no mean_tpot_ms above 0 (it is missing, NaN or 0: a TPOT needs "
                             "requests of two or more output tokens)")
        completed, prompts, outputs = run_totals(bench, flag, path, "the runs this tool fits", least_output=2)
        k = tau = None
        if bench.spec:
            measured = bench_acceptance(bench, flag)
            if measured is None or measured.varying_k:
                raise UsageError(f"{flag}: {path} is a speculative run without one K and its acceptance in its "
                                 "spec_decode_* keys: run it on vLLM with a fixed num_speculative_tokens")
            k, tau = measured.k, measured.acceptance_length
        tpot, output_tokens = bench.latency["mean_tpot_ms"], round(outputs / completed)
        sampling = bench.latency.get("std_tpot_ms", 0.0) / math.sqrt(completed) / tpot   # s.e. of the mean
        runs.append(Run(batch=bench.max_concurrency, k=k, tau=tau, input_tokens=round(prompts / completed),
                        output_tokens=output_tokens, tpot_ms=tpot, path=str(path), model_id=bench.model_id,
                        decoding=decoding_batch(bench.max_concurrency, output_tokens, tpot,
                                                bench.latency.get("mean_ttft_ms", 0.0), completed),
                        noise=max(RUN_NOISE, sampling), ttft_ms=bench.latency.get("mean_ttft_ms"), requests=completed,
                        rate=run_rate(bench), burstiness=1.0 if bench.raw_burstiness is None else bench.raw_burstiness,
                        total_output=outputs))
    models = {r.model_id for r in runs}
    if len(models) > 1:
        raise UsageError(f"{flag}: the files are of different models ({', '.join(sorted(map(repr, models)))}): "
                         "calibrate on one deployment")
    lengths = [(r.input_tokens, r.output_tokens) for r in runs]
    for i, o in lengths:
        if abs(i / lengths[0][0] - 1) > OWN_LENGTHS or abs(o / lengths[0][1] - 1) > OWN_LENGTHS:
            raise UsageError(f"{flag}: the runs differ in prompt or output length by more than {OWN_LENGTHS:.0%} "
                             f"({lengths[0][0]}/{lengths[0][1]} against {i}/{o} tokens): one workload shape, please")
    baselines = sorted({r.batch for r in runs if r.k is None})
    if len(runs) < 2 or len(baselines) < 2:
        have = f"baselines at {', '.join(map(str, baselines))}" if baselines else "no baseline"
        raise UsageError(f"{flag}: too little to fit ({len(runs)} file(s), {have}): run speculation off at three "
                         "concurrencies (e.g. 1, 16 and your target) and on at one of them")
    return runs


@dataclass(frozen=True)
class Comparison:
    """A speculative benchmark run against its baseline (bench_comparison): ratios and changes are fractions, None
    where a file lacks the key."""
    tpot_speedup: float      #: baseline mean TPOT over the speculative run's
    throughput_speedup: float   #: speculative output throughput over the baseline's
    p99_tpot_change: float   #: P99 TPOT, speculative over baseline, minus 1
    p99_itl_change: float    #: P99 ITL (per chunk), speculative over baseline, minus 1
    changes: dict            #: every latency key both files have: speculative over baseline, minus 1
    baseline: dict           #: the baseline's latency keys
    spec: dict               #: the speculative run's
    max_concurrency: int     #: the baseline's max_concurrency (None: open loop)
    lengths: tuple           #: the speculative run's (mean prompt, mean output) tokens, or None


def bench_comparison(base, spec):
    """Measured speedups and P99 changes of the spec run against the baseline (fractions)."""
    def ratio(a, b):   # None unless both were measured above 0 (a 0 mean TPOT measured nothing)
        return a / b if a and b and math.isfinite(a / b) else None
    lat_b, lat_s = base.latency, spec.latency
    change = lambda key: None if ratio(lat_s.get(key), lat_b.get(key)) is None else ratio(lat_s[key], lat_b[key]) - 1.0
    keys = sorted(set(lat_b) & set(lat_s))
    return Comparison(tpot_speedup=ratio(lat_b.get("mean_tpot_ms"), lat_s.get("mean_tpot_ms")),
                      throughput_speedup=ratio(spec.output_throughput, base.output_throughput),
                      p99_tpot_change=change("p99_tpot_ms"), p99_itl_change=change("p99_itl_ms"),
                      changes={key: change(key) for key in keys}, baseline=lat_b, spec=lat_s,
                      max_concurrency=base.max_concurrency, lengths=run_lengths(spec))


def run_lengths(bench):
    """(mean prompt, mean output tokens) of a benchmark run, from its totals over completed requests; None when the
    file lacks them."""
    done, prompts, outputs = bench.completed, bench.total_input_tokens, bench.total_output_tokens
    return (round(prompts / done), round(outputs / done)) if done and prompts and outputs else None


def length_note(what, lengths, dep):
    """A note when a run's lengths differ from the deployment's by more than LENGTH_SLACK, else None."""
    i, o = lengths
    if abs(i / dep.input_tokens - 1) <= LENGTH_SLACK and abs(o / dep.output_tokens - 1) <= LENGTH_SLACK:
        return None
    return (f"{what} ran {i} prompt and {o} output tokens a request (its totals over completed requests), the "
            f"deployment {dep.input_tokens} and {dep.output_tokens}: the model is set at the run's own lengths beside "
            "it, and the plan's other numbers at the deployment's")


LENGTH_SLACK = 0.10   # a run whose mean lengths differ from the deployment's by more than this gets a note
