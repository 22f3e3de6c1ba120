"""A stop that hangs names itself: every thread's stack, what the stop still waits for, and the
children's state, in a file that is kept. And a SIGTERM that never deadlocks the process it stops.

``systemctl stop`` sends SIGTERM and, 90 s later, SIGKILL: a stop that hangs loses the clean shutdown
(the last route snapshot, the KV flush) and, without this, leaves nothing to read. So from the moment a
stop begins (SIGTERM or SIGINT arrives, or the reactor begins its shutdown, whichever comes first), a
watchdog thread waits ``STOP_BOUND`` seconds. A process still there then writes
``<logDir>/namesrv-stop-hang-<time>-<pid>.txt``: the parts of the stop not finished yet (``waiting_for``),
every thread's stack (faulthandler) and each child process (a read worker) with its state from /proc; and
again every ``REPEAT`` seconds, appended, so a second look shows whether anything moves. One line in the
log names the file.

A thread, not a reactor timer: a reactor that is itself stuck must be seen too. A thread that holds the GIL
for ever would keep this one from running, so ``faulthandler.dump_traceback_later`` (C level, no GIL) is
armed beside it and writes the stacks to stderr (the journal under systemd) a little later.

**Signals run nothing on the spot** (``SignalsOnTheReactor``). Python runs a signal handler between two
bytecodes of whatever the main thread was doing. Twisted's SIGTERM and SIGINT handlers log "Received
SIGTERM, shutting down." from there, and the log file's observer is synchronized by Twisted with a
pure-Python RLock: a signal landing between that lock's inner acquire and its owner being recorded (or the
reverse, in release) made the handler wait for a lock its own thread held, for ever. Under load the main
thread logs all the time (a line per KV write, per bad frame), and tools.stopstress caught it: stop 136 of
seed 57, its report showing the handler's frames on top of the interrupted log call, both in RLock.acquire.
That was the SIGTERM under load that did not stop the server (tests/robustness/test_faults.py, the fuzz
tests' teardown). So the handlers installed here only note the signal (attributes, no lock, no thread) and
hand the reactor's own handler to the reactor thread (``callFromThread``: a list append and a byte on its
waker), where it logs and stops as it always did; the watchdog thread, idle until then, sees the note.
"""

import contextlib
import faulthandler
import os
import signal
import threading
import time

from twisted.application import service
from twisted.internet import defer
from twisted.logger import Logger

log = Logger()

#: how long a stop may take before it is reported: the stop target (bench/results/design-figures.md#stop-bound)
STOP_BOUND = 5.0
#: a stop still not over is reported again this often
REPEAT = 15.0
#: the C-level fallback fires this long after the bound (the Python dump goes first)
FALLBACK_DELAY = 2.0
#: the part of a stop from its signal to the services' stop (the reactor finishing what it was doing)
REACTOR = "the reactor, to begin the stop"
#: how often the idle watchdog looks whether a stop began (a signal handler may not wake a thread: a lock)
LOOK = 0.1


