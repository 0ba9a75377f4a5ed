WITH done AS
(DELETE FROM orders USING json_to_recordset(CAST(%(b_rows)s::VARCHAR AS JSON)) AS b(b_id BIGINT, b_version INTEGER, b_cid VARCHAR, b_result JSONB) WHERE orders.id = b.b_id AND orders.version = b.b_version AND orders.lease_owner = %(b_owner)s::VARCHAR AND orders.correlation_id = b.b_cid AND (orders.status || '') = 'Leased' AND orders.id = ANY (array((SELECT b_ids.b_id
    FROM json_to_recordset(CAST(%(b_rows)s::VARCHAR AS JSON)) AS b_ids(b_id BIGINT)))) RETURNING orders.tracking_id, orders.id AS message_pk, orders.message_id, 'Processed' AS status, b.b_result AS result, orders.last_error, orders.attempts)
 INSERT INTO tablequeue_results (tracking_id, queue, message_pk, message_id, status, result, last_error, attempts, processed_at)
SELECT done.tracking_id, %(b_queue)s::VARCHAR AS anon_1, done.message_pk, done.message_id, done.status, done.result, done.last_error, done.attempts, now() AS now_1
FROM done
ON CONFLICT (tracking_id)
DO UPDATE
SET queue = excluded.queue,
    message_pk = excluded.message_pk,
    message_id = excluded.message_id,
    status = excluded.status,
    result = excluded.result,
    last_error = excluded.last_error,
    attempts = excluded.attempts,
    processed_at = excluded.processed_at
RETURNING tablequeue_results.tracking_id;
