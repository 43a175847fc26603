"""The QuartTrio application: its lifespan runs the Service; doors are blueprints.

:func:`create_app` is the ASGI entry point (``hypercorn 'agentws.app:create_app()'``
works as well as ``agentws serve``). The app's nursery, opened by
quart-trio for the life of the server, is where the service runs; HTTP
handlers reach it as ``current_app.service``.
"""

from __future__ import annotations

import hmac
import os
from typing import Any, cast

from quart import Response, current_app, jsonify, request
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException, RequestTimeout

from agentws import __version__
from agentws.api.routes import api_blueprint
from agentws.config import Settings
from agentws.dashboard.pages import dashboard_blueprint, http_error_page, is_dashboard_path
from agentws.dashboard.visible import visible
from agentws.errors import StoreError
from agentws.mcp.auth import Authenticator
from agentws.mcp.endpoint import McpDoor
from agentws.mcp.forward import SessionForwarder
from agentws.mcp.sessions import SessionSupervisor
from agentws.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from agentws.metrics import render
from agentws.quart_fix import ClosingQuart
from agentws.request_ids import RequestIds
from agentws.service import Service, run_service
from agentws.webhooks.ingest import HookDoor, Intake

__all__ = ["AgentwsApp", "create_app", "error_response"]


class AgentwsApp(QuartTrio):
    """QuartTrio with the running :class:`Service` attached."""

    service: Service
    # Every value a template prints shows its invisible and bidi characters
    # escaped (agentws.dashboard.visible), on every page.
    jinja_options: dict[str, Any] = {"finalize": visible}  # noqa: RUF012 - Quart's own attribute


def error_response(status: int, code: str, message: str, **headers: str) -> Response:
    """The JSON error body every door uses: ``{"error": {"code", "message"}}``."""
    response = jsonify({"error": {"code": code, "message": message}})
    response.status_code = status
    response.headers.update(headers)
    return response


def _service() -> Service:
    return cast(AgentwsApp, current_app).service


async def healthz() -> Response:
    """Liveness: the process is up and serving requests."""
    return jsonify({"status": "ok", "version": __version__})


async def readyz() -> Response | tuple[Response, int, dict[str, str]]:
    """Readiness: the store answers (and, on PostgreSQL, the change feed listens),
    and the service key opens the stored secrets; 503 with ``Retry-After`` otherwise."""
    readiness = await _service().readiness()
    if readiness.ready:
        return jsonify({"status": "ready"})
    body = jsonify({"status": "unavailable", "detail": readiness.detail})
    return body, 503, {"Retry-After": "5"}


async def metrics_page() -> Response:
    """Prometheus metrics; with ``AGENTWS_METRICS_TOKEN`` set, only for its bearer."""
    service = _service()
    expected = service.settings.metrics_token
    if expected is not None:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), expected.encode()):
            return error_response(
                401,
                "unauthorized",
                "send Authorization: Bearer <AGENTWS_METRICS_TOKEN>",
                **{"WWW-Authenticate": 'Bearer realm="agentws-metrics"'},
            )
    try:
        page = await render(service)
    except StoreError as exc:
        return error_response(
            503, "store_unavailable", f"store: {exc.message}", **{"Retry-After": "5"}
        )
    return Response(page, status=200, content_type=METRICS_CONTENT_TYPE)


async def _http_error(error: HTTPException) -> Response:
    if isinstance(error, RequestTimeout):
        # Quart's body deadline (BODY_TIMEOUT, set from AGENTWS_BODY_READ_TIMEOUT_S):
        # the same answer as the two doors give.
        timeout_s = cast(AgentwsApp, current_app).config["BODY_TIMEOUT"]
        return error_response(
            408,
            "body_read_timeout",
            f"the body did not all arrive within {timeout_s:g} s; send it again, "
            "whole and without pauses",
            Connection="close",
        )
    if is_dashboard_path(request.path):  # browsers there get a page, not JSON
        return await http_error_page(error)
    code = (error.name or "error").lower().replace(" ", "_")
    return error_response(error.code or 500, code, error.description or error.name)


def create_app(settings: Settings | None = None, *, service: Service | None = None) -> AgentwsApp:
    """Build the application for ``settings`` (from the environment if omitted).

    Args:
        settings: the service's settings; read from ``AGENTWS_*`` if omitted.
        service: an already running service to serve (``agentws serve`` opens
            it before binding, so a store that cannot be opened fails before
            the port is taken). Without one, the app's lifespan runs its own
            in the app's nursery, which is what a bare
            ``hypercorn 'agentws.app:create_app()'`` gets.

    Error handling:
        :class:`~agentws.errors.ConfigError` if the environment is malformed;
        store errors at startup abort the server's lifespan.
    """
    settings = settings or Settings.from_env(os.environ)
    app = AgentwsApp(__name__)
    app.config["BACKGROUND_TASK_SHUTDOWN_TIMEOUT"] = settings.shutdown_grace_s
    # Bodies are limited per door (webhooks have their own per-hook limit).
    app.config["MAX_CONTENT_LENGTH"] = None
    # The whole body of a dashboard or API request, as the doors have theirs.
    app.config["BODY_TIMEOUT"] = settings.body_read_timeout_s
    app.add_url_rule("/healthz", view_func=healthz, methods=["GET"])
    app.add_url_rule("/readyz", view_func=readyz, methods=["GET"])
    app.add_url_rule("/metrics", view_func=metrics_page, methods=["GET"])
    app.register_error_handler(HTTPException, _http_error)
    app.register_blueprint(api_blueprint)
    app.register_blueprint(dashboard_blueprint)

    def mcp_components() -> tuple[Authenticator, SessionSupervisor, SessionForwarder]:
        return app.service.authenticator, app.service.sessions, app.service.forwarder

    # The MCP door is plain ASGI in front of Quart (see agentws.mcp.endpoint).
    door = McpDoor(ClosingQuart(cast(Any, app.asgi_app)), settings, mcp_components)

    def intake() -> Intake:
        return app.service.intake

    # So is the webhook door (see agentws.webhooks.ingest).
    hooks = HookDoor(cast(Any, door), settings, intake)
    # Outermost: every request, whichever door takes it, has an id in its logs.
    app.asgi_app = cast(Any, RequestIds(cast(Any, hooks)))  # type: ignore[method-assign]

    if service is not None:
        app.service = service
        return app

    @app.before_serving
    async def start_service() -> None:
        app.service = cast(Service, await app.nursery.start(run_service, settings))

    @app.after_serving
    async def stop_service() -> None:
        await app.service.stop()

    return app
