-- Issue 7: an approval carries what it was requested under, for good: the approvers and
-- threshold then in force (NULL on older rows, judged by the deciding process's policy), the
-- canonical encoding of its payload hash (older rows: the pre-RFC 8785 encoding), the checked
-- facts about the target the approver saw, and the card text exactly as approvers read it.
ALTER TABLE approvals ADD COLUMN hash_encoding TEXT NOT NULL DEFAULT 'legacy-v1';
ALTER TABLE approvals ADD COLUMN approvers_json TEXT;
ALTER TABLE approvals ADD COLUMN threshold INTEGER;
ALTER TABLE approvals ADD COLUMN checked_facts_json TEXT;
ALTER TABLE approvals ADD COLUMN card_text TEXT;
