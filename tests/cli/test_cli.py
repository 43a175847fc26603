"""The ``agentws`` command line, run as the program would run (:mod:`tests.in_process`;
one test runs the installed console script).

Every run gets a clean environment (no ``AGENTWS_*`` of the developer's) and
``cwd=tmp_path``. Key cases run on SQLite and on PostgreSQL (a fresh schema).
No run may print a Python traceback: :meth:`Cli.run` checks that for all of them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import trio
from argon2 import PasswordHasher

from agentws.store.postgres import open_postgres
from tests.cli.conftest import RUN_S, Cli
from tests.support import clean_env, fresh_schema_sync, postgres_base_url

DEFAULT_BASE = "http://127.0.0.1:8080"  # from the default bind, AGENTWS_BIND unset


def _with_group(cli: Cli, workspace: str = "acme", group: str = "ops") -> None:
    cli.ok("workspace", "create", workspace)
    cli.ok("group", "create", workspace, group)


def _sqlite_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a SQLite file."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        tables = [
            name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        return {t: db.execute(f'SELECT * FROM "{t}"').fetchall() for t in tables}


def _contains(rows: dict[str, list[tuple[Any, ...]]], needle: str) -> list[str]:
    """Where ``needle`` occurs in ``rows`` (as text or bytes), as ``table: value``."""
    found = []
    for table, table_rows in rows.items():
        for row in table_rows:
            for value in row:
                text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
                if needle in text:
                    found.append(f"{table}: {text}")
    return found


# --- help -------------------------------------------------------------------------------

HELP_COMMANDS = [
    [],
    ["serve"],
    ["init"],
    ["workspace"],
    ["workspace", "create"],
    ["workspace", "list"],
    ["group"],
    ["group", "create"],
    ["group", "list"],
    ["token"],
    ["token", "create"],
    ["token", "list"],
    ["token", "revoke"],
]


@pytest.mark.parametrize("command", HELP_COMMANDS, ids=lambda c: " ".join(c) or "agentws")
def test_help_exits_0(cli: Cli, command: list[str]) -> None:
    result = cli.run(*command, "--help", database=False)
    assert result.returncode == 0
    assert result.stderr == ""
    assert result.stdout.startswith(f"usage: {' '.join(['agentws', *command])}")
    if len(command) == 2:  # leaf commands all take the common options
        assert "--database URL" in result.stdout
        assert "--json" in result.stdout


def test_version(cli: Cli) -> None:
    result = cli.run("--version", database=False)
    assert result.returncode == 0
    assert re.fullmatch(r"agentws \d+\.\d+\.\d+\S*\n", result.stdout)


def test_the_console_script_runs_a_command(cli: Cli) -> None:
    # Every other test here runs agentws.cli.main in this process: this one runs
    # the installed `agentws` program, as a person types it.
    program = Path(sys.executable).parent / "agentws"
    for argv in (["--help"], ["workspace", "list", "--json", "--database", cli.database]):
        done = subprocess.run(
            [str(program), *argv],
            cwd=cli.cwd,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=RUN_S,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
    assert json.loads(done.stdout) == []


# --- init -------------------------------------------------------------------------------


def test_init_prints_the_admin_password_once(any_cli: Cli) -> None:
    first = any_cli.ok("init")
    assert "Admin username: admin\n" in first
    match = re.search(r"^Admin password: (\S+)$", first, re.MULTILINE)
    assert match, first
    password = match.group(1)
    assert len(password) >= 12

    second = any_cli.ok("init")
    assert "already initialised" in second
    assert password not in second
    assert "password" not in second.lower()

    again = any_cli.json("init")
    assert again["created"] is False
    assert again["admin"]["username"] == "admin"
    assert "password" not in again["admin"]


def test_init_json_gives_the_password_and_stores_only_its_hash(cli: Cli, tmp_path: Path) -> None:
    data = cli.json("init", "--admin-username", "root")
    assert data["created"] is True
    assert data["database"] == cli.database
    assert data["admin"]["username"] == "root"
    assert data["admin"]["id"].startswith("adm_")
    password = data["admin"]["password"]
    assert isinstance(password, str)
    assert len(password) >= 12

    rows = _sqlite_rows(tmp_path / "a.db")
    assert _contains(rows, password) == []
    ((admin_id, username, password_hash, _created),) = rows["admins"]
    assert (admin_id, username) == (data["admin"]["id"], "root")
    assert PasswordHasher().verify(password_hash, password)


def test_init_makes_the_data_dir_and_the_database_private(tmp_path: Path) -> None:
    # The usual umask would leave both readable by every user of the machine.
    saved = os.umask(0o022)
    try:
        cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'agentws.db'}")
        cli.ok("init", env={"AGENTWS_DATA_DIR": "state/agentws"})
    finally:
        os.umask(saved)
    assert stat.S_IMODE((tmp_path / "state" / "agentws").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "state" / "agentws" / "secret.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "agentws.db").stat().st_mode) == 0o600


# --- workspaces and groups -----------------------------------------------------------------


def test_workspace_create_and_list(any_cli: Cli) -> None:
    assert "No workspaces yet" in any_cli.ok("workspace", "list")
    assert any_cli.json("workspace", "list") == []

    acme = any_cli.json("workspace", "create", "acme", "--name", "Acme Inc")
    assert acme["slug"] == "acme"
    assert acme["name"] == "Acme Inc"
    assert acme["id"].startswith("ws_")
    assert "Created workspace 'beta'" in any_cli.ok("workspace", "create", "beta")

    listed = any_cli.json("workspace", "list")
    assert [(w["slug"], w["name"]) for w in listed] == [("acme", "Acme Inc"), ("beta", "beta")]
    assert listed[0]["id"] == acme["id"]
    text = any_cli.ok("workspace", "list")
    assert text.splitlines()[0].split() == ["SLUG", "NAME", "ID", "CREATED_AT"]
    assert acme["id"] in text


def test_group_create_and_list(any_cli: Cli) -> None:
    any_cli.ok("workspace", "create", "acme")
    assert "No groups in 'acme'" in any_cli.ok("group", "list", "acme")

    ops = any_cli.json("group", "create", "acme", "ops", "--name", "Operations")
    assert ops["id"].startswith("grp_")
    assert (ops["workspace"], ops["slug"], ops["name"]) == ("acme", "ops", "Operations")
    assert ops["url"] == f"{DEFAULT_BASE}/mcp/g/acme/ops"
    text = any_cli.ok("group", "create", "acme", "dev")
    assert f"Endpoint: {DEFAULT_BASE}/mcp/g/acme/dev" in text

    listed = any_cli.json("group", "list", "acme")
    assert [(g["id"], g["slug"], g["url"]) for g in listed] == [
        (ops["id"], "ops", ops["url"]),
        (listed[1]["id"], "dev", f"{DEFAULT_BASE}/mcp/g/acme/dev"),
    ]


def test_group_url_honours_base_url_and_bind(cli: Cli) -> None:
    cli.ok("workspace", "create", "acme")
    env = {"AGENTWS_BASE_URL": "https://agents.example.com/"}
    created = cli.json("group", "create", "acme", "ops", env=env)
    assert created["url"] == "https://agents.example.com/mcp/g/acme/ops"
    (listed,) = cli.json("group", "list", "acme", env=env)
    assert listed["url"] == "https://agents.example.com/mcp/g/acme/ops"
    token = cli.json("token", "create", "acme", "ops", "--name", "t", env=env)
    assert token["url"] == "https://agents.example.com/mcp/g/acme/ops"

    # Without a base URL the bind address stands in, with the wildcard named localhost.
    (by_bind,) = cli.json("group", "list", "acme", env={"AGENTWS_BIND": "0.0.0.0:9000"})
    assert by_bind["url"] == "http://localhost:9000/mcp/g/acme/ops"


def test_a_guessed_url_comes_with_a_note_on_how_to_set_it(cli: Cli) -> None:
    # No AGENTWS_BASE_URL and no running instance: the default, said to be a guess.
    cli.ok("workspace", "create", "acme")
    text = cli.ok("group", "create", "acme", "ops")
    assert f"Endpoint: {DEFAULT_BASE}/mcp/g/acme/ops\nNote: " in text
    assert "AGENTWS_BASE_URL" in text and "agentws serve" in text
    env = {"AGENTWS_BASE_URL": "https://agents.example.com"}
    token = cli.ok("token", "create", "acme", "ops", "--name", "t", env=env)
    assert "Note:" not in token
    # Scripts get the URL alone.
    assert "Note" not in json.dumps(cli.json("token", "create", "acme", "ops", "--name", "u"))


# --- tokens -------------------------------------------------------------------------------


def test_token_create_list_and_revoke(any_cli: Cli) -> None:
    _with_group(any_cli)
    first = any_cli.json("token", "create", "acme", "ops", "--name", "cursor-ada")
    assert first["id"].startswith("tok_")
    assert first["token"].startswith("agws_")
    assert len(first["token"]) > 40
    assert first["url"] == f"{DEFAULT_BASE}/mcp/g/acme/ops"
    assert (first["name"], first["scope"], first["status"]) == ("cursor-ada", "write", "valid")
    assert first["hint"] == first["token"][-4:]
    assert first["revoked_at"] is None

    text = any_cli.ok("token", "create", "acme", "ops", "--name", "bot", "--scope", "read")
    match = re.search(r"^Token: +(agws_\S+)$", text, re.MULTILINE)
    assert match, text
    secrets = [first["token"], match.group(1)]
    assert secrets[0] != secrets[1]

    listed = any_cli.json("token", "list", "acme", "ops")
    assert [(t["name"], t["scope"], t["status"]) for t in listed] == [
        ("cursor-ada", "write", "valid"),
        ("bot", "read", "valid"),
    ]
    assert all("token" not in t for t in listed)
    for output in (json.dumps(listed), any_cli.ok("token", "list", "acme", "ops")):
        for secret in secrets:
            assert secret not in output
            assert secret.removeprefix("agws_") not in output

    by_id = any_cli.json("token", "revoke", "acme", "ops", first["id"])
    assert (by_id["id"], by_id["status"]) == (first["id"], "revoked")
    assert by_id["revoked_at"] is not None
    assert "Revoked token 'bot'" in any_cli.ok("token", "revoke", "acme", "ops", "bot")

    listed = any_cli.json("token", "list", "acme", "ops")
    assert [(t["name"], t["status"]) for t in listed] == [
        ("cursor-ada", "revoked"),
        ("bot", "revoked"),
    ]
    assert all(t["revoked_at"] for t in listed)
    text_rows = any_cli.ok("token", "list", "acme", "ops").splitlines()[1:]
    assert len(text_rows) == 2
    assert all(" revoked " in row for row in text_rows)


def test_revoking_twice_keeps_the_first_time(cli: Cli) -> None:
    _with_group(cli)
    token = cli.json("token", "create", "acme", "ops", "--name", "t")
    first = cli.json("token", "revoke", "acme", "ops", token["id"])
    second = cli.json("token", "revoke", "acme", "ops", token["id"])
    assert second["status"] == "revoked"
    assert second["revoked_at"] == first["revoked_at"]


def test_revoke_unknown_or_ambiguous_token_fails(cli: Cli) -> None:
    _with_group(cli)
    assert "no token 'ghost' in acme/ops" in cli.fails("token", "revoke", "acme", "ops", "ghost")
    cli.ok("token", "create", "acme", "ops", "--name", "twin")
    cli.ok("token", "create", "acme", "ops", "--name", "twin")
    assert "revoke by id" in cli.fails("token", "revoke", "acme", "ops", "twin")
    assert [t["status"] for t in cli.json("token", "list", "acme", "ops")] == ["valid", "valid"]


def test_token_secret_is_stored_only_as_its_sha256(cli: Cli, tmp_path: Path) -> None:
    cli.ok("init")
    _with_group(cli)
    issued = cli.json("token", "create", "acme", "ops", "--name", "t")
    secret = issued["token"]

    rows = _sqlite_rows(tmp_path / "a.db")
    assert sum(len(r) for r in rows.values()) > 0  # the dump does see the data
    assert _contains(rows, secret) == []
    assert _contains(rows, secret.removeprefix("agws_")) == []

    with contextlib.closing(sqlite3.connect(tmp_path / "a.db")) as db:
        ((token_hash,),) = db.execute(
            "SELECT token_hash FROM mcp_tokens WHERE id = ?", (issued["id"],)
        ).fetchall()
    assert token_hash == hashlib.sha256(secret.encode()).hexdigest()
    # The dump does see what is stored: the hash turns up, in the tokens table only.
    assert _contains(rows, token_hash) == [f"mcp_tokens: {token_hash}"]


# --- errors -------------------------------------------------------------------------------


def test_malformed_database_flag_is_named(cli: Cli, tmp_path: Path) -> None:
    stderr = cli.fails("init", "--database", "mysql://x", database=False)
    assert "--database" in stderr
    assert "mysql://x" in stderr
    assert "AGENTWS_DATABASE_URL" not in stderr


def test_malformed_database_variable_is_named(cli: Cli, tmp_path: Path) -> None:
    stderr = cli.fails("init", env={"AGENTWS_DATABASE_URL": "nope"}, database=False)
    assert "AGENTWS_DATABASE_URL" in stderr
    assert "'nope'" in stderr
    assert not (tmp_path / "agentws.db").exists()  # no fallback database was created


def test_database_flag_overrides_a_malformed_variable(cli: Cli) -> None:
    assert cli.json("workspace", "list", env={"AGENTWS_DATABASE_URL": "nope"}) == []


NON_CREATING = [
    ["workspace", "list"],
    ["workspace", "create", "acme"],
    ["token", "list", "acme", "ops"],
    ["webhook", "list", "acme"],
    ["doctor"],
]


@pytest.mark.parametrize("command", NON_CREATING, ids=lambda c: "-".join(c[:2]))
def test_a_command_elsewhere_refuses_rather_than_creating_an_empty_database(
    tmp_path: Path, command: list[str]
) -> None:
    # What a new user did: `cd /tmp/x && agentws workspace list`.
    elsewhere = tmp_path / "x"
    elsewhere.mkdir()
    result = Cli(elsewhere, "").run(*command, database=False)  # default: ./agentws.db
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert str(elsewhere / "agentws.db") in result.stderr
    assert "--database" in result.stderr
    assert "AGENTWS_DATABASE_URL" in result.stderr
    assert "agentws init" in result.stderr
    assert list(elsewhere.iterdir()) == []


def test_a_missing_database_named_by_flag_or_variable_is_refused(cli: Cli, tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    for env, database in (({}, True), ({"AGENTWS_DATABASE_URL": f"sqlite:///{missing}"}, False)):
        flagged = Cli(tmp_path, f"sqlite:///{missing}")
        result = flagged.run("workspace", "list", "--json", env=env, database=database)
        assert result.returncode == 2, result.stderr
        error = json.loads(result.stderr)["error"]
        assert error["code"] == "no_database"
        assert str(missing) in error["message"]
    assert not missing.exists()


@pytest.mark.postgres
def test_a_postgres_database_without_agentws_is_refused_not_migrated(tmp_path: Path) -> None:
    with fresh_schema_sync() as url:
        cli = Cli(tmp_path, url)
        result = cli.run("workspace", "list")
        assert result.returncode == 2, result.stderr
        assert "has no agentws schema" in result.stderr
        assert "agentws init" in result.stderr
        assert trio.run(_tables, url) == []  # nothing was created
        assert "Initialised" in cli.ok("init")
        assert cli.json("workspace", "list") == []


@pytest.mark.postgres
def test_a_postgres_database_that_does_not_exist_is_named_with_exit_2(tmp_path: Path) -> None:
    server = urlsplit(postgres_base_url())._replace(path="", query="").geturl()
    cli = Cli(tmp_path, f"{server}/does_not_exist_38")
    for command in (["workspace", "list"], ["init"]):
        result = cli.run(*command)
        assert (result.returncode, result.stdout) == (2, ""), result.stderr
        assert "database 'does_not_exist_38' does not exist" in result.stderr, result.stderr
        assert "createdb does_not_exist_38" in result.stderr
    error = json.loads(cli.run("workspace", "list", "--json").stderr)["error"]
    assert error["code"] == "no_database"


async def _tables(url: str) -> list[str]:
    async with open_postgres(url, pool_size=1) as db:
        rows = await db.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
        return [r["table_name"] for r in rows]


def test_init_creates_the_database_and_then_other_commands_use_it(tmp_path: Path) -> None:
    cli = Cli(tmp_path, "")
    assert "Initialised" in cli.run("init", database=False).stdout
    assert (tmp_path / "agentws.db").is_file()
    assert cli.run("workspace", "list", database=False).returncode == 0


def test_unreachable_postgres_fails_cleanly(cli: Cli) -> None:
    url = "postgresql://postgres@127.0.0.1:1/x"
    stderr = cli.fails("workspace", "list", "--database", url, database=False)
    assert f"cannot connect to PostgreSQL at {url}" in stderr


@pytest.mark.parametrize(
    "command",
    [
        ["group", "create", "nope", "ops"],
        ["group", "list", "nope"],
        ["token", "create", "nope", "ops", "--name", "t"],
    ],
    ids=["group-create", "group-list", "token-create"],
)
def test_unknown_workspace_is_named(cli: Cli, command: list[str]) -> None:
    assert "workspace 'nope'" in cli.fails(*command)


def test_unknown_group_is_named(cli: Cli) -> None:
    cli.ok("workspace", "create", "acme")
    assert "group 'nope'" in cli.fails("token", "list", "acme", "nope")


def test_duplicates_say_they_already_exist(any_cli: Cli) -> None:
    _with_group(any_cli)
    assert "group 'ops' already exists" in any_cli.fails("group", "create", "acme", "ops")
    assert "workspace 'acme' already exists" in any_cli.fails("workspace", "create", "acme")
    # The same group slug in another workspace is fine.
    any_cli.ok("workspace", "create", "beta")
    any_cli.ok("group", "create", "beta", "ops")


def test_bad_slugs_are_refused(cli: Cli) -> None:
    for slug in ["Acme", "a_b", "a.b", "a" * 64, "ünï"]:
        assert f"invalid workspace slug {slug!r}" in cli.fails("workspace", "create", slug)
    assert cli.json("workspace", "list") == []
    # The longest slug allowed is still fine.
    assert cli.json("workspace", "create", "a" * 63)["slug"] == "a" * 63


def test_bad_group_slug_is_refused(cli: Cli) -> None:
    cli.ok("workspace", "create", "acme")
    assert "invalid group slug" in cli.fails("group", "create", "acme", "Ops!")


@pytest.mark.parametrize(
    ("command", "missing"),
    [
        ([], "COMMAND"),
        (["workspace"], "ACTION"),
        (["workspace", "create"], "SLUG"),
        (["token", "create", "acme", "ops"], "--name"),
        (["token", "revoke", "acme", "ops"], "TOKEN"),
    ],
    ids=["command", "action", "slug", "token-name", "token-ref"],
)
def test_missing_arguments_exit_2(cli: Cli, command: list[str], missing: str) -> None:
    result = cli.run(*command, database=False)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "usage: agentws" in result.stderr
    assert "required" in result.stderr
    assert missing in result.stderr.splitlines()[-1]


@pytest.mark.parametrize(
    "command", [["workspace", "list"], ["serve", "--bind", "127.0.0.1:0"]], ids=["list", "serve"]
)
def test_bad_setting_variable_is_named(cli: Cli, command: list[str]) -> None:
    stderr = cli.fails(*command, env={"AGENTWS_SHUTDOWN_GRACE_S": "abc"})
    assert "AGENTWS_SHUTDOWN_GRACE_S" in stderr
    assert "'abc'" in stderr


def test_bad_bind_flag_is_named(cli: Cli) -> None:
    assert "--bind: " in cli.fails("serve", "--bind", "nope")


@pytest.mark.parametrize(
    "command", [["workspace", "list", "--database", ""], ["serve", "--bind", " "]]
)
def test_empty_flags_are_refused(cli: Cli, command: list[str]) -> None:
    flag = command[-2]
    assert f"{flag}: must not be empty" in cli.fails(*command, database=False)


def test_json_errors_are_json_objects_on_stderr(cli: Cli) -> None:
    _with_group(cli)
    cases = [
        (["group", "list", "nope"], "not_found", "'nope'"),
        (["group", "create", "acme", "ops"], "conflict", "already exists"),
        (["workspace", "create", "Bad"], "invalid", "invalid workspace slug"),
    ]
    for command, code, text in cases:
        error = cli.fails_json(*command)
        assert error["code"] == code
        assert text in error["message"]

    config = cli.fails_json("workspace", "list", env={"AGENTWS_SHUTDOWN_GRACE_S": "abc"})
    assert config["code"] == "config_error"
    assert "AGENTWS_SHUTDOWN_GRACE_S" in config["message"]

    result = cli.run(
        "workspace",
        "list",
        "--json",
        "--database",
        "postgresql://postgres@127.0.0.1:1/x",
        database=False,
    )
    assert result.returncode == 1
    assert json.loads(result.stderr)["error"]["code"] == "store_unavailable"
