"""Fault injection against `twistd namesrv` processes: kill -9 during KV writes, an unwritable or full
KV directory, SIGTERM under load and during metrics scrapes.

    python -m tools.faults                    # every fault, figures as a Markdown table
    python -m tools.faults --only kill9 --rounds 20

Each function starts its own server(s) in ``workdir`` and returns its figures as a dict;
the tests in tests/robustness call them with small numbers.
"""

import argparse
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from namesrv.protocol.codes import RequestCode, ResponseCode  # noqa: E402
from namesrv.protocol.command import make_request  # noqa: E402
from tests.integration.server import NamesrvProcess  # noqa: E402
from tools import checks  # noqa: E402

# Runs in the child before exec: cap the size of any file the server writes (EFBIG, like a full
# disk; SIGXFSZ, which would kill it, is ignored) and/or its number of open files.
_EXEC_WITH_LIMITS = ("import os, resource, signal, sys; fsize, nofile = int(sys.argv[1]), int(sys.argv[2]); "
                     "fsize >= 0 and resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize)); "
                     "nofile >= 0 and resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile)); "
                     "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); os.execv(sys.argv[3], sys.argv[3:])")


class LimitedNamesrvProcess(NamesrvProcess):
    """A NamesrvProcess whose files cannot grow beyond ``fsize`` bytes (a full disk) and/or that may
    open at most ``nofile`` file descriptors."""

    def __init__(self, *args, fsize=None, nofile=None, **kwargs):
        NamesrvProcess.__init__(self, *args, **kwargs)
        self.fsize, self.nofile = fsize, nofile

    def command(self, *extra):
        command = NamesrvProcess.command(self, *extra)
        if self.fsize is None and self.nofile is None:
            return command
        limits = [str(-1 if n is None else n) for n in (self.fsize, self.nofile)]
        return [sys.executable, "-c", _EXEC_WITH_LIMITS, *limits, *command]


def put_kv(client, namespace, key, value):
    return client.call(make_request(RequestCode.PUT_KV_CONFIG, {"namespace": namespace, "key": key, "value": value}))


def get_kv(client, namespace, key):
    return client.call(make_request(RequestCode.GET_KV_CONFIG, {"namespace": namespace, "key": key}))


