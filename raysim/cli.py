"""Command line.

``raysim <hydra overrides>`` runs an experiment exactly like ``python -m raysim``; the first word may
instead name a tool: ``raysim trace ...`` (convert, stats, synth), ``raysim models ...`` (train,
report), ``raysim report <multirun folder>`` and ``raysim data ...`` (list, fetch, path, verify).

Errors: a user error (bad input file, config value or override, missing input, unwritable run
folder; see :mod:`raysim.errors`) ends the command with exit status 2 and one line on stderr,
``raysim: error: ...``; ``--verbose`` (anywhere on the command line) or ``HYDRA_FULL_ERROR=1`` adds
its traceback. A bug keeps its traceback and exit status 1. Ctrl-C ends with one line saying where
the run's checkpoint is (exit status 130). Each way, the run's folder keeps failed.json saying
why (beside Hydra's .hydra and raysim.log), and `raysim report` skips it with that reason. A
reader that leaves (``raysim ... | head``) only ends the console output: the run goes on and
writes every result.
"""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import re
import signal
import sys
import threading
import traceback
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from raysim.errors import (FAILURES, Failure, clear_failed_run, record_failure, user_error_message,
                           write_failed_run)
from raysim.paths import CONF_DIR
from raysim.quota.settings import refuse_old_name
from raysim.resolvers import register_resolvers

register_resolvers()

# raysim's Hydra launchers: main() registers their classes, which an editable install hides from
# Hydra's own plugin scan (raysim_local, the default, has its config in conf/hydra/launcher/;
# importing raysim_ray registers its config); the same for its sweeper (conf/config.yaml's
# hydra.sweeper).
from hydra_plugins.raysim_launcher.processes import register as register_local_launcher  # noqa: E402
from hydra_plugins.raysim_launcher.ray_tasks import register as register_launcher  # noqa: E402
from hydra_plugins.raysim_launcher.sweeper import register as register_sweeper  # noqa: E402

#: `raysim <word> ...` -> module whose main(argv) handles the rest of the command line.
TOOLS = {"trace": "raysim.trace.cli", "models": "raysim.models.cli", "report": "raysim.report.cli",
         "data": "raysim.data.cli"}

HELP = """\
usage: raysim [--verbose] [-m] [KEY=VALUE ...]     run an experiment (Hydra overrides, see below)
       raysim trace {convert,stats,synth} ...      read, check, convert or generate traces
       raysim models {train,report} ...            train and inspect the duration/throughput models
       raysim report MULTIRUN_FOLDER               rebuild a sweep's comparison table and plots
       raysim data {list,fetch,path,verify} ...    public datasets by name (data:NAME in any input)
       raysim <tool> --help                        a tool's own options

  The plug-ins (policies, placers, ...) and their settings are listed below, then Hydra's help.

  e.g. raysim +experiment=venus policy=srtf runtime=local
       raysim -m +experiment=venus policy=fifo,sjf,srtf

  --verbose   show the traceback of an error (as HYDRA_FULL_ERROR=1 does); errors in your input
              are otherwise one line, `raysim: error: ...`, with exit status 2
"""

#: The current run's checkpoint folder (runtime.checkpoint_dir, absolute), for the Ctrl-C message.
_checkpoint: dict[str, Path | None] = {"dir": None}


@hydra.main(version_base=None, config_path=str(CONF_DIR), config_name="config")
def hydra_main(cfg: DictConfig):
    """Hydra's task function: run one job; a user error becomes the job's `Failure` (printed by
    `main` once every job of the command is done) instead of an exception with a traceback. A job
    that ends on any error (user error, bug, Ctrl-C) leaves failed.json in its folder saying why
    (raysim.errors.write_failed_run)."""
    from raysim.run import run

    hc = HydraConfig.get()
    _checkpoint["dir"] = _checkpoint_dir(cfg)
    run_dir = Path(hc.runtime.output_dir)
    overrides = OmegaConf.to_container(hc.overrides.task, resolve=False)  # as typed: `${...}` unresolved
    command = " ".join(["python -m raysim", *overrides])
    clear_failed_run(run_dir)  # what an earlier run in this folder left
    try:
        if hc.mode != RunMode.MULTIRUN:
            refuse_launcher_settings(hc.overrides.hydra)
            refuse_replicate(cfg)
        return run(cfg, run_dir)
    except KeyboardInterrupt:
        write_failed_run(run_dir, interrupted_line().removeprefix("raysim: "), 130, command)
        raise
    except Exception as exc:
        message = user_error_message(exc)
        write_failed_run(run_dir, message or f"a bug in raysim: {type(exc).__name__}: {exc}",
                         1 if message is None else 2, command)
        if message is None:
            raise
        multirun = hc.mode == RunMode.MULTIRUN
        _log_to_run_file(message)
        failure = Failure.of(exc, message, hc.job.num if multirun else None, overrides if multirun else ())
        record_failure(failure)
        return failure


