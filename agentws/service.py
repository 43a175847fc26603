"""The Service: owner of the root nursery and of every long-lived task.

Doors (HTTP blueprints, the CLI) never start background work themselves;
they hand it to the service, whose nursery owns it. The nursery is opened by
:meth:`Service.serve` and ends on :meth:`Service.stop`: running work gets the
shutdown grace period, then whatever is left is cancelled. Nothing the
service started outlives ``serve``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from agentws.admins.access import AdminServices
from agentws.agent.choose import open_model
from agentws.agent.dry_run import PromptTrials
from agentws.agent.model import ModelClient
from agentws.agent.runner import AgentRunner
from agentws.approvals.channel_reports import ChannelReports
from agentws.approvals.notifier import ApprovalWatch
from agentws.approvals.runs import ApprovalRuns
from agentws.chat.router import SinkRouter
from agentws.common.audit import AuditWriter
from agentws.common.changes import ChangeFeed
from agentws.common.instances import InstanceDirectory
from agentws.connectors.authorizations import ConnectorAuthorizations
from agentws.connectors.links import ACTOR as LINK_ACTOR
from agentws.connectors.links import RemoteLinks
from agentws.connectors.remote_content import RemoteContent
from agentws.core.errors import StoreError
from agentws.domain.models import Webhook
from agentws.domain.sample_deliveries import SampleAnswer, SampleKind
from agentws.doors.mcp.dispatch.handlers import NOTIFICATIONS, build_server
from agentws.doors.mcp.dispatch.list_changes import ListChanges
from agentws.doors.mcp.relay.pending_calls import PendingCalls
from agentws.doors.mcp.sessions.auth import Authenticator
from agentws.doors.mcp.sessions.listen import ListenStreams
from agentws.doors.mcp.sessions.rendered import RenderedResults
from agentws.doors.mcp.sessions.supervisor import SessionSupervisor
from agentws.doors.mcp.transports.forward import SessionForwarder, open_hop_client
from agentws.doors.webhooks.sample_sends import send_test_event
from agentws.rollups.minutes import MinuteRollup
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys, SecretBox, key_problem
from agentws.store import open_store
from agentws.store.union import Store
from agentws.tools.cache_sync import sync_tool_cache
from agentws.tools.catalog import Catalog
from agentws.tools.execution import ToolRunner
from agentws.tools.gate import ToolGate
from agentws.tools.validation import open_argument_checker
from agentws.webhooks.alerts import FailureAlerts
from agentws.webhooks.batcher import IngestBatcher
from agentws.webhooks.connector_alerts import ConnectorAlerts
from agentws.webhooks.delivery_log import DeliveryLog
from agentws.webhooks.event_index import EventIndexer
from agentws.webhooks.intake import Intake
from agentws.webhooks.processing import EventProcessor
from agentws.webhooks.worker import EventWorker

__all__ = ["Readiness", "Runtime", "Service", "run_service"]


@attrs.frozen
class Readiness:
    ready: bool
    #: What is not ready, for operators; never a secret.
    detail: str = ""


@attrs.frozen(eq=False)
class Runtime:
    """Everything the running service made that the doors and the server use.

    Built whole by :meth:`Service.serve` before it reports started, and handed
    out with ``task_status.started(runtime)``: nothing in it is missing or
    looked up later. :func:`agentws.app.create_app` gives each door the
    fields it uses.
    """

    settings: Settings
    store: Store
    #: The service key, read once at start.
    keys: Keys
    #: Changes announced by the store (revocations, decisions, catalog) from any process.
    changes: ChangeFeed
    #: This instance's heartbeat, and where the others are.
    registry: InstanceDirectory
    #: The supervisor of this process's MCP sessions.
    sessions: SessionSupervisor
    authenticator: Authenticator
    #: Relays requests for other instances' MCP sessions.
    forwarder: SessionForwarder
    #: What the webhook door hands deliveries to.
    intake: Intake
    #: The pool running webhook events.
    worker: EventWorker
    #: The overview's minute task (a round a minute; :meth:`~MinuteRollup.roll` rolls now).
    rollup: MinuteRollup
    #: Runs approved calls (decided anywhere) in this instance.
    approval_runs: ApprovalRuns
    #: Live sessions with remote MCP connectors.
    links: RemoteLinks
    #: Runs the group's tools (for the permission gate, and for approved calls).
    runner: ToolRunner
    #: Every group's tools (the MCP door checks an OAuth call's scope against them).
    catalog: Catalog
    #: What the dashboard and the admin API are given.
    admin: AdminServices
    #: The lifecycle: readiness, drain, stop.
    service: Service


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
    #: What :meth:`serve` made, once it has started.
    _runtime: Runtime | None = attrs.field(default=None, init=False)
    #: Each long-lived task's ``close``, in the order they started.
    _closers: list[Callable[[], None]] = attrs.field(factory=list, init=False)
    _stop_deadline: float = attrs.field(default=float("inf"), init=False)

    async def serve(
        self, *, task_status: trio.TaskStatus[Runtime] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the service's tasks until :meth:`stop`; never returns before then.

        Hands out the :class:`Runtime` once every task has started.

        Resource handling:
            Opens the root nursery, which owns the change feed (its listening
            connection), the instance heartbeat, the MCP session supervisor,
            the approval watch (outcomes to sessions, expiry), the runs of
            approved calls (decided anywhere, run here once), webhooks' failure
            alerts and recoveries, the links
            to remote MCP connectors (which keep their tool caches current),
            the webhook ingest batcher (group commit), the delivery log's
            trimmer and the event worker pool (agent runs).
            After :meth:`stop`, its tasks have ``shutdown_grace_s`` to finish
            before they are cancelled. The audit writer runs around that
            nursery and is closed after it: what the others audited on their
            way out is written too.
        """
        audit = AuditWriter(self.store)
        try:
            async with trio.open_nursery() as outer:
                await outer.start(audit.serve)
                try:
                    await self._serve_tasks(audit, task_status)
                finally:
                    audit.close()
        finally:
            self._stopped.set()

    async def _serve_tasks(self, audit: AuditWriter, task_status: trio.TaskStatus[Runtime]) -> None:
        settings, store = self.settings, self.store
        keys = Keys.load(settings)
        async with (
            contextlib.nullcontext(self.model) if self.model else open_model(settings) as model,
            open_hop_client() as hop_client,
            open_argument_checker(settings) as checker,
            trio.open_nursery() as nursery,
        ):
            changes = ChangeFeed(store)
            await self._start(nursery, changes.serve, changes.close)
            registry = InstanceDirectory(store, settings.instance_id)
            await self._start(nursery, registry.serve, registry.close)
            if settings.internal_url or settings.bind_port:
                port = settings.bind_port
                registry.announce(settings.internal_url_for(port), settings.public_url_for(port))
            forwarder = SessionForwarder(registry, hop_client, settings.sse_stall_s)
            links = RemoteLinks(
                store, settings, keys, functools.partial(sync_tool_cache, store, actor=LINK_ACTOR)
            )
            catalog = Catalog(store, changes)
            runner = ToolRunner(
                store,
                settings,
                keys,
                links.call_tool,
                catalog.connector,
                catalog.libraries,
                checker.output_problem,
            )
            gate = ToolGate(store, settings, runner, audit, keys, checker)
            rendered = RenderedResults()
            listens = ListenStreams(
                max_streams=settings.mcp_max_sessions,
                max_per_token=settings.mcp_max_listen_per_token,
            )
            # Stateless clients' calls waiting for their input: a person has the
            # confirmation's time to answer.
            pending = PendingCalls(
                settings.instance_id,
                settings.confirm_ttl_s,
                settings.mcp_max_sessions,
                settings.mcp_max_pending_per_token,
            )
            await self._start(nursery, pending.serve, pending.close)
            remote = RemoteContent(store, links)
            server = build_server(
                store, settings, gate, catalog, rendered, listens, pending, remote
            )
            supervisor = SessionSupervisor(
                settings,
                store,
                server,
                server.create_initialization_options(NOTIFICATIONS),
                changes,
                rendered=rendered,
                listens=listens,
            )
            sessions = await self._start(nursery, supervisor.serve, supervisor.close_all)
            rollup = MinuteRollup(
                store,
                settings.instance_id,
                settings.rollup_retention_days,
                sessions=functools.partial(_session_transports, supervisor),
            )
            await self._start(nursery, rollup.serve, rollup.close)
            list_changes = ListChanges(store, supervisor, catalog, changes, remote)
            await self._start(nursery, list_changes.serve, list_changes.close)
            watch = ApprovalWatch(store, supervisor, changes)
            await self._start(nursery, watch.serve, watch.close)
            runs = ApprovalRuns(store, runner, keys, changes, settings.instance_id)
            await self._start(nursery, runs.serve, runs.close)
            await self._start(nursery, links.serve, links.close)
            authorizations = ConnectorAuthorizations(store, settings, keys, links.refresh)
            await self._start(nursery, authorizations.serve, authorizations.close)
            agent = AgentRunner(catalog, gate, model, base_url=settings.public_base_url)
            sinks = SinkRouter(store, settings, keys)
            processor = EventProcessor(store, agent, sinks)
            reports = ChannelReports(store, sinks)
            await self._start(nursery, reports.serve, reports.close)
            links.on_lost(ConnectorAlerts(store, sinks, settings.public_base_url).lost)
            alerts = FailureAlerts(store, sinks, settings.instance_id, settings.public_base_url)
            await self._start(nursery, alerts.serve, alerts.close)
            worker = EventWorker(store, settings, processor)
            await self._start(nursery, worker.serve, worker.close)
            batcher = IngestBatcher(store, on_stored=worker.notify)
            worker.door_busy = batcher.busy
            await self._start(nursery, batcher.serve, batcher.close)
            delivery_log = DeliveryLog.from_settings(store, settings)
            await self._start(nursery, delivery_log.serve, delivery_log.close)
            intake = Intake(store, batcher, keys, log=delivery_log)
            indexer = EventIndexer(store, door_busy=batcher.busy)
            await self._start(nursery, indexer.serve, indexer.close)
            self._runtime = Runtime(
                settings=settings,
                store=store,
                keys=keys,
                changes=changes,
                registry=registry,
                sessions=sessions,
                authenticator=Authenticator(store),
                forwarder=forwarder,
                intake=intake,
                worker=worker,
                rollup=rollup,
                approval_runs=runs,
                links=links,
                runner=runner,
                catalog=catalog,
                admin=AdminServices(
                    settings=settings,
                    store=store,
                    keys=keys,
                    notify_events=worker.notify,
                    approval_outcome=runs.outcome,
                    try_prompt=PromptTrials(agent, settings.run_timeout_s).try_prompt,
                    send_test_event=functools.partial(_test_event, settings, intake),
                    authorize=authorizations.start,
                ),
                service=self,
            )
            task_status.started(self._runtime)
            await self._stopping.wait()
            nursery.cancel_scope.deadline = self._stop_deadline

    async def _start(
        self,
        nursery: trio.Nursery,
        serve: Callable[..., Awaitable[Any]],
        close: Callable[[], None],
    ) -> Any:
        """Start a long-lived task in the root nursery; :meth:`request_stop` calls ``close``."""
        started = await nursery.start(serve)
        self._closers.append(close)
        if self._stopping.is_set():  # a stop asked for while starting
            close()
        return started

    def request_stop(self) -> None:
        """Begin shutdown: running tasks have ``shutdown_grace_s`` from now to finish.

        MCP sessions are closed at once, so their streams end cleanly and
        the server's drain is not held up by them. Idempotent; the first
        call sets the deadline.
        """
        for close in self._closers:
            close()
        if not self._stopping.is_set():
            self._stop_deadline = trio.current_time() + self.settings.shutdown_grace_s
            self._stopping.set()

    async def stop(self) -> None:
        """Begin shutdown (if not yet begun) and wait until every task has ended."""
        self.request_stop()
        await self._stopped.wait()

    async def drain(self) -> None:
        """Stop taking new MCP sessions and report not ready; wait for the open
        sessions to end (their clients go on meanwhile), for as long as the
        caller allows.

        Webhook deliveries and runs go on as usual: they are not tied to an instance.
        """
        self._draining = True
        if self._runtime is None:
            return
        self._runtime.registry.drain()
        self._runtime.sessions.drain()
        await self._runtime.sessions.wait_until_empty()

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
            problem = self._runtime.changes.problem() if self._runtime else "not started"
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
        keys = self._runtime.keys if self._runtime else Keys.load(self.settings)
        problem = key_problem(keys, self.settings, sealed)
        return None if problem is None else f"secret key: {problem}"


