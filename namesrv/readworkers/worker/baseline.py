"""A read worker's first replica from the route snapshot file the main process restored, not down the pipe.

At a million topics a full copy down the pipe is thousands of parts for the main process and seconds for the
worker before it listens (figures: bench/results/design-figures.md#worker-baseline). The main process
restored its tables from a snapshot file; it passes that open file to the workers it starts then
(``--snapshot-fd``), and each restores the same bytes
itself, on its own core, checked as the main process checked them. Its first publication then carries
only what changed since (the main process tracks it from the restore on), and the worker listens once
that is applied, as after a full copy.
"""

import os
import time

from namesrv.routes.slicedsnapshot import restore_all


def restore_baseline(replica, fd):
    """Restore the snapshot file open as ``fd`` (read with pread: the descriptor's offset is shared with the
    main process) into ``replica``'s tables and mark it complete. Returns (topics, seconds), or raises
    SnapshotError / OSError (the worker then asks for a full copy). Closes ``fd``."""
    from namesrv.routes.snapshot import open_sliced
    from namesrv.storage.snapshotfile import read_whole
    began = time.monotonic()
    try:
        routes = replica.context.routes
        restore_all(routes, open_sliced(read_whole(fd)), routes.clock.seconds(), emit_events=False)
    finally:
        os.close(fd)
    replica.complete = True
    return len(replica.context.routes.topic_queue_table), time.monotonic() - began
