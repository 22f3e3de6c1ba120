"""A stop that hangs names itself: the report of namesrv/observe/stopwatch.py, and a real `twistd namesrv`
whose stop hangs leaving one in its logDir."""

import faulthandler
import glob
import os
import signal
import subprocess
import sys

from twisted.application import service
from twisted.internet import defer, task

from namesrv.observe.stopwatch import REACTOR, STOP_BOUND, StopWatch, stop_children
from tests.dropins import processor_source, write_dropin
from tests.integration.server import NamesrvProcess


class Part(service.Service):
    def __init__(self, name, stopped):
        self.name = name
        self.stopped = stopped

    def stopService(self):
        service.Service.stopService(self)
        return self.stopped


def quiet_watch(directory):
    """A watch armed with a bound nothing reaches in a test (the report is asked for directly)."""
    return StopWatch(str(directory), bound=3600, repeat=3600)


def test_the_report_names_what_the_stop_still_waits_for_every_thread_and_the_children(tmp_path):
    watch = quiet_watch(tmp_path / "logs")
    parent = service.MultiService()
    stuck, done = defer.Deferred(), defer.Deferred()
    Part("read workers", stuck).setServiceParent(parent)
    Part("remoting port", done).setServiceParent(parent)
    parent.startService()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        watch.arm("SIGTERM")
        stopping = stop_children(parent, watch)
        done.callback(None)
        assert watch.pending() == ["read workers"]
        path = watch.report()
    finally:
        faulthandler.cancel_dump_traceback_later()
        child.kill()
        child.wait()
    with open(path) as f:
        report = f.read()
    assert os.path.dirname(path) == str(tmp_path / "logs") and "stop-hang" in os.path.basename(path)
    assert "(SIGTERM)" in report and "still waiting for: read workers\n" in report
    assert "test_the_report_names_what_the_stop_still_waits_for" in report   # this thread's stack
    assert "  %d " % child.pid in report and "time.sleep(30)" in report        # the child, with its command
    assert watch.report() == path                                             # a second look: appended
    with open(path) as f:
        assert f.read().count("has not stopped") == 2
    stuck.callback(None)
    assert stopping.called and watch.pending() == []


class CallsFromThreads(task.Clock):
    def __init__(self):
        task.Clock.__init__(self)
        self.from_threads = []

    def callFromThread(self, f, *args):
        self.from_threads.append((f, args))


def test_a_signal_arms_the_watch_and_runs_the_reactors_handler_on_the_reactor_thread(tmp_path):
    """The handler that was there (Twisted's, which logs) runs later, from the reactor's queue, never in the
    signal handler: the interrupted code may hold the lock it would take. Here the main thread holds such a
    lock (as the log file's observer holds its RLock) when a real SIGTERM arrives."""
    import threading
    from namesrv.observe.stopwatch import SignalsOnTheReactor
    watch = quiet_watch(tmp_path)
    reactor = CallsFromThreads()
    held = threading.Lock()
    heard = []

    def twisteds_handler(signum, frame):   # as reactor.sigTerm: it logs, which takes a lock
        heard.append(held.acquire(timeout=1))
        held.release()

    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        signal.signal(signal.SIGTERM, twisteds_handler)
        SignalsOnTheReactor(reactor, before=watch.arm).install()
        with held:                                # the main thread is in the middle of a log line...
            os.kill(os.getpid(), signal.SIGTERM)  # ...when SIGTERM arrives
            for _ in range(1000):
                if watch.armed_at is not None:    # the handler has run (between two bytecodes of this loop)
                    break
        assert watch.why == "SIGTERM" and heard == [] and len(reactor.from_threads) == 1
        f, args = reactor.from_threads[0]
        f(*args)                                  # the reactor thread, later: the lock is free
        assert heard == [True]
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def test_the_reactors_shutdown_arms_it_and_the_summary_names_the_slow_parts(tmp_path):
    watch = quiet_watch(tmp_path)
    clock = task.Clock()
    triggers = []
    clock.addSystemEventTrigger = lambda phase, event, f, *args: triggers.append((phase, event, f, args))
    clock.callWhenRunning = lambda f: None
    watch.start(clock)
    assert watch.summary() == ""
    ((phase, event, arm, args),) = triggers
    try:
        assert (phase, event) == ("before", "shutdown")
        arm(*args)
        assert watch.pending() == [REACTOR]    # the services' stop has not begun
        stop_children(service.MultiService(), watch)
        with watch.part("route snapshot"):
            pass
        watch.took["read workers"] = 0.5
        assert watch.pending() == [] and watch.why == "reactor shutdown"
        assert watch.summary().endswith("(read workers 0.50 s)")
    finally:
        faulthandler.cancel_dump_traceback_later()


def test_a_real_server_whose_stop_hangs_leaves_its_stacks_in_logDir(tmp_path):
    """A processor whose stop() blocks past the bound (as a stuck write would): the report appears in logDir
    naming the processor and the frame it is stuck in, and the log says where."""
    source = processor_source("Stuck", "stuck", 7778, "return request.make_response(0)", header="import threading",
                              stop="threading.Event().wait(%r)   # a flush that hangs" % (STOP_BOUND + 1.5))
    extra = write_dropin(tmp_path / "extra", "stuck_processor", "stuck", "Stuck", source)
    server = NamesrvProcess(tmp_path, {"routeReadWorkers": "1"}, extra_pythonpath=[extra]).start()
    code = server.stop(timeout=60)
    assert code in (0, -signal.SIGTERM), server.hang_report
    reports = glob.glob(str(tmp_path / "logs" / "namesrv-stop-hang-*.txt"))
    assert len(reports) == 1, server.log()[-3000:]
    with open(reports[0]) as f:
        report = f.read()
    assert "still waiting for: processor stuck" in report
    assert "in stop" in report and "stuck_processor.py" in report
    log = server.log()
    assert "stop did not end within %.1f s" % STOP_BOUND in log and reports[0] in log
    assert "The Name Server stopped in" in log
