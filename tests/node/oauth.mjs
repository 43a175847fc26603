#!/usr/bin/env node
// Completes agentws's OAuth 2.1 flow with the official TypeScript SDK's auth
// client (@modelcontextprotocol/sdk, pinned in package-lock.json), for
// tests/e2e/test_oauth_node.py. The SDK meets the group endpoint's 401, reads
// the protected-resource and authorization-server metadata, registers this
// client (RFC 7591), and sends the "browser" to /oauth/authorize; the test
// is the browser: an administrator consents on the dashboard's page.
//
//   node tests/node/oauth.mjs --url http://127.0.0.1:8080/mcp/g/acme/ops \
//       --redirect-uri http://127.0.0.1:53682/callback
//
// Options:
//   --url URL            the group endpoint
//   --redirect-uri URI   this client's (loopback) redirect URI, registered as its only one
//   --timeout-ms N       hard limit for the whole run (default 30000)
//
// The conversation, one JSON line at a time:
//   stdout  {"authorize": URL}      where the SDK sends the browser
//   stdin   {code, state, iss} or {error, error_description, state, iss}:
//           the query the browser was sent back to the redirect URI with
//   stdout  the outcome. Given a code: it is exchanged (transport.finishAuth),
//           the client connects again, lists tools and calls search_context;
//           then the SDK's auth() refreshes the tokens with the stored refresh
//           token and a new connection calls search_context with the new
//           access token. Given an error: {"refused": query}, nothing else.
// Exit status: 0 after the last line; 1 with one line on stderr
// ("oauth: <step>: <error>") on any failure, a state or issuer that does not
// match included; 2 for bad usage. The process never outlives --timeout-ms.

import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { REQUEST_TIMEOUT_MS, SDK_VERSION } from './transport.mjs';

const CLIENT_NAME = 'Node test client';

function usage(message) {
    process.stderr.write(`oauth: ${message}\n`);
    process.exit(2);
}

function options() {
    let parsed;
    try {
        parsed = parseArgs({
            options: {
                url: { type: 'string' },
                'redirect-uri': { type: 'string' },
                'timeout-ms': { type: 'string' }
            },
            strict: true,
            allowPositionals: false
        }).values;
    } catch (error) {
        usage(error.message);
    }
    const opts = { timeoutMs: Number(parsed['timeout-ms'] ?? 30_000) };
    if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0) usage('--timeout-ms must be a positive number');
    for (const name of ['url', 'redirect-uri']) {
        if (!parsed[name]) usage(`--${name} is required`);
        try {
            new URL(parsed[name]);
        } catch {
            usage(`--${name} is not a URL: ${parsed[name]}`);
        }
    }
    opts.url = new URL(parsed.url);
    opts.redirectUri = parsed['redirect-uri'];
    return opts;
}

function describe(error) {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const code = error?.code;
    return code === undefined ? text : `${text} [code ${code}]`;
}

function summary(result) {
    return {
        text: (result.content ?? [])
            .filter(item => item.type === 'text')
            .map(item => item.text)
            .join('\n'),
        isError: result.isError ?? false
    };
}

/**
 * The SDK's OAuthClientProvider, in memory: what a desktop client keeps in its
 * keychain, here for one run. Redirecting the browser is handing its URL to
 * `redirect` (the test's browser follows it).
 */
class MemoryProvider {
    constructor(redirectUri, redirect) {
        this._redirectUri = redirectUri;
        this._redirect = redirect;
        this._client = undefined;
        this._tokens = undefined;
        this._verifier = undefined;
        // The state of the one authorization request this run makes.
        this.sentState = randomBytes(16).toString('base64url');
        this.redirects = [];
        this.savedTokens = [];
    }

    get redirectUrl() {
        return this._redirectUri;
    }

    get clientMetadata() {
        return {
            client_name: CLIENT_NAME,
            redirect_uris: [this._redirectUri],
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            token_endpoint_auth_method: 'none'
        };
    }

    state() {
        return this.sentState;
    }

    clientInformation() {
        return this._client;
    }

    // Kept as given: the SDK stamps it with the authorization server's URL.
    saveClientInformation(information) {
        this._client = information;
    }

    tokens() {
        return this._tokens;
    }

    saveTokens(tokens) {
        this._tokens = tokens;
        this.savedTokens.push(tokens);
    }

    async redirectToAuthorization(url) {
        this.redirects.push(url.href);
        await this._redirect(url);
    }

    saveCodeVerifier(verifier) {
        this._verifier = verifier;
    }

    codeVerifier() {
        if (this._verifier === undefined) throw new Error('no code verifier saved');
        return this._verifier;
    }
}

