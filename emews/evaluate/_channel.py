"""The private channel between a worker and its nanny: length-prefixed JSON frames.

A frame is a 4-byte big-endian length and that many bytes of JSON (ASCII: lone surrogates
travel escaped). Only plain data crosses: a task's text and settings, a number or a reason.
"""

import json
import struct

HEADER = struct.Struct(">I")


def send(sock, message):
    """Send ``message`` as one frame (blocking)."""
    body = json.dumps(message).encode("ascii")
    sock.sendall(HEADER.pack(len(body)) + body)


def receive(sock):
    """The next message, blocking; None when the other end has closed the channel."""
    header = _exactly(sock, HEADER.size)
    if header is None:
        return None
    body = _exactly(sock, HEADER.unpack(header)[0])
    return None if body is None else json.loads(body)


def _exactly(sock, size):
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


class Reader:
    """Frames from a socket read a piece at a time (for a caller that also waits on others)."""

    def __init__(self):
        self.buffer = bytearray()

    def feed(self, data):
        """Add received bytes; the first complete message, or None while incomplete."""
        self.buffer += data
        if len(self.buffer) < HEADER.size:
            return None
        size = HEADER.unpack_from(self.buffer)[0]
        if len(self.buffer) < HEADER.size + size:
            return None
        body = bytes(self.buffer[HEADER.size:HEADER.size + size])
        del self.buffer[:HEADER.size + size]
        return json.loads(body)
