INSERT INTO tablequeue_attempts (queue, tracking_id, message_pk, attempt, kind, at, owner, correlation_id, error)
VALUES (%(a_queue)s, %(a_tracking_id)s, %(a_message_pk)s, %(a_attempt)s, %(a_kind)s, utc_timestamp(6), %(a_owner)s, %(a_correlation_id)s, %(a_error)s);
