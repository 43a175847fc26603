-- Chat sinks and approvals in the channel.
--
-- A call queued by a webhook's run names its event, so that the outcome can
-- be reported in the event's channel; ``reported_at`` marks the report as
-- taken (one report per approval, also with several instances).
-- A webhook may carry write tools an admin pre-authorized for its runs,
-- each bound to the tool's definition hash (a JSON object, tool → hash).

ALTER TABLE approvals ADD COLUMN event_id TEXT;
ALTER TABLE approvals ADD COLUMN reported_at {ts};
CREATE INDEX approvals_unreported ON approvals (reported_at, event_id);
ALTER TABLE webhooks ADD COLUMN allowed_tools {json} NOT NULL DEFAULT '{{}}';
