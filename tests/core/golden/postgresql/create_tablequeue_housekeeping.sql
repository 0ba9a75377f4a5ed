CREATE TABLE tablequeue_housekeeping (
	queue VARCHAR(63) NOT NULL,
	owner VARCHAR(200),
	lease_expires_at TIMESTAMP WITH TIME ZONE,
	purged_at TIMESTAMP WITH TIME ZONE,
	PRIMARY KEY (queue)
);
