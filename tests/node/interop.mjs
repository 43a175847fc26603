#!/usr/bin/env node
// Drives an agentws MCP group endpoint with the official TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in package-lock.json) and prints ONE JSON
// document on stdout with what the server answered. tests/e2e/test_mcp_node.py
// runs it for both transports; it is also handy by hand:
//
//   AGENTWS_TOKEN=agws_... node tests/node/interop.mjs \
//       --transport streamable --url http://127.0.0.1:8080/mcp/g/acme/ops
//
// Options (each also read from the environment variable in brackets):
//   --transport sse|streamable  [MCP_TRANSPORT]  legacy HTTP+SSE or Streamable HTTP
//   --url URL                   [MCP_URL]        the group endpoint
//   --token TOKEN               [AGENTWS_TOKEN]  bearer token (prefer the variable:
//                                                argv is visible to other users)
//   --query TEXT                [MCP_QUERY]      search_context query (default "refund")
//   --resource URI                               resource to read (default: the first listed)
//   --prompt NAME                                prompt to get (default: the first listed)
//   --argument NAME=VALUE                        a value for one of its arguments (repeatable);
//                                                a required one not given takes the first
//                                                value completion/complete offers for it
//   --timeout-ms N              [MCP_TIMEOUT_MS] hard limit for the whole run (default 30000)
//
// Exit status: 0 with the JSON document on stdout; 1 with one line on stderr
// ("interop: <transport>: <step>: <error> [HTTP <status>]") on any failure;
// 2 for bad usage. The process never outlives --timeout-ms.

import { parseArgs } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { REQUEST_TIMEOUT_MS, SDK_VERSION, TRANSPORTS, makeTransport } from './transport.mjs';


function usage(message) {
    process.stderr.write(`interop: ${message}\n`);
    process.exit(2);
}

function options() {
    let parsed;
    try {
        parsed = parseArgs({
            options: {
                transport: { type: 'string' },
                url: { type: 'string' },
                token: { type: 'string' },
                query: { type: 'string' },
                resource: { type: 'string' },
                prompt: { type: 'string' },
                argument: { type: 'string', multiple: true },
                'timeout-ms': { type: 'string' }
            },
            strict: true,
            allowPositionals: false
        }).values;
    } catch (error) {
        usage(error.message);
    }
    const env = process.env;
    const opts = {
        transport: parsed.transport ?? env.MCP_TRANSPORT,
        url: parsed.url ?? env.MCP_URL,
        token: parsed.token ?? env.AGENTWS_TOKEN,
        query: parsed.query ?? env.MCP_QUERY ?? 'refund',
        resource: parsed.resource,
        prompt: parsed.prompt,
        arguments: {},
        timeoutMs: Number(parsed['timeout-ms'] ?? env.MCP_TIMEOUT_MS ?? 30_000)
    };
    if (!TRANSPORTS.includes(opts.transport)) {
        usage(`--transport must be one of ${TRANSPORTS.join(', ')} (got ${opts.transport})`);
    }
    if (!opts.url) usage('--url (or MCP_URL) is required');
    if (!opts.token) usage('a token is required: set AGENTWS_TOKEN (or pass --token)');
    if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0) usage('--timeout-ms must be a positive number');
    for (const pair of parsed.argument ?? []) {
        const at = pair.indexOf('=');
        if (at < 1) usage(`--argument takes NAME=VALUE (got ${pair})`);
        opts.arguments[pair.slice(0, at)] = pair.slice(at + 1);
    }
    try {
        opts.url = new URL(opts.url);
    } catch {
        usage(`--url is not a URL: ${opts.url}`);
    }
    return opts;
}

function describe(error) {
    const text = error instanceof Error ? error.message : String(error);
    // SseError and StreamableHTTPError carry the HTTP status as `code`.
    const code = error?.code;
    const status = Number.isInteger(code) && code >= 100 && code < 600 ? ` [HTTP ${code}]` : '';
    return `${text}${status}`;
}

function texts(content) {
    return (content ?? []).filter(item => item.type === 'text').map(item => item.text);
}

// The arguments a prompt declares, as prompts/get needs them: the values given,
// and for each required one not given, the first value the server offers.
async function promptArguments(client, name, declared, given, request, progress) {
    const args = {};
    for (const argument of declared) {
        if (Object.hasOwn(given, argument.name)) {
            args[argument.name] = given[argument.name];
        } else if (argument.required) {
            progress.step = `completion/complete ${name} ${argument.name}`;
            const offered = await client.complete(
                { ref: { type: 'ref/prompt', name }, argument: { name: argument.name, value: '' } },
                request
            );
            const [first] = offered.completion.values;
            if (first === undefined) {
                throw new Error(`prompt ${name} needs its argument ${argument.name}: pass --argument ${argument.name}=VALUE`);
            }
            args[argument.name] = first;
        }
    }
    return args;
}

