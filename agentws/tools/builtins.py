"""The context built-ins: ``search_context`` and ``read_context_document``.

Both read the documents a group exposes (policy ``spine`` or ``on_demand``
in its attached libraries); a ``never`` document does not exist for them.
Documents are addressed by a stable URI, ``agentws://<library>/<document>``,
the same URI MCP ``resources/*`` uses, or by their id. Results are text for
every client plus ``structuredContent`` for clients that read it; search
results also come as ``resource_link`` items, one per hit, which clients
can open with ``resources/read``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import mcp_types as types

from agentws.domain.models import Capability, ContextDocument, DocumentHit, Group, Library
from agentws.domain.tool_results import tool_error, tool_text
from agentws.store.sql_catalog import CatalogStore
from agentws.tools.spec import ToolSpec

__all__ = [
    "BUILTINS",
    "DOCUMENT_URI_SCHEME",
    "GET_APPROVAL",
    "Builtin",
    "BuiltinCall",
    "document_uri",
    "find_document",
    "group_libraries",
    "parse_document_uri",
]

DOCUMENT_URI_SCHEME = "agentws"
# One read returns at most this many characters; a model asks for the next range.
_DEFAULT_LENGTH = 20_000
_MAX_LENGTH = 100_000
_MAX_RESULTS = 20


def document_uri(library: Library, document: ContextDocument) -> str:
    return _uri(library.slug, document.slug)


def _uri(library_slug: str, document_slug: str) -> str:
    return f"{DOCUMENT_URI_SCHEME}://{library_slug}/{document_slug}"


def parse_document_uri(uri: str) -> tuple[str, str] | None:
    """``(library slug, document slug)`` of a document URI, or None if it is not one."""
    prefix = f"{DOCUMENT_URI_SCHEME}://"
    if not uri.startswith(prefix):
        return None
    library, _, document = uri[len(prefix) :].partition("/")
    if not library or not document or "/" in document:
        return None
    return library, document


async def group_libraries(store: CatalogStore, group: Group) -> dict[str, Library]:
    """The group's libraries by id."""
    return {library.id: library for library in await store.group_libraries(group.id)}


async def find_document(
    store: CatalogStore,
    group: Group,
    *,
    uri: str | None = None,
    document_id: str | None = None,
    libraries: dict[str, Library] | None = None,
) -> tuple[Library, ContextDocument] | None:
    """A document the group exposes, by URI or id; None if there is no such document."""
    if libraries is None:
        libraries = await group_libraries(store, group)
    if document_id is not None:
        document = await store.group_document(group.id, document_id)
        if document is None or document.library_id not in libraries:
            return None
        return libraries[document.library_id], document
    parsed = parse_document_uri(uri or "")
    if parsed is None:
        return None
    library = next((lib for lib in libraries.values() if lib.slug == parsed[0]), None)
    if library is None:
        return None
    for document in await store.group_documents(group.id):
        if document.library_id == library.id and document.slug == parsed[1]:
            return library, document
    return None


@attrs.frozen
class BuiltinCall:
    """One call of a built-in: where it runs, and the arguments it was given."""

    store: CatalogStore
    group: Group
    #: The group's libraries by id, if the caller knows them already (None: read them).
    libraries: dict[str, Library] | None
    arguments: dict[str, Any]


async def _search_context(call: BuiltinCall) -> types.CallToolResult:
    query = call.arguments["query"]
    limit = call.arguments.get("limit", 5)
    # The answer is made where the hits are read (SQLite: the store's reader
    # thread), beside the event loop's work rather than in its turn.
    return await call.store.search_documents_shaped(
        functools.partial(_search_answer, query),
        call.group.id,
        query,
        limit=limit,
        libraries=None if call.libraries is None else list(call.libraries.values()),
    )


def _search_answer(query: str, hits: list[DocumentHit]) -> types.CallToolResult:
    """search_context's answer: a numbered listing, the results as data, a link per hit."""
    results = [
        {
            "uri": _uri(hit.library_slug, hit.slug),
            "id": hit.document_id,
            "title": hit.title,
            # One line per hit: a snippet's newlines would break the listing apart.
            "snippet": " ".join(hit.snippet.split()),
            "score": round(hit.score, 6),
        }
        for hit in hits
    ]
    if not results:
        return tool_text(f"No documents match {query!r}.", {"results": []})
    lines = [f"{len(results)} result(s) for {query!r}:"]
    for n, result in enumerate(results, start=1):
        lines.append(f"{n}. {result['title']} — {result['uri']}")
        lines.append(f"   {result['snippet']}")
    lines.append("Read one in full with read_context_document(uri=...).")
    found = tool_text("\n".join(lines), {"results": results})
    found.content.extend(
        types.ResourceLink(
            type="resource_link",
            uri=_uri(hit.library_slug, hit.slug),
            name=hit.slug,
            title=hit.title,
            mime_type=hit.mime_type,
        )
        for hit in hits
    )
    return found


