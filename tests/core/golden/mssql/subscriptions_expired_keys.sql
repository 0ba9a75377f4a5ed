SELECT TOP __[POSTCOMPILE_param_1] tablequeue_subscriptions.topic
FROM tablequeue_subscriptions
WHERE tablequeue_subscriptions.queue_name = ?
  AND tablequeue_subscriptions.expires_at IS NOT NULL
  AND tablequeue_subscriptions.expires_at <= sysutcdatetime();
