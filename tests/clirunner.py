"""Run many `raysim` command lines quickly, each in its own process under a memory limit.

Starting `python -m raysim` costs seconds of imports per command; a test suite of dozens of bad
inputs cannot afford that on a small machine. `CliRunner` starts one server process (this file run
as a script) that imports raysim once and then forks a child per command line: the child sets an
address-space limit (RLIMIT_AS) and an alarm, points stdout and stderr at files, and calls
`raysim.cli.main(argv)` -- the function `python -m raysim` calls -- so it behaves like a fresh
`raysim` process (exit status, output streams) without the import cost. An allocation blow-up
then fails that one command with a MemoryError instead of exhausting the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MEMORY_LIMIT = 3 << 30  # bytes of address space per command


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


class CliRunner:
    def __init__(self, env: dict | None = None):
        env = {**os.environ, **(env or {})}
        env.pop("HYDRA_FULL_ERROR", None)
        env["MALLOC_ARENA_MAX"] = "2"  # fewer glibc arenas: less address space reserved per thread
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     cwd=REPO, env=env, text=True)

    def run(self, argv: list[str], **options) -> Result:
        """Run `raysim <argv>`; options as for `request`."""
        return self.run_many([request(argv, **options)])[0]

    def run_many(self, requests: list[dict], parallel: int = 2) -> list[Result]:
        """Run several commands (see `request`), `parallel` at a time; results in order."""
        self.proc.stdin.write(json.dumps({"batch": requests, "parallel": parallel}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the raysim command server died")
        return [Result(**r) for r in json.loads(line)]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def request(argv: list[str], *, cwd: Path | str = REPO, env: dict | None = None, timeout: int = 60,
            memory: int = MEMORY_LIMIT, setup: str = "") -> dict:
    """A command for the server: `raysim <argv>` in `cwd` with `env` added to the environment;
    `setup` is Python code run in the child first (e.g. to plant a bug)."""
    return {"argv": [str(a) for a in argv], "cwd": str(cwd), "env": env or {}, "timeout": timeout,
            "memory": memory, "setup": setup}


def _serve() -> None:
    import signal
    import tempfile

    # everything a command needs, imported once here (not run: no threads before fork)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    from hydra.core.plugins import Plugins

    import raysim.cli
    import raysim.report.plots  # noqa: F401
    import raysim.run.cluster  # noqa: F401
    import raysim.trace.cli  # noqa: F401

    raysim.cli.register_launcher()
    Plugins.instance()  # Hydra's plugin scan
    protocol = sys.stdout
    with tempfile.TemporaryDirectory(prefix="raysim-cli-") as tmp:
        for line in sys.stdin:
            batch = json.loads(line)
            requests, parallel = batch["batch"], max(1, int(batch["parallel"]))
            files = [(Path(tmp) / f"out{i}", Path(tmp) / f"err{i}") for i in range(len(requests))]
            codes: dict[int, int] = {}
            running: dict[int, int] = {}  # pid -> request index
            todo = list(range(len(requests)))
            while todo or running:
                while todo and len(running) < parallel:
                    i = todo.pop(0)
                    sys.stdout.flush()
                    sys.stderr.flush()
                    pid = os.fork()
                    if pid == 0:
                        _child(requests[i], *files[i], raysim.cli.main)
                    running[pid] = i
                pid, status = os.wait()
                if pid in running:
                    codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)
            results = []
            for i, (out, err) in enumerate(files):
                if codes[i] == -signal.SIGALRM:
                    with err.open("a") as f:
                        f.write(f"\n[clirunner: timed out after {requests[i]['timeout']} s]\n")
                results.append({"returncode": codes[i], "stdout": out.read_text(errors="replace"),
                                "stderr": err.read_text(errors="replace")})
            protocol.write(json.dumps(results) + "\n")
            protocol.flush()


def _child(req: dict, out: Path, err: Path, main) -> None:
    import resource
    import signal
    import traceback

    code = 1
    try:
        resource.setrlimit(resource.RLIMIT_AS, (req["memory"], req["memory"]))
        signal.alarm(req["timeout"])
        os.chdir(req["cwd"])
        os.environ.update(req["env"])
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        for fd, path in ((1, out), (2, err)):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        sys.argv = ["raysim", *req["argv"]]
        try:
            if req["setup"]:
                exec(req["setup"], {})
            main(req["argv"])
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
        except KeyboardInterrupt:
            traceback.print_exc()
            code = 130
        except BaseException:  # what the interpreter does with an uncaught exception
            traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


if __name__ == "__main__":
    _serve()
