"""Where a run may write, and how: its files all or none, never a file it did not write, never through a link,
and its output streams and signals (SIGINT, SIGTERM) handled so that exit 1 keeps meaning only "the gate failed".

    finish(compute, argv, whole_process)   a run end to end: compute, write_all, print; its exit status
    out_path, bench_folder                 --out and --predict-bench, checked before anything runs
    write_all                              temporaries, then one swap with a journal; rolled back on any failure
    recover_interrupted                    the next run undoes a swap that a SIGKILL or a power cut cut short
    emit, say                              standard output and error, when they are full, closed or gone
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import sys
from pathlib import Path

from .records import BENCH_LIMIT_BYTES, shown, UsageError
from .workload import PREDICTION_KEY
from .render.charts import ALL_CHARTS, CHART_MARK
from .records import printable


PLAN_MARK = "---\nname: eagle3-rollout\n"   # how every plan this tool writes begins (plan.render_plan)
OLD_CHART_HEAD = ('<svg xmlns="http://www.w3.org/2000/svg" width="760" height="460" viewBox="0 0 760 460" '
                  'font-family="DejaVu Sans, Arial, sans-serif">\n<rect width="760" height="460" fill="#ffffff"/>\n'
                  '<text x="380.0" y="28.0" font-size="16" text-anchor="middle" font-weight="bold">')


# ---------------------------------------------------------------- which files are the tool's

def flag_of(text):
    """The flag whose file text is: the plan and its charts are --out's, a predicted benchmark file --predict-bench's."""
    return "--out" if text.startswith((PLAN_MARK, "<svg")) else "--predict-bench"


def written_here(path, text):
    """Whether the file at path is one this tool wrote of text's kind, so that writing text may replace it: a plan
    begins with PLAN_MARK, a chart holds CHART_MARK in its first lines (or begins as the charts of a release before
    the mark did), a predicted benchmark file is JSON with PREDICTION_KEY. A link, a folder or a device never is."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        with open(path, "rb") as f:
            head = f.read(BENCH_LIMIT_BYTES if flag_of(text) == "--predict-bench" else 4096)
    except OSError:
        return False
    if text.startswith(PLAN_MARK):
        return head.startswith(PLAN_MARK.encode())
    if text.startswith("<svg"):
        shown_head = head.decode("utf-8", errors="replace")
        return CHART_MARK in shown_head or shown_head.startswith(OLD_CHART_HEAD)
    try:
        data = json.loads(head.decode("utf-8"))
    except (ValueError, RecursionError):   # not JSON, or nested too deep to be ours
        return False
    return isinstance(data, dict) and isinstance(data.get(PREDICTION_KEY), dict)


def through_link(flag, text, what):
    """Refuse a place named through a link: the place itself (its last name, however written: `link`, `link/`,
    `link/.`) is a link, or a `..` after a link leads elsewhere than the text reads (`link/../x`). Links above the
    named place (a home folder on another disk) are the system's layout, and are followed."""
    plain = os.path.normpath(text)
    if os.path.islink(plain):
        raise UsageError(f"{flag}: {shown(text)} is a link (to {shown(os.path.realpath(text))}): name the {what} "
                         "itself")
    if os.path.realpath(text) != os.path.realpath(plain):
        raise UsageError(f"{flag}: {shown(text)} climbs out of a link with '..' (it leads to "
                         f"{shown(os.path.realpath(text))}): name the {what} itself")


def out_path(text):
    """--out, checked before anything runs: a file's name (not a folder's, not a chart's) in an existing folder
    this program may write in, named without a link, where the plan and its charts will replace nothing but
    regular files."""
    try:
        return checked_out_path(text)
    except OSError as err:   # a name too long, a folder that cannot be searched
        raise UsageError(f"--out: {shown(text)}: {err.strerror or err}") from None


