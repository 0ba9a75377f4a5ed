INSERT INTO tablequeue_results (tracking_id, queue, message_pk, message_id, status, result, last_error, attempts, processed_at)
VALUES (%(r_tracking_id)s::UUID, %(r_queue)s::VARCHAR, %(r_message_pk)s::BIGINT, %(r_message_id)s::VARCHAR, %(r_status)s::VARCHAR, %(r_result)s::JSONB, %(r_last_error)s::VARCHAR, %(r_attempts)s::INTEGER, now())
ON CONFLICT (tracking_id)
DO UPDATE
SET queue = excluded.queue,
    message_pk = excluded.message_pk,
    message_id = excluded.message_id,
    status = excluded.status,
    result = excluded.result,
    last_error = excluded.last_error,
    attempts = excluded.attempts,
    processed_at = excluded.processed_at;
