"""Group commit: trace writes leave the request path and reach the disk in batches.

A request handler calls `await writer.write(record)` (or `submit` from a thread): the
record goes on a queue and the call returns once the transaction holding it has
committed, so a server that sends `[DONE]` after the await never acknowledges a
response the store could lose. One thread drains the queue: it takes whatever is
waiting (up to `max_batch`), applies it in submission order in one transaction and
commits, then resolves those futures. While a commit is being made durable, new
writes pile up and go into the next one, so under load many requests share one
fsync and idle traffic costs one transaction per write, never one per token.

A batch that fails is retried one record per transaction, so a bad record (say a
duplicate id) fails only its own future. The queue is unbounded: memory, not
latency, absorbs a burst when the database is slow.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from concurrent.futures import Future
from types import TracebackType

from sqlalchemy import Engine

from shadowrl.serve.store.records import Write

log = logging.getLogger(__name__)

Item = tuple[Write, "Future[None]"]


class WriterClosed(RuntimeError):
    """A write was submitted after `close`."""


class TraceWriter:
    """The store's single writer thread (see the module docstring)."""

    def __init__(self, engine: Engine, max_batch: int = 512) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        self.engine, self.max_batch = engine, max_batch
        self.transactions = 0  # committed batches, for tests and stats
        self.committed = 0  # records committed
        self._queue: queue.SimpleQueue[Item | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="trace-writer", daemon=True)
        self._thread.start()

    def submit(self, write: Write) -> Future[None]:
        """Queue a write; the future completes when its batch has committed (or fails)."""
        fut: Future[None] = Future()
        fut.set_running_or_notify_cancel()  # a waiter that gives up must not cancel the write
        with self._lock:
            if self._closed:
                raise WriterClosed("the trace writer is closed")
            self._queue.put((write, fut))
        return fut

    async def write(self, write: Write) -> None:
        """Queue a write and wait until it is committed (cancelling the wait keeps it)."""
        await asyncio.wrap_future(self.submit(write))

    def close(self, timeout: float | None = None) -> None:
        """Commit everything already submitted, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        self._thread.join(timeout)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------ writer thread

    def _run(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            batch = [] if first is None else [first]
            stop = first is None
            while not stop and len(batch) < self.max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                stop = item is None
                if item is not None:
                    batch.append(item)
            if batch:
                self._commit(batch)

    def _commit(self, batch: list[Item]) -> None:
        try:
            with self.engine.begin() as conn:
                for write, _ in batch:
                    write.apply(conn)
        except Exception as e:
            if len(batch) == 1:
                log.warning("trace write failed: %s", e)
                batch[0][1].set_exception(e)
                return
            for item in batch:  # isolate the bad record: one transaction each
                self._commit([item])
            return
        self.transactions += 1
        self.committed += len(batch)
        for _, fut in batch:
            fut.set_result(None)