async function run(opts, progress) {
    const transport = makeTransport(opts.transport, opts.url, opts.token);
    // The Client tells the transport the negotiated version (it goes into the
    // MCP-Protocol-Version header of later requests); record it on the way.
    let negotiated;
    const setProtocolVersion = transport.setProtocolVersion?.bind(transport);
    transport.setProtocolVersion = version => {
        negotiated = version;
        setProtocolVersion?.(version);
    };
    const client = new Client({ name: 'agentws-node-interop', version: '1.0.0' }, { capabilities: {} });
    const request = { timeout: REQUEST_TIMEOUT_MS };
    const out = { transport: opts.transport, sdk: SDK_VERSION };

    progress.step = 'connect';
    await client.connect(transport, request);
    out.protocolVersion = negotiated;
    out.sessionId = transport.sessionId ?? null;
    out.serverInfo = client.getServerVersion() ?? null;
    out.capabilities = client.getServerCapabilities() ?? null;
    out.instructions = client.getInstructions() ?? null;

    progress.step = 'tools/list';
    const tools = (await client.listTools(undefined, request)).tools;
    out.tools = tools.map(tool => ({
        name: tool.name,
        description: tool.description ?? null,
        annotations: tool.annotations ?? null,
        inputSchema: tool.inputSchema
    }));

    progress.step = 'tools/call search_context';
    const search = await client.callTool(
        { name: 'search_context', arguments: { query: opts.query, limit: 5 } },
        undefined,
        request
    );
    out.search = {
        query: opts.query,
        isError: search.isError ?? false,
        text: texts(search.content).join('\n'),
        structuredContent: search.structuredContent ?? null
    };

    progress.step = 'resources/list';
    const resources = (await client.listResources(undefined, request)).resources;
    out.resources = resources.map(r => ({
        uri: r.uri,
        name: r.name,
        title: r.title ?? null,
        mimeType: r.mimeType ?? null
    }));
    const uri = opts.resource ?? resources[0]?.uri;
    if (!uri) throw new Error('resources/list returned no resources');

    progress.step = `resources/read ${uri}`;
    const read = await client.readResource({ uri }, request);
    out.resource = {
        uri,
        contents: read.contents,
        text: read.contents.map(c => c.text ?? '').join('')
    };

    progress.step = 'prompts/list';
    const prompts = (await client.listPrompts(undefined, request)).prompts;
    out.prompts = prompts.map(p => ({
        name: p.name,
        title: p.title ?? null,
        description: p.description ?? null,
        arguments: p.arguments ?? []
    }));
    const name = opts.prompt ?? prompts[0]?.name;
    if (!name) throw new Error('prompts/list returned no prompts');
    const declared = prompts.find(p => p.name === name)?.arguments ?? [];
    const args = await promptArguments(client, name, declared, opts.arguments, request, progress);

    progress.step = `prompts/get ${name}`;
    const prompt = await client.getPrompt({ name, arguments: args }, request);
    out.prompt = {
        name,
        arguments: args,
        description: prompt.description ?? null,
        messages: prompt.messages,
        text: prompt.messages.flatMap(m => texts([m.content])).join('\n'),
        resources: prompt.messages
            .filter(m => m.content.type === 'resource')
            .map(m => m.content.resource)
    };

    progress.step = 'close';
    if (transport instanceof StreamableHTTPClientTransport) {
        // DELETE the session, as a well-behaved client does when it is done.
        await transport.terminateSession();
        out.terminated = true;
    }
    await client.close();
    return out;
}

async function main() {
    const opts = options();
    const progress = { step: 'start' };
    const fail = message => {
        process.stderr.write(`interop: ${opts.transport}: ${progress.step}: ${message}\n`);
        process.exit(1);
    };
    // The hard limit: whatever hangs (a stream that never delivers, a request
    // the server never answers), the process ends.
    setTimeout(() => fail(`no result within ${opts.timeoutMs} ms (timeout)`), opts.timeoutMs).unref();
    let out;
    try {
        out = await run(opts, progress);
    } catch (error) {
        fail(describe(error));
    }
    process.stdout.write(`${JSON.stringify(out)}\n`, () => process.exit(0));
}

await main();
