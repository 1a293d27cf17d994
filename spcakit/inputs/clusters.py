"""Connecting to a ``dask.distributed`` scheduler, with every wait bounded (the CLI's ``--scheduler``).

:func:`connected` is the context in which a run's dask computations go to the
scheduler at an address; :mod:`spcakit.inputs.dask_arrays` re-exports it.
Nothing here waits without end:

* an address that is not ``tcp://HOST:PORT`` (or ``HOST:PORT``) is refused
  before anything connects (:func:`scheduler_address`);
* a scheduler greets every connection first, so an address is refused within
  :data:`SCHEDULER_TIMEOUT` seconds when the greeting does not come (a silent
  port, an HTTP server waiting for a request) or is no scheduler's (an HTTP
  reply) (:func:`probe_scheduler`), before a ``distributed.Client`` is made;
* each computation in the block is watched (:class:`BoundedScheduler`): a
  scheduler without workers, or silent, for :data:`SCHEDULER_TIMEOUT` seconds,
  or a computation that runs :data:`COMPUTE_TIMEOUT` seconds, ends it with a
  :class:`ClusterError` naming the address;
* a client whose start failed is marked closed, so that no
  ``Client.__del__`` traceback follows the error 20 s later.

``SPCAKIT_SCHEDULER_TIMEOUT`` and ``SPCAKIT_COMPUTE_TIMEOUT`` (seconds) replace
the two defaults; :func:`connected` also takes them as arguments.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import attrs

from spcakit.core.errors import InvalidParameterError, SpcakitError, install_hint

#: Seconds :func:`connected` waits for a scheduler to answer, and the longest a computation on the cluster waits
#: while the scheduler has no worker or does not answer (a lost worker, a lost scheduler); the environment
#: variable ``SPCAKIT_SCHEDULER_TIMEOUT`` replaces it.
SCHEDULER_TIMEOUT = 10.0
#: Seconds one computation on the cluster (one pass over the data, one product with the covariance) may take
#: before it is cancelled as stalled; the environment variable ``SPCAKIT_COMPUTE_TIMEOUT`` replaces it.
COMPUTE_TIMEOUT = 3600.0


def _missing_extra(exc: ImportError) -> InvalidParameterError:
    return InvalidParameterError(
        f"--scheduler needs dask, distributed and zarr, which are not installed ({exc}); install them with "
        f"{install_hint('dask distributed zarr', 'dask')}"
    )


class ClusterError(SpcakitError):
    """A ``dask.distributed`` scheduler that cannot be used, or a computation on it that cannot finish: the
    address answers as no scheduler does, no worker is left, the computation stalls. The message names the
    scheduler's address."""


def _timeout(name: str, value: float | None, default: float) -> float:
    """``value``, else the environment variable ``name``, else ``default``: a positive number of seconds."""
    given = os.environ.get(name) if value is None else value
    if given is None or given == "":
        return default
    try:
        seconds = float(given)
    except (TypeError, ValueError):
        seconds = math.nan
    if isinstance(given, bool) or not (math.isfinite(seconds) and seconds > 0):
        what = f"the environment variable {name}" if value is None else name.removeprefix("SPCAKIT_").lower()
        raise InvalidParameterError(f"{what} is a number of seconds above 0; got {given!r}")
    return seconds


def scheduler_address(address: Any) -> tuple[str, int]:
    """The host and port of a scheduler's address (``tcp://HOST:PORT`` or ``HOST:PORT``), or an
    :class:`~spcakit.core.errors.InvalidParameterError` saying what an address looks like.

    Nothing is connected to: an address without a port, of another protocol (``http://``, a dashboard's) or
    with a port outside 1-65535 is refused here, before any client is made.
    """
    valid = "give the address a running scheduler prints, tcp://HOST:PORT (e.g. tcp://10.0.0.5:8786, from `dask scheduler`)"
    if not isinstance(address, str) or not address.strip():
        raise InvalidParameterError(f"--scheduler takes a scheduler's address; {valid}; got {address!r}")
    text = address.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "tcp", text
    if scheme != "tcp":
        raise InvalidParameterError(
            f"--scheduler {address}: spcakit connects to a dask.distributed scheduler over tcp://, not {scheme}:// "
            f"(a dashboard's http:// address is not the scheduler's); {valid}"
        )
    host, colon, port = rest.rstrip("/").rpartition(":")
    host = host.strip("[]")  # an IPv6 address is written [::1]:8786
    if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise InvalidParameterError(f"--scheduler {address}: no host and port (1-65535) in it; {valid}")
    return host, int(port)


