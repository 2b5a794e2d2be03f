"""Another local user tries to run code on a Dask cluster it found (run by the trust tests).

    python dask_intruder.py UID GID TARGET ADDRESS...

Started as root, it imports what it needs, becomes UID/GID (no supplementary groups), then, for
each ADDRESS (a scheduler, worker or nanny that listens on this machine), tries what such a user
would: a ``distributed.Client`` (``client.run``, ``run_on_scheduler``, ``submit``) and a bare
``rpc(...).run`` to the address, each as found, over plain TCP, and over TLS with credentials
of its own making. Every function it sends writes TARGET (a path only the cluster's user can
write). It prints one JSON list: per try, what happened.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout
from typing import Any

import distributed
import distributed.comm.tcp  # (imported while the files are readable)
from distributed.core import rpc
from distributed.protocol.pickle import dumps
from distributed.security import Security

TRY_LIMIT = 90.0  # seconds every try together may take


def pwn(path: str) -> int:
    """What the intruder wants run: proof that it ran, written as the cluster's user."""
    with open(path, "a") as f:
        f.write(f"ran as uid {os.getuid()}\n")
    return os.getuid()


def _variants(address: str) -> list[tuple[str, str, Any]]:
    hostport = address.split("://", 1)[1]
    own = Security.temporary()  # credentials of the intruder's own: a CA the cluster never saw
    return [
        ("as found", address, None),
        ("plain tcp", f"tcp://{hostport}", None),
        ("tls, own credentials", f"tls://{hostport}", own),
    ]


def _client(address: str, security: Any, target: str) -> str:
    client = distributed.Client(address, timeout=4, security=security)
    try:
        outcomes = [f"run: {client.run(pwn, target)}"]
        outcomes.append(f"run_on_scheduler: {client.run_on_scheduler(pwn, target)}")
        outcomes.append(f"submit: {client.submit(pwn, target, pure=False).result(timeout=10)}")
        return "RAN " + "; ".join(outcomes)
    finally:
        client.close(timeout=4)


async def _rpc(address: str, security: Any, target: str) -> str:
    args = security.get_connection_args("client") if security is not None else {}
    remote = rpc(address, connection_args=args, timeout=4)
    try:
        got = await asyncio.wait_for(
            remote.run(function=dumps(pwn), args=dumps((target,))), timeout=8
        )
        return f"RAN {got}"
    finally:
        await remote.close_rpc()


def _try(kind: str, url: str, security: Any, target: str) -> str:
    try:
        if kind == "client":
            return _client(url, security, target)
        return asyncio.run(_rpc(url, security, target))
    except BaseException as exc:  # every refusal is an outcome to report
        return f"refused: {type(exc).__name__}: {exc}"[:300]


def main() -> None:
    uid, gid, target, addresses = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    pool = ThreadPoolExecutor(max_workers=6)  # the tries run side by side: a loaded machine
    started = time.monotonic()
    attempts = [
        (url, how, kind, pool.submit(_try, kind, url, security, target))
        for address in addresses
        for how, url, security in _variants(address)
        for kind in ("client", "rpc")
    ]
    tries: list[dict[str, str]] = []
    for url, how, kind, attempt in attempts:
        left = max(0.1, started + TRY_LIMIT - time.monotonic())
        try:
            outcome = attempt.result(timeout=left)
        except FutureTimeout:  # a connection that never completes admits nothing
            outcome = f"refused: no answer in {TRY_LIMIT:g} s"
        tries.append({"address": url, "how": how, "kind": kind, "outcome": outcome})
    print(json.dumps(tries), flush=True)
    os._exit(0)  # a try still hanging in its thread must not keep the process


if __name__ == "__main__":
    main()
