"""One blocking request to one name server, with errors an operator can read in one line.

Like Java's ``DefaultMQAdminExt``, a read goes to the first name server of ``-n`` that
answers and a write goes to every one of them. Signing is ``AclClientRPCHook``'s.
"""

import socket
import struct

from namesrv.client import BlockingRemotingClient
from namesrv.protocol.codec import FrameDecodeError, decode_frame
from namesrv.protocol.codes import DEFAULT_MAX_FRAME_LENGTH, LanguageCode, ResponseCode, Version, request_name
from namesrv.protocol.command import make_request
from namesrv.security.signature import sign_request_ext

#: What mqadmin 4.9.8 sends; >= V4_9_4 also asks for routes in standard JSON.
CLIENT_VERSION = Version.V4_9_8


class _BoundedClient(BlockingRemotingClient):
    """Refuses a length field no name server would send (an HTTP server's "HTTP" reads as 1.2 GB)."""

    def receive(self):
        (length,) = struct.unpack(">i", self._read(4))
        if not 4 <= length <= DEFAULT_MAX_FRAME_LENGTH:
            raise FrameDecodeError("frame length %d" % length)
        return decode_frame(self._read(length))


class AdminError(Exception):
    """A failure worth one line on stderr (no traceback)."""


class RemoteError(AdminError):
    """The server answered, but not SUCCESS; ``code`` is its response code."""

    def __init__(self, address, code, remark):
        self.address, self.code, self.remark = address, code, remark
        AdminError.__init__(self, "%s: %s (%d) %s" % (address, _code_name(code), code, _first_line(remark)))


def _code_name(code):
    try:
        return ResponseCode(code).name
    except ValueError:
        return "CODE"


def _first_line(remark):
    return (remark or "").strip().splitlines()[0] if (remark or "").strip() else ""


def parse_address(part, kind="name server"):
    """One ``host:port`` into ``(text, host, port)``."""
    host, sep, port = part.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise AdminError("bad %s address %r (expected host:port)" % (kind, part))
    return part, host.strip("[]"), int(port)


def split_addresses(text):
    """``host:port;host:port`` (mqadmin's separator, a comma too) into its non-empty parts."""
    return [part.strip() for part in (text or "").replace(",", ";").split(";") if part.strip()]


def parse_addresses(text):
    """``-n host:port;host:port`` into ``[(text, host, port)]``."""
    result = [parse_address(part) for part in split_addresses(text)]
    if not result:
        raise AdminError("no name server address: give -n host:port or set NAMESRV_ADDR")
    return result


class AdminClient:
    """Sends requests to the name servers of ``-n``; ``credentials`` is ``(accessKey, secretKey)`` or None."""

    def __init__(self, addresses, timeout=5.0, credentials=None):
        self._namesrv_text = addresses
        self._addresses = None
        self.timeout = timeout
        self.credentials = credentials
        self._clients = {}

    @property
    def addresses(self):
        """The name servers of ``-n``, checked when first needed: the controller commands of ``-a``
        and the brokers they ask need none."""
        if self._addresses is None:
            self._addresses = parse_addresses(self._namesrv_text)
        return self._addresses

    @property
    def names(self):
        return [name for name, _, _ in self.addresses]

    def call(self, address, code, ext=None, body=None, kind="name server"):
        """The answer of ``address`` to one request (any response code); AdminError if none came.

        ``address`` is one of ``-n`` or any other ``host:port`` (a controller, a broker: ``kind``
        names it in the messages)."""
        known = [a for a in self._addresses or () if a[0] == address]
        name, host, port = known[0] if known else parse_address(address, kind)
        if self.credentials is not None:
            ext = sign_request_ext(ext, body, *self.credentials)
        request = make_request(code, ext, body, version=CLIENT_VERSION, language=LanguageCode.PYTHON)
        client = self._clients.get(name)
        if client is None:
            try:
                client = self._clients[name] = _BoundedClient(host, port, self.timeout)
            except socket.timeout:
                raise AdminError("timeout: cannot connect to %s %s within %gs" % (kind, name, self.timeout))
            except OSError as e:
                raise AdminError("cannot reach %s %s: %s" % (kind, name, e.strerror or e))
        try:
            return client.call(request)
        except socket.timeout:
            self._forget(name)
            raise AdminError("timeout: no answer to %s from %s within %gs" % (request_name(code), name, self.timeout))
        except OSError as e:
            self._forget(name)
            raise AdminError("connection to %s %s lost: %s" % (kind, name, e.strerror or e))
        except ValueError as e:   # an undecodable frame: not a name server?
            self._forget(name)
            raise AdminError("unreadable answer from %s (is it a %s?): %s" % (name, kind, e))

    def call_ok(self, address, code, ext=None, body=None, accept=(ResponseCode.SUCCESS,), kind="name server"):
        answer = self.call(address, code, ext, body, kind)
        if answer.code not in accept:
            error = RemoteError(address, answer.code, answer.remark)
            if kind == "controller" and answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                error.args = ("%s: %s is no controller (a name server's port?): the controller listens on its "
                              "address in controllerDLegerPeers (9878 by default), give that to -a"
                              % (error.args[0], address),)
            raise error
        return answer

    def call_any(self, code, ext=None, body=None, accept=(ResponseCode.SUCCESS,)):
        """Ask the first name server that can be reached (Java picks one the same way)."""
        unreachable = None
        for name in self.names:
            try:
                return name, self.call_ok(name, code, ext, body, accept)
            except RemoteError:
                raise
            except AdminError as e:
                unreachable = e
        raise unreachable

    def _forget(self, name):
        client = self._clients.pop(name, None)
        if client is not None:
            client.close()

    def close(self):
        for name in list(self._clients):
            self._forget(name)
