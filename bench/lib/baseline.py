"""The framework's ceiling: a minimal Twisted server that answers every frame with one fixed frame.

``python -m bench.lib.baseline --port P --body FILE`` listens on 127.0.0.1:P; every request
frame (Int32StringReceiver framing, as any Twisted server would use) gets the same
pre-encoded response — a JSON header with code 0 and the route body from FILE — with
only its opaque patched to the request's. No header decoding, no dispatch, no body
building: what is left is Twisted's reading, framing and writing, which no NameServer on
Twisted can beat. (ROCKETMQ-header requests get a ROCKETMQ answer the same way.)
"""

import struct

from twisted.internet import protocol
from twisted.protocols.basic import Int32StringReceiver

from bench.lib import options

_OPAQUE_KEY = b'"opaque":'
_PAIR = struct.Struct(">ii")
_HEADER_PREFIX = b'{"code":0,"flag":1,"language":"JAVA","opaque":'
_HEADER_SUFFIX = b',"serializeTypeCurrentRPC":"JSON","version":479}'
_DIGITS = frozenset(b"-0123456789")


def rocketmq_response(body):
    """A ROCKETMQ-header answer (code 0, flag 1); bytes 13..17 are the opaque."""
    header = struct.pack(">hbhii", 0, 0, 479, 0, 1) + struct.pack(">i", 0) + struct.pack(">i", 0)
    return _PAIR.pack(4 + len(header) + len(body), (1 << 24) | len(header)) + header + body


class FixedAnswer(Int32StringReceiver):
    MAX_LENGTH = 16 * 1024 * 1024

    def __init__(self, body, rocketmq_answer):
        self.body = body
        self.rocketmq_answer = rocketmq_answer
        self.fixed_length = len(_HEADER_PREFIX) + len(_HEADER_SUFFIX)

    def stringReceived(self, frame):
        if frame[0] == 1:  # ROCKETMQ header: the opaque is at a fixed offset
            answer = self.rocketmq_answer
            self.transport.write(answer[:13] + frame[9:13] + answer[17:])
            return
        at = frame.find(_OPAQUE_KEY)
        if at < 0:
            self.transport.loseConnection()
            return
        start = stop = at + len(_OPAQUE_KEY)
        while frame[stop] in _DIGITS:
            stop += 1
        digits = frame[start:stop]
        header_length = self.fixed_length + len(digits)
        self.transport.write(b"".join((
            _PAIR.pack(4 + header_length + len(self.body), header_length),
            _HEADER_PREFIX, digits, _HEADER_SUFFIX, self.body)))


class FixedAnswerFactory(protocol.Factory):
    noisy = False

    def __init__(self, body):
        self.body = body
        self.rocketmq_answer = rocketmq_response(body)

    def buildProtocol(self, addr):
        return FixedAnswer(self.body, self.rocketmq_answer)


OPTIONS = (options.Option("--port", "the 127.0.0.1 port to listen on", type=int, required=True),
           options.Option("--body", "file holding the response body"))


def main(argv=None):
    args = options.parse(None, __doc__, OPTIONS, argv, prog="python -m bench.lib.baseline")
    body = b""
    if args.body:
        with open(args.body, "rb") as f:
            body = f.read()
    from twisted.internet import reactor
    reactor.listenTCP(args.port, FixedAnswerFactory(body), backlog=1024, interface="127.0.0.1")
    reactor.run()


if __name__ == "__main__":
    main()
