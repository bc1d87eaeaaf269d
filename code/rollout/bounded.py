"""Every input read bounded: a regular file or a pipe (/dev/stdin, a process substitution) opened without waiting,
read within its size, time and line limits (records.py), as UTF-8 text or JSON; a folder, a device, UTF-16 or a pipe
that sends nothing is refused with one line that names the flag.
"""
from __future__ import annotations

import io
import json
import os
import select
import stat
import time

from .records import LINE_LIMIT_BYTES, SCRAPE_LIMIT_BYTES, SCRAPE_LINE_LIMIT, UsageError


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


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")   # PowerShell's `>` writes UTF-16 with its byte-order mark
