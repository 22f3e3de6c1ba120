"""Remembers the client version of each broker's last successful REGISTER_BROKER.

The route tables do not keep it (Java's do not either), and the page wants to show which
broker release registered. An answer observer of the registry sees every request with its
response code, so it records the version there.
"""

from zope.interface import implementer

from namesrv.interfaces import IAnswerObserver
from namesrv.protocol.codes import RequestCode, ResponseCode


@implementer(IAnswerObserver)
class RegistrationVersions:
    def __init__(self, limit=100000):
        self.versions = {}   # (cluster, brokerAddr) -> MQVersion ordinal
        self.limit = limit

    def answered(self, request, response_code, connection):
        if request.code != RequestCode.REGISTER_BROKER or response_code != ResponseCode.SUCCESS:
            return
        key = (request.get("clusterName"), request.get("brokerAddr"))
        if key not in self.versions and len(self.versions) >= self.limit:
            self.versions.pop(next(iter(self.versions)))
        self.versions[key] = request.version

    def get(self, cluster, broker_addr):
        return self.versions.get((cluster, broker_addr))
