// What the Node tests share: the SDK's version, the per-request timeout, and
// the client transports, with the bearer token on every request.
import { readFileSync } from 'node:fs';

import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export const TRANSPORTS = ['sse', 'streamable'];
// One request never waits longer than this (the SDK's own default is 60 s).
export const REQUEST_TIMEOUT_MS = 10_000;
export const SDK_VERSION = JSON.parse(
    readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url), 'utf8')
).version;

export function makeTransport(kind, url, token) {
    const authorization = `Bearer ${token}`;
    if (kind === 'sse') {
        // requestInit.headers go on the POSTs and (since SDK 1.10) on the GET
        // that opens the stream too; the eventSourceInit fetch sets the header on
        // that GET explicitly, which is what older SDKs need. The SDK passes a
        // Headers object, so copy it rather than spreading it (a spread Headers
        // object is empty and would drop Accept: text/event-stream).
        return new SSEClientTransport(url, {
            requestInit: { headers: { Authorization: authorization } },
            eventSourceInit: {
                fetch: (input, init) => {
                    const headers = new Headers(init?.headers);
                    headers.set('Authorization', authorization);
                    return fetch(input, { ...init, headers });
                }
            }
        });
    }
    return new StreamableHTTPClientTransport(url, {
        requestInit: { headers: { Authorization: authorization } }
    });
}
