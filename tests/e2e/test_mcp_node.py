"""The MCP group endpoint driven by Node's ``@modelcontextprotocol/sdk`` client.

A real ``agentws serve`` process on a free loopback port, set up with the
CLI (workspace, group, tokens, a library with documents and a skill), is
driven by ``tests/node/interop.mjs`` over the legacy HTTP+SSE transport (with
a custom ``Authorization`` header) and over Streamable HTTP. The script
prints one JSON document with what the SDK client got; these tests check it.

The SDK comes from ``tests/node/package-lock.json``; ``scripts/test`` installs
it (``npm ci``). Without it these tests fail, never skip: an interop check
that quietly does not run is worse than none.
"""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx2
import pytest

from tests.e2e.node_support import NODE_DIR, free_port, require_node
from tests.support import clean_env

INTEROP = NODE_DIR / "interop.mjs"
SDK = "@modelcontextprotocol/sdk"
AGENTWS = (sys.executable, "-m", "agentws")

GRACE_S = 5.0
# Exit must come within the grace period; this covers interpreter teardown.
EXIT_SLACK_S = 2.0
# From exec to the announcement: imports, opening and migrating the store, binding.
STARTUP_S = 30.0
# One CLI run: interpreter start, store open, one command.
CLI_S = 60.0
# interop.mjs's own hard limit; the subprocess timeout adds Node's start-up.
NODE_LIMIT_MS = 20_000
NODE_S = NODE_LIMIT_MS / 1000 + 10.0

WORKSPACE, GROUP, LIBRARY = "acme", "ops", "handbook"
QUERY = "zebracorn"

REFUNDS_MD = """\
# Refund policy

Customers may ask for a refund within 30 days of purchase. Quote the
order number; the zebracorn clause covers orders paid by bank transfer.
"""
SHIPPING_MD = """\
# Shipping times

Orders ship within two working days. Tracking numbers arrive by email.
"""
# Policy ``never``: it must not exist for MCP, though it matches the query.
SALARIES_MD = """\
# Salary bands

Internal only. The zebracorn bonus is paid in March.
"""
# A required argument, as docs/mcp.md's example has: prompts/get without it is an error.
SEVERITIES = ("minor", "major", "critical")
SKILL_MD = f"""\
---
name: triage
description: Triage an incoming support ticket.
arguments:
  - name: severity
    description: How bad the reporter says it is
    required: true
    enum: [{", ".join(SEVERITIES)}]
---
Read the ticket, decide its severity with the checklist, and answer in two
sentences. The reporter calls it {{{{severity}}}}.
"""
CHECKLIST_MD = """\
- Is a customer blocked? Severity 1.
- Is money involved? Severity 2.
"""


# Runs CLI commands one after another in one interpreter, as ``agentws ARGS``
# would each: argv lists on stdin (one JSON document), one JSON line per
# command on stdout ([status, stdout, stderr]).
_BATCH = """
import io, json, sys
from agentws.cli import main

def text():
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8")

for argv in json.load(sys.stdin):
    real = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err = text(), text()
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    finally:
        sys.stdout, sys.stderr = real
    out.flush()
    err.flush()
    print(json.dumps([status, out.buffer.getvalue().decode(), err.buffer.getvalue().decode()]))
"""


