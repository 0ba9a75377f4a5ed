CREATE INDEX tablequeue_results_queue_processed ON tablequeue_results (queue, processed_at);
