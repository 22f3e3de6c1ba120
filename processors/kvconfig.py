"""The KV config processor: PUT/GET/DELETE_KV_CONFIG and GET_KVLIST_BY_NAMESPACE.

PUT and DELETE answer once the change is on disk (Java answers after its synchronous
write too); a failed write (disk full, read-only directory) answers SYSTEM_ERROR with
the reason, and the value stays in memory so the next successful write persists it.
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
        self.kv = context.kv
        self._handlers = {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
        }

    def reject_request(self, request):
        return None

    def process_request(self, request, connection):
        return self._handlers[request.code](request)

    def put_kv_config(self, request):
        namespace, key = request.require("namespace"), request.require("key")
        value = request.ext.get("value") if request.ext else None
        if value is None:
            raise HeaderFieldError("value")
        return self._persisted(request, self.kv.put(namespace, key, value))

    def delete_kv_config(self, request):
        namespace, key = request.require("namespace"), request.require("key")
        return self._persisted(request, self.kv.delete(namespace, key))

    @staticmethod
    def _persisted(request, written):
        written.addCallbacks(
            lambda _: request.make_response(ResponseCode.SUCCESS),
            lambda failure: request.make_response(ResponseCode.SYSTEM_ERROR,
                                                  "kv config persist failed: %s" % (failure.value,)))
        return written

    def get_kv_config(self, request):
        namespace, key = request.require("namespace"), request.require("key")
        value = self.kv.get(namespace, key)
        if value is None:
            return request.make_response(ResponseCode.QUERY_NOT_FOUND,
                                         "No config item, Namespace: %s Key: %s" % (namespace, key), ext={})
        return request.make_response(ResponseCode.SUCCESS, ext={"value": value})

    def get_kv_list_by_namespace(self, request):
        namespace = request.require("namespace")
        body = self.kv.kv_table_body(namespace)
        if body is None:
            return request.make_response(ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: %s" % namespace)
        return request.make_response(ResponseCode.SUCCESS, body=body)
