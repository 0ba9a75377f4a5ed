INSERT INTO tablequeue_results (tracking_id, queue, message_pk, message_id, status, result, last_error, attempts, processed_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, sysutcdatetime());
