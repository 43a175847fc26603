"""Hypercorn's answer headers are made once a second, not for every answer."""

from __future__ import annotations

from hypercorn.config import Config

from agentws.bridges.answer_headers import answer_headers


def test_a_second_s_answers_share_its_headers_and_the_next_second_makes_new_ones() -> None:
    config = Config()
    now = [1_796_000_000.2]
    first = answer_headers(config, lambda: now[0])
    assert [name for name, _ in first] == [name for name, _ in config.response_headers("h11")]
    assert (b"server", b"hypercorn-h11") in first

    now[0] += 0.7  # the same second
    assert answer_headers(config, lambda: now[0]) is first
    now[0] += 0.2  # the next one
    assert answer_headers(config, lambda: now[0]) is not first


def test_each_configuration_has_its_own_headers() -> None:
    quiet = Config()
    quiet.include_server_header = False
    now = 1_796_000_000.0
    assert (b"server", b"hypercorn-h11") in answer_headers(Config(), lambda: now)
    assert all(name != b"server" for name, _ in answer_headers(quiet, lambda: now))
