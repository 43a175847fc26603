"""The MCP door: group endpoints over Streamable HTTP and legacy SSE.

Its parts, top to bottom (each imports only those below it):

- ``transports``: HTTP in and out (the endpoint, batches, SSE streams,
  CORS, the ``Host``/``Origin`` guard, forwarding to the owning instance);
- ``dispatch``: what a group endpoint answers (tools, prompts,
  resources, completion, confirmation, list changes, the stateless revision);
- ``relay``: a remote connector's questions and rounds passed back to the caller;
- ``sessions``: bearer-token auth, one session, and the supervisor of them all.
"""
