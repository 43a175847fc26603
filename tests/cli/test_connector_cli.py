"""``agentws connector``: adding, listing, removing, attaching, and keeping secrets secret.

A secret given to a connector must appear in no CLI output, no log line and
no database column in plain text.
"""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

from tests.cli.conftest import NATIVE_HOSTS, Cli

SECRET = "ghp_S3cretValue_that_must_never_show_1234567890"
# A remote MCP server's address where nothing listens (its refresh on add fails at once),
# and the allowlist that lets it be saved with GitHub's host.
REMOTE_URL = "http://127.0.0.1:9/mcp"
WITH_REMOTE = {
    "AGENTWS_CONNECTOR_ALLOWLIST": NATIVE_HOSTS["AGENTWS_CONNECTOR_ALLOWLIST"] + ",127.0.0.1/32"
}


def _setup(cli: Cli) -> None:
    cli.ok("init")
    cli.ok("workspace", "create", "acme")
    cli.ok("group", "create", "acme", "ops")


def _all_text_in_sqlite(path: Path) -> str:
    """Every value of every row of every table, as text."""
    conn = sqlite3.connect(path)
    try:
        chunks = []
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                chunks += [v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in row]
        return "\n".join(chunks)
    finally:
        conn.close()


def test_init_creates_the_secret_key_file_once(cli: Cli, tmp_path: Path) -> None:
    first = cli.json("init")
    key_file = Path(first["secret_key_file"])
    assert key_file == Path("secret.key") or key_file.resolve() == tmp_path / "secret.key"
    path = tmp_path / "secret.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = path.read_text()
    cli.ok("init")
    assert path.read_text() == key


def test_connector_lifecycle_keeps_the_secret_out_of_output_logs_and_database(
    cli: Cli, tmp_path: Path
) -> None:
    _setup(cli)
    outputs = []
    result = cli.run(
        "connector",
        "add",
        "acme",
        "github",
        "--kind",
        "github",
        "--secret-env",
        "GH_TOKEN",
        env={"GH_TOKEN": SECRET, **WITH_REMOTE},
    )
    assert result.returncode == 0, result.stderr
    outputs += [result.stdout, result.stderr]
    added = cli.json(
        "connector",
        "add",
        "acme",
        "docs",
        "--kind",
        "remote_mcp",
        "--url",
        REMOTE_URL,
        "--header",
        "X-Team: support",
        "--secret-stdin",
        "--secret-header",
        "X-Api-Key",
        input=SECRET + "\n",
        env=WITH_REMOTE,
    )
    outputs.append(str(added))
    assert added["id"].startswith("con_")
    assert added["url"] == REMOTE_URL
    assert added["headers"] == {"X-Team": "support"}
    assert added["secret"] == "X-Api-Key"

    listed = cli.json("connector", "list", "acme")
    outputs += [str(listed), cli.ok("connector", "list", "acme")]
    assert [(c["name"], c["kind"], c["url"]) for c in listed] == [
        ("github", "github", "https://api.github.com"),
        ("docs", "remote_mcp", REMOTE_URL),
    ]
    assert listed[0]["secret"] == "Authorization"

    outputs.append(cli.ok("connector", "attach", "acme", "ops", "docs"))
    outputs.append(cli.ok("connector", "attach", "acme", "ops", "docs"))  # no-op
    # The remote's requests to callers: passed on by default, refused when turned off.
    assert cli.json("connector", "show", "acme", "docs")["relay_requests"] is True
    off = cli.ok("connector", "relay", "acme", "docs", "off")
    assert "refuses its requests to callers" in off and "relay acme docs on" in off
    assert cli.json("connector", "show", "acme", "docs")["relay_requests"] is False
    assert "requests: refused" in cli.ok("connector", "show", "acme", "docs")
    assert cli.json("connector", "relay", "acme", "docs", "on")["relay_requests"] is True
    native = cli.run("connector", "relay", "acme", "github", "off")
    assert native.returncode == 1 and "only a remote MCP server asks callers" in native.stderr
    # Its link's revision: auto until pinned; a native connector speaks no MCP.
    assert "protocol: auto" in cli.ok("connector", "show", "acme", "docs")
    pinned = cli.ok("connector", "protocol", "acme", "docs", "2026-07-28")
    assert "speaks MCP 2026-07-28" in pinned
    assert cli.json("connector", "show", "acme", "docs")["protocol"] == "2026-07-28"
    unknown = cli.run("connector", "protocol", "acme", "docs", "2024-01-01")
    assert unknown.returncode == 2 and "invalid choice" in unknown.stderr
    native = cli.run("connector", "protocol", "acme", "github", "2025-11-25")
    assert native.returncode == 1 and "speaks no MCP" in native.stderr
    detached = cli.json("connector", "detach", "acme", "ops", "docs")
    assert detached["detached"] is True
    assert cli.json("connector", "detach", "acme", "ops", "docs")["detached"] is False
    outputs.append(cli.ok("connector", "remove", "acme", "github"))
    assert [c["name"] for c in cli.json("connector", "list", "acme")] == ["docs"]

    for text in outputs:
        assert SECRET not in text
    stored = _all_text_in_sqlite(tmp_path / "a.db")
    assert SECRET not in stored
    assert "X-Team" in stored  # the scan does see the connector rows


