"""A class-data-sharing archive for the driver JVM a report starts: Spark's classes mapped, not loaded.

A report's JVM loads about 27,000 classes from some 250 jars: reading, parsing and verifying them was
half of a session's start (8 s of a 254 k-line report's 50 on 2 cores) and a large part of the first
queries' planning. The JVM can archive the classes an application loaded (``-XX:ArchiveClassesAtExit``,
JDK 13+) and map that archive at the next start (``-XX:SharedArchiveFile``): the session starts in about
half the time and each first use of a class costs nothing.

The archive belongs to one Java runtime and one set of Spark jars, so its name carries a fingerprint of
both (``spark-<fingerprint>.jsa`` under ``~/.cache/rocketmq-namesrv``, or ``$XDG_CACHE_HOME``); the
first report run with them writes it when its JVM exits (a few seconds, once), later runs map it. Only
a JVM this process launches takes part: under ``spark-submit`` the JVM is up before our code runs.

A truncated archive crashes the JVM, so one is only ever put in place by a rename after the JVM that
wrote it exited cleanly, its size is recorded next to it and checked before use, and a JVM that fails
to start with it has it removed (``report.main`` then starts again without).
"""

import glob
import hashlib
import json
import os
import shutil
import subprocess
import time

PREFIX = "spark-"
#: Bump when the options change what goes into an archive.
VERSION = 1
#: The archive's own log lines ("Skipping ...: Signed JAR" while writing, a mismatch when reading) say
#: nothing a report user can act on; a JVM that cannot use the archive simply loads its classes.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
#: A temporary archive this old was left by a JVM that died while writing it.
STALE_TMP_S = 3600


def default_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rocketmq-namesrv")


def java_executable():
    """The ``java`` that Spark's launch scripts run: ``$JAVA_HOME/bin/java``, else the one on the PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def spark_home():
    from pyspark.find_spark_home import _find_spark_home
    return _find_spark_home()


def _stat(path):
    st = os.stat(path)
    return [os.path.realpath(path), st.st_size, int(st.st_mtime)]


def fingerprint(home, java):
    """A short hash of what an archive depends on: the Java runtime and the jars on Spark's class path
    (names, sizes, modification times), or None when either cannot be found."""
    if not java or not home:
        return None
    try:
        java_bin = _stat(java)
        jars = sorted(_stat(path) for path in glob.glob(os.path.join(home, "jars", "*.jar")))
    except OSError:
        return None
    if not jars:
        return None
    text = json.dumps([VERSION, java_bin, os.path.realpath(home), jars])
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


class ClassCache:
    """The archive for this Java runtime and these jars: ``java_options()`` to start a JVM with it (or
    to write it), then ``finish(exit_code)`` once that JVM has exited."""

    def __init__(self, directory=None, home=None, java=None):
        self.directory = directory or default_dir()
        self.home = home if home is not None else spark_home()
        self.java = java if java is not None else java_executable()
        key = fingerprint(self.home, self.java)
        self.path = os.path.join(self.directory, PREFIX + key + ".jsa") if key else None
        self.tmp = None
        self.state = "off" if key is None else ("used" if self.usable() else "writing")

    def _size_file(self):
        return self.path[:-len(".jsa")] + ".json"

    def usable(self):
        """The archive is there and has the size it was written with."""
        try:
            with open(self._size_file()) as f:
                return json.load(f).get("size") == os.path.getsize(self.path)
        except (OSError, ValueError, AttributeError):
            return False

    def java_options(self):
        """JVM options: map the archive, or write it at exit (into a private temporary file)."""
        if self.state == "used":
            return "-XX:SharedArchiveFile=%s %s" % (self.path, QUIET)
        if self.state == "writing":
            os.makedirs(self.directory, exist_ok=True)
            self.tmp = "%s.%d.tmp" % (self.path, os.getpid())
            return "-XX:ArchiveClassesAtExit=%s %s" % (self.tmp, QUIET)
        return ""

    def finish(self, exit_code):
        """After the JVM exited: put a newly written archive in place if that JVM exited cleanly, else
        drop what it left; then remove what is left of other runs (``clean``)."""
        if self.state != "writing" or not self.tmp:
            return self.state
        written = exit_code == 0 and os.path.exists(self.tmp) and os.path.getsize(self.tmp) > 0
        if written and not self._starts_with(self.tmp):
            written = False
        if written:
            size = os.path.getsize(self.tmp)
            os.replace(self.tmp, self.path)
            tmp_size = self._size_file() + ".%d.tmp" % os.getpid()
            with open(tmp_size, "w") as f:
                json.dump({"size": size, "spark_home": os.path.realpath(self.home), "java": self.java}, f)
            os.replace(tmp_size, self._size_file())
            self.state = "written"
        else:
            self._remove(self.tmp)
            self.state = "off"
        self.clean()
        return self.state

    def clean(self, now=None):
        """Remove the archives of Spark installations or Java runtimes that are gone (another virtualenv
        keeps its own) and temporary files of JVMs that died while writing one."""
        now = time.time() if now is None else now
        for path in glob.glob(os.path.join(self.directory, PREFIX + "*")):
            if path.endswith(".tmp"):
                try:
                    if now - os.path.getmtime(path) > STALE_TMP_S:
                        self._remove(path)
                except OSError:
                    pass
            elif path.endswith(".json"):
                try:
                    with open(path) as f:
                        saved = json.load(f)
                except (OSError, ValueError):
                    saved = {}
                if not (os.path.isdir(saved.get("spark_home") or "") and os.path.exists(saved.get("java") or "")):
                    self._remove(path)
                    self._remove(path[:-len(".json")] + ".jsa")

    def _starts_with(self, archive):
        """Does a JVM start with ``archive``? (One that cannot use it starts without; a damaged one
        crashes it.)"""
        try:
            return subprocess.run([self.java, "-XX:SharedArchiveFile=" + archive] + QUIET.split() + ["-version"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def discard(self):
        """Forget the archive (a JVM could not start with it)."""
        for path in (self.path, self._size_file() if self.path else None, self.tmp):
            if path:
                self._remove(path)
        self.state = "off"

    @staticmethod
    def _remove(path):
        try:
            os.remove(path)
        except OSError:
            pass
