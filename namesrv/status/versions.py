"""Remembers the client version of each broker's last successful REGISTER_BROKER.

The route tables do not keep it (Java's do not either), and the page wants to show which
broker release registered. A request policy sees every request and its final response
code, so it records the version there and refuses nothing.
"""

from zope.interface import implementer

from namesrv.interfaces import IRequestPolicy
from namesrv.protocol.codes import RequestCode, ResponseCode


@implementer(IRequestPolicy)
class RegistrationVersions:
    def __init__(self, limit=100000):
        self.versions = {}   # (cluster, brokerAddr) -> MQVersion ordinal
        self.limit = limit

    def allows_cached_answer(self, code):
        """Registrations are never replayed from the answer cache, and other codes are not looked at."""
        return True

    def check(self, request, connection):
        return None

    def done(self, request, connection, response_code):
        if request.code != RequestCode.REGISTER_BROKER or response_code != ResponseCode.SUCCESS:
            return
        key = (request.get("clusterName"), request.get("brokerAddr"))
        if key not in self.versions and len(self.versions) >= self.limit:
            self.versions.pop(next(iter(self.versions)))
        self.versions[key] = request.version

    def get(self, cluster, broker_addr):
        return self.versions.get((cluster, broker_addr))
