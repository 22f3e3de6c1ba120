"""Zero-downtime restart and upgrade: a new process takes over from the running one.

``twistd namesrv -c <same file> --takeover`` starts a process that asks the running
process of the same instance (same KV file, so same instance id and listen address) over
its control socket, ``<kvConfigPath>.instance.handover.sock`` (mode 0600). The old process:

1. stops accepting (the listening socket itself stays open: queued connections wait);
2. tells its read workers to hand every connection to it at a frame boundary (they exit);
3. stops reading every connection and waits for the answers in flight;
4. flushes its KV file and sends its route tables (the snapshot encoding) with the
   listening socket (SCM_RIGHTS);
5. once the new process serves from that socket (``ready``), sends every connection with
   the bytes it had read but not handled; TLS connections, whose session cannot move, are
   closed after their answers; then it exits.

Nothing is lost: the socket never closes, so nothing in its queue is reset; nothing is read
between the table copy and the move. Brokers keep being served on their moved connections
and bind to them again at their next registration (as after a warm restart). If the new
process goes away before ``ready`` the old one serves again. Java has nothing like it: a
restart there refuses connections and forgets routes until brokers re-register.

Modules: ``messages`` (the versioned format), ``handing`` (old side), ``taking`` (new
side), ``drain`` (the old main process's connections), ``inflight`` (answers pending),
``coordinator`` (the control socket and the service's hooks).
"""
