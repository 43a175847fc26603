"""Declaring commands: one noun (``agentws group``), its verbs, and the arguments they share.

Every command group is a noun whose verbs are sub-commands (``agentws group
create``). :func:`noun` makes the noun, given once the options every command
takes (``common``: ``--database``, ``--json``); :meth:`Noun.verb` makes one
verb, with the positional arguments named in :data:`POSITIONALS` (a
workspace, a group, a webhook, as every command names them) and its
handler. :func:`time_window` adds ``--since`` and ``--until``.
"""

from __future__ import annotations

import argparse
from typing import TypeAlias

import attrs

from agentws.cli.arguments import moment
from agentws.cli.output import Handler

__all__ = ["POSITIONALS", "Noun", "Verbs", "noun", "time_window"]

#: A noun's table of verbs.
Verbs: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

#: Positional arguments several commands take: their metavar and help, by name.
POSITIONALS = {
    "workspace": ("WORKSPACE", "workspace slug"),
    "group": ("GROUP", "group slug"),
    "library": ("LIBRARY", "library slug"),
    "webhook": ("WEBHOOK", "webhook id (wh_…) or name"),
}


def noun(
    commands: Verbs,
    common: argparse.ArgumentParser,
    name: str,
    help_text: str,
    description: str | None = None,
    *,
    dest: str = "action",
) -> Noun:
    """``agentws <name> ACTION``: the noun, its verb chosen in ``dest``."""
    parser = commands.add_parser(name, help=help_text, description=description)
    verbs = parser.add_subparsers(dest=dest, metavar="ACTION", required=True)
    return Noun(verbs, common)


@attrs.frozen
class Noun:
    """A noun's table of verbs, and the options each of its verbs takes (``common``)."""

    verbs: Verbs
    common: argparse.ArgumentParser

    def verb(
        self,
        name: str,
        help_text: str,
        *positionals: str,
        description: str | None = None,
        handler: Handler | None = None,
    ) -> argparse.ArgumentParser:
        """A verb taking the common options and ``positionals`` (names in :data:`POSITIONALS`)."""
        parser: argparse.ArgumentParser = self.verbs.add_parser(
            name, parents=[self.common], help=help_text, description=description
        )
        for positional in positionals:
            metavar, text = POSITIONALS[positional]
            parser.add_argument(positional, metavar=metavar, help=text)
        if handler is not None:
            parser.set_defaults(handler=handler)
        return parser

    def rename(
        self, help_text: str, description: str, handler: Handler, *positionals: str
    ) -> argparse.ArgumentParser:
        """``rename``: a new display name (``--name``); the caller adds what is renamed."""
        parser = self.verb(
            "rename", help_text, *positionals, description=description, handler=handler
        )
        parser.add_argument("--name", required=True, help="the new display name")
        return parser

    def noun(self, name: str, help_text: str, *, dest: str) -> Noun:
        """A noun within this one (``agentws admin token ACTION``)."""
        return noun(self.verbs, self.common, name, help_text, dest=dest)


def time_window(parser: argparse.ArgumentParser, since_help: str, until_help: str) -> None:
    """``--since`` and ``--until``, each a time :data:`agentws.cli.arguments.moment` reads."""
    parser.add_argument("--since", type=moment, metavar="TIME", help=since_help)
    parser.add_argument("--until", type=moment, metavar="TIME", help=until_help)
