CREATE INDEX tablequeue_attempts_queue ON tablequeue_attempts (queue, id);
