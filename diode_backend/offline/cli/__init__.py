"""The ``diode`` command. Each subcommand is a module here with ``register(subparsers)``; the
parser it adds sets ``run=`` to a function ``(args) -> int``.

Exit status: 0 done; 1 the work failed (a file, model, plugin or device is not usable as it
is); 2 the command line cannot work as given (argparse's own usage errors too); 130
interrupted; 141 the output pipe closed. Every failure is one line on standard error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

#: Subcommand modules, in help order.
COMMANDS = ("status", "plugins", "models", "predict", "cache", "train", "validate", "collect", "dataset")


class CommandError(Exception):
    """The work failed on something outside the command line (a file, model, plugin or device):
    printed as one line naming it and the fix, exit status 1."""


class UsageError(CommandError):
    """The command line cannot work as given, whatever the files hold (an option's value or a
    combination of options): one line naming the option, exit status 2."""


def require_whole_number(option: str, value: int | None) -> None:
    """:class:`UsageError` naming ``option`` unless ``value`` is None (not given) or at least 1."""
    if value is not None and value < 1:
        raise UsageError(f"{option} {value}: expected a whole number >= 1")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; building it imports no torch (``diode --help`` stays fast)."""
    from ... import __version__

    parser = argparse.ArgumentParser(
        prog="diode",
        description="diode-backend: learned GEMM kernel selection for torch.compile max-autotune.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    from ...options import DiodeOptionError

    args = build_parser().parse_args(argv)
    try:
        code = int(args.run(args) or 0)
        sys.stdout.flush()  # a closed pipe (`diode ... | head`) surfaces here, not at exit
        return code
    except BrokenPipeError:
        # the reader went away: stop quietly, as `cat | head` does (Python's documented recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except UsageError as err:
        print(f"diode {args.command}: error: {err}", file=sys.stderr)
        return 2
    except (CommandError, DiodeOptionError, OSError, ValueError) as err:
        print(f"diode {args.command}: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"diode {args.command}: interrupted", file=sys.stderr)
        return 130
