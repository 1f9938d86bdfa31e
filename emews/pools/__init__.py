"""Pools of workers that evaluate tasks for the master: :mod:`.base` (the interface and the
in-process pool) and :mod:`.mpi` (MPI ranks). Remote pools live in :mod:`emews.service`."""
