"""Declaring commands: one noun (``agentws group``), its verbs, and the arguments they share.

Every command group is a noun whose verbs are sub-commands (``agentws group
create``); :func:`noun` makes the noun's table of verbs and :func:`verb` one
verb, taking the options every command takes (``common``: ``--database``,
``--json``), the positional arguments named in :data:`POSITIONALS` (a
workspace, a group, a webhook, as every command names them) and its
handler. :func:`time_window` adds ``--since`` and ``--until``.
"""

from __future__ import annotations

import argparse
from typing import TypeAlias

from agentws.cli.arguments import moment
from agentws.cli.output import Handler

__all__ = ["POSITIONALS", "Verbs", "noun", "time_window", "verb"]

#: A noun's table of verbs.
Verbs: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

#: Positional arguments several commands take: their metavar and help, by name.
POSITIONALS = {
    "workspace": ("WORKSPACE", "workspace slug"),
    "group": ("GROUP", "group slug"),
    "library": ("LIBRARY", "library slug"),
    "webhook": ("WEBHOOK", "webhook id (wh_…) or name"),
}


def noun(commands: Verbs, name: str, help_text: str, description: str | None = None) -> Verbs:
    """``agentws <name> ACTION``: the table of the noun's verbs."""
    parser = commands.add_parser(name, help=help_text, description=description)
    verbs: Verbs = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    return verbs


def verb(
    verbs: Verbs,
    name: str,
    common: argparse.ArgumentParser,
    help_text: str,
    *positionals: str,
    description: str | None = None,
    handler: Handler | None = None,
) -> argparse.ArgumentParser:
    """A verb taking the common options and ``positionals`` (names in :data:`POSITIONALS`)."""
    parser: argparse.ArgumentParser = verbs.add_parser(
        name, parents=[common], help=help_text, description=description
    )
    for positional in positionals:
        metavar, text = POSITIONALS[positional]
        parser.add_argument(positional, metavar=metavar, help=text)
    if handler is not None:
        parser.set_defaults(handler=handler)
    return parser


def time_window(parser: argparse.ArgumentParser, since_help: str, until_help: str) -> None:
    """``--since`` and ``--until``, each a time :data:`agentws.cli.arguments.moment` reads."""
    parser.add_argument("--since", type=moment, metavar="TIME", help=since_help)
    parser.add_argument("--until", type=moment, metavar="TIME", help=until_help)
