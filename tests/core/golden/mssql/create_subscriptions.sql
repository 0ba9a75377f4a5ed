CREATE TABLE tablequeue_subscriptions (
	topic NVARCHAR(63) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	queue_name NVARCHAR(63) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	where_text NVARCHAR(max) COLLATE Latin1_General_100_BIN2_UTF8 NULL,
	origin NVARCHAR(16) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL DEFAULT 'spec',
	expires_at DATETIME2(6) NULL,
	PRIMARY KEY (topic, queue_name)
);
