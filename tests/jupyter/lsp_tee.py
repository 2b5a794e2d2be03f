"""``python lsp_tee.py LOG ARGV...``: run the language server ARGV and copy its LSP traffic to LOG.

The lab UI test registers ``lil lsp`` with jupyter-lsp through this wrapper, so a failing test
can say what jupyterlab-lsp sent (the virtual document of a notebook) and what came back. Bytes
pass through unchanged; LOG gets one block per read, ``--> `` from the client, ``<-- `` from
the server.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from typing import IO, Any


def _pump(src: IO[bytes], dst: IO[bytes], log: IO[bytes], mark: bytes, lock: Any) -> None:
    while True:
        chunk = src.read1(65536) if hasattr(src, "read1") else src.read(65536)
        if not chunk:
            break
        dst.write(chunk)
        dst.flush()
        with lock:
            log.write(b"\n" + mark + chunk)
            log.flush()
    dst.close()


def main() -> int:
    log_path, argv = sys.argv[1], sys.argv[2:]
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    lock = threading.Lock()
    with open(log_path, "ab") as log:
        pumps = [
            threading.Thread(
                target=_pump, args=(sys.stdin.buffer, child.stdin, log, b"--> ", lock), daemon=True
            ),
            threading.Thread(
                target=_pump, args=(child.stdout, sys.stdout.buffer, log, b"<-- ", lock)
            ),
        ]
        for pump in pumps:
            pump.start()
        code = child.wait()
        pumps[1].join(timeout=5)
    return code


if __name__ == "__main__":
    sys.exit(main())
