"""tools.stopstress: how one stop is timed and checked, and the campaign's figures (the campaign itself is a
tool: `python -m tools.stopstress`)."""

import subprocess
import sys
import textwrap
import time

from tools.stopstress.procs import descendants, running, timed_stop
from tools.stopstress.summary import summary


class Stub:
    """A "server": a Python process (and whatever it starts) with the files a timed stop reads."""

    def __init__(self, tmp_path, code):
        self.properties = {"logDir": str(tmp_path / "logs")}
        self.log_file = tmp_path / "out.log"
        self.output = open(self.log_file, "ab")
        self.process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=self.output,
                                        stderr=subprocess.STDOUT)

    def workers(self):
        return descendants(self.process.pid)

    def log(self):
        return self.log_file.read_text()

    def log_files(self):
        return [str(self.log_file)]


def ready(stub, children):
    """Wait until the stub has started its ``children`` (it prints "ready" once they run)."""
    for _ in range(500):
        if "ready" in stub.log() and len(stub.workers()) >= children:
            return
        time.sleep(0.01)
    raise AssertionError("the stub did not start: %s" % stub.log())


CLEAN = """
    import signal, subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    def stop(*args):
        child.terminate(); child.wait(); print("Server Shut Down.", flush=True); sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    print("ready", flush=True)
    while True:
        time.sleep(1)
"""

LEAVES_ITS_CHILD = """
    import subprocess, sys, time
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    print("ready", flush=True)
    time.sleep(60)
"""


def test_a_clean_stop_is_timed_with_its_children_gone(tmp_path):
    stub = Stub(tmp_path, CLEAN)
    ready(stub, 1)
    record = timed_stop(stub, bound=30.0)
    assert record["exit"] == 0 and record["clean"] and record["workers"] == 1 and record["orphans"] == 0
    assert not record["hung"] and record["seconds"] is not None


def test_a_process_left_behind_is_an_orphan_and_is_ended(tmp_path):
    stub = Stub(tmp_path, LEAVES_ITS_CHILD)
    ready(stub, 1)
    (child,) = stub.workers()
    record = timed_stop(stub, bound=30.0)
    assert record["orphans"] == 1
    for _ in range(500):   # SIGKILLed: gone once the kernel has delivered it
        if not running(child):
            break
        time.sleep(0.01)
    assert not running(child)


def test_the_summary_counts_hangs_orphans_and_unclean_stops_per_moment():
    records = [
        {"kind": "load", "seconds": 0.1, "hung": False, "orphans": 0, "clean": True, "tracebacks": 0},
        {"kind": "load", "seconds": 6.0, "hung": True, "orphans": 0, "clean": True, "tracebacks": 0},
        {"kind": "respawn", "seconds": 0.3, "hung": False, "orphans": 2, "clean": False, "tracebacks": 0},
        {"kind": "takeover", "seconds": None, "hung": False, "orphans": 0, "clean": True, "tracebacks": 0,
         "exited_before": True},
    ]
    figures = summary(records, bound=5.0)
    assert (figures["stops"], figures["hangs"], figures["orphans"], figures["unclean"]) == (3, 1, 2, 1)
    assert figures["exited_before"] == 1 and figures["by_moment"]["load"]["max"] == 6.0
    assert "| load | 2 | 1 | 0 | 0 | 100 ms |" in figures["table"]
