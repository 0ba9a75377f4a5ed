CREATE TABLE tablequeue_housekeeping (
	queue VARCHAR(63) NOT NULL,
	owner VARCHAR(200),
	lease_expires_at DATETIME,
	purged_at DATETIME,
	PRIMARY KEY (queue)
);
