"""Time, for every layer: the monotonic clock, deadline queues, timers as child services, and the
process's one scheduler of work sliced across reactor turns. Nothing here knows a request or a table."""
