CREATE TABLE tablequeue_subscriptions (
	topic VARCHAR(63) NOT NULL,
	queue_name VARCHAR(63) NOT NULL,
	where_text TEXT,
	origin VARCHAR(16) DEFAULT 'spec' NOT NULL,
	expires_at TIMESTAMP WITH TIME ZONE,
	PRIMARY KEY (topic, queue_name)
);
