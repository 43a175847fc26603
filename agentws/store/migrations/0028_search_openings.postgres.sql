-- Search snippets come from each document's opening (its first 16,384
-- characters, agentws.store.sql_catalog): on PostgreSQL the query takes
-- left(body, 16384) for ts_headline, which needs nothing stored. This
-- version keeps the two dialects' numbering in step.

SELECT 1;