def refuse_launcher_settings(hydra_overrides) -> None:
    """A single run launches no jobs: a launcher or launcher setting on its command line
    (hydra/launcher=..., hydra.launcher.KEY=...) is one line saying so, not ignored."""
    from raysim.errors import ConfigError

    for override in hydra_overrides:
        key, _, value = override.partition("=")
        if key.lstrip("+~").startswith(("hydra.launcher", "hydra/launcher")):
            raise ConfigError(key.lstrip("+~").replace("/", "."), "only a multirun (-m) launches its jobs: a single "
                              "run reads no launcher setting", value)


def refuse_replicate(cfg: DictConfig) -> None:
    """A single run is one seed: replicate.* (checked: raysim.report.replicate) with a metric is one
    line saying that only a multirun replicates."""
    from raysim.errors import ConfigError
    from raysim.report.replicate import replicate_settings

    section = cfg.get("replicate")
    if replicate_settings(None if section is None else OmegaConf.to_container(section, resolve=True)).metric:
        raise ConfigError("replicate.metric", "only a multirun (-m) replicates: add -m (seeds seed, seed + 1, ... "
                          "per combination of the other overrides)", section.metric)


def main(argv: list[str] | None = None) -> None:
    """Console script `raysim`."""
    console = argv is None
    if console:
        sys.stdout, sys.stderr = ReaderMayLeave.around(sys.stdout), ReaderMayLeave.around(sys.stderr)
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in argv or os.environ.get("HYDRA_FULL_ERROR") == "1"
    argv = [a for a in argv if a != "--verbose"]
    register_local_launcher()
    register_launcher()
    register_sweeper()
    quiet_ray_notices()
    if argv and argv[0] in TOOLS:
        tool = importlib.import_module(TOOLS[argv[0]])
        _exit(guarded(lambda: tool.main(argv[1:]), verbose), console)
    if "--help" in argv or "-h" in argv:
        from raysim.plugins import help_text

        print(HELP)
        print(help_text())
    sys.argv = ["raysim", *argv]
    _exit(guarded(lambda: _run_hydra(verbose), verbose), console)


#: Ray's notices on a plain local start that say nothing the user must act on.
RAY_NOTICES = {
    # Ray >= 2.59 turns on token authentication for the local Ray it starts (raysim's default runtime)
    # and says so on every run; docs/runtime.md ("Running on a Ray cluster") explains it.
    "ray._private.authentication.authentication_token_setup": "Token authentication is enabled for this Ray cluster",
}


def quiet_ray_notices() -> None:
    """Drop RAY_NOTICES from Ray's log (its warnings that something is *off* still show)."""
    for name, start in RAY_NOTICES.items():
        logger = logging.getLogger(name)
        if not any(getattr(f, "raysim_notice", None) == start for f in logger.filters):
            notice = _Drop(start)
            logger.addFilter(notice)


class _Drop(logging.Filter):
    def __init__(self, start: str):
        super().__init__()
        self.raysim_notice = start

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.raysim_notice)


def guarded(command, verbose: bool = False) -> int:
    """Run `command` (returning an exit status or None); a user error becomes one line on stderr
    and status 2, Ctrl-C one line and status 130; a bug propagates with its traceback."""
    try:
        return command() or 0
    except KeyboardInterrupt:
        sys.stderr.write(("\n" if sys.stderr.isatty() else "") + interrupted_line() + "\n")  # after a progress line
        return 130
    except Exception as exc:
        message = user_error_message(exc)
        if message is None:
            raise
        if verbose:
            traceback.print_exception(exc)
        culprit = _unparsable_override(exc)
        if culprit:
            message = f"override {culprit!r}: {message}"
        print(f"raysim: error: {message}", file=sys.stderr)
        return 2


def _run_hydra(verbose: bool = False) -> int:
    """Run Hydra on sys.argv; its own error printing is switched off (HYDRA_FULL_ERROR=1 makes it
    re-raise), so `guarded` decides. Returns 2 after the jobs if some stopped on a user error.
    An override under a renamed group is refused before Hydra reads it; one of a key the config
    lacks is refused with the closest keys (`_not_in_config`)."""
    refuse_old_name(arg for arg in sys.argv[1:] if not arg.startswith("-"))
    from raysim.run.unused import refuse_retired

    refuse_retired(None, [arg for arg in sys.argv[1:] if not arg.startswith("-")])  # before Hydra's "not in struct"
    FAILURES.clear()
    saved = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        hydra_main()
    except Exception as exc:
        unknown = _not_in_config(exc)
        if unknown is None:
            raise
        raise unknown from exc
    finally:
        if saved is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = saved
    if not FAILURES:
        return 0
    for failure in FAILURES:
        if verbose:
            sys.stderr.write(failure.traceback)
        label = failure.label(_swept_keys(sys.argv[1:]))
        print(f"raysim: error: {label + ': ' if label else ''}{failure.message}", file=sys.stderr)
    return 2


