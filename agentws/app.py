"""The ASGI application: the doors, each given what it uses of the running service.

:func:`create_app` builds it for a :class:`~agentws.service.Runtime`
(``agentws serve`` opens the service before binding the port). Without
one, it returns a :class:`ServiceApp`, whose ASGI lifespan runs the
service and then builds the app: that is what a bare
``hypercorn --worker-class trio 'agentws.app:create_app()'`` serves.

Outermost first: request ids (every request has one in its logs), the
webhook door (``/hooks/…``), the OAuth door (``/oauth/…``, ``/.well-known/…``),
the MCP door (``/mcp/…``), then Quart with
``/`` (a redirect to the dashboard), ``/healthz``, ``/readyz``, ``/metrics``,
the admin API and the dashboard.
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, cast, overload

import attrs
import jinja2
import trio
from jinja2.bccache import Bucket
from quart import Response, jsonify, redirect, request
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException, RequestTimeout

from agentws import __version__
from agentws.admins.access import AdminServices
from agentws.core.errors import StoreError, error_body
from agentws.core.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from agentws.core.metrics import render
from agentws.doors.api.routes import api_blueprint
from agentws.doors.dashboard.pages import dashboard_blueprint, http_error_page, is_dashboard_path
from agentws.doors.dashboard.visible import visible
from agentws.doors.mcp.sessions.supervisor import SessionSupervisor
from agentws.doors.mcp.transports.endpoint import McpDoor
from agentws.doors.mcp.transports.guard import HostOriginGuard
from agentws.doors.mcp.transports.scope_challenge import ScopeChallenge
from agentws.doors.oauth.door import OAuthDoor
from agentws.doors.webhooks.ingest import HookDoor
from agentws.http.asgi import ASGIApp, Receive, Scope, Send, late_body, respond_json
from agentws.http.quart_fix import ClosingQuart
from agentws.http.request_bodies import CappedRequest
from agentws.http.request_ids import RequestIds
from agentws.service import Readiness, Runtime, run_service
from agentws.settings.config import Settings
from agentws.store.union import Store

__all__ = ["AgentwsApp", "ServiceApp", "create_app"]

log = logging.getLogger("agentws")


class _CompiledTemplates(jinja2.BytecodeCache):
    """The templates' compiled code, kept for every app this process makes.

    Each app has an environment of its own, which would compile every
    template again (tens of milliseconds a page); the apps' environments are
    made alike (:class:`AgentwsApp`), so one's code serves them all. jinja
    checks each entry against the template's source.
    """

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: Bucket) -> None:
        self._code[bucket.key] = bucket.bytecode_to_string()


class AgentwsApp(QuartTrio):
    """QuartTrio with the templates' escaping of invisible characters, and bodies pages cap."""

    # Every value a template prints shows its invisible and bidi characters
    # escaped (agentws.doors.dashboard.visible), on every page.
    jinja_options: dict[str, Any] = {  # noqa: RUF012 - Quart's own attribute
        "finalize": visible,
        "bytecode_cache": _CompiledTemplates(),
    }
    # A page holds its form's body to a size of its own (agentws.doors.dashboard.capped).
    request_class = CappedRequest


# A view's answer as Quart takes it: the body, its status and its headers.
_Answer = tuple[Response, int, dict[str, str]]


@attrs.frozen
class _OpsPages:
    """``/healthz``, ``/readyz`` and ``/metrics``: what operators and their tools read
    (and ``/``, which sends people to the dashboard)."""

    settings: Settings
    store: Store
    sessions: SessionSupervisor
    readiness: Callable[[], Awaitable[Readiness]]

    def register(self, app: AgentwsApp) -> None:
        app.add_url_rule("/", view_func=self.root, methods=["GET"])
        app.add_url_rule("/healthz", view_func=self.healthz, methods=["GET"])
        app.add_url_rule("/readyz", view_func=self.readyz, methods=["GET"])
        app.add_url_rule("/metrics", view_func=self.metrics_page, methods=["GET"])

    async def root(self) -> Response:
        """The base URL ``agentws serve`` prints: people opening it want the dashboard."""
        return cast(Response, redirect("/dashboard/"))

    async def healthz(self) -> Response:
        """Liveness: the process is up and serving requests."""
        return jsonify({"status": "ok", "version": __version__})

    async def readyz(self) -> Response | tuple[Response, int, dict[str, str]]:
        """Readiness: the store answers (and, on PostgreSQL, the change feed listens),
        and the service key opens the stored secrets; 503 with ``Retry-After`` otherwise."""
        readiness: Readiness = await self.readiness()
        if readiness.ready:
            return jsonify({"status": "ready"})
        body = jsonify({"status": "unavailable", "detail": readiness.detail})
        return body, 503, {"Retry-After": "5"}

    async def metrics_page(self) -> Response | _Answer:
        """Prometheus metrics; with ``AGENTWS_METRICS_TOKEN`` set, only for its bearer."""
        expected = self.settings.metrics_token
        if expected is not None:
            given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            if not hmac.compare_digest(given.encode(), expected.encode()):
                return (
                    jsonify(
                        error_body(
                            "unauthorized", "send Authorization: Bearer <AGENTWS_METRICS_TOKEN>"
                        )
                    ),
                    401,
                    {"WWW-Authenticate": 'Bearer realm="agentws-metrics"'},
                )
        try:
            pending, oldest_s = await self.store.pending_approvals_summary()
            events = await self.store.event_counts()
        except StoreError as exc:
            body = error_body("store_unavailable", f"store: {exc.message}")
            return jsonify(body), 503, {"Retry-After": "5"}
        page = render(
            transports=(session.transport for session in self.sessions.all()),
            pending_approvals=pending,
            oldest_approval_s=oldest_s,
            events=events,
        )
        return Response(page, status=200, content_type=METRICS_CONTENT_TYPE)


