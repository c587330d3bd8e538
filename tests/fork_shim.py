# The `python` that tests/fork_server.py puts first on a workflow run's PATH (the server writes it out with a shebang
# line of `<interpreter> -SE` first): `python -m MODULE ARGS` and `python SCRIPT ARGS` run in a process forked from the
# server, with this process's directory, environment and standard streams, and this file as sys.executable; it
# forwards the signals a job gets and exits with the run's status. Anything else, no server, or a job the server
# declines: the real interpreter, exec'd.
import json
import os
import signal
import socket
import sys


def forked(args: list[str]) -> int | None:
    """The exit status of ``python *args`` run by the server, or None where it does not run it."""
    try:
        server = socket.socket(socket.AF_UNIX)
        server.connect(os.environ["ARMLAB_TEST_FORK_SOCKET"])
        executable = os.path.abspath(sys.argv[0])
        request = {"argv": args, "cwd": os.getcwd(), "env": dict(os.environ), "executable": executable}
        socket.send_fds(server, [json.dumps(request).encode()], [0, 1, 2])
    except (KeyError, OSError):
        return None
    replies = server.makefile()
    first = replies.readline()
    if not first.startswith("pid "):
        return None  # declined: the environment differs in what the server's libraries read when imported
    pid, forwarded = int(first.split()[1]), []

    def forward(signum, _frame):
        forwarded.append(signum)
        os.kill(pid, signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, forward)
    status = replies.readline()
    if status.strip():
        return int(status)
    if forwarded:  # the run died of a signal it was sent: so does its caller's process
        signal.signal(forwarded[-1], signal.SIG_DFL)
        os.kill(os.getpid(), forwarded[-1])
    print("fork_shim: the forked run ended without an exit status (killed)", file=sys.stderr)
    return 137


args = sys.argv[1:]
# `python -m MODULE ...` or `python SCRIPT ...` (a console script such as snakemake); not -c, options or stdin
status = forked(args) if (len(args) >= 2 and args[0] == "-m") or (args and not args[0].startswith("-")) else None
if status is None:
    real = os.environ.get("ARMLAB_TEST_REAL_PYTHON", sys.executable)
    os.execv(real, [real, *args])
sys.exit(status)