def _not_in_config(exc: BaseException):
    """Hydra's refusal of an override whose key the composed config lacks ("Could not override 'k'.
    To append to your config use +k=v"), as a ConfigError naming k with the config's keys closest
    to it ("did you mean sim.compat?", raysim.settings.did_you_mean); where none is close, with
    Hydra's advice as a condition (k may be a setting this config leaves out; if it is not one, the
    run refuses it in one line). None for any other error."""
    from hydra.errors import ConfigCompositionException
    from omegaconf import DictConfig
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    from raysim.errors import ConfigError
    from raysim.settings import did_you_mean

    cause = exc.__cause__
    said = re.match(r"Could not override '([^']+)'\.\nTo append to your config use \+(.+)$", str(exc), re.S)
    if (not isinstance(exc, ConfigCompositionException) or not isinstance(cause, (ConfigAttributeError, ConfigKeyError))
            or getattr(cause, "parent_node", None) is None or said is None):
        return None
    key, override = said.groups()
    node, parts = cause.parent_node._get_root(), key.split(".")
    depth = 0
    while depth < len(parts) - 1 and isinstance(node, DictConfig) and parts[depth] in node.keys():
        node, depth = node._get_node(parts[depth]), depth + 1
    if node is not cause.parent_node or parts[depth] in node.keys():  # (not a missing key: Hydra's words)
        return None
    hint = did_you_mean(parts[depth], node.keys(), ".".join(parts[:depth]), ".".join(parts[depth + 1:]))
    if hint:
        return ConfigError(key, f"not a key of the run's config; {hint}")
    return ConfigError(key, f"not a key of the run's config: if it is a setting the config leaves out, +{override} "
                            "sets it (raysim --help lists the settings)")


def _swept_keys(args: list[str]) -> set[str]:
    """The keys a multirun command line sweeps (`policy=fifo,srtf`, `seed=range(3)`)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    keys = set()
    for arg in args:
        if arg.startswith("-"):
            continue
        try:
            override = parser.parse_override(arg)
        except Exception:
            continue
        if override.is_sweep_override():
            keys.add(override.get_key_element().lstrip("+~"))
    return keys


def _unparsable_override(exc: BaseException) -> str | None:
    """The command-line override Hydra could not parse (its error does not say which), if any."""
    from hydra.errors import OverrideParseException

    if not isinstance(exc, OverrideParseException):
        return None
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for arg in sys.argv[1:]:
        if arg.startswith("-"):
            continue
        try:
            parser.parse_override(arg)
        except Exception:
            return arg
    return None


def _exit(code: int, console: bool) -> None:
    """End the command with `code`. In the console script: a Ctrl-C after this point (while Ray
    shuts down at exit) ends the process at once instead of printing a traceback from Ray's atexit
    hook; and once what Python runs at exit has run (threading's exit hooks and the wait for
    non-daemon threads, e.g. Ray stopping; then the atexit hooks: logging, multiprocessing, Ray),
    the process ends without Python's teardown of every module and object (0.3-0.5 s after a run
    of pandas, matplotlib and pyarrow, with every result file closed already). Called as a
    function (`main(argv)`, tests), it raises SystemExit as sys.exit does."""
    if console and threading.current_thread() is threading.main_thread():
        _flush()
        signal.signal(signal.SIGINT, lambda *_: os._exit(130))
        threading._shutdown()  # (what the interpreter does first at exit)
        atexit._run_exitfuncs()
        _flush()
        os._exit(code)
    sys.exit(code)


class ReaderMayLeave:
    """The console script's stdout or stderr: once the reader of its pipe has gone (`raysim ... |
    head`), what is still written there is dropped, so the run (and its log lines, which Hydra
    sends to stdout) goes on to write every result instead of stopping on a BrokenPipeError or
    printing logging's traceback for each line. Everything else is the wrapped stream's."""

    def __init__(self, stream):
        self._stream = stream

    @classmethod
    def around(cls, stream):
        return stream if stream is None or isinstance(stream, cls) else cls(stream)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._reader_left()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_left()

    def _reader_left(self) -> None:
        """Point the stream's file descriptor at /dev/null: what its buffer holds, and all that
        follows, goes nowhere."""
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _flush() -> None:
    """Flush stdout and stderr (a reader that has gone, `raysim ... | head`, is not an error)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def interrupted_line() -> str:
    where = _checkpoint["dir"]
    if where is None:
        return "raysim: interrupted (no checkpoint: set runtime.checkpoint_dir to resume)"
    if not (where / "checkpoint.pkl").exists():
        return (f"raysim: interrupted before the first checkpoint was written to {where} "
                "(a run with runtime.resume=true starts from the beginning)")
    return f"raysim: interrupted; checkpoint in {where} (continue with runtime.resume=true)"


def _checkpoint_dir(cfg: DictConfig) -> Path | None:
    try:
        value = cfg.runtime.get("checkpoint_dir") if cfg.get("runtime") is not None else None
    except Exception:  # an unresolvable value: the run itself reports it
        return None
    return Path(str(value)).expanduser().absolute() if value else None


def _log_to_run_file(message: str) -> None:
    """Write the error into the run's log file (not the console: `main` prints it there)."""
    record = logging.LogRecord("raysim", logging.ERROR, __file__, 0, "%s", (message,), None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)
