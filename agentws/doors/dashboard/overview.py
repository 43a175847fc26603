"""The dashboard's Overview: a workspace's home page, its charts, and their data as JSON.

``/dashboard/w/<workspace>/overview?range=1h|24h|7d`` shows the figures of
the range (:func:`agentws.rollups.overview.read_overview`, read from the
per-minute rollup), a chart per series and, for each chart, a table of
its data (what a screen reader or a browser without JavaScript reads),
and each webhook's last event. It works without JavaScript; with it,
``static/overview.js`` draws the charts with Chart.js (vendored in
``static/vendor/``) and refreshes them and the figures from
``/dashboard/w/<workspace>/overview.json?range=…`` every 30 s.

The JSON route is the page's own: it takes the dashboard's session (no
CSRF token: it changes nothing) and answers 401 without one, rather than
the sign-in form's redirect a script could not follow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs
from quart import Response, jsonify, request, url_for

from agentws.admins.access import SESSION_COOKIE, AdminServices, Caller, session_for
from agentws.core.errors import NotFoundError, UnauthorizedError, ValidationError, error_body
from agentws.domain.models import Event, Webhook
from agentws.doors.dashboard.frame import find_workspace, render_page
from agentws.doors.dashboard.session import signed_in
from agentws.doors.views import fields_json
from agentws.http.blueprints import RouteTable
from agentws.rollups.overview import read_overview
from agentws.webhooks import admin as webhooks_admin
from agentws.webhooks import events as webhook_events

__all__ = ["CHARTS", "RANGES", "routes"]

routes = RouteTable[AdminServices]()

#: The ranges the rollup answers, and how the range switch names them.
RANGES = {"1h": "Last hour", "24h": "Last 24 hours", "7d": "Last 7 days"}
DEFAULT_RANGE = "1h"
#: How often the page's script reads the figures again.
REFRESH_S = 30


@attrs.frozen
class ChartSpec:
    """One chart: a series of the overview (a mapping of name → values per step).

    ``names`` gives fixed keys their order and their legend's words; other
    keys (webhooks, refusal reasons, transports) come sorted, as named.
    ``right`` are the keys drawn against a second axis (another unit).
    """

    series: str
    title: str
    kind: str  # "bar" (stacked) or "line"
    unit: str
    names: Mapping[str, str] = attrs.field(factory=dict)
    right: tuple[str, ...] = ()
    right_unit: str = ""
    #: Whether the keys are webhooks (one colour per webhook in every chart).
    by_webhook: bool = False


CHARTS = (
    ChartSpec("events_received", "Events received", "bar", "events", by_webhook=True),
    ChartSpec("events_done", "Events done", "bar", "events", by_webhook=True),
    ChartSpec("events_failed", "Events failed", "bar", "events", by_webhook=True),
    ChartSpec(
        "latency_ms", "Receive → post latency", "line", "ms", names={"p50": "p50", "p99": "p99"}
    ),
    ChartSpec("refused", "Refused deliveries by reason", "bar", "deliveries"),
    ChartSpec(
        "approvals",
        "Approval queue",
        "line",
        "calls waiting",
        names={"depth": "calls waiting", "oldest_s": "oldest wait (s)"},
        right=("oldest_s",),
        right_unit="s",
    ),
    ChartSpec("sessions", "Open MCP sessions by transport", "line", "sessions"),
    ChartSpec(
        "tool_calls",
        "Tool calls by decision",
        "bar",
        "calls",
        names={"ran": "ran", "queued": "queued", "confirmed": "confirmed", "denied": "denied"},
    ),
    ChartSpec(
        "model_tokens",
        "Model tokens",
        "bar",
        "tokens",
        names={"input": "input", "output": "output"},
    ),
)

#: The figures above the charts: the total's key, its words, how it is written.
TOTALS = (
    ("events_received", "Events received", "count"),
    ("events_done", "Events done", "count"),
    ("events_failed", "Events failed", "count"),
    ("refused", "Refused deliveries", "count"),
    ("latency_p50_ms", "Latency p50", "ms"),
    ("latency_p99_ms", "Latency p99", "ms"),
    ("tool_calls", "Tool calls", "count"),
    ("model_tokens", "Model tokens", "count"),
    ("approvals_depth", "Approvals waiting now", "count"),
    ("sessions", "Open MCP sessions now", "count"),
)


@attrs.frozen
class ChartTable:
    """A chart's data as a table: a column per key, a row per step that has any."""

    spec: ChartSpec
    columns: tuple[tuple[str, str], ...]  # (key, heading)
    rows: tuple[tuple[str, str, tuple[str, ...]], ...]  # (ISO time, shown time, values)
    steps: int


@attrs.frozen
class LastEvent:
    """A webhook and what became of its newest event (None: none yet)."""

    webhook: Webhook
    event: Event | None

    @property
    def when(self) -> datetime | None:
        """When the event last changed: finished, else started, else received."""
        if self.event is None:
            return None
        return self.event.finished_at or self.event.started_at or self.event.received_at


