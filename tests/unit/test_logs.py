"""Log lines: JSON or text, with the ids of the work in hand, and nothing of the last request."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import trio

from agentws.core.errors import ConfigError
from agentws.core.logs import add_log_context, configure_logging, log_context
from agentws.settings.config import Settings


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield None
    root.handlers[:] = handlers
    root.setLevel(level)


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


async def test_json_lines_carry_the_context_of_their_task(restore_logging: object) -> None:
    stream = io.StringIO()
    configure_logging("INFO", log_format="json", stream=stream)
    log = logging.getLogger("agentws.test")

    async def session_task() -> None:
        add_log_context(session="s1")
        log.info("in the session")

    with log_context(request_id="r1", workspace="acme"):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session_task)
        log.info("in the request")
        with log_context(request_id="r2"):
            log.info("next request")  # a new request starts afresh
    log.info("outside")
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("failed")

    session, request, following, outside, failed = _lines(stream)
    assert session["message"] == "in the session"
    assert (session["request_id"], session["workspace"], session["session"]) == ("r1", "acme", "s1")
    assert "session" not in request  # the child's addition stayed in the child
    assert (request["request_id"], request["level"], request["logger"]) == (
        "r1",
        "INFO",
        "agentws.test",
    )
    assert following["request_id"] == "r2" and "workspace" not in following
    assert "request_id" not in outside
    assert "ValueError: boom" in str(failed["exc"])


def test_text_lines_for_a_terminal_name_the_ids(restore_logging: object) -> None:
    stream = io.StringIO()
    configure_logging("DEBUG", log_format="text", stream=stream)
    with log_context(request_id="r1", event="evt_1"):
        logging.getLogger("agentws.test").debug("hello %s", "world")
    (line,) = stream.getvalue().splitlines()
    assert line.endswith("DEBUG agentws.test: hello world [request_id=r1 event=evt_1]")
    # HTTP clients' request lines name full URLs (some are credentials): never below WARNING.
    assert logging.getLogger("httpx2").getEffectiveLevel() == logging.WARNING


def test_the_log_format_setting_is_checked() -> None:
    assert Settings.from_env({"AGENTWS_LOG_FORMAT": "JSON"}).log_format == "json"
    assert Settings.from_env({}).log_format == "auto"
    with pytest.raises(ConfigError, match="AGENTWS_LOG_FORMAT"):
        Settings.from_env({"AGENTWS_LOG_FORMAT": "xml"})
