-- OAuth after the second outside review.
--
-- A client metadata document is kept as long as its cache headers say
-- (within a floor and a ceiling): until fresh_until.
--
-- An authorization request may name a group endpoint that does not exist:
-- /oauth/authorize answers it as it answers one that does (consent page),
-- so that nobody learns which workspaces and groups exist before an
-- administrator has signed in; the consent page then says so. Its group is
-- NULL.

ALTER TABLE oauth_grants ALTER COLUMN group_id DROP NOT NULL;

ALTER TABLE oauth_clients ADD COLUMN fresh_until TIMESTAMPTZ;
