"""A Spark standalone cluster on 127.0.0.1 (one master, one worker) started from the installed pyspark.

Both daemons are run in the foreground through ``bin/spark-class`` (which ``exec``s the JVM, so the
PID we hold is the JVM's) and are stopped by PID; nothing is daemonized, nothing outlives the tests.
The master and worker logs are kept in the cluster directory to explain a failed start.
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pyspark
from tests.integration.server import free_port

SPARK_HOME = os.path.dirname(os.path.abspath(pyspark.__file__))
START_TIMEOUT_S = 90


def spark_env(base=None):
    """Environment for the daemons and for driver processes: loopback only, our Python everywhere."""
    env = dict(base if base is not None else os.environ)
    env.update(SPARK_HOME=SPARK_HOME, SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_HOSTNAME="localhost",
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_NO_DAEMONIZE="1")
    return env


class StandaloneCluster:
    """``start()`` waits until the worker is registered with the master; ``stop()`` ends both by PID."""

    def __init__(self, directory, cores=2, memory="1g"):
        self.directory = directory
        self.cores, self.memory = cores, memory
        self.port, self.ui_port, self.worker_ui_port = free_port(), free_port(), free_port()
        self.procs = []

    @property
    def url(self):
        return "spark://127.0.0.1:%d" % self.port

    def _spawn(self, name, args):
        log = open(os.path.join(self.directory, name + ".log"), "wb")
        env = spark_env()
        env["SPARK_WORKER_DIR"] = os.path.join(self.directory, "work")
        proc = subprocess.Popen([os.path.join(SPARK_HOME, "bin", "spark-class")] + args, stdout=log,
                                stderr=subprocess.STDOUT, env=env, cwd=self.directory, start_new_session=True)
        log.close()
        self.procs.append(proc)
        return proc

    def start(self):
        os.makedirs(self.directory, exist_ok=True)
        self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(self.port), "--webui-port", str(self.ui_port)])
        self._spawn("worker", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                               "--webui-port", str(self.worker_ui_port), "--cores", str(self.cores),
                               "--memory", self.memory, self.url])
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError("spark daemon exited with %s:\n%s" % (proc.returncode, self.logs()))
            if self.alive_workers() >= 1:
                return self
            time.sleep(0.5)
        raise RuntimeError("no worker registered within %d s:\n%s" % (START_TIMEOUT_S, self.logs()))

    def alive_workers(self):
        """Workers the master lists as ALIVE (its JSON status page, on loopback)."""
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/json/" % self.ui_port, timeout=2) as r:
                status = json.load(r)
        except (OSError, ValueError):
            return 0
        return sum(1 for w in status.get("workers", []) if w.get("state") == "ALIVE")

    def completed_apps(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/json/" % self.ui_port, timeout=2) as r:
            return json.load(r).get("completedapps", [])

    def logs(self):
        text = []
        for name in ("master", "worker"):
            path = os.path.join(self.directory, name + ".log")
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    text.append("--- %s ---\n%s" % (name, f.read()[-3000:]))
        return "\n".join(text)

    def stop(self):
        for proc in reversed(self.procs):  # the worker first: it kills its executors on SIGTERM
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
        self.procs = []
