"""Whole-table answers asked of a name server, each on its own connection: how long, how large.

GET_ALL_TOPIC_LIST_FROM_NAMESERVER, GET_BROKER_CLUSTER_INFO, GET_TOPICS_BY_CLUSTER, the three unit-topic
lists and GET_SYSTEM_TOPIC_LIST_FROM_NS, then (ours, when given its port) the status page whole and a
topic search. The reader here accepts any frame size, so that a frame a RocketMQ client would refuse
(over 16 MiB: ``NettyDecoder``'s frameMaxLength) is measured and marked ``over_client_limit``, not lost.
``python -m bench bigfleet --scenario wholetable`` asks them halfway through its window, while the prober reads.
"""

import socket
import struct
import time
import urllib.request

from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode
from namesrv.protocol.command import make_request

CLIENT_FRAME_LIMIT = 16 * 1024 * 1024
C = RequestCode


def questions(cluster):
    return [("all topics", C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}),
            ("cluster info", C.GET_BROKER_CLUSTER_INFO, {}),
            ("topics by cluster", C.GET_TOPICS_BY_CLUSTER, {"cluster": cluster}),
            ("unit topics", C.GET_UNIT_TOPIC_LIST, {}),
            ("has unit sub topics", C.GET_HAS_UNIT_SUB_TOPIC_LIST, {}),
            ("has unit sub ununit topics", C.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, {}),
            ("system topics", C.GET_SYSTEM_TOPIC_LIST_FROM_NS, {})]


def ask(host, port, code, ext, timeout=60.0):
    """(seconds to the whole answer, frame bytes with its length field, response code, remark)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        request = make_request(code, ext, opaque=1)
        started = time.perf_counter()
        sock.sendall(encode_frame(request))
        (length,) = struct.unpack(">i", _read(sock, 4))
        answer = decode_frame(_read(sock, length))
        return time.perf_counter() - started, length + 4, int(answer.code), answer.remark


def _read(sock, n):
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("closed by the server")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def ask_all(host, port, cluster, status_port=None, search="Fleet0001"):
    """One dict per question: name, ms, frame_bytes, code, remark (cut), over_client_limit; errors as ``error``."""
    out = []
    for name, code, ext in questions(cluster):
        try:
            seconds, size, answered, remark = ask(host, port, code, ext)
            out.append({"name": name, "ms": seconds * 1e3, "frame_bytes": size, "code": answered,
                        "remark": (remark or "")[:160], "over_client_limit": size > CLIENT_FRAME_LIMIT})
        except (OSError, ValueError) as e:
            out.append({"name": name, "error": str(e)})
    if status_port:
        for name, path in (("status page", "/"), ("status topic search", "/?t=%s" % search)):
            started = time.perf_counter()
            try:
                with urllib.request.urlopen("http://%s:%d%s" % (host, status_port, path), timeout=60) as page:
                    size = len(page.read())
                out.append({"name": name, "ms": (time.perf_counter() - started) * 1e3, "frame_bytes": size,
                            "code": 200, "over_client_limit": False})
            except OSError as e:
                out.append({"name": name, "error": str(e)})
    return out


def describe(results):
    lines = []
    for r in results:
        if "error" in r:
            lines.append("  %-28s error: %s" % (r["name"], r["error"]))
        else:
            lines.append("  %-28s %8.1f ms  %12s bytes  code %d%s%s" % (
                r["name"], r["ms"], "{:,}".format(r["frame_bytes"]), r["code"],
                "  OVER 16 MiB" if r["over_client_limit"] else "", ("  " + r["remark"][:90]) if r.get("remark") else ""))
    return "\n".join(lines)
