-- A webhook's messages may ping a whole channel (@channel, @here...) only
-- when an admin allows it; by default sinks make mass mentions inert.

ALTER TABLE webhooks ADD COLUMN allow_mentions {bool} NOT NULL DEFAULT FALSE;