def _http_error_handler(
    body_timeout_s: float,
) -> Callable[[HTTPException], Awaitable[Response | _Answer]]:
    async def http_error(error: HTTPException) -> Response | _Answer:
        if isinstance(error, RequestTimeout):
            # Quart's body deadline (BODY_TIMEOUT, set from AGENTWS_BODY_READ_TIMEOUT_S):
            # the same answer as the two doors give.
            late = late_body(body_timeout_s, headers=[("Connection", "close")])
            return jsonify(late.body()), late.status, dict(late.headers)
        if is_dashboard_path(request.path):  # browsers there get a page, not JSON
            return await http_error_page(error)
        code = (error.name or "error").lower().replace(" ", "_")
        return jsonify(error_body(code, error.description or error.name)), error.code or 500, {}

    return http_error


def _quart_app(settings: Settings, admin: AdminServices, ops: _OpsPages) -> AgentwsApp:
    app = AgentwsApp(__name__)
    app.config["BACKGROUND_TASK_SHUTDOWN_TIMEOUT"] = settings.shutdown_grace_s
    # Bodies are limited per door (webhooks have their own per-hook limit).
    app.config["MAX_CONTENT_LENGTH"] = None
    # The whole body of a dashboard or API request, as the doors have theirs.
    app.config["BODY_TIMEOUT"] = settings.body_read_timeout_s
    ops.register(app)
    app.register_error_handler(HTTPException, _http_error_handler(settings.body_read_timeout_s))
    app.register_blueprint(api_blueprint(admin))
    app.register_blueprint(dashboard_blueprint(admin))
    return app


@overload
def create_app(runtime: Runtime) -> AgentwsApp: ...
@overload
def create_app(runtime: None = None, *, settings: Settings | None = None) -> ServiceApp: ...
def create_app(
    runtime: Runtime | None = None, *, settings: Settings | None = None
) -> AgentwsApp | ServiceApp:
    """The application serving ``runtime``'s doors.

    Args:
        runtime: the running service (``agentws serve`` starts it before it
            binds the port, so a store that cannot be opened fails first).
            Without one: a :class:`ServiceApp` for ``settings`` (from the
            environment if omitted), whose lifespan runs the service.

    Error handling:
        :class:`~agentws.core.errors.ConfigError` if the environment is malformed.
    """
    if runtime is None:
        return ServiceApp(settings or Settings.from_env(os.environ))
    settings = runtime.settings
    ops = _OpsPages(settings, runtime.store, runtime.sessions, runtime.service.readiness)
    app = _quart_app(settings, runtime.admin, ops)
    # The MCP door is plain ASGI in front of Quart (see agentws.doors.mcp.transports.endpoint).
    door = McpDoor(
        ClosingQuart(cast(Any, app.asgi_app)),
        settings,
        runtime.authenticator,
        runtime.sessions,
        runtime.forwarder,
        ScopeChallenge(runtime.catalog, settings),
    )
    # So is the OAuth door: discovery and the authorization server (see agentws.doors.oauth.door).
    hosts = HostOriginGuard.from_settings(settings)
    oauth = OAuthDoor(
        cast(Any, door),
        settings,
        runtime.store,
        runtime.keys.optional(),
        lambda host, server: hosts.refusal(host, None, server),
    )
    # So is the webhook door (see agentws.doors.webhooks.ingest).
    hooks = HookDoor(cast(Any, oauth), settings, runtime.intake)
    # Outermost: every request, whichever door takes it, has an id in its logs.
    app.asgi_app = cast(Any, RequestIds(cast(Any, hooks)))  # type: ignore[method-assign]
    return app


@attrs.define(eq=False)
class ServiceApp:
    """An ASGI app whose lifespan runs the service, then serves :func:`create_app` of it.

    For servers that only take an ASGI app (``hypercorn 'agentws.app:create_app()'``).
    The service runs in the lifespan's own nursery: it starts before the
    server reports started, and stops (within its grace period) at shutdown.
    Requests before it has started, or after a failed start, get 503.
    """

    settings: Settings
    _app: ASGIApp | None = attrs.field(default=None, init=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
        elif self._app is not None:
            await self._app(scope, receive, send)
        elif scope["type"] == "http":
            body = error_body("unavailable", "the service is not running")
            await respond_json(send, 503, body, [("Retry-After", "5")])

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        async with trio.open_nursery() as nursery:
            try:
                runtime: Runtime = await nursery.start(run_service, self.settings)
            except Exception as exc:
                log.exception("the service did not start")
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            app = create_app(runtime)
            # Quart's own lifespan (its nursery for background tasks) runs inside.
            inner_send, inner_receive = trio.open_memory_channel[dict[str, Any]](1)
            answers_send, answers_receive = trio.open_memory_channel[dict[str, Any]](1)
            quart: ASGIApp = cast(Any, app)
            nursery.start_soon(quart, scope, inner_receive.receive, answers_send.send)
            await inner_send.send({"type": "lifespan.startup"})
            answer = await answers_receive.receive()
            if answer["type"] != "lifespan.startup.complete":
                await runtime.service.stop()
                await send(answer)
                return
            self._app = quart
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
            await inner_send.send({"type": "lifespan.shutdown"})
            await answers_receive.receive()
            await runtime.service.stop()
        await send({"type": "lifespan.shutdown.complete"})
