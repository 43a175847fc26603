"""Stand-ins for areas of the store that a unit test's fake does not serve.

A fake implements the protocols its subject declares (its areas of
:mod:`agentws.store`) by subclassing these and overriding what the test
exercises; anything else it is asked fails the test, naming the call.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any, TypeVar

import trio

from agentws.domain.models import (
    Approval,
    ApprovalOutcomes,
    ApprovalStatus,
    CachedTool,
    ConfirmToken,
    Connector,
    ContextDocument,
    DocumentHit,
    Group,
    Library,
    McpToken,
    Skill,
    ToolPermission,
    Workspace,
)
from agentws.domain.rollups import Bucket, RollupMark
from agentws.store.sql_approval_decisions import ApprovalDecisionStore
from agentws.store.sql_approval_runs import ApprovalRunStore
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_changes import ChangeStore
from agentws.store.sql_records import R, RecordStore
from agentws.store.sql_rollup_sources import RollupSourceStore
from agentws.store.sql_rollups import RollupStore
from agentws.store.sql_tokens import TokenStore
from agentws.store.tables import Dialect

T = TypeVar("T")


def _unused(name: str) -> AssertionError:
    return AssertionError(f"the fake store was asked {name}(), which this test does not serve")


class UnusedRecords(RecordStore):
    """RecordStore whose every query fails the test."""

    @property
    def dialect(self) -> Dialect:
        raise _unused("dialect")

    async def insert(self, record: R) -> R:
        raise _unused("insert")

    async def insert_many(self, records: list[Any]) -> None:
        raise _unused("insert_many")

    async def get(self, kind: type[R], record_id: str, /) -> R:
        raise _unused("get")

    async def find(self, kind: type[R], /, **where: Any) -> R | None:
        raise _unused("find")

    async def select(
        self, kind: type[R], /, *, limit: int | None = None, offset: int = 0, **where: Any
    ) -> list[R]:
        raise _unused("select")

    async def count(self, kind: type[Any], /, **where: Any) -> int:
        raise _unused("count")

    async def update(self, record: R) -> R:
        raise _unused("update")

    async def delete(self, kind: type[Any], record_id: str, /) -> None:
        raise _unused("delete")

    async def workspace_by_slug(self, slug: str) -> Workspace:
        raise _unused("workspace_by_slug")

    async def group_by_slug(self, workspace_slug: str, group_slug: str) -> Group:
        raise _unused("group_by_slug")


class UnusedChanges(ChangeStore):
    """ChangeStore whose every query fails the test."""

    def data_version(self) -> int | None:
        raise _unused("data_version")

    @property
    def notifies(self) -> bool:
        raise _unused("notifies")

    async def listen_for_changes(
        self,
        on_change: Callable[[str], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        raise _unused("listen_for_changes")


class UnusedTokens(TokenStore):
    """TokenStore whose every query fails the test."""

    async def token_by_hash(self, token_hash: str) -> McpToken | None:
        raise _unused("token_by_hash")

    async def revoke_token(self, token_id: str) -> McpToken:
        raise _unused("revoke_token")

    async def live_token_ids(self, token_ids: Collection[str]) -> set[str]:
        raise _unused("live_token_ids")

    async def touch_token(self, token_id: str) -> None:
        raise _unused("touch_token")


class UnusedApprovalDecisions(ApprovalDecisionStore):
    """ApprovalDecisionStore whose every query fails the test."""

    async def decide_approval(
        self,
        approval_id: str,
        *,
        status: ApprovalStatus,
        decided_by: str,
        reason: str | None,
        now: datetime,
    ) -> Approval | None:
        raise _unused("decide_approval")

    async def finish_approval(
        self,
        approval_id: str,
        *,
        owner: str,
        status: ApprovalStatus,
        result: dict[str, Any] | None,
        error: str | None,
        now: datetime,
    ) -> Approval | None:
        raise _unused("finish_approval")

    async def approvals(self, ids: list[str]) -> list[Approval]:
        raise _unused("approvals")

    async def approval_outcomes(self, ids: list[str], *, now: datetime) -> ApprovalOutcomes:
        raise _unused("approval_outcomes")

    async def expire_approvals(self, now: datetime) -> list[Approval]:
        raise _unused("expire_approvals")

    async def unreported_approvals(self, *, limit: int) -> list[Approval]:
        raise _unused("unreported_approvals")

    async def take_approval_report(self, approval_id: str, now: datetime) -> bool:
        raise _unused("take_approval_report")

    async def release_approval_report(self, approval_id: str) -> None:
        raise _unused("release_approval_report")


class UnusedApprovalRuns(ApprovalRunStore):
    """ApprovalRunStore whose every query fails the test."""

    async def claim_approvals(
        self, *, owner: str, lease_expires_at: datetime, limit: int
    ) -> list[Approval]:
        raise _unused("claim_approvals")

    async def renew_approval_lease(
        self, approval_id: str, *, owner: str, lease_expires_at: datetime
    ) -> bool:
        raise _unused("renew_approval_lease")

    async def lapse_approval_leases(self, *, now: datetime, error: str) -> list[Approval]:
        raise _unused("lapse_approval_leases")

    async def retry_approval(self, approval_id: str) -> Approval | None:
        raise _unused("retry_approval")

    async def issue_confirm_token(self, token: ConfirmToken, *, keep: int) -> None:
        raise _unused("issue_confirm_token")

    async def take_confirm_token(self, token_hash: str, token_id: str) -> ConfirmToken | None:
        raise _unused("take_confirm_token")


class UnusedCatalog(CatalogStore):
    """CatalogStore whose every query fails the test."""

    async def mark_tools_fetched(self, connector_id: str, fetched_at: datetime) -> None:
        raise _unused("mark_tools_fetched")

    async def tool_permissions(self, workspace_id: str, group_id: str) -> list[ToolPermission]:
        raise _unused("tool_permissions")

    async def group_libraries(self, group_id: str) -> list[Library]:
        raise _unused("group_libraries")

    async def group_documents(self, group_id: str) -> list[ContextDocument]:
        raise _unused("group_documents")

    async def group_document(self, group_id: str, document_id: str) -> ContextDocument | None:
        raise _unused("group_document")

    async def group_skills(self, group_id: str) -> list[Skill]:
        raise _unused("group_skills")

    async def catalog_version(self) -> int:
        raise _unused("catalog_version")

    async def group_tools(self, group_id: str) -> list[tuple[Connector, CachedTool]]:
        raise _unused("group_tools")

    async def search_documents(
        self,
        group_id: str,
        query: str,
        *,
        limit: int,
        libraries: Sequence[Library] | None = None,
    ) -> list[DocumentHit]:
        raise _unused("search_documents")

    async def search_documents_shaped(
        self,
        shape: Callable[[list[DocumentHit]], T],
        group_id: str,
        query: str,
        *,
        limit: int,
        libraries: Sequence[Library] | None = None,
    ) -> T:
        raise _unused("search_documents_shaped")


class UnusedRollupSources(RollupSourceStore):
    """RollupSourceStore whose every query fails the test."""

    async def source_buckets(
        self, start_minute: int, end_minute: int, *, workspace_id: str | None = None
    ) -> list[Bucket]:
        raise _unused("source_buckets")

    async def refusal_buckets(
        self,
        *,
        after_id: int,
        workspace_id: str | None = None,
        received_before: datetime | None = None,
    ) -> tuple[list[Bucket], int]:
        raise _unused("refusal_buckets")

    async def oldest_rollup_source(self) -> datetime | None:
        raise _unused("oldest_rollup_source")

    async def approval_buckets(
        self, now: datetime, *, workspace_id: str | None = None
    ) -> list[Bucket]:
        raise _unused("approval_buckets")


class UnusedRollups(RollupStore):
    """RollupStore whose every query fails the test."""

    async def rollup_mark(self) -> RollupMark | None:
        raise _unused("rollup_mark")

    async def roll_up(
        self,
        counted: Sequence[Bucket],
        added: Sequence[Bucket],
        *,
        mark: RollupMark | None,
        to: RollupMark,
    ) -> bool:
        raise _unused("roll_up")

    async def save_samples(self, buckets: Sequence[Bucket]) -> None:
        raise _unused("save_samples")

    async def rollup_steps(
        self,
        workspace_id: str,
        *,
        span_m: int,
        start_minute: int,
        end_minute: int,
        origin_minute: int,
        step_m: int,
    ) -> list[tuple[int, str, str, float]]:
        raise _unused("rollup_steps")

    async def session_samples(
        self, workspace_id: str, *, start_minute: int, end_minute: int
    ) -> list[Bucket]:
        raise _unused("session_samples")

    async def restart_rollups(self) -> None:
        raise _unused("restart_rollups")

    async def forget_rollups(self, before_minute: int) -> int:
        raise _unused("forget_rollups")
