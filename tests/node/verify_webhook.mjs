// Checks a signed webhook delivery as its receiver's library does: GitHub's
// (@octokit/webhooks-methods verify) or Stripe's (stripe.webhooks.constructEvent,
// which also checks the timestamp's tolerance). Reads {"scheme", "secret",
// "body", "headers"} as JSON on stdin (header names in lower case); prints
// "valid" or "invalid: <reason>".
import { verify } from "@octokit/webhooks-methods";
import Stripe from "stripe";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { scheme, secret, body, headers } = JSON.parse(input);
try {
  if (scheme === "github") {
    const ok = await verify(secret, body, headers["x-hub-signature-256"]);
    if (!ok) throw new Error("X-Hub-Signature-256 does not match");
  } else if (scheme === "stripe") {
    const stripe = new Stripe("sk_test_unused");
    stripe.webhooks.constructEvent(body, headers["stripe-signature"], secret);
  } else {
    throw new Error(`no verifier for ${scheme}`);
  }
  process.stdout.write("valid");
} catch (error) {
  process.stdout.write(`invalid: ${error.message}`);
}