async def _read_context_document(call: BuiltinCall) -> types.CallToolResult:
    uri, document_id = call.arguments.get("uri"), call.arguments.get("id")
    if (uri is None) == (document_id is None):
        return tool_error("Give exactly one of 'uri' or 'id'.")
    found = await find_document(
        call.store, call.group, uri=uri, document_id=document_id, libraries=call.libraries
    )
    if found is None:
        return tool_error(
            f"No document {uri or document_id!r} in this group; search_context lists what exists."
        )
    library, document = found
    offset = call.arguments.get("offset", 0)
    length = call.arguments.get("length", _DEFAULT_LENGTH)
    total = len(document.body)
    part = document.body[offset : offset + length]
    end = offset + len(part)
    header = f"# {document.title}\nURI: {document_uri(library, document)}\n"
    if offset or end < total:
        header += f"Characters {offset} to {end} of {total}."
        if end < total:
            header += f" Call again with offset={end} for the rest."
        header += "\n"
    return tool_text(
        f"{header}\n{part}",
        {
            "uri": document_uri(library, document),
            "id": document.id,
            "title": document.title,
            "mimeType": document.mime_type,
            "offset": offset,
            "end": end,
            "total": total,
            "text": part,
        },
    )


def _builtin_spec(
    name: str,
    title: str,
    description: str,
    properties: dict[str, Any],
    *,
    required: tuple[str, ...] = (),
) -> ToolSpec:
    """A built-in's spec: every built-in reads, takes an object with no other
    properties than ``properties``, and is bound to ``builtin:<name>``."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return ToolSpec(
        name=name,
        title=title,
        description=description,
        input_schema=schema,
        capability=Capability.READ,
        definition_hash=f"builtin:{name}",
    )


@attrs.frozen
class Builtin:
    spec: ToolSpec
    run: Callable[[BuiltinCall], Awaitable[types.CallToolResult]]
    #: Whether a call can run before knowing the group has a library (an empty
    #: answer then checks): saves the search hot path a query.
    optimistic: bool = False


BUILTINS: dict[str, Builtin] = {
    "search_context": Builtin(
        _builtin_spec(
            "search_context",
            "Search context documents",
            "Full-text search over this group's context documents. Returns the best "
            "matches, each with its URI, title and a snippet; read one in full with "
            "read_context_document.",
            {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1000,
                    "description": "Words to look for.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": _MAX_RESULTS,
                    "default": 5,
                    "description": "How many results to return.",
                },
            },
            required=("query",),
        ),
        _search_context,
        optimistic=True,
    ),
    "read_context_document": Builtin(
        _builtin_spec(
            "read_context_document",
            "Read a context document",
            "Read one of this group's context documents by its URI (agentws://...) or id. "
            "Long documents are returned in ranges: pass offset (and length) to continue.",
            {
                "uri": {"type": "string", "description": "The document's agentws:// URI."},
                "id": {"type": "string", "description": "The document's id."},
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "First character to return.",
                },
                "length": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": _MAX_LENGTH,
                    "default": _DEFAULT_LENGTH,
                    "description": "How many characters to return.",
                },
            },
        ),
        _read_context_document,
    ),
}

#: The outcome of a call queued for approval, for the caller that queued it.
#: Offered where calls can be queued (a group with connector tools); it runs
#: with the caller's identity, so it lives in :mod:`agentws.tools.approval_queue`.
GET_APPROVAL = _builtin_spec(
    "get_approval",
    "Outcome of a queued call",
    "The status of a tool call that was queued for an admin's approval: pending, "
    "approved, executed (with the tool's result), failed, denied (with the reason) or "
    "expired. Pass the approval id the queued call returned.",
    {
        "approval_id": {
            "type": "string",
            "minLength": 1,
            "maxLength": 100,
            "description": "The id (apr_...) of the queued call.",
        }
    },
    required=("approval_id",),
)
