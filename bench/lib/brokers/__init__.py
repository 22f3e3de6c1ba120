"""The one fake-broker generator of the benchmarks: every scenario makes its brokers and their frames here.

- ``bodies``: REGISTER_BROKER bodies (plain and compressed, as a 4.9.8 broker writes them) and the floor
  of parsing one;
- ``frames``: the requests a broker sends, pre-encoded per style (4.9 re-registers, 5.x beats), register
  frames split from their shared body, the controller-mode heartbeat;
- ``layouts``: who the brokers of a fleet are and which topics each serves (bands of a cluster, topics
  spread over brokers, topics of their own);
- ``fake``: one broker on a blocking connection (a few brokers);
- ``fleet``: thousands of brokers of a layout in one child process (one selector, shared bodies).
"""

from bench.lib.brokers.bodies import (compressed_body, parse_compressed, parse_plain, plain_body,
                                      queue_data_json_bytes, register_body, topic_names)
from bench.lib.brokers.fake import FakeBroker
from bench.lib.brokers.fleet import REGISTER_WINDOW, BrokerFleet
from bench.lib.brokers.frames import (CLUSTER, STYLES, controller_heartbeat_request, register_request,
                                      register_template, replica_info_request)
from bench.lib.brokers.layouts import BandLayout, Broker, OwnTopicsLayout, SpreadLayout, broker_addr

__all__ = ["CLUSTER", "STYLES", "REGISTER_WINDOW", "Broker", "BandLayout", "SpreadLayout", "OwnTopicsLayout",
           "BrokerFleet", "FakeBroker", "broker_addr", "compressed_body", "controller_heartbeat_request",
           "parse_compressed", "parse_plain", "plain_body", "queue_data_json_bytes", "register_body",
           "register_request", "register_template", "replica_info_request", "topic_names"]
