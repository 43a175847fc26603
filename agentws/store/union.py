"""The :class:`Store`: every area of storage in one protocol.

Only what hands the store on holds it: the service, the app, the CLI's
context, the admin doors' context (``AdminServices``), and the store's
implementations. A service or a door declares the
areas it uses (:class:`~agentws.store.sql_events.EventStore`,
:class:`~agentws.store.sql_approvals.ApprovalStore`, …), each declared in the
``sql_<area>`` module beside the queries that implement it; the import-linter
contract ``store-union`` keeps the service packages from importing this one.

Records are the frozen attrs classes of :mod:`agentws.domain.models`. What a
group exposes (:class:`~agentws.store.sql_catalog.CatalogStore`) is decided
in one place: libraries and connectors reach a group only by being attached
to it (and belonging to its workspace), documents whose policy is ``never``
are not there at all, and connectors that are not active offer no tools.

Every implementation passes ``tests/contract``; both stores raise only
:mod:`agentws.core.errors`: :class:`~agentws.core.errors.NotFoundError` for a missing
record, :class:`~agentws.core.errors.ConflictError` for a broken uniqueness rule,
:class:`~agentws.core.errors.StoreUnavailableError` when the database cannot be
reached.
"""

from __future__ import annotations

from typing import Protocol

from agentws.store.sql_admins import AdminStore
from agentws.store.sql_approval_decisions import ApprovalDecisionStore
from agentws.store.sql_approval_runs import ApprovalRunStore
from agentws.store.sql_approvals import ApprovalStore
from agentws.store.sql_audit import AuditStore
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_changes import ChangeStore
from agentws.store.sql_chat import ChatStore
from agentws.store.sql_connector_grants import GrantStore
from agentws.store.sql_connector_health import ConnectorHealthStore
from agentws.store.sql_deliveries import DeliveryLogStore
from agentws.store.sql_event_search import EventSearchStore
from agentws.store.sql_events import EventStore
from agentws.store.sql_health import HealthStore
from agentws.store.sql_ingest import IngestStore
from agentws.store.sql_oauth import OAuthStore
from agentws.store.sql_rate_limits import RateLimitStore
from agentws.store.sql_records import RecordStore
from agentws.store.sql_replays import ReplayStore
from agentws.store.sql_rollup_sources import RollupSourceStore
from agentws.store.sql_rollups import RollupStore
from agentws.store.sql_rotation import RotationStore
from agentws.store.sql_streaks import StreakStore
from agentws.store.sql_tokens import TokenStore

__all__ = ["Store"]


class Store(
    RecordStore,
    GrantStore,
    TokenStore,
    ChangeStore,
    HealthStore,
    IngestStore,
    EventStore,
    ChatStore,
    RotationStore,
    StreakStore,
    ReplayStore,
    EventSearchStore,
    ApprovalStore,
    ApprovalDecisionStore,
    ApprovalRunStore,
    RateLimitStore,
    OAuthStore,
    CatalogStore,
    DeliveryLogStore,
    RollupSourceStore,
    RollupStore,
    ConnectorHealthStore,
    AuditStore,
    AdminStore,
    Protocol,
):
    """Durable storage for every record agentws keeps: all its areas."""
