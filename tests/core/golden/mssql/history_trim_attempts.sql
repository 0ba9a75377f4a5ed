DELETE FROM tablequeue_attempts
WHERE tablequeue_attempts.id IN (SELECT old.id
    FROM (SELECT ranked.id AS id
        FROM (SELECT tablequeue_attempts.id AS id, row_number() OVER (PARTITION BY tablequeue_attempts.tracking_id ORDER BY tablequeue_attempts.id DESC) AS n
            FROM tablequeue_attempts
            WHERE tablequeue_attempts.tracking_id IN (__[POSTCOMPILE_b_tracking])) AS ranked
        WHERE ranked.n > ?) AS old);
