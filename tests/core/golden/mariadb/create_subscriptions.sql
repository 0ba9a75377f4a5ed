CREATE TABLE tablequeue_subscriptions (
	topic VARCHAR(63) NOT NULL,
	queue_name VARCHAR(63) NOT NULL,
	where_text TEXT,
	origin VARCHAR(16) NOT NULL DEFAULT 'spec',
	expires_at DATETIME(6),
	PRIMARY KEY (topic, queue_name)
);
