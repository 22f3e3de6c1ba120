"""Work that runs on another thread while the report's driver does something else.

A report's driver is one Python thread that alternates between waiting for Spark and working alone
(decoding the collected tables, writing the small tables' files, drawing the charts: seconds of Python).
Spark jobs that need nothing from that work can run meanwhile on the executors' cores, and a slow import
can run while the JVM starts. PySpark pins each Python thread to a JVM thread of its own, so a Spark
action on another thread is an ordinary, concurrent job.
"""

import importlib
import threading


class Background:
    """``fn(*args)`` on a daemon thread; ``result()`` waits for it and returns its value or raises its error."""

    def __init__(self, fn, *args):
        self._value = self._error = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), name="report-background", daemon=True)
        self._thread.start()

    def _run(self, fn, args):
        try:
            self._value = fn(*args)
        except BaseException as error:  # noqa: BLE001 - handed to the caller of result()
            self._error = error

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def preload(*modules):
    """Import ``modules`` on a background thread (an import in progress makes other importers wait
    for it, so using them later is safe at any time)."""
    return Background(lambda: [importlib.import_module(name) for name in modules])
