"""This process's Ray connection: started or joined once, kept until exit or `shutdown()`.

A notebook runs cell after cell; each run must not pay a cluster's start (seconds, tens of
seconds on a busy machine). The first Ray run starts a private local cluster (or joins the
one at its address) and later runs reuse it; `cl.executors.shutdown()` ends it, and so does
the end of the process (Ray's own exit handler). A process that called `ray.init()` itself
keeps its connection: convlab uses it and never shuts it down.

Starting is where Ray fails on a busy machine, so every failure path here ends what the
attempt started: Ray's head processes, and their children left behind when `ray.init`
raises (`ray::DashboardAgent`, `ray::RuntimeEnvAgent`). Ray gives its raylet 30 s to
register, hard-coded; a local cluster gets `start_timeout` seconds in all (several
attempts, each ended cleanly before the next: its raylet gives its Python agents about
30 s too, and exits past it, so a slow try cannot be waited out). An address is probed
first, so a typo fails in seconds and the error names it as given. A local cluster listens
on loopback where Ray allows it (see `import_ray`: its node address is 127.0.0.1 when
convlab imports Ray) and its token file (`~/.ray/auth_token`) is readable by its owner only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from convlab.errors import ExecutorError

__all__ = ["LOCAL", "START_TIMEOUT", "Connection", "connect", "connected", "disconnect"]

LOCAL = "local"

START_TIMEOUT = 180.0
"""Seconds a local cluster convlab starts gets in all (Ray's own wait is 30 s per try)."""

JOIN_TIMEOUT = 5.0
"""Seconds to wait for an address to answer before saying nothing listens there."""

_RAYLET_TIMEOUT = "timed out during startup"
"""What Ray says when its raylet did not register in its 30 s (a try worth repeating)."""


@dataclass(frozen=True)
class Connection:
    """The Ray cluster this process is connected to."""

    address: str
    """As the user gave it ("local", "auto", "HOST:PORT", "ray://HOST:PORT")."""
    started: bool
    """Whether convlab started it (a private local cluster)."""
    own: bool
    """Whether convlab connected (and so disconnects); False: the user's own `ray.init()`."""
    took: float = 0.0
    """Seconds the connection took to make."""

    @property
    def where(self) -> str:
        """How a view names it: `local Ray cluster`, `Ray cluster at auto`."""
        if not self.own:
            return "Ray cluster of this process"
        return "local Ray cluster" if self.address == LOCAL else f"Ray cluster at {self.address}"


_lock = threading.Lock()
_current: Connection | None = None


def connected(address: str) -> Connection | None:
    """The connection a run at `address` would reuse, None when it must make one."""
    ray = _ray()
    if _current is not None and ray.is_initialized():
        return _current
    if ray.is_initialized():  # the user's own ray.init(): used as it is
        return Connection("existing", started=False, own=False)
    return None


def connect(address: str, init: dict[str, Any], start_timeout: float) -> tuple[Connection, bool]:
    """The connection for `address` (made now, or reused) and whether it was reused.

    Raises ExecutorError, one line saying what happened and what to do, after ending what
    the attempt started."""
    global _current
    ray = _ray(local=address == LOCAL)
    with _lock:
        reuse = connected(address)
        if reuse is not None:
            if reuse.own and address != reuse.address:
                raise ExecutorError(
                    f"this process already runs on the {reuse.where}, not {address!r}: call "
                    "cl.executors.shutdown() first to move to another cluster"
                )
            _current = reuse
            return reuse, True
        t0 = time.monotonic()
        if address == LOCAL:
            _start_local(ray, init, start_timeout)
        else:
            _join(ray, address, init)
        _current = Connection(address, address == LOCAL, True, time.monotonic() - t0)
        return _current, False


def disconnect() -> bool:
    """End the connection convlab made (a local cluster convlab started stops); whether
    there was one. The user's own `ray.init()` is left alone."""
    global _current
    with _lock:
        current, _current = _current, None
        if current is None or not current.own:
            return False
        ray = _ray()
        ray.shutdown()
        return True


def _ray(local: bool = False) -> Any:
    from convlab.executors._ray import import_ray

    return import_ray(local)


def _options(address: str, init: dict[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {
        "address": address,
        "log_to_driver": False,  # the workers' output comes back as events
        # not "token authentication is enabled" (the README says so) in every cell
        "logging_level": logging.ERROR,
        "namespace": "convlab",
    }
    if address == LOCAL:
        options |= {"include_dashboard": False, "num_cpus": os.cpu_count() or 1}
    return options | init


def _start_local(ray: Any, init: dict[str, Any], start_timeout: float) -> None:
    """Start a private cluster, trying again (after ending each failed try) until
    `start_timeout` seconds have passed."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Ray's wait for its GCS's port, long enough for a busy machine (the raylet's own wait
    # for its Python agents, about 30 s, cannot be changed: past it the raylet exits)
    os.environ.setdefault("RAY_gcs_server_port_wait_time_s", str(int(max(30, start_timeout))))
    _private_token()
    t0 = time.monotonic()
    while True:
        before = _descendants()
        os.environ[_MARK] = f"{os.getpid()}-{time.monotonic_ns()}"  # what this try starts
        try:
            ray.init(**_options(LOCAL, init))
        except Exception as exc:
            _end_try(ray, before)
            took = time.monotonic() - t0
            if _RAYLET_TIMEOUT in str(exc) and took < start_timeout:
                continue
            if _RAYLET_TIMEOUT in str(exc) or took >= start_timeout:
                longer = max(300, int(2 * start_timeout))
                raise ExecutorError(
                    f"Ray did not start within {took:.0f} s; the machine may be busy. Give "
                    f"it longer (cl.executors.ray(start_timeout={longer})), "
                    "join a running cluster (executor='ray:HOST:PORT'), or leave executor "
                    "out to run on the local engine"
                ) from None
            raise ExecutorError(
                f"Ray could not start a local cluster: {_said(exc)}. Join a running cluster "
                "(executor='ray:HOST:PORT'), or leave executor out to run on the local engine"
            ) from None
        except BaseException:  # interrupted while starting: end what started
            _end_try(ray, before)
            raise
        finally:
            os.environ.pop(_MARK, None)  # later children are not this try's
        _private_token()
        return


def _join(ray: Any, address: str, init: dict[str, Any]) -> None:
    """Join the cluster at `address`; an address where nothing answers fails in seconds."""
    probe = _host_port(address)
    if probe is not None:
        try:
            socket.create_connection(probe, timeout=JOIN_TIMEOUT).close()
        except OSError as exc:
            raise ExecutorError(
                f"no Ray cluster answers at {address!r} ({exc.strerror or exc}): check the "
                "address (the head node's HOST:PORT, as `ray status` prints it), use 'auto' "
                "on a node of the cluster, or leave executor out to run on the local engine"
            ) from None
    try:
        ray.init(**_options(address, init))
    except Exception as exc:
        with contextlib.suppress(Exception):
            ray.shutdown()
        raise ExecutorError(
            f"could not join the Ray cluster at {address!r}: {_said(exc)}. Check the address "
            "(and RAY_AUTH_TOKEN for a cluster with token authentication), or leave executor "
            "out to run on the local engine"
        ) from None


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of "HOST:PORT" or "ray://HOST:PORT"; None for "auto" and the like."""
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    return host.strip("[]"), int(port)


def _said(exc: BaseException) -> str:
    """Ray's own words, one line: the last non-empty line of its message."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"[:300]


_MARK = "CONVLAB_RAY_START"
"""Set to a new value before each try to start a cluster: every process the try starts
inherits it, so a failed try's processes are found even once they are orphans."""


def _end_try(ray: Any, before: set[int]) -> None:
    """End a failed start: Ray's shutdown, then every process it left (its head processes
    and their children, which `ray.init` raising leaves running, some already orphaned
    when the raylet died first)."""
    with contextlib.suppress(Exception):
        ray.shutdown()
    mark = os.environ.get(_MARK)
    for _ in range(3):  # a process may start while the others are being ended
        left = (_descendants() - before) | _marked(mark) | _orphans()
        if not left:
            return
        _kill(left)


def _orphans() -> set[int]:
    """Orphaned processes of this process's Ray sessions: they write into a session folder
    whose name ends with this process's id (Ray names it so), and their parent is gone. A
    process that renamed itself (`ray::DashboardAgent`) may have lost `_MARK` with its old
    environment; its open files still say whose it is."""
    psutil = _psutil()
    mine = f"_{os.getpid()}/"
    found: set[int] = set()
    for proc in psutil.process_iter(["pid", "ppid", "uids"]):
        with contextlib.suppress(Exception):
            if proc.info["ppid"] != 1 or proc.info["uids"].real != os.getuid():
                continue
            if any("/session_" in f.path and mine in f.path for f in proc.open_files()):
                found.add(proc.pid)
    return found


def _marked(mark: str | None) -> set[int]:
    """The processes of this user whose environment holds `_MARK` = `mark`."""
    if not mark:
        return set()
    psutil = _psutil()
    found: set[int] = set()
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "uids"]):
        with contextlib.suppress(Exception):
            mine = proc.pid != me and proc.info["uids"].real == os.getuid()
            if mine and proc.environ().get(_MARK) == mark:
                found.add(proc.pid)
    return found


def _kill(pids: set[int]) -> None:
    """End the processes `pids` (those still running)."""
    if not pids:
        return
    psutil = _psutil()
    procs = []
    for pid in pids:
        with contextlib.suppress(Exception):
            procs.append(psutil.Process(pid))
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.kill()
    with contextlib.suppress(Exception):
        psutil.wait_procs(procs, timeout=5)


def _descendants() -> set[int]:
    """The process ids of this process's children, and theirs."""
    psutil = _psutil()
    try:
        return {p.pid for p in psutil.Process().children(recursive=True)}
    except Exception:
        return set()


def _psutil() -> Any:
    """psutil as Ray ships it (`import ray` puts its own copy on the path)."""
    import importlib

    _ray()
    return importlib.import_module("psutil")


def _private_token() -> None:
    """Make Ray's token file (`~/.ray/auth_token`, the key to the cluster) readable by its
    owner only: written first by convlab when absent, with Ray's own generator."""
    path = Path.home() / ".ray" / "auth_token"
    with contextlib.suppress(Exception):  # Ray writes its own (then made private below)
        if not path.exists():
            from ray._private.authentication.authentication_token_generator import (
                generate_new_authentication_token,
            )

            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(generate_new_authentication_token())
    with contextlib.suppress(OSError):
        info = path.stat()
        if info.st_uid == os.getuid() and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            path.chmod(0o600)
