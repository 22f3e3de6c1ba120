"""A real Prometheus server (Debian's ``prometheus``) for tests: on a free 127.0.0.1 port, with its
own data directory, the project's rule file, and ended by its PID.

Its scrape configuration is conf/prometheus/prometheus.yml itself, with the example targets
replaced by the server under test and the intervals shortened, so the example is what runs.
"""

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

from tests.integration.server import REPO, free_port
from tools import processes


CONF = os.path.join(REPO, "conf", "prometheus")
SCRAPE_CONFIG = os.path.join(CONF, "prometheus.yml")
RULES = os.path.join(CONF, "namesrv-rules.yml")
#: rules for name servers that run the controller (their metrics exist only there)
CONTROLLER_RULES = os.path.join(CONF, "controller-rules.yml")
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
MISSING = "Prometheus is not installed (Debian package `prometheus`: prometheus and promtool)"


def scrape_config(targets, interval="1s"):
    """The example configuration aimed at ``targets`` (host:port of metrics ports), scraping every ``interval``."""
    with open(SCRAPE_CONFIG) as f:
        config = yaml.safe_load(f)
    config["global"].update(scrape_interval=interval, evaluation_interval=interval)
    config["rule_files"] = [RULES]
    for job in config["scrape_configs"]:
        job["scrape_timeout"] = interval
        for group in job["static_configs"]:
            group["targets"] = list(targets)
    return config


class PrometheusProcess:
    def __init__(self, workdir, config):
        self.workdir = os.path.join(str(workdir), "prometheus")
        os.makedirs(self.workdir, exist_ok=True)
        self.port = free_port()
        self.config_file = os.path.join(self.workdir, "prometheus.yml")
        with open(self.config_file, "w") as f:
            yaml.safe_dump(config, f)
        self.log_file = os.path.join(self.workdir, "prometheus.log")
        self.process = None

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self, timeout=30.0):
        with open(self.log_file, "wb") as log:
            self.process = subprocess.Popen(
                [PROMETHEUS, "--config.file=" + self.config_file,
                 "--storage.tsdb.path=" + os.path.join(self.workdir, "data"),
                 "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"],
                cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("prometheus exited with %s:\n%s" % (self.process.returncode, self.log()))
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except (OSError, urllib.error.HTTPError):
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("prometheus not ready within %ss:\n%s" % (timeout, self.log()))

    def stop(self, timeout=20.0):
        processes.stop(self.process, timeout=timeout)

    def log(self):
        return processes.read_log(self.log_file)

    # -- HTTP API --------------------------------------------------------------------------
    def api(self, path, **params):
        """GET /api/v1/<path>; returns ``data``, raises PrometheusError with Prometheus's own error."""
        url = "%s/api/v1/%s?%s" % (self.url, path, urllib.parse.urlencode(params))
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                body = json.loads(answer.read())
        except urllib.error.HTTPError as e:
            body = json.loads(e.read() or b"{}")
        if body.get("status") != "success":
            raise PrometheusError("%s: %s: %s" % (params.get("query", path), body.get("errorType"), body.get("error")))
        return body["data"]

    def query(self, expr):
        """An instant query's result as a list of (labels, float value)."""
        data = self.api("query", query=expr)
        if data["resultType"] == "scalar":
            return [({}, float(data["result"][1]))]
        return [(item["metric"], float(item["value"][1])) for item in data["result"]]

    def alerts(self, name):
        return [a for a in self.api("alerts")["alerts"] if a["labels"].get("alertname") == name]

    def wait_for(self, what, check, timeout=30.0):
        """Poll ``check()`` until it returns something true; fail naming ``what`` after ``timeout``."""
        return processes.wait_for(check, timeout, "Prometheus never saw %s" % what, every=0.25, error=AssertionError)


class PrometheusError(Exception):
    pass