def checked_out_path(text):
    path = Path(text)
    if text.endswith(("/", os.sep)) or path.is_dir():
        raise UsageError(f"--out: {shown(text)} is a folder: name the plan's file in it, e.g. "
                         f"{shown(str(path / 'plan.md'))}")
    if path.name in ALL_CHARTS:
        raise UsageError(f"--out: {shown(path.name)} is the name of a chart the plan links to: name the plan otherwise")
    folder = path.parent
    if not folder.is_dir():
        raise UsageError(f"--out: the folder {shown(str(folder))} does not exist")
    through_link("--out", os.path.dirname(text) or os.curdir, "folder")
    try:
        longest = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        longest = 255
    if len(os.fsencode(path.name)) > longest:
        raise UsageError(f"--out: the file's name is too long ({len(os.fsencode(path.name))} bytes; this file system "
                         f"takes {longest})")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"--out: cannot write in the folder {shown(str(folder))}")
    for target in [path] + [folder / name for name in ALL_CHARTS]:
        try:
            mode = os.lstat(target).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            raise UsageError(f"--out: {shown(str(target))} exists and is not a regular file (a link, a folder, a pipe "
                             "or a device): the plan would replace it")
    return path


def check_out_owned(path):
    """--out, once the inputs are known not to be among its files: each of the plan and its charts that exists is
    one this tool wrote (its mark), never a file of the user's it would replace (its own source included)."""
    for target, kind in [(path, PLAN_MARK)] + [(path.parent / name, "<svg") for name in ALL_CHARTS]:
        if os.path.lexists(target) and not written_here(target, kind):
            raise UsageError(f"--out: {shown(str(target))} exists and is not a plan or chart this tool wrote: it "
                             "would be replaced; name another file or folder")


def bench_folder(text, names, reads, out):
    """--predict-bench's folder: an existing one this program may write in, named without a link, where no file it
    would write (names) is a link, a folder, a file this run reads or writes, or a file that is not one of its own
    predictions."""
    try:
        return checked_bench_folder(text, names, reads, out)
    except OSError as err:   # a name too long, a folder that cannot be searched
        raise UsageError(f"--predict-bench: {shown(text)}: {err.strerror or err}") from None


def checked_bench_folder(text, names, reads, out):
    folder = Path(text)
    if not folder.is_dir():
        raise UsageError(f"--predict-bench: {shown(text)} is not an existing folder")
    through_link("--predict-bench", text, "folder")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"--predict-bench: cannot write in the folder {shown(text)}")
    used = {os.path.realpath(p) for p in reads if p}
    if out is not None:
        used |= {os.path.realpath(out.parent / name) for name in [out.name, *ALL_CHARTS]}
    for name in names:
        check_bench_target(folder / name, used)
    return folder


def check_bench_target(path, taken):
    """Refuse to replace anything at path but a prediction this tool wrote there before, or a path this run reads
    or writes otherwise (taken: real paths)."""
    if os.path.realpath(path) in taken:
        raise UsageError(f"--predict-bench: would overwrite {shown(str(path))}, which this run reads or writes: "
                         "predict into another folder")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise UsageError(f"--predict-bench: {shown(str(path))} exists and is not a regular file")
    if not written_here(path, "{}"):
        raise UsageError(f"--predict-bench: {shown(str(path))} exists and is not a prediction this tool wrote (a "
                         "measured run?): predict into another folder")


# ---------------------------------------------------------------- signals

# Every signal whose default action ends the process and that a program may catch: Ctrl-C, SIGTERM (kill, timeout,
# CI), SIGHUP (a closed terminal or ssh session), SIGQUIT, SIGALRM and the user signals. SIGKILL cannot be caught:
# its half-done swap is undone by the next run (recover_interrupted).
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGUSR1",
                                                        "SIGUSR2") if hasattr(signal, name))


def stop_once():
    """Ctrl-C and SIGTERM (what `kill`, `timeout` and CI send) stop a run alike, once: the first raises
    KeyboardInterrupt, so every write is rolled back or finished by the same code; any later one is ignored, so
    the rollback and the closing line are never cut short. Returns (the handlers it replaced, the call that makes
    every later signal ignored: the run has ended)."""
    stopping = []

    def interrupt(signum, frame):
        if not stopping:
            stopping.append(signum)
            raise KeyboardInterrupt

    previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    for number in STOP_SIGNALS:
        signal.signal(number, interrupt)
    return previous, lambda: stopping.append(None)


