// Signs a webhook body as Stripe does, with Stripe's own library (stripe):
// reads {"secrets": [...], "body", "timestamp"} as JSON on stdin and prints
// the Stripe-Signature header value. Several secrets give several v1
// signatures in one header, as Stripe sends while an endpoint's secret is
// being rolled.
import Stripe from "stripe";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { secrets, body, timestamp } = JSON.parse(input);
const stripe = new Stripe("sk_test_unused");
const headers = secrets.map((secret) =>
  stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp }),
);
// Each is "t=<timestamp>,v1=<signature>": keep one t and every v1.
const v1 = headers.map((h) => h.split(",").find((part) => part.startsWith("v1=")));
process.stdout.write([`t=${timestamp}`, ...v1].join(","));
