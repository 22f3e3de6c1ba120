"""A stop that hangs names itself: every thread's stack, what the stop still waits for, and the
children's state, in a file that is kept.

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

#: how long a stop may take before it is reported (the target of issue 57: 5 s)
STOP_BOUND = 5.0
#: a stop still not over is reported again this often
REPEAT = 15.0
#: the C-level fallback fires this long after the bound (the Python dump goes first)
FALLBACK_DELAY = 2.0
#: the part of a stop from its signal to the services' stop (the reactor finishing what it was doing)
REACTOR = "the reactor, to begin the stop"


class StopWatch:
    """Armed once per process (``arm``); ``waiting_for(name, deferred)`` names a part of the stop until
    its Deferred fires. ``directory`` is where the report goes; ``bound`` and ``repeat`` in seconds."""

    def __init__(self, directory, bound=STOP_BOUND, repeat=REPEAT, what="namesrv", stderr_fd=2):
        self.directory = directory
        self.bound = bound
        self.repeat = repeat
        self.what = what
        self.stderr_fd = stderr_fd
        self.armed_at = None
        self.why = None
        self.reports = []              # paths written (one per stop that hung: appended to)
        self.took = {}                 # name -> seconds, of each part of the stop that ended
        self._pending = {}             # name -> when it began
        self._lock = threading.Lock()
        self._thread = None

    # -- the stop begins -----------------------------------------------------------------------
    def start(self, reactor):
        """Watch this process's stops: arm at the reactor's shutdown (before the services stop) and, once
        the reactor runs (its own signal handlers are in place by then), as SIGTERM or SIGINT arrives."""
        reactor.addSystemEventTrigger("before", "shutdown", self.arm, "reactor shutdown")
        reactor.callWhenRunning(self._install_on_main_thread)

    def _install_on_main_thread(self):
        if threading.current_thread() is threading.main_thread():
            self.install_signal_handlers()

    def arm(self, why):
        """The stop begins (``why``: "SIGTERM", "reactor shutdown"...): start the watchdog, once."""
        with self._lock:
            if self.armed_at is not None:
                return
            self.armed_at, self.why = time.monotonic(), why
            # a signal is handled between two bytecodes: the reactor thread may be busy (or stuck) before the
            # services' stop begins (stop_children)
            self._pending[REACTOR] = self.armed_at
        self._thread = threading.Thread(target=self._watch, name="namesrv-stop-watch", daemon=True)
        self._thread.start()
        try:
            faulthandler.dump_traceback_later(self.bound + FALLBACK_DELAY, repeat=False, file=self.stderr_fd)
        except (ValueError, OSError):   # no usable stderr: the Python report is all there is
            pass

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
        self._end(REACTOR)

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
            return sorted(self._pending)

    def summary(self, at_least=0.1):
        """" in 1.2 s (read workers 0.9 s, route snapshot 0.2 s)": how long the stop has taken so far and its
        parts that took ``at_least`` seconds, slowest first ("" before a stop)."""
        if self.armed_at is None:
            return ""
        with self._lock:
            slow = sorted(((seconds, name) for name, seconds in self.took.items() if seconds >= at_least), reverse=True)
        parts = ", ".join("%s %.2f s" % (name, seconds) for seconds, name in slow)
        return " in %.2f s%s" % (time.monotonic() - self.armed_at, " (%s)" % parts if parts else "")

    def install_signal_handlers(self):
        """Arm on SIGTERM and SIGINT before the handlers already there (the reactor's) run: call once the
        reactor has installed its own (``reactor.callWhenRunning``), on the main thread."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(signum)
            if isinstance(previous, _Arming):
                previous.watch = self   # a second service in this process (tests): the newest is watched
            elif callable(previous):   # SIG_DFL / SIG_IGN: nobody stops on it here, nothing to watch
                signal.signal(signum, _Arming(self, signum, previous))

    # -- the report ------------------------------------------------------------------------------
    def _watch(self):
        delay = self.bound
        while True:
            time.sleep(delay)   # a thread of its own: it only ever waits here
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


class _Arming:
    """A signal handler that arms the watch, then hands the signal to the handler that was there."""

    def __init__(self, watch, signum, previous):
        self.watch = watch
        self.name = signal.Signals(signum).name
        self.previous = previous

    def __call__(self, signum, frame):
        self.watch.arm(self.name)
        return self.previous(signum, frame)


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


