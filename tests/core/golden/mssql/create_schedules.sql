CREATE TABLE tablequeue_schedules (
	queue NVARCHAR(63) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	schedule NVARCHAR(63) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	cron NVARCHAR(200) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	time_zone NVARCHAR(64) COLLATE Latin1_General_100_BIN2_UTF8 NOT NULL,
	next_tick DATETIME2(6) NOT NULL,
	last_tick DATETIME2(6) NULL,
	last_fired_at DATETIME2(6) NULL,
	last_message BIGINT NULL,
	fired INTEGER NOT NULL,
	skipped INTEGER NOT NULL,
	updated_at DATETIME2(6) NOT NULL,
	PRIMARY KEY (queue, schedule)
);
