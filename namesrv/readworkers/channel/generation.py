"""The shared change counter: the main process writes it, read workers compare against it."""

import mmap
import os
import struct

_COUNTER = struct.Struct("=Q")


class SharedGeneration:
    """An 8-byte counter in a file mapped by every process (``writable`` only in the main one).

    An aligned 8-byte store is one machine write, so a reader sees the old or the new
    value, never a mix.
    """

    def __init__(self, path, writable=False):
        self.path = path
        flags = os.O_RDWR if writable else os.O_RDONLY
        if writable:
            flags |= os.O_CREAT
        fd = os.open(path, flags, 0o600)
        try:
            if writable and os.fstat(fd).st_size < _COUNTER.size:
                os.ftruncate(fd, mmap.PAGESIZE)
            access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
            self._map = mmap.mmap(fd, _COUNTER.size, access=access)
        finally:
            os.close(fd)
        self.value = self.read()

    def read(self):
        return _COUNTER.unpack_from(self._map, 0)[0]

    def bump(self):
        """One more change: returns the new value."""
        self.value += 1
        _COUNTER.pack_into(self._map, 0, self.value)
        return self.value

    def close(self):
        try:
            self._map.close()
        except (BufferError, ValueError):
            pass