def hold_signals():
    """Defer Ctrl-C and SIGTERM (pthread_sigmask): a write and its rollback are not cut in two. Returns the call
    that lets them through again (a signal that came meanwhile is raised then)."""
    if not hasattr(signal, "pthread_sigmask"):
        return lambda: None
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    return lambda: signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def stop_pending():
    """Whether a Ctrl-C or SIGTERM is waiting while signals are held."""
    return hasattr(signal, "sigpending") and bool(signal.sigpending() & set(STOP_SIGNALS))


# ---------------------------------------------------------------- files, all or none

class WriteFailed(Exception):
    """A write that failed (a full disk, a folder gone, a file that became someone else's) and was rolled back:
    the file it was writing, and why."""
    def __init__(self, path, reason):
        super().__init__(path, reason)
        self.path, self.reason = path, reason


def write_all(files):
    """Write every file of {path: text} or none. Each is written to a new temporary in its folder, and each file it
    will replace is checked again to be the tool's own (written_here) and kept as a backup (a hard link, else a
    copy); then all are renamed into place, and if anything fails the files placed before it are put back. Only
    the files, old or new, are left.

    All of it runs with Ctrl-C and SIGTERM held (hold_signals). One that comes before the swap stops the run with
    nothing written; one during the swap waits for its end, when the files are in place, and the call this returns
    (which lets signals through) raises it where the caller knows that. Raises WriteFailed, or KeyboardInterrupt,
    with nothing written."""
    temporaries, backups, placed = {}, {}, []
    if not files:
        return lambda: None
    release, journal, path = hold_signals(), None, None
    try:
        recover_interrupted(files)
        for number, (path, text) in enumerate(files.items()):
            temporary = path.parent / f".eagle3-rollout-{os.getpid()}-{number}.tmp"   # short: any name that fits
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)      # never someone else's file
            temporaries[path] = temporary
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            if os.path.lexists(path):   # checked again here: it may have changed since the run began
                if not written_here(path, text):
                    raise WriteFailed(path, "it became a file this tool did not write while the run computed")
                backups[path] = temporary.with_suffix(".bak")
                try:
                    os.link(path, backups[path])
                except OSError:           # a file system without hard links
                    shutil.copy2(path, backups[path])
            if stop_pending():            # Ctrl-C while the temporaries were written: before the swap
                raise KeyboardInterrupt
        path = None
        journal = write_journal(files, temporaries, backups)   # a crash past here: the next run rolls back
        for path, temporary in temporaries.items():
            os.replace(temporary, path)
            placed.append(path)
    except BaseException as err:
        for done in placed:
            if done in backups:
                os.replace(backups[done], done)
            else:
                os.unlink(done)
        for leftover in [*temporaries.values(), *backups.values(), *([journal] if journal else [])]:
            if os.path.lexists(leftover):
                os.unlink(leftover)
        release()   # a signal held meanwhile is raised here: still nothing written
        if isinstance(err, OSError):
            raise WriteFailed(path or (Path(err.filename) if err.filename else next(iter(files))),
                              err.strerror or str(err)) from None
        raise
    for leftover in [journal, *temporaries.values(), *backups.values()]:
        if os.path.lexists(leftover):
            os.unlink(leftover)
    return release


JOURNAL = ".eagle3-rollout-journal-{pid}.json"   # in the first file's folder while a write swaps its files


def write_journal(files, temporaries, backups):
    """Before the swap: what each file's old and new versions are, on disk (synced), so that a run killed in the
    middle (SIGKILL, power) is rolled back by the next (recover_interrupted). Returns its path."""
    entries = [dict(path=str(Path(p).resolve()), temporary=str(Path(temporaries[p]).resolve()),
                    backup=str(Path(backups[p]).resolve()) if p in backups else None) for p in files]
    journal = next(iter(files)).parent / JOURNAL.format(pid=os.getpid())
    fd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(dict(files=entries), f)
        f.flush()
        os.fsync(f.fileno())
    return journal


