"""Time, for every layer: the monotonic clock, deadline queues, timers as child services, the process's
one scheduler of work sliced across reactor turns, and the loop a takeover's drain waits in. Nothing here
knows a request or a table."""