@attrs.frozen
class Cli:
    cwd: Path
    database: str
    env: dict[str, str]

    def json(self, *commands: tuple[str, ...]) -> list[Any]:
        """Run ``agentws ARGS --json`` for each of ``commands``, in order, in one
        interpreter (each start costs more than a command); each must succeed.
        Their parsed stdouts.
        """
        argvs = [[*args, "--database", self.database, "--json"] for args in commands]
        result = subprocess.run(
            [sys.executable, "-c", _BATCH],
            cwd=self.cwd,
            env=self.env,
            input=json.dumps(argvs),
            capture_output=True,
            text=True,
            timeout=CLI_S,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        outputs = []
        for args, line in zip(commands, result.stdout.splitlines(), strict=True):
            status, stdout, stderr = json.loads(line)
            assert status == 0, f"agentws {' '.join(args)}: {stderr}"
            outputs.append(json.loads(stdout))
        return outputs


@attrs.frozen
class Endpoint:
    """A running server and what was set up in it."""

    url: str
    token: str
    other_group_token: str
    revoked_token: str
    refunds_uri: str
    shipping_uri: str


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _set_up(cli: Cli, files: Path) -> dict[str, str]:
    documents = [
        ("refunds", REFUNDS_MD, "on_demand"),
        ("shipping", SHIPPING_MD, "spine"),
        ("salaries", SALARIES_MD, "never"),
    ]
    paths = {name: _write(files / f"{name}.md", text) for name, text, _ in documents}
    skill = files / "triage"
    _write(skill / "SKILL.md", SKILL_MD)
    _write(skill / "checklist.md", CHECKLIST_MD)
    outputs = cli.json(
        ("init",),
        ("workspace", "create", WORKSPACE),
        ("group", "create", WORKSPACE, GROUP),
        ("group", "create", WORKSPACE, "sales"),
        ("token", "create", WORKSPACE, GROUP, "--name", "node"),
        ("token", "create", WORKSPACE, "sales", "--name", "node-sales"),
        ("token", "create", WORKSPACE, GROUP, "--name", "node-revoked"),
        ("token", "revoke", WORKSPACE, GROUP, "node-revoked"),
        ("library", "create", WORKSPACE, LIBRARY),
        ("library", "attach", WORKSPACE, GROUP, LIBRARY),
        *(
            ("doc", "add", WORKSPACE, LIBRARY, str(paths[name]), "--policy", policy)
            for name, _, policy in documents
        ),
        ("skill", "add", WORKSPACE, LIBRARY, str(skill)),
    )
    token, other, revoked = outputs[4:7]
    uris = {}
    for (name, _, _), doc in zip(documents, outputs[10:13], strict=True):
        uris[f"{name}_uri"] = doc.get("uri") or f"agentws://{LIBRARY}/{doc['slug']}"
    return {
        "url": token["url"],
        "token": token["token"],
        "other_group_token": other["token"],
        "revoked_token": revoked["token"],
        "refunds_uri": uris["refunds_uri"],
        "shipping_uri": uris["shipping_uri"],
    }


def _wait_healthy(base_url: str, process: subprocess.Popen[bytes]) -> None:
    with httpx2.Client(timeout=2.0) as client:
        for _ in range(int(STARTUP_S / 0.05)):
            assert process.poll() is None, "agentws serve exited while starting"
            try:
                if client.get(f"{base_url}/healthz").status_code == 200:
                    return
            except httpx2.TransportError:
                pass
            time.sleep(0.05)
    pytest.fail(f"{base_url}/healthz did not answer 200 within {STARTUP_S} s")


def _announcement(process: subprocess.Popen[bytes]) -> bytes:
    """The line ``serve --json`` prints once listening; b"" if it exits first."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], STARTUP_S)
    if not ready:
        pytest.fail(f"agentws serve did not announce itself within {STARTUP_S} s")
    return process.stdout.readline()


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    """``agentws serve`` on a free port with a group set up; stopped with SIGTERM (exit 0)."""
    tmp = tmp_path_factory.mktemp("mcp-node")
    port = free_port()
    bind = f"127.0.0.1:{port}"
    database = f"sqlite:///{tmp / 'agentws.db'}"
    # The CLI derives endpoint URLs from the bind address, as the server does.
    setup = _set_up(Cli(tmp, database, clean_env(AGENTWS_BIND=bind)), tmp / "files")

    stderr_path = tmp / "serve.stderr"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [*AGENTWS, "serve", "--bind", bind, "--database", database, "--json"],
            cwd=tmp,
            env=clean_env(AGENTWS_SHUTDOWN_GRACE_S=str(GRACE_S)),
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    try:
        line = _announcement(process)
        assert line, f"agentws serve exited before announcing itself:\n{stderr_path.read_text()}"
        base_url = json.loads(line)["base_url"]
        assert base_url == f"http://{bind}"
        _wait_healthy(base_url, process)
        assert setup["url"] == f"{base_url}/mcp/g/{WORKSPACE}/{GROUP}"
        yield Endpoint(**setup)

        process.send_signal(signal.SIGTERM)
        returncode = process.wait(timeout=GRACE_S + EXIT_SLACK_S)
        stderr_text = stderr_path.read_text()
        assert returncode == 0, f"agentws serve exited {returncode} on SIGTERM:\n{stderr_text}"
        assert "Traceback" not in stderr_text, stderr_text
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=GRACE_S)
        assert process.stdout is not None
        process.stdout.close()


def _interop(url: str, token: str, transport: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run interop.mjs; a missing Node or SDK fails the test (not its setup) with what to do."""
    env = clean_env(AGENTWS_TOKEN=token)
    for name in ("MCP_URL", "MCP_TRANSPORT", "MCP_QUERY", "MCP_TIMEOUT_MS"):
        env.pop(name, None)
    return subprocess.run(
        [
            *(require_node(SDK), str(INTEROP), "--transport", transport, "--url", url),
            *("--timeout-ms", str(NODE_LIMIT_MS), *args),
        ],
        cwd=NODE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=NODE_S,
        check=False,
    )


def _drive(endpoint: Endpoint, transport: str) -> dict[str, Any]:
    result = _interop(
        endpoint.url,
        endpoint.token,
        transport,
        "--query",
        QUERY,
        "--resource",
        endpoint.refunds_uri,
        "--prompt",
        "triage",
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    out: dict[str, Any] = json.loads(lines[0])
    assert out["transport"] == transport
    return out


def _check_common(out: dict[str, Any], endpoint: Endpoint) -> None:
    """What every protocol version must get: tools, search, resources, prompts."""
    assert out["serverInfo"]["name"] == "agentws"
    assert {"tools", "resources", "prompts"} <= set(out["capabilities"])

    tools = {tool["name"]: tool for tool in out["tools"]}
    assert sorted(tools) == ["read_context_document", "search_context"]
    assert tools["search_context"]["inputSchema"]["properties"]["query"]["type"] == "string"
    assert tools["search_context"]["inputSchema"]["properties"]["limit"]["type"] == "integer"

    # Search finds the on_demand refunds document, not the shipping one, and
    # not the ``never`` document that matches the query too.
    search = out["search"]
    assert search["isError"] is False, search["text"]
    assert endpoint.refunds_uri in search["text"]
    assert "Refund policy" in search["text"]
    assert endpoint.shipping_uri not in search["text"]
    assert "salar" not in search["text"].lower()

    resources = {resource["uri"]: resource for resource in out["resources"]}
    assert sorted(resources) == sorted([endpoint.refunds_uri, endpoint.shipping_uri])
    assert out["resource"]["uri"] == endpoint.refunds_uri
    assert out["resource"]["text"] == REFUNDS_MD
    (contents,) = out["resource"]["contents"]
    assert contents["uri"] == endpoint.refunds_uri

    assert [prompt["name"] for prompt in out["prompts"]] == ["triage"]
    assert out["prompts"][0]["description"] == "Triage an incoming support ticket."
    (argument,) = out["prompts"][0]["arguments"]
    assert argument["name"] == "severity"
    assert argument["required"] is True
    prompt = out["prompt"]
    assert prompt["name"] == "triage"
    # The client filled the required argument with a value completion offered.
    assert prompt["arguments"]["severity"] in SEVERITIES
    assert f"The reporter calls it {prompt['arguments']['severity']}." in prompt["text"]
    assert "decide its severity with the checklist" in prompt["text"]
    assert "name: triage" not in prompt["text"]  # the front matter is not the prompt
    (asset,) = prompt["resources"]
    assert asset["uri"].endswith("/checklist.md")
    assert asset["text"] == CHECKLIST_MD


def test_sse_transport_with_custom_authorization_header(endpoint: Endpoint) -> None:
    out = _drive(endpoint, "sse")
    _check_common(out, endpoint)
    # The server negotiates the version the client offers, whatever the
    # transport: clients of the legacy SSE transport (this one, mcp-remote) offer
    # 2025 versions and keep their features (annotations, elicitation).
    assert out["protocolVersion"] in {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}


def test_streamable_http_transport(endpoint: Endpoint) -> None:
    out = _drive(endpoint, "streamable")
    assert out["protocolVersion"] in {"2025-03-26", "2025-06-18", "2025-11-25"}
    # Session ids name the instance that owns them: <instance>.<random>.
    instance, dot, _ = out["sessionId"].partition(".")
    assert instance
    assert dot
    assert out["terminated"] is True
    _check_common(out, endpoint)
    tools = {tool["name"]: tool for tool in out["tools"]}
    for name in ("search_context", "read_context_document"):
        assert tools[name]["annotations"]["readOnlyHint"] is True
        assert tools[name]["annotations"]["destructiveHint"] is False


@pytest.mark.parametrize("transport", ["sse", "streamable"])
@pytest.mark.parametrize("which", ["wrong", "other_group", "revoked"])
def test_a_bad_token_fails_the_client_with_401(
    endpoint: Endpoint, transport: str, which: str
) -> None:
    token = {
        "wrong": "agws_" + "x" * 43,
        "other_group": endpoint.other_group_token,
        "revoked": endpoint.revoked_token,
    }[which]
    result = _interop(endpoint.url, token, transport)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert f"interop: {transport}: connect: " in result.stderr
    assert "[HTTP 401]" in result.stderr
    assert token not in result.stderr
