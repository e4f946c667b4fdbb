-- Issue 13: a replica reserves a client's calls in leases rather than one row per call. A row
-- holds `slots` calls, counted in the window until `at` (the end of the lease, so every call
-- made under it is covered) plus 60 s; `lease` names the replica's lease so it can give back
-- what it did not use. Rows from before this migration are single calls without a lease.
ALTER TABLE client_calls ADD COLUMN slots INTEGER NOT NULL DEFAULT 1 CHECK (slots >= 0);
ALTER TABLE client_calls ADD COLUMN lease TEXT;
CREATE INDEX client_calls_lease_idx ON client_calls (client, lease);
