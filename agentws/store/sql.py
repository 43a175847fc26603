"""SqlStore: the :class:`~agentws.store.union.Store` on either SQL driver.

SQL is written once, in the ``sql_<area>`` modules; the driver
(:mod:`~agentws.store.sqlite`, :mod:`~agentws.store.postgres`) supplies
connections, the dialect and error conversion. Each area module declares its
area's protocol beside the queries that implement it, and mixes the queries
in here: records by type (:mod:`.sql_records`), MCP tokens
(:mod:`.sql_tokens`), the change feed (:mod:`.sql_changes`), the door's
writes of events and samples (:mod:`.sql_ingest`), the event queue
(:mod:`.sql_events`), chat channels (:mod:`.sql_chat`), event lists and
their search index (:mod:`.sql_event_search`), failure streaks and their
notices (:mod:`.sql_streaks`), bulk replays (:mod:`.sql_replays`), rotations'
progress (:mod:`.sql_rotation`), approval lists and queueing
(:mod:`.sql_approvals`), decisions and reports
(:mod:`.sql_approval_decisions`), runs under a lease
(:mod:`.sql_approval_runs`), rate limits (:mod:`.sql_rate_limits`), OAuth
grants and refresh tokens (:mod:`.sql_oauth`), a group's catalog and search
(:mod:`.sql_catalog`), heartbeats and probes (:mod:`.sql_health`), the
webhooks' delivery log (:mod:`.sql_deliveries`), the overview's figures:
counted at their source (:mod:`.sql_rollup_sources`) and rolled up by the
minute (:mod:`.sql_rollups`), the connectors' health
(:mod:`.sql_connector_health`), the audit log (:mod:`.sql_audit`), and
deleting an admin but the last (:mod:`.sql_admins`).

A method with many keywords has them declared once, as a ``TypedDict`` beside
its area's protocol (``**ending: Unpack[EventEnding]``), which the protocol
and the queries both take: the two cannot drift apart.
"""

from __future__ import annotations

from agentws.store.database import Database
from agentws.store.sql_admins import AdminQueries
from agentws.store.sql_approval_decisions import ApprovalDecisionQueries
from agentws.store.sql_approval_runs import ApprovalRunQueries
from agentws.store.sql_approvals import ApprovalQueries
from agentws.store.sql_audit import AuditQueries
from agentws.store.sql_catalog import CatalogQueries
from agentws.store.sql_changes import ChangeQueries
from agentws.store.sql_chat import ChatQueries
from agentws.store.sql_connector_grants import GrantQueries
from agentws.store.sql_connector_health import ConnectorHealthQueries
from agentws.store.sql_deliveries import DeliveryLogQueries
from agentws.store.sql_event_search import EventSearchQueries
from agentws.store.sql_events import EventQueries
from agentws.store.sql_health import HealthQueries
from agentws.store.sql_ingest import IngestQueries
from agentws.store.sql_oauth import OAuthQueries
from agentws.store.sql_rate_limits import RateLimitQueries
from agentws.store.sql_replays import ReplayQueries
from agentws.store.sql_rollup_sources import RollupSourceQueries
from agentws.store.sql_rollups import RollupQueries
from agentws.store.sql_rotation import RotationQueries
from agentws.store.sql_streaks import StreakQueries
from agentws.store.sql_tokens import TokenQueries

__all__ = ["SqlStore"]


class SqlStore(
    GrantQueries,
    TokenQueries,
    ChangeQueries,
    IngestQueries,
    EventQueries,
    ChatQueries,
    RotationQueries,
    StreakQueries,
    ReplayQueries,
    EventSearchQueries,
    ApprovalQueries,
    ApprovalDecisionQueries,
    ApprovalRunQueries,
    RateLimitQueries,
    OAuthQueries,
    CatalogQueries,
    HealthQueries,
    DeliveryLogQueries,
    RollupSourceQueries,
    RollupQueries,
    ConnectorHealthQueries,
    AuditQueries,
    AdminQueries,
):
    """The store over a :class:`~agentws.store.database.Database`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @property
    def database(self) -> Database:
        return self._db
