// Signs a webhook body as GitHub does, with GitHub's own library
// (@octokit/webhooks-methods): reads {"secret", "body"} as JSON on stdin,
// prints the X-Hub-Signature-256 value ("sha256=<hex>") on stdout.
import { sign } from "@octokit/webhooks-methods";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { secret, body } = JSON.parse(input);
process.stdout.write(await sign(secret, body));
