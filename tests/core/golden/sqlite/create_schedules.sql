CREATE TABLE tablequeue_schedules (
	queue VARCHAR(63) NOT NULL,
	schedule VARCHAR(63) NOT NULL,
	cron VARCHAR(200) NOT NULL,
	time_zone VARCHAR(64) NOT NULL,
	next_tick DATETIME NOT NULL,
	last_tick DATETIME,
	last_fired_at DATETIME,
	last_message BIGINT,
	fired INTEGER NOT NULL,
	skipped INTEGER NOT NULL,
	updated_at DATETIME NOT NULL,
	PRIMARY KEY (queue, schedule)
);
