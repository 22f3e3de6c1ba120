"""Scripted wrong starts of `twistd namesrv` and `twistd controller`: each must end in one line, exit 1.

    python -m tools.wrong_starts              # every scenario, a table and the counts
    python -m tools.wrong_starts --json

A live name server (with its embedded controller, status page and metrics port) runs first, from a
``-c`` file in a scratch HOME; then every scenario starts a second server the way an operator gets
it wrong: a busy or impossible port, a bad value, a misspelt key, a missing file, the live one's
files, its controller port... Each is judged on what the terminal shows: exactly one line, no
traceback, a non-zero exit status, and the property or port it is about. The log file twistd would
write is searched for a traceback too. Everything runs on 127.0.0.1 and stops by itself.
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from namesrv.config import instance_path  # noqa: E402
from tests.integration.server import REPO, TWISTD, NamesrvProcess, free_port  # noqa: E402

TIMEOUT = 60


class Scenario:
    """One wrong start: ``args`` after ``twistd [-n] --pidfile= --logfile=L``, the text its line must hold."""

    def __init__(self, name, args, expect, files=None, daemon=False, program="namesrv"):
        self.name, self.args, self.expect, self.files = name, args, expect, files or {}
        self.daemon, self.program = daemon, program


def controller_group(members, secret_file=None):
    """-c lines of a controller n0 embedded in a group of ``members`` on free ports, naming ``secret_file``
    (the group's secret) when given."""
    peers = ";".join("n%d-127.0.0.1:%d" % (index, free_port()) for index in range(members))
    lines = "enableControllerInNamesrv=true\ncontrollerDLegerSelfId=n0\ncontrollerDLegerPeers=%s\n" % peers
    return lines + ("controllerPeerSecretFile=%s\n" % secret_file if secret_file else "")


def scenarios(live, home, busy):
    """The wrong starts against ``live`` (its ports and files) and ``busy`` (ports another program listens on)."""
    ctrl = live.controller_port
    free = free_port()

    class Other:   # a listenPort of its own for each start (their default files follow it)
        def __add__(self, text):
            return "listenPort=%d\n" % free_port() + text
    other = Other()
    peers = "enableControllerInNamesrv=true\ncontrollerDLegerGroup=g\ncontrollerDLegerSelfId=n0\n"
    return [
        Scenario("busy port", ["namesrv", "--listenPort", str(busy[0])], "listenPort %d" % busy[0]),
        Scenario("busy port, daemon mode", ["namesrv", "--listenPort", str(busy[1])], "listenPort %d" % busy[1],
                 daemon=True),
        Scenario("port 99999 in the -c file", ["namesrv", "-c", "{f}"], "listenPort", {"f": "listenPort=99999\n"}),
        Scenario("port 99999 on the command line", ["namesrv", "--listenPort", "99999"], "listenPort"),
        Scenario("a port that is not a number", ["namesrv", "--listenPort", "nine"], "listenPort"),
        Scenario("a bad boolean", ["namesrv", "-c", "{f}"], "orderMessageEnable",
                 {"f": other + "orderMessageEnable=yes\n"}),
        Scenario("a bad boolean, daemon mode", ["namesrv", "-c", "{f}"], "orderMessageEnable",
                 {"f": other + "orderMessageEnable=yes\n"}, daemon=True),
        Scenario("an unknown key (misspelt)", ["namesrv", "-c", "{f}"], "did you mean listenPort",
                 {"f": "listenport=%d\n" % free_port()}),
        Scenario("a missing -c file", ["namesrv", "-c", os.path.join(home, "nowhere.properties")],
                 "nowhere.properties"),
        Scenario("a directory as the -c file", ["namesrv", "-c", home], "cannot read config file"),
        Scenario("a comment after a value", ["namesrv", "-c", "{f}"], "prometheusListenPort",
                 {"f": other + "prometheusListenPort=28080 # the port the list is served on\n"}),
        Scenario("a taken controller port", ["namesrv", "-c", "{f}"], "the controller's port",
                 {"f": other + peers + "controllerDLegerPeers=n0-127.0.0.1:%d\n" % ctrl}),
        Scenario("a second instance on the same KV file", ["namesrv", "-c", "{f}"], "kvConfigPath",
                 {"f": other + "kvConfigPath=%s\n" % live.kv_path}),
        Scenario("a second instance on the same route snapshot", ["namesrv", "-c", "{f}"], "routeSnapshotPath",
                 {"f": other + "routeSnapshotPath=%s\n" % live.snapshot_path}),
        Scenario("a second instance with the same -c file", ["namesrv", "-c", live.config_file, "--listenPort",
                                                             str(free)], "configStorePath"),
        Scenario("a second instance on the same runtime overlay", ["namesrv", "-c", "{f}"], "runtimeConfigPath",
                 {"f": other + "runtimeConfigPath=%s\n" % live.runtime_overlay}),
        Scenario("a runtime overlay holding a key that is not runtime", ["namesrv", "-c", "{f}"], "bindAddress is not "
                 "changeable at run time", {"f": other + "runtimeConfigPath={overlay}\n",
                                            "overlay": "orderMessageEnable=true\nbindAddress=0.0.0.0\n"}),
        Scenario("a second instance on the same controller store", ["namesrv", "-c", "{f}"], "controllerStorePath",
                 {"f": other + peers + "controllerDLegerPeers=n0-127.0.0.1:%d\ncontrollerStorePath=%s\n"
                  % (free_port(), live.controller_store)}),
        Scenario("a busy status page port", ["namesrv", "--listenPort", str(free_port()), "--statusListenPort",
                                             str(live.status_port)], "statusListenPort %d" % live.status_port),
        Scenario("a busy metrics port", ["namesrv", "-c", "{f}"], "prometheusListenPort %d" % live.metrics_port,
                 {"f": other + "prometheusListenPort=%d\n" % live.metrics_port}),
        Scenario("an address of another host", ["namesrv", "--listenPort", str(free_port()), "--host", "192.0.2.1"],
                 "192.0.2.1 is not an address of this host"),
        Scenario("the status page on the remoting port", ["namesrv", "--listenPort", str(free),
                                                          "--statusListenPort", str(free)], "both port"),
        Scenario("a self id that is not among the peers", ["namesrv", "-c", "{f}"], "controllerDLegerSelfId",
                 {"f": other + "enableControllerInNamesrv=true\ncontrollerDLegerPeers=n0-127.0.0.1:%d\n"
                               "controllerDLegerSelfId=n1\n" % free_port()}),
        Scenario("jRaft", ["namesrv", "-c", "{f}"], "controllerType=jRaft",
                 {"f": other + "enableControllerInNamesrv=true\ncontrollerType=jRaft\n"}),
        Scenario("three controllers and no secret", ["namesrv", "-c", "{f}"], "controllerPeerSecretFile",
                 {"f": other + controller_group(3)}),
        Scenario("a secret file that is too short", ["namesrv", "-c", "{f}"], "at least 16",
                 {"f": other + controller_group(2, "{secret}"), "secret": "short"}),
        Scenario("a secret file that is not there", ["namesrv", "-c", "{f}"], "chmod 600 FILE",
                 {"f": other + controller_group(2, os.path.join(home, "no.secret"))}),
        Scenario("three controllers, a secret and no member keys", ["namesrv", "-c", "{f}"], "controllerMembersFile",
                 {"f": other + controller_group(2, "{secret}"), "secret": "a-secret-of-more-than-16-bytes-long"}),
        Scenario("a corrupt KV file", ["namesrv", "-c", "{f}"], "kv",
                 {"f": other + "kvConfigPath={kv}\n", "kv": "{not json"}),
        Scenario("an address list without its port", ["namesrv", "-c", "{f}"], "prometheusListenPort",
                 {"f": other + "addressServiceNamesrvAddr=127.0.0.1:%d\n" % free_port()}),
        Scenario("a KV file where nothing can be written", ["namesrv", "-c", "{f}"], "kvConfigPath",
                 {"f": other + "kvConfigPath=/proc/no-such-dir/kvConfig.json\n"}),
        Scenario("a route snapshot path that is a directory", ["namesrv", "-c", "{f}"], "routeSnapshotPath",
                 {"f": other + "routeSnapshotPath=%s\n" % home}),
        Scenario("a log directory that cannot be made", ["namesrv", "-c", "{f}"], "logDir",
                 {"f": other + "logDir=/proc/no-such-dir\n"}),
        Scenario("a missing ACL file", ["namesrv", "-c", "{f}"], "ACL file",
                 {"f": other + "aclEnable=true\naclFile=%s\n" % os.path.join(home, "no-acl.yml")}),
        Scenario("a misspelt request class", ["namesrv", "-c", "{f}"], "aclSignedClasses=adminWrit",
                 {"f": other + "aclEnable=true\naclSignedClasses=adminWrit\naclFile=%s\n"
                  % os.path.join(REPO, "conf", "plain_acl.yml")}),
        Scenario("a missing TLS certificate", ["namesrv", "-c", "{f}"], "certificate",
                 {"f": other + "tlsMode=enforcing\ntlsServerCertPath=%s\ntlsServerKeyPath=%s\n"
                  % (os.path.join(home, "no.pem"), os.path.join(home, "no.key"))}),
        Scenario("twistd controller on a taken port", ["controller", "-c", "{f}"], "the controller's port",
                 {"f": "controllerDLegerGroup=g\ncontrollerDLegerSelfId=n0\ncontrollerDLegerPeers=n0-127.0.0.1:%d\n"
                  % ctrl}, program="controller"),
    ]


class LiveServer(NamesrvProcess):
    """The instance the wrong starts collide with: defaults under ``home``, an embedded controller,
    the status page and the metrics port."""

    def __init__(self, home):
        workdir = os.path.join(home, "live")
        os.makedirs(workdir)
        self.home = home
        self.controller_port, self.status_port, self.metrics_port = free_port(), free_port(), free_port()
        NamesrvProcess.__init__(self, workdir, {
            "routeReadWorkers": "0", "statusListenPort": self.status_port, "prometheusListenPort": self.metrics_port,
            "enableControllerInNamesrv": "true", "controllerDLegerGroup": "g", "controllerDLegerSelfId": "n0",
            "controllerDLegerPeers": "n0-127.0.0.1:%d" % self.controller_port,
            "controllerStorePath": os.path.join(workdir, "controller")})
        self.kv_path = self.properties["kvConfigPath"]
        self.snapshot_path = self.properties["routeSnapshotPath"]
        self.controller_store = self.properties["controllerStorePath"]
        #: beside the KV store, named after the port (namesrv/config/overlay.py)
        self.runtime_overlay = instance_path(os.path.join(workdir, "namesrv-runtime.properties"), self.port)

    def env(self):
        return dict(NamesrvProcess.env(self), HOME=self.home)


def run_one(scenario, home, index):
    """What the terminal showed: {name, status, lines, tracebacks, mentions}."""
    directory = os.path.join(home, "start-%02d" % index)
    os.makedirs(directory)
    names = {}
    for key, text in scenario.files.items():
        names[key] = os.path.join(directory, "%s.properties" % key if key == "f" else key)
    for key, text in scenario.files.items():
        with open(names[key], "w") as f:
            f.write(_fill(text, names))
    args = [_fill(arg, names) for arg in scenario.args]
    log_file = os.path.join(directory, "twistd.log")
    command = [TWISTD] + ([] if scenario.daemon else ["-n"]) + [
        "--pidfile=%s" % (os.path.join(directory, "twistd.pid") if scenario.daemon else ""),
        "--logfile", log_file] + args
    env = dict(os.environ, HOME=home, PYTHONPATH=REPO)
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        status, shown = done.returncode, (done.stdout + done.stderr)
    except subprocess.TimeoutExpired as e:   # it started: the wrong start was not refused
        status, shown = "still running", ((e.stdout or b"") + (e.stderr or b"")).decode(errors="replace")
    logged = open(log_file, errors="replace").read() if os.path.exists(log_file) else ""
    lines = [line for line in shown.splitlines() if line.strip()]
    return {"name": scenario.name, "status": status, "lines": len(lines), "shown": shown.strip(),
            "tracebacks": shown.count("Traceback") + logged.count("Traceback"),
            "mentions": scenario.expect in shown, "seconds": round(time.monotonic() - started, 2)}


def _fill(text, names):
    for key, path in names.items():
        text = text.replace("{%s}" % key, path)
    return text


def judge(result):
    """True when the start was refused as it should be: one line, no traceback, non-zero, on topic."""
    return (result["status"] not in (0, "still running") and result["lines"] == 1 and not result["tracebacks"]
            and result["mentions"])


def run_all(home, workers=4):
    live = LiveServer(home).start()
    busy = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]   # another program's ports
    try:
        todo = scenarios(live, home, [sock.getsockname()[1] for sock in busy])
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            return list(pool.map(lambda item: run_one(item[1], home, item[0]), enumerate(todo)))
    finally:
        for sock in busy:
            sock.close()
        live.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="one JSON object per start")
    parser.add_argument("--workers", type=int, default=4, help="starts run at once (default 4)")
    args = parser.parse_args(argv)
    home = tempfile.mkdtemp(prefix="wrong-starts-")
    try:
        results = run_all(home, args.workers)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    for result in results:
        if args.json:
            print(json.dumps(result, sort_keys=True))
        else:
            print("%-4s %-48s exit %-3s %d line(s) %d traceback(s)  %s" % (
                "ok" if judge(result) else "BAD", result["name"], result["status"], result["lines"],
                result["tracebacks"], result["shown"].splitlines()[0] if result["shown"] else ""))
    bad = [result for result in results if not judge(result)]
    print("%d wrong starts: %d tracebacks, %d one-line refusals, %d non-zero exits, %d not as expected" % (
        len(results), sum(r["tracebacks"] for r in results), sum(r["lines"] == 1 for r in results),
        sum(r["status"] not in (0, "still running") for r in results), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
