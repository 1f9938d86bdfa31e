"""Pools of workers that evaluate tasks for the master: :mod:`._base` (the interface and the
in-process pool) and :mod:`._mpi` (MPI ranks). Remote pools live in :mod:`emews.service`."""
