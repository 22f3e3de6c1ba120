"""`twistd namesrv`: the RocketMQ NameServer."""

from twisted.application.service import ServiceMaker

namesrv = ServiceMaker(
    "RocketMQ NameServer",
    "namesrv.tap",
    "A RocketMQ NameServer, wire-compatible with the Java one.",
    "namesrv",
)

controller = ServiceMaker(
    "RocketMQ controller",
    "namesrv.controller.tap",
    "A RocketMQ controller (RIP-44) alone, as Java's mqcontroller.",
    "controller",
)
