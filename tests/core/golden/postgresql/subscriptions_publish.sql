SELECT tablequeue_queues.name, tablequeue_queues.table_name, tablequeue_queues.settings, tablequeue_subscriptions.where_text
FROM tablequeue_subscriptions
JOIN tablequeue_queues ON tablequeue_queues.name = tablequeue_subscriptions.queue_name
WHERE tablequeue_subscriptions.topic = %(topic_1)s::VARCHAR
  AND (tablequeue_subscriptions.expires_at IS NULL OR tablequeue_subscriptions.expires_at > now())
ORDER BY tablequeue_queues.name;
