SELECT tablequeue_subscriptions.topic
FROM tablequeue_subscriptions
WHERE tablequeue_subscriptions.queue_name = ?
  AND tablequeue_subscriptions.expires_at IS NOT NULL
  AND tablequeue_subscriptions.expires_at <= (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
LIMIT ?
OFFSET ?;
