"""A K-by-batch schedule read as words and ranges: [start, end, K] rows (vLLM's num_speculative_tokens_per_batch_size),
where speculation pays, where it is off, the calls a range makes. Pure functions of the rows: the decisions and the
renderers both read them."""
from __future__ import annotations

from dataclasses import dataclass


K_MAX = 8   # the best-K search tries K = 0 (speculation off) .. K_MAX


def k_zero_at(schedule):
    """The batch from which a K-by-batch schedule keeps speculation off (K = 0) to its end, or None."""
    return schedule[-1][0] if schedule and schedule[-1][2] == 0 else None


def paying_ranges(schedule):
    """[(first, last batch)] of the stretches where a K-by-batch schedule speculates (K > 0)."""
    ranges = []
    for lo, hi, k in schedule:
        if k > 0 and ranges and ranges[-1][1] == lo - 1:
            ranges[-1] = (ranges[-1][0], hi)
        elif k > 0:
            ranges.append((lo, hi))
    return ranges


def close_call_words(stretches):
    """Where the model cannot tell whether speculation pays, in words.

    >>> close_call_words([[92, 472]])
    'too close to call at B = 92-472'
    """
    return "too close to call at B = " + ", ".join(f"{lo}-{hi}" if lo < hi else str(lo) for lo, hi in stretches)


def where_it_pays(schedule):
    """Where speculation pays, in words, from a K-by-batch schedule (batches 1 to its last row's end).

    >>> where_it_pays([[1, 11, 0], [12, 40, 2], [41, 245, 3]])
    'speculation pays from B = 12 to 245 (the most that fit) and is off below'
    """
    ranges, limit = paying_ranges(schedule), schedule[-1][1] if schedule else 0
    if not ranges:
        return "speculation pays at no batch size that fits"
    if ranges == [(1, limit)]:
        return f"speculation pays at every batch size that fits (up to {limit})"
    if len(ranges) == 1 and ranges[0][0] == 1:
        return f"speculation stops paying at B = {ranges[0][1] + 1}"
    if len(ranges) == 1 and ranges[0][1] == limit:
        return f"speculation pays from B = {ranges[0][0]} to {limit} (the most that fit) and is off below"
    return ("speculation pays at B = " + ", ".join(f"{lo}-{hi}" if lo < hi else str(lo) for lo, hi in ranges)
            + " and is off at the others")


def call_of(bounds):
    """on / off / benchmark first, from where a ratio's range lies against 1.0x."""
    low, high = bounds
    return "on" if low > 1.0 else "off" if high < 1.0 else "benchmark first"


@dataclass(frozen=True)
class KTable:
    """K by batch size as a server runs it, step by step: rows ((first B, last B, K), ...) and the K past the last.
    A server that runs one K whatever the batch is a table of no rows (KTable((), K)).

    >>> table = KTable(((1, 3, 5), (4, 40, 3)), 2)
    >>> [table.at(b) for b in (1, 3, 4, 40, 41)], table.ks()
    ([5, 5, 3, 3, 2], (2, 3, 5))
    """
    rows: tuple              #: ((first B, last B, K), ...), ascending
    fallback: int            #: K past the rows

    def at(self, batch):
        """K at `batch` running requests."""
        for lo, hi, k in self.rows:
            if lo <= batch <= hi:
                return k
        return self.fallback

    def ks(self):
        """Every K the table runs, ascending."""
        return tuple(sorted({k for _, _, k in self.rows} | {self.fallback}))

    @classmethod
    def of(cls, schedule, fallback):
        """The table of a plan's [start, end, K] rows."""
        return cls(tuple(tuple(row) for row in schedule), fallback)
