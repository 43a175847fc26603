"""The README's commands, run in its order against a database of their own.

A new user types them one after the other, after ``agentws init`` (which
``scripts/serve`` runs first): every one must work as written. They run in
one interpreter (``agentws.cli.main`` for each, as ``agentws ARGS`` would
run it), in a directory holding the files they name. The README's remote
MCP server (``https://mcp.example.com/mcp``) is a loopback one with a
``search`` tool; the hosts of its other connectors are allow-listed, so
saving them asks no DNS. Left out: the commands :data:`LEFT_OUT` names.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import trio

from tests.e2e.remote_support import ThirdParty, third_party_server, tool
from tests.support import clean_env

README = Path(__file__).resolve().parents[2] / "README.md"
REMOTE = "https://mcp.example.com/mcp"
#: Commands not run, by what they contain: why each cannot run here.
LEFT_OUT = {
    "--follow": "it waits for new lines until interrupted",
    "…": "it names an id the README cannot know (apr_…, smp_…, evt_…)",
    "agentws doctor": "it reaches the model's API and Slack on the internet",
}
#: The files the commands read, as a user would have written them.
FILES = {
    "refunds.md": "# Refunds\n\nWithin 30 days of purchase.\n",
    "skills/triage/SKILL.md": "---\nname: triage\ndescription: Triage a ticket\n---\nTriage it.\n",
    **{f"{name}.md": f"Say what the {name} event is about.\n" for name in ("ci", "stripe")},
    **{f"{name}.md": f"Say what the {name} event is about.\n" for name in ("deploys", "shop")},
}
ENV = {
    "SLACK_BOT_TOKEN": "xoxb-readme",
    "SECRET": "whsec_readme",
}
# One interpreter start costs more than a command.
RUN_S = 120.0

# Runs each command as ``agentws ARGS`` would, with its own variables and stdin:
# a JSON list on stdin, one JSON line per command on stdout ([status, stdout, stderr]).
_BATCH = """
import io, json, os, sys
from agentws.cli import main

def text():
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8")

for command in json.load(sys.stdin):
    real = sys.stdin, sys.stdout, sys.stderr
    saved = dict(os.environ)
    os.environ.update(command["env"])
    sys.stdin = io.StringIO(command["stdin"])
    sys.stdout, sys.stderr = out, err = text(), text()
    try:
        status = main(command["argv"])
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    finally:
        sys.stdin, sys.stdout, sys.stderr = real
        os.environ.clear()
        os.environ.update(saved)
    out.flush()
    err.flush()
    print(json.dumps([status, out.buffer.getvalue().decode(), err.buffer.getvalue().decode()]))
"""


def readme_commands() -> list[str]:
    """The ``agentws`` command lines of the README's shell blocks, continuations joined."""
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(), re.DOTALL):
        lines += [line for line in block.replace("\\\n", " ").splitlines() if "agentws " in line]
    return [line.strip() for line in lines if not line.lstrip().startswith(("#", "hypercorn"))]


def as_run(line: str, remote: str) -> dict[str, Any]:
    """A command line as the batch runs it: argv, its variables, its stdin."""
    words = shlex.split(line.replace(REMOTE, remote), comments=True)
    stdin, env = "", {}
    if "|" in words:  # printf %s "$VAR" | agentws ...
        at = words.index("|")
        assert words[:2] == ["printf", "%s"] and at == 3, line
        stdin, words = ENV[words[2].removeprefix("$")], words[at + 1 :]
    while re.fullmatch(r"[A-Z_]+=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words[0] == "agentws", line
    if "--secret-stdin" in words and not stdin:
        stdin = "a-token-typed-at-the-prompt\n"
    return {"argv": words[1:], "env": env, "stdin": stdin}


async def test_the_readmes_commands_work_in_its_order(tmp_path: Path) -> None:
    lines = readme_commands()
    run = [line for line in lines if not any(part in line for part in LEFT_OUT)]
    assert len(run) > 30, lines  # the README's commands were found
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    env = clean_env(
        AGENTWS_DATABASE_URL=f"sqlite:///{tmp_path / 'agentws.db'}",
        AGENTWS_DATA_DIR=str(tmp_path),
        AGENTWS_CONNECTOR_ALLOWLIST="127.0.0.1/32,api.github.com,slack.com",
        **ENV,
    )
    state = ThirdParty([tool("search", "Search the documentation")])
    async with third_party_server(state) as remote:
        commands = [{"argv": ["init"], "env": {}, "stdin": ""}]
        commands += [as_run(line, remote) for line in run]
        with trio.fail_after(RUN_S):
            result = await trio.run_process(
                [sys.executable, "-c", _BATCH],
                cwd=tmp_path,
                env=env,
                stdin=json.dumps(commands).encode(),
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    assert result.returncode == 0, result.stderr.decode()
    answers = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert len(answers) == len(commands)
    failed = [
        f"$ {line}\n  exit {status}: {err.strip()}"
        for line, (status, _, err) in zip(["agentws init", *run], answers, strict=True)
        if status != 0
    ]
    assert not failed, "\n".join(failed)
    assert state.authorizations  # the remote was really reached (connector add, test, refresh)
