ALTER TABLE tablequeue_subscriptions ADD origin VARCHAR(16) DEFAULT 'spec' NOT NULL;
