"""The writer side of the kill -9 test: writes requests from 8 threads until killed.

Prints `ok <request id>` (flushed) as each write's future completes, i.e. only after
the transaction holding it committed; the parent SIGKILLs this process mid-stream.
Usage: python crash_child.py URL
"""

from __future__ import annotations

import sys
import threading
from concurrent.futures import Future

from store_builders import request

from shadowrl.serve.store import NewSession, TraceStore
from shadowrl.serve.store.db import open_engine

out_lock = threading.Lock()


def acknowledge(rid: str, fut: Future[None]) -> None:
    if fut.exception() is None:
        with out_lock:
            sys.stdout.write(f"ok {rid}\n")
            sys.stdout.flush()


def tokens(rid: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The prompt and generated ids of a request, derived from its id (checkable)."""
    t, i = (int(x) for x in rid.split("-")[1:])
    generated = tuple((t * 1000 + i + k) % 49152 for k in range(1 + i % 60))
    return tuple(range(i % 7, i % 7 + 1500)), generated


def main(url: str) -> None:
    store = TraceStore(open_engine(url), max_batch=64)
    store.writer.submit(NewSession("crash")).result()

    def producer(t: int) -> None:
        for i in range(10**9):
            rid = f"r-{t}-{i}"
            prompt, generated = tokens(rid)
            fut = store.writer.submit(request(rid, "crash", prompt=prompt, generated=generated))
            fut.add_done_callback(lambda f, rid=rid: acknowledge(rid, f))
            if i % 8 == 7:
                fut.result()  # keep the queue short, like requests waiting on [DONE]

    threads = [threading.Thread(target=producer, args=(t,), daemon=True) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()


if __name__ == "__main__":
    main(sys.argv[1])
