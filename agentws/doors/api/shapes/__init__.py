"""The admin API's JSON shapes, as pydantic models: the one description of its input and output.

- :mod:`.base`: the base class, and the field types every shape uses
  (times, choices of an enum, pages of a list);
- :mod:`.bodies`: the request bodies, and :func:`.bodies.read_shape`, which
  checks a parsed body against one and says what is wrong as the API does;
- :mod:`.queries`: the query parameters of the lists;
- :mod:`.records`, :mod:`.webhooks`: the answers, the shapes
  :mod:`agentws.doors.views` gives records as (the CLI's ``--json`` prints the same).

The OpenAPI document (:mod:`agentws.doors.api.openapi`) is generated from them.
"""
