ALTER TABLE tablequeue_subscriptions ADD expires_at DATETIME;
