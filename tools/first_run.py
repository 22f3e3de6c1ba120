"""A new user's first `make run`, measured: a fresh clone, the time until the server answers, the venv's size.

    python3 -m tools.first_run                       # clones this checkout's HEAD into a scratch directory
    python3 -m tools.first_run --source URL --port 19876

It clones, runs ``make run`` (in its own session, HOME in the scratch directory, on ``--port`` and the
next port for the status page), polls GET_BROKER_CLUSTER_INFO every 0.1 s until it is answered, checks
that the test extras are absent and that ``.venv/bin/namesrv-admin`` works as the README writes it,
then stops it as Ctrl-C does (SIGINT to the whole process group) and prints what make said last. Only
the standard library: it runs with the system's python3, before any venv exists.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def answered(port):
    request = json.dumps({"code": 106, "flag": 0, "language": "JAVA", "opaque": 1,
                          "serializeTypeCurrentRPC": "JSON", "version": 0}).encode()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(struct.pack(">ii", 4 + len(request), len(request)) + request)
            return len(sock.recv(4)) == 4
    except OSError:
        return False


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", default=REPO, help="what to clone (default: this checkout)")
    parser.add_argument("--port", type=int, default=19876, help="listenPort (the status page: the next one)")
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="first-run-")
    clone, home = os.path.join(scratch, "clone"), os.path.join(scratch, "home")
    os.makedirs(home)
    try:
        subprocess.run(["git", "clone", "-q", args.source, clone], check=True)
        commit = subprocess.run(["git", "-C", clone, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        print("commit %s, load average %s" % (commit, load_average()))
        started = time.monotonic()
        make = subprocess.Popen(["make", "run", "ARGS=--listenPort %d" % args.port, "STATUS_PORT=%d" % (args.port + 1)],
                                cwd=clone, env=dict(os.environ, HOME=home), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            while not answered(args.port):
                if make.poll() is not None or time.monotonic() - started > 600:
                    print("make run did not serve:\n" + make.communicate()[0][-3000:])
                    return 1
                time.sleep(0.1)
            print("serving after %.1f s (load average %s)" % (time.monotonic() - started, load_average()))
            size = subprocess.run(["du", "-sm", os.path.join(clone, ".venv")], capture_output=True, text=True)
            print("venv %s MB" % size.stdout.split()[0])
            python = os.path.join(clone, ".venv", "bin", "python")
            for extra in ("pytest", "pyspark"):
                absent = subprocess.run([python, "-c", "import " + extra], capture_output=True).returncode != 0
                print("%s %s" % (extra, "absent" if absent else "installed"))
            listed = subprocess.run([".venv/bin/namesrv-admin", "-n", "127.0.0.1:%d" % args.port, "clusterList"],
                                    cwd=clone, capture_output=True, text=True)
            print("namesrv-admin exit %d: %s" % (listed.returncode, (listed.stdout or listed.stderr).strip()))
            os.killpg(make.pid, signal.SIGINT)   # Ctrl-C
            output = make.communicate(timeout=60)[0]
            print("after Ctrl-C: make exit %s, %d 'make: ***' line(s), last line: %s" % (
                make.returncode, output.count("make: ***"), output.strip().splitlines()[-1]))
        finally:
            if make.poll() is None:
                os.killpg(make.pid, signal.SIGKILL)
                make.wait()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
