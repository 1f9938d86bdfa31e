"""The private channel between a worker and its nanny (or an evaluation's rank 0):
length-prefixed JSON frames.

A frame is a 4-byte big-endian length and that many bytes of JSON (ASCII: lone surrogates
travel escaped). Only plain data crosses: a task's text and settings, a number or a reason.
"""

import hmac
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
    """Frames from a socket read a piece at a time (for a caller that also waits on others);
    with a ``token``, the first frame must carry it (``{"token": ...}``: an evaluation's rank 0
    proves it is the one its worker started)."""

    def __init__(self, token=None):
        self.buffer, self.token = bytearray(), token

    def read(self, sock):
        """The messages one read of ``sock`` completes (none while a frame is incomplete);
        ``None`` when the other end has closed (or reset) the channel, or when its first frame
        lacks the token."""
        try:
            data = sock.recv(65536)
        except ConnectionError:
            data = b""
        if not data:
            return None
        self.buffer += data
        messages = []
        while len(self.buffer) >= HEADER.size:
            size = HEADER.unpack_from(self.buffer)[0]
            if len(self.buffer) < HEADER.size + size:
                break
            messages.append(json.loads(bytes(self.buffer[HEADER.size:HEADER.size + size])))
            del self.buffer[:HEADER.size + size]
        if self.token is not None and messages:
            if not hmac.compare_digest(str(messages.pop(0).get("token", "")), self.token):
                return None
            self.token = None
        return messages
