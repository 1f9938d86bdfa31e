"""A served pool's result carries its request for work, on real zmq sockets on loopback.

A pool whose worker finished sends the result and asks for the freed slot in one ``results``
message. Sent as two messages, a master that read the result alone saw no free slot: its drain
ended with nothing running, and a paused run was never thawed (tests/test_thaw.py's served
study, under load). Each side is checked against a raw socket playing the other, one message
at a time, so neither test depends on timing."""

import json
import threading

import pytest

zmq = pytest.importorskip("zmq")

from emews.evaluate import Outcome  # noqa: E402
from emews.pools._base import Task  # noqa: E402
from emews.service._zmq_transport import ZmqPool, ZmqService  # noqa: E402
from emews.store import SQLiteStore  # noqa: E402

TASK = Task(7, '{"x": 1}', "RUN007", 1)


@pytest.fixture
def router():
    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    yield sock, f"tcp://127.0.0.1:{port}"
    sock.close(0)


def next_message(sock):
    """The next message on a ROUTER: ``(identity, message)``."""
    assert sock.poll(30_000), "no message within 30 s"
    identity, frame = sock.recv_multipart()
    return identity, json.loads(frame)


def send(sock, identity, op, **fields):
    sock.send_multipart([identity, json.dumps({"op": op, **fields}).encode()])


def test_a_pool_sends_its_result_and_its_request_for_the_freed_slot_in_one_message(router):
    sock, address = router
    pool = ZmqPool(1, address, None, give_up=60)
    try:
        learning = threading.Thread(target=pool.learn_study)
        learning.start()
        identity, hello = next_message(sock)
        assert hello["op"] == "hello"
        send(sock, identity, "study", config={}, expdir="/x", lease=60.0)
        learning.join()
        assert pool.report_and_take([], 1, True, False) == []
        assert next_message(sock)[1] == {"op": "want", "free": 1, "received": 0}
        send(sock, identity, "tasks", tasks=[list(TASK[:4])])
        assert pool.wait(30)
        assert pool.report_and_take([], 1, True, False) == [TASK]   # nothing more asked
        outcome = Outcome(0.5, started=1.0, finished=2.0)
        pool.report_and_take([(TASK, 1, outcome)], 1, True, False)
        assert next_message(sock)[1] == {"op": "results", "results": [[7, 1, 1, outcome.to_wire()]],
                                         "free": 1, "received": 1}
    finally:
        pool.socket.close(0)


def test_the_service_counts_a_results_request_before_the_master_sees_the_result(tmp_path):
    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    store = SQLiteStore(tmp_path / "results.db")
    service = ZmqService(sock, 60, store, {"config": {}, "expdir": str(tmp_path)}, None)
    peer = zmq.Context.instance().socket(zmq.DEALER)
    peer.setsockopt(zmq.LINGER, 0)
    peer.connect(f"tcp://127.0.0.1:{port}")

    def say(op, **fields):
        peer.send(json.dumps({"op": op, **fields}).encode())
        assert service.wait(30)
        return service.receive()

    try:
        say("hello", pool="p", workers=1, host="h", pid=1, received=0)
        say("want", free=1, received=0)
        assert service.demand(0) == 1
        service.send([TASK])
        assert service.demand(1) == 0
        outcome = Outcome(0.5, started=1.0, finished=2.0).to_wire()
        results, heard = say("results", results=[[7, 1, 1, outcome]], free=1, received=1)
        assert [r[0] for r in results] == [7]
        assert service.demand(0) == 1   # the freed slot, known with the result
    finally:
        peer.close(0)
        service.close()
        store.close()