def test_bad_connector_input_is_refused_clearly(cli: Cli) -> None:
    _setup(cli)
    cases = [
        (["--kind", "remote_mcp"], "needs --url"),
        (["--kind", "remote_mcp", "--url", "ftp://x.example/"], "must be http(s)"),
        (["--kind", "remote_mcp", "--url", "https://u:p@x.example/"], "credentials"),
        (["--kind", "github", "--header", f"Authorization: Bearer {SECRET}"], "--secret-env"),
        (["--kind", "github", "--header", "no colon"], "'Name: value'"),
        (["--kind", "github", "--secret-env", "UNSET_VARIABLE"], "UNSET_VARIABLE is not set"),
        (["--kind", "github", "--secret-header", "X-Key"], "--secret-header needs"),
    ]
    for extra, message in cases:
        stderr = cli.fails("connector", "add", "acme", "gh", *extra, env=NATIVE_HOSTS)
        assert message in stderr, (extra, stderr)
        assert SECRET not in stderr
    assert "invalid connector name" in cli.fails(
        "connector", "add", "acme", "Bad-Name", "--kind", "github", env=NATIVE_HOSTS
    )
    assert "no workspace 'nope'" in cli.fails("connector", "list", "nope")
    assert "no connector 'ghost'" in cli.fails("connector", "attach", "acme", "ops", "ghost")
    cli.ok("connector", "add", "acme", "gh", "--kind", "github", env=NATIVE_HOSTS)
    assert "already exists" in cli.fails(
        "connector", "add", "acme", "gh", "--kind", "github", env=NATIVE_HOSTS
    )


def test_the_allowlist_limits_connector_hosts(cli: Cli) -> None:
    _setup(cli)
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "*.corp.example"}
    stderr = cli.fails(
        "connector",
        "add",
        "acme",
        "x",
        "--kind",
        "remote_mcp",
        "--url",
        "https://evil.example/",
        env=env,
    )
    assert "AGENTWS_CONNECTOR_ALLOWLIST" in stderr
    # A host it names is saved as it is: not looked up (a native connector: no refresh).
    cli.ok(
        "connector",
        "add",
        "acme",
        "x",
        "--kind",
        "github",
        "--url",
        "https://github.corp.example/api/v3",
        env=env,
    )


def test_a_secret_needs_a_key(cli: Cli, tmp_path: Path) -> None:
    _setup(cli)
    (tmp_path / "secret.key").unlink()
    stderr = cli.fails(
        "connector",
        "add",
        "acme",
        "gh",
        "--kind",
        "github",
        "--secret-env",
        "T",
        env={"T": SECRET},
    )
    assert "agentws init" in stderr
    bad = cli.fails(
        "connector",
        "add",
        "acme",
        "gh",
        "--kind",
        "github",
        "--secret-env",
        "T",
        env={"T": SECRET, "AGENTWS_SECRET_KEY": "short"},
    )
    assert "AGENTWS_SECRET_KEY: not a valid key" in bad
    assert SECRET not in stderr + bad


def test_a_url_to_a_non_public_address_is_refused_when_saved(cli: Cli) -> None:
    """Cloud metadata, loopback, private networks (in IPv6 forms too) and a name that
    resolves to loopback (``localhost``, from the hosts file) are refused at once, with
    no allowlist set, not saved to fail at every connection."""
    _setup(cli)
    cases = [
        ("remote_mcp", "http://169.254.169.254/mcp"),
        ("remote_mcp", "http://127.0.0.1:9/mcp"),
        ("remote_mcp", "http://localhost:9/mcp"),
        ("remote_mcp", "http://[::ffff:10.0.0.1]/mcp"),
        ("remote_mcp", "http://[64:ff9b::a9fe:a9fe]/mcp"),
        ("github", "http://192.168.1.10/api/v3"),
        ("stripe", "https://[fd00:ec2::254]/"),
    ]
    for kind, url in cases:
        stderr = cli.fails("connector", "add", "acme", "x", "--kind", kind, "--url", url)
        assert "not a public address" in stderr, (url, stderr)
        assert "AGENTWS_CONNECTOR_ALLOWLIST" in stderr, (url, stderr)
    assert cli.json("connector", "list", "acme") == []
    # Allow-listed, the same loopback URL is saved (and its refresh fails: nothing listens).
    added = cli.json(
        *(
            "connector",
            "add",
            "acme",
            "x",
            "--kind",
            "remote_mcp",
            "--url",
            "http://127.0.0.1:9/mcp",
        ),
        env={"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32"},
    )
    assert added["url"] == "http://127.0.0.1:9/mcp"
    assert [c["name"] for c in cli.json("connector", "list", "acme")] == ["x"]
