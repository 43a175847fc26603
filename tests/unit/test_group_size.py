"""group_size: how much of what waits one group commit takes."""

from __future__ import annotations

from agentws.store.database import group_size


def test_a_group_takes_a_part_of_what_waits_and_grows_with_the_queue() -> None:
    # A few: all at once (a commit's flush is shared well enough by eight).
    assert [group_size(n) for n in (1, 5, 8)] == [1, 5, 8]
    # A burst of 32 senders' deliveries: committed and answered in four steps.
    assert group_size(32) == 8
    # A queue that keeps growing: the groups grow with it.
    assert group_size(400) == 100
    assert group_size(10_000) == 256