#: The largest first message a scheduler's greeting may announce (its handshake is a few hundred bytes).
_GREETING_LIMIT = 1 << 20


def probe_scheduler(address: str, timeout: float) -> None:
    """Refuse, within ``timeout`` seconds in all, an address where no ``dask.distributed`` scheduler listens.

    A scheduler greets every connection first: an 8-byte length, then that many bytes (its handshake). A port
    that refuses the connection, accepts it and stays silent (a stalled process, an HTTP server waiting for a
    request), or answers with anything else (an HTTP reply, whose first bytes read as an absurd length) is a
    :class:`ClusterError` naming the address and what it did. The connection is closed after the greeting.
    """
    host, port = scheduler_address(address)
    deadline = time.monotonic() + timeout

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout()
        return remaining

    def receive(sock: socket.socket, size: int) -> bytes:
        data = b""
        while len(data) < size:
            sock.settimeout(left())
            chunk = sock.recv(min(size - len(data), 1 << 16))
            if not chunk:
                break
            data += chunk
        return data

    where = f"--scheduler {address}"
    advice = ("give the address a running scheduler prints (tcp://HOST:PORT, e.g. from `dask scheduler`), or leave "
              "--scheduler out to use the local threaded scheduler")  # fmt: skip
    try:
        with socket.create_connection((host, port), timeout=left()) as sock:
            head = receive(sock, 8)
            if len(head) < 8:
                raise ClusterError(f"{where}: no dask.distributed scheduler answered there (the connection was "
                                   f"closed without a greeting); {advice}")  # fmt: skip
            (size,) = struct.unpack("<Q", head)
            if not 0 < size <= _GREETING_LIMIT:
                shown = head.decode("latin-1").encode("unicode_escape").decode("ascii")
                kind = " (an HTTP server's reply)" if head.startswith(b"HTTP/") else ""
                raise ClusterError(f"{where}: no dask.distributed scheduler answered there: it sent {shown!r}..."
                                   f"{kind}, which no scheduler sends; {advice}")  # fmt: skip
            if len(receive(sock, size)) < size:
                raise ClusterError(f"{where}: no dask.distributed scheduler answered there (its greeting stopped "
                                   f"short); {advice}")  # fmt: skip
    except socket.timeout:
        raise ClusterError(
            f"{where}: no dask.distributed scheduler answered there within {timeout:g} s (the port accepted the "
            f"connection but sent nothing, or did not accept it); {advice}"
        ) from None
    except OSError as exc:
        raise ClusterError(
            f"{where}: no dask.distributed scheduler answered there (cannot connect: {exc.strerror or exc}); {advice}"
        ) from None


def _discard(client: Any) -> None:
    """Mark a client whose start failed as closed, so that its ``__del__`` does not wait (20 s) to close it
    again and print a traceback; its event loop is stopped."""
    with contextlib.suppress(Exception):
        client.status = "closed"
    with contextlib.suppress(Exception):
        client._loop_runner.stop()  # noqa: SLF001 - what Client.close does once closed


@attrs.frozen(eq=False)
class BoundedScheduler:
    """The dask scheduler function of :func:`connected`: each computation runs on ``client``'s cluster and is
    watched while it runs.

    It ends with a :class:`ClusterError` naming ``address`` when the scheduler has had no worker, or has not
    answered, for ``scheduler_timeout`` seconds (a lost worker, a lost scheduler), or when the computation has
    run for ``compute_timeout`` seconds (stalled); its tasks are then cancelled. ``persist`` goes to the client
    as it is (nothing waits there).
    """

    client: Any
    address: str
    scheduler_timeout: float
    compute_timeout: float

    def __call__(self, graph: Any, keys: Any, **kwargs: Any) -> Any:
        from distributed.client import futures_of  # noqa: PLC0415 - the optional extra

        packed = self.client.get(graph, keys, sync=False, **kwargs)
        futures = futures_of(packed)
        try:
            self._wait(futures)
        except BaseException:
            with contextlib.suppress(Exception):
                self.client.cancel(futures)
            raise
        return self.client.gather(packed)

    def _wait(self, futures: list[Any]) -> None:
        """Return when every future is done (errors included: gathering raises them); raise a
        :class:`ClusterError` when the cluster cannot finish them (see the class)."""
        from distributed import wait  # noqa: PLC0415 - the optional extra

        start = time.monotonic()
        unwell_since = None
        step = min(1.0, self.scheduler_timeout / 4)
        while True:
            left = self.compute_timeout - (time.monotonic() - start)
            if left <= 0:
                raise ClusterError(
                    f"--scheduler {self.address}: a computation on the cluster did not finish within "
                    f"{self.compute_timeout:g} s (stalled workers?); it was cancelled. Set SPCAKIT_COMPUTE_TIMEOUT "
                    "(seconds) to allow more"
                )
            try:
                wait(futures, timeout=min(step, left))  # returns as soon as they are done
                return
            except TimeoutError:
                pass
            now = time.monotonic()
            trouble = self._trouble()
            if trouble is None:
                unwell_since = None
            elif unwell_since is None:
                unwell_since = now
            elif now - unwell_since >= self.scheduler_timeout:
                raise ClusterError(
                    f"--scheduler {self.address}: {trouble} for {self.scheduler_timeout:g} s while a computation was "
                    "running; it was cancelled. Check the cluster (restart its workers) and run again; "
                    "SPCAKIT_SCHEDULER_TIMEOUT (seconds) sets how long to wait"
                )

    def _trouble(self) -> str | None:
        """What keeps the computation from going on (no worker, no answer), or ``None``."""
        if self.client.status != "running":
            return "the connection to the scheduler has been lost"
        try:
            info = self.client.sync(self.client.scheduler.identity, n_workers=0,
                                    callback_timeout=self.scheduler_timeout)  # fmt: skip
        except Exception:
            return "the scheduler has not answered"
        workers = info.get("n_workers", len(info.get("workers", ()))) if isinstance(info, dict) else 1
        return "the scheduler has had no worker (a lost worker?)" if workers == 0 else None

    def persist(self, collections: Any, **kwargs: Any) -> Any:
        return self.client.persist(collections, **kwargs)


