"""Add remote MCP connectors with cached tools to a group, in one process.

Stands in for ``agentws connector add`` plus a refresh against live remote
servers (which a benchmark on loopback has not got): each connector is
saved with :func:`agentws.connectors.admin.add_connector`, its tools are
written straight into the tool cache (``CachedTool`` rows, as a refresh
would leave them: unlabeled), and it is attached to the group with
:func:`agentws.connectors.admin.attach_connector`. The tool definitions
are generated deterministically and look like real ones: a sentence or two
of description and an input schema of 3 to 6 typed, described properties.

Run: ``python add_connectors.py DATABASE_URL WORKSPACE GROUP CONNECTORS TOOLS_EACH``;
prints ``{"connectors": N, "tools": M}``.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from typing import Any

import trio

from agentws.connectors.admin import add_connector, attach_connector
from agentws.connectors.url_guard import Allowlist
from agentws.domain.models import CachedTool, ConnectorKind
from agentws.store import open_store

_SEED = 20260
_ACTOR = "bench"
_CONNECTORS = ["tracker", "crm", "billing", "wiki", "chat", "storage", "deploy", "calendar"]
_VERBS = ["list", "get", "create", "update", "delete", "search", "archive", "export"]
_NOUNS = [
    "issue",
    "comment",
    "project",
    "user",
    "team",
    "invoice",
    "page",
    "file",
    "channel",
    "event",
    "label",
    "release",
    "customer",
    "report",
    "webhook",
    "task",
]
# Every property a schema may draw on: (name, JSON schema, description).
_PROPERTIES: list[tuple[str, dict[str, Any], str]] = [
    ("id", {"type": "string"}, "The {noun}'s identifier, as returned by list_{noun}."),
    ("project", {"type": "string"}, "Key of the project the {noun} belongs to, e.g. 'OPS'."),
    ("query", {"type": "string"}, "Free-text filter matched against titles and bodies."),
    ("title", {"type": "string", "maxLength": 200}, "Short human-readable title."),
    ("body", {"type": "string"}, "Markdown body; mentions like @name notify the person."),
    ("limit", {"type": "integer", "minimum": 1, "maximum": 100}, "Most results to return."),
    ("cursor", {"type": "string"}, "Opaque cursor from a previous page's next_cursor."),
    (
        "status",
        {"type": "string", "enum": ["open", "in_progress", "closed"]},
        "Only {noun}s in this state.",
    ),
    ("assignee", {"type": "string", "format": "email"}, "E-mail of the person responsible."),
    ("labels", {"type": "array", "items": {"type": "string"}}, "Labels to set, replacing any."),
    ("due", {"type": "string", "format": "date"}, "Due date, ISO 8601 (YYYY-MM-DD)."),
    ("include_archived", {"type": "boolean", "default": False}, "Also return archived items."),
]
_DESCRIPTIONS = {
    "list": "Lists the {noun}s visible to the connected account, newest first. "
    "Results are paginated; pass the returned cursor to get the next page.",
    "get": "Fetches one {noun} by its identifier, with all of its fields.",
    "create": "Creates a new {noun} and returns it. The caller becomes its owner "
    "unless an assignee is given.",
    "update": "Changes the given fields of an existing {noun}; fields left out are kept.",
    "delete": "Deletes a {noun} permanently. This cannot be undone.",
    "search": "Searches {noun}s by free text and filters, ranked by relevance.",
    "archive": "Archives a {noun}: it stays readable but no longer appears in lists.",
    "export": "Exports {noun}s matching the filters as CSV and returns a download link "
    "valid for one hour.",
}


def tool_definitions(connector: str, count: int, rng: random.Random) -> list[dict[str, Any]]:
    """``count`` distinct tools of one connector: name, description, input schema."""
    actions = [(verb, noun) for noun in _NOUNS for verb in _VERBS]
    rng.shuffle(actions)
    if count > len(actions):
        raise ValueError(f"at most {len(actions)} tools per connector")
    tools = []
    for verb, noun in sorted(actions[:count]):
        chosen = rng.sample(_PROPERTIES, rng.randint(3, 6))
        properties = {
            name: {**schema, "description": text.format(noun=noun)} for name, schema, text in chosen
        }
        required = [name for name, _, _ in chosen[: rng.randint(1, 2)]]
        tools.append(
            {
                "name": f"{verb}_{noun}",
                "description": f"[{connector}] " + _DESCRIPTIONS[verb].format(noun=noun),
                "input_schema": {
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": False,
                },
            }
        )
    return tools


def _definition_hash(tool: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(tool, sort_keys=True).encode()).hexdigest()


async def _add(
    database_url: str, workspace: str, group: str, connectors: int, tools_each: int
) -> dict[str, int]:
    if connectors > len(_CONNECTORS):
        raise ValueError(f"at most {len(_CONNECTORS)} connectors")
    rng = random.Random(_SEED)  # noqa: S311 - reproducible definitions, not a secret
    tools = 0
    async with open_store(database_url) as store:
        for n, name in enumerate(_CONNECTORS[:connectors], start=1):
            connector = await add_connector(
                store,
                workspace,
                name,
                kind=ConnectorKind.REMOTE_MCP,
                # Loopback: the service's links are refused by the URL guard at once,
                # without a DNS query or a connection; the cached tools are what counts.
                # Saving it needs the allowlist a loopback URL always needs.
                url=f"http://127.0.0.1:9/mcp-{n}",
                headers={},
                secret=None,
                box=None,
                allowlist=Allowlist.parse("127.0.0.1/32"),
                actor=_ACTOR,
            )
            for tool in tool_definitions(name, tools_each, rng):
                await store.insert(
                    CachedTool(
                        connector_id=connector.id,
                        name=tool["name"],
                        description=tool["description"],
                        input_schema=tool["input_schema"],
                        definition_hash=_definition_hash(tool),
                        label=None,
                    )
                )
                tools += 1
            await attach_connector(store, workspace, group, name, actor=_ACTOR)
    return {"connectors": connectors, "tools": tools}


def main() -> None:
    database_url, workspace, group, connectors, tools_each = sys.argv[1:]
    added = trio.run(_add, database_url, workspace, group, int(connectors), int(tools_each))
    print(json.dumps(added))


if __name__ == "__main__":
    main()
