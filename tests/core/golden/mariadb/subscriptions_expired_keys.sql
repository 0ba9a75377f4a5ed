SELECT tablequeue_subscriptions.topic
FROM tablequeue_subscriptions
WHERE tablequeue_subscriptions.queue_name = %(queue_name_1)s
  AND tablequeue_subscriptions.expires_at IS NOT NULL
  AND tablequeue_subscriptions.expires_at <= utc_timestamp(6)
LIMIT %(param_1)s;
