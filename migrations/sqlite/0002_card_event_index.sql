-- Reactions name the card event: find its approval without a scan.
CREATE INDEX approvals_card_event_idx ON approvals (card_event_id) WHERE card_event_id IS NOT NULL;
