-- Each instance also records its public base URL (AGENTWS_BASE_URL, else
-- its bound address), so that the CLI prints endpoint and webhook URLs that
-- reach the running service instead of the default address.

ALTER TABLE instances ADD COLUMN public_url TEXT;
