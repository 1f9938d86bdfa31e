"""The worker's side of an evaluation of several ranks (emews.evaluate._group): rank 0 may
connect, reply and exit, and the launcher end, between two looks at the listener; the reply
waiting in the listener's backlog is still read."""

import socket
import subprocess
import sys

from emews.evaluate._group import _Exchange


def ended_launcher():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child


def test_an_ended_launcher_is_not_gone_while_rank_0_s_connection_waits_to_be_accepted(
        tmp_path):
    listener = socket.create_server(("127.0.0.1", 0))
    exchange = _Exchange(ended_launcher(), listener, "token", None, tmp_path / "model.log")
    rank0 = socket.create_connection(listener.getsockname())
    try:
        assert not exchange._launcher_gone()
        exchange.sock, _ = listener.accept()
        assert not exchange._launcher_gone()
        exchange._close()
        assert exchange._launcher_gone()
    finally:
        rank0.close()
        listener.close()


def test_a_running_launcher_is_never_gone(tmp_path):
    listener = socket.create_server(("127.0.0.1", 0))
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        assert not _Exchange(child, listener, "token", None, tmp_path / "log")._launcher_gone()
    finally:
        child.stdin.close()
        child.wait()
        listener.close()
