"""The Service: owner of the root nursery and of every long-lived task.

Doors (HTTP blueprints, the CLI) never start background work themselves;
they hand it to the service, whose nursery owns it. The nursery is opened by
:meth:`Service.serve` and ends on :meth:`Service.stop`: running work gets the
shutdown grace period, then whatever is left is cancelled. Nothing the
service started outlives ``serve``.
"""

from __future__ import annotations

import contextlib

import attrs
import trio

from agentws.agent.choose import open_model
from agentws.agent.model import ModelClient
from agentws.agent.runner import AgentRunner
from agentws.approvals.channel_reports import ChannelReports
from agentws.approvals.notifier import ApprovalWatch
from agentws.approvals.runs import ApprovalRuns
from agentws.audit import AuditWriter
from agentws.changes import ChangeFeed
from agentws.chat.router import SinkRouter
from agentws.config import Settings
from agentws.connectors.links import RemoteLinks
from agentws.errors import StoreError
from agentws.instances import InstanceRegistry
from agentws.mcp.auth import Authenticator
from agentws.mcp.forward import SessionForwarder, open_hop_client
from agentws.mcp.handlers import build_server
from agentws.mcp.rendered import RenderedResults
from agentws.mcp.sessions import SessionSupervisor
from agentws.secret_box import SecretBox, key_problem
from agentws.store import Store, open_store
from agentws.tools.catalog import Catalog
from agentws.tools.execution import ToolRunner
from agentws.tools.gate import ToolGate
from agentws.webhooks.batcher import IngestBatcher
from agentws.webhooks.ingest import Intake
from agentws.webhooks.processing import EventProcessor
from agentws.webhooks.worker import EventWorker

__all__ = ["Readiness", "Service", "run_service"]


@attrs.frozen
class Readiness:
    ready: bool
    #: What is not ready, for operators; never a secret.
    detail: str = ""


