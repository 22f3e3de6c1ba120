"""Connections that send the controller member link's 8 bytes and nothing more, against a name server whose
process may hold 384 descriptors (issue 54, item 5): does any accept fail with EMFILE, and how long does a
normal client wait for its answer meanwhile?

    python -m tools.member_flood                       # 500 magic-only connections, ulimit -n 384
    python -m tools.member_flood --connections 2000 --nofile 384 --json

It starts ``twistd namesrv`` with an embedded controller (one of three members, so that the member link
listens) under ``prlimit --nofile``, holds ``--connections`` connections that each sent the member
magic, then asks a normal client (CONTROLLER_GET_METADATA_INFO on the controller port, a route read on
the name server's port) and times the answers. It prints the EMFILE lines of the server's log, the
refusals the server counted, and the times. Everything runs on 127.0.0.1 and stops by itself.
"""

import argparse
import json
import os
import socket
import sys
import tempfile
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from namesrv.client import BlockingRemotingClient  # noqa: E402
from namesrv.controller.replication.identity import create_group_keys  # noqa: E402
from namesrv.controller.replication.members import MAGIC  # noqa: E402
from namesrv.protocol.codes import RequestCode  # noqa: E402
from namesrv.protocol.command import make_request  # noqa: E402
from tests.integration.server import NamesrvProcess, free_port  # noqa: E402


class LimitedNamesrv(NamesrvProcess):
    """The server under ``prlimit --nofile=N:N``."""

    def __init__(self, workdir, properties, nofile):
        NamesrvProcess.__init__(self, workdir, properties)
        self.nofile = nofile

    def command(self, *extra):
        return ["prlimit", "--nofile=%d:%d" % (self.nofile, self.nofile)] + NamesrvProcess.command(self, *extra)


def controller_properties(workdir, controller_port):
    secret = os.path.join(workdir, "controller.secret")
    with open(secret, "w") as f:
        f.write(os.urandom(32).hex())
    os.chmod(secret, 0o600)
    others = [free_port(), free_port()]
    return {"enableControllerInNamesrv": "true", "controllerDLegerGroup": "flood", "controllerDLegerSelfId": "n0",
            "controllerDLegerPeers": ";".join("n%d-127.0.0.1:%d" % item
                                              for item in enumerate([controller_port] + others)),
            "controllerStorePath": os.path.join(workdir, "controller"), "controllerPeerSecretFile": secret,
            "controllerMembersFile": create_group_keys(workdir, ["n0", "n1", "n2"]),
            "routeReadWorkers": "0", "serverMaxConnections": "64"}


def flood(port, count):
    """``count`` connections that each sent the member magic (held open; those the server closed stay closed)."""
    held = []
    for _ in range(count):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.sendall(MAGIC)
            held.append(s)
        except OSError:
            pass
    return held


def timed(port, code, ext=None):
    started = time.monotonic()
    with BlockingRemotingClient("127.0.0.1", port, timeout=10) as client:
        answer = client.call(make_request(code, ext))
    return answer.code, time.monotonic() - started


def run(connections=500, nofile=384, workdir=None):
    workdir = workdir or tempfile.mkdtemp(prefix="member-flood-")
    controller = free_port()
    server = LimitedNamesrv(workdir, controller_properties(workdir, controller), nofile)
    server.start(timeout=60)
    try:
        held = flood(controller, connections)
        time.sleep(0.5)                     # let the server accept and sort every one of them
        metadata_code, metadata_seconds = timed(controller, RequestCode.CONTROLLER_GET_METADATA_INFO)
        route_code, route_seconds = timed(server.port, RequestCode.GET_BROKER_CLUSTER_INFO)
        still_open = sum(1 for s in held if _open(s))
        for s in held:
            s.close()
    finally:
        server.stop()
    log = server.log()
    emfile = [line for line in log.splitlines() if "EMFILE" in line or "Too many open files" in line]
    return {"connections": connections, "nofile": nofile, "emfile_lines": len(emfile), "emfile_examples": emfile[:3],
            "held_open_by_server": still_open, "metadata_code": int(metadata_code),
            "metadata_seconds": round(metadata_seconds, 3), "route_code": int(route_code),
            "route_seconds": round(route_seconds, 3),
            "handshake_refusals_logged": log.count("too many member handshakes under way"), "workdir": workdir}


def _open(sock):
    """The server has not closed it (a closed one reads as end of stream at once)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--nofile", type=int, default=384)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.connections, args.nofile)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        for key in sorted(result):
            print("%-28s %s" % (key, result[key]))
    return 0 if result["emfile_lines"] == 0 and result["metadata_code"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
