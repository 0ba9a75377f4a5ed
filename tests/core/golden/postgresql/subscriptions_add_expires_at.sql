ALTER TABLE tablequeue_subscriptions ADD expires_at TIMESTAMP WITH TIME ZONE;
