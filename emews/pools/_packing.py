"""Packing evaluations of mixed sizes onto a pool's slots, GPUs and nodes.

A pool's slots are its worker ranks, each on a host; each host has GPUs (``gpus_per_node``
device ids), each of capacity 1. :meth:`Packer.place` finds room for one
:class:`~emews.pools._requests.Request`, :meth:`Packer.schedule` starts the waiting ones
with backfill (docs/src/parallel-evals.md, Slots and packing; ``benchmarks/packing.py``
measures it against FCFS).
"""

from dataclasses import dataclass
from fractions import Fraction


class NeverFits(ValueError):
    """A request larger than the whole pool: one line saying what it asks and what there is."""


@dataclass(frozen=True)
class Placement:
    """Where one evaluation runs: its ``slots`` (indexes into the packer's slots, lowest
    first: the first leads), and for each slot the ``(device id, share)`` GPUs it took."""

    slots: tuple
    gpus: tuple = ()


class Packer:
    """The free slots and GPU capacity of a pool; ``hosts`` names the host of each slot, and
    each host has ``gpus_per_node`` GPUs (``devices``: their ids, default ``0..G-1``)."""

    def __init__(self, hosts, gpus_per_node=0, devices=None):
        self.hosts = list(hosts)
        devices = list(devices or range(int(gpus_per_node or 0)))[:int(gpus_per_node or 0)]
        self.devices = [str(d) for d in devices]
        self.order = list(dict.fromkeys(self.hosts))           # hosts in slot order
        self.free = {host: [] for host in self.order}          # host -> free slot indexes
        for slot, host in enumerate(self.hosts):
            self.free[host].append(slot)
        self.room = {host: {device: Fraction(1) for device in self.devices}
                     for host in self.order}                   # host -> device -> capacity
        self.size = {host: len(slots) for host, slots in self.free.items()}

    def check(self, request):
        """Raise :class:`NeverFits` when ``request`` could not run even on an empty pool."""
        most, total = max(self.size.values()), len(self.hosts)
        if request.ranks > total:
            raise NeverFits(f"an evaluation of {request.ranks} ranks can never fit: the pool "
                            f"has {total} worker slots")
        if request.nodes is not None and request.nodes > len(self.order):
            raise NeverFits(f"an evaluation on {request.nodes} nodes can never fit: the pool "
                            f"has {len(self.order)}")
        if request.gpus and not self.devices:
            raise NeverFits(f"an evaluation of {float(request.gpus):g} GPUs can never fit: the "
                            "pool has none ([system] gpus_per_node is 0)")
        per_host = max(self._capacity(host, request.share, empty=True) for host in self.order)
        split = request.split()
        if split is not None and split[0] > per_host or \
                request.ranks > per_host * len(self.order):
            gpus = f" and {float(request.gpus):g} GPUs" if request.gpus else ""
            raise NeverFits(f"an evaluation of {request.ranks} ranks{gpus} on "
                            f"{request.nodes or 'any'} nodes can never fit: the pool has "
                            f"{len(self.order)} nodes of {most} slots and "
                            f"{len(self.devices)} GPUs each")

    def place(self, request, hosts=None):
        """Take room for ``request`` on ``hosts`` (default: all); return its
        :class:`Placement`, or ``None`` (nothing taken) when it does not fit now."""
        share, split = request.share, request.split()
        hosts = self.order if hosts is None else hosts
        candidates = [h for h in hosts if self._capacity(h, share)]
        chosen = self._spread(candidates, request.ranks, share) if split is None \
            else self._choose(candidates, split, share)
        if chosen is None:
            return None
        taken = []   # (slot, the GPUs its rank took)
        for host, count in chosen:
            taken += [(slot, self._take_gpu(host, share)) for slot in self.free[host][:count]]
            del self.free[host][:count]
        slots, gpus = zip(*sorted(taken))
        return Placement(slots, gpus)

    def release(self, placement):
        """Give back what ``placement`` took."""
        for slot, taken in zip(placement.slots, placement.gpus or [()] * len(placement.slots)):
            host = self.hosts[slot]
            self.free[host].append(slot)
            for device, share in taken:
                self.room[host][device] += share
        for host in {self.hosts[slot] for slot in placement.slots}:
            self.free[host].sort()

    def in_use(self):
        """How many slots are taken."""
        return len(self.hosts) - sum(len(slots) for slots in self.free.values())

    def schedule(self, requests):
        """Place the waiting ``requests`` (in their order) that may start now, reserving hosts
        for the oldest that does not fit (see above): a list of ``(index, Placement)``."""
        started, hosts, refused = [], list(self.order), set()
        for index, request in enumerate(requests):
            if request.shape in refused:   # one of the same size did not fit: nor does this
                continue
            placement = self.place(request, hosts)
            if placement is not None:
                started.append((index, placement))
                continue
            refused.add(request.shape)
            if len(hosts) == len(self.order):   # the oldest waiting one: reserve for it
                reserved = self._reserve(request)
                hosts = [h for h in hosts if h not in reserved]
                refused.clear()                 # fewer hosts from now on
            if not hosts:
                break
        return started

    def _reserve(self, request):
        """The hosts with the most room, as many as ``request`` needs once they are empty."""
        by_room = sorted(self.order, key=lambda h: -self._capacity(h, request.share))
        need = request.nodes or 0
        reserved, ranks = [], 0
        for host in by_room:
            if len(reserved) >= need and ranks >= request.ranks:
                break
            reserved.append(host)
            ranks += self._capacity(host, request.share, empty=True)
        return set(reserved)

    def _capacity(self, host, share, empty=False):
        """How many more ranks of GPU ``share`` ``host`` can take now (``empty``: once all
        its slots and GPUs are free)."""
        slots = self.size[host] if empty else len(self.free[host])
        if not share:
            return slots
        room = [Fraction(1)] * len(self.devices) if empty else self.room[host].values()
        count = sum(1 for r in room if r == 1) // int(share) if share >= 1 \
            else sum(int(r / share) for r in room)
        return min(count, slots)

    def _choose(self, candidates, split, share):
        """``len(split)`` distinct hosts, the i-th taking ``split[i]`` ranks (fullest first)."""
        chosen, left = [], sorted(candidates, key=lambda h: self._capacity(h, share))
        for count in split:
            host = next((h for h in left if self._capacity(h, share) >= count), None)
            if host is None:
                return None
            left.remove(host)
            chosen.append((host, count))
        return chosen

    def _spread(self, candidates, ranks, share):
        """One host with room for all ``ranks`` (the fullest such), else the emptiest hosts."""
        room = {h: self._capacity(h, share) for h in candidates}
        whole = [h for h in candidates if room[h] >= ranks]
        if whole:
            return [(min(whole, key=room.get), ranks)]
        if sum(room.values()) < ranks:
            return None
        chosen = []
        for host in sorted(candidates, key=lambda h: -room[h]):
            count = min(room[host], ranks)
            if count:
                chosen.append((host, count))
                ranks -= count
            if not ranks:
                return chosen
        return None

    def _take_gpu(self, host, share):
        """Take ``share`` of GPU for one rank on ``host``: ``(device, share)`` pairs."""
        if not share:
            return ()
        room = self.room[host]
        if share >= 1:
            devices = [d for d in self.devices if room[d] == 1][:int(share)]
            for device in devices:
                room[device] = Fraction(0)
            return tuple((device, Fraction(1)) for device in devices)
        device = min((d for d in self.devices if room[d] >= share), key=room.get)
        room[device] -= share
        return ((device, share),)