class StopWatch:
    """Armed once per process (``arm``); ``waiting_for(name, deferred)`` names a part of the stop until
    its Deferred fires. ``directory`` is where the report goes; ``bound`` and ``repeat`` in seconds."""

    def __init__(self, directory, bound=STOP_BOUND, repeat=REPEAT, what="namesrv", stderr_fd=2):
        self.directory = directory
        self.bound = bound
        self.repeat = repeat
        self.what = what
        self.stderr_fd = stderr_fd
        self.armed_at = None           # when the stop began (monotonic); set by ``arm`` alone
        self.why = None
        self.stopping_began = None     # when the services' stop began (``began_stopping``)
        self.reports = []              # paths written (one per stop that hung: appended to)
        self.took = {}                 # name -> seconds, of each part of the stop that ended
        self._pending = {}             # name -> when it began
        self._lock = threading.Lock()  # never taken by a signal handler
        self._thread = None

    # -- the stop begins -----------------------------------------------------------------------
    def start(self, reactor):
        """Watch this process's stops: the watchdog thread (idle until a stop begins), armed at the reactor's
        shutdown (before the services stop) and, once the reactor runs (its own signal handlers are in place
        by then), as SIGTERM or SIGINT arrives (SignalsOnTheReactor)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="namesrv-stop-watch", daemon=True)
            self._thread.start()
        reactor.addSystemEventTrigger("before", "shutdown", self.arm, "reactor shutdown")
        signals = SignalsOnTheReactor(reactor, before=self.arm)
        reactor.callWhenRunning(signals.install)

    def arm(self, why):
        """The stop begins (``why``: "SIGTERM", "reactor shutdown"...). Called from a signal handler too: it
        only sets attributes (no lock, no thread started, nothing logged); the watchdog thread notices."""
        if self.armed_at is None:
            self.why = why
            self.armed_at = time.monotonic()

    def waiting_for(self, name, deferred):
        """``name`` is part of the stop until ``deferred`` fires (whatever its result); returns it."""
        self._begin(name)

        def done(result):
            self._end(name)
            return result
        return deferred.addBoth(done)

    @contextlib.contextmanager
    def part(self, name):
        """``name`` is part of the stop while the block runs (a synchronous write: the route snapshot)."""
        self._begin(name)
        try:
            yield
        finally:
            self._end(name)

    def began_stopping(self):
        """The services' stop begins: the reactor is there (``REACTOR`` ends)."""
        self.stopping_began = time.monotonic()
        if self.armed_at is not None:
            with self._lock:
                self.took[REACTOR] = self.stopping_began - self.armed_at

    def _begin(self, name):
        with self._lock:
            self._pending[name] = time.monotonic()

    def _end(self, name):
        with self._lock:
            began = self._pending.pop(name, None)
            if began is not None:
                self.took[name] = time.monotonic() - began

    def pending(self):
        with self._lock:
            pending = sorted(self._pending)
        if self.armed_at is not None and self.stopping_began is None:
            pending.insert(0, REACTOR)
        return pending

    def summary(self, at_least=0.1):
        """" in 1.2 s (read workers 0.9 s, route snapshot 0.2 s)": how long the stop has taken so far and its
        parts that took ``at_least`` seconds, slowest first ("" before a stop)."""
        if self.armed_at is None:
            return ""
        with self._lock:
            slow = sorted(((seconds, name) for name, seconds in self.took.items() if seconds >= at_least), reverse=True)
        parts = ", ".join("%s %.2f s" % (name, seconds) for seconds, name in slow)
        return " in %.2f s%s" % (time.monotonic() - self.armed_at, " (%s)" % parts if parts else "")

    # -- the report ------------------------------------------------------------------------------
    def _watch(self):
        """The watchdog: idle until a stop begins, then a report at the bound and every ``repeat`` after."""
        while self.armed_at is None:
            time.sleep(LOOK)   # a thread of its own: it only ever waits here
        fallback = self.armed_at + self.bound + FALLBACK_DELAY - time.monotonic()
        try:
            faulthandler.dump_traceback_later(max(fallback, 0.001), repeat=False, file=self.stderr_fd)
        except (ValueError, OSError):   # no usable stderr: the Python report is all there is
            pass
        delay = self.armed_at + self.bound - time.monotonic()
        while True:
            if delay > 0:
                time.sleep(delay)
            self.report()
            delay = self.repeat

    def report(self):
        """Write (append) the report now; its path, or None where it could not be written."""
        elapsed = time.monotonic() - self.armed_at if self.armed_at is not None else 0.0
        path = self.reports[0] if self.reports else os.path.join(
            self.directory, "%s-stop-hang-%s-%d.txt" % (self.what, time.strftime("%Y%m%d-%H%M%S"), os.getpid()))
        try:
            os.makedirs(self.directory, exist_ok=True)
            with open(path, "a") as f:
                f.write("%s (pid %d) has not stopped %.1f s after its stop began (%s); bound %.1f s\n"
                        % (self.what, os.getpid(), elapsed, self.why, self.bound))
                f.write("still waiting for: %s\n\n" % (", ".join(self.pending()) or
                                                       "nothing of the service's (every part of it has stopped: "
                                                       "what hangs comes after, the reactor joining its thread "
                                                       "pool or the process exiting; the main thread's stack says)"))
                f.write("threads:\n")
                f.flush()
                faulthandler.dump_traceback(f, all_threads=True)
                f.write("\nchildren:\n%s\n" % "".join(describe_process(pid) for pid in child_pids(os.getpid())))
        except OSError as e:
            log.error("stop did not end within {bound} s, and its report {path} could not be written: {err}",
                      bound=self.bound, path=path, err=e)
            return None
        if not self.reports:
            self.reports.append(path)
            log.error("stop did not end within {bound} s ({why}); still waiting for: {pending}; stacks and children "
                      "in {path}", bound=self.bound, why=self.why, pending=", ".join(self.pending()) or "-",
                      path=path)
        return path


