CREATE TABLE tablequeue_rate_limits (
	queue NVARCHAR(63) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	messages_per_second DOUBLE PRECISION NOT NULL,
	burst INTEGER NOT NULL,
	theoretical_arrival DOUBLE PRECISION NOT NULL,
	updated_at DATETIME2(6) NOT NULL,
	PRIMARY KEY (queue)
);
