"""The sign-in throttle's schedule, as docs/admin.md states it.

After 5 failed attempts within 15 minutes a key is refused for 30 s, then
twice as long after each further failure, at most 15 minutes.
"""

from __future__ import annotations

from agentws.admins.access import LoginThrottle

KEYS = ["user:alice", "ip:127.0.0.1"]


def test_the_fifth_failure_locks_and_each_further_one_doubles_the_wait() -> None:
    throttle = LoginThrottle()
    now = 1000.0
    for _ in range(4):
        throttle.failed(KEYS, now)
        assert throttle.retry_after(KEYS, now) <= 0
    throttle.failed(KEYS, now)  # the fifth
    assert throttle.retry_after(KEYS, now) == 30.0
    waits = []
    for _ in range(7):
        now += throttle.retry_after(KEYS, now)  # waits its turn, fails again
        throttle.failed(KEYS, now)
        waits.append(throttle.retry_after(KEYS, now))
    assert waits == [60.0, 120.0, 240.0, 480.0, 900.0, 900.0, 900.0]


def test_failures_are_forgotten_after_the_window_and_on_success() -> None:
    throttle = LoginThrottle()
    for _ in range(4):
        throttle.failed(KEYS, 0.0)
    throttle.failed(KEYS, 901.0)  # the earlier four are older than 15 minutes
    assert throttle.retry_after(KEYS, 901.0) <= 0
    for _ in range(4):
        throttle.failed(["user:bob"], 0.0)
    throttle.succeeded(["user:bob"])
    throttle.failed(["user:bob"], 0.0)
    assert throttle.retry_after(["user:bob"], 0.0) <= 0
