"""Snakemake's command line in a process forked from one that has already imported Snakemake.

A Snakemake start spends about a second importing Snakemake and its plugins before it reads the Snakefile; the
tests that only start the workflow (dry runs, configs refused at start) pay it dozens of times. Here each run is
still a process of its own, with its own working directory, environment, argument list and output files, that
runs ``snakemake.cli.main`` from the beginning: only the interpreter's start and Snakemake's import are shared.
The forking server (``python snakemake_fork.py SOCKET``) is started once per test process and ends with it (at
exit, or when its standard input, the test process's pipe, closes).
Runs that train and evaluate for real use the ``snakemake`` executable itself.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

_server: tuple[subprocess.Popen, str] | None = None


def _child(connection: socket.socket, request: dict, fds: list[int]) -> None:
    """In the forked process: become the requested command, tell the caller its pid and then its exit status."""
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)  # not the server's pipe: that one tells the server its test process ended
        os.close(devnull)
        for target, fd in zip((1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.argv = ["snakemake", *request["argv"]]
        connection.sendall(f"{os.getpid()}\n".encode())
        from snakemake.cli import main
        from snakemake.workflow import Workflow

        Workflow._rundir = os.getcwd()  # Snakemake sets it from the directory it was imported in
        main(request["argv"])
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    finally:
        import logging

        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        connection.sendall(f"{code}\n".encode())
        os._exit(code)


def serve(path: str) -> None:
    import signal
    import threading

    import snakemake.cli  # noqa: F401  the import every request shares

    # a test process killed without its atexit still closes the pipe: the server ends with it
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forked runs are reaped by the system
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen()
    print("ready", flush=True)
    while True:
        connection, _ = listener.accept()
        message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 2)
        if os.fork() == 0:
            listener.close()
            _child(connection, json.loads(message), fds)
        connection.close()
        for fd in fds:
            os.close(fd)


def _address() -> str:
    global _server
    if _server is None or _server[0].poll() is not None:
        folder = tempfile.mkdtemp(prefix="snakemake-fork-")
        path = os.path.join(folder, "socket")
        process = subprocess.Popen(
            [sys.executable, __file__, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert process.stdout.readline().strip() == "ready", "the Snakemake fork server did not start"
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        atexit.register(process.kill)
        _server = (process, path)
    return _server[1]


def run(
    argv: Sequence[str], cwd: Path | str, *, timeout: float = 300, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``snakemake *argv`` from ``cwd``, as ``subprocess.run(..., capture_output=True, text=True)`` returns it."""
    request = {"argv": list(argv), "cwd": str(cwd), "env": dict(os.environ if env is None else env)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, socket.socket(socket.AF_UNIX) as caller:
        caller.connect(_address())
        socket.send_fds(caller, [json.dumps(request).encode()], [out.fileno(), err.fileno()])
        caller.settimeout(timeout)
        replies = caller.makefile()
        pid = int(replies.readline())
        try:
            code = int(replies.readline())
        except TimeoutError:
            os.kill(pid, 9)
            raise subprocess.TimeoutExpired(["snakemake", *argv], timeout) from None
        output = []
        for stream in (out, err):
            stream.seek(0)
            output.append(stream.read().decode())
    return subprocess.CompletedProcess(["snakemake", *argv], code, *output)


if __name__ == "__main__":
    serve(sys.argv[1])
