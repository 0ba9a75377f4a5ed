INSERT INTO tablequeue_attempts (queue, tracking_id, message_pk, attempt, kind, at, owner, correlation_id, error)
VALUES (%(a_queue)s::VARCHAR, %(a_tracking_id)s::UUID, %(a_message_pk)s::BIGINT, %(a_attempt)s::INTEGER, %(a_kind)s::VARCHAR, now(), %(a_owner)s::VARCHAR, %(a_correlation_id)s::VARCHAR, %(a_error)s::VARCHAR)
RETURNING tablequeue_attempts.id;