def read_kv_file(path):
    """The configTable of a kvConfig.json, or raise ValueError if it is not one."""
    with open(path, "rb") as f:
        data = json.loads(f.read().decode("utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("configTable"), dict):
        raise ValueError("not a kvConfig file: %r" % (data,))
    return data["configTable"]


def kill9_during_kv_writes(workdir, rounds=5, seed=1, max_delay=0.6):
    """PUT_KV in a loop on one connection, kill -9 the server at a random moment; repeat ``rounds`` times.

    After every kill: the KV file parses, every value in it is one we sent for that key, every
    acknowledged PUT is on disk (or a later PUT of that key is), and the
    server restarts on the same directory and answers GET_KV_CONFIG with the file's values."""
    rng = random.Random(seed)
    kv_path = os.path.join(str(workdir), "kvConfig.json")
    sent = {}
    figures = {"rounds": rounds, "puts_acked": 0, "file_parsed": 0, "values_known": 0, "restarts_ok": 0,
               "acked_puts_on_disk": 0}
    port = None
    for r in range(rounds):
        server = NamesrvProcess(workdir, port=port)
        port = server.port
        try:
            server.start()
            figures["restarts_ok"] += r > 0
        except RuntimeError:
            figures["start_failure"] = server.log()[-2000:]
            break
        stop = threading.Event()
        acked = {}

        def writer():
            try:
                with server.client() as client:
                    i = 0
                    while not stop.is_set():
                        key = "k%d" % (i % 8)
                        value = "r%d-i%d-" % (r, i) + "v" * rng.choice((1, 1000, 60000))
                        sent.setdefault(key, set()).add(value)
                        if put_kv(client, "FaultNS", key, value).code == ResponseCode.SUCCESS:
                            acked[key] = value
                            figures["puts_acked"] += 1
                        i += 1
            except (OSError, ConnectionError):
                pass

        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        time.sleep(rng.uniform(0.05, max_delay))
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(10)
        stop.set()
        thread.join(10)
        if not os.path.exists(kv_path):
            figures["acked_puts_on_disk"] += not acked  # rounds where every acknowledged PUT survived
            continue
        table = read_kv_file(kv_path).get("FaultNS", {})
        figures["file_parsed"] += 1
        figures["values_known"] += all(v in sent.get(k, ()) for k, v in table.items())
        figures["acked_puts_on_disk"] += all(_put_order(table.get(k)) >= _put_order(v) for k, v in acked.items())
    server = NamesrvProcess(workdir, port=port)
    try:
        server.start()
        figures["restarts_ok"] += 1
        table = read_kv_file(kv_path).get("FaultNS", {}) if os.path.exists(kv_path) else {}
        with server.client() as client:
            figures["get_matches_file"] = all(get_kv(client, "FaultNS", k).ext.get("value") == v
                                              for k, v in table.items())
    finally:
        server.stop()
    return figures


def _put_order(value):
    """(round, index) of a value written by kill9_during_kv_writes; a later PUT of the key may be on disk."""
    if not value:
        return (-1, -1)
    round_part, index_part = value.split("-", 2)[:2]
    return (int(round_part[1:]), int(index_part[1:]))


@contextlib.contextmanager
def read_only_directory(path):
    """Make ``path`` unwritable: chmod for ordinary users, a read-only bind mount for root.

    Yields False (nothing done) when neither works, e.g. root without CAP_SYS_ADMIN."""
    if os.geteuid() != 0:
        mode = os.stat(path).st_mode
        os.chmod(path, 0o555)
        try:
            yield True
        finally:
            os.chmod(path, mode)
        return
    mounted = subprocess.run(["mount", "--bind", path, path], capture_output=True).returncode == 0
    if mounted and subprocess.run(["mount", "-o", "remount,bind,ro", path], capture_output=True).returncode != 0:
        subprocess.run(["umount", path], capture_output=True)
        mounted = False
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", path], capture_output=True)


def kv_write_fails(server, make_unwritable, value_size=10):
    """PUT_KV while ``make_unwritable()`` is in force; returns the answers a client sees."""
    with server.client() as client:
        before = put_kv(client, "FaultNS", "before", "ok")
        with make_unwritable() as done:
            if done is False:
                return {"skipped": "could not make the directory unwritable"}
            failed = put_kv(client, "FaultNS", "during", "x" * value_size)
            route = client.call(checks.route_request(checks.CONTROL_TOPICS[0]))
            alive = checks.TableChecker("127.0.0.1", server.port).alive()
        after = put_kv(client, "FaultNS", "after", "ok")
    return {"put_before": before.code, "put_during": failed.code, "put_during_remark": failed.remark,
            "route_during": route.code, "fresh_connection_answered": alive, "put_after": after.code,
            "server_alive": server.process.poll() is None}


def kv_directory_read_only(workdir):
    kv_dir = os.path.join(str(workdir), "kv")
    os.makedirs(kv_dir, exist_ok=True)
    server = NamesrvProcess(workdir, {"kvConfigPath": os.path.join(kv_dir, "kvConfig.json")}).start()
    try:
        with checks.ControlBroker("127.0.0.1", server.port):
            return kv_write_fails(server, lambda: read_only_directory(kv_dir))
    finally:
        server.stop()


def kv_disk_full(workdir, fsize=512 << 10):
    """Every file of the server is capped at ``fsize`` bytes; a KV value bigger than that cannot be saved."""
    server = LimitedNamesrvProcess(workdir, fsize=fsize).start()
    try:
        with checks.ControlBroker("127.0.0.1", server.port):
            return kv_write_fails(server, lambda: contextlib.nullcontext(True), value_size=fsize + (64 << 10))
    finally:
        server.stop()


def fd_exhaustion(workdir, nofile=256, connections=400):
    """The server may open ``nofile`` files but ``serverMaxConnections`` is left at its default (10,000):
    ``connections`` peers connect at once. An admin connection opened before tries a KV write while
    the descriptors are exhausted; afterwards the server must answer and save KV again."""
    server = LimitedNamesrvProcess(workdir, nofile=nofile).start()
    admin = server.client()
    socks, failed = [], 0
    try:
        for _ in range(connections):
            try:
                socks.append(socket.create_connection(("127.0.0.1", server.port), timeout=2))
            except OSError:
                failed += 1
        time.sleep(1.0)
        during = checks.TableChecker("127.0.0.1", server.port, timeout=2).alive()
        put_during = put_kv(admin, "FdNS", "during", "v").code
    finally:
        for s in socks:
            s.close()
        admin.close()
    figures = {"nofile": nofile, "connections": connections, "connect_failures": failed,
               "new_client_answered_while_saturated": during, "put_kv_while_saturated": put_during}
    time.sleep(1.0)
    try:
        with server.client() as client:
            figures["route_after"] = client.call(checks.route_request("Any")).code
            figures["put_kv_after"] = put_kv(client, "FdNS", "k", "v").code
    except (OSError, ConnectionError) as e:
        figures["after"] = "%s: %s" % (type(e).__name__, e)
    figures["server_alive"] = server.process.poll() is None
    server.stop()
    log = checks.server_log(server)
    figures["emfile_in_log"] = log.count("EMFILE") + log.count("Too many open files")
    figures["tracebacks_in_log"] = log.count("Traceback")
    return figures


def sigterm_under_load(workdir, clients=8, load_seconds=1.0):
    """Clients register brokers, PUT_KV and ask routes in a loop; SIGTERM arrives in the middle."""
    server = NamesrvProcess(workdir).start()
    stop = threading.Event()
    counts = {"answers": 0, "errors": 0}

    def load(n):
        from tests.brokers import register_request
        try:
            with server.client() as client:
                i = 0
                while not stop.is_set():
                    if i % 3 == 0:
                        client.call(register_request("TermCluster", "term-%d" % n, "127.0.0.1:%d" % (25000 + n),
                                                     topics=["Term-%d-%d" % (n, j) for j in range(50)], counter=i))
                    elif i % 3 == 1:
                        put_kv(client, "TermNS", "k%d" % n, "v%d" % i)
                    else:
                        client.call(checks.route_request("Term-%d-1" % n))
                    counts["answers"] += 1
                    i += 1
        except (OSError, ConnectionError):
            counts["errors"] += 1

    threads = [threading.Thread(target=load, args=(n,), daemon=True) for n in range(clients)]
    for t in threads:
        t.start()
    time.sleep(load_seconds)
    started = time.monotonic()
    code = server.stop(signal.SIGTERM, timeout=30)
    stop_seconds = time.monotonic() - started
    stop.set()
    for t in threads:
        t.join(10)
    log = checks.server_log(server)
    kv_ok = True
    try:
        read_kv_file(os.path.join(str(workdir), "kvConfig.json"))
    except (OSError, ValueError):
        kv_ok = False
    return {"clients": clients, "answers_before_stop": counts["answers"], "exit_code": code,
            "clean_shutdown_logged": "Server Shut Down." in log,
            "stop_seconds": round(stop_seconds, 2), "tracebacks_in_log": log.count("Traceback"),
            "unhandled_in_log": log.count("Unhandled"), "kv_file_parses": kv_ok}


def sigterm_during_scrapes(workdir, rounds=3, scrapers=4, scrape_seconds=0.5):
    """``rounds`` servers with the metrics port on, each scraped over kept-alive connections (as Prometheus
    does) by ``scrapers`` threads, then SIGTERM: how many stopped, and how (before the fix of issue 57 a
    scrape's thread and the reactor's shutdown waited for each other: 17 of 20 never ended)."""
    import http.client
    from tests.integration.server import free_port
    figures = {"rounds": rounds, "stopped": 0, "exit_codes": [], "scrapes": 0, "hang_reports": [],
               "clean_shutdown_logged": 0}
    for n in range(rounds):
        metrics_port = free_port()
        directory = os.path.join(str(workdir), "round-%d" % n)
        os.makedirs(directory)
        server = NamesrvProcess(directory, {"prometheusListenPort": str(metrics_port)}).start()
        stop = threading.Event()
        scraped = []

        def scrape():
            while not stop.is_set():
                try:
                    connection = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=5)
                    while not stop.is_set():
                        connection.request("GET", "/metrics")
                        connection.getresponse().read()
                        scraped.append(1)
                except (OSError, http.client.HTTPException):
                    stop.wait(0.01)

        threads = [threading.Thread(target=scrape, daemon=True) for _ in range(scrapers)]
        for thread in threads:
            thread.start()
        time.sleep(scrape_seconds)
        code = server.stop(signal.SIGTERM, timeout=60)
        stop.set()
        for thread in threads:
            thread.join(10)
        figures["scrapes"] += len(scraped)
        figures["exit_codes"].append(code)
        if not server.hang_report:
            figures["stopped"] += 1
        else:
            figures["hang_reports"].append(server.hang_report[-3000:])
        figures["clean_shutdown_logged"] += "Server Shut Down." in checks.server_log(server)
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated: kill9,readonly,diskfull,fds,sigterm,scrapes")
    parser.add_argument("--rounds", type=int, default=20, help="kill -9 rounds")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    faults = [("kill9", lambda d: kill9_during_kv_writes(d, args.rounds)),
              ("readonly", kv_directory_read_only), ("diskfull", kv_disk_full), ("fds", fd_exhaustion),
              ("sigterm", lambda d: sigterm_under_load(d, clients=16, load_seconds=3.0)),
              ("scrapes", lambda d: sigterm_during_scrapes(d, rounds=10))]
    wanted = set(args.only.split(",")) if args.only else None
    results = {}
    for name, run in faults:
        if wanted and name not in wanted:
            continue
        sys.stderr.write("faults: %s ...\n" % name)
        results[name] = run(tempfile.mkdtemp(prefix="namesrv-fault-%s-" % name))
    print("| fault | figures |\n|---|---|")
    for name, figures in results.items():
        print("| %s | %s |" % (name, ", ".join("%s=%s" % kv for kv in figures.items())))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
