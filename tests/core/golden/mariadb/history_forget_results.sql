DELETE FROM tablequeue_results
WHERE tablequeue_results.tracking_id IN (__[POSTCOMPILE_b_tracking]);
