CREATE TABLE tablequeue_results (
	tracking_id UNIQUEIDENTIFIER NOT NULL,
	queue NVARCHAR(63) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	message_pk BIGINT NOT NULL,
	message_id NVARCHAR(400) COLLATE Latin1_General_100_BIN2_UTF8 NULL,
	status NVARCHAR(64) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	result NVARCHAR(max) COLLATE Latin1_General_100_BIN2_UTF8 NULL CHECK (ISJSON(result) = 1),
	last_error NVARCHAR(max) COLLATE Latin1_General_100_BIN2_UTF8 NULL,
	attempts INTEGER NOT NULL,
	processed_at DATETIME2(6) NOT NULL,
	PRIMARY KEY (tracking_id)
);
