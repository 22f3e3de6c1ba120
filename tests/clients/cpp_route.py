"""The RocketMQ C++ client (librocketmq, in PyPI's ``rocketmq`` 0.4.4 wheel) reads one topic's route, signing
with session credentials when given: ``python cpp_route.py NAMESRV TOPIC [ACCESS_KEY SECRET_KEY]``.

Run in a process of its own (the library starts threads and logs under $HOME/logs). Prints ``QUEUES n`` for
the read queues the route gave, or ``ERROR message`` and exits 1.
"""

import ctypes
import sys

from rocketmq.client import PullConsumer
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import _CMessageQueue, dll


def main(namesrv, topic, access_key=None, secret_key=None):
    consumer = PullConsumer("acl_route_reader")
    consumer.set_namesrv_addr(namesrv)
    if access_key:
        consumer.set_session_credentials(access_key, secret_key, "ALIYUN")
    consumer.start()
    queues, size = ctypes.POINTER(_CMessageQueue)(), ctypes.c_int()
    try:
        # a pull consumer's FetchSubscriptionMessageQueues is one GET_ROUTEINFO_BY_TOPIC
        ffi_check(dll.FetchSubscriptionMessageQueues(consumer._handle, topic.encode(), ctypes.byref(queues),
                                                     ctypes.byref(size)))
    except Exception as e:
        print("ERROR %s" % e, flush=True)
        return 1
    print("QUEUES %d" % size.value, flush=True)
    dll.ReleaseSubscriptionMessageQueue(queues)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
