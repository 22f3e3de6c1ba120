"""A stop that hangs names itself: the report of namesrv/observe/stopwatch.py, and a real `twistd namesrv`
whose stop hangs leaving one in its logDir."""

import faulthandler
import glob
import os
import signal
import subprocess
import sys
import textwrap

from twisted.application import service
from twisted.internet import defer, task

from namesrv.observe.stopwatch import STOP_BOUND, StopWatch, stop_children
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


def test_the_signals_arm_it_before_the_handler_that_was_there(tmp_path):
    watch = quiet_watch(tmp_path)
    heard = []
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        signal.signal(signal.SIGTERM, lambda signum, frame: heard.append(signum))
        watch.install_signal_handlers()
        signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)
        assert heard == [signal.SIGTERM] and watch.why == "SIGTERM" and watch.armed_at is not None
    finally:
        faulthandler.cancel_dump_traceback_later()
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
        with watch.part("route snapshot"):
            pass
        watch.took["read workers"] = 0.5
        assert watch.summary().endswith("(read workers 0.50 s)") and watch.why == "reactor shutdown"
    finally:
        faulthandler.cancel_dump_traceback_later()


def test_a_real_server_whose_stop_hangs_leaves_its_stacks_in_logDir(tmp_path):
    """A processor whose stop() blocks past the bound (as a stuck write would): the report appears in logDir
    naming the processor and the frame it is stuck in, and the log says where."""
    extra = tmp_path / "extra"
    (extra / "twisted" / "plugins").mkdir(parents=True)
    (extra / "stuck_processor.py").write_text(textwrap.dedent("""
        import threading
        from zope.interface import implementer
        from namesrv.interfaces import IRequestProcessor

        @implementer(IRequestProcessor)
        class Stuck:
            name = "stuck"
            codes = frozenset([7778])
            def __init__(self, context):
                pass
            def reject_request(self, request):
                return None
            def process_request(self, request, connection):
                return request.make_response(0)
            def stop(self):
                threading.Event().wait(%r)   # a flush that hangs
    """ % (STOP_BOUND + 1.5)))
    (extra / "twisted" / "plugins" / "stuck_plugin.py").write_text(
        "from namesrv.plugin import ProcessorPlugin\nstuck = ProcessorPlugin('stuck', 'stuck_processor', 'Stuck')\n")
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
