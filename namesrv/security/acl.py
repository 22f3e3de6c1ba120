"""Request policies: the ACL 1.0 signature check per request class, and the broker address allow-list.

The signature check follows the broker's ``PlainPermissionManager.validate`` step by step
(global white list, AccessKey present, AccessKey known, account white list, signature,
admin flag) and uses its messages as remarks. Where we differ:

- a refusal answers NO_PERMISSION (16); Java's broker throws ``AclException``, which its
  remoting layer turns into SYSTEM_ERROR (1) with the exception text;
- ``admin: true`` is needed for every ``admin_write`` request (Java's broker asks it for
  its own admin codes only; Java's NameServer checks nothing);
- signatures are compared in constant time (Java uses ``String.equals``);
- ``SecurityToken`` is signed content only; there is no STS behind it (as in Java 4.9).
"""

from twisted.logger import Logger
from zope.interface import implementer

from namesrv.interfaces import IRequestPolicy
from namesrv.protocol.codes import RequestCode, ResponseCode, request_name
from namesrv.security.aclfile import AclFileError, AclTable, load_acl_file
from namesrv.security.addresses import AddressMatcher, peer_host
from namesrv.dispatch.classes import ADMIN_WRITE, BROKER_CONTROL, parse_class_list
from namesrv.security.signature import ACCESS_KEY, signature_matches

log = Logger()


class AclStore:
    """The current credentials, replaced as a whole when the file changes (a bad file keeps the old ones)."""

    def __init__(self, path, table=None):
        self.path = path
        self.table = table if table is not None else AclTable()
        self.reloads = 0
        self.reload_failures = 0

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
        return True


class _Refusals:
    """Tells listeners about refusals and logs the first and every 1000th per reason."""

    def __init__(self, listeners):
        self.listeners = listeners
        self.counts = {}

    def refuse(self, reason, request_class, request, peer, remark):
        n = self.counts[reason] = self.counts.get(reason, 0) + 1
        for listener in self.listeners:
            listener.rejected(request_class, reason)
        if n == 1 or n % 1000 == 0:
            log.warn("refused {code_name} ({code}) from {peer}: {remark} ({n} {reason} refusals so far)",
                     code_name=request_name(request.code), code=request.code, peer=peer,
                     remark=remark, n=n, reason=reason)
        return (ResponseCode.NO_PERMISSION, remark)


class _LiveSetting:
    """A property read on every request but parsed only when its text changes."""

    def __init__(self, config, name, parse):
        self.config, self.name, self.parse = config, name, parse
        self._text = object()
        self._value = None

    def get(self):
        text = self.config.get(self.name)
        if text != self._text:
            try:
                self._value = self.parse(text)
            except ValueError as e:
                if self._value is None:   # at start: refused, naming the property
                    raise ValueError("%s=%s: %s" % (self.name, text, e))
                log.error("{name}={text!r} ignored, keeping the previous value: {error}",
                          name=self.name, text=text, error=str(e))
            self._text = text
        return self._value


@implementer(IRequestPolicy)
class AclPolicy:
    """Requires a valid ``AclClientRPCHook`` signature for the classes in ``aclSignedClasses``."""

    #: read workers load the same aclFile and run this check before answering a read themselves
    #: (readworkers/worker/guards.py), so the reads they answer need not travel to the main process
    checked_by_read_workers = True

    def __init__(self, store, classifier, config, listeners=()):
        self.store = store
        self.classifier = classifier
        self.signed_classes = _LiveSetting(config, "aclSignedClasses", parse_class_list)
        self.signed_classes.get()
        self._refusals = _Refusals(list(listeners))

    def check(self, request, connection):
        return self.check_as(request, connection, self.classifier.classify(request.code))

    def check_as(self, request, connection, request_class):
        """``check`` for a request whose class its code alone does not say (the controller's 1002)."""
        if request_class not in self.signed_classes.get():
            return None
        host = peer_host(connection.peer)
        problem = self.problem(request, request_class, host)
        if problem is None:
            return None
        return self._refusals.refuse("acl", request_class, request, connection.peer, problem)

    def done(self, request, connection, response_code):
        pass

    def problem(self, request, request_class, host):
        """``None`` when the request may pass, else the remark saying why not."""
        table = self.store.table
        if table.global_white_addresses.matches(host):
            return None
        access_key = request.get(ACCESS_KEY)
        if access_key is None:
            return ("No accessKey is configured: request code %d (%s) is %s and must be signed "
                    "with an AccessKey and SecretKey" % (request.code, request_name(request.code), request_class))
        account = table.account(access_key)
        if account is None:
            return "No acl config for %s" % access_key
        if account.white_addresses.matches(host):
            return None
        if not signature_matches(request.ext, request.body, request.version, account.secret_key):
            return "Check signature failed for accessKey=%s" % access_key
        if request_class == ADMIN_WRITE and not account.admin:
            return "Need admin permission for request code=%d, but accessKey=%s is not" % (request.code, access_key)
        return None


@implementer(IRequestPolicy)
class ControllerAdminAclPolicy:
    """``aclEnable`` on the controller port: its admin writes are signed as the name server's are.

    Those are what mqadmin changes: CONTROLLER_ELECT_MASTER with a designated broker (``electMaster``),
    UPDATE_CONTROLLER_CONFIG and CLEAN_BROKER_DATA, and what ``namesrv-admin`` changes in the group itself
    (adding, promoting and removing members, handing leadership over). Everything brokers send (their own elections,
    ids, heartbeats, in-sync sets) and the reads pass as before, as on the name server port.
    """

    ADMIN_WRITES = frozenset([RequestCode.UPDATE_CONTROLLER_CONFIG, RequestCode.CLEAN_BROKER_DATA,
                              RequestCode.CONTROLLER_ADD_MEMBER, RequestCode.CONTROLLER_PROMOTE_MEMBER,
                              RequestCode.CONTROLLER_REMOVE_MEMBER, RequestCode.CONTROLLER_TRANSFER_LEADER])

    def __init__(self, acl):
        self.acl = acl

    def is_admin_write(self, request):
        if request.code in self.ADMIN_WRITES:
            return True
        return request.code == RequestCode.CONTROLLER_ELECT_MASTER and request.get_bool("designateElect", False)

    def check(self, request, connection):
        if not self.is_admin_write(request):
            return None
        return self.acl.check_as(request, connection, ADMIN_WRITE)

    def done(self, request, connection, response_code):
        pass


@implementer(IRequestPolicy)
class BrokerAllowListPolicy:
    """Broker-control requests only from the addresses in ``brokerAllowedAddresses`` (empty: anyone).

    The connection's address is checked, never the ``brokerAddr`` header, which the sender chooses.
    """

    def __init__(self, classifier, config, listeners=()):
        self.classifier = classifier
        self.allowed = _LiveSetting(config, "brokerAllowedAddresses", AddressMatcher.parse)
        self.allowed.get()
        self._refusals = _Refusals(list(listeners))

    def allows_cached_answer(self, code):
        """Only broker-control requests are checked, and those are never cached."""
        return self.classifier.classify(code) != BROKER_CONTROL

    def check(self, request, connection):
        allowed = self.allowed.get()
        if not allowed:
            return None
        request_class = self.classifier.classify(request.code)
        if request_class != BROKER_CONTROL:
            return None
        host = peer_host(connection.peer)
        if allowed.matches(host):
            return None
        remark = ("%s (%d) from %s refused: the address is not in brokerAllowedAddresses"
                  % (request_name(request.code), request.code, host))
        return self._refusals.refuse("broker_allowlist", request_class, request, connection.peer, remark)

    def done(self, request, connection, response_code):
        pass
