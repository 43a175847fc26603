#!/usr/bin/env node
// Drives agentws's tool permissions with the official TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in package-lock.json), for
// tests/e2e/test_permissions_node.py. The group's connector has a read tool
// (third_search), a write tool (third_send: queued for approval) and a
// destructive tool (third_drop: confirmed first).
//
//   AGENTWS_TOKEN=agws_... node tests/node/permissions.mjs \
//       --transport streamable --url http://127.0.0.1:8080/mcp/g/acme/ops --mode elicit
//
// Options:
//   --transport sse|streamable  legacy HTTP+SSE or Streamable HTTP
//   --url URL                   the group endpoint
//   --mode elicit|token         how third_drop is confirmed: `elicit` declares the
//                               elicitation capability and accepts the form with
//                               {confirm: true}; `token` declares none and calls
//                               again with the one-time `_confirm_token`
//   --timeout-ms N              hard limit for the whole run (default 30000)
// The bearer token comes from AGENTWS_TOKEN only (argv is visible to other users).
//
// Output: two JSON lines on stdout.
//   1. what the calls returned, once they are done; the approval of
//      third_send is then up to an admin, while this session stays open;
//   2. {"notification": params} of the `notifications/message` (logger
//      agentws.approvals) that tells this session the outcome of that approval.
// Exit status: 0 after the second line; 1 with one line on stderr
// ("permissions: <transport>/<mode>: <step>: <error>") on any failure; 2 for
// bad usage. The process never outlives --timeout-ms.

import { parseArgs } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { REQUEST_TIMEOUT_MS, SDK_VERSION, TRANSPORTS, makeTransport } from './transport.mjs';
import { ElicitRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const MODES = ['elicit', 'token'];
const APPROVALS_LOGGER = 'agentws.approvals';

function usage(message) {
    process.stderr.write(`permissions: ${message}\n`);
    process.exit(2);
}

function options() {
    let parsed;
    try {
        parsed = parseArgs({
            options: {
                transport: { type: 'string' },
                url: { type: 'string' },
                mode: { type: 'string' },
                'timeout-ms': { type: 'string' }
            },
            strict: true,
            allowPositionals: false
        }).values;
    } catch (error) {
        usage(error.message);
    }
    const opts = {
        transport: parsed.transport,
        url: parsed.url,
        mode: parsed.mode,
        token: process.env.AGENTWS_TOKEN,
        timeoutMs: Number(parsed['timeout-ms'] ?? 30_000)
    };
    if (!TRANSPORTS.includes(opts.transport)) {
        usage(`--transport must be one of ${TRANSPORTS.join(', ')} (got ${opts.transport})`);
    }
    if (!MODES.includes(opts.mode)) usage(`--mode must be one of ${MODES.join(', ')} (got ${opts.mode})`);
    if (!opts.url) usage('--url is required');
    if (!opts.token) usage('a token is required: set AGENTWS_TOKEN');
    if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0) usage('--timeout-ms must be a positive number');
    try {
        opts.url = new URL(opts.url);
    } catch {
        usage(`--url is not a URL: ${opts.url}`);
    }
    return opts;
}

function describe(error) {
    const text = error instanceof Error ? error.message : String(error);
    const code = error?.code;
    return code === undefined ? text : `${text} [code ${code}]`;
}

function summary(result) {
    return {
        text: (result.content ?? [])
            .filter(item => item.type === 'text')
            .map(item => item.text)
            .join('\n'),
        structuredContent: result.structuredContent ?? null,
        isError: result.isError ?? false
    };
}

/** The approval outcomes this session is told, and a way to wait for one. */
class Outcomes {
    constructor() {
        this.seen = [];
        this.waiters = [];
    }

    record(params) {
        if (params.logger !== APPROVALS_LOGGER) return;
        this.seen.push(params);
        for (const waiter of this.waiters.splice(0)) waiter();
    }

    async wait(approvalId) {
        for (;;) {
            const found = this.seen.find(params => params.data?.approval_id === approvalId);
            if (found) return found;
            await new Promise(resolve => this.waiters.push(resolve));
        }
    }
}

async function run(opts, progress, emit) {
    const transport = makeTransport(opts.transport, opts.url, opts.token);
    let negotiated;
    const setProtocolVersion = transport.setProtocolVersion?.bind(transport);
    transport.setProtocolVersion = version => {
        negotiated = version;
        setProtocolVersion?.(version);
    };
    const capabilities = opts.mode === 'elicit' ? { elicitation: {} } : {};
    const client = new Client({ name: 'agentws-node-permissions', version: '1.0.0' }, { capabilities });
    const request = { timeout: REQUEST_TIMEOUT_MS };

    const elicitations = [];
    if (opts.mode === 'elicit') {
        client.setRequestHandler(ElicitRequestSchema, async req => {
            elicitations.push({
                message: req.params.message,
                mode: req.params.mode ?? null,
                requestedSchema: req.params.requestedSchema ?? null
            });
            return { action: 'accept', content: { confirm: true } };
        });
    }
    const outcomes = new Outcomes();
    client.setNotificationHandler(LoggingMessageNotificationSchema, notification => {
        outcomes.record(notification.params);
    });

    progress.step = 'connect';
    await client.connect(transport, request);
    const out = {
        transport: opts.transport,
        mode: opts.mode,
        sdk: SDK_VERSION,
        protocolVersion: negotiated ?? null,
        sessionId: transport.sessionId ?? null,
        serverCapabilities: client.getServerCapabilities() ?? null
    };

    // As clients do before calling: this also caches the tools' output schemas,
    // against which the SDK checks structuredContent.
    progress.step = 'tools/list';
    out.tools = (await client.listTools(undefined, request)).tools.map(tool => ({
        name: tool.name,
        annotations: tool.annotations ?? null,
        inputSchema: tool.inputSchema,
        outputSchema: tool.outputSchema ?? null
    }));

    const call = async (name, args) => {
        progress.step = `tools/call ${name} ${JSON.stringify(args)}`;
        return summary(await client.callTool({ name, arguments: args }, undefined, request));
    };
    out.search = await call('third_search', { q: 'x' });
    out.send = await call('third_send', { q: 'hello' });
    out.approvalId = out.send.structuredContent?.approval_id ?? null;
    out.drop = await call('third_drop', { q: 'users' });
    out.dropConfirmed = null;
    if (opts.mode === 'token') {
        const token = out.drop.structuredContent?.confirm_token;
        if (typeof token !== 'string') {
            throw new Error(`third_drop gave no confirm_token: ${JSON.stringify(out.drop)}`);
        }
        out.dropConfirmed = await call('third_drop', { q: 'users', _confirm_token: token });
    }
    out.elicitations = elicitations;
    out.notificationsBeforeApproval = [...outcomes.seen];
    await emit(out);
    if (!out.approvalId) throw new Error(`third_send gave no approval_id: ${JSON.stringify(out.send)}`);

    progress.step = `wait for the outcome of ${out.approvalId}`;
    const notification = await outcomes.wait(out.approvalId);
    await emit({ notification });

    progress.step = 'close';
    if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession();
    await client.close();
}

async function main() {
    const opts = options();
    const progress = { step: 'start' };
    const fail = message => {
        process.stderr.write(`permissions: ${opts.transport}/${opts.mode}: ${progress.step}: ${message}\n`);
        process.exit(1);
    };
    // The hard limit: whatever hangs, the process ends. The timer is not unref'd:
    // it also keeps the process alive while it waits for the outcome.
    setTimeout(() => fail(`not done within ${opts.timeoutMs} ms (timeout)`), opts.timeoutMs);
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