def _session_transports(supervisor: SessionSupervisor) -> list[tuple[str, str]]:
    """``(workspace id, transport)`` of each open session: the rollup's sessions sample."""
    return [(s.caller.workspace.id, s.transport) for s in supervisor.all()]


async def _test_event(
    settings: Settings,
    intake: Intake,
    webhook: Webhook,
    sample: SampleKind | None,
    actor: str,
) -> SampleAnswer:
    """A test event through this service's door (its rate buckets, its batcher)."""
    return await send_test_event(settings, intake, webhook, sample, actor=actor)


async def run_service(
    settings: Settings,
    *,
    model: ModelClient | None = None,
    task_status: trio.TaskStatus[Runtime] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Open the store and serve a :class:`Service` on it until the service is stopped.

    Started with ``await nursery.start(run_service, settings)``, which hands
    back the service's :class:`Runtime` once its store is open and migrated
    and its tasks have started (``runtime.service`` stops it). ``model``
    is the agent's model (default: the offline model).

    Resource handling:
        The store is closed after the service's tasks have ended.

    Error handling:
        A key that is configured but malformed (ConfigError naming it) and
        store errors at start (unreachable, migration) propagate from
        ``nursery.start``, so a service that cannot work never reports started.
    """
    SecretBox.check_settings(settings)
    async with open_store(
        settings.database_url,
        pool_size=settings.store_pool_size,
        read_processes=settings.store_read_processes,
    ) as store:
        await Service(settings, store, model).serve(task_status=task_status)
