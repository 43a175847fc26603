"""The MCP door's HTTP side: requests in, answers and SSE streams out.

The endpoint, batches, SSE streams, CORS, the ``Host``/``Origin`` guard,
and forwarding a request to the instance that owns what it names.
"""
