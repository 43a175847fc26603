"""Route tables (agentws.http.blueprints): handlers and hooks bound to the deps they are given."""

from __future__ import annotations

import attrs
from quart import Response, render_template_string, request, url_for
from quart_trio import QuartTrio

from agentws.http.blueprints import RouteTable


@attrs.frozen
class Deps:
    greeting: str


class Refused(Exception):
    pass


routes = RouteTable[Deps]()
more = RouteTable[Deps]()


@routes.get("/hello/<name>")
async def hello(deps: Deps, name: str) -> str:
    return f"{deps.greeting}, {name} ({url_for('demo.hello', name=name)})"


@routes.post("/refuse")
async def refuse(deps: Deps) -> str:
    raise Refused(deps.greeting)


@routes.errorhandler(Refused)
async def refused(deps: Deps, error: Refused) -> tuple[str, int]:
    return f"refused: {error} / {deps.greeting}", 403


@routes.before_request
async def stop_early(deps: Deps) -> str | None:
    return f"stopped by {deps.greeting}" if request.args.get("stop") else None


@routes.after_request
async def mark(deps: Deps, response: Response) -> Response:
    response.headers["X-Greeting"] = deps.greeting
    return response


@routes.context_processor
async def names(deps: Deps) -> dict[str, str]:
    return {"greeting": deps.greeting}


@more.route("/page", methods=["GET", "POST"], endpoint="a_page")
async def page(deps: Deps) -> str:
    return await render_template_string("{{ greeting }} from " + request.method)


def _app(*greetings: str) -> QuartTrio:
    app = QuartTrio(__name__)
    for n, greeting in enumerate(greetings):
        blueprint = routes.blueprint(
            "demo" if n == 0 else f"demo{n}",
            __name__,
            Deps(greeting),
            include=[more],
            url_prefix="" if n == 0 else f"/{n}",
        )
        app.register_blueprint(blueprint)
    return app


async def test_handlers_and_hooks_are_given_the_deps() -> None:
    client = _app("hi").test_client()
    answer = await client.get("/hello/ann")
    assert await answer.get_data(as_text=True) == "hi, ann (/hello/ann)"
    assert answer.headers["X-Greeting"] == "hi"
    refusal = await client.post("/refuse")
    assert refusal.status_code == 403
    assert await refusal.get_data(as_text=True) == "refused: hi / hi"
    stopped = await client.get("/hello/ann?stop=1")
    assert await stopped.get_data(as_text=True) == "stopped by hi"


async def test_included_tables_and_endpoint_names() -> None:
    app = _app("hi")
    client = app.test_client()
    assert await (await client.get("/page")).get_data(as_text=True) == "hi from GET"
    assert await (await client.post("/page")).get_data(as_text=True) == "hi from POST"
    assert {"demo.hello", "demo.refuse", "demo.a_page"} <= {
        rule.endpoint for rule in app.url_map.iter_rules()
    }


async def test_each_blueprint_has_its_own_deps() -> None:
    client = _app("hi", "hello").test_client()
    assert await (await client.get("/hello/ann")).get_data(as_text=True) == "hi, ann (/hello/ann)"
    second = await client.get("/1/page")
    assert await second.get_data(as_text=True) == "hello from GET"
    assert second.headers["X-Greeting"] == "hello"
