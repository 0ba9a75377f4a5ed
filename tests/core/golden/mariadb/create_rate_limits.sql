CREATE TABLE tablequeue_rate_limits (
	queue VARCHAR(63) NOT NULL,
	messages_per_second DOUBLE NOT NULL,
	burst INTEGER NOT NULL,
	theoretical_arrival DOUBLE NOT NULL,
	updated_at DATETIME(6) NOT NULL,
	PRIMARY KEY (queue)
);