/** Lines of stdin, one at a time. */
function stdinLines() {
    const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
    return async what => {
        const { value, done } = await lines.next();
        if (done) throw new Error(`stdin ended before ${what}`);
        return value;
    };
}

/** Connects a new client with `provider`, runs `body(client)`, and closes. */
async function connected(url, provider, body) {
    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    const client = new Client({ name: 'agentws-node-oauth', version: '1.0.0' });
    await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
    try {
        return await body(client);
    } finally {
        await transport.terminateSession();
        await client.close();
    }
}

function tokenInfo(tokens) {
    return {
        accessToken: tokens.access_token,
        refreshToken: tokens.refresh_token ?? null,
        tokenType: tokens.token_type,
        scope: tokens.scope ?? null,
        expiresIn: tokens.expires_in ?? null,
        issuer: tokens.issuer ?? null
    };
}

async function run(opts, progress, emit) {
    const readLine = stdinLines();
    const provider = new MemoryProvider(opts.redirectUri, url => emit({ authorize: url.href }));
    const request = { timeout: REQUEST_TIMEOUT_MS };

    // No token yet: the endpoint's 401 starts the flow, which ends in a redirect.
    progress.step = 'connect without a token';
    const transport = new StreamableHTTPClientTransport(opts.url, { authProvider: provider });
    const first = new Client({ name: 'agentws-node-oauth', version: '1.0.0' });
    try {
        await first.connect(transport, request);
        throw new Error('connected without authorization');
    } catch (error) {
        if (!(error instanceof UnauthorizedError)) throw error;
    }
    if (provider.redirects.length !== 1) throw new Error(`expected one redirect, got ${provider.redirects.length}`);
    const client = provider.clientInformation();
    const out = {
        sdk: SDK_VERSION,
        clientId: client?.client_id ?? null,
        clientIssuer: client?.issuer ?? null,
        authorize: Object.fromEntries(new URL(provider.redirects[0]).searchParams)
    };

    // The browser comes back to the redirect URI. A client checks the state it
    // sent, and (RFC 9207) that the issuer is the one it talked to: the SDK's
    // finishAuth takes the code alone.
    progress.step = 'read the redirect';
    const query = JSON.parse(await readLine('the redirect'));
    out.redirect = { state: query.state ?? null, iss: query.iss ?? null };
    if (query.state !== provider.sentState) {
        throw new Error(`state ${JSON.stringify(query.state)} is not the one sent (${provider.sentState})`);
    }
    if (query.iss !== client.issuer) {
        throw new Error(`issuer ${JSON.stringify(query.iss)} is not the one asked (${client.issuer})`);
    }
    if (query.error !== undefined) {
        await emit({ ...out, refused: query, tokens: provider.tokens() ?? null });
        return;
    }
    if (typeof query.code !== 'string') throw new Error(`no code in ${JSON.stringify(query)}`);

    progress.step = 'finishAuth';
    await transport.finishAuth(query.code);
    out.tokens = tokenInfo(provider.tokens());

    progress.step = 'connect with the token';
    await connected(opts.url, provider, async session => {
        progress.step = 'tools/list';
        out.tools = (await session.listTools(undefined, request)).tools.map(tool => tool.name);
        progress.step = 'tools/call search_context';
        out.search = summary(
            await session.callTool({ name: 'search_context', arguments: { query: 'refund' } }, undefined, request)
        );
    });

    // A stored refresh token: the SDK's auth() spends it for new tokens, no browser.
    progress.step = 'refresh';
    out.refreshResult = await auth(provider, { serverUrl: opts.url });
    out.refreshed = tokenInfo(provider.tokens());

    progress.step = 'connect with the refreshed token';
    await connected(opts.url, provider, async session => {
        progress.step = 'tools/call search_context (refreshed)';
        out.searchRefreshed = summary(
            await session.callTool({ name: 'search_context', arguments: { query: 'refund' } }, undefined, request)
        );
    });
    out.redirects = provider.redirects.length;
    out.tokensSaved = provider.savedTokens.length;
    await emit(out);
}

async function main() {
    const opts = options();
    const progress = { step: 'start' };
    const fail = message => {
        process.stderr.write(`oauth: ${progress.step}: ${message}\n`);
        process.exit(1);
    };
    // The hard limit: whatever hangs (the wait for the browser included), the process ends.
    setTimeout(() => fail(`not done within ${opts.timeoutMs} ms (timeout)`), opts.timeoutMs).unref();
    const emit = document =>
        new Promise(resolve => process.stdout.write(`${JSON.stringify(document)}\n`, resolve));
    try {
        await run(opts, progress, emit);
    } catch (error) {
        fail(describe(error));
    }
    process.exit(0);
}

await main();
