"""JSON as RocketMQ's Java peers write and read it (fastjson 1.x), for every layer that needs it.

The wire layer (``protocol/``: headers) and the route tables' bodies (``routes/bodies/``) both
import from here, so neither knows the other.
"""
