"""Route tables: blueprints whose handlers are given their door's dependencies.

A door declares its handlers at module level in a :class:`RouteTable`,
each taking what the door uses (its ``deps``) as its first parameter::

    routes = RouteTable[AdminServices]()

    @routes.get("/workspaces")
    async def list_workspaces(admin: AdminServices) -> Response: ...

:meth:`RouteTable.blueprint` then builds a Quart blueprint with every
handler, and every hook declared in the table, bound to the one ``deps``
given by whoever builds the app: nothing is looked up per request. An
endpoint is named after its handler (``url_for("api.list_workspaces")``).
A blueprint may gather the tables of several modules (``include``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

from quart import Blueprint, Response
from quart.typing import ResponseReturnValue

__all__ = ["RouteTable", "bind"]

D = TypeVar("D")
P = ParamSpec("P")
R = TypeVar("R", bound=ResponseReturnValue)
T = TypeVar("T")
E = TypeVar("E", bound=Exception)

#: One declaration of a table: what it adds to a blueprint, given the deps.
_Registration = Callable[[Blueprint, D], None]


def bind(handler: Callable[Concatenate[D, P], Awaitable[T]], deps: D) -> Callable[P, Awaitable[T]]:
    """``handler`` with ``deps`` as its first argument, under the handler's own name."""

    @functools.wraps(handler)
    async def bound(*args: P.args, **kwargs: P.kwargs) -> T:
        return await handler(deps, *args, **kwargs)

    return bound


class RouteTable(Generic[D]):
    """Handlers and hooks taking ``D`` first, bound to one ``D`` per blueprint."""

    def __init__(self) -> None:
        self._registrations: list[_Registration[D]] = []

    def route(
        self, rule: str, *, methods: Iterable[str], **options: Any
    ) -> Callable[
        [Callable[Concatenate[D, P], Awaitable[R]]], Callable[Concatenate[D, P], Awaitable[R]]
    ]:
        """Declare ``handler(deps, **path)`` for ``rule`` (as ``Blueprint.route`` takes it).

        ``options`` go to ``Blueprint.add_url_rule``; the endpoint is the
        handler's name unless ``endpoint`` says otherwise.
        """
        allowed = list(methods)
        rest = {k: v for k, v in options.items() if k != "endpoint"}

        def declare(
            handler: Callable[Concatenate[D, P], Awaitable[R]],
        ) -> Callable[Concatenate[D, P], Awaitable[R]]:
            endpoint = options.get("endpoint", handler.__name__)

            def register(blueprint: Blueprint, deps: D) -> None:
                view = bind(handler, deps)
                blueprint.add_url_rule(rule, endpoint, view, methods=allowed, **rest)

            self._registrations.append(register)
            return handler

        return declare

    def get(
        self, rule: str, **options: Any
    ) -> Callable[
        [Callable[Concatenate[D, P], Awaitable[R]]], Callable[Concatenate[D, P], Awaitable[R]]
    ]:
        return self.route(rule, methods=["GET"], **options)

    def post(
        self, rule: str, **options: Any
    ) -> Callable[
        [Callable[Concatenate[D, P], Awaitable[R]]], Callable[Concatenate[D, P], Awaitable[R]]
    ]:
        return self.route(rule, methods=["POST"], **options)

    def put(
        self, rule: str, **options: Any
    ) -> Callable[
        [Callable[Concatenate[D, P], Awaitable[R]]], Callable[Concatenate[D, P], Awaitable[R]]
    ]:
        return self.route(rule, methods=["PUT"], **options)

    def patch(
        self, rule: str, **options: Any
    ) -> Callable[
        [Callable[Concatenate[D, P], Awaitable[R]]], Callable[Concatenate[D, P], Awaitable[R]]
    ]:
        return self.route(rule, methods=["PATCH"], **options)

    def delete(
        self, rule: str, **options: Any
    ) -> Callable[
        [Callable[Concatenate[D, P], Awaitable[R]]], Callable[Concatenate[D, P], Awaitable[R]]
    ]:
        return self.route(rule, methods=["DELETE"], **options)

    def before_request(
        self, hook: Callable[[D], Awaitable[R | None]]
    ) -> Callable[[D], Awaitable[R | None]]:
        """Run ``hook(deps)`` before each request of the blueprint (an answer stops it)."""

        def register(blueprint: Blueprint, deps: D) -> None:
            blueprint.before_request(bind(hook, deps))

        self._registrations.append(register)
        return hook

    def after_request(
        self, hook: Callable[[D, Response], Awaitable[Response]]
    ) -> Callable[[D, Response], Awaitable[Response]]:
        """Run ``hook(deps, response)`` on each answer of the blueprint."""

        def register(blueprint: Blueprint, deps: D) -> None:
            blueprint.after_request(bind(hook, deps))

        self._registrations.append(register)
        return hook

    def errorhandler(
        self, kind: type[E]
    ) -> Callable[[Callable[[D, E], Awaitable[R]]], Callable[[D, E], Awaitable[R]]]:
        """Answer an error ``kind`` of the blueprint's handlers with ``hook(deps, error)``."""

        def declare(hook: Callable[[D, E], Awaitable[R]]) -> Callable[[D, E], Awaitable[R]]:
            def register(blueprint: Blueprint, deps: D) -> None:
                blueprint.register_error_handler(kind, bind(hook, deps))

            self._registrations.append(register)
            return hook

        return declare

    def context_processor(
        self, hook: Callable[[D], Awaitable[dict[str, Any]]]
    ) -> Callable[[D], Awaitable[dict[str, Any]]]:
        """Add ``hook(deps)``'s names to every template the blueprint renders."""

        def register(blueprint: Blueprint, deps: D) -> None:
            blueprint.context_processor(bind(hook, deps))

        self._registrations.append(register)
        return hook

    def blueprint(
        self,
        name: str,
        import_name: str,
        deps: D,
        *,
        include: Iterable[RouteTable[D]] = (),
        **blueprint_options: Any,
    ) -> Blueprint:
        """A new blueprint with this table's and ``include``'s declarations bound to ``deps``.

        ``blueprint_options`` go to ``Blueprint`` (``url_prefix``, ``template_folder``...).
        """
        built = Blueprint(name, import_name, **blueprint_options)
        for table in (self, *include):
            for register in table._registrations:
                register(built, deps)
        return built
