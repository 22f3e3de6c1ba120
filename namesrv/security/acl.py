"""The credentials store (the ACL file, reloaded as a whole when it changes) and the broker address list.

The ACL check itself is ``TrustPolicy`` (namesrv/security/trust.py); this module keeps what it reads.
"""

from twisted.logger import Logger
from zope.interface import implementer

from namesrv.dispatch.classes import BROKER_CONTROL
from namesrv.interfaces import ICachedAnswerPolicy
from namesrv.protocol.codes import request_name
from namesrv.security.aclfile import AclFileError, AclTable, load_acl_file
from namesrv.security.addresses import AddressMatcher, peer_host
from namesrv.security.livesetting import LiveSetting

log = Logger()


class AclStore:
    """The current credentials, replaced as a whole when the file changes (a bad file keeps the old ones)."""

    def __init__(self, path, table=None):
        self.path = path
        self.table = table if table is not None else AclTable()
        self.reloads = 0
        self.reload_failures = 0
        #: called with no arguments once new credentials are in force (AnswerCache.invalidate)
        self.reload_listeners = []

    def load(self):
        """First load: a bad or missing file is an error (refuse to start rather than run unguarded)."""
        self.table = load_acl_file(self.path)
        log.info("ACL: {n} account(s) loaded from {path}", n=len(self.table.accounts), path=self.path)
        return self.table

    def reload(self, changed=None):
        try:
            table = load_acl_file(self.path)
        except AclFileError as e:
            self.reload_failures += 1
            log.error("ACL: {error}; keeping the {n} account(s) loaded before", error=str(e),
                      n=len(self.table.accounts))
            return False
        self.table = table
        self.reloads += 1
        log.info("ACL: {path} changed, {n} account(s) loaded", path=self.path, n=len(table.accounts))
        for listener in self.reload_listeners:
            listener()
        return True


@implementer(ICachedAnswerPolicy)
class BrokerAllowListPolicy:
    """Broker-control requests only from the addresses in ``brokerAllowedAddresses`` (empty: anyone).

    The connection's address is checked, never the ``brokerAddr`` header, which the sender chooses. The
    request's class is the one its header makes it (classes.py): mqadmin's designated election (1002 with
    ``designateElect=true``) is an admin's write, not a broker's, and comes from wherever admins work.
    """

    def __init__(self, classifier, config, refusals):
        self.classifier = classifier
        self.allowed = LiveSetting(config, "brokerAllowedAddresses", AddressMatcher.parse)
        self.allowed.get()
        self.refusals = refusals

    def allows_cached_answer(self, code):
        """Only broker-control requests are checked, and those are never cached."""
        return self.classifier.classify(code) != BROKER_CONTROL

    def check(self, request, connection):
        allowed = self.allowed.get()
        if not allowed:
            return None
        request_class = self.classifier.classify_request(request)
        if request_class != BROKER_CONTROL:
            return None
        host = peer_host(connection.peer)
        if allowed.matches(host):
            return None
        remark = ("%s (%d) from %s refused: the address is not in brokerAllowedAddresses"
                  % (request_name(request.code), request.code, host))
        return self.refusals.refuse(request, connection, request_class, "broker_allowlist", request.get("AccessKey"),
                                    remark)

    def done(self, request, connection, response_code):
        pass
