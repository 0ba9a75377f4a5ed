ALTER TABLE tablequeue_subscriptions ADD origin VARCHAR(16) NOT NULL DEFAULT 'spec';
