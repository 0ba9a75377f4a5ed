INSERT INTO tablequeue_attempts (queue, tracking_id, message_pk, attempt, kind, at, owner, correlation_id, error)
OUTPUT inserted.id
VALUES (?, ?, ?, ?, ?, sysutcdatetime(), ?, ?, ?);
