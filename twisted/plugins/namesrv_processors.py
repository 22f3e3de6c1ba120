"""The built-in request processors: default, KV config and route; and the controller's, on its own port."""

from namesrv.plugin import ProcessorPlugin

default = ProcessorPlugin("default", "processors.default", "DefaultProcessor",
                          "GET/UPDATE_NAMESRV_CONFIG")
kvconfig = ProcessorPlugin("kvconfig", "processors.kvconfig", "KVConfigProcessor",
                           "PUT/GET/DELETE_KV_CONFIG, GET_KVLIST_BY_NAMESPACE")
route = ProcessorPlugin("route", "processors.route", "RouteProcessor",
                        "broker registration and every route query")
controller = ProcessorPlugin("controller", "namesrv.controller.processor", "ControllerProcessor",
                             "the controller's codes (RIP-44), on the controller's port", port="controller")
controller_membership = ProcessorPlugin("controller-membership", "namesrv.controller.membership",
                                        "ControllerMembershipProcessor",
                                        "the controller group's members and leadership (ours), on the controller's port",
                                        port="controller")
