-- A webhook's body limit is at most 2 MiB (agentws.webhooks.admin.MAX_BODY_LIMIT;
-- earlier versions allowed 10 MiB): a body is parsed whole on the event loop, and
-- the limit bounds how long that takes. Webhooks given more are brought down to it,
-- so that what they show is what they take.

UPDATE webhooks SET max_body_bytes = 2097152 WHERE max_body_bytes > 2097152;