class NullStopWatch:
    """No watch (a service built in a test, whose process goes on after the stop): tracks nothing."""

    reports = ()

    def start(self, reactor):
        pass

    def arm(self, why):
        pass

    def waiting_for(self, name, deferred):
        return deferred

    def part(self, name):
        return contextlib.nullcontext()

    def began_stopping(self):
        pass

    def pending(self):
        return []

    def summary(self, at_least=0.1):
        return ""


class SignalsOnTheReactor:
    """SIGTERM and SIGINT handled on the reactor thread, not in the signal handler (the module's docstring
    says why): ``install`` (on the main thread, once the reactor's own handlers are in place) puts a handler
    before each that calls ``before(name)`` (attributes only) and hands the reactor's handler to
    ``reactor.callFromThread``. Read workers install it too, with nothing before."""

    def __init__(self, reactor, before=None):
        self.reactor = reactor
        self.before = before

    def install(self):
        if threading.current_thread() is not threading.main_thread():
            return   # only the main thread may set handlers (a test's reactor in another thread)
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(signum)
            if isinstance(previous, _OnTheReactor):
                previous.before = self.before   # a second service in this process (tests): the newest watches
            elif callable(previous):   # SIG_DFL / SIG_IGN: nobody stops on it here
                signal.signal(signum, _OnTheReactor(self.reactor, signum, previous, self.before))


class _OnTheReactor:
    """A signal handler that notes the signal and runs the handler that was there on the reactor thread."""

    def __init__(self, reactor, signum, previous, before):
        self.reactor = reactor
        self.name = signal.Signals(signum).name
        self.previous = previous
        self.before = before

    def __call__(self, signum, frame):
        if self.before is not None:
            self.before(self.name)
        self.reactor.callFromThread(self.previous, signum, None)


def stop_children(parent, watch):
    """``MultiService.stopService`` of ``parent`` (its children in reverse order), each child's stop
    named in ``watch`` until it ends: a DeferredList."""
    watch.began_stopping()
    service.Service.stopService(parent)
    stopping = []
    for child in reversed(list(parent)):
        name = child.name or type(child).__name__
        stopping.append(watch.waiting_for(name, defer.maybeDeferred(child.stopService)))
    return defer.DeferredList(stopping)


def child_pids(pid):
    """The PIDs whose parent is ``pid``, from /proc."""
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(name))
    return sorted(found)


def describe_process(pid):
    """One child: its PID, state, what it waits in (wchan) and its command line, from /proc."""
    def read(name):
        try:
            with open("/proc/%d/%s" % (pid, name), "rb") as f:
                return f.read()
        except OSError:
            return b""
    state = next((line.split(b":", 1)[1].strip() for line in read("status").splitlines()
                  if line.startswith(b"State:")), b"?")
    command = read("cmdline").replace(b"\0", b" ").strip()
    return "  %d %s wchan=%s: %s\n" % (pid, state.decode(errors="replace"), read("wchan").decode(errors="replace")
                                      or "-", command.decode(errors="replace")[:300])


