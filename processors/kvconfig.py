"""The KV config processor: PUT/GET/DELETE_KV_CONFIG and GET_KVLIST_BY_NAMESPACE, the KV part of Java's
DefaultRequestProcessor (``putKVConfig``, ``getKVConfig``, ``deleteKVConfig``, ``getKVListByNamespace``).

PUT and DELETE change the table at once (a GET right after sees the change) and answer
once the change is on disk, as Java answers after its synchronous write. A failed write
(disk full, read-only directory) answers SYSTEM_ERROR ``kv config persist failed: ...``
(Java logs the error and answers SUCCESS); the value stays in memory and the next
successful write, or the shutdown flush, persists it.

Java stores a null value when PUT has no ``value``; a GET then says not found. We refuse
it (SYSTEM_ERROR naming the field). An empty value (possible in a JSON header) is a value.
"""

from zope.interface import implementer

from namesrv.interfaces import IRequestProcessor
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import HeaderFieldError


@implementer(IRequestProcessor)
class KVConfigProcessor:
    name = "kvconfig"
    codes = frozenset([RequestCode.PUT_KV_CONFIG, RequestCode.GET_KV_CONFIG, RequestCode.DELETE_KV_CONFIG,
                       RequestCode.GET_KVLIST_BY_NAMESPACE])

    def __init__(self, context):
        self.context = context
        self._handlers = {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
        }

    @property
    def kv(self):
        return self.context.kv

    def reject_request(self, request):
        return None

    def process_request(self, request, connection):
        return self._handlers[request.code](request)

    def put_kv_config(self, request):
        namespace, key = request.require("namespace"), request.require("key")
        value = request.ext.get("value") if request.ext else None
        if value is None:
            raise HeaderFieldError("value")
        return _answer_when_persisted(request, self.kv.put(namespace, key, value))

    def delete_kv_config(self, request):
        namespace, key = request.require("namespace"), request.require("key")
        return _answer_when_persisted(request, self.kv.delete(namespace, key))

    def get_kv_config(self, request):
        namespace, key = request.require("namespace"), request.require("key")
        value = self.kv.get(namespace, key)
        if value is None:
            # Java's typed (empty) response header: the answer carries "extFields":{}.
            return request.make_response(ResponseCode.QUERY_NOT_FOUND,
                                         "No config item, Namespace: %s Key: %s" % (namespace, key), ext={})
        return request.make_response(ResponseCode.SUCCESS, ext={"value": value})

    def get_kv_list_by_namespace(self, request):
        namespace = request.require("namespace")
        body = self.kv.kv_table_body(namespace)
        if body is None:
            return request.make_response(ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: %s" % namespace)
        return request.make_response(ResponseCode.SUCCESS, body=body)


def _answer_when_persisted(request, written):
    return written.addCallbacks(
        lambda _: request.make_response(ResponseCode.SUCCESS),
        lambda failure: request.make_response(ResponseCode.SYSTEM_ERROR,
                                              "kv config persist failed: %s" % (failure.value,)))
