CREATE TABLE tablequeue_rate_limits (
	queue VARCHAR(63) NOT NULL,
	messages_per_second DOUBLE PRECISION NOT NULL,
	burst INTEGER NOT NULL,
	theoretical_arrival DOUBLE PRECISION NOT NULL,
	updated_at TIMESTAMP WITH TIME ZONE NOT NULL,
	PRIMARY KEY (queue)
);
