"""Which filesystem a store lives on, and so which SQLite journal it may use (docs/src/store.md):
WAL's index in shared memory (``-shm``, mmap) needs every process that opens the database on one
host, so on a network filesystem a reader on another node could see a torn index and corrupt
the store; a rollback journal (``journal_mode=DELETE``) needs only the file locks they provide.
"""

import ctypes
import ctypes.util
import os

# f_type magic numbers from statfs(2) / linux/magic.h.
NETWORK_FILESYSTEMS = {
    0x6969: "nfs",
    0x0BD00BD0: "lustre",
    0x47504653: "gpfs",
    0xFF534D42: "cifs",
    0xFE534D42: "smb2",
    0x517B: "smb",
    0x19830326: "beegfs",
    0x00C36400: "ceph",
    0x65735546: "fuse",
    0x61756673: "afs",
    0x5346414F: "afs",
}


class _Statfs(ctypes.Structure):
    _fields_ = [("f_type", ctypes.c_long), ("f_bsize", ctypes.c_long),
                ("f_blocks", ctypes.c_ulong), ("f_bfree", ctypes.c_ulong),
                ("f_bavail", ctypes.c_ulong), ("f_files", ctypes.c_ulong),
                ("f_ffree", ctypes.c_ulong), ("f_fsid", ctypes.c_int * 2),
                ("f_namelen", ctypes.c_long), ("f_frsize", ctypes.c_long),
                ("f_flags", ctypes.c_long), ("f_spare", ctypes.c_long * 4)]


def journal_mode(path):
    """``DELETE`` (a rollback journal) where the filesystem holding ``path`` is a network one
    (its statfs ``f_type`` one of :data:`NETWORK_FILESYSTEMS`), else (or unknown) ``WAL``."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    buffer = _Statfs()
    if libc.statfs(os.fsencode(path), ctypes.byref(buffer)) != 0:
        return "WAL"
    return "DELETE" if (buffer.f_type & 0xFFFFFFFF) in NETWORK_FILESYSTEMS else "WAL"
