"""The ACL check (``aclEnable``): every request signed by an account allowed to send its class, on its
resources, from where it comes; refused with NO_PERMISSION otherwise. The same policy guards every port
that speaks remoting: the name server's, the controller's, and the read workers' (which load the same
file).

The steps, for a request of class C (namesrv/dispatch/classes.py) from host H:

1. a code in no request class: refused (with ACL on, nothing unknown runs);
2. C not in ``aclSignedClasses`` (default: every class): passes unsigned, as the operator chose;
3. H in the file's ``globalWhiteRemoteAddresses``: passes (ACL 1.0's meaning; use with care);
4. no ``AccessKey``: refused, but for a broker-control request from ``brokerAllowedAddresses`` when that
   list is set: a 4.9 broker cannot sign, and for it the address list is the way in;
5. an unknown or disabled account: refused; H in the account's ``whiteRemoteAddress`` skips the
   signature (ACL 1.0); otherwise the ``Signature`` must be the HMAC of the request with the account's
   secret (namesrv/security/signature.py: what ``AclClientRPCHook`` sends);
6. the account's grants must allow C on each resource the request names from H (grants.py).

Java's name server checks nothing; its broker (``PlainPermissionManager``, 4.9) answers a refusal with
SYSTEM_ERROR and the exception text, and 5.x's ACL 2.0 covers brokers and proxies only. Here a refusal is
NO_PERMISSION (16) with a remark naming the class and what is missing, logged once per peer and reason a
minute, counted in the metrics (``namesrv_requests_rejected_total{reason}``) and written to the event log
(``request_refused``).
"""

from zope.interface import implementer

from namesrv.dispatch.classes import BROKER_CONTROL, parse_class_list
from namesrv.interfaces import IPeerScopedPolicy, IWorkerCheckedPolicy
from namesrv.protocol.codes import request_name
from namesrv.security.addresses import AddressMatcher, peer_host
from namesrv.security.livesetting import LiveSetting
from namesrv.security.signature import ACCESS_KEY, signature_matches

@implementer(IWorkerCheckedPolicy, IPeerScopedPolicy)
class TrustPolicy:
    """``check``: None to let the request through, or (NO_PERMISSION, remark).

    Its verdict is a function of the request's bytes but the opaque (the signature covers every header
    field and the body), of the peer's host, of the credentials and of the configuration. So an answer it
    let through may be replayed by the answer cache to the same frame from the same host (IPeerScopedPolicy),
    until the credentials reload or the configuration changes (both empty the cache): what the check would
    say again. A replayed signed frame is a replay the check would accept too: ACL 1.0 signatures carry no
    time or nonce.
    """

    def __init__(self, store, classifier, config, refusals):
        self.store = store
        self.classifier = classifier
        self.refusals = refusals
        self.signed_classes = LiveSetting(config, "aclSignedClasses", parse_class_list)
        self.broker_addresses = LiveSetting(config, "brokerAllowedAddresses", AddressMatcher.parse)
        self.signed_classes.get()
        self.broker_addresses.get()

    def check(self, request, connection):
        classifier = self.classifier
        if not classifier.known(request.code):
            return self._refuse(request, connection, None, "unclassified", None,
                                "request code %d is in no request class: refused while aclEnable=true"
                                % request.code)
        request_class = classifier.classify_request(request)
        if request_class not in self.signed_classes.get():
            return None
        host = peer_host(connection.peer)
        table = self.store.table
        if table.global_white_addresses.matches(host):
            return None
        access_key = request.get(ACCESS_KEY)
        if access_key is None:
            brokers = self.broker_addresses.get()
            if request_class == BROKER_CONTROL and brokers and brokers.matches(host):
                return None
            return self._refuse(request, connection, request_class, "unsigned", None,
                                "No accessKey is configured: %s and must be signed with an AccessKey and SecretKey"
                                % _what(request, request_class))
        account = table.account(access_key)
        if account is None:
            return self._refuse(request, connection, request_class, "unknown_account", access_key,
                                "No acl config for %s: %s" % (access_key, _what(request, request_class)))
        if not account.enabled:
            return self._refuse(request, connection, request_class, "disabled_account", access_key,
                                "User:%s is disabled: %s" % (access_key, _what(request, request_class)))
        if not account.white_addresses.matches(host) and not signature_matches(
                request.ext, request.body, request.version, account.secret_key):
            return self._refuse(request, connection, request_class, "bad_signature", access_key,
                                "Check signature failed for accessKey=%s: %s"
                                % (access_key, _what(request, request_class)))
        refusal = account.refusal(request_class, classifier.resources(request), host)
        if refusal is not None:
            resource, why = refusal
            return self._refuse(request, connection, request_class, "not_allowed", access_key,
                                "%s %s has no permission for %s on %s from %s: %s"
                                % ("User" if account.kind == "user" else "accessKey", access_key, request_class,
                                   resource, host, why))
        return None

    def done(self, request, connection, response_code):
        pass

    def allows_cached_answer(self, code):
        return True

    def _refuse(self, request, connection, request_class, reason, access_key, remark):
        return self.refusals.refuse(request, connection, request_class or "unclassified", "acl_" + reason,
                                    access_key, remark)


def _what(request, request_class):
    """What a refusal's remark says of the request (built only for a refusal: a request let through pays nothing)."""
    return "request code %d (%s) is %s" % (request.code, request_name(request.code), request_class)