@contextlib.contextmanager
def connected(
    address: str | None, *, timeout: float | None = None, compute_timeout: float | None = None
) -> Iterator[Any]:
    """Run the dask computations of the ``with`` block on the ``dask.distributed`` scheduler at ``address``.

    ``address`` is what a scheduler prints (``tcp://10.0.0.5:8786``, or
    ``HOST:PORT``); ``None`` leaves the default (the local threaded
    scheduler, or a ``distributed.Client`` the caller made). The client is
    closed when the block ends, and with it the data a wide problem built in
    the block persisted on the cluster: use the block's results after it, not
    its problems.

    Every wait is bounded. An address that is not ``tcp://HOST:PORT`` is refused
    (:class:`~spcakit.core.errors.InvalidParameterError`) before anything connects; one where no scheduler
    answers (nothing listens, a silent port, an HTTP server) is refused within ``timeout`` seconds
    (:data:`SCHEDULER_TIMEOUT`, or ``SPCAKIT_SCHEDULER_TIMEOUT``) with a :class:`ClusterError`. In the block,
    each computation ends with a :class:`ClusterError` naming the address when the scheduler has had no worker
    or not answered for ``timeout`` seconds, or when it has run ``compute_timeout`` seconds
    (:data:`COMPUTE_TIMEOUT`, or ``SPCAKIT_COMPUTE_TIMEOUT``) (:class:`BoundedScheduler`).
    """
    if address is None:
        yield None
        return
    scheduler_address(address)
    wait = _timeout("SPCAKIT_SCHEDULER_TIMEOUT", timeout, SCHEDULER_TIMEOUT)
    longest = _timeout("SPCAKIT_COMPUTE_TIMEOUT", compute_timeout, COMPUTE_TIMEOUT)
    try:
        import dask  # noqa: PLC0415 - the optional extra
        import distributed  # noqa: PLC0415
    except ImportError as exc:
        raise _missing_extra(exc) from None
    started = time.monotonic()
    probe_scheduler(address, wait)
    client = distributed.Client.__new__(distributed.Client)
    try:
        client.__init__(address, timeout=max(wait - (time.monotonic() - started), 1.0), set_as_default=False)
    except Exception as exc:
        _discard(client)
        raise ClusterError(
            f"--scheduler {address}: no dask.distributed scheduler answered there (connecting failed: "
            f"{type(exc).__name__}: {exc}); give the address a running scheduler prints (tcp://HOST:PORT, "
            "e.g. from `dask scheduler`), or leave --scheduler out to use the local threaded scheduler"
        ) from None
    bounded = BoundedScheduler(client, address, wait, longest)
    try:
        with client.as_current(), dask.config.set(scheduler=bounded):  # this block's computations only
            yield client
    finally:
        with contextlib.suppress(Exception):
            client.close(timeout=wait)
        _discard(client)


__all__ = [
    "COMPUTE_TIMEOUT",
    "SCHEDULER_TIMEOUT",
    "BoundedScheduler",
    "ClusterError",
    "connected",
    "probe_scheduler",
    "scheduler_address",
]