def recover_interrupted(files):
    """Roll back the writes of earlier runs that died while swapping some of these files (a journal in their folders
    whose process is gone): each back to its old version (its backup), one that had none removed, the temporaries
    deleted. A journal is trusted only so far as it could be this tool's: every entry is one of the files this run
    is about to write anyway, and its temporary and backup are the dead run's own names beside it; a journal with
    any other entry is left alone, so a planted one can touch nothing else. Returns how many journals it undid."""
    ours = {os.path.realpath(p) for p in files}
    undone = 0
    for folder in {Path(p).parent for p in files}:
        remove_debris(folder)
        for journal in folder.glob(JOURNAL.format(pid="*")):
            try:
                pid = int(journal.name.split("-")[-1].split(".")[0])
                os.kill(pid, 0)
                continue                       # its run is alive: its own write, not ours to undo
            except (ValueError, ProcessLookupError, OverflowError):
                pass
            except PermissionError:
                continue                       # alive, another user's
            try:
                entries = json.loads(journal.read_text(encoding="utf-8"))["files"]
                steps = [journal_entry(entry, pid, ours) for entry in entries]
            except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
                continue                       # not one this tool wrote whole: left alone
            for path, temporary, backup in steps:
                if backup and os.path.lexists(backup):
                    os.replace(backup, path)   # a file not yet swapped is the backup's own inode: then a no-op,
                    if os.path.lexists(backup):   # and the backup is left to remove
                        os.unlink(backup)
                elif not backup and not os.path.lexists(temporary) and os.path.lexists(path):
                    os.unlink(path)            # placed, with no old version to restore
                if os.path.lexists(temporary):
                    os.unlink(temporary)
            journal.unlink()
            undone += 1
    return undone


DEBRIS = re.compile(r"\.eagle3-rollout-(\d{1,9})-\d{1,6}\.(?:tmp|bak)")   # write_all's temporaries and backups


