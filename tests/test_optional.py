"""A missing optional part is one line naming what to install, never a traceback."""

import os
import subprocess
import sys

from namesrv.optional import missing_part
from tests.integration.server import REPO
from tests.security.certs import write_pair


def test_known_parts_name_their_package_and_unknown_ones_are_left_alone():
    assert missing_part(ModuleNotFoundError("No module named 'OpenSSL'", name="OpenSSL")) == \
        "pyOpenSSL (TLS) is not installed: pip install 'twisted[tls]'"
    assert "rocketmq-namesrv[spark]" in missing_part(ModuleNotFoundError(name="pyspark.sql"))
    assert missing_part(ModuleNotFoundError(name="somethingelse")) is None


HIDE_OPENSSL = """
import sys
sys.modules["OpenSSL"] = None          # as if pyOpenSSL were not installed
from twisted.scripts.twistd import run
sys.argv = ["twistd", "-n", "--pidfile=", "namesrv", "-c", sys.argv[1]]
run()
"""


def test_tls_without_pyopenssl_refuses_to_start_with_one_line(tmp_path):
    cert, key, _ = write_pair(tmp_path)
    conf = tmp_path / "namesrv.properties"
    conf.write_text("listenPort=0\nkvConfigPath=%s\nlogDir=%s\ntlsMode=permissive\ntlsServerCertPath=%s\n"
                    "tlsServerKeyPath=%s\nrouteReadWorkers=0\n" % (tmp_path / "kv.json", tmp_path, cert, key))
    # HOME of its own: the default route snapshot (of port 0) is then its own, never one another run on this
    # machine holds at that moment (its refusal would name that file instead)
    done = subprocess.run([sys.executable, "-c", HIDE_OPENSSL, str(conf)], cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=REPO, HOME=str(tmp_path)))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "namesrv: refusing to start: pyOpenSSL (TLS) is not installed: pip install 'twisted[tls]'" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


HIDE_SPARK = """
import importlib.util, runpy, sys
real = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name in ("pyspark", "matplotlib") else real(name, *a)
sys.argv = ["spark.report", "--input", "x", "--output", "y"]
runpy.run_module("spark.report", run_name="__main__")
"""


def test_spark_report_without_its_extra_says_what_to_install(tmp_path):
    done = subprocess.run([sys.executable, "-c", HIDE_SPARK], cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=REPO))
    assert done.returncode == 1
    assert done.stderr.strip() == ("spark.report: PySpark and matplotlib (the charts) not installed: "
                                   "pip install 'rocketmq-namesrv[spark]'")