@attrs.define(eq=False)
class Service:
    """The running service: settings, store, and the nursery of its tasks."""

    settings: Settings
    store: Store
    #: The agent's model; None: the offline model.
    model: ModelClient | None = None
    _stopping: trio.Event = attrs.field(factory=trio.Event, init=False)
    _draining: bool = attrs.field(default=False, init=False)
    _stopped: trio.Event = attrs.field(factory=trio.Event, init=False)
    _nursery: trio.Nursery | None = attrs.field(default=None, init=False)
    _sessions: SessionSupervisor | None = attrs.field(default=None, init=False)
    _watch: ApprovalWatch | None = attrs.field(default=None, init=False)
    _reports: ChannelReports | None = attrs.field(default=None, init=False)
    _runs: ApprovalRuns | None = attrs.field(default=None, init=False)
    _worker: EventWorker | None = attrs.field(default=None, init=False)
    _intake: Intake | None = attrs.field(default=None, init=False)
    _batcher: IngestBatcher | None = attrs.field(default=None, init=False)
    links: RemoteLinks = attrs.field(init=False)
    authenticator: Authenticator = attrs.field(init=False)
    #: Changes announced by the store (revocations, decisions, catalog) from any process.
    changes: ChangeFeed = attrs.field(init=False)
    #: This instance's heartbeat, and where the others are.
    registry: InstanceRegistry = attrs.field(init=False)
    #: Relays requests for other instances' MCP sessions.
    forwarder: SessionForwarder = attrs.field(init=False)
    audit: AuditWriter = attrs.field(init=False)
    #: Runs the group's tools (for the permission gate, and for approved calls).
    runner: ToolRunner = attrs.field(init=False)
    _stop_deadline: float = attrs.field(default=float("inf"), init=False)

    async def serve(
        self, *, task_status: trio.TaskStatus[Service] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the service's tasks until :meth:`stop`; never returns before then.

        Resource handling:
            Opens the root nursery, which owns the change feed (its listening
            connection), the instance heartbeat, the MCP session supervisor,
            the approval watch (outcomes to sessions, expiry), the runs of
            approved calls (decided anywhere, run here once), the links
            to remote MCP connectors (which keep their tool caches current),
            the webhook ingest batcher (group commit) and the event worker
            pool (agent runs).
            After :meth:`stop`, its tasks have ``shutdown_grace_s`` to finish
            before they are cancelled. The audit writer runs around that
            nursery and is closed after it: what the others audited on their
            way out is written too.
        """
        self.audit = AuditWriter(self.store)
        try:
            async with trio.open_nursery() as outer:
                await outer.start(self.audit.serve)
                try:
                    await self._serve_tasks(task_status)
                finally:
                    self.audit.close()
        finally:
            self._stopped.set()

    async def _serve_tasks(self, task_status: trio.TaskStatus[Service]) -> None:
        try:
            async with (
                (
                    contextlib.nullcontext(self.model) if self.model else open_model(self.settings)
                ) as model,
                open_hop_client() as hop_client,
                trio.open_nursery() as nursery,
            ):
                self._nursery = nursery
                self.changes = ChangeFeed(self.store)
                await nursery.start(self.changes.serve)
                self.registry = InstanceRegistry(self.store, self.settings.instance_id)
                await nursery.start(self.registry.serve)
                if self.settings.internal_url or self.settings.bind_port:
                    port = self.settings.bind_port
                    self.registry.announce(
                        self.settings.internal_url_for(port), self.settings.public_url_for(port)
                    )
                self.forwarder = SessionForwarder(
                    self.registry, hop_client, self.settings.sse_stall_s
                )
                self.authenticator = Authenticator(self.store)
                self.links = RemoteLinks(self.store, self.settings)
                self.runner = ToolRunner(self.store, self.settings, self.links.call_tool)
                gate = ToolGate(self.store, self.settings, self.runner, self.audit)
                rendered = RenderedResults()
                catalog = Catalog(self.store, self.changes)
                server = build_server(self.store, self.settings, gate, catalog, rendered)
                supervisor = SessionSupervisor(
                    self.settings,
                    self.store,
                    server,
                    server.create_initialization_options(),
                    self.changes,
                    rendered=rendered,
                )
                self._sessions = await nursery.start(supervisor.serve)
                self._watch = ApprovalWatch(self.store, supervisor, self.changes)
                await nursery.start(self._watch.serve)
                self._runs = ApprovalRuns(
                    self.store,
                    self.runner,
                    SecretBox.optional(self.settings),
                    self.changes,
                    self.settings.instance_id,
                )
                await nursery.start(self._runs.serve)
                await nursery.start(self.links.serve)
                agent = AgentRunner(catalog, gate, model, base_url=self.settings.public_base_url)
                sinks = SinkRouter(self.store, self.settings)
                processor = EventProcessor(self.store, agent, sinks)
                self._reports = ChannelReports(self.store, sinks)
                await nursery.start(self._reports.serve)
                self._worker = EventWorker(self.store, self.settings, processor)
                await nursery.start(self._worker.serve)
                self._batcher = IngestBatcher(self.store, on_stored=self._worker.notify)
                self._worker.door_busy = self._batcher.busy
                await nursery.start(self._batcher.serve)
                self._intake = Intake(self.store, self.settings, self._batcher)
                task_status.started(self)
                await self._stopping.wait()
                nursery.cancel_scope.deadline = self._stop_deadline
        finally:
            self._nursery = None

    @property
    def nursery(self) -> trio.Nursery:
        """The root nursery, for components that start their own long-lived tasks."""
        if self._nursery is None:
            raise RuntimeError("the service is not running")
        return self._nursery

    @property
    def intake(self) -> Intake:
        """What the webhook door hands deliveries to."""
        if self._intake is None:
            raise RuntimeError("the service is not running")
        return self._intake

    @property
    def worker(self) -> EventWorker:
        """The pool running webhook events."""
        if self._worker is None:
            raise RuntimeError("the service is not running")
        return self._worker

    @property
    def approval_runs(self) -> ApprovalRuns:
        """Runs approved calls (decided anywhere) in this instance."""
        if self._runs is None:
            raise RuntimeError("the service is not running")
        return self._runs

    @property
    def sessions(self) -> SessionSupervisor:
        """The supervisor of this process's MCP sessions."""
        if self._sessions is None:
            raise RuntimeError("the service is not running")
        return self._sessions

    def request_stop(self) -> None:
        """Begin shutdown: running tasks have ``shutdown_grace_s`` from now to finish.

        MCP sessions are closed at once, so their streams end cleanly and
        the server's drain is not held up by them. Idempotent; the first
        call sets the deadline.
        """
        if self._sessions is not None:
            self._sessions.close_all()
        if self._nursery is not None:
            self.links.close()
            self.changes.close()
            self.registry.close()
        if self._watch is not None:
            self._watch.close()
        if self._runs is not None:
            self._runs.close()
        if self._reports is not None:
            self._reports.close()
        if self._worker is not None:
            self._worker.close()
        if self._batcher is not None:
            self._batcher.close()
        if not self._stopping.is_set():
            self._stop_deadline = trio.current_time() + self.settings.shutdown_grace_s
            self._stopping.set()

    async def stop(self) -> None:
        """Begin shutdown (if not yet begun) and wait until every task has ended."""
        self.request_stop()
        await self._stopped.wait()

    async def drain(self, timeout_s: float) -> None:
        """Stop taking new MCP sessions and report not ready; wait up to ``timeout_s``
        for the open sessions to end (their clients go on meanwhile).

        Webhook deliveries and runs go on as usual: they are not tied to an instance.
        """
        self._draining = True
        if self._sessions is None:
            return
        self.registry.drain()
        self._sessions.drain()
        with trio.move_on_after(timeout_s):
            await self._sessions.wait_until_empty()

    def announce(self, internal_url: str, public_url: str | None = None) -> None:
        """Tell the other instances (and the CLI) where this one is, once its port is bound."""
        self.registry.announce(internal_url, public_url)

    async def readiness(self) -> Readiness:
        """Whether the service can do its work now: the store answers in time,
        (PostgreSQL) the change feed listens, and the service key opens the
        stored secrets (when there are any)."""
        if self._stopping.is_set():
            return Readiness(False, "shutting down")
        if self._draining:
            return Readiness(False, "draining")
        with trio.move_on_after(self.settings.store_timeout_s):
            try:
                await self.store.ping()
            except StoreError as exc:
                return Readiness(False, f"store: {exc.message}")
            problem = self.changes.problem()
            if problem is None:
                problem = await self._secrets_problem()
            return Readiness(problem is None, problem or "")
        return Readiness(False, f"store: no answer within {self.settings.store_timeout_s:g} s")

    async def _secrets_problem(self) -> str | None:
        # Signed webhooks and connectors with credentials need the stored
        # secrets opened: an instance whose key cannot is not ready for them.
        try:
            sealed = await self.store.sealed_samples()
        except StoreError as exc:
            return f"store: {exc.message}"
        problem = key_problem(self.settings, sealed)
        return None if problem is None else f"secret key: {problem}"


async def run_service(
    settings: Settings,
    *,
    model: ModelClient | None = None,
    task_status: trio.TaskStatus[Service] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Open the store and serve a :class:`Service` on it until the service is stopped.

    Started with ``await nursery.start(run_service, settings)``, which hands
    back the running service once its store is open and migrated. ``model``
    is the agent's model (default: the offline model).

    Resource handling:
        The store is closed after the service's tasks have ended.

    Error handling:
        A key that is configured but malformed (ConfigError naming it) and
        store errors at start (unreachable, migration) propagate from
        ``nursery.start``, so a service that cannot work never reports started.
    """
    SecretBox.check_settings(settings)
    async with open_store(settings.database_url, pool_size=settings.store_pool_size) as store:
        await Service(settings, store, model).serve(task_status=task_status)