def remove_debris(folder):
    """Delete the temporaries and backups a killed run left before its swap began (it had written no journal, so
    every file is still its old self): only write_all's own names, of a process that is gone and left no journal."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        match = DEBRIS.fullmatch(name)
        if not match or f".eagle3-rollout-journal-{match.group(1)}.json" in names:
            continue   # not ours, or a swap that began: recover_interrupted rolls it back from its journal
        try:
            os.kill(int(match.group(1)), 0)
            continue   # its run is alive
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError, ValueError):
            continue
        path = Path(folder) / name
        if stat.S_ISREG(os.lstat(path).st_mode):
            os.unlink(path)


def journal_entry(entry, pid, ours):
    """(path, temporary, backup) of a journal entry, checked: path is one of ours (the files this run writes), and the
    temporary and backup are the dead run's names in its folder (write_all: .eagle3-rollout-PID-N.tmp, .bak). Raises
    ValueError for anything else."""
    path, temporary, backup = entry["path"], entry["temporary"], entry["backup"]
    if os.path.realpath(path) not in ours:
        raise ValueError(path)
    folder = os.path.dirname(os.path.realpath(path))
    own = re.compile(rf"\.eagle3-rollout-{pid}-\d{{1,6}}\.tmp")
    if os.path.dirname(temporary) != folder or not own.fullmatch(os.path.basename(temporary)):
        raise ValueError(temporary)
    if backup is not None and (os.path.dirname(backup) != folder
                               or os.path.basename(backup) != os.path.basename(temporary)[:-4] + ".bak"):
        raise ValueError(backup)
    return path, temporary, backup


# ---------------------------------------------------------------- standard output and error

def emit(report):
    """Print the report on standard output; False when the stream is closed, full or gone (then it is pointed at
    the null device, so that the interpreter's last flush does not fail again)."""
    try:
        try:   # a stream that cannot encode a character (PYTHONIOENCODING=ascii and the report's ±) shows its escape
            sys.stdout.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass
        sys.stdout.write(report)
        sys.stdout.flush()
        return True
    except (OSError, ValueError, AttributeError):   # full (ENOSPC), the reader left (EPIPE), closed (>&-: None)
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        except OSError:
            pass
        return False


def say(line):
    """One line on standard error, if it can take it (closed or full, the exit status still tells)."""
    if sys.stderr is None:   # closed (2>&-): print would write to standard output instead
        return
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        except OSError:
            pass


def line_start():
    """What puts the error line at the start of an empty line on a terminal, where a progress line may be showing
    (flags.progress_meter writes one without a newline): a carriage return and erase-line; "" on a file or pipe."""
    try:
        return "\r\x1b[K" if sys.stderr.isatty() else ""
    except (AttributeError, ValueError, OSError):
        return ""


# ---------------------------------------------------------------- a run, end to end

def finish(stages, argv, whole_process):
    """Run stages(argv) -> Output (parse, decide, render), then write it (write); the exit status.

    2 for bad input, a failed write, a signal or a stream that cannot be written, with one line on stderr that
    is true about what is on disk; else the Output's status (with --gate, 1 if the gate failed: 1 means nothing else).
    whole_process: the run is the process (the command line), so a signal once it has ended is ignored; in-process
    callers (tests) get their own handlers back."""
    previous, ended = stop_once()
    try:
        return run_to_end(stages, argv, ended)
    finally:
        if whole_process:   # ignored, not raised, and ignored still while the interpreter shuts down (which puts a
            for number in STOP_SIGNALS:   # handler of its own back to the default, and the default would kill)
                signal.signal(number, signal.SIG_IGN)
        else:
            for number, handler in previous.items():
                signal.signal(number, handler)


def refusal(ended):
    """refuse(message): end the run (ended) with message as its one line on stderr; exit status 2."""
    def refuse(message):
        ended()
        say(line_start() + "main.py: error: " + printable(" ".join(message.split())))
        return 2
    return refuse


def run_to_end(stages, argv, ended):
    refuse = refusal(ended)
    try:
        output = stages(argv)
    except UsageError as err:
        return refuse(str(err))
    except KeyboardInterrupt:
        return refuse("interrupted; nothing was written")
    except OSError as err:   # the readers turn their own failures into UsageError: this is a case they missed
        return refuse(f"cannot read {shown(err.filename) if err.filename else 'an input'}: {err.strerror or err}; "
                      "nothing was written")
    except Exception as err:   # a case no check foresaw: still one line and exit 2, never a traceback or exit 1
        return refuse(f"internal error on this input ({type(err).__name__}: {err}); nothing was written. Please "
                      "report the command line")
    return write(output, ended)


def write(output, ended=lambda: None):
    """The Output's files, all or none, then its text on standard output: its status, or 2 with one line on stderr
    when a file or the stream cannot be written or a signal stops it (ended: called as the run ends)."""
    refuse, files, status = refusal(ended), output.files, output.status
    try:
        release = write_all(files)
    except WriteFailed as err:
        return refuse(f"{flag_of(files.get(err.path, ''))}: cannot write {shown(str(err.path))}: {err.reason}; "
                      "nothing was written")
    except KeyboardInterrupt:
        return refuse("interrupted; nothing was written")
    except Exception as err:
        return refuse(f"internal error while writing ({type(err).__name__}: {err}); nothing was written")
    written = f"the files were written ({', '.join(map(str, files))})" if files else "nothing was written"
    try:
        release()   # Ctrl-C or SIGTERM during the swap lands here, with the files in place
        printed = emit(output.text)
        ended()
    except KeyboardInterrupt:
        return refuse(f"interrupted; {written}")
    except Exception as err:   # never a traceback
        return refuse(f"internal error while printing ({type(err).__name__}: {err}); {written}")
    if printed or status == 2:
        return status
    # Standard output is full, closed or gone: not the gate's exit 1, whatever the run found
    return refuse(f"cannot write to standard output; {written}")
