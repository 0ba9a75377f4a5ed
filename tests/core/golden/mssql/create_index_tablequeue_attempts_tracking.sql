CREATE INDEX tablequeue_attempts_tracking ON tablequeue_attempts (tracking_id, id);
