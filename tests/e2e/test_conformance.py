"""agentws against the official MCP conformance suite (``@modelcontextprotocol/conformance``).

Each scenario is one test: a live agentws (``running()``, group ``acme/ops``
with its library) reached through the token-adding loopback proxy, one Node
process per scenario. Two suite releases are pinned in
``tests/conformance/package-lock.json``:

- 0.1.16, the generic and capability scenarios of the 2025 revisions;
- 0.2.x, every scenario that applies to revision 2026-07-28, run at that
  revision (``--spec-version 2026-07-28``; ``--requirements 2026-07-28``
  runs the 37 required ones in one process and cannot pick one scenario).

The scenarios that call the suite's own tools (``test_simple_text``...) reach
them through agentws: the fixture server (``tests/conformance/fixture_server.py``)
is attached as remote MCP connectors ``test`` and ``json`` whose tools, named
``<connector>_<tool>`` by agentws, carry exactly the names the suite calls.
:func:`test_fixture_alone` shows the fixture passes them by itself.

Scenarios agentws does not pass yet are listed in :data:`KNOWN_GAPS`, each
with why; their tests are skipped, citing issue 23. Everything else must pass:
delete an entry once its feature lands and the test runs again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from agentws.connectors.registry import attach_connector
from agentws.connectors.remote_mcp import fetch_tools, remote_deadline
from agentws.domain.models import Capability
from agentws.tools.admin import set_label
from agentws.tools.cache_sync import sync_tool_cache
from tests.conformance.fixture_server import open_fixture_server
from tests.e2e.conformance_support import SUITES, require, run_scenario, token_proxy
from tests.e2e.mcp_support import Running, running
from tests.e2e.remote_support import LOOPBACK, SDK_CLIENT_WARNINGS, TIMEOUT_S, add_remote

pytestmark = pytest.mark.filterwarnings(
    *SDK_CLIENT_WARNINGS,
    # The fixture server logs, samples and elicits, which 2026-07-28 deprecates.
    "ignore::mcp.shared.exceptions.MCPDeprecationWarning",
)

#: 0.1.16: the generic and capability scenarios.
V1_SCENARIOS = (
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "resources-list",
    "prompts-list",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "completion-complete",
    "resources-subscribe",
    "resources-unsubscribe",
)
#: 0.2.x: ``list --server --spec-version 2026-07-28`` (the 37 the revision
#: requires, plus json-schema-2020-12 and both header-validation scenarios,
#: pending in the suite).
V2_SCENARIOS = (
    "server-stateless",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    "json-schema-2020-12",
    "server-sse-multiple-streams",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "sep-2164-resource-not-found",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
    "caching",
    "http-header-validation",
    "http-custom-header-server-validation",
    "input-required-result-basic-elicitation",
    "input-required-result-basic-sampling",
    "input-required-result-basic-list-roots",
    "input-required-result-request-state",
    "input-required-result-multiple-input-requests",
    "input-required-result-multi-round",
    "input-required-result-missing-input-response",
    "input-required-result-non-tool-request",
    "input-required-result-result-type",
    "input-required-result-unsupported-methods",
    "input-required-result-tampered-state",
    "input-required-result-capability-check",
    "input-required-result-ignore-extra-params",
    "input-required-result-validate-input",
)
#: 0.1.16's scenarios that call the fixture server's tools: run through
#: agentws with the fixture attached as remote MCP connectors (the relay).
RELAY_SCENARIOS = (
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "json-schema-2020-12",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
)
#: 0.2.x's scenarios that call the fixture server's tools or prompt.
FIXTURE_V2_SCENARIOS = tuple(
    s for s in V2_SCENARIOS if s.startswith(("tools-call-", "json-schema", "input-required"))
)
MODERN = "2026-07-28"
# agentws lists a connector's tools as <connector>_<tool>: connector ``test``
# offering the fixture's test_* tools without that prefix, and ``json`` its
# json_* one, offer exactly the names the suite calls.
CONNECTORS = ("test", "json")

_NO_MODERN = "2026-07-28 is refused (-32022): no modern era yet"
_MODERN_RELAY = _NO_MODERN + "; then the fixture's tools relayed at 2026-07-28"
_MODERN_FIXTURE = (
    _NO_MODERN + "; also wants the suite's fixture resources and prompts "
    "(test://static-text, test_simple_prompt...), which a group does not serve"
)
_MODERN_MRTR = (
    _NO_MODERN + "; then the fixture's input_required results relayed (the prompt "
    "scenario: its prompt too)"
)
#: ``suite/scenario`` -> why agentws fails it today (issue 23). One entry per
#: scenario that does not pass; delete it when the feature lands.
KNOWN_GAPS: dict[str, str] = {
    "v1/server-sse-polling": (
        "POST answers plain JSON, no SSE stream with a priming event, event ids and retry"
    ),
    "v1/completion-complete": "completion/complete answers -32601",
    "v1/resources-subscribe": "resources/subscribe answers -32601",
    "v1/resources-unsubscribe": "resources/unsubscribe answers -32601",
    "v2/server-stateless": _NO_MODERN + " (bad _meta must get -32602)",
    "v2/completion-complete": _NO_MODERN + "; no completion/complete either",
    "v2/tools-list": _NO_MODERN,
    "v2/tools-call-simple-text": _MODERN_RELAY,
    "v2/tools-call-image": _MODERN_RELAY,
    "v2/tools-call-audio": _MODERN_RELAY,
    "v2/tools-call-embedded-resource": _MODERN_RELAY,
    "v2/tools-call-mixed-content": _MODERN_RELAY,
    "v2/tools-call-error": _MODERN_RELAY,
    "v2/tools-call-with-progress": _MODERN_RELAY + ", progress passed on",
    "v2/json-schema-2020-12": _MODERN_RELAY,
    "v2/server-sse-multiple-streams": _NO_MODERN + " (HTTP 400 on each POST)",
    "v2/resources-list": _NO_MODERN,
    "v2/resources-read-text": _MODERN_FIXTURE,
    "v2/resources-read-binary": _MODERN_FIXTURE,
    "v2/resources-templates-read": _MODERN_FIXTURE + "; no resources/templates/list either",
    "v2/sep-2164-resource-not-found": _NO_MODERN + " (wants -32602 with data.uri)",
    "v2/prompts-list": _NO_MODERN,
    "v2/prompts-get-simple": _MODERN_FIXTURE,
    "v2/prompts-get-with-args": _MODERN_FIXTURE,
    "v2/prompts-get-embedded-resource": _MODERN_FIXTURE,
    "v2/prompts-get-with-image": _MODERN_FIXTURE,
    "v2/dns-rebinding-protection": _NO_MODERN + " (a valid localhost request gets 400)",
    "v2/caching": _NO_MODERN + " (tools/list and prompts/list caching hints)",
    "v2/http-header-validation": _NO_MODERN + "; no Mcp-Method/Mcp-Name header checks",
    "v2/http-custom-header-server-validation": _NO_MODERN + "; no custom header checks",
    "v2/input-required-result-basic-elicitation": _MODERN_MRTR,
    "v2/input-required-result-basic-sampling": _MODERN_MRTR,
    "v2/input-required-result-basic-list-roots": _MODERN_MRTR,
    "v2/input-required-result-request-state": _MODERN_MRTR,
    "v2/input-required-result-multiple-input-requests": _MODERN_MRTR,
    "v2/input-required-result-multi-round": _MODERN_MRTR,
    "v2/input-required-result-missing-input-response": _MODERN_MRTR,
    "v2/input-required-result-non-tool-request": _MODERN_MRTR,
    "v2/input-required-result-result-type": _MODERN_MRTR,
    "v2/input-required-result-tampered-state": _MODERN_MRTR,
    "v2/input-required-result-capability-check": _MODERN_MRTR,
    "v2/input-required-result-ignore-extra-params": _MODERN_MRTR,
    "relay/tools-call-with-logging": "the remote's log messages are not passed on",
    "relay/tools-call-with-progress": "the remote's progress notifications are not passed on",
    "relay/tools-call-sampling": "the remote's sampling request is not passed to the client",
    "relay/tools-call-elicitation": "the remote's elicitation is not passed to the client",
    "relay/elicitation-sep1034-defaults": "the remote's elicitation is not passed to the client",
    "relay/elicitation-sep1330-enums": "the remote's elicitation is not passed to the client",
}
# Two scenarios of 0.2.x pass today only because agentws refuses the revision
# outright: input-required-result-unsupported-methods (no input_required result
# where none belongs) and input-required-result-validate-input (a JSON-RPC
# error for bad input responses). They stay out of KNOWN_GAPS: they must keep
# passing once the revision is spoken.


@pytest.fixture(autouse=True)
def _installed() -> None:
    # A sync fixture, so a missing install fails with its message alone, not
    # wrapped in the exception group of the server's nursery.
    for package in SUITES.values():
        require(package)


def _cases() -> list[Any]:
    cases = []
    suites = (("v1", V1_SCENARIOS), ("v2", V2_SCENARIOS), ("relay", RELAY_SCENARIOS))
    for suite, scenarios in suites:
        for scenario in scenarios:
            key = f"{suite}/{scenario}"
            marks = (
                [pytest.mark.skip(reason=f"issue 23: {KNOWN_GAPS[key]}")]
                if key in KNOWN_GAPS
                else []
            )
            cases.append(pytest.param(suite, scenario, id=key, marks=marks))
    return cases


@asynccontextmanager
async def _fixture_attached(server: Running) -> AsyncIterator[None]:
    """The fixture server as connectors ``test`` and ``json`` of acme/ops, every tool ``read``."""
    async with trio.open_nursery() as nursery:
        for name in CONNECTORS:
            url = await nursery.start(_serve_fixture, f"{name}_")
            connector = await add_remote(server.store, url, name=name)
            with trio.fail_after(TIMEOUT_S), remote_deadline(connector, TIMEOUT_S):
                tools = await fetch_tools(connector, box=None, allowlist=LOOPBACK)
            await sync_tool_cache(server.store, connector, tools, actor="t")
            await attach_connector(server.store, "acme", "ops", name, actor="t")
            for tool in tools:
                await set_label(
                    server.store, "acme", f"{name}_{tool.name}", Capability.READ, actor="t"
                )
        yield
        nursery.cancel_scope.cancel()


async def _serve_fixture(prefix: str, *, task_status: trio.TaskStatus[str]) -> None:
    async with open_fixture_server(prefix) as url:
        task_status.started(url)
        await trio.sleep_forever()


@pytest.mark.parametrize(("suite", "scenario"), _cases())
async def test_scenario(tmp_path: Path, suite: str, scenario: str) -> None:
    # The scenarios that call the fixture's tools reach them through agentws.
    relayed = suite == "relay" or (suite == "v2" and scenario in FIXTURE_V2_SCENARIOS)
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32"} if relayed else {}
    async with (
        running(tmp_path, **env) as server,
        token_proxy(server.base_url, server.token) as proxy,
    ):
        url = proxy + server.url.removeprefix(server.base_url)
        async with AsyncExitStack() as stack:
            if relayed:
                await stack.enter_async_context(_fixture_attached(server))
            result = await run_scenario(
                "v1" if suite == "relay" else suite,
                url,
                scenario,
                spec_version=MODERN if suite == "v2" else None,
            )
    assert result.passed, result.explain()


@pytest.mark.parametrize(
    ("suite", "scenario"),
    [pytest.param("v1", s, id=f"v1/{s}") for s in RELAY_SCENARIOS]
    + [pytest.param("v2", s, id=f"v2/{s}") for s in FIXTURE_V2_SCENARIOS],
)
async def test_fixture_alone(suite: str, scenario: str) -> None:
    # The yardstick for the relay: the fixture server passes each scenario
    # itself, reached through the same proxy (so the proxy passes SSE streams,
    # notifications and server-to-client requests through unchanged).
    async with open_fixture_server() as url:
        base = url.removesuffix("/mcp")
        async with token_proxy(base, "unused") as proxy:
            result = await run_scenario(
                suite, f"{proxy}/mcp", scenario, spec_version=MODERN if suite == "v2" else None
            )
    assert result.passed, result.explain()