def _range_of(value: str | None) -> str:
    if value is None or value == "":
        return DEFAULT_RANGE
    if value not in RANGES:
        raise ValidationError(f"unknown range {value!r}: use one of {', '.join(RANGES)}")
    return value


@routes.get("/w/<workspace>/overview")
@signed_in
async def overview(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    ws = await find_workspace(admin, workspace)
    try:
        range_name = _range_of(request.args.get("range"))
    except ValidationError as exc:
        return await render_page(
            admin, "error.html", caller, status=400, title="Unknown range", message=exc.message
        )
    data = await read_overview(admin.store, ws.id, range_name)
    tables = [_table(spec, data, range_name) for spec in CHARTS]
    return await render_page(
        admin,
        "overview.html",
        caller,
        workspace=ws,
        range_name=range_name,
        ranges=RANGES,
        data=data,
        step_words=_step_words(int(data["step_s"])),
        as_of=datetime.fromisoformat(data["to"]).strftime("%H:%M:%S"),
        totals=[(key, words, _total(data, key, how)) for key, words, how in TOTALS],
        tables=tables,
        # Nothing in any chart: a page of empty axes says less than a sentence.
        empty=not any(t.rows for t in tables),
        last_events=await _last_events(admin, workspace),
        config={
            "url": url_for("dashboard.overview_json", workspace=ws.slug, range=range_name),
            "range": range_name,
            "refresh_s": REFRESH_S,
            "charts": [_chart_config(spec) for spec in CHARTS],
            "data": data,
        },
    )


@routes.get("/w/<workspace>/overview.json")
async def overview_json(admin: AdminServices, workspace: str) -> Response:
    found = await session_for(admin.store, request.cookies.get(SESSION_COOKIE, ""))
    if found is None:
        return _json_error(401, UnauthorizedError.code, "sign in to the dashboard again")
    try:
        range_name = _range_of(request.args.get("range"))
        ws = await find_workspace(admin, workspace)
    except ValidationError as exc:
        return _json_error(400, exc.code, exc.message)
    except NotFoundError as exc:
        return _json_error(404, exc.code, exc.message)
    return jsonify(await read_overview(admin.store, ws.id, range_name))


def _json_error(status: int, code: str, message: str) -> Response:
    response = jsonify(error_body(code, message))
    response.status_code = status
    return response


def _step_words(step_s: int) -> str:
    return f"{step_s // 3600} h" if step_s % 3600 == 0 else f"{step_s // 60} min"


def _chart_config(spec: ChartSpec) -> dict[str, Any]:
    return {
        **fields_json(spec, "series", "title", "kind", "unit"),
        # Pairs, not an object: the JSON's keys come sorted, and the order is the legend's.
        "names": list(spec.names.items()),
        "right": list(spec.right),
        **fields_json(spec, "right_unit", "by_webhook"),
    }


def _total(data: Mapping[str, Any], key: str, how: str) -> str:
    return format_total(data.get("totals", {}).get(key), how)


def format_total(value: Any, how: str) -> str:
    """A figure as the page writes it (``static/overview.js`` writes it the same way)."""
    if isinstance(value, Mapping):  # a total given by kind: their sum
        value = sum(v for v in value.values() if v is not None)
    if value is None:
        return "—"
    if how == "ms":
        return f"{value / 1000:.1f} s" if value >= 1000 else f"{round(value):,} ms"
    return f"{round(value):,}"


def _keys(spec: ChartSpec, series: Mapping[str, Sequence[Any]]) -> list[str]:
    return list(spec.names) + sorted(k for k in series if k not in spec.names)


def _table(spec: ChartSpec, data: Mapping[str, Any], range_name: str) -> ChartTable:
    series: Mapping[str, Sequence[Any]] = data.get("series", {}).get(spec.series, {})
    keys = _keys(spec, series)
    labels: Sequence[str] = data.get("labels", [])
    rows = []
    for i, label in enumerate(labels):
        values = [series.get(k, [])[i] if i < len(series.get(k, [])) else None for k in keys]
        if all(v is None or v == 0 for v in values):
            continue  # a step with nothing: the table lists the steps that have something
        rows.append((label, step_label(label, range_name), tuple(_cell(v) for v in values)))
    columns = tuple((k, spec.names.get(k, k)) for k in keys)
    return ChartTable(spec, columns, tuple(rows), len(labels))


def step_label(iso: str, range_name: str) -> str:
    """A step's time as the tables and the charts' axis write it (UTC)."""
    when = datetime.fromisoformat(iso)
    return when.strftime("%a %H:%M" if range_name == "7d" else "%H:%M")


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{round(value):,}"


async def _last_events(admin: AdminServices, workspace: str) -> list[LastEvent]:
    store = admin.store
    found = []
    for webhook in await webhooks_admin.list_webhooks(store, workspace):
        newest = await webhook_events.list_events(store, workspace, webhook=webhook, limit=1)
        found.append(LastEvent(webhook, newest[0] if newest else None))
    return found
