"""A RocketMQ NameServer on Twisted, wire-compatible with the Java one."""

__version__ = "0.1.0"
